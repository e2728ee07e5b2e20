"""The LSF-like scheduler's configuration and its decisions, as plain records.

:mod:`twin.workload.scheduler` takes a :class:`ClusterShape` and a
:class:`SchedulerConfig`, accepts :class:`JobRequest` submissions and answers with
:class:`Start` and :class:`Preempt` decisions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class ClusterShape:
    """Nodes, GPUs per node and nodes per scalable unit (node i is in unit i // su_nodes)."""

    nodes: int
    gpus_per_node: int = 8
    su_nodes: int = 32

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class QueueSpec:
    """An LSF queue: higher ``priority`` is served first; jobs of a ``preemptive`` queue may
    preempt running jobs of lower-priority ``preemptable`` queues."""

    name: str
    priority: int
    preemptive: bool = False
    preemptable: bool = False


DEFAULT_QUEUES = (
    QueueSpec("interactive", 60),
    QueueSpec("prod", 50, preemptive=True),
    QueueSpec("normal", 30),
    QueueSpec("low", 10, preemptable=True),
)


@dataclass(frozen=True)
class SchedulerConfig:
    """Policy. ``order``: ``fifo`` or ``fairshare`` within a queue; ``backfill``: EASY
    backfill; ``preemption``: preemptive queues may preempt preemptable ones;
    ``fairshare_by``: ``user`` or ``project``; ``shares``: share per user/project (others
    ``default_share``); ``half_life_s``: decay of past usage (LSF HIST_HOURS, 5 h by
    default); ``backfill_depth``: pending jobs examined for backfill per pass (Slurm's
    ``bf_max_job_test``, 500); ``fairshare_update_s``: how often dynamic priorities are
    recomputed from decayed usage (within a pass they follow each dispatch);
    ``backfill_interval_s``: the backfill scan runs at most this often (Slurm's
    ``bf_interval``, 30 s by default there; 0 = at every pass); between scans a pass starts
    jobs in order only, and :attr:`Scheduler.wake_s` tells the caller when to call again."""

    queues: tuple[QueueSpec, ...] = DEFAULT_QUEUES
    order: str = "fifo"
    backfill: bool = True
    preemption: bool = False
    fairshare_by: str = "user"
    shares: Mapping[str, float] = field(default_factory=dict)
    default_share: float = 1.0
    half_life_s: float = 5 * 3600.0
    backfill_depth: int = 500
    fairshare_update_s: float = 60.0
    backfill_interval_s: float = 0.0

    def __post_init__(self):
        if self.order not in ("fifo", "fairshare"):
            raise ValueError(f"order must be fifo or fairshare, got {self.order!r}")
        if self.fairshare_by not in ("user", "project"):
            raise ValueError(f"fairshare_by must be user or project, got {self.fairshare_by!r}")


class JobRequest(NamedTuple):
    """What the scheduler knows of a job: its size, queue, owner, submit time and run
    limit (the estimate backfill plans with; the job is killed at it).
    ``checkpoint_interval_s``: work since the last checkpoint is lost on preemption."""

    id: int
    gpus: int
    queue: str
    submit_s: float
    runlimit_s: float
    user: str = ""
    project: str = ""
    priority: int = 0
    exclusive: bool = False
    checkpoint_interval_s: float = math.inf


class Start(NamedTuple):
    """Start ``job`` now on ``nodes`` holding ``gpus_per_node[i]`` GPUs of ``nodes[i]``."""

    job: int
    nodes: tuple[int, ...]
    gpus_per_node: tuple[int, ...]


class Preempt(NamedTuple):
    """``job`` is preempted and requeued; ``lost_s`` of its run since its last checkpoint
    is lost (``lost_gpu_s`` = lost_s x its GPUs); ``done_s`` of work is kept."""

    job: int
    lost_s: float
    lost_gpu_s: float
    done_s: float
