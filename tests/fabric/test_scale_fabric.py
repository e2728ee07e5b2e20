"""Fabrics for a million GPUs (issue 19): capacity of a radix, refusal naming the largest
node count, multi-plane, one fabric per hall joined by a site tier, and the aggregated
(graph-free) build against the full networkx graph."""

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import twin
from twin.errors import ScenarioError
from twin.fabric import (
    bottleneck_bandwidth_gbps,
    build_fabric,
    build_scenario_fabric,
    fabric_counts,
    fabric_problems,
    link_loads,
    max_fabric_nodes,
    placement_hops,
)
from twin.fabric.flows import fair_share_bandwidths_gbps
from twin.scenario.schema import Fabric


def _edge_walk_counts(g: nx.Graph) -> dict:
    """Switches and cables per tier counted on the networkx graph (the reference)."""
    out = {"nodes": 0, "leaf": 0, "spine": 0, "core": 0,
           "node-leaf": 0, "leaf-spine": 0, "spine-core": 0}
    for _, kind in g.nodes(data="kind"):
        key = "nodes" if kind == "node" else kind
        if key in out:
            out[key] += 1
    for _, _, d in g.edges(data=True):
        if d["tier"] in out:
            out[d["tier"]] += d["links"]
    return out


def test_three_tier_capacity_is_the_k_ary_fat_tree():
    # Al-Fares et al. (SIGCOMM 2008): a three-tier fat tree of k-port switches has k^3/4
    # host ports; a non-blocking leaf of a k-ary fat tree serves k/2 one-cable hosts
    for k in (4, 8, 16, 64):
        assert max_fabric_nodes("fat_tree", switch_ports=k, rails=1) == k**3 // 4
    # rail-optimised: k pods of k/2 leaves per rail, a leaf per scalable unit of 32
    assert max_fabric_nodes("rail_optimized", switch_ports=64) == 64 * 32 * 32 == 65_536
    assert max_fabric_nodes("rail_optimized", switch_ports=144) == 144 * 72 * 32
    # a 144-port plane holds a million GPUs (131,072 nodes of 8); a 64-port one does not
    assert max_fabric_nodes("rail_optimized", switch_ports=144) * 8 >= 1_000_000
    assert max_fabric_nodes("rail_optimized", switch_ports=64) * 8 < 1_000_000
    # a site tier of k-port switches joins up to k halls
    assert max_fabric_nodes("rail_optimized", switch_ports=64, halls=2) == 2 * 65_536
    assert max_fabric_nodes("clos", su_nodes=6, switch_ports=64) is None


def test_the_largest_fabric_builds_and_one_more_node_is_refused_naming_it():
    g = build_fabric("fat_tree", 128, switch_ports=8, rails=1)
    assert fabric_counts(g)["core"] == 16 and fabric_counts(g)["leaf"] == 32  # 5k^2/4 = 80
    assert sum(fabric_counts(g)[t] for t in ("leaf", "spine", "core")) == 5 * 8**2 // 4
    with pytest.raises(ValueError, match=r"129 nodes exceed .* 128 nodes"):
        build_fabric("fat_tree", 129, switch_ports=8, rails=1)
    with pytest.raises(ValueError, match="131072 nodes exceed .*: 65536 nodes"):
        build_fabric("rail_optimized", 131_072)


def test_a_million_gpus_build_aggregated_and_route():
    # 131,072 nodes x 8 GPUs on 144-port XDR switches: three tiers, 4,096 SUs per rail,
    # built without a networkx vertex (the layout alone routes)
    g = build_fabric("rail_optimized", 131_072, switch_ports=144, link_gbps=800.0)
    assert g.graph["aggregated"] and g.number_of_nodes() == 0
    c = fabric_counts(g)
    assert c["nodes"] * 8 == 1_048_576 and c["leaf"] == 4096 * 8
    # non-blocking: as many leaf-spine and spine-core cables as node cables
    assert c["node-leaf"] == c["leaf-spine"] and c["spine-core"] >= c["leaf-spine"]
    h = placement_hops(g, np.arange(0, 131_072, 997))
    assert h["max_hops"] == 6 and h["pods"] > 1
    assert bottleneck_bandwidth_gbps(g, np.arange(4096)) == pytest.approx(8 * 800.0)


