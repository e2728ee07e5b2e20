"""Issue 19 (H3): the jobs' per-restart figures kept by what they depend on, each pinned to
the computation it replaces, bit for bit, and shown to fail when broken:

- a placement's spread (``Jobs.fabric_figures``): a node's unit by a shift when units are
  runs of 2^k nodes, the worst failed rails read at the few degraded units only, the entry
  holding its node array;
- the lowest and mean clock of a job's nodes at full clock (``node_clock`` all ones, kept per
  write count);
- ``np.add.reduce(x) / len(x)`` for ``x.mean()`` of float64 arrays;
- the swing's keywords kept while the power chain hands out the same objects, and the
  batched swing grouping starts by the identity of their keyword dict.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import twin
from twin import fabric, power
from twin.sim import jobs as jobs_mod
from twin.sim.engine import Engine

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _engine(until_s: float = 0.0, over: tuple[str, ...] = ()) -> Engine:
    e = Engine(twin.load_scenario(SCENARIOS / "vela.yaml", ["simulation.duration_days=4", *over]))
    e.start()
    if until_s:
        e.env.run(until=until_s)
    return e


@pytest.fixture(scope="module")
def eng() -> Engine:
    """Vela on day 3, its job training (it is placed once the racks are in service)."""
    return _engine(3 * 86400.0)


# ------------------------------------------------------------------ fabric figures
def _reference_figures(e: Engine, nodes: np.ndarray) -> tuple[float, float]:
    """``fabric_figures`` as it was: units by the ``node_su`` table, the worst failed rails
    over every unit the job spans, the figures routed afresh."""
    s, p = e.s, e.plant
    counts = np.bincount(p.node_su[nodes])
    sus = np.flatnonzero(counts)
    hops = float(fabric.placement_hops(e.graph, nodes)["max_hops"])
    bw = float(fabric.bottleneck_bandwidth_gbps(e.graph, nodes))
    worst = int(e.state.su_degraded.view(np.ndarray)[sus].max()) if len(sus) else 0
    return hops, bw * max(s.fabric.rails - worst, 0) / s.fabric.rails


def _placements(e: Engine, rng: np.random.Generator, k: int) -> list[np.ndarray]:
    n = e.plant.n_nodes
    out = [np.empty(0, int), np.arange(min(n, 16)), np.arange(n)]
    for _ in range(k):
        size = int(rng.integers(1, min(n, 200)))
        nodes = rng.choice(n, size=size, replace=False)
        out.append(nodes if rng.random() < 0.5 else np.sort(nodes))
    return out


def _degrade(e: Engine, rng: np.random.Generator) -> None:
    """Fail rails at a few units (or none), through the tracked array as failures do."""
    deg = e.state.su_degraded
    deg[:] = 0
    for u in rng.choice(len(deg), size=int(rng.integers(0, 4)), replace=False):
        deg[u] = int(rng.integers(1, e.s.fabric.rails + 1))


@pytest.mark.parametrize("shift", [True, False])
def test_fabric_figures_equal_the_uncached_computation(shift):
    e = _engine()
    jobs, rng = e.jobs, np.random.default_rng(3)
    assert jobs._su_shift is not None          # Vela's units are runs of 16 nodes
    if not shift:
        jobs._su_shift = None                   # the node_su table path
    placements = _placements(e, rng, 60)
    for rnd in range(6):
        _degrade(e, rng)
        if rnd == 5:                            # more degraded units than the short list takes
            e.state.su_degraded[:] = rng.integers(0, 3, len(e.state.su_degraded))
        for nodes in placements:
            ref = _reference_figures(e, nodes) if len(nodes) else (jobs.fabric_figures(nodes.copy()))
            assert jobs.fabric_figures(nodes) == ref
            assert jobs.fabric_figures(nodes) == ref            # the kept spread
            jobs._spread.clear()
            assert jobs.fabric_figures(nodes.copy()) == ref


def test_worst_degraded_equals_the_max_over_the_units_spanned():
    """The short list of degraded units gives ``su_degraded[flatnonzero(counts)].max()``
    for any counts and any rails, negative ones included (the rule, whatever the values)."""
    e = _engine()
    jobs, rng = e.jobs, np.random.default_rng(11)
    deg = e.state.su_degraded
    n = len(deg)
    for _ in range(400):
        deg[:] = 0
        k = int(rng.integers(0, 6))
        if k:
            deg[rng.choice(n, size=k, replace=False)] = rng.integers(-2, 4, size=k)
        counts = np.zeros(int(rng.integers(1, n + 1)), int)
        counts[rng.choice(len(counts), size=int(rng.integers(0, min(len(counts), 8) + 1)), replace=False)] = 3
        n_sus = int(np.count_nonzero(counts))
        sus = np.flatnonzero(counts)
        ref = int(deg.view(np.ndarray)[sus].max()) if len(sus) else 0
        assert jobs._worst_degraded(counts, n_sus) == ref


def test_a_stale_degraded_list_is_caught():
    """A rail failure the list did not see (a write behind the tracking) changes the answer:
    the comparison above is sharp."""
    e = _engine()
    jobs = e.jobs
    nodes = np.flatnonzero(e.plant.node_su == 0)
    ref = jobs.fabric_figures(nodes)
    e.state.su_degraded.view(np.ndarray)[0] = 1           # not logged: no new write count
    assert jobs.fabric_figures(nodes) == ref                # the list is stale ...
    assert _reference_figures(e, nodes) != ref              # ... and the reference tells


def test_spread_entry_holds_its_array_and_sees_writes_in_place():
    e = _engine()
    jobs, su = e.jobs, e.plant.node_su
    nodes = np.flatnonzero(su == 0)
    first = jobs.fabric_figures(nodes)
    entry = jobs._spread[id(nodes)]
    assert entry[4] is nodes and np.array_equal(entry[0], nodes) and entry[0] is not nodes
    nodes[:] = np.concatenate([np.flatnonzero(su == u)[:len(nodes) // 2] for u in (1, 2)])[:len(nodes)]
    assert jobs._spread[id(nodes)][1][1] == 1 and jobs.fabric_figures(nodes) == _reference_figures(e, nodes)
    assert jobs._spread[id(nodes)][1][1] == 2
    assert first == _reference_figures(e, np.flatnonzero(su == 0))


def test_a_read_only_placement_is_kept_without_a_copy():
    """A placement nobody can write (read-only, its memory owner too: what the scheduler hands
    out) is kept as itself; made writeable again it is no longer trusted."""
    e = _engine()
    jobs, su = e.jobs, e.plant.node_su
    owner = np.array(np.flatnonzero(su <= 1))                 # owns its memory
    owner.flags.writeable = False
    nodes = owner[:len(owner) - 3]                          # a read-only view of a read-only owner
    assert jobs_mod._unwritable(nodes) and jobs_mod._unwritable(owner)
    ref = _reference_figures(e, nodes)
    assert jobs.fabric_figures(nodes) == ref and jobs._spread[id(nodes)][0] is nodes
    assert jobs.fabric_figures(nodes) == ref                # a hit
    # writeable again and written: seen as a new placement, not the kept one
    owner.flags.writeable = True
    assert not jobs_mod._unwritable(nodes)
    owner[:len(nodes)] = np.concatenate([np.flatnonzero(su == u)[:10] for u in (2, 3, 4)])[:len(nodes)]
    moved = jobs.fabric_figures(nodes)
    assert moved == _reference_figures(e, nodes)
    assert jobs._spread[id(nodes)][1][1] == 3 and jobs._spread[id(nodes)][0] is not nodes
    # a read-only view of a writeable array is copied
    base = np.array(np.flatnonzero(su == 0))
    view = base[:]
    view.flags.writeable = False
    assert not jobs_mod._unwritable(view)
    jobs.fabric_figures(view)
    assert jobs._spread[id(view)][0] is not view


def test_spread_store_is_bounded_by_nodes_held():
    e = _engine()
    jobs, n = e.jobs, e.plant.n_nodes
    keep = [np.arange(n) for _ in range(12)]                 # alive: distinct ids
    for a in keep:
        jobs.fabric_figures(a)
    assert len(jobs._spread) <= 8 and jobs._spread_held <= 8 * n


# ------------------------------------------------------------------ clocks and means
@pytest.mark.filterwarnings("ignore::RuntimeWarning")     # overflow to inf, inf - inf
@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 5000),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
def test_add_reduce_over_length_is_the_mean(x):
    got, ref = np.add.reduce(x) / len(x), x.mean()
    assert type(got) is type(ref)
    assert np.array_equal(np.array([got]), np.array([ref]), equal_nan=True)
    assert np.signbit(got) == np.signbit(ref) or np.isnan(ref)


def test_full_clock_is_kept_per_write_count(eng):
    jobs, st_ = eng.jobs, eng.state
    job = next(j for j in jobs if len(j.nodes))
    saved = st_.node_clock.copy()
    try:
        assert jobs._full_clock() == bool((st_.node_clock == 1.0).all())
        assert jobs._min_clock(job.nodes) == float(st_.node_clock.view(np.ndarray)[job.nodes].min())
        st_.node_clock[job.nodes[3]] = 0.75                  # a tracked write: seen
        assert not jobs._full_clock()
        assert jobs._min_clock(job.nodes) == 0.75
        assert jobs._min_clock(np.empty(0, int)) == 1.0
        st_.node_clock[job.nodes[3]] = 1.0
        assert jobs._full_clock() and jobs._min_clock(job.nodes) == 1.0
        # a write behind the tracking is not seen: the comparison above is sharp
        st_.node_clock.view(np.ndarray)[job.nodes[3]] = 0.5
        assert jobs._min_clock(job.nodes) == 1.0 != float(st_.node_clock.view(np.ndarray)[job.nodes].min())
    finally:
        st_.node_clock = saved


def _reference_swing(jobs, job) -> tuple:
    """``_record_swing``'s entry as it was made: means by ``ndarray.mean``, a fresh dict."""
    nodes, st_, pc = job.nodes, jobs.state, jobs.e.power
    inlet = st_.rack_inlet_c.view(np.ndarray)[jobs.plant.node_rack[nodes]].mean()
    clock = st_.node_clock.view(np.ndarray)[nodes].mean() * st_.brake_clock
    one = nodes[0] if len(nodes) else 0
    kw = {k: (v if jobs_mod._one_number(v) else np.asarray(v)[one]) for k, v in pc.node_kwargs().items()}
    cap = pc.gpu_cap_w if jobs_mod._one_number(pc.gpu_cap_w) else np.asarray(pc.gpu_cap_w)[one]
    return len(nodes), inlet, clock, cap, kw


