"""Sampling cluster failures as a superposition of exponential (Poisson) processes.

The failures of N nodes and K classes with rates lambda[n, k] form one Poisson process
of total rate Lambda = sum lambda; the next event comes after Exp(Lambda) and belongs to
(n, k) with probability lambda[n, k] / Lambda (superposition / competing exponentials).
So one draw serves the whole cluster, whatever its size.

Time-varying rates (thermal acceleration changed once per sampling interval) are handled
by redrawing: on a change, discard the pending draw and sample again from the new rates.
That is exact for piecewise-constant hazards because the exponential is memoryless.

Nodes that are down, in repair or not installed: sample over all installed nodes and
ignore events that land on a node that cannot fail now (thinning: splitting a Poisson
process by an independent mark keeps both parts Poisson), so the sampler needs no
rebuild per failure.

Rates are per second [1/s], times and horizons in seconds [s].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

import numpy as np

from twin.reliability.classes import FailureClass
from twin.reliability.hazard import class_rates_per_node_s, thermal_mask

#: ``x.sum()`` of a 1-D float array without the method's Python wrapper (the same
#: pairwise reduction; ``np.add.reduce`` is what ``ndarray.sum`` calls)
_sum = np.add.reduce
#: ``np.cumsum`` of a 1-D float array without its wrapper (the same sequential sums)
_accumulate = np.add.accumulate


def _pick_many(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Vectorised ``_pick`` for uniforms ``u`` (M,)."""
    j = np.searchsorted(cum, u * cum[-1], side="right")
    over = j >= cum.size
    if np.any(over):
        j[over] = int(np.flatnonzero(np.diff(cum, prepend=0.0) > 0)[-1])
    return j


def _pick(cum: np.ndarray, u: float) -> int:
    """Index j with cum[j-1] <= u * cum[-1] < cum[j] (weights cum[j]-cum[j-1] > 0)."""
    j = int(cum.searchsorted(u * cum[-1], "right"))   # np.searchsorted without its wrapper
    if j >= cum.size:  # u * total rounded up to total
        j = int(np.flatnonzero(np.diff(cum, prepend=0.0) > 0)[-1])
    return j


#: nodes per block of the blocked node pick (:func:`_pick_blocked`)
_BLOCK = 256
#: unit roundoff of float64 [-]
_EPS = 2.0 ** -53


def _block_ends(blocks: np.ndarray) -> np.ndarray:
    """Running totals of the weights ``blocks`` (B, L) at the end of every block (B,):
    one vectorised pass (a reduction per block), no sequential chain over the N weights."""
    return np.cumsum(_sum(blocks, axis=1))


def _pick_blocked(blocks: np.ndarray, ends: np.ndarray, n: int, u: float) -> int:
    """``_pick(np.cumsum(w), u)`` for the weights ``w`` (>= 0, finite) laid out row by row
    in ``blocks`` (B, L) and zero-padded past the first ``n``, with ``ends`` from
    :func:`_block_ends`; -1 when it cannot be told without the sequential sum.

    Why it is the same index: every float sum of nonnegative terms, in any order, is within
    gamma_N * S of the exact sum S (Higham, Accuracy and Stability of Numerical Algorithms,
    2nd ed., sec. 4.2; gamma_N = N eps / (1 - N eps)). So the sequential prefix sums
    ``cum`` the reference searches, and these block-wise ones ``c`` (the totals of the
    earlier blocks, then a cumulative sum within the block), are both within gamma_N * S of
    the exact prefixes; the reference's ``u * cum[-1]`` is within 2 gamma_N S + 3 eps S of
    ``u * ends[-1]``. When the candidate's bracket ``c[j-1] <= x < c[j]`` holds with a
    margin above those bounds (16 (n + 2) eps * total, more than four times them, which also
    covers the rounding of the tests), ``cum[j-1] <= u * cum[-1] < cum[j]`` holds too and
    ``cum`` is nondecreasing, so searchsorted returns j. Otherwise (a chance of about
    n^2 * 3e-15 per pick when the weights are alike) the caller sums sequentially.
    """
    total = ends.item(-1)
    if not 1e-280 < total < 1e280:        # also NaN: no relative bound to lean on
        return -1
    x = u * total
    margin = 16.0 * (n + 2) * _EPS * total
    # the methods, not the np.* wrappers, and Python floats (item): this runs ~180,000
    # times in the million-GPU year
    b = int(ends.searchsorted(x, "right"))
    if b >= ends.size:
        return -1
    start = ends.item(b - 1) if b else 0.0
    # the block's prefix sums are start + c[k]; the search below only proposes the
    # bracket (x - start rounds), the test after it decides on start + c[k] themselves
    c = _accumulate(blocks[b])
    i = int(c.searchsorted(x - start, "right"))
    if i >= c.size:
        return -1
    lo = start + c.item(i - 1) if i else start
    if lo + margin < x < start + c.item(i) - margin:
        return b * blocks.shape[1] + i
    return -1


