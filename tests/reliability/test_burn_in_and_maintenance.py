"""Burn-in rate multiplier and planned maintenance."""

import numpy as np
import pytest

from twin.reliability import (
    burn_in_rate_multiplier,
    interruption_lost_work_s,
    load_failure_classes,
    node_failure_rates_per_s,
    sample_planned_maintenance_times_s,
    weibull_cumulative_hazard,
    weibull_mean_hazard_per_s,
    weibull_scale_s_for_expected_failures,
)

H = 3600.0
BASE = float(node_failure_rates_per_s(load_failure_classes(), 1, per_class=False)[0])  # [1/s]


def test_mean_hazard_integrates_exactly():
    a0, a1, k, eta = 0.0, 24.0 * H, 0.6, 500.0 * H
    h = weibull_mean_hazard_per_s(a0, a1, k, eta)
    assert h * (a1 - a0) == pytest.approx(weibull_cumulative_hazard(a1, k, eta))
    assert np.isfinite(h)


def test_burn_in_multiplier_adds_the_expected_infant_failures():
    # 0.05 infant failures per node in a 72 h burn-in, shape 0.6, 1 h sampling interval
    k, burn, dt = 0.6, 72.0 * H, H
    eta = weibull_scale_s_for_expected_failures(0.05, burn, k)
    ages = np.arange(0.0, burn, dt)
    m = burn_in_rate_multiplier(ages, dt, k, eta, BASE, burn_in_s=burn)
    extra = np.sum((m - 1.0) * BASE * dt)
    assert extra == pytest.approx(0.05, rel=1e-9)
    assert np.all(np.diff(m) < 0)  # decreasing hazard
    assert burn_in_rate_multiplier(np.array([100.0 * H]), dt, k, eta, BASE, burn_in_s=burn)[0] == 1.0


def test_planned_maintenance_count():
    rng = np.random.default_rng(31)
    horizon_s = 54 * 86400.0  # the Llama 3 basis: 47 planned interruptions in 54 days
    n = [sample_planned_maintenance_times_s(rng, horizon_s).size for _ in range(400)]
    assert np.mean(n) == pytest.approx(47.0, abs=4.5 * np.sqrt(47 / 400))
    t = sample_planned_maintenance_times_s(rng, horizon_s)
    assert np.all(np.diff(t) >= 0) and np.all((t >= 0) & (t < horizon_s))


def test_planned_interruption_loses_no_work():
    np.testing.assert_array_equal(
        interruption_lost_work_s(np.array([100.0, 250.0]), np.array([True, False])), [0.0, 250.0])
