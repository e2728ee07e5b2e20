"""The room benchmark of the buoyant air model (issue 12).

1. A measured room: RISE SICS ICE POD 2 (12 racks, 4 wall coolers, 27-104 kW; layout
   scenarios/validation/rise_pod2.yaml, window means assets/reference/room_benchmark_pod2_*.csv
   from the time series published with the Rafsine simulator). Nothing is fitted: the twin
   runs with its shipped parameters and the tests pin the measured errors, with the floor
   supply and with the wall-jet supply (section 3), and on the held-out January 2018 pod.
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
    """Cold-aisle containment (twin.thermal.containment): the intakes take
    f = max(leak, 1 - S / V_racks) of their air from the room, S the supply the aisles'
    tiles deliver (the cooling air less the floor's leakage, from the plenum solve, which
    buoyancy does not touch), and a well-mixed room sits at the return temperature,
    supply + dT_rack / r (all rack heat leaves through the units). Hand at r = 0.9:
    f dT / r with S = (1 - lf) r V_racks = 0.81 V_racks, 3.17 K (measured 3.18 K); tolerance
    0.2 K (the room is not perfectly mixed). It read S = 0.873 V_racks, 2.1 K, while the
    4-layer floor leaked lf / 4 (test_floor_leakage.py). At r = 1.1 the tiles deliver 0.99
    of the racks' air, more than the (1 - l) = 0.95 the intakes take from the aisle, so the
    aisles spill the rest out in front of the racks and the leak draws that mix: between 0
    and the well-mixed l dT / r = 0.68 K.
    Before the aisle had its own air balance (a fixed share drawn from the room, the
    floor leakage reversing to feed a starved aisle) the hand was max(leak, 1 - r) dT / r.
    c_b moves the contained inlets by less than 0.1 K (0.06 K with air to spare, where the
    buoyant exchange mixes the spilled supply into the room air the leak draws)."""
    from dataclasses import replace

    from twin.thermal import rack_airflow_m3_s, row_hall
    from twin.thermal.solver import build_problem
    i = sens.layouts.index("cold_aisle")
    v = rack_airflow_m3_s(np.full(40, 10e3), DT_RACK_K)
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=0.9 * v.sum() / 4, n_layers=4,
                 containment_leakage_fraction=LEAK)
    s = build_problem(replace(g, containment="cold_aisle"), v).enclosure_supply_m3_s.sum()
    hand = max(LEAK, 1 - s / v.sum()) * DT_RACK_K / 0.9
    np.testing.assert_allclose(sens.mean_inlet_rise_k[i][0], hand, atol=0.2)
    assert np.all(sens.mean_inlet_rise_k[i][1] > 0)
    assert np.all(sens.mean_inlet_rise_k[i][1] <= LEAK * DT_RACK_K / 1.1)
    assert sens.span_k("mean")[i].max() < 0.1
    assert sens.span_k("hottest")[i].max() < 0.1


def test_open_hall_warms_with_cb_by_about_a_kelvin(sens):
    """Open hall: a stronger buoyant exchange brings more of the hot ceiling layer over the
    rack tops, so every inlet statistic rises with c_b; over c_b 0 -> 0.6 the mean inlet
    moves by 1.24 K at r = 0.9 and 1.07 K at r = 1.1 (measured, +-0.15 K), the hottest by
    1.00 and 1.17 K: below the 2 K goal, so c_b alone cannot decide it. The hottest read
    1.27 / 1.25 K (mean 1.33 / 1.08 K) while the 4-layer floor leaked lf / 4 instead of lf
    (test_floor_leakage.py): the tiles fed the open hall more of the units' air."""
    i = sens.layouts.index("open")
    assert np.all(np.diff(sens.mean_inlet_rise_k[i], axis=-1) > 0)
    assert np.all(np.diff(sens.hottest_inlet_rise_k[i], axis=-1) > 0)
    np.testing.assert_allclose(sens.span_k("mean")[i], [1.24, 1.07], atol=0.15)
    np.testing.assert_allclose(sens.span_k("hottest")[i], [1.00, 1.17], atol=0.15)
    assert sens.span_k("mean")[i].max() < 2.0


