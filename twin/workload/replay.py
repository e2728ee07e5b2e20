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
from typing import Any

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
    cols = zip(range(len(jobs)), jobs["gpus"].to_numpy(np.int64).tolist(),
               queue.astype(str).tolist(), jobs["submit_s"].to_numpy(float).tolist(),
               runlimit.tolist(), user.astype(str).tolist(), project.astype(str).tolist(),
               excl.tolist(), ckpt.tolist(), strict=True)
    return [JobRequest(i, g, q, t, r, u, p, 0, x, c) for i, g, q, t, r, u, p, x, c in cols]


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
    gpus_arr = jobs["gpus"].to_numpy(np.int64)
    submit_arr = jobs["submit_s"].to_numpy(float)
    gpus = gpus_arr.tolist()
    submit = submit_arr.tolist()
    nan = math.nan
    start: Any = [nan] * n       # lists while replaying, arrays after
    end: Any = [nan] * n
    remaining = need.tolist()
    version = [0] * n
    preemptions = [0] * n
    lost_gpu_s = [0.0] * n
    t_busy: list[float] = []
    v_busy: list[int] = []
    busy = 0
    notes: list[str] = []
    ends: list[tuple[float, int, int]] = []      # (time, job, version)
    t_end_limit = math.inf if until_s is None else until_s

    if starts == "recorded":
        rec_arr = jobs["start_s"].to_numpy(float)
        order = np.lexsort((np.arange(n), rec_arr)).tolist()
        rec = rec_arr.tolist()
        need_l = need.tolist()
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
                i = order[k]
                k += 1
                if sched.start_now(reqs[i], t_next) is None:
                    raise ValueError(f"job {jobs['job_id'].iloc[i]}: its recorded start at "
                                     f"{t_next:g} s needs {gpus[i]} GPUs, but only "
                                     f"{sched.free_gpus} of the cluster's {cluster.gpus} are free")
                start[i] = t_next
                busy += gpus[i]
                heapq.heappush(ends, (t_next + need_l[i], i, 0))
            t_busy.append(t_next)
            v_busy.append(busy)
    else:
        order = np.lexsort((np.arange(n), submit_arr)).tolist()
        k = 0
        wake = math.inf                          # a deferred backfill scan (backfill_interval_s)
        while k < n or ends or wake < math.inf:
            t_next = min(submit[order[k]] if k < n else math.inf, ends[0][0] if ends else math.inf, wake)
            if t_next > t_end_limit:
                break
            if t_next >= wake:
                wake = math.inf
            while ends and ends[0][0] == t_next:
                _, i, ver = heapq.heappop(ends)
                if ver != version[i]:
                    continue
                sched.finish(i, t_next)
                busy -= gpus[i]
                end[i] = t_next
            while k < n and submit[order[k]] == t_next:
                i = order[k]
                k += 1
                sched.submit(reqs[i], t_next)
            sched.wake_s = math.inf
            decisions = sched.decide(t_next)
            if sched.wake_s < wake and sched.pending:
                wake = sched.wake_s
            for d in decisions:
                i = d.job
                if isinstance(d, Start):
                    if math.isnan(start[i]):
                        start[i] = t_next
                    busy += gpus[i]
                    heapq.heappush(ends, (t_next + remaining[i], i, version[i]))
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
    start = np.array(start, float)
    end = np.array(end, float)
    t0 = float(submit_arr.min()) if n else 0.0
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
        "gpus": gpus_arr,
        "nodes": -(-gpus_arr // cluster.gpus_per_node),
        "submit_s": submit_arr, "start_s": start, "end_s": end,
        "state": state,
        "run_s": need,
        "preemptions": np.array(preemptions, np.int64),
        "lost_gpu_s": np.array(lost_gpu_s, float),
        "tokens_per_gpu_s": _column(jobs, "tokens_per_gpu_s", 0.0).astype(float),
    })
    return ReplayResult(records, np.asarray(t_busy, float), np.asarray(v_busy, np.int64), t0, t1,
                        cluster, sched, notes)
