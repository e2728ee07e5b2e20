"""From the scenario's workload models (``twin/scenario/workload.py``) to the workload
package's parameters: the stream's class mixture, the scheduler policy, the parsed trace."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from twin.scenario.workload import SchedulerPolicy, Stream
from twin.scenario.workload import Trace as TraceSpec
from twin.workload.scheduler import QueueSpec, SchedulerConfig
from twin.workload.stream import StreamParams, fit_stream_params, restrict_to_cluster
from twin.workload.traces import Trace, read_trace


def stream_params_for(spec: Stream, max_gpus: int | None = None) -> StreamParams:
    """The fitted mixture of ``spec.fit`` with the scenario's class overrides applied (a
    changed share rescales the other classes so the shares still sum to one), restricted
    to what a cluster of ``max_gpus`` can host."""
    p = fit_stream_params(spec.fit)
    over: dict[str, Any] = {c.name: c for c in spec.classes}
    classes = []
    for c in p.classes:
        o = over.get(c.name)
        if o is not None:
            kw = {k: v for k, v in o.model_dump().items()
                  if v is not None and k not in ("name", "model_job", "gpus", "gpu_weights")}
            if o.gpus is not None:
                kw["gpus"], kw["gpu_weights"] = tuple(o.gpus), tuple(o.gpu_weights)
            c = replace(c, **kw)
        classes.append(c)
    fixed = sum(c.share for c in classes if c.name in over and over[c.name].share is not None)
    free = sum(c.share for c in classes if not (c.name in over and over[c.name].share is not None))
    if free > 0 and not math.isclose(fixed + free, 1.0):
        scale = (1.0 - fixed) / free
        classes = [c if (c.name in over and over[c.name].share is not None) else replace(c, share=c.share * scale)
                   for c in classes]
    total = sum(c.share for c in classes)          # shares given for every class: normalised
    p = replace(p, classes=tuple(replace(c, share=c.share / total) for c in classes))
    return restrict_to_cluster(p, max_gpus) if max_gpus else p


def scheduler_config_for(policy: SchedulerPolicy) -> SchedulerConfig:
    """The standalone scheduler's configuration of a scenario's policy."""
    return SchedulerConfig(
        queues=tuple(QueueSpec(q.name, q.priority, q.preemptive, q.preemptable) for q in policy.queues),
        order=policy.order, backfill=policy.backfill, preemption=policy.preemption,
        fairshare_by=policy.fairshare_by, shares=dict(policy.shares),
        half_life_s=policy.half_life_h * 3600.0, backfill_depth=policy.backfill_depth)


def load_trace(spec: TraceSpec, base_dir: str | Path = ".", cluster_gpus: int | None = None) -> Trace:
    """Parse the scenario's trace (path relative to ``base_dir``); raises
    :class:`twin.workload.traces.TraceError` (exit 2) with file, line and column."""
    path = Path(spec.path)
    if not path.is_absolute():
        path = Path(base_dir) / path
    return read_trace(path, spec.format, cluster_gpus=cluster_gpus, cpu_jobs=spec.cpu_jobs,
                      tz=spec.time_zone, year=spec.year)


def describe_workload(s, cluster_gpus: int) -> str:
    """One line for a report: the stream's offered load, policy and classes (share of the
    jobs, GPUs asked for, median run time), or the trace replayed; "" for fixed jobs only."""
    w = s.workload
    pol = w.scheduler
    policy = (("FIFO" if pol.order == "fifo" else f"fair share by {pol.fairshare_by}")
              + (", EASY backfill" if pol.backfill else "") + (", preemption" if pol.preemption else "")
              + ", whole nodes")
    if w.trace is not None:
        starts = "at the recorded starts" if w.trace.starts == "recorded" else "rescheduled by the twin"
        return f"replay of {w.trace.path} ({w.trace.format}), {starts} ({policy})"
    if w.stream is None:
        return ""
    a = w.stream.arrivals
    whose = "the delivered GPUs' hours" if a.follow == "delivered" else "the cluster's GPU-hours"
    rate = f"offering {a.load:g}x {whose}" if a.load is not None else f"of {a.jobs_per_hour:g} jobs/h"
    p = stream_params_for(w.stream, max_gpus=cluster_gpus)

    def span(g: tuple[int, ...]) -> str:
        return f"{min(g):,}" if min(g) == max(g) else f"{min(g):,}-{max(g):,}"

    def dur(sec: float) -> str:
        return f"{sec / 86400:.3g} d" if sec >= 86400 else f"{sec / 3600:.3g} h" if sec >= 3600 else f"{sec / 60:.3g} min"
    classes = "; ".join(f"{c.name} {c.share:.0%} ({span(c.gpus)} GPUs, median {dur(c.duration_median_s)})"
                        for c in p.classes)
    return f"job stream {rate} ({policy}): {classes}"
