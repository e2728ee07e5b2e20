"""Honest intervals over seeds: every interval carries its n, its level and its method.

A sweep runs each grid point with a few seeds. The mean over seeds has a sampling error
that the report must show; a 5-95 % quantile band of two seeds is not an interval. Here:

- :func:`mean_interval` Student-t confidence interval of the mean (n >= 2), or a
  percentile bootstrap of the mean (``method="bootstrap"``, seeded, for skewed KPIs);
- :func:`paired_difference` the same interval for the per-seed differences between two
  grid points (paired by seed index: with common random numbers the seed streams of
  seed k are the same at every grid point, so the pairing removes the shared noise);
- :func:`interval_note` the sentence a report prints beside an interval, with a warning
  below :data:`MIN_SEEDS` seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_SEEDS = 5
"""Below this many seeds the report warns that an interval is unreliable."""
LEVEL = 0.90
"""Default two-sided confidence level of the intervals."""


@dataclass(frozen=True)
class Interval:
    """Mean and two-sided confidence interval of a sample."""

    mean: float
    low: float
    high: float
    n: int
    level: float
    method: str          # "t" or "bootstrap" ("none" when n < 2)

    @property
    def half_width(self) -> float:
        return 0.5 * (self.high - self.low)

    def excludes(self, value: float = 0.0) -> bool:
        """True when ``value`` lies outside the interval (a difference is established)."""
        return bool(np.isfinite(self.low) and np.isfinite(self.high) and (value < self.low or value > self.high))

    def describe(self) -> str:
        """"90 % t-interval, n = 5" (what the numbers are)."""
        if self.method == "none":
            return f"n = {self.n}, no interval"
        what = "t-interval" if self.method == "t" else "bootstrap interval"
        return f"{100 * self.level:.0f} % {what}, n = {self.n}"


def mean_interval(values, level: float = LEVEL, method: str = "t", n_boot: int = 2000,
                  seed: int = 0) -> Interval:
    """Mean of ``values`` (NaN skipped) and its two-sided ``level`` confidence interval.

    ``method="t"``: mean ± t_{(1+level)/2, n-1} · s / sqrt(n) (Student 1908; exact for
    normal samples, good for sums of many events). ``method="bootstrap"``: the
    ``(1-level)/2`` and ``(1+level)/2`` quantiles of the means of ``n_boot`` resamples
    with replacement (Efron & Tibshirani 1993, percentile method), drawn from a seeded
    ``numpy.random.Generator``. Fewer than two values give no interval (NaN bounds).

    References
    ----------
    Student (1908), The probable error of a mean, Biometrika 6(1), 1-25, doi:10.1093/biomet/6.1.1.
    B. Efron, R. Tibshirani (1993), An Introduction to the Bootstrap, Chapman & Hall,
    doi:10.1007/978-1-4899-4541-9.
    """
    v = np.asarray(values, float).ravel()
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, level, "none")
    m = float(v.mean())
    if n < 2:
        return Interval(m, math.nan, math.nan, n, level, "none")
    if method == "t":
        from scipy import stats
        half = float(stats.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
        return Interval(m, m - half, m + half, n, level, "t")
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        means = v[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
        lo, hi = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
        return Interval(m, float(lo), float(hi), n, level, "bootstrap")
    raise ValueError(f"method {method!r}: expected 't' or 'bootstrap'")


def paired_difference(a, b, level: float = LEVEL, method: str = "t") -> Interval:
    """Interval of the mean of ``a - b``, paired element by element (seed index); pairs
    where either side is NaN (a failed run) are dropped."""
    a = np.asarray(a, float).ravel()
    b = np.asarray(b, float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples need the same length ({a.size} vs {b.size})")
    d = a - b
    return mean_interval(d[np.isfinite(d)], level, method)


def interval_note(n: int, level: float = LEVEL, method: str = "t") -> str:
    """The sentence printed beside intervals: n, level, method and, below
    :data:`MIN_SEEDS`, a warning."""
    what = "Student-t interval of the mean" if method == "t" else "bootstrap interval of the mean"
    text = f"Intervals are {100 * level:.0f} % {what} over n = {n} seed{'s' if n != 1 else ''}."
    if n < 2:
        return text + " With one seed there is no interval: differences cannot be told from noise."
    if n < MIN_SEEDS:
        text += (f" Warning: fewer than {MIN_SEEDS} seeds; the intervals are wide and themselves "
                 f"uncertain. Re-run with --seeds {MIN_SEEDS} or more before acting on a difference.")
    return text
