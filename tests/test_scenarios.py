"""A numeric check on every shipped scenario (full horizon where it is cheap)."""

from pathlib import Path

import numpy as np
import pytest

import twin

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def blue_vela():
    return twin.simulate(twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml"))


@pytest.mark.slow
def test_blue_vela_full_capacity_tokens_per_day_in_ibm_band(blue_vela):
    # IBM (arXiv 2407.05467, seed 000): 90-321 B tokens/day depending on model and setup
    tpd = blue_vela.kpis["tokens_per_day_full_capacity"]
    assert 90e9 <= tpd <= 321e9, tpd


@pytest.mark.slow
def test_blue_vela_ramp_follows_the_power_plan(blue_vela):
    ds = blue_vela.dataset
    powered = ds.gpus_powered.values
    # the four waves deliver 2,048 GPUs; the plan brings them all online by the last stage
    assert ds.gpus_installed.values.max() == 2048
    assert powered[ds.time.values >= np.datetime64("2024-09-02")].max() == 2048
    assert powered[ds.time.values < np.datetime64("2024-03-15")].max() < 2048
    # +70% plan: the IT draw at the end is well above the original 1,520 kW
    assert ds.facility_it_power_w.values.max() > 1520e3
    assert blue_vela.kpis["breaker_trips"] == 0
    assert 1.05 < blue_vela.kpis["pue_mean"] < 1.6
    # the UPS is in line (double conversion, as built until the chain's 2024-09-01 bypass;
    # the run keeps one mode, audit finding 4): its loss is counted, about 2-4 % of the IT energy
    assert 0.02 * blue_vela.kpis["energy_it_mwh"] < blue_vela.kpis["ups_loss_mwh"] < 0.05 * blue_vela.kpis["energy_it_mwh"]
    assert blue_vela.kpis["goodput_fraction"] > 0.85


def test_vela_runs_with_container_overhead_and_roce():
    res = twin.simulate(twin.load_scenario(ROOT / "scenarios" / "vela.yaml", ["simulation.duration_days=10"]))
    k = res.kpis
    assert k["tokens_total"] > 0
    assert k["ups_loss_mwh"] > 0                             # double-conversion UPS in line
    assert 1.1 < k["pue_mean"] < 1.8
    # 768 A100 on a 13B model: a few hundred billion tokens a day at most
    assert 1e9 < k["tokens_per_day_mean"] < 3e11


@pytest.mark.parametrize("size, gpus", [("small", 32), ("medium", 64), ("large", 128)])
def test_lenovo_tshirt_sizes(size, gpus):
    res = twin.simulate(twin.load_scenario(ROOT / "scenarios" / f"lenovo_{size}.yaml",
                                           ["simulation.duration_days=4", "failures.enabled=false"]))
    ds = res.dataset
    assert ds.gpus_installed.values.max() == gpus
    # 8x SR675 V3 per 4 nodes: node draw under its 7.2 kW PSU-limited maximum
    per_node_w = ds.rack_power_w.sum("rack").values.max() / (gpus / 8)
    assert 2000 < per_node_w < 7200 + 900
    assert res.kpis["tokens_per_day_mean"] > 0


def test_lenovo_throughput_scales_with_size():
    tpd = {}
    for size in ("small", "large"):
        res = twin.simulate(twin.load_scenario(ROOT / "scenarios" / f"lenovo_{size}.yaml",
                                               ["simulation.duration_days=3", "failures.enabled=false"]))
        tpd[size] = res.kpis["tokens_per_day_mean"]
    # 4x the GPUs: more than 3x and at most 4x the tokens (communication overhead)
    assert 3.0 * tpd["small"] < tpd["large"] <= 4.0 * tpd["small"] * 1.001
