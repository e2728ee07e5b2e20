"""Branch circuits and rack PDUs: cord loads in normal operation and on A/B failover."""

import numpy as np
import pytest

from twin.power.branch import (
    branch_load_fraction,
    branch_rating_fraction,
    cord_load_w,
    failover_overloaded,
)
from twin.power.breakers import frame_trip_time_s


def test_failover_overload_on_208v_that_does_not_occur_on_415v():
    rack_w = 17_500.0   # two XE9680 training (~8.3 kW each) + 0.9 kW network share
    kw = dict(breaker_a=60, phases=3, power_factor=0.95)
    # 208 V: sqrt(3) * 208 * 60 = 21,616 VA; 80 % x pf 0.95 = 16,428.2 W continuous per cord
    lim208 = np.sqrt(3) * 208 * 60 * 0.8 * 0.95
    assert lim208 == pytest.approx(16428.2, abs=0.1)
    assert branch_load_fraction(rack_w, voltage_v=208, **kw) == pytest.approx(8750 / lim208)
    assert branch_load_fraction(rack_w, voltage_v=208, failed_cords=1, **kw) == pytest.approx(1.0652, abs=1e-4)
    assert failover_overloaded(rack_w, voltage_v=208, **kw)
    # 415 V: 43,128 VA -> 32,777 W continuous; failover 0.534: no overload
    lim415 = np.sqrt(3) * 415 * 60 * 0.8 * 0.95
    assert branch_load_fraction(rack_w, voltage_v=415, failed_cords=1, **kw) == pytest.approx(rack_w / lim415)
    assert not failover_overloaded(rack_w, voltage_v=415, **kw)
    # in normal operation neither is overloaded
    assert branch_load_fraction(rack_w, voltage_v=208, **kw) < 1.0


def test_the_208v_overload_trips_the_branch_breaker_within_minutes():
    # failover load 1.065 of the continuous limit = 0.852 of the rating: a standard breaker
    # below its rating never trips (the 80 % rule protects the conductors, not the breaker)
    frac = branch_load_fraction(17_500.0, breaker_a=60, voltage_v=208, phases=3, failed_cords=1)
    x = branch_rating_fraction(frac)
    assert x == pytest.approx(0.852, abs=1e-3)
    assert np.isinf(frame_trip_time_s(x, "miniature"))
    # a worst-case rack (19.9 kW, full load at 35 C) on 208 V 30 A cords is at 2.4x the
    # rating on failover: the miniature breaker trips in about 10 s
    frac30 = branch_load_fraction(19_940.0, breaker_a=30, voltage_v=208, phases=3, failed_cords=1)
    x30 = float(branch_rating_fraction(frac30))
    assert x30 == pytest.approx(19_940 / 0.95 / (np.sqrt(3) * 208 * 30), rel=1e-12)
    assert 1.0 < frame_trip_time_s(x30, "miniature") < 60.0


def test_cord_shares_conserve_the_rack_load():
    p = np.array([0.0, 5e3, 2e4])
    np.testing.assert_allclose(cord_load_w(p, 2) * 2, p)
    np.testing.assert_allclose(cord_load_w(p, 3, 1) * 2, p)
    assert np.all(np.isinf(cord_load_w(p[1:], 2, 2)))
    assert cord_load_w(0.0, 2, 2) == 0.0


def test_100pct_rated_branch_carries_its_rating():
    f = branch_load_fraction(8000.0, breaker_a=32, voltage_v=230, phases=1, rated_100pct=True,
                             power_factor=1.0, cords=1)
    assert f == pytest.approx(8000 / (230 * 32))
    assert branch_rating_fraction(f, rated_100pct=True) == pytest.approx(f)
