"""Racks that can never be powered are a validation problem naming the field (exit 2); a
limit that keeps only some racks (or one plan stage) dark is a note (audit finding 7).

Hand figures (Blue Vela): one rack's worst case 19.94 kW; an RPP breaker at 20 A, 415 V,
3 phases, NEC 80 %, pf 0.95 carries 0.8 x sqrt(3) x 415 x 20 x 0.95 = 10.93 kW; a 9 A branch
breaker 4.92 kW per cord, 9.83 kW on both cords in normal operation; a 10 kW feed A carries nothing once
its 40 kW share of the house loads is taken.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from blue_vela_chains import OLD_CHAIN

from twin.cli.main import main
from twin.errors import ScenarioError
from twin.scenario.loader import check_scenario

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
VELA = ROOT / "scenarios" / "vela.yaml"


@pytest.mark.parametrize("setting, path, carried", [
    ("site.power.rpp.breaker_a=20", "site.power.rpp.breaker_a", "10.9"),
    ("site.power.chain.branch.breaker_a=9", "site.power.chain.branch.breaker_a", "9.8"),
    ("site.power.feeds.0.capacity_kw=10", "site.power.feeds.0.capacity_kw", "0.0"),
])
def test_no_rack_can_ever_be_powered(setting, path, carried):
    # the plant on the switchboards (the feeds), as shipped Blue Vela had it until 2 Dec 2026
    # (helper HMP moved it to its own boards off the transformers): the 10 kW feed's case is a
    # feed eaten by its share of the house loads; without them it carries 20 kW of IT, a rack
    on_feeds = "site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]"
    with pytest.raises(ScenarioError) as exc:
        check_scenario(BV, [setting, on_feeds])
    (p,) = exc.value.problems
    assert p.path == path
    assert "at least one rack's worst case (19.9 kW)" in p.expected
    assert f"it is {carried} kW, so no rack can ever be powered" in p.expected


def test_ups_too_small_under_2n_names_the_ups():
    # Vela: 2N, each 1,200 kW feed carries everything alone through its UPS share
    with pytest.raises(ScenarioError) as exc:
        check_scenario(VELA, ["site.power.ups.capacity_kw=20"])
    (p,) = exc.value.problems
    assert p.path == "site.power.ups.capacity_kw" and "it is 10.0 kW" in p.expected


def test_oversubscription_scales_the_limits():
    # 10.93 kW x 2 = 21.9 kW: one rack fits the 20 A RPP again
    check_scenario(BV, ["site.power.rpp.breaker_a=20", "site.power.oversubscription=2"])


def test_a_plan_stage_below_one_rack_is_a_note(capsys):
    notes = check_scenario(BV, ["site.power.plan.0.it_power_kw=5"]).notes
    assert [(n.path, n.text) for n in notes] == [(
        "site.power.plan.0.it_power_kw",
        "5 kW from 2024-01-01 is below one rack's worst case (19.9 kW): no rack is powered in that stage")]
    assert main(["validate", str(BV), "--set", "site.power.plan.0.it_power_kw=5"]) == 0
    assert "note:" in capsys.readouterr().out


def test_every_plan_stage_below_one_rack_is_a_problem():
    sets = [f"site.power.plan.{i}.it_power_kw=5" for i in range(4)]
    with pytest.raises(ScenarioError) as exc:
        check_scenario(BV, sets)
    assert [p.path for p in exc.value.problems] == ["site.power.plan"]


def test_shipped_scenarios_have_no_power_limit_notes():
    for path in (BV, VELA):
        assert not [n for n in check_scenario(path).notes if n.path.startswith("site.power")]




def test_validate_notes_plan_stages_above_the_chains_service_and_rpps(capsys):
    # twin validate carries twin.power.chain's plan notes (utility_plan_notes, rpp_plan_notes):
    # the typed 1,830 kW from 2024-03-15 over the old chain's 2N RPP pairs (80 racks), and the
    # typed 2,585 kW from 2024-09-01 over the 3,750 kVA service (125 racks)
    notes = check_scenario(BV, [OLD_CHAIN, "site.power.chain.utility.kva=3750"]).notes
    assert [n.path for n in notes] == ["site.power.plan.3.it_power_kw", "site.power.plan.1.it_power_kw"]
    assert "above the 2497 kW of IT the utility service (3750 kVA" in notes[0].text
    assert notes[0].text.endswith("a run admits racks against the service, 125 at worst case")
    assert "1830 kW from 2024-03-15 is above the 1595 kW of IT the RPP pairs" in notes[1].text
    assert notes[1].text.endswith("80 at worst case when every position is delivered")
    assert main(["validate", str(BV), "--set", OLD_CHAIN]) == 0
    assert "note: " in capsys.readouterr().out
    # the shipped chain re-feeds the RPPs in the March stage and its service carries the plan
    assert check_scenario(BV).notes == ()
