"""Racks that shut down stop heating the room in a cooling-fault transient (issue 12): the
room can never hold more than the heat the racks produced before their inlet protection
stopped them (an adiabatic bound), instead of heating on to hundreds of degrees."""

import numpy as np
import pytest
from scipy.optimize import brentq

from twin.thermal import AIR_CP_J_KG_K, AIR_DENSITY_KG_M3, inlet_model, rack_airflow_m3_s, row_hall
from twin.thermal.transient import fault_transient, hall_air_volume_m3

RHO_CP = AIR_DENSITY_KG_M3 * AIR_CP_J_KG_K
SHUT_C = 43.0      # the servers' inlet protection (twin.thermal.SERVER_INLET_SHUTDOWN_C)


@pytest.fixture(scope="module")
def total_loss():
    """Twelve 10 kW racks, both units lost, IT mass negligible (1 J/K): every watt of rack
    heat goes into the room air."""
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0, cooling_capacity_w=80e3)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    before = inlet_model(g, v)
    vol = hall_air_volume_m3(g)
    kw = dict(air_volume_m3=vol, it_heat_capacity_j_k=1.0, duration_s=900.0, output_step_s=0.5)
    return (g, heat, v, before, vol, fault_transient(before, None, heat, rack_shutdown_inlet_c=SHUT_C, **kw),
            fault_transient(before, None, heat, **kw))


def test_the_first_rack_shuts_when_its_inlet_reaches_the_limit_by_hand(total_loss):
    g, heat, v, before, vol, res, _ = total_loss
    # all twelve racks heat the mixed room at r = sum Q / (rho cp V_air) until the first
    # stops; each inlet lags the room by tau: z(t) = R0 + r (t - tau) + (z0 - R0 + r tau) e^(-t/tau)
    ret = before.return_temp_c(heat)
    r0 = np.sum(before.cooling_airflow_m3_s * ret) / before.cooling_airflow_m3_s.sum()
    rate, tau = heat.sum() / (RHO_CP * vol), vol / v.sum()
    z0 = before.base_inlet_c + before.recirculation_k_per_w @ heat
    first = min(brentq(lambda t, r=r: r0 + rate * (t - tau) + (z0[r] - r0 + rate * tau) * np.exp(-t / tau)
                       - SHUT_C, 0.0, 900.0) for r in range(g.n_racks))
    assert res.rack_shutdown_s is not None and np.all(np.isfinite(res.rack_shutdown_s))
    assert res.rack_shutdown_s.min() == pytest.approx(first, rel=0.005)


def test_the_room_holds_exactly_the_heat_produced_before_the_shutdowns(total_loss):
    g, heat, v, before, vol, res, open_loop = total_loss
    ret = before.return_temp_c(heat)
    r0 = np.sum(before.cooling_airflow_m3_s * ret) / before.cooling_airflow_m3_s.sum()
    # adiabatic bound: the room starts at the mixed return R0 and gains what the racks
    # produced, sum_r Q_r t_shut,r, over its heat capacity rho cp V_air; the inlets lag the
    # room, so none can exceed it, and once every rack is off they settle on it
    bound_c = r0 + float(np.sum(heat * res.rack_shutdown_s)) / (RHO_CP * vol)
    assert res.inlet_temp_c.max() <= bound_c + 1e-3
    assert res.inlet_temp_c[-1] == pytest.approx(np.full(g.n_racks, bound_c), abs=0.02)
    # the inlets lag the room by tau, so the room is r tau = sum Q / (rho cp sum V_rack), the
    # racks' own 15 K rise, ahead when they reach 43 C: the room ends near 43 + 15 C, not hundreds
    rate, tau = heat.sum() / (RHO_CP * vol), vol / v.sum()
    assert rate * tau == pytest.approx(15.0, rel=1e-9)
    assert bound_c == pytest.approx(SHUT_C + rate * tau, abs=1.0)
    # without the racks' protection the same 15 minutes heat the room on (open loop)
    assert open_loop.inlet_temp_c.max() > bound_c + 50.0
    assert open_loop.rack_shutdown_s is not None and np.all(np.isinf(open_loop.rack_shutdown_s))


def test_a_rack_already_at_the_limit_produces_no_heat_at_all():
    # one rack, no cooling left, its inlet already above the limit at the fault: the room
    # only mixes (no heat produced), so no inlet rises above the warmest starting temperature
    g = row_hall(1, 2, cooling_per_wall=1, cooling_airflow_m3_s=2.0, cooling_capacity_w=80e3)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    before = inlet_model(g, v)
    res = fault_transient(before, None, heat, air_volume_m3=hall_air_volume_m3(g), it_heat_capacity_j_k=1.0,
                          duration_s=300.0, rack_shutdown_inlet_c=0.0)
    assert res.rack_shutdown_s is not None and np.all(res.rack_shutdown_s == 0.0)
    start = max(float(res.inlet_temp_c[0].max()), float(np.nanmax(before.return_temp_c(heat))))
    assert res.inlet_temp_c.max() <= start + 1e-6
