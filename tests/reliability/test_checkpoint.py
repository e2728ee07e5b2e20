"""Young and Daly intervals by hand, and an independent Monte Carlo of a checkpointing
job (pure numpy) whose goodput-optimal interval must land within 10 % of Daly's."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.reliability import (
    daly_interval_s,
    expected_goodput_fraction,
    optimal_interval_s,
    young_interval_s,
)


def test_young_by_hand():
    # delta = 300 s, M = 3 h = 10,800 s: sqrt(2 * 300 * 10800) = sqrt(6.48e6) = 2545.584 s
    assert young_interval_s(300.0, 10_800.0) == pytest.approx(2545.584412, abs=1e-5)
    # delta = 60 s, M = 1000 s: sqrt(120000) = 346.4102 s
    assert young_interval_s(60.0, 1000.0) == pytest.approx(346.410162, abs=1e-5)


def test_daly_by_hand():
    # delta = 300, M = 10800: x = delta/(2M) = 0.0138889, sqrt(x) = 0.1178511
    # 2545.5844 * (1 + 0.0392837 + 0.0015432) - 300 = 2349.5128 s
    assert daly_interval_s(300.0, 10_800.0) == pytest.approx(2349.5128, abs=1e-3)
    # delta = 60, M = 1000: x = 0.03, sqrt(x) = 0.1732051
    # 346.4102 * (1 + 0.0577350 + 0.0033333) - 60 = 367.5649 - 60 = 307.5649 s
    assert daly_interval_s(60.0, 1000.0) == pytest.approx(307.5649, abs=1e-3)
    # delta >= 2M: T = M
    assert daly_interval_s(500.0, 200.0) == 200.0
    assert daly_interval_s(400.0, 200.0) == 200.0


def test_daly_formula_is_close_to_exact_optimum_of_the_exponential_model():
    for d, m in ((300.0, 10_800.0), (60.0, 3600.0), (600.0, 36_000.0)):
        assert optimal_interval_s(d, 600.0, m) == pytest.approx(daly_interval_s(d, m), rel=0.01)


def test_first_order_and_exact_models_agree_when_everything_is_small():
    tau = np.array([600.0, 1200.0, 2400.0])
    g1 = expected_goodput_fraction(tau, 60.0, 120.0, 1e6, model="first_order")
    g2 = expected_goodput_fraction(tau, 60.0, 120.0, 1e6)
    np.testing.assert_allclose(g1, g2, atol=2e-5)


def _mc_goodput(gaps_s, taus_s, checkpoint_s, restart_s):
    """Pure-numpy Monte Carlo of a job that checkpoints every tau.

    Between two failures (gap g) the job first restarts (R), then runs segments of
    tau compute + delta checkpoint; only completed segments are kept. A failure during
    a restart just starts the next gap with a new restart.
    goodput = sum over gaps of tau * floor(max(g - R, 0) / (tau + delta)) / sum(g).
    """
    usable = np.maximum(gaps_s - restart_s, 0.0)
    out = []
    for tau in taus_s:
        segs = np.floor(usable / (tau + checkpoint_s))
        out.append(tau * segs.sum() / gaps_s.sum())
    return np.array(out)


@pytest.mark.slow
def test_monte_carlo_optimum_within_10_percent_of_daly():
    rng = np.random.default_rng(2407)
    mtbf, delta, restart = 3.09 * 3600.0, 300.0, 600.0  # Llama-3-like job MTBF
    gaps = rng.exponential(mtbf, size=1_000_000)  # common random numbers for all taus
    daly = daly_interval_s(delta, mtbf)
    taus = daly * np.exp(np.linspace(np.log(0.4), np.log(2.5), 41))
    g = _mc_goodput(gaps, taus, delta, restart)
    # Monte Carlo agrees with the exact exponential model at every interval
    np.testing.assert_allclose(g, expected_goodput_fraction(taus, delta, restart, mtbf), atol=2e-3)
    # optimum: vertex of a parabola in log(tau) through the best grid point and neighbours
    i = int(np.argmax(g))
    assert 0 < i < taus.size - 1
    x = np.log(taus[i - 1 : i + 2])
    a, b, _ = np.polyfit(x, g[i - 1 : i + 2], 2)
    tau_best = float(np.exp(-b / (2 * a)))
    assert tau_best == pytest.approx(daly, rel=0.10)
    # and Young's first-order value is worse than Daly's for these numbers
    gy, gd = expected_goodput_fraction([young_interval_s(delta, mtbf), daly], delta, restart, mtbf)
    assert gd >= gy


def test_waste_at_the_optimum_is_first_order_sqrt_2_delta_over_m_plus_r_over_m():
    # Young's first-order waste at T = sqrt(2 delta M): delta/T + T/(2M) + R/M
    # = sqrt(2 delta / M) + R / M. Llama-3-like MTBF (1296 h / 419).
    # First order drops products of the small terms, so it overstates the waste by
    # about half the waste itself: within 8 % at a 10-16 % waste, 2 % at 3 %.
    for m, rel in ((1296 / 419 * 3600, 0.08), (16 * 1296 / 419 * 3600, 0.02)):
        for d, r in ((30.0, 300.0), (60.0, 600.0), (120.0, 60.0)):
            g = expected_goodput_fraction(daly_interval_s(d, m), d, r, m)
            waste = np.sqrt(2 * d / m) + r / m
            assert 1 - g == pytest.approx(waste, rel=rel)
            assert 1 - g < waste


@settings(max_examples=60, deadline=None)
@given(d=st.floats(1.0, 3600.0), m=st.floats(600.0, 1e6))
def test_interval_properties(d, m):
    young = young_interval_s(d, m)
    daly = daly_interval_s(d, m)
    assert young_interval_s(4 * d, m) == pytest.approx(2 * young, rel=1e-9)
    if d < 2 * m:
        assert 0 < daly < young  # the higher-order terms shorten Young's interval
    g = expected_goodput_fraction(np.array([0.5 * daly, daly, 2.0 * daly]), d, 0.0, m)
    assert np.all((g > 0) & (g <= 1))
    if d < 0.1 * m:
        assert g[1] >= g[0] - 1e-12 and g[1] >= g[2] - 1e-12
