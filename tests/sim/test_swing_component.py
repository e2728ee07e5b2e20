"""The swing component: meter ramp KPIs of the jobs, branch-circuit loading and failover
overload events, and the mechanical load on a surviving feed."""

import math
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.phases import Phase
from twin.power.chain import feed_mechanical_w, phase_node_power_w, swing_report

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela_fixed.yaml"      # the meter ramp of its three fixed jobs
SHORT = ["simulation.duration_days=32", "site.power.cooling.outdoor_temp_c=30",
         "site.power.cooling.outdoor_temp_swing_c=0"]


def run(*overrides):
    return twin.simulate(twin.load_scenario(BV, list(SHORT) + list(overrides)))


@pytest.fixture(scope="module")
def base():
    return run()


def test_meter_ramp_kpis_of_the_jobs(base):
    k, ds = base.kpis, base.dataset
    assert math.isfinite(k["peak_meter_ramp_kw_per_s"])
    # no battery, no floor at Blue Vela: mitigated = unmitigated, no energy cost
    assert k["peak_meter_ramp_kw_per_s"] == pytest.approx(k["peak_meter_ramp_unmitigated_kw_per_s"])
    assert k["swing_mitigation_kwh_per_h"] == 0.0
    # the largest job's 1-s swing is a large part of its train -> checkpoint step, far above
    # the step-diluted sample ramp
    assert k["peak_meter_ramp_kw_per_s"] > 100 * k["peak_sample_ramp_kw_per_s"]
    # in the first month only granite_20b (48 nodes) trains; the others have no figure
    ramps = ds.job_meter_ramp_unmitigated_kw_per_s.values
    assert np.isfinite(ramps).tolist() == [False, True, False]
    assert k["peak_meter_ramp_kw_per_s"] <= k["peak_sync_swing_kw"] * 1.05


def test_a_1_mw_battery_halves_the_meter_ramp_in_a_run():
    res = run("site.power.chain.battery.power_kw=1000")
    k = res.kpis
    assert k["peak_meter_ramp_kw_per_s"] <= 0.5 * k["peak_meter_ramp_unmitigated_kw_per_s"]
    assert k["swing_mitigation_kwh_per_h"] > 0
    floor = run("site.power.chain.swing.gpu_power_floor_fraction=0.6")
    assert floor.kpis["peak_meter_ramp_kw_per_s"] < floor.kpis["peak_meter_ramp_unmitigated_kw_per_s"]


def test_component_matches_the_pure_swing_model(base):
    s = twin.load_scenario(BV, SHORT)
    pw = phase_node_power_w(s, inlet_c=float(np.nanmedian(base.dataset.rack_inlet_c.values)))
    step_kw = 48 * (pw["node_w"][Phase.TRAINING] - pw["node_w"][Phase.CHECKPOINT]) / 1e3
    # a checkpoint of a few seconds: the 1-s meter sees between half the step and all of it
    got = base.kpis["peak_meter_ramp_unmitigated_kw_per_s"]
    assert 0.5 * step_kw <= got <= 1.02 * step_kw
    # and the pure model with a 48-node job of similar step timing agrees
    r = swing_report(s, nodes=48, step_s=2.0, exposed_s=0.5, checkpoint_s=2.0, restart_s=600.0,
                     inlet_c=float(np.nanmedian(base.dataset.rack_inlet_c.values)))
    assert r["peak_meter_ramp_kw_per_s"] == pytest.approx(step_kw, rel=0.02)


def test_branch_loading_and_failover_overload_on_208v(base):
    k = base.kpis
    # 415 V 60 A cords: the hottest rack uses about half a cord on failover
    assert 0.2 < k["max_branch_load_fraction"] < 0.5
    assert k["max_failover_branch_load_fraction"] == pytest.approx(2 * k["max_branch_load_fraction"])
    assert not (base.events.kind == "branch_failover_overload").any()
    low = run("site.power.chain.branch.voltage_v=208")
    assert low.kpis["max_failover_branch_load_fraction"] > 1.0
    ev = low.events[low.events.kind == "branch_failover_overload"]
    assert len(ev) > 0 and ev.target.is_unique          # logged once per rack
    assert "if its partner is lost" in ev.detail.iloc[0]


def test_no_chain_gives_nan_branch_kpis():
    res = twin.simulate(twin.load_scenario(ROOT / "scenarios" / "lenovo_small.yaml",
                                           ["simulation.duration_days=3"]))
    assert math.isnan(res.kpis["max_branch_load_fraction"])
    assert math.isfinite(res.kpis["peak_meter_ramp_kw_per_s"])


FEED_LOSS = ["site.power.feeds.0.capacity_kw=500", "site.power.feeds.1.capacity_kw=500",
             "site.power.grid.events=[{time: '2024-01-31T12:00:00', kind: outage, duration_s: 3600, feed: A}]"]


def test_survivor_feed_carries_the_mechanical_load():
    # ~435 kW of IT at day 30: the 500 kW survivor holds the IT alone ...
    off = run(*FEED_LOSS, "site.power.chain.mechanical.carried_by=[utility, generators]")
    d = off.events[off.events.kind == "feed_loss"].detail.iloc[0]
    assert "survivor holds" in d
    # ... but not with its half of the chillers, fans, pumps and house loads (~115 kW at 30 C)
    on = run(*FEED_LOSS, "site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]")
    d = on.events[on.events.kind == "feed_loss"].detail.iloc[0]
    assert "survivor overloaded" in d and "kW mechanical" in d
    assert on.kpis["interruptions"] > off.kpis["interruptions"]


def test_feed_mechanical_split_and_transfer():
    s = twin.load_scenario(BV, ["site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]"])
    up = np.array([True, False])
    half = feed_mechanical_w(s, 1e6, 30.0, up)
    assert half[1] == 0.0 and half[0] > 0
    both = feed_mechanical_w(s, 1e6, 30.0, np.array([True, True]))
    # re-pinned by audit HA2 F1: the plant keeps cooling whole, so the survivor carries all of
    # it (its N+1 chillers' power), with or without a transfer switch (was both[0]: lost with it)
    assert half[0] == pytest.approx(both.sum())
    xfer = s.site.power.chain.mechanical.model_copy(update={"transfers_on_feed_loss": True})
    s2 = s.model_copy(update={"site": s.site.model_copy(update={"power": s.site.power.model_copy(update={
        "chain": s.site.power.chain.model_copy(update={"mechanical": xfer})})})})
    assert feed_mechanical_w(s2, 1e6, 30.0, up)[0] == pytest.approx(both.sum())


def test_stages_can_set_the_plan_from_the_equipment():
    from twin.power.chain import capacity_report
    s = twin.load_scenario(BV, ["site.power.chain.stages_set_plan=true", "simulation.duration_days=80"])
    res = twin.simulate(s)
    derived = [st["it_capacity_kw"] for st in capacity_report(s)["stages"]]
    avail = np.unique(res.dataset.power_available_w.values) / 1e3
    np.testing.assert_allclose(avail, derived[:2])          # 2024-01-01 and 2024-03-15 within 80 days
    ev = res.events[res.events.kind == "power_stage"]
    assert ev.detail.tolist() == [f"{derived[0]:.0f} kW IT available", f"{derived[1]:.0f} kW IT available"]
