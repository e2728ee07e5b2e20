"""The sampler's rack power summed from each rack's one value where its nodes share its phase,
and each rack's hottest GPU taken from its one value except in the racks holding a node whose
phase differs (issue 19, million-GPU speed pass), against the per-node arrays they replace
(``_by_rack`` per node then ``_rack_sum``'s column adds; ``_rack_max``'s column folds): bit
for bit over random racks, values spanning many magnitudes, signed zeros, NaN and
infinities. Each comparison fails when the fast path is broken on purpose."""

from __future__ import annotations

import numpy as np
import pytest

from twin.sim.sampler import RACK_MAX_COLUMNS, Sampler

#: inf * 0 and inf - inf in the random values (both paths alike)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _sampler() -> Sampler:
    s = Sampler.__new__(Sampler)        # the per-rack helpers read no engine
    s.node_power_per_rack, s._split, s.rack_sum_columns, s.rack_max_columns = True, None, True, True
    s._lead_t = None
    return s


def _values(rng, n: int) -> np.ndarray:
    v = rng.uniform(0.0, 1.0, n) * 10.0 ** rng.integers(-3, 12, n)
    pick = rng.random(n)
    v[pick < 0.02] = -0.0
    v[(pick >= 0.02) & (pick < 0.03)] = np.nan
    v[(pick >= 0.03) & (pick < 0.04)] = np.inf
    v[(pick >= 0.04) & (pick < 0.05)] = -np.inf
    return v


def _case(rng, racks: int, k: int, odd_fraction: float):
    """Phases mostly uniform per rack, and an elementwise f of (phase, rack value) whose
    values span many magnitudes (a table per phase times the rack's value)."""
    lead = rng.integers(0, 7, racks).astype(np.int8)
    phase = np.repeat(lead, k)
    flip = rng.random(racks * k) < odd_fraction
    phase[flip] = rng.integers(0, 7, int(flip.sum()))
    phase.flags.writeable = False
    table = _values(rng, 7)
    rack_x = _values(rng, racks)

    def f(ph, x):
        return table[ph] * x + table[(ph + 1) % 7]
    return phase, rack_x, np.repeat(np.arange(racks), k), f


@pytest.mark.parametrize("k", range(2, RACK_MAX_COLUMNS + 1))
@pytest.mark.parametrize("odd_fraction", [0.0, 0.02, 0.3, 1.0])
def test_rack_sums_by_rack_equal_the_node_sums(k, odd_fraction):
    rng = np.random.default_rng(7 * k + int(100 * odd_fraction))
    for racks in (1, 5, 400):
        s = _sampler()
        phase, rack_x, node_rack, f = _case(rng, racks, k, odd_fraction)
        split = s._rack_split(phase, k)
        nodes = s._by_rack(f, split, phase, rack_x, node_rack, k)
        ref = s._rack_sum(nodes, node_rack, racks, k)
        assert _same(s._by_rack(f, split, phase, rack_x, node_rack, k, True), ref)


@pytest.mark.parametrize("k", range(2, RACK_MAX_COLUMNS + 1))
@pytest.mark.parametrize("odd_fraction", [0.0, 0.02, 0.3, 1.0])
def test_rack_max_by_rack_equals_the_column_fold(k, odd_fraction):
    rng = np.random.default_rng(11 * k + int(100 * odd_fraction))
    for racks in (1, 5, 400):
        s = _sampler()
        phase, rack_x, node_rack, f = _case(rng, racks, k, odd_fraction)
        lead, odd = s._rack_split(phase, k)
        t_lead = f(lead, rack_x)
        gpu_t = np.repeat(t_lead, k)
        gpu_t[odd] = f(phase[odd], rack_x[node_rack[odd]])
        first = np.arange(racks) * k
        ref = s._rack_max(gpu_t, first, k)
        s._lead_t = (gpu_t, t_lead, odd)
        assert _same(s._rack_max(gpu_t, first, k), ref)
        s._lead_t = (gpu_t.copy(), t_lead, odd)     # another array: the columns, as before
        assert _same(s._rack_max(gpu_t, first, k), ref)


