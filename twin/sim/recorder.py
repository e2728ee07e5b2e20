"""The recorder: arrays for every recorded output of :data:`twin.outputs.OUTPUTS`, sized
from the plant, filled sample by sample (or whole, after the run) by the components.

Memory is bounded by ``outputs.rack_series`` (issue 19). At ``full`` every per-rack and
per-RPP series is kept for every sample, (T, R) each. Below it (``hall``, ``none``) those
series live in a window of a few dozen samples: when the window is full the sampler hands
it to :meth:`Recorder.flush`, which pushes the window's rack power through the power tree
(the facility, feed and UPS series are kept whole, they are (T,) and (T, F)) and folds the
window into :class:`RackAggregates` (per-rack maxima, energy and hours outside ASHRAE's
recommended range, per-RPP maximum load, per-hall series at ``hall``). The KPIs come out
the same either way (``tests/sim/test_recorder.py``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from twin.outputs import OUTPUTS, Output

if TYPE_CHECKING:
    from twin.power.tree import PowerTree

#: bytes the windowed per-rack series may hold at once (below ``rack_series: full``)
WINDOW_BYTES = 64 * 2**20
#: histogram of powered inlets kept for their median: bins of 0.01 K from -50 C to 150 C
_HIST_LO_C, _HIST_BIN_K, _HIST_BINS = -50.0, 0.01, 20000
LEVELS = ("full", "hall", "none")
#: inlets binned at a time by the shared fold's histogram (two buffers of this many values)
_HIST_CHUNK = 1 << 18


def _powered(codes: np.ndarray) -> np.ndarray:
    """:meth:`RackState.powered` of int8 codes [bool], compared with int8 scalars (an enum
    member costs a cast of the whole window; speed only)."""
    from twin.sim.state import RackState
    if codes.dtype != np.int8:
        return RackState.powered(codes)
    on = codes == np.int8(RackState.BURN_IN)
    on |= codes == np.int8(RackState.IN_SERVICE)
    return on


def _column_counts(mask: np.ndarray) -> np.ndarray:
    """True values in each column of a (T, R) bool mask [(R,)]: the bytes (0 or 1) summed in
    the narrowest unsigned integer that holds T, not cast to int64 one by one (exact counts,
    ~50x faster than ``mask.sum(axis=0)``; speed only, issue 19)."""
    t = mask.shape[0]
    if t < 1 << 8:
        return mask.view(np.uint8).sum(axis=0, dtype=np.uint8)
    if t < 1 << 16:
        return mask.view(np.uint8).sum(axis=0, dtype=np.uint16)
    return mask.sum(axis=0)


class _Window:
    """A (K, ...) array addressed by absolute sample index: ``w[i]`` is sample ``i`` while
    ``i`` is in the recorder's current window (an IndexError otherwise, never a wrap)."""

    __slots__ = ("data", "rec")

    def __init__(self, data: np.ndarray, rec: Recorder):
        self.data, self.rec = data, rec

    def _key(self, key):
        first, rest = (key[0], key[1:]) if isinstance(key, tuple) else (key, ())
        k = int(first) - self.rec.base
        if not 0 <= k < len(self.data):
            raise IndexError(f"sample {first} is outside the recorder's window "
                             f"[{self.rec.base}, {self.rec.base + len(self.data)})")
        return (k, *rest)

    def __getitem__(self, key):
        return self.data[self._key(key)]

    def __setitem__(self, key, value) -> None:
        self.data[self._key(key)] = value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape


