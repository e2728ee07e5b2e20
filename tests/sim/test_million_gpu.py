"""scenarios/scale/million_gpu.yaml (issue 19): it validates as shipped, its memory estimate
stays bounded, and one simulated day of it holds its physics (slow: ~1 min of CPU)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.scenario import bounds

ROOT = Path(__file__).resolve().parents[2]
MILLION = ROOT / "scenarios" / "scale" / "million_gpu.yaml"


def test_million_gpu_scenario_validates_and_is_bounded():
    s = twin.load_scenario(MILLION)
    gpus = sum(r.racks for h in s.site.halls for r in h.rows) * s.hardware.nodes_per_rack * 8
    assert gpus >= 1_000_000 and s.simulation.duration_days == 365 and s.simulation.sample_interval_s == 3600
    assert len(s.site.halls) > 1 and s.outputs.rack_series == "none"
    assert sum(bounds.memory_estimate_bytes(s).values()) < 4 * 2**30
    # the generator writes exactly this file (bench/gigawatt.py is its one source)
    import sys

    import yaml
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from gigawatt import million_gpu_scenario
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert yaml.safe_load(MILLION.read_text()) == yaml.safe_load(yaml.safe_dump(million_gpu_scenario()))


@pytest.mark.slow
def test_one_day_of_a_million_gpus():
    """One day: every GPU delivered and powered, the facility's energy balance, failures at the
    catalog rate (Poisson, 5 sigma), tokens from the step model of each running job."""
    from twin.reliability import load_failure_classes

    s = twin.load_scenario(MILLION, ["simulation.duration_days=1"])
    r = twin.simulate(s)
    ds, k = r.dataset, r.kpis
    nodes = sum(rw.racks for h in s.site.halls for rw in h.rows) * s.hardware.nodes_per_rack
    assert int(ds.gpus_installed.max()) == nodes * 8
    assert int(ds.gpus_powered.max()) == nodes * 8
    # energy: racks add up to the facility's IT energy; utility = IT + losses + cooling
    assert float(ds.rack_energy_mwh.sum()) == pytest.approx(k["energy_it_mwh"], rel=1e-6)
    total = ds.facility_it_power_w + ds.ups_loss_w + ds.distribution_loss_w + ds.cooling_power_w
    np.testing.assert_allclose(total.values, ds.facility_total_power_w.values, rtol=1e-9)
    assert 1.0 < k["pue_mean"] < 1.6
    # 131,072 XE9680 at ~10 kW each when training: 1-1.6 GW of IT
    assert 1.0e9 < float(ds.facility_it_power_w.max()) < 1.6e9
    # failures: the catalog rate x nodes x 24 h (plus burn-in, none here), within 5 sigma
    # (the Arrhenius factor of hot GPUs raises it: upper bound x3)
    expected = sum(c.rate_per_node_s for c in load_failure_classes()) * nodes * 86400.0
    assert expected - 5 * math.sqrt(expected) < k["failures"] < 3 * expected + 5 * math.sqrt(expected)
    # every job trains: positive tokens, none above its step model's rate x 1 day
    tok = ds.job_tokens.isel(time=-1).values
    rate = ds.job_tokens_per_s.max("time").values
    assert (tok > 0).all() and (tok <= rate * 86400.0 * (1 + 1e-9)).all()
