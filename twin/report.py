"""``twin report RUN_OR_SWEEP_DIR --out report.html``: a self-contained HTML report.

A run folder (``results.nc``) gives the ramp (installed / powered / healthy GPUs and tokens
by month), power against the staged limit, inlet temperatures and the event counts. A sweep
folder (``sweep.nc``) gives every KPI that moves against each swept value with its 5-95 %
band over seeds, the series per grid point, a summary table, a reading generated from the
numbers and, for the siting and ramp-slip studies, their tables. Figures are matplotlib
PNGs embedded as base64; nothing outside the file is referenced.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import html
import io
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from twin.errors import EXIT_BAD_INPUT
from twin.studies.stats import LEVEL, MIN_SEEDS_FOR_INTERVAL
from twin.thermal.properties import ASHRAE_RECOMMENDED_MAX_C

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1150px;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
.tw{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0;max-width:100%} th,td{border:1px solid #ddd;
padding:3px 7px;text-align:right} td{overflow-wrap:anywhere} th{background:#f3f3f3;font-weight:600;
overflow-wrap:normal;word-break:normal;hyphens:none}
td.t{text-align:left} td:first-child,th:first-child{text-align:left}
table.inputs th{width:9em;vertical-align:top} table.inputs{width:100%}
img{max-width:100%;height:auto;display:block;margin:.5em 0} .meta{color:#666;font-size:.9em}
p.reading{background:#f6f8fb;border-left:4px solid #1f77b4;padding:.6em .9em}
p.answer{font-size:1.12em;background:#fdf6e3;border-left:5px solid #d68910;padding:.7em 1em}
p.note{color:#444;font-size:.92em} p.warn{background:#fdecea;border-left:4px solid #c0392b;padding:.5em .9em}
.kpis{display:flex;flex-wrap:wrap;gap:.6em;margin:.8em 0}
.kpi{border:1px solid #ddd;border-radius:6px;padding:.4em .8em;min-width:9em;flex:1 1 9em}
.kpi .v{font-size:1.3em;font-weight:600} .kpi .k{font-size:.8em;color:#555}
@media print{body{max-width:none;margin:0;font-size:10pt} .tw{overflow:visible} table{font-size:8pt}
h2{break-after:avoid} img,table,.kpi{break-inside:avoid} @page{size:A4;margin:12mm}}
"""


# --------------------------------------------------------------------------- HTML pieces
def figure_png_base64(fig) -> str:
    """Render a matplotlib figure to a base64 PNG string and close it."""
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _img(fig, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{figure_png_base64(fig)}">'


def _num(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return "n/a"
        v = v + 0.0   # no "-0"
        a = abs(v)
        if a >= 1e9:
            return f"{v:.4g}"
        if a >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return html.escape(str(v))


def _header(text) -> str:
    """A column header that may wrap at underscores and dots (so wide tables fit the page)."""
    return html.escape(str(text)).replace("_", "_<wbr>").replace(".", ".<wbr>")


def table_html(df: pd.DataFrame) -> str:
    """A table that fits the page: headers wrap at underscores, cells wrap anywhere, and a
    table still wider than the page scrolls inside its own box (never the page)."""
    head = "".join(f"<th>{_header(c)}</th>" for c in df.columns)
    def cell(v):
        numeric = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        return f"<td>{_num(v)}</td>" if numeric else f"<td class='t'>{_num(v)}</td>"
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in df.itertuples(index=False))
    return f"<div class='tw'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def page(title: str, sections: list[str], meta: str) -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1><p class='meta'>{meta}</p>"
            + "\n".join(sections) + "</body></html>")


def _plt():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


# --------------------------------------------------------------------------- a run
def summary_section(answer: str, rows: list[tuple[str, str]], kpis: list[tuple[str, str]],
                    notes: tuple[str, ...] | list[str] = ()) -> str:
    """The ``<section id="summary">`` that opens every report: the answer, the inputs, the
    headline KPIs in human units, and notes (e.g. on the intervals)."""
    inputs = "".join(f"<tr><th>{html.escape(k)}</th><td class='t'>{html.escape(v)}</td></tr>" for k, v in rows)
    cards = "".join(f"<div class='kpi'><div class='v'>{html.escape(v)}</div><div class='k'>{html.escape(k)}</div></div>"
                    for k, v in kpis)
    extra = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes if n)
    return (f"<section id='summary'><h2>Summary</h2><p class='answer'>{html.escape(answer)}</p>"
            f"<div class='kpis'>{cards}</div>{extra}"
            + (f"<table class='inputs'><tbody>{inputs}</tbody></table>" if rows else "") + "</section>")


