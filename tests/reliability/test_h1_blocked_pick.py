"""The blocked node pick (issue 19) returns the index the reference searchsorted over the
full sequential cumulative sum returns, for every weight vector and uniform, or -1 (then
the sampler sums sequentially): zeros, ties, huge and tiny weights, uniforms that land
exactly on a cumulative value, and whole sampler runs at the million-GPU size."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import reliability
from twin.reliability.sampling import (
    ClusterFailureSampler,
    _block_ends,
    _pick,
    _pick_blocked,
)


def _blocks(w: np.ndarray, block: int) -> np.ndarray:
    nb = -(-w.size // block)
    b = np.zeros((nb, block))
    b.reshape(-1)[: w.size] = w
    return b


def _check(w: np.ndarray, u: float, block: int) -> bool:
    """True when the blocked pick decided (and then it must equal the reference)."""
    ref = _pick(np.cumsum(w), u)
    b = _blocks(w, block)
    j = _pick_blocked(b, _block_ends(b), w.size, u)
    assert j == -1 or j == ref, (j, ref)
    return j >= 0


_weight = st.one_of(
    st.just(0.0),
    st.just(1.0),
    st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False),
    st.floats(1e-12, 1e-6),
    st.sampled_from([0.5, 1.0 / 3.0, 2.0 ** -20, 1e300 / 4096, 5e-324]),
)


@settings(max_examples=400, deadline=None)
@given(w=st.lists(_weight, min_size=1, max_size=300).filter(lambda x: sum(x) > 0),
       u=st.floats(0.0, 1.0, exclude_max=True), block=st.sampled_from([1, 2, 3, 7, 16, 64]))
def test_blocked_pick_equals_reference(w, u, block):
    _check(np.array(w), u, block)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 5000), zeros=st.floats(0.0, 0.9),
       ties=st.booleans(), block=st.sampled_from([4, 32, 256, 1024]))
def test_blocked_pick_on_cumulative_values(seed, n, zeros, ties, block):
    """Uniforms placed on, and one ulp either side of, the reference's cumulative values:
    the undecided cases must say so (-1), never pick a neighbour."""
    rng = np.random.default_rng(seed)
    w = np.ones(n) if ties else rng.random(n) * 2.0
    w[rng.random(n) < zeros] = 0.0
    if not w.any():
        w[-1] = 1.0
    cum = np.cumsum(w)
    for k in rng.integers(0, n, 8):
        u0 = float(cum[k] / cum[-1])
        for u in (np.nextafter(u0, 0.0), u0, np.nextafter(u0, 1.0)):
            if 0.0 <= u < 1.0:
                _check(w, float(u), block)
    for u in rng.random(20):
        _check(w, float(u), block)


def test_blocked_pick_decides_almost_always_at_the_million_size():
    """131,072 nodes, up mask and Arrhenius-like factors: the pick equals the reference and
    the sequential fallback is rare."""
    rng = np.random.default_rng(19)
    n = 131_072
    for w in (np.where(rng.random(n) < 0.01, 0.0, 1.0),
              np.where(rng.random(n) < 0.01, 0.0, 1.0) * np.exp(rng.normal(0, 0.3, n))):
        b = _blocks(w, 256)
        ends = _block_ends(b)
        cum = np.cumsum(w)
        us = rng.random(4000)
        ref = np.searchsorted(cum, us * cum[-1], side="right")
        got = np.array([_pick_blocked(b, ends, n, float(u)) for u in us])
        decided = got >= 0
        assert np.array_equal(got[decided], ref[decided])
        assert decided.mean() > 0.999


def _run(sampler: ClusterFailureSampler, seed: int, hours: int, n: int) -> list:
    rng = np.random.default_rng(seed)
    wr = np.random.default_rng(seed + 1)
    out = []
    for _ in range(hours):
        up = (wr.random(n) > 0.02) * 2000.0      # rate scale: enough failures per hour
        accel = np.exp(wr.normal(0.0, 0.2, n))
        sampler.update(rate_scale=up, thermal_acceleration=accel, checked=False)
        left = 3600.0
        while (hit := sampler.next(rng, left)) is not None:
            out.append(hit)
            left -= hit[0]
    return out


def test_sampler_blocked_equals_sequential():
    """The same failures (times, nodes, classes) with the blocked pick on and off."""
    classes = reliability.load_failure_classes()
    n = 20_000
    fast = ClusterFailureSampler(classes, n)
    slow = ClusterFailureSampler(classes, n)
    slow.blocked_from_nodes = n + 1
    a, b = _run(fast, 7, 12, n), _run(slow, 7, 12, n)
    assert len(a) > 100
    assert a == b


def test_borrowed_factors_same_draws_and_callers_arrays_untouched():
    """``update(borrowed=True)`` keeps the arrays without copying: the same failures as
    copying, and a later copying update never writes into an array the caller lent."""
    classes = reliability.load_failure_classes()
    n = 8 * 1024
    wr = np.random.default_rng(3)
    a, b = ClusterFailureSampler(classes, n), ClusterFailureSampler(classes, n)
    ra, rb = np.random.default_rng(5), np.random.default_rng(5)
    lent = []
    for hour in range(30):
        scale = (wr.random(n) > 0.05) * 3000.0
        accel = np.exp(wr.normal(0.0, 0.2, n))
        lent.append((scale, scale.copy(), accel, accel.copy()))
        if hour % 3 == 2:       # one factor alone, either kind of update, mixed
            a.update(thermal_acceleration=accel, checked=False, borrowed=hour % 2 == 0)
            b.update(thermal_acceleration=accel.copy())
        elif hour % 5 == 4:
            a.update(rate_scale=scale, checked=False, borrowed=True)
            b.update(rate_scale=scale.copy())
        else:
            a.update(rate_scale=scale, thermal_acceleration=accel, checked=False, borrowed=hour % 2 == 0)
            b.update(rate_scale=scale.copy(), thermal_acceleration=accel.copy())
        assert a.total_rate_per_s == b.total_rate_per_s
        for _ in range(40):
            assert a.next(ra, 3600.0) == b.next(rb, 3600.0)
    for scale, scale0, accel, accel0 in lent:
        assert np.array_equal(scale, scale0) and np.array_equal(accel, accel0)
