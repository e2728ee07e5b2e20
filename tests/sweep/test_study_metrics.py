"""Planner's figures of a run (twin/studies/metrics.py): hand-checked accounting, limits,
and agreement with the run's own KPIs and series."""

import math

import numpy as np
import pytest

import twin
from twin import power
from twin.catalog import node_model
from twin.studies.metrics import (
    binding_constraint,
    co2_t,
    cost_per_billion_tokens_usd,
    duration_below_days,
    energy_cost_usd,
    facility_it_limit_w,
    first_time_reached_days,
    study_kpis,
    use_fraction,
)

from .conftest import SCENARIOS


def test_energy_cost_and_co2_by_hand():
    # 1,000 MWh at 80 USD/MWh and 370 kg/MWh: 80,000 USD and 370 t
    assert energy_cost_usd(1000.0, 80.0) == pytest.approx(80_000.0)
    assert co2_t(1000.0, 370.0) == pytest.approx(370.0)
    np.testing.assert_allclose(co2_t([0.0, 2.0], 500.0), [0.0, 1.0])
    assert cost_per_billion_tokens_usd(50.0, 5e9) == pytest.approx(10.0)
    assert np.isnan(cost_per_billion_tokens_usd(50.0, 0.0))


def test_first_time_reached_and_time_below():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    s = np.array([0, 5, 10, 10])
    assert first_time_reached_days(s, t, 10) == 2.0
    assert math.isnan(first_time_reached_days(s, t, 11))
    assert math.isnan(first_time_reached_days(s, t, 0))
    # hourly samples: 2 of 4 below -> 2 h = 1/12 day
    assert duration_below_days([1, 1, 3, 3], [3, 3, 3, 3], 3600) == pytest.approx(2 / 24)


def test_facility_limit_follows_ups_and_redundancy():
    feeds = [2000e3, 1500e3]
    # bypass, no redundancy: both feeds carry load -> the plan binds
    assert facility_it_limit_w(2805e3, 1650e3, False, feeds, False) == 2805e3
    # UPS in line: its rating binds
    assert facility_it_limit_w(2805e3, 1650e3, True, feeds, False) == 1650e3
    # 2N: one feed alone must carry everything -> the smaller feed
    assert facility_it_limit_w(2805e3, 3000e3, True, feeds, True) == 1500e3


def test_binding_constraint_names_every_constraint_at_its_limit():
    assert binding_constraint(0.5, 0.6, 0.7, 5.0) == "none"
    assert binding_constraint(1.1, 0.6, 0.97, 5.0) == "power + floor"
    assert binding_constraint(0.5, 0.6, 0.7, -1.0) == "cooling"   # inlet above 27 C
    assert use_fraction(2.0, 0.0) == np.inf


def test_study_kpis_of_a_small_run_agree_with_its_kpis_and_a_hand_check():
    s = twin.load_scenario(SCENARIOS / "lenovo_small.yaml", ["simulation.duration_days=3"])
    r = twin.simulate(s)
    k = study_kpis(s, r)
    econ = s.site.economics
    assert k["energy_cost_usd"] == pytest.approx(r.kpis["energy_facility_mwh"] * econ.electricity_usd_per_mwh)
    assert k["co2_t"] == pytest.approx(r.kpis["energy_facility_mwh"] * econ.carbon_kg_per_mwh / 1e3)
    assert k["gpus_hosted"] == r.dataset.gpus_powered.max() == 32       # 4 nodes x 8 GPUs
    assert k["floor_use_fraction"] == 1.0                                # 2 racks on 2 positions
    assert k["inlet_margin_c"] == pytest.approx(27.0 - r.kpis["max_rack_inlet_c"])
    # power: 2 racks of 2 SR675 V3 at TDP (4 x 2400 W PSUs) + 900 W network share, on one 125 A / 400 V 3-phase
    # RPP at the NEC 80 % continuous limit: sqrt(3) * 400 V * 125 A * 0.8 * pf
    n = node_model(s.hardware.node_model)
    node_w = float(power.node_worst_case_w(n.gpu_tdp_w, gpu_count=n.gpu_count, gpu_tdp_w=n.gpu_tdp_w,
                                           gpu_idle_w=n.gpu_idle_w, host_idle_w=n.host_idle_w,
                                           host_active_w=n.host_active_w, fan_max_w=n.fan_max_w,
                                           node_max_w=n.node_max_w, psu_capacity_w=4 * 2400.0))
    rack_w = 2 * node_w + 900.0
    rpp_w = math.sqrt(3) * 400 * 125 * 0.8 * s.site.power.rpp.power_factor
    assert k["power_use_fraction"] == pytest.approx(max(2 * rack_w / rpp_w, 2 * rack_w / 80e3), rel=1e-9)
    # cooling: the same worst-case heat against 2 x 45 kW
    assert k["cooling_use_fraction"] == pytest.approx(2 * rack_w / 90e3, rel=1e-9)
    assert k["days_to_full_capacity"] == k["days_to_max_hosted"] == 0.0
    assert k["days_power_limited"] == 0.0
