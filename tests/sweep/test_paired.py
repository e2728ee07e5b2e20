"""Common random numbers: seed index i runs every grid point with the same seed, so paired
differences between points carry less noise than the difference of two independent means."""

import numpy as np
import pytest
from scipy import stats

from twin.studies.stats import LEVEL, interval_note, paired_difference
from twin.sweep import Axis, SweepSpec, paired_differences, run_sweep

from .conftest import SCENARIOS


@pytest.fixture(scope="module")
def rate_sweep(tmp_path_factory):
    spec = SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"),
                     overrides=("simulation.duration_days=4", "simulation.sample_interval_s=3600"),
                     axes=(Axis.grid("failures.rate_scale", [40, 50]),), seeds=tuple(range(6)), series=())
    return run_sweep(spec, tmp_path_factory.mktemp("crn") / "sw", workers=2).dataset


def test_paired_interval_is_the_students_t_interval_of_the_per_seed_differences(rate_sweep):
    ds = rate_sweep
    pd_ = paired_differences(ds, "lost_gpu_hours", "failures.rate_scale")
    d = (ds.lost_gpu_hours.sel({"failures.rate_scale": 50}) - ds.lost_gpu_hours.sel({"failures.rate_scale": 40})).values
    got = pd_.sel({"failures.rate_scale": 50})
    assert int(got.n) == 6
    assert float(got["mean"]) == pytest.approx(d.mean(), rel=1e-12)
    # default level: the reports' one constant (90 %), not 95 %
    assert LEVEL == 0.90 and pd_.attrs["level"] == LEVEL and "90 %" in interval_note(6)
    half = stats.t.ppf(0.95, 5) * d.std(ddof=1) / np.sqrt(6)
    assert float(got.high - got["mean"]) == pytest.approx(half, rel=1e-9)
    # the same interval as the reports' own paired difference (twin.studies.stats)
    iv = paired_difference(ds.lost_gpu_hours.sel({"failures.rate_scale": 50}).values,
                           ds.lost_gpu_hours.sel({"failures.rate_scale": 40}).values)
    assert (float(got.low), float(got.high)) == pytest.approx((iv.low, iv.high), rel=1e-9)
    # se_paired is the standard error of the mean difference (s_d / sqrt(n)), not an SD
    assert float(got.se_paired) == pytest.approx(d.std(ddof=1) / np.sqrt(6), rel=1e-9)
    assert "sd_paired" not in pd_ and "sd_unpaired" not in pd_
    wide = paired_differences(ds, "lost_gpu_hours", "failures.rate_scale", confidence=0.95)
    assert float(wide.sel({"failures.rate_scale": 50}).high - got["mean"]) == pytest.approx(
        stats.t.ppf(0.975, 5) * d.std(ddof=1) / np.sqrt(6), rel=1e-9)
    assert float(pd_.sel({"failures.rate_scale": 40})["mean"]) == 0.0
    assert "paired-t" in pd_.attrs["method"] and pd_.attrs["reference"] == "40"


def test_common_random_numbers_shrink_the_noise_of_a_difference(rate_sweep):
    """The same seed index sees the same streams at both failure rates: the per-seed energy
    and token results move together, so the paired standard error is below the unpaired one."""
    ds = rate_sweep
    assert "common_random_numbers" in ds.attrs
    for kpi in ("energy_facility_mwh", "tokens_total"):
        pd_ = paired_differences(ds, kpi, "failures.rate_scale").sel({"failures.rate_scale": 50})
        assert float(pd_.se_paired) < float(pd_.se_unpaired), kpi