#: card label of each headline KPI of a run; the card's value carries the unit (human()), so
#: a label names what was measured and never repeats the unit ("49.9 T tokens" over "trained")
HEADLINE_RUN_KPIS = {"tokens_total": "trained", "tokens_per_day_mean": "mean rate",
                     "goodput_fraction": "goodput", "gpu_hours_installed": "installed",
                     "energy_facility_mwh": "utility energy", "pue_mean": "mean PUE",
                     "peak_facility_power_kw": "peak utility power", "max_rack_inlet_c": "hottest inlet"}


def kpi_table(kpis: dict, ds=None) -> pd.DataFrame:
    """KPIs with their long names and human units (identifier kept for scripts)."""
    from twin.results import KPI_UNITS
    from twin.studies.labels import describe, human, sentence_start
    rows = []
    for k in KPI_UNITS:
        if k in kpis:
            long_name, units = describe(k, ds)
            rows.append({"KPI": sentence_start(long_name), "value": human(kpis[k], units, k),
                         "identifier": k})
    return pd.DataFrame(rows)


def run_report_html(results, title: str | None = None) -> str:
    """The HTML report of one run (:class:`twin.results.Results`)."""
    from twin.studies import summary as sm
    from twin.studies.labels import axis_label, describe, human
    from twin.studies.tables import monthly_ramp_table
    plt = _plt()
    ds, ev, kpis = results.dataset, results.events, results.kpis
    name = ds.attrs.get("scenario_name", "run")
    title = title or f"twin run report: {name}"
    t = pd.DatetimeIndex(ds["time"].values)
    scenario = _scenario_or_none(results)
    answer, facts = sm.run_answer(ds, kpis, scenario)
    cards = [(short, human(kpis[k], describe(k, ds)[1], k)) for k, short in HEADLINE_RUN_KPIS.items() if k in kpis]
    sections = [summary_section(answer, sm.input_summary(scenario) if scenario is not None else [], cards,
                                [sm.budget_sentence(facts["budget"], float(kpis.get("lost_gpu_hours") or 0.0)),
                                 *sm.invariant_notes(ds)])]

    # ramp
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4))
    for var, lab in (("gpus_installed", "installed"), ("gpus_powered", "powered"), ("gpus_healthy", "healthy")):
        ax.step(t, ds[var].values, where="post", label=lab)
    ax.set_ylabel("GPUs")
    ax.set_title("GPUs installed, powered and healthy")
    tok = ds["job_tokens"].sum("job").values
    ax2 = ax.twinx()
    ax2.plot(t, tok / 1e12, color="k", lw=1, ls="--", label="cumulative tokens")
    ax2.set_ylabel("Cumulative tokens [T]")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=8)
    monthly = monthly_ramp_table(ds)
    bx.bar(monthly["month"], monthly["tokens_in_month"] / 1e12, color="#1f77b4")
    bx.set_ylabel("Tokens in the month [T]")
    bx.set_title("Tokens trained per month")
    bx.tick_params(axis="x", rotation=45)
    fig.autofmt_xdate()
    fig.subplots_adjust(wspace=0.35)
    shown = monthly.assign(tokens_in_month=monthly.tokens_in_month.map(lambda v: human(v, "tokens")),
                           tokens_cumulative=monthly.tokens_cumulative.map(lambda v: human(v, "tokens")),
                           healthy_mean=monthly.healthy_mean.round(0).astype(int))
    shown.columns = ["month", "installed at end", "powered at end", "healthy at end", "healthy (mean)",
                     "tokens in month", "tokens cumulative"]
    sections.append("<h2>Ramp</h2>" + _img(fig, "ramp") + table_html(shown))

    # power
    fig, ax = plt.subplots(figsize=(12, 3.8))
    ax.step(t, ds["power_available_w"].values / 1e3, where="post", color="r", lw=2, label="staged IT limit")
    ax.plot(t, ds["facility_it_power_w"].values / 1e3, lw=1, label=describe("facility_it_power_w", ds)[0])
    ax.plot(t, ds["facility_total_power_w"].values / 1e3, lw=1, alpha=0.8,
            label=describe("facility_total_power_w", ds)[0])
    pw = facts.get("power_wait")
    if pw is not None:
        ax.axvspan(pw["start"], pw["end"], color="#f2c14e", alpha=0.25,
                   label=f"{pw['unpowered_gpus']:,.0f} GPUs waiting for power")
        ax.step(t, (ds["gpus_powered"].values / max(1, _gpus_per_rack(scenario))) * pw["rack_worst_w"] / 1e3,
                where="post", color="#8e44ad", lw=1, ls="--", label="worst case committed by admitted racks")
    ax.set_ylabel("Power [kW]")
    ax.set_title("Power against the staged limit")
    ax.legend(loc="lower right", fontsize=8)
    fig.autofmt_xdate()
    why = f"<p class='reading'>{html.escape(sm.power_wait_sentence(pw))}</p>" if pw is not None else ""
    sections.append("<h2>Power</h2>" + _img(fig, "power") + why +
                    f"<p>Peak utility power {human(kpis.get('peak_facility_power_kw'), 'kW')}; mean PUE "
                    f"{human(kpis.get('pue_mean'), '1')}; highest RPP load "
                    f"{human(kpis.get('max_rpp_load_fraction'), '1', 'max_rpp_load_fraction')} of its continuous "
                    f"limit; {int(kpis.get('breaker_trips') or 0)} breaker trips.</p>")

    # inlet temperatures
    on = ds["rack_state"] >= 1
    inlet = ds["rack_inlet_c"].where(on)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.6, 1]})
    with np.errstate(all="ignore"), _quiet():
        ax.plot(t, inlet.max("rack").values, label="hottest powered rack")
        ax.plot(t, inlet.quantile(0.5, "rack", skipna=True).values, label="median")
        ax.plot(t, inlet.min("rack").values, label="coolest")
    ax.axhline(ASHRAE_RECOMMENDED_MAX_C, color="r", ls=":",
               label=f"ASHRAE recommended {ASHRAE_RECOMMENDED_MAX_C:g} °C")
    ax.set_ylabel(axis_label("rack_inlet_c", ds))
    ax.set_title("Rack inlet temperatures")
    ax.legend(loc="lower right", fontsize=8)
    with np.errstate(all="ignore"), _quiet():
        worst = inlet.max("time").values
    sc = bx.scatter(ds["rack_x_m"].values, ds["rack_y_m"].values, c=np.where(np.isfinite(worst), worst, np.nan),
                    cmap="inferno", marker="s", s=28)
    fig.colorbar(sc, ax=bx, label="Worst inlet [°C]")
    bx.set_aspect("equal")
    bx.set_xlabel("x [m]")
    bx.set_ylabel("y [m]")
    bx.set_title("Worst inlet per rack (plan view)")
    fig.autofmt_xdate()
    sections.append("<h2>Inlet temperatures</h2>" + _img(fig, "inlet") +
                    f"<p>Worst inlet of a powered rack {human(kpis.get('max_rack_inlet_c'), 'degC')}; "
                    f"{human(kpis.get('hours_above_ashrae_recommended', 0), 'rack-h')} above 27 °C.</p>")

    # KPIs and events
    sections.append("<h2>KPIs</h2>" + table_html(kpi_table(kpis, ds)))
    if len(ev):
        counts = ev["kind"].value_counts().rename_axis("event").reset_index(name="count")
        sections.append("<h2>Events</h2>" + table_html(counts))
        adm = ev[ev["kind"].isin(["power_stage", "delivery", "power_on"])]
        if len(adm):
            sections.append("<h3>Power stages, deliveries and admissions</h3>"
                            + table_html(adm[["time", "kind", "target", "detail"]].assign(
                                time=adm["time"].astype(str).str[:16])))
    meta = (f"scenario {html.escape(name)}, seed {ds.attrs.get('seed')}, hash "
            f"{str(ds.attrs.get('scenario_hash', ''))[:12]}, twin {ds.attrs.get('twin_version')}; "
            f"{t[0].date()} to {t[-1].date()}; generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    return page(title, sections, meta)


def _scenario_or_none(results):
    """The scenario stored in a run's attributes, or None if it cannot be read back."""
    try:
        from twin.viz.snapshot import scenario_of
        return scenario_of(results)
    except (ValueError, KeyError, TypeError):
        return None


def _gpus_per_rack(scenario) -> float:
    if scenario is None:
        return 1
    from twin.plant import typical_rack
    return typical_rack(scenario)[1]        # the mean delivered rack when racks differ


# --------------------------------------------------------------------------- a sweep
def _is_categorical(values) -> bool:
    """True when the swept values are names (sites, UPS modes), not numbers on an axis."""
    vals = [v.item() if hasattr(v, "item") else v for v in np.asarray(values).ravel()]
    return not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                   for v in vals)


