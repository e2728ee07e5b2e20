"""Power-chain micro-benchmark: evaluate the whole power tree for 4,096 racks.

Run: .venv/bin/python bench/bench_power.py
Target (issue 3): one evaluation of the tree for 4,096 racks in under 1 ms.
Prints wall-clock (perf_counter) and CPU (process_time) times per call; on a shared,
oversubscribed machine the CPU time is the fairer figure.
"""

from __future__ import annotations

import os
import platform
import time
import timeit

import numpy as np

from twin.phases import Phase
from twin.power import (
    breaker_continuous_limit_w,
    breaker_trip_time_s,
    build_power_tree,
    evaluate_power_tree,
    node_power_w,
    racks_admitted,
)

R = 4096
RACKS_PER_RPP = 8
NODES_PER_RACK = 4
HW = dict(gpu_count=8, gpu_tdp_w=700.0, gpu_idle_w=70.0, host_idle_w=1100.0,
          host_active_w=1900.0, fan_max_w=1600.0, node_max_w=10200.0, psu_capacity_w=16800.0)


def best_us(fn, number, repeat=7, timer=time.perf_counter):
    """Best and median time per call [us] over ``repeat`` runs of ``number`` calls."""
    times = np.array(timeit.repeat(fn, number=number, repeat=repeat, timer=timer)) / number * 1e6
    return times.min(), np.median(times)


def main():
    rng = np.random.default_rng(0)
    pair = np.arange(R) // RACKS_PER_RPP
    rack_rpp = np.stack([2 * pair, 2 * pair + 1], axis=1)       # A/B cords
    n_rpp = 2 * (pair.max() + 1)
    lim = np.full(n_rpp, float(breaker_continuous_limit_w(400, 415, 3, power_factor=0.95)))
    tree = build_power_tree(rack_rpp, lim, [40e6, 40e6], "double_conversion", 36e6,
                            rpp_feed=np.arange(n_rpp) % 2)
    rack_w = rng.uniform(20e3, 34e3, R)
    series = rng.uniform(20e3, 34e3, (24, R))
    phases = rng.integers(0, 7, R * NODES_PER_RACK)
    inlet = rng.uniform(18.0, 32.0, R * NODES_PER_RACK)
    wc = np.full(R, 4 * 9520.0 + 900.0)

    rows = [
        ("evaluate_power_tree, 4096 racks (A/B, 1024 RPPs, 2 feeds), all feeds up",
         lambda: evaluate_power_tree(tree, rack_w), 200),
        ("evaluate_power_tree, 4096 racks, feed A lost (routing cached)",
         lambda: evaluate_power_tree(tree, rack_w, feed_up=[False, True]), 200),
        ("evaluate_power_tree, 4096 racks, feed A lost, first time (routing built)",
         lambda: (tree._routes.clear(), evaluate_power_tree(tree, rack_w, feed_up=[False, True])), 100),
        ("evaluate_power_tree, 24 x 4096 racks (one day hourly)",
         lambda: evaluate_power_tree(tree, series), 50),
        ("node_power_w, 16384 nodes",
         lambda: node_power_w(phases, 700.0, inlet, **HW), 100),
        ("breaker_trip_time_s, 1024 RPPs",
         lambda: breaker_trip_time_s(rack_w[:n_rpp] / 2e4), 500),
        ("racks_admitted, 4096 racks, skip policy",
         lambda: racks_admitted(wc, 120e6, rack_rpp, lim, policy="skip", rpp_redundant=True), 100),
    ]
    print(f"machine: {platform.machine()}, python {platform.python_version()}, numpy {np.__version__}, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for name, fn, number in rows:
        fn()
        lo, med = best_us(fn, number)
        cpu, _ = best_us(fn, number, timer=time.process_time)
        print(f"{name:74s} wall best {lo:8.1f} us  median {med:8.1f} us  cpu best {cpu:8.1f} us")
    assert Phase.TRAINING == 2  # phase codes used above are the shared ones


if __name__ == "__main__":
    main()
