"""Matplotlib figures of a run or a sweep. Each function returns a ``Figure``.

The figures are built on ``matplotlib.figure.Figure`` directly (no pyplot state, Agg
canvas), so they work headless and in loops; Jupyter shows a returned Figure inline, and
``fig.savefig(path)`` writes it.

- :func:`power_stack` facility power (IT, UPS loss, distribution loss, cooling) against
  the staged IT power limit;
- :func:`ramp` installed / powered / healthy / busy GPUs and cumulative tokens;
- :func:`inlet_distribution` rack-hours of inlet temperature against the ASHRAE bands;
- :func:`failure_timeline` failures by component class over time;
- :func:`sweep` a KPI of a sweep Dataset against a swept parameter, with seed bands.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from twin.thermal.properties import ASHRAE_ALLOWABLE_C, ASHRAE_RECOMMENDED_C

H = 3600.0

STACK_COLORS = {"IT": "#4c72b0", "UPS loss": "#dd8452", "distribution loss": "#937860",
                "cooling": "#55a868"}
ASHRAE_BAND_COLORS = {"recommended": "#1a9850", "A1": "#a6d96a", "A2": "#fee08b", "A3": "#fdae61",
                      "A4": "#f46d43"}


def ashrae_band_segments() -> list[tuple[str, list[tuple[float, float]]]]:
    """Non-overlapping inlet ranges [C] of each ASHRAE class: the recommended envelope,
    then for A1..A4 the parts of their allowable envelope outside the tighter ones."""
    out = [("recommended", [ASHRAE_RECOMMENDED_C])]
    inner = ASHRAE_RECOMMENDED_C
    for name in ("A1", "A2", "A3", "A4"):
        lo, hi = ASHRAE_ALLOWABLE_C[name]
        segs = [(a, b) for a, b in ((lo, inner[0]), (inner[1], hi)) if b > a]
        out.append((name, segs))
        inner = (min(lo, inner[0]), max(hi, inner[1]))
    return out


def _register_notebook_display() -> None:
    """In IPython/Jupyter, show a returned Figure as a PNG even when pyplot (and with it
    the inline backend) was never imported."""
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import print_figure
    except ImportError:
        return
    ip = get_ipython()
    if ip is None:
        return
    png = ip.display_formatter.formatters["image/png"]
    if Figure not in png.type_printers:
        png.for_type(Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight"))


def _figure(figsize=(9, 4.5), nrows=1, sharex=False, height_ratios=None) -> tuple[Figure, list]:
    _register_notebook_display()
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    kw = {"height_ratios": height_ratios} if height_ratios else {}
    axes = fig.subplots(nrows, 1, sharex=sharex, squeeze=False, gridspec_kw=kw)[:, 0]
    return fig, list(axes)


def _dataset(results) -> xr.Dataset:
    return results.dataset if hasattr(results, "dataset") else results


def _title(ds: xr.Dataset, what: str) -> str:
    name = ds.attrs.get("scenario_name", "")
    return f"{name}: {what}" if name else what


def _date_axis(ax) -> None:
    import matplotlib.dates as mdates

    loc = mdates.AutoDateLocator(minticks=4, maxticks=10)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))


def power_stack(results) -> Figure:
    """Facility power [MW] stacked as IT, UPS loss, distribution loss and cooling, with the
    staged IT power limit (``power_available_w``) as a step line and the utility total."""
    ds = _dataset(results)
    t = ds["time"].values
    parts = {
        "IT": ds["facility_it_power_w"].values,
        "UPS loss": ds["ups_loss_w"].values,
        "distribution loss": ds["distribution_loss_w"].values,
        "cooling": ds["cooling_power_w"].values,
    }
    fig, (ax,) = _figure()
    ax.stackplot(t, *[v / 1e6 for v in parts.values()], labels=list(parts),
                 colors=[STACK_COLORS[k] for k in parts], alpha=0.85, linewidth=0)
    ax.step(t, ds["power_available_w"].values / 1e6, where="post", color="black", linewidth=1.8,
            label="staged IT power limit")
    ax.plot(t, ds["facility_total_power_w"].values / 1e6, color="#c44e52", linewidth=0.8,
            linestyle="--", label="utility total")
    ax.set_ylabel("power [MW]")
    ax.set_ylim(bottom=0)
    ax.set_title(_title(ds, "facility power against the staged limit"))
    ax.legend(loc="upper left", fontsize=8, ncols=3)
    ax.grid(alpha=0.3)
    _date_axis(ax)
    return fig


RAMP_JOBS_SHOWN = 6
"""Jobs drawn one by one under the tokens of all jobs (the ones that trained most)."""


def ramp(results) -> Figure:
    """GPUs installed / powered / healthy / busy (top) and cumulative tokens (bottom): all
    jobs, and the ``RAMP_JOBS_SHOWN`` jobs that trained most."""
    ds = _dataset(results)
    t = ds["time"].values
    fig, (ax, ax2) = _figure(figsize=(9, 6), nrows=2, sharex=True, height_ratios=[3, 2])
    for name, color, style in (("gpus_installed", "#8c8c8c", "-"), ("gpus_powered", "#4c72b0", "-"),
                               ("gpus_healthy", "#55a868", "-"), ("gpus_busy", "#dd8452", ":")):
        ax.step(t, ds[name].values, where="post", color=color, linestyle=style,
                label=name.removeprefix("gpus_"), linewidth=1.5)
    ax.set_ylabel("GPUs")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=8, ncols=4)
    ax.grid(alpha=0.3)
    ax.set_title(_title(ds, "GPU capacity and tokens over the ramp"))
    tok = ds["job_tokens"].values
    total = np.nansum(tok, axis=1) if tok.ndim == 2 else tok
    ax2.plot(t, total / 1e12, color="#8172b3", linewidth=1.8, label="all jobs")
    shown = 0
    if tok.ndim == 2 and tok.shape[1] > 1:
        # a job stream holds hundreds of jobs: draw the ones that trained most
        final = np.nan_to_num(np.nanmax(tok, axis=0))
        top = [j for j in np.argsort(-final, kind="stable")[:RAMP_JOBS_SHOWN] if final[j] > 0]
        for j in sorted(top):
            ax2.plot(t, tok[:, j] / 1e12, linewidth=0.9, alpha=0.8, label=str(ds["job"].values[j]))
        shown = len(top)
    ax2.set_ylabel("tokens [10¹²]")
    ax2.set_ylim(bottom=0)
    n_jobs = tok.shape[1] if tok.ndim == 2 else 1
    ax2.legend(loc="upper left", fontsize=8, ncols=2 if shown > 3 else 1,
               title=f"the {shown} of {n_jobs:,} jobs that trained most" if shown < n_jobs else None,
               title_fontsize=8)
    ax2.grid(alpha=0.3)
    _date_axis(ax2)
    return fig


def inlet_distribution(results, bins: int | np.ndarray | None = None) -> Figure:
    """Histogram of sampled rack inlet temperatures (powered racks, weighted to rack-hours)
    over the ASHRAE TC 9.9 (2021) recommended and allowable A1-A4 bands."""
    ds = _dataset(results)
    inlet = ds["rack_inlet_c"].values.astype(float)
    on = ds["rack_state"].values >= 1
    vals = inlet[on & np.isfinite(inlet)]
    dt_h = float(ds.attrs.get("sample_interval_s", H)) / H
    fig, (ax,) = _figure()
    lo_r, hi_r = ASHRAE_RECOMMENDED_C
    for name, segments in ashrae_band_segments():
        for k, (lo, hi) in enumerate(segments):
            ax.axvspan(lo, hi, color=ASHRAE_BAND_COLORS[name], alpha=0.45, linewidth=0,
                       label=f"ASHRAE {name}" if k == 0 else None)
    if vals.size:
        if bins is None:
            span = max(vals.max() - vals.min(), 1.0)
            bins = np.linspace(vals.min() - 0.05 * span, vals.max() + 0.05 * span, 40)
        ax.hist(vals, bins=bins, weights=np.full(vals.size, dt_h), color="#34495e", alpha=0.9,
                label="rack-hours")
        above = float((vals > hi_r).sum() * dt_h)
        ax.text(0.99, 0.97, f"{vals.size * dt_h:,.0f} rack-h sampled\n{above:,.0f} rack-h above {hi_r:g} °C",
                transform=ax.transAxes, ha="right", va="top", fontsize=9)
        ax.set_xlim(min(vals.min() - 1, lo_r - 1), max(vals.max() + 1, hi_r + 1))
    else:
        ax.set_xlim(lo_r - 3, hi_r + 6)
        ax.text(0.5, 0.5, "no powered rack sampled", transform=ax.transAxes, ha="center")
    ax.set_xlabel("rack inlet temperature [°C]")
    ax.set_ylabel("rack-hours")
    ax.set_title(_title(ds, "inlet temperatures against the ASHRAE bands"))
    ax.legend(loc="upper left", fontsize=8)
    return fig


def failure_timeline(results, kinds: tuple[str, ...] = ("failure",)) -> Figure:
    """One row per component class (event ``detail``), a marker at each failure; the
    label gives the count. Dotted vertical lines mark grid drops and breaker trips."""
    ds = _dataset(results)
    ev = results.events if hasattr(results, "events") else pd.DataFrame(columns=["time", "kind", "detail"])
    fails = ev[ev["kind"].isin(kinds)].copy()
    fig, (ax,) = _figure(figsize=(9, 4.8))
    t0, t1 = ds["time"].values[0], ds["time"].values[-1]
    if len(fails):
        fails["t"] = pd.to_datetime(fails["time"]).to_numpy()
        counts = fails["detail"].astype(str).value_counts()
        order = list(counts.index[::-1])  # most frequent on top
        colors = [f"C{i % 10}" for i in range(len(order))]
        for y, (cls, color) in enumerate(zip(order, colors, strict=True)):
            tt = fails.loc[fails["detail"].astype(str) == cls, "t"].to_numpy()
            ax.scatter(tt, np.full(len(tt), y), marker="|", s=120, color=color, linewidths=1.5,
                       label=cls)
        ax.set_yticks(range(len(order)), [f"{c} ({counts[c]})" for c in order], fontsize=8)
        ax.set_ylim(-0.7, len(order) - 0.3)
    else:
        ax.set_yticks([])
        ax.text(0.5, 0.5, "no failures in this run", transform=ax.transAxes, ha="center")
    for kind, color in (("grid_drop", "#c44e52"), ("breaker_trip", "#8172b3")):
        sel = ev[ev["kind"] == kind]
        for k, tt in enumerate(pd.to_datetime(sel["time"]).to_numpy()):
            ax.axvline(tt, color=color, linestyle=":", linewidth=1, label=kind.replace("_", " ") if k == 0 else None)
    ax.set_xlim(t0, t1)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(_title(ds, f"failures by component ({len(fails)} in total)"))
    if ev["kind"].isin(["grid_drop", "breaker_trip"]).any():
        ax.legend(handles=[h for h in ax.get_legend_handles_labels()[0]
                           if h.get_label() in ("grid drop", "breaker trip")], loc="lower right", fontsize=8)
    _date_axis(ax)
    return fig


def _ci_band(g: xr.DataArray, seed_dim: str, name: str, units: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """Lower and upper band of the 90 % t-interval of the mean over ``seed_dim`` at each point,
    as the reports print it (:func:`twin.studies.labels.interval_text`): cut to the quantity's
    physical range (:func:`twin.studies.labels.physical_bounds`, from ``name`` and ``units``)
    and NaN (nothing drawn) where the interval is not meaningful (fewer than
    ``MIN_SEEDS_FOR_INTERVAL`` values, :attr:`Interval.meaningful`). Returns ``(low, high,
    any bound cut)``."""
    from twin.studies.labels import physical_bounds
    from twin.studies.stats import mean_interval
    bounds = physical_bounds(name, units)
    rows = np.moveaxis(g.values, g.dims.index(seed_dim), -1)
    ivs = [mean_interval(r) for r in rows.reshape(-1, rows.shape[-1])]
    shown = [i.clip(*bounds) if i.meaningful else None for i in ivs]
    lo = np.array([i.low if i is not None else np.nan for i in shown]).reshape(rows.shape[:-1])
    hi = np.array([i.high if i is not None else np.nan for i in shown]).reshape(rows.shape[:-1])
    cut = any(i is not None and (i.low_clipped or i.high_clipped) for i in shown)
    return lo, hi, cut


def _ci_title(n_seeds: int, clipped: bool) -> str:
    """Title words for a ``"ci"`` band: what is drawn, as the reports' interval note says it."""
    from twin.studies.stats import MIN_SEEDS, MIN_SEEDS_FOR_INTERVAL
    if n_seeds < MIN_SEEDS_FOR_INTERVAL:
        return f"means only: below {MIN_SEEDS_FOR_INTERVAL} seeds no interval is meaningful"
    text = "90 % t-interval of the mean"
    if clipped:
        text += ", cut at the physical bound"
    return text + (f" (< {MIN_SEEDS} seeds: wide)" if n_seeds < MIN_SEEDS else "")