def test_airflow_ratio_moves_inlets_more_than_cb(sens):
    """A benchmark must report the measured CRAH (or tile) and rack airflows: cooling air
    from 0.9 to 1.1 x rack air lowers the open hall's mean inlet by 2.21 K at c_b = 0.3
    (measured, +-0.15 K; 2.08 K while the 4-layer floor leaked lf / 4), more than c_b's
    whole 0-0.6 range does at either ratio."""
    i = sens.layouts.index("open")
    k = COEFS.index(0.3)
    drop = sens.mean_inlet_rise_k[i, 0, k] - sens.mean_inlet_rise_k[i, 1, k]
    assert drop == pytest.approx(2.21, abs=0.15)
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


# ---- 3. Wall-jet supply (twin.thermal.jets), POD 2 and the held-out January 2018 pod -------


def test_jet_laws_by_hand():
    """ASHRAE Fundamentals ch. 20 free-jet laws, K = 6.2: a 1 m2 outlet blowing 1 m3/s
    (v_0 = 1 m/s) has v = v_0 in its core, v = 0.5 m/s at x = 2 K sqrt(A_0) = 12.4 m,
    carries 2 Q_0 at x = K sqrt(A_0) (Q_x / Q_0 = 2 x / (K sqrt(A_0))) and
    throws to 0.25 m/s at 4 K sqrt(A_0) = 24.8 m."""
    from twin.thermal.jets import jet_centreline_velocity_m_s, jet_throw_m, jet_volume_flow_m3_s
    np.testing.assert_allclose(jet_centreline_velocity_m_s([1.0, 12.4], 1.0, 1.0), [1.0, 0.5])
    np.testing.assert_allclose(jet_volume_flow_m3_s([1.0, 6.2, 12.4], 1.0, 1.0), [1.0, 2.0, 4.0])
    assert jet_throw_m(1.0, 1.0) == pytest.approx(24.8)


def _jet_hall(nan_rows: bool):
    from dataclasses import replace

    from twin.thermal import row_hall
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=3.0, cooling_supply_temp_c=18.0, n_layers=3)
    z = np.full((g.n_cooling, 2), np.nan) if nan_rows else np.tile([0.1, 1.8], (g.n_cooling, 1))
    direc = np.array([[1.0 if x < 0.5 * g.width_m else -1.0, 0.0] for x, _ in g.cooling_xy_m])
    return g, replace(g, cooling_outlet_z_m=z, cooling_outlet_width_m=np.ones(g.n_cooling), cooling_throw_dir=direc)


def test_default_supply_path_is_bit_identical():
    """Units without an outlet height (None, or NaN rows) keep the floor supply: the assembled
    operators are identical bit for bit (the shipped scenarios' KPIs cannot move)."""
    from twin.thermal.solver import build_problem
    g, g_nan = _jet_hall(True)
    a, b = build_problem(g, 0.5), build_problem(g_nan, 0.5)
    for k in "AEBWM":
        assert (getattr(a, k) != getattr(b, k)).nnz == 0, k
    np.testing.assert_array_equal(a.room_source_m3_s, b.room_source_m3_s)


def test_wall_jet_conserves_air_and_heat():
    """With wall jets the room's sources sum to zero (all supply air returns to the units) and,
    in steady state, the units remove exactly the racks' heat (1e-6 relative)."""
    from twin.thermal.solver import build_problem, steady_field
    _, g = _jet_hall(False)
    p = build_problem(g, 0.5)
    assert abs(p.room_source_m3_s.sum()) < 1e-9
    assert np.all(p.floor_flow_m3_s == 0)  # no air through the floor
    heat = np.full(g.n_racks, 5e3)
    ds = steady_field(g, heat, 0.5)
    assert float(ds["cooling_heat_removed"].sum()) == pytest.approx(heat.sum(), rel=1e-6)


