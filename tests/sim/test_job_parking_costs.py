"""The jobs' per-call costs (issues 19 and 14): the swing of every job start evaluated at once
after the run (``Jobs.peak_swing_w``), and the live-job list kept between starts and ends.
Each is compared with the per-call form it replaced and shown to fail when broken."""

from pathlib import Path

import numpy as np
import pytest

import twin
from twin import power
from twin.sim import jobs as jobs_mod
from twin.sim.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"


def _per_call_w(todo) -> np.ndarray:
    """Each start's three phase powers as they were evaluated at the start: one
    ``node_power_w`` call per start, three phases against a (1,) inlet and clock."""
    return np.array([power.node_power_w(jobs_mod._SWING_PHASES, cap, np.array([inlet]),
                                        clock_fraction=np.array([clock]), **kw)
                     for _, inlet, clock, cap, kw in todo])


def _per_call(todo) -> dict[str, float]:
    """The peak swing as it was kept: folded start by start."""
    sw = {"communication": 0.0, "checkpoint": 0.0}
    for (n, *_), w in zip(todo, _per_call_w(todo), strict=True):
        train_w, comm_w, ckpt_w = (n * float(x) for x in w)
        sw["communication"] = max(sw["communication"], train_w - comm_w)
        sw["checkpoint"] = max(sw["checkpoint"], train_w - ckpt_w)
    return sw


@pytest.fixture(scope="module")
def starts():
    """Blue Vela's stream for 40 days: the inputs of every job start's swing, plus the same
    starts throttled (clock 0.55-1), warmer and on a degraded PSU capacity (other figures,
    another group of the batched call)."""
    e = Engine(twin.load_scenario(BV, ["simulation.duration_days=40"]))
    e.start()
    e.env.run(until=e.n_samples * e.dt_s)
    real = list(e.jobs._swings)         # not yet evaluated: that comes with the run record
    assert len(real) > 50
    rng = np.random.default_rng(5)
    more = []
    for n, inlet, clock, cap, kw in real[:200]:
        kw2 = dict(kw)
        if rng.random() < 0.3:
            kw2["psu_capacity_w"] = 0.5 * np.asarray(kw["psu_capacity_w"], float)
        more.append((n, inlet + rng.uniform(0, 12), clock * rng.uniform(0.55, 1.0), cap, kw2))
    return e, real, real + more


def test_batched_swing_equals_per_call(starts):
    e, real, todo = starts
    assert np.array_equal(jobs_mod._swing_phase_w(todo), _per_call_w(todo))     # every start, bit for bit
    ref = _per_call(todo)
    e.jobs._swings = list(todo)
    e.jobs._peak_swing_w = {"communication": 0.0, "checkpoint": 0.0}
    assert e.jobs.peak_swing_w == ref
    assert ref["communication"] > 0 and ref["checkpoint"] > 0
    # evaluated once: reading it again changes nothing
    assert e.jobs.peak_swing_w == ref and e.jobs._swings == []


def test_a_batch_that_mixes_groups_is_caught(starts, monkeypatch):
    """Starts on other node figures (here a degraded PSU capacity) must not share a call:
    a grouping key that tells nothing apart evaluates them all with the first start's
    figures, and the comparison fails."""
    _, _, todo = starts
    monkeypatch.setattr(jobs_mod, "_same_value_key", lambda v: ())
    assert not np.array_equal(jobs_mod._swing_phase_w(todo), _per_call_w(todo))


def test_live_jobs_follow_the_active_set(starts):
    """``Jobs._live`` (kept between starts and ends) lists the fixed jobs then the active
    stream jobs in index order, as the generator it replaced did, after every change."""
    e, _, _ = starts
    jobs = e.jobs
    assert jobs._live() == jobs.all[:jobs.n_fixed] + [jobs.all[j] for j in sorted(jobs.active)]
    some = next(j for j in jobs.all[jobs.n_fixed:] if j.index not in jobs.active)
    jobs.active.add(some.index)         # as the scheduler does when it places a stream job
    assert some in jobs._live()
    jobs._set_active(some, False)
    assert some not in jobs._live()
    assert jobs._live() == jobs.all[:jobs.n_fixed] + [jobs.all[j] for j in sorted(jobs.active)]
