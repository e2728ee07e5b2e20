"""Breakers, trip curves, UPS efficiency and autonomy, cable and transformer losses."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.power.electrical import (
    breaker_apparent_power_va,
    breaker_continuous_limit_w,
    breaker_thermal_state_step,
    breaker_thermal_trip_state,
    breaker_trip_time_s,
    resistive_loss_w,
    transformer_loss_w,
    ups_autonomy_s,
    ups_efficiency,
    ups_loss_w,
)


def test_breaker_415v_3phase_60a_hand_computed():
    # S = sqrt(3) * 415 V * 60 A = 43,128 VA; continuous 80 % (NEC 210.20(A)) = 34,502 W
    assert breaker_apparent_power_va(60, 415, 3) == pytest.approx(43128.07, abs=0.01)
    assert breaker_continuous_limit_w(60, 415, 3) == pytest.approx(34502.45, abs=0.01)
    # 100 %-rated breaker carries its full rating continuously
    assert breaker_continuous_limit_w(60, 415, 3, rated_100pct=True) == pytest.approx(43128.07, abs=0.01)


def test_breaker_other_hand_computed_cases():
    # 208 V 3-phase 30 A (US rack PDU): sqrt(3)*208*30 = 10,808 VA, 80 % = 8,646 W
    assert breaker_continuous_limit_w(30, 208, 3) == pytest.approx(8646.4, abs=0.1)
    # 230 V single-phase 32 A: 7,360 VA, 80 % = 5,888 W; at pf 0.95: 5,593.6 W
    assert breaker_continuous_limit_w(32, 230, 1) == pytest.approx(5888.0)
    assert breaker_continuous_limit_w(32, 230, 1, power_factor=0.95) == pytest.approx(5593.6)
    # vectorised over ratings
    lim = breaker_continuous_limit_w(np.array([100, 225, 400]), 415, 3)
    np.testing.assert_allclose(lim, 0.8 * np.sqrt(3) * 415 * np.array([100, 225, 400]))
    with pytest.raises(ValueError):
        breaker_continuous_limit_w(60, 415, 2)


def test_trip_curve_meets_iec_60898_and_ul_489_points():
    t = breaker_trip_time_s(np.array([0.8, 1.0, 1.13, 1.45, 2.0, 2.55, 10.0]))
    # IEC 60898-1 Table 7: 1.13 In no trip within 1 h; 1.45 In trip within 1 h
    assert np.isinf(t[0]) and np.isinf(t[1]) and np.isinf(t[2])
    assert t[3] < 3600.0
    # UL 489: 200 % trips within 2 min (small frames)
    assert t[4] < 120.0
    # IEC 60898-1: 2.55 In trips between 1 s and 60 s
    assert 1.0 < t[5] < 60.0
    # magnetic instantaneous (curve C upper bound 10 In)
    assert t[6] == pytest.approx(0.01)
    # hand value: -60 ln(1 - (1.3/2)^2) = 32.94 s
    assert t[4] == pytest.approx(-60.0 * np.log(1 - 0.65**2))


@settings(max_examples=50, deadline=None)
@given(st.floats(1.0, 9.9), st.floats(1.0, 9.9))
def test_trip_curve_is_inverse_time(a, b):
    lo, hi = sorted((a, b))
    t_lo, t_hi = breaker_trip_time_s(np.array([lo, hi]))
    assert t_hi <= t_lo


def test_thermal_state_integration_agrees_with_closed_form_trip_time():
    # two methods: step the first-order thermal model in 0.01 s steps from cold at 2 In
    x = 2.0
    t_closed = float(breaker_trip_time_s(x))
    theta, t, dt = 0.0, 0.0, 0.01
    while theta < breaker_thermal_trip_state():
        theta = breaker_thermal_state_step(theta, x, dt)
        t += dt
    assert t == pytest.approx(t_closed, abs=dt)
    # a large step gives the same state as many small ones (exact update)
    many = 0.0
    for _ in range(100):
        many = breaker_thermal_state_step(many, 1.5, 0.5)
    assert breaker_thermal_state_step(0.0, 1.5, 50.0) == pytest.approx(many)


def test_ups_double_conversion_loss_at_25_vs_90_percent():
    # the default is a modern transformerless unit (twin.power.ups_curves: 95.5 % at 25 %,
    # 96.8 % at 75-100 %); the legacy curve (LBNL/EPRI 2005, WP 108: ~86 % at 25 %) is a
    # named curve of its own
    eta = ups_efficiency(np.array([0.25, 0.9]), "double_conversion")
    assert eta[0] == pytest.approx(0.955, abs=0.0015)
    assert eta[1] == pytest.approx(0.968, abs=0.0015)
    # the same 1 MVA UPS: loss 11.8 kW at 250 kW, 29.7 kW at 900 kW; share of throughput
    # 4.7 % vs 3.3 % (the no-load loss still makes part load dearer per delivered watt)
    loss = ups_loss_w(np.array([250e3, 900e3]), 1e6, "double_conversion")
    np.testing.assert_allclose(loss, [11.85e3, 29.68e3], rtol=2e-3)
    share = loss / np.array([250e3, 900e3])
    assert share[0] / share[1] == pytest.approx(1.44, abs=0.01)
    # consistency of the two forms: eta = P / (P + loss)
    np.testing.assert_allclose(eta, np.array([250e3, 900e3]) / (np.array([250e3, 900e3]) + loss))
    # the legacy curve through the explicit coefficients
    from twin.power.ups_curves import UPS_CURVES, ups_loss_coeffs
    legacy = ups_loss_coeffs(UPS_CURVES["legacy_transformer"].efficiency)
    assert ups_efficiency(0.25, "double_conversion", loss_coeffs=legacy) == pytest.approx(0.860, abs=0.0015)


def test_ups_modes():
    x = np.linspace(0.05, 1.0, 20)
    dc = ups_efficiency(x, "double_conversion")
    eco = ups_efficiency(x, "eco")
    byp = ups_efficiency(x, "bypass")
    # efficiency peaks where no-load loss = resistive loss, x* = sqrt(a/c) = 0.94:
    # rising up to there, flat to full load
    assert np.all(np.diff(dc[x <= 0.9]) > 0)
    assert dc[-1] == pytest.approx(dc[x <= 0.95].max(), abs=2e-4)
    # eco 98.5-99.2 % from a quarter load up; lower at light load (inverter idling)
    heavy = x >= 0.25
    assert np.all((eco[heavy] >= 0.984) & (eco[heavy] <= 0.992))
    np.testing.assert_array_equal(byp, 1.0)
    assert np.all(eco > dc)
    assert ups_loss_w(1e5, 1e6, "bypass") == 0.0
    with pytest.raises(ValueError):
        ups_efficiency(0.5, "online")


def test_ups_autonomy_peukert():
    # 5 min at full load -> 5 * 0.5**-1.2 = 11.49 min at half load
    assert ups_autonomy_s(1.0, 300.0) == pytest.approx(300.0)
    assert ups_autonomy_s(0.5, 300.0) == pytest.approx(300.0 * 2**1.2)
    assert np.isinf(ups_autonomy_s(0.0, 300.0))


def test_resistive_and_transformer_losses():
    # 1 % at rating, I^2 R: half load -> 0.25 % of rating
    assert resistive_loss_w(50e3, 100e3, 0.01) == pytest.approx(250.0)
    # transformer 2 MVA, p0 0.2 %, pk 0.8 %: at 1 MW -> 4 kW + 0.8 % * 2 MW * 0.25 = 8 kW
    assert transformer_loss_w(1e6, 2e6, no_load_loss_fraction=0.002,
                              load_loss_fraction=0.008) == pytest.approx(8000.0)
    assert transformer_loss_w(0.0, 2e6, no_load_loss_fraction=0.002, load_loss_fraction=0.008) == 0.0


def test_ups_recharge_after_a_generator_start():
    from twin.power.electrical import ups_recharge

    # 800 kW carried for 15 s = 12 MJ; 10 % of 1.65 MW = 165 kW at 85 % -> 85.6 s
    p, t = ups_recharge(800e3 * 15.0, 1.65e6)
    assert p == pytest.approx(165e3)
    assert t == pytest.approx(12e6 / (0.85 * 165e3))
    p0, t0 = ups_recharge(0.0, 1.65e6)
    assert p0 == 0.0 and t0 == 0.0


def test_phase_imbalance_derates_a_three_phase_circuit():
    from twin.power.electrical import phase_imbalance_limit_w

    lim = breaker_continuous_limit_w(60, 415, 3)
    assert phase_imbalance_limit_w(lim, 0.10) == pytest.approx(34502.45 / 1.1, abs=0.01)
    assert phase_imbalance_limit_w(lim, 0.0) == pytest.approx(lim)
    # cross-check from currents: 3 single-phase loads at 240 V phase voltage (415/sqrt 3),
    # worst phase at 48 A (80 % of 60 A) and the mean 10 % lower
    v_ph = 415 / np.sqrt(3)
    i_max = 0.8 * 60
    total = 3 * v_ph * i_max / 1.1
    assert phase_imbalance_limit_w(lim, 0.10) == pytest.approx(total, rel=1e-9)