def _scale_for(name: str, ds, values) -> tuple[float, str]:
    """(divisor, unit shown) so that an axis reads 56.6 (T tokens), not 5.66e13."""
    from twin.studies.labels import describe, display_unit
    units = describe(name, ds)[1]
    v = np.asarray(values, float)
    top = float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 0.0
    if name.endswith("_fraction") and units in ("1", ""):
        return 0.01, "%"
    if units == "tokens":
        return (1e12, "T tokens") if top >= 1e12 else (1e9, "B tokens") if top >= 1e9 else (1.0, "tokens")
    if units == "MWh" and top >= 1e3:
        return 1e3, "GWh"
    if units == "kW" and top >= 1e3:
        return 1e3, "MW"
    if units == "W":
        return (1e6, "MW") if top >= 1e6 else (1e3, "kW")
    for f, p in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if top >= 10 * f:
            return f, f"{p} {display_unit(name, units)}".strip()
    return 1.0, display_unit(name, units)


def _axis_figure(ds, dim: str, kpis: list[str], level: float = LEVEL):
    """Each KPI against the values of ``dim``: mean over seeds with its t-interval; named
    values (categorical) as points with interval bars, numbers as a line."""
    from twin.studies.labels import describe, physical_bounds
    from twin.studies.stats import mean_interval
    from twin.studies.tables import grid_points
    plt = _plt()
    n = len(kpis)
    cols = min(3, n)
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    labels = [str(v.item() if hasattr(v, "item") else v) for v in ds[dim].values]
    categorical = _is_categorical(ds[dim].values)
    x = np.arange(len(labels))
    others = [d for d in ds[kpis[0]].dims if d not in (dim, "seed")]
    combos = list(grid_points(ds, others))[:6] if others else [{}]
    for ax, k in zip(axes.ravel(), kpis, strict=False):
        div, unit = _scale_for(k, ds, ds[k].values)
        for c, combo in enumerate(combos):
            v = ds[k].sel(combo).transpose(dim, "seed").values / div
            bounds = [b / div for b in physical_bounds(k, describe(k, ds)[1])]
            iv = [mean_interval(row, level).clip(*bounds) for row in v]
            m = np.array([i.mean for i in iv])
            # no bar where the interval is not meaningful (too few seeds)
            lo = np.array([i.low if i.meaningful and np.isfinite(i.low) else i.mean for i in iv])
            hi = np.array([i.high if i.meaningful and np.isfinite(i.high) else i.mean for i in iv])
            off = (c - (len(combos) - 1) / 2) * (0.12 if categorical else 0.08)
            lab = ", ".join(f"{d}={_short(val)}" for d, val in combo.items()) or None
            ax.errorbar(x + off, m, yerr=[m - lo, hi - m], fmt="o" if categorical else "o-", capsize=5,
                        ms=6, label=lab, color=f"C{c}", lw=1.5)
            for s in range(v.shape[1]):
                ax.plot(x + off + 0.04, v[:, s], ".", color=f"C{c}", alpha=0.35, ms=4)
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=30 if max(map(len, labels)) > 8 else 0, fontsize=8,
                           ha="right" if max(map(len, labels)) > 8 else "center")
        if categorical:
            ax.set_xlim(-0.6, len(labels) - 0.4)
        long_name = describe(k, ds)[0]
        ax.set_title(long_name if len(long_name) <= 48 else k.replace("_", " "), fontsize=9)
        if unit:
            ax.set_ylabel(unit, fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    if others:
        axes.ravel()[0].legend(fontsize=7)
    n_seeds = ds.sizes.get("seed", 1)
    what = (f"mean over seeds with its {level:.0%} t-interval (n = {n_seeds}; cut at the KPI's physical bounds)"
            if n_seeds >= MIN_SEEDS_FOR_INTERVAL else f"mean over n = {n_seeds} seeds (too few for an interval)")
    fig.suptitle(f"KPIs against {dim}: {what}; dots: single seeds", fontsize=10)
    fig.tight_layout()
    return fig


def _short(v) -> str:
    v = v.item() if hasattr(v, "item") else v
    return str(v)


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _series_figure(ds, dims: list[str], names: list[str], level: float = LEVEL):
    from scipy import stats

    from twin.studies.labels import describe, physical_bounds
    from twin.studies.tables import grid_points
    plt = _plt()
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 3.8), squeeze=False)
    day = ds["day"].values
    combos = list(grid_points(ds, dims))[:10] if dims else [{}]
    for ax, n in zip(axes.ravel(), names, strict=True):
        div, unit = _scale_for(n, ds, ds[n].values)
        for c, combo in enumerate(combos):
            v = ds[n].sel(combo).transpose("seed", "day").values / div
            with np.errstate(all="ignore"), _quiet():
                m = np.nanmean(v, axis=0)
                k = np.isfinite(v).sum(axis=0)
                half = np.where(k >= MIN_SEEDS_FOR_INTERVAL, stats.t.ppf(0.5 + level / 2, np.maximum(k - 1, 1))
                                * np.nanstd(v, axis=0, ddof=1) / np.sqrt(np.maximum(k, 1)), 0.0)
            lower, upper = (b / div for b in physical_bounds(n, describe(n, ds)[1]))
            lab = ", ".join(f"{_short(val)}" for val in combo.values()) or "all"
            ax.plot(day, m, color=f"C{c}", lw=1.2, label=lab)
            ax.fill_between(day, np.maximum(m - half, lower), np.minimum(m + half, upper), color=f"C{c}",
                            alpha=0.2, lw=0)
        long_name = describe(n, ds)[0]
        ax.set_title(f"{long_name} [{unit}]" if unit else long_name, fontsize=9)
        ax.set_xlabel("days since start")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def interval_table(ds, dims: list[str], kpis: list[str], level: float = LEVEL) -> pd.DataFrame:
    """One row per grid point: runs ok/failed and, per KPI, "mean [low, high]" in human units
    (t-interval of the mean over seeds, clipped to the KPI's physical bounds, a clipped bound
    marked *; the mean alone below :data:`twin.studies.stats.MIN_SEEDS_FOR_INTERVAL` seeds)."""
    from twin.studies.labels import describe, interval_text
    from twin.studies.stats import mean_interval
    from twin.studies.tables import grid_points
    rows = []
    for combo in (grid_points(ds, dims) if dims else [{}]):
        st = ds["status"].sel(combo).values
        row = {d: _short(v) for d, v in combo.items()}
        row["runs ok / failed"] = f"{int((st == 'ok').sum())} / {int((st == 'failed').sum())}"
        for k in kpis:
            units = describe(k, ds)[1]
            iv = mean_interval(ds[k].sel(combo).values, level)
            row[k.replace("_", " ")] = interval_text(iv, units, k)
        rows.append(row)
    return pd.DataFrame(rows)


