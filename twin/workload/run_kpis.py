"""The workload KPIs of an engine run, from its :class:`twin.outputs.RunRecord` (the
series and one :class:`twin.outputs.JobRecord` per job), through the pure functions of
:mod:`twin.workload.kpis`. Declared in the output table (:data:`twin.outputs.KPIS`) from
:func:`workload_kpi_specs` (this module does not import twin.outputs: no import cycle)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from twin.workload import kpis as wk

if TYPE_CHECKING:
    from twin.outputs import RunRecord

H = 3600.0
DAY = 86400.0
CLASSES = ("pretrain", "finetune", "ablation", "evaluation", "debug")


def _ratio_series(r: RunRecord, since_s: float = 0.0) -> float:
    n = len(r.series["gpus_busy"])
    t = np.arange(n) * r.dt_s
    m = t >= since_s
    healthy = float(r.series["gpus_healthy"][m].sum())
    return float(r.series["gpus_busy"][m].sum()) / healthy if healthy > 0 else math.nan


def utilization(r: RunRecord) -> float:
    """Busy / healthy GPU-hours over the run (sampled series)."""
    return _ratio_series(r)


def utilization_last_90_days(r: RunRecord) -> float:
    """Busy / healthy GPU-hours over the last 90 days of the run."""
    return _ratio_series(r, max(r.horizon_s - 90 * DAY, 0.0))


def job_frame(r: RunRecord) -> pd.DataFrame:
    """One row per job: class, user, queue, state, GPUs, submit/start/end [s], tokens,
    GPU-hours held, interruptions (the run's jobs.csv)."""
    return pd.DataFrame({
        "job": [j.name for j in r.jobs], "job_class": [j.job_class for j in r.jobs],
        "user": [j.user for j in r.jobs], "queue": [j.queue for j in r.jobs],
        "state": [j.state for j in r.jobs], "gpus": [j.gpus for j in r.jobs],
        "submit_s": [j.submit_s for j in r.jobs], "start_s": [j.first_start_s for j in r.jobs],
        "end_s": [j.end_s for j in r.jobs], "tokens": [j.tokens for j in r.jobs],
        "gpu_h": [j.gpu_s_allocated / H for j in r.jobs],
        "interruptions": [j.interruptions for j in r.jobs],
    })


def _submitted(r: RunRecord) -> pd.DataFrame:
    f = job_frame(r)
    return f[f.submit_s < r.horizon_s]


def _wait_q(q: float):
    def red(r: RunRecord) -> float:
        f = _submitted(r)
        return wk.queue_wait_quantile_h(f.submit_s, f.start_s, r.horizon_s, q) if len(f) else math.nan
    return red


def _count_state(state: str):
    return lambda r: int(sum(1 for j in r.jobs if j.state == state))


def _slowdown(r: RunRecord) -> float:
    f = _submitted(r)
    return wk.mean_bounded_slowdown(f.submit_s, f.start_s, f.end_s)


def _class_sum(cls: str, what: str):
    def red(r: RunRecord) -> float:
        if what == "tokens":
            return float(sum(j.tokens for j in r.jobs if j.job_class == cls))
        return float(sum(j.gpu_s_allocated for j in r.jobs if j.job_class == cls) / H)
    return red


def _queued_mean(r: RunRecord) -> float:
    q = r.series.get("jobs_queued")
    return float(np.mean(q)) if q is not None and len(q) else math.nan


def workload_kpi_specs() -> list[tuple]:
    """(name, units, long name, reducer) of every workload KPI, in table order."""
    specs = [
        ("utilization", "1", "GPU-hours allocated to jobs / GPU-hours powered, burned in and healthy",
         utilization),
        ("utilization_last_90_days", "1", "utilization over the last 90 days of the run",
         utilization_last_90_days),
        ("queue_wait_p50_h", "h", "median queue wait of the jobs submitted (a job still queued at the "
                                  "end counts its wait so far)", _wait_q(0.50)),
        ("queue_wait_p95_h", "h", "95th percentile of the queue waits", _wait_q(0.95)),
        ("jobs_queued_mean", "count", "mean number of jobs waiting in the queue", _queued_mean),
        ("jobs_completed", "count", "jobs that ended completed", _count_state("completed")),
        ("jobs_failed", "count", "jobs that ended failed (their stream state)", _count_state("failed")),
        ("mean_bounded_slowdown", "1", "mean of max(1, (wait + run) / max(run, 10 s)) over finished jobs "
                                       "(Feitelson et al. 1997)", _slowdown),
    ]
    specs += [(f"tokens_{c}", "tokens", f"training tokens of {c} jobs", _class_sum(c, "tokens"))
              for c in CLASSES[:3]]
    specs += [(f"gpu_hours_{c}", "GPU-h", f"GPU-hours held by {c} jobs", _class_sum(c, "gpu_h"))
              for c in CLASSES]
    return specs
