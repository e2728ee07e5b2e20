"""HTML reports: self-contained, figures embedded and rendered (headless Chromium), tables and
readings that agree with the numbers they are generated from."""

import base64
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import twin
from twin.report import build_report, run_report_html
from twin.studies.tables import (
    axis_reading,
    monthly_ramp_table,
    siting_table,
    slip_reading,
    slip_table,
)
from twin.sweep import Axis, SweepSpec, run_sweep

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    # 2025-01-06 + 35 days spans two calendar months
    r = twin.simulate(twin.load_scenario(SMALL, ["simulation.duration_days=35", "failures.rate_scale=20"]))
    return r.save(tmp_path_factory.mktemp("run") / "run")


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    spec = SweepSpec(scenario=str(SMALL), overrides=("simulation.duration_days=2", "simulation.sample_interval_s=3600"),
                     axes=(Axis.grid("site.power.ups.mode", ["double_conversion", "bypass"]),), seeds=(0, 1),
                     name="ups")
    out = tmp_path_factory.mktemp("sweep") / "sw"
    run_sweep(spec, out, workers=1)
    return out


def _images(text):
    return re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)


def _self_contained(text):
    assert not re.search(r'(src|href)="(?!data:)', text), "the report must not reference outside files"


def test_run_report_embeds_figures_and_monthly_tokens_add_up(run_dir):
    text = build_report(run_dir)
    _self_contained(text)
    imgs = _images(text)
    assert len(imgs) == 3
    assert all(base64.b64decode(i)[:8] == PNG_MAGIC for i in imgs)
    res = twin.Results.load(run_dir)
    m = monthly_ramp_table(res.dataset)
    assert list(m.month) == ["2025-01", "2025-02"]
    final = float(res.dataset.job_tokens.sum("job").values[-1])
    assert m.tokens_in_month.sum() == pytest.approx(final, rel=1e-12)
    assert m.tokens_cumulative.iloc[-1] == pytest.approx(final, rel=1e-12)
    assert (m.installed_end >= m.powered_end).all() and (m.powered_end >= m.healthy_end).all()
    assert "Ramp" in text and "Power" in text and "Inlet temperatures" in text


def test_sweep_report_reading_follows_the_numbers(sweep_dir):
    text = build_report(sweep_dir)
    _self_contained(text)
    assert len(_images(text)) >= 2
    reading = re.search(r"<p class='reading'>(.*?)</p>", text, re.S).group(1)
    # the UPS loss of bypass is zero and of double conversion positive: the reading says which is which
    assert "ups_loss_mwh (0 MWh with bypass to" in reading


def test_sweep_report_with_two_seeds_prints_means_without_intervals(sweep_dir):
    """Two seeds (audit polish 13d: "goodput 99.3 % [97.1 %, 102 %]", "interruptions 4 [-8.63,
    16.6]"): the summary table prints means and says why there is no interval; the cards do not
    repeat the unit their value carries ("2.42 T tokens tokens, best grid point")."""
    text = build_report(sweep_dir)
    table = text.split("<h2>Summary per grid point</h2>")[1]
    assert "(n = 2: no interval)" in table and "not meaningful" in table
    assert not re.search(r"\[[^\]]*(GPU-h|%|MWh|tokens)\]", table)
    assert "trained, best grid point" in text and "tokens, best grid point" not in text


def _synthetic(values, dim="x", labels=("a", "b"), kpi="tokens_total"):
    v = np.asarray(values, float)
    ds = xr.Dataset({kpi: ((dim, "seed"), v, {"units": "tokens"}),
                     "status": ((dim, "seed"), np.full(v.shape, "ok"))},
                    coords={dim: list(labels), "seed": np.arange(v.shape[1])})
    return ds


def test_reading_says_whether_the_gap_exceeds_the_seed_spread():
    clear = _synthetic([[100e9, 101e9, 99e9], [80e9, 81e9, 79e9]])
    r = axis_reading(clear, "x")
    assert "highest with a (100 B tokens)" in r and "lowest with b (80 B tokens)" in r
    assert "20.0% less" in r and "outside the 90 % t-intervals of the means (n = 3 seeds)" in r
    noisy = _synthetic([[100e9, 60e9, 140e9], [95e9, 55e9, 135e9]])
    assert "not established with n = 3 seeds" in axis_reading(noisy, "x")


def test_slip_table_pairs_seeds():
    # seed-paired loss: (none - stage) per seed = 10, 20, 30 -> mean 20, band from those three
    ds = _synthetic([[100.0, 200.0, 300.0], [90.0, 180.0, 270.0]], dim="slip", labels=("none", "stage_1"))
    ds["gpu_hours_healthy"] = ds.tokens_total * 0 + 5.0
    t = slip_table(ds)
    row = t[t.slip == "stage_1"].iloc[0]
    assert row.tokens_lost_mean == pytest.approx(20.0)
    assert row.tokens_lost_p05 == pytest.approx(np.quantile([10, 20, 30], 0.05))
    assert row.tokens_lost_p95 == pytest.approx(np.quantile([10, 20, 30], 0.95))
    assert row.tokens_lost_fraction == pytest.approx(20.0 / 200.0)
    assert "stage_1" in slip_reading(t)