def sweep_report_html(ds, spec, title: str | None = None, weights=None) -> str:
    """The HTML report of a sweep (Dataset from ``sweep.nc`` and its :class:`SweepSpec`).
    ``weights``: siting weights (``"gpus_hosted=3,..."`` or a mapping); default the sweep
    file's ``weights`` if it has them, else :data:`twin.studies.tables.DEFAULT_SITING_WEIGHTS`."""
    from twin.studies import tables
    from twin.studies.labels import human
    from twin.studies.stats import MIN_SEEDS, interval_note
    from twin.studies.summary import sweep_answer
    from twin.sweep import kpi_names
    plt = _plt()
    title = title or f"twin sweep report: {spec.name}"
    dims = [a.name for a in spec.axes]
    st = ds["status"].values
    n_seeds = int(ds.sizes.get("seed", 1))
    names = kpi_names(ds)
    weights = weights if weights is not None else (dict(getattr(spec, "weights", ())) or None)
    sections = []

    # the answer first
    preface = ""
    siting = slip = None
    if spec.study == "siting" and dims:
        siting = tables.siting_table(ds, dims[0], weights)
        preface = tables.siting_reading(siting, dims[0]).split(". ")[0] + "."
        asked = tables.gpus_asked(siting)
        short = siting[siting["gpus_hosted"] < asked]
        if len(short):
            preface += " " + "Cannot host the whole cluster: " + "; ".join(
                f"{r[dims[0]]} ({r.gpus_hosted:,.0f} of {asked:,.0f} GPUs)" for _, r in short.iterrows()) + "."
    if spec.study == "ramp_slip" and dims:
        base = "none" if "none" in [str(v) for v in ds[dims[0]].values] else ds[dims[0]].values[0]
        slip = (tables.slip_table(ds, dims[0], base), base)
        preface = tables.slip_reading(slip[0], dims[0], base).split(". ")[0] + "."
    key = [k for k in ("tokens_total",) + tuple(tables.HEADLINE_KPIS) if k in names]
    answer = sweep_answer(ds, dims, key, preface) if int((st == "ok").sum()) else \
        "No run of this sweep finished, so it answers nothing yet."
    axes_rows = [(a.name, ", ".join(f"{lab} ({'; '.join(o) or 'base'}"
                                    f"{'; scenario ' + Path(s).name if s else ''})"
                                    for lab, o, s in zip(a.labels, a.overrides, a.scenarios, strict=True)))
                 for a in spec.axes]
    rows = ([("scenario", Path(spec.scenario).name)] if spec.scenario else []) + \
        ([("fixed overrides", "; ".join(spec.overrides))] if spec.overrides else []) + axes_rows + \
        [("seeds", f"{n_seeds} ({', '.join(map(str, spec.seeds))})"),
         ("runs", f"{int((st == 'ok').sum())} ok, {int((st == 'failed').sum())} failed, "
                  f"{int((st == 'missing').sum())} missing, of {st.size}")]
    notes = [interval_note(n_seeds)]
    if spec.description:
        notes.insert(0, spec.description)
    cards = []
    if "tokens_total" in ds:
        with np.errstate(all="ignore"), _quiet():
            tok = ds["tokens_total"].mean("seed", skipna=True).values.ravel()
        if np.isfinite(tok).any():
            cards = [("trained, best grid point", human(np.nanmax(tok), "tokens")),
                     ("trained, worst grid point", human(np.nanmin(tok), "tokens"))]
    cards.append(("seeds per point", f"{n_seeds}"))
    sec = summary_section(answer, rows, cards, notes)
    if n_seeds < MIN_SEEDS:
        sec = sec.replace("</section>", f"<p class='warn'>Only {n_seeds} seed{'s' if n_seeds != 1 else ''} per "
                                        f"grid point: fewer than {MIN_SEEDS}.</p></section>")
    sections.append(sec)

    # study tables
    if siting is not None:
        t = siting
        sections.append("<h2>Siting: ranking of the candidate halls</h2>"
                        f"<p class='reading'>{html.escape(tables.siting_reading(t, dims[0]))}</p>"
                        + table_html(_siting_display(t, dims[0])))
        fig, axs = plt.subplots(1, 4, figsize=(15, 3.4))
        for ax, (k, lab) in zip(axs, (("gpus_hosted", "GPUs hosted"), ("tokens_total", "tokens in the run [T]"),
                                      ("energy_cost_usd", "energy cost [M USD]"), ("co2_t", "CO2 [kt]")),
                                strict=True):
            sc = {"tokens_total": 1e12, "energy_cost_usd": 1e6, "co2_t": 1e3}.get(k, 1.0)
            ax.bar(t[dims[0]], t[k] / sc, color=[f"C{i}" for i in range(len(t))])
            ax.set_title(lab, fontsize=9)
            ax.tick_params(axis="x", rotation=20, labelsize=8)
        fig.tight_layout()
        sections.append(_img(fig, "siting"))
    if slip is not None:
        t, base = slip
        shown = t.copy()
        if len(t) and int(t.n_seeds.min()) < MIN_SEEDS_FOR_INTERVAL:
            # too few seeds for a meaningful interval: the table shows the means (slip_reading says why)
            shown = shown.drop(columns=[c for c in shown.columns if c.endswith(("_low", "_high"))])
        for c in ("tokens_mean", "tokens_lost_mean", "tokens_lost_low", "tokens_lost_high", "tokens_lost_p05",
                  "tokens_lost_p95"):
            if c in shown:
                shown[c] = shown[c].map(lambda v: human(v, "tokens"))
        for c in ("tokens_lost_fraction", "tokens_lost_fraction_low", "tokens_lost_fraction_high"):
            if c in shown:
                shown[c] = shown[c].map(lambda v: f"{100 * v:.2f} %")
        for c in ("healthy_gpu_hours_lost", "busy_gpu_hours_lost", "busy_gpu_hours_lost_low",
                  "busy_gpu_hours_lost_high"):
            if c in shown:
                shown[c] = shown[c].map(lambda v: human(v, "GPU-h"))
        sections.append("<h2>Ramp: cost of a one-month slip of each power stage</h2>"
                        f"<p class='reading'>{html.escape(tables.slip_reading(t, dims[0], base))}</p>"
                        + table_html(shown))
        if "gpus_powered" in ds and ds.sizes.get("day", 0):
            sections.append(_img(_series_figure(ds, dims, [n for n in ("gpus_powered", "tokens_cumulative")
                                                           if n in ds]), "slip series"))
        if ds.attrs.get("start") and ds.sizes.get("day", 0):
            for var, what in (("gpus_healthy", "healthy GPUs"), ("tokens_cumulative", "cumulative tokens")):
                if var in ds:
                    mt = tables.monthly_sweep_table(ds, dims[0], ds.attrs["start"], var)
                    unit = "tokens" if var == "tokens_cumulative" else "GPU"
                    for c in mt.columns[1:]:
                        mt[c] = mt[c].map(lambda v, u=unit: human(round(v) if u == "GPU" else v, u))
                    sections.append(f"<h3>{what} at the end of each month (mean over seeds)</h3>" + table_html(mt))

    # readings and KPI figures per axis
    for d in dims:
        eff = tables.axis_effects(ds, d, names)
        moving = eff[eff.spread_fraction > 1e-6].kpi.tolist()
        head = [k for k in tables.HEADLINE_KPIS if k in moving]
        rest = [k for k in moving if k not in head]
        show = (head + rest)[:15]
        sections.append(f"<h2>Effect of {html.escape(d)}</h2>"
                        f"<p class='reading'>{html.escape(tables.axis_reading(ds, d))}</p>")
        if show and int((st == "ok").sum()):
            sections.append(_img(_axis_figure(ds, d, show), f"KPIs against {d}"))
        else:
            sections.append("<p>No KPI changes across this axis.</p>")

    # series
    series = [n for n in ("gpus_powered", "tokens_cumulative", "facility_total_power_w", "inlet_max_c")
              if n in ds and ds.sizes.get("day", 0)]
    if series and spec.study != "ramp_slip" and int((st == "ok").sum()):
        band = (f"band: {100 * LEVEL:.0f} % t-interval cut at the physical bounds, n = {n_seeds}"
                if n_seeds >= MIN_SEEDS_FOR_INTERVAL else f"n = {n_seeds}, too few seeds for a band")
        sections.append(f"<h2>Time series (mean over seeds, {band})</h2>" + _img(
            _series_figure(ds, dims, series[:2]), "series") + (_img(_series_figure(ds, dims, series[2:]), "series 2")
                                                               if len(series) > 2 else ""))

    # summary table
    show = [k for k in tables.HEADLINE_KPIS if k in names][:6]
    sections.append(f"<h2>Summary per grid point</h2><p class='note'>{html.escape(interval_note(n_seeds))}</p>"
                    + table_html(interval_table(ds, dims, show)))
    if (st == "failed").any():
        fail = pd.DataFrame({"run": [str(k)[:12] for k in ds["run_key"].values[st == "failed"]],
                             "error": ds["error"].values[st == "failed"]})
        sections.append("<h2>Failed runs</h2>" + table_html(fail.drop_duplicates("error").head(20)))
    meta = (f"sweep {html.escape(spec.name)}, {st.size} runs, twin {ds.attrs.get('twin_version')}; "
            f"generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    return page(title, sections, meta)


def _siting_display(t: pd.DataFrame, dim: str) -> pd.DataFrame:
    """The siting table as a planner reads it (human units, the columns that decide)."""
    from twin.studies import tables
    from twin.studies.labels import human
    out = pd.DataFrame({dim: t[dim], "rank": t.get("overall_rank"), "score": t["score"].map(lambda v: f"{v:.2f}")})
    asked = tables.gpus_asked(t)
    out[f"GPUs hosted / delivered of {asked:,.0f} asked"] = [
        f"{h:,.0f} / {d:,.0f}" for h, d in zip(t.gpus_hosted, t.gpus_delivered, strict=True)]
    out["days to full capacity"] = t.days_to_full_capacity.map(lambda v: "never" if not np.isfinite(v) else f"{v:.0f}")
    out["tokens"] = t.tokens_total.map(lambda v: human(v, "tokens"))
    out["worst inlet"] = t.max_rack_inlet_c.map(lambda v: human(v, "degC"))
    out["upgrades"] = t.upgrade_cost_usd.map(lambda v: human(v, "USD"))
    out["energy cost"] = t.energy_cost_usd.map(lambda v: human(v, "USD"))
    out["CO2"] = t.co2_t.map(lambda v: f"{v:,.0f} t")
    out["PUE"] = t.pue_mean.map(lambda v: f"{v:.2f}") if "pue_mean" in t else ""
    out["binds"] = t["binds"]
    return out


# --------------------------------------------------------------------------- CLI
REPORT_SUFFIXES = (".html", ".htm", ".pdf")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")


def chromium_executable() -> str | None:
    """Headless Chromium for PDF printing and screenshots: ``TWIN_CHROMIUM`` or the first of
    chromium, chromium-browser, google-chrome on the PATH."""
    import os
    import shutil
    forced = os.environ.get("TWIN_CHROMIUM")
    if forced:
        return forced
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium(args: list[str], timeout_s: float = 180.0):
    """Run headless Chromium with a fresh profile (deleted afterwards) and ``args``."""
    import subprocess
    import tempfile
    exe = chromium_executable()
    if exe is None:
        raise RuntimeError("printing needs headless Chromium (apt-get install chromium), which is not installed")
    with tempfile.TemporaryDirectory(prefix="twin-chromium-") as profile:
        return subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout_s, check=False)


