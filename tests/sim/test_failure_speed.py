"""The per-sample failure-rate update's speed path (issues 19 and 14) gives the rates of its
reference, bit for bit.

``ClusterFailureSampler.update(checked=False)`` (what the engine calls once per sample)
skips the non-negativity checks and calls ``np.add.reduce`` and ``ndarray.cumsum`` without
their Python wrappers. The reference below is the update as it was written before: the
same factors must give the same class rates, cumulative rates and total, to the last bit,
through sequences of scale-only, acceleration-only and joint updates, and the same draws.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import reliability
from twin.reliability.hazard import class_rates_per_node_s, thermal_mask
from twin.reliability.sampling import ClusterFailureSampler

CLASSES = reliability.load_failure_classes()


class _Reference:
    """The update before the speed path: checks, ``ndarray.sum`` and ``np.cumsum``."""

    def __init__(self, n: int):
        self.base, self.thermal = class_rates_per_node_s(CLASSES), thermal_mask(CLASSES)
        self.scale, self.accel = np.ones(n), np.ones(n)

    def update(self, rate_scale=None, thermal_acceleration=None):
        if rate_scale is not None:
            r = np.asarray(rate_scale, dtype=float)
            assert not (r.size and r.min() < 0)
            np.copyto(self.scale, r)
            self.w_plain = float(self.scale.sum())
        if thermal_acceleration is not None:
            np.copyto(self.accel, np.asarray(thermal_acceleration, dtype=float))
        w = self.scale * self.accel
        self.w_thermal = float(w.sum())
        self.class_rate = self.base * np.where(self.thermal, self.w_thermal, self.w_plain)
        self.cum = np.cumsum(self.class_rate)
        self.total = float(self.cum[-1])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 600), st.integers(0, 2 ** 32 - 1))
def test_unchecked_update_gives_the_reference_rates_bit_for_bit(n, seed):
    rng = np.random.default_rng(seed)
    fast = ClusterFailureSampler(CLASSES, n, rate_scale=0.0)
    ref = _Reference(n)
    ref.update(rate_scale=np.zeros(n), thermal_acceleration=1.0)
    for _ in range(12):
        kind = rng.integers(0, 3)
        scale = (rng.random(n) < 0.8) * rng.lognormal(0.0, 1.0, n) if kind != 1 else None
        accel = rng.lognormal(0.0, 0.3, n) if kind != 0 else None
        fast.update(rate_scale=scale, thermal_acceleration=accel, checked=False)
        ref.update(rate_scale=scale, thermal_acceleration=accel)
        assert fast.total_rate_per_s == ref.total
        np.testing.assert_array_equal(fast.class_rates_per_s, ref.class_rate)
        np.testing.assert_array_equal(fast._cum_class, ref.cum)
        assert fast._w_thermal == ref.w_thermal and fast._w_plain == ref.w_plain


def test_checked_and_unchecked_updates_draw_the_same_failures():
    """Same factors, same stream: the same (time, node, class) of every failure drawn."""
    n = 256
    rng = np.random.default_rng(1)
    a, b = (ClusterFailureSampler(CLASSES, n, rate_scale=0.0) for _ in range(2))
    ra, rb = np.random.default_rng(7), np.random.default_rng(7)
    hits = 0
    for _ in range(200):
        scale = (rng.random(n) < 0.9).astype(float) * 50.0
        accel = rng.lognormal(0.0, 0.2, n)
        a.update(rate_scale=scale, thermal_acceleration=accel)
        b.update(rate_scale=scale, thermal_acceleration=accel, checked=False)
        x, y = a.next(ra, 3600.0), b.next(rb, 3600.0)
        assert x == y
        hits += x is not None
    assert 20 < hits < 200


def test_the_checks_stay_on_by_default():
    s = ClusterFailureSampler(CLASSES, 4)
    with pytest.raises(ValueError, match="rate_scale"):
        s.update(rate_scale=np.array([1.0, -1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="thermal_acceleration"):
        s.update(thermal_acceleration=np.array([1.0, 1.0, -0.5, 1.0]))
