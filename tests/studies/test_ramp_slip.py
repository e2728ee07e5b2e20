"""The ramp-slip study (scenarios/studies/ramp_slip.yaml): a 30-day slip of each power stage
of Blue Vela's nine-month ramp, on its job stream, paired by seed index.

- the pairing is sound: with the same seed, a late stage leaves the job stream (submit
  times, sizes, classes) exactly as it was, so the per-seed difference is what the late
  power did (common random numbers);
- the study's table reports the Student-t interval of the mean seed-paired loss;
- every stage's slip costs tokens and busy GPU-hours, each interval above zero with the
  study file's seeds (slow: 4 cases x 16 seeds of the nine-month run)."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from twin.studies.tables import slip_reading, slip_table

STUDY = Path(__file__).resolve().parents[2] / "scenarios" / "studies" / "ramp_slip.yaml"


def _sweep(tokens, busy=None, labels=("none", "stage_1", "stage_2")):
    v = np.asarray(tokens, float)
    data = {"tokens_total": (("slip", "seed"), v), "gpu_hours_healthy": (("slip", "seed"), v / 10.0),
            "status": (("slip", "seed"), np.full(v.shape, "ok"))}
    if busy is not None:
        data["gpu_hours_busy"] = (("slip", "seed"), np.asarray(busy, float))
    return xr.Dataset(data, coords={"slip": list(labels), "seed": np.arange(v.shape[1])})


def test_slip_table_gives_the_paired_t_interval_of_the_loss():
    """The interval is the Student-t interval of the mean of the per-seed losses, computed
    here independently with scipy; the 5-95 % band is the spread of those losses."""
    plan = np.array([100.0, 120.0, 90.0, 110.0, 105.0])
    late = plan - np.array([3.0, 5.0, 1.0, 4.0, 2.0])          # seed-paired losses 3, 5, 1, 4, 2
    noisy = plan - np.array([4.0, -3.0, 2.0, -1.0, 0.5])
    t = slip_table(_sweep([plan, late, noisy], busy=[plan * 2, late * 2, noisy * 2]))
    d = np.array([3.0, 5.0, 1.0, 4.0, 2.0])
    lo, hi = stats.t.interval(0.90, 4, loc=d.mean(), scale=d.std(ddof=1) / np.sqrt(5))
    row = t[t.slip == "stage_1"].iloc[0]
    assert row.tokens_lost_mean == pytest.approx(3.0)
    assert (row.tokens_lost_low, row.tokens_lost_high) == (pytest.approx(lo), pytest.approx(hi))
    assert row.tokens_lost_fraction_low == pytest.approx(lo / plan.mean())
    assert (row.busy_gpu_hours_lost_low, row.busy_gpu_hours_lost_high) == (pytest.approx(2 * lo),
                                                                          pytest.approx(2 * hi))
    assert row.tokens_lost_p05 == pytest.approx(np.quantile(d, 0.05))
    assert row.n_seeds == 5 and t.attrs["level"] == 0.90
    # the paired interval is narrower than the spread of the plan itself (what pairing buys)
    assert row.tokens_lost_high - row.tokens_lost_low < plan.std(ddof=1)
    text = slip_reading(t)
    assert "90 % t-interval, n = 5" in text
    assert "slip of stage_2 is not separated from zero with n = 5 seeds" in text
    assert "stage_1 is not" not in text


def test_reading_says_when_every_stage_is_resolved():
    plan = np.array([100.0, 120.0, 90.0])
    t = slip_table(_sweep([plan, plan - [3.0, 4.0, 3.5], plan - [1.0, 1.5, 1.2]]))
    text = slip_reading(t)
    assert "Every slip costs tokens: each interval lies above zero with n = 3 seeds." in text
    assert "The cheapest is stage_2" in text


def test_two_seeds_give_means_and_no_interval():
    """n = 2: a t-interval would be 6.3 times the spread of the two losses (audit polish 13d);
    the reading gives the means, says why there is no interval and claims no loss measured."""
    plan = np.array([100.0, 120.0])
    t = slip_table(_sweep([plan, plan - [3.0, 4.0], plan - [1.0, 1.5]]))
    text = slip_reading(t)
    assert "(mean over seeds of the seed-paired loss, n = 2, too few seeds for an interval)" in text
    per_stage = text.split("Per stage")[1].split(". ")[0]
    assert "[" not in per_stage and "stage_1 3.5 tokens (3.18 %)" in per_stage
    assert "not separated from zero with n = 2 seeds (too few seeds for an interval)" in text
    assert "Every slip costs tokens" not in text


@pytest.mark.slow
def test_a_late_stage_leaves_the_job_stream_unchanged(scenarios_dir):
    """Common random numbers: seed k draws the same jobs whether a stage is on time or late
    (arrivals follow the delivered GPUs, which a slip does not change), so pairing by seed
    compares the same work under two power plans. 100 days, stage 1 (15 March) on time or 30
    days late."""
    import twin
    fast = ["simulation.sample_interval_s=21600", "simulation.duration_days=100", "simulation.seed=3"]
    on = twin.simulate(twin.load_scenario(scenarios_dir / "blue_vela.yaml", fast)).dataset
    late = twin.simulate(twin.load_scenario(scenarios_dir / "blue_vela.yaml",
                                            fast + ["site.power.plan.1.date=2024-04-14"])).dataset
    assert on.sizes["job"] == late.sizes["job"] > 100
    for v in ("job_submit_s", "job_gpus_requested", "job_class"):
        np.testing.assert_array_equal(on[v].values, late[v].values, err_msg=v)
    # ...and the late power did change the runs: fewer healthy GPU-hours, later starts
    assert float(late.gpus_healthy.sum()) < float(on.gpus_healthy.sum())
    assert np.nansum(late.job_start_s.values) != np.nansum(on.job_start_s.values)


@pytest.mark.slow
def test_every_stage_slip_costs_tokens_with_its_interval_above_zero(tmp_path):
    """The study as shipped (its seeds and sample interval): for stages 1, 2 and 3 the 90 %
    t-interval of the seed-paired loss of tokens and of busy GPU-hours lies above zero. The
    job stream keeps work queued as the cluster grows, so every GPU a late stage leaves dark
    is work not done (with three fixed jobs, stages 2 and 3 cost no tokens:
    ramp_slip_fixed.yaml)."""
    from twin.sweep import SweepSpec, run_sweep
    spec = SweepSpec.from_file(STUDY)
    assert len(spec.seeds) >= 16
    ds = run_sweep(spec, tmp_path / "slip", workers=2).dataset
    assert (ds["status"].values == "ok").all()
    t = slip_table(ds, "slip", "none")
    for stage in ("stage_1", "stage_2", "stage_3"):
        r = t[t.slip == stage].iloc[0]
        assert r.n_seeds == len(spec.seeds)
        assert r.tokens_lost_low > 0, (stage, r.tokens_lost_low, r.tokens_lost_high)
        assert r.busy_gpu_hours_lost_low > 0, (stage, r.busy_gpu_hours_lost_low)
    assert "Every slip costs tokens" in slip_reading(t)
