"""Benchmark: sampling every failure of a cluster run.

Cases
  llama3    16,384 GPUs (2,048 nodes), 54 days
  large    100,000 GPUs (12,500 nodes), nine months (273 days)

Paths
  sampler  ClusterFailureSampler, thermal acceleration updated every sampling interval
           (O(N) numpy per update), next() per event (O(log N)), as the engine should
  batch    ClusterFailureSampler.sample_until over the whole run (constant rates)
  matrix   sample_next_failure on the full (N, K) rate matrix rebuilt every interval
           and after every event (O(N K) numpy per call)

Run: .venv/bin/python bench/bench_reliability.py [--no-matrix]
"""

from __future__ import annotations

import os
import resource
import sys
import time
import tracemalloc

import numpy as np
from machine import machine

from twin.reliability import (
    ClusterFailureSampler,
    load_failure_classes,
    node_failure_rates_per_s,
    sample_next_failure,
)

MATRIX = "--no-matrix" not in sys.argv  # the slow reference path
CASES = {"llama3": (2048, 54 * 86400.0), "large": (12_500, 273 * 86400.0)}  # nodes, horizon [s]


_ACCEL: dict[int, list[np.ndarray]] = {}


def _accel(rng: np.random.Generator, n: int) -> np.ndarray:
    """A thermal acceleration field (N,): lognormal spread across nodes, one of 48
    precomputed fields in turn, so the benchmark times the sampler, not this RNG."""
    if n not in _ACCEL:
        g = np.random.default_rng(12345)
        _ACCEL[n] = [np.exp(0.3 * g.standard_normal(n)) for _ in range(48)]
    fields = _ACCEL[n]
    fields.append(fields.pop(0))
    return fields[0]


def run_sampler(n: int, horizon_s: float, interval_s: float, seed: int = 0) -> tuple[int, int]:
    classes = load_failure_classes()
    rng = np.random.default_rng(seed)
    s = ClusterFailureSampler(classes, n)
    events = updates = 0
    t = 0.0
    while t < horizon_s:
        s.update(thermal_acceleration=_accel(rng, n))
        updates += 1
        left = min(interval_s, horizon_s - t)
        while (ev := s.next(rng, left)) is not None:
            left -= ev[0]
            events += 1
        t += interval_s
    return events, updates


def run_batch(n: int, horizon_s: float, seed: int = 0) -> int:
    s = ClusterFailureSampler(load_failure_classes(), n)
    t, _, _ = s.sample_until(np.random.default_rng(seed), horizon_s)
    return int(t.size)


def run_matrix(n: int, horizon_s: float, interval_s: float, seed: int = 0) -> tuple[int, int]:
    classes = load_failure_classes()
    rng = np.random.default_rng(seed)
    events = updates = 0
    t = 0.0
    while t < horizon_s:
        rates = node_failure_rates_per_s(classes, n, thermal_acceleration=_accel(rng, n))
        updates += 1
        left = min(interval_s, horizon_s - t)
        while (ev := sample_next_failure(rng, rates, left)) is not None:
            left -= ev[0]
            events += 1
        t += interval_s
    return events, updates


def timed(fn, *args):
    """Result, wall time [s] (untraced run) and peak traced memory [MB] (second run;
    tracemalloc slows numpy allocation, so it never runs while timing)."""
    t0 = time.perf_counter()
    out = fn(*args)
    dt = time.perf_counter() - t0
    tracemalloc.start()
    fn(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, dt, peak / 1e6




def main() -> None:
    print(f"machine: {machine()}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'case':7s} {'path':8s} {'interval':>9s} {'events':>7s} {'updates':>8s} {'time_s':>8s} {'peak_MB':>8s}")
    for case, (n, horizon_s) in CASES.items():
        for interval_s in (300.0, 3600.0):
            (ev, up), dt, mb = timed(run_sampler, n, horizon_s, interval_s)
            print(f"{case:7s} {'sampler':8s} {interval_s / 60:7.0f}m {ev:7d} {up:8d} {dt:8.3f} {mb:8.2f}")
        ev, dt, mb = timed(run_batch, n, horizon_s)
        print(f"{case:7s} {'batch':8s} {'-':>9s} {ev:7d} {'1':>8s} {dt:8.3f} {mb:8.2f}")
        if MATRIX:
            (ev, up), dt, mb = timed(run_matrix, n, horizon_s, 3600.0)
            print(f"{case:7s} {'matrix':8s} {60:7.0f}m {ev:7d} {up:8d} {dt:8.3f} {mb:8.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
