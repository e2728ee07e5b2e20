"""CRAH fans on the affinity laws; rack airflow from the server fans and the recirculation
model that follows it."""

import numpy as np
import pytest

from twin.thermal import inlet_model, inlet_temp_c, row_hall
from twin.thermal.airflow import RecirculationFamily, airflow_changed
from twin.thermal.fans import (
    crah_airflow_m3_s,
    crah_fan_power_w,
    fan_design_power_w,
    rack_airflow_from_fans_m3_s,
)
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K


def test_design_power_and_affinity_laws():
    # 10 m3/s against 500 Pa at 65 % total efficiency: 5000 W of air power / 0.65 = 7692 W
    p_d = fan_design_power_w(10.0, 500.0, 0.65)
    assert p_d == pytest.approx(7692.3, abs=0.1)
    # cube law at half speed: 1/8
    assert crah_fan_power_w(5.0, 10.0, 500.0, 0.65) == pytest.approx(p_d / 8, rel=1e-12)
    # with 30 % of the pressure held constant: s (0.3 + 0.7 s^2) = 0.5 * 0.475 = 0.2375
    assert crah_fan_power_w(5.0, 10.0, 500.0, 0.65, static_pressure_fraction=0.3) == pytest.approx(
        0.2375 * p_d, rel=1e-12)
    # constant speed: design power whatever the flow; a stopped unit draws nothing
    assert crah_fan_power_w(np.array([0.0, 10.0]), 10.0, 500.0, 0.65, control="constant").tolist() == [0.0, p_d]


def test_vfd_airflow_tracks_demand_within_its_speed_range():
    v = crah_airflow_m3_s(np.array([1.0, 6.0, 14.0]), 10.0, control="vfd", min_speed_fraction=0.3)
    assert v.tolist() == [3.0, 6.0, 10.0]
    assert crah_airflow_m3_s(np.array([1.0, 6.0]), 10.0, control="constant").tolist() == [10.0, 10.0]
    with pytest.raises(ValueError):
        crah_airflow_m3_s(1.0, 10.0, control="inlet_vanes")


def test_rack_airflow_from_the_server_fan_law():
    kw = {"nodes_per_rack": 4, "design_heat_w": 8000.0, "airflow_max_m3_s": 0.6}
    # full heat at the 35 C design inlet: full speed, 4 x 0.6 m3/s
    assert rack_airflow_from_fans_m3_s(8000.0, 35.0, **kw) == pytest.approx(2.4)
    # half heat at 25 C: s = 0.5 (68 - 35) / (68 - 25) = 0.3837
    assert rack_airflow_from_fans_m3_s(4000.0, 25.0, **kw) == pytest.approx(2.4 * 0.5 * 33 / 43, rel=1e-9)
    # idle: the 0.3 minimum speed
    assert rack_airflow_from_fans_m3_s(500.0, 20.0, **kw) == pytest.approx(2.4 * 0.3)


@pytest.fixture(scope="module")
def family():
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=8.0)
    return g, RecirculationFamily(g, np.full(g.n_racks, 1.2))


def test_interpolated_recirculation_agrees_with_a_fresh_derivation(family):
    g, fam = family
    heat = np.full(g.n_racks, 12e3)
    v0 = fam.nominal_rack_airflow_m3_s
    for s in fam.scales:  # exact at the knots
        d = inlet_temp_c(fam.model(s * v0), heat) - inlet_temp_c(inlet_model(g, s * v0), heat)
        assert np.abs(d).max() < 1e-9
    worst = 0.0
    for s in np.linspace(0.32, 0.98, 12):  # between knots: within 0.5 K (measured 0.31 K)
        d = inlet_temp_c(fam.model(s * v0), heat) - inlet_temp_c(inlet_model(g, s * v0), heat)
        worst = max(worst, np.abs(d).max())
    assert worst < 0.5


def test_the_recirculation_model_uses_the_fan_model_airflow(family):
    g, fam = family
    heat = np.linspace(3e3, 9e3, g.n_racks)
    inlet = np.full(g.n_racks, 22.0)
    v_fan = rack_airflow_from_fans_m3_s(heat / 2, inlet, nodes_per_rack=2, design_heat_w=8000.0, airflow_max_m3_s=0.6)
    m = fam.model(v_fan)
    assert np.array_equal(m.rack_airflow_m3_s, v_fan)
    # every watt of every rack reaches some unit: columns of the heat shares sum to 1
    assert m.cooling_heat_share.sum(axis=0) == pytest.approx(np.ones(g.n_racks), abs=1e-9)
    # the heat each unit removes equals the racks' heat (steady energy balance)
    assert m.cooling_load_w(heat).sum() == pytest.approx(heat.sum(), rel=1e-9)
    # exhaust rise of each rack from its own fan airflow: Q / (rho cp V_fan)
    rise = heat / (AIR_VOLUMETRIC_HEAT_J_M3_K * m.rack_airflow_m3_s)
    assert rise == pytest.approx(heat / (AIR_VOLUMETRIC_HEAT_J_M3_K * v_fan))
    assert airflow_changed(v_fan, v_fan * 1.02) is False
    assert airflow_changed(v_fan, v_fan * 1.10) is True
