"""Per-feed limits and each sample's live feeds (audit findings 3 and 14, the physics side).

Figures by hand: Blue Vela's feeds pinned at 1,600 kW each, the UPS too large to bind,
``redundancy: none``, and the mechanical plant and 80 kW of house loads on the switchboards
(``ON_SWB``; shipped Blue Vela keeps them off since 2 Dec 2026), half on each feed. The plant is the one the run uses (site.cooling_system:
physical; audit finding 5, re-pinned from the legacy law's 0.3685 W per W of heat): at the
33 C design day a dry cooler gives chiller COP 4.5 x 25/33, and 12 constant-speed CRAH fans
draw 150 kW at any load, so ``f(P) = F0 + M P`` with
``M = 0.01 + 1.01 (33/112.5 + 0.01) = 0.316367`` (pumps; chiller and heat rejection on the
coil load) and ``F0 = 150 kW x (1 + 33/112.5 + 0.01) = 195.5 kW`` (the fans and their
cooling), which counts with the house loads. A feed reaches 1,600 kW at worst case when
``P / 2 + (M P + F0 + 80 kW) / 2 = 1,600 kW``: ``P = 1,462.25 / 0.658183 = 2,221.65 kW``
(2,279.87 kW with the legacy law).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import twin
from twin.power.chain import feed_it_limits_w, feed_mechanical_w, split_mechanical_w
from twin.power.cooling_plant import scenario_cooling_power_w
from twin.power.facility import cooling_power_w
from twin.power.tree import build_power_tree, evaluate_power_tree

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
VELA = ROOT / "scenarios" / "vela.yaml"
#: the hand figures' feeds, pinned (the scenario's own may change)
FEEDS = ["site.power.feeds.0.capacity_kw=1600", "site.power.feeds.1.capacity_kw=1600"]
#: a UPS that never binds (instead of the bypass, which the chain's as-built mode may refuse)
BIG_UPS = "site.power.ups.capacity_kw=20000"
#: the plant on the switchboards (the feeds), which these hand figures are about; shipped Blue
#: Vela has it on its own mechanical boards since 2 Dec 2026 (helper HMP: a 2N survivor carries
#: the whole plant, which its 3000 A UPS switchboards could not with ~1.5 MW of IT)
ON_SWB = "site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]"
#: the physical plant at the 33 C design day, by hand (module docstring)
M = 0.01 + 1.01 * (33 / 112.5 + 0.01)
F0 = 150e3 * (1 + 33 / 112.5 + 0.01)
DEN = 0.5 + M / 2


def test_mechanical_overhead_at_the_design_day_is_the_legacy_law():
    assert float(cooling_power_w(1e6, 33.0, chiller_cop_at_25c=4.5, fan_pump_fraction=0.05)) == pytest.approx(
        368_500.0, rel=1e-12)


def test_the_physical_plant_at_the_design_day_by_hand():
    s = twin.load_scenario(BV)
    f = scenario_cooling_power_w(s, np.array([0.0, 1e6, 2.5e6]), 33.0)
    np.testing.assert_allclose(f, [F0, F0 + M * 1e6, F0 + M * 2.5e6], rtol=1e-12)
    assert F0 == pytest.approx(195_500.0, rel=1e-12) and M == pytest.approx(0.316367, abs=1e-6)


def test_blue_vela_feed_limit_by_hand():
    lim = feed_it_limits_w(twin.load_scenario(BV, [*FEEDS, BIG_UPS, ON_SWB]))
    # the plant's constant part is a house load: (1,600 - (80 + 195.5) / 2) / DEN = 2,221.65 kW;
    # a slope of f(1 MW) / 1 MW (the constant folded in) would give 2,075 kW
    np.testing.assert_allclose(lim, [(1_600e3 - (80e3 + F0) / 2) / DEN] * 2, rtol=1e-12)
    assert lim[0] == pytest.approx(2_221_650, abs=10)
    # unequal feeds: A binds at (1,000 - 137.75) / DEN = 1,310.0 kW
    lim = feed_it_limits_w(twin.load_scenario(BV, ["site.power.feeds.0.capacity_kw=1000", BIG_UPS, ON_SWB,
                                                   "site.power.feeds.1.capacity_kw=2200"]))
    np.testing.assert_allclose(lim, [(1_000e3 - 137.75e3) / DEN, (2_200e3 - 137.75e3) / DEN], rtol=1e-12)


def test_blue_vela_as_shipped_powers_all_its_racks():
    # re-pinned 2 Dec 2026 (helper HMP): the shipped plant is off the switchboards, so a feed at
    # the switchboards' 1,895.6 kW carries half the IT (3,791 kW) and its 1,520 kW UPS share
    # binds: 3,040 kW (was (1,895.6 - 137.75) / DEN = 2,670.8 kW with the plant on the feeds);
    # above the September plan (2,585 kW) and 128 racks at worst case either way
    s = twin.load_scenario(BV)
    lim = feed_it_limits_w(s)
    np.testing.assert_allclose(lim, [3_040e3] * 2, rtol=1e-12)
    on = feed_it_limits_w(twin.load_scenario(BV, [ON_SWB]))
    np.testing.assert_allclose(on, [(1_895.6e3 - 137.75e3) / DEN] * 2, rtol=1e-12)
    from twin.power.chain import rack_figures_w
    assert lim.min() >= max(128 * rack_figures_w(s)["worst_case_w"], 2_585e3)


def test_feed_limit_without_mechanical_on_the_feeds():
    # the chain keeps the plant off the switchboards: a feed carries half of the IT
    s = twin.load_scenario(BV, ["site.power.chain.mechanical.carried_by=[utility, generators]",
                                BIG_UPS, *FEEDS])
    np.testing.assert_allclose(feed_it_limits_w(s), [3_200e3, 3_200e3], rtol=1e-12)
    # Vela: 2N, no chain: each feed carries everything, limited by its 1,200 kW UPS share
    np.testing.assert_allclose(feed_it_limits_w(twin.load_scenario(VELA)), [1_200e3, 1_200e3])
    s = twin.load_scenario(VELA, ["site.power.ups.capacity_kw=1000"])
    np.testing.assert_allclose(feed_it_limits_w(s), [500e3, 500e3])


def test_the_ups_carries_the_it_side_only():
    # double conversion, 2 x 1,000 kW: the UPS binds at 2 x 1,000 kW of IT; with 2 x 2,500 kW
    # the feed binds (the cooling is on the switchboards, not behind the UPS)
    sets = ["site.power.ups.mode=double_conversion", *FEEDS, ON_SWB]
    s = twin.load_scenario(BV, [*sets, "site.power.ups.capacity_kw=2000"])
    np.testing.assert_allclose(feed_it_limits_w(s), [2_000e3, 2_000e3], rtol=1e-12)
    s = twin.load_scenario(BV, [*sets, "site.power.ups.capacity_kw=5000"])
    np.testing.assert_allclose(feed_it_limits_w(s), [(1_600e3 - 137.75e3) / DEN] * 2, rtol=1e-12)


def test_split_mechanical_series_and_survivor_check_agree():
    s = twin.load_scenario(BV, [ON_SWB])
    up = np.array([[True, True], [True, False], [False, True]])
    cool = np.array([600e3, 600e3, 300e3])
    got = split_mechanical_w(s, cool, up)
    # (cool + 80 kW) / 2 with both feeds; the survivor carries all of it (re-pinned by audit
    # HA2 F1: the plant keeps cooling whole during a feed loss, its power comes from the survivor)
    np.testing.assert_allclose(got, [[340e3, 340e3], [680e3, 0.0], [0.0, 380e3]])
    # the feed-loss survivor check uses the same split of the plant the run uses (physical:
    # 150 kW of CRAH fans and COP 4.5 x 25/30 at 30 C), not the legacy law
    plant = float(scenario_cooling_power_w(s, 1e6, 30.0))
    assert plant == pytest.approx(150e3 + 0.01e6 + (1.01e6 + 150e3) * (30 / 112.5 + 0.01), rel=1e-12)
    np.testing.assert_allclose(feed_mechanical_w(s, 1e6, 30.0, up[1]), split_mechanical_w(s, plant, up[1]))
    legacy = float(cooling_power_w(1e6, 30.0, chiller_cop_at_25c=4.5, fan_pump_fraction=0.05))
    assert abs(plant - legacy) > 1e4
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
