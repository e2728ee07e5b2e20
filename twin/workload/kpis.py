"""Workload KPIs as pure functions of per-job times and the busy-GPU step function.

``utilization`` = busy GPU-hours / healthy GPU-hours; queue waits (p50, p95) in hours;
jobs completed and failed; mean bounded slowdown; tokens and GPU-hours by job class; and
the per-job records table written as ``jobs.csv``.

References
----------
D. G. Feitelson, L. Rudolph, U. Schwiegelshohn, K. C. Sevcik and P. Wong, "Theory and
practice in parallel job scheduling", JSSPP 1997, doi:10.1007/3-540-63574-2_14 (bounded
slowdown).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

H = 3600.0
SLOWDOWN_BOUND_S = 10.0     # Feitelson et al. 1997: runs shorter than this count as this long


def busy_gpu_s_step(t_s, busy_gpus, t0_s: float, t1_s: float) -> float:
    """Integral of a step function of busy GPUs over [t0, t1] [GPU s].

    ``busy_gpus[i]`` holds from ``t_s[i]`` to ``t_s[i+1]`` (the last to ``t1``); before
    ``t_s[0]`` nothing is busy. ``sum_i b_i (min(t_{i+1}, t1) - max(t_i, t0))^+``.
    """
    t = np.asarray(t_s, float)
    b = np.asarray(busy_gpus, float)
    if t.size == 0:
        return 0.0
    hi = np.minimum(np.append(t[1:], t1_s), t1_s)
    lo = np.maximum(t, t0_s)
    return float(np.sum(b * np.clip(hi - lo, 0.0, None)))


def busy_gpu_s_jobs(start_s, end_s, gpus, t0_s: float, t1_s: float) -> float:
    """GPU-seconds of jobs inside [t0, t1]: ``sum_j g_j (min(e_j, t1) - max(s_j, t0))^+``
    [GPU s]; a job not started (NaN start) counts nothing, one still running (NaN end)
    counts up to ``t1``."""
    s = np.asarray(start_s, float)
    e = np.where(np.isnan(end_s), t1_s, np.asarray(end_s, float))
    ok = ~np.isnan(s)
    span = np.clip(np.minimum(e[ok], t1_s) - np.maximum(s[ok], t0_s), 0.0, None)
    return float(np.sum(np.asarray(gpus, float)[ok] * span))


def busy_step_of_jobs(start_s, end_s, gpus) -> tuple[np.ndarray, np.ndarray]:
    """The busy-GPU step function of jobs (vectorised: +g at each start, -g at each end,
    sorted, cumulated). Returns (times [s], busy GPUs from each time on)."""
    s = np.asarray(start_s, float)
    e = np.asarray(end_s, float)
    g = np.asarray(gpus, np.int64)
    ok = ~np.isnan(s)
    t = np.concatenate([s[ok], e[ok & ~np.isnan(e)]])
    d = np.concatenate([g[ok], -g[ok & ~np.isnan(e)]])
    order = np.argsort(t, kind="stable")
    t, d = t[order], np.cumsum(d[order])
    last = np.append(t[1:] != t[:-1], True)       # one value per distinct time
    return t[last], d[last]


def utilization(busy_gpu_s: float, healthy_gpu_s: float) -> float:
    """Busy over healthy GPU-hours (dimensionless)."""
    return busy_gpu_s / healthy_gpu_s if healthy_gpu_s > 0 else float("nan")


def queue_wait_h(submit_s, start_s, t1_s: float) -> np.ndarray:
    """Queue wait of every job [h]: start - submit; a job still pending at ``t1`` counts
    ``t1 - submit`` (a lower bound, so an overloaded queue is not hidden)."""
    s = np.asarray(start_s, float)
    sub = np.asarray(submit_s, float)
    return (np.where(np.isnan(s), t1_s, s) - sub) / H


def queue_wait_quantile_h(submit_s, start_s, t1_s: float, q: float) -> float:
    """Quantile ``q`` (0-1) of the queue waits [h] (:func:`queue_wait_h`)."""
    w = queue_wait_h(submit_s, start_s, t1_s)
    return float(np.quantile(w, q)) if w.size else float("nan")


def mean_bounded_slowdown(submit_s, start_s, end_s, bound_s: float = SLOWDOWN_BOUND_S) -> float:
    """Mean bounded slowdown of finished jobs: ``max(1, (wait + run) / max(run, tau))``
    with tau = 10 s (Feitelson et al. 1997)."""
    s = np.asarray(start_s, float)
    e = np.asarray(end_s, float)
    ok = ~np.isnan(e)
    run = e[ok] - s[ok]
    wait = s[ok] - np.asarray(submit_s, float)[ok]
    if not ok.any():
        return float("nan")
    return float(np.mean(np.maximum(1.0, (wait + run) / np.maximum(run, bound_s))))


def by_class(job_class, gpus, start_s, end_s, tokens_per_gpu_s, lost_gpu_s, t0_s: float,
             t1_s: float) -> pd.DataFrame:
    """GPU-hours and training tokens per job class inside [t0, t1].

    GPU-hours: the jobs' GPUs x their time running in the window (work lost to preemption
    included: it held the GPUs). Tokens: tokens/GPU-s x (GPU-s in the window - GPU-s lost
    to preemption).
    """
    s = np.asarray(start_s, float)
    e = np.where(np.isnan(end_s), t1_s, np.asarray(end_s, float))
    ok = ~np.isnan(s)
    span = np.zeros(len(s))
    span[ok] = np.clip(np.minimum(e[ok], t1_s) - np.maximum(s[ok], t0_s), 0.0, None)
    gpu_s = np.asarray(gpus, float) * span
    useful = np.clip(gpu_s - np.asarray(lost_gpu_s, float), 0.0, None)
    df = pd.DataFrame({"job_class": np.asarray(job_class).astype(str), "gpu_h": gpu_s / H,
                       "tokens": useful * np.asarray(tokens_per_gpu_s, float), "jobs": 1})
    return df.groupby("job_class", sort=True)[["jobs", "gpu_h", "tokens"]].sum()


RECORD_COLUMNS = ("job_id", "job_class", "user", "project", "queue", "state", "gpus", "nodes",
                  "submit_s", "start_s", "end_s", "wait_h", "run_h", "gpu_h", "tokens", "preemptions")


def job_records(records: pd.DataFrame, t1_s: float) -> pd.DataFrame:
    """The per-job table written as ``jobs.csv`` (columns :data:`RECORD_COLUMNS`): submit,
    start and end [s], state, GPUs, nodes, wait and run [h], GPU-hours held, tokens trained."""
    s, e = records["start_s"].to_numpy(float), records["end_s"].to_numpy(float)
    run = np.where(np.isnan(s), 0.0, np.where(np.isnan(e), t1_s, e) - np.nan_to_num(s))
    gpu_s = records["gpus"].to_numpy(float) * run
    lost = records["lost_gpu_s"].to_numpy(float) if "lost_gpu_s" in records else 0.0
    tpg = records["tokens_per_gpu_s"].to_numpy(float) if "tokens_per_gpu_s" in records else 0.0
    out = records.assign(
        wait_h=queue_wait_h(records["submit_s"], s, t1_s),
        run_h=run / H, gpu_h=gpu_s / H,
        tokens=np.clip(gpu_s - lost, 0.0, None) * tpg,
        preemptions=records["preemptions"] if "preemptions" in records else 0)
    for c in ("job_class", "user", "project", "queue"):
        if c not in out:
            out[c] = ""
    return out[list(RECORD_COLUMNS)]


def workload_kpis(records: pd.DataFrame, busy_t_s, busy_gpus, healthy_gpu_s: float,
                  t0_s: float, t1_s: float) -> dict[str, float]:
    """The workload KPIs of a run or replay over [t0, t1]."""
    st = records["state"].astype(str).to_numpy()
    busy = busy_gpu_s_step(busy_t_s, busy_gpus, t0_s, t1_s)
    cls = by_class(records["job_class"], records["gpus"], records["start_s"], records["end_s"],
                   records.get("tokens_per_gpu_s", pd.Series(0.0, index=records.index)),
                   records.get("lost_gpu_s", pd.Series(0.0, index=records.index)), t0_s, t1_s)
    out = {
        "utilization": utilization(busy, healthy_gpu_s),
        "busy_gpu_h": busy / H,
        "queue_wait_p50_h": queue_wait_quantile_h(records["submit_s"], records["start_s"], t1_s, 0.50),
        "queue_wait_p95_h": queue_wait_quantile_h(records["submit_s"], records["start_s"], t1_s, 0.95),
        "jobs_completed": int(np.sum(st == "completed")),
        "jobs_failed": int(np.sum(st == "failed")),
        "jobs_cancelled": int(np.sum(st == "cancelled")),
        "jobs_pending_at_end": int(np.sum(st == "pending")),
        "mean_bounded_slowdown": mean_bounded_slowdown(records["submit_s"], records["start_s"], records["end_s"]),
    }
    for name, row in cls.iterrows():
        if name:
            out[f"gpu_h_{name}"] = float(row["gpu_h"])
            out[f"tokens_{name}"] = float(row["tokens"])
    return out
