"""Audit finding 2: the engine's rack airflow (``rack_airflow: fan_model``) turns the servers'
fans at the speed the power model bills (the fan law on each node's GPU + host DC heat at
its rack's inlet), not at a speed fed by the rack's AC power (fans, PSU loss and network
included, 17 % more air); the heat into the air stays the rack's AC power."""

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from twin.phases import Phase
from twin.power.node import node_dc_power_w, node_fan_speed_fraction, node_heat_w
from twin.scenario import load_scenario
from twin.sim.engine import Engine
from twin.thermal.fans import rack_airflow_from_fans_m3_s

ROOT = Path(__file__).resolve().parents[2]
BVF = ROOT / "scenarios" / "blue_vela_fixed.yaml"
#: the audit's case: Blue Vela's fixed jobs, 10 days from 2024-06-20 with all 128 racks, the
#: enclosures off and the CRAHs at 8 m3/s: an open hall whose racks recirculate their exhaust
OPEN_HALL = (["simulation.start=2024-06-20", "simulation.duration_days=10"]
             + [f"ramp.waves.{i}.date=2024-06-20" for i in range(4)]
             + [f"site.power.plan.{i}.date=2024-06-2{i}" for i in range(4)]
             + [f"site.halls.0.rows.{i}.enclosure=false" for i in range(8)]
             + [f"site.halls.0.cooling_units.{i}.airflow_m3_s=8" for i in range(12)])


@cache
def open_hall():
    e = Engine(load_scenario(BVF, OPEN_HALL))
    return e, e.run()


def test_the_hand_figures_of_the_audit():
    # XE9680-class node at an 18 C inlet in training: GPU 70 + 0.95 x 630 = 668.5 W x 8 and host
    # 1,740 W = 7,088 W DC; design 8 x 700 + 1,900 = 7,500 W; s = 7088/7500 x (68-35)/(68-18)
    q = float(node_heat_w(np.array([Phase.TRAINING]), 700.0, gpu_count=8, gpu_tdp_w=700.0, gpu_idle_w=70.0,
                          host_idle_w=1100.0, host_active_w=1900.0)[0])
    assert q == pytest.approx(7088.0, abs=0.5)
    s = float(node_fan_speed_fraction(q, 18.0, design_heat_w=7500.0))
    assert s == pytest.approx(7088 / 7500 * 33 / 50, rel=1e-3)          # 0.624, rack 2 x 0.60 x s = 0.748 m3/s


def test_thermal_airflow_is_the_power_models_fan_speed():
    e, _ = open_hall()
    p, st = e.plant, e.state
    v = e.thermal.rack_fan_airflow_m3_s()
    kw = p.node_power_kwargs()
    clock = st.node_clock * st.brake_clock
    inlet = np.asarray(st.rack_inlet_c)[p.node_rack]
    _, _, fan_w = node_dc_power_w(st.node_phase, e.power.gpu_cap_w, inlet, clock_fraction=clock,
                                  **{k: x for k, x in kw.items() if k != "psu_capacity_w"})
    on = np.asarray(st.node_phase) != Phase.OFF
    assert on.sum() >= 200                     # most of the 256 nodes run at the end
    s_power = np.cbrt(fan_w / kw["fan_max_w"])          # the fans the power model bills, P = P_max s^3
    v_max = p.node_param("airflow_m3_s_at_max")
    v_power = np.bincount(p.node_rack, weights=np.where(on, s_power, 0.3) * v_max, minlength=p.n_racks)
    v_power = np.where(np.bincount(p.node_rack, weights=on, minlength=p.n_racks) == 2, v_power, np.nan)
    ok = np.isfinite(v_power)
    assert ok.sum() >= 100
    assert v[ok] == pytest.approx(v_power[ok], rel=1e-9)
    # the hall's models hold that airflow (within the 5 % the engine lets it drift before re-deriving)
    hall = e.thermal.halls[0]
    assert hall.airflow[ok] == pytest.approx(v[ok], rel=0.05)
    # the rack's AC power per node in the same law (the former input) turns the fans 14-17 % faster
    v_ac = rack_airflow_from_fans_m3_s(e.sampler.last_rack_power_w() / 2, np.asarray(st.rack_inlet_c),
                                       nodes_per_rack=2, design_heat_w=7500.0, airflow_max_m3_s=0.6)
    assert float(np.median(v_ac[ok] / v[ok])) == pytest.approx(1.16, abs=0.03)


def test_heat_into_the_air_stays_the_racks_ac_power_and_the_open_hall_stays_below_27c():
    _, r = open_hall()
    ds = r.dataset
    heat = ds.rack_power_w.sum("rack").values
    load = ds.cooling_unit_load_w.sum("cooling_unit").values
    on = heat > 0
    assert on.sum() > 200
    # energy: every watt of rack AC power (fans, PSU loss and network included) ends in a coil
    assert load[on] == pytest.approx(heat[on], rel=1e-6)
    # with the power model's fan speed the under-supplied open hall recirculates less rack air:
    # hottest inlet 25.6 C and no rack-hour above 27 C (28.7 C and 1,802 rack-h with the AC power;
    # measured at e727f2b's power chain, which other fixes move by a few tenths)
    assert 24.5 < r.kpis["max_rack_inlet_c"] < 26.5
    assert r.kpis["hours_above_ashrae_recommended"] == 0.0
