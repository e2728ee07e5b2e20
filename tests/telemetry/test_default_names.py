"""Series that need no mapping file: a meter column in README's bracket form (``feed_power [kW]``
is the run's ``feed_power_w``, in kW) and a ``twin export`` written under another ``--prefix``
(audit HA2 F10 and F12h)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from twin.cli.compare import load_and_compare
from twin.cli.export import run_export_cli
from twin.telemetry.export import metric_prefix
from twin.telemetry.mapping import apply_mapping, export_prefix, load_mapping
from twin.telemetry.series import Series, check_series

from .conftest import ROOT


def _iso(t_ns: np.ndarray) -> list[str]:
    return [f"{x}Z" for x in t_ns.astype("datetime64[ns]").astype("datetime64[s]").astype(str)]


def _readme_bracket_columns() -> list[str]:
    """The bracketed meter columns README's "Formats read" paragraph names as readable."""
    section = (ROOT / "README.md").read_text().split("## Measured data", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`([a-z_]+ \[\w+\])`", section)


def test_readme_bracket_column_matches_the_runs_variable_in_its_unit(small_run, tmp_path):
    run_dir, res = small_run
    ds = res.dataset
    t = ds.time.values.astype("datetime64[ns]").astype(np.int64)
    columns = _readme_bracket_columns()
    assert "feed_power [kW]" in columns          # README's promise this test keeps true
    # README's example, one column per feed (text column `feed` as the label), in kW
    feeds = [str(f) for f in ds.feed.values]
    lines = ["timestamp,feed,feed_power [kW]"]
    for f in feeds:
        kw = ds.feed_power_w.sel(feed=f).values / 1e3
        lines += [f"{a},{f},{v!r}" for a, v in zip(_iso(t), kw.tolist(), strict=True)]
    meter = tmp_path / "feeds.csv"
    meter.write_text("\n".join(lines) + "\n")
    _, cmp, stats = load_and_compare(run_dir, [meter], ds=ds)
    st = stats["feed_power_w"]
    assert st["unit"] == "W" and st["n"] == t.size * len(feeds)
    assert set(st["by_feed"]) == set(feeds)
    assert st["rmse"] == pytest.approx(0.0, abs=1e-6)        # kW read as kW, converted to W
    # the brief's second example, the facility meter, at 1.05 x the run: bias 1/1.05 - 1 exactly
    kw = ds.facility_total_power_w.values * 1.05 / 1e3
    meter2 = tmp_path / "facility.csv"
    meter2.write_text("timestamp,facility_total_power [kW]\n" +
                      "".join(f"{a},{v!r}\n" for a, v in zip(_iso(t), kw.tolist(), strict=True)))
    _, _, stats2 = load_and_compare(run_dir, [meter2], ds=ds)
    assert stats2["facility_total_power_w"]["bias_fraction"] == pytest.approx(1 / 1.05 - 1, rel=1e-9)


def test_a_bracket_unit_of_another_dimension_is_not_a_match(small_run):
    ds = small_run[1].dataset
    t = ds.time.values.astype("datetime64[ns]").astype(np.int64)
    # `feed_power [degC]` would be feed_power_c: no such variable, so it stays unmapped
    s = check_series(Series("m.csv", "feed_power", {"feed": str(ds.feed.values[0])}, t,
                            np.full(t.size, 20.0), "degC"))
    groups, unmapped = apply_mapping([s], load_mapping(None), ds)
    assert not groups and unmapped == [s.key]


@pytest.mark.parametrize(("given", "written"), [("dc1", "dc1_"), ("dc1_", "dc1_"), ("dc1:", "dc1:"),
                                                ("twin_", "twin_"), ("", "")])
def test_export_prefix_gets_a_separator(given, written):
    assert metric_prefix(given) == written


def test_export_prefix_that_cannot_start_a_metric_name_is_refused():
    with pytest.raises(ValueError, match="'1dc'"):
        metric_prefix("1dc")
    with pytest.raises(ValueError, match="'dc-1'"):
        metric_prefix("dc-1")


def test_compare_recognises_its_own_export_under_another_prefix(small_run, tmp_path):
    run_dir, res = small_run
    ds = res.dataset
    om = tmp_path / "dc1.om"
    assert run_export_cli([str(run_dir), "--format", "openmetrics", "--prefix", "dc1", "--out", str(om)]) == 0
    text = om.read_text()
    assert "\ndc1_rack_power_w{" in text and "dc1rack" not in text
    time_vars = {str(v) for v in ds.data_vars if "time" in ds[v].dims and np.isfinite(ds[v].values).any()}
    _, cmp, stats = load_and_compare(run_dir, [om], ds=ds, allow_gaps=True)
    assert set(stats) == time_vars and not cmp.unmapped
    assert all(st["rmse"] == 0.0 for st in stats.values())
    # a file written before the separator was added (dc1rack_power_w) is recognised as well
    legacy = tmp_path / "legacy.om"
    legacy.write_text(text.replace("dc1_", "dc1"))
    _, cmp2, stats2 = load_and_compare(run_dir, [legacy], ds=ds, allow_gaps=True)
    assert set(stats2) == time_vars and not cmp2.unmapped


def test_export_prefix_is_found_over_the_file_not_per_name(small_run):
    """One variable ending another (``a_b`` ending ``x_a_b``) must not split a name wrongly:
    the prefix most names agree on wins."""
    ds = small_run[1].dataset
    t = ds.time.values.astype("datetime64[ns]").astype(np.int64)
    lab = {"scenario": "s", "run": "0123456789ab"}
    names = ["dc1_facility_it_power_w", "dc1_facility_total_power_w", "dc1_gpus_busy",
             "dc1_failover_branch_load_fraction_max"]
    series = [check_series(Series("f.om", n, dict(lab), t, np.full(t.size, 0.5))) for n in names]
    assert export_prefix(series, ds) == "dc1_"
    assert export_prefix(series[-1:], ds) == "dc1_"     # alone: the longer variable wins the tie
    # a run without the failover series (another version): that series stays unmapped rather
    # than landing on branch_load_fraction_max as "dc1_failover_" + branch_load_fraction_max
    older = ds.drop_vars("failover_branch_load_fraction_max")
    groups, unmapped = apply_mapping(series, load_mapping(None), older)
    assert unmapped == ["dc1_failover_branch_load_fraction_max{run=\"0123456789ab\",scenario=\"s\"}"]
    assert "branch_load_fraction_max" not in {g.variable for g in groups}
    # without the export's labels a name with a foreign prefix is not the twin's
    foreign = Series("f.om", "dc1_gpus_busy", {}, t, np.ones(t.size))
    assert export_prefix([foreign], ds) is None
    _, unmapped = apply_mapping([check_series(foreign)], load_mapping(None), ds)
    assert unmapped == ["dc1_gpus_busy"]


def test_export_cli_refuses_a_prefix_that_cannot_start_a_metric_name(tmp_path, capsys):
    # exit 2 with one line naming the option, before any run is read (not a traceback)
    from twin.cli.export import run_export_cli
    assert run_export_cli([str(tmp_path / "no_run"), "--out", str(tmp_path / "x.om"), "--prefix", "1dc"]) == 2
    assert capsys.readouterr().err.startswith("error: --prefix: ")
    assert not (tmp_path / "x.om").exists()
