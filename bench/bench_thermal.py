"""Thermal benchmarks (issue 4): steady solve and D for a 200-rack hall, inlet
temperatures for 4,096 racks from D, plus accuracy figures. Prints its figures.

Run: .venv/bin/python bench/bench_thermal.py [--skip-large]
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

import numpy as np
from machine import machine

from twin.thermal import inlet_model, inlet_temp_c, rack_airflow_m3_s, row_hall, steady_field
from twin.thermal.solver import build_problem


def best_of(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out




def main(skip_large: bool) -> None:
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine {machine()}")
    # 200 racks: 10 rows of 20, hot/cold aisles, 5 CRAH of 10 m3/s, 250 kW per end wall
    g = row_hall(10, 20, cooling_per_wall=5, cooling_capacity_w=250e3)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    steady_field(g, heat, v)  # warm imports (xarray lazily loads its backends)
    t_steady, ds = best_of(lambda: steady_field(g, heat, v), 3)
    print(f"200-rack hall: grid {g.nx} x {g.ny} cells of {g.cell_m} m ({2 * g.nx * g.ny} room+plenum cells)")
    print(f"steady_field (full solve, 200 racks): {t_steady:.3f} s  [target < 2 s]")
    t_d, model = best_of(lambda: inlet_model(g, v), 3)
    print(f"inlet_model (derive D, 200 racks): {t_d:.3f} s  [target < 10 s]")
    err = np.abs(inlet_temp_c(model, heat) - ds.rack_inlet_temp.values).max()
    print(f"D vs full solve: max |inlet difference| {err:.2e} K")
    print(f"energy balance: removed / added = {ds.cooling_heat_removed.sum().item() / heat.sum():.12f}")
    t_in = ds.rack_inlet_temp.values
    print(f"inlets: min {t_in.min():.2f} mean {t_in.mean():.2f} max {t_in.max():.2f} C")
    fine = steady_field(replace(g, cell_m=g.cell_m / 2), heat, v).rack_inlet_temp.values
    print(f"grid refinement 0.3 -> 0.15 m: hottest inlet {t_in.max():.2f} -> {fine.max():.2f} C "
          f"(change {fine.max() - t_in.max():+.2f} K) [target |change| < 1 K]")
    for gamma in (0.06, 0.2):
        alt = steady_field(replace(g, eddy_diffusivity_m2_s=gamma), heat, v).rack_inlet_temp.values
        print(f"sensitivity: eddy diffusivity {gamma} m2/s -> hottest inlet {alt.max():.2f} C")

    g3 = replace(g, n_layers=4)
    t_s3, ds3 = best_of(lambda: steady_field(g3, heat, v), 2)
    t_d3, m3 = best_of(lambda: inlet_model(g3, v), 2)
    t3 = ds3.rack_inlet_temp.values
    print(f"3-D, 4 layers of 0.75 m: steady_field {t_s3:.3f} s, inlet_model {t_d3:.3f} s; inlets mean "
          f"{t3.mean():.2f} max {t3.max():.2f} C; D vs full {np.abs(inlet_temp_c(m3, heat) - t3).max():.1e} K")

    # transients: one unit of the 200-rack hall trips; then all of them
    from twin.thermal import minutes_to_inlet_limit, suggest_placement

    heat_tr = np.full(g.n_racks, 8e3)  # 8 kW per rack: hottest steady inlet well below 32 C
    t_in8 = inlet_temp_c(model, heat_tr)
    for trip in ([0], [0, 5], list(range(g.n_cooling))):
        t0 = time.perf_counter()
        m = minutes_to_inlet_limit(g, heat_tr, v, trip)
        t_tr = time.perf_counter() - t0
        fin = m[np.isfinite(m)]
        print(f"8 kW racks (steady hottest {t_in8.max():.1f} C), units {trip} trip: {fin.size} of "
              f"{g.n_racks} racks reach 32 C within 1 h"
              + (f", first after {fin.min():.2f} min, median {np.median(fin):.2f} min" if fin.size else "")
              + f" ({t_tr:.2f} s)")
    # siting: 48 racks on 72 candidate positions, 1 CRAH of 14 m3/s per end wall
    cand = row_hall(6, 12, cooling_per_wall=1, cooling_airflow_m3_s=14.0)
    t0 = time.perf_counter()
    pl = suggest_placement(cand, 48, 10e3, float(rack_airflow_m3_s(10e3, 15.0)))
    print(f"placement 48 of 72 positions ({time.perf_counter() - t0:.2f} s): hottest inlet "
          f"{pl.hottest_inlet_c:.2f} C vs naive fill {pl.naive_hottest_inlet_c:.2f} C (gain {pl.gain_k:.2f} K; "
          f"surrogate predicted {pl.predicted_hottest_inlet_c:.2f} C)")

    if skip_large:
        return
    # 4,096 racks: 64 rows of 64, 30 fan-wall units of 45 m3/s per end wall, 0.6 m cells
    big = row_hall(64, 64, cooling_per_wall=30, cooling_airflow_m3_s=45.0, cooling_capacity_w=800e3, cell_m=0.6)
    hb = np.full(big.n_racks, 10e3)
    vb = rack_airflow_m3_s(hb, 15.0)
    t0 = time.perf_counter()
    prob = build_problem(big, vb)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    mb = inlet_model(big, vb)
    t_db = time.perf_counter() - t0
    print(f"4,096-rack hall: grid {big.nx} x {big.ny} cells of {big.cell_m} m; assembly {t_build:.1f} s; "
          f"derive D {t_db:.1f} s")
    nnz = mb.recirculation_csr.nnz
    print(f"truncated D: {nnz} non-zeros ({nnz / big.n_racks**2:.2%} of dense), bound "
          f"{mb.truncation_k_per_w * 100e3:.3f} K at 100 kW/rack")
    rng = np.random.default_rng(0)
    q = rng.uniform(5e3, 15e3, big.n_racks)
    exact = mb.base_inlet_c + mb.recirculation_k_per_w @ q
    approx = inlet_temp_c(mb, q)
    print(f"sparse vs dense D, 4,096 racks: max |difference| {np.abs(approx - exact).max():.2e} K")
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        inlet_temp_c(mb, q)
    t_eval = (time.perf_counter() - t0) / n
    print(f"inlet_temp_c, 4,096 racks (sparse D): {t_eval * 1e3:.3f} ms  [target < 1 ms]")
    t0 = time.perf_counter()
    for _ in range(50):
        mb.base_inlet_c + mb.recirculation_k_per_w @ q
    t_dense = (time.perf_counter() - t0) / 50
    print(f"dense D mat-vec, 4,096 racks (for comparison): {t_dense * 1e3:.3f} ms")
    print(f"solve check: full solve of the 4,096-rack hall vs D: "
          f"{np.abs(prob.W @ prob.solve(q) - exact).max():.2e} K")


if __name__ == "__main__":
    main("--skip-large" in sys.argv)
