"""The ``twin`` command: run, validate, schema, estimate, render, sweep, report.

Bad scenarios exit with code 2 and one line per problem (file, dotted path, value, what
was expected), never a traceback, and nothing is written.  Notes of a valid scenario (things
a planner must see that do not stop it, :class:`twin.scenario.loader.Note`) are printed as
``note:`` lines: after ``twin validate``'s ``ok:`` line, and on stderr before ``twin run`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from twin.errors import EXIT_BAD_INPUT, ScenarioError

if TYPE_CHECKING:
    from twin.scenario.loader import CheckedScenario, Note

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


class ProgressBar:
    """A one-line progress bar on stderr; silent unless stderr is a terminal, and only
    shown once a run has taken more than ``delay_s``."""

    def __init__(self, label: str, stream=None, delay_s: float = 2.0, force: bool = False):
        self.stream = stream or sys.stderr
        self.enabled = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.label = label
        self.t0 = time.monotonic()
        self.delay_s = delay_s
        self.shown = False

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.t0
        if elapsed < self.delay_s and fraction < 1.0:
            return
        width = 30
        done = int(round(width * fraction))
        eta = elapsed * (1 - fraction) / fraction if fraction > 0 else float("nan")
        self.stream.write(f"\r{self.label} [{'#' * done}{'.' * (width - done)}] {fraction:5.1%} "
                          f"elapsed {elapsed:5.1f} s, left {eta:5.1f} s")
        self.stream.flush()
        self.shown = True
        if fraction >= 1.0:
            self.stream.write("\n")
            self.stream.flush()


def _report_problems(err: ScenarioError) -> int:
    n = len(err.problems)
    print(f"error: the scenario has {n} problem{'s' if n != 1 else ''}:", file=sys.stderr)
    for p in err.problems:
        print(f"  {p}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _load(args) -> CheckedScenario:
    """The scenario of ``args`` (file, ``--set``, ``--seed``) and its validation notes."""
    from twin.scenario.loader import check_scenario
    overrides = list(args.set or [])
    if getattr(args, "seed", None) is not None:
        overrides.append(f"simulation.seed={args.seed}")
    return check_scenario(args.scenario, overrides)


def _print_notes(notes: tuple[Note, ...], stream) -> None:
    for note in notes:
        print(f"note: {note}", file=stream)


def _default_out(name: str) -> str:
    """``runs/<scenario name>``; the name is a safe identifier (validated), never a path."""
    from twin.errors import OutputError
    from twin.store_io import is_safe_name
    if not is_safe_name(name):
        raise OutputError(f"scenario name {name!r} cannot name a folder; give --out")
    return f"runs/{name}"


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector in the parts of ``twin run`` that build
    objects the process keeps to its end (imports, the scenario, the model) or that run
    just before it exits (fields, save, the KPI table).

    A collection there finds next to nothing to free and scans every object built so far.
    ``cmd_run`` also freezes (``gc.freeze``) what the preparation built before the run, so
    the run's own collections do not scan it either (:meth:`twin.sim.engine.Engine.run`
    then leaves the freeze as it is), and the interpreter's last collection at exit skips
    it. Blue Vela nine months: time in collections 0.29 -> 0.05 s of CPU, and ~0.1 s less
    at exit (issue 19). The simulation itself runs with the collector on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def cmd_run(args) -> int:
    freeze = gc.get_freeze_count() == 0
    try:
        with collector_paused():
            prepared = _prepare_run(args)
            if isinstance(prepared, int):
                return prepared
            if freeze:
                gc.freeze()      # what was built so far lives to the end: out of every later scan
        scenario, out, engine, bar, t0 = prepared
        try:
            results = engine.run()
        except ScenarioError as err:               # a run-time event storm (twin.sim.engine)
            if bar.shown:
                print(file=sys.stderr)             # end the progress line
            return _report_problems(err)
        with collector_paused():
            return _finish_run(args, scenario, out, engine, results, time.perf_counter() - t0)
    finally:
        # called in a process that goes on (tests, notebooks): hand the frozen objects back
        # to the collector, or the model's reference cycles would never be freed. The
        # `twin` command itself exits next; its interpreter's last collection skips them.
        if freeze and not getattr(args, "process_exits", False):
            gc.unfreeze()


def _prepare_run(args):
    """The scenario, the output folder (checked before the run), the engine, its progress
    bar and the wall-clock start; an exit code instead when the input is bad."""
    from twin.errors import OutputError
    from twin.store_io import check_output
    try:
        checked = _load(args)
    except ScenarioError as err:
        return _report_problems(err)
    scenario = checked.scenario
    try:
        out = args.out or _default_out(scenario.name)
        check_output(out, force=args.force)        # refuse before the run, not after it
    except OutputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _print_notes(checked.notes, sys.stderr)        # stdout carries the run's summary and KPIs
    from twin.sim.engine import Engine
    bar = ProgressBar(f"twin run {scenario.name}")
    t0 = time.perf_counter()
    try:
        engine = Engine(scenario, progress=bar)    # reads workload.trace (file, line, column)
    except ScenarioError as err:
        return _report_problems(err)
    return scenario, out, engine, bar, t0


def _finish_run(args, scenario, out, engine, results, wall: float) -> int:
    """Fields, save, the KPI table and the run-time invariant warnings."""
    from twin.errors import OutputError
    from twin.invariants import check_results
    from twin.sim.field import peak_sample_fields
    if not args.no_field:
        results.fields = peak_sample_fields(engine, results)
    warnings = check_results(results)              # once: saved in kpis.json, printed below
    try:
        results.save(out, force=args.force, warnings=warnings)
    except OutputError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as err:
        what = err.strerror or str(err)
        print(f"error: cannot write the results to {out}/: {what}; nothing was replaced"
              f"{' (the previous result is intact)' if Path(out).exists() else ''}", file=sys.stderr)
        return EXIT_FAILED
    print(f"scenario {scenario.name}: {scenario.simulation.duration_days:g} days simulated in "
          f"{wall:.2f} s; results in {out}/")
    print(results.kpi_table())
    for w in warnings:
        print(f"warning: {w['check']}: {w['message']}", file=sys.stderr)
    return 0


def cmd_validate(args) -> int:
    try:
        checked = _load(args)
    except ScenarioError as err:
        return _report_problems(err)
    s = checked.scenario
    from twin.plant import rack_gpus
    racks = sum(r.racks for h in s.site.halls for r in h.rows)
    delivered = sum(w.racks for w in s.ramp.waves)
    gpus = int(rack_gpus(s)[:delivered].sum())      # racks may hold different node models
    work = [f"{len(s.workload.jobs)} jobs"] if s.workload.jobs or s.workload.stream is None else []
    if s.workload.stream is not None:
        a = s.workload.stream.arrivals
        rate = f"offered load {a.load:g}" if a.load is not None else f"{a.jobs_per_hour:g} jobs/h"
        work.append(f"a job stream ({rate})")
    if s.workload.trace is not None:
        # parsed as `twin run` parses it: a bad row is exit 2 with file, line and column
        from twin.workload.config import load_trace
        try:
            tr = load_trace(s.workload.trace, ".", cluster_gpus=gpus)
        except ScenarioError as err:
            return _report_problems(err)
        skipped = sum(tr.skipped.values())
        work = [f"a trace of {len(tr.jobs)} jobs ({tr.rows_read} rows, {skipped} skipped)"]
    print(f"ok: {args.scenario}: scenario {s.name!r}, {racks} rack positions, {delivered} racks "
          f"delivered ({gpus} GPUs), {' and '.join(work)}, {s.simulation.duration_days:g} days")
    _print_notes(checked.notes, sys.stdout)
    return 0


def cmd_schema(args) -> int:
    from twin.scenario.schema import Scenario
    print(json.dumps(Scenario.model_json_schema(), indent=2))
    return 0


def _delegate(module: str, func: str) -> Callable[[list[str]], int]:
    """Sub-commands whose parsers live with their module (estimate, render, sweep, report)."""
    def run(argv: list[str]) -> int:
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            print(f"error: this command needs an optional part that is not installed ({exc}); "
                  f"install with `pip install -e .[viz,sweep]`", file=sys.stderr)
            return 1
        return int(getattr(mod, func)(argv) or 0)
    return run


DELEGATED = {
    "estimate": ("twin.cli.estimate", "run_estimate_cli", "step-time and collective estimates without a run"),
    "capacity": ("twin.cli.capacity", "run_capacity_cli", "usable IT capacity of each dated stage of the power chain"),
    "render": ("twin.cli.render", "run_render_cli", "draw the hall in 3D (pyvista) to PNG, GIF/MP4 or VTK"),
    "sweep": ("twin.sweep", "run_sweep_cli", "parameter grid x seeds, locally or on Dask"),
    "report": ("twin.report", "run_report_cli", "self-contained HTML or PDF report of a run or sweep"),
    "import": ("twin.cli.import_", "run_import_cli", "write a scenario from a NetBox or openDCIM export"),
    "compare": ("twin.cli.compare", "run_compare_cli", "score a run against measured telemetry (bias, MAPE, RMSE, HTML)"),
    "export": ("twin.cli.export", "run_export_cli", "write a run's series as OpenMetrics text for Prometheus"),
    "calibrate": ("twin.cli.calibrate", "run_calibrate_cli", "fit scenario parameters to measured data; write a scenario that extends it"),
    "replay": ("twin.cli.replay", "run_replay_cli", "measured rack power drives the power chain, cooling and inlets; predict the rest"),
}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="twin", description=__doc__.splitlines()[0])
    from twin._version import __version__
    ap.add_argument("--version", action="version", version=f"twin {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    def scenario_args(p):
        p.add_argument("scenario", help="scenario YAML file")
        p.add_argument("--set", action="append", metavar="dotted.path=value",
                       help="override any field, e.g. --set site.power.ups.mode=double_conversion")

    p = sub.add_parser("run", help="simulate a scenario; write results.nc, events.csv, kpis.json")
    scenario_args(p)
    p.add_argument("--out", help="output folder (default runs/<scenario name>)")
    p.add_argument("--seed", type=int, help="override simulation.seed")
    p.add_argument("--force", action="store_true",
                   help="replace --out even if it is a file or a folder that is not a twin result")
    p.add_argument("--no-field", action="store_true",
                   help="skip the steady thermal field (field_<hall>.nc) at the peak-power sample")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("validate", help="check a scenario; exit 2 with one line per problem")
    scenario_args(p)
    p.add_argument("--seed", type=int, help="override simulation.seed")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("schema", help="print the JSON Schema of a scenario")
    p.set_defaults(func=cmd_schema)
    for name, (_, _, help_text) in DELEGATED.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return ap


def main(argv: list[str] | None = None) -> int:
    # The twin's linear algebra is many small products: BLAS threads only contend for the
    # cores (and for sweep workers). Set before numpy is imported; a user's setting wins.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from_command_line = argv is None                 # the `twin` command, `python -m twin.cli`
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in DELEGATED:
            module, func, _ = DELEGATED[argv[0]]
            return _delegate(module, func)(argv[1:])
        parser = build_parser()
        args = parser.parse_args(argv)
        args.process_exits = from_command_line        # see cmd_run's collector handling
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_BAD_INPUT
        return args.func(args)
    except KeyboardInterrupt:
        print("\ninterrupted: nothing was written (a previous result is intact)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`twin ... | head`): stop quietly, as other tools do
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
