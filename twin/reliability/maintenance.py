"""Planned maintenance (announced) versus unplanned faults.

Planned: firmware upgrades, configuration or dataset updates, announced in advance
(Llama 3: 47 planned against 419 unexpected interruptions in 54 days, arXiv 2407.21783).
The job writes a checkpoint at the announcement and stops: it loses no work beyond the
checkpoint write, pays the maintenance downtime and a restart.
Unplanned: every class of the catalog, ``host_maintenance`` included: the job loses the
work since its last checkpoint, plus detection and restart.
"""

from __future__ import annotations

import numpy as np

from twin.reliability.classes import planned_maintenance_rate_per_s


def sample_planned_maintenance_times_s(
    rng: np.random.Generator, horizon_s: float, rate_per_s: float | None = None
) -> np.ndarray:
    """Start times [s] of planned maintenance windows of a cluster-wide job in [0, T).

    Poisson with rate ``rate_per_s`` [1/s] (default the observed 47 per 54 days, Llama 3),
    sorted. Real windows
    are scheduled, not random; the Poisson draw reproduces the observed count and keeps
    them unaligned with the job's checkpoints.
    """
    r = planned_maintenance_rate_per_s() if rate_per_s is None else float(rate_per_s)
    m = int(rng.poisson(r * horizon_s)) if r > 0 and horizon_s > 0 else 0
    return np.sort(rng.random(m) * horizon_s)


def interruption_lost_work_s(
    time_since_checkpoint_s: np.ndarray | float, planned: bool | np.ndarray
) -> np.ndarray:
    """Training progress lost by an interruption [s].

    unplanned: the compute since the last completed checkpoint;
    planned:   0 (the job checkpoints at the announcement; the write time is overhead,
               not lost work).
    """
    t = np.asarray(time_since_checkpoint_s, dtype=float)
    return np.where(np.asarray(planned, dtype=bool), 0.0, t)
