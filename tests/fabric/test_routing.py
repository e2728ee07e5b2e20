"""Link loads, bottleneck bandwidth, failures and sharing, checked by hand."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.fabric import (
    bottleneck_bandwidth_gbps,
    build_fabric,
    link_loads,
    link_loads_gbps,
    placement_hops,
    shared_bandwidths_gbps,
)

POD = build_fabric("rail_optimized", 128)  # SuperPOD compute pod, 4 SU x 32 nodes


def test_placement_hops_by_hand():
    assert placement_hops(POD, np.arange(8)) == {
        "max_hops": 2, "mean_hops": 2.0, "sus": 1, "leaves": 1, "pods": 1, "nodes": 8}
    h = placement_hops(POD, [0, 1, 32, 33])
    # 4 of 12 ordered pairs share a leaf (2 hops), 8 cross the spines (4 hops)
    assert h["max_hops"] == 4
    assert h["mean_hops"] == pytest.approx((4 * 2 + 8 * 4) / 12)
    assert h["sus"] == 2
    big = build_fabric("rail_optimized", 2048 + 64)  # 66 leaves per rail -> 3 tiers
    assert placement_hops(big, [0, 2048])["max_hops"] == 6


def test_healthy_non_blocking_fabric_gives_line_rate():
    for pattern in ("ring", "all_to_all"):
        assert bottleneck_bandwidth_gbps(POD, np.arange(128), pattern=pattern) == 3200.0


def test_failed_nic_costs_its_share():
    # 7 of 8 NICs left: the node's traffic moves to the others (PXN) -> 7/8 of line rate
    bw = bottleneck_bandwidth_gbps(POD, np.arange(64), failed_links=[("n3", "leaf:p0:0")])
    assert bw == pytest.approx(3200.0 * 7 / 8)


def test_failed_spine_cables_lower_bandwidth_as_by_hand():
    # Cut all 16 cables leaf(rail 0, SU 0) - spine 0 of rail 0.  All-to-all over the 128
    # nodes: the leaf's 32 nodes send 400 Gb/s each, 96/127 of it leaves the leaf, now
    # over the 16 cables to spine 1 only: 32*400*96/127/16 = 604.7 Gb/s per 400 Gb/s cable.
    cut = [("leaf:p0:0", "spine:p0:0:0")] * 16
    frac = 400.0 / (32 * 400 * 96 / 127 / 16)
    bw = bottleneck_bandwidth_gbps(POD, np.arange(128), cut, pattern="all_to_all")
    assert bw == pytest.approx(3200.0 * frac, rel=1e-9)
    # a dead spine does the same to every leaf of its rail
    bw2 = bottleneck_bandwidth_gbps(POD, np.arange(128), pattern="all_to_all",
                                    failed_switches=["spine:p0:0:0"])
    assert bw2 == pytest.approx(3200.0 * frac, rel=1e-9)
    # the ring sends one flow per leaf boundary: 16 cables are plenty
    assert bottleneck_bandwidth_gbps(POD, np.arange(128), cut) == 3200.0


def test_partitioned_job_has_no_bandwidth():
    cut = [("n5", f"leaf:p{r}:0") for r in range(8)]
    assert bottleneck_bandwidth_gbps(POD, np.arange(40), cut) == 0.0
    g = build_fabric("rail_optimized", 64, rails=1)
    dead = [("leaf:p0:0", "spine:p0:0:0")] * 32
    assert bottleneck_bandwidth_gbps(g, [0, 40], dead) == 0.0


def test_jobs_sharing_an_oversubscribed_leaf_slow_each_other():
    # 2 SU, 1 rail, 4:1 oversubscription: 8 uplinks per leaf.  Each job has 16 nodes per
    # leaf; all-to-all sends 16*400*16/31 Gb/s out of each leaf.
    g = build_fabric("rail_optimized", 64, rails=1, oversubscription=4.0)
    a = np.r_[0:16, 32:48]
    b = np.r_[16:32, 48:64]
    out = 16 * 400 * 16 / 31
    alone = bottleneck_bandwidth_gbps(g, a, pattern="all_to_all")
    assert alone == pytest.approx(400 * min(1.0, 3200 / out))
    both = shared_bandwidths_gbps(g, [a, b], pattern="all_to_all")
    assert both == pytest.approx([400 * 3200 / (2 * out)] * 2)
    assert np.all(both < alone)


def test_link_loads_conserve_flow():
    g = build_fabric("rail_optimized", 4096)
    nodes = np.arange(0, 4096, 3)  # spread over the 4 pods of every rail
    for pattern in ("ring", "all_to_all"):
        loads = link_loads_gbps(g, nodes, pattern=pattern)
        tot = {}
        for (u, v), x in loads.items():
            key = (u.split(":")[0], v.split(":")[0])
            tot[key] = tot.get(key, 0.0) + x
        n = nodes.size
        node_up = sum(x for (u, v), x in loads.items() if u.startswith("n"))
        node_down = sum(x for (u, v), x in loads.items() if v.startswith("n"))
        assert node_up == pytest.approx(n * 3200.0)
        assert node_down == pytest.approx(n * 3200.0)
        assert tot[("leaf", "spine")] == pytest.approx(tot[("spine", "leaf")])
        assert tot[("spine", "core")] == pytest.approx(tot[("core", "spine")])
        assert tot[("spine", "core")] > 0


def test_ring_on_one_leaf_stays_off_the_spines():
    loads = link_loads_gbps(POD, np.arange(16))
    assert all(u.startswith("n") or v.startswith("n") for u, v in loads)


@settings(max_examples=30, deadline=None)
@given(nodes=st.sets(st.integers(0, 127), min_size=2, max_size=64),
       pattern=st.sampled_from(["ring", "all_to_all"]), over=st.sampled_from([1.0, 2.0, 4.0]))
def test_bandwidth_bounds(nodes, pattern, over):
    g = build_fabric("rail_optimized", 128, oversubscription=over)
    idx = np.array(sorted(nodes))
    bw = bottleneck_bandwidth_gbps(g, idx, pattern=pattern)
    # never above the NIC rate; a leaf's uplinks carry at least 1/over of its nodes' rate
    assert 3200.0 / over - 1e-6 <= bw <= 3200.0 + 1e-9
    if over == 1.0:
        assert bw == pytest.approx(3200.0)


@settings(max_examples=20, deadline=None)
@given(cuts=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1)), max_size=40))
def test_single_rail_failures_never_raise_bandwidth_of_a_uniform_job(cuts):
    g = build_fabric("rail_optimized", 128, rails=1)
    failed = [(f"leaf:p0:{leaf}", f"spine:p0:0:{sp}") for leaf, sp in cuts]
    bw = bottleneck_bandwidth_gbps(g, np.arange(128), failed, pattern="all_to_all")
    assert 0.0 <= bw <= 400.0
    # losing c of a leaf's 32 uplinks can not leave more than (32-c)/32 * what it needs
    worst_leaf_cut = max((sum(1 for c in cuts if c[0] == leaf) for leaf in range(4)), default=0)
    need = 32 * 400 * 96 / 127
    assert bw <= 400.0 * min(1.0, (32 - min(worst_leaf_cut, 32)) * 400 / need) + 1e-6


@pytest.mark.parametrize(("n", "nodes"), [(128, np.r_[0:20, 40:70, 80:96]),
                                          (4096, np.arange(0, 3000, 7))])
def test_fast_intact_path_equals_general_ecmp_solver(n, nodes):
    # a failed cable on a leaf the job does not use sends every plane it touches through
    # the general weighted-ECMP solver; the job's loads must not change
    g = build_fabric("rail_optimized", n)
    lay = g.graph["layout"]
    unused_leaf = lay.leaf_names[lay.node_leaf[n - 1, 0]]
    assert not np.isin(lay.node_leaf[nodes, 0], lay.node_leaf[n - 1, 0]).any()
    far = [(unused_leaf, "spine:p0:" + ("3" if n == 4096 else "0") + ":0")]
    for pattern in ("ring", "all_to_all"):
        a = link_loads(g, nodes, pattern=pattern)
        b = link_loads(g, nodes, pattern=pattern, failed_links=far)
        da, db = a.as_dict(), b.as_dict()
        assert set(da) == set(db)
        assert np.allclose([da[k] for k in da], [db[k] for k in da])


def test_oversubscribed_clos_all_to_all_by_hand():
    # 4 racks x 16 nodes, one 100G NIC each, TOR with 2 x 100G to each of 2 spines:
    # 1.6 Tb/s down, 400 Gb/s up.  All-to-all: 16 * 100 * 48/63 Gb/s leave each TOR.
    g = build_fabric("clos", 64, su_nodes=16, rails=1, link_gbps=100, spines=2,
                     tor_uplinks_per_spine=2)
    bw = bottleneck_bandwidth_gbps(g, np.arange(64), pattern="all_to_all")
    assert bw == pytest.approx(100 * 400 / (16 * 100 * 48 / 63))
    # a dead spine halves the uplinks
    bw1 = bottleneck_bandwidth_gbps(g, np.arange(64), pattern="all_to_all",
                                    failed_switches=["spine:p0:0:0"])
    assert bw1 == pytest.approx(bw / 2)


def test_fat_tree_three_tier_core_failure_by_hand():
    # k=4 fat tree, 16 hosts, all-to-all.  Pod 0's 4 hosts send 4*400*12/15 Gb/s to
    # other pods; dead core 0:0 leaves agg 0 of every pod one core cable of two
    g = build_fabric("fat_tree", 16, switch_ports=4, rails=1)
    assert bottleneck_bandwidth_gbps(g, np.arange(16), pattern="all_to_all") == 400.0
    bw = bottleneck_bandwidth_gbps(g, np.arange(16), pattern="all_to_all",
                                   failed_switches=["core:p0:0:0"])
    # spine (pod, 0) gets half its leaves' inter-pod traffic: 2 edges x 2 hosts x 400 x
    # 12/15 / 2 = 640 Gb/s, now on one 400 Gb/s core cable
    assert bw == pytest.approx(400 * 400 / 640)


BIG = build_fabric("rail_optimized", 2048 + 256)  # 72 leaves per rail: three tiers


@settings(max_examples=30, deadline=None)
@given(nodes=st.sets(st.integers(0, 2048 + 255), min_size=1, max_size=300))
def test_placement_hops_properties(nodes):
    idx = np.array(sorted(nodes))
    h = placement_hops(BIG, idx)
    assert h["max_hops"] in (0, 2, 4, 6)
    assert (h["mean_hops"] <= h["max_hops"]) and (h["nodes"] == idx.size)
    assert h["sus"] == np.unique(idx // 32).size
    if idx.size > 1:
        assert h["mean_hops"] >= 2.0


@settings(max_examples=20, deadline=None)
@given(nodes=st.sets(st.integers(0, 2048 + 255), min_size=2, max_size=200),
       cuts=st.lists(st.tuples(st.integers(0, 71), st.integers(0, 31)), max_size=20),
       pattern=st.sampled_from(["ring", "all_to_all"]))
def test_spine_layer_conserves_flow_under_failures(nodes, cuts, pattern):
    idx = np.array(sorted(nodes))
    lay = BIG.graph["layout"]
    pl = lay.planes[0]
    failed = []
    for leaf, j in cuts:
        pod = int(pl.leaf_pod[leaf])
        failed.append((f"leaf:p0:{leaf}", f"spine:p0:{pod}:{j}"))
    ld = link_loads(BIG, idx, pattern=pattern, failed_links=failed)
    if ld.partitioned:
        return
    names = ld.names
    kind = np.array([names[v].split(":")[0] for v in range(len(names))])
    up = ld.load_gbps[(kind[ld.src] == "leaf") & (kind[ld.dst] == "spine")].sum()
    down = ld.load_gbps[(kind[ld.src] == "spine") & (kind[ld.dst] == "leaf")].sum()
    assert up == pytest.approx(down, rel=1e-9, abs=1e-6)
    # cut cables carry nothing: their capacity is gone and no flow is routed on them
    assert np.all(ld.load_gbps[ld.capacity_gbps == 0] == 0)
