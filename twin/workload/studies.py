"""Scheduling-policy comparison on the standalone replay: the same drawn jobs under strict
FIFO, FIFO with EASY backfill and fair share with backfill, on a cluster of whole nodes
(the engine's view), at one or more offered loads. Seconds per case, so the comparison
covers months and several loads where the engine sweep (scenarios/studies/
scheduling_policy.yaml) costs minutes per run."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from twin.scenario.schema import Scenario
from twin.workload.config import scheduler_config_for, stream_params_for
from twin.workload.kpis import busy_gpu_s_step, mean_bounded_slowdown, queue_wait_quantile_h
from twin.workload.replay import replay
from twin.workload.scheduler import ClusterShape
from twin.workload.stream import generate_jobs, jobs_per_hour_for_load

DAY = 86400.0
POLICIES: dict[str, dict[str, Any]] = {
    "fifo": {"backfill": False},
    "fifo_backfill": {"backfill": True},
    "fairshare_backfill": {"backfill": True, "order": "fairshare"},
}


def policy_comparison(s: Scenario, loads=(1.1,), horizon_days: float = 180.0, window_days: float = 90.0,
                      seed: int = 0) -> pd.DataFrame:
    """Utilisation over the last ``window_days``, queue waits (p50, p95), bounded slowdown
    and jobs still queued at the end, per offered load and policy. The cluster is the
    scenario's full node count (every node healthy; no ramp), one scheduling unit per node;
    the stream is the scenario's ``workload.stream`` at each load (arrivals constant)."""
    if s.workload.stream is None:
        raise ValueError("policy_comparison needs a scenario with workload.stream")
    from twin.plant import build_plant
    p = build_plant(s)
    nodes, gpn = p.n_nodes, p.gpus_per_node
    params = stream_params_for(s.workload.stream, nodes * gpn)
    cluster = ClusterShape(nodes=nodes, gpus_per_node=1, su_nodes=s.fabric.su_nodes)
    horizon = horizon_days * DAY
    rows = []
    for load in loads:
        rate = jobs_per_hour_for_load(params, nodes * gpn, load)
        jobs = generate_jobs(params, np.random.default_rng(seed), horizon_s=horizon, jobs_per_hour=rate,
                             gpus_per_node=gpn, runlimit_factor=s.workload.stream.runlimit_factor)
        jobs = jobs.assign(gpus=jobs["nodes"])          # whole nodes, as the engine allocates
        for name, over in POLICIES.items():
            policy = s.workload.scheduler.model_copy(update=over)
            r = replay(jobs, cluster, scheduler_config_for(policy), until_s=horizon)
            rec = r.records
            busy = busy_gpu_s_step(r.busy_t_s, r.busy_gpus, horizon - window_days * DAY, horizon)
            rows.append({"load": load, "policy": name, "jobs": len(jobs),
                         f"utilization_last_{window_days:g}_days": busy / (nodes * window_days * DAY),
                         "queue_wait_p50_h": queue_wait_quantile_h(rec.submit_s, rec.start_s, horizon, 0.5),
                         "queue_wait_p95_h": queue_wait_quantile_h(rec.submit_s, rec.start_s, horizon, 0.95),
                         "mean_bounded_slowdown": mean_bounded_slowdown(rec.submit_s, rec.start_s, rec.end_s),
                         "queued_at_end": int((rec.state == "pending").sum())})
    return pd.DataFrame(rows).set_index(["load", "policy"])
