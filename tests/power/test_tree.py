"""Power tree: conservation, an independent per-rack loop, feed loss, admission, caps."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.phases import Phase
from twin.power.electrical import (
    breaker_continuous_limit_w,
    breaker_trip_time_s,
    transformer_loss_w,
    ups_loss_w,
)
from twin.power.facility import cooling_power_w
from twin.power.node import (
    gpu_clock_fraction_at_power,
    node_power_w,
    node_worst_case_w,
)
from twin.power.tree import (
    build_power_tree,
    evaluate_power_tree,
    facility_it_capacity_w,
    racks_admitted,
)

from .conftest import XE9680_H100, XE9680_PSU_CAPACITY_W

HW = dict(XE9680_H100, psu_capacity_w=XE9680_PSU_CAPACITY_W)
RPP_400A = float(breaker_continuous_limit_w(400, 415, 3, power_factor=0.95))  # 218.6 kW


def two_n_tree(n_racks=32, racks_per_rpp=4, mode="double_conversion", ups_w=400e3, feed_w=500e3):
    """Classic 2N: rack cord A on RPP 2k (feed A), cord B on RPP 2k+1 (feed B)."""
    pair = np.arange(n_racks) // racks_per_rpp
    rack_rpp = np.stack([2 * pair, 2 * pair + 1], axis=1)
    n_rpp = 2 * (pair.max() + 1)
    return build_power_tree(rack_rpp, np.full(n_rpp, RPP_400A), [feed_w, feed_w], mode, ups_w,
                            rpp_feed=np.arange(n_rpp) % 2)


def loop_reference(tree, rack_w, feed_up):
    """Independent per-rack / per-RPP loop (slow) for cross-checking the vectorised flow."""
    n_p, n_f = tree.rpp_feed_share.shape
    rpp = np.zeros(n_p)
    for r in range(tree.n_racks):
        live = []
        for s in range(tree.rack_rpp.shape[1]):
            p = tree.rack_rpp[r, s]
            if any(tree.rpp_feed_share[p, f] > 0 and feed_up[f] for f in range(n_f)):
                live.append(s)
        tot = sum(tree.rack_share[r, s] for s in live)
        for s in live:
            rpp[tree.rack_rpp[r, s]] += rack_w[r] * tree.rack_share[r, s] / tot
    ups_out = np.zeros(n_f)
    for p in range(n_p):
        pin = rpp[p] + tree.rpp_loss_fraction * rpp[p] ** 2 / tree.rpp_rating_w[p]
        fs = [f for f in range(n_f) if tree.rpp_feed_share[p, f] > 0 and feed_up[f]]
        tot = sum(tree.rpp_feed_share[p, f] for f in fs)
        for f in fs:
            ups_out[f] += pin * tree.rpp_feed_share[p, f] / tot
    feed = np.zeros(n_f)
    for f in range(n_f):
        if not feed_up[f]:
            continue
        u = ups_out[f] + float(ups_loss_w(ups_out[f], tree.ups_capacity_w[f], tree.ups_mode))
        feed[f] = u + float(transformer_loss_w(u, tree.feed_capacity_w[f],
                                               no_load_loss_fraction=tree.feed_no_load_loss_fraction,
                                               load_loss_fraction=tree.feed_load_loss_fraction))
    return rpp, feed


@pytest.mark.parametrize("feed_up", [[True, True], [True, False], [False, True]])
def test_vectorised_flow_matches_loop(feed_up):
    rng = np.random.default_rng(0)
    tree = two_n_tree()
    rack_w = rng.uniform(5e3, 17e3, tree.n_racks)
    flow = evaluate_power_tree(tree, rack_w, feed_up=feed_up)
    rpp, feed = loop_reference(tree, rack_w, feed_up)
    np.testing.assert_allclose(flow.rpp_w, rpp, rtol=1e-12)
    np.testing.assert_allclose(flow.feed_w, feed, rtol=1e-12)


def test_energy_balance_with_cooling_over_a_day():
    # utility energy = IT + RPP + UPS + transformer losses; facility = that + cooling (0.1 %)
    rng = np.random.default_rng(1)
    tree = two_n_tree(mode="double_conversion")
    t = np.arange(0, 86400, 300.0)
    phases = rng.choice([Phase.IDLE, Phase.TRAINING, Phase.COMMUNICATION, Phase.CHECKPOINT],
                        size=(t.size, tree.n_racks * 2))
    node_w = node_power_w(phases, 700.0, 25.0, **HW)
    rack_w = node_w.reshape(t.size, tree.n_racks, 2).sum(axis=2) + 900.0  # + network share
    flow = evaluate_power_tree(tree, rack_w)
    outdoor = 14.0 + 8.0 * np.cos(2 * np.pi * (t / 86400 - 0.6))
    heat = flow.utility_w  # all IT and distribution loss ends up as heat indoors
    cooling = cooling_power_w(heat, outdoor)
    dt = 300.0
    e_util = np.sum(flow.feed_w) * dt
    e_it = np.sum(flow.rack_w) * dt
    e_loss = sum(np.sum(v) for v in flow.loss_by_stage_w.values()) * dt
    e_cool = np.sum(cooling) * dt
    assert e_util == pytest.approx(e_it + e_loss, rel=1e-3)
    assert e_util + e_cool == pytest.approx(e_it + e_loss + e_cool, rel=1e-3)
    # stage by stage conservation: rack power arrives at the RPPs, RPP input at the UPSs
    np.testing.assert_allclose(flow.rpp_w.sum(axis=1), flow.it_w, rtol=1e-12)
    np.testing.assert_allclose(flow.ups_output_w.sum(axis=1),
                               (flow.rpp_w + flow.rpp_loss_w).sum(axis=1), rtol=1e-12)
    # PUE between 1.1 and 1.6 for this plant and weather
    p = (flow.utility_w + cooling) / flow.it_w
    assert 1.1 < p.min() and p.max() < 1.6 and np.ptp(p) > 0.01


def test_losing_one_feed_2n_survivor_holds_only_within_one_feed():
    tree = two_n_tree(n_racks=32, ups_w=400e3, feed_w=500e3)
    # 32 racks x 11 kW = 352 kW: each feed carries ~half; after losing A, B carries all
    rack_w = np.full(32, 11e3)
    both = evaluate_power_tree(tree, rack_w)
    one = evaluate_power_tree(tree, rack_w, feed_up=[False, True])
    assert both.holds and one.holds
    assert one.feed_w[0] == 0.0 and one.ups_output_w[0] == 0.0
    assert one.it_w == pytest.approx(352e3) and not one.rack_dropped.any()
    # B's RPPs now carry the whole racks: 4 x 11 kW = 44 kW each (double)
    np.testing.assert_allclose(one.rpp_w[1::2], 44e3)
    np.testing.assert_allclose(one.rpp_w[0::2], 0.0)
    assert one.ups_load_fraction[1] == pytest.approx(2 * both.ups_load_fraction[1], rel=1e-3)
    # 32 x 14 kW = 448 kW exceeds the 400 kW UPS of a single path: fine on two feeds, not on one
    rack_w = np.full(32, 14e3)
    assert evaluate_power_tree(tree, rack_w).holds
    one = evaluate_power_tree(tree, rack_w, feed_up=[True, False])
    assert not one.holds and one.ups_ok == np.False_ and one.feed_ok
    # losing both: every rack dropped
    none = evaluate_power_tree(tree, rack_w, feed_up=[False, False])
    assert none.rack_dropped.all() and none.utility_w == 0.0 and not none.holds


def test_single_corded_racks_on_a_dead_feed_drop():
    rack_rpp = np.array([0, 0, 1, 1])
    tree = build_power_tree(rack_rpp, [RPP_400A, RPP_400A], [1e6, 1e6], "bypass", 1e6,
                            rpp_feed=[0, 1])
    flow = evaluate_power_tree(tree, np.full(4, 10e3), feed_up=[True, False])
    np.testing.assert_array_equal(flow.rack_dropped, [False, False, True, True])
    assert flow.it_w == 20e3 and not flow.holds


def test_bypass_lifts_ups_limit_and_removes_its_loss():
    # Blue Vela-like: 2 x 2 MW feeds, 1.65 MW UPS per path. 2N with UPS: 1.65 MW usable;
    # bypass and no main redundancy: 4 MW (the reference's "about +70 %" came from this)
    rpp = np.full(20, 250e3)
    dc = build_power_tree(np.arange(100) // 5, rpp, [2e6, 2e6], "double_conversion", 1.65e6)
    byp = build_power_tree(np.arange(100) // 5, rpp, [2e6, 2e6], "bypass", 1.65e6)
    assert facility_it_capacity_w(dc, "2N") == 1.65e6
    assert facility_it_capacity_w(byp, "none") == 4e6
    assert facility_it_capacity_w(byp, "2N") == 2e6
    assert facility_it_capacity_w(dc, "none") / facility_it_capacity_w(dc, "2N") == 2.0
    rack_w = np.full(100, 16e3)  # 1.6 MW
    f_dc, f_byp = evaluate_power_tree(dc, rack_w), evaluate_power_tree(byp, rack_w)
    assert f_byp.ups_loss_w.sum() == 0.0
    # 2 x 800 kW on 1.65 MW UPSs (48 % load): modern eta 0.965 -> ~58 kW of UPS loss
    assert f_dc.ups_loss_w.sum() == pytest.approx(2 * float(ups_loss_w(
        f_dc.ups_output_w[0], 1.65e6, "double_conversion")))
    assert 55e3 < f_dc.ups_loss_w.sum() < 61e3
    # the legacy transformer-based curve (eta 0.913 at that load) loses ~150 kW
    legacy = build_power_tree(np.arange(100) // 5, rpp, [2e6, 2e6], "double_conversion", 1.65e6,
                              ups_curve="legacy_transformer")
    assert 140e3 < evaluate_power_tree(legacy, rack_w).ups_loss_w.sum() < 160e3
    assert f_dc.utility_w - f_byp.utility_w == pytest.approx(f_dc.ups_loss_w.sum(), rel=0.02)


def test_admission_against_brute_force_greedy():
    rng = np.random.default_rng(5)
    wc = rng.uniform(10e3, 40e3, 60)
    rack_rpp = rng.integers(0, 6, 60)
    lim = np.full(6, 150e3)
    avail = 700e3
    got = racks_admitted(wc, avail, rack_rpp, lim, policy="stop")
    used, per = 0.0, np.zeros(6)
    exp = np.zeros(60, bool)
    for r in range(60):
        if used + wc[r] > avail or per[rack_rpp[r]] + wc[r] > lim[rack_rpp[r]]:
            break
        used += wc[r]
        per[rack_rpp[r]] += wc[r]
        exp[r] = True
    np.testing.assert_array_equal(got, exp)


@settings(max_examples=40, deadline=None)
@given(
    n_racks=st.integers(1, 80),
    racks_per_rpp=st.integers(1, 12),
    breaker_a=st.sampled_from([100, 150, 225, 400]),
    avail_kw=st.floats(50.0, 2000.0),
    cap_w=st.floats(200.0, 700.0),
    seed=st.integers(0, 2**16),
    policy=st.sampled_from(["stop", "skip"]),
    two_cords=st.booleans(),
)
def test_a_plan_that_respects_limits_never_trips(n_racks, racks_per_rpp, breaker_a, avail_kw,
                                                  cap_w, seed, policy, two_cords):
    """Admit racks at their worst case; then any real operating point stays within limits."""
    rng = np.random.default_rng(seed)
    n_rpp = -(-n_racks // racks_per_rpp)
    lim_w = float(breaker_continuous_limit_w(breaker_a, 415, 3, power_factor=0.95))
    rack_wc = 2 * node_worst_case_w(cap_w, **HW) + 900.0
    if two_cords:
        pair = np.arange(n_racks) // racks_per_rpp
        rack_rpp = np.stack([2 * pair, 2 * pair + 1], axis=1)
        lim = np.full(2 * n_rpp, lim_w)
        fshare = dict(rpp_feed=np.arange(2 * n_rpp) % 2)
    else:
        rack_rpp = np.arange(n_racks) // racks_per_rpp
        lim = np.full(n_rpp, lim_w)
        fshare = {}
    ok = racks_admitted(rack_wc, avail_kw * 1e3, rack_rpp, lim, policy=policy,
                        rpp_redundant=two_cords)
    tree = build_power_tree(rack_rpp, lim, [5e6, 5e6], "bypass", 5e6, **fshare)
    # random phases and inlets up to the 35 C design inlet
    ph = rng.integers(0, 7, (n_racks, 2))
    inlet = rng.uniform(18.0, 35.0, (n_racks, 2))
    rack_w = (node_power_w(ph, cap_w, inlet, **HW).sum(axis=1) + 900.0) * ok
    assert rack_w.sum() <= avail_kw * 1e3 + 1e-6
    for feed_up in ([True, True], [True, False]) if two_cords else ([True, True],):
        flow = evaluate_power_tree(tree, rack_w, feed_up=feed_up)
        assert flow.rpp_ok
        assert np.all(np.isinf(breaker_trip_time_s(flow.rpp_rating_fraction)))


def test_cap_admits_more_racks_at_lower_per_gpu_clock():
    # 24 RPPs of 400 A / 415 V (218.6 kW continuous at pf 0.95), 8 racks each, 2 XE9680 per
    # rack + 900 W network; facility budget 2.4 MW
    rack_rpp = np.arange(192) // 8
    lim = np.full(24, RPP_400A)
    budget = 2.4e6
    n = {}
    for cap in (700.0, 500.0, 400.0):
        wc = 2 * node_worst_case_w(cap, **HW) + 900.0
        n[cap] = racks_admitted(wc, budget, rack_rpp, lim, policy="skip").sum()
    # 700 W: worst case 2 x 9.52 kW + 0.9 = 19.94 kW -> 10 racks per RPP fit by breaker,
    # facility 2.4 MW / 19.94 kW = 120 racks; 500 W: 2 x 7.0 + 0.9 = 14.9 kW -> 161 racks
    assert n[700.0] == 120
    assert n[500.0] == int(2.4e6 // (2 * node_worst_case_w(500.0, **HW) + 900.0))
    assert n[500.0] > n[700.0] and n[400.0] >= n[500.0]
    f = gpu_clock_fraction_at_power(np.array([700.0, 500.0, 400.0]), gpu_tdp_w=700.0, gpu_idle_w=70.0)
    assert f[0] == 1.0 and f[1] < 1.0 and f[2] < f[1]
    # GPU-clock-seconds online (a throughput proxy for compute-bound steps) still grows
    assert n[500.0] * f[1] > n[700.0] * f[0]


def test_admission_with_racks_already_on():
    # 8 racks of 20 kW on 2 RPPs (4 each) of 50 kW, total 120 kW; racks 5 and 6 already on
    wc = np.full(8, 20e3)
    rack_rpp = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    powered = np.zeros(8, bool)
    powered[[5, 6]] = True
    got = racks_admitted(wc, 120e3, rack_rpp, np.array([50e3, 50e3]), powered=powered,
                         policy="skip")
    # RPP 1 has 40 kW committed -> no room; RPP 0 takes 2 racks (40 kW); total 80 kW
    np.testing.assert_array_equal(got, [1, 1, 0, 0, 0, 1, 1, 0])
    # tighter stage: 60 kW leaves room for one more rack
    got = racks_admitted(wc, 60e3, rack_rpp, np.array([50e3, 50e3]), powered=powered)
    np.testing.assert_array_equal(got, [1, 0, 0, 0, 0, 1, 1, 0])


def test_feed_loss_engages_the_xe9680_power_brake_and_the_survivor_holds():
    """End to end: feed A lost -> each XE9680 loses 3 of 6 PSUs -> brake -> B carries less."""
    from twin.power.node import gpu_power_brake_clock_fraction, psu_capacity_w, psus_without_input

    n_racks, nodes = 32, 2
    tree = two_n_tree(n_racks=n_racks, ups_w=400e3, feed_w=500e3)
    ph = np.full(n_racks * nodes, Phase.TRAINING)
    rack = lambda w: w.reshape(n_racks, nodes).sum(axis=1) + 900.0  # noqa: E731
    full = rack(node_power_w(ph, 700.0, 25.0, **HW))
    assert full.sum() == pytest.approx(32 * (2 * 8043 + 900), rel=2e-3)
    lost = psus_without_input(6, [False, True])
    assert lost == 3
    for red in ("3+3", "5+1"):
        assert gpu_power_brake_clock_fraction(lost, 6, red) == 0.5
    clock = gpu_power_brake_clock_fraction(lost, 6, "3+3")
    hw = dict(XE9680_H100, psu_capacity_w=float(psu_capacity_w(6, 2800.0, lost)))
    braked = rack(node_power_w(ph, 700.0, 25.0, clock_fraction=clock, **hw))
    # braked GPUs draw 70 + 0.95 * 630 / 8 = 144.8 W; DC 1158 + 1740 host + 43 fans (floor)
    # = 2941 W at 35 % of the 3 surviving PSUs (eta 0.95): 3.10 kW instead of 8.04 kW
    assert (braked[0] - 900.0) / 2 == pytest.approx(2941.0 / 0.95, rel=2e-3)
    # unbraked, the survivor would carry 544 kW on a 400 kW UPS; braked it holds
    assert not evaluate_power_tree(tree, full, feed_up=[False, True]).holds
    assert evaluate_power_tree(tree, braked, feed_up=[False, True]).holds


@settings(max_examples=40, deadline=None)
@given(
    n_racks=st.integers(1, 40),
    n_rpp=st.integers(1, 8),
    n_feeds=st.integers(1, 2),
    two_cords=st.booleans(),
    mode=st.sampled_from(["double_conversion", "eco", "bypass"]),
    seed=st.integers(0, 2**16),
    t=st.integers(1, 3),
)
def test_flow_conserves_energy_for_random_trees(n_racks, n_rpp, n_feeds, two_cords, mode, seed, t):
    rng = np.random.default_rng(seed)
    rack_rpp = rng.integers(0, n_rpp, (n_racks, 2 if two_cords else 1))
    fshare = rng.dirichlet(np.ones(n_feeds), n_rpp)
    tree = build_power_tree(rack_rpp, rng.uniform(50e3, 300e3, n_rpp),
                            rng.uniform(0.5e6, 2e6, n_feeds), mode, rng.uniform(0.3e6, 2e6),
                            rpp_feed_share=fshare)
    rack_w = rng.uniform(0.0, 30e3, (t, n_racks))
    feed_up = rng.random(n_feeds) < 0.7
    flow = evaluate_power_tree(tree, rack_w, feed_up=feed_up)
    delivered = rack_w * ~flow.rack_dropped
    np.testing.assert_allclose(flow.rpp_w.sum(axis=1), delivered.sum(axis=1), rtol=1e-9, atol=1e-6)
    losses = sum(flow.loss_by_stage_w.values())
    np.testing.assert_allclose(flow.utility_w, flow.it_w + losses, rtol=1e-12, atol=1e-6)
    assert np.all(flow.feed_w[:, ~feed_up] == 0.0)
    assert np.all(flow.utility_w >= flow.it_w - 1e-9)
    assert np.all(flow.building_heat_w <= flow.utility_w + 1e-9)
    # more IT load never lowers utility power
    more = evaluate_power_tree(tree, rack_w * 1.1, feed_up=feed_up)
    assert np.all(more.utility_w >= flow.utility_w - 1e-9)


def test_blue_vela_like_staged_plan():
    """Nine-month plan 1650 -> 2000 -> 2400 -> 2805 kW (+70 %, reference README, arXiv
    2407.05467), 128 racks of two XE9680 + 900 W network on 16 RPPs of 400 A / 415 V."""
    from twin.power.tree import staged_admission

    stages = np.array([1650e3, 2000e3, 2400e3, 2805e3])
    rack_rpp = np.arange(128) // 8
    lim = np.full(16, RPP_400A)
    avail = np.repeat([0, 0, 1, 2], 32)          # four waves of 32 racks
    wc = 2 * node_worst_case_w(700.0, **HW) + 900.0   # 19.94 kW at a 35 C inlet
    plan = staged_admission(stages, avail, wc, rack_rpp, lim)
    n = plan.sum(axis=1)
    # stage 0: 64 delivered (1276 kW fit); stage 1: 96 delivered, 2000/19.94 = 100 -> 96;
    # stage 2: 2400/19.94 = 120; stage 3: all 128 (2552 kW of 2805)
    np.testing.assert_array_equal(n, [64, 96, 120, 128])
    assert np.all(plan[1:] >= plan[:-1])            # nothing is shed on a rising plan
    for k in range(4):
        assert plan[k].sum() * wc <= stages[k]
        per = np.bincount(rack_rpp[plan[k]], minlength=16) * wc
        assert np.all(per <= lim)
    # a plan that falls back (a slipped stage) sheds from the end of the order
    back = staged_admission(np.array([2400e3, 1650e3]), np.zeros(128, int), wc, rack_rpp, lim)
    assert back[0].sum() == 120 and back[1].sum() == int(1650e3 // wc)
    np.testing.assert_array_equal(np.flatnonzero(back[1]), np.arange(back[1].sum()))
    # a 500 W per-GPU cap admits all 128 racks already at 2000 kW (14.9 kW worst case)
    wc500 = 2 * node_worst_case_w(500.0, **HW) + 900.0
    capped = staged_admission(stages, np.zeros(128, int), wc500, rack_rpp, lim)
    assert capped[0].sum() == int(1650e3 // wc500) and capped[1].sum() == 128
