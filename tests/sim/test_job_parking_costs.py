"""The jobs' per-call costs (issues 19 and 14): the swing of every job start evaluated at once
after the run (``Jobs.peak_swing_w``) and its grouping key, the live-job list kept between
starts and ends, the closed-form checkpoint's "every node trains" test. Each is compared with
the per-call form it replaced and shown to fail when broken."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import twin
from twin import power
from twin.phases import Phase
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


def _array_key(v) -> tuple:
    """The grouping key's general form (every value through a numpy array)."""
    if isinstance(v, tuple):
        return (v[0], *_array_key(v[1]))
    a = np.asarray(v)
    return type(v).__name__, a.dtype.str, a.item()


_SCALARS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2 ** 70, 2 ** 70), st.booleans(),
                     st.floats(width=32).map(np.float32), st.integers(-2 ** 31, 2 ** 31).map(np.int64),
                     st.floats().map(np.array))


def _same_grouping(values: list) -> bool:
    """Whether ``_same_value_key`` gives ``values`` (each also as a keyword pair) the general
    form's keys (those without NaN) and groups them as it does: equal keys (and hashes) for
    the same pairs."""
    vals = [*values, *(("psu_capacity_w", v) for v in values)]
    # each key made twice, as two starts with the same value make theirs
    fast, fast2 = ([jobs_mod._same_value_key(v) for v in vals] for _ in range(2))
    ref, ref2 = ([_array_key(v) for v in vals] for _ in range(2))
    same_keys = all(fa == ra for fa, ra, rb in zip(fast, ref, ref2, strict=True) if ra == rb)    # NaN aside
    return same_keys and all((fa == fb) == (ra == rb) and (fa != fb or hash(fa) == hash(fb))
                             for fa, ra in zip(fast, ref, strict=True) for fb, rb in zip(fast2, ref2, strict=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(_SCALARS, min_size=1, max_size=6))
def test_grouping_key_of_plain_scalars_is_the_array_forms(values):
    """The swing starts' grouping key takes plain Python floats, ints and bools without an
    array (issue 19): the same groups as the general form for any mix of values, types and
    dtypes, NaN (never equal to another, not even itself as a new item), -0.0, infinities
    and ints past int64 included."""
    v = values[0]
    assert _same_grouping([*values, v, -0.0, 0.0, 0, False, float("nan")])


def test_a_broken_grouping_key_is_caught(monkeypatch):
    """The comparison is sharp: a key that lets a NaN equal itself, calls a bool an int, or
    takes an int past int64 as one, groups otherwise than the general form."""
    nan = float("nan")
    assert _same_grouping([nan, True, 1, 2 ** 63, 8, 700.0])
    with monkeypatch.context() as m:
        m.setattr(jobs_mod, "_same_value_key", lambda v: (v[0], *jobs_mod._same_value_key(v[1])) if isinstance(
            v, tuple) else (type(v).__name__, np.asarray(v).dtype.str, v))      # NaN kept as itself
        assert not _same_grouping([nan])
    with monkeypatch.context() as m:
        m.setitem(jobs_mod._PY_SCALAR_DTYPE, bool, jobs_mod._PY_SCALAR_DTYPE[int])
        assert not _same_grouping([True])
    with monkeypatch.context() as m:
        m.setattr(jobs_mod, "_INT_MAX", 2 ** 64)
        assert not _same_grouping([2 ** 63])


def _all_training_agrees(jobs, rng, trials: int = 300) -> bool:
    """``Jobs._all_training`` against every node's phase compared with ``Phase.TRAINING``,
    on random node sets and phases (the cached answer invalidated by a write each time)."""
    st_, n = jobs.state, len(jobs.state.node_job_phase)
    job = jobs.all[0]
    for _ in range(trials):
        job.nodes = rng.choice(n, size=int(rng.integers(1, 40)), replace=False)
        phases = np.full(len(job.nodes), int(Phase.TRAINING))
        if rng.random() < 0.5:      # one node (or a few) in another phase
            k = rng.integers(1, 3)
            phases[rng.choice(len(phases), size=k)] = rng.choice([int(p) for p in Phase if p != Phase.TRAINING], k)
        st_.node_job_phase[job.nodes] = phases
        ref = bool((st_.node_job_phase.view(np.ndarray)[job.nodes] == Phase.TRAINING).all())
        if jobs._all_training(job) != ref:
            return False
    return True


def test_all_training_compares_bytes_as_the_phases(starts):
    """A checkpoint's closed form asks whether every node of the job trains: the state's
    int8 phases are compared as bytes (issue 19), any other dtype as numbers; both agree with
    ``== Phase.TRAINING`` on random node sets with and without a node in another phase; a
    wrong byte is caught."""
    e, _, _ = starts
    jobs, rng = e.jobs, np.random.default_rng(11)
    saved = e.state.node_job_phase.copy(), jobs.all[0].nodes, jobs.all[0].training_ver
    try:
        assert e.state.node_job_phase.dtype == np.int8 and _all_training_agrees(jobs, rng)
        e.state.node_job_phase = e.state.node_job_phase.astype(np.int16)     # the numeric form
        assert _all_training_agrees(jobs, rng)
        e.state.node_job_phase = e.state.node_job_phase.astype(np.int8)
        broken = np.array([int(Phase.COMMUNICATION)], np.int8).tobytes()
        with pytest.MonkeyPatch.context() as m:
            m.setattr(jobs_mod, "_TRAINING_BYTE", broken)
            assert not _all_training_agrees(jobs, rng)
    finally:
        e.state.node_job_phase = saved[0]
        jobs.all[0].nodes, jobs.all[0].training_ver = saved[1], saved[2]
