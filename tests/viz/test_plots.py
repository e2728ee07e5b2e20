"""Matplotlib figures: each returns a Figure whose artists carry the run's numbers."""

import matplotlib.collections as mcoll
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.figure import Figure

from twin.viz import plots


def _lines(ax):
    return {ln.get_label(): ln for ln in ax.get_lines()}


def test_power_stack(small_results):
    ds = small_results.dataset
    fig = plots.power_stack(small_results)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    lines = _lines(ax)
    limit = lines["staged IT power limit"]
    assert np.asarray(limit.get_ydata()) == pytest.approx(ds["power_available_w"].values / 1e6)
    assert lines["utility total"].get_ydata() == pytest.approx(ds["facility_total_power_w"].values / 1e6)
    stacks = [c for c in ax.collections if isinstance(c, mcoll.PolyCollection)]
    assert [c.get_label() for c in stacks] == ["IT", "UPS loss", "distribution loss", "cooling"]
    # the stack's top is IT + losses + cooling; the engine's utility total is their sum
    top = max(p.vertices[:, 1].max() for p in stacks[-1].get_paths())
    parts = sum(ds[v].values for v in ("facility_it_power_w", "ups_loss_w", "distribution_loss_w", "cooling_power_w"))
    assert top == pytest.approx(parts.max() / 1e6, rel=1e-6)
    assert parts == pytest.approx(ds["facility_total_power_w"].values, rel=1e-3)


def test_ramp(small_results):
    ds = small_results.dataset
    fig = plots.ramp(small_results)
    top, bottom = fig.axes
    lines = _lines(top)
    assert set(lines) == {"installed", "powered", "healthy", "busy"}
    assert lines["healthy"].get_ydata() == pytest.approx(ds["gpus_healthy"].values)
    tokens = _lines(bottom)["all jobs"].get_ydata()
    assert tokens == pytest.approx(ds["job_tokens"].values.sum(axis=1) / 1e12)
    assert tokens[-1] > 0


def test_inlet_distribution_counts_rack_hours(small_results):
    ds = small_results.dataset
    fig = plots.inlet_distribution(small_results)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_label() in ("rack-hours", "_nolegend_") and p.get_height() > 0
            and p.get_width() < 5]
    on = ds["rack_state"].values >= 1
    dt_h = ds.attrs["sample_interval_s"] / 3600
    assert sum(b.get_height() for b in bars) == pytest.approx(on.sum() * dt_h)
    # ASHRAE TC 9.9 (2021) bands: recommended 18-27 C, A1 15-32 C ...
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ASHRAE recommended" in legend and "ASHRAE A4" in legend
    segs = dict(plots.ashrae_band_segments())
    assert segs["recommended"] == [(18.0, 27.0)] and segs["A1"] == [(15.0, 18.0), (27.0, 32.0)]
    assert segs["A4"] == [(40.0, 45.0)]   # A3 and A4 share the 5 C floor


def test_failure_timeline():
    times = pd.date_range("2024-01-01", periods=10, freq="D")
    ds = xr.Dataset(coords={"time": times.to_numpy()}, attrs={"scenario_name": "x"})
    ev = pd.DataFrame({"time": [str(times[i]) for i in (1, 2, 3, 5, 6)],
                       "time_s": [86400.0 * i for i in (1, 2, 3, 5, 6)],
                       "kind": ["failure", "failure", "grid_drop", "failure", "repair_end"],
                       "target": ["r1/n0"] * 5, "detail": ["gpu", "nic", "sag", "gpu", "gpu"]})

    class R:
        dataset = ds
        events = ev

    fig = plots.failure_timeline(R())
    ax = fig.axes[0]
    rows = {c.get_label(): c.get_offsets() for c in ax.collections}
    assert set(rows) == {"gpu", "nic"}
    assert len(rows["gpu"]) == 2 and len(rows["nic"]) == 1
    assert [t.get_text() for t in ax.get_yticklabels()] == ["nic (1)", "gpu (2)"]   # most frequent on top
    assert "3 in total" in ax.get_title()
    assert any(ln.get_label() == "grid drop" for ln in ax.get_lines())


