"""Workload benchmark (issue 14): replay 1,000,000 jobs on a 10,000-node cluster with the
standalone LSF-like scheduler (no engine). Target: 60 s or less on 2 cores.

Jobs: the default stream (fitted to Acme's Seren) at an offered load of 0.9 (and an
overloaded 1.5, where a queue builds and backfill works), 80,000 GPUs in scalable units
of 32 nodes; EASY backfill scanning at most every 30 s (Slurm's ``bf_interval``). Wall and CPU time are both printed: on a shared machine the CPU time is the
fairer figure.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from machine import machine

from twin.workload.kpis import busy_gpu_s_step, queue_wait_quantile_h
from twin.workload.replay import replay
from twin.workload.scheduler import ClusterShape, SchedulerConfig
from twin.workload.stream import default_stream_params, generate_jobs, jobs_per_hour_for_load

N_JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000


def case(label: str, jobs, cluster, config, horizon_s: float, starts: str = "reschedule"):
    t0, c0 = time.perf_counter(), time.process_time()
    r = replay(jobs, cluster, config, starts=starts)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rec = r.records
    util = busy_gpu_s_step(r.busy_t_s, r.busy_gpus, 0.0, horizon_s) / (cluster.gpus * horizon_s)
    p50 = queue_wait_quantile_h(rec.submit_s, rec.start_s, r.t1_s, 0.5)
    p95 = queue_wait_quantile_h(rec.submit_s, rec.start_s, r.t1_s, 0.95)
    print(f"| {label} | {len(jobs):,} | {wall:.1f} s | {cpu:.1f} s | {util:.3f} | {p50:.2f} / {p95:.2f} h |",
          flush=True)
    return r


def main() -> None:
    print(machine())
    cluster = ClusterShape(nodes=10_000, gpus_per_node=8, su_nodes=32)
    p = default_stream_params()
    print("| case | jobs | wall | CPU | busy/healthy over the submit window | wait p50 / p95 |")
    print("|---|---|---|---|---|---|")
    bf = 30.0    # backfill scan at most every 30 s (Slurm's bf_interval default)
    for load, configs in ((0.9, (("FIFO + backfill", SchedulerConfig(backfill_interval_s=bf)),
                                 ("fair share + backfill", SchedulerConfig(order="fairshare",
                                                                           backfill_interval_s=bf)))),
                          (1.5, (("FIFO + backfill", SchedulerConfig(backfill_interval_s=bf)),))):
        rate = jobs_per_hour_for_load(p, cluster.gpus, load)
        horizon = N_JOBS / rate * 3600.0
        t0 = time.perf_counter()
        jobs = generate_jobs(p, np.random.default_rng(2024), horizon_s=horizon, jobs_per_hour=rate)
        print(f"| generate {len(jobs):,} jobs, load {load} ({horizon / 86400:.1f} days) | | "
              f"{time.perf_counter() - t0:.1f} s | | | |", flush=True)
        for label, cfg in configs:
            r = case(f"load {load}, {label}", jobs, cluster, cfg, horizon)
            if load == 0.9 and cfg.order == "fifo":
                rec = r.records
                case(f"load {load}, recorded starts of the FIFO run", jobs.assign(start_s=rec.start_s),
                     cluster, cfg, horizon, starts="recorded")


if __name__ == "__main__":
    main()
