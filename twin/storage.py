"""Checkpoint and data-loading cost of the storage system (pure functions)."""

from __future__ import annotations

import numpy as np

# IBM Storage Scale System 6000: 155 GB/s write, 310 GB/s read per unit (seed 000;
# ../shared/reference/README.md). A generic enterprise NFS filer for comparison: ~10 GB/s
# aggregate write (assumption: dual-controller all-flash NAS over 4x 100 GbE).
NFS_WRITE_GB_S = 10.0
NFS_READ_GB_S = 20.0
# Seed 000: Storage Scale "cut iteration time by over 10% against NFS": an NFS-fed job's
# step takes 1/(1 - 0.10) = 1.11x as long (data loading and small-file metadata stalls).
NFS_STEP_TIME_FACTOR = 1.0 / (1.0 - 0.10)


def checkpoint_bytes(params: float) -> float:
    """Checkpoint size [B] of a mixed-precision Adam run: 14 B per parameter.

    2 B bf16 weights + 4 B fp32 master weights + 8 B fp32 Adam moments (ZeRO paper,
    Rajbhandari et al. 2020, section 3.1: 16 B per parameter including the fp16 gradient,
    which a checkpoint does not store).
    """
    return 14.0 * float(params)


def checkpoint_write_s(size_bytes, aggregate_write_gb_s, concurrent_writers=1) -> np.ndarray:
    """Time to write a checkpoint [s] = size / (aggregate bandwidth / concurrent writers).

    size_bytes [B]; aggregate_write_gb_s [GB/s, 1e9 B/s] shared equally by the jobs that
    write at the same time.
    """
    share = np.asarray(aggregate_write_gb_s, float) * 1e9 / np.maximum(concurrent_writers, 1)
    return np.asarray(size_bytes, float) / share


def checkpoint_read_s(size_bytes, aggregate_read_gb_s) -> np.ndarray:
    """Time to reload a checkpoint [s] = size / aggregate read bandwidth [GB/s]."""
    return np.asarray(size_bytes, float) / (np.asarray(aggregate_read_gb_s, float) * 1e9)


def storage_bandwidth_gb_s(kind: str, units: int, write_gb_s_per_unit: float,
                           read_gb_s_per_unit: float) -> tuple[float, float]:
    """(write, read) aggregate bandwidth [GB/s] of the storage system."""
    if kind == "nfs":
        return NFS_WRITE_GB_S, NFS_READ_GB_S
    return units * write_gb_s_per_unit, units * read_gb_s_per_unit


def step_time_factor(kind: str) -> float:
    """Multiplier on the training step time from data loading through the storage kind."""
    return NFS_STEP_TIME_FACTOR if kind == "nfs" else 1.0
