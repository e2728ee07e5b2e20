"""``twin calibrate SCENARIO MEASURED... --out calibrated.yaml [--map FILE] [--set ...]``.

Runs the scenario over the measured window, compares it with the measured series (as
``twin compare``), fits node power per state, the cooling plant's COP and fan/pump
coefficient, the UPS loss scale, a per-rack recirculation correction, the failure-rate
scale (from a measured event log: a CSV with ``time`` and ``kind`` columns), and from
node-level series (``node_dc_power_w``, ``node_fan_speed_fraction``, ``psu_input_w``,
``psu_output_w``, mapped per node with ``dims: {node: <label>}``) the fan law and PSU loss, prints each
with its 1-sigma and the residual before and after, and writes a scenario that ``extends``
the original with the values a scenario can hold (the rest as comments).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from twin.errors import EXIT_BAD_INPUT

#: A rack's recirculation correction is printed when it moves the inlet this much at peak heat [K].
RECIRC_SHOWN_K = 0.5


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="twin calibrate", description=__doc__.splitlines()[0])
    ap.add_argument("scenario", help="scenario YAML the measurements belong to")
    ap.add_argument("measured", nargs="+", help="measured series files and, optionally, an event log CSV")
    ap.add_argument("--out", required=True, help="calibrated scenario to write (extends the original)")
    ap.add_argument("--map", dest="mapping", help="mapping file (YAML), as for twin compare")
    ap.add_argument("--set", action="append", metavar="dotted.path=value", help="override a field")
    ap.add_argument("--seeds", type=int, default=3,
                    help="runs of the original scenario for the expected failure count (default 3)")
    ap.add_argument("--allow-gaps", action="store_true", help="exclude gaps instead of failing")
    ap.add_argument("--json", action="store_true", help="print the fits as JSON")
    return ap


def run_calibrate_cli(argv: list[str]) -> int:
    import twin
    from twin.cli.compare import load_and_compare
    from twin.errors import ScenarioError
    from twin.telemetry.calibrate import (
        NODE_VARIABLES,
        calibrate,
        is_event_log,
        read_event_log,
        scenario_yaml,
    )
    from twin.telemetry.series import TelemetryError

    args = build_parser().parse_args(argv)
    try:
        scenario = twin.load_scenario(args.scenario, list(args.set or []))
    except ScenarioError as err:
        from twin.cli.main import _report_problems
        return _report_problems(err)
    logs = [m for m in args.measured if is_event_log(m)]
    series_files = [m for m in args.measured if m not in logs]
    try:
        events = read_event_log(logs[0]) if logs else None
        base = twin.simulate(scenario)
        ds, cmp, _ = load_and_compare(None, series_files, args.mapping, allow_gaps=args.allow_gaps,
                                      ds=base.dataset, extra=NODE_VARIABLES) \
            if series_files else (base.dataset, None, None)
        if cmp is None:
            from twin.telemetry.compare import Comparison, run_grid_ns
            grid, dt = run_grid_ns(ds)
            cmp = Comparison(grid, dt, [])
        sims = [base.events]
        if events is not None:
            seed = scenario.simulation.seed
            for k in range(1, max(args.seeds, 1)):
                s2 = scenario.model_copy(update={"simulation": scenario.simulation.model_copy(
                    update={"seed": seed + 1000 * k})})
                sims.append(twin.simulate(s2).events)
            sims = [_with_times(e) for e in sims]
        cal = calibrate(scenario, ds, cmp, events_measured=events, events_simulated=sims, node_groups=cmp.extra)
    except TelemetryError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not cal.fitted_anything():
        # a file that extends the original with nothing would read as a calibrated scenario
        print(nothing_fitted_message(args.measured, cmp.variables(), events is not None, cal, args.out),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    text = scenario_yaml(args.scenario, cal, args.out, [str(m) for m in args.measured], list(args.set or []))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    try:   # the file written must be a valid scenario
        twin.load_scenario(out, [])
    except ScenarioError as err:
        from twin.cli.main import _report_problems
        return _report_problems(err)
    if args.json:
        print(json.dumps(cal.as_dict(), indent=2, default=float))
    else:
        print(_table(cal))
        print(f"calibrated scenario written to {out}")
    return 0


def nothing_fitted_message(measured, variables, has_event_log: bool, cal, out) -> str:
    """Exit-2 text when no parameter could be fitted: what was measured, each part of the
    calibration with why it was not fitted (the measured series or log it needs), and that
    ``out`` was not written."""
    used = ", ".join(variables) if variables else "none"
    lines = [f"error: nothing could be fitted from {', '.join(str(m) for m in measured)} (mapped series: "
             f"{used}{'; an event log' if has_event_log else ''}), so no calibrated scenario is written "
             f"to {out}. Each part and what it needs:"]
    lines += [f"  not fitted: {s}" for s in cal.skipped]
    lines += [f"  not identified: {f.name}: {f.note}" for f in cal.fits if not f.identified]
    lines.append("Add the series named above (twin compare --map maps a file's columns to them) and run "
                 "twin calibrate again.")
    return "\n".join(lines)


def _with_times(ev):
    import pandas as pd
    ev = ev.copy()
    ev["time"] = pd.to_datetime(ev["time"], format="ISO8601").astype("datetime64[ns]")
    return ev


def _table(cal) -> str:
    lines = [f"{'parameter':42s} {'fitted':>11s} {'1 sigma':>9s} {'prior':>10s}  unit   n      scenario field"]
    shown = 0
    for f in cal.fits:
        rack = f.name.rsplit(" ", 1)[-1]
        if f.name.startswith("recirculation") and not (
                abs(f.value) > 3 * f.sigma and abs(cal.recirculation_k_at_peak.get(rack, 0.0)) >= RECIRC_SHOWN_K):
            continue   # print only racks whose correction stands out; all are in the file
        shown += 1
        val = f"{f.value:11.4g}" if f.identified else f"{'n/a':>11s}"
        sig = f"{f.sigma:9.2g}" if f.identified else f"{'':9s}"
        prior = f"{f.prior:10.4g}" if f.prior is not None else f"{'-':>10s}"
        rm = f" RMS {f.rmse_before:.3g} -> {f.rmse_after:.3g}" if f.rmse_before is not None else ""
        lines.append(f"{f.name:42s} {val} {sig} {prior}  {f.unit:5s} {f.n:<6d} {f.path or '(comment)'}{rm}")
    for f in cal.fits:
        if not f.identified:   # the reason, so "n/a" is not read as a missing series
            lines.append(f"{f.name}: {f.note}")
    for s in cal.skipped:
        lines.append(f"not fitted: {s}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(run_calibrate_cli(sys.argv[1:]))
