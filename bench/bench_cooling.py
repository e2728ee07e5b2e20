"""Cooling benchmarks (issue 12): the layered buoyant field of a 200-rack hall (target
<= 10 s), an event-driven fault evaluation (target <= 50 ms), plus capacity, airflow
family and weather figures. Prints its figures.

Run: .venv/bin/python bench/bench_cooling.py
"""

from __future__ import annotations

import os

# small dense factorisations (200 x 200) run fastest single-threaded; on a shared,
# oversubscribed machine a threaded BLAS makes them 100x slower (measured: lu_factor of
# 200 x 200 in 0.5 s with threads at load 11, 1 ms without)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from machine import machine  # noqa: E402

from twin.thermal import hall_air_volume_m3, inlet_model, rack_airflow_m3_s, row_hall  # noqa: E402
from twin.thermal.airflow import RecirculationFamily  # noqa: E402
from twin.thermal.buoyancy import buoyant_flow, buoyant_inlet_model  # noqa: E402
from twin.thermal.capacity import capped_steady_state  # noqa: E402
from twin.thermal.events import ThermalMasses, advance, hall_steady_state, operator_for  # noqa: E402
from twin.thermal.weather import read_weather  # noqa: E402


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), float(np.median(times)), out


def main() -> None:
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine {machine()}")
    g = row_hall(10, 20, cooling_per_wall=5, cooling_capacity_w=250e3, n_layers=4)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    t, med, bf = best_of(lambda: buoyant_flow(g, heat, v), 2)
    tin = bf.problem.inlet_temp_c(bf.temp_c, heat)
    print(f"buoyant layered field, 200 racks, 4 layers, {g.nx}x{g.ny} cells: best {t:.2f} s median {med:.2f} s "
          f"({bf.iterations} Picard passes, last change {bf.change_k:.3f} K; inlets mean {tin.mean():.2f} "
          f"max {tin.max():.2f} C) [target <= 10 s]")
    t, med, m = best_of(lambda: buoyant_inlet_model(g, heat, v), 2)
    print(f"buoyant inlet model (field + D), 200 racks: best {t:.2f} s median {med:.2f} s")

    g2 = row_hall(10, 20, cooling_per_wall=5, cooling_capacity_w=250e3)
    before = inlet_model(g2, v)
    act = np.ones(g2.n_cooling, bool)
    act[[0, 5]] = False
    after = inlet_model(g2, v, act)
    masses = ThermalMasses.of(g2.n_racks, hall_air_volume_m3(g2), g2.cooling_airflow_m3_s)
    st = hall_steady_state(before, heat, chilled_water_temp_c=12.0)
    gpu = {"gpu_power_w": np.full(g2.n_racks, 700.0), "gpu_thermal_resistance_k_per_w": np.full(g2.n_racks, 0.075)}
    t_op, _, op = best_of(lambda: operator_for(after, masses, v), 5)
    op.factors(10.0)
    t_seg, med_seg, seg = best_of(lambda: advance(st, after, 1200.0, heat, masses, operator=op, **gpu), 7)
    c0 = time.process_time()
    for _ in range(7):
        advance(st, after, 1200.0, heat, masses, operator=op, **gpu)
    cpu_seg = (time.process_time() - c0) / 7
    print(f"event-driven fault, 200 racks, 2 of 10 units trip for 20 min (throttling on): "
          f"best {1e3 * t_seg:.1f} ms median {1e3 * med_seg:.1f} ms with a cached operator; operator build "
          f"{1e3 * t_op:.1f} ms; CPU {1e3 * cpu_seg:.1f} ms per evaluation; {len(seg.time_s) - 1} steps; hottest inlet {seg.max_inlet_temp_c.max():.2f} C [target <= 50 ms]")
    t_cold, med_cold, _ = best_of(lambda: advance(st, after, 1200.0, heat, masses, **gpu), 3)
    print(f"same, operator built inside (first fault of a running-unit set): best {1e3 * t_cold:.1f} ms")
    cap = np.full(10, 280e3)
    cap[[2, 7]] = 180e3
    t_cap, _, cs = best_of(lambda: capped_steady_state(before, heat * 1.2, capacity_w=cap), 7)
    print(f"capped steady state, 200 racks, 8 units of 280 kW and 2 of 180 kW for 2.4 MW: {1e3 * t_cap:.2f} ms "
          f"({cs.saturated.sum()} units saturated, {cs.iterations} active-set passes)")
    t_fam, _, fam = best_of(lambda: RecirculationFamily(g2, np.full(g2.n_racks, 1.2)), 1)
    t_int, _, _ = best_of(lambda: fam.model(np.full(g2.n_racks, 0.62 * 1.2)), 7)
    print(f"airflow family, 200 racks, 8 scales: build {t_fam:.2f} s; model at a new airflow {1e3 * t_int:.2f} ms")
    t_w, _, w = best_of(lambda: read_weather("723170TYA.CSV"), 3)
    print(f"read TMY3 year + wet bulb: {1e3 * t_w:.0f} ms ({w.station})")


if __name__ == "__main__":
    main()
