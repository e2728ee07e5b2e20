"""``twin validate`` refuses a run UPS mode other than the chain's as-built one (audit
finding 4): a run whose chain changes the UPS mode at a dated stage starts in the chain's
as-built mode, so a different ``site.power.ups.mode`` would say two UPS histories."""

from __future__ import annotations

from pathlib import Path

import pytest

import twin
from twin.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"


def test_site_mode_other_than_the_chains_as_built_is_a_problem():
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BV, ["site.power.ups.mode=bypass"])
    (p,) = exc.value.problems
    assert p.path == "site.power.ups.mode" and p.value == "bypass"
    assert "as-built UPS mode 'double_conversion'" in p.expected and "site.power.chain.ups.mode" in p.expected


def test_site_and_chain_both_bypassed_is_valid_and_runs_bypassed_all_run():
    s = twin.load_scenario(BV, ["site.power.ups.mode=bypass", "site.power.chain.ups.mode=bypass"])
    from twin.scenario.power_chain import ups_mode_changes
    assert ups_mode_changes(s.site.power.chain, s.simulation.start, s.site.power.ups.mode) == ("bypass", [])


def test_a_mode_the_engine_does_not_model_is_a_problem_when_the_chain_changes_it():
    with pytest.raises(ScenarioError) as exc:
        # the 2024-09-01 stage is the chain's stage 2 (3 until 2 Dec 2026, before the RPP re-feed
        # was read into the March stage)
        twin.load_scenario(BV, ["site.power.chain.stages.2.set={ups.mode: line_interactive}"])
    assert [(p.path, p.value) for p in exc.value.problems] == [
        ("site.power.chain.stages.2.set.ups.mode", "ups.mode line_interactive from 2024-09-01")]


def test_shipped_scenarios_agree():
    for f in [*ROOT.glob("scenarios/*.yaml"), *ROOT.glob("scenarios/sites/*.yaml")]:
        twin.load_scenario(f)
