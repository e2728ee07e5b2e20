"""Audit finding 5: one cooling-plant power per hall. ``scenario_cooling_power_w`` evaluates the
plant the run uses (the physical model's chilled-water plant and CRAH fans, or the legacy
COP and fan/pump share), so a capacity check that calls it gives the run's answer."""

from functools import cache
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.power.cooling_plant import design_crah_fan_power_w, scenario_cooling_power_w
from twin.power.facility import cooling_power_w
from twin.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"


@cache
def bv():
    s = load_scenario(BV, ["simulation.duration_days=16", "simulation.start=2024-07-01",
                           *(f"ramp.waves.{i}.date=2024-07-01" for i in range(4))])
    return s, twin.simulate(s)


def test_the_physical_plant_is_the_runs_plant_sample_by_sample():
    s, r = bv()
    ds = r.dataset
    assert s.site.cooling_system.model == "physical"
    heat = ds.facility_it_power_w.values + ds.ups_loss_w.values + ds.rpp_loss_w.values   # building heat
    got = scenario_cooling_power_w(s, heat, ds.outdoor_temp_c.values)
    on = ds.facility_it_power_w.values > 0
    assert on.sum() > 100
    # Blue Vela's constant-speed CRAH fans: 12 x 15 m3/s x 500 Pa / 0.6 at any load
    assert design_crah_fan_power_w(s) == pytest.approx(12 * 15 * 500 / 0.6, rel=1e-12)
    assert got[on] == pytest.approx(ds.cooling_power_w.values[on], rel=1e-9)
    # site.power.cooling's COP at 25 C and fan/pump share (the legacy plant) read 12-20 % less
    c = s.site.power.cooling
    legacy = cooling_power_w(heat, ds.outdoor_temp_c.values, chiller_cop_at_25c=c.chiller_cop_at_25c,
                             fan_pump_fraction=c.fan_pump_fraction)
    i = int(np.argmax(ds.facility_it_power_w.values))
    assert legacy[i] < 0.9 * got[i]


def test_a_legacy_scenario_keeps_site_power_cooling():
    s = load_scenario(BV, ["site.cooling_system.model=legacy", "site.power.cooling.chiller_cop_at_25c=3.0",
                           "site.power.cooling.fan_pump_fraction=0.08"])
    got = scenario_cooling_power_w(s, np.array([1e6, 2e6]), np.array([25.0, 30.0]))
    want = cooling_power_w(np.array([1e6, 2e6]), np.array([25.0, 30.0]), chiller_cop_at_25c=3.0,
                           fan_pump_fraction=0.08)
    assert got == pytest.approx(want, rel=1e-12)
    # the physical plant does not read them
    p = load_scenario(BV, ["site.power.cooling.chiller_cop_at_25c=3.0", "site.power.cooling.fan_pump_fraction=0.08"])
    assert scenario_cooling_power_w(p, 2e6, 30.0) == pytest.approx(
        float(scenario_cooling_power_w(load_scenario(BV), 2e6, 30.0)), rel=1e-12)