@pytest.fixture(scope="module")
def pod2_jet():
    return {ra: pod2_comparison(ra, supply="wall_jet") for ra in ("fan_law", "strip_balance", "fan_curve")}


def test_pod2_wall_jet_error_is_the_measured_one(pod2_jet):
    """Wall-jet supply (the coolers' measured outlets, ASHRAE jet laws; nothing fitted) on
    October 2019: strips MAE 2.82 K with fan-law rack airflow (0.4 / 1.2 / 2.0 m: 2.48 / 4.06 /
    1.91 K, bias +2.52 K; servers 3.46 K) and 1.74 K with strip-balance airflow (1.21 / 2.64 /
    1.37 K, bias +1.27 K; servers 2.25 K), against 4.42 / 3.53 K with the floor supply.
    Day 1 / day 2 (strip balance): 1.62 / 1.86 K. Measured (+-0.1 K)."""
    fan, sb = pod2_jet["fan_law"], pod2_jet["strip_balance"]
    assert fan.strip_mae_k() == pytest.approx(2.82, abs=0.1)
    np.testing.assert_allclose([fan.strip_mae_k(h) for h in range(3)], [2.48, 4.06, 1.91], atol=0.1)
    assert fan.strip_error_k.mean() == pytest.approx(2.52, abs=0.1)
    assert fan.server_mae_k() == pytest.approx(3.46, abs=0.1)
    assert sb.strip_mae_k() == pytest.approx(1.74, abs=0.1)
    np.testing.assert_allclose([sb.strip_mae_k(h) for h in range(3)], [1.21, 2.64, 1.37], atol=0.1)
    assert sb.server_mae_k() == pytest.approx(2.25, abs=0.1)
    day2 = [i for i, n in enumerate(sb.names) if n.startswith("step")]
    assert np.abs(sb.strip_error_k[day2]).mean() == pytest.approx(1.86, abs=0.1)
    assert sb.strip_mae_k() < 2.0 < fan.strip_mae_k()


def test_pod2_fan_curve_fitted_on_day_one_holds_on_day_two():
    """Rack airflow from the server fans' speed (issue 12, point a): free delivery by the
    affinity law (2 x 109.7 CFM x N / 11,000 rpm per server) times one phi, the share of it
    the fans move through the server (speed-independent against a quadratic resistance).
    Fitted on day 1's five configurations: phi = 0.6245 (measured, +-0.005). Validated on
    day 2: the loaded steps' (62-104 kW) instrumented racks carry phi x free delivery within
    6 % of their strip balance in total (measured +1.9 to +5.0 %), the idle step within 15 %
    (-13.9 %: a 4-5 K strip rise); phi fitted on day 2 instead lies within 5 % of day 1's."""
    from twin.studies.room_benchmark import pod2_rack_airflow_check, pod2_system_flow_fraction
    phi = pod2_system_flow_fraction()
    assert phi == pytest.approx(0.6245, abs=0.005)
    day2 = {n: (v, f) for n, v, f in pod2_rack_airflow_check() if n.startswith("step")}
    for n, (v, f) in day2.items():
        assert phi * f.sum() == pytest.approx(v.sum(), rel=0.15 if n == "step_27kw" else 0.06), n
    assert pod2_system_flow_fraction(list(day2)) == pytest.approx(phi, rel=0.05)


