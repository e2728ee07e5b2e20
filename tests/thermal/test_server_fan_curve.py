"""Server fans in their enclosure (twin.thermal.fans): free delivery by the affinity law and
the share phi of it a fan moves against a quadratic system resistance, the same at every
speed (ASHRAE HVAC Systems and Equipment ch. 21 fan laws; system curve dp = K V^2)."""

import numpy as np
import pytest
from scipy.optimize import brentq

from twin.thermal.fans import (
    fan_free_delivery_airflow_m3_s,
    fan_system_airflow_m3_s,
    linear_fan_curve_system_flow_fraction,
    system_flow_fraction,
)

CFM = 0.3048**3 / 60.0


def test_free_delivery_by_hand():
    """Two Delta PFR0812DHE (109.7 CFM at 11,000 rpm) at 2,000 rpm: 2 x 0.051772 x 2/11 =
    0.018826 m3/s; zero speed moves nothing (rel 1e-4)."""
    v = fan_free_delivery_airflow_m3_s([0.0, 2000.0, 11000.0], rated_airflow_m3_s=109.7 * CFM, rated_rpm=11000, fans=2)
    np.testing.assert_allclose(v, [0.0, 0.018826, 2 * 0.051772], rtol=1e-4)


def test_linear_fan_curve_phi_by_hand():
    """dp_0 = 300 Pa, V_0 = 0.05 m3/s, K = 1e5 Pa s2/m6: a = 6,000, sqrt(3.6e7 + 1.2e8) =
    12,490.0, phi = 6,490.0 / 10,000 = 0.6490 (1e-4)."""
    assert linear_fan_curve_system_flow_fraction(300.0, 0.05, 1e5) == pytest.approx(0.64900, abs=1e-4)


@pytest.mark.parametrize("speed", [0.2, 0.5, 0.9])
def test_operating_point_is_the_same_share_of_free_delivery_at_every_speed(speed):
    """Two methods: the fan curve scaled by the affinity laws (V ~ N, dp ~ N^2) crossed with
    dp = K V^2 by a root finder at speed N / N_r, against the closed form phi at rated speed:
    V / V_free(N) = phi within 1e-9 at every speed; fan_system_airflow_m3_s gives that V."""
    dp0, v0, k = 300.0, 0.05, 1e5
    phi = linear_fan_curve_system_flow_fraction(dp0, v0, k)
    v = brentq(lambda x: speed**2 * dp0 * (1.0 - x / (speed * v0)) - k * x * x, 0.0, speed * v0, xtol=1e-15)
    assert v / (speed * v0) == pytest.approx(phi, abs=1e-9)
    got = fan_system_airflow_m3_s(speed * 11000, rated_airflow_m3_s=v0, rated_rpm=11000, system_flow_fraction=phi)
    assert got == pytest.approx(v, rel=1e-9)


def test_stiffer_enclosure_moves_less_air():
    """Limits: K -> 0 gives free delivery (phi -> 1), a stiffer enclosure a smaller phi."""
    phis = [linear_fan_curve_system_flow_fraction(300.0, 0.05, k) for k in (1e-3, 1e4, 1e5, 1e6)]
    assert phis[0] == pytest.approx(1.0, abs=1e-6)
    assert np.all(np.diff(phis) < 0)


def test_fitted_phi_carries_the_measured_air_in_total():
    """phi = sum V_meas / sum V_free: (0.3 + 0.5) / (0.5 + 0.7) = 0.6667; phi x the free
    delivery then sums to the measured total exactly (conservation of the fitted air)."""
    meas, free = np.array([0.3, 0.5]), np.array([0.5, 0.7])
    phi = system_flow_fraction(meas, free)
    assert phi == pytest.approx(2 / 3, rel=1e-12)
    assert (phi * free).sum() == pytest.approx(meas.sum(), rel=1e-12)
