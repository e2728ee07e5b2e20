"""Quasi-steady window means of the January 2018 POD 2 measurements: the held-out set of
the room benchmark (issue 12).

Source: github.com/jsjolund/rafsine, commit 037bb156c55cda8bbe03b248587a72fdfb92a463,
``problems/pod2/data`` (1-minute series, 23-24 January 2018) and ``problems/pod2/geometry.lua``
(an earlier layout of the same pod: ten Minkels racks of 0.80 m, two rows of five, the hot
aisle closed by a door at the far end; room 6.95 x 6.4 x 3.1 m; the same four SEE Cooler HDZ
wall units), encoded in ``scenarios/validation/rise_pod2_2018.yaml``.

Per rack: three-phase real power and sensor strips at the front and back (bottom, middle,
top); per cooler: discharge and return temperature, measured air mass flow. The pod's load
falls in six steps of about six hours (56.6, 54.7, 51.1, 45.2, 41.0, 33.9 kW) with no
plateau held by design; within a step the total power drifts by less than 0.3 % and the
last hour of each step, five hours after the step, is taken as quasi-steady: over that hour
each rack's power moves by less than 1 % and its middle front strip by at most 0.26 K, except
rack 1 in the first step (0.82 K, still settling after the series starts at 09:00); the
script writes both drifts per rack. Coolers 1-2 run at their 90 % fan limit except in the
last step. None of these windows was looked at before the twin's wall-jet supply was
fixed on the October 2019 data: they are held out.

Run (writes the three ``room_benchmark_pod2_2018_*.csv`` beside this file):

    python assets/reference/room_benchmark_pod2_2018_derive.py RAFSINE_CHECKOUT/problems/pod2
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

WINDOWS = {
    "jan_57kw": ("2018-01-23 14:00", "2018-01-23 14:59"),
    "jan_55kw": ("2018-01-23 20:00", "2018-01-23 20:59"),
    "jan_51kw": ("2018-01-24 02:00", "2018-01-24 02:59"),
    "jan_45kw": ("2018-01-24 08:00", "2018-01-24 08:59"),
    "jan_41kw": ("2018-01-24 14:00", "2018-01-24 14:59"),
    "jan_34kw": ("2018-01-24 20:00", "2018-01-24 20:59"),
}
STRIPS = {"front_bottom_c": "front_temperature_temp_bottom", "front_middle_c": "front_temperature_temp_middle",
          "front_top_c": "front_temperature_temp_top", "rear_bottom_c": "rear_temperature_temp_bottom",
          "rear_middle_c": "rear_temperature_temp_middle", "rear_top_c": "rear_temperature_temp_top"}
HEADER = ("# RISE SICS ICE POD 2, January 2018 (held out), last-hour means of six load steps; source "
          "github.com/jsjolund/rafsine@037bb156 problems/pod2/data; derived by room_benchmark_pod2_2018_derive.py\n")


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, parse_dates=["time"], index_col="time", date_format="%d-%b-%Y %H:%M:%S")


def derive(src: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(configs, racks, units) tables of window means from ``src`` (rafsine's problems/pod2)."""
    d = src / "data"
    racks_ts = {r: _read(d / f"rack{r:02d}.csv") for r in range(1, 11)}
    units_ts = {c: _read(d / f"cooler{c:02d}.csv") for c in range(1, 5)}
    configs, racks, units = [], [], []
    for name, (a, b) in WINDOWS.items():
        it = 0.0
        for r, ts in racks_ts.items():
            w = ts.loc[a:b]
            p = w[["realpower_l1", "realpower_l2", "realpower_l3"]].sum(axis=1)
            it += p.mean()
            row = {"config": name, "rack": r, "power_w": round(p.mean(), 1),
                   "power_drift_fraction": round((p.iloc[-10:].mean() - p.iloc[:10].mean()) / p.mean(), 4)}
            for col, src_col in STRIPS.items():
                row[col] = round(w[src_col].mean(), 3)
            row["front_drift_k"] = round(w[STRIPS["front_middle_c"]].iloc[-10:].mean()
                                         - w[STRIPS["front_middle_c"]].iloc[:10].mean(), 3)
            racks.append(row)
        heat = 0.0
        for c, ts in units_ts.items():
            w = ts.loc[a:b]
            units.append({"config": name, "unit": c, "mass_flow_kg_s": round(w["mass_flow"].mean(), 4),
                          "fan_signal_pct": round(w["signal_percent_fans"].mean(), 2),
                          "discharge_c": round(w["temperature_discharge_"].mean(), 3),
                          "return_c": round(0.5 * (w["temperature_return_air_1"] + w["temperature_return_air_2"]).mean(), 3),
                          "cooling_kw": round(w["power_cooling"].mean(), 3)})
            heat += 1e3 * w["power_cooling"].mean()
        configs.append({"config": name, "start": a, "end": b, "it_power_w": round(it, 1),
                        "cooler_heat_w": round(heat, 1)})
    return pd.DataFrame(configs), pd.DataFrame(racks), pd.DataFrame(units)


def main(src: str) -> None:
    out = Path(__file__).resolve().parent
    for name, df in zip(("configs", "racks", "units"), derive(Path(src)), strict=True):
        with open(out / f"room_benchmark_pod2_2018_{name}.csv", "w") as f:
            f.write(HEADER)
            df.to_csv(f, index=False)
        print(df.to_string())


if __name__ == "__main__":
    main(sys.argv[1])
