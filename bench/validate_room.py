"""Room benchmark of the buoyant air model (issue 12): the measured room, the wall-jet supply's
speed, and what a benchmark can tell the plume coefficient c_b.

1. RISE SICS ICE POD 2 (measured; docs/validation.md, cooling): mean absolute error at the
   rack-front sensor strips with the floor supply and with the wall-jet supply
   (twin.thermal.jets), October 2019 (ten configurations; rack airflow from Rafsine's fan
   law, from the strips' balance, or from the fans' free delivery x phi fitted on day 1) and
   the held-out January 2018 pod; then why the twin's inlet rise grows with load (two-zone
   balance against the mixing on top of it, twin and pod).
2. Speed of the wall-jet option: the buoyant layered field of a 200-rack hall
   (row_hall(10, 20), four layers) whose ten wall units blow jets from a 1.0 m x 0.1-1.9 m
   outlet across the hall, against the same hall with floor supply (target <= 10 s CPU).
3. c_b: for the 40-rack row hall of twin.studies.room_benchmark, the hottest and mean inlet
   rise above supply over cooling-air / rack-air ratio x c_b, open and with contained cold
   aisles.

Run: .venv/bin/python bench/validate_room.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small factorisations: see bench_cooling

import time  # noqa: E402
from dataclasses import replace  # noqa: E402

import numpy as np  # noqa: E402
from machine import machine  # noqa: E402

from twin.studies.room_benchmark import (  # noqa: E402
    plume_coefficient_sensitivity,
    pod2_2018_comparison,
    pod2_cases,
    pod2_comparison,
    pod2_system_flow_fraction,
)
from twin.thermal import rack_airflow_m3_s, row_hall  # noqa: E402
from twin.thermal.buoyancy import buoyant_flow  # noqa: E402
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K  # noqa: E402


def pod2() -> None:
    print("POD 2, rack-front strips: MAE / bias [K]")
    print(f"  phi (fans' share of free delivery, fitted on day 1) = {pod2_system_flow_fraction():.4f}")
    for supply in ("floor", "wall_jet"):
        for ra in ("fan_law", "strip_balance", "fan_curve"):
            c = pod2_comparison(ra, supply=supply)
            e = c.strip_error_k
            print(f"  Oct 2019, {supply:8s} {ra:13s} {c.strip_mae_k():5.2f} / {e.mean():+5.2f}  max {np.abs(e).max():5.2f}  "
                  f"day 1 / 2 {np.abs(e[:5]).mean():.2f} / {np.abs(e[5:]).mean():.2f}  "
                  f"by height {' / '.join(f'{c.strip_mae_k(h):.2f}' for h in range(3))}  ({c.cpu_s:.1f} s CPU)")
        h = pod2_2018_comparison(supply=supply)
        print(f"  Jan 2018, {supply:8s} {'strip_balance':13s} {h.strip_mae_k():5.2f} / {h.strip_error_k.mean():+5.2f}  "
              f"by height {' / '.join(f'{h.strip_mae_k(k):.2f}' for k in range(3))}  (held out)")


def rise_with_load() -> None:
    """Issue 12 (d): inlet rise above supply = two-zone balance + mixing on top of it."""
    print("POD 2, wall jet: rise above supply at the strips [K] = two-zone balance + mixing excess")
    for ra in ("fan_law", "fan_curve"):
        c = pod2_comparison(ra, supply="wall_jet")
        for i, case in enumerate(pod2_cases(ra)):
            ts = np.average(case.unit_discharge_c, weights=case.unit_airflow_m3_s)
            q, vc, vr = case.rack_heat_w.sum(), case.unit_airflow_m3_s.sum(), case.rack_airflow_m3_s.sum()
            tz = q / AIR_VOLUMETRIC_HEAT_J_M3_K * (1 / vc - 1 / vr)
            tw, me = c.twin_strip_c[i].mean() - ts, c.strip_front_c[i].mean() - ts
            print(f"  {ra:9s} {case.name:10s} cooler/rack air {vc / vr:.2f}  rack rise {q / AIR_VOLUMETRIC_HEAT_J_M3_K / vr:5.2f}"
                  f"  two-zone {tz:5.2f}  twin {tw:5.2f} ({tw - tz:+5.2f})  pod {me:5.2f} ({me - tz:+5.2f})")


def wall_jet_speed() -> None:
    g = row_hall(10, 20, cooling_per_wall=5, cooling_capacity_w=250e3, n_layers=4)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    jets = replace(g, cooling_outlet_z_m=np.tile([0.1, 1.9], (g.n_cooling, 1)),
                   cooling_outlet_width_m=np.ones(g.n_cooling),
                   cooling_throw_dir=np.array([[1.0 if x < 0.5 * g.width_m else -1.0, 0.0] for x, _ in g.cooling_xy_m]))
    for name, geom in (("floor supply", g), ("wall jets", jets)):
        best = np.inf
        for _ in range(2):
            t0 = time.process_time()
            bf = buoyant_flow(geom, heat, v)
            best = min(best, time.process_time() - t0)
        t_in = bf.problem.inlet_temp_c(bf.temp_c, heat)
        print(f"buoyant layered field, 200 racks, {name}: {best:.2f} s CPU (best of 2), {bf.iterations} passes, "
              f"inlets {t_in.min():.1f}-{t_in.max():.1f} C")


def cb_sensitivity() -> None:
    t0 = time.process_time()
    s = plume_coefficient_sensitivity()
    cpu = time.process_time() - t0
    head = "  ".join(f"{'c_b=' + format(c, 'g'):^13s}" for c in s.coefficients)
    print(f"inlet rise above supply [K]; 40 racks x 10 kW, 15 K rise, 4 layers\n"
          f"{'layout':11s} {'ratio':>5s}  {head}   span\n{'':18s}"
          + "  ".join(["  hot / mean "] * s.coefficients.size) + "   hot / mean")
    for i, layout in enumerate(s.layouts):
        for j, r in enumerate(s.airflow_ratios):
            cells = "  ".join(f"{s.hottest_inlet_rise_k[i, j, k]:5.2f} / {s.mean_inlet_rise_k[i, j, k]:5.2f}"
                              for k in range(s.coefficients.size))
            print(f"{layout:11s} {r:5.2f}  {cells}   {s.span_k('hottest')[i, j]:4.2f} / "
                  f"{s.span_k('mean')[i, j]:4.2f}")
    n = len(s.layouts) * s.airflow_ratios.size * s.coefficients.size
    print(f"{n} buoyant solves in {cpu:.1f} s CPU")


def main() -> None:
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine {machine()}")
    pod2()
    rise_with_load()
    wall_jet_speed()
    cb_sensitivity()


if __name__ == "__main__":
    main()