def sample_next_failure(
    rng: np.random.Generator, rates_per_s: np.ndarray, horizon_s: float
) -> tuple[float, int, int] | None:
    """Next failure of a cluster with the given rates, or None if after ``horizon_s``.

    rates_per_s: (N, K) per node and class, or (N,) per node [1/s].
    dt ~ Exp(sum rates) [s]; (node, class) chosen with probability rate / sum.
    Returns (dt_s, node_index, class_index); class_index is -1 for (N,) input (draw the
    class with ``sample_failure_class``). Cost: one pass of numpy over the N*K rates
    (a cumulative sum), O(1) Python work; use ``ClusterFailureSampler`` to reuse that
    pass for many events while the rates stay put.
    """
    r = np.asarray(rates_per_s, dtype=float)
    if r.ndim not in (1, 2):
        raise ValueError("rates_per_s must be (N,) or (N, K)")
    if r.size and r.min() < 0:
        raise ValueError("rates_per_s must be >= 0")
    cum = np.cumsum(r.ravel())
    total = float(cum[-1]) if cum.size else 0.0
    if total <= 0.0:
        return None
    dt = float(rng.exponential(1.0 / total))
    if dt > horizon_s:
        return None
    flat = _pick(cum, float(rng.random()))
    if r.ndim == 1:
        return dt, flat, -1
    node, k = divmod(flat, r.shape[1])
    return dt, int(node), int(k)


def sample_failure_class(rng: np.random.Generator, class_rates_per_s: np.ndarray) -> int:
    """Class index k of a failure, with probability rate_k / sum(rates) (any rate unit)."""
    cum = np.cumsum(np.asarray(class_rates_per_s, dtype=float))
    if cum[-1] <= 0:
        raise ValueError("all class rates are zero")
    return _pick(cum, float(rng.random()))


