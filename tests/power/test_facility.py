"""Cooling plant, PUE and synchronous power swings."""

import numpy as np
import pytest

from twin.phases import Phase
from twin.power.facility import (
    chiller_cop,
    cooling_power_breakdown_w,
    cooling_power_w,
    economizer_fraction,
    outdoor_temp_c,
    power_ramp_rate_kw_per_s,
    pue,
)
from twin.power.node import node_power_w

from .conftest import XE9680_H100, XE9680_PSU_CAPACITY_W

HW = dict(XE9680_H100, psu_capacity_w=XE9680_PSU_CAPACITY_W)


def test_chiller_cop_follows_carnot_lift():
    # T_evap = 12 - 2 = 10 C; lift at 25 C = 25 + 10 - 10 = 25 K, at 35 C 35 K
    cop = chiller_cop(np.array([25.0, 35.0, 15.0]), chiller_cop_at_25c=4.5)
    np.testing.assert_allclose(cop, [4.5, 4.5 * 25 / 35, 4.5 * 25 / 15])
    # Carnot check at 35 C: T_ev 283.15 K, lift 35 K -> Carnot 8.09; real 3.21 = 40 % of it
    assert cop[1] / (283.15 / 35.0) == pytest.approx(0.397, abs=0.002)
    assert chiller_cop(-20.0) == 12.0
    assert np.all(np.diff(chiller_cop(np.linspace(-10, 45, 56))) <= 0)


def test_economizer_bounds():
    f = economizer_fraction(np.array([0.0, 7.0, 10.0, 13.0, 30.0]))
    np.testing.assert_allclose(f, [1.0, 1.0, 0.5, 0.0, 0.0])


def test_cooling_power_and_pue_vary_with_weather():
    heat = 1e6
    c = cooling_power_breakdown_w(heat, np.array([0.0, 10.0, 25.0, 35.0]))
    # 25 C: fans/pumps 50 kW, chiller 1.05 MW / 4.5 = 233.3 kW, rejection 10.5 kW
    assert c["total"][2] == pytest.approx(50e3 + 1.05e6 / 4.5 + 10.5e3)
    # 0 C: full free cooling: only fans, pumps and dry-cooler fans
    assert c["chiller"][0] == 0.0 and c["total"][0] == pytest.approx(60.5e3)
    assert np.all(np.diff(c["total"]) > 0)
    # PUE of an IT load of 950 kW with 50 kW of distribution loss:
    # at 25 C (1.0 + 0.294) / 0.95 = 1.362; at 35 C higher; at 0 C 1.117
    p = pue(0.95e6, 1.0e6, c["total"])
    assert p[2] == pytest.approx((1e6 + c["total"][2]) / 0.95e6)
    assert p[0] < p[1] < p[2] < p[3]
    # an older hall (COP 3 at 25 C, 10 % fans/pumps, no economizer) at 20 C lands on the
    # 1.56 industry average (Uptime Institute 2024; calibration.yaml pue_industry_average)
    old = cooling_power_w(heat, 20.0, chiller_cop_at_25c=3.0, fan_pump_fraction=0.10,
                          economizer=False)
    assert pue(0.92e6, 1.0e6, old) == pytest.approx(1.56, abs=0.06)
    with pytest.raises(TypeError):
        cooling_power_w(heat, 20.0, chiller_cop_25=3.0)


def test_outdoor_temperature_cycle():
    t = np.array([0.0, 199 * 86400.0, 199 * 86400 + 15 * 3600.0])
    temp = outdoor_temp_c(t, mean_c=14.0, seasonal_swing_c=12.0, daily_swing_c=5.0)
    # day 200 15:00: seasonal peak (off by 0.625 day: cos term 0.99989) plus daily peak
    assert temp[2] == pytest.approx(14.0 + 12.0 * np.cos(2 * np.pi * 0.625 / 365.25) + 5.0)
    assert temp[0] < 14.0 - 10.0


def test_synchronous_swing_of_one_large_job():
    # 256 XE9680 nodes flipping from TRAINING to COMMUNICATION together
    n = 256
    p_train = node_power_w(np.full(n, Phase.TRAINING), 700.0, 25.0, **HW).sum()
    p_comm = node_power_w(np.full(n, Phase.COMMUNICATION), 700.0, 25.0, **HW).sum()
    swing = p_train - p_comm
    assert swing / n == pytest.approx(8043 - 4716, abs=30)  # ~3.3 kW per node
    series = np.array([p_train, p_comm, p_train, p_train])
    # event-based samples 1 s apart: ~850 kW/s
    rate = power_ramp_rate_kw_per_s(series, t_s=np.array([0.0, 1.0, 5.0, 6.0]))
    assert rate == pytest.approx(swing / 1e3)
    # the same swing seen over an hourly sample is diluted 3600 x
    assert power_ramp_rate_kw_per_s(series, 3600.0) == pytest.approx(swing / 3.6e6)
    # simultaneous samples are bounded by min_dt_s
    assert power_ramp_rate_kw_per_s(series[:2], t_s=np.array([3.0, 3.0])) == pytest.approx(swing / 1e3)
    assert power_ramp_rate_kw_per_s(series[:1], 1.0) == 0.0
