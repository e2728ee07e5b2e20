"""Issue 14 (Blue Vela's nine months in a few seconds): the jobs' per-sample and end-of-run
paths written for speed give what their references give, value for value: the forward fill
of finished jobs' tokens a block of rows at a time (:func:`twin.sim.jobs._fill_forward`)
against a column at a time, :meth:`Jobs.advance_all` (which jobs it brings up to now) against
:meth:`Jobs.advance` of each job, and :meth:`Jobs.record` (row views) against a store per
``(sample, job)``. Each comparison fails when the fast path is broken on purpose. The
stream jobs' training loop with its checkpoints written in line is pinned to the reference
loop by tests/sim/test_stream_speed.py and tests/sim/test_checkpoint_fast_path.py."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.sim import jobs as jobs_module
from twin.sim.engine import Engine

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _random_ends(rng: np.random.Generator, rows: int, cols: int) -> list[tuple[int, int, float]]:
    """Distinct columns, first rows with ties and some past the end, random values."""
    n = int(rng.integers(0, cols + 1))
    picked = rng.permutation(cols)[:n]
    first = rng.integers(0, rows + 3, n)
    first[: n // 3] = first[0] if n else 0          # ties
    return [(int(f), int(c), float(v)) for f, c, v in zip(first, picked, rng.normal(1e9, 1e8, n), strict=True)]


@pytest.mark.parametrize("seed", range(25))
def test_fill_forward_equals_a_column_at_a_time(seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(0, 40)), int(rng.integers(1, 30))
    ends = _random_ends(rng, rows, cols)
    start = rng.normal(size=(rows, cols))
    fast, ref = start.copy(), start.copy()
    jobs_module._fill_forward(fast, ends)
    jobs_module._fill_forward_reference(ref, ends)
    assert np.array_equal(fast, ref)


def test_a_broken_fill_forward_is_caught():
    rng = np.random.default_rng(7)
    ends = [(3, 0, 1.0), (3, 2, 2.0), (5, 1, 3.0), (9, 4, 4.0)]
    start = rng.normal(size=(8, 5))
    ref = start.copy()
    jobs_module._fill_forward_reference(ref, ends)
    # one row short at the end of each block: the last row of a block keeps its old value
    broken = start.copy()
    first, cols, vals = (np.array(x) for x in zip(*ends, strict=True))
    bounds = np.append(np.minimum(first, 8), 8)
    for k in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        broken[bounds[k]:bounds[k + 1] - 1, cols[:k + 1]] = vals[:k + 1]
    assert not np.array_equal(broken, ref)
    fast = start.copy()
    jobs_module._fill_forward(fast, ends)
    assert np.array_equal(fast, ref)
    assert fast[7, 1] == 3.0 and fast[2, 0] == start[2, 0] and fast[7, 4] == start[7, 4]


@functools.cache
def _engine() -> Engine:
    """Blue Vela's job stream for 60 days (legacy cooling: the jobs do not care), stopped
    with jobs running, checkpointing and starting (a write is made slow enough to span
    samples)."""
    s = twin.load_scenario(SCENARIOS / "blue_vela.yaml", ["simulation.duration_days=60",
                                                          "site.cooling_system.model=legacy",
                                                          "workload.storage.write_gb_s_per_unit=0.4"])
    e = Engine(s)
    e.start()
    # day 23.29: 5 jobs running, checkpointing, queued (day 25.07 until the stream jobs' wall
    # time held their first launch and checkpoint writes, audit HA2 F13: 1 job live there now)
    e.env.run(until=2011849.0)
    return e


def _fields(job) -> tuple:
    return (job.gpu_s_allocated, job.tokens, job.gpu_s_pending, job.wall_s_pending, job.checkpoint_s,
            job.restart_s, job.t_last)


def test_advance_all_equals_advance_of_each_job():
    e = _engine()
    live = e.jobs._live()
    assert len(live) >= 5 and {j.status for j in live} >= {"running", "checkpointing", "queued"}
    fast, ref = [copy.copy(j) for j in e.jobs.all], [copy.copy(j) for j in e.jobs.all]
    env_now = e.env._now
    try:
        for step in (0.0, 1234.567, 3600.0, 0.25):
            e.env._now += step
            e.jobs.all = fast
            e.jobs._live_jobs = None
            e.jobs.advance_all()
            e.jobs.all = ref
            e.jobs._live_jobs = None
            for job in e.jobs._live():
                if job.nodes.size or job.status in ("running", "checkpointing", "starting"):
                    e.jobs.advance(job)
            assert [_fields(j) for j in fast] == [_fields(j) for j in ref]
    finally:
        e.env._now = env_now
        e.jobs._live_jobs = None


def test_a_broken_advance_all_is_caught(monkeypatch):
    e = _engine()
    fast, ref = [copy.copy(j) for j in e.jobs.all], [copy.copy(j) for j in e.jobs.all]
    env_now = e.env._now
    monkeypatch.setattr(e.jobs, "_gpn", e.jobs._gpn + 1)        # GPUs per node off by one
    try:
        e.env._now += 600.0
        e.jobs.all = fast
        e.jobs._live_jobs = None
        e.jobs.advance_all()
        monkeypatch.undo()
        e.jobs.all = ref
        e.jobs._live_jobs = None
        for job in e.jobs._live():
            e.jobs.advance(job)
        assert [_fields(j) for j in fast] != [_fields(j) for j in ref]
    finally:
        e.env._now = env_now
        e.jobs._live_jobs = None


def _record_reference(jobs, i: int, rec: dict) -> None:
    """Jobs.record as first written: a store per (sample, job)."""
    for j in (*range(jobs.n_fixed), *jobs.active):
        job = jobs.all[j]
        rec["job_tokens"][i, j] = job.tokens
        rec["job_tokens_per_s"][i, j] = job.rate_tok_s if job.status == "running" else 0.0
        rec["job_gpus"][i, j] = len(job.nodes) * jobs.gpus_per_node_of(job)


def test_record_equals_a_store_per_job():
    e = _engine()
    n = len(e.jobs)
    shapes = {"job_tokens": np.float64, "job_tokens_per_s": np.float64, "job_gpus": np.int32}
    fast = {k: np.full((3, n), -1, t) for k, t in shapes.items()}
    ref = {k: v.copy() for k, v in fast.items()}
    e.jobs._live_jobs = None
    e.jobs.record(1, fast)
    _record_reference(e.jobs, 1, ref)
    assert all(np.array_equal(fast[k], ref[k]) for k in shapes)
    assert (fast["job_gpus"][1] > 0).sum() >= 3 and (fast["job_tokens_per_s"][1] > 0).sum() >= 1
    # broken on purpose: a job that checkpoints records its rate (the reference records 0)
    job = next(j for j in e.jobs._live() if j.status == "running")
    job.status = "checkpointing"
    try:
        e.jobs.record(2, fast)
        job.status = "running"
        _record_reference(e.jobs, 2, ref)
        assert not np.array_equal(fast["job_tokens_per_s"], ref["job_tokens_per_s"])
    finally:
        job.status = "running"


def _roll_back_reference(times: list, states: list, job, corruption_s: float) -> float:
    """JobState.roll_back_before as first written, checkpoints as (tokens, GPU-s, wall-s, wall-s
    inside a wall-time job's length) tuples (the fourth since audit HA2 F13)."""
    from twin import reliability
    i = reliability.last_clean_checkpoint_index(np.array(times), corruption_s)
    tokens, gpu_s, wall_s, inside = states[i] if i >= 0 else (0.0, 0.0, 0.0, job.wall_s_launch)
    thrown = job.tokens_committed - tokens
    if thrown > 0:
        job.gpu_s_lost += job.gpu_s_useful - gpu_s
        job.tokens_lost += thrown
        job.tokens -= thrown
        job.tokens_committed, job.gpu_s_useful, job.wall_s_useful = tokens, gpu_s, wall_s
        job.wall_s_inside = inside
        del times[i + 1:], states[i + 1:]
    return max(thrown, 0.0)


def _totals(job) -> tuple:
    return (job.tokens, job.tokens_committed, job.gpu_s_useful, job.wall_s_useful, job.gpu_s_lost,
            job.tokens_lost, job.gpu_s_pending, job.wall_s_pending, job.wall_s_inside)


@pytest.mark.parametrize("seed", range(20))
def test_roll_back_equals_the_tuple_per_checkpoint_form(seed):
    """Checkpoints kept as four floats each in one flat list roll back as the tuples did."""
    rng = np.random.default_rng(seed)
    job = jobs_module.JobState(spec=None, index=0, params=1.0, checkpoint_bytes=1.0)
    times: list = []
    states: list = []
    t = 0.0
    job.wall_s_launch = job.wall_s_inside = float(rng.uniform(0.0, 600.0))     # a first launch
    for _ in range(int(rng.integers(0, 12))):
        t += float(rng.uniform(1.0, 100.0))
        job.tokens += float(rng.uniform(0.0, 1e9))
        job.gpu_s_pending += float(rng.uniform(0.0, 1e5))
        job.wall_s_pending += float(rng.uniform(0.0, 1e3))
        job.wall_s_inside += float(rng.uniform(0.0, 60.0))      # the write's time
        job.commit(t)
        times.append(t)
        states.append((job.tokens_committed, job.gpu_s_useful, job.wall_s_useful, job.wall_s_inside))
    job.tokens += 123.0
    ref = copy.copy(job)
    ref_times, ref_states = list(times), list(states)
    corruption_s = float(rng.uniform(-10.0, t + 10.0))
    thrown = job.roll_back_before(corruption_s)
    assert thrown == _roll_back_reference(ref_times, ref_states, ref, corruption_s)
    assert _totals(job) == _totals(ref)
    assert job.ckpt_time_s == ref_times
    assert job.ckpt_state == [x for s in ref_states for x in s]
