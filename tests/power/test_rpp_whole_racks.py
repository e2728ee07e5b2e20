"""RPP-bound stages count whole racks per panel / 2N pair (audit finding 15).

Blue Vela's 2024-03-15 stage as its chain read it until 2 Dec 2026 (main redundancy removed,
RPP pairs still 2N; the shipped chain re-feeds the RPPs in that stage, so the case is set up by
an override, OLD_CHAIN): 8 A/B pairs of 400 A 415 V panels, 218.5 kW continuous each
(0.8 x sqrt(3) x 415 V x 400 A x 0.95). One rack at its worst case draws 19.94 kW, so a
pair holds floor(218.52 / 19.94) = 10 racks (11 = 219.35 kW > 218.52): 80 racks, 1,595 kW,
not floor(8 x 218.5 / 19.94) = 87 racks on 1,748 kW as if racks split over panels.
"""

from pathlib import Path

import numpy as np
import pytest
from blue_vela_chains import OLD_CHAIN

from twin.power.capacity import chain_constraints, racks_fitting, rpp_whole_racks
from twin.power.chain import rack_figures_w
from twin.scenario import load_scenario
from twin.scenario.power_chain import PowerChain, Rpps, chain_at_stages

ROOT = Path(__file__).resolve().parents[2]
PANEL_KW = 0.8 * np.sqrt(3) * 415 * 400 * 0.95 / 1e3          # 218.52 kW


def test_whole_racks_per_pair_by_hand():
    assert PANEL_KW == pytest.approx(218.52, abs=0.01)
    n, kw = rpp_whole_racks(PANEL_KW, 8, 19.941, 128)
    assert n == 80 and kw == pytest.approx(80 * 19.941, rel=1e-12)
    # 11 racks of 19.941 kW (219.35 kW) do not fit one pair; 10 of 21.8 kW (218 kW) do
    assert rpp_whole_racks(PANEL_KW, 1, 21.8, 16) == (10, pytest.approx(218.0))
    # no more racks than the positions on each group: 128 positions on 16 panels = 8 each
    assert rpp_whole_racks(PANEL_KW, 16, 19.941, 128)[0] == 128
    # 5 positions on 2 groups: 3 + 2 positions, at most 2 racks of 100 kW each per group
    assert rpp_whole_racks(200.0, 2, 100.0, 5)[0] == 4


def test_whole_racks_mixed_rack_sizes_take_each_groups_prefix():
    w = np.array([100.0, 90.0, 50.0, 30.0, 120.0, 60.0])       # 2 groups of 3 positions
    n, kw = rpp_whole_racks(200.0, 2, w, 6)
    # group 1: 100 + 90 = 190 fits, + 50 does not; group 2: 30 + 120 = 150, + 60 = 210 does not
    assert n == 4 and kw == pytest.approx(340.0)


def test_blue_vela_second_stage_holds_80_racks_not_87():
    # the RPP pairs bind only with the re-feed in a later stage (OLD_CHAIN): the mechanism is
    # tested where it binds
    s = load_scenario(ROOT / "scenarios" / "blue_vela.yaml", [OLD_CHAIN])
    worst_w = rack_figures_w(s)["worst_case_w"]
    assert worst_w == pytest.approx(19_941, abs=5)
    stage = chain_at_stages(s.site.power.chain)[1][2]          # 2024-03-15: RPP pairs still 2N
    old = [c for c in chain_constraints(stage, rack_positions=128, mechanical_w=lambda h: 0.0)[0]
           if c.equipment == "rpps"][0]
    new = [c for c in chain_constraints(stage, rack_positions=128, mechanical_w=lambda h: 0.0,
                                        rack_worst_case_w=worst_w)[0] if c.equipment == "rpps"][0]
    assert old.it_capacity_kw == pytest.approx(8 * PANEL_KW, rel=1e-12)              # 1,748 kW (kW summed)
    assert racks_fitting(old.it_capacity_kw, worst_w / 1e3, 128) == 87
    assert new.it_capacity_kw == pytest.approx(80 * worst_w / 1e3, rel=1e-12)        # 1,595 kW
    assert new.equipment_limit_kw == pytest.approx(8 * PANEL_KW, rel=1e-12)
    assert racks_fitting(new.it_capacity_kw, worst_w / 1e3, 128) == 80
    assert "whole racks: 80 at worst case on 8 pairs" in new.detail
    # 80 racks = 160 nodes: 20 short of the 34B job with its 4 spares (132) and the 20B job (48)
    assert 132 + 48 - 2 * 80 == 20
    # the re-fed stage (RPPs N: 16 panels of 8 positions) is not cut: every rack fits its
    # panel, so the panels' kW stand (not the 128 racks' 2,552 kW, a limit of the positions)
    refed = chain_at_stages(s.site.power.chain)[2][2]
    # the shipped chain's 2024-03-15 stage is that re-fed equipment
    shipped = chain_at_stages(load_scenario(ROOT / "scenarios" / "blue_vela.yaml").site.power.chain)
    assert [d.isoformat() for d, _, _ in shipped] == ["2024-01-01", "2024-03-15", "2024-09-01"]
    assert shipped[1][2].rpps == refed.rpps and shipped[1][2].branch == refed.branch
    r = [c for c in chain_constraints(refed, rack_positions=128, mechanical_w=lambda h: 0.0,
                                      rack_worst_case_w=worst_w)[0] if c.equipment == "rpps"][0]
    assert r.it_capacity_kw == pytest.approx(16 * PANEL_KW, rel=1e-12)
    assert "whole racks" not in r.detail


def test_rpps_not_cut_when_kw_already_binds_whole_racks():
    ch = PowerChain(rpps=Rpps(count=2, breaker_a=400, voltage_v=415, redundancy="2N"))
    c = chain_constraints(ch, rack_positions=10, mechanical_w=lambda h: 0.0,
                          rack_worst_case_w=PANEL_KW * 100.0)[0][0]
    # 10 racks of a tenth of the panel fit the pair exactly: the kW limit stands
    assert c.it_capacity_kw == pytest.approx(PANEL_KW, rel=1e-9)
    assert "whole racks" not in c.detail