def print_pdf(text: str, out: str | Path) -> Path:
    """Print the report HTML ``text`` to a PDF at ``out`` through headless Chromium
    (A4, the page's print stylesheet; nothing is fetched: the page is self-contained)."""
    import tempfile
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="twin-report-") as tmp:
        src = Path(tmp) / "report.html"
        src.write_text(text, encoding="utf-8")
        pdf = Path(tmp) / "report.pdf"
        r = chromium(["--no-pdf-header-footer", f"--print-to-pdf={pdf}", src.as_uri()])
        if not pdf.exists() or pdf.stat().st_size == 0 or pdf.read_bytes()[:5] != b"%PDF-":
            raise RuntimeError(f"headless Chromium printed no PDF (exit {r.returncode}): {r.stderr.strip()[-400:]}")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = out.with_name(f".{out.name}.tmp")
        tmp_out.write_bytes(pdf.read_bytes())
        tmp_out.replace(out)
    return out


def build_report(path: str | Path, title: str | None = None, weights=None) -> str:
    """HTML for a run folder (results.nc) or a sweep folder (sweep.nc)."""
    p = Path(path)
    if (p / "sweep.nc").exists():
        from twin.sweep import load_sweep
        ds, spec = load_sweep(p)
        return sweep_report_html(ds, spec, title, weights)
    if (p / "results.nc").exists():
        from twin.results import Results
        return run_report_html(Results.load(p), title)
    raise FileNotFoundError(f"{p}: neither a run folder (results.nc) nor a sweep folder (sweep.nc)")


