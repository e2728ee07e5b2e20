"""Per-feed limits and each sample's live feeds (audit findings 3 and 14, the physics side).

Figures by hand: Blue Vela's feeds are 1,600 kW each, UPS bypassed, ``redundancy: none``,
and its chain puts the mechanical plant (legacy law at the 33 C design day: 0.3685 W per W
of heat with COP 4.5 at 25 C and 5 % fans and pumps) and 80 kW of house loads on the
switchboards, half on each feed. A feed reaches 1,600 kW at worst case when
``P / 2 + (0.3685 P + 80 kW) / 2 = 1,600 kW``: ``P = 1,560 / 0.68425 = 2,279.87 kW``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import twin
from twin.power.chain import feed_it_limits_w, feed_mechanical_w, split_mechanical_w
from twin.power.facility import cooling_power_w
from twin.power.tree import build_power_tree, evaluate_power_tree

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
VELA = ROOT / "scenarios" / "vela.yaml"
#: the hand figures' feeds, pinned (the scenario's own may change)
FEEDS = ["site.power.feeds.0.capacity_kw=1600", "site.power.feeds.1.capacity_kw=1600"]


def test_mechanical_overhead_at_the_design_day_is_the_legacy_law():
    assert float(cooling_power_w(1e6, 33.0, chiller_cop_at_25c=4.5, fan_pump_fraction=0.05)) == pytest.approx(
        368_500.0, rel=1e-12)


def test_blue_vela_feed_limit_by_hand():
    lim = feed_it_limits_w(twin.load_scenario(BV, [*FEEDS, "site.power.ups.mode=bypass"]))
    np.testing.assert_allclose(lim, [1_560e3 / 0.68425] * 2, rtol=1e-12)       # 2,279.87 kW
    # unequal feeds: A binds at (1,000 - 40) / 0.68425 = 1,403.0 kW
    lim = feed_it_limits_w(twin.load_scenario(BV, ["site.power.feeds.0.capacity_kw=1000", "site.power.ups.mode=bypass",
                                                   "site.power.feeds.1.capacity_kw=2200"]))
    np.testing.assert_allclose(lim, [960e3 / 0.68425, 2_160e3 / 0.68425], rtol=1e-12)


def test_feed_limit_without_mechanical_on_the_feeds():
    # the chain keeps the plant off the switchboards: a feed carries half of the IT
    s = twin.load_scenario(BV, ["site.power.chain.mechanical.carried_by=[utility, generators]",
                                "site.power.ups.mode=bypass", *FEEDS])
    np.testing.assert_allclose(feed_it_limits_w(s), [3_200e3, 3_200e3], rtol=1e-12)
    # Vela: 2N, no chain: each feed carries everything, limited by its 1,200 kW UPS share
    np.testing.assert_allclose(feed_it_limits_w(twin.load_scenario(VELA)), [1_200e3, 1_200e3])
    s = twin.load_scenario(VELA, ["site.power.ups.capacity_kw=1000"])
    np.testing.assert_allclose(feed_it_limits_w(s), [500e3, 500e3])


def test_the_ups_carries_the_it_side_only():
    # double conversion, 2 x 1,000 kW: the UPS binds at 2 x 1,000 kW of IT; with 2 x 2,500 kW
    # the feed binds (the cooling is on the switchboards, not behind the UPS)
    sets = ["site.power.ups.mode=double_conversion", *FEEDS]
    s = twin.load_scenario(BV, [*sets, "site.power.ups.capacity_kw=2000"])
    np.testing.assert_allclose(feed_it_limits_w(s), [2_000e3, 2_000e3], rtol=1e-12)
    s = twin.load_scenario(BV, [*sets, "site.power.ups.capacity_kw=5000"])
    np.testing.assert_allclose(feed_it_limits_w(s), [1_560e3 / 0.68425] * 2, rtol=1e-12)


def test_split_mechanical_series_and_survivor_check_agree():
    s = twin.load_scenario(BV)
    up = np.array([[True, True], [True, False], [False, True]])
    cool = np.array([600e3, 600e3, 300e3])
    got = split_mechanical_w(s, cool, up)
    np.testing.assert_allclose(got, [[340e3, 340e3], [340e3, 0.0], [0.0, 190e3]])     # (cool + 80 kW) / 2
    # the feed-loss survivor check uses the same split of the legacy law's power
    legacy = float(cooling_power_w(1e6, 30.0, chiller_cop_at_25c=4.5, fan_pump_fraction=0.05))
    np.testing.assert_allclose(feed_mechanical_w(s, 1e6, 30.0, up[1]), split_mechanical_w(s, legacy, up[1]))
    off = twin.load_scenario(BV, ["site.power.chain.mechanical.carried_by=[utility, generators]"])
    assert not split_mechanical_w(off, cool, up).any()


def _tree():
    # 4 racks on 2 RPPs, each RPP split over feeds A and B (as the engine builds it)
    return build_power_tree(np.array([0, 0, 1, 1]), np.full(2, 100e3), np.array([300e3, 300e3]),
                            "double_conversion", 300e3)


def test_series_routed_with_each_samples_live_feeds():
    tree = _tree()
    x = np.array([[20e3, 20e3, 30e3, 30e3]] * 4)
    up = np.array([[True, True], [False, True], [False, True], [True, True]])
    flow = evaluate_power_tree(tree, x, up)
    both = evaluate_power_tree(tree, x[0])
    alone = evaluate_power_tree(tree, x[1], up[1])
    for i in (0, 3):
        np.testing.assert_allclose(flow.feed_w[i], both.feed_w)
        np.testing.assert_allclose(flow.ups_output_w[i], both.ups_output_w)
    for i in (1, 2):
        np.testing.assert_allclose(flow.feed_w[i], alone.feed_w)
        assert flow.feed_w[i, 0] == 0.0 and flow.ups_output_w[i, 0] == 0.0
        # the survivor's UPS carries all 100 kW of racks and the RPP losses
        assert flow.ups_output_w[i, 1] == pytest.approx(both.ups_output_w.sum(), rel=1e-12)
        assert flow.ups_load_fraction[i, 1] > 0.33
    # the same IT either way; the losses differ (one UPS at twice the load)
    np.testing.assert_allclose(flow.it_w, 100e3)
    assert flow.ups_loss_w[1].sum() != pytest.approx(both.ups_loss_w.sum(), rel=1e-6)
    # all feeds up everywhere: the plain evaluation, bit for bit
    same = evaluate_power_tree(tree, x, np.ones((4, 2), bool))
    np.testing.assert_array_equal(same.feed_w, evaluate_power_tree(tree, x).feed_w)


def test_series_feed_up_shape_is_checked():
    with pytest.raises(ValueError, match="feed_up must be"):
        evaluate_power_tree(_tree(), np.zeros((3, 4)), np.ones((2, 2), bool))
