"""The scheduler's grouped placement (issue 19) is the node-by-node rule, node for node:
random free masks, unit sizes and failed rails, and whole runs with failures, give the same
nodes in the same order whichever path computes them."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import twin
from twin.sim import scheduler as sched
from twin.sim.scheduler import (
    FreeCounter,
    free_nodes_per_su,
    place_nodes_grouped,
    place_nodes_reference,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@st.composite
def free_states(draw):
    """A free mask over whole units plus maybe a partial last unit, with failed rails and
    units that are full, empty or in between (the rule's ties and its stop at an empty unit)."""
    su_nodes = draw(st.integers(1, 12))
    n_sus = draw(st.integers(1, 14))
    n = draw(st.integers((n_sus - 1) * su_nodes + 1, n_sus * su_nodes))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    p_unit = rng.choice([0.0, 0.3, 0.8, 1.0], size=n_sus)        # per-unit fill, so ties happen
    free = rng.random(n) < np.repeat(p_unit, su_nodes)[:n]
    degraded = (rng.random(n_sus) < draw(st.sampled_from([0.0, 0.3, 1.0]))) * rng.integers(1, 3, n_sus)
    want = draw(st.integers(1, n + 2))
    return free, su_nodes, degraded, want


@given(free_states())
def test_grouped_placement_picks_the_reference_nodes_in_the_reference_order(case):
    free, su_nodes, degraded, want = case
    node_su = np.arange(len(free)) // su_nodes
    ref = place_nodes_reference(free, node_su, degraded, want)
    fast = place_nodes_grouped(free, su_nodes, degraded, want)
    if ref is None:
        assert fast is None
    else:
        assert fast is not None and fast.dtype.kind == "i"
        np.testing.assert_array_equal(fast, ref)
        assert free[fast].all() and len(np.unique(fast)) == want


@given(free_states())
def test_free_count_per_unit_is_the_bincount(case):
    free, su_nodes, degraded, _ = case
    counts = free_nodes_per_su(free, su_nodes, len(degraded))
    node_su = np.arange(len(free)) // su_nodes
    np.testing.assert_array_equal(counts, np.bincount(node_su[free], minlength=len(degraded)))


@given(st.integers(1, 9), st.integers(1, 8), st.integers(0, 2 ** 32 - 1))
def test_free_counter_follows_a_sequence_of_masks(su_nodes, n_sus, seed):
    """Read-only masks that change at a few nodes, at many, not at all (the same object
    again), and writeable per-model masks in between: every count is the bincount."""
    rng = np.random.default_rng(seed)
    n = n_sus * su_nodes - int(rng.integers(0, su_nodes))
    node_su = np.arange(n) // su_nodes
    count = FreeCounter(su_nodes, n_sus)
    free = rng.random(n) < 0.5
    for _ in range(12):
        kind = rng.integers(0, 4)
        if kind == 0:                                   # a few nodes change
            free = free.copy()
            free[rng.integers(0, n, 2)] ^= True
        elif kind == 1:                                 # a new mask altogether
            free = rng.random(n) < rng.random()
        elif kind == 2:                                 # a writeable mask (not remembered)
            w = rng.random(n) < 0.5
            np.testing.assert_array_equal(count(w), np.bincount(node_su[w], minlength=n_sus))
        free.flags.writeable = False
        np.testing.assert_array_equal(count(free), np.bincount(node_su[free], minlength=n_sus))


def test_the_rule_stops_at_the_first_unit_without_a_free_node():
    """A healthy unit with no free node ends the search before the units with a failed rail
    (the rule as it stands; the grouped path keeps it)."""
    free = np.array([1, 1, 0, 0, 1, 1], bool)          # units of 2: free 2, 0, 2
    degraded = np.array([0, 0, 1])
    node_su = np.arange(6) // 2
    assert place_nodes_reference(free, node_su, degraded, 3) is None
    assert place_nodes_grouped(free, 2, degraded, 3) is None
    np.testing.assert_array_equal(place_nodes_grouped(free, 2, degraded, 2), [0, 1])


def _fingerprint(res):
    ds = res.dataset
    return ({k: ds[k].values for k in ds.data_vars}, res.events.to_csv(index=False), res.kpis)


@pytest.mark.parametrize("scenario, min_calls", [("vela.yaml", 50), ("sites/mixed_hall.yaml", 20)])
def test_a_run_with_grouped_placement_equals_the_node_by_node_run(scenario, min_calls, monkeypatch):
    """30 days at ten times the failure rate (dozens of re-placements; the mixed hall places
    on per-model masks): grouped placement and the node-by-node reference give identical
    results; the grouped path is the one the engine takes."""
    s = twin.load_scenario(SCENARIOS / scenario, ["simulation.duration_days=30", "failures.rate_scale=10"])
    calls = []
    real = sched.place_nodes_grouped
    monkeypatch.setattr(sched, "place_nodes_grouped", lambda *a, **k: calls.append(1) or real(*a, **k))
    fast = twin.simulate(s)
    n_grouped = len(calls)

    def reference(free, su_nodes, su_degraded, want, counts=None):
        return place_nodes_reference(free, np.arange(len(free)) // su_nodes, su_degraded, want)
    monkeypatch.setattr(sched, "place_nodes_grouped", reference)
    slow = twin.simulate(s)
    assert n_grouped >= min_calls
    (a, ea, ka), (b, eb, kb) = _fingerprint(fast), _fingerprint(slow)
    assert ea == eb
    assert str(ka) == str(kb)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@given(st.sampled_from([8, 16, 24, 32, 64, 128, 248]), st.integers(1, 40), st.integers(0, 2 ** 32 - 1),
       st.sampled_from([0.0, 0.1, 0.5, 0.97, 1.0]), st.booleans())
def test_word_wise_free_count_is_the_bincount(su_nodes, n_sus, seed, p_free, strided):
    """The fast count (the mask's bytes summed as 64-bit words, units of a multiple of 8
    nodes) equals the bincount, with units entirely free (the largest sum a byte holds), empty
    or in between, on a contiguous mask, a strided view and an unaligned slice."""
    rng = np.random.default_rng(seed)
    n = n_sus * su_nodes
    p_unit = np.where(rng.random(n_sus) < 0.3, 1.0, p_free)
    free = rng.random(n) < np.repeat(p_unit, su_nodes)
    if strided:                                             # a view that is not contiguous
        free = np.repeat(free, 2)[::2]
    else:                                                   # a slice one byte in: unaligned words
        free = np.concatenate(([False], free))[1:]
    node_su = np.arange(n) // su_nodes
    counts = free_nodes_per_su(free, su_nodes, n_sus)
    np.testing.assert_array_equal(counts, np.bincount(node_su[free], minlength=n_sus))
    assert counts.dtype == np.intp
    free.flags.writeable = False
    np.testing.assert_array_equal(FreeCounter(su_nodes, n_sus)(free), counts)


def test_word_wise_count_is_the_path_taken(monkeypatch):
    """Units of 32 nodes (the million-GPU site's) are counted word-wise: the segmented sum
    is not called."""
    def no_reduceat(*a, **k):
        raise AssertionError("segmented sum called")
    free = np.random.default_rng(0).random(32 * 50) < 0.5
    expected = np.bincount(np.arange(len(free))[free] // 32, minlength=50)

    class NumpyWithoutReduceat:
        add = SimpleNamespace(reduceat=no_reduceat)

        def __getattr__(self, name):
            return getattr(np, name)
    monkeypatch.setattr(sched, "np", NumpyWithoutReduceat())
    np.testing.assert_array_equal(free_nodes_per_su(free, 32, 50), expected)
    with pytest.raises(AssertionError, match="segmented"):
        free_nodes_per_su(free[:-1], 32, 50)                # a partial last unit: the sum


@pytest.mark.parametrize("whole_first", [True, False])
def test_whole_free_units_first_and_the_histogram_path_pick_the_reference_nodes(monkeypatch, whole_first):
    """With ``whole_units_first`` (whole free healthy units taken at once when they hold the
    job) and without it (every placement through the histogram): the reference's nodes, on
    masks where the whole units do, and do not, hold the job."""
    monkeypatch.setattr(sched, "whole_units_first", whole_first)
    rng = np.random.default_rng(4)
    su_nodes, n_sus = 8, 64
    node_su = np.arange(su_nodes * n_sus) // su_nodes
    taken = 0
    for _ in range(300):
        p_unit = rng.choice([0.0, 0.5, 1.0], size=n_sus, p=[0.5, 0.2, 0.3])
        free = rng.random(su_nodes * n_sus) < np.repeat(p_unit, su_nodes)
        degraded = (rng.random(n_sus) < 0.1) * rng.integers(1, 3, n_sus)
        want = int(rng.integers(1, 20 * su_nodes))
        ref = place_nodes_reference(free, node_su, degraded, want)
        fast = place_nodes_grouped(free, su_nodes, degraded, want)
        assert (fast is None) == (ref is None)
        if ref is not None:
            np.testing.assert_array_equal(fast, ref)
            counts = np.bincount(node_su[free], minlength=n_sus)
            taken += int(np.count_nonzero((counts == su_nodes) & (degraded == 0)) * su_nodes >= want)
    assert taken > 50                  # the whole-unit case is common in the sample
