"""Racks whose servers are off draw no air (helper HOF), and a power event that shuts racks
down says what it cost (audit HA2 F7).

Before: the thermal model ran the fan law on every node, and a node that is off (heat 0)
was clipped to the fans' minimum speed, so a rack not yet delivered, powered off or shut
down still moved 0.30 of its full airflow, while the power model billed it no fan power.
Zero airflow then has to go through the recirculation family (per-watt maps divided by the
drawing racks' scale, not the hall mean), the hall's steady state (exhaust = inlet), the
event operator (no time constant) and the time to settle without dividing by zero."""

import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.phases import Phase
from twin.power.node import FAN_MIN_SPEED_FRACTION, node_dc_power_w, node_power_w
from twin.scenario import load_scenario
from twin.sim.engine import Engine
from twin.sim.hall_thermal import excursion_shutdown_text
from twin.thermal import events as hall_events
from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal.airflow import RecirculationFamily, flow_field_airflow_m3_s
from twin.thermal.fans import rack_airflow_from_fans_m3_s

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
XE = {"gpu_count": 8, "gpu_tdp_w": 700.0, "gpu_idle_w": 70.0, "host_idle_w": 1100.0, "host_active_w": 1900.0}


def test_a_node_that_is_off_moves_no_air_and_draws_no_fan_power():
    q = np.array([0.0, 0.0, 5000.0])
    powered = np.array([False, True, True])
    v = rack_airflow_from_fans_m3_s(q, 25.0, nodes_per_rack=1, design_heat_w=7500.0, airflow_max_m3_s=0.6,
                                    powered=powered)
    # off: 0; on and idle: the fans' minimum speed (0.30 x 0.6 m3/s); on and loaded: more
    assert v[0] == 0.0
    assert v[1] == pytest.approx(FAN_MIN_SPEED_FRACTION * 0.6)
    assert v[2] > v[1]
    # the power model already bills an OFF node nothing (no fan power either)
    ph = np.array([Phase.OFF, Phase.IDLE], np.int8)
    gpu, host, fan = node_dc_power_w(ph, 700.0, 25.0, fan_max_w=1600.0, node_max_w=10_200.0, **XE)
    assert (gpu[0], host[0], fan[0]) == (0.0, 0.0, 0.0)
    assert fan[1] == pytest.approx(1600.0 * FAN_MIN_SPEED_FRACTION**3)
    assert node_power_w(ph, 700.0, 25.0, fan_max_w=1600.0, node_max_w=10_200.0, **XE)[0] == 0.0


@pytest.fixture(scope="module")
def family():
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0)
    v0 = rack_airflow_m3_s(np.full(g.n_racks, 10e3), 12.0)
    return RecirculationFamily(g, v0, scales=(0.3, 0.5, 0.75, 1.0)), v0


def test_stopped_racks_count_zero_in_the_halls_draw_and_keep_the_heat_balance(family):
    fam, v0 = family
    quarter = np.arange(v0.size) < v0.size // 4
    # a quarter of the racks at 0.6 of full airflow, the rest stopped: the hall draws 0.15,
    # below the lowest knot (0.3, the fans' minimum speed, which no running rack goes under)
    v = np.where(quarter, 0.6 * v0, 0.0)
    m, knot = fam.model(v), fam.exact(0)
    assert fam.scale_of(v) == pytest.approx(0.15)
    # the lowest knot as it is: before, its maps were divided by 0.15 / 0.3 (twice the rise
    # per watt, and every watt of rack heat removed twice by the coils)
    np.testing.assert_allclose(m.recirculation_k_per_w, knot.recirculation_k_per_w, rtol=1e-12)
    np.testing.assert_allclose(m.cooling_heat_share.sum(axis=0), 1.0, rtol=1e-9)
    np.testing.assert_array_equal(m.rack_airflow_m3_s, v)
    # every rack stopped: finite maps (no division by the zero mean), no heat to place
    m0 = fam.model(np.zeros(v0.size))
    assert np.isfinite(m0.recirculation_k_per_w).all() and np.isfinite(m0.base_inlet_c).all()
    # between knots the heat balance holds too (s_c = (1 - w) s_a + w s_b)
    m1 = fam.model(np.where(quarter, 0.0, 0.8 * v0))
    np.testing.assert_allclose(m1.cooling_heat_share.sum(axis=0), 1.0, rtol=1e-9)
    # a derivation at the hall's own airflows passes the running racks' scale through a stopped one
    np.testing.assert_allclose(flow_field_airflow_m3_s(v, v0), 0.6 * v0)
    full = 0.6 * v0
    assert flow_field_airflow_m3_s(full, v0) is full


