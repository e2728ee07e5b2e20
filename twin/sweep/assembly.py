"""Assembly of a sweep: the stored runs as one xarray Dataset (``sweep.nc``), Monte Carlo
summaries over seeds (``summary.csv``) and paired differences between grid points."""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from twin.studies.stats import LEVEL
from twin.sweep.spec import DERIVED_SERIES, SweepSpec, _jsonable, _yaml_scalar
from twin.sweep.store import RunStore


def _coord(labels: tuple) -> np.ndarray:
    """Coordinate values: numbers stay numbers, bools stay bools, anything mixed is text."""
    if all(isinstance(v, bool) for v in labels):
        return np.array(labels, dtype=bool)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in labels):
        return np.array(labels, dtype=np.int64)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in labels):
        return np.array(labels, dtype=np.float64)
    return np.array([v if isinstance(v, str) else _yaml_scalar(v) for v in labels], dtype=str)


#: Attributes of the sweep's time coordinate: one value per sample of the runs (hourly by
#: default), in days since the scenario start, not one value per day.
DAY_ATTRS = {"units": "days", "long_name": "time since the scenario start [days]",
             "comment": "one value per sample of the runs (simulation.sample_interval_s), not per day"}


def series_attrs(name: str) -> dict[str, str]:
    """``units`` and ``long_name`` of a selected series, as the run's results.nc has them
    (``twin.outputs``: recorded variables and the series derived from per-rack/job data)."""
    from twin.outputs import OUTPUT_BY_NAME
    o = OUTPUT_BY_NAME.get(name)
    if o is not None:
        return {"units": o.units, "long_name": o.long_name}
    unit, long = DERIVED_SERIES.get(name, ("", name))
    return {"units": unit, "long_name": long}


def assemble(spec: SweepSpec, tasks: list, store: RunStore, records: dict | None = None):
    """Build the sweep Dataset from the stored runs: KPIs (axis..., seed), series
    (axis..., seed, day), and status/error/key per run. Runs not on disk are 'missing'.

    ``records``: run key -> the record this process just stored (what
    :meth:`RunStore.load` would read back: floats through JSON and arrays through NPZ are
    exact), so the runs of this call are not read back from disk."""
    import xarray as xr

    from twin.results import KPI_UNITS
    from twin.studies.metrics import STUDY_KPI_UNITS

    shape = spec.shape
    dims = tuple(a.name for a in spec.axes) + ("seed",)
    recs = {}
    records = records or {}
    for t in tasks:
        if t.key not in recs:
            recs[t.key] = records[t.key] if t.key in records else store.load(t.key)
    units = {**KPI_UNITS, **STUDY_KPI_UNITS}
    kpi_names = list(units)
    for r in recs.values():
        for k in sorted((r or {}).get("kpis", {})):       # (the stored JSON's key order)
            if k not in units:
                kpi_names.append(k)
                units[k] = ("", k)
    kpi = {k: np.full(shape, np.nan) for k in kpi_names}
    status = np.full(shape, "missing", dtype=object)
    error = np.full(shape, "", dtype=object)
    keys = np.full(shape, "", dtype=object)
    wall = np.full(shape, np.nan)
    days = [r["day"] for r in recs.values() if r and r.get("day") is not None and len(r["day"])]
    day = np.unique(np.round(np.concatenate(days), 9)) if days else np.zeros(0)
    ser = {n: np.full((*shape, len(day)), np.nan, dtype=np.float64 if n == "tokens_cumulative" else np.float32)
           for n in spec.series}
    for t in tasks:
        r = recs[t.key]
        keys[t.index] = t.key
        if not r:
            continue
        status[t.index] = r.get("status", "failed")
        error[t.index] = r.get("error") or ""
        wall[t.index] = r.get("wall_s", np.nan)
        for k, v in r.get("kpis", {}).items():
            kpi[k][t.index] = np.nan if v is None else v
        if r.get("day") is not None and len(day):
            pos = np.searchsorted(day, np.round(r["day"], 9))
            for n in spec.series:
                if n in r["series"]:
                    ser[n][t.index + (pos,)] = r["series"][n]
    # (dims, values, attrs) tuples, not DataArrays: the Dataset then has nothing to align
    # (aligning ~90 DataArrays was two thirds of the assembly's time)
    data: dict[str, tuple] = {k: (dims, v, {"units": units[k][0], "long_name": units[k][1]})
                              for k, v in kpi.items()}
    for n, v in ser.items():
        data[n] = ((*dims, "day"), v, series_attrs(n))
    data["status"] = (dims, status.astype(str), {"long_name": "ok, failed or missing"})
    data["error"] = (dims, error.astype(str), {"long_name": "error of a failed run"})
    data["run_key"] = (dims, keys.astype(str), {"long_name": "SHA-256 of the resolved scenario (runs/<key>.json)"})
    data["wall_s"] = (dims, wall, {"units": "s", "long_name": "wall time of the run"})
    coords: dict[str, Any] = {a.name: (a.name, _coord(a.labels)) for a in spec.axes}
    coords["seed"] = ("seed", np.array(spec.seeds, dtype=np.int64))
    coords["day"] = ("day", day, DAY_ATTRS)
    ds = xr.Dataset(data, coords=coords)
    from twin._version import __version__
    starts = sorted({r["start"] for r in recs.values() if r and r.get("start")})
    ds.attrs = {"title": f"twin sweep {spec.name}", "sweep_name": spec.name, "study": spec.study or "",
                "start": starts[0] if len(starts) == 1 else "",
                "sweep_json": json.dumps(spec.to_json(), default=_jsonable), "twin_version": __version__,
                "common_random_numbers": "seed index i runs every grid point with simulation.seed = seeds[i]",
                "runs_total": int(np.prod(shape)), "runs_failed": int((status == "failed").sum()),
                "runs_missing": int((status == "missing").sum())}
    # series of a metric that comes from scenarios with their own templates: keep the first seen
    return ds