class ClusterFailureSampler:
    """Failures of N nodes x K classes with rates that factorise as

        lambda[n, k] = rate_k * s[n] * (a[n] if class k is thermal else 1)

    (s: rate scale per node, a: thermal acceleration per node). ``update`` costs O(N)
    numpy (a sum and a dot product); ``next`` costs O(log N) and no per-node Python work
    (plus one O(N) cumulative sum after an update):
    class by its share of the total, then node by searchsorted in the cumulative
    weights of that class's group (thermal or not).

    Engine loop (one simpy process), per sampling interval [t, t + dt):

        sampler.update(rate_scale=scale * installed * burn_in_multiplier,
                       thermal_acceleration=accel)          # O(N), once per interval
        left = dt
        while (hit := sampler.next(rng, left)) is not None:
            dt_s, node, k = hit
            yield env.timeout(dt_s)                         # seconds, the engine's unit
            left -= dt_s
            if node_can_fail[node]:                         # thinning: down nodes
                fail(node, k)
        yield env.timeout(left)

    Redrawing at every interval is exact for piecewise-constant rates (memoryless).
    """

    def __init__(
        self,
        classes: Sequence[FailureClass],
        n_nodes: int,
        *,
        rate_scale: float | np.ndarray = 1.0,
        thermal_acceleration: np.ndarray | float | None = None,
    ) -> None:
        self.classes = tuple(classes)
        self.n_nodes = int(n_nodes)
        self._base = class_rates_per_node_s(self.classes)
        self._thermal = thermal_mask(self.classes)
        self._thermal_of = tuple(bool(t) for t in self._thermal)      # the same, read per failure
        # the two node weights live in zero-padded buffers of whole blocks, so the blocked
        # pick sees them as (B, L) without a copy
        n_blocks = -(-self.n_nodes // _BLOCK)
        self._own_plain = self._blocks_plain = np.zeros((n_blocks, _BLOCK))
        self._blocks_thermal = np.zeros((n_blocks, _BLOCK))
        self._own_scale = self._scale = self._blocks_plain.reshape(-1)[:self.n_nodes]
        self._w_node_thermal = self._blocks_thermal.reshape(-1)[:self.n_nodes]
        self._scale[:] = 1.0
        self._w_node_thermal[:] = 1.0
        self._own_accel = self._accel = np.ones(self.n_nodes)
        self.update(
            rate_scale=rate_scale,
            thermal_acceleration=1.0 if thermal_acceleration is None else thermal_acceleration,
        )

    def update(
        self,
        *,
        rate_scale: float | np.ndarray | None = None,
        thermal_acceleration: np.ndarray | float | None = None,
        checked: bool = True,
        borrowed: bool = False,
    ) -> None:
        """Set new per-node factors; any pending draw must be redrawn.

        Costs two O(N) reductions; the cumulative weights used to pick a node are
        rebuilt lazily, only when an event lands before the next update.
        ``checked=False`` skips the test that the factors are >= 0, for a caller whose
        factors are so by construction (the engine's, once per sample: issue 19); the
        rates are the same.
        ``borrowed=True`` keeps float (N,) arrays by reference instead of copying them, for
        a caller that never writes into an array it passed (the engine replaces its arrays;
        issue 19: two 1 MB copies per sample at 131,072 nodes); the rates are the same.
        """
        if rate_scale is not None:
            if checked:
                r = np.asarray(rate_scale, dtype=float)
                if r.size and r.min() < 0:
                    raise ValueError("rate_scale must be >= 0")
            if borrowed and self._fits(rate_scale) and self.n_nodes % _BLOCK == 0:
                self._scale = rate_scale.view(np.ndarray)
                self._blocks_plain = self._scale.reshape(-1, _BLOCK)
            else:
                self._scale, self._blocks_plain = self._own_scale, self._own_plain
                np.copyto(self._scale, rate_scale)
            self._w_plain = float(_sum(self._scale))
            self._cum_plain: np.ndarray | None = None
            # the block totals at once, while the weights are in cache (a failure lands in
            # nearly every interval at the sizes the blocked pick serves)
            self._ends_plain: np.ndarray | None = (_block_ends(self._blocks_plain)
                                                   if self.n_nodes >= self.blocked_from_nodes else None)
        if thermal_acceleration is not None:
            if checked:
                a = np.asarray(thermal_acceleration, dtype=float)
                if a.size and a.min() < 0:
                    raise ValueError("thermal_acceleration must be >= 0")
            if borrowed and self._fits(thermal_acceleration):
                self._accel = thermal_acceleration.view(np.ndarray)
            else:
                self._accel = self._own_accel
                np.copyto(self._accel, thermal_acceleration)
        if rate_scale is not None or thermal_acceleration is not None:
            # elementwise product and a ufunc sum, not a BLAS dot: a threaded BLAS call
            # costs milliseconds on a loaded machine (measured: 1 ms vs 40 us)
            np.multiply(self._scale, self._accel, out=self._w_node_thermal)
            self._w_thermal = float(_sum(self._w_node_thermal))
            self._cum_thermal: np.ndarray | None = None
            self._ends_thermal: np.ndarray | None = (_block_ends(self._blocks_thermal)
                                                     if self.n_nodes >= self.blocked_from_nodes else None)
        self._class_rate = self._base * np.where(self._thermal, self._w_thermal, self._w_plain)
        cum = self._cum_class = self._class_rate.cumsum()
        self.total_rate_per_s = float(cum[-1]) if cum.size else 0.0

    def _fits(self, a: object) -> TypeGuard[np.ndarray]:
        """Whether ``a`` can be kept as a node factor as it is: a C-contiguous float (N,)."""
        return (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (self.n_nodes,)
                and a.flags.c_contiguous)

    @property
    def class_rates_per_s(self) -> np.ndarray:
        """Cluster-wide rate of every class [1/s], shape (K,)."""
        return self._class_rate.copy()

    def _cum(self, thermal: bool) -> np.ndarray:
        if thermal:
            if self._cum_thermal is None:
                self._cum_thermal = np.cumsum(self._w_node_thermal)
            return self._cum_thermal
        if self._cum_plain is None:
            self._cum_plain = np.cumsum(self._scale)
        return self._cum_plain

    #: nodes from which on a node is picked block-wise (:func:`_pick_blocked`); below it
    #: the sequential cumulative sum is cheap enough (tests lower it to cover small sizes)
    blocked_from_nodes = 16 * _BLOCK

    def _node_for(self, k: int, u: float) -> int:
        """The node of a class-``k`` failure for the uniform ``u``: the index searchsorted
        finds in the sequential cumulative weights (``_pick``), found without that O(N)
        sequential sum (436 us at 131,072 nodes, rebuilt at every sample with a failure,
        issue 19) by :func:`_pick_blocked` when its bounds decide it, else by ``_pick``."""
        thermal = self._thermal_of[k]
        if self.n_nodes >= self.blocked_from_nodes:
            if thermal:
                if self._ends_thermal is None:
                    self._ends_thermal = _block_ends(self._blocks_thermal)
                j = _pick_blocked(self._blocks_thermal, self._ends_thermal, self.n_nodes, u)
            else:
                if self._ends_plain is None:
                    self._ends_plain = _block_ends(self._blocks_plain)
                j = _pick_blocked(self._blocks_plain, self._ends_plain, self.n_nodes, u)
            if j >= 0:
                return j
        return _pick(self._cum(thermal), u)

    def next(self, rng: np.random.Generator, horizon_s: float = np.inf) -> tuple[float, int, int] | None:
        """(dt_s, node_index, class_index) of the next failure, or None if dt_s > horizon_s."""
        if self.total_rate_per_s <= 0.0:
            return None
        return self.place(rng, float(rng.exponential(1.0 / self.total_rate_per_s)), horizon_s)

    def place(self, rng: np.random.Generator, dt_s: float,
              horizon_s: float = np.inf) -> tuple[float, int, int] | None:
        """What :meth:`next` returns once its waiting time ``dt_s`` [s] is drawn (as
        ``rng.exponential(1 / total_rate_per_s)``): None if ``dt_s > horizon_s``, else
        ``(dt_s, node_index, class_index)`` with the class and node drawn from ``rng``."""
        if dt_s > horizon_s:
            return None
        u_class, u_node = rng.random(2).tolist()        # the two draws, as Python floats
        # _pick(self._cum_class, u_class), whose total is total_rate_per_s (the same float)
        k = int(self._cum_class.searchsorted(u_class * self.total_rate_per_s, "right"))
        if k >= self._cum_class.size:
            k = _pick(self._cum_class, u_class)
        return dt_s, self._node_for(k, u_node), k

    def sample_until(
        self, rng: np.random.Generator, horizon_s: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All failures in [0, horizon_s) at the current rates, fully vectorised.

        Count M ~ Poisson(Lambda * T); times are M sorted uniforms on [0, T) (order
        statistics of a Poisson process); classes and nodes as in ``next``.
        Returns (time_s (M,), node_index (M,), class_index (M,)).
        """
        lam = self.total_rate_per_s * float(horizon_s)
        m = int(rng.poisson(lam)) if lam > 0 else 0
        t = np.sort(rng.random(m) * horizon_s)
        k = _pick_many(self._cum_class, rng.random(m)) if m else np.empty(0, dtype=np.int64)
        node = np.empty(m, dtype=np.int64)
        u = rng.random(m)
        th = self._thermal[k]
        for mask, thermal in ((th, True), (~th, False)):
            if np.any(mask):
                node[mask] = _pick_many(self._cum(thermal), u[mask])
        return t, node, k.astype(np.int64)


def sample_unit_outages(rng: np.random.Generator, horizon_s: float, n_units: int,
                        rate_per_year: float, mean_duration_s: float) -> list[tuple[float, int, float]]:
    """Outages of ``n_units`` independent units, each failing as a Poisson process.

    Unit ``u`` fails at the arrivals of a Poisson process of rate ``rate_per_year``
    [1/year] (exponential gaps of mean 365.25 d / rate) and stays out for an exponential
    duration of mean ``mean_duration_s`` [s]: the alternating renewal model of a
    repairable unit with constant hazard (Billinton & Allan, Reliability Evaluation of
    Power Systems, 2nd ed., ch. 9). Draws run unit by unit, a gap then a duration, so a
    seed gives the same outages whatever else the run samples.

    Returns ``[(start [s], unit, duration [s]), ...]`` with ``start < horizon_s``, in unit
    order. No outages when ``rate_per_year <= 0``.
    """
    out: list[tuple[float, int, float]] = []
    if rate_per_year <= 0:
        return out
    mean_gap_s = 365.25 * 86400.0 / rate_per_year
    for u in range(n_units):
        t = 0.0
        while True:
            t += rng.exponential(mean_gap_s)
            if t >= horizon_s:
                break
            out.append((t, u, float(rng.exponential(mean_duration_s))))
    return out
