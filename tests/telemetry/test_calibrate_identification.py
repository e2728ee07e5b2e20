"""Audit HA2 F4 and F12e: fits the data do not determine are reported as not identified, with
the reason, instead of a value (or a NaN 1-sigma) that reads as fitted.

* F4: node counts that move together (busy and idle differ only by a node in repair) give a
  busy node at -4 kW and an idle node at 28 kW; a condition index of the column-scaled design
  above 30 (Belsley et al. 1980) or a non-positive power marks them not identified, and the prior
  printed is the node model's own per-state power, not the same fit on the run.
* F12e: with the economiser carrying all the heat the chiller COP has no effect on the cooling
  power: its 1-sigma was NaN (singular J^T J) and so was the fan + pump fraction's, which the
  data do fix.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import twin
from twin.telemetry.calibrate import (
    MAX_CONDITION_INDEX,
    collinear_columns,
    fit_cooling,
    fit_node_state_power_w,
    node_state_prior_w,
)

from .conftest import ROOT

TRUE_W = np.array([4900.0, 1560.0, 5100.0])   # busy, idle, burn-in node power [W]


def _review_counts():
    """The three count patterns of HA2's 10-day Vela run: (busy, idle, other) nodes."""
    return np.array([[0, 0, 128]] * 48 + [[96, 32, 0]] * 168 + [[96, 31, 1]] * 24, float)


def test_busy_and_idle_that_move_together_are_not_identified():
    x = _review_counts()
    rng = np.random.default_rng(4)
    y = x @ TRUE_W + rng.normal(0.0, 20e3, len(x))   # 20 kW of phase mix the state model lacks
    b, sig, ident, _ = fit_node_state_power_w(y, x[:, 0], x[:, 1], x[:, 2], np.zeros(len(x)), 0.0)
    assert ident.tolist() == [False, False, True]
    assert b[2] == pytest.approx(5100.0, rel=0.02)
    mask, cond = collinear_columns(x)
    assert mask.tolist() == [True, True, False]
    assert cond == pytest.approx(192.8, rel=0.01) and cond > MAX_CONDITION_INDEX
    # what the data do fix: 96 busy + 31.9 idle nodes, to within a fraction of a per cent
    on = x[:, 0] > 0
    counts = x[on][:, :2].mean(axis=0)
    assert counts @ b[:2] == pytest.approx(counts @ TRUE_W[:2], rel=0.01)


def test_independent_counts_are_identified_and_a_negative_power_is_not():
    rng = np.random.default_rng(5)
    n = 400
    x = np.column_stack([rng.integers(40, 120, n), rng.integers(0, 60, n), rng.integers(0, 20, n)]).astype(float)
    y = x @ TRUE_W + rng.normal(0.0, 2e3, n)
    b, sig, ident, _ = fit_node_state_power_w(y, *x.T, np.zeros(n), 0.0)
    assert ident.all() and np.all(np.abs(b - TRUE_W) < 4 * sig)
    assert collinear_columns(x)[1] < MAX_CONDITION_INDEX
    y_bad = x @ np.array([4900.0, -300.0, 5100.0]) + rng.normal(0.0, 2e3, n)
    b, sig, ident, _ = fit_node_state_power_w(y_bad, *x.T, np.zeros(n), 0.0)
    assert b[1] < 0 and ident.tolist() == [True, False, True]


def test_prior_is_the_node_models_power_per_state():
    s = twin.load_scenario(ROOT / "scenarios" / "vela.yaml", [])
    w, note = node_state_prior_w(s, 20.0)
    # vela_a100 at 20 C inlet: TRAINING 4,829 W, IDLE 1,559 W, BURN_IN 5,111 W (twin.power.chain)
    assert w == pytest.approx([4829.0, 1559.0, 5111.0], abs=1.0)
    assert "vela_a100" in note


def test_cooling_fit_with_the_chiller_off_names_why_the_cop_has_no_sigma():
    rng = np.random.default_rng(6)
    n = 240
    heat = rng.uniform(4e5, 6e5, n)
    out_c = rng.uniform(4.8, 6.2, n)          # below 7 C: the economiser carries all the heat
    from twin import power
    cool = power.cooling_power_w(heat, out_c, chiller_cop_at_25c=4.5, fan_pump_fraction=0.085)
    cool = cool * (1 + 0.01 * rng.standard_normal(n))
    cop, fp, sig, before, after, why = fit_cooling(cool, heat, out_c, 5.0, 0.05)
    assert cop == 5.0 and np.isnan(sig[0]) and "economiser carried all the heat" in why[0]
    assert fp == pytest.approx(0.085, rel=0.01) and np.isfinite(sig[1]) and 0 < sig[1] < 0.002 and why[1] == ""
    # with warm weather both are fitted, each with a 1-sigma
    out_c = rng.uniform(15.0, 30.0, n)
    cool = power.cooling_power_w(heat, out_c, chiller_cop_at_25c=4.5, fan_pump_fraction=0.085)
    cop, fp, sig, *_, why = fit_cooling(cool, heat, out_c, 5.0, 0.05)
    assert cop == pytest.approx(4.5, rel=1e-3) and np.all(np.isfinite(sig)) and why == ["", ""]


@pytest.mark.slow
def test_calibrate_on_the_twins_own_output(tmp_path, capsys):
    """HA2's reproduction: 10 days of Vela exported and calibrated against itself."""
    from twin.cli.calibrate import run_calibrate_cli
    from twin.telemetry.export import write_openmetrics
    sets = ["simulation.duration_days=10"]
    res = twin.simulate(twin.load_scenario(ROOT / "scenarios" / "vela.yaml", sets))
    om = tmp_path / "run.om"
    write_openmetrics(res.dataset, om)
    rc = run_calibrate_cli([str(ROOT / "scenarios" / "vela.yaml"), str(om), "--out", str(tmp_path / "c.yaml"),
                            "--set", sets[0], "--set", "site.cooling_system.model=legacy", "--json"])
    assert rc == 0
    fits = {f["name"]: f for f in json.loads(capsys.readouterr().out)["fits"]}
    busy, idle = fits["node power, busy (training)"], fits["node power, idle"]
    assert not busy["identified"] and not idle["identified"]
    assert "condition index" in busy["note"] and "is determined" in idle["note"]
    assert busy["prior"] == pytest.approx(4829.0, rel=0.02) and idle["prior"] == pytest.approx(1559.0, rel=0.02)
    cop = fits["chiller COP at 25 C"]
    assert not cop["identified"] and "economiser carried all the heat" in cop["note"]
    assert fits["CRAH fan + pump power per heat"]["identified"]
    assert np.isfinite(fits["CRAH fan + pump power per heat"]["sigma"])
    text = (tmp_path / "c.yaml").read_text()
    assert "chiller_cop_at_25c" not in text.split("# Fitted but not")[0].split("extends:")[1]
