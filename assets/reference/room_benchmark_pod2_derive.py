"""Steady-window means of the RISE SICS ICE "POD 2" measurements (room benchmark, issue 12).

Source: the measured time series (1-minute means) that Sjölund, Delbosc and colleagues
published with their lattice-Boltzmann data-center simulator Rafsine, repository
github.com/jsjolund/rafsine, commit 037bb156c55cda8bbe03b248587a72fdfb92a463, folders
``problems/ocp/pod2_first_experiment`` (2019-10-01, load moved between halves of the pod)
and ``problems/ocp/pod2_step_experiment`` (2019-10-02, the whole pod stepped from 27 to
104 kW); the pod's geometry is that repository's ``problems/ocp/geometry.lua`` ("positions
are from POD 2 schematics"), encoded in ``scenarios/validation/rise_pod2.yaml``.

Per rack (12 racks x 10 chassis x 3 servers): server power (hot-swap controller), fan speed
and the servers' own inlet / outlet sensors; per cooler (4 SEE Cooler HDZ): fan signal,
discharge (supply) and return temperature; per pair of rack columns: a sensor strip at the
rack fronts and backs at 0.4, 1.2 and 2.0 m; for the pod: electrical IT power and the
coolers' thermal power. Each configuration is the mean over the last 20-30 minutes of a
load plateau (the windows below), when the IT power had been flat for at least 25 minutes.

Run (writes the three ``room_benchmark_pod2_*.csv`` beside this file):

    python assets/reference/room_benchmark_pod2_derive.py RAFSINE_CHECKOUT/problems/ocp
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

# configuration -> (experiment folder, start, end) of the averaging window (local time stamps)
WINDOWS = {
    "idle": ("pod2_first_experiment", "2019-10-01 08:15", "2019-10-01 08:45"),
    "half_a": ("pod2_first_experiment", "2019-10-01 10:00", "2019-10-01 10:25"),
    "half_b": ("pod2_first_experiment", "2019-10-01 12:00", "2019-10-01 12:25"),
    "row_right": ("pod2_first_experiment", "2019-10-01 14:15", "2019-10-01 14:45"),
    "row_left": ("pod2_first_experiment", "2019-10-01 16:15", "2019-10-01 16:45"),
    "step_27kw": ("pod2_step_experiment", "2019-10-02 09:15", "2019-10-02 09:35"),
    "step_62kw": ("pod2_step_experiment", "2019-10-02 10:15", "2019-10-02 10:40"),
    "step_80kw": ("pod2_step_experiment", "2019-10-02 11:20", "2019-10-02 11:45"),
    "step_94kw": ("pod2_step_experiment", "2019-10-02 12:50", "2019-10-02 13:15"),
    "step_104kw": ("pod2_step_experiment", "2019-10-02 13:55", "2019-10-02 14:20"),
}
# sensor strip -> the rack at whose front / back it hangs (rafsine geometry.lua: the strip of
# racks 01-03 is at the middle rack, and so on)
STRIP_RACK = {"01_to_03": 2, "04_to_06": 5, "07_to_09": 8, "10_to_12": 11}
STRIP_COLS = {"front_bottom_c": "temperature_front_bottom", "front_middle_c": "temperature_front_middle",
              "front_top_c": "temperature_front_top", "rear_bottom_c": "temperature_rear_bottom",
              "rear_middle_c": "temperature_rear_middle", "rear_top_c": "temperature_rear_top"}


def _window_mean(path: Path, start: str, end: str) -> pd.Series:
    df = pd.read_csv(path, parse_dates=["time"], index_col="time")
    return df.loc[start:end].mean()


def derive(src: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(configs, racks, units) tables of window means from the experiment folders in ``src``."""
    configs, racks, units = [], [], []
    for name, (exp, a, b) in WINDOWS.items():
        d = src / exp
        pod = _window_mean(d / "power_in_vs_out.csv", a, b)
        configs.append({"config": name, "experiment": exp, "start": a, "end": b,
                        "it_power_w": round(pod["Electrical IT power"], 1),
                        "cooler_heat_w": round(pod["Thermal power (out)"], 1)})
        strips = {STRIP_RACK[k]: _window_mean(d / f"sensor_strips_racks_{k}.csv", a, b) for k in STRIP_RACK}
        for r in range(1, 13):
            row = {"config": name, "rack": r,
                   "server_power_w": round(_window_mean(d / f"power_rack{r:02d}.csv", a, b).sum(), 1),
                   "fan_rpm": round(_window_mean(d / f"fan_rpm_rack{r:02d}.csv", a, b).mean(), 1),
                   "server_inlet_c": round(_window_mean(d / f"temperature_inlet_rack{r:02d}.csv", a, b).mean(), 3),
                   "server_outlet_c": round(_window_mean(d / f"temperature_outlet_rack{r:02d}.csv", a, b).mean(), 3)}
            for col, src_col in STRIP_COLS.items():
                row[col] = round(strips[r][src_col], 3) if r in strips else None
            racks.append(row)
        for c in range(1, 5):
            sig = _window_mean(d / f"cooler_fan_signal{c:02d}.csv", a, b)
            tmp = _window_mean(d / f"cooler_fan_temperature{c:02d}.csv", a, b)
            units.append({"config": name, "unit": c, "fan_signal_pct": round(sig["signal_default"], 2),
                          "discharge_c": round(tmp["discharge"], 3),
                          "return_c": round(0.5 * (tmp["return0"] + tmp["return1"]), 3)})
    return pd.DataFrame(configs), pd.DataFrame(racks), pd.DataFrame(units)


def main(argv: list[str]) -> None:
    src = Path(argv[1])
    out = Path(__file__).resolve().parent
    head = ("# RISE SICS ICE POD 2, window means; source github.com/jsjolund/rafsine@037bb156 "
            "problems/ocp/pod2_*_experiment; derived by room_benchmark_pod2_derive.py\n")
    for name, df in zip(("configs", "racks", "units"), derive(src), strict=True):
        path = out / f"room_benchmark_pod2_{name}.csv"
        with open(path, "w") as f:
            f.write(head)
            df.to_csv(f, index=False)
        print(f"wrote {path} ({len(df)} rows)")


if __name__ == "__main__":
    main(sys.argv)
