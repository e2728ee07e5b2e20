"""Benchmarks of the fabric and compute models (issue 5 targets).

Run: .venv/bin/python bench/bench_fabric_compute.py
Targets: build a 4,096-node rail-optimised fabric < 2 s; link loads of a 1,024-node
job's collective < 100 ms; one step estimate < 10 ms.
"""

from __future__ import annotations

import time

import numpy as np
from machine import machine

from twin.compute import collective_time_s, step_estimate
from twin.fabric import (
    bottleneck_bandwidth_gbps,
    build_fabric,
    link_loads,
    link_loads_gbps,
    placement_hops,
    shared_bandwidths_gbps,
)


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best




def main() -> None:
    print(f"machine: {machine()}")

    t_build = best_of(lambda: build_fabric("rail_optimized", 4096), 3)
    g = build_fabric("rail_optimized", 4096)
    print(f"build 4,096-node rail-optimised fabric ({g.number_of_nodes()} vertices, "
          f"{g.number_of_edges()} bundles): {t_build * 1e3:.0f} ms  (target < 2000 ms)")

    job = np.arange(1024)
    spread = np.arange(0, 4096, 4)  # 1,024 nodes over the 4 pods (three tiers)
    for name, nodes in (("contiguous (one pod)", job), ("spread over 4 pods", spread)):
        for pattern in ("ring", "all_to_all"):
            t = best_of(lambda n=nodes, p=pattern: link_loads(g, n, pattern=p), 5)
            print(f"link loads, 1,024-node {pattern} collective, {name}: {t * 1e3:.1f} ms  "
                  "(target < 100 ms)")
    cut = [("leaf:p0:0", "spine:p0:0:0"), ("spine:p3:1:5", "core:p3:5:0")]
    t = best_of(lambda: link_loads(g, spread, pattern="all_to_all", failed_links=cut), 3)
    print(f"link loads, 1,024-node all-to-all, spread, 2 failed cables: {t * 1e3:.1f} ms")
    t = best_of(lambda: link_loads_gbps(g, spread), 3)
    print(f"link loads as a name-keyed dict, 1,024-node ring, spread: {t * 1e3:.1f} ms")
    t = best_of(lambda: bottleneck_bandwidth_gbps(g, spread), 5)
    print(f"bottleneck bandwidth, 1,024-node ring, spread: {t * 1e3:.1f} ms")
    jobs = [np.arange(k, 4096, 4) for k in range(4)]
    t = best_of(lambda: shared_bandwidths_gbps(g, jobs), 3)
    print(f"shared bandwidths, 4 jobs x 1,024 nodes: {t * 1e3:.1f} ms")
    t = best_of(lambda: placement_hops(g, spread), 5)
    print(f"placement hops, 1,024 nodes: {t * 1e3:.2f} ms")

    kw = dict(layers=80, hidden=8192, ffn_hidden=28672, heads=64, kv_heads=8, vocab=128256,
              seq_len=8192, global_batch=128, micro_batch=1, tp=4, pp=4, cp=2, vpp=5, gpus=64,
              gpus_per_node=8, peak_tflops=989.0, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0,
              nvls=True, inter_node_gbps=3200.0)
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        step_estimate(**kw)
    t = (time.perf_counter() - t0) / n
    print(f"one step estimate (Llama 3.1 70B, 64 GPUs): {t * 1e3:.3f} ms  (target < 10 ms)")
    s = np.logspace(3, 10, 64)
    t = best_of(lambda: collective_time_s("allreduce", s, 128), 20)
    print(f"collective times, 64 sizes at once: {t * 1e6:.0f} us")


if __name__ == "__main__":
    main()
