"""Scenario fields of the cooling system and their exit-2 problems."""

import copy
from pathlib import Path

import pytest
import yaml

from twin.cli.main import main
from twin.errors import ScenarioError
from twin.scenario import validate_data

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "scenarios" / "blue_vela.yaml").read_text())


def problems_of(data):
    with pytest.raises(ScenarioError) as exc:
        validate_data(data, "x.yaml")
    return exc.value.problems


def test_defaults_are_the_legacy_model():
    data = copy.deepcopy(BASE)
    del data["site"]["cooling_system"]          # the schema's defaults, not the shipped choice
    cs = validate_data(data, "x.yaml").site.cooling_system
    assert cs.model == "legacy" and cs.weather_file is None and cs.plant.capacity_kw is None
    assert cs.rack_airflow == "fixed" and cs.events == [] and cs.recirculation == "plan_view"


@pytest.mark.parametrize("name", ["blue_vela.yaml", "vela.yaml", "lenovo_small.yaml", "lenovo_large.yaml",
                                  "sites/existing_hall.yaml", "sites/new_build_hall.yaml",
                                  "sites/colo_hydro_hall.yaml"])
def test_shipped_scenarios_run_the_physical_model(name):
    from twin.scenario import load_scenario

    cs = load_scenario(ROOT / "scenarios" / name).site.cooling_system
    assert (cs.model, cs.rack_airflow, cs.recirculation) == ("physical", "fan_model", "buoyant")


def test_weather_file_and_physical_model_validate():
    data = copy.deepcopy(BASE)
    data["site"]["cooling_system"] = {"model": "physical", "weather_file": "723170TYA.CSV",
                                      "plant": {"capacity_kw": 1500, "heat_rejection": "cooling_tower"},
                                      "crah_fans": {"control": "vfd"}}
    s = validate_data(data, "x.yaml")
    assert s.site.cooling_system.plant.capacity_kw == 1500


@pytest.mark.parametrize("cap", [0, -100])
def test_unit_and_plant_capacity_must_be_positive(cap):
    data = copy.deepcopy(BASE)
    data["site"]["halls"][0]["cooling_units"][0]["capacity_kw"] = cap
    data["site"]["cooling_system"] = {"plant": {"capacity_kw": cap}}
    paths = {p.path: p for p in problems_of(data)}
    assert "greater than 0" in paths["site.halls.0.cooling_units.0.capacity_kw"].expected
    assert "greater than 0" in paths["site.cooling_system.plant.capacity_kw"].expected


def test_missing_or_malformed_weather_file_names_the_line(tmp_path):
    data = copy.deepcopy(BASE)
    data["site"]["cooling_system"] = {"weather_file": str(tmp_path / "nowhere.epw")}
    (prob,) = problems_of(data)
    assert prob.path == "site.cooling_system.weather_file" and "no such file" in prob.expected
    text = (ROOT / "twin" / "catalog" / "weather" / "723170TYA.CSV").read_text().splitlines()
    fields = text[500].split(",")
    fields[31] = "hot"  # dry bulb of the 499th hour, file line 501
    text[500] = ",".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(text) + "\n")
    data["site"]["cooling_system"] = {"weather_file": str(bad)}
    (prob,) = problems_of(data)
    assert "line 501" in prob.expected and "'hot'" in prob.expected


def test_fault_events_for_units_that_do_not_exist():
    data = copy.deepcopy(BASE)
    data["site"]["cooling_system"] = {"events": [
        {"time": "2024-05-01T10:10:00", "kind": "unit_trip", "unit": "crah_x9", "duration_s": 1200},
        {"time": "2024-05-01T10:10:00", "kind": "unit_trip", "hall": 3, "unit": "crah_w1", "duration_s": 60},
    ]}
    paths = {p.path: p for p in problems_of(data)}
    assert "crah_w1" in paths["site.cooling_system.events.0.unit"].expected
    assert "hall index" in paths["site.cooling_system.events.1.hall"].expected


def test_overlapping_fault_windows_on_one_unit():
    data = copy.deepcopy(BASE)
    data["site"]["cooling_faults"] = {"events": [
        {"time": "2024-05-01T10:10:00", "unit": "crah_w1", "duration_s": 1200},
        {"time": "2024-05-01T10:20:00", "unit": "crah_w1", "duration_s": 600},   # inside the first
        {"time": "2024-05-01T10:20:00", "unit": "crah_w2", "duration_s": 600},   # another unit: fine
        {"time": "2024-05-01T10:30:00", "unit": "crah_w1", "duration_s": 600},   # right after: fine
    ]}
    (prob,) = problems_of(data)
    assert prob.path == "site.cooling_faults.events.1" and "overlap" in prob.expected
    # across the two event lists, and power transfers among themselves
    data["site"]["cooling_faults"]["events"].pop(1)
    data["site"]["cooling_system"] = {"events": [
        {"time": "2024-05-01T10:35:00", "kind": "unit_trip", "unit": "crah_w1", "duration_s": 60},
        {"time": "2024-06-01T00:00:00", "kind": "power_transfer", "duration_s": 60},
        {"time": "2024-06-01T00:00:30", "kind": "power_transfer", "duration_s": 60},
    ]}
    paths = {p.path for p in problems_of(data)}
    assert paths == {"site.cooling_system.events.0", "site.cooling_system.events.2"}


def test_cli_validate_exits_2_with_one_line_per_problem(tmp_path, capsys):
    data = copy.deepcopy(BASE)
    data["site"]["cooling_system"] = {"weather_file": "no_such_year.epw"}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr()
    text = err.out + err.err
    assert "site.cooling_system.weather_file" in text and "Traceback" not in text
