"""Replaying a trace with its recorded starts reproduces the trace's own utilisation exactly;
the KPI functions agree with hand-checked values and with each other."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from twin.workload.kpis import (
    busy_gpu_s_jobs,
    busy_gpu_s_step,
    busy_step_of_jobs,
    by_class,
    job_records,
    mean_bounded_slowdown,
    queue_wait_quantile_h,
    utilization,
    workload_kpis,
)
from twin.workload.replay import replay
from twin.workload.scheduler import ClusterShape, SchedulerConfig
from twin.workload.traces import read_acme_csv

from .trace_fixtures import sample_jobs, write_acme


def test_recorded_replay_reproduces_the_traces_own_utilisation_exactly(tmp_path):
    """Acme fixture -> parser -> replay at the recorded starts on a cluster that held it.
    The twin's busy GPU-hours (integral of the replay's busy-GPU step function over the
    window) equal the trace's own (sum of gpu_num x duration straight from the CSV), to
    rounding: the utilisation is the same number."""
    jobs = sample_jobs(2.0, seed=11)
    path = write_acme(jobs, tmp_path / "trace.csv")
    trace = read_acme_csv(path)
    t, b = busy_step_of_jobs(trace.jobs.start_s, trace.jobs.end_s, trace.jobs.gpus)
    cluster = ClusterShape(nodes=int(math.ceil(b.max() / 8)) + 8, gpus_per_node=8, su_nodes=32)
    r = replay(trace.jobs, cluster, starts="recorded")
    # the trace's own figure, computed from the raw CSV columns (no parser involved)
    raw = pd.read_csv(path)
    raw = raw[raw.gpu_num > 0]
    t0 = (pd.to_datetime(raw.submit_time).min() - trace.epoch).total_seconds()
    t1 = (pd.to_datetime(raw.end_time).max() - trace.epoch).total_seconds()
    own = float((raw.gpu_num * raw.duration).sum())
    twin = busy_gpu_s_step(r.busy_t_s, r.busy_gpus, t0, t1)
    assert twin == pytest.approx(own, rel=1e-12)
    healthy = cluster.gpus * (t1 - t0)
    assert utilization(twin, healthy) == pytest.approx(own / healthy, rel=1e-12)
    np.testing.assert_array_equal(r.records.start_s, trace.jobs.start_s)
    np.testing.assert_array_equal(r.records.end_s, trace.jobs.end_s)
    # a cluster too small for the trace's peak is a clear error, not a silent reshuffle
    with pytest.raises(ValueError, match="recorded start"):
        replay(trace.jobs, ClusterShape(nodes=int(b.max() // 8) - 1), starts="recorded")


def test_step_and_job_sums_agree_on_any_window():
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 100, 500)
    e = s + rng.exponential(20, 500)
    g = rng.integers(1, 9, 500)
    t, b = busy_step_of_jobs(s, e, g)
    assert b[-1] == 0 and (b >= 0).all()
    for lo, hi in ((0, 200), (10, 50), (70.5, 71.25)):
        assert busy_gpu_s_step(t, b, lo, hi) == pytest.approx(busy_gpu_s_jobs(s, e, g, lo, hi), rel=1e-12)


def test_kpis_by_hand():
    rec = pd.DataFrame({
        "job_id": [1, 2, 3, 4], "job_class": ["pretrain", "debug", "debug", "pretrain"],
        "gpus": [16, 1, 2, 8], "submit_s": [0.0, 0.0, 3600.0, 0.0],
        "start_s": [0.0, 7200.0, 3600.0, np.nan], "end_s": [36000.0, 7205.0, np.nan, np.nan],
        "state": ["completed", "failed", "running", "pending"],
        "tokens_per_gpu_s": [1000.0, 0.0, 0.0, 1000.0], "lost_gpu_s": [3600.0, 0, 0, 0],
        "preemptions": [1, 0, 0, 0], "nodes": [2, 1, 1, 1],
    })
    t1 = 36000.0
    # waits: 0, 2 h, 0, and the pending job 10 h so far
    assert queue_wait_quantile_h(rec.submit_s, rec.start_s, t1, 0.5) == pytest.approx(1.0)
    # bounded slowdown: job 1: 1; job 2: (7200 + 5) / 10
    assert mean_bounded_slowdown(rec.submit_s, rec.start_s, rec.end_s) == pytest.approx((1 + 720.5) / 2)
    cls = by_class(rec.job_class, rec.gpus, rec.start_s, rec.end_s, rec.tokens_per_gpu_s,
                   rec.lost_gpu_s, 0.0, t1)
    assert cls.loc["pretrain", "gpu_h"] == pytest.approx(160.0)
    assert cls.loc["pretrain", "tokens"] == pytest.approx((16 * 36000 - 3600) * 1000.0)
    assert cls.loc["debug", "gpu_h"] == pytest.approx((5 + 2 * 32400) / 3600)
    t, b = busy_step_of_jobs(rec.start_s, rec.end_s, rec.gpus)
    k = workload_kpis(rec, t, b, 32 * t1, 0.0, t1)
    assert k["utilization"] == pytest.approx((16 * 36000 + 5 + 2 * 32400) / (32 * t1))
    assert (k["jobs_completed"], k["jobs_failed"], k["jobs_pending_at_end"]) == (1, 1, 1)
    assert k["tokens_pretrain"] == cls.loc["pretrain", "tokens"]
    table = job_records(rec, t1)
    assert table.loc[2, "run_h"] == pytest.approx(9.0) and table.loc[3, "wait_h"] == pytest.approx(10.0)
    assert table.loc[0, "tokens"] == pytest.approx(cls.loc["pretrain", "tokens"])


def test_stream_replay_kpis_are_consistent():
    """KPIs of a rescheduled stream: utilisation <= 1, busy GPU-hours = the sum by class."""
    from twin.workload.stream import (
        default_stream_params,
        generate_jobs,
        jobs_per_hour_for_load,
        restrict_to_cluster,
    )
    cl = ClusterShape(nodes=64, gpus_per_node=8, su_nodes=32)
    p = restrict_to_cluster(default_stream_params(), cl.gpus)
    jobs = generate_jobs(p, np.random.default_rng(9), horizon_s=3 * 86400,
                         jobs_per_hour=jobs_per_hour_for_load(p, cl.gpus, 0.8))
    r = replay(jobs, cl, SchedulerConfig(), until_s=3 * 86400)
    k = workload_kpis(r.records, r.busy_t_s, r.busy_gpus, cl.gpus * 3 * 86400, 0.0, 3 * 86400)
    assert 0 < k["utilization"] <= 1
    assert sum(v for key, v in k.items() if key.startswith("gpu_h_")) == pytest.approx(k["busy_gpu_h"], rel=1e-9)
    assert k["tokens_debug"] == 0 and k["tokens_evaluation"] == 0 and k["tokens_ablation"] > 0