def write_dataset(ds, out: Path) -> None:
    """Write sweep.nc and summary.csv atomically."""
    fd, tmp = tempfile.mkstemp(prefix=".sweep.", suffix=".nc", dir=out)
    os.close(fd)
    to_netcdf(ds, tmp)
    os.replace(tmp, out / "sweep.nc")
    table = summary_table(ds)
    fd, tmp = tempfile.mkstemp(prefix=".summary.", suffix=".csv", dir=out)
    os.close(fd)
    table.to_csv(tmp, index=False)
    os.replace(tmp, out / "summary.csv")


def to_netcdf(ds, path: str | Path) -> str:
    """Write a sweep Dataset as netCDF: the classic format (netCDF-3, 64-bit offsets, via
    scipy) when every value fits it, else netCDF-4 (HDF5, via h5netcdf). Returns the format.

    A sweep holds ~90 small variables; h5netcdf spends ~4 ms of Python per variable on
    dimension scales (0.3-0.4 s for a sweep, the largest serial part of a short one), the
    classic writer 25 ms in all. Both read back to the same Dataset (:func:`load_sweep`).
    The classic format has no 64-bit integers (a seed beyond 2**31 - 1), no text outside
    ASCII in attributes, and 4 GiB per variable; such a sweep is written as netCDF-4."""
    try:
        ds.to_netcdf(path, engine="scipy", format="NETCDF3_64BIT")
        return "NETCDF3_64BIT"
    except (ValueError, OverflowError, TypeError):
        ds.to_netcdf(path, engine="h5netcdf")
        return "NETCDF4"


def _netcdf_engine(path: Path) -> str:
    """The xarray engine for a netCDF file by its magic bytes (classic 'CDF', else HDF5)."""
    with open(path, "rb") as fh:
        return "scipy" if fh.read(3) == b"CDF" else "h5netcdf"


def load_sweep(out_dir: str | Path):
    """Open ``DIR/sweep.nc`` (loaded into memory) and its spec: (Dataset, SweepSpec)."""
    import xarray as xr
    out = Path(out_dir)
    with xr.open_dataset(out / "sweep.nc", engine=_netcdf_engine(out / "sweep.nc")) as ds:
        ds = ds.load()
    # the classic format stores integers as 32 bits: back to the int64 the assembly writes
    ints = [k for k, v in ds.variables.items() if v.dtype == np.int32]
    if ints:
        ds = ds.assign({k: ds[k].astype(np.int64) for k in ints if k in ds.data_vars})
        ds = ds.assign_coords({k: ds[k].astype(np.int64) for k in ints if k in ds.coords})
    return ds, SweepSpec.from_json(json.loads(ds.attrs["sweep_json"]))


