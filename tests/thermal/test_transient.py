"""Cooling-fault transients against hand integration and energy conservation."""

import numpy as np
import pytest

from twin.thermal import AIR_CP_J_KG_K, AIR_DENSITY_KG_M3, inlet_model, rack_airflow_m3_s, row_hall
from twin.thermal.transient import (
    fault_transient,
    hall_air_volume_m3,
    minutes_to_inlet_limit,
)

RHO_CP = AIR_DENSITY_KG_M3 * AIR_CP_J_KG_K


@pytest.fixture(scope="module")
def hall():
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0, cooling_capacity_w=80e3)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    return g, heat, v


def test_total_loss_of_cooling_matches_room_heat_up_by_hand(hall):
    g, heat, v = hall
    before = inlet_model(g, v)
    vol = hall_air_volume_m3(g)
    res = fault_transient(before, None, heat, air_volume_m3=vol, it_heat_capacity_j_k=1.0,
                          duration_s=600.0, output_step_s=0.5)
    # With negligible IT mass all rack heat goes into the air, which warms at
    # r = sum Q / (rho cp V_air) from the mixed return temperature R0; each inlet lags
    # it by the mixing time tau from its pre-fault value z0:
    # z(t) = R0 + r (t - tau) + (z0 - R0 + r tau) exp(-t / tau)
    from scipy.optimize import brentq

    ret = before.return_temp_c(heat)
    r0 = np.sum(before.cooling_airflow_m3_s * ret) / before.cooling_airflow_m3_s.sum()
    rate = heat.sum() / (RHO_CP * vol)
    tau = vol / v.sum()
    z0 = before.base_inlet_c + before.recirculation_k_per_w @ heat
    for r in range(g.n_racks):
        def z(t, r=r):
            return r0 + rate * (t - tau) + (z0[r] - r0 + rate * tau) * np.exp(-t / tau) - 32.0
        expected_min = brentq(z, 0.0, 600.0) / 60.0
        assert res.minutes_to_limit[r] == pytest.approx(expected_min, rel=0.005)
    # and roughly the textbook estimate C_air (T_limit - T_0) / sum Q
    assert np.all(np.abs(res.minutes_to_limit * 60 - RHO_CP * vol * (32.0 - r0) / heat.sum()) < 2 * tau)


def _euler(before, after, heat, vol, c_it, duration_s, dt=0.05):
    """Independent explicit-Euler integration of the documented equations."""
    v_r = before.rack_airflow_m3_s
    g_r = RHO_CP * v_r
    v_c = after.cooling_airflow_m3_s
    act = v_c > 0
    g_c = RHO_CP * v_c
    c_ret = RHO_CP * vol * v_c / v_c.sum()
    cap = after.cooling_capacity_w
    z = before.base_inlet_c + before.recirculation_k_per_w @ heat
    y = z + heat / g_r
    tau = vol / v_r.sum()
    ret = before.return_temp_c(heat).copy()
    t_set = after.cooling_supply_temp_c
    g_c_safe = np.where(act, g_c, 1.0)
    # inlet is quasi-steady: z = S s + D G (y - z)  ->  (I + D G) z = S s + D G y
    dg = after.recirculation_k_per_w * g_r[None, :]
    lhs_inv = np.linalg.inv(np.eye(len(heat)) + dg)
    times, inlets = [], []
    t = 0.0
    while t <= duration_s:
        s = np.maximum(t_set, ret - cap / g_c_safe)
        z_star = lhs_inv @ (after.supply_mix @ s + dg @ y)
        q = g_r * (y - z)
        times.append(t)
        inlets.append(z.copy())
        z = z + dt * (z_star - z) / tau
        y = y + dt * (heat - q) / c_it
        ret = ret + dt * np.where(act, g_c * (after.return_mix @ s + after.return_k_per_w @ q - ret) / np.where(act, c_ret, 1.0), 0.0)
        t += dt
    return np.array(times), np.array(inlets)


def test_one_unit_trips_matches_hand_euler_integration(hall):
    g, heat, v = hall
    before = inlet_model(g, v)
    after = inlet_model(g, v, np.array([False, True]))
    vol = hall_air_volume_m3(g)
    c_it = 5e4
    res = fault_transient(before, after, heat, air_volume_m3=vol, it_heat_capacity_j_k=c_it,
                          duration_s=900.0, output_step_s=1.0)
    t, z = _euler(before, after, heat, vol, c_it, 900.0)
    for k in (0, 60, 300, 900):
        i = int(round(k / 0.05))
        np.testing.assert_allclose(res.inlet_temp_c[k], z[i], atol=0.05)
    # the one remaining unit is capacity-limited: 80 kW for 120 kW of racks -> runaway
    assert res.heat_removed_w[-1, 1] == pytest.approx(80e3, rel=1e-6)
    assert np.all(np.diff(res.inlet_temp_c[::60].max(axis=1)) > 0)
    first = np.min(res.minutes_to_limit)
    assert np.isfinite(first) and 0 < first < 15


