"""Grid disturbances: ITIC tolerance, UPS vs bypass ride-through, event sampling."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.power.grid import (
    GRID_OUTAGE,
    GRID_SAG,
    SECONDS_PER_YEAR,
    power_restored_after_s,
    psu_sag_tolerance_s,
    ride_through_outcome,
    sample_grid_events,
)

PSU = dict(psu_holdup_s=0.012, ups_ride_through_s=300.0, generator_start_s=15.0)


def test_itic_tolerance_bands():
    # ITIC curve (2000): 0-70 % residual -> hold-up only; 70 %: 0.5 s; 80 %: 10 s; 90 %: forever
    tol = psu_sag_tolerance_s(np.array([0.0, 0.5, 0.7, 0.8, 0.9, 1.0]), 0.012)
    np.testing.assert_array_equal(tol, [0.012, 0.012, 0.5, 10.0, np.inf, np.inf])


def test_sag_drops_nodes_in_bypass_but_ups_rides_through():
    # a 200 ms sag to 50 % (a typical fault-clearing sag, EPRI DPQ): longer than the
    # 12 ms PSU hold-up
    d, v = 0.2, 0.5
    assert ride_through_outcome(d, "bypass", residual_voltage_pu=v, **PSU)
    assert not ride_through_outcome(d, "double_conversion", residual_voltage_pu=v, **PSU)
    # eco mode transfers in 4 ms < 12 ms hold-up: rides through too
    assert not ride_through_outcome(d, "eco", residual_voltage_pu=v, **PSU)
    # shallow sag to 85 % for 2 s: inside ITIC, nobody drops even in bypass
    assert not ride_through_outcome(2.0, "bypass", residual_voltage_pu=0.85, **PSU)
    # a one-cycle (8 ms) dip is bridged by the PSU hold-up
    assert not ride_through_outcome(0.008, "bypass", **PSU)


def test_outages_generator_and_battery():
    d = np.array([10.0, 60.0, 1800.0, 7200.0])
    # generator starts in 15 s, within the 300 s battery: everything covered
    assert not ride_through_outcome(d, "double_conversion", **PSU).any()
    # no generator: only the battery (300 s at full load)
    no_gen = dict(PSU, generator_start_s=None)
    np.testing.assert_array_equal(ride_through_outcome(d, "double_conversion", **no_gen),
                                  [False, False, True, True])
    # at 40 % load the battery lasts 300 * 0.4**-1.2 = 1,001 s
    np.testing.assert_array_equal(
        ride_through_outcome(d, "double_conversion", ups_load_fraction=0.4, **no_gen),
        [False, False, True, True])
    assert not ride_through_outcome(900.0, "double_conversion", ups_load_fraction=0.4, **no_gen)
    # bypass: every outage drops the nodes; the generator restores power after 15 s
    assert ride_through_outcome(d, "bypass", **PSU).all()
    np.testing.assert_array_equal(power_restored_after_s(d, generator_start_s=15.0), [10, 15, 15, 15])
    np.testing.assert_array_equal(power_restored_after_s(d), d)


def test_grid_event_sampling_rates_and_reproducibility():
    years = 2000.0
    ev = sample_grid_events(np.random.default_rng(42), years * SECONDS_PER_YEAR,
                            sag_rate_per_year=6.0, outage_rate_per_year=0.5,
                            sag_mean_duration_s=0.2, outage_mean_duration_s=1800.0)
    n_sag = np.sum(ev["kind"] == GRID_SAG)
    n_out = np.sum(ev["kind"] == GRID_OUTAGE)
    # Poisson counts: mean 12,000 (sd 110) and 1,000 (sd 32)
    assert abs(n_sag - 12000) < 5 * np.sqrt(12000)
    assert abs(n_out - 1000) < 5 * np.sqrt(1000)
    # lognormal means match the requested means (sd of the mean ~ 1.3 % and 9 %)
    assert ev["duration_s"][ev["kind"] == GRID_SAG].mean() == pytest.approx(0.2, rel=0.06)
    assert ev["duration_s"][ev["kind"] == GRID_OUTAGE].mean() == pytest.approx(1800.0, rel=0.35)
    assert np.all(np.diff(ev["start_s"]) >= 0)
    assert np.all(ev["residual_voltage_pu"][ev["kind"] == GRID_OUTAGE] == 0.0)
    assert np.all(ev["residual_voltage_pu"][ev["kind"] == GRID_SAG] < 0.7)
    again = sample_grid_events(np.random.default_rng(42), years * SECONDS_PER_YEAR,
                               sag_rate_per_year=6.0, outage_rate_per_year=0.5)
    for k in ev:
        np.testing.assert_array_equal(ev[k], again[k])


def test_bypass_drops_on_most_sampled_sags_ups_on_none():
    ev = sample_grid_events(np.random.default_rng(3), 50 * SECONDS_PER_YEAR,
                            sag_rate_per_year=6.0, outage_rate_per_year=0.5)
    byp = ride_through_outcome(ev["duration_s"], "bypass",
                               residual_voltage_pu=ev["residual_voltage_pu"], **PSU)
    ups = ride_through_outcome(ev["duration_s"], "double_conversion",
                               residual_voltage_pu=ev["residual_voltage_pu"], **PSU)
    assert not ups.any()
    # deep sags (< 70 %) with lognormal durations (mean 0.2 s, sigma 1): P(d > 12 ms) ~ 0.99
    assert byp.mean() > 0.95


@settings(max_examples=60, deadline=None)
@given(
    d=st.lists(st.floats(1e-4, 1e5), min_size=2, max_size=2),
    v=st.floats(0.0, 1.0),
    gen=st.one_of(st.none(), st.floats(1.0, 120.0)),
    bat=st.floats(0.0, 1800.0),
    load=st.one_of(st.none(), st.floats(0.05, 1.2)),
)
def test_ride_through_monotone_and_ups_never_worse_than_bypass(d, v, gen, bat, load):
    lo, hi = sorted(d)
    kw = dict(psu_holdup_s=0.012, ups_ride_through_s=bat, generator_start_s=gen,
              residual_voltage_pu=v, ups_load_fraction=load)
    for mode in ("bypass", "eco", "double_conversion"):
        # a longer disturbance never rescues nodes that a shorter one drops
        assert ride_through_outcome(hi, mode, **kw) >= ride_through_outcome(lo, mode, **kw)
    for dur in (lo, hi):
        byp = ride_through_outcome(dur, "bypass", **kw)
        assert ride_through_outcome(dur, "double_conversion", **kw) <= byp
        assert ride_through_outcome(dur, "eco", **kw) <= byp