def test_pod2_wall_jet_with_fan_curve_airflow(pod2_jet):
    """The twin's own fan-driven rack airflow (fan_curve, phi fitted on day 1) with the wall
    jets: strips MAE 1.83 K (bias +1.33 K; 0.4 / 1.2 / 2.0 m: 1.35 / 2.71 / 1.44 K), day 1
    (fit) 1.72 K, day 2 (validation) 1.94 K, servers 2.33 K: within the 2 K goal, where the
    fan law with the datasheet's near-free delivery gave 2.82 K. Measured (+-0.1 K)."""
    fc = pod2_jet["fan_curve"]
    assert fc.strip_mae_k() == pytest.approx(1.83, abs=0.1)
    assert fc.strip_error_k.mean() == pytest.approx(1.33, abs=0.1)
    np.testing.assert_allclose([fc.strip_mae_k(h) for h in range(3)], [1.35, 2.71, 1.44], atol=0.1)
    assert fc.server_mae_k() == pytest.approx(2.33, abs=0.1)
    day2 = [i for i, n in enumerate(fc.names) if n.startswith("step")]
    assert np.abs(fc.strip_error_k[day2]).mean() == pytest.approx(1.94, abs=0.1)
    assert np.abs(fc.strip_error_k[day2]).mean() < 2.0 < pod2_jet["fan_law"].strip_mae_k()


def test_pod2_why_the_twin_rise_grows_with_load(pod2_jet):
    """Issue 12, point d. The inlet rise above supply is the two-zone balance
    Q / (rho cp) (1 / V_cool - 1 / V_rack) plus what mixing adds on top. With the fan law
    (rack air 1.32 x fan_curve's) the coolers carry only 0.72 of the rack air at load, and the
    two-zone part alone is 5.7 K at 104 kW (0.9 K with fan_curve airflow). With fan_curve
    airflow the two-zone part falls with load (2.4 -> 0.9 K, by hand from the measured flows)
    while the mixing excess grows: in the twin 1.2 -> 5.8 K, 0.22 -> 0.30 of the rack's air
    rise (its eddy diffusivity is a constant, so mixed-in heat grows with the rise), in the
    pod 1.7 -> 3.2 K, 0.31 -> 0.16 of it. Measured (+-0.15 K)."""
    from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K as rho_cp
    fc = pod2_jet["fan_curve"]
    cases = {c.name: c for c in pod2_cases("fan_curve")}
    fan = {c.name: c for c in pod2_cases("fan_law")}
    got = {}
    for n in ("step_27kw", "step_104kw"):
        c, i = cases[n], fc.names.index(n)
        ts = np.average(c.unit_discharge_c, weights=c.unit_airflow_m3_s)
        q, vc = c.rack_heat_w.sum(), c.unit_airflow_m3_s.sum()
        two_zone = q / rho_cp * (1 / vc - 1 / c.rack_airflow_m3_s.sum())
        got[n] = (two_zone, fc.twin_strip_c[i].mean() - ts - two_zone, fc.strip_front_c[i].mean() - ts - two_zone,
                  q / rho_cp * (1 / vc - 1 / fan[n].rack_airflow_m3_s.sum()))
    np.testing.assert_allclose(got["step_27kw"][:3], [2.59, 1.13, 1.48], atol=0.15)
    np.testing.assert_allclose(got["step_104kw"], [0.89, 5.83, 3.20, 5.68], atol=0.15)
    assert got["step_104kw"][1] - got["step_27kw"][1] > 2 * (got["step_104kw"][2] - got["step_27kw"][2])


def test_pod2_fan_law_air_breaks_the_pods_own_energy_balance():
    """All the coolers' air enters racks at best, so the racks' mean inlet cannot lie below
    supply + Q / (rho cp) (1 / V_cool - 1 / V_rack) (two-zone balance: the rest of the rack
    air is exhaust). With the fan law's rack air the servers' measured mean inlet lies below
    that bound in all ten configurations (by 0.25-2.41 K, measured): that much rack air is
    impossible. With fan_curve air (phi fitted on day 1) the bound holds in all ten."""
    from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K as rho_cp
    for ra, holds in (("fan_law", False), ("fan_curve", True)):
        for c in pod2_cases(ra):
            ts = np.average(c.unit_discharge_c, weights=c.unit_airflow_m3_s)
            bound = c.rack_heat_w.sum() / rho_cp * (1 / c.unit_airflow_m3_s.sum() - 1 / c.rack_airflow_m3_s.sum())
            measured = c.server_inlet_c.mean() - ts
            assert (measured > bound) == holds, (ra, c.name, measured, bound)


