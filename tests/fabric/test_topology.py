"""Topology counts against closed forms, port budgets and ECMP path counts."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.fabric import build_fabric, ecmp_path_count, fabric_counts


def _port_use(g):
    """Cables used per switch."""
    use = {}
    for a, b, d in g.edges(data=True):
        for v in (a, b):
            if g.nodes[v]["kind"] != "node":
                use[v] = use.get(v, 0) + d["links"]
    return use


def test_superpod_4su_matches_reference_architecture():
    # NVIDIA DGX SuperPOD H100 RA (Blue Vela compute pod): 4 SU x 32 nodes, 8 rails,
    # 64-port QM9700: 32 leaves, 16 spines, every port of every switch used.
    g = build_fabric("rail_optimized", 128)
    c = fabric_counts(g)
    assert c["nodes"] == 128
    assert c["leaf"] == 4 * 8
    assert c["spine"] == 16
    assert c["core"] == 0
    assert c["node-leaf"] == 128 * 8
    assert c["leaf-spine"] == 32 * 32  # 32 uplinks per leaf (non-blocking)
    assert set(_port_use(g).values()) == {64}
    # each node's NIC r sits on the rail-r leaf of its SU
    assert set(g.neighbors("n0")) == {f"leaf:p{r}:0" for r in range(8)}
    assert g.nodes["n33"]["su"] == 1


@pytest.mark.parametrize("k", [4, 8, 16])
def test_k_ary_fat_tree_closed_forms(k):
    # Al-Fares et al. 2008: k^3/4 hosts, 5k^2/4 switches, k^3/4 cables per tier
    hosts = k**3 // 4
    g = build_fabric("fat_tree", hosts, switch_ports=k, rails=1)
    c = fabric_counts(g)
    assert c["nodes"] == hosts
    assert c["leaf"] + c["spine"] + c["core"] == 5 * k * k // 4
    assert c["core"] == k * k // 4
    assert c["node-leaf"] == c["leaf-spine"] == c["spine-core"] == hosts
    assert max(_port_use(g).values()) == k


def test_rail_optimized_4096_nodes_three_tiers():
    g = build_fabric("rail_optimized", 4096)
    c = fabric_counts(g)
    n_su, rails, k = 128, 8, 64
    pods = n_su // (k // 2)  # 4 pods of 32 leaves per rail
    assert c["leaf"] == n_su * rails
    assert c["spine"] == pods * 32 * rails
    # 32 core groups per rail, each joins 4 pods x 32 cables -> 2 cores of 64 ports
    assert c["core"] == 32 * 2 * rails
    assert c["leaf-spine"] == c["spine-core"] == n_su * rails * 32
    assert max(_port_use(g).values()) <= k


def test_vela_two_tier_clos():
    # Vela: each NIC to a different TOR, two 100G links from each TOR to each of four
    # spines: 8 x 100G = 800 Gb/s per TOR, 1.6 Tb/s per rack of two TORs
    g = build_fabric("clos", 120, su_nodes=6, rails=2, link_gbps=100, spines=4,
                     tor_uplinks_per_spine=2)
    c = fabric_counts(g)
    assert c["leaf"] == 20 * 2 and c["spine"] == 4
    assert c["leaf-spine"] == 40 * 4 * 2
    up = sum(d["capacity_gbps"] for _, _, d in g.edges("leaf:p0:0", data=True)
             if d["tier"] == "leaf-spine")
    assert up == 800.0
    rack0 = {"leaf:p0:0", "leaf:p0:1"}
    assert set(g.neighbors("n0")) == rack0 == set(g.neighbors("n5"))


def test_lenovo_t_shirt_sizes_need_two_switches_only():
    # Lenovo GenAI RA: 4/8/16 nodes, 2x QM9700 (or SN4600), 4 dual-port CX-7 200G per node
    for n in (4, 8, 16):
        g = build_fabric("rail_optimized", n, su_nodes=16, rails=2, ports_per_nic=4,
                         link_gbps=200)
        c = fabric_counts(g)
        assert (c["leaf"], c["spine"], c["core"]) == (2, 0, 0)
        assert c["node-leaf"] == n * 8
        assert g.graph["node_bandwidth_gbps"] == 1600.0  # 200 Gb/s per GPU (RA advice)
        assert max(_port_use(g).values()) <= 64


def test_oversubscription_cuts_uplinks():
    g = build_fabric("rail_optimized", 64, oversubscription=2.0, rails=1)
    up = sum(d["links"] for _, _, d in g.edges("leaf:p0:0", data=True) if d["tier"] == "leaf-spine")
    assert up == 16


def _count_paths_nx(g, a, b):
    """Shortest paths counted with their cable multiplicity (product of bundle sizes)."""
    total = 0
    for path in nx.all_shortest_paths(g, a, b):
        m = 1
        for u, v in zip(path, path[1:], strict=False):
            m *= g.edges[u, v]["links"]
        total += m
    return total


@pytest.mark.parametrize(("kind", "n", "kw", "pairs"), [
    ("rail_optimized", 128, {"rails": 2}, [(0, 1), (0, 40), (5, 127)]),
    ("fat_tree", 16, {"switch_ports": 4, "rails": 1}, [(0, 1), (0, 2), (0, 15)]),
    ("fat_tree", 128, {"switch_ports": 8, "rails": 1}, [(0, 3), (0, 5), (0, 100)]),
    ("clos", 24, {"su_nodes": 4, "rails": 2, "spines": 4}, [(0, 1), (0, 9)]),
])
def test_ecmp_path_count_closed_form_matches_graph(kind, n, kw, pairs):
    g = build_fabric(kind, n, **kw)
    for a, b in pairs:
        assert ecmp_path_count(g, a, b) == _count_paths_nx(g, f"n{a}", f"n{b}")


def test_ecmp_path_count_fat_tree_k4_hand():
    # k=4: other pod (k/2)^2 = 4 paths, same pod other edge k/2 = 2, same edge 1
    g = build_fabric("fat_tree", 16, switch_ports=4, rails=1)
    assert ecmp_path_count(g, 0, 15) == 4
    assert ecmp_path_count(g, 0, 2) == 2
    assert ecmp_path_count(g, 0, 1) == 1


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown fabric kind"):
        build_fabric("torus", 8)
    with pytest.raises(ValueError):
        build_fabric("rail_optimized", 200, su_nodes=60)  # 60 down + 60 up > 64 ports
    with pytest.raises(ValueError):
        build_fabric("rail_optimized", 0)


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["rail_optimized", "clos", "fat_tree"]),
       n=st.integers(1, 600), su=st.sampled_from([4, 8, 16, 32, 48]),
       rails=st.sampled_from([1, 2, 4, 8]), over=st.sampled_from([1.0, 2.0, 4.0]))
def test_every_build_respects_ports_and_wires_every_nic(kind, n, su, rails, over):
    if kind == "rail_optimized" and n > su and su + round(su / over) > 64:
        with pytest.raises(ValueError):
            build_fabric(kind, n, su_nodes=su, rails=rails, oversubscription=over)
        return
    g = build_fabric(kind, n, su_nodes=su, rails=rails, oversubscription=over)
    lay = g.graph["layout"]
    assert sum(1 for _, k in g.nodes(data="kind") if k == "node") == n
    nic = [sum(d["links"] for _, _, d in g.edges(f"n{i}", data=True)) for i in range(n)]
    assert set(nic) == {rails}
    use = _port_use(g)
    fixed = [v for v in use if not (kind == "clos" and g.nodes[v]["kind"] == "spine")]
    assert max(use[v] for v in fixed) <= g.graph["switch_ports"]  # clos spines are chassis
    assert np.all(lay.node_leaf >= 0)
    assert nx.is_connected(g)


def test_presets_build_the_seed_fabrics():
    from twin.fabric import FABRIC_PRESETS, build_preset_fabric

    g, tr = build_preset_fabric("blue_vela", 128)
    assert tr == "ib_rdma" and fabric_counts(g)["spine"] == 16
    g, tr = build_preset_fabric("vela", 60)
    assert tr == "roce" and fabric_counts(g)["leaf"] == 20 and fabric_counts(g)["spine"] == 4
    for name in ("lenovo_qm9700", "lenovo_sn4600"):
        g, _ = build_preset_fabric(name, 16)
        assert g.graph["node_bandwidth_gbps"] == 1600.0
        assert max(_port_use(g).values()) <= 64
    assert set(FABRIC_PRESETS) >= {"blue_vela", "vela", "lenovo_qm9700", "lenovo_sn4600"}
    with pytest.raises(ValueError):
        build_preset_fabric("dragonfly", 8)
