"""Validation polish of the HA audit, item 13 (a, g, h, k).

a. Cooling units that cannot carry the racks' worst-case heat are a note (the run is valid,
   its hall runs hot). Hand figures (Blue Vela): 128 racks x 19.94 kW = 2,552.4 kW of
   worst-case heat; 12 units at 100 kW = 1,200 kW -> 213 %. One unit at 1 kW among eleven
   at 250 kW: the hall's mixed return at that heat is 18 C + 2,552.4 kW / (1,206 J/(m3 K) x
   180 m3/s) = 29.76 C; the 1 kW coil takes 1 kW / (1,206 x 15 m3/s) = 0.055 K off it and
   supplies 29.70 C, above the 27 C ASHRAE recommended inlet.
g. Errors inside the power chain name the dotted path of the bad field.
h. A power rating far above the whole site (W typed into a kW field), 2N with one feed and a
   breaker above its frame's largest rating are problems (exit 2).
k. A YAML file that is not an engine scenario (a room-benchmark case, a sweep, a step
   estimate) gets one line saying what it is and what runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.cli.main import main
from twin.errors import ScenarioError
from twin.scenario.loader import check_scenario, load_scenario

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
VELA = ROOT / "scenarios" / "vela.yaml"
SHIPPED = sorted([*ROOT.glob("scenarios/*.yaml"), *ROOT.glob("scenarios/sites/*.yaml"),
                  *ROOT.glob("scenarios/scale/*.yaml")])


def _problems(path, sets):
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path, sets)
    return exc.value.problems


# --------------------------------------------------------------------------- a. cooling notes
def _cooling_notes(path, sets=()):
    return [n for n in check_scenario(path, list(sets)).notes if ".cooling_units" in n.path]


def test_units_short_of_the_hall_heat_are_a_note_with_figures():
    sets = [f"site.halls.0.cooling_units.{i}.capacity_kw=100" for i in range(12)]
    (note,) = _cooling_notes(BV, sets)
    assert note.path == "site.halls.0.cooling_units"
    assert "2,552 kW, 128 racks" in note.text and "213% of its 12 cooling units' 1,200 kW" in note.text
    assert "cooling_short" in note.text


def test_one_unit_far_below_its_share_is_a_note_at_that_unit():
    (note,) = _cooling_notes(BV, ["site.halls.0.cooling_units.0.capacity_kw=1"])
    assert note.path == "site.halls.0.cooling_units.0.capacity_kw"
    assert "'crah_w1'" in note.text and "removes 1 kW" in note.text
    assert "213 of 2,552 kW" in note.text and "at 29.7 C (return 29.8 C" in note.text


def test_a_unit_a_little_below_its_share_is_no_note():
    # 100 kW of a 213 kW share: its air leaves at 29.76 - 100 / 18.09 = 24.2 C, within 27 C
    assert _cooling_notes(BV, ["site.halls.0.cooling_units.0.capacity_kw=100"]) == []


def test_the_plan_caps_the_heat_the_note_counts():
    # 2,552 kW of racks but a largest stage of 1,000 kW: the plan powers at most 1,000 kW
    sets = [f"site.halls.0.cooling_units.{i}.capacity_kw=80" for i in range(12)]
    plan = "site.power.plan=[{date: 2024-01-01, it_power_kw: 1000}]"
    (note,) = _cooling_notes(BV, [*sets, plan, "site.power.chain.stages_set_plan=false"])
    assert "(1,000 kW, the plan's largest stage" in note.text and "104% of its 12 cooling units' 960 kW" in note.text


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_scenarios_have_no_cooling_note(path):
    assert _cooling_notes(path) == []


# --------------------------------------------------------------------------- g. chain paths
@pytest.mark.parametrize("setting, path, value, says", [
    ("site.power.chain.stages.2.date=2024-01-01", "site.power.chain.stages.2.date", "2024-01-01",
     "is not after stages.1.date 2024-03-15"),
    # Blue Vela's UPS bypass is its chain's stage 2 since 2 Dec 2026 (stage 3 before; no 2024-06-01 stage)
    ("site.power.chain.stages.2.set={ups.mode: banana}", "site.power.chain.stages.2.set.ups.mode", "banana",
     "stages.2 (2024-09-01): ups.mode: input should be 'double_conversion'"),
    ("site.power.chain.stages.1.set={switchboards.main_breaker_a: -5}",
     "site.power.chain.stages.1.set.switchboards.main_breaker_a", -5, "greater than 0"),
    ("site.power.chain.stages.1.set={ups.module_kw: -3}", "site.power.chain.stages.1.set.ups.module_kw", -3,
     "greater than 0"),
    ("site.power.chain.stages.1.set={ups.colour: 1}", "site.power.chain.stages.1.set.ups.colour", 1,
     "no field 'ups.colour' in the chain"),
    ("site.power.chain.stages.1.set={transformers.count: 1, transformers.redundancy: 2N}",
     "site.power.chain.stages.1.set.transformers.count", 1, "redundancy 2N needs an even number of transformers"),
    ("site.power.chain.transformers.count=3", "site.power.chain.transformers.count", 3, "got count=3"),
    ("site.power.chain.ups.systems=3", "site.power.chain.ups.systems", 3, "topology 2N needs an even number"),
    ("site.power.chain.branch.cords_per_rack=1", "site.power.chain.branch.cords_per_rack", 1, "2 cords"),
    ("site.power.chain.battery={power_kw: 10, energy_kwh: 0}", "site.power.chain.battery.energy_kwh", 0,
     "no energy"),
])
def test_chain_errors_name_the_dotted_path_of_the_field(setting, path, value, says):
    (p,) = _problems(BV, [setting])
    assert (p.path, p.value) == (path, value)
    assert says in p.expected


def test_a_date_field_of_a_list_item_keeps_its_name_in_the_path():
    # "date" is also a pydantic union tag; after a list index it is the item's field
    (p,) = _problems(BV, ["site.power.plan.1.date=banana"])
    assert p.path == "site.power.plan.1.date"


def test_a_stage_setting_an_unmodelled_ups_mode_names_that_stage():
    (p,) = _problems(BV, ["site.power.chain.stages.2.set={ups.mode: line_interactive}"])
    assert p.path == "site.power.chain.stages.2.set.ups.mode"      # the 2024-09-01 stage (3 until 2 Dec 2026)


# --------------------------------------------------------------------------- h. plausibility
def test_watts_in_a_kw_field_is_a_problem_naming_the_field():
    (p,) = _problems(BV, ["site.power.feeds.0.capacity_kw=1.6e6"])
    assert (p.path, p.value) == ("site.power.feeds.0.capacity_kw", 1.6e6)
    assert "at most 255,244 kW (100x the worst-case draw of all 128 rack positions, 2,552.4 kW)" in p.expected
    assert "looks like W typed into a kW field (1,600,000 W = 1,600 kW)" in p.expected


@pytest.mark.parametrize("setting, path, unit", [
    ("site.power.ups.capacity_kw=3.04e6", "site.power.ups.capacity_kw", "W typed into a kW field"),
    ("site.power.plan.3.it_power_kw=2.585e6", "site.power.plan.3.it_power_kw", "W typed into a kW field"),
    ("site.power.chain.utility.kva=3.75e6", "site.power.chain.utility.kva", "VA typed into a kVA field"),
    ("site.power.chain.generators.kw=2.5e6", "site.power.chain.generators.kw", "W typed into a kW field"),
    ("site.power.chain.stages.1.set={ups.module_kw: 380000}", "site.power.chain.stages.1.set.ups.module_kw",
     "W typed into a kW field"),
    # 250 kWh typed as Wh: 98 h of the whole site's worst case, above 24 h
    ("site.power.chain.battery.energy_kwh=250000", "site.power.chain.battery.energy_kwh",
     "Wh typed into a kWh field"),
])
def test_other_power_ratings_far_above_the_site_are_problems(setting, path, unit):
    (p,) = _problems(BV, [setting])
    assert p.path == path and unit in p.expected


def test_ratings_within_the_bound_stay_valid():
    # 100x the site is the bound: 250,000 kW passes (a feed built for halls to come)
    load_scenario(BV, ["site.power.feeds.0.capacity_kw=250000", "site.power.chain.battery.energy_kwh=60000"])


def test_2n_with_one_feed_is_a_problem_naming_the_redundancy_and_the_feed_count():
    (p,) = _problems(VELA, ["site.power.feeds=[{name: A, capacity_kw: 1200}]"])
    assert (p.path, p.value) == ("site.power.redundancy", "2N")
    assert "1 feed (A)" in p.expected and "2N needs two feeds" in p.expected
    load_scenario(VELA, ["site.power.feeds=[{name: A, capacity_kw: 1200}]", "site.power.redundancy=none"])


@pytest.mark.parametrize("setting, path, says", [
    ("site.power.chain.rpps.breaker_a=4000", "site.power.chain.rpps.breaker_a", "molded_case frame is made in (at most 1,200 A"),
    ("site.power.chain.branch.breaker_a=600", "site.power.chain.branch.breaker_a", "miniature frame is made in (at most 125 A"),
    ("site.power.rpp.breaker_a=400000", "site.power.rpp.breaker_a", "at most 6,300 A"),
])
def test_breakers_above_any_made_rating_are_problems(setting, path, says):
    probs = [p for p in _problems(BV, [setting]) if p.path == path and "frame" in p.expected]
    assert len(probs) == 1 and says in probs[0].expected


# --------------------------------------------------------------------------- k. other files
@pytest.mark.parametrize("name, kind, runner", [
    ("validation/rise_pod2.yaml", "a room-benchmark validation case",
     "pytest tests/validation/test_room_benchmark.py (twin.studies.room_benchmark.pod2_comparison)"),
    ("validation/rise_pod2_2018.yaml", "a room-benchmark validation case",
     "pytest tests/validation/test_room_benchmark.py -k pod2_2018"),
    ("studies/siting.yaml", "a sweep file", "twin sweep {file} --out DIR"),
    ("estimates/gpt3_175b_bf16_128gpu.yaml", "a step-time estimate file", "twin estimate step {file}"),
])
def test_a_file_that_is_not_an_engine_scenario_says_what_it_is(name, kind, runner, capsys):
    path = ROOT / "scenarios" / name
    (p,) = _problems(path, [])
    line = str(p)
    assert line.startswith(f"not an engine scenario: {path} is {kind}")
    assert f"; run it with {runner.format(file=path)}" in line
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not an engine scenario" in err and "unknown key" not in err
