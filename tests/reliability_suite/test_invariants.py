"""Issue 18, run-time invariants: every run is checked (energy balance, temperature ceilings,
non-negative energies, spares and repairs accounted for) and the warnings reach kpis.json,
the CLI and the sweep's run records."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import twin
from twin.cli import main
from twin.invariants import INLET_CEILING_C, check_results

from .conftest import SMALL

# servers without inlet protection (the twin's racks shut down at 43 C and never reach the
# ceiling; tests/sim/test_cooling_physical.py checks that), so the invariant has work to do
STARVED = ["simulation.duration_days=2", "site.halls.0.cooling_units.0.airflow_m3_s=0.05",
           "site.halls.0.cooling_units.1.airflow_m3_s=0.05", "site.cooling_system.server_inlet_shutdown_c=1000"]


@pytest.fixture(scope="module")
def healthy():
    return twin.simulate(twin.load_scenario(SMALL, ["simulation.duration_days=3", "failures.rate_scale=100"]))


def test_a_healthy_run_with_many_failures_satisfies_every_invariant(healthy):
    assert healthy.kpis["failures"] > 0
    assert check_results(healthy) == []


def test_starved_cooling_is_flagged_not_silent(tmp_path, capsys):
    """Every cooling unit at 0.05 m3/s: inlets far past any server's shutdown while the racks
    stay powered (Blue Vela reached 1,026 C) - the run now says so."""
    out = tmp_path / "r"
    assert main(["run", str(SMALL), "--out", str(out), "--no-field", *sum((["--set", o] for o in STARVED), [])]) == 0
    err = capsys.readouterr().err
    assert "warning: temperature_ceiling" in err
    warnings = json.loads((out / "kpis.json").read_text())["warnings"]
    checks = {w["check"] for w in warnings}
    assert checks == {"temperature_ceiling"}
    assert any(f"{INLET_CEILING_C:g} C inlet" in w["message"] for w in warnings)
    again = twin.Results.load(out)
    assert "warnings" not in again.kpis
    assert json.loads(again.dataset.attrs["invariant_warnings"]) == warnings


def _tampered(res, name, fn):
    ds = res.dataset.copy(deep=True)
    ds[name] = fn(ds[name])
    return dataclasses.replace(res, dataset=ds)


@pytest.mark.parametrize("name, fn, check", [
    ("cooling_power_w", lambda v: v * 1.01 + 1000.0, "energy_balance"),
    ("rpp_loss_w", lambda v: v + 500.0, "energy_balance"),
    ("ups_loss_w", lambda v: v - 1e9, "non_negative"),
    ("gpus_busy", lambda v: v + 10**6, "accounting"),
    ("spares_in_stock", lambda v: v - 100, "accounting"),
])
def test_each_check_catches_its_violation(healthy, name, fn, check):
    got = {w["check"] for w in check_results(_tampered(healthy, name, fn))}
    assert check in got


def test_energy_kpi_must_integrate_its_series(healthy):
    bad = dataclasses.replace(healthy, kpis={**healthy.kpis, "energy_it_mwh": healthy.kpis["energy_it_mwh"] * 2})
    assert any("energy_it_mwh" in w["message"] for w in check_results(bad))


def test_unaccounted_repair_is_flagged(healthy):
    bad = dataclasses.replace(healthy, kpis={**healthy.kpis, "repairs_open_at_end": healthy.kpis.get(
        "repairs_open_at_end", 0) + 3})
    assert any(w["check"] == "accounting" and "repairs finished" in w["message"] for w in check_results(bad))


def test_sweep_records_keep_the_warnings(tmp_path):
    from twin.sweep import SweepSpec, run_sweep
    spec = SweepSpec(scenario=str(SMALL), overrides=tuple(STARVED), series=())
    out = run_sweep(spec, tmp_path / "sw", workers=1)
    rec = json.loads((tmp_path / "sw" / "runs" / f"{out.ran[0]}.json").read_text())
    assert {w["check"] for w in rec["warnings"]} == {"temperature_ceiling"}
    assert np.isfinite(out.dataset.max_rack_inlet_c.values).all()


def test_twin_sweep_says_when_runs_broke_an_invariant(tmp_path):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "twin.cli", "sweep", str(SMALL), *sum((["--set", o] for o in STARVED), []),
                        "--series", "none", "--workers", "1", "--out", str(tmp_path / "sw")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "1 runs broke a run-time invariant" in r.stderr and "temperature_ceiling" in r.stderr


def test_the_run_report_shows_the_broken_invariants(tmp_path):
    """Issue 18: warnings reach the report's summary, not only kpis.json."""
    from twin.report import build_report

    out = tmp_path / "r"
    assert main(["run", str(SMALL), "--out", str(out), "--no-field", *sum((["--set", o] for o in STARVED), [])]) == 0
    page = build_report(out)
    summary = page.split("<section id='summary'>", 1)[1].split("</section>", 1)[0]
    assert "run-time check temperature_ceiling" in summary
    assert f"{INLET_CEILING_C:g} C inlet" in summary
