"""Issue 18, validation parity: every input `twin run` used to crash on, hang on or mishandle
is refused by `twin validate` first, with exit 2 and a line naming the field, and `twin run`
refuses it the same way before simulating or writing anything."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from twin.cli import main
from twin.errors import ScenarioError
from twin.scenario import load_scenario

from .conftest import SMALL

ROW = "{name: r1, x_m: 3.5, y_m: 3.4, racks: 2, intake: south}"
UNIT = "{name: crac_1, x_m: 1.0, y_m: 1.0, airflow_m3_s: 3.0, capacity_kw: 45}"
HALL = f"{{name: server_room, width_m: 10, depth_m: 8, cell_m: 0.4, rows: [{ROW}], cooling_units: [{UNIT}]}}"

# (case id, --set overrides, text expected in the problem line)
CASES = [
    # geometry the run's thermal model rejected only after the scenario was accepted
    ("overlapping_rows", ["site.halls.0.rows=[" + ROW + ", {name: r2, x_m: 3.7, y_m: 3.4, racks: 2, intake: south}]"],
     "overlaps"),
    ("obstacle_over_racks", ["site.halls.0.obstacles=[{name: tray, x0_m: 3, y0_m: 3, x1_m: 5, y1_m: 4}]"],
     "obstacle clear of the racks"),
    ("cell_larger_than_hall", ["site.halls.0.cell_m=20"], "cell_m"),
    ("rack_on_cooling_unit", ["site.halls.0.cooling_units.0.x_m=3.5", "site.halls.0.cooling_units.0.y_m=3.4"],
     "stands on rack"),
    # model shape
    ("model_does_not_fit", ["workload.jobs.0.model.layers=2000"], "fits in GPU memory"),
    ("tp_not_dividing_heads", ["workload.jobs.0.model.heads=30", "workload.jobs.0.model.kv_heads=6",
                               "workload.jobs.0.tp=4"], "divides the 30 attention heads"),
    # names that would form paths, and names used twice
    ("slash_in_hall_name", ["site.halls.0.name=a/../../../../elsewhere/victim"], "site.halls.0.name"),
    ("hall_name_a_b", ["site.halls.0.name=a/b"], "site.halls.0.name"),
    ("scenario_name_escapes_runs", ["name=../../../victimdir"], "name"),
    ("job_name_path", ["workload.jobs.0.name=../x"], "workload.jobs.0.name"),
    ("unit_name_path", ["site.halls.0.cooling_units.0.name=a/b"], "cooling_units.0.name"),
    ("duplicate_hall_names", [f"site.halls=[{HALL}, {HALL}]", "site.power.rpp.racks_per_rpp=8"],
     "a hall name used once"),
    ("duplicate_feed_names", ["site.power.feeds.1.name=A"], "a feed name used once"),
    ("duplicate_unit_names", ["site.halls.0.cooling_units.1.name=crac_1"], "a cooling unit name used once"),
    # numbers that are not numbers, or not physical
    ("inf_duration", ["simulation.duration_days=.inf"], "finite"),
    ("nan_capacity", ["site.power.feeds.0.capacity_kw=.nan"], "finite"),
    ("inf_position", ["site.halls.0.rows.0.x_m=.inf"], "finite"),
    ("nan_temperature", ["site.halls.0.cooling_units.0.supply_temp_c=.nan"], "finite"),
    ("outdoor_below_absolute_zero", ["site.power.cooling.outdoor_temp_c=-300"], "outdoor_temp_c"),
    ("outdoor_swing_to_absurd", ["site.power.cooling.outdoor_temp_swing_c=400"], "outdoor temperature"),
    ("arrhenius_absolute_zero", ["failures.arrhenius_reference_temp_c=-273.15"], "arrhenius_reference_temp_c"),
    ("seed_2_pow_70", [f"simulation.seed={2**70}"], "simulation.seed"),
    ("seed_true", ["simulation.seed=true"], "simulation.seed"),
    ("spares_fraction", ["failures.spares=2.5"], "whole number"),
    ("racks_true", ["site.halls.0.rows.0.racks=true"], "rows.0.racks: got True"),
    # dates
    ("year_1500", ["simulation.start=1500-01-01"], "a date between"),
    ("year_2300", ["ramp.waves.0.date=2300-01-01"], "a date between"),
    ("ends_after_2200", ["simulation.start=2199-12-01", "simulation.duration_days=100",
                         "site.power.plan.0.date=2199-12-01", "ramp.waves.0.date=2199-12-01"], "ends by"),
    ("february_30_in_set", ["simulation.start=2025-02-30"], "day is out of range"),
    # honest time, bounded work
    ("interval_not_dividing", ["simulation.duration_days=10", "simulation.sample_interval_s=518400"],
     "divides the"),
    ("one_and_a_half_days_daily", ["simulation.duration_days=1.5", "simulation.sample_interval_s=86400"],
     "divides the"),
    ("interval_1e12", ["simulation.sample_interval_s=1e12"], "divides the"),
    ("tokens_target_1e-9", ["workload.jobs.0.tokens_target=1e-9"], "one step's tokens"),
    ("rate_scale_1e9", ["failures.rate_scale=1e9"], "failures.rate_scale"),
    ("class_rate_scale_1e9", ["failures.class_rate_scale={gpu_hbm3: 1e9}"], "event storm"),
    ("checkpoint_every_millisecond", ["workload.jobs.0.checkpoint_interval_s=0.001"], "checkpoint_interval_s"),
    ("grid_sag_storm", ["site.power.grid.sag_rate_per_year=1e12"], "site.power.grid"),
    ("huge_rpp_count", ["site.power.rpp.count=1000000000"], "site.power.rpp.count"),
    ("huge_hall", ["site.halls.0.width_m=1e7", "site.halls.0.depth_m=1e7"], "grid cells"),
    ("tiny_cells", ["site.halls.0.cell_m=0.001"], "grid cells"),
    ("second_samples_for_a_century", ["simulation.duration_days=36000", "simulation.sample_interval_s=1",
                                      "site.halls.0.rows.0.racks=2"], "GiB"),
]


@pytest.mark.parametrize("overrides, needle", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_and_run_refuse_alike(overrides, needle, tmp_path, capsys):
    sets = sum((["--set", o] for o in overrides), [])
    assert main(["validate", str(SMALL), *sets]) == 2
    err = capsys.readouterr().err
    assert needle in err, err
    assert "Traceback" not in err
    out = tmp_path / "never"
    assert main(["run", str(SMALL), "--out", str(out), *sets]) == 2
    err_run = capsys.readouterr().err
    assert err_run == err                 # the same problems, found before the run
    assert not out.exists() and list(tmp_path.iterdir()) == []


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("text, needle", [
    (f"extends: {SMALL}\nname: a\nname: b\n", "twice"),
    (f"extends: {SMALL}\nsimulation: {{start: 2025-02-30, duration_days: 1}}\n", "day is out of range"),
    (f"extends: {SMALL}\nsite:\n  power:\n    grid:\n      events: [{{time: 2025-01-07 25:00:00, kind: sag, "
     f"duration_s: 1}}]\n", "valid YAML values"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)),
     "aliases are expanded"),
    ("a: &a [1, *a]\n", "valid YAML"),
], ids=["duplicate_key", "february_30", "hour_25", "alias_bomb", "recursive_alias"])
def test_yaml_level_refusals(tmp_path, capsys, text, needle):
    f = _write(tmp_path, "s.yaml", text)
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err


def test_duplicate_keys_in_merge_are_still_allowed(tmp_path):
    """A YAML merge key may be overridden by an explicit key: that is not a duplicate."""
    f = _write(tmp_path, "s.yaml", f"extends: {SMALL}\nbase: &b {{x_m: 1.0}}\n")
    with pytest.raises(ScenarioError) as exc:       # 'base' is unknown, but the YAML loads
        load_scenario(f)
    assert "unknown key" in str(exc.value)


def _validate_subprocess(path, timeout=60):
    return subprocess.run([sys.executable, "-m", "twin.cli", "validate", str(path)], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_extends_a_fifo_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "pipe.yaml")
    child = _write(tmp_path, "child.yaml", "extends: pipe.yaml\n")
    for path in (child, tmp_path / "pipe.yaml"):
        p = _validate_subprocess(path)
        assert p.returncode == 2 and "regular file" in p.stderr, p.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_extends_dev_zero_is_refused_without_reading_it(tmp_path):
    child = _write(tmp_path, "child.yaml", "extends: /dev/zero\n")
    p = _validate_subprocess(child)
    assert p.returncode == 2 and "regular file" in p.stderr, p.stderr


def test_oversized_file_is_refused(tmp_path):
    from twin.scenario.loader import MAX_SCENARIO_BYTES
    big = _write(tmp_path, "big.yaml", "# " + "x" * MAX_SCENARIO_BYTES + "\n")
    with pytest.raises(ScenarioError, match="at most"):
        load_scenario(big)


def test_type_and_cross_field_problems_are_reported_together(tmp_path):
    """The README's two-problem example: a type error no longer hides the row outside the hall."""
    with pytest.raises(ScenarioError) as exc:
        load_scenario(SMALL, ["site.power.ups.capacity_kw=-5", "site.halls.0.rows.0.x_m=9.9"])
    paths = [p.path for p in exc.value.problems]
    assert paths == ["site.power.ups.capacity_kw", "site.halls.0.rows.0"], paths


def test_stand_in_values_do_not_invent_problems():
    """With nodes_per_rack invalid, no 'too few nodes' problem is made up from a stand-in."""
    with pytest.raises(ScenarioError) as exc:
        load_scenario(SMALL, ["hardware.nodes_per_rack=-2"])
    assert [p.path for p in exc.value.problems] == ["hardware.nodes_per_rack"]


def test_problem_is_attributed_to_the_set_that_caused_it():
    """Issue 17: a cooling unit moved onto a rack by --set names the --set, not only the file."""
    with pytest.raises(ScenarioError) as exc:
        load_scenario(SMALL, ["site.halls.0.cooling_units.0.x_m=3.5", "site.halls.0.cooling_units.0.y_m=3.4"])
    (p,) = exc.value.problems
    assert "--set site.halls.0.cooling_units.0.x_m=3.5" in p.file and str(SMALL) in p.file
    with pytest.raises(ScenarioError) as exc:
        load_scenario(SMALL, ["failures.spares=2.5"])
    (p,) = exc.value.problems
    assert p.file == "--set failures.spares=2.5" and p.path == "failures.spares"
