"""Parked fixed jobs (issue 19): a training fixed job whose next checkpoint and end lie
several samples ahead no longer wakes at every sample to re-read its step rate; the sampler
does that wake-up's arithmetic after each sample (:meth:`Jobs.wake_parked`) and wakes the
job, in the order its own timeouts had, when a checkpoint or its end comes near. The runs
must be bit for bit those of the per-sample wake-ups (``Jobs.park = False``, the
reference), and each comparison fails when the parked path is broken on purpose."""

import sys
from pathlib import Path

import numpy as np
import pytest

from twin.scenario import validate_data
from twin.sim import jobs as jobs_mod
from twin.sim.engine import Engine
from twin.sim.jobs import Jobs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gigawatt import site_scenario  # noqa: E402
from sim.test_bulk_samples import _differences  # noqa: E402  (series, KPIs and events that differ)


def _scenario():
    """128 nodes for 2.4 h at 1-s samples: seven fixed jobs of 16 nodes that checkpoint every
    20 minutes at instants that touch each other's writes (the storage bandwidth is shared by
    the writers present), failures at 40x the catalog's rate (interruptions of parked jobs,
    restarts between samples), and one job with a token target it reaches mid-run (its end
    is the float sum of its progress)."""
    s = site_scenario(128, 0.1, 1.0, job_nodes=16, name="job_parking")
    s["failures"]["rate_scale"] = 40.0
    for j, job in enumerate(s["workload"]["jobs"]):
        job["checkpoint_interval_s"] = 1200
        # jobs 0-2 start training between samples (behind the sampler) at the same instant,
        # so they park together and reach their first checkpoint together; jobs 3-6 start
        # on a sample instant, ahead of the sampler, and do the same there
        job["restart_s"] = 600.5 if j < 3 else 600.0
    s["workload"]["jobs"][1]["tokens_target"] = 4.0e7
    return validate_data(s)


def _run(scenario, park=True, bulk=True):
    e = Engine(scenario)
    e.jobs.park = park
    e.sampler.bulk = bulk
    return e.run(), e


@pytest.fixture(scope="module")
def runs():
    sc = _scenario()
    return sc, _run(sc, park=False, bulk=False), _run(sc, park=False), _run(sc)


def test_parked_jobs_equal_per_sample_wakeups(runs):
    _, (one, e_one), (ref, e_ref), (park, e_park) = runs
    kinds = park.events.kind
    assert (kinds == "job_interrupted").sum() >= 2 and (kinds == "checkpoint").sum() >= 10
    assert (kinds == "job_done").sum() == 1
    # the jobs woke at every sample before; parked, a few times per checkpoint interval
    n = e_ref.n_samples
    assert e_ref.env.event_counts["Jobs._lifecycle"][0] > 2 * n
    assert e_park.env.event_counts["Jobs._lifecycle"][0] < n / 4
    # ... so the sampler fills most samples in bulk
    assert e_ref.env.event_counts["Sampler._samples"][0] > 0.9 * n
    assert e_park.env.event_counts["Sampler._samples"][0] < n / 4
    assert e_park.jobs.park_misses == 0
    for other in (one, ref):
        assert _differences(other, park) == []
        assert other.dataset.identical(park.dataset)
    assert [j.tokens for j in e_ref.jobs] == [j.tokens for j in e_park.jobs]
    assert [j.end_s for j in e_ref.jobs][1] == [j.end_s for j in e_park.jobs][1]


def test_sample_by_sample_with_parked_jobs(runs):
    """Parked jobs without the bulk fill: the sampler's per-sample steps do the wake-ups."""
    sc, (one, _), _, _ = runs
    res, e = _run(sc, bulk=False)
    assert e.env.event_counts["Sampler._samples"][0] == e.n_samples
    assert _differences(one, res) == []


def test_a_wakeup_out_of_order_is_caught(runs, monkeypatch):
    """Parked jobs woken in the reverse of their order: jobs that reach a checkpoint at the
    same instant start their writes in the other order, and the results move."""
    sc, _, (ref, _), _ = runs
    real = Jobs.wake_parked

    def reversed_order(self, step_s, dry=False):
        self._parked.reverse()
        try:
            return real(self, step_s, dry)
        finally:
            self._parked.reverse()
    monkeypatch.setattr(Jobs, "wake_parked", reversed_order)
    broken, _ = _run(sc)
    assert _differences(ref, broken) != []


def test_a_wakeup_before_the_sample_is_caught(runs, monkeypatch):
    """A job parked while it is ahead of the sampler (its wake-up came before the sample and
    read the rate before the sample changed it) woken after the sample, as the jobs behind
    it are: caught."""
    sc, _, (ref, _), _ = runs
    real = Jobs._park
    monkeypatch.setattr(Jobs, "_park", lambda self, job, ahead=False: real(self, job, False))
    broken, _ = _run(sc)
    assert _differences(ref, broken) != []


def test_a_stretch_summed_another_way_is_caught(runs, monkeypatch):
    """The fill advances the jobs over a quiet stretch at once (``Jobs.fill_flush``) with the
    additions of sample by sample; the increments summed first and then added (x0 +
    cumsum(increments), equal in exact arithmetic) round differently: caught."""
    sc, _, (ref, _), _ = runs
    monkeypatch.setattr(jobs_mod, "_added", lambda x0, inc: x0 + np.cumsum(inc))
    broken, e = _run(sc)
    assert e.env.event_counts["Sampler._samples"][0] < e.n_samples / 4
    assert "job_tokens" in _differences(ref, broken)
