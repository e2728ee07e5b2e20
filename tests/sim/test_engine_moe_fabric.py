"""A mixture-of-experts job whose expert-parallel group spans nodes loads the fabric with an
all-to-all, as ``twin estimate fabric-study`` routes it (issue 16): the engine asks the fabric
library for that pattern alone, under faults and in the max-min shared solve, and the step
time follows. Dense jobs keep the ring. Hand values from the topology.

Fabric: a two-tier fat tree of 8-rail nodes, 100 Gb/s cables, 2:1 leaves (``d`` down, ``d/2``
up). 24-port leaves: 16 down = 2 nodes, 8 up = 800 Gb/s. 48-port leaves: 32 down = 4 nodes,
16 up = 1600 Gb/s. A node offers 8 x 100 = 800 Gb/s.
"""

import sys
from pathlib import Path

import pytest

from twin import fabric
from twin.plant import step_estimate_for
from twin.sim.jobs import JobState

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_fabric_failures import T0, _data, _engine, _fault  # noqa: E402

H = 3600.0
NODE_GBPS = 800.0
# Mixtral-like shape, small; tp 2 x ep 8: EP ranks 2 apart, 4 of them per 8-GPU node, so the
# expert-parallel group spans 2 nodes (step_time's ep_rpn)
MOE = dict(name="moe", model={"layers": 8, "hidden": 2048, "ffn_hidden": 8192, "heads": 16, "kv_heads": 8,
                              "vocab": 32000, "experts": 8, "top_k": 2}, tp=2, ep=8)


def _fat(over: float, ports: int = 24, **kw) -> dict:
    return dict(kind="fat_tree", rails=8, switch_ports=ports, oversubscription=over, link_gbps=100.0,
                spines=None, tor_uplinks_per_spine=2, **kw)


def _moe_and_dense(over: float, faults=()):
    # the MoE job on nodes 0-9 (5 leaves), a dense job on nodes 10-11 (one leaf)
    return _engine(_data(_fat(over), 6, [dict(MOE, nodes=10, global_batch=160),
                                         dict(name="dense", nodes=2, global_batch=32)], list(faults)))


def _at(e, t_s: float) -> list[tuple[float, float]]:
    """(per-node bandwidth [Gb/s] the step model got, step time [s]) of every job at t."""
    e.env.run(until=t_s)
    out = []
    for job in e.jobs:
        assert job.status == "running"
        _, bw = e.jobs.fabric_figures(job.nodes, e.jobs.traffic_pattern(job))
        out.append((bw * e.jobs.shared_fraction(job), job.step.step_time_s))
    return out


def _step_at(e, job, bw: float) -> float:
    hops, _ = e.jobs.fabric_figures(job.nodes, e.jobs.traffic_pattern(job))
    return step_estimate_for(e.s, job.spec, e.plant.models[0], len(job.nodes), clock_fraction=1.0,
                             inter_node_gbps=bw, hops=hops).step_time_s


def test_moe_across_nodes_on_a_2to1_fabric_gets_the_all_to_all_bandwidth():
    e = _moe_and_dense(2.0)
    (moe_bw, moe_step), (dense_bw, dense_step) = _at(e, H)
    moe, dense = e.jobs[0], e.jobs[1]
    assert e.jobs.traffic_pattern(moe) == "all_to_all"
    # a leaf's 2 nodes send 8/9 of their 800 Gb/s off the leaf: 1422 Gb/s for 800 up,
    # 800 x 800 / (2 x 800 x 8/9) = 450 Gb/s per node; the ring crosses a leaf once (800)
    assert moe_bw == pytest.approx(NODE_GBPS * 9 / 16, rel=1e-12)
    assert moe_bw == fabric.bottleneck_bandwidth_gbps(e.graph, moe.nodes, pattern="all_to_all")
    assert fabric.bottleneck_bandwidth_gbps(e.graph, moe.nodes) == pytest.approx(NODE_GBPS)
    # the step model takes it as it is
    assert moe_step == _step_at(e, moe, 450.0)
    assert moe_step > _step_at(e, moe, NODE_GBPS)
    # the dense job keeps the ring, inside its leaf: the NIC rate
    assert e.jobs.traffic_pattern(dense) == "ring"
    assert dense_bw == fabric.bottleneck_bandwidth_gbps(e.graph, dense.nodes) == pytest.approx(NODE_GBPS)
    assert dense_step == _step_at(e, dense, NODE_GBPS)


def test_non_blocking_fabric_the_same_as_the_ring():
    e = _moe_and_dense(1.0)
    (moe_bw, moe_step), _ = _at(e, H)
    moe = e.jobs[0]
    assert e.jobs.traffic_pattern(moe) == "all_to_all"
    assert moe_bw == fabric.bottleneck_bandwidth_gbps(e.graph, moe.nodes) == pytest.approx(NODE_GBPS)
    assert moe_step == _step_at(e, moe, NODE_GBPS)


