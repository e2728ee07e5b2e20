"""Parking up to the checkpoint (issue 19): a training fixed job without a token target stays
parked until the sample before its checkpoint (``Jobs.park_near_checkpoint``), not only while
the checkpoint lies ``PARK_SAMPLES`` samples ahead, so the million-GPU site's jobs, which
checkpoint about once per sample, park too. The sampler then creates their timeouts to the
checkpoint where their own wake-ups would have. The runs must be bit for bit those of the
per-sample wake-ups, and a job kept parked one sample too long is caught. The parking's
queue test (:meth:`CountingEnvironment.queued_after`) is answered from keys kept at
scheduling instead of a scan of the queue; it must answer what the scan answers."""

import numpy as np
import pytest
from sim.test_bulk_samples import _differences  # (series, KPIs and events that differ)
from sim.test_job_parking import _run
from sim.test_job_parking import _scenario as _parking_scenario

from twin.scenario import validate_data
from twin.sim import engine as engine_mod
from twin.sim import jobs as jobs_mod
from twin.sim.engine import CountingEnvironment


def _scenario(dt_s: float):
    """The parking suite's 128 nodes and seven fixed jobs over 2.4 h (failures at 40x the
    catalog's rate, checkpoints every 20 minutes at instants touching each other's writes,
    one job with a token target), sampled every ``dt_s`` [s]: at 480 s a checkpoint comes
    every 2.5 samples, never ``PARK_SAMPLES`` ahead."""
    s = _parking_scenario().model_dump(mode="json")
    s["simulation"]["sample_interval_s"] = dt_s
    return validate_data(s)


@pytest.fixture(scope="module", params=[1.0, 480.0])
def runs(request):
    sc = _scenario(request.param)
    return sc, _run(sc, park=False), _run(sc, near=False), _run(sc)


def test_parking_near_the_checkpoint_equals_per_sample_wakeups(runs):
    sc, (ref, e_ref), (far, e_far), (near, e_near) = runs
    kinds = near.events.kind
    assert (kinds == "job_interrupted").sum() >= 1 and (kinds == "checkpoint").sum() >= 10
    wakes = [e.env.event_counts["Jobs._lifecycle"][0] for e in (e_ref, e_far, e_near)]
    assert wakes[2] < wakes[1] <= wakes[0]
    if sc.simulation.sample_interval_s == 480.0:    # the margin parked nothing there
        assert wakes[1] == wakes[0] and wakes[2] < 0.8 * wakes[0]
    assert e_near.jobs.park_misses == 0
    for other in (ref, far):
        assert _differences(other, near) == []
        assert other.dataset.identical(near.dataset)
    assert [j.tokens for j in e_ref.jobs] == [j.tokens for j in e_near.jobs]


@pytest.fixture(scope="module")
def ref_1s():
    sc = _scenario(1.0)
    return sc, _run(sc, park=False)[0]


def test_a_job_parked_one_sample_too_long_is_caught(ref_1s, monkeypatch):
    """Parked while its checkpoint falls on the sample that does its wake-up (at 1-s
    samples four jobs start on a sample instant, so their checkpoints fall on samples):
    the wake-up then finds the checkpoint due, later in that instant than its own."""
    sc, ref = ref_1s
    monkeypatch.setattr(jobs_mod, "_NEAR_SAMPLES", -1)
    res, e = _run(sc)
    assert e.jobs.park_misses > 0
    assert _differences(ref, res) != []


def _queue_answers(env_cls, seed: int) -> list[bool]:
    """``queued_after`` of random events at random instants of a queue of random timeouts
    (priorities urgent and normal, many sharing an instant), asked between random steps."""
    rng = np.random.default_rng(seed)
    env = env_cls(1e9, lambda *a: None)
    answers = []
    events: list = []
    for _ in range(60):
        for _ in range(int(rng.integers(1, 8))):
            delay = float(rng.integers(0, 6)) * 0.5
            ev = env.event()
            ev._ok, ev._value = True, None
            env.schedule(ev, int(rng.integers(0, 2)), delay)
            events.append(ev)
        for _ in range(int(rng.integers(0, 4))):
            if env.peek() < float("inf"):
                env.step()
        for _ in range(5):
            ev = events[int(rng.integers(len(events)))]
            t = env.now + float(rng.integers(0, 6)) * 0.5
            answers.append(env.queued_after(ev, t))
    return answers


class _Scanning(CountingEnvironment):
    """The reference: every answer from a scan of the queue."""

    def __init__(self, *a):
        super().__init__(*a)
        self.keyed_queue = False


@pytest.mark.parametrize("seed", range(20))
def test_keyed_queue_answers_what_the_scan_answers(seed):
    keyed, scanned = _queue_answers(CountingEnvironment, seed), _queue_answers(_Scanning, seed)
    assert keyed == scanned
    assert any(keyed) and not all(keyed)


def test_a_queue_key_kept_wrong_is_caught(monkeypatch):
    """Keeping the first event scheduled at an instant instead of the last one."""

    def first_only(self, event, priority=1, delay=0):
        t = self._now + delay
        eid = next(self._eid)
        engine_mod.heappush(self._queue, (t, priority, eid, event))
        event._twin_key = (t, priority, eid)
        if priority == 1:
            self._last_at.setdefault(t, eid)

    scanned = [_queue_answers(_Scanning, seed) for seed in range(20)]
    monkeypatch.setattr(CountingEnvironment, "schedule", first_only)
    assert [_queue_answers(CountingEnvironment, seed) for seed in range(20)] != scanned
