"""Round trip through a real Prometheus: export a run, backfill it with promtool, query it
back over the HTTP API, and compare the run against what Prometheus returns."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from twin.cli.compare import load_and_compare, run_compare_cli
from twin.cli.export import run_export_cli


def test_export_backfill_query_compare_gives_zero_error(small_run, prometheus_factory, tmp_path, capsys):
    run_dir, results = small_run
    om = tmp_path / "run.om"
    assert run_export_cli([str(run_dir), "--format", "openmetrics", "--out", str(om)]) == 0
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing (Debian package prometheus)"
    data = tmp_path / "data"
    done = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    prom = prometheus_factory(data)

    ds = results.dataset
    t = ds.time.values.astype("datetime64[ns]").astype(np.int64) / 1e9
    step = float(ds.attrs["sample_interval_s"])
    doc = prom.query_range('{__name__=~"twin_.+"}', t[0], t[-1], step)
    assert doc["status"] == "success"
    names = {r["metric"]["__name__"] for r in doc["data"]["result"]}
    time_vars = {v for v in ds.data_vars if "time" in ds[v].dims and np.isfinite(ds[v].values).any()}
    assert names == {f"twin_{v}" for v in time_vars}
    # one series per rack/feed/rpp/job, carrying the twin's labels
    power = [r for r in doc["data"]["result"] if r["metric"]["__name__"] == "twin_rack_power_w"]
    assert sorted(r["metric"]["rack"] for r in power) == sorted(str(x) for x in ds.rack.values)
    assert {r["metric"]["scenario"] for r in power} == {"lenovo_small"}

    measured = tmp_path / "query_range.json"
    measured.write_text(json.dumps(doc))
    _, cmp, stats = load_and_compare(run_dir, [measured], allow_gaps=True)
    assert set(stats) == time_vars
    for var, st in stats.items():
        assert st["n"] > 0, var
        assert st["rmse"] == 0.0, var
        assert st["max_miss"] == 0.0, var
        assert st["bias_fraction"] in (0.0, None), var
    # every simulated sample came back (NaN GPU temperatures of dark racks are not exported)
    n_expected = sum(int(np.isfinite(ds[v].values).sum()) for v in time_vars)
    assert sum(st["n"] for st in stats.values()) == n_expected

    _dashboard_queries_answer(prom, t, step)

    capsys.readouterr()
    shown = {"twin_rack_power_w", "twin_facility_it_power_w", "twin_rack_inlet_c"}
    doc["data"]["result"] = [r for r in doc["data"]["result"] if r["metric"]["__name__"] in shown]
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps(doc))
    report = tmp_path / "report.html"
    assert run_compare_cli([str(run_dir), str(subset), "--json", "--out", str(report)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rack_power_w"]["mape"] == 0.0
    assert set(printed["rack_power_w"]["by_rack"]) == {str(x) for x in ds.rack.values}
    page = report.read_text()
    assert page.count("data:image/png;base64,") == len(shown)
    assert "http://" not in page and "https://" not in page


def _dashboard_queries_answer(prom, t, step):
    """Every query of the shipped Grafana dashboard runs on the backfilled export and returns
    series, with the measured expressions pointed at the twin's own series."""
    from pathlib import Path
    dash = json.loads((Path(__file__).resolve().parents[2] / "assets" / "grafana" / "twin_dashboard.json").read_text())
    subst = {"$scenario": "lenovo_small", "$run": ".*", "$rack": ".*",
             "$measured_it_power": "twin_facility_it_power_w", "$measured_total_power": "twin_facility_total_power_w",
             "$measured_rack_power": "twin_rack_power_w", "$measured_rack_inlet": "twin_rack_inlet_c",
             "$measured_gpu_temp": "twin_rack_gpu_temp_max_c"}
    n = 0
    for panel in dash["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            for k in sorted(subst, key=len, reverse=True):
                expr = expr.replace(k, subst[k])
            doc = prom.query_range(expr, t[0], t[-1], step)
            assert doc["status"] == "success", (panel["title"], expr)
            assert doc["data"]["result"], (panel["title"], expr)
            n += 1
            if panel["title"].startswith("IT power error"):
                vals = [float(v) for _, v in doc["data"]["result"][0]["values"]]
                assert max(abs(v) for v in vals) == 0.0
    assert n >= 20


@pytest.mark.parametrize("shift_fraction", [0.1])
def test_compare_against_prometheus_sees_a_known_bias(small_run, prometheus_factory, tmp_path, shift_fraction):
    """A measured series 10 % below the run gives bias +10/90 and MAPE 1/9 (hand-computed)."""
    import twin.telemetry.export as ex
    run_dir, results = small_run
    ds = results.dataset[["facility_it_power_w"]].copy()
    ds["facility_it_power_w"] = ds.facility_it_power_w * (1 - shift_fraction)
    om = tmp_path / "m.om"
    ex.write_openmetrics(ds.assign_attrs(results.dataset.attrs), om, prefix="site_")
    data = tmp_path / "data"
    subprocess.run([shutil.which("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
                   check=True, capture_output=True, timeout=300)
    prom = prometheus_factory(data)
    t = ds.time.values.astype("datetime64[ns]").astype(np.int64) / 1e9
    doc = prom.query_range("site_facility_it_power_w", t[0], t[-1], 1800)
    f = tmp_path / "q.json"
    f.write_text(json.dumps(doc))
    mapping = tmp_path / "map.yaml"
    mapping.write_text("series:\n  - match: {name: site_facility_it_power_w}\n"
                       "    variable: facility_it_power_w\n    unit: W\n")
    _, _, stats = load_and_compare(run_dir, [f], mapping)
    st = stats["facility_it_power_w"]
    assert st["bias_fraction"] == pytest.approx(shift_fraction / (1 - shift_fraction), rel=1e-6)
    assert st["mape"] == pytest.approx(shift_fraction / (1 - shift_fraction), rel=1e-6)
    assert st["correlation"] == pytest.approx(1.0, abs=1e-9)
