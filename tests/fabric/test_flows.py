"""Max-min fair sharing between jobs, static ECMP hashing against adaptive routing,
re-routing around failures."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.fabric import bottleneck_bandwidth_gbps, build_fabric, link_loads, shared_bandwidths_gbps
from twin.fabric.flows import fair_share_bandwidths_gbps, max_min_fractions

POD = build_fabric("rail_optimized", 128)


def test_max_min_by_hand():
    # Bertsekas & Gallager's example: A and B share link 0 (capacity 1), B and C link 1
    # (capacity 2): A = B = 1/2 on link 0; C takes what B leaves on link 1, capped at 1
    x = max_min_fractions(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), [1.0, 2.0])
    assert x == pytest.approx([0.5, 0.5, 1.0])
    # a dead link stops its jobs, the others go on
    x = max_min_fractions(np.array([[1.0, 0.0], [0.0, 1.0]]), [0.0, 5.0])
    assert x == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError):
        max_min_fractions(np.ones((2, 2)), [1.0, -1.0])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_max_min_is_feasible_and_every_slowed_job_has_a_fair_bottleneck(J, L, seed):
    rng = np.random.default_rng(seed)
    D = rng.random((J, L)) * (rng.random((J, L)) < 0.7)
    cap = rng.random(L) * 2.0
    x = max_min_fractions(D, cap)
    assert np.all(x >= -1e-12) and np.all(x <= 1.0 + 1e-12)
    assert np.all(D.T @ x <= cap * (1 + 1e-9) + 1e-12)  # feasible
    # max-min optimality (Bertsekas & Gallager, 6.5.2): a job below its demand has a
    # saturated link on which no other job gets more
    load = D.T @ x
    for j in range(J):
        if x[j] < 1 - 1e-9 and D[j].any():
            links = np.flatnonzero(D[j] > 0)
            ok = [l_ for l_ in links if load[l_] >= cap[l_] * (1 - 1e-7)
                  and x[j] >= x[D[:, l_] > 0].max() - 1e-9]
            assert ok, (j, x, D, cap)


def test_max_min_never_starves_a_job_below_its_proportional_share():
    g = build_fabric("rail_optimized", 64, rails=1, oversubscription=4.0)
    big = np.r_[0:24, 32:56]
    small = np.r_[24:28, 56:60]
    jobs = [big, small]
    mm = fair_share_bandwidths_gbps(g, jobs, pattern="all_to_all")
    pr = fair_share_bandwidths_gbps(g, jobs, pattern="all_to_all", policy="proportional")
    assert mm["bandwidth_gbps"].min() >= pr["bandwidth_gbps"].min() - 1e-9
    # the proportional rule is the shared_bandwidths_gbps of the engine
    assert pr["bandwidth_gbps"] == pytest.approx(shared_bandwidths_gbps(g, jobs,
                                                                        pattern="all_to_all"))
    assert mm["max_link_utilization"] <= 1.0 + 1e-9


def test_jobs_on_separate_leaves_do_not_slow_each_other():
    r = fair_share_bandwidths_gbps(POD, [np.arange(0, 32), np.arange(32, 64)],
                                   pattern="all_to_all")
    assert r["bandwidth_gbps"] == pytest.approx([3200.0, 3200.0])
    assert r["slowdown"] == pytest.approx([1.0, 1.0])


def test_two_jobs_on_one_oversubscribed_uplink_set_split_it_evenly():
    # 4:1 oversubscribed leaves, two identical all-to-all jobs interleaved on both leaves:
    # each leaf's 8 uplinks are shared evenly, each job gets half of what it had alone
    g = build_fabric("rail_optimized", 64, rails=1, oversubscription=4.0)
    a = np.r_[0:16, 32:48]
    b = np.r_[16:32, 48:64]
    alone = bottleneck_bandwidth_gbps(g, a, pattern="all_to_all")
    r = fair_share_bandwidths_gbps(g, [a, b], pattern="all_to_all")
    assert r["bandwidth_gbps"] == pytest.approx([alone / 2] * 2, rel=0.02)


def test_failures_reroute_and_lower_the_shared_bandwidth():
    jobs = [np.arange(0, 128, 2), np.arange(1, 128, 2)]
    base = fair_share_bandwidths_gbps(POD, jobs, pattern="all_to_all")
    # half the spines of rail 0 (the pod has 2 per rail, 16 cables to each leaf)
    dead = fair_share_bandwidths_gbps(POD, jobs, pattern="all_to_all",
                                      failed_switches=["spine:p0:0:0"])
    assert np.all(dead["bandwidth_gbps"] < base["bandwidth_gbps"])
    assert np.all(dead["bandwidth_gbps"] > 0)  # re-routed over the other spines
    # a leaf switch down: its nodes' rail-0 NICs are gone, their traffic moves to the
    # other 7 NICs (PXN) at 7/8 of the rate; nobody is cut off
    leaf = fair_share_bandwidths_gbps(POD, jobs, pattern="ring", failed_switches=["leaf:p0:0"])
    assert leaf["bandwidth_gbps"] == pytest.approx([3200.0 * 7 / 8] * 2)


def _shared_pod():
    # 8 jobs of 32 nodes placed at random on a 256-node rail-optimised fabric: their
    # rings cross leaves everywhere and share every leaf's spine bundles
    g = build_fabric("rail_optimized", 256)
    return g, np.array_split(np.random.default_rng(3).permutation(256), 8)


def test_static_ecmp_hashing_collides_where_adaptive_routing_spreads():
    g, jobs = _shared_pod()
    adaptive = fair_share_bandwidths_gbps(g, jobs)["bandwidth_gbps"]
    assert adaptive == pytest.approx([3200.0] * 8)
    bw = {q: fair_share_bandwidths_gbps(g, jobs, routing="ecmp", qps=q)["bandwidth_gbps"]
          for q in (1, 4, 16, 4096)}
    # one flow per connection: ~32 flows hashed onto each leaf's 32 uplink cables, the
    # busiest cable carries several (balls into bins) and sets every job's pace
    assert bw[1].max() < 0.35 * 3200
    # more queue pairs per connection: finer flows, fewer collisions, monotone
    assert np.all(bw[1] <= bw[4]) and np.all(bw[4] <= bw[16]) and np.all(bw[16] <= bw[4096])
    assert bw[4096] == pytest.approx(adaptive, rel=0.02)
    # the same seed gives the same answer; another seed another draw
    again = fair_share_bandwidths_gbps(g, jobs, routing="ecmp", qps=4)["bandwidth_gbps"]
    assert np.array_equal(again, bw[4])


def test_hashed_flows_conserve_traffic_at_the_spines():
    g, jobs = _shared_pod()
    for routing in ("adaptive", "ecmp"):
        ld = link_loads(g, jobs[0], routing=routing, pattern="all_to_all", seed=2, qps=64)
        names = ld.names
        up = sum(x for a, b, x in zip(ld.src, ld.dst, ld.load_gbps, strict=True)
                 if names[a].startswith("leaf") and names[b].startswith("spine"))
        down = sum(x for a, b, x in zip(ld.src, ld.dst, ld.load_gbps, strict=True)
                   if names[a].startswith("spine") and names[b].startswith("leaf"))
        # adaptive: exact; ECMP: the cable-collision excess is added on both sides
        if routing == "adaptive":
            assert up == pytest.approx(down, rel=1e-9) and up > 0
        else:
            assert up > 0 and down > 0


def test_bad_routing_and_policy_are_refused():
    with pytest.raises(ValueError, match="routing"):
        link_loads(POD, np.arange(8), routing="random")
    with pytest.raises(ValueError, match="policy"):
        fair_share_bandwidths_gbps(POD, [np.arange(8)], policy="greedy")
    with pytest.raises(ValueError, match="patterns"):
        fair_share_bandwidths_gbps(POD, [np.arange(8)], pattern=["ring", "ring"])


# ------------------------------------------------ vectorised ECMP = flow-by-flow hashing


def _flow_by_flow_hash_counts(rng, n, p):
    """Reference: each flow draws once and is compared against every cumulative share."""
    n = np.asarray(n, dtype=np.int64)
    k = p.shape[1]
    if k == 1:
        return n[:, None].astype(float)
    row = np.repeat(np.arange(n.size), n)
    cum = np.cumsum(p, axis=1)
    draw = rng.random(row.size) * cum[row, -1]
    path = np.minimum((draw[:, None] >= cum[row, :-1]).sum(axis=1), k - 1)
    return np.bincount(row * k + path, minlength=n.size * k).reshape(n.size, k).astype(float)


def _flow_by_flow_cable_excess(rng, flows, load, M):
    """Reference: each flow draws its cable, per-cable counts by bincount."""
    ni, u = M.shape
    flows = np.rint(flows).ravel().astype(np.int64)
    load = load.ravel()
    m = np.maximum(M.ravel(), 1.0)
    mmax = int(max(1.0, M.max()))
    if flows.sum() == 0 or mmax == 1:
        return np.zeros((ni, u))
    bundle = np.repeat(np.arange(flows.size), flows)
    cable = np.minimum((rng.random(bundle.size) * m[bundle]).astype(np.int64), mmax - 1)
    per_cable = np.bincount(bundle * mmax + cable, minlength=flows.size * mmax)
    busiest = per_cable.reshape(flows.size, mmax).max(axis=1)
    mean_rate = np.divide(load, flows, out=np.zeros_like(load), where=flows > 0)
    return np.maximum(busiest * mean_rate * m - load, 0.0).reshape(ni, u)


def _random_fabric(kind_i, n, knob, seed):
    kind = ("rail_optimized", "clos", "fat_tree")[kind_i]
    kw = {"rail_optimized": dict(su_nodes=(4, 8, 16)[knob % 3], rails=(1, 2, 4)[knob // 3 % 3],
                                 switch_ports=(16, 32, 64)[knob // 9 % 3]),
          "clos": dict(su_nodes=4, rails=2, spines=(2, 3, 4)[knob % 3]),
          "fat_tree": dict(switch_ports=(8, 12, 16)[knob % 3], rails=1,
                           oversubscription=(1.0, 3.0)[knob // 3 % 2])}[kind]
    try:
        return build_fabric(kind, n, **kw)
    except ValueError:
        return None


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2), st.integers(8, 160), st.integers(0, 26), st.integers(1, 5),
       st.integers(0, 3), st.sampled_from(["ring", "all_to_all"]), st.integers(0, 2**31 - 1))
def test_vectorised_ecmp_solve_equals_flow_by_flow_hashing(kind_i, n, knob, n_jobs, n_fail,
                                                         pattern, seed):
    """The batched, search-based ECMP hashing takes the same draws in the same order as
    a flow-by-flow loop: the fair shares are the loop's (same seed), with and without
    failures, on two- and three-tier fabrics."""
    import twin.fabric.ecmp as ecmp
    import twin.fabric.routing as routing

    g = _random_fabric(kind_i, n, knob, seed)
    if g is None:
        return
    rng = np.random.default_rng(seed)
    jobs = np.array_split(rng.permutation(n), n_jobs)
    edges = [(a, b) for a, b, d in g.edges(data=True) if d["tier"] != "node-leaf"]
    failed = [edges[i] for i in rng.choice(len(edges), size=min(n_fail, len(edges)),
                                           replace=False)] if edges else []
    fast = fair_share_bandwidths_gbps(g, jobs, pattern=pattern, routing="ecmp", seed=seed,
                                      failed_links=failed)
    saved = ecmp._hash_counts, ecmp._cable_excess, routing._batchable
    try:
        ecmp._hash_counts = _flow_by_flow_hash_counts
        ecmp._cable_excess = _flow_by_flow_cable_excess
        routing._batchable = lambda *a: False
        slow = fair_share_bandwidths_gbps(g, jobs, pattern=pattern, routing="ecmp", seed=seed,
                                          failed_links=failed)
    finally:
        ecmp._hash_counts, ecmp._cable_excess, routing._batchable = saved
    for key in fast:
        assert np.allclose(fast[key], slow[key], rtol=1e-9, atol=1e-9), key


def test_the_1024_node_bench_case_is_the_flow_by_flow_answer():
    import twin.fabric.ecmp as ecmp
    import twin.fabric.routing as routing

    g = build_fabric("rail_optimized", 1024)
    jobs = np.array_split(np.random.default_rng(1).permutation(1024), 20)
    fast = fair_share_bandwidths_gbps(g, jobs, pattern="all_to_all", routing="ecmp")
    saved = ecmp._hash_counts, ecmp._cable_excess, routing._batchable
    try:
        ecmp._hash_counts = _flow_by_flow_hash_counts
        ecmp._cable_excess = _flow_by_flow_cable_excess
        routing._batchable = lambda *a: False
        slow = fair_share_bandwidths_gbps(g, jobs, pattern="all_to_all", routing="ecmp")
    finally:
        ecmp._hash_counts, ecmp._cable_excess, routing._batchable = saved
    assert fast["fraction"] == pytest.approx(slow["fraction"], rel=1e-12)
    # hashing costs these jobs a quarter or more of their all-to-all rate
    assert np.all(fast["fraction"] < 0.9) and np.all(fast["fraction"] > 0.3)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2), st.integers(8, 120), st.integers(0, 26), st.integers(2, 5),
       st.sampled_from(["ring", "all_to_all"]), st.integers(0, 2**31 - 1))
def test_fair_shares_are_max_min_over_every_link_nic_cables_included(kind_i, n, knob, n_jobs,
                                                                    pattern, seed):
    """The solver folds each job's NIC cables into a per-job cap; the definition keeps
    them as links: progressive filling over the full (jobs x links) demand gives the same
    shares."""
    g = _random_fabric(kind_i, n, knob, seed)
    if g is None:
        return
    jobs = np.array_split(np.random.default_rng(seed).permutation(n), n_jobs)
    got = fair_share_bandwidths_gbps(g, jobs, pattern=pattern)["fraction"]
    loads = [link_loads(g, j, pattern=pattern) for j in jobs]
    links = sorted({(a, b) for ld in loads for a, b in zip(ld.src.tolist(), ld.dst.tolist(),
                                                           strict=True)})
    col = {k: i for i, k in enumerate(links)}
    D = np.zeros((len(jobs), len(links)))
    cap = np.zeros(len(links))
    for j, ld in enumerate(loads):
        for a, b, x, c in zip(ld.src.tolist(), ld.dst.tolist(), ld.load_gbps, ld.capacity_gbps,
                              strict=True):
            D[j, col[(a, b)]] += x
            cap[col[(a, b)]] = c
    want = np.minimum(max_min_fractions(D, cap), [ld.fraction() for ld in loads])
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