def _same_entry(a: tuple, b: tuple) -> bool:
    return (a[0] == b[0] and all(type(x) is type(y) and x.tobytes() == y.tobytes() for x, y in zip(a[1:3], b[1:3], strict=True))
            and type(a[3]) is type(b[3]) and a[3] == b[3] and list(a[4]) == list(b[4])
            and all(type(a[4][k]) is type(b[4][k]) and a[4][k] == b[4][k] for k in a[4]))


def test_run_shift_is_the_table():
    """A node's unit or rack as a shift of its index only where the table is exactly that."""
    for k in range(5):
        for n in (1, 7, 1 << k, 3 << k, 1000):
            t = np.arange(n) >> k
            got = jobs_mod._run_shift(t)
            assert got is None or np.array_equal(np.arange(n) >> got, t)
            if n >= 1 << k:                     # a whole first unit: the shift is found
                assert got == k
    assert jobs_mod._run_shift(np.arange(12) // 3) is None                  # units of 3
    assert jobs_mod._run_shift(np.repeat(np.arange(4), [4, 4, 2, 4])) is None   # a short unit inside
    assert jobs_mod._run_shift(np.array([1, 1, 2, 2])) is None               # not from 0
    assert jobs_mod._run_shift(np.empty(0, int)) is None


@pytest.mark.parametrize("shift", [True, False])
def test_record_swing_equals_the_reference(eng, shift):
    jobs, st_ = eng.jobs, eng.state
    saved_shift = jobs._rack_shift
    if not shift:
        jobs._rack_shift = None                 # the node_rack table path
    job = next(j for j in jobs if len(j.nodes))
    rng = np.random.default_rng(7)
    saved_clock, saved_inlet, saved_psu = st_.node_clock.copy(), st_.rack_inlet_c.copy(), st_.psu_capacity_w
    try:
        jobs._swings = []
        for k in range(40):
            if k % 10 == 5:
                st_.node_clock[job.nodes] = rng.uniform(0.5, 1.0, len(job.nodes))
            elif k % 10 == 8:
                st_.node_clock = np.ones(len(st_.node_clock))
            if k % 7 == 3:
                st_.psu_capacity_w = float(st_.psu_capacity_w) * 0.5     # another object: a new dict
            st_.rack_inlet_c = rng.uniform(15, 35, len(st_.rack_inlet_c))
            jobs._record_swing(job)
            assert _same_entry(jobs._swings[-1], _reference_swing(jobs, job))
        # the dict is shared while the objects are the same, and the batch equals per-start keys
        assert len({id(t[4]) for t in jobs._swings}) < len(jobs._swings)
        todo = jobs._swings
        fresh = [(n, i, c, cap, dict(kw)) for n, i, c, cap, kw in todo]
        assert np.array_equal(jobs_mod._swing_phase_w(todo), jobs_mod._swing_phase_w(fresh))
    finally:
        st_.node_clock, st_.rack_inlet_c, st_.psu_capacity_w = saved_clock, saved_inlet, saved_psu
        jobs._swings, jobs._rack_shift = [], saved_shift


def _calls(monkeypatch) -> list:
    calls: list = []
    real = power.node_power_w

    def counted(*a, **k):
        calls.append(k.get("psu_capacity_w"))
        return real(*a, **k)
    monkeypatch.setattr(power, "node_power_w", counted)
    return calls


def test_batched_swing_groups_as_the_per_start_keys(eng, monkeypatch):
    """Starts sharing one keyword dict join a group without a new key; a dict holding a NaN
    (a new key, equal to none, every time) is never reused, as before; other figures make
    other groups. The output equals one call per start, and the calls are the groups the
    per-start keys give."""
    base = dict(eng.power.node_kwargs())
    shared, other = dict(base), {**base, "psu_capacity_w": 0.5 * float(base["psu_capacity_w"])}
    nan_kw = {**base, "psu_capacity_w": float("nan")}
    rng = np.random.default_rng(2)
    todo = []
    for k in range(24):                 # runs of one to three starts on the same dict
        kw = (shared, other, nan_kw, dict(base))[k % 4]
        for _ in range(1 + k % 3):
            todo.append((8, float(rng.uniform(18, 30)), float(rng.uniform(0.6, 1.0)), eng.power.gpu_cap_w, kw))
    per_start = np.array([power.node_power_w(jobs_mod._SWING_PHASES, cap, np.array([i]),
                                             clock_fraction=np.array([c]), **kw) for _, i, c, cap, kw in todo])
    calls = _calls(monkeypatch)
    got = jobs_mod._swing_phase_w(todo)
    assert np.array_equal(got, per_start, equal_nan=True)
    # groups: base-valued dicts (shared and the fresh copies) one, `other` one, each NaN start its own
    n_nan = sum(1 for t in todo if t[4] is nan_kw)
    assert len(calls) == 2 + n_nan
    # a key taken as reusable though it holds a NaN would merge the NaN starts: caught
    calls.clear()
    monkeypatch.setattr(jobs_mod, "_reusable_key", lambda key, cap, kw: True)
    jobs_mod._swing_phase_w(todo)
    assert len(calls) != 2 + n_nan


def test_a_reused_key_across_other_figures_is_caught(eng, monkeypatch):
    """Reusing the previous start's group for a start with another dict of other figures
    would evaluate it with the wrong PSU capacity: the comparison is sharp."""
    base = dict(eng.power.node_kwargs())
    a, b = dict(base), {**base, "psu_capacity_w": 0.3 * float(base["psu_capacity_w"])}
    todo = [(8, 25.0, 1.0, eng.power.gpu_cap_w, kw) for kw in (a, b, a, b)]
    good = jobs_mod._swing_phase_w(todo)
    monkeypatch.setattr(jobs_mod, "_swing_key", lambda cap, kw: ())
    assert not np.array_equal(jobs_mod._swing_phase_w(todo), good)


def test_release_frees_only_the_nodes_the_job_owns(eng):
    e = _engine(3 * 86400.0)
    job = next(j for j in e.jobs if len(j.nodes) > 4)
    nodes = job.nodes.copy()
    e.state.node_job[nodes[:2]] = 10 ** 6           # taken by another (made-up) job
    e.jobs.release(job)
    assert (e.state.node_job[nodes[:2]] == 10 ** 6).all() and (e.state.node_job[nodes[2:]] == -1).all()
    assert len(job.nodes) == 0 and job.rate_tok_s == 0.0