def _fabrics():
    yield "rail_optimized", 96, dict(su_nodes=8, rails=2)                       # two tiers
    yield "rail_optimized", 96, dict(su_nodes=4, rails=2, switch_ports=8)      # three tiers
    yield "fat_tree", 100, dict(switch_ports=8, rails=1, oversubscription=3.0)
    yield "clos", 48, dict(su_nodes=6, rails=2, spines=2)
    yield "rail_optimized", 96, dict(su_nodes=4, rails=2, planes=2, switch_ports=16)
    yield "rail_optimized", 160, dict(su_nodes=4, rails=2, switch_ports=8, hall_nodes=[64, 96],
                                      site_oversubscription=2.0)


@pytest.mark.parametrize("kind,n,kw", list(_fabrics()))
def test_aggregated_build_gives_the_full_graphs_figures(kind, n, kw):
    full = build_fabric(kind, n, aggregate=False, **kw)
    agg = build_fabric(kind, n, aggregate=True, **kw)
    assert agg.number_of_nodes() == 0 and full.number_of_nodes() > n
    # counts: closed form on the layout = an edge walk on the full graph
    walk = _edge_walk_counts(full)
    assert fabric_counts(agg) == walk == fabric_counts(full)
    rng = np.random.default_rng(n)
    jobs = np.array_split(rng.permutation(n), 3)
    for pattern in ("ring", "all_to_all"):
        for routing in ("adaptive", "ecmp"):
            a = fair_share_bandwidths_gbps(agg, jobs, pattern=pattern, routing=routing, seed=1)
            b = fair_share_bandwidths_gbps(full, jobs, pattern=pattern, routing=routing, seed=1)
            assert np.array_equal(a["fraction"], b["fraction"])
    # hops: the layout's closed form = shortest paths on the full graph (an independent
    # method); a pair's hops count the cables between them
    pairs = rng.integers(0, n, size=(40, 2))
    for i, j in pairs:
        if i == j:
            continue
        sp = nx.shortest_path_length(full, f"n{i}", f"n{j}")
        assert placement_hops(agg, [i, j])["max_hops"] == sp, (i, j)


def test_multi_plane_splits_each_port_and_keeps_the_node_bandwidth():
    one = build_fabric("rail_optimized", 64, su_nodes=8, rails=2, link_gbps=800.0,
                       switch_ports=16)
    two = build_fabric("rail_optimized", 64, su_nodes=8, rails=2, link_gbps=800.0,
                       switch_ports=32, planes=2)
    assert two.graph["node_bandwidth_gbps"] == one.graph["node_bandwidth_gbps"] == 1600.0
    assert len(two.graph["layout"].planes) == 2 * len(one.graph["layout"].planes)
    nodes = np.arange(64)
    assert bottleneck_bandwidth_gbps(two, nodes, pattern="all_to_all") == pytest.approx(
        bottleneck_bandwidth_gbps(one, nodes, pattern="all_to_all"))


