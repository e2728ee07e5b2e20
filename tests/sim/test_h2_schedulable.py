"""The scheduler's restart path (issue 19, H2): ``node_schedulable`` patched write by write
with what a scalar write to ``node_job`` says (a job index >= 0: held; a value < 0: free where
in service), and the free count per unit from the packed mask's popcount. Each against its
from-scratch reference after random sequences of writes; each shown failing when broken."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import twin
from twin.sim import scheduler as sched
from twin.sim import state as state_mod
from twin.sim.state import ClusterState

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _formula(s: ClusterState) -> np.ndarray:
    """``node_schedulable`` by its rule on plain copies of the fields."""
    on = (np.asarray(s.rack_powered) & ~np.asarray(s.rack_tripped) & ~np.asarray(s.rack_unfed)
          & ~np.asarray(s.rack_thermal_off))
    ok = (on & np.asarray(s.rack_ready))[s.node_rack]
    return ok & ~np.asarray(s.node_grid_down) & np.asarray(s.node_healthy) & (np.asarray(s.node_job) < 0)


def _formula_in_service(s: ClusterState) -> np.ndarray:
    """Up and burned in, by the rule on plain copies of the fields."""
    on = (np.asarray(s.rack_powered) & ~np.asarray(s.rack_tripped) & ~np.asarray(s.rack_unfed)
          & ~np.asarray(s.rack_thermal_off))
    return (on & np.asarray(s.rack_ready))[s.node_rack] & ~np.asarray(s.node_grid_down) & np.asarray(s.node_healthy)


def _state(n_racks: int = 32, per_rack: int = 4) -> ClusterState:
    s = ClusterState(node_rack=np.repeat(np.arange(n_racks), per_rack), n_feeds=2, n_sus=n_racks // 2,
                     psu_capacity_w=1.0)
    s.rack_delivered[:] = True
    s.rack_powered[:] = True
    s.rack_ready[: n_racks - 2] = True
    return s


def _write(s: ClusterState, rng: np.random.Generator) -> None:
    """One write the way the components write, weighted to the scheduler's and the jobs'
    scalar writes of ``node_job`` (held by a job, given back), overlapping each other."""
    n = len(s.node_rack)
    kind = int(rng.integers(14))
    nodes = rng.integers(0, n, int(rng.integers(1, 12)))       # repeats allowed
    if kind < 4:                                                # a job takes nodes (index >= 0)
        s.node_job[nodes] = [int(rng.integers(0, 9)), np.int64(rng.integers(0, 9)),
                             np.intp(0), np.uint8(3)][kind]
    elif kind < 7:                                              # nodes given back (< 0)
        s.node_job[nodes] = [-1, np.int64(-1), np.int32(-7)][kind - 4]
    elif kind == 7:                                             # an array of job indices
        s.node_job[nodes] = rng.integers(-1, 4, len(nodes))
    elif kind == 8:                                             # one node, a scalar each way
        s.node_job[int(rng.integers(n))] = int(rng.integers(-1, 3))
    elif kind == 9:                                             # a boolean mask, a slice
        if rng.random() < 0.5:
            s.node_job[rng.random(n) < 0.1] = int(rng.integers(-1, 3))
        else:
            a = int(rng.integers(n))
            s.node_job[a:a + 5] = int(rng.integers(-1, 3))
    elif kind == 10:                                            # failures and repairs
        s.node_healthy[nodes] = bool(rng.integers(2))
    elif kind == 11:
        s.node_healthy[int(rng.integers(n))] = bool(rng.integers(2))
    elif kind == 12:                                            # the grid drops or returns nodes
        s.node_grid_down[nodes] = rng.random(len(nodes)) < 0.5
    else:                                                       # a rack, a float scalar, a whole field
        r = int(rng.integers(3))
        if r == 0:
            s.rack_tripped[int(rng.integers(len(s.rack_tripped)))] = bool(rng.integers(2))
        elif r == 1:
            s.node_job[nodes] = 2.0                             # not an integer: no hint
        else:
            s.node_job = np.where(rng.random(n) < 0.3, rng.integers(0, 3, n), -1)


@pytest.mark.parametrize("seed", range(8))
def test_patched_schedulable_mask_equals_the_rule_after_random_writes(seed):
    """After every few writes (many to the same nodes, in both directions, between reads),
    the mask equals its rule; a mask handed out earlier keeps its values."""
    rng = np.random.default_rng(seed)
    s = _state()
    held, patched = [], 0
    real = ClusterState._patch_schedulable

    def counting(self, val, writes):
        nonlocal patched
        patched += 1
        return real(self, val, writes)
    ClusterState._patch_schedulable = counting
    try:
        for step in range(600):
            for _ in range(int(rng.integers(1, 6))):
                _write(s, rng)
            if rng.random() < 0.6:
                got = s.node_schedulable
                np.testing.assert_array_equal(got, _formula(s), err_msg=f"after step {step}")
                assert not got.flags.writeable
                ins = _formula_in_service(s)                    # the private flags kept with it
                np.testing.assert_array_equal(s._in_svc, ins, err_msg=f"in service after step {step}")
                held.append((got, got.copy()))
    finally:
        ClusterState._patch_schedulable = real
    for got, snap in held:
        np.testing.assert_array_equal(got, snap)
    assert patched > 100                                       # the patch path ran, often


@pytest.mark.parametrize("wrong", ["busy_is_free", "free_is_busy", "no_order", "no_service"])
def test_a_wrong_patch_is_caught(wrong, monkeypatch):
    """A hint read the wrong way round, the writes applied with the hinted ones last (not in
    the order written), or the in-service flags not patched, leaves the mask different from
    its rule."""
    if wrong == "busy_is_free":
        monkeypatch.setattr(state_mod, "_job_hint",
                            lambda v: -1 if isinstance(v, (int, np.integer)) and v >= 0 else 0)
    elif wrong == "free_is_busy":
        monkeypatch.setattr(state_mod, "_job_hint",
                            lambda v: 1 if isinstance(v, (int, np.integer)) and v < 0 else 0)
    elif wrong == "no_service":
        real_patch = ClusterState._patch_schedulable

        def unpatched(self, val, writes):           # the flags as they were before the patch
            ins = self._in_svc.copy()
            real_patch(self, val, writes)
            object.__setattr__(self, "_in_svc", ins)
        monkeypatch.setattr(ClusterState, "_patch_schedulable", unpatched)
    else:
        real = ClusterState._patch_schedulable

        def reordered(self, val, writes):
            real(self, val, [w for w in writes if w[1] == 0] + [w for w in writes if w[1] != 0])
        monkeypatch.setattr(ClusterState, "_patch_schedulable", reordered)
    with pytest.raises(AssertionError):
        for seed in range(8):
            rng = np.random.default_rng(seed)
            s = _state()
            for _ in range(400):
                for _ in range(int(rng.integers(1, 6))):
                    _write(s, rng)
                np.testing.assert_array_equal(s.node_schedulable, _formula(s))


def test_the_restart_sequence_patches_with_hints():
    """The scheduler's place/release writes are logged with their hints, the read between
    them patches (no whole re-evaluation) and equals the rule."""
    s = _state(256, 4)
    s.node_schedulable                                         # noqa: B018 (first evaluation)
    s.node_job[np.arange(0, 64)] = 3                           # a placement
    s.node_healthy[70] = False                                 # a failure elsewhere
    s.node_job[np.arange(0, 32)] = -1                          # a release
    assert [h for name, _, h in s._log[-3:]] == [1, 0, -1]
    seen = []
    real = ClusterState._schedulable_whole
    try:
        ClusterState._schedulable_whole = lambda self: seen.append(1) or real(self)
        np.testing.assert_array_equal(s.node_schedulable, _formula(s))
    finally:
        ClusterState._schedulable_whole = real
    assert seen == []                                          # patched, not re-evaluated whole


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([8, 16, 24, 32, 64, 128, 256, 512]), st.integers(1, 40), st.integers(0, 2 ** 32 - 1),
       st.sampled_from([0.0, 0.5, 0.97, 1.0]), st.booleans())
def test_packed_count_and_byte_sum_are_the_bincount(su_nodes, n_sus, seed, p_free, popcount):
    """The free count per unit through the packed mask's popcount (numpy >= 2) and through
    the byte sum (the fallback; units below 256 nodes), on whole units entirely free, empty
    or in between, contiguous or strided, equals the bincount."""
    rng = np.random.default_rng(seed)
    n = n_sus * su_nodes
    p_unit = np.where(rng.random(n_sus) < 0.3, 1.0, p_free)
    free = rng.random(n) < np.repeat(p_unit, su_nodes)
    if rng.random() < 0.5:
        free = np.repeat(free, 2)[::2]
    want = np.bincount(np.arange(n)[free] // su_nodes, minlength=n_sus)
    real = sched._bitwise_count
    try:
        sched._bitwise_count = real if popcount else None
        got = sched.free_nodes_per_su(free, su_nodes, n_sus)
    finally:
        sched._bitwise_count = real
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.intp


def test_the_packed_count_is_the_path_taken(monkeypatch):
    """Units of 32 nodes (the million-GPU site's) are counted on the packed mask."""
    if sched._bitwise_count is None:
        pytest.skip("numpy without popcount")
    calls = []
    real = np.packbits
    monkeypatch.setattr(np, "packbits", lambda a: calls.append(1) or real(a))
    free = np.random.default_rng(0).random(32 * 50) < 0.5
    sched.free_nodes_per_su(free, 32, 50)
    assert calls == [1]


def _fingerprint(res):
    ds = res.dataset
    return ({k: ds[k].values for k in ds.data_vars}, res.events.to_csv(index=False), res.kpis)


def test_a_run_with_the_patched_mask_equals_whole_evaluation(monkeypatch):
    """30 days of Vela at ten times the failure rate (dozens of restarts): the run with the
    patched mask equals the run that evaluates the mask whole at every read."""
    s = twin.load_scenario(SCENARIOS / "vela.yaml", ["simulation.duration_days=30", "failures.rate_scale=10"])
    fast = twin.simulate(s)
    monkeypatch.setattr(ClusterState, "_schedulable_writes", lambda self, since: None)
    slow = twin.simulate(s)
    (a, ea, ka), (b, eb, kb) = _fingerprint(fast), _fingerprint(slow)
    assert ea == eb and str(ka) == str(kb)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_writes_of_one_node_by_any_index_kind_are_seen():
    """One node written by a Python int, a numpy integer or a negative index (logged as an
    int, no array), and a boolean scalar key (numpy writes every element: logged as a whole
    write), between reads of every derived array: each equals its formula."""
    from test_state_cache import fresh

    s = _state(16, 4)
    n = len(s.node_rack)
    keys = [3, np.int64(5), np.intp(-2), -n, True, np.True_, 7]
    for step, key in enumerate(keys * 3):
        for name in ("node_healthy", "node_grid_down", "node_job", "node_job_phase", "node_repairing"):
            arr = getattr(s, name)
            arr[key] = {"node_job": step % 3 - 1, "node_job_phase": step % 4}.get(name, step % 2 == 0)
            want = fresh(s)
            for mask in want:
                np.testing.assert_array_equal(getattr(s, mask), want[mask], err_msg=f"{mask}, {name}[{key!r}]")


def test_healthy_units_are_kept_only_with_a_fixed_array():
    """The healthy-unit mask is kept with a read-only array that owns its data (the
    scheduler's copy per write of su_degraded), never with a writeable one or a view: a
    writeable array changed in place, or a read-only view of one, gives the new answer."""
    deg = np.zeros(6, int)
    assert sched._healthy_units(deg) is None
    deg[2] = 1                                              # changed in place: seen
    np.testing.assert_array_equal(sched._healthy_units(deg), deg == 0)
    fixed = np.array([0, 1, 0, 0, 2, 0])
    fixed.flags.writeable = False
    first = sched._healthy_units(fixed)
    np.testing.assert_array_equal(first, fixed == 0)
    assert sched._healthy_units(fixed) is first             # kept
    base = np.zeros(6, int)
    view = base[:]
    view.flags.writeable = False
    assert sched._healthy_units(view) is None
    base[4] = 3                                             # written through its base: seen
    np.testing.assert_array_equal(sched._healthy_units(view), base == 0)
    np.testing.assert_array_equal(sched._healthy_units(fixed), fixed == 0)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_grouped_placement_with_kept_healthy_units_is_the_reference(seed):
    """Placements against read-only failed-rail arrays, a new one after each change (as the
    scheduler passes them), interleaved with writeable ones: the reference's nodes."""
    rng = np.random.default_rng(seed)
    su_nodes, n_sus = 8, 24
    node_su = np.arange(su_nodes * n_sus) // su_nodes
    deg = np.zeros(n_sus, int)
    for _ in range(12):
        if rng.random() < 0.4:
            deg = deg.copy()
            deg[int(rng.integers(n_sus))] = int(rng.integers(0, 3))
        arg = deg.copy()
        if rng.random() < 0.7:
            arg.flags.writeable = False
        p_unit = rng.choice([0.0, 0.5, 1.0], size=n_sus, p=[0.3, 0.2, 0.5])
        free = rng.random(su_nodes * n_sus) < np.repeat(p_unit, su_nodes)
        want = int(rng.integers(1, 8 * su_nodes))
        ref = sched.place_nodes_reference(free, node_su, arg, want)
        got = sched.place_nodes_grouped(free, su_nodes, arg, want)
        assert (got is None) == (ref is None)
        if ref is not None:
            np.testing.assert_array_equal(got, ref)


def test_read_only_index_arrays_are_logged_without_a_copy_and_others_with_one():
    """A read-only index array that owns its memory (or a view of one: a job's nodes) is
    logged as is; a writeable one, or a read-only view of a writeable array, is copied, so
    that the caller writing its indices afterwards does not change what the log says (the
    masks stay equal to their rule)."""
    from test_state_cache import fresh

    s = _state(256, 4)
    s.node_phase                                                # noqa: B018 (first evaluations)
    s.node_schedulable                                          # noqa: B018
    owned = np.arange(40, 72, dtype=np.intp)
    owned.flags.writeable = False
    s.node_job[owned[:16]] = 2
    assert s._log[-1][1].base is owned                          # the view itself, no copy
    loose = np.arange(100, 110)
    s.node_job[loose] = 3
    view = loose[:5]
    view.flags.writeable = False
    s.node_job_phase[view] = 4
    assert s._log[-2][1] is not loose and s._log[-1][1] is not view
    loose[:] = np.arange(500, 510)                              # the caller reuses its array
    want = fresh(s)
    for name in ("node_schedulable", "node_phase", "node_busy"):
        np.testing.assert_array_equal(getattr(s, name), want[name], err_msg=name)


def test_the_scheduler_hands_out_read_only_placements():
    """Every placement in a run with failures is a read-only intp array of its own (the
    jobs' nodes and spares are views of it), and the run equals one where the state copies
    every index array it logs."""
    s = twin.load_scenario(SCENARIOS / "vela.yaml", ["simulation.duration_days=10", "failures.rate_scale=10"])
    from twin.sim.engine import Engine

    eng = Engine(s)
    seen = []
    real = sched._frozen_copy

    def frozen_copy(nodes):
        out = real(nodes)
        seen.append(out)
        return out
    sched._frozen_copy = frozen_copy
    try:
        fast = eng.run()
    finally:
        sched._frozen_copy = real
    assert len(seen) > 10
    for out in seen:
        assert not out.flags.writeable and out.base is None and out.dtype == np.intp
    real_frozen = state_mod._frozen
    state_mod._frozen = lambda a: False
    try:
        slow = twin.simulate(s)
    finally:
        state_mod._frozen = real_frozen
    (a, ea, ka), (b, eb, kb) = _fingerprint(fast), _fingerprint(slow)
    assert ea == eb and str(ka) == str(kb)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_the_log_counts_the_indices_it_holds_through_trims():
    """The write log's count of the node indices it holds (which bounds its memory) equals the
    indices in its entries after trims caused by writes to fields no mask reads (logged
    without nodes: on a large site those fill the log to its length limit first) as well as by
    mask fields: a trim from such a write once reset the count as if the log had held none."""
    from twin.sim import state as state_mod
    s = _state(n_racks=1024)
    n = len(s.node_rack)
    rng = np.random.default_rng(5)
    for i in range(3 * state_mod._LOG_MAX):
        if i % 20:
            s.node_clock[int(rng.integers(0, n))] = 0.9            # no mask reads it
        else:
            s.node_job[int(rng.integers(0, n))] = int(rng.integers(-1, 3))
        if i % 97 == 0:
            assert s._held[0] == sum(state_mod._size(k) for _, k, _ in s._log)
    assert s._held[0] == sum(state_mod._size(k) for _, k, _ in s._log)
    assert s._log_base > 0 and s._held[0] > 0                     # trimmed along the way
