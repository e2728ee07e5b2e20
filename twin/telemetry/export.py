"""A run's time series as OpenMetrics 1.0 text, for ``promtool tsdb create-blocks-from openmetrics``.

Every data variable with a ``time`` dimension becomes the metric family ``twin_<variable>``
(a gauge) with ``# HELP`` (long name and units) and, when the name ends in a unit the
OpenMetrics rule accepts as a suffix (``_w``, ``_c``, ``_fraction``, ``_s``), ``# UNIT``.
Another prefix gets a separator (``dc1`` or ``dc1_`` gives ``dc1_<variable>``); ``twin
compare`` recognises the file under any prefix (:func:`twin.telemetry.mapping.export_prefix`).
Each rack/feed/rpp/job is a series with that label; every series also carries
``scenario`` and ``run`` (the first 12 hex digits of the scenario hash). Timestamps are
seconds since 1970 UTC (the run's clock is UTC). NaN samples (a rack switched off has no
GPU temperature) are left out, as a meter that is off sends nothing.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

#: Name suffixes written as OpenMetrics units (the unit must be the metric name's suffix).
UNIT_SUFFIXES = ("w", "c", "fraction", "s")
PREFIX = "twin_"


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


_PREFIX = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")


def metric_prefix(prefix: str) -> str:
    """The prefix as written before each variable name: a separator ``_`` added when it
    ends in neither ``_`` nor ``:`` (``dc1`` -> ``dc1_``, so the name stays readable and
    the variable findable); '' stays ''. ValueError for a prefix that cannot start an
    OpenMetrics metric name (letters, digits, ``_`` and ``:``, not starting with a digit)."""
    if prefix == "":
        return prefix
    if not _PREFIX.match(prefix):
        raise ValueError(f"metric name prefix {prefix!r}: use letters, digits, '_' and ':', "
                         "not starting with a digit")
    return prefix if prefix.endswith(("_", ":")) else prefix + "_"


def _same_dimension(suffix: str, units: str) -> bool:
    from twin.telemetry.series import canonical_unit
    try:
        return canonical_unit(suffix)[0] == canonical_unit(units)[0]
    except ValueError:
        return False


def openmetrics_families(ds, prefix: str = PREFIX):
    """Yield the text of one metric family at a time (so a large run streams to disk);
    ``prefix`` as :func:`metric_prefix` writes it."""
    prefix = metric_prefix(prefix)
    t_ns = ds["time"].values.astype("datetime64[ns]").astype(np.int64)
    ts = [_fmt(x) for x in (t_ns / 1e9).tolist()]
    base = {"scenario": str(ds.attrs.get("scenario_name", "")),
            "run": str(ds.attrs.get("scenario_hash", ""))[:12]}
    for var in ds.data_vars:
        da = ds[var]
        if "time" not in da.dims or da.ndim > 2 or da.dtype.kind not in "fiub":
            continue
        name = prefix + var
        suffix = var.rsplit("_", 1)[-1]
        units = da.attrs.get("units", "")
        head = [f"# TYPE {name} gauge"]
        if suffix in UNIT_SUFFIXES and _same_dimension(suffix, units):
            head.append(f"# UNIT {name} {suffix}")
        head.append(f"# HELP {name} {_escape(str(da.attrs.get('long_name', var)))} [{units}]")
        da = da.transpose("time", ...)
        values = np.asarray(da.values, dtype=float).reshape(len(t_ns), -1)
        if np.isnan(values).all():
            continue   # nothing to say (e.g. a series of an optional model the scenario leaves off)
        other = [d for d in da.dims if d != "time"]
        coords = [str(c) for c in ds[other[0]].values] if other else [None]
        chunks = ["\n".join(head)]
        for j, c in enumerate(coords):
            labels = dict(base)
            if other:
                labels[str(other[0])] = str(c)
            lab = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            col = values[:, j]
            keep = np.flatnonzero(np.isfinite(col) | np.isinf(col))
            vals = col[keep].tolist()
            chunks.append("\n".join(f"{name}{{{lab}}} {_fmt(v)} {ts[k]}"
                                    for k, v in zip(keep.tolist(), vals, strict=True)))
        yield "\n".join(x for x in chunks if x) + "\n"


def write_openmetrics(ds, path: str | Path, prefix: str = PREFIX) -> int:
    """Write the run's series to ``path`` (atomically: a temporary file renamed at the end).

    Returns the number of metric families written. ValueError (before anything is written)
    for a prefix no metric name can start with (:func:`metric_prefix`).
    """
    prefix = metric_prefix(prefix)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        for fam in openmetrics_families(ds, prefix):
            fh.write(fam)
            n += 1
        fh.write("# EOF\n")
    tmp.replace(out)
    return n
