"""The room benchmark of the buoyant air model (issue 12).

1. A measured room: RISE SICS ICE POD 2 (12 racks, 4 wall coolers, 27-104 kW; layout
   scenarios/validation/rise_pod2.yaml, window means assets/reference/room_benchmark_pod2_*.csv
   from the time series published with the Rafsine simulator). Nothing is fitted: the twin
   runs with its shipped parameters and the tests pin the measured errors.
2. What such a benchmark can tell the plume coefficient c_b = 0.3 (not fitted). These
   tests pin what decides the content of such a benchmark: a contained cold aisle follows a two-zone energy balance
whatever c_b; in an open hall c_b over its plausible range 0-0.6 moves the mean inlet by
about 1 K, less than the 2 K goal and less than a 0.9 -> 1.1 change of cooling air over
rack air. Measured on twin.studies.room_benchmark's 40-rack hall (4 rows x 10 racks at
10 kW, 15 K rise, four CRAHs, four layers, 5 % containment leak).
"""

import numpy as np
import pytest

from twin.studies.room_benchmark import (
    cooler_airflow_m3_s,
    plume_coefficient_sensitivity,
    pod2_cases,
    pod2_comparison,
    rack_heat_w,
)

RATIOS = (0.9, 1.1)
COEFS = (0.0, 0.3, 0.6)
LEAK = 0.05
DT_RACK_K = 15.0


@pytest.fixture(scope="module")
def sens():
    return plume_coefficient_sensitivity(RATIOS, COEFS, rack_delta_t_k=DT_RACK_K,
                                         containment_leakage_fraction=LEAK)


def test_contained_aisle_follows_the_two_zone_balance_whatever_cb(sens):
    """Cold-aisle containment: the intakes take max(leak, 1 - r) of their air from the room,
    and a well-mixed room sits at the return temperature, supply + dT_rack / r (all rack
    heat leaves through the units: Q = rho cp V_units (T_ret - T_sup)). Hand: r = 0.9 ->
    0.1 x 16.67 = 1.67 K; r = 1.1 -> 0.05 x 13.64 = 0.68 K. Tolerance 0.2 K (the room is
    not perfectly mixed); c_b moves the contained inlets by less than 0.05 K."""
    i = sens.layouts.index("cold_aisle")
    r = np.asarray(RATIOS)
    hand = np.maximum(LEAK, 1 - r) * DT_RACK_K / r
    np.testing.assert_allclose(sens.mean_inlet_rise_k[i], np.repeat(hand[:, None], len(COEFS), 1),
                               atol=0.2)
    assert sens.span_k("mean")[i].max() < 0.05
    assert sens.span_k("hottest")[i].max() < 0.05


def test_open_hall_warms_with_cb_by_about_a_kelvin(sens):
    """Open hall: a stronger buoyant exchange brings more of the hot ceiling layer over the
    rack tops, so every inlet statistic rises with c_b; over c_b 0 -> 0.6 the mean inlet
    moves by 1.33 K at r = 0.9 and 1.08 K at r = 1.1 (measured, +-0.15 K), the hottest by
    1.27 and 1.25 K: below the 2 K goal, so c_b alone cannot decide it."""
    i = sens.layouts.index("open")
    assert np.all(np.diff(sens.mean_inlet_rise_k[i], axis=-1) > 0)
    assert np.all(np.diff(sens.hottest_inlet_rise_k[i], axis=-1) > 0)
    np.testing.assert_allclose(sens.span_k("mean")[i], [1.33, 1.08], atol=0.15)
    np.testing.assert_allclose(sens.span_k("hottest")[i], [1.27, 1.25], atol=0.15)
    assert sens.span_k("mean")[i].max() < 2.0


def test_airflow_ratio_moves_inlets_more_than_cb(sens):
    """A benchmark must report the measured CRAH (or tile) and rack airflows: cooling air
    from 0.9 to 1.1 x rack air lowers the open hall's mean inlet by 2.08 K at c_b = 0.3
    (measured, +-0.15 K), more than c_b's whole 0-0.6 range does at either ratio."""
    i = sens.layouts.index("open")
    k = COEFS.index(0.3)
    drop = sens.mean_inlet_rise_k[i, 0, k] - sens.mean_inlet_rise_k[i, 1, k]
    assert drop == pytest.approx(2.08, abs=0.15)
    assert drop > sens.span_k("mean")[i].max()


# ---- 1. POD 2, a measured room ------------------------------------------------------------


@pytest.fixture(scope="module")
def pod2():
    return pod2_comparison("fan_law")


def test_pod2_measurements_close_their_own_energy_balance():
    """The window means are steady: in every configuration the coolers' measured heat removal
    equals the electrical IT power within 5 % (27-104 kW; measured 1-3 %), and the cooler
    airflow from that heat, V = Q / (rho cp (T_return - T_discharge)), agrees with the
    independent 2.2 m3/s x fan-signal estimate Rafsine's authors used within 10 %."""
    cases = pod2_cases()
    assert len(cases) == 10
    for c in cases:
        assert c.cooler_heat_w == pytest.approx(c.it_power_w, rel=0.05), c.name
        assert c.unit_airflow_m3_s.sum() == pytest.approx(c.unit_signal_airflow_m3_s.sum(), rel=0.10), c.name
        assert c.rack_heat_w.sum() == pytest.approx(c.it_power_w, rel=1e-12)


