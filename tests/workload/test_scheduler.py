"""The LSF-like scheduler: backfill never delays the reserved head job, fair share converges
to the configured shares, placement is topology- and health-aware, preemption loses exactly
the work since the last checkpoint, and GPU-seconds are conserved."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from twin.workload.kpis import busy_gpu_s_jobs, busy_gpu_s_step
from twin.workload.replay import replay
from twin.workload.scheduler import (
    ClusterShape,
    JobRequest,
    Preempt,
    QueueSpec,
    Scheduler,
    SchedulerConfig,
    Start,
)
from twin.workload.stream import default_stream_params, generate_jobs, restrict_to_cluster

SMALL = ClusterShape(nodes=16, gpus_per_node=8, su_nodes=4)


def _mixed_jobs(seed: int, n_hours: float = 72.0, cluster: ClusterShape = SMALL, load: float = 1.3):
    """A stream scaled to a small cluster and overloaded, so that large jobs block."""
    p = restrict_to_cluster(default_stream_params(), cluster.gpus // 2)
    rng = np.random.default_rng(seed)
    from twin.workload.stream import jobs_per_hour_for_load
    rate = jobs_per_hour_for_load(p, cluster.gpus, load)
    jobs = generate_jobs(p, rng, horizon_s=n_hours * 3600, jobs_per_hour=rate)
    return jobs.assign(queue="normal")


@pytest.mark.parametrize("seed", range(6))
def test_backfill_never_delays_the_head_job(seed):
    """FIFO + EASY backfill, one queue: every job that was ever the blocked head starts no
    later than the shadow time of its first reservation (run limits are upper bounds of run
    times), while backfill does start jobs ahead of earlier submissions."""
    jobs = _mixed_jobs(seed)
    r = replay(jobs, SMALL, SchedulerConfig(order="fifo", backfill=True))
    shadows = r.scheduler.first_shadow
    assert len(shadows) > 10
    start = r.records.start_s.to_numpy()
    for j, shadow in shadows.items():
        assert start[j] <= shadow + 1e-9, (j, start[j], shadow)
    # backfill happened: some job started before a job submitted earlier
    order = np.argsort(jobs.submit_s.to_numpy(), kind="stable")
    s = start[order]
    s = s[~np.isnan(s)]
    assert np.any(s[1:] < np.maximum.accumulate(s)[:-1])


def test_without_backfill_jobs_start_in_submit_order():
    jobs = _mixed_jobs(1)
    r = replay(jobs, SMALL, SchedulerConfig(order="fifo", backfill=False))
    s = r.records.start_s.to_numpy()[np.argsort(jobs.submit_s.to_numpy(), kind="stable")]
    s = s[~np.isnan(s)]
    assert np.all(np.diff(s) >= 0)


def test_backfill_improves_utilisation_and_wait():
    jobs = _mixed_jobs(2)
    a = replay(jobs, SMALL, SchedulerConfig(backfill=False), until_s=72 * 3600)
    b = replay(jobs, SMALL, SchedulerConfig(backfill=True), until_s=72 * 3600)
    ua = busy_gpu_s_step(a.busy_t_s, a.busy_gpus, 0, 72 * 3600)
    ub = busy_gpu_s_step(b.busy_t_s, b.busy_gpus, 0, 72 * 3600)
    assert ub > ua
    wa = np.nan_to_num(a.records.start_s, nan=72 * 3600) - a.records.submit_s
    wb = np.nan_to_num(b.records.start_s, nan=72 * 3600) - b.records.submit_s
    assert np.median(wb) <= np.median(wa) and wb.mean() < wa.mean()


def test_fair_share_converges_to_configured_shares():
    """Three users with shares 1 : 2 : 5 keep a backlog of identical 1-GPU jobs; over the
    second half of 10 days their GPU-hours split 1/8 : 2/8 : 5/8 (within 2 points)."""
    shares = {"a": 1.0, "b": 2.0, "c": 5.0}
    cl = ClusterShape(nodes=4, gpus_per_node=8, su_nodes=4)
    rows = []
    rng = np.random.default_rng(5)
    horizon = 10 * 86400.0
    for u in shares:
        # each user alone could keep the cluster full
        n = int(1.05 * cl.gpus * horizon / 3600)
        rows.append(pd.DataFrame({"user": u, "gpus": 1, "submit_s": np.sort(rng.uniform(0, 3600, n)),
                                  "duration_s": rng.uniform(1800, 5400, n)}))
    jobs = pd.concat(rows, ignore_index=True)
    jobs["job_id"] = np.arange(len(jobs))
    jobs["runlimit_s"] = jobs.duration_s
    r = replay(jobs, cl, SchedulerConfig(order="fairshare", shares=shares, half_life_s=5 * 3600,
                                         backfill=False), until_s=horizon)
    rec = r.records
    t0 = horizon / 2
    used = {u: busy_gpu_s_jobs(g.start_s, g.end_s, g.gpus, t0, horizon) for u, g in rec.groupby("user")}
    total = sum(used.values())
    assert total == pytest.approx(cl.gpus * (horizon - t0), rel=1e-3)    # the cluster stays full
    for u, s in shares.items():
        assert used[u] / total == pytest.approx(s / sum(shares.values()), abs=0.02), used


def test_fifo_ignores_shares_and_fair_share_by_project():
    """Control: FIFO with the same backlog gives the heavy submitter everything; fair share
    by project splits equally between two projects however many users each has."""
    cl = ClusterShape(nodes=2, gpus_per_node=8, su_nodes=2)
    n = 4000
    jobs = pd.DataFrame({"job_id": np.arange(2 * n), "gpus": 1,
                         "user": ["p1_u0"] * n + [f"p2_u{i % 5}" for i in range(n)],
                         "project": ["p1"] * n + ["p2"] * n,
                         "submit_s": np.concatenate([np.zeros(n), np.full(n, 1.0)]),
                         "duration_s": 3600.0})
    horizon = 100 * 3600.0
    fifo = replay(jobs, cl, SchedulerConfig(order="fifo", backfill=False), until_s=horizon).records
    assert busy_gpu_s_jobs(*(fifo.query("project == 'p2'")[c] for c in ("start_s", "end_s", "gpus")),
                           0, horizon) == 0
    fs = replay(jobs, cl, SchedulerConfig(order="fairshare", fairshare_by="project", backfill=False),
                until_s=horizon).records
    p1 = busy_gpu_s_jobs(*(fs.query("project == 'p1'")[c] for c in ("start_s", "end_s", "gpus")), 0, horizon)
    p2 = busy_gpu_s_jobs(*(fs.query("project == 'p2'")[c] for c in ("start_s", "end_s", "gpus")), 0, horizon)
    assert p1 / (p1 + p2) == pytest.approx(0.5, abs=0.03)


def test_topology_aware_placement_within_scalable_units():
    s = Scheduler(ClusterShape(nodes=16, gpus_per_node=8, su_nodes=4))
    # fragment: 2 nodes busy in unit 0, 1 in unit 1, 3 in unit 2
    for i, n in enumerate((2, 1, 3)):
        s.submit(JobRequest(id=100 + i, gpus=8 * n, queue="normal", submit_s=0, runlimit_s=1e6), 0)
    first = s.decide(0.0)
    assert [len(d.nodes) for d in first] == [2, 1, 3]
    # a 2-node job fits in one unit: best fit = the unit with the fewest free nodes that hold it
    s.submit(JobRequest(id=1, gpus=16, queue="normal", submit_s=1, runlimit_s=10), 1)
    (d,) = s.decide(1.0)
    units = {n // 4 for n in d.nodes}
    assert len(units) == 1
    free_before = {u: 4 - sum(1 for x in first for n in x.nodes if n // 4 == u) for u in range(4)}
    assert free_before[units.pop()] == min(v for v in free_before.values() if v >= 2)
    # a 6-node job cannot fit in one unit: it spans the fewest units, fullest first
    s.submit(JobRequest(id=2, gpus=48, queue="normal", submit_s=2, runlimit_s=10), 2)
    (d2,) = s.decide(2.0)
    assert len({n // 4 for n in d2.nodes}) == 2


def test_health_aware_placement():
    s = Scheduler(ClusterShape(nodes=8, gpus_per_node=8, su_nodes=4))
    for node in (0, 1, 2):
        assert s.set_node_health(node, False, 0.0) == []
    s.set_unit_degraded(1, True)
    s.submit(JobRequest(id=1, gpus=8, queue="normal", submit_s=0, runlimit_s=10), 0)
    (d,) = s.decide(0.0)
    assert d.nodes == (3,)          # the one healthy node of the healthy unit... before the degraded unit
    s.submit(JobRequest(id=2, gpus=16, queue="normal", submit_s=0, runlimit_s=10), 0)
    (d,) = s.decide(0.0)
    assert set(d.nodes) <= {4, 5, 6, 7}       # only the degraded unit is left
    s.submit(JobRequest(id=3, gpus=24, queue="normal", submit_s=0, runlimit_s=10), 0)
    assert s.decide(0.0) == []                # 2 healthy free nodes left, never the sick ones
    assert s.set_node_health(3, False, 1.0) == [1]   # the caller learns whose node died


def test_exclusive_job_holds_a_whole_node_and_small_jobs_share():
    s = Scheduler(ClusterShape(nodes=2, gpus_per_node=8, su_nodes=2))
    for i in range(4):
        s.submit(JobRequest(id=i, gpus=2, queue="normal", submit_s=0, runlimit_s=10), 0)
    s.submit(JobRequest(id=9, gpus=2, queue="normal", submit_s=0, runlimit_s=10, exclusive=True), 0)
    d = s.decide(0.0)
    nodes = {x.job: x.nodes for x in d}
    assert len({nodes[i] for i in range(4)}) == 1       # four 2-GPU jobs share one node
    assert nodes[9] != nodes[0]
    s.submit(JobRequest(id=10, gpus=1, queue="normal", submit_s=1, runlimit_s=10), 1)
    assert s.decide(1.0) == []                          # the exclusive node takes no one else


def test_preemption_loses_work_since_the_last_checkpoint():
    """A prod job preempts the youngest low-queue jobs it needs; each loses its run modulo its
    checkpoint interval, is requeued, and later runs what it lost again."""
    cfg = SchedulerConfig(preemption=True, backfill=True,
                          queues=(QueueSpec("prod", 50, preemptive=True), QueueSpec("low", 10, preemptable=True)))
    cl = ClusterShape(nodes=4, gpus_per_node=8, su_nodes=4)
    jobs = pd.DataFrame({"job_id": range(5), "gpus": [8, 8, 8, 8, 16],
                         "queue": ["low"] * 4 + ["prod"],
                         "submit_s": [0.0, 0.0, 0.0, 600.0, 4000.0],
                         "duration_s": [20000.0] * 4 + [3600.0],
                         "checkpoint_interval_s": [1800.0] * 4 + [math.inf]})
    r = replay(jobs, cl, cfg)
    rec = r.records
    assert rec.preemptions.tolist() == [0, 0, 1, 1, 0]   # ties by youngest: job 3, then job 2
    # job 3 ran 3400 s: 1 checkpoint at 1800 s, 1600 s lost; job 2 ran 4000 s: 400 s lost
    assert rec.lost_gpu_s.tolist() == [0, 0, 4000 * 8 % (1800 * 8) * 1.0, 1600 * 8.0, 0]
    assert rec.start_s[4] == 4000.0
    assert (rec.state == "completed").all()
    # GPU-seconds: the step function = useful work + lost work
    busy = busy_gpu_s_step(r.busy_t_s, r.busy_gpus, 0, r.busy_t_s[-1])
    assert busy == pytest.approx((rec.gpus * rec.run_s).sum() + rec.lost_gpu_s.sum(), rel=1e-12)


def test_reschedule_conserves_gpu_seconds_and_respects_capacity():
    jobs = _mixed_jobs(3)
    r = replay(jobs, SMALL, SchedulerConfig(order="fairshare", preemption=True))
    rec = r.records
    assert (r.busy_gpus <= SMALL.gpus).all() and (r.busy_gpus >= 0).all()
    t1 = r.busy_t_s[-1]
    assert r.busy_gpus[-1] == 0 and (rec.state != "pending").all()
    busy = busy_gpu_s_step(r.busy_t_s, r.busy_gpus, 0.0, t1)
    assert busy == pytest.approx((rec.gpus * rec.run_s).sum() + rec.lost_gpu_s.sum(), rel=1e-9)
    assert (rec.start_s >= rec.submit_s).all()


def test_api_decisions_and_errors():
    s = Scheduler(ClusterShape(nodes=2, gpus_per_node=8, su_nodes=2))
    with pytest.raises(ValueError, match="unknown queue"):
        s.submit(JobRequest(id=1, gpus=1, queue="nope", submit_s=0, runlimit_s=1), 0)
    with pytest.raises(ValueError, match="1 to 16"):
        s.submit(JobRequest(id=1, gpus=17, queue="normal", submit_s=0, runlimit_s=1), 0)
    s.submit(JobRequest(id=1, gpus=16, queue="normal", submit_s=0, runlimit_s=1), 0)
    (d,) = s.decide(0.0)
    assert isinstance(d, Start) and d.nodes == (0, 1) and d.gpus_per_node == (8, 8)
    p = s.requeue(1, 0.5)
    assert isinstance(p, Preempt) and p.lost_s == 0.5 and p.done_s == 0.0
    assert s.pending == 1
    (d,) = s.decide(1.0)
    s.finish(1, 2.0)
    assert s.free_gpus == 16 and s.pending == 0


def test_deferred_backfill_keeps_the_guarantee_and_the_work():
    """Backfill scans at most every 30 s (Slurm's bf_interval): heads still start by their
    first shadow time, every job still runs, and GPU-seconds are conserved."""
    jobs = _mixed_jobs(4)
    r = replay(jobs, SMALL, SchedulerConfig(backfill_interval_s=30.0))
    start = r.records.start_s.to_numpy()
    assert r.scheduler.first_shadow
    for j, shadow in r.scheduler.first_shadow.items():
        assert start[j] <= shadow + 1e-9
    assert not np.isnan(start).any()
    busy = busy_gpu_s_step(r.busy_t_s, r.busy_gpus, 0.0, r.busy_t_s[-1])
    assert busy == pytest.approx((r.records.gpus * r.records.run_s).sum(), rel=1e-9)


def test_policy_comparison_on_the_blue_vela_stream(scenarios_dir):
    """Standalone study: on the same jobs, backfill keeps the cluster busier than strict FIFO
    and cuts the median wait; fair share stays close to backfill's utilisation."""
    from twin.scenario import load_scenario
    from twin.workload.studies import policy_comparison
    s = load_scenario(scenarios_dir / "blue_vela.yaml")
    t = policy_comparison(s, loads=(1.1,), horizon_days=180, window_days=90)
    u = t["utilization_last_90_days"]
    assert u[(1.1, "fifo_backfill")] > u[(1.1, "fifo")] + 0.02
    assert u[(1.1, "fairshare_backfill")] > u[(1.1, "fifo")] + 0.02
    for q in ("queue_wait_p50_h", "queue_wait_p95_h", "queued_at_end"):
        assert t[q][(1.1, "fifo_backfill")] < t[q][(1.1, "fifo")], q
    assert (t["jobs"] > 0).all()


def _overloaded_mix():
    """Two days of the fitted stream at an offered load of 1.5 on 256 nodes, restricted to
    half the cluster's GPUs, in three queues with checkpoints: a standing queue of blocked
    multi-node jobs, hundreds of reservations, backfill and (with preemption) preemptions."""
    from twin.workload.stream import jobs_per_hour_for_load
    cluster = ClusterShape(nodes=256, gpus_per_node=8, su_nodes=32)
    p = restrict_to_cluster(default_stream_params(), cluster.gpus // 2)
    rate = jobs_per_hour_for_load(p, cluster.gpus, 1.5)
    jobs = generate_jobs(p, np.random.default_rng(11), horizon_s=48 * 3600.0, jobs_per_hour=rate)
    q = np.random.default_rng(3).choice(["prod", "normal", "low"], len(jobs), p=[0.1, 0.6, 0.3])
    return cluster, jobs.assign(queue=q, checkpoint_interval_s=1800.0)


def _replay_digest(r) -> str:
    import hashlib
    rec = r.records
    h = hashlib.sha256()
    for c in ("start_s", "end_s", "preemptions", "lost_gpu_s"):
        h.update(np.ascontiguousarray(rec[c].to_numpy()).tobytes())
    h.update(rec["state"].astype(str).str.cat().encode())
    h.update(r.busy_t_s.tobytes())
    h.update(r.busy_gpus.tobytes())
    return h.hexdigest()[:16]


POLICIES = {"fifo_bf30": SchedulerConfig(backfill_interval_s=30.0), "fifo_bf0": SchedulerConfig(),
            "fair_bf": SchedulerConfig(order="fairshare"), "fifo_nobf": SchedulerConfig(backfill=False),
            "fifo_preempt": SchedulerConfig(preemption=True)}


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_skipping_known_misfits_changes_no_decision(name, monkeypatch):
    """The backfill scan skips a candidate at least as large as one that did not fit since
    the last start (the speed-up of the overloaded replay). Every decision is the same as
    when each candidate is tried: start and end times, preemptions and lost work, states
    and the busy-GPU step function, bit for bit."""
    cluster, jobs = _overloaded_mix()
    fast = replay(jobs, cluster, POLICIES[name])
    monkeypatch.setattr(Scheduler, "skip_known_misfits", False)
    slow = replay(jobs, cluster, POLICIES[name])
    for c in ("start_s", "end_s", "preemptions", "lost_gpu_s", "state"):
        np.testing.assert_array_equal(fast.records[c].to_numpy(), slow.records[c].to_numpy(), err_msg=c)
    np.testing.assert_array_equal(fast.busy_t_s, slow.busy_t_s)
    np.testing.assert_array_equal(fast.busy_gpus, slow.busy_gpus)
    assert fast.scheduler.first_shadow == slow.scheduler.first_shadow


#: digests of the replays above by the scheduler before its speed-up (commit 3edb1c9, no
#: skipping, per-node bookkeeping): a later speed-up must keep every decision
BEFORE_SPEEDUP = {"fifo_bf30": "a4e06ccdb7b98e6f", "fifo_bf0": "62d61f30a539a8a5",
                  "fifo_nobf": "6e06bb7df55b6f8b", "fifo_preempt": "be05a094f4288146"}


@pytest.mark.parametrize("name", sorted(BEFORE_SPEEDUP))
def test_replay_decisions_equal_those_before_the_speedup(name):
    cluster, jobs = _overloaded_mix()
    r = replay(jobs, cluster, POLICIES[name])
    assert len(r.scheduler.first_shadow) > 100 or name == "fifo_nobf"
    assert _replay_digest(r) == BEFORE_SPEEDUP[name]
