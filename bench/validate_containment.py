"""Containment against hand-computed limits (issue 12), in place of a measured open-vs-contained
room, which the project's tools could not find (search record: docs/validation.md,
"Containment: hand-computed limits").

The 40-rack hall of tests/thermal (4 rows x 10 racks at 10 kW, 15 K rise, four CRAHs at the
end walls, supply 18 C), open, sealed cold aisle, sealed hot aisle, for cooling air r times
the rack air, in plan view (potential flow) and in the buoyant 3-layer room the engine runs.
Each row prints the airflow-weighted mean and the hottest inlet rise above supply [K], the
SHI, and the two-zone energy balance max(0, 1 / r - 1) dT (exact for the sealed hot aisle).
Then the leaky cold aisle with air to spare against the maximum-principle bound l dT / (1 - l),
and the sealed cold aisle's own air balance (twin.thermal.containment): the supply S its tiles
and the floor leak over it deliver (every cell of the aisle between its two rows), the share of every intake drawn from the room f = max(0, 1 - S / Vr), the even
spread at the mixed return f dT / r and the maximum-principle bound f dT / (1 - f).
Checked by tests/thermal/test_containment_benchmark.py.

Run: .venv/bin/python bench/validate_containment.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small factorisations: see bench_cooling

import time  # noqa: E402

import numpy as np  # noqa: E402
from machine import machine  # noqa: E402

from twin.thermal import (  # noqa: E402
    inlet_temp_c,
    rack_airflow_m3_s,
    row_hall,
    steady_field,
    supply_heat_index,
)
from twin.thermal.buoyancy import buoyant_flow, buoyant_inlet_model  # noqa: E402
from twin.thermal.inlet import inlet_model_of_problem  # noqa: E402
from twin.thermal.solver import build_problem  # noqa: E402

SUPPLY_C = 18.0
RISE_K = 15.0
LAYOUTS = ("none", "cold_aisle", "hot_aisle")


def _inlets(r: float, containment: str, layers: int, leak: float = 0.0) -> np.ndarray:
    heat = np.full(40, 10e3)
    v = rack_airflow_m3_s(heat, RISE_K)
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=r * v.sum() / 4, containment=containment,
                 n_layers=layers, containment_leakage_fraction=leak)
    if layers > 1:
        return inlet_temp_c(buoyant_inlet_model(g, heat, v, memo=False), heat)
    return steady_field(g, heat, v).rack_inlet_temp.values


def balance_table() -> None:
    print("sealed containment: mean / hottest inlet rise [K], SHI; hand = max(0, 1/r - 1) dT")
    print(f"{'model':>8} {'r':>5} {'hand':>6} | " + " | ".join(f"{k:^22}" for k in LAYOUTS))
    for layers, name in ((1, "plan"), (3, "buoyant")):
        for r in (0.7, 0.8, 0.9, 1.1):
            cells = []
            for containment in LAYOUTS:
                t = _inlets(r, containment, layers)
                mean, hot = round(t.mean() - SUPPLY_C, 2) + 0.0, round(t.max() - SUPPLY_C, 2) + 0.0
                shi = round(supply_heat_index(t, t + RISE_K, SUPPLY_C), 3) + 0.0
                cells.append(f"{mean:6.2f} {hot:6.2f} {shi:6.3f}  ")
            print(f"{name:>8} {r:5.2f} {max(0.0, 1 / r - 1) * RISE_K:6.2f} | " + " | ".join(cells))


def leak_table() -> None:
    print("\nleaky cold aisle, r = 1.2 (plan view): hottest / mean rise [K] against l dT / (1 - l)")
    for leak in (0.02, 0.05, 0.1, 0.2):
        t = _inlets(1.2, "cold_aisle", 1, leak) - SUPPLY_C
        print(f"  l = {leak:4.2f}: hottest {t.max():5.2f}, mean {t.mean():5.2f}, bound {leak * RISE_K / (1 - leak):5.2f}")


def zone_table() -> None:
    print("\nsealed cold aisle, its air balance: tile supply S / Vr, room share f, inlet rise [K]:")
    print(f"{'model':>8} {'r':>5} {'S/Vr':>6} {'f':>6} {'f dT/r':>7} {'bound':>6} {'mean':>6} {'hottest':>7}")
    heat = np.full(40, 10e3)
    v = rack_airflow_m3_s(heat, RISE_K)
    for layers, name in ((1, "plan"), (3, "buoyant")):
        for r in (0.7, 0.8, 0.9, 1.1):
            g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=r * v.sum() / 4,
                         containment="cold_aisle", n_layers=layers)
            prob = buoyant_flow(g, heat, v).problem if layers > 1 else build_problem(g, v)
            t = inlet_temp_c(inlet_model_of_problem(prob), heat) - SUPPLY_C
            s = prob.enclosure_supply_m3_s.sum() / v.sum()
            f = max(0.0, 1 - s)
            print(f"{name:>8} {r:5.2f} {s:6.3f} {f:6.3f} {f * RISE_K / r:7.2f} {f * RISE_K / (1 - f):6.2f} "
                  f"{t.mean():6.2f} {t.max():7.2f}")


if __name__ == "__main__":
    print(machine())
    t0 = time.process_time()
    balance_table()
    leak_table()
    zone_table()
    print(f"\nCPU time {time.process_time() - t0:.1f} s")
