"""Alignment and statistics of twin compare, and bad input as clear exit-2 errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.cli.compare import load_and_compare, run_compare_cli
from twin.telemetry.compare import error_stats, window_values
from twin.telemetry.series import NS


def _iso(t_ns: np.ndarray, offset_h: int = 0) -> list[str]:
    """ISO times with a UTC offset (the wall clock of that zone)."""
    local = (t_ns + offset_h * 3600 * NS).astype("datetime64[ns]").astype("datetime64[s]")
    sign = "+" if offset_h >= 0 else "-"
    return [f"{x}{sign}{abs(offset_h):02d}:00" for x in local.astype(str)]


def _meter_csv(path, t_ns, values, column="facility_it_power_w", offset_h=0, extra=""):
    lines = [f"timestamp,{column}{extra}"]
    lines += [f"{a},{v!r}" for a, v in zip(_iso(t_ns, offset_h), values.tolist(), strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _grid(ds):
    return ds.time.values.astype("datetime64[ns]").astype(np.int64)


def test_error_stats_hand_computed():
    s = np.array([110.0, 220.0, 280.0, np.nan])
    m = np.array([100.0, 200.0, 300.0, 400.0])
    t = np.arange(4) * NS
    st_ = error_stats(s, m, t)
    assert st_["n"] == 3
    assert st_["bias_fraction"] == pytest.approx((10 + 20 - 20) / 600)
    assert st_["mape"] == pytest.approx((0.1 + 0.1 + 20 / 300) / 3)
    assert st_["rmse"] == pytest.approx(np.sqrt((100 + 400 + 400) / 3))
    assert st_["max_miss"] == 20.0 and st_["max_miss_time"] == "1970-01-01T00:00:01Z"
    assert st_["correlation"] == pytest.approx(np.corrcoef(s[:3], m[:3])[0, 1])


def test_window_mean_of_15s_readings_and_gap_exclusion():
    grid = np.arange(5) * 3600 * NS
    t = np.arange(-120, 5 * 240) * 15 * NS            # 15-s readings from 30 min before the grid
    v = (t / NS).astype(float)                         # value = time [s]: window mean = window centre
    out = window_values(t, v, grid, 3600.0)
    np.testing.assert_allclose(out, grid / NS - 7.5)   # mean of [t-1800, t+1800) on a 15-s lattice
    gap = [(int(3600 * NS), int(2 * 3600 * NS + 600 * NS))]
    out = window_values(t, v, grid, 3600.0, gaps=gap)
    assert np.isnan(out[1]) and np.isnan(out[2]) and np.isfinite(out[0]) and np.isfinite(out[3])


def test_nearest_alignment_takes_the_reading_closest_to_the_sample():
    grid = np.arange(3) * 600 * NS
    t = np.array([-100, 10, 290, 590, 900, 1190]) * NS
    v = np.array([1.0, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(window_values(t, v, grid, 600.0, align="nearest"), [2.0, 4.0, 6.0])


@settings(max_examples=20, deadline=None)
@given(offset_h=st.integers(-11, 13), factor=st.floats(0.5, 2.0))
def test_time_zone_of_the_meter_does_not_change_the_statistics(small_run, tmp_path_factory, offset_h, factor):
    """The same instants written in any UTC offset give identical statistics, and a measured
    series = run x factor gives bias (1/factor - 1) exactly."""
    run_dir, res = small_run
    ds = res.dataset
    t = _grid(ds)
    meas = ds.facility_it_power_w.values * factor
    f = _meter_csv(tmp_path_factory.mktemp("tz") / "m.csv", t, meas, offset_h=offset_h)
    _, _, stats = load_and_compare(run_dir, [f], ds=ds)
    s = stats["facility_it_power_w"]
    assert s["n"] == t.size
    assert s["bias_fraction"] == pytest.approx(1 / factor - 1, rel=1e-9, abs=1e-12)
    assert s["correlation"] == pytest.approx(1.0, abs=1e-9)


def test_node_series_summed_into_racks_through_the_mapping(small_run, tmp_path):
    """Two nodes per rack read by IPMI-like meters at 1 min, summed into rack_power_w."""
    run_dir, res = small_run
    ds = res.dataset
    t_run = _grid(ds)
    step = 60 * NS
    t = np.arange(t_run[0] - 1800 * NS, t_run[-1] + 1800 * NS, step)
    files, nodes = [], {}
    for rack in [str(r) for r in ds.rack.values]:
        rack_w = np.interp(t, t_run, ds.rack_power_w.sel(rack=rack).values.astype(float))
        for n in range(2):
            host = f"{rack}-n{n}"
            nodes[host] = rack
            f = tmp_path / f"{host}.csv"
            lines = ["timestamp,host,node_power [kW]"]
            lines += [f"{a},{host},{w / 2e3!r}" for a, w in zip(_iso(t), rack_w.tolist(), strict=True)]
            f.write_text("\n".join(lines) + "\n")
            files.append(f)
    m = tmp_path / "map.yaml"
    m.write_text("nodes:\n" + "".join(f"  {h}: {r}\n" for h, r in nodes.items()) +
                 "series:\n  - match: {name: node_power}\n    variable: rack_power_w\n"
                 "    rack: host\n    aggregate: sum\n")
    _, cmp, stats = load_and_compare(run_dir, files, m, ds=ds)
    m2 = tmp_path / "map2.yaml"
    m2.write_text(m.read_text().replace("aggregate: sum", "aggregate: sum\n    members: 2"))
    load_and_compare(run_dir, files, m2, ds=ds)          # two nodes per rack, as declared
    with pytest.raises(ValueError, match=r"1 series land on rack_power_w\[rack=.*\], the mapping expects 2"):
        load_and_compare(run_dir, files[1:], m2, ds=ds)  # a node's meter is missing: no partial sum
    s = stats["rack_power_w"]
    assert set(s["by_rack"]) == {str(r) for r in ds.rack.values}
    # a piecewise-linear signal's window mean differs from the sample by its curvature only
    assert abs(s["bias_fraction"]) < 1e-3
    assert s["n"] == 2 * (t_run.size)


# --------------------------------------------------------------------------- bad input
def _cli_error(capsys, argv) -> str:
    assert run_compare_cli(argv) == 2
    return capsys.readouterr().err


def test_bad_inputs_exit_2_naming_file_series_and_problem(small_run, tmp_path, capsys):
    run_dir, res = small_run
    ds = res.dataset
    t = _grid(ds)
    v = ds.facility_it_power_w.values.astype(float)
    out = tmp_path / "report.html"

    dup = _meter_csv(tmp_path / "dup.csv", np.r_[t[:5], t[4:]], np.r_[v[:5], v[4:]])
    err = _cli_error(capsys, [str(run_dir), str(dup), "--out", str(out)])
    assert "dup.csv" in err and "facility_it_power_w" in err and "duplicate timestamps" in err

    nan = _meter_csv(tmp_path / "nan.csv", t, np.where(np.arange(t.size) == 7, np.nan, v))
    err = _cli_error(capsys, [str(run_dir), str(nan), "--out", str(out)])
    assert "nan.csv" in err and "NaN" in err and "2025-01-06T03:30:00Z" in err

    keep = np.ones(t.size, bool)
    keep[30:40] = False
    gap = _meter_csv(tmp_path / "gap.csv", t[keep], v[keep])
    err = _cli_error(capsys, [str(run_dir), str(gap), "--out", str(out)])
    assert "gap.csv" in err and "gap" in err and "--allow-gaps" in err
    assert not out.exists()
    _, cmp, stats = load_and_compare(run_dir, [gap], allow_gaps=True, ds=ds)
    assert stats["facility_it_power_w"]["gaps"] == 1
    assert stats["facility_it_power_w"]["n"] == keep.sum()   # the gap's windows excluded, not filled

    kw = _meter_csv(tmp_path / "kw.csv", t, v / 1e3)          # kW values declared as W
    err = _cli_error(capsys, [str(run_dir), str(kw)])
    assert "kw.csv" in err and "wrong unit" in err

    kelvin = _meter_csv(tmp_path / "k.csv", t, ds.rack_inlet_c.values[:, 0] + 273.15, column="rack_inlet_c",
                        extra="")
    err = _cli_error(capsys, [str(run_dir), str(kelvin)])
    assert "k.csv" in err  # rack_inlet_c is per rack: the CSV has no rack label
    mk = tmp_path / "m.yaml"
    mk.write_text("series:\n  - match: {name: inlet}\n    variable: rack_inlet_c\n    rack: rack\n    unit: W\n")
    kel2 = tmp_path / "k2.csv"
    kel2.write_text("timestamp,rack,inlet\n" + "".join(
        f"{a},r1-01,{x!r}\n" for a, x in zip(_iso(t), (ds.rack_inlet_c.values[:, 0] + 273.15).tolist(), strict=True)))
    err = _cli_error(capsys, [str(run_dir), str(kel2), "--map", str(mk)])
    assert "k2.csv" in err and "inlet" in err and "unit mismatch" in err

    late = _meter_csv(tmp_path / "late.csv", t + 30 * 86400 * NS, v)
    err = _cli_error(capsys, [str(run_dir), str(late)])
    assert "late.csv" in err and "no overlap with the run" in err

    unknown = tmp_path / "u.yaml"
    unknown.write_text("series:\n  - match: {name: facility_it_power_w}\n    variable: rack_power_w\n"
                       "    rack: rack\n")
    rack_csv = tmp_path / "rack.csv"
    rack_csv.write_text("timestamp,rack,facility_it_power_w\n" + "".join(
        f"{a},r9-99,1.0\n" for a in _iso(t[:3])))
    err = _cli_error(capsys, [str(run_dir), str(rack_csv), "--map", str(unknown)])
    assert "rack.csv" in err and "'r9-99' is not in the run" in err

    bad_map = tmp_path / "bad.yaml"
    bad_map.write_text("series:\n  - match: {name: x}\n    variable: rack_power_w\n    agregate: sum\n")
    err = _cli_error(capsys, [str(run_dir), str(dup), "--map", str(bad_map)])
    assert "bad.yaml" in err and "agregate" in err

    err = _cli_error(capsys, [str(tmp_path / "no_run"), str(dup)])
    assert "results.nc" in err
    assert not out.exists()


def test_counter_reset_is_an_error(tmp_path):
    from twin.telemetry.ingest import read_measured
    from twin.telemetry.series import TelemetryError, check_series
    f = tmp_path / "e.om"
    f.write_text("# TYPE site_energy_joules counter\n# UNIT site_energy_joules joules\n" + "".join(
        f'site_energy_joules_total{{meter="m1"}} {v} {1736121600 + 60 * i}\n'
        for i, v in enumerate([10.0, 20.0, 30.0, 5.0, 15.0])) + "# EOF\n")
    (s,) = read_measured(f)
    with pytest.raises(TelemetryError, match=r'e\.om: series site_energy_joules_total\{meter="m1"\}: counter reset '
                                             r"at 2025-01-06T00:03:00Z"):
        check_series(s)
