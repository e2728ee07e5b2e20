"""The LSF-like scheduler's speed paths (issues 19 and 14) decide as their references do.

Each path of :class:`twin.workload.scheduler.Scheduler` that exists for speed has a class
switch; with it off the scheduler takes the reference (the code before the speed-up). Two
schedulers, one with every path on and one with a path off, get the same random sequence of
submissions, ends, requeues, node-health and rail changes and passes: every decision, the
reservations' shadow times, and the iteration order of every free-node set (which picks the
node of a one-node job) must be the same, step for step. Whole-node clusters (one "GPU" per
node, as the engine drives it) and shared nodes (eight GPUs, partial nodes) are both run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.workload import scheduler as ws
from twin.workload.scheduler import (
    ClusterShape,
    JobRequest,
    Scheduler,
    SchedulerConfig,
    units_in_order_small,
)

#: the speed paths and the value that switches each one off
SWITCHES = {"small_units": 0, "cache_avoided": False, "batched_moves": False,
            "keep_misfits": False, "cut_scan": False, "fast_reserve": False}

POLICIES = {"fifo": SchedulerConfig(), "fair": SchedulerConfig(order="fairshare"),
            "preempt": SchedulerConfig(preemption=True)}


def _state(s: Scheduler) -> tuple:
    """What a later decision can depend on: free GPUs per node, the free-node sets in their
    iteration order, the counters and the reservation."""
    res = s.reservation
    return (list(s.free), [list(x) for x in s.full], [list(x) for x in s.partial], s.n_full,
            s.free_gpus, list(s.full_count), None if res is None else (res[0].id, res[1], sorted(res[2])))


def _drive(cluster: ClusterShape, config: SchedulerConfig, seed: int, steps: int, off: dict) -> None:
    """Run two schedulers (all speed paths on; ``off`` switched off) through one random
    sequence and compare them after every step."""
    fast = Scheduler(cluster, config)
    slow = Scheduler(cluster, config)
    for k, v in off.items():
        setattr(slow, k, v)
    rng = np.random.default_rng(seed)
    queues = [q.name for q in config.queues]
    users = ["a", "b", "c"]
    sizes = [1, 1, 2, 3, cluster.gpus_per_node, 2 * cluster.gpus_per_node, 4 * cluster.gpus_per_node,
             cluster.su_nodes * cluster.gpus_per_node, cluster.gpus // 2]
    now, next_id = 0.0, 0
    for _ in range(steps):
        now += float(rng.choice([0.0, rng.exponential(600.0)]))     # several events per instant too
        r = rng.random()
        if r < 0.45:
            req = JobRequest(id=next_id, gpus=int(rng.choice(sizes)), queue=str(rng.choice(queues)),
                             submit_s=now, runlimit_s=float(rng.choice([600.0, 3600.0, 86400.0])),
                             user=str(rng.choice(users)), project=str(rng.choice(users)),
                             exclusive=bool(rng.random() < 0.1), checkpoint_interval_s=1800.0)
            next_id += 1
            fast.submit(req, now)
            slow.submit(req, now)
        elif r < 0.7:
            running = sorted(fast.running())
            if running:
                j = int(rng.choice(running))
                if rng.random() < 0.1:
                    assert fast.requeue(j, now) == slow.requeue(j, now)
                else:
                    fast.finish(j, now)
                    slow.finish(j, now)
        elif r < 0.8:
            node = int(rng.integers(cluster.nodes))
            healthy = bool(rng.random() < 0.5)
            hit = fast.set_node_health(node, healthy, now)
            assert hit == slow.set_node_health(node, healthy, now)
            for j in hit:
                if rng.random() < 0.5:
                    fast.finish(j, now)
                    slow.finish(j, now)
        elif r < 0.83:
            u = int(rng.integers(fast.n_su))
            deg = bool(rng.random() < 0.5)
            fast.set_unit_degraded(u, deg)
            slow.set_unit_degraded(u, deg)
        a, b = fast.decide(now), slow.decide(now)
        assert a == b
        assert _state(fast) == _state(slow)
    assert fast.first_shadow == slow.first_shadow
    assert next_id > steps // 4


@pytest.mark.parametrize("switch", sorted(SWITCHES))
@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("gpn", [1, 8])
def test_each_speed_path_decides_as_its_reference(switch, policy, gpn):
    cluster = ClusterShape(nodes=96, gpus_per_node=gpn, su_nodes=16)
    _drive(cluster, POLICIES[policy], seed=gpn * 7 + len(policy), steps=700, off={switch: SWITCHES[switch]})


def test_all_speed_paths_off_at_once_decide_alike():
    """Every path off together (the scheduler before the speed-up), on a cluster of more
    units than the Python ranking handles (the numpy ranking with the other paths on)."""
    cluster = ClusterShape(nodes=40 * 8, gpus_per_node=1, su_nodes=8)
    assert cluster.nodes // cluster.su_nodes > ws.SMALL_UNITS
    _drive(cluster, SchedulerConfig(), seed=5, steps=700, off=dict(SWITCHES))


def _units_numpy(counts: np.ndarray, degraded: np.ndarray, need: int) -> list[int] | None:
    s = Scheduler(ClusterShape(nodes=len(counts) * 16, gpus_per_node=1, su_nodes=16))
    s.small_units = 0
    s.su_degraded_arr[:] = degraded
    return s._units_in_order(counts.astype(np.int64), need)


@given(st.integers(1, 40), st.integers(0, 2 ** 32 - 1), st.sampled_from([0.0, 0.3, 1.0]), st.integers(1, 200))
def test_unit_ranking_in_lists_is_the_numpy_ranking(n_su, seed, p_deg, need):
    """The unit choice of a whole-node placement: best fit (healthy first, ties by index),
    else the fullest units first up to ``need``; None when all units together hold fewer.
    Equal counts (ties) are frequent by construction."""
    rng = np.random.default_rng(seed)
    counts = rng.choice([0, 1, 2, 4, 8, 16], size=n_su)
    degraded = rng.random(n_su) < p_deg
    big = n_su * 16 + 1
    assert units_in_order_small(counts.tolist(), degraded.tolist(), need, big) == \
        _units_numpy(counts, degraded, need)


def test_a_healed_node_ends_the_known_misfits_of_a_head_without_reservation():
    """The head can never start (more nodes than are healthy: no reservation, the empty
    set); a one-node job that did not fit is tried again once a node heals, though the
    (empty) reservation is the same: the pool changed."""
    cluster = ClusterShape(nodes=8, gpus_per_node=8, su_nodes=4)
    out = []
    for keep in (True, False):
        s = Scheduler(cluster, SchedulerConfig())
        s.keep_misfits = keep
        for n in range(6):
            s.set_node_health(n, False, 0.0)
        for i in range(2):                                           # 5 of 8 GPUs of nodes 6 and 7
            s.submit(JobRequest(id=i, gpus=5, queue="normal", submit_s=0.0, runlimit_s=1e4), 0.0)
        assert [d.job for d in s.decide(0.0)] == [0, 1]
        s.submit(JobRequest(id=2, gpus=64, queue="normal", submit_s=1.0, runlimit_s=1e4), 1.0)
        s.submit(JobRequest(id=3, gpus=6, queue="normal", submit_s=2.0, runlimit_s=1e4), 2.0)
        assert s.decide(2.0) == [] and s.free_gpus == 6             # 3 + 3: no node holds job 3
        assert s.reservation is not None and s.reservation[2] == frozenset()
        s.set_node_health(0, True, 3.0)
        got = s.decide(3.0)
        assert s.reservation is not None and s.reservation[2] == frozenset()
        out.append([d.job for d in got])
    assert out[0] == out[1] == [3]
