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

EXIT_BAD_INPUT = 2
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1150px;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0} th,td{border:1px solid #ddd;padding:3px 7px;
text-align:right} th{background:#f3f3f3} td.t{text-align:left} td:first-child,th:first-child{text-align:left}
img{max-width:100%;height:auto;display:block;margin:.5em 0} .meta{color:#666;font-size:.9em}
p.reading{background:#f6f8fb;border-left:4px solid #1f77b4;padding:.6em .9em}
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


def table_html(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    def cell(v):
        numeric = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
        return f"<td>{_num(v)}</td>" if numeric else f"<td class='t'>{_num(v)}</td>"
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in df.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
def run_report_html(results, title: str | None = None) -> str:
    """The HTML report of one run (:class:`twin.results.Results`)."""
    from twin.results import KPI_UNITS
    from twin.studies.tables import monthly_ramp_table
    plt = _plt()
    ds, ev, kpis = results.dataset, results.events, results.kpis
    name = ds.attrs.get("scenario_name", "run")
    title = title or f"twin run report: {name}"
    t = pd.DatetimeIndex(ds["time"].values)
    sections = []

    # ramp
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4))
    for var, lab in (("gpus_installed", "installed"), ("gpus_powered", "powered"), ("gpus_healthy", "healthy")):
        ax.step(t, ds[var].values, where="post", label=lab)
    ax.set_ylabel("GPUs")
    ax.set_title("GPUs installed, powered and healthy")
    ax.legend(loc="lower right")
    tok = ds["job_tokens"].sum("job").values
    ax2 = ax.twinx()
    ax2.plot(t, tok / 1e12, color="k", lw=1, ls="--", label="cumulative tokens")
    ax2.set_ylabel("cumulative tokens [T]")
    monthly = monthly_ramp_table(ds)
    bx.bar(monthly["month"], monthly["tokens_in_month"] / 1e12, color="#1f77b4")
    bx.set_ylabel("tokens in the month [T]")
    bx.set_title("Tokens trained per month")
    bx.tick_params(axis="x", rotation=45)
    fig.autofmt_xdate()
    fig.subplots_adjust(wspace=0.35)
    sections.append("<h2>Ramp</h2>" + _img(fig, "ramp") + table_html(monthly.assign(
        tokens_in_month=monthly.tokens_in_month.map(lambda v: f"{v:.4g}"),
        tokens_cumulative=monthly.tokens_cumulative.map(lambda v: f"{v:.4g}"),
        healthy_mean=monthly.healthy_mean.round(0))))

    # power
    fig, ax = plt.subplots(figsize=(12, 3.8))
    ax.step(t, ds["power_available_w"].values / 1e3, where="post", color="r", lw=2, label="staged IT limit")
    ax.plot(t, ds["facility_it_power_w"].values / 1e3, lw=1, label="IT power")
    ax.plot(t, ds["facility_total_power_w"].values / 1e3, lw=1, alpha=0.8, label="utility power (IT + losses + cooling)")
    ax.set_ylabel("kW")
    ax.set_title("Power against the staged limit")
    ax.legend(loc="lower right")
    fig.autofmt_xdate()
    sections.append("<h2>Power</h2>" + _img(fig, "power") +
                    f"<p>Peak utility power {kpis.get('peak_facility_power_kw', math.nan):,.0f} kW; mean PUE "
                    f"{kpis.get('pue_mean', math.nan):.3f}; highest RPP load "
                    f"{kpis.get('max_rpp_load_fraction', math.nan):.0%} of its continuous limit; "
                    f"{int(kpis.get('breaker_trips', 0))} breaker trips.</p>")

    # inlet temperatures
    on = ds["rack_state"] >= 1
    inlet = ds["rack_inlet_c"].where(on)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.6, 1]})
    with np.errstate(all="ignore"), _quiet():
        ax.plot(t, inlet.max("rack").values, label="hottest powered rack")
        ax.plot(t, inlet.quantile(0.5, "rack", skipna=True).values, label="median")
        ax.plot(t, inlet.min("rack").values, label="coolest")
    ax.axhline(27.0, color="r", ls=":", label="ASHRAE recommended 27 C")
    ax.set_ylabel("inlet [C]")
    ax.set_title("Rack inlet temperatures")
    ax.legend(loc="lower right", fontsize=8)
    with np.errstate(all="ignore"), _quiet():
        worst = inlet.max("time").values
    sc = bx.scatter(ds["rack_x_m"].values, ds["rack_y_m"].values, c=np.where(np.isfinite(worst), worst, np.nan),
                    cmap="inferno", marker="s", s=28)
    fig.colorbar(sc, ax=bx, label="worst inlet [C]")
    bx.set_aspect("equal")
    bx.set_xlabel("x [m]")
    bx.set_ylabel("y [m]")
    bx.set_title("Worst inlet per rack (plan view)")
    fig.autofmt_xdate()
    sections.append("<h2>Inlet temperatures</h2>" + _img(fig, "inlet") +
                    f"<p>Worst inlet of a powered rack {kpis.get('max_rack_inlet_c', math.nan):.1f} C; "
                    f"{kpis.get('hours_above_ashrae_recommended', 0):,.0f} rack-hours above 27 C.</p>")

    # KPIs and events
    rows = [{"KPI": k, "value": kpis[k], "unit": u, "meaning": d} for k, (u, d) in KPI_UNITS.items() if k in kpis]
    sections.append("<h2>KPIs</h2>" + table_html(pd.DataFrame(rows)))
    if len(ev):
        counts = ev["kind"].value_counts().rename_axis("event").reset_index(name="count")
        sections.append("<h2>Events</h2>" + table_html(counts))
    meta = (f"scenario {html.escape(name)}, seed {ds.attrs.get('seed')}, hash "
            f"{str(ds.attrs.get('scenario_hash', ''))[:12]}, twin {ds.attrs.get('twin_version')}; "
            f"{t[0].date()} to {t[-1].date()}; generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    return page(title, sections, meta)


# --------------------------------------------------------------------------- a sweep
def _axis_figure(ds, dim: str, kpis: list[str]):
    plt = _plt()
    n = len(kpis)
    cols = min(3, n)
    rows = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    labels = [str(v.item() if hasattr(v, "item") else v) for v in ds[dim].values]
    x = np.arange(len(labels))
    others = [d for d in ds[kpis[0]].dims if d not in (dim, "seed")]
    from twin.studies.tables import grid_points
    combos = list(grid_points(ds, others))[:6] if others else [{}]
    for ax, k in zip(axes.ravel(), kpis, strict=False):
        for c, combo in enumerate(combos):
            v = ds[k].sel(combo).transpose(dim, "seed").values
            with np.errstate(all="ignore"), _quiet():
                m = np.nanmean(v, axis=1)
                lo = np.nanquantile(v, 0.05, axis=1)
                hi = np.nanquantile(v, 0.95, axis=1)
            off = (c - (len(combos) - 1) / 2) * 0.08
            lab = ", ".join(f"{d}={_short(val)}" for d, val in combo.items()) or None
            ax.errorbar(x + off, m, yerr=[m - lo, hi - m], fmt="o-", capsize=4, label=lab, color=f"C{c}")
            for s in range(v.shape[1]):
                ax.plot(x + off, v[:, s], ".", color=f"C{c}", alpha=0.35, ms=4)
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=30 if max(map(len, labels)) > 8 else 0, fontsize=8)
        u = ds[k].attrs.get("units", "")
        ax.set_title(f"{k} [{u}]" if u else k, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    if others:
        axes.ravel()[0].legend(fontsize=7)
    fig.suptitle(f"KPIs against {dim}: mean over seeds, bars 5-95 %, dots single seeds", fontsize=10)
    fig.tight_layout()
    return fig


def _short(v) -> str:
    v = v.item() if hasattr(v, "item") else v
    return str(v)[:16]


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _series_figure(ds, dims: list[str], names: list[str]):
    plt = _plt()
    from twin.studies.tables import grid_points
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 3.8), squeeze=False)
    day = ds["day"].values
    combos = list(grid_points(ds, dims))[:10] if dims else [{}]
    for ax, n in zip(axes.ravel(), names, strict=True):
        scale = 1e12 if n == "tokens_cumulative" else (1e3 if n.endswith("_w") else 1.0)
        for c, combo in enumerate(combos):
            v = ds[n].sel(combo).transpose("seed", "day").values / scale
            with np.errstate(all="ignore"), _quiet():
                m = np.nanmean(v, axis=0)
                lo, hi = np.nanquantile(v, 0.05, axis=0), np.nanquantile(v, 0.95, axis=0)
            lab = ", ".join(f"{_short(val)}" for val in combo.values()) or "all"
            ax.plot(day, m, color=f"C{c}", lw=1.2, label=lab)
            ax.fill_between(day, lo, hi, color=f"C{c}", alpha=0.2, lw=0)
        unit = {"tokens_cumulative": "T tokens"}.get(n, "kW" if n.endswith("_w") else ds[n].attrs.get("units", ""))
        ax.set_title(f"{n} [{unit}]", fontsize=9)
        ax.set_xlabel("days since start")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def sweep_report_html(ds, spec, title: str | None = None) -> str:
    """The HTML report of a sweep (Dataset from ``sweep.nc`` and its :class:`SweepSpec`)."""
    from twin.studies import tables
    from twin.sweep import kpi_names, summary_table
    plt = _plt()
    title = title or f"twin sweep report: {spec.name}"
    dims = [a.name for a in spec.axes]
    st = ds["status"].values
    sections = []
    if spec.description:
        sections.append(f"<p>{html.escape(spec.description)}</p>")
    axes_desc = "".join(
        f"<li><b>{html.escape(a.name)}</b>: " + ", ".join(
            f"{html.escape(str(lab))} (<code>{html.escape('; '.join(o) or 'base')}"
            f"{'; scenario ' + html.escape(Path(s).name) if s else ''}</code>)"
            for lab, o, s in zip(a.labels, a.overrides, a.scenarios, strict=True)) + "</li>"
        for a in spec.axes)
    sections.append(f"<h2>Sweep</h2><ul>{axes_desc}<li><b>seeds</b>: {', '.join(map(str, spec.seeds))}</li></ul>"
                    f"<p>{int((st == 'ok').sum())} runs ok, {int((st == 'failed').sum())} failed, "
                    f"{int((st == 'missing').sum())} missing, of {st.size}.</p>")

    # study tables
    if spec.study == "siting" and dims:
        t = tables.siting_table(ds, dims[0])
        sections.append("<h2>Siting: ranking of the candidate halls</h2>"
                        f"<p class='reading'>{html.escape(tables.siting_reading(t, dims[0]))}</p>"
                        + table_html(t))
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
    if spec.study == "ramp_slip" and dims:
        base = "none" if "none" in [str(v) for v in ds[dims[0]].values] else ds[dims[0]].values[0]
        t = tables.slip_table(ds, dims[0], base)
        sections.append("<h2>Ramp: cost of a one-month slip of each power stage</h2>"
                        f"<p class='reading'>{html.escape(tables.slip_reading(t, dims[0], base))}</p>"
                        + table_html(t))
        if "gpus_powered" in ds and ds.sizes.get("day", 0):
            sections.append(_img(_series_figure(ds, dims, [n for n in ("gpus_powered", "tokens_cumulative")
                                                           if n in ds]), "slip series"))
        if ds.attrs.get("start") and ds.sizes.get("day", 0):
            for var, what in (("gpus_healthy", "healthy GPUs"), ("tokens_cumulative", "cumulative tokens")):
                if var in ds:
                    sections.append(f"<h3>{what} at the end of each month (mean over seeds)</h3>"
                                    + table_html(tables.monthly_sweep_table(ds, dims[0], ds.attrs["start"], var)))

    # readings and KPI figures per axis
    names = kpi_names(ds)
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
    if not dims and int((st == "ok").sum()):
        show = [k for k in tables.HEADLINE_KPIS if k in names]
        sm = summary_table(ds)
        sections.append("<h2>Monte Carlo over seeds</h2>" + table_html(sm[[c for c in sm.columns if any(
            c.startswith(k) for k in show)]]))

    # series
    series = [n for n in ("gpus_powered", "tokens_cumulative", "facility_total_power_w", "inlet_max_c")
              if n in ds and ds.sizes.get("day", 0)]
    if series and spec.study != "ramp_slip" and int((st == "ok").sum()):
        sections.append("<h2>Time series (mean over seeds, band 5-95 %)</h2>" + _img(
            _series_figure(ds, dims, series[:2]), "series") + (_img(_series_figure(ds, dims, series[2:]), "series 2")
                                                               if len(series) > 2 else ""))

    # summary table
    sm = summary_table(ds)
    keep = list(dims) + ["runs_ok", "runs_failed"] + [f"{k}_{s}" for k in tables.HEADLINE_KPIS
                                                      for s in ("mean", "p05", "p95") if f"{k}_mean" in sm]
    sections.append("<h2>Summary (mean and 5-95 % band over seeds)</h2>" + table_html(sm[keep]))
    if (st == "failed").any():
        fail = pd.DataFrame({"run": [str(k)[:12] for k in ds["run_key"].values[st == "failed"]],
                             "error": ds["error"].values[st == "failed"]})
        sections.append("<h2>Failed runs</h2>" + table_html(fail.drop_duplicates("error").head(20)))
    meta = (f"sweep {html.escape(spec.name)}, {st.size} runs, twin {ds.attrs.get('twin_version')}; "
            f"generated {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC")
    return page(title, sections, meta)


# --------------------------------------------------------------------------- CLI
def build_report(path: str | Path, title: str | None = None) -> str:
    """HTML for a run folder (results.nc) or a sweep folder (sweep.nc)."""
    p = Path(path)
    if (p / "sweep.nc").exists():
        from twin.sweep import load_sweep
        ds, spec = load_sweep(p)
        return sweep_report_html(ds, spec, title)
    if (p / "results.nc").exists():
        from twin.results import Results
        return run_report_html(Results.load(p), title)
    raise FileNotFoundError(f"{p}: neither a run folder (results.nc) nor a sweep folder (sweep.nc)")


def run_report_cli(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="twin report",
                                 description="Write a self-contained HTML report (figures embedded) of a "
                                             "run folder (twin run --out) or a sweep folder (twin sweep --out).")
    ap.add_argument("folder", help="run folder with results.nc, or sweep folder with sweep.nc")
    ap.add_argument("--out", required=True, help="HTML file to write")
    ap.add_argument("--title", help="page title")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and EXIT_BAD_INPUT
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
    try:
        text = build_report(p, args.title)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"error: {args.folder}: cannot read the results ({type(exc).__name__}: {exc})", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    print(f"wrote {out} ({len(text) / 1e6:.1f} MB)")
    return 0