def sweep(ds: xr.Dataset, kpi: str, x: str | None = None, hue: str | None = None,
          seed_dim: str = "seed", band: str = "ci") -> Figure:
    """A KPI of a sweep Dataset against swept parameter ``x`` (default: its first non-seed
    dimension), one line per value of ``hue`` (default: the next one), mean over seeds
    with a band: ``"ci"`` (90 % Student-t interval of the mean, the default; n and method
    in the title), ``"minmax"`` (min to max over seeds), ``"std"`` (mean ± 1 standard
    deviation) or ``"none"``. Named values (categories) are drawn as points with interval
    bars, numbers as lines. Other dimensions must have length 1."""
    if kpi not in ds:
        raise KeyError(f"{kpi!r} is not a variable of the sweep dataset ({', '.join(map(str, ds.data_vars))})")
    da = ds[kpi]
    dims = cast(list[str], [d for d in da.dims if d != seed_dim])   # xarray dim names are str here
    if not dims:
        raise ValueError(f"{kpi!r} has no swept dimension besides {seed_dim!r}")
    x = x or dims[0]
    rest = [d for d in dims if d != x]
    if hue is None and rest:
        hue = rest[0]
    for d in dims:
        if d not in (x, hue) and da.sizes[d] != 1:
            raise ValueError(f"dimension {d!r} has {da.sizes[d]} values; select one (ds.sel) or pass it as x/hue")
    da = da.squeeze([d for d in dims if d not in (x, hue)], drop=True)
    fig, (ax,) = _figure(figsize=(7.5, 4.5))
    groups = [(None, da)] if hue is None else [(v, da.sel({hue: v})) for v in da[hue].values]
    xv = da[x].values
    numeric = np.issubdtype(np.asarray(xv).dtype, np.number)
    pos = xv if numeric else np.arange(len(xv), dtype=float)

    def shift(k):  # side by side when categories carry several hue values
        return 0.0 if len(groups) == 1 else (k - (len(groups) - 1) / 2) * 0.6 / len(groups)

    clipped = False
    for k, (value, g) in enumerate(groups):
        color = f"C{k % 10}"
        if seed_dim in g.dims:
            mean = g.mean(seed_dim).values
            lo: np.ndarray | None
            hi: np.ndarray | None
            if band == "ci":
                lo, hi, cut = _ci_band(g, seed_dim, kpi, da.attrs.get("units", ""))
                clipped = clipped or cut
            elif band == "minmax":
                lo, hi = g.min(seed_dim).values, g.max(seed_dim).values
            elif band == "std":
                sd = g.std(seed_dim).values
                lo, hi = mean - sd, mean + sd
            elif band == "none":
                lo = hi = None
            else:
                raise ValueError(f"band must be 'ci', 'minmax', 'std' or 'none', got {band!r}")
            if lo is not None and numeric:
                ax.fill_between(pos, lo, hi, color=color, alpha=0.2, linewidth=0)
            elif lo is not None:   # categories: an interval bar at each category
                xs = pos + shift(k)
                ax.vlines(xs, lo, hi, color=color, linewidth=2, alpha=0.8)
                ax.hlines(np.concatenate([lo, hi]), np.concatenate([xs, xs]) - 0.06,
                          np.concatenate([xs, xs]) + 0.06, color=color, linewidth=2, alpha=0.8)
        else:
            mean = g.values
        label = None if value is None else f"{hue} = {value}"
        if numeric:
            ax.plot(pos, mean, marker="o", color=color, label=label)
        else:
            ax.plot(pos + shift(k), mean, marker="o", linestyle="none", color=color, label=label)
    if not numeric:
        ax.set_xticks(pos, [str(v) for v in xv])
        ax.set_xlim(-0.5, len(xv) - 0.5)
    from twin.studies.labels import axis_label
    ax.set_xlabel(x + (f" [{ds[x].attrs['units']}]" if x in ds.coords and "units" in ds[x].attrs else ""))
    ax.set_ylabel(axis_label(kpi, ds))
    n_seeds = ds.sizes.get(seed_dim, 1)
    what = {"ci": _ci_title(n_seeds, clipped), "minmax": "min-max", "std": "±1 sd", "none": "no band"}[band]
    ax.set_title(f"{kpi} vs {x}: mean of n = {n_seeds} seed{'s' if n_seeds != 1 else ''}, {what}",
                 fontsize=10)
    if hue is not None:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def sweep_series(ds: xr.Dataset, series: str, hue: str | None = None, seed_dim: str = "seed",
                 time_dim: str = "day", band: str = "minmax") -> Figure:
    """A time series of a sweep (dims: axes..., seed, day) against time, one line per value
    of ``hue`` (default: the first swept dimension), mean over seeds with a band
    (``"minmax"``, ``"std"``, ``"ci"`` as in :func:`sweep`, or ``"none"``). Other dimensions
    must have length 1."""
    if series not in ds:
        raise KeyError(f"{series!r} is not a variable of the sweep dataset")
    da = ds[series]
    if time_dim not in da.dims:
        raise ValueError(f"{series!r} has no {time_dim!r} dimension; use plots.sweep for a KPI")
    axes = cast(list[str], [d for d in da.dims if d not in (seed_dim, time_dim)])   # xarray dim names are str here
    if hue is None and axes:
        hue = axes[0]
    for d in axes:
        if d != hue and da.sizes[d] != 1:
            raise ValueError(f"dimension {d!r} has {da.sizes[d]} values; select one (ds.sel) or pass it as hue")
    da = da.squeeze([d for d in axes if d != hue], drop=True)
    fig, (ax,) = _figure(figsize=(8.5, 4.5))
    t = da[time_dim].values
    groups = [(None, da)] if hue is None else [(v, da.sel({hue: v})) for v in da[hue].values]
    clipped = False
    for k, (value, g) in enumerate(groups):
        color = f"C{k % 10}"
        mean = g.mean(seed_dim).values if seed_dim in g.dims else g.values
        if seed_dim in g.dims and band != "none":
            if band == "ci":
                lo, hi, cut = _ci_band(g, seed_dim, series, da.attrs.get("units", ""))
                clipped = clipped or cut
            elif band == "minmax":
                lo, hi = g.min(seed_dim).values, g.max(seed_dim).values
            elif band == "std":
                sd = g.std(seed_dim).values
                lo, hi = mean - sd, mean + sd
            else:
                raise ValueError(f"band must be 'ci', 'minmax', 'std' or 'none', got {band!r}")
            ax.fill_between(t, lo, hi, color=color, alpha=0.2, linewidth=0)
        ax.plot(t, mean, color=color, label=None if value is None else f"{hue} = {value}")
    ax.set_xlabel(f"{time_dim} [days]" if time_dim == "day" else time_dim)
    from twin.studies.labels import axis_label
    ax.set_ylabel(axis_label(series, ds))
    n_seeds = ds.sizes.get(seed_dim, 1)
    what = _ci_title(n_seeds, clipped) if band == "ci" else f"band {band}"
    ax.set_title(f"{series} (mean of {n_seeds} seed{'s' if n_seeds != 1 else ''}, {what})")
    if hue is not None:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig
