"""Event-driven cooling transients: state carried from event to event, energy budget,
feedback of throttling and shutdown, chiller restart and chilled-water storage."""

import numpy as np
import pytest
from scipy.linalg import expm

from twin.thermal import fault_transient, hall_air_volume_m3, inlet_model, row_hall
from twin.thermal.events import (
    ThermalMasses,
    adiabatic_temperature_bound_c,
    advance,
    hall_steady_state,
    operator_for,
    throttled_clock_fraction,
)
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K, gpu_clock_fraction
from twin.thermal.transient import WATER_VOLUMETRIC_HEAT_J_M3_K


@pytest.fixture(scope="module")
def hall():
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=8.0)
    v = np.full(g.n_racks, 0.8)
    heat = np.full(g.n_racks, 10e3)
    models = {}

    def model(active):
        key = tuple(bool(a) for a in active)
        if key not in models:
            models[key] = inlet_model(g, v, np.asarray(active)) if any(key) else None
        return models[key]

    masses = ThermalMasses.of(g.n_racks, hall_air_volume_m3(g), g.cooling_airflow_m3_s)
    return g, v, heat, model, masses


def test_energy_budget_is_exact_across_segments(hall):
    g, v, heat, model, m = hall
    st = hall_steady_state(model([1, 1, 1, 1]), heat, chilled_water_temp_c=12.0)
    e0 = st.stored_energy_j(m)
    produced = removed = 0.0
    for active, dur in (([0, 1, 1, 1], 400.0), ([0, 0, 1, 1], 300.0), ([0, 0, 0, 0], 200.0), ([1, 1, 1, 1], 700.0)):
        mod = model(active)
        seg = advance(st, mod, dur, heat, m, operator=operator_for(mod, m, v), chiller_capacity_w=300e3)
        st = seg.state
        produced += seg.heat_produced_j
        removed += seg.chiller_heat_j
    assert st.time_s == pytest.approx(1600.0)
    assert st.stored_energy_j(m) - e0 == pytest.approx(produced - removed, rel=1e-9)


def test_no_cooling_matches_the_two_node_closed_form(hall):
    # With every unit off the hall is IT masses y and one room node T:
    # C_it y' = Q - G (y - T), C_air T' = sum G (y - T). Uniform racks: an exact 2x2
    # linear system x' = A x + b, x(t) = e^{At} x0 + A^-1 (e^{At} - I) b.
    g, v, heat, model, m = hall
    st = hall_steady_state(model([1, 1, 1, 1]), heat, chilled_water_temp_c=12.0)
    st = type(st)(0.0, np.full(g.n_racks, 30.0), np.full(4, 22.0), 12.0, np.ones(g.n_racks, bool))
    seg = advance(st, None, 300.0, heat, m, operator=operator_for(None, m, v, step_s=2.0))
    n = g.n_racks
    gr = AIR_VOLUMETRIC_HEAT_J_M3_K * 0.8
    c_it, c_air = m.it_heat_capacity_j_k[0], m.air_heat_capacity_j_k
    a = np.array([[-gr / c_it, gr / c_it], [n * gr / c_air, -n * gr / c_air]])
    b = np.array([10e3 / c_it, 0.0])
    x0 = np.array([30.0, 22.0])
    aug = expm(np.block([[a, b[:, None]], [np.zeros((1, 3))]]) * 300.0)
    x = aug[:2, :2] @ x0 + aug[:2, 2]
    assert seg.state.it_temp_c == pytest.approx(np.full(n, x[0]), abs=0.01)
    assert seg.state.air_temp_c == pytest.approx(np.full(4, x[1]), abs=0.01)
    assert seg.inlet_temp_c == pytest.approx(np.full(n, x[1]), abs=0.01)


def test_agrees_with_the_ode_transient(hall):
    # the lumped ODE of twin.thermal.transient (LSODA, tau-lagged inlets) is an independent
    # integration of the same model: hottest inlet after 20 min within 0.3 K
    g, v, heat, model, m = hall
    before, after = model([1, 1, 1, 1]), model([0, 1, 1, 1])
    st = hall_steady_state(before, heat, chilled_water_temp_c=12.0)
    seg = advance(st, after, 1200.0, heat, m, chiller_capacity_w=np.inf)
    ref = fault_transient(before, after, heat, air_volume_m3=hall_air_volume_m3(g), duration_s=1200.0)
    assert seg.inlet_temp_c.max() == pytest.approx(ref.inlet_temp_c[-1].max(), abs=0.3)


