"""The run admits racks against the chain's RPPs by stage, with the whole-rack rule ``twin
capacity`` counts (HRPP, audit follow-up).

Blue Vela's chain: 16 RPPs of 400 A 415 V, 0.8 x sqrt(3) x 415 V x 400 A x 0.95 = 218.52 kW
continuous each, in A/B pairs (2N) as built, re-fed (N) in the 2024-03-15 stage with the main
redundancy removed. The pairs bind at no stage of the shipped chain (as built the typed 1,520 kW
takes 76 racks, under the pairs' 80), so the tests of the pair rule run on the chain Blue Vela
had until 2 Dec 2026 (``OLD_CHAIN``: main redundancy removed 2024-03-15 with the pairs still 2N,
the re-feed on 2024-06-01), where the pairs bind under the typed 1,830 kW. Under 2N a pair's
surviving panel carries the pair's racks alone: floor(218.52 / 19.94) = 10 racks of the 16
positions a pair holds (``rpp_groups``: site.power.rpp's panels of 8 consecutive racks, A side
panels 0-7, B side 8-15, pair g = panels g and g + 8), 80 racks (1,595.3 kW) when every position
is delivered. Under N each panel carries its own 8 positions (160 kW < 218.5 kW): no cut. In
delivery order the first 64 racks put 8 on each pair (all fit), the next 32 fill pairs 0-3.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from blue_vela_chains import OLD_CHAIN

import twin
from twin import power
from twin.power.capacity import racks_on_groups, rpp_groups, rpp_whole_racks
from twin.power.chain import capacity_report, rack_figures_w, rpp_plan_notes, rpp_stage_limits
from twin.sim.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
PANEL_W = 0.8 * np.sqrt(3) * 415 * 400 * 0.95                      # 218,515.5 W
QUIET = ["site.power.grid.sag_rate_per_year=0", "site.power.grid.outage_rate_per_year=0",
         "site.power.grid.feed_outage_rate_per_year=0"]
#: every position delivered and ready at the start, so the stage alone decides
ALL_IN = ["ramp.waves=[{date: 2024-01-01, racks: 128}]", "ramp.burn_in_days=0"]
PAIRS_NAME = ("the RPP pairs (8 of 16 RPPs (2N) x 218.5 kW continuous, each A/B pair carries its racks on one "
              "panel on failover: 1595 kW of whole racks; site.power.chain.rpps)")
REFEED = ("site.power.chain.stages.1.set={transformers.redundancy: N, switchboards.redundancy: N, "
          "generators.redundancy: N, ups.topology: N, rpps.redundancy: N, branch.redundancy: N}")


def powered_racks(res) -> np.ndarray:
    return res.dataset.gpus_powered.values // 16


def test_pair_rule_by_hand():
    # 5 positions on 2 groups: 3 + 2 consecutive
    assert rpp_groups(5, 2).tolist() == [0, 0, 0, 1, 1]
    # 2N: 4 panels of 2 positions, pairs (0, 2) and (1, 3)
    assert rpp_groups(8, 2, 4).tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert rpp_groups(128, 8, 16).tolist() == ((np.arange(128) // 8) % 8).tolist()
    w = np.array([100.0, 90.0, 50.0, 30.0, 120.0, 60.0])
    g = rpp_groups(6, 2)
    # group 0: 100 + 90 fit 200, + 50 does not; group 1: 30 + 120 fit, + 60 does not;
    # a full group keeps its own later racks out, not the other group's
    assert racks_on_groups(w, g, [200.0, 200.0]).tolist() == [True, True, False, True, True, False]
    # rack 1 not a candidate: group 0 takes 100 + 50 = 150 (its prefix of candidates)
    cand = np.array([True, False, True, True, True, True])
    assert racks_on_groups(w, g, [200.0, 200.0], candidate=cand).tolist() == [True, False, True, True, True, False]
    # racks already on are committed first and stay, even over the limit (the caller sheds)
    on = np.array([False, False, False, False, True, True])
    assert racks_on_groups(w, g, [150.0, 150.0], powered=on).tolist() == [True, False, False, False, True, True]
    # a rack that does not fit keeps its group's later racks out, even a lighter one that would
    assert racks_on_groups([150.0, 100.0, 10.0], [0, 0, 0], [200.0]).tolist() == [True, False, False]
    # the count twin capacity lists is the same rule
    assert rpp_whole_racks(200.0, 2, w, 6) == (4, pytest.approx(340.0))


def test_stage_limits_are_twin_capacitys():
    s = twin.load_scenario(BV, [OLD_CHAIN])
    rep = capacity_report(s)["stages"]
    lim = rpp_stage_limits(s)
    assert [d.isoformat() for d, _ in lim] == [st["date"] for st in rep]
    for st, (_, rs) in zip(rep, lim, strict=True):
        listed = next(c for c in st["constraints"] if c["equipment"] == "rpps")
        assert rs.it_w == listed["it_capacity_kw"] * 1e3
        assert rs.group_limit_w == pytest.approx(PANEL_W, rel=1e-12)
    pairs, panels = lim[1][1], lim[2][1]
    assert pairs.what == "pair" and pairs.group.tolist() == ((np.arange(128) // 8) % 8).tolist()
    assert pairs.it_w == pytest.approx(80 * rack_figures_w(s)["worst_case_w"], rel=1e-12)
    assert pairs.name == PAIRS_NAME
    assert panels.what == "panel" and panels.group.tolist() == (np.arange(128) // 8).tolist()
    assert panels.it_w == pytest.approx(16 * PANEL_W, rel=1e-12)
    # site.power.rpp's panels of 8 consecutive racks: the chain's panels under N, and a pair
    # is panels g and g + 8 under 2N
    rack_rpp = Engine(s).plant.rack_rpp
    assert np.array_equal(panels.group, rack_rpp) and np.array_equal(pairs.group, rack_rpp % 8)
    # the shipped chain: pairs as built, panels from 2024-03-15 (re-pinned 2 Dec 2026: the re-feed
    # is read into the March stage), each stage's limit the one twin capacity lists
    shipped = twin.load_scenario(BV)
    lim = rpp_stage_limits(shipped)
    assert [(d.isoformat(), rs.what) for d, rs in lim] == [("2024-01-01", "pair"), ("2024-03-15", "panel"),
                                                           ("2024-09-01", "panel")]
    assert lim[0][1].it_w == pairs.it_w and lim[1][1].it_w == lim[2][1].it_w == panels.it_w
    for st, (_, rs) in zip(capacity_report(shipped)["stages"], lim, strict=True):
        assert rs.it_w == next(c for c in st["constraints"] if c["equipment"] == "rpps")["it_capacity_kw"] * 1e3


def test_engine_admits_ten_racks_per_pair_under_2n():
    # the shipped chain changes its RPPs once, on 2024-03-15 (day 74), the old one on 2024-06-01
    assert [t for t, _ in Engine(twin.load_scenario(BV, QUIET)).power.rpp_changes_s] == [0.0, 74 * 86400.0]
    e = Engine(twin.load_scenario(BV, [OLD_CHAIN, *QUIET]))
    assert [t for t, _ in e.power.rpp_changes_s] == [0.0, (152 - 0) * 86400.0]      # 2024-06-01
    assert e.power.limits_w[PAIRS_NAME] == pytest.approx(80 * e.power.rack_worst_w, rel=1e-12)
    n = e.plant.n_racks
    ok = e.power.racks_admitted(1830e3, 1.0, candidate=np.ones(n, bool), powered=np.zeros(n, bool))
    r = np.arange(128)
    # the A-side panels' racks (0-63) and the first 2 of each B-side panel's 8
    assert ok.sum() == 80 and ok.tolist() == ((r < 64) | (r % 8 < 2)).tolist()
    # the first two waves (64 racks) put 8 on each pair: all fit
    assert e.power.racks_admitted(1520e3, 1.0, candidate=r < 64, powered=np.zeros(n, bool)).sum() == 64
    # the third wave fills pairs 0-3: 10 each, the first held (rack 66) names its pair and panels
    ok = e.power.racks_admitted(1830e3, 1.0, candidate=r < 96, powered=np.zeros(n, bool))
    assert ok.sum() == 72
    e.state.rack_powered[:] = ok
    assert e.power.rpp_held_why(66, 1.0) == (
        f"RPP pair 0 (site.power.rpp panels 0 and 8) carries 10 racks, 199.4 kW worst case, and cannot take "
        f"{e.plant.rack_names[66]}'s 19.9 kW within 218.5 kW, {PAIRS_NAME}")
    # oversubscription scales a pair's limit as it scales every other
    ok = e.power.racks_admitted(1e9, 1.1, candidate=np.ones(n, bool), powered=np.zeros(n, bool))
    assert ok.sum() == 8 * int(1.1 * PANEL_W // e.power.rack_worst_w) == 96


def test_without_chain_rpps_admission_is_site_rpps_alone():
    rng = np.random.default_rng(0)
    for name in ("vela.yaml", "lenovo_small.yaml"):
        s = twin.load_scenario(ROOT / "scenarios" / name)
        e = Engine(s)
        assert rpp_stage_limits(s) == [] and e.power.rpp_changes_s == []
        assert not [k for k in e.power.limits_w if "RPP" in k]
        p, n = e.plant, e.plant.n_racks
        for _ in range(5):
            cand, on = rng.random(n) < 0.7, rng.random(n) < 0.2
            lim = float(rng.uniform(0.2, 1.0)) * n * float(np.max(e.power.rack_worst_w))
            got = e.power.racks_admitted(lim, 1.0, candidate=cand, powered=on)
            want = power.racks_admitted(e.power.rack_worst_w, lim, p.rack_rpp, p.rpp_limit_w, candidate=cand,
                                        powered=on, policy="stop")
            assert np.array_equal(got, want)
        assert e.power.rpp_held_why(0, 1.0).startswith("RPP 0's continuous limit")


def test_validate_notes_a_plan_above_the_pairs():
    # the shipped chain re-feeds the RPPs in the March stage: no note (the pairs' 1,595 kW as built
    # are above the typed 1,520 kW); the old chain's March stage is noted
    assert rpp_plan_notes(twin.load_scenario(BV)) == []
    notes = rpp_plan_notes(twin.load_scenario(BV, [OLD_CHAIN]))
    assert notes == [("site.power.plan.1.it_power_kw",
                      f"1830 kW from 2024-03-15 is above the 1595 kW of IT {PAIRS_NAME} carry then (`twin capacity`): "
                      "a run admits each rack only while its pair carries it, 80 at worst case when every position "
                      "is delivered")]
    assert rpp_plan_notes(twin.load_scenario(BV, [OLD_CHAIN, "site.power.chain.stages_set_plan=true"])) == []
    assert rpp_plan_notes(twin.load_scenario(BV, [OLD_CHAIN, REFEED])) == []
    assert rpp_plan_notes(twin.load_scenario(BV, [OLD_CHAIN, "site.power.plan.1.it_power_kw=1595"])) == []
    for site in ("colo_hydro_hall.yaml", "new_build_hall.yaml"):
        assert rpp_plan_notes(twin.load_scenario(ROOT / "scenarios" / "sites" / site)) == []
    # the chain's panels laid over other panels than site.power.rpp's: a note, both are admitted against
    odd = rpp_plan_notes(twin.load_scenario(BV, [OLD_CHAIN, "site.power.rpp.count=8", "site.power.rpp.racks_per_rpp=16",
                                                 "site.power.plan.1.it_power_kw=1500"]))
    assert odd == [("site.power.chain.rpps.count",
                    "the chain's 16 RPPs hold 8 consecutive racks each (`twin capacity`, and the run's admission "
                    "by stage), site.power.rpp's 8 panels 16 each (the run's breakers and RPP series): a run admits "
                    "against both")]


@pytest.fixture(scope="module")
def all_in_march():
    # every position delivered; 2024-03-10 .. 03-20 crosses the stage of 2024-03-15 (RPP pairs
    # still 2N in OLD_CHAIN, the typed plan 1,830 kW)
    return twin.simulate(twin.load_scenario(BV, [OLD_CHAIN, *ALL_IN, *QUIET, "simulation.start=2024-03-10",
                                                 "simulation.duration_days=10"]))


def test_the_run_admits_the_racks_twin_capacity_lists(all_in_march):
    res = all_in_march
    rep = capacity_report(twin.load_scenario(BV, [OLD_CHAIN]))["stages"]
    assert rep[1]["binding"]["equipment"] == "rpps" and rep[1]["racks_at_worst_case"] == 80
    t, racks = res.dataset.time.values, powered_racks(res)
    # before the stage the typed 1,520 kW binds (76 racks) under the pairs' 80; from it, the pairs
    assert racks[t < np.datetime64("2024-03-15")].max() == 76
    assert racks[t >= np.datetime64("2024-03-15")].min() == rep[1]["racks_at_worst_case"] == 80
    stage = res.events[res.events.kind == "power_stage"]
    assert stage.detail.iloc[-1] == f"1830 kW IT available; racks admitted against 1595 kW, the limit of {PAIRS_NAME}"
    held = res.events[res.events.kind == "power_held"]
    assert held.target.iloc[-1] == "48 racks"
    # every pair full: the racks' kW reach the pairs' 1,595 kW too, which the event names
    assert held.detail.iloc[-1] == (f"delivered, not powered: 1595 kW committed + 19.9 kW worst case over the "
                                    f"1595 kW limit of {PAIRS_NAME}")


def test_the_run_powers_ten_racks_per_pair(all_in_march):
    # which racks: each pair's first 10 in index order (the A-side panel's 8, 2 of the B side's),
    # not the first 80 positions (which would put 16 racks, 319 kW, on pairs 0-4)
    state = all_in_march.dataset.rack_state.values[-1]
    r = np.arange(128)
    assert ((state >= 1) & (state <= 3)).tolist() == ((r < 64) | (r % 8 < 2)).tolist()


def test_stages_set_plan_admits_each_stages_racks():
    # with the chain's capacity as the plan, every stage admits exactly the racks twin capacity
    # lists: 76 (generators), 80 (RPP pairs), 126 (utility), 128 on OLD_CHAIN (its RPP-bound
    # stage); the shipped chain's stages are its first, third and fourth (re-pinned 2 Dec 2026).
    # Re-pinned 2 Dec 2026 (helper HMP): the as-built stage was 73 racks (the switchboards with
    # half the plant); the plant is now on its own boards and one genset binds, 1,519.9 kW
    shipped = twin.load_scenario(BV, [*ALL_IN, *QUIET, "site.power.chain.stages_set_plan=true"])
    assert [st["racks_at_worst_case"] for st in capacity_report(shipped)["stages"]] == [76, 126, 128]
    s = twin.load_scenario(BV, [OLD_CHAIN, *ALL_IN, *QUIET, "site.power.chain.stages_set_plan=true"])
    want = [st["racks_at_worst_case"] for st in capacity_report(s)["stages"]]
    assert want == [76, 80, 126, 128]
    got = []
    for start, days in (("2024-01-01", 2), ("2024-03-15", 2), ("2024-06-01", 2), ("2024-09-01", 2)):
        res = twin.simulate(twin.load_scenario(BV, [OLD_CHAIN, *ALL_IN, *QUIET, "site.power.chain.stages_set_plan=true",
                                                    f"simulation.start={start}", f"simulation.duration_days={days}"]))
        got.append(int(powered_racks(res).max()))
    assert got == want


def test_blue_vela_fills_pairs_in_delivery_order():
    # on OLD_CHAIN (the pairs still 2N in March): deliveries fill the positions in order, the first
    # two waves put 8 racks on each pair (all powered), the third fills pairs 0-3 to 10 each (72
    # racks, not the typed plan's 91)
    res = twin.simulate(twin.load_scenario(BV, [OLD_CHAIN, *QUIET, "simulation.duration_days=95"]))
    t, racks = res.dataset.time.values, powered_racks(res)
    for day, n in (("2024-01-10", 32), ("2024-02-03", 64), ("2024-04-03", 72)):
        assert racks[np.searchsorted(t, np.datetime64(day))] == n


def test_shipped_blue_vela_powers_the_typed_plan_in_april():
    # the shipped chain re-feeds the RPPs on 2024-03-15: each panel carries its own 8 positions,
    # so the third wave is powered up to the typed 1,830 kW (91 racks at worst case), as before the
    # run admitted against the RPPs (7e73fff); OLD_CHAIN powers 72 there (the test above)
    res = twin.simulate(twin.load_scenario(BV, [*QUIET, "simulation.duration_days=95"]))
    t, racks = res.dataset.time.values, powered_racks(res)
    for day, n in (("2024-01-10", 32), ("2024-02-03", 64), ("2024-04-03", 91)):
        assert racks[np.searchsorted(t, np.datetime64(day))] == n


def test_a_stage_that_restores_2n_sheds_from_each_pairs_end():
    # RPPs N as built (the typed 1,520 kW: racks 0-75), A/B pairs from 2024-03-15: each pair keeps
    # its first 10 racks (pair 0 = panels 0 and 8 holds 16: sheds 66-71; pair 1 holds 12: sheds
    # 74-75), then pairs 2-7 take 2 each from panels 10-15, up to the pairs' 80 racks
    s = twin.load_scenario(BV, [*ALL_IN, *QUIET, "site.power.chain.rpps.redundancy=N",
                                "site.power.chain.stages.1.set={rpps.redundancy: 2N}",
                                "simulation.start=2024-03-13", "simulation.duration_days=4"])
    res = twin.simulate(s)
    t, racks = res.dataset.time.values, powered_racks(res)
    assert racks[t < np.datetime64("2024-03-15")].max() == 76
    assert racks[t >= np.datetime64("2024-03-15")].min() == 80
    off = res.events[res.events.kind == "power_off"]
    shed = [66, 67, 68, 69, 70, 71, 74, 75]
    names = Engine(s).plant.rack_names
    assert sorted(off.target) == sorted(names[i] for i in shed)
    assert off.detail.iloc[0] == f"RPP pair 1 over its limit: {PAIRS_NAME}"
