"""Measured time series: the record every reader returns, input checks, units, gaps.

A :class:`Series` holds one measured series as epoch nanoseconds (UTC, ``int64``) and
values (``float64``) with the file it came from, its measured name, its labels and its
unit. Every problem with measured input raises :class:`TelemetryError` naming the file,
the series and the problem; nothing is interpolated silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NS = 1_000_000_000


class TelemetryError(ValueError):
    """Bad measured input: ``file``, ``series`` and ``problem`` make one clear line."""

    def __init__(self, file: str, series: str, problem: str):
        self.file, self.series, self.problem = str(file), str(series), problem
        where = f"{self.file}: series {self.series}" if series else self.file
        super().__init__(f"{where}: {problem}")


@dataclass
class Series:
    """One measured series.

    ``t_ns``: sample times [ns since 1970-01-01 UTC], strictly increasing after
    :func:`check_series`; ``values``: readings in ``unit``; ``kind``: ``"gauge"`` or
    ``"counter"`` (a monotonic total such as energy in J).
    """

    source: str
    name: str
    labels: dict[str, str]
    t_ns: np.ndarray
    values: np.ndarray
    unit: str | None = None
    kind: str = "gauge"
    gaps: list[tuple[int, int]] = field(default_factory=list)   # (last before, first after) [ns]

    @property
    def key(self) -> str:
        """``name{a="x",b="y"}``: how errors and reports name the series."""
        if not self.labels:
            return self.name
        inner = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.name}{{{inner}}}"


def iso(t_ns: int | np.integer) -> str:
    """An epoch-ns time as ISO 8601 UTC with a ``Z``, for messages and reports."""
    return str(np.datetime64(int(t_ns), "ns").astype("datetime64[s]")) + "Z"


# --------------------------------------------------------------------------- units
#: Canonical unit of each dimension (the twin's ``units`` attributes) and the factor and
#: offset taking a measured unit to it: ``canonical = factor * measured + offset``.
UNIT_TABLE: dict[str, tuple[str, float, float]] = {
    # power [W]
    "w": ("W", 1.0, 0.0), "watt": ("W", 1.0, 0.0), "watts": ("W", 1.0, 0.0),
    "mw_milli": ("W", 1e-3, 0.0), "milliwatts": ("W", 1e-3, 0.0),
    "kw": ("W", 1e3, 0.0), "kilowatts": ("W", 1e3, 0.0), "kilowatt": ("W", 1e3, 0.0),
    "megawatts": ("W", 1e6, 0.0),
    # temperature [degC]
    "degc": ("degC", 1.0, 0.0), "c": ("degC", 1.0, 0.0), "celsius": ("degC", 1.0, 0.0),
    "°c": ("degC", 1.0, 0.0), "k": ("degC", 1.0, -273.15), "kelvin": ("degC", 1.0, -273.15),
    "degf": ("degC", 5.0 / 9.0, -32.0 * 5.0 / 9.0), "fahrenheit": ("degC", 5.0 / 9.0, -32.0 * 5.0 / 9.0),
    # energy [J] (counters; their rate is a power in W)
    "j": ("J", 1.0, 0.0), "joules": ("J", 1.0, 0.0), "mj_milli": ("J", 1e-3, 0.0),
    "millijoules": ("J", 1e-3, 0.0), "kwh": ("J", 3.6e6, 0.0), "wh": ("J", 3600.0, 0.0),
    # ratios [1]
    "1": ("1", 1.0, 0.0), "ratio": ("1", 1.0, 0.0), "fraction": ("1", 1.0, 0.0),
    "percent": ("1", 0.01, 0.0), "%": ("1", 0.01, 0.0),
    # frequency [Hz]
    "hz": ("Hz", 1.0, 0.0), "hertz": ("Hz", 1.0, 0.0), "mhz": ("Hz", 1e6, 0.0), "megahertz": ("Hz", 1e6, 0.0),
    # time [s]
    "s": ("s", 1.0, 0.0), "seconds": ("s", 1.0, 0.0), "h": ("s", 3600.0, 0.0),
    # counts
    "gpu": ("GPU", 1.0, 0.0), "node": ("node", 1.0, 0.0), "count": ("count", 1.0, 0.0),
    "part": ("part", 1.0, 0.0), "tokens": ("tokens", 1.0, 0.0), "tokens/s": ("tokens/s", 1.0, 0.0),
}
# "mW" and "MW", "mJ" and "MJ" differ only in case: spelled out so case folding cannot confuse them
_CASED = {"mW": "mw_milli", "MW": "megawatts", "mJ": "mj_milli", "MJ": None}


def canonical_unit(unit: str) -> tuple[str, float, float]:
    """``(canonical unit, factor, offset)`` for a measured unit string; unknown -> ValueError."""
    u = unit.strip()
    if u in _CASED:
        key = _CASED[u]
        return ("J", 1e6, 0.0) if key is None else UNIT_TABLE[key]
    try:
        return UNIT_TABLE[u.lower()]
    except KeyError:
        raise ValueError(f"unknown unit {unit!r}; known: W, kW, MW, mW, degC, K, degF, J, kWh, "
                         "1, percent, Hz, MHz, s, h") from None


def convert(values: np.ndarray, from_unit: str, to_unit: str) -> np.ndarray:
    """Values in ``from_unit`` expressed in ``to_unit`` (both reduce to one canonical unit).

    Raises ValueError on a mismatch of dimension (watts into degC is an error, not a guess).
    """
    c_from, f1, o1 = canonical_unit(from_unit)
    c_to, f2, o2 = canonical_unit(to_unit)
    if c_from != c_to:
        raise ValueError(f"unit mismatch: {from_unit!r} is {c_from}, the variable is in {to_unit!r} ({c_to})")
    if (f1, o1) == (f2, o2):
        return np.asarray(values)   # same unit: no copy (long series stay as read)
    canonical = f1 * np.asarray(values, dtype=float) + o1
    return (canonical - o2) / f2


def unit_of_name(name: str) -> str | None:
    """The unit a twin-style name carries in its suffix (``rack_power_w`` -> ``W``)."""
    suffix = {"_w": "W", "_c": "degC", "_fraction": "1", "_s": "s", "_j": "J", "_kw": "kW", "_h": "h"}
    for s, u in suffix.items():
        if name.endswith(s):
            return u
    return None


# --------------------------------------------------------------------------- checks
def check_series(s: Series, *, max_gap_s: float | None = None, allow_gaps: bool = False) -> Series:
    """Validate a measured series in place and return it (sorted by time).

    Errors (:class:`TelemetryError`): no samples, NaN or infinite values, duplicate
    timestamps, a counter that decreases (reset). Gaps -- a step longer than ``max_gap_s``
    (default 2.5 x the median step) -- are errors unless ``allow_gaps``; then they are kept
    in ``s.gaps`` and the comparison excludes them (never interpolated).
    """
    t = np.asarray(s.t_ns, dtype=np.int64)
    v = np.asarray(s.values)
    if v.dtype.kind != "f":
        v = v.astype(float)
    if t.size == 0:
        raise TelemetryError(s.source, s.key, "no samples")
    if t.size != v.size:
        raise TelemetryError(s.source, s.key, f"{t.size} times but {v.size} values")
    bad = ~np.isfinite(v)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise TelemetryError(s.source, s.key, f"{int(bad.sum())} NaN/infinite values, the first at "
                                              f"{iso(t[k])}; remove or mark them as a gap")
    dt = _steps(t)
    if (dt < 0).any():
        order = np.argsort(t, kind="stable")
        t, v = t[order], v[order]
        dt = np.diff(t)
    dup = dt == 0
    if dup.any():
        k = int(np.flatnonzero(dup)[0])
        raise TelemetryError(s.source, s.key, f"{int(dup.sum())} duplicate timestamps, the first at "
                                              f"{iso(t[k])}")
    if s.kind == "counter":
        drop = v[1:] < v[:-1]
        if drop.any():
            k = int(np.flatnonzero(drop)[0])
            raise TelemetryError(s.source, s.key, f"counter reset at {iso(t[k + 1])} "
                                                  f"({v[k]:g} -> {v[k + 1]:g}); split the file there")
    s.t_ns, s.values = t, v
    s.gaps = find_gaps(t, max_gap_s, dt)
    if s.gaps and not allow_gaps:
        a, b = s.gaps[0]
        raise TelemetryError(s.source, s.key, f"{len(s.gaps)} gap(s) in the data, the first from "
                                              f"{iso(a)} to {iso(b)}; pass --allow-gaps to exclude "
                                              "them from the comparison")
    return s


_LAST_STEPS: list = [None, None]   # (time axis, its steps): series of one scrape share their axis


def _steps(t: np.ndarray) -> np.ndarray:
    if _LAST_STEPS[0] is t:
        return _LAST_STEPS[1]
    dt = np.diff(t)
    _LAST_STEPS[:] = [t, dt]
    return dt


def typical_step_ns(t_ns: np.ndarray) -> float:
    """Median step of a sorted time axis [ns] (of at most ~100k evenly spread steps: a long
    regular series need not be sorted in full to know its cadence)."""
    if t_ns.size < 2:
        return 0.0
    dt = np.diff(t_ns[:: max(1, t_ns.size // 100_000)])
    stride = max(1, t_ns.size // 100_000)
    return float(np.median(dt)) / stride


def find_gaps(t_ns: np.ndarray, max_gap_s: float | None = None, dt=None) -> list[tuple[int, int]]:
    """Steps longer than ``max_gap_s`` (default 2.5 x the median step) as ``(before, after)``."""
    if t_ns.size < 3:
        return []
    dt = np.diff(t_ns) if dt is None else dt
    limit = max_gap_s * NS if max_gap_s else 2.5 * float(np.median(dt[:: max(1, dt.size // 100_000)]))
    k = np.flatnonzero(dt > limit)
    return [(int(t_ns[i]), int(t_ns[i + 1])) for i in k]


def counter_rate(s: Series) -> Series:
    """Per-second rate of a counter (``d value / d t``), stamped at the end of each step.

    An energy counter in J becomes a power in W. Call :func:`check_series` first (resets
    are errors, not rates).
    """
    dt_s = np.diff(s.t_ns) / NS
    rate = np.diff(s.values) / dt_s
    c, f, _ = canonical_unit(s.unit or "1")
    unit = {"J": "W"}.get(c, f"{c}/s")
    return Series(s.source, s.name, dict(s.labels), s.t_ns[1:], rate * f, unit, "gauge", s.gaps)
