"""Node power: calibration band, PSU curve, fans, caps, power brake."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.phases import Phase
from twin.power.node import (
    PHASE_POWER_ORDER,
    gpu_clock_fraction_at_power,
    gpu_power_brake_clock_fraction,
    gpu_power_cap_for_node_budget_w,
    node_dc_power_w,
    node_power_w,
    node_worst_case_w,
    psu_capacity_w,
    psu_efficiency,
)

from .conftest import XE9680_H100, XE9680_PSU_CAPACITY_W

HW = dict(XE9680_H100, psu_capacity_w=XE9680_PSU_CAPACITY_W)


def test_psu_efficiency_hits_the_80plus_titanium_points():
    # calibration.yaml power.psu_80plus_titanium_230v_internal_redundant
    eta = psu_efficiency(np.array([0.1, 0.2, 0.5, 1.0]))
    np.testing.assert_allclose(eta, [0.90, 0.94, 0.96, 0.91])
    # linear between points: 35 % is halfway from 0.94 to 0.96
    assert psu_efficiency(0.35) == pytest.approx(0.95)


def test_psu_efficiency_below_ten_percent_is_a_fixed_no_load_loss():
    # loss at 10 % = 0.1 * (1/0.9 - 1) = 0.011111 of rating, held constant below
    loss0 = 0.1 * (1 / 0.9 - 1)
    x = np.array([0.01, 0.05])
    eta = psu_efficiency(x)
    np.testing.assert_allclose(x / eta - x, loss0, rtol=1e-12)
    assert psu_efficiency(0.0) == 0.0


def test_xe9680_training_power_in_the_calibration_band():
    # Issue 3: 8x H100 XE9680-class node in LLM training draws about 7.8-8.6 kW.
    for inlet in (20.0, 25.0, 30.0):
        p = node_power_w(np.array([Phase.TRAINING]), 700.0, inlet, **HW)[0]
        assert 7800.0 <= p <= 8600.0, (inlet, p)
    p25 = node_power_w(np.array([Phase.TRAINING]), 700.0, 25.0, **HW)[0]
    assert p25 == pytest.approx(8043.0, abs=5.0)


def test_training_power_matches_the_brookhaven_h100_statistics():
    # Newkirk et al., arXiv 2506.14551 (2025), Brookhaven 8x H100 HGX nodes: compute-
    # intensive training runs at about 76 % of the 10.2 kW rating = 7.75 kW (20 C room)
    p = node_power_w(np.array([Phase.TRAINING]), 700.0, 20.0, **HW)[0]
    assert p == pytest.approx(0.76 * 10200.0, rel=0.03)


def test_full_load_matches_measured_peak_and_stays_below_rating():
    # Latif et al., IEEE Access 13 (2025): measured 8x H100 node peak 8.4 kW, 18 % below
    # the 10.2 kW rating (calibration.yaml power.measured_8x_h100_node_peak_w, dgx_h100_max_w).
    p = node_power_w(np.array([Phase.BURN_IN]), 700.0, 25.0, **HW)[0]
    assert p == pytest.approx(8400.0, rel=0.03)
    assert node_worst_case_w(700.0, **HW) < 10200.0


def test_off_node_draws_nothing_and_idle_is_host_plus_idle_gpus():
    p = node_power_w(np.array([Phase.OFF, Phase.IDLE]), 700.0, 25.0, **HW)
    assert p[0] == 0.0
    gpu, host, fan = node_dc_power_w(np.array([Phase.IDLE]), 700.0, 25.0, **XE9680_H100)
    assert gpu[0] == 8 * 70.0 and host[0] == 1100.0
    # idle heat 1660 W is 22 % of the 7500 W design heat -> fans at the 0.3 floor
    assert fan[0] == pytest.approx(1600.0 * 0.3**3)


def test_fan_power_rises_with_inlet_temperature():
    inlet = np.linspace(15.0, 40.0, 26)
    ph = np.full(inlet.shape, int(Phase.TRAINING))
    _, _, fan = node_dc_power_w(ph, 700.0, inlet, **XE9680_H100)
    assert np.all(np.diff(fan) >= 0)
    # between the minimum-speed floor and full speed (reached at ~36 C) it rises strictly
    assert np.all(np.diff(fan[inlet <= 35.0]) > 0)
    assert fan[-1] == 1600.0
    # T_ctl = 68 C: speed 35 -> 25 C falls by (68-35)/(68-25) = 0.767, power by its cube
    _, _, f2 = node_dc_power_w(ph[:2], 700.0, np.array([25.0, 30.0]), **XE9680_H100)
    assert f2[1] / f2[0] == pytest.approx(((68 - 25) / (68 - 30)) ** 3)
    # full load at the 35 C design inlet: fans at full speed
    _, _, fan35 = node_dc_power_w(np.array([Phase.BURN_IN]), 700.0, 35.0, **XE9680_H100)
    assert fan35[0] == pytest.approx(1600.0)


def test_node_never_exceeds_node_max_even_when_hot():
    hw = dict(HW, node_max_w=9000.0)
    p = node_power_w(np.array([Phase.BURN_IN] * 3), 700.0, np.array([35.0, 40.0, 45.0]), **hw)
    assert np.all(p <= 9000.0)
    assert p[-1] == 9000.0


def test_power_brake_rules_xe9680():
    # XE9680 6 x 2800 W: 5+1 brakes with 2+ failed; 3+3 FTR brakes with 2+ failed.
    f = gpu_power_brake_clock_fraction(np.arange(7), 6, "5+1")
    np.testing.assert_array_equal(f, [1, 1, 0.5, 0.5, 0.5, 0.5, 0])
    f = gpu_power_brake_clock_fraction(np.arange(7), 6, "3+3 FTR")
    np.testing.assert_array_equal(f, [1, 1, 0.5, 0.5, 0.5, 0.5, 0])
    with pytest.raises(ValueError):
        gpu_power_brake_clock_fraction(0, 4, "5+1")


def test_power_brake_lowers_node_power():
    ph = np.array([Phase.TRAINING, Phase.TRAINING])
    cap = psu_capacity_w(6, 2800.0, np.array([0, 2]))
    clock = gpu_power_brake_clock_fraction(np.array([0, 2]), 6, "3+3")
    p = node_power_w(ph, 700.0, 25.0, clock_fraction=clock, **dict(XE9680_H100, psu_capacity_w=cap))
    # braked GPUs: 70 + 0.95 * 630 * 0.5**3 = 144.8 W each instead of 668.5 W
    assert p[1] < p[0] - 8 * (668.5 - 144.8) * 0.9
    # a braked node fits what its four surviving PSUs deliver
    assert p[1] < 4 * 2800.0


def test_cap_for_budget_inverts_worst_case():
    budget = np.array([6000.0, 7500.0, 9000.0, 20000.0, 1000.0])
    cap = gpu_power_cap_for_node_budget_w(budget, gpu_cap_min_w=200.0, **HW)
    assert cap[3] == 700.0 and np.isnan(cap[4])
    wc = node_worst_case_w(cap[:3], **HW)
    np.testing.assert_allclose(wc, budget[:3], rtol=1e-6)


def test_clock_fraction_at_cap_h100():
    # DVFS f**3 law: 500 W cap in training -> f = ((500-70)/(0.95*630))**(1/3)
    f = gpu_clock_fraction_at_power(np.array([700.0, 500.0]), gpu_tdp_w=700.0, gpu_idle_w=70.0)
    assert f[0] == 1.0
    assert f[1] == pytest.approx((430.0 / 598.5) ** (1 / 3))


@settings(max_examples=60, deadline=None)
@given(
    cap=st.lists(st.floats(0.0, 1000.0), min_size=2, max_size=2),
    inlet=st.floats(5.0, 50.0),
    clock=st.floats(0.0, 1.0),
)
def test_node_power_monotone_in_cap_and_phase_and_bounded(cap, inlet, clock):
    lo, hi = sorted(cap)
    order = np.array([int(p) for p in PHASE_POWER_ORDER])
    p_lo = node_power_w(order, lo, inlet, clock_fraction=clock, **HW)
    p_hi = node_power_w(order, hi, inlet, clock_fraction=clock, **HW)
    assert np.all(p_hi >= p_lo - 1e-9)
    assert np.all(np.diff(p_hi) >= -1e-9)
    assert np.all(p_hi <= HW["node_max_w"])
    assert np.all(p_lo >= 0.0)


def test_power_brake_accepts_psus_required():
    # catalog form: psus_required = 5 of 6 is 5+1
    np.testing.assert_array_equal(gpu_power_brake_clock_fraction(np.arange(7), 6, 5),
                                  gpu_power_brake_clock_fraction(np.arange(7), 6, "5+1"))
    # SR675 V3: 4 x 2400 W, N+1 (3 required): brakes (or throttles) with 2 failed
    np.testing.assert_array_equal(gpu_power_brake_clock_fraction(np.arange(5), 4, 3),
                                  [1, 1, 0.5, 0.5, 0])
    with pytest.raises(ValueError):
        gpu_power_brake_clock_fraction(0, 4, 5)


def test_breakdown_adds_up_and_matches_node_power():
    from twin.power.node import node_power_breakdown_w

    ph = np.array([int(p) for p in PHASE_POWER_ORDER] * 3)
    inlet = np.repeat([20.0, 35.0, 45.0], 7)
    for hw in (HW, dict(HW, node_max_w=8500.0)):
        b = node_power_breakdown_w(ph, 700.0, inlet, **hw)
        np.testing.assert_allclose(b["ac_w"], node_power_w(ph, 700.0, inlet, **hw))
        np.testing.assert_allclose(b["gpu_w"] + b["host_w"] + b["fan_w"] + b["psu_loss_w"], b["ac_w"])
        assert np.all(b["psu_loss_w"] >= 0.0)
    # with an 8.5 kW ceiling the full-load nodes at 35 and 45 C are held there
    assert b["limited"].sum() >= 2 and np.all(b["ac_w"][b["limited"]] == 8500.0)
    # XE9680 training at 25 C: PSU loss 4.2 % of the wall power (eta 0.958 at 47 % load)
    b = node_power_breakdown_w(np.array([Phase.TRAINING]), 700.0, 25.0, **HW)
    assert b["psu_loss_w"][0] / b["ac_w"][0] == pytest.approx(0.042, abs=0.002)
