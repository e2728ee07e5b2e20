"""Honest intervals over seeds: every interval carries its n, its level and its method.

A sweep runs each grid point with a few seeds. The mean over seeds has a sampling error
that the report must show; a 5-95 % quantile band of two seeds is not an interval. Here:

- :func:`mean_interval` Student-t confidence interval of the mean (n >= 2), or a
  percentile bootstrap of the mean (``method="bootstrap"``, seeded, for skewed KPIs);
- :func:`paired_difference` the same interval for the per-seed differences between two
  grid points (paired by seed index: with common random numbers the seed streams of
  seed k are the same at every grid point, so the pairing removes the shared noise);
- :func:`interval_note` the sentence a report prints beside an interval, with a warning
  below :data:`MIN_SEEDS` seeds;
- :meth:`Interval.clip` the interval cut to what the quantity can physically take (a share
  in [0, 1], a count or an energy at 0 and up; the bounds come from the quantity's unit,
  :func:`twin.studies.labels.physical_bounds`), with the cut bounds flagged so that a report
  marks them. The t-interval itself is never changed: clipping only limits what is shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

MIN_SEEDS = 5
"""Below this many seeds the report warns that an interval is unreliable."""
MIN_SEEDS_FOR_INTERVAL = 3
"""Below this many seeds a report prints the mean and says there is no meaningful interval:
with n = 2 the 90 % Student-t quantile is 6.31, so the interval is six times the spread of
two numbers (a 2-seed goodput of 99.3 % gave [97.1 %, 102 %]); at n = 3 it is 2.92."""
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
    low_clipped: bool = False     # low raised to the quantity's physical lower bound
    high_clipped: bool = False    # high lowered to the quantity's physical upper bound

    @property
    def half_width(self) -> float:
        return 0.5 * (self.high - self.low)

    @property
    def meaningful(self) -> bool:
        """True when a report should print the interval: computed, from at least
        :data:`MIN_SEEDS_FOR_INTERVAL` values."""
        return self.method != "none" and self.n >= MIN_SEEDS_FOR_INTERVAL

    def clip(self, lower: float = -math.inf, upper: float = math.inf) -> Interval:
        """The interval cut to [``lower``, ``upper``] (the quantity's physical range), the
        cut bounds flagged; the mean and the bounds inside the range are unchanged."""
        low_cut = bool(np.isfinite(self.low) and self.low < lower)
        high_cut = bool(np.isfinite(self.high) and self.high > upper)
        return replace(self, low=lower if low_cut else self.low, high=upper if high_cut else self.high,
                       low_clipped=self.low_clipped or low_cut, high_clipped=self.high_clipped or high_cut)

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
    what = "Student-t intervals of the mean" if method == "t" else "bootstrap intervals of the mean"
    text = f"Intervals are {100 * level:.0f} % {what} over n = {n} seed{'s' if n != 1 else ''}."
    if n < 2:
        return text + " With one seed there is no interval: differences cannot be told from noise."
    if n < MIN_SEEDS_FOR_INTERVAL:
        return (f"Means over n = {n} seeds. Warning: below {MIN_SEEDS_FOR_INTERVAL} seeds a "
                f"{100 * level:.0f} % interval is not meaningful (with 2 seeds the t-interval is 6.3 times "
                f"the spread of the two values), so a report prints the means only. Re-run with --seeds "
                f"{MIN_SEEDS} or more before acting on a difference.")
    text += (" A bound beyond what the quantity can take (a share outside 0-100 %, a count, energy, "
             "token or GPU-hour total below zero) is shown at that limit and marked *.")
    if n < MIN_SEEDS:
        text += (f" Warning: fewer than {MIN_SEEDS} seeds; the intervals are wide and themselves "
                 f"uncertain. Re-run with --seeds {MIN_SEEDS} or more before acting on a difference.")
    return text