def test_pod2_helpers_by_hand():
    """Rack heat: servers plus an even share of the rest; cooler air: 30 kW at 10 K over
    rho cp = 1.2 x 1005 J/(m3 K) is 2.4876 m3/s, shared 1:3 by fan signal."""
    np.testing.assert_allclose(rack_heat_w([100.0, 300.0], 600.0), [200.0, 400.0])
    v = cooler_airflow_m3_s(30e3, [30.0, 30.0], [20.0, 20.0], [25.0, 75.0])
    np.testing.assert_allclose(v, np.array([0.25, 0.75]) * 30e3 / (1.2 * 1005 * 10), rtol=1e-12)


def test_pod2_twin_error_is_the_measured_one(pod2):
    """The twin (shipped parameters, c_b = 0.3, rack airflow from the server fans' speed law)
    against the pod's front sensor strips (4 racks x 3 heights x 10 configurations): mean
    absolute error 4.42 K (bottom 1.47, middle 5.65, top 6.15 K), and 5.07 K against the
    servers' own inlet sensors (12 racks x 10), both biased warm. Measured numbers (+-0.1 K):
    the 2 K goal of issue 12 is not met (docs/validation.md says why)."""
    assert pod2.strip_mae_k() == pytest.approx(4.42, abs=0.1)
    np.testing.assert_allclose([pod2.strip_mae_k(h) for h in range(3)], [1.47, 5.65, 6.15], atol=0.1)
    assert pod2.server_mae_k() == pytest.approx(5.07, abs=0.1)
    assert pod2.strip_error_k.mean() > 3.5 and pod2.server_error_k.mean() > 4.5  # warm bias


def test_pod2_rack_airflow_is_the_largest_uncertainty():
    """Rack airflow from the strips' front-to-back rise (about 0.8 x the fan law at full load)
    instead of the fan law: MAE 3.53 K at the strips, 4.01 K at the servers (measured, +-0.1 K):
    the input moves the error by 0.9-1.1 K, less than the error itself."""
    c = pod2_comparison("strip_balance")
    assert c.strip_mae_k() == pytest.approx(3.53, abs=0.1)
    assert c.server_mae_k() == pytest.approx(4.01, abs=0.1)


def test_pod2_measured_rise_is_flat_while_the_twin_grows_with_load(pod2):
    """From 27.5 to 103.5 kW (step experiment) the measured mean inlet rise above supply
    stays within 0.5 K (servers 3.38 -> 3.64 K, strips 4.06 -> 4.09 K), while the twin's
    rises by more than 5 K (5.2 -> 11.3 K): the twin's recirculated air reaches the
    intakes at every height; the pod's cold jets reach the racks at mid-height."""
    cases = {c.name: c for c in pod2_cases()}
    i0, i1 = pod2.names.index("step_27kw"), pod2.names.index("step_104kw")

    def supply(c):
        return np.average(c.unit_discharge_c, weights=c.unit_airflow_m3_s)
    lo, hi = cases["step_27kw"], cases["step_104kw"]
    meas = [(hi.server_inlet_c.mean() - supply(hi)) - (lo.server_inlet_c.mean() - supply(lo)),
            (hi.strip_front_c.mean() - supply(hi)) - (lo.strip_front_c.mean() - supply(lo))]
    twin = (pod2.twin_inlet_c[i1].mean() - supply(hi)) - (pod2.twin_inlet_c[i0].mean() - supply(lo))
    assert max(abs(m) for m in meas) < 0.5
    assert twin > 5.0


def test_pod2_top_of_the_rack_front_is_warmest_in_both(pod2):
    """Stratification sign: at every strip of every configuration the 2.0 m sensor (above
    the servers) reads warmer than the 1.2 m one, in the pod and in the twin."""
    assert np.all(pod2.strip_front_c[..., 2] > pod2.strip_front_c[..., 1])
    assert np.all(pod2.twin_strip_c[..., 2] > pod2.twin_strip_c[..., 1])


def test_pod2_rack_to_rack_pattern(pod2):
    """With each configuration's mean error removed, the servers' inlets are off by 1.96 K
    rack to rack (measured, +-0.1 K): the twin ranks the loaded racks the right way round
    (positive rank correlation in every loaded configuration) but spreads them wider than
    measured (standard deviation over the 12 racks larger in every configuration)."""
    e = pod2.server_error_k
    assert np.abs(e - e.mean(axis=1, keepdims=True)).mean() == pytest.approx(1.96, abs=0.1)
    loaded = [i for i, n in enumerate(pod2.names) if n not in ("idle", "step_27kw")]
    for i in loaded:
        rank_t = np.argsort(np.argsort(pod2.twin_inlet_c[i]))
        rank_m = np.argsort(np.argsort(pod2.server_inlet_c[i]))
        assert np.corrcoef(rank_t, rank_m)[0, 1] > 0.1, pod2.names[i]
    assert np.all(pod2.twin_inlet_c.std(axis=1) > pod2.server_inlet_c.std(axis=1))


def test_pod2_hottest_inlet_and_rci(pod2):
    """What a siting study would read: in the pod no rack's server inlets averaged above
    23.9 C (RCI_HI 100 % in all ten configurations), while the twin puts up to five racks
    above ASHRAE's recommended 27 C at load, its hottest inlet at 36.2 C and RCI_HI at 59 %
    at 103.5 kW (measured, +-0.3 K / +-2 %): on this room the twin is conservative."""
    from twin.thermal import rack_cooling_index_hi
    assert pod2.server_inlet_c.max() < 24.0
    assert all(rack_cooling_index_hi(t) == 100.0 for t in pod2.server_inlet_c)
    i = pod2.names.index("step_104kw")
    assert pod2.twin_inlet_c[i].max() == pytest.approx(36.2, abs=0.3)
    assert rack_cooling_index_hi(pod2.twin_inlet_c[i]) == pytest.approx(59.0, abs=2.0)