def test_zero_airflow_divides_by_nothing_in_the_hall_state_and_its_operator(family):
    fam, v0 = family
    v = np.where(np.arange(v0.size) < 3, 0.0, 0.6 * v0)
    m = fam.model(v)
    heat = np.where(v > 0, 8e3, 0.0)
    masses = hall_events.ThermalMasses.of(v0.size, 400.0, m.cooling_airflow_m3_s)
    with np.errstate(all="raise"):
        st = hall_events.hall_steady_state(m, heat, chilled_water_temp_c=12.0)
        op = hall_events.operator_for(m, masses, v)
        seg = hall_events.advance(st, m, 600.0, heat, masses, operator=op)
    # a stopped rack's exhaust is its inlet; the running racks' time constants set the step
    z = m.base_inlet_c + m.recirculation_k_per_w @ heat
    np.testing.assert_allclose(st.it_temp_c[:3], z[:3])
    assert np.isfinite(op.step_s) and op.step_s > 0
    assert np.isfinite(seg.inlet_temp_c).all()


@cache
def _ramp_engine():
    # Blue Vela's first days: the first racks delivered, most of the hall still empty
    e = Engine(load_scenario(BV, ["simulation.duration_days=10", "failures.enabled=false"]))
    e.run()
    return e


def test_racks_that_are_off_draw_no_air_in_the_engine():
    e = _ramp_engine()
    th, st = e.thermal, e.state
    on = np.asarray(st.rack_on, bool)
    assert 0 < on.sum() < on.size                  # some racks on, the rest not yet
    v = th.rack_fan_airflow_m3_s()
    up = np.bincount(e.plant.node_rack, weights=np.asarray(st.node_phase) != Phase.OFF, minlength=on.size)
    assert np.all(v[up == 0] == 0.0)               # before: 0.30 x full airflow
    # a rack moves at least its powered nodes' minimum-speed air
    share = up / e.plant.rack_nodes
    assert np.all(v[up > 0] >= FAN_MIN_SPEED_FRACTION * th.rack_airflow_m3_s[up > 0] * share[up > 0] * (1 - 1e-9))
    hall = th.halls[0]
    assert np.all(hall.airflow[~on[hall.idx]] == 0.0)
    assert np.all(hall.model.rack_airflow_m3_s[~on[hall.idx]] == 0.0)
    assert np.isfinite(hall.model.recirculation_k_per_w).all()


def test_the_excursion_text_counts_what_the_shutdowns_cost():
    names = np.array([f"r{i}" for i in range(10)])
    shut = [(np.array([0, 1, 2]), 6, 48.0, np.array([4, 7])), (np.array([5, 6, 7, 8]), 8, 64.0, np.array([7]))]
    text = excursion_shutdown_text(shut, names, 43.0)
    assert text.startswith("7 racks shut down on their 43 C inlet protection (r0, r1, r2, r5, r6 and 2 more)")
    assert "14 nodes, 112 GPUs off for 1 h until restarted, 112 GPU-h lost and 2 jobs interrupted" in text
    assert "not harmless" not in text and "cost work" in text


# every rack delivered (the last wave is 2024-06-15) and the UPS still in line (it carries
# the IT through the outage until the chain bypasses it on 2024-09-01)
OUTAGE = ["simulation.duration_days=2", "simulation.start=2024-08-20", "site.cooling_system.model=physical",
          'site.power.grid.events=[{time: "2024-08-21T10:10:00", kind: outage, duration_s: 600}]']


def test_a_chiller_restart_that_shuts_racks_down_says_so():
    # 1 m3 of stored chilled water lasts seconds at ~2 MW: the hall heats for the chillers'
    # 30-minute restart and every powered rack reaches its 43 C inlet protection. Before
    # (audit HA2 F7) the event gave the hottest inlet of any rack, counted unpowered racks
    # above 27 C and ended "a power-event transient, not a steady cooling shortfall" only
    r = twin.simulate(load_scenario(BV, [*OUTAGE, "site.cooling_system.plant.storage_m3=1"]))
    ev = r.events
    shut = ev[ev["kind"] == "rack_thermal_shutdown"]
    exc = ev.loc[ev["kind"] == "cooling_restart_excursion", "detail"]
    assert len(exc) == 1 and len(shut) > 100
    d = exc.iloc[0]
    assert f"{len(shut)} racks shut down on their 43 C inlet protection ({shut['target'].iloc[0]}, " in d
    m = re.search(r"(\d+) nodes, ([\d,]+) GPUs off for 1 h until restarted, ([\d,]+) GPU-h lost and (\d+) jobs", d)
    assert m is not None
    nodes, gpus, gpu_h = int(m[1]), int(m[2].replace(",", "")), int(m[3].replace(",", ""))
    assert len(shut) <= nodes <= 2 * len(shut) and gpus == 8 * nodes and gpu_h == gpus
    hot = re.search(r"(\d+) of (\d+) powered racks above 27 C", d)
    assert hot is not None and int(hot[1]) <= int(hot[2]) <= 128
    # the hottest inlet is a powered rack's, up to its own trip (not the room after it)
    assert float(d.split("hottest inlet ")[1].split(" C")[0]) < 44.0
    # without the shutdowns the verdict stays the benign one
    calm = twin.simulate(load_scenario(BV, [*OUTAGE, "site.cooling_system.plant.storage_m3=400"]))
    d2 = calm.events.loc[calm.events["kind"] == "cooling_restart_excursion", "detail"].iloc[0]
    assert "shut down" not in d2 and d2.endswith("a power-event transient, not a steady cooling shortfall")
