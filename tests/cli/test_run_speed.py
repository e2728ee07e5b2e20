"""``twin run`` outside ``simulate()`` (issue 19): the netCDF fast path of a save.

:func:`twin.store_io.write_netcdf` writes an in-memory Dataset through xarray's h5netcdf
store directly, skipping ``to_netcdf``'s question to dask about the active scheduler (an
import of ``distributed``). The file must be the very file ``to_netcdf`` writes: same
bytes, and it reads back ``identical`` with the same dtypes and encodings.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
import xarray.backends.locks as locks
import xarray.backends.writers as writers

from twin.store_io import write_netcdf


def _dataset() -> xr.Dataset:
    """Every kind of variable a run result holds: float32/float64 with NaN, int8/int32,
    strings, datetimes, (time x rack) and (time x job) series, attrs on variables and file."""
    rng = np.random.default_rng(3)
    nt, nr, nj = 48, 6, 5
    times = np.datetime64("2024-01-01T00:00:00", "s") + (np.arange(nt) * 3600_000).astype("timedelta64[ms]")
    power = rng.uniform(1e3, 4e4, (nt, nr)).astype(np.float32)
    power[3, 2] = np.nan
    tokens = rng.uniform(0, 1e9, (nt, nj))
    tokens[:, 4] = np.nan
    ds = xr.Dataset(
        {"rack_power_w": (("time", "rack"), power, {"units": "W", "long_name": "rack power"}),
         "rack_state": (("time", "rack"), rng.integers(0, 4, (nt, nr)).astype(np.int8), {"units": "1"}),
         "job_tokens": (("time", "job"), tokens, {"units": "1"}),
         "job_gpus": (("time", "job"), rng.integers(0, 64, (nt, nj)).astype(np.int32), {"units": "1"}),
         "facility_it_power_w": ("time", power.sum(axis=1, dtype=np.float64), {"units": "W"})},
        coords={"time": times, "rack": [f"r{i}" for i in range(nr)],
                "rack_x_m": ("rack", np.arange(nr) * 0.6, {"units": "m"}),
                "job": [f"job_{i}" for i in range(nj)]})
    ds.attrs = {"title": "twin run of scenario t", "seed": 7, "sample_interval_s": 3600.0,
                "scenario_json": '{"a": [1, 2]}', "invariant_warnings": "[]"}
    return ds


def _same_for_readers(a, b, engines=("h5netcdf", "netcdf4")) -> None:
    """The netCDF files ``a`` and ``b`` read back identical with each of ``engines``: every
    variable, value, dtype, attribute and encoding (but the source path)."""
    for engine in engines:
        with xr.open_dataset(a, engine=engine) as da, xr.open_dataset(b, engine=engine) as db:
            da, db = da.load(), db.load()
            assert da.identical(db)
            for name in da.variables:
                assert da[name].dtype == db[name].dtype
                ea = {k: v for k, v in da[name].encoding.items() if k != "source"}
                eb = {k: v for k, v in db[name].encoding.items() if k != "source"}
                assert repr(ea) == repr(eb), name


def _assert_same_file(a, b) -> None:
    assert a.read_bytes() == b.read_bytes()
    _same_for_readers(a, b, ("h5netcdf",))


@pytest.mark.parametrize("engine", ["h5netcdf", "netcdf4"])
def test_fast_path_writes_the_file_to_netcdf_writes(tmp_path, monkeypatch, engine):
    ds = _dataset()
    ds.to_netcdf(tmp_path / "slow.nc", engine=engine)

    def asked(*_a, **_k):                 # the fast path must not ask for the dask scheduler
        raise AssertionError("write_netcdf asked dask for its scheduler")

    monkeypatch.setattr(writers, "_get_netcdf_autoclose", asked)
    monkeypatch.setattr(locks, "get_dask_scheduler", asked)      # the store's write lock
    write_netcdf(ds, tmp_path / "fast.nc", engine=engine)
    _assert_same_file(tmp_path / "slow.nc", tmp_path / "fast.nc")
    with xr.open_dataset(tmp_path / "fast.nc", engine="h5netcdf") as back:
        assert back.load().identical(ds)        # and it round-trips the Dataset itself


@pytest.mark.parametrize("engine", ["h5netcdf", "netcdf4"])
def test_unlimited_dims_take_to_netcdf(tmp_path, engine):
    ds = _dataset()
    ds.encoding["unlimited_dims"] = {"time"}
    ds.to_netcdf(tmp_path / "slow.nc", engine=engine)
    write_netcdf(ds, tmp_path / "fast.nc", engine=engine)
    _assert_same_file(tmp_path / "slow.nc", tmp_path / "fast.nc")


def test_chunked_dataset_takes_to_netcdf(tmp_path, monkeypatch):
    ds = _dataset().chunk({"time": 16})
    calls = []
    real = writers._get_netcdf_autoclose
    monkeypatch.setattr(writers, "_get_netcdf_autoclose", lambda *a, **k: calls.append(1) or real(*a, **k))
    write_netcdf(ds, tmp_path / "chunked.nc")
    assert calls == [1]
    with xr.open_dataset(tmp_path / "chunked.nc", engine="h5netcdf") as back:
        assert back.load().identical(ds.compute())
