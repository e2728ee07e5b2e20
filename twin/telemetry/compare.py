"""Simulated against measured: time alignment and error statistics.

Alignment: the run samples its state at times ``t_k`` every ``dt`` (``sample_interval_s``).
A measured series is averaged over each window ``[t_k - dt/2, t_k + dt/2)`` (``align="mean"``)
or the reading nearest to ``t_k`` within ``dt/2`` is taken (``align="nearest"``). A window
is used only when it holds at least half the readings its length implies and touches no gap;
nothing is interpolated. Series that land on the same variable and rack combine per window
(sum, mean, max, min) where every member has the window.

Statistics over the pairs ``(s_k, m_k)`` (simulated, measured) of each variable and of each
rack/feed/rpp/job:

* ``bias_fraction = sum(s - m) / sum(|m|)`` (mean error over mean magnitude);
* ``mape = mean(|s - m| / |m|)`` over pairs with ``m != 0`` (a fraction: 0.044 = 4.4 %);
* ``rmse = sqrt(mean((s - m)^2))`` in the variable's unit;
* ``correlation``: Pearson's r (None when either side is constant);
* ``n`` pairs, and the time, place and size of the largest miss ``max |s - m|``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.telemetry.mapping import Mapped
from twin.telemetry.series import NS, TelemetryError, iso

#: Measured/simulated median ratios beyond these bounds mean a wrong unit, not a bad model.
WRONG_UNIT_RATIO = 100.0
#: Plausible range of a temperature in degC; outside it a series is in K or degF.
PLAUSIBLE_DEGC = (-60.0, 150.0)


def run_grid_ns(ds) -> tuple[np.ndarray, float]:
    """Sample times of a run [epoch ns, UTC] and its sample step [s]."""
    t = ds["time"].values.astype("datetime64[ns]").astype(np.int64)
    dt = float(ds.attrs.get("sample_interval_s") or (np.median(np.diff(t)) / NS if t.size > 1 else 3600.0))
    return t, dt


class Binning:
    """Where the readings of one time axis fall on a run's grid (reused by every series that
    shares the axis, as the GPUs of one scrape do)."""

    def __init__(self, t_ns: np.ndarray, grid_ns: np.ndarray, dt_s: float, align: str = "mean"):
        from twin.telemetry.series import typical_step_ns
        self.k_n = grid_ns.size
        self.dt_ns = dt_s * NS
        self.lo = grid_ns[0] - self.dt_ns / 2
        # t_ns is sorted (check_series): the readings inside the grid are one slice
        i0 = int(np.searchsorted(t_ns, self.lo, side="left"))
        i1 = int(np.searchsorted(t_ns, self.lo + self.k_n * self.dt_ns, side="left"))
        self.inside = slice(i0, i1)
        self.idx = ((t_ns[i0:i1] - self.lo) // self.dt_ns).astype(np.int64)
        np.clip(self.idx, 0, self.k_n - 1, out=self.idx)
        self.step_ns = typical_step_ns(t_ns)
        self.align = align
        if align == "nearest" and self.idx.size:
            dist = np.abs(t_ns[self.inside] - grid_ns[self.idx])
            order = np.lexsort((dist, self.idx))
            first = np.ones(order.size, bool)
            first[1:] = self.idx[order][1:] != self.idx[order][:-1]
            self.pick = order[first]
        else:
            self.cnt = np.bincount(self.idx, minlength=self.k_n)
            step_s = self.step_ns / NS
            need = max(1.0, 0.5 * dt_s / step_s) if step_s > 0 else 1.0
            self.ok = self.cnt >= np.floor(need)

    def values(self, values: np.ndarray, gaps=()) -> np.ndarray:
        out = np.full(self.k_n, np.nan)
        if self.idx.size == 0:
            return out
        v = values[self.inside]
        if self.align == "nearest":
            out[self.idx[self.pick]] = v[self.pick]
        else:
            tot = np.bincount(self.idx, weights=v, minlength=self.k_n)
            out[self.ok] = tot[self.ok] / self.cnt[self.ok]
        half = 0.5 * self.step_ns
        for a, b in gaps:   # windows where readings were due but absent: excluded, not filled
            k0 = int(np.floor((a + half - self.lo) / self.dt_ns))
            k1 = int(np.ceil((b - half - self.lo) / self.dt_ns)) - 1
            out[max(k0, 0):max(min(k1 + 1, self.k_n), 0)] = np.nan
        return out


def window_values(t_ns: np.ndarray, values: np.ndarray, grid_ns: np.ndarray, dt_s: float,
                  gaps=(), align: str = "mean") -> np.ndarray:
    """A measured series on the run's grid: window means (or nearest readings), NaN where
    the window has too few readings or touches a gap.

    The grid must be uniform (``grid_ns[k] = grid_ns[0] + k dt``). Vectorised: one
    ``bincount`` over all readings.
    """
    return Binning(t_ns, grid_ns, dt_s, align).values(values, gaps)


def aggregate(stack: np.ndarray, how: str) -> np.ndarray:
    """Combine member series (rows) per window; a window any member lacks stays NaN."""
    if stack.shape[0] == 1:
        return stack[0]
    # NaN propagates: incomplete windows are excluded
    if how == "sum":
        return stack.sum(axis=0)
    if how == "max":
        return stack.max(axis=0)
    if how == "min":
        return stack.min(axis=0)
    return stack.mean(axis=0)


def error_stats(sim: np.ndarray, meas: np.ndarray, t_ns: np.ndarray | None = None,
                where: np.ndarray | None = None) -> dict:
    """The statistics of the module docstring over the pairs where both are finite."""
    ok = np.isfinite(sim) & np.isfinite(meas)
    s, m = sim[ok].astype(float), meas[ok].astype(float)
    n = int(s.size)
    if n == 0:
        return {"n": 0, "bias_fraction": None, "mape": None, "rmse": None, "correlation": None,
                "max_miss": None, "max_miss_time": None}
    err = s - m
    denom = float(np.abs(m).sum())
    nz = m != 0
    corr = None
    if n > 1 and np.std(s) > 0 and np.std(m) > 0:
        corr = float(np.corrcoef(s, m)[0, 1])
    k = int(np.argmax(np.abs(err)))
    out = {
        "n": n,
        "bias_fraction": float(err.sum() / denom) if denom > 0 else None,
        "mape": float(np.mean(np.abs(err[nz]) / np.abs(m[nz]))) if nz.any() else None,
        "rmse": float(np.sqrt(np.mean(err * err))),
        "correlation": corr,
        "max_miss": float(err[k]),
        "max_miss_time": iso(t_ns[ok][k]) if t_ns is not None else None,
    }
    if where is not None:
        out["max_miss_at"] = str(where[ok][k])
    return out


@dataclass
class Pair:
    """One mapped position: simulated and measured on the run's grid."""

    mapped: Mapped
    sim: np.ndarray
    meas: np.ndarray
    gaps: int = 0


