"""The sweep's fast serial parts (issue 19) give the same numbers as the plain ones: one and
two workers assemble the same sweep, from memory as from the store; the classic-netCDF sweep.nc reads back as the Dataset
written (netCDF-4 when a value does not fit the classic format); the one-array summary
table equals the per-KPI xarray reductions of :func:`summarize`."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st

from twin.sweep import kpi_names, load_sweep, run_sweep, summarize, summary_table
from twin.sweep.assembly import _netcdf_engine, to_netcdf


def _summary_by_xarray(ds) -> pd.DataFrame:
    """The table as it was built before: from :func:`summarize`, one KPI at a time."""
    sm = summarize(ds)
    axes = [d for d in ds["status"].dims if d != "seed"]
    grid = np.meshgrid(*(np.arange(ds.sizes[d]) for d in axes), indexing="ij") if axes else []
    cols = {d: ds[d].values[g.ravel()] for d, g in zip(axes, grid, strict=True)}
    cols["runs_ok"] = (ds["status"] == "ok").sum("seed").transpose(*axes).values.ravel().astype(int)
    cols["runs_failed"] = (ds["status"] == "failed").sum("seed").transpose(*axes).values.ravel().astype(int)
    for k in sm.data_vars:
        v = sm[k].transpose("stat", *axes)
        for stat in ("mean", "p05", "p95"):
            cols[f"{k}_{stat}"] = np.asarray(v.sel(stat=stat).values, float).ravel()
    return pd.DataFrame(cols)


def test_one_and_two_workers_assemble_the_same_sweep(small_spec, tmp_path):
    one = run_sweep(small_spec, tmp_path / "w1", workers=1)
    two = run_sweep(small_spec, tmp_path / "w2", workers=2)
    assert len(one.ran) == len(two.ran) == 4
    a, b = one.dataset, two.dataset
    assert kpi_names(a) and set(a.data_vars) == set(b.data_vars)
    for k in a.data_vars:
        if k != "wall_s":
            np.testing.assert_array_equal(a[k].values, b[k].values, err_msg=k)
    for d in (tmp_path / "w1", tmp_path / "w2"):
        disk, _ = load_sweep(d)
        xr.testing.assert_identical(disk.drop_vars("wall_s"), a.drop_vars("wall_s"))
        assert disk.seed.dtype == np.int64
        pd.testing.assert_frame_equal(pd.read_csv(d / "summary.csv"), pd.read_csv(tmp_path / "w1" / "summary.csv"))
    # the runs of a call are assembled from memory; a re-run reads them all back from the store
    again = run_sweep(small_spec, tmp_path / "w2", workers=2)
    assert not again.ran and len(again.reused) == 4
    xr.testing.assert_identical(again.dataset, two.dataset)


@st.composite
def sweeps(draw):
    """A sweep-shaped Dataset: one or two axes, seeds, float and int KPIs with NaN (failed
    runs) including grid points where every seed failed."""
    n_a, n_b, n_s = draw(st.integers(1, 4)), draw(st.integers(0, 3)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    dims = ("a", "b", "seed") if n_b else ("a", "seed")
    shape = (n_a, n_b, n_s) if n_b else (n_a, n_s)
    fail = rng.random(shape) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    kpi = rng.lognormal(3, 2, shape)
    kpi[fail] = np.nan
    status = np.where(fail, "failed", "ok")
    coords = {"a": np.arange(n_a) * 1.5, "seed": np.arange(n_s, dtype=np.int64)}
    if n_b:
        coords["b"] = np.array(["x", "y", "z"][:n_b])
    return xr.Dataset({"tokens_total": (dims, kpi), "interruptions": (dims, rng.integers(0, 9, shape)),
                       "status": (dims, status)}, coords=coords)


@given(sweeps())
def test_summary_table_equals_the_xarray_reductions(ds):
    pd.testing.assert_frame_equal(summary_table(ds), _summary_by_xarray(ds), check_exact=True)


@pytest.mark.parametrize("seed_hi, title, fmt", [(7, "plain", "NETCDF3_64BIT"), (2 ** 40, "plain", "NETCDF4"),
                                                 (7, "Lüftung °C", "NETCDF3_64BIT")])
def test_sweep_file_reads_back_as_written(tmp_path, seed_hi, title, fmt):
    ds = xr.Dataset({"tokens_total": (("flag", "seed"), np.array([[1.5, np.nan], [3.0, 4.0]])),
                     "gpus_healthy": (("flag", "seed", "day"), np.ones((2, 2, 3), np.float32)),
                     "error": (("flag", "seed"), np.array([["", "ValueError: 45 °C inlet"], ["", ""]]))},
                    coords={"flag": np.array([True, False]), "seed": np.array([0, seed_hi], np.int64),
                            "day": np.arange(3.0)}, attrs={"title": title, "runs_total": 4})
    path = tmp_path / "sweep.nc"
    assert to_netcdf(ds, path) == fmt
    assert _netcdf_engine(path) == ("scipy" if fmt.startswith("NETCDF3") else "h5netcdf")
    with xr.open_dataset(path, engine=_netcdf_engine(path)) as back:
        xr.testing.assert_identical(back.load(), ds)