def kpi_names(ds) -> list[str]:
    """Numeric per-run variables of a sweep Dataset (no 'day' dim, not bookkeeping)."""
    var = ds.variables           # Variables: no DataArray is built per name
    return [k for k in ds.data_vars
            if "day" not in var[k].dims and var[k].dtype.kind in "fiu" and k != "wall_s"]


def summarize(ds, dim: str = "seed", low: float = 0.05, high: float = 0.95):
    """Monte Carlo summary over ``dim``: a Dataset with a ``stat`` dimension
    (mean, p05, p95, n) for every KPI; failed/missing runs (NaN) are skipped."""
    import xarray as xr
    names = kpi_names(ds)
    sub = ds[names]
    with np.errstate(all="ignore"), _quiet():
        mean = sub.mean(dim, skipna=True)
        q = sub.quantile([low, high], dim=dim, skipna=True)
        n = sub.notnull().sum(dim)
    parts = [mean.expand_dims(stat=["mean"]),
             q.sel(quantile=low).drop_vars("quantile").expand_dims(stat=[f"p{round(low * 100):02d}"]),
             q.sel(quantile=high).drop_vars("quantile").expand_dims(stat=[f"p{round(high * 100):02d}"]),
             n.astype(float).expand_dims(stat=["n"])]
    out = xr.concat(parts, dim="stat")
    for k in names:
        out[k].attrs = ds[k].attrs
    return out


@contextlib.contextmanager
def _quiet():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def summary_table(ds):
    """Flat table: one row per grid point; columns axis labels, runs ok/failed, and
    ``<kpi>_mean``, ``<kpi>_p05``, ``<kpi>_p95`` for every KPI.

    The figures of :func:`summarize` (mean and 5/95 % quantiles over seeds, NaN skipped),
    computed on all KPIs at once as one numpy array (a tenth of the time of per-variable
    xarray reductions; the same numbers, ``tests/sweep/test_sweep_speed.py``)."""
    import pandas as pd
    names = kpi_names(ds)
    axes = [d for d in ds["status"].dims if d != "seed"]
    shape = tuple(ds.sizes[d] for d in axes)
    grid = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij") if axes else []
    cols: dict[str, np.ndarray] = {d: ds[d].values[g.ravel()] for d, g in zip(axes, grid, strict=True)}
    cols["runs_ok"] = (ds["status"] == "ok").sum("seed").transpose(*axes).values.ravel().astype(int)
    cols["runs_failed"] = (ds["status"] == "failed").sum("seed").transpose(*axes).values.ravel().astype(int)
    if names:
        # (KPI, grid points, seed), each KPI cast to float64 as xarray's reductions see it
        var = ds.variables
        stack = np.stack([np.asarray(var[k].transpose(*axes, "seed").values, np.float64)
                          .reshape(-1, ds.sizes["seed"]) for k in names])
        with np.errstate(all="ignore"), _quiet():
            mean = np.nanmean(stack, axis=-1)
            q = nanquantile_rows(stack, [0.05, 0.95])
        for i, k in enumerate(names):
            cols[f"{k}_mean"], cols[f"{k}_p05"], cols[f"{k}_p95"] = mean[i], q[0, i], q[1, i]
    return pd.DataFrame(cols)


