"""`twin validate`'s note for a plan stage above the chain's usable IT capacity, whatever
equipment binds (twin.power.chain.capacity_plan_notes), and `twin capacity`'s usable figure
counting only racks the branch circuits carry (the second audit's F14) and its header's range of
rack worst cases (F12a)."""

from pathlib import Path

import pytest

import twin
from twin.cli.main import main
from twin.power.chain import capacity_plan_notes, capacity_report
from twin.scenario.loader import semantic_notes

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
NEW_BUILD = ROOT / "scenarios" / "sites" / "new_build_hall.yaml"
#: new_build_hall's transformers before 2 Dec 2026: one 4 MVA unit carries 2,523 kW of IT with
#: the whole plant, below the plan's 3,000 kW from 2024-07-15
OLD_NB = ["site.power.chain.transformers.kva=4000"]
#: 20 A branch circuits: one cord carries 10.9 kW continuous, below a 19.9 kW rack on failover
SMALL_BRANCH = ["site.power.chain.branch.breaker_a=20"]


def test_a_plan_above_the_transformers_is_noted():
    s = twin.load_scenario(NEW_BUILD, OLD_NB)
    notes = capacity_plan_notes(s)
    assert [p for p, _ in notes] == ["site.power.plan.1.it_power_kw"]
    text = notes[0][1]
    assert text.startswith("3000 kW from 2024-07-15 is above the 2523 kW of IT the power chain carries then, "
                           "bound by the transformers (1 of 2 x 4000 kVA (2N)")
    assert "126 racks at worst case where the plan takes 140" in text
    assert "does not admit against the transformers" in text
    assert notes[0] in semantic_notes(s)        # twin validate shows it


def test_the_shipped_new_build_hall_carries_its_plan():
    s = twin.load_scenario(NEW_BUILD)
    st = capacity_report(s)["stages"][1]
    assert st["it_capacity_kw"] == pytest.approx(3000.0) and st["binding"]["equipment"] == "ups"
    assert st["racks_at_worst_case"] == 140
    assert capacity_plan_notes(s) == []


def test_whole_racks_decide():
    # a plan 3 kW above the transformers' 2,523 kW still takes the 126 racks they hold: no finding;
    # a rack's worth more takes 127
    cap = capacity_report(twin.load_scenario(NEW_BUILD, OLD_NB))["stages"][1]["it_capacity_kw"]
    assert cap == pytest.approx(2523, abs=0.5)
    at = f"site.power.plan.1.it_power_kw={cap + 3:.3f}"
    assert capacity_plan_notes(twin.load_scenario(NEW_BUILD, [*OLD_NB, at])) == []
    more = f"site.power.plan.1.it_power_kw={cap + 20:.3f}"
    assert len(capacity_plan_notes(twin.load_scenario(NEW_BUILD, [*OLD_NB, more]))) == 1


@pytest.mark.parametrize("name", ["blue_vela.yaml", "blue_vela_fixed.yaml", "sites/colo_hydro_hall.yaml",
                                  "sites/existing_hall.yaml", "sites/new_build_hall.yaml"])
def test_shipped_scenarios_have_no_such_note(name):
    assert capacity_plan_notes(twin.load_scenario(ROOT / "scenarios" / name)) == []


def test_a_branch_that_cannot_carry_a_rack_on_one_cord_counts_no_capacity():
    s = twin.load_scenario(BV, SMALL_BRANCH)
    first = capacity_report(s)["stages"][0]
    # 128 x 10.9 kW of cords would read 1,398 kW, but no 19.9 kW rack fits one cord
    assert first["it_capacity_kw"] == 0.0 and first["racks_at_worst_case"] == 0
    assert first["binding"]["equipment"] == "branch"
    assert "rack 1's worst case 19.9 kW is above the 10.9 kW its circuits carry" in first["binding"]["detail"]
    notes = dict(capacity_plan_notes(s))
    assert "site.power.plan.0.it_power_kw" in notes
    assert "bound by the branch" in notes["site.power.plan.0.it_power_kw"]
    assert "0 racks at worst case where the plan takes 76" in notes["site.power.plan.0.it_power_kw"]
    assert "branch_failover_overload" in notes["site.power.plan.0.it_power_kw"]


def test_a_branch_that_carries_the_racks_is_unchanged():
    st = capacity_report(twin.load_scenario(BV))["stages"]
    br = next(c for c in st[0]["constraints"] if c["equipment"] == "branch")
    assert br["it_capacity_kw"] == pytest.approx(128 * br["equipment_limit_kw"])


def test_capacity_header_gives_the_range_of_rack_worst_cases(capsys):
    assert main(["capacity", str(ROOT / "scenarios" / "blue_vela_fixed.yaml"), "--no-swing",
                 "--set", "site.halls.0.rows.0.node_model=vela_a100"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "rack worst case 12.1-19.9 kW, idle" in head
    assert main(["capacity", str(BV), "--no-swing", *sum((["--set", o] for o in SMALL_BRANCH), [])]) == 0
    out = capsys.readouterr().out
    assert "rack worst case 19.9 kW, idle" in out.splitlines()[0]
    assert "usable IT capacity         0 kW  (typed plan 1520 kW); 0 racks at worst case" in out


def test_the_legacy_ups_study_point_is_a_finding():
    # scenarios/studies/ups_mode.yaml's legacy-transformer point: its larger UPS loss leaves the
    # as-built generators 1,435 kW of IT, 71 racks where the typed 1,520 kW takes 76
    s = twin.load_scenario(BV, ["site.power.ups.mode=double_conversion",
                                "site.power.chain.stages.2.set={ups.mode: double_conversion}",
                                "site.power.chain.ups.curve=legacy_transformer"])
    (path, text), = capacity_plan_notes(s)
    assert path == "site.power.plan.0.it_power_kw"
    assert "above the 1435 kW of IT the power chain carries then, bound by the generators" in text
    assert "71 racks at worst case where the plan takes 76" in text