def test_energy_stored_equals_heat_in_minus_heat_removed(hall):
    g, heat, v = hall
    g2 = row_hall(2, 6, cooling_per_wall=2, cooling_airflow_m3_s=5.0, cooling_capacity_w=60e3)
    before = inlet_model(g2, v)
    after = inlet_model(g2, v, np.array([True, False, True, True]))
    vol = hall_air_volume_m3(g2)
    c_it = 1e5
    res = fault_transient(before, after, heat, air_volume_m3=vol, it_heat_capacity_j_k=c_it,
                          duration_s=1200.0, output_step_s=1.0)
    act = after.cooling_airflow_m3_s > 0
    c_ret = RHO_CP * vol * after.cooling_airflow_m3_s / after.cooling_airflow_m3_s.sum()
    # reconstruct return temperatures from removed heat: ret = s + removed / (rho cp V)
    sup = res.supply_temp_c
    ret = np.where(act, sup + res.heat_removed_w / (RHO_CP * np.where(act, after.cooling_airflow_m3_s, 1)), 0)
    stored = c_it * res.exhaust_temp_c.sum(axis=1) + (c_ret * np.where(act, ret, 0)).sum(axis=1)
    removed = res.heat_removed_w.sum(axis=1)
    integral = np.concatenate([[0], np.cumsum(0.5 * (removed[1:] + removed[:-1]) * np.diff(res.time_s))])
    np.testing.assert_allclose(stored - stored[0], heat.sum() * res.time_s - integral, rtol=2e-3, atol=2e4)


def test_chiller_trip_warms_supply_through_the_water_loop(hall):
    g, heat, v = hall
    m = inlet_model(g, v)
    res = fault_transient(m, m, heat, air_volume_m3=hall_air_volume_m3(g), chiller_capacity_w=0.0,
                          chilled_water_volume_m3=2.0, duration_s=1800.0)
    # once the ramp is established every store (water, IT mass, air) warms at the same
    # rate: sum Q / (C_water + sum C_it + C_air), with C_it = 2.5e5 J/K per rack
    rate = (res.chilled_water_temp_c[-1] - res.chilled_water_temp_c[-301]) / 600.0
    c_total = 4.18e6 * 2.0 + 2.5e5 * g.n_racks + RHO_CP * hall_air_volume_m3(g)
    assert rate == pytest.approx(heat.sum() / c_total, rel=0.03)
    inlet_rate = (res.inlet_temp_c[-1] - res.inlet_temp_c[-301]) / 600.0
    np.testing.assert_allclose(inlet_rate, rate, rtol=0.03)
    assert res.supply_temp_c[-1].max() > 18.0 + 5.0


def test_minutes_to_limit_and_gpu_slowdown_ordering(hall):
    g, heat, v = hall
    m1 = minutes_to_inlet_limit(g, heat, v, 0)
    m_all = minutes_to_inlet_limit(g, heat, v, [0, 1])
    assert np.all(m_all <= m1)  # losing both units is never better
    assert np.all(np.isfinite(m_all))
    before = inlet_model(g, v)
    res = fault_transient(before, None, heat, air_volume_m3=hall_air_volume_m3(g),
                          gpu_power_w=700.0, gpu_thermal_resistance_k_per_w=0.08)
    # GPU die = inlet + 56 K: slowdown (87 C) when the inlet passes 31 C, before the
    # ASHRAE A1 limit of 32 C; shutdown (92 C) later, at an inlet of 36 C
    assert np.all(res.minutes_to_gpu_slowdown < res.minutes_to_limit)
    assert np.all(res.minutes_to_limit < res.minutes_to_gpu_shutdown)


def test_inlet_at_interpolates_the_trajectory(hall):
    g, heat, v = hall
    before = inlet_model(g, v)
    after = inlet_model(g, v, np.array([False, True]))
    res = fault_transient(before, after, heat, air_volume_m3=hall_air_volume_m3(g), duration_s=120.0,
                          output_step_s=2.0)
    np.testing.assert_allclose(res.inlet_at(0.0), res.inlet_temp_c[0])
    np.testing.assert_allclose(res.inlet_at(3.0), 0.5 * (res.inlet_temp_c[1] + res.inlet_temp_c[2]))
    np.testing.assert_allclose(res.inlet_at(1e6), res.inlet_temp_c[-1])
    # before the fault the hall sat in the steady state of the "before" model
    np.testing.assert_allclose(res.exhaust_temp_c[0] - heat / (RHO_CP * v),
                               before.base_inlet_c + before.recirculation_k_per_w @ heat, atol=1e-9)


def test_sparse_recirculation_gives_the_same_transient(hall):
    g, heat, v = hall
    before = inlet_model(g, v)
    dense = inlet_model(g, v, np.array([False, True]))
    sparse = inlet_model(g, v, np.array([False, True]), sparse_min_racks=1, truncation_error_k=1e-4)
    assert sparse.recirculation_csr is not None
    kw = dict(air_volume_m3=hall_air_volume_m3(g), duration_s=600.0)
    a = fault_transient(before, dense, heat, **kw)
    b = fault_transient(before, sparse, heat, **kw)
    np.testing.assert_allclose(a.inlet_temp_c, b.inlet_temp_c, atol=2e-3)