def test_rack_sums_broken_are_caught():
    """The odd nodes left out (their racks summed as uniform) moves the sums."""
    rng = np.random.default_rng(3)
    s = _sampler()
    phase, rack_x, node_rack, f = _case(rng, 500, 3, 0.3)
    split = s._rack_split(phase, 3)
    ref = s._rack_sum(s._by_rack(f, split, phase, rack_x, node_rack, 3), node_rack, 500, 3)
    assert not _same(s._by_rack(f, (split[0], split[1][:0]), phase, rack_x, node_rack, 3, True), ref)


def test_rack_max_without_the_odd_racks_is_caught():
    rng = np.random.default_rng(4)
    s = _sampler()
    phase, rack_x, node_rack, f = _case(rng, 500, 4, 0.3)
    lead, odd = s._rack_split(phase, 4)
    t_lead = f(lead, rack_x)
    gpu_t = np.repeat(t_lead, 4)
    gpu_t[odd] = f(phase[odd], rack_x[node_rack[odd]])
    first = np.arange(500) * 4
    ref = s._rack_max(gpu_t, first, 4)
    s._lead_t = (gpu_t, t_lead, odd[:0])
    assert not _same(s._rack_max(gpu_t, first, 4), ref)


@pytest.mark.parametrize("k", range(2, 9))
@pytest.mark.parametrize("odd_fraction", [0.0, 0.01, 0.3, 1.0])
def test_rack_split_by_words_equals_the_columns(k, odd_fraction, monkeypatch):
    """Racks of one-byte codes compared as one word (k = 2, 4, 8) find the same odd nodes as
    the column compares, codes of every byte value included."""
    import twin.sim.sampler as sampler_mod
    rng = np.random.default_rng(31 * k + int(100 * odd_fraction))
    for racks in (1, 7, 3000):
        lead = rng.integers(-128, 128, racks).astype(np.int8)
        phase = np.repeat(lead, k)
        flip = rng.random(racks * k) < odd_fraction
        phase[flip] = rng.integers(-128, 128, int(flip.sum()))
        phase.flags.writeable = False
        got = _sampler()._rack_split(phase, k)
        monkeypatch.setattr(sampler_mod, "_RACK_WORDS", {})
        ref = _sampler()._rack_split(phase, k)
        monkeypatch.undo()
        assert _same(got[0], ref[0]) and _same(got[1], ref[1])


def test_rack_split_by_words_of_the_wrong_width_is_caught(monkeypatch):
    import twin.sim.sampler as sampler_mod
    rng = np.random.default_rng(2)
    phase = np.repeat(rng.integers(0, 7, 500).astype(np.int8), 4)
    flip = rng.random(2000) < 0.05
    phase[flip] = (phase[flip] + 1) % 7
    ref = _sampler()._rack_split(phase, 4)
    monkeypatch.setattr(sampler_mod, "_RACK_WORDS", {4: (np.uint32, np.uint32(0x00010101))})
    assert not _same(_sampler()._rack_split(phase, 4)[1], ref[1])


@pytest.mark.parametrize("m", range(1, RACK_MAX_COLUMNS + 2))
def test_rpp_load_by_blocks_equals_bincount(m):
    """The RPP loads the breakers check: column adds where the racks of each RPP are one
    contiguous block of m (m above RACK_MAX_COLUMNS, or racks out of order: bincount)."""
    import types
    rng = np.random.default_rng(50 + m)
    for rack_rpp in (np.repeat(np.arange(40), m), rng.permutation(np.repeat(np.arange(40), m))):
        s = _sampler()
        s._rpp_m = None
        s.__dict__["plant"] = types.SimpleNamespace(rack_rpp=rack_rpp, rpp_limit_w=np.ones(40))
        w = _values(rng, 40 * m)
        assert _same(s._rpp_load_w(w), np.bincount(rack_rpp, weights=w, minlength=40))