def test_a_spine_down_is_routed_around_in_the_all_to_all():
    # 24-port leaves at 2:1: 8 uplinks, 4 to each of the plane's 2 spines; one spine down
    # leaves 400 Gb/s up: 450 x 4/8 = 225 Gb/s for the all-to-all (the ring: 400)
    spine = "spine:p0:0:1"
    e = _moe_and_dense(2.0, [_fault(spine)])
    (moe_bw, moe_step), _ = _at(e, T0 + H)
    moe = e.jobs[0]
    direct = fabric.bottleneck_bandwidth_gbps(e.graph, moe.nodes, failed_switches=[spine], pattern="all_to_all")
    assert moe_bw == direct == pytest.approx(225.0, rel=1e-12)
    assert fabric.bottleneck_bandwidth_gbps(e.graph, moe.nodes, failed_switches=[spine]) == pytest.approx(400.0)
    assert moe_step == _step_at(e, moe, direct)


def test_max_min_shares_each_job_in_its_own_pattern():
    # 48-port leaves (4 nodes, 1600 Gb/s up). Dense on nodes 0-5, MoE on 6-13: leaf 1 holds
    # dense 4, 5 and MoE 6, 7. MoE alone: leaf 2's 4 nodes send 4/7 off it, 1829 for 1600:
    # 800 x 7/8 = 700. Shared on leaf 1: MoE 2 x 800 x 6/7 f + dense ring 800 f = 1600 ->
    # f = 14/19 for both (max-min), 800 x 14/19 = 589.5 Gb/s; as rings both would fit (800)
    jobs = [dict(name="dense", nodes=6, global_batch=48), dict(MOE, nodes=8, global_batch=128)]
    e = _engine(_data(_fat(2.0, ports=48, sharing="max_min"), 7, jobs, []))
    got = _at(e, H)
    dense, moe = e.jobs[0], e.jobs[1]
    assert [e.jobs.traffic_pattern(j) for j in e.jobs] == ["ring", "all_to_all"]
    assert e.jobs.fabric_figures(moe.nodes, "all_to_all")[1] == pytest.approx(700.0, rel=1e-12)
    assert [bw for bw, _ in got] == pytest.approx([NODE_GBPS * 14 / 19] * 2, rel=1e-12)
    r = fabric.fair_share_bandwidths_gbps(e.graph, [dense.nodes, moe.nodes], pattern=["ring", "all_to_all"],
                                          seed=e.s.simulation.seed)
    assert [bw for bw, _ in got] == pytest.approx(list(r["bandwidth_gbps"]), rel=1e-12)
    rings = fabric.fair_share_bandwidths_gbps(e.graph, [dense.nodes, moe.nodes], seed=e.s.simulation.seed)
    assert list(rings["bandwidth_gbps"]) == pytest.approx([NODE_GBPS] * 2)
    assert got[0][1] == _step_at(e, dense, got[0][0])
    assert got[1][1] == _step_at(e, moe, got[1][0])


@pytest.mark.parametrize(("kw", "pattern"), [
    (dict(tp=2, ep=8), "all_to_all"),              # EP ranks 2 apart: 4 a node, 8 span 2
    (dict(tp=1, ep=8), "ring"),                    # 1 apart: all 8 in one node
    (dict(tp=2, ep=8, moe_expert_tp=1), "ring"),   # folded, 1 apart
    (dict(tp=8, ep=8, moe_expert_tp=8), "all_to_all"),  # folded, 8 apart: 1 a node
    (dict(tp=2, cp=2, ep=2), "ring"),              # 4 apart: 2 a node
    (dict(tp=2, cp=2, ep=4), "all_to_all"),        # 4 apart: 2 a node, 4 span 2
    (dict(tp=2, ep=1), "ring"),                    # experts on every rank: no all-to-all
])
def test_the_pattern_follows_where_the_expert_group_lies(kw, pattern):
    e = _moe_and_dense(1.0)
    spec = e.jobs[0].spec.model_copy(update=dict(cp=1, moe_expert_tp=None) | kw)
    job = JobState(spec=spec, index=0, params=0.0, checkpoint_bytes=0.0)
    assert e.jobs.traffic_pattern(job) == pattern
    dense = JobState(spec=e.jobs[1].spec, index=1, params=0.0, checkpoint_bytes=0.0)
    assert e.jobs.traffic_pattern(dense) == "ring"
    assert e.jobs.gpus_per_node_of(job) == 8


def test_the_caches_tell_the_patterns_apart():
    # the same placement as a ring and as an all-to-all: two figures, whichever comes first
    e = _moe_and_dense(2.0)
    e.env.run(until=H)
    moe = e.jobs[0]
    assert e.jobs.fabric_figures(moe.nodes, "ring")[1] == pytest.approx(NODE_GBPS)
    assert e.jobs.fabric_figures(moe.nodes, "all_to_all")[1] == pytest.approx(450.0, rel=1e-12)
    # the shared solve of the same placements, once with the MoE job and once with a dense
    # job on its nodes (a job that ends and one that starts on the nodes it freed)
    jobs = [dict(name="dense", nodes=6, global_batch=48), dict(MOE, nodes=8, global_batch=128)]
    e = _engine(_data(_fat(2.0, ports=48, sharing="max_min"), 7, jobs, []))
    e.env.run(until=H)
    dense, moe = e.jobs[0], e.jobs[1]
    assert e.jobs.shared_fraction(dense) == pytest.approx(14 / 19, rel=1e-12)
    moe.spec = dense.spec
    assert e.jobs.traffic_pattern(moe) == "ring"
    assert e.jobs.shared_fraction(dense) == 1.0       # two rings fit (800 Gb/s each)