@dataclasses.dataclass
class RackAggregates:
    """Run aggregates of the per-rack and per-RPP series, folded window by window.

    Counts are of powered rack-samples; temperatures [degC], power [W], energy as the sum of
    sampled power [W x samples] (times the step gives J).
    """

    inlet_max_c: np.ndarray          # (R,) float32, hottest inlet while powered (NaN: never)
    n_above: np.ndarray              # (R,) samples with inlet > ASHRAE recommended max
    n_outside: np.ndarray            # (R,) samples with inlet outside the recommended range
    n_ashrae_out: np.ndarray         # (R,) samples in an ASHRAE class beyond recommended
    power_max_w: np.ndarray          # (R,) float32
    power_sum_w: np.ndarray          # (R,) float64, sum over samples
    power_at_peak_w: np.ndarray      # (R,) float32, at the sample of peak facility IT power
    rpp_lf_max: np.ndarray           # (P,) float32
    inlet_hist: np.ndarray           # (_HIST_BINS,) powered inlets
    hall_power_w: np.ndarray | None  # (T, H) at level "hall"
    hall_inlet_max_c: np.ndarray | None
    inlet_peak_max_c: float = math.nan
    it_peak_w: float = -math.inf
    _halls: tuple | None = dataclasses.field(default=None, repr=False, compare=False)
    #: window-sized buffers kept from fold to fold (:meth:`_bools`, :meth:`_hist_add`)
    _buf: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def empty(cls, n_samples: int, n_racks: int, n_rpps: int, n_halls: int, halls: bool) -> RackAggregates:
        return cls(inlet_max_c=np.full(n_racks, np.nan, np.float32), n_above=np.zeros(n_racks, np.int64),
                   n_outside=np.zeros(n_racks, np.int64), n_ashrae_out=np.zeros(n_racks, np.int64),
                   power_max_w=np.zeros(n_racks, np.float32), power_sum_w=np.zeros(n_racks),
                   power_at_peak_w=np.zeros(n_racks, np.float32), rpp_lf_max=np.zeros(n_rpps, np.float32),
                   inlet_hist=np.zeros(_HIST_BINS, np.int64),
                   hall_power_w=np.zeros((n_samples, n_halls)) if halls else None,
                   hall_inlet_max_c=np.full((n_samples, n_halls), np.nan, np.float32) if halls else None)

    #: fold with shared passes over the window (issue 19, speed only): each mask and the
    #: powered inlets evaluated once, the recommended-range test as two comparisons, the hall
    #: sort skipped for racks already in hall order; False runs :meth:`_fold_reference`
    shared: ClassVar[bool] = True

    def fold(self, i0: int, w: dict[str, np.ndarray], flow, rack_hall: np.ndarray | None) -> None:
        """Fold samples ``i0 .. i0 + len(window)`` of the per-rack series ``w`` and their
        power-tree ``flow`` into the aggregates.

        The same numbers as :meth:`_fold_reference`: a powered inlet above the recommended
        maximum (``pin > max`` there, ``pin`` NaN where unpowered) is ``on & (inlet > max)``;
        an ASHRAE class beyond recommended (``ashrae_class > 0``: the inlet, as float64,
        outside ``[min, max]`` or NaN) is the inlet outside that range or NaN, the float32
        inlet compared with bounds that float32 holds exactly; a stable argsort of halls
        already in order is the identity."""
        if not self.shared:
            return self._fold_reference(i0, w, flow, rack_hall)
        from twin.thermal.properties import ASHRAE_RECOMMENDED_MAX_C, ASHRAE_RECOMMENDED_MIN_C

        on = _powered(w["rack_state"])
        # every rack powered through the window (the common case): the masks are all True,
        # so ``where(on, x, -inf)`` is x and ``&= on`` changes nothing (skipped)
        all_on = bool(on.all())
        inlet = w["rack_inlet_c"]
        hot_all = inlet if all_on else np.where(on, inlet, -np.inf)
        hot = hot_all.max(axis=0)
        self.inlet_max_c = np.fmax(self.inlet_max_c, np.where(np.isfinite(hot), hot, np.nan).astype(np.float32))
        b = self._bools(inlet.shape)
        above = np.greater(inlet, ASHRAE_RECOMMENDED_MAX_C, out=b[0])
        if not all_on:
            above &= on
        self.n_above += _column_counts(above)
        outside = np.less(inlet, ASHRAE_RECOMMENDED_MIN_C, out=b[1])
        if not all_on:
            outside &= on
        outside |= above
        self.n_outside += _column_counts(outside)
        nan = np.isnan(inlet)
        if not all_on:
            nan &= on
        nan |= outside
        self.n_ashrae_out += _column_counts(nan)
        power = self._fold_series_shared(w, flow, on, all_on, inlet)
        if self.hall_power_w is not None and self.hall_inlet_max_c is not None and rack_hall is not None:
            order, halls, starts = self._hall_runs(rack_hall)
            t = len(power)
            pw = power.astype(float) if order is None else power[:, order].astype(float)
            self.hall_power_w[i0:i0 + t, halls] = np.add.reduceat(pw, starts, axis=1)
            hmax = np.maximum.reduceat(hot_all if order is None else hot_all[:, order], starts, axis=1)
            self.hall_inlet_max_c[i0:i0 + t, halls] = np.where(np.isfinite(hmax), hmax, np.nan)

    def _bools(self, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Two bool buffers of ``shape`` for the window's masks, kept from fold to fold (a
        fresh window-sized array costs its page faults at every flush)."""
        n = math.prod(shape)
        buf = self._buf.get("bool")
        if buf is None or buf.shape[1] < n:
            buf = self._buf["bool"] = np.empty((2, n), bool)
        return buf[0, :n].reshape(shape), buf[1, :n].reshape(shape)

    def _hist_add(self, vals: np.ndarray) -> None:
        """Add float32 inlets ``vals`` [degC, any shape] to the histogram: as
        :meth:`_fold_series` bins them (to float64, minus the low edge, over the bin width,
        truncated to int64, clipped), a chunk of :data:`_HIST_CHUNK` values at a time in two
        buffers kept from fold to fold (no window-sized temporaries: their page faults cost
        more than the arithmetic; the counts do not depend on the order). Speed only."""
        flat = vals.reshape(-1)
        n = flat.size
        if not n:
            return
        c = min(n, _HIST_CHUNK)
        f = self._buf.get("f64")
        if f is None or f.size < c:
            f = self._buf["f64"] = np.empty(c)
            self._buf["i64"] = np.empty(c, np.int64)
        ib = self._buf["i64"]
        for a in range(0, n, c):
            part = flat[a:a + c]
            v, b = f[:part.size], ib[:part.size]
            np.subtract(part, _HIST_LO_C, out=v, dtype=np.float64)
            np.divide(v, _HIST_BIN_K, out=v)
            np.copyto(b, v, casting="unsafe")
            np.clip(b, 0, _HIST_BINS - 1, out=b)
            self.inlet_hist += np.bincount(b, minlength=_HIST_BINS)

    def _fold_series_shared(self, w: dict[str, np.ndarray], flow, on: np.ndarray, all_on: bool,
                            inlet: np.ndarray) -> np.ndarray:
        """:meth:`_fold_series` with every rack powered (``all_on``) read without the mask:
        the histogram counts the same values (in another order: counts do not care); the
        peak inlet as the plain maximum when that is finite (then no NaN is there and the
        -inf left out cannot be the maximum); the histogram's buffers kept."""
        self._hist_add(inlet if all_on else inlet[on])
        peak = w["rack_inlet_peak_c"]
        top = peak.max() if peak.size else np.nan
        if not np.isfinite(top):
            fin = peak[np.isfinite(peak)]
            top = fin.max() if fin.size else None
        if top is not None:
            self.inlet_peak_max_c = float(np.fmax(self.inlet_peak_max_c, top))
        return self._fold_power(w, flow)

    def _fold_series(self, w: dict[str, np.ndarray], flow, on: np.ndarray, inlet: np.ndarray) -> np.ndarray:
        """Fold the powered inlets' histogram, the peak inlets, the rack power and the
        power tree's IT peak and RPP loads (both folds); returns the window's rack power."""
        vals = inlet[on].astype(float)
        if vals.size:
            b = np.clip(((vals - _HIST_LO_C) / _HIST_BIN_K).astype(np.int64), 0, _HIST_BINS - 1)
            self.inlet_hist += np.bincount(b, minlength=_HIST_BINS)
        peak = w["rack_inlet_peak_c"]
        fin = peak[np.isfinite(peak)]
        if fin.size:
            self.inlet_peak_max_c = float(np.fmax(self.inlet_peak_max_c, fin.max()))
        return self._fold_power(w, flow)

    def _fold_power(self, w: dict[str, np.ndarray], flow) -> np.ndarray:
        """Fold the window's rack power (peak and sum per rack), the power tree's IT peak (and
        the rack power at it) and the RPP load fractions; returns the window's rack power."""
        power = w["rack_power_w"]
        self.power_max_w = np.maximum(self.power_max_w, power.max(axis=0))
        self.power_sum_w += power.sum(axis=0, dtype=np.float64)
        it = np.asarray(flow.it_w, float)
        k = int(np.argmax(it))
        if it[k] > self.it_peak_w:
            self.it_peak_w, self.power_at_peak_w = float(it[k]), power[k].copy()
        self.rpp_lf_max = np.maximum(self.rpp_lf_max, np.asarray(flow.rpp_load_fraction, np.float32).max(axis=0))
        return power

    def _hall_runs(self, rack_hall: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The racks sorted by hall (None: already in hall order), the halls and the first
        position of each, kept with ``rack_hall`` (the same array every fold)."""
        hit = self._halls
        if hit is None or hit[0] is not rack_hall:
            order = np.argsort(rack_hall, kind="stable")
            halls, starts = np.unique(rack_hall[order], return_index=True)
            same = bool(np.array_equal(order, np.arange(len(order))))
            hit = self._halls = (rack_hall, None if same else order, halls, starts)
        return hit[1], hit[2], hit[3]

    def _fold_reference(self, i0: int, w: dict[str, np.ndarray], flow, rack_hall: np.ndarray | None) -> None:
        """:meth:`fold` as first written, the reference the shared passes are tested against."""
        from twin.sim.state import RackState
        from twin.thermal import ashrae_class
        from twin.thermal.properties import ASHRAE_RECOMMENDED_MAX_C, ASHRAE_RECOMMENDED_MIN_C

        on = RackState.powered(w["rack_state"])
        inlet = w["rack_inlet_c"]
        pin = np.where(on, inlet, np.nan)
        hot = np.where(on, inlet, -np.inf).max(axis=0)
        self.inlet_max_c = np.fmax(self.inlet_max_c, np.where(np.isfinite(hot), hot, np.nan).astype(np.float32))
        with np.errstate(invalid="ignore"):
            self.n_above += (pin > ASHRAE_RECOMMENDED_MAX_C).sum(axis=0)
            self.n_outside += ((pin > ASHRAE_RECOMMENDED_MAX_C) | (pin < ASHRAE_RECOMMENDED_MIN_C)).sum(axis=0)
        self.n_ashrae_out += (on & (ashrae_class(inlet) > 0)).sum(axis=0)
        power = self._fold_series(w, flow, on, inlet)
        if self.hall_power_w is not None and self.hall_inlet_max_c is not None and rack_hall is not None:
            # racks sorted by hall, then one reduceat per hall run
            order = np.argsort(rack_hall, kind="stable")
            halls, starts = np.unique(rack_hall[order], return_index=True)
            t = len(power)
            self.hall_power_w[i0:i0 + t, halls] = np.add.reduceat(power[:, order].astype(float), starts, axis=1)
            hmax = np.maximum.reduceat(np.where(on, inlet, -np.inf)[:, order], starts, axis=1)
            self.hall_inlet_max_c[i0:i0 + t, halls] = np.where(np.isfinite(hmax), hmax, np.nan)

    def median_powered_inlet_c(self) -> float:
        """Median of every powered rack-sample's inlet [degC] (to the 0.01 K bin), NaN if none."""
        n = int(self.inlet_hist.sum())
        if n == 0:
            return math.nan
        k = int(np.searchsorted(np.cumsum(self.inlet_hist), (n + 1) // 2))
        return _HIST_LO_C + (k + 0.5) * _HIST_BIN_K


class Recorder:
    """Time series of a run, allocated from the output table.

    ``rec[name][i] = value`` writes sample ``i``; :meth:`set` writes a whole series
    evaluated after the run, cast to the declared dtype and checked against the declared
    shape. Only declared outputs exist: a typo is a KeyError, not a new variable.

    ``rack_series`` (``full``, ``hall``, ``none``): below ``full`` the per-rack and per-RPP
    series are windows of :attr:`window` samples (see the module docstring); ``rack_hall``
    (R,) gives each rack's hall for the per-hall series.
    """

    def __init__(self, n_samples: int, sizes: dict[str, int], rack_series: str = "full",
                 rack_hall: np.ndarray | None = None):
        if rack_series not in LEVELS:
            raise ValueError(f"rack_series {rack_series!r}: expected one of {LEVELS}")
        self.n_samples = n_samples
        self.level = rack_series
        self.sizes = {"time": n_samples, **sizes}
        self.declared: dict[str, Output] = {o.name: o for o in OUTPUTS if o.recorded}
        self.series: dict[str, np.ndarray] = {}
        self.windowed = tuple(o.name for o in self.declared.values() if not o.kept(rack_series)
                              and o.dims[:1] == ("time",) and "rack" in o.dims)
        self.dropped = tuple(o.name for o in self.declared.values()
                             if not o.kept(rack_series) and o.name not in self.windowed)
        per_sample = sum(np.dtype(self.declared[n].dtype).itemsize * math.prod(self.shape(self.declared[n])[1:])
                         for n in self.windowed)
        self.window = n_samples if not self.windowed else int(max(1, min(n_samples,
                                                                        WINDOW_BYTES // max(per_sample, 1))))
        self.base = 0
        self.rack_hall = None if rack_hall is None else np.asarray(rack_hall)
        self.agg: RackAggregates | None = None
        self._flows: list = []
        #: live utility feeds at every sample [bool (T, F)] (written by the grid); the flushed
        #: windows are routed with them through ``feed_tree`` (the power chain's tree, set
        #: when the run starts), so a sample with a feed down records what the survivors carry
        self.feed_up = np.ones((n_samples, sizes.get("feed", 1)), bool)
        self.feed_tree: PowerTree | None = None
        if rack_series != "full":
            self.agg = RackAggregates.empty(n_samples, sizes.get("rack", 0), sizes.get("rpp", 0),
                                            sizes.get("hall", 1), rack_series == "hall")
        self._windows: dict[str, _Window] = {}
        for o in self.declared.values():
            if o.name in self.dropped:
                continue
            if o.name in self.windowed:
                w = _Window(np.zeros((self.window, *self.shape(o)[1:]), o.dtype), self)
                self._windows[o.name] = w
                self.series[o.name] = w.data
            else:
                self.series[o.name] = np.zeros(self.shape(o), o.dtype)
        #: what ``rec[name]`` returns (a window, else the series): one lookup per access, the
        #: components read and write through it dozens of times per sample
        self._items: dict[str, _Window | np.ndarray] = {**self.series, **self._windows}

    def shape(self, o: Output) -> tuple[int, ...]:
        return tuple(self.sizes[d] for d in o.dims)

    def __getitem__(self, name: str):
        return self._items[name]

    def set(self, name: str, values) -> None:
        """Store a whole series (evaluated after the run) with its declared dtype; a series
        this ``rack_series`` level does not keep is not stored."""
        o = self.declared[name]
        if name in self.dropped:
            return
        arr = np.asarray(values, dtype=o.dtype)
        if arr.shape != self.shape(o):
            raise ValueError(f"output {name}: shape {arr.shape}, declared {o.dims} = {self.shape(o)}")
        self.series[name] = arr
        self._items[name] = self._windows.get(name, arr)

    # ------------------------------------------------------------------ windows
    def window_full(self, i: int) -> bool:
        """True when sample ``i`` is the last of the window (or of the run): time to flush."""
        return bool(self.windowed) and (i + 1 - self.base >= self.window or i + 1 >= self.n_samples)

    def window_end(self) -> int:
        """One past the last sample the current window holds (``n_samples`` when unwindowed):
        a stretch recorded at once (:meth:`repeat`) never crosses a flush."""
        return min(self.base + self.window, self.n_samples) if self.windowed else self.n_samples

    def repeat(self, names, i0: int, i1: int) -> None:
        """Copy sample ``i0`` of each time series in ``names`` to samples ``i0 + 1 .. i1 - 1``
        (in one window). Names not recorded per sample here (no time axis, or not kept at
        this ``rack_series`` level) are skipped."""
        for name in names:
            o = self.declared.get(name)
            if o is None or o.dims[:1] != ("time",) or name not in self.series:
                continue
            w = self._windows.get(name)
            data, base = (w.data, self.base) if w is not None else (self.series[name], 0)
            if not (base <= i0 and i1 - base <= len(data)):
                raise IndexError(f"samples {i0}..{i1} of {name} are outside the recorder's window")
            data[i0 + 1 - base:i1 - base] = data[i0 - base]

    def window_rack_power_w(self, i_end: int) -> np.ndarray:
        """Rack power of the window's samples up to ``i_end`` (exclusive) [W (t, R)]."""
        return self._windows["rack_power_w"].data[:i_end - self.base]

    def flush(self, i_end: int, flow) -> None:
        """Fold the window's samples ``base .. i_end`` (exclusive), whose rack power gives the
        power-tree ``flow``, into the aggregates; keep the flow's time series; move on."""
        assert self.agg is not None
        t = i_end - self.base
        up = self.feed_up[self.base:i_end]
        if self.feed_tree is not None and not up.all():
            from twin.power.tree import evaluate_power_tree
            flow = evaluate_power_tree(self.feed_tree, flow.rack_w, up, copy=False)
        w = {n: win.data[:t] for n, win in self._windows.items()}
        self.agg.fold(self.base, w, flow, self.rack_hall)
        self._flows.append(_time_parts(flow))
        self.base = i_end
        for win in self._windows.values():
            win.data[...] = 0

    @property
    def flow(self):
        """The power-tree flow of every sample, assembled from the flushed windows (None at
        ``rack_series: full``, where the power chain evaluates the whole (T, R) series): a
        :class:`twin.power.tree.PowerFlow` whose per-RPP parts are None, its RPP losses
        summed per sample ((T, 1))."""
        if not self._flows:
            return None
        from twin.power.tree import PowerFlow

        parts = {k: np.concatenate([f[k] for f in self._flows]) for k in self._flows[0]}
        return PowerFlow(rack_w=None, rack_dropped=None, rpp_w=None, rpp_load_fraction=None,
                         rpp_rating_fraction=None, **parts)


_TIME_PARTS = ("rpp_loss_w", "ups_output_w", "ups_load_fraction", "ups_loss_w", "feed_w", "feed_load_fraction",
               "feed_loss_w", "it_w", "utility_w", "loss_w", "rpp_ok", "feed_ok", "ups_ok", "holds")


def _time_parts(flow) -> dict[str, np.ndarray]:
    """The parts of a (t, ...) power flow that are kept for every sample (RPP losses summed)."""
    out = {k: np.asarray(getattr(flow, k)) for k in _TIME_PARTS}
    out["rpp_loss_w"] = out["rpp_loss_w"].sum(axis=-1, keepdims=True)
    return out
