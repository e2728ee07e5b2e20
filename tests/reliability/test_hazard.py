"""Weibull infant mortality and Arrhenius acceleration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from twin.reliability import (
    arrhenius_acceleration_factor,
    sample_weibull_failure_age_s,
    weibull_cumulative_hazard,
    weibull_infant_hazard_per_s,
    weibull_scale_s_for_expected_failures,
)

H = 3600.0


@settings(max_examples=60, deadline=None)
@given(shape=st.floats(0.1, 0.99), scale=st.floats(1.0, 1e6), t=st.floats(1e-3, 1e5), dt=st.floats(1e-3, 1e5))
def test_weibull_hazard_decreases_for_shape_below_one(shape, scale, t, dt):
    h0, h1 = weibull_infant_hazard_per_s(np.array([t, t + dt]), shape, scale)
    assert h1 < h0


def test_weibull_shape_one_is_exponential():
    h = weibull_infant_hazard_per_s(np.array([0.0, 5.0, 500.0]), 1.0, 250.0)
    np.testing.assert_allclose(h, 1 / 250.0)


def test_weibull_hazard_by_hand_and_integrates_to_cumulative():
    # k = 0.5, eta = 100 h, t = 25 h: (0.5/100) * (0.25)^-0.5 = 0.01 / h
    assert weibull_infant_hazard_per_s(25.0 * H, 0.5, 100.0 * H) * H == pytest.approx(0.01)
    t = np.linspace(1e-6, 400.0, 400_001) * H
    h = weibull_infant_hazard_per_s(t, 0.7, 300.0 * H)
    integral = np.trapezoid(h, t) + weibull_cumulative_hazard(1e-6 * H, 0.7, 300.0 * H)
    assert integral == pytest.approx(weibull_cumulative_hazard(400.0 * H, 0.7, 300.0 * H), rel=2e-3)


def test_scale_for_expected_failures():
    eta = weibull_scale_s_for_expected_failures(0.05, 336.0 * H, 0.7)
    assert weibull_cumulative_hazard(336.0 * H, 0.7, eta) == pytest.approx(0.05)


def test_conditional_weibull_sampling_matches_survival_function():
    rng = np.random.default_rng(11)
    shape, eta = 0.6, 2000.0 * H
    t = sample_weibull_failure_age_s(rng, np.zeros(50_000), shape, eta)
    assert stats.kstest(t, stats.weibull_min(shape, scale=eta).cdf).pvalue > 1e-3
    # parts that survived to age a: P(T > a + x | T > a) = exp(-(H(a+x) - H(a)))
    a, x = 100.0 * H, 300.0 * H
    t2 = sample_weibull_failure_age_s(rng, np.full(50_000, a), shape, eta)
    assert np.all(t2 >= a)
    p = np.exp(-(weibull_cumulative_hazard(a + x, shape, eta) - weibull_cumulative_hazard(a, shape, eta)))
    assert np.mean(t2 > a + x) == pytest.approx(p, abs=5 * np.sqrt(p * (1 - p) / 50_000))


def test_arrhenius_by_hand():
    assert arrhenius_acceleration_factor(60.0, 60.0) == pytest.approx(1.0)
    # Ea 0.7 eV, 60 -> 70 C: exp(0.7 / 8.617333e-5 * (1/333.15 - 1/343.15)) = 2.0352
    assert arrhenius_acceleration_factor(70.0, 60.0, 0.7) == pytest.approx(2.0352, abs=1e-3)
    assert arrhenius_acceleration_factor(50.0, 60.0, 0.7) < 1.0


@settings(max_examples=40, deadline=None)
@given(t=st.floats(-20, 120), dt=st.floats(0.01, 50), ea=st.floats(0.1, 1.5))
def test_arrhenius_increases_with_temperature(t, dt, ea):
    a0, a1 = arrhenius_acceleration_factor(np.array([t, t + dt]), 40.0, ea)
    assert a1 > a0 > 0
