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

from twin.results import Results
from twin.store_io import netcdf_write_engine, write_netcdf


def _run_like() -> xr.Dataset:
    """The kinds of variable a run writes: float32 / float64 series with NaN, int8 / int32 /
    int64, strings (coordinates and data), datetimes, bools, long and non-ASCII attributes."""
    rng = np.random.default_rng(11)
    nt, nr, nj = 30, 4, 3
    times = np.datetime64("2024-01-01T00:00:00", "s") + (np.arange(nt) * 3_600_000).astype("timedelta64[ms]")
    power = rng.uniform(1e3, 4e4, (nt, nr)).astype(np.float32)
    power[5, 1] = np.nan
    tokens = rng.uniform(0, 1e12, (nt, nj))
    tokens[:, 2] = 0.0
    ds = xr.Dataset(
        {"rack_power_w": (("time", "rack"), power, {"units": "W", "long_name": "rack power"}),
         "rack_state": (("time", "rack"), rng.integers(0, 4, (nt, nr)).astype(np.int8), {"units": "1"}),
         "job_tokens": (("time", "job"), tokens, {"units": "1", "long_name": "tokens trained"}),
         "job_gpus": (("time", "job"), rng.integers(0, 64, (nt, nj)).astype(np.int32), {"units": "GPU"}),
         "job_state": ("job", np.array(["done", "running", "queued"], dtype=object), {"units": ""}),
         "job_interruptions": ("job", np.array([0, 2, 1], dtype=np.int64), {"units": "1"}),
         "solid": (("rack",), np.array([True, False, False, True]), {"long_name": "rack body"})},
        coords={"time": times, "rack": [f"r{i}-é" for i in range(nr)],
                "rack_x_m": ("rack", np.arange(nr) * 0.6, {"units": "m"}),
                "job": [f"job_{i}" for i in range(nj)]})
    ds.attrs = {"title": "twin run of scenario t", "seed": 7, "sample_interval_s": 3600.0,
                "scenario_json": '{"a": "' + "x" * 100_000 + '"}', "invariant_warnings": "[]"}
    return ds


def _same_for_readers(a, b) -> None:
    for engine in ("h5netcdf", "netcdf4"):
        with xr.open_dataset(a, engine=engine) as da, xr.open_dataset(b, engine=engine) as db:
            da, db = da.load(), db.load()
            assert da.identical(db)
            for name in da.variables:
                assert da[name].dtype == db[name].dtype
                ea = {k: v for k, v in da[name].encoding.items() if k != "source"}
                eb = {k: v for k, v in db[name].encoding.items() if k != "source"}
                assert repr(ea) == repr(eb), name


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