@dataclass
class Comparison:
    grid_ns: np.ndarray
    dt_s: float
    pairs: list[Pair]
    unmapped: list[str] = field(default_factory=list)
    extra: list[Mapped] = field(default_factory=list)   # measured-only groups (no simulated twin)

    def variables(self) -> list[str]:
        return sorted({p.mapped.variable for p in self.pairs})

    def stats(self) -> dict:
        """``{variable: {bias_fraction, mape, rmse, correlation, n, max_miss, max_miss_time,
        unit, gaps, by_<dim>: {coord: {...}}}}``."""
        out = {}
        for var in self.variables():
            ps = [p for p in self.pairs if p.mapped.variable == var]
            sim = np.concatenate([p.sim for p in ps])
            meas = np.concatenate([p.meas for p in ps])
            t = np.tile(self.grid_ns, len(ps))
            where = np.repeat([p.mapped.coord or "" for p in ps], self.grid_ns.size)
            st = error_stats(sim, meas, t, where if ps[0].mapped.dim else None)
            st["unit"] = ps[0].mapped.unit
            st["gaps"] = int(sum(p.gaps for p in ps))
            dims = {p.mapped.dim for p in ps if p.mapped.dim}
            for d in sorted(dims):
                st[f"by_{d}"] = {p.mapped.coord: error_stats(p.sim, p.meas, self.grid_ns)
                                 for p in ps if p.mapped.dim == d}
            out[var] = st
        return out


def compare_mapped(ds, groups: list[Mapped], *, align: str = "mean",
                   unmapped: list[str] | None = None) -> Comparison:
    """Align every mapped group on the run's grid and pair it with the simulated series.

    Errors (:class:`TelemetryError`): a series with no reading inside the run, values whose
    size says wrong unit (median 100x off the run's, or a temperature outside -60..150 C).
    """
    grid, dt = run_grid_ns(ds)
    pairs = []
    binnings: dict[tuple, list[tuple[np.ndarray, Binning]]] = {}

    def on_grid(s):
        t = s.t_ns
        same = binnings.setdefault((t.size, int(t[0]), int(t[-1])), [])
        for t_seen, b in same:
            if t_seen is t or np.array_equal(t_seen, t):
                return b.values(s.values, s.gaps)
        b = Binning(t, grid, dt, align)
        same.append((t, b))
        return b.values(s.values, s.gaps)

    for m in groups:
        stack = np.vstack([on_grid(s) for s in m.members])
        for s, row in zip(m.members, stack, strict=True):
            if not np.isfinite(row).any():
                raise TelemetryError(s.source, s.key, f"no overlap with the run: measured "
                                                      f"{iso(s.t_ns[0])} .. {iso(s.t_ns[-1])}, run "
                                                      f"{iso(grid[0])} .. {iso(grid[-1])}")
        meas = aggregate(stack, m.aggregate)
        da = ds[m.variable]
        if m.dim is not None:
            coords = [str(x) for x in ds[m.dim].values]
            da = da.isel({m.dim: coords.index(str(m.coord))})
        sim = np.asarray(da.values, dtype=float)
        _check_plausible(m, sim, meas)
        pairs.append(Pair(m, sim, meas, gaps=sum(len(s.gaps) for s in m.members)))
    return Comparison(grid, dt, pairs, list(unmapped or []))


def _check_plausible(m: Mapped, sim: np.ndarray, meas: np.ndarray) -> None:
    s0 = m.members[0]
    ok = np.isfinite(meas)
    if m.unit == "degC":
        lo, hi = PLAUSIBLE_DEGC
        bad = ok & ((meas < lo) | (meas > hi))
        if bad.any():
            raise TelemetryError(s0.source, s0.key, f"{meas[bad][0]:.1f} degC is not a plausible "
                                                    "temperature: wrong unit (K or degF declared as degC)?")
    both = ok & np.isfinite(sim) & (sim != 0)
    if both.sum() >= 3:
        ms, ss = np.median(np.abs(meas[both])), np.median(np.abs(sim[both]))
        if ss > 0 and ms > 0:
            r = ms / ss
            if r > WRONG_UNIT_RATIO or r < 1 / WRONG_UNIT_RATIO:
                raise TelemetryError(s0.source, s0.key, f"measured values are {r:.3g} x the run's "
                                                        f"{m.variable} ({m.unit}): wrong unit?")
