"""The outside contract: `twin run/validate/schema`, exit codes, files written, atomicity."""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import twin
from twin.cli import ProgressBar, main
from twin.results import KPI_UNITS, Results

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
REQUIRED_KPIS = ["tokens_total", "tokens_per_day_mean", "gpu_hours_installed", "gpu_hours_healthy",
                 "goodput_fraction", "interruptions", "energy_it_mwh", "energy_facility_mwh", "pue_mean",
                 "peak_facility_power_kw", "max_rpp_load_fraction", "max_rack_inlet_c",
                 "hours_above_ashrae_recommended"]


def ds_peak_index(res):
    return np.argmax(res.dataset.facility_it_power_w.values)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "twin.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT)


def test_run_writes_the_three_files_and_prints_kpis(tmp_path):
    out = tmp_path / "run"
    p = cli("run", SMALL, "--out", out, "--set", "simulation.duration_days=2", "--seed", "5")
    assert p.returncode == 0, p.stderr
    assert "tokens_total" in p.stdout and "MWh" in p.stdout
    assert "\r" not in p.stderr                      # no progress bar when not a terminal
    ds = xr.open_dataset(out / "results.nc", engine="h5netcdf")
    assert {"time", "rack"} <= set(ds.dims)
    for name in ("rack_power_w", "rpp_load_fraction", "facility_it_power_w", "facility_total_power_w",
                 "rack_inlet_c", "gpus_healthy", "gpus_powered", "job_tokens"):
        assert "units" in ds[name].attrs and "long_name" in ds[name].attrs, name
    assert ds.attrs["seed"] == 5 and len(ds.attrs["scenario_hash"]) == 64
    assert ds.attrs["twin_version"] == twin.__version__
    ds.close()
    kpis = json.loads((out / "kpis.json").read_text())
    assert kpis.pop("warnings") == []                # run-time invariants hold (twin.invariants)
    assert set(REQUIRED_KPIS) <= set(kpis)
    assert set(kpis) <= set(KPI_UNITS)
    header = (out / "events.csv").read_text().splitlines()[0]
    assert header == "time,time_s,kind,target,detail"
    again = Results.load(out)
    assert again.kpis == kpis and json.loads(again.dataset.attrs["invariant_warnings"]) == []
    (hall,) = again.fields
    field = again.fields[hall]
    assert {"x_m", "y_m"} <= set(field.coords) and field.temperature.attrs.get("units") in ("C", "degC")
    # the field at the peak sample reproduces the recorded inlet temperatures of that sample
    # (the run's D comes from the buoyant field on 3 layers, the written field is the hall's
    # own plan-view solve: within 0.1 K here)
    i = int(ds_peak_index(again))
    np.testing.assert_allclose(field.rack_inlet_temp.values, again.dataset.rack_inlet_c.values[i], atol=0.1)


@pytest.mark.parametrize("text, path", [
    ("simulation: {start: 2024-01-01, duration_days: -3}\n", "simulation.duration_days"),
    ("extends: missing.yaml\n", "extends"),
    ("name: [unclosed\n", "line"),
])
def test_bad_scenario_exits_2_with_problem_lines_and_writes_nothing(tmp_path, text, path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    out = tmp_path / "never"
    for cmd in (("validate", bad), ("run", bad, "--out", out)):
        p = cli(*cmd)
        assert p.returncode == 2
        assert "Traceback" not in p.stderr
        assert str(bad) in p.stderr and path in p.stderr and "expected" in p.stderr
    assert not out.exists()


def test_validate_ok_and_schema_is_json(capsys):
    assert main(["validate", str(SMALL)]) == 0
    assert "ok:" in capsys.readouterr().out
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "site" in schema["properties"] and "$defs" in schema


def test_bad_override_exits_2(capsys):
    assert main(["validate", str(SMALL), "--set", "site.power.ups.mode=flywheel"]) == 2
    err = capsys.readouterr().err
    assert "site.power.ups.mode" in err and "flywheel" in err


def test_killed_save_leaves_no_half_result(tmp_path, monkeypatch):
    res = twin.simulate(twin.load_scenario(SMALL, ["simulation.duration_days=1"]))
    out = tmp_path / "r"

    def boom(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(type(res.events), "to_csv", boom)
    with pytest.raises(KeyboardInterrupt):
        res.save(out)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    res.save(out)
    assert sorted(p.name for p in out.iterdir()) == [".twin-result.json", "events.csv", "kpis.json", "results.nc"]


def test_progress_bar_only_on_a_terminal():
    quiet = io.StringIO()
    bar = ProgressBar("x", stream=quiet, delay_s=0)
    bar(0.5)
    assert quiet.getvalue() == ""
    loud = io.StringIO()
    bar = ProgressBar("x", stream=loud, delay_s=0, force=True)
    bar(0.5)
    bar(1.0)
    assert "50.0%" in loud.getvalue() and loud.getvalue().endswith("\n")


def test_closed_pipe_exits_quietly():
    """`twin schema | head -1` used to end in a BrokenPipeError traceback."""
    p = subprocess.Popen([sys.executable, "-m", "twin.cli", "schema"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=ROOT)
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
