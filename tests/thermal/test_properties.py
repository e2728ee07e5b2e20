"""Point physics: sensible heat, ASHRAE classes, GPU throttling law, Arrhenius."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.thermal import (
    AIR_CP_J_KG_K,
    AIR_DENSITY_KG_M3,
    ASHRAE_CLASS_NAMES,
    arrhenius_acceleration,
    ashrae_class,
    ashrae_h1_class,
    gpu_clock_fraction,
    gpu_temp_c,
    rack_airflow_m3_s,
)
from twin.thermal import properties as props

# the repository's copy of ../shared/reference/calibration.yaml
CALIBRATION = Path(__file__).resolve().parents[2] / "assets" / "reference" / "calibration.yaml"


def test_dgx_h100_at_15k_needs_0564_m3_s():
    # DGX H100 maximum 10.2 kW (NVIDIA SuperPOD design guide, calibration.yaml),
    # V = Q / (rho cp dT) = 10200 / (1.2 * 1005 * 15) = 0.5638 m3/s.
    assert rack_airflow_m3_s(10200.0, 15.0) == pytest.approx(0.564, abs=5e-4)
    # The CFM rule of thumb in calibration.yaml: CFM ~= 3.16 W / dT_F (dT_F = 27 F).
    cfm = 3.16 * 10200 / 27.0
    assert rack_airflow_m3_s(10200.0, 15.0) == pytest.approx(cfm * 0.000471947, rel=0.01)


def test_airflow_rejects_non_positive_rise():
    with pytest.raises(ValueError):
        rack_airflow_m3_s(1000.0, 0.0)


@pytest.mark.parametrize(
    "temp_c, name",
    [
        (18.0, "recommended"), (27.0, "recommended"), (22.5, "recommended"),
        (27.01, "A1"), (17.99, "A1"), (15.0, "A1"), (32.0, "A1"),
        (32.01, "A2"), (14.99, "A2"), (10.0, "A2"), (35.0, "A2"),
        (35.01, "A3"), (9.99, "A3"), (5.0, "A3"), (40.0, "A3"),
        (40.01, "A4"), (45.0, "A4"),
        (45.01, "beyond_A4"), (4.99, "beyond_A4"), (60.0, "beyond_A4"),
    ],
)
def test_ashrae_class_boundaries(temp_c, name):
    # ASHRAE TC 9.9 (2021): recommended 18-27 C; allowable A1 15-32, A2 10-35,
    # A3 5-40, A4 5-45 C; bounds inclusive.
    assert ASHRAE_CLASS_NAMES[int(ashrae_class(temp_c))] == name


def test_ashrae_h1_boundaries():
    codes = ashrae_h1_class([18.0, 22.0, 22.01, 25.0, 25.01, 4.99, 5.0])
    assert codes.tolist() == [0, 0, 1, 1, 2, 2, 1]


def test_constants_match_calibration_file():
    import yaml

    th = yaml.safe_load(CALIBRATION.read_text())["thermal"]
    assert th["air_density_kg_m3"] == AIR_DENSITY_KG_M3
    assert th["air_cp_j_kg_k"] == AIR_CP_J_KG_K
    env = th["ashrae_tc99_2021_inlet_c"]
    assert tuple(env["recommended"]) == props.ASHRAE_RECOMMENDED_C
    for k, v in env["allowable"].items():
        assert tuple(v) == props.ASHRAE_ALLOWABLE_C[k]
    assert tuple(env["H1"]["recommended"]) == props.ASHRAE_H1_RECOMMENDED_C
    assert tuple(env["H1"]["allowable"]) == props.ASHRAE_H1_ALLOWABLE_C
    gpu = th["gpu_thermal_thresholds_c"]
    assert (gpu["software_slowdown"], gpu["hardware_slowdown"], gpu["shutdown"]) == (
        props.GPU_SLOWDOWN_C, props.GPU_HW_SLOWDOWN_C, props.GPU_SHUTDOWN_C)


def test_gpu_temperature_is_inlet_plus_resistance_times_power():
    assert gpu_temp_c(25.0, 700.0, 0.07) == pytest.approx(74.0)
    np.testing.assert_allclose(gpu_temp_c(np.array([20.0, 30.0]), 700.0, 0.07), [69.0, 79.0])


def test_clock_fraction_at_thresholds():
    f = gpu_clock_fraction(np.array([60.0, 86.99, 87.0, 88.0, 89.0, 91.99, 92.0, 100.0]), 87.0, 89.0, 92.0)
    np.testing.assert_allclose(f, [1.0, 1.0, 1.0, 0.75, 0.5, 0.5, 0.0, 0.0])


@given(st.floats(0, 120), st.floats(0, 120))
def test_clock_fraction_never_rises_with_temperature(t1, t2):
    lo, hi = sorted((t1, t2))
    assert gpu_clock_fraction(hi) <= gpu_clock_fraction(lo)
    assert 0.0 <= gpu_clock_fraction(lo) <= 1.0


def test_arrhenius_hand_values():
    assert arrhenius_acceleration(40.0, 40.0, 0.7) == pytest.approx(1.0)
    # exp(0.7 eV / 8.617e-5 eV/K * (1/333.15 - 1/343.15)) = exp(0.7106) = 2.035
    assert arrhenius_acceleration(70.0, 60.0, 0.7) == pytest.approx(2.035, rel=1e-3)
    # cooler than the reference slows ageing, reciprocally
    assert arrhenius_acceleration(60.0, 70.0, 0.7) == pytest.approx(1 / 2.035, rel=1e-3)


@given(st.floats(0, 100), st.floats(0, 20), st.floats(0.3, 1.2))
def test_arrhenius_monotone_and_multiplicative(t, dt, ea):
    a = arrhenius_acceleration(t + dt, t, ea)
    assert a >= 1.0
    # AF(T3, T1) = AF(T3, T2) * AF(T2, T1)
    assert arrhenius_acceleration(t + 2 * dt, t, ea) == pytest.approx(
        arrhenius_acceleration(t + 2 * dt, t + dt, ea) * a, rel=1e-9)


def test_ashrae_class_hours_count_samples():
    from twin.thermal import ashrae_class_hours

    series = np.array([[20.0, 30.0], [28.0, 46.0], [26.0, 33.0], [27.0, 33.0]])  # 4 samples x 2 racks
    hours = ashrae_class_hours(series, 900.0)  # 15-minute samples
    np.testing.assert_allclose(hours[0], [0.75, 0.25, 0, 0, 0, 0])
    np.testing.assert_allclose(hours[1], [0, 0.25, 0.5, 0, 0, 0.25])
    assert hours.sum() == pytest.approx(2.0)


def test_hot_inlet_throttles_the_gpu_clock():
    # 700 W H100 SXM with 0.08 K/W inlet-to-die: 56 K rise (an assumption of this test)
    clock_cool = gpu_clock_fraction(gpu_temp_c(25.0, 700.0, 0.08))
    clock_hot = gpu_clock_fraction(gpu_temp_c(32.5, 700.0, 0.08))
    assert clock_cool == 1.0
    assert 0.5 < clock_hot < 1.0  # 88.5 C: software slowdown
    # a compute-bound step scales with 1 / clock: the hot node's step is slower
    assert 1.0 / clock_hot > 1.0 / clock_cool


def test_rack_cooling_index_hand_values():
    from twin.thermal import rack_cooling_index_hi, rack_cooling_index_lo

    # Herrlin (2005): 4 racks, one at 29 C and one at 32 C with 27 / 32 C limits:
    # over-temperature 2 + 5 = 7 K of a possible 4 * 5 = 20 K -> RCI_HI = 65 %
    assert rack_cooling_index_hi([20.0, 25.0, 29.0, 32.0]) == pytest.approx(65.0)
    assert rack_cooling_index_hi([18.0, 27.0]) == pytest.approx(100.0)
    # 16.5 C is 1.5 K under 18 C of a possible 2 * 3 K -> 75 %
    assert rack_cooling_index_lo([16.5, 20.0]) == pytest.approx(75.0)


def test_heat_indices_on_a_solved_hall():
    from twin.thermal import (
        inlet_model,
        return_temperature_index,
        row_hall,
        steady_field,
        supply_heat_index,
    )

    g = row_hall(4, 10, cooling_per_wall=1, cooling_airflow_m3_s=10.0)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    ds = steady_field(g, heat, v)
    shi = supply_heat_index(ds.rack_inlet_temp, ds.rack_exhaust_temp, 18.0)
    assert 0.0 < shi < 0.5
    # energy balance makes RTI the ratio of rack to unit airflow: 22.6 / 20 m3/s
    model = inlet_model(g, v)
    rti = return_temperature_index(model.return_temp_c(heat), g.cooling_supply_temp_c, g.cooling_airflow_m3_s,
                                   ds.rack_inlet_temp, ds.rack_exhaust_temp, v)
    assert rti == pytest.approx(100.0 * v.sum() / 20.0, rel=1e-9)
