"""The netCDF engine of a save (issue 19): results.nc and field files are written with
netCDF-C (the netCDF4 package) instead of h5netcdf, which spends ~3 ms of Python on each
variable's dimension scales. The file a reader gets must be the same: every variable,
value, dtype, attribute and encoding as the h5netcdf file (the reference path, still used
when netCDF4 is missing), read with either engine."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import xarray.backends as backends
from cli.test_run_speed import _dataset, _same_for_readers  # shared with the save's speed test

from twin.results import Results
from twin.store_io import netcdf_write_engine, write_netcdf


def _run_like() -> xr.Dataset:
    """The kinds of variable a run writes: the run-speed test's Dataset (float32 / float64
    series with NaN, int8 / int32, datetimes, attributes on variables and file) with what
    it lacks added: int64, strings as data, bools, non-ASCII coordinates, a 100 kB attribute."""
    ds = _dataset()
    nr, nj = ds.sizes["rack"], ds.sizes["job"]
    ds["job_state"] = ("job", np.array(["done", "running", "queued", "done", "running"][:nj], dtype=object),
                       {"units": ""})
    ds["job_interruptions"] = ("job", np.arange(nj, dtype=np.int64) % 3, {"units": "1"})
    ds["solid"] = ("rack", np.arange(nr) % 3 == 0, {"long_name": "rack body"})
    ds = ds.assign_coords(rack=[f"r{i}-é" for i in range(nr)])
    ds.attrs["scenario_json"] = '{"a": "' + "x" * 100_000 + '"}'
    return ds


def test_netcdf4_is_the_engine_and_its_file_reads_as_the_h5netcdf_one(tmp_path, monkeypatch):
    assert importlib.util.find_spec("netCDF4") is not None      # a dependency (pyproject)
    assert netcdf_write_engine() == "netcdf4"
    ds = _run_like()
    write_netcdf(ds, tmp_path / "ref.nc", engine="h5netcdf")

    def slow(*_a, **_k):
        raise AssertionError("the save went through h5netcdf")
    monkeypatch.setattr(backends.H5NetCDFStore, "open", slow)
    write_netcdf(ds, tmp_path / "fast.nc")
    monkeypatch.undo()
    assert (tmp_path / "fast.nc").read_bytes() != (tmp_path / "ref.nc").read_bytes()   # another writer
    _same_for_readers(tmp_path / "fast.nc", tmp_path / "ref.nc")
    with xr.open_dataset(tmp_path / "fast.nc", engine="h5netcdf") as back:
        assert back.load().identical(ds)


def test_without_netcdf4_the_save_writes_with_h5netcdf(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "netCDF4" else real(name, *a))
    assert netcdf_write_engine() == "h5netcdf"
    calls = []
    real_open = backends.H5NetCDFStore.open
    monkeypatch.setattr(backends.H5NetCDFStore, "open", lambda *a, **k: calls.append(1) or real_open(*a, **k))
    write_netcdf(_run_like(), tmp_path / "h5.nc")
    assert calls == [1]


def test_unknown_engine_is_refused(tmp_path):
    with pytest.raises(ValueError, match="netcdf4 or h5netcdf"):
        write_netcdf(_run_like(), tmp_path / "x.nc", engine="scipy")


def test_a_saved_result_loads_back_the_same(tmp_path):
    ds = _run_like()
    field = xr.Dataset({"temperature": (("y_m", "x_m"), np.arange(6.0).reshape(2, 3), {"units": "degC"}),
                        "solid": (("y_m", "x_m"), np.eye(2, 3, dtype=bool))},
                       coords={"x_m": [0.3, 0.9, 1.5], "y_m": [0.3, 0.9]}, attrs={"hall": "hall_1"})
    events = pd.DataFrame({"time": ["2024-01-01T00:00:00.000"], "time_s": [0.0], "kind": ["power_stage"],
                           "target": ["facility"], "detail": ["1520 kW"]})
    res = Results(ds, events, {"tokens_total": 1.5e12}, {"hall_1": field})
    res.save(tmp_path / "out", warnings=[])
    back = Results.load(tmp_path / "out")
    want = ds.copy()
    want.attrs["invariant_warnings"] = "[]"
    assert back.dataset.identical(want)
    assert back.fields["hall_1"].identical(field)
    assert back.kpis == {"tokens_total": 1.5e12}