def test_failure_timeline_of_a_run(small_results):
    fig = plots.failure_timeline(small_results)
    n = int((small_results.events["kind"] == "failure").sum())
    assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == n


def _sweep_ds():
    rng = np.random.default_rng(0)
    x = [600, 1800, 3600]
    mode = ["bypass", "double_conversion"]
    v = rng.normal(1.0, 0.1, size=(3, 2, 4))
    series = rng.normal(1.0, 0.1, size=(2, 4, 5)).cumsum(axis=-1)
    return xr.Dataset(
        {"tokens_total": (("ckpt", "mode", "seed"), v, {"units": "tokens"}),
         "gpus_healthy": (("mode", "seed", "day"), series, {"units": "GPU"})},
        coords={"ckpt": x, "mode": mode, "seed": np.arange(4), "day": np.arange(5.0)})


def test_sweep_bands():
    ds = _sweep_ds()
    fig = plots.sweep(ds, "tokens_total", band="minmax")
    ax = fig.axes[0]
    assert [ln.get_label() for ln in ax.get_lines()] == ["mode = bypass", "mode = double_conversion"]
    mean = ax.get_lines()[0].get_ydata()
    assert mean == pytest.approx(ds.tokens_total.sel(mode="bypass").mean("seed").values)
    band = [c for c in ax.collections if isinstance(c, mcoll.PolyCollection)][0]
    ys = band.get_paths()[0].vertices[:, 1]
    sel = ds.tokens_total.sel(mode="bypass")
    assert ys.max() == pytest.approx(float(sel.max()))
    assert ys.min() == pytest.approx(float(sel.min("seed").min()))
    # categorical x and explicit hue
    fig2 = plots.sweep(ds, "tokens_total", x="mode", hue="ckpt", band="std")
    assert len(fig2.axes[0].get_lines()) == 3
    assert [t.get_text() for t in fig2.axes[0].get_xticklabels()] == ["bypass", "double_conversion"]
    # the default band is the t-interval of the mean, its n and method in the title
    from scipy import stats
    fig3 = plots.sweep(ds, "tokens_total")
    ax3 = fig3.axes[0]
    assert "n = 4 seeds, 90 % t-interval" in ax3.get_title() and "< 5 seeds" in ax3.get_title()
    sel = ds.tokens_total.sel(mode="bypass").values          # (ckpt, seed)
    half = stats.t.ppf(0.95, 3) * sel.std(axis=1, ddof=1) / 2.0
    ys = [c for c in ax3.collections if isinstance(c, mcoll.PolyCollection)][0].get_paths()[0].vertices[:, 1]
    assert ys.max() == pytest.approx(float((sel.mean(axis=1) + half).max()))
    with pytest.raises(ValueError, match="select one"):
        plots.sweep(ds.expand_dims(extra=[1, 2]), "tokens_total", x="ckpt", hue="mode")
    with pytest.raises(KeyError):
        plots.sweep(ds, "nope")


def test_sweep_series():
    ds = _sweep_ds()
    fig = plots.sweep_series(ds, "gpus_healthy")
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2
    assert lines[1].get_ydata() == pytest.approx(ds.gpus_healthy.sel(mode="double_conversion").mean("seed").values)


def test_ramp_of_many_jobs_draws_the_largest(small_results):
    # a job stream: hundreds of jobs; the tokens panel draws all jobs and the six that trained most
    import xarray as xr

    ds = small_results.dataset
    tok = ds["job_tokens"].values[:, :1] * np.linspace(0.1, 2.0, 40)[None, :]   # 40 jobs, growing
    many = ds.drop_vars([k for k, v in ds.data_vars.items() if "job" in v.dims]).drop_vars("job", errors="ignore")
    many = many.assign(job_tokens=xr.DataArray(tok, dims=("time", "job"), coords={"job": [f"j{k}" for k in range(40)]}))
    fig = plots.ramp(many)
    lines = _lines(fig.axes[1])
    assert set(lines) == {"all jobs"} | {f"j{k}" for k in range(34, 40)}
    assert lines["all jobs"].get_ydata() == pytest.approx(tok.sum(axis=1) / 1e12)
    assert fig.axes[1].get_legend().get_title().get_text() == "the 6 of 40 jobs that trained most"
