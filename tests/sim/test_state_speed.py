"""The state's fast paths (issue 19): int8 selection by arithmetic instead of ``np.where``,
and rack-level arrays cached by the rack fields' write count, so node writes (the scheduler's,
the jobs', the failures') never re-evaluate them. ``tests/sim/test_state_cache.py`` checks
every derived array against its formula after random writes; these tests check that the
fast paths are the ones taken and break when their rule is broken."""

from __future__ import annotations

import numpy as np
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
