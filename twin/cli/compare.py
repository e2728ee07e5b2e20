"""``twin compare RUN MEASURED... [--map FILE] [--json] [--out report.html]``.

Reads measured telemetry (Prometheus query_range JSON, Prometheus/OpenMetrics text,
dcgm-exporter metrics, IPMI DCMI readings, Redfish metric reports, meter CSV), maps it to the
run's variables, aligns it on the run's samples and prints bias, MAPE, RMSE, correlation and
the largest miss per variable and per rack/feed. Bad input exits 2 with one line naming the
file, the series and the problem; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from twin.errors import EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="twin compare", description=__doc__.splitlines()[0])
    ap.add_argument("run", help="run folder (results.nc) written by `twin run`")
    ap.add_argument("measured", nargs="+", help="measured files")
    ap.add_argument("--map", dest="mapping", help="mapping file (YAML): measured names/labels -> variables")
    ap.add_argument("--json", action="store_true", help="print the statistics as JSON")
    ap.add_argument("--out", help="write a self-contained HTML report here")
    ap.add_argument("--align", choices=("mean", "nearest"), default="mean",
                    help="window mean around each sample (default) or the nearest reading")
    ap.add_argument("--allow-gaps", action="store_true",
                    help="report gaps and exclude them instead of failing")
    ap.add_argument("--timezone", help="time zone of timestamps without an offset (overrides the mapping)")
    return ap


def load_and_compare(run_dir, measured, mapping_path=None, *, align="mean", allow_gaps=False,
                     timezone=None, ds=None, extra=None):
    """The whole pipeline without printing: ``(dataset, Comparison, stats)``.

    ``extra``: measured-only variables (name -> unit) a mapping may name; their groups are
    in ``Comparison.extra``. Raises :class:`twin.telemetry.TelemetryError` on bad input.
    """
    from twin.telemetry.compare import compare_mapped
    from twin.telemetry.ingest import read_measured
    from twin.telemetry.mapping import apply_mapping, load_mapping
    from twin.telemetry.series import TelemetryError, check_series

    if ds is None:
        ds = load_run_dataset(run_dir)
    mapping = load_mapping(mapping_path)
    tz = timezone or mapping.timezone
    series = []
    for f in measured:
        for s in read_measured(f, timezone=tz):
            series.append(check_series(s, max_gap_s=mapping.max_gap_s, allow_gaps=allow_gaps))
    groups, unmapped = apply_mapping(series, mapping, ds, extra=extra)
    extra_groups = [g for g in groups if extra and g.variable in extra]
    groups = [g for g in groups if not (extra and g.variable in extra)]
    if not groups and not extra_groups:
        raise TelemetryError(", ".join(map(str, measured)), "", f"no series matched a variable of the run "
                                                                f"(found {', '.join(unmapped[:5])}); "
                                                                "write a mapping file (--map)")
    cmp = compare_mapped(ds, groups, align=align, unmapped=unmapped)
    cmp.extra = extra_groups
    return ds, cmp, cmp.stats()


def load_run_dataset(run_dir):
    """The run's Dataset from a run folder (or a results.nc path)."""
    import xarray as xr

    from twin.telemetry.series import TelemetryError
    p = Path(run_dir)
    nc = p / "results.nc" if p.is_dir() else p
    if not nc.is_file():
        raise TelemetryError(str(p), "", "no results.nc: give a run folder written by `twin run`")
    with xr.open_dataset(nc, engine="h5netcdf") as ds:
        return ds.load()


def _table(stats: dict) -> str:
    def f(x, spec):
        return "-" if x is None else format(x, spec)
    lines = [f"{'variable':34s} {'n':>7s} {'bias':>8s} {'MAPE':>8s} {'RMSE':>11s} {'r':>7s}  largest miss"]
    for var, st in stats.items():
        lines.append(f"{var:34s} {st['n']:7d} {f(st['bias_fraction'], '+8.2%')} {f(st['mape'], '8.2%')} "
                     f"{f(st['rmse'], '11.4g')} {f(st['correlation'], '7.3f')}  "
                     f"{f(st['max_miss'], '.4g')} {st['unit']} at {st['max_miss_time']} {st.get('max_miss_at', '')}")
        for key in [k for k in st if k.startswith("by_")]:
            for coord, s2 in st[key].items():
                lines.append(f"  {key[3:]} {coord:27s} {s2['n']:7d} {f(s2['bias_fraction'], '+8.2%')} "
                             f"{f(s2['mape'], '8.2%')} {f(s2['rmse'], '11.4g')} {f(s2['correlation'], '7.3f')}")
    return "\n".join(lines)


def run_compare_cli(argv: list[str]) -> int:
    from twin.telemetry.series import TelemetryError
    args = build_parser().parse_args(argv)
    try:
        ds, cmp, stats = load_and_compare(args.run, args.measured, args.mapping, align=args.align,
                                          allow_gaps=args.allow_gaps, timezone=args.timezone)
    except TelemetryError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.out:
        from twin.telemetry.report import comparison_html
        page = comparison_html(cmp, stats, title=f"twin compare: {ds.attrs.get('scenario_name', args.run)}",
                               run_label=str(args.run), sources=[str(m) for m in args.measured])
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(_table(stats))
        if cmp.unmapped:
            print(f"({len(cmp.unmapped)} measured series matched no variable: "
                  f"{', '.join(cmp.unmapped[:5])}{' ...' if len(cmp.unmapped) > 5 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(run_compare_cli(sys.argv[1:]))
