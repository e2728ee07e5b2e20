"""Sub-second swing of synchronous training, GPU power floor and battery smoothing."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.phases import Phase
from twin.power.battery import battery_dispatch
from twin.power.chain import phase_node_power_w, swing_report
from twin.power.swing import (
    energy_kwh,
    gpu_floor_power_w,
    job_phase_trace,
    mean_per_interval,
    peak_meter_ramp_kw_per_s,
    sync_load_w,
)
from twin.scenario import load_scenario
from twin.scenario.power_chain import Battery

ROOT = Path(__file__).resolve().parents[2]


def test_phase_trace_has_the_step_timing():
    ph = job_phase_trace(100.0, 4.0, 1.0, dt_s=0.01)
    assert ph.shape == (10_000,)
    # 25 % of every step is exposed communication
    assert np.mean(ph == Phase.COMMUNICATION) == pytest.approx(0.25, abs=1e-3)
    ph = job_phase_trace(100.0, 4.0, 1.0, checkpoint_at_s=30.0, checkpoint_s=5.0,
                         restart_at_s=60.0, restart_s=20.0, dt_s=0.01)
    assert np.sum(ph == Phase.CHECKPOINT) * 0.01 == pytest.approx(5.0)
    assert np.sum(ph == Phase.RESTART) * 0.01 == pytest.approx(20.0)
    # the step clock restarts after the restart: training resumes for 3 s, then exposed
    t = (np.arange(ph.size) + 0.5) * 0.01
    after = ph[(t > 80.0) & (t < 84.0)]
    assert np.all(after[:290] == Phase.TRAINING) and after[-50] == Phase.COMMUNICATION
    with pytest.raises(ValueError):
        job_phase_trace(10.0, 1.0, 1.0)


def test_a_synchronous_step_is_seen_whole_by_the_meter():
    # 100 nodes stepping from 8 kW to 5 kW for 3 s: the 1-s meter steps by 300 kW
    ph = np.full(1000, int(Phase.TRAINING), dtype=np.int8)
    ph[500:800] = Phase.CHECKPOINT
    power = np.zeros(7)
    power[Phase.TRAINING], power[Phase.CHECKPOINT] = 8e3, 5e3
    meter = mean_per_interval(sync_load_w(ph, power, 100), 0.01)
    assert peak_meter_ramp_kw_per_s(meter) == pytest.approx(300.0)
    # spread over 2 s of skew, the same step reaches the meter as two 150 kW ramps
    skewed = mean_per_interval(sync_load_w(ph, power, 100, skew_s=2.0), 0.01)
    assert peak_meter_ramp_kw_per_s(skewed) == pytest.approx(150.0, rel=0.02)
    # skew moves energy in time but does not create or destroy it (edges held)
    assert energy_kwh(sync_load_w(ph, power, 100, skew_s=2.0), 0.01) == pytest.approx(
        energy_kwh(sync_load_w(ph, power, 100), 0.01), rel=1e-12)


def test_gpu_floor_raises_low_phases_only_and_by_the_gpu_shortfall():
    node = np.array([0.0, 1.5e3, 8e3, 5e3, 2.5e3, 2.7e3, 8.5e3])
    gpu = np.array([0.0, 70.0, 668.0, 322.0, 133.0, 164.5, 700.0])
    out = gpu_floor_power_w(node, gpu, gpu_count=8, gpu_tdp_w=700.0, floor_fraction=0.5, dc_to_ac=1.05)
    expect = node.copy()
    for ph in (Phase.COMMUNICATION, Phase.CHECKPOINT, Phase.RESTART):
        expect[ph] += 8 * (350.0 - gpu[ph]) * 1.05
    np.testing.assert_allclose(out, expect)
    assert out[Phase.IDLE] == node[Phase.IDLE] and out[Phase.TRAINING] == node[Phase.TRAINING]


@pytest.fixture(scope="module")
def blue_vela():
    return load_scenario(ROOT / "scenarios" / "blue_vela.yaml")


BV_JOB = dict(nodes=128, step_s=3.29, exposed_s=1.04, checkpoint_s=1.53, restart_s=600.0)


def test_blue_vela_swing_is_the_train_to_checkpoint_step(blue_vela):
    rep = swing_report(blue_vela, **BV_JOB)
    pw = phase_node_power_w(blue_vela)
    step_kw = 128 * (pw["node_w"][Phase.TRAINING] - pw["node_w"][Phase.CHECKPOINT]) / 1e3
    assert rep["train_minus_checkpoint_kw"] == pytest.approx(step_kw)
    # the issue measured about 609 kW for this job; the 1.5 s checkpoint straddles a second,
    # so the meter sees between half of the step and all of it within one second
    assert 0.5 * step_kw <= rep["peak_meter_ramp_kw_per_s"] <= step_kw + 1e-9
    assert 550 < rep["peak_meter_ramp_kw_per_s"] < 700


def test_a_1_mw_battery_at_least_halves_blue_velas_meter_ramp(blue_vela):
    assert blue_vela.site.power.chain.battery.power_kw == 0          # none at Blue Vela itself
    rep0 = swing_report(blue_vela, **BV_JOB)
    assert "battery" not in rep0
    rep = swing_report(blue_vela, **BV_JOB, battery=Battery(power_kw=1000, energy_kwh=250))
    bat = rep["battery"]
    assert bat["power_kw"] == 1000
    assert bat["peak_meter_ramp_kw_per_s"] <= 0.5 * rep["peak_meter_ramp_kw_per_s"]
    # at an energy cost that is reported and positive
    assert bat["loss_kwh"] > 0


def test_gpu_floor_lowers_the_ramp_at_an_energy_cost(blue_vela):
    rep = swing_report(blue_vela, **BV_JOB, floor_fraction=0.6)
    g = rep["gpu_floor"]
    assert g["peak_meter_ramp_kw_per_s"] < rep["peak_meter_ramp_kw_per_s"]
    assert g["extra_energy_kwh"] > 0


def test_battery_energy_balance_and_soc_bounds():
    rng = np.random.default_rng(3)
    load = 2e6 + 6e5 * (rng.random(3600) > 0.3)
    d = battery_dispatch(load, 1.0, power_w=1e6, energy_j=250 * 3.6e6, round_trip_efficiency=0.9,
                         ramp_limit_w_per_s=5e4)
    # grid energy = load energy + conversion losses + change of stored energy, exactly
    lhs = d["grid_w"].sum()
    rhs = load.sum() + d["loss_j"] + (d["energy_end_j"] - d["energy_start_j"])
    assert lhs == pytest.approx(rhs, rel=1e-12)
    assert d["loss_j"] > 0
    assert d["soc"].min() >= 0.1 - 1e-12 and d["soc"].max() <= 0.9 + 1e-12
    assert np.all(np.abs(d["battery_w"]) <= 1e6 + 1e-6)
    # the meter ramp is held at the limit while the battery has power and energy
    assert peak_meter_ramp_kw_per_s(d["grid_w"]) <= 50.0 + 1e-6


def test_lossless_battery_conserves_energy_and_empty_battery_passes_through():
    load = np.array([1e6, 2e6, 1e6, 2e6, 1e6] * 20)
    d = battery_dispatch(load, 1.0, power_w=5e5, energy_j=3.6e8, round_trip_efficiency=1.0)
    assert d["loss_j"] == 0.0
    assert d["grid_w"].sum() == pytest.approx(load.sum() + d["energy_end_j"] - d["energy_start_j"])
    d0 = battery_dispatch(load, 1.0, power_w=0.0, energy_j=0.0)
    np.testing.assert_array_equal(d0["grid_w"], load)


def test_a_small_battery_runs_out_and_the_meter_takes_the_rest():
    load = np.r_[np.full(10, 1e6), np.full(600, 2e6)]
    d = battery_dispatch(load, 1.0, power_w=1e6, energy_j=3.6e6, initial_soc=0.9, soc_min=0.1,
                         soc_max=0.9, ramp_limit_w_per_s=1e3)
    assert d["soc"].min() == pytest.approx(0.1, abs=1e-9)
    assert d["grid_w"][-1] == pytest.approx(2e6, rel=1e-3)


def test_peak_shaving_holds_the_ceiling_while_energy_lasts():
    load = np.r_[np.full(100, 1e6), np.full(50, 1.5e6), np.full(100, 1e6)]
    d = battery_dispatch(load, 1.0, power_w=6e5, energy_j=3.6e8, policy="peak_shaving", shave_w=1.2e6)
    assert d["grid_w"].max() <= 1.2e6 + 1e-6


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 5e6), min_size=2, max_size=300), st.floats(0.5, 1.0),
       st.sampled_from(["smoothing", "peak_shaving"]))
def test_property_soc_bounded_and_energy_balanced(load, eta, policy):
    load = np.array(load)
    d = battery_dispatch(load, 1.0, power_w=1e6, energy_j=3.6e7, round_trip_efficiency=eta, policy=policy)
    assert d["soc"].min() >= 0.1 - 1e-9 and d["soc"].max() <= 0.9 + 1e-9
    lhs = d["grid_w"].sum()
    rhs = load.sum() + d["loss_j"] + d["energy_end_j"] - d["energy_start_j"]
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-3)
