"""Failures drawn by the sampler instead of a process that wakes at every sample (issue 19).

:meth:`Failures.draw` is called by the sampler at every sample instant, before the sample
until the first interval with a failure and after it from then on, the order the failure
process's per-sample timeouts had. The runs must be bit for bit those of the per-sample
process (kept below as the reference), and the sampler's quiet stretches, which every such
wake-up used to break, must now be filled on the 1-s bench case."""

import sys
from pathlib import Path

import pytest

from twin import reliability
from twin.scenario import validate_data
from twin.sim import engine as engine_mod
from twin.sim.engine import Engine
from twin.sim.failures import Failures
from twin.sim.sampler import Sampler

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gigawatt import site_scenario  # noqa: E402
from sim.test_bulk_samples import _differences  # noqa: E402  (series, KPIs and events that differ)


class ProcessFailures(Failures):
    """The failure process as it was before (a wake-up at every sample, drawing there)."""

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.enabled = False            # the sampler draws nothing

    def _failures(self):
        if not self.s.failures.enabled:
            return
        rng = self.e.rng["fail"]
        sampler = reliability.ClusterFailureSampler(self.classes, self.plant.n_nodes, rate_scale=0.0)
        last = None
        while True:
            nxt = self.e.sampler.next_sample_s
            boundary = nxt if nxt > self.env.now else self.env.now + self.e.dt_s
            accel, scale = self.state.node_accel, self.rate_scale()
            if last is None or last[0] is not scale or last[1] is not accel:
                last = (scale, accel)
                sampler.update(rate_scale=scale, thermal_acceleration=accel)
            left_s = boundary - self.env.now
            while (hit := sampler.next(rng, left_s)) is not None:
                dt_s, n, k = hit
                yield self.env.timeout(dt_s)
                left_s -= dt_s
                if self.state.node_up[n]:
                    self.fail(int(n), int(k))
            yield self.env.timeout(max(boundary - self.env.now, 0.0))


def _scenario(rate_scale: float):
    """128 nodes for 2.4 h at 1-s samples, with failures ``rate_scale`` times the catalog's
    (so that several intervals hold a failure) and four fixed jobs."""
    s = site_scenario(128, 0.1, 1.0, job_nodes=32, name="quiet_wakeups")
    s.setdefault("failures", {})["rate_scale"] = rate_scale
    return validate_data(s)


def _run(scenario, bulk=True):
    e = Engine(scenario)
    e.sampler.bulk = bulk
    return e.run(), e


@pytest.fixture(scope="module")
def runs():
    sc = _scenario(200.0)
    mp = pytest.MonkeyPatch()
    mp.setattr(engine_mod, "Failures", ProcessFailures)
    ref, e_ref = _run(sc, bulk=False)
    mp.undo()
    one, e_one = _run(sc, bulk=False)
    bulk, e_bulk = _run(sc)
    return ref, e_ref, one, e_one, bulk, e_bulk


def test_sampler_draws_equal_the_per_sample_process(runs):
    ref, e_ref, one, e_one, bulk, e_bulk = runs
    assert (ref.events.kind == "failure").sum() >= 3            # failures in several intervals
    assert e_ref.failures.repair_times_s or (ref.events.kind == "detected").any()
    # the reference process woke at every sample; the sampler-driven one at none
    assert e_ref.env.event_counts["ProcessFailures._failures"][0] > e_ref.n_samples
    assert e_one.env.event_counts["Failures._failures"][0] < e_one.n_samples / 100
    assert e_one.failures.after_sample
    assert _differences(ref, one) == []
    assert _differences(ref, bulk) == []
    assert ref.dataset.identical(bulk.dataset)


def test_quiet_stretches_are_filled_on_the_fine_case(runs):
    """With the failure wake-ups gone the fill runs (fewer sampler wake-ups than samples)
    and gives the one-by-one path's numbers."""
    _, _, one, e_one, bulk, e_bulk = runs
    assert e_one.env.event_counts["Sampler._samples"][0] == e_one.n_samples
    filled = e_bulk.n_samples - e_bulk.env.event_counts["Sampler._samples"][0]
    assert filled > 0
    assert _differences(one, bulk) == []
    assert [j.tokens for j in e_one.jobs] == [j.tokens for j in e_bulk.jobs]


def test_a_fill_that_forgets_the_draws_is_caught(runs, monkeypatch):
    """A fill that skips the failure draws of its samples shifts the ``fail`` stream: the
    comparisons above fail."""
    ref = runs[0]
    real = Sampler._fill

    def fill(self, i0, n, step):
        self.e.failures.enabled = False
        try:
            return real(self, i0, n, step)
        finally:
            self.e.failures.enabled = True
    monkeypatch.setattr(Sampler, "_fill", fill)
    broken, _ = _run(_scenario(200.0))
    assert "events" in _differences(ref, broken)