def test_site_tier_limits_traffic_between_halls_by_its_oversubscription():
    # two halls of 32 nodes (8 SUs of 4), one rail; an all-to-all job over both halls
    # sends (n/2)/(n-1) of every node's rate to the other hall; each hall's site uplink
    # carries its hall's NIC bandwidth / oversubscription
    n = 64
    for over in (1.0, 2.0, 4.0):
        g = build_fabric("rail_optimized", n, su_nodes=4, rails=1, link_gbps=100.0,
                         switch_ports=16, hall_nodes=[32, 32], site_oversubscription=over)
        frac = bottleneck_bandwidth_gbps(g, np.arange(n), pattern="all_to_all") / 100.0
        assert frac == pytest.approx(min(1.0, (32 / over) / (32 * 32 / (n - 1))))
        # a job inside one hall never touches the site tier
        assert bottleneck_bandwidth_gbps(g, np.arange(32), pattern="all_to_all") == \
            pytest.approx(100.0)
    # a ring crosses between the halls twice: one NIC's rate on each uplink
    g = build_fabric("rail_optimized", n, su_nodes=4, rails=1, link_gbps=100.0,
                     switch_ports=16, hall_nodes=[32, 32], site_oversubscription=8.0)
    assert bottleneck_bandwidth_gbps(g, np.arange(n)) == pytest.approx(100.0)
    ld = link_loads(g, np.arange(n))
    site = [x for a, b, x in zip(ld.src, ld.dst, ld.load_gbps, strict=True)
            if ld.names[a].startswith("site:p")]
    assert site == pytest.approx([100.0, 100.0])
    assert placement_hops(g, [0, 40])["max_hops"] == 2 * 2 + 2  # two-tier halls + site


def test_halls_that_split_a_scalable_unit_are_refused():
    with pytest.raises(ValueError, match="multiple of 4"):
        build_fabric("rail_optimized", 64, su_nodes=4, rails=1, switch_ports=16,
                     hall_nodes=[30, 34])
    with pytest.raises(ValueError, match="sum to"):
        build_fabric("rail_optimized", 64, su_nodes=4, rails=1, hall_nodes=[32, 16])


# ------------------------------------------------------------ the scenario's fabric section

BLUE_VELA = Path(__file__).resolve().parents[2] / "scenarios" / "blue_vela.yaml"


def _problems(sets):
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BLUE_VELA, sets)
    return str(exc.value)


def test_a_fabric_too_small_for_the_scenario_is_refused_naming_its_limit():
    # Blue Vela's 256 nodes on 8-port switches with SUs of 4: three tiers hold 8 pods x 4
    # leaves x 4 nodes = 128; on 16-port switches an SU of 32 does not fit a leaf at all
    msg = _problems(["fabric.switch_ports=8", "fabric.su_nodes=4"])
    assert "fabric.switch_ports" in msg and "holds at most 128 nodes" in msg and "256" in msg
    msg = _problems(["fabric.switch_ports=16"])
    assert "fabric.switch_ports" in msg and "16 ports hold none" in msg
    msg = _problems(["fabric.kind=fat_tree", "fabric.planes=2"])
    assert "fabric.planes" in msg


def test_fabric_problems_with_a_site_tier_check_every_hall():
    f = Fabric(kind="rail_optimized", su_nodes=4, rails=1, switch_ports=8,
               site_tier={"oversubscription": 2.0})
    assert fabric_problems(f, [128, 128]) == []           # two halls at the 128-node limit
    text = str(fabric_problems(f, [130, 126]))
    assert "multiple of 4" in text and "130 nodes" in text
    assert fabric_problems(Fabric(kind="clos", su_nodes=6), [10_000]) == []  # modular spines
    # without a site tier the halls share one fabric: 256 nodes exceed 128
    assert "at most 128" in str(fabric_problems(f.model_copy(update={"site_tier": None}),
                                                [128, 128]))


def test_the_engine_builds_one_fabric_per_hall_with_a_site_tier():
    s = twin.load_scenario(BLUE_VELA, ["fabric.site_tier.oversubscription=2"])
    g = build_scenario_fabric(s.fabric, [128, 128], 8)
    lay = g.graph["layout"]
    assert lay.hall_nodes == (128, 128) and len(lay.planes) == 2 * s.fabric.rails
    # a job across the two halls climbs the site tier: 2 x 2 tiers + 2 cables
    assert placement_hops(g, [0, 200])["max_hops"] == 6
    one = build_scenario_fabric(s.fabric.model_copy(update={"site_tier": None}), [128, 128], 8)
    assert len(one.graph["layout"].planes) == s.fabric.rails