def test_pod2_2018_held_out():
    """Held out, January 2018 (ten racks, 34-57 kW, every rack's strips, measured cooler mass
    flow; cooler / rack air 1.0-1.6): wall jet MAE 1.46 K (0.4 / 1.1 / 2.1 m: 0.79 / 0.65 /
    2.95 K, bias -1.17 K: the jet's spread brings supply air to the top sensors, which read
    warm), floor supply 1.11 K (bias -0.37 K). Both within the 2 K goal; in this over-supplied
    room the supply model matters less than in October 2019. Measured (+-0.1 K)."""
    from twin.studies.room_benchmark import pod2_2018_cases, pod2_2018_comparison
    cases = pod2_2018_cases()
    assert len(cases) == 6
    for c in cases:  # the data's own heat balance: coolers' heat within 12 % of IT power
        assert c.cooler_heat_w == pytest.approx(c.it_power_w, rel=0.12), c.name
    jet, floor = pod2_2018_comparison(supply="wall_jet"), pod2_2018_comparison(supply="floor")
    assert jet.strip_mae_k() == pytest.approx(1.46, abs=0.1)
    np.testing.assert_allclose([jet.strip_mae_k(h) for h in range(3)], [0.79, 0.65, 2.95], atol=0.1)
    assert jet.strip_error_k.mean() == pytest.approx(-1.17, abs=0.1)
    assert floor.strip_mae_k() == pytest.approx(1.11, abs=0.1)
    assert max(jet.strip_mae_k(), floor.strip_mae_k()) < 2.0


@pytest.mark.slow
def test_pod2_wall_jet_grid_convergence(pod2_jet):
    """Refined grid (0.155 m cells instead of 0.31 m, same layers) with the wall jet: the
    strip temperatures move by 0.5 K on average (within the 1 K goal; 1.6 K at the worst
    single sensor) and the MAE by 0.28 K (2.82 -> 2.54 K). Measured (+-0.1 K)."""
    fine = pod2_comparison("fan_law", supply="wall_jet", cell_m=0.155)
    d = fine.twin_strip_c - pod2_jet["fan_law"].twin_strip_c
    assert np.abs(d).mean() < 1.0
    assert abs(fine.strip_mae_k() - pod2_jet["fan_law"].strip_mae_k()) < 0.5


def test_scenario_outlet_field_reaches_the_geometry():
    """`site.halls[].cooling_units[].outlet` (schema) becomes the hall geometry's wall-jet arrays
    (NaN rows for units without one); absent everywhere, the geometry has none (the shipped
    scenarios). An outlet above the hall's height or upside down is an exit-2 problem naming it."""
    import copy
    from pathlib import Path

    import yaml

    from twin.errors import ScenarioError
    from twin.plant import hall_geometries
    from twin.scenario import validate_data
    base = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "lenovo_small.yaml").read_text())
    assert hall_geometries(validate_data(base, "x.yaml"))[0][0].cooling_outlet_z_m is None
    data = copy.deepcopy(base)
    data["site"]["halls"][0]["cooling_units"][0]["outlet"] = {"z_from_m": 0.1, "z_to_m": 1.9, "width_m": 1.0,
                                                              "throw": "-y"}
    g = hall_geometries(validate_data(data, "x.yaml"))[0][0]
    np.testing.assert_array_equal(g.cooling_outlet_z_m[0], [0.1, 1.9])
    assert np.isnan(g.cooling_outlet_z_m[1:]).all()
    np.testing.assert_array_equal(g.cooling_throw_dir[0], [0.0, -1.0])
    for bad, word in (({"z_to_m": 9.0}, "height_m"), ({"z_from_m": 2.0}, "z_from_m")):
        d = copy.deepcopy(data)
        d["site"]["halls"][0]["cooling_units"][0]["outlet"].update(bad)
        with pytest.raises(ScenarioError) as exc:
            validate_data(d, "x.yaml")
        assert word in str(exc.value.problems)