def test_overlapping_faults_stay_within_the_adiabatic_bound(hall):
    # A trips at 0, B at 300 s while A is still out, A returns at 900 s, B at 1500 s: four
    # segments of one trajectory. The hottest inlet never exceeds what the rack heat can
    # do with nothing removed, and splitting a segment anywhere changes nothing.
    g, v, heat, model, m = hall
    st0 = hall_steady_state(model([1, 1, 1, 1]), heat, chilled_water_temp_c=12.0)
    st = st0
    peak = -np.inf
    for active, dur in (([0, 1, 1, 1], 300.0), ([0, 0, 1, 1], 600.0), ([1, 0, 1, 1], 600.0)):
        seg = advance(st, model(active), dur, heat, m)
        bound = adiabatic_temperature_bound_c(st0, heat, m, seg.state.time_s)
        assert seg.max_inlet_temp_c.max() <= bound
        peak = max(peak, seg.max_inlet_temp_c.max())
        st = seg.state
    assert 18.0 < peak < 60.0
    whole = advance(st0, model([0, 0, 1, 1]), 600.0, heat, m)
    first = advance(st0, model([0, 0, 1, 1]), 230.0, heat, m)
    split = advance(first.state, model([0, 0, 1, 1]), 370.0, heat, m)
    assert split.inlet_temp_c == pytest.approx(whole.inlet_temp_c, abs=0.05)


def test_gpu_clock_fixed_point_follows_the_clock_law():
    # the GPU settles where its clock law and its own power agree: f = F(T_in + dT f).
    # T_in 60 C, dT 52.5 K: ramp k = 0.5 / 2 K, f = (1 + 0.25 * 27) / (1 + 0.25 * 52.5) = 0.5487
    z = np.linspace(20.0, 80.0, 241)
    f = throttled_clock_fraction(z, 52.5)
    assert throttled_clock_fraction(60.0, 52.5) == pytest.approx(7.75 / 14.125, rel=1e-12)
    on = f > 0
    assert f[on] == pytest.approx(gpu_clock_fraction(z[on] + 52.5 * f[on]), abs=1e-12)
    # shut down once even half clocks put the die at 92 C: T_in >= 92 - 26.25 C
    assert np.all((f == 0) == (z + 52.5 * 0.5 >= 92.0))
    assert np.all(np.diff(f) <= 1e-12)  # hotter inlet, never faster clocks


def test_throttling_and_shutdown_relieve_the_room(hall):
    g, v, heat, model, m = hall
    st = hall_steady_state(model([1, 1, 1, 1]), heat, chilled_water_temp_c=12.0)
    op = operator_for(None, m, v)
    # a hot GPU: 1000 W at 0.07 K/W = 70 K over the inlet at full clocks: it throttles from
    # T_in = 87 - 70 = 17 C on, and shuts down at T_in >= 92 - 35 = 57 C (half clocks)
    gpu = {"gpu_power_w": np.full(g.n_racks, 1000.0), "gpu_thermal_resistance_k_per_w": np.full(g.n_racks, 0.07)}
    open_loop = advance(st, None, 1800.0, heat, m, operator=op)
    closed = advance(st, None, 1800.0, heat, m, operator=op, **gpu)
    assert np.all(closed.time_to_gpu_slowdown_s == st.time_s)  # throttling from the start
    assert np.all(np.isfinite(closed.time_to_gpu_shutdown_s))
    assert np.all(closed.time_to_gpu_shutdown_s > closed.time_to_inlet_limit_s)
    assert not closed.state.rack_on.any() and np.all(closed.rack_heat_w == 0.0)
    assert closed.heat_produced_j < 0.8 * open_loop.heat_produced_j
    assert closed.max_inlet_temp_c.max() < open_loop.max_inlet_temp_c.max() - 5.0
    # sub-sample extremes: the hottest die is the one that tripped (92 C); the inlet then
    # stays near the shutdown inlet, 92 - 35 C, warmed a little by the IT mass's stored heat
    assert closed.max_gpu_temp_c.max() == pytest.approx(92.0, abs=0.5)
    assert 57.0 - 0.5 < closed.inlet_temp_c.max() < 57.0 + 2.0
    # independent of the step: 2 s and 10 s steps agree on the shutdown time within 20 s
    fine = advance(st, None, 1800.0, heat, m, operator=operator_for(None, m, v, step_s=2.0), **gpu)
    assert np.abs(fine.time_to_gpu_shutdown_s - closed.time_to_gpu_shutdown_s).max() < 20.0


def test_chiller_restart_delay_draws_on_chilled_water_storage(hall):
    # The chiller is off for 30 min after a power transfer (fans and pumps on UPS): the
    # coils keep removing the rack heat (400 kW) into the water. Hand estimate:
    # dT_w = Q t / (rho_w cp_w V_w): 20 m3 -> 400e3 * 1800 / 8.36e7 = 8.6 K; 60 m3 -> 2.9 K.
    g, v, heat, model, m = hall
    mod = model([1, 1, 1, 1])
    st = hall_steady_state(mod, heat, chilled_water_temp_c=12.0)
    out = {}
    for vol in (20.0, 60.0):
        mv = ThermalMasses.of(g.n_racks, hall_air_volume_m3(g), g.cooling_airflow_m3_s, chilled_water_volume_m3=vol)
        seg = advance(st, mod, 1800.0, heat, mv, chiller_capacity_w=600e3, chiller_available_s=1800.0)
        out[vol] = seg
        expect = 12.0 + heat.sum() * 1800.0 / (WATER_VOLUMETRIC_HEAT_J_M3_K * vol)
        # the coils lose capacity once the water passes 12 C (supply floor = water + 6 K),
        # so the water warms a little less than the all-heat estimate
        assert expect - 1.5 < seg.state.chilled_water_temp_c <= expect + 1e-6
    assert out[60.0].max_inlet_temp_c.max() < out[20.0].max_inlet_temp_c.max()
    # the chiller restarts and pulls the loop back towards its set point
    after = advance(out[20.0].state, mod, 1800.0, heat, m, chiller_capacity_w=600e3)
    assert after.state.chilled_water_temp_c < out[20.0].state.chilled_water_temp_c - 2.0


def test_a_chiller_restart_across_segments_keeps_the_energy_budget(hall):
    # a power transfer at t = 0: the chiller is back at 1815 s (15 s generator start + 1800 s
    # restart). Segments cut at other events (900 s, 2400 s) carry the state: the energy the
    # racks released equals what the chiller took out plus what the masses stored, exactly;
    # and the chiller takes nothing before its restart and no more than its capacity after.
    g, v, heat, model, m = hall
    mod = model([1, 1, 1, 1])
    st = hall_steady_state(mod, heat, chilled_water_temp_c=12.0)
    e0 = st.stored_energy_j(m)
    produced = removed = 0.0
    back = 1815.0
    for dur in (900.0, 1500.0, 1200.0):
        t0 = st.time_s
        seg = advance(st, mod, dur, heat, m, operator=operator_for(mod, m, v), chiller_capacity_w=600e3,
                      chiller_available_s=back)
        if t0 + dur <= back:
            assert seg.chiller_heat_j == 0.0
        assert seg.chiller_heat_j <= 600e3 * max(0.0, t0 + dur - max(t0, back)) + 600e3 * 10.0
        st = seg.state
        produced += seg.heat_produced_j
        removed += seg.chiller_heat_j
    assert st.time_s == pytest.approx(3600.0)
    assert st.stored_energy_j(m) - e0 == pytest.approx(produced - removed, rel=1e-9)
    # the loop warmed while the chiller was off and is pulled back after it restarts
    assert removed > 0.0


def test_inlet_protection_shuts_racks_at_their_limit(hall):
    # no cooling at all: every rack's inlet climbs; the servers' protection (43 C) turns a
    # rack off at the first step its inlet reaches the limit, so its heat stops there
    from twin.thermal import SERVER_INLET_SHUTDOWN_C

    g, v, heat, model, m = hall
    st = hall_steady_state(model([1, 1, 1, 1]), heat, chilled_water_temp_c=12.0)
    op = operator_for(None, m, v, step_s=5.0)
    free = advance(st, None, 3600.0, heat, m, operator=op)
    prot = advance(st, None, 3600.0, heat, m, operator=op, inlet_shutdown_c=SERVER_INLET_SHUTDOWN_C)
    assert free.inlet_temp_c.max() > 60.0
    assert not prot.state.rack_on.any() and np.all(prot.rack_heat_w == 0.0)
    assert np.all(np.isfinite(prot.time_to_inlet_limit_s))
    # heat stops at the crossing: at most one step of full heat after the inlet reached 43 C
    t_cross = np.max(prot.time_s[np.argmax(prot.max_inlet_series_c >= SERVER_INLET_SHUTDOWN_C)])
    assert prot.heat_produced_j <= heat.sum() * (t_cross + 5.0) + 1e-6
    assert prot.heat_produced_j < 0.5 * free.heat_produced_j
    # energy still balances (nothing removed: all of it is stored)
    assert prot.state.stored_energy_j(m) - st.stored_energy_j(m) == pytest.approx(prot.heat_produced_j, rel=1e-9)