def test_siting_ranking_and_binding_constraint():
    names = ["gpus_hosted", "gpus_delivered", "days_to_full_capacity", "tokens_total", "max_rack_inlet_c",
             "upgrade_cost_usd", "energy_cost_usd", "co2_t", "power_use_fraction", "cooling_use_fraction",
             "floor_use_fraction", "inlet_margin_c", "days_power_limited"]
    rows = {  # site A dominates B on every criterion; C is floor-bound
        "A": [2048, 2048, 100, 9e12, 22, 1e6, 1e6, 2000, 0.8, 0.6, 0.9, 5, 0],
        "B": [1024, 2048, np.nan, 5e12, 30, 2e6, 2e6, 4000, 1.2, 0.5, 0.5, -3, 200],
        "C": [1536, 1536, 90, 7e12, 25, 0.5e6, 0.8e6, 100, 0.7, 0.6, 1.0, 2, 0],
    }
    ds = xr.Dataset({k: (("site", "seed"), np.array([[rows[s][i]] for s in rows], float))
                     for i, k in enumerate(names)}, coords={"site": list(rows), "seed": [0]})
    t = siting_table(ds)
    by = t.set_index("site")
    assert by.loc["A", "overall_rank"] < by.loc["B", "overall_rank"]
    assert by.loc["B", "overall_rank"] == 3
    assert by.loc["B", "binds"] == "power + cooling" and by.loc["C", "binds"] == "floor" and by.loc["A", "binds"] == "none"
    assert by.loc["B", "rank_days_to_full_capacity"] == 3   # never reaching full capacity ranks last


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _screenshot(html_path: Path, png: Path, profile: Path, height=4200):
    exe = _chromium()
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={profile}", f"--window-size=1200,{height}", f"--screenshot={png}",
           html_path.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=180, check=False)
    assert png.exists(), "chromium wrote no screenshot"
    import matplotlib.image as mpimg
    return (mpimg.imread(png)[..., :3] * 255).round().astype(int)


def _c0_pixels(img) -> int:
    """Pixels in matplotlib's default first colour C0 (#1f77b4): only drawn figures have them."""
    return int((np.abs(img - np.array([31, 119, 180])).max(axis=-1) <= 12).sum())


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install chromium; "
                                                 ".ci/run installs it)")
def test_reports_render_their_figures_in_headless_chromium(run_dir, sweep_dir, tmp_path):
    for name, folder in (("run", run_dir), ("sweep", sweep_dir)):
        html_path = tmp_path / f"{name}.html"
        r = subprocess.run([sys.executable, "-m", "twin.cli", "report", str(folder), "--out", str(html_path)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        img = _screenshot(html_path, tmp_path / f"{name}.png", tmp_path / f"profile_{name}")
        assert img.shape[1] == 1200
        # categorical sweeps are drawn as points with interval bars (no connecting lines): fewer C0 pixels
        assert _c0_pixels(img) > (2000 if name == "run" else 1000), f"{name}: the figures did not render"
        assert (img.std(axis=(0, 1)) > 10).all()
    # control: the same page with its images broken shows none of the figure colour
    broken = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,AAAA",
                    (tmp_path / "run.html").read_text())
    (tmp_path / "broken.html").write_text(broken)
    img = _screenshot(tmp_path / "broken.html", tmp_path / "broken.png", tmp_path / "profile_broken")
    assert _c0_pixels(img) < 50


@pytest.mark.parametrize("args, needle", [
    (["/nonexistent/folder", "--out", "r.html"], "no such folder"),
    ([".", "--out", "r.html"], "neither a run folder"),
    (["."], "--out"),
])
def test_report_cli_bad_input_exits_2(args, needle, tmp_path):
    r = subprocess.run([sys.executable, "-m", "twin.cli", "report", *args], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_run_report_html_is_a_function_of_results(run_dir):
    res = twin.Results.load(run_dir)
    a = run_report_html(res, title="x")
    assert a.startswith("<!DOCTYPE html>") and "<title>x</title>" in a


def test_monthly_sweep_table_takes_the_last_sample_of_each_month():
    from twin.studies.tables import monthly_sweep_table
    v = np.array([[[0, 1, 2, 3], [0, 3, 4, 5]], [[0, 0, 1, 1], [0, 0, 1, 3]]], float)   # (slip, seed, day)
    ds = xr.Dataset({"tokens_cumulative": (("slip", "seed", "day"), v)},
                    coords={"slip": ["none", "stage_1"], "seed": [0, 1], "day": [0.0, 15.0, 31.0, 45.0]})
    t = monthly_sweep_table(ds, "slip", "2024-01-01")
    assert list(t.month_end) == ["2024-01", "2024-02"]
    assert list(t["none"]) == [2.0, 4.0] and list(t["stage_1"]) == [0.0, 2.0]
