"""The HTML page of ``twin compare``: one table of statistics and, per variable, simulated
against measured over time and as a scatter. Figures are matplotlib PNGs embedded as base64
(``twin.report.figure_png_base64``); the page references nothing outside itself."""

from __future__ import annotations

import html

import numpy as np

from twin.telemetry.compare import Comparison

MAX_POSITIONS_PLOTTED = 6


def _num(x, fmt="{:.4g}") -> str:
    return "&ndash;" if x is None else fmt.format(x)


def comparison_html(cmp: Comparison, stats: dict, *, title: str, run_label: str, sources: list[str]) -> str:
    """A self-contained HTML page of a comparison."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from twin.report import CSS, figure_png_base64

    t = cmp.grid_ns.astype("datetime64[ns]")
    rows = []
    for var, st in stats.items():
        rows.append(f"<tr><td>{html.escape(var)}</td><td>{html.escape(st['unit'])}</td><td>{st['n']}</td>"
                    f"<td>{_num(st['bias_fraction'], '{:+.2%}')}</td><td>{_num(st['mape'], '{:.2%}')}</td>"
                    f"<td>{_num(st['rmse'])}</td><td>{_num(st['correlation'], '{:.3f}')}</td>"
                    f"<td>{_num(st['max_miss'])}</td><td class=t>{st['max_miss_time'] or ''} "
                    f"{html.escape(st.get('max_miss_at', ''))}</td><td>{st['gaps']}</td></tr>")
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p class=meta>run {html.escape(run_label)}; measured: "
             f"{html.escape(', '.join(sources))}; windows of {cmp.dt_s:g} s around each sample</p>",
             "<div class=tw><table><tr><th>variable</th><th>unit</th><th>n</th><th>bias</th><th>MAPE</th>"
             "<th>RMSE</th><th>r</th><th>largest miss</th><th>at</th><th>gaps</th></tr>",
             *rows, "</table></div>"]
    if cmp.unmapped:
        parts.append(f"<p class=note>{len(cmp.unmapped)} measured series matched no variable: "
                     f"{html.escape(', '.join(cmp.unmapped[:12]))}{' ...' if len(cmp.unmapped) > 12 else ''}</p>")
    import matplotlib.dates as mdates

    def miss(p):
        e = p.sim - p.meas
        e = e[np.isfinite(e)]
        return float(np.sqrt(np.mean(e * e))) if e.size else -1.0

    for var in cmp.variables():
        # the positions that miss most first: a hot spot shows even among 128 racks
        ps = sorted((p for p in cmp.pairs if p.mapped.variable == var), key=miss, reverse=True)
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [3, 1]})
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
        for i, p in enumerate(ps[:MAX_POSITIONS_PLOTTED]):
            c = f"C{i % 10}"
            lab = p.mapped.coord or var
            ax.plot(t, p.sim, color=c, lw=1.0, label=f"{lab} simulated")
            ax.plot(t, p.meas, color=c, lw=0, marker=".", ms=2.5, label=f"{lab} measured")
            ax2.plot(p.meas, p.sim, ".", color=c, ms=2.5)
        both = np.concatenate([np.concatenate([p.sim, p.meas]) for p in ps])
        both = both[np.isfinite(both)]
        if both.size:
            lo, hi = float(both.min()), float(both.max())
            ax2.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        unit = ps[0].mapped.unit
        ax.set_ylabel(f"{var} [{unit}]")
        ax.legend(fontsize=7, ncol=2, loc="best")
        ax2.set_xlabel(f"measured [{unit}]")
        ax2.set_ylabel(f"simulated [{unit}]")
        more = (f" (the {MAX_POSITIONS_PLOTTED} of {len(ps)} with the largest RMSE)"
                if len(ps) > MAX_POSITIONS_PLOTTED else "")
        parts.append(f"<h2>{html.escape(var)}{more}</h2>"
                     f'<img alt="{html.escape(var)} simulated vs measured" '
                     f'src="data:image/png;base64,{figure_png_base64(fig)}">')
    parts.append("</body></html>")
    return "\n".join(parts)
