"""Standalone replay: drive the :class:`~twin.workload.scheduler.Scheduler` through a job
table (a generated stream or a parsed trace) without the engine, in event order.

Two modes: ``reschedule`` (jobs are queued at their submit time and the scheduler decides
when and where they run) and ``recorded`` (each job starts at the trace's recorded start,
placed by the scheduler's rules, and runs its recorded duration). Either way the result is
per-job records and the busy-GPU step function, from which :mod:`twin.workload.kpis`
computes utilisation, queue waits and slowdown.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from twin.workload.scheduler import (
    ClusterShape,
    JobRequest,
    Preempt,
    Scheduler,
    SchedulerConfig,
    Start,
)

REQUIRED = ("job_id", "gpus", "submit_s", "duration_s")


@dataclass
class ReplayResult:
    """Per-job ``records`` (:func:`twin.workload.kpis.job_records` columns), the busy-GPU
    step function (``busy_gpus[i]`` GPUs busy from ``busy_t_s[i]`` to ``busy_t_s[i+1]``),
    the window ``[t0_s, t1_s]``, the cluster and the scheduler (for its reservations)."""

    records: pd.DataFrame
    busy_t_s: np.ndarray
    busy_gpus: np.ndarray
    t0_s: float
    t1_s: float
    cluster: ClusterShape
    scheduler: Scheduler | None = None
    notes: list[str] = field(default_factory=list)


def _column(jobs: pd.DataFrame, name: str, default) -> np.ndarray:
    if name in jobs:
        return jobs[name].to_numpy()
    return np.full(len(jobs), default, dtype=object if isinstance(default, str) else None)


def _requests(jobs: pd.DataFrame, config: SchedulerConfig) -> list[JobRequest]:
    missing = [c for c in REQUIRED if c not in jobs]
    if missing:
        raise ValueError(f"job table lacks columns {missing}")
    queues = {q.name for q in config.queues}
    default_queue = "normal" if "normal" in queues else config.queues[0].name
    queue = _column(jobs, "queue", default_queue)
    queue = np.where(pd.Series(queue).isin(queues).to_numpy(), queue, default_queue)
    dur = jobs["duration_s"].to_numpy(float)
    runlimit = _column(jobs, "runlimit_s", np.nan).astype(float)
    runlimit = np.where(np.isfinite(runlimit), runlimit, dur)
    ckpt = _column(jobs, "checkpoint_interval_s", math.inf).astype(float)
    user = _column(jobs, "user", "")
    project = _column(jobs, "project", "")
    excl = _column(jobs, "exclusive", False).astype(bool)
    gpus = jobs["gpus"].to_numpy(np.int64)
    sub = jobs["submit_s"].to_numpy(float)
    return [JobRequest(id=i, gpus=int(gpus[i]), queue=str(queue[i]), submit_s=float(sub[i]),
                       runlimit_s=float(runlimit[i]), user=str(user[i]), project=str(project[i]),
                       exclusive=bool(excl[i]), checkpoint_interval_s=float(ckpt[i]))
            for i in range(len(jobs))]


def replay(jobs: pd.DataFrame, cluster: ClusterShape, config: SchedulerConfig | None = None, *,
           starts: str = "reschedule", until_s: float | None = None) -> ReplayResult:
    """Replay ``jobs`` (columns ``job_id, gpus, submit_s, duration_s`` and optionally
    ``queue, user, project, runlimit_s, checkpoint_interval_s, exclusive, state, job_class,
    tokens_per_gpu_s``; ``start_s`` for ``starts="recorded"``) on ``cluster``.

    ``duration_s`` is the run time a job needs (it ends at its ``runlimit_s`` if that is
    shorter); a preempted job is requeued and later runs what it lost again. The window is
    from the first submit to ``until_s`` (default: the last end); jobs still queued or
    running then are recorded as ``pending``/``running``.
    """
    config = config or SchedulerConfig()
    if starts not in ("reschedule", "recorded"):
        raise ValueError(f"starts must be reschedule or recorded, got {starts!r}")
    n = len(jobs)
    reqs = _requests(jobs, config)
    sched = Scheduler(cluster, config)
    dur = jobs["duration_s"].to_numpy(float)
    need = np.minimum(dur, np.array([r.runlimit_s for r in reqs])) if n else dur
    gpus = jobs["gpus"].to_numpy(np.int64)
    submit = jobs["submit_s"].to_numpy(float)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    remaining = need.copy()
    version = np.zeros(n, np.int64)
    preemptions = np.zeros(n, np.int64)
    lost_gpu_s = np.zeros(n)
    t_busy: list[float] = []
    v_busy: list[int] = []
    busy = 0
    notes: list[str] = []
    ends: list[tuple[float, int, int]] = []      # (time, job, version)
    t_end_limit = math.inf if until_s is None else until_s

    if starts == "recorded":
        rec = jobs["start_s"].to_numpy(float)
        order = np.lexsort((np.arange(n), rec))
        k = 0
        while k < n or ends:
            t_next = min(rec[order[k]] if k < n else math.inf, ends[0][0] if ends else math.inf)
            if t_next > t_end_limit:
                break
            while ends and ends[0][0] == t_next:
                _, i, _ = heapq.heappop(ends)
                sched.finish(i, t_next)
                busy -= gpus[i]
                end[i] = t_next
            while k < n and rec[order[k]] == t_next:
                i = int(order[k])
                k += 1
                if sched.start_now(reqs[i], t_next) is None:
                    raise ValueError(f"job {jobs['job_id'].iloc[i]}: its recorded start at "
                                     f"{t_next:g} s needs {gpus[i]} GPUs, but only "
                                     f"{sched.free_gpus} of the cluster's {cluster.gpus} are free")
                start[i] = t_next
                busy += gpus[i]
                heapq.heappush(ends, (t_next + need[i], i, 0))
            t_busy.append(t_next)
            v_busy.append(busy)
    else:
        order = np.lexsort((np.arange(n), submit))
        k = 0
        while k < n or ends:
            t_next = min(submit[order[k]] if k < n else math.inf, ends[0][0] if ends else math.inf)
            if t_next > t_end_limit:
                break
            while ends and ends[0][0] == t_next:
                _, i, ver = heapq.heappop(ends)
                if ver != version[i]:
                    continue
                sched.finish(i, t_next)
                busy -= gpus[i]
                end[i] = t_next
            while k < n and submit[order[k]] == t_next:
                i = int(order[k])
                k += 1
                sched.submit(reqs[i], t_next)
            for d in sched.decide(t_next):
                i = d.job
                if isinstance(d, Start):
                    if math.isnan(start[i]):
                        start[i] = t_next
                    busy += gpus[i]
                    heapq.heappush(ends, (t_next + remaining[i], i, int(version[i])))
                elif isinstance(d, Preempt):
                    version[i] += 1
                    busy -= gpus[i]
                    preemptions[i] += 1
                    lost_gpu_s[i] += d.lost_s * gpus[i]
                    remaining[i] -= d.done_s
            if not t_busy or t_busy[-1] != t_next:
                t_busy.append(t_next)
                v_busy.append(busy)
            else:
                v_busy[-1] = busy
    t0 = float(submit.min()) if n else 0.0
    t1 = float(until_s) if until_s is not None else (t_busy[-1] if t_busy else t0)
    state = _column(jobs, "state", "completed").astype(object)
    state = np.where(np.isnan(end), np.where(np.isnan(start), "pending", "running"), state)
    state = np.where(np.isfinite(end) & (need < dur), "failed", state)   # killed at its run limit
    records = pd.DataFrame({
        "job_id": jobs["job_id"].to_numpy(),
        "job_class": _column(jobs, "job_class", ""),
        "user": _column(jobs, "user", ""),
        "project": _column(jobs, "project", ""),
        "queue": [r.queue for r in reqs],
        "gpus": gpus,
        "nodes": -(-gpus // cluster.gpus_per_node),
        "submit_s": submit, "start_s": start, "end_s": end,
        "state": state,
        "run_s": need,
        "preemptions": preemptions,
        "lost_gpu_s": lost_gpu_s,
        "tokens_per_gpu_s": _column(jobs, "tokens_per_gpu_s", 0.0).astype(float),
    })
    return ReplayResult(records, np.asarray(t_busy, float), np.asarray(v_busy, np.int64), t0, t1,
                        cluster, sched, notes)
