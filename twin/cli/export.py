"""``twin export RUN --format openmetrics --out FILE``: a run's series for Prometheus.

``promtool tsdb create-blocks-from openmetrics FILE DATA_DIR`` loads the file into a
Prometheus data folder; Grafana then overlays prediction and measurement
(``assets/grafana/twin_dashboard.json``).
"""

from __future__ import annotations

import argparse
import sys

from twin.errors import EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="twin export", description=__doc__.splitlines()[0])
    ap.add_argument("run", help="run folder (results.nc) written by `twin run`")
    ap.add_argument("--format", choices=("openmetrics",), default="openmetrics")
    ap.add_argument("--out", required=True, help="output file (e.g. run.om)")
    ap.add_argument("--prefix", default="twin_",
                    help="metric name prefix; a '_' is added if it ends in neither '_' nor ':' (default twin_)")
    return ap


def run_export_cli(argv: list[str]) -> int:
    from twin.cli.compare import load_run_dataset
    from twin.telemetry.export import metric_prefix, write_openmetrics
    from twin.telemetry.series import TelemetryError
    args = build_parser().parse_args(argv)
    try:  # a prefix that cannot start a metric name: exit 2 before anything is read or written
        metric_prefix(args.prefix)
    except ValueError as err:
        print(f"error: --prefix: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        ds = load_run_dataset(args.run)
    except TelemetryError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    n = write_openmetrics(ds, args.out, prefix=args.prefix)
    print(f"{n} metric families of {ds.sizes['time']} samples written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_export_cli(sys.argv[1:]))