def nanquantile_rows(a: np.ndarray, q) -> np.ndarray:
    """``np.nanquantile(a, q, axis=-1)``, the same numbers bit for bit, vectorised also when
    some rows hold NaN.

    ``np.nanquantile`` falls back to a Python loop over every row (``apply_along_axis``)
    as soon as one value is NaN, which a sweep with one failed run or one KPI undefined for
    its scenario always has (0.03 s of a 40-run sweep's serial tail). A quantile depends on
    the sorted values only, so the rows are sorted once (NaN last) and the rows with ``n``
    valid values take ``np.quantile`` of their first ``n`` columns together; rows without
    a valid value are NaN. Same linear interpolation (numpy's default), so the same
    numbers (``tests/sweep/test_sweep_speed.py``)."""
    a = np.asarray(a, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    out = np.full((*q.shape, *a.shape[:-1]), np.nan)
    valid = np.count_nonzero(~np.isnan(a), axis=-1)
    if a.shape[-1] == 0 or not valid.any():
        return out
    if (valid == a.shape[-1]).all():
        return np.quantile(a, q, axis=-1)
    s = np.sort(a, axis=-1)                 # NaN sort last
    for n in np.unique(valid[valid > 0]):
        rows = valid == n
        out[..., rows] = np.quantile(s[rows][..., :n], q, axis=-1)
    return out




def paired_differences(ds, kpi: str, dim: str, reference=None, confidence: float = LEVEL):
    """Differences of ``kpi`` between each value of the sweep dimension ``dim`` and the
    ``reference`` value (default: the first), paired by seed (common random numbers: the
    same seed index saw the same random streams at every point).

    Returns a Dataset over ``dim`` (and the other sweep dims): ``mean`` of the per-seed
    differences, ``low``/``high`` of the two-sided Student-t interval at ``confidence``
    (default :data:`twin.studies.stats.LEVEL`, 90 %, the level every report prints),
    ``n`` seeds with both runs ok, and ``se_paired`` / ``se_unpaired``, the standard errors
    of the mean difference with and without the pairing (their ratio is what the pairing
    buys): se_paired = s_d / sqrt(n) with s_d the sample SD of the per-seed differences,
    se_unpaired = sqrt(s_a^2 / n + s_ref^2 / n). Attributes state the method and level.

    References
    ----------
    Law, A. M. (2015). *Simulation Modeling and Analysis*, 5th ed., section 11.2 (common
    random numbers) and 10.2 (paired-t confidence interval).
    """
    import xarray as xr
    from scipy import stats

    da = ds[kpi]
    ref = da[dim].values[0] if reference is None else reference
    d = da - da.sel({dim: ref})
    with np.errstate(all="ignore"), _quiet():
        n = d.notnull().sum("seed")
        mean = d.mean("seed", skipna=True)
        se_paired = d.std("seed", ddof=1, skipna=True) / np.sqrt(n)
        var = da.var("seed", ddof=1, skipna=True)
        se_unpaired = np.sqrt(var / n + var.sel({dim: ref}) / n)
        t = xr.apply_ufunc(lambda k: stats.t.ppf(0.5 + confidence / 2, np.maximum(k - 1, 1)), n.astype(float))
    out = xr.Dataset({"mean": mean, "low": mean - t * se_paired, "high": mean + t * se_paired,
                      "n": n, "se_paired": se_paired, "se_unpaired": se_unpaired})
    out.attrs = {"kpi": kpi, "units": da.attrs.get("units", ""), "reference": str(ref),
                 "level": confidence,
                 "method": f"paired-t interval over seeds, {confidence:.0%}, common random numbers"}
    return out


def format_summary(ds, kpis: tuple[str, ...] = ("tokens_total", "goodput_fraction", "interruptions",
                                                   "energy_facility_mwh", "max_rack_inlet_c")) -> str:
    """Plain-text table: per grid point, mean [p05, p95] over seeds of a few KPIs."""
    table = summary_table(ds)
    axes = [d for d in ds["status"].dims if d != "seed"]
    w = {a: max(len(a), *(len(str(v)) for v in table[a])) for a in axes}
    head = ["  ".join(f"{a:>{w[a]}s}" for a in axes), f"{'ok/fail':>8s}",
            *(f"{k + ' mean [p05, p95]':>34s}" for k in kpis)]
    lines = ["  ".join(h for h in head if h)]
    for row in table.to_dict("records"):
        cells = [f"{str(row[a]):>{w[a]}s}" for a in axes]
        cells.append(f"{int(row['runs_ok']):>4d}/{int(row['runs_failed']):<3d}")
        for k in kpis:
            m, lo, hi = (row.get(f"{k}_{s}", math.nan) for s in ("mean", "p05", "p95"))
            cells.append(f"{m:12.4g} [{lo:9.3g}, {hi:9.3g}]")
        lines.append("  ".join(cells))
    return "\n".join(lines)
