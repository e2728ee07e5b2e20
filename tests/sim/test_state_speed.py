"""The state's fast paths (issue 19): int8 selection by arithmetic instead of ``np.where``,
and rack-level arrays cached by the rack fields' write count, so node writes (the scheduler's,
the jobs', the failures') never re-evaluate them. ``tests/sim/test_state_cache.py`` checks
every derived array against its formula after random writes; these tests check that the
fast paths are the ones taken and break when their rule is broken."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from twin.sim import state as state_mod
from twin.sim.state import ClusterState, _pick_int8

INT8 = hnp.arrays(np.int8, 64, elements=st.integers(-128, 127))


@given(hnp.arrays(bool, 64), INT8, INT8, st.integers(-128, 127), st.integers(-128, 127))
def test_int8_pick_is_np_where(cond, a, b, sa, sb):
    """``b + (a - b) * cond`` wraps modulo 256 in between but lands on a or b, over the whole
    int8 range, for arrays and scalars alike."""
    for x, y in ((a, b), (np.int8(sa), np.int8(sb)), (a, np.int8(sb)), (np.int8(sa), b)):
        with np.errstate(over="ignore"):
            got = _pick_int8(cond, x, y)
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, np.where(cond, x, y))


def _state(n_nodes: int = 64, per_rack: int = 4) -> ClusterState:
    st_ = ClusterState(node_rack=np.arange(n_nodes) // per_rack, n_feeds=2, n_sus=n_nodes // 8, psu_capacity_w=1.0)
    st_.rack_delivered[:] = True
    st_.rack_powered[:] = True
    st_.rack_ready[::2] = True
    return st_


def test_rack_level_arrays_survive_node_writes(monkeypatch):
    """Thousands of node writes (enough to age the write log out) between reads: the
    node-level expansion of the racks' state is gathered once, and the node masks stay equal
    to their formulas."""
    st_ = _state()
    gathers = []
    real = ClusterState._rack_derived

    def counting(self, name, compute):
        return real(self, name, lambda: gathers.append(name) or compute())
    monkeypatch.setattr(ClusterState, "_rack_derived", counting)
    rng = np.random.default_rng(1)
    st_.node_schedulable                                    # noqa: B018 (first evaluation)
    first = list(gathers)
    for _ in range(3 * state_mod._LOG_MAX // 100):
        for _ in range(100):
            st_.node_job[rng.integers(0, 64, 8)] = rng.integers(-1, 3)
            st_.node_job_phase[rng.integers(0, 64, 8)] = 2
        st_.node_healthy[int(rng.integers(64))] = bool(rng.integers(2))
        free = st_.node_schedulable
        ok = (st_.rack_powered & st_.rack_ready)[st_.node_rack]
        np.testing.assert_array_equal(free, ok & st_.node_healthy & (st_.node_job < 0))
    assert gathers == first and "_node_rack_ok" in first


def test_a_rack_write_of_any_kind_refreshes_the_rack_arrays():
    """Index writes, writes through a view, in-place operators and whole assignments of a
    rack field each give new rack-level arrays (the count the cache keys on moves)."""
    st_ = _state()
    writes = [
        lambda s: s.rack_tripped.__setitem__(3, True),
        lambda s: s.rack_tripped[1:].__setitem__(0, True),
        lambda s: s.rack_unfed.__ior__(np.arange(16) == 5),
        lambda s: setattr(s, "rack_thermal_off", np.arange(16) == 7),
        lambda s: s.rack_ready.__setitem__(np.arange(16) < 4, False),
    ]
    for write in writes:
        before = st_.node_up, st_.node_in_service, st_.rack_state
        write(st_)
        after = st_.node_up, st_.node_in_service, st_.rack_state
        assert any(not np.array_equal(x, y) for x, y in zip(before, after, strict=True))
        on = (st_.rack_powered & ~st_.rack_tripped & ~st_.rack_unfed & ~st_.rack_thermal_off)
        np.testing.assert_array_equal(st_.node_up, on[st_.node_rack] & st_.node_healthy & ~st_.node_grid_down)
        np.testing.assert_array_equal(st_.node_in_service, (on & st_.rack_ready)[st_.node_rack] & st_.node_healthy)


# --- reads past writes of fields no derived array reads (issue 19, this session) ------------

#: tracked fields no derived array reads: the sampler's own (inlets, clocks, acceleration), the
#: power and grid figures, the repair flag and the rack on-times
OTHER_FIELDS = ("rack_inlet_c", "node_clock", "node_accel", "psu_capacity_w", "brake_clock", "feed_up",
                "su_degraded", "node_repairing", "rack_on_since")


def _other_write(st_: ClusterState, rng: np.random.Generator) -> None:
    """A write to a field no derived array reads, in one of the ways the components write."""
    name = str(rng.choice(OTHER_FIELDS))
    if name in ("psu_capacity_w", "brake_clock"):
        setattr(st_, name, float(rng.choice([1.0, 0.5])) if rng.random() < 0.5
                else rng.uniform(0.5, 1.0, len(st_.node_rack)))
        return
    arr = getattr(st_, name)
    if rng.random() < 0.5:
        arr[int(rng.integers(len(arr)))] = arr.dtype.type(rng.integers(2))
    else:
        setattr(st_, name, np.array(arr))


def _mixed_writes(seed: int, steps: int = 300):
    """(state, rng, step) after each of ``steps`` rounds of writes: mask inputs and other fields."""
    from test_state_cache import random_write

    rng = np.random.default_rng(seed)
    st_ = ClusterState(node_rack=np.repeat(np.arange(24), 4), n_feeds=2, n_sus=3, psu_capacity_w=6000.0)
    st_.rack_delivered[:] = True
    st_.rack_powered[:20] = True
    st_.rack_ready[:16] = True
    for step in range(steps):
        for _ in range(int(rng.integers(1, 4))):
            (random_write if rng.random() < 0.3 else _other_write)(st_, rng)
        yield st_, rng, step


def _masks_follow(seed: int, calls: list | None = None) -> tuple[int, int]:
    """Reads every derived array after mixed writes and compares it with its formula; returns
    (reads that did not read the write log, reads); ``calls`` grows by one per log read."""
    from test_state_cache import fresh

    calls = [] if calls is None else calls
    skipped = reads = 0
    for st_, rng, step in _mixed_writes(seed):
        if rng.random() < 0.8:
            want = fresh(st_)
            for name in want:
                logged = len(calls)
                got = getattr(st_, name)
                np.testing.assert_array_equal(got, want[name], err_msg=f"{name} after step {step}")
                reads += 1
                skipped += len(calls) == logged
    return skipped, reads


@pytest.mark.parametrize("seed", range(3))
def test_masks_equal_formulas_after_writes_of_other_fields(seed, monkeypatch):
    """Between reads the sampler writes inlets, clocks and acceleration (no derived array reads
    them): a read then skips the write log (its count of mask-input writes is unchanged) and
    still equals the formula, after any mix of writes."""
    calls = []
    real = ClusterState._written

    def written(self, *a):
        calls.append(1)
        return real(self, *a)
    monkeypatch.setattr(ClusterState, "_written", written)
    skipped, reads = _masks_follow(seed, calls)
    assert reads > 1000 and skipped > reads / 4        # the skip ran, often


def test_a_mask_input_left_out_of_the_count_is_caught(monkeypatch):
    """A mask input whose writes do not move the count (node_job left out) leaves node_busy
    stale: the comparison with the formula fails."""
    monkeypatch.setattr(state_mod, "_MASK_DEP_SET", state_mod._MASK_DEP_SET - {"node_job"})
    with pytest.raises(AssertionError):
        for seed in range(3):
            _masks_follow(seed)


def _fresh_key(st_: ClusterState) -> tuple:
    """The physics key computed from scratch (every cached byte string dropped)."""
    st_._bytes.clear()
    return st_.physics_inputs()


def test_physics_key_equals_a_fresh_key_after_mixed_writes():
    from test_state_cache import fresh

    hits = 0
    for st_, rng, _ in _mixed_writes(5, 400):
        if rng.random() < 0.7:
            before = st_._bytes.get("physics_inputs")
            got = st_.physics_inputs()
            hits += before is not None and got is before[2]
            assert got == _fresh_key(st_)
            assert got[:2] == (fresh(st_)["node_phase"].tobytes(), fresh(st_)["rack_on"].tobytes())
    assert hits > 20                                   # keys reused across other writes


def test_a_stale_physics_key_is_caught(monkeypatch):
    """Phase writes that do not move the count (node_job_phase left out of the mask inputs)
    give back the old key: it differs from a fresh one."""
    from test_state_cache import fresh

    monkeypatch.setattr(state_mod, "_MASK_DEP_SET", state_mod._MASK_DEP_SET - {"node_job_phase"})
    st_ = _state()
    st_.node_job[:8] = 1
    st_.node_job_phase[:8] = 2
    k0 = st_.physics_inputs()
    st_.node_accel[0] = 2.0                            # another write: the key is looked up again
    st_.node_job_phase[:8] = 3
    assert st_.physics_inputs() is k0 and k0[0] != fresh(st_)["node_phase"].tobytes()
