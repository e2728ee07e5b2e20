"""Benchmarks of issue 16: the flow solve between jobs, the step and memory estimates.

Run: .venv/bin/python bench/bench_flows.py
Targets: max-min flow solve for 1,024 nodes and 20 jobs <= 100 ms; `twin estimate step`
physics (step + memory) for a dense model < 10 ms.
"""

from __future__ import annotations

import time

import numpy as np
from bench_fabric_compute import best_of
from machine import machine

from twin.compute.memory import memory_per_gpu_bytes
from twin.compute.shapes import MODEL_SHAPES, MOE_SHAPES
from twin.compute.step import step_estimate
from twin.fabric import bottleneck_bandwidth_gbps, build_fabric
from twin.fabric.flows import fair_share_bandwidths_gbps

H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
            inter_node_gbps=3200.0)


def wall_and_cpu_s(fn, repeat: int) -> tuple[float, float]:
    """Least wall time and least CPU time (user + system of this process) [s] of
    ``repeat`` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def main() -> None:
    print(f"machine: {machine()}")
    g = build_fabric("rail_optimized", 1024)
    jobs = np.array_split(np.random.default_rng(1).permutation(1024), 20)
    for routing in ("adaptive", "ecmp"):
        for pattern in ("ring", "all_to_all"):
            def solve(r=routing, p=pattern):
                return fair_share_bandwidths_gbps(g, jobs, pattern=p, routing=r)
            t, cpu = wall_and_cpu_s(solve, 5)
            print(f"max-min flow solve, 1,024 nodes x 20 jobs (random placement), {pattern}, "
                  f"{routing}: {t * 1e3:.1f} ms wall, {cpu * 1e3:.1f} ms CPU  (target <= 100 ms)")

    # a million GPUs (issue 19): 131,072 nodes of 8 GPUs on 144-port XDR switches, built
    # aggregated (no networkx vertices) and routed per scalable unit
    t, cpu = wall_and_cpu_s(lambda: build_fabric("rail_optimized", 131_072, switch_ports=144,
                                                 link_gbps=800.0), 1)
    print(f"build_fabric, 131,072 nodes (1,048,576 GPUs), 144-port switches, 3 tiers: "
          f"{t:.2f} s wall, {cpu:.2f} s CPU")
    big = build_fabric("rail_optimized", 131_072, switch_ports=144, link_gbps=800.0)
    for n in (1024, 16_384, 131_072):
        t, cpu = wall_and_cpu_s(lambda n=n: bottleneck_bandwidth_gbps(big, np.arange(n)), 3)
        print(f"bottleneck_bandwidth_gbps (ring), job of {n:,} nodes on it: {t * 1e3:.0f} ms wall, "
              f"{cpu * 1e3:.0f} ms CPU")
    jobs8 = np.array_split(np.arange(131_072), 8)
    t, cpu = wall_and_cpu_s(lambda: fair_share_bandwidths_gbps(big, jobs8), 1)
    print(f"max-min flow solve, 8 jobs of 16,384 nodes on it (ring, adaptive): {t:.2f} s wall, "
          f"{cpu:.2f} s CPU")

    dense = dict(MODEL_SHAPES["llama31_70b"], gpus=64, global_batch=128, micro_batch=1, tp=4,
                 pp=4, cp=2, vpp=5, peak_tflops=989.0, **H100)
    n = 2000
    t = best_of(lambda: [step_estimate(**dense) for _ in range(n)], 3) / n
    print(f"step_estimate, Llama 3.1 70B on 64 GPUs: {t * 1e3:.3f} ms  (target < 10 ms)")
    mem = {k: dense[k] for k in ("layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab",
                                 "seq_len", "micro_batch", "tp", "pp", "cp", "vpp")}
    t = best_of(lambda: [memory_per_gpu_bytes(**mem, dp=2, microbatches=64)
                         for _ in range(n)], 3) / n
    print(f"memory_per_gpu_bytes, the same job: {t * 1e3:.3f} ms")
    shape = dict(MOE_SHAPES["grok1_314b"])
    e, k = shape.pop("experts"), shape.pop("top_k")
    moe = dict(shape, gpus=512, global_batch=1024, micro_batch=1, tp=4, pp=8, cp=2, vpp=8,
               peak_tflops=989.0, moe_experts=e, moe_top_k=k, moe_ep=8, **H100)
    t = best_of(lambda: [step_estimate(**moe) for _ in range(200)], 3) / 200
    print(f"step_estimate, Grok-1 314B MoE on 512 GPUs: {t * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