def run_report_cli(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="twin report",
                                 description="Write a self-contained report (figures embedded) of a run folder "
                                             "(twin run --out) or a sweep folder (twin sweep --out): HTML, or PDF "
                                             "printed through headless Chromium.")
    ap.add_argument("folder", help="run folder with results.nc, or sweep folder with sweep.nc")
    ap.add_argument("--out", required=True, help="file to write: report.html or report.pdf")
    ap.add_argument("--title", help="page title")
    ap.add_argument("--weights", metavar="criterion=w,...",
                    help="siting weights, e.g. gpus_hosted=3,tokens_total=2,co2_t=0.5 (criteria not named keep "
                         "their default; the sweep file's `weights` otherwise)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and EXIT_BAD_INPUT
    out = Path(args.out)
    if out.suffix.lower() not in REPORT_SUFFIXES:
        print(f"error: --out {args.out}: a report is written as .html or .pdf (got "
              f"'{out.suffix or 'no extension'}')", file=sys.stderr)
        return EXIT_BAD_INPUT
    weights = None
    if args.weights is not None:
        from twin.studies.tables import parse_weights
        try:
            weights = parse_weights(args.weights)
        except ValueError as exc:
            print(f"error: --weights: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("error: twin report draws its figures with matplotlib, which is not installed; "
              "install with `pip install -e .[viz]`", file=sys.stderr)
        return 1
    p = Path(args.folder)
    if not p.is_dir():
        print(f"error: {args.folder}: no such folder", file=sys.stderr)
        return EXIT_BAD_INPUT
    if out.suffix.lower() == ".pdf" and chromium_executable() is None:
        print("error: --out .pdf prints through headless Chromium, which is not installed "
              "(apt-get install chromium); write .html instead", file=sys.stderr)
        return 1
    try:
        text = build_report(p, args.title, weights)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"error: {args.folder}: cannot read the results ({type(exc).__name__}: {exc})", file=sys.stderr)
        return EXIT_BAD_INPUT
    if out.suffix.lower() == ".pdf":
        try:
            print_pdf(text, out)
        except (RuntimeError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB PDF)")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    print(f"wrote {out} ({len(text) / 1e6:.1f} MB)")
    return 0
