"""``twin sweep``: a scenario over a parameter grid x seeds, locally or on Dask.

Exit codes: 0 all runs ok (or ``--allow-failures``); 1 some runs failed; 2 bad input (bad
flags, a grid point that does not validate - every problem of every point is printed and
nothing runs - too many seeds or runs without ``--force``, an output folder that is not a
sweep's); 130 interrupted (finished runs are kept).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from twin.errors import EXIT_BAD_INPUT
from twin.sweep.assembly import format_summary
from twin.sweep.executors import SweepInvalid
from twin.sweep.run import run_sweep
from twin.sweep.spec import (
    DEFAULT_SERIES,
    DERIVED_SERIES,
    MAX_RUNS,
    TIME_SERIES,
    SweepError,
    SweepSpec,
    is_sweep_file,
    parse_grid,
    parse_seeds,
)

EXIT_FAILED = 1


class SweepProgress:
    """Progress line on stderr (terminal only): runs done / total, failed, elapsed, time left."""

    def __init__(self, stream=None, force: bool = False):
        self.stream = stream or sys.stderr
        self.enabled = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.first: tuple[int, float] | None = None

    def __call__(self, done: int, failed: int, total: int, elapsed_s: float) -> None:
        if not self.enabled:
            return
        if self.first is None:
            self.first = (done, elapsed_s)
        new = done - self.first[0]
        left = (elapsed_s - self.first[1]) / new * (total - done) if new > 0 else math.nan
        width = 30
        fill = int(round(width * done / total)) if total else width
        self.stream.write(f"\rsweep [{'#' * fill}{'.' * (width - fill)}] {done}/{total} runs, "
                          f"{failed} failed, elapsed {_hms(elapsed_s)}, left {_hms(left)}  ")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def _progress():
    """tqdm.auto bar (terminal and Jupyter) when tqdm is installed, else the plain line."""
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return SweepProgress()
    from twin.cli.progress import sweep_progress
    return sweep_progress("twin sweep")


def _hms(s: float) -> str:
    if not np.isfinite(s):
        return "--:--"
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="twin sweep",
        description="Run a scenario over a parameter grid x seeds (locally or on Dask) and write "
                    "DIR/sweep.nc (KPIs with the sweep dims + seed) and DIR/summary.csv. "
                    "Finished runs are kept in DIR/runs/, so re-running a killed sweep does only "
                    "what is missing.")
    ap.add_argument("scenario", help="scenario YAML, or a sweep YAML file (keys scenario, set, grid, "
                                     "cases, seeds, series) that replaces the flags")
    ap.add_argument("--grid", action="append", default=[], metavar="[NAME:]dotted.path=v1,v2,...",
                    help="a sweep axis (repeatable; the cross product is run)")
    ap.add_argument("--set", action="append", default=[], metavar="dotted.path=value",
                    help="override a field in every run")
    ap.add_argument("--seeds", help="N (seeds 0..N-1) or a list a,b,c (default: 1, or the sweep file's); "
                                    "seed index i uses the same seed at every grid point (common random numbers)")
    ap.add_argument("--series", help="comma-separated time series to keep per run, or 'none' "
                                     f"(default: {','.join(DEFAULT_SERIES)})")
    ap.add_argument("--out", required=True, help="sweep folder")
    ap.add_argument("--workers", type=int, help="local worker processes (default: all cores; 1 = serial)")
    ap.add_argument("--scheduler", metavar="tcp://HOST:PORT|local",
                    help="run on this Dask scheduler ('local': a fresh LocalCluster of --workers processes)")
    ap.add_argument("--timeout", type=float, metavar="SECONDS",
                    help="fail a run that takes longer than this (local workers or Dask); the others go on")
    ap.add_argument("--retry-failed", action="store_true", help="run again the runs recorded as failed")
    ap.add_argument("--rerun-stale", action="store_true",
                    help="run again stored runs made by a different version of the twin code")
    ap.add_argument("--allow-failures", action="store_true",
                    help="exit 0 even when some runs failed (they are recorded in sweep.nc)")
    ap.add_argument("--force", action="store_true",
                    help=f"allow more than {MAX_RUNS:,} runs or 1,000 seeds, and an --out folder "
                         "that holds other files")
    return ap


def _check_out(out: Path, force: bool) -> None:
    """A sweep folder is new, empty, or a sweep's (it has sweep.json or runs/)."""
    if force or not out.exists():
        return
    if not out.is_dir():
        raise SweepError(f"--out {out}: is a file; choose a folder (or --force)")
    entries = {p.name for p in out.iterdir()}
    if entries and not ({"sweep.json", "runs"} & entries):
        raise SweepError(f"--out {out}: the folder holds files that are not a sweep's "
                         f"({sorted(entries)[0]!r}...); choose another --out or give --force")


def build_spec(args) -> SweepSpec:
    if args.workers is not None and args.workers < 1:
        raise SweepError(f"--workers: got {args.workers}; expected 1 or more")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        raise SweepError(f"--timeout: got {args.timeout}; expected a positive number of seconds")
    if args.scheduler and not (args.scheduler == "local" or "://" in args.scheduler):
        raise SweepError(f"--scheduler: got {args.scheduler!r}; expected tcp://HOST:PORT or 'local'")
    if not Path(args.scenario).is_file():
        raise SweepError(f"{args.scenario}: no such file")
    if is_sweep_file(args.scenario):
        spec = SweepSpec.from_file(args.scenario, force=args.force)
    else:
        spec = SweepSpec(scenario=args.scenario, name=Path(args.scenario).stem)
    axes = list(spec.axes) + [parse_grid(g) for g in args.grid]
    repl: dict[str, Any] = {"axes": tuple(axes), "overrides": (*spec.overrides, *args.set)}
    if args.seeds is not None:
        repl["seeds"] = parse_seeds(args.seeds, force=args.force)
    if args.series is not None:
        repl["series"] = () if args.series.strip() == "none" else tuple(
            s.strip() for s in args.series.split(",") if s.strip())
    spec = dataclasses.replace(spec, **repl)
    bad = [s for s in spec.series if s not in DERIVED_SERIES and s not in TIME_SERIES]
    if bad:
        raise SweepError(f"--series: unknown {bad}; expected some of {sorted(TIME_SERIES | set(DERIVED_SERIES))}")
    n = int(np.prod(spec.shape))
    if n > MAX_RUNS and not args.force:
        raise SweepError(f"{n:,} runs ({' x '.join(str(k) for k in spec.shape)}); expected at most "
                         f"{MAX_RUNS:,} (give --force if you mean it)")
    return spec


def run_sweep_cli(argv: list[str]) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:      # argparse already printed the usage and the problem
        return int(exc.code or 0) and EXIT_BAD_INPUT
    from twin.errors import ScenarioError
    try:
        spec = build_spec(args)
        _check_out(Path(args.out), args.force)
        n = int(np.prod(spec.shape))
        print(f"sweep {spec.name}: {n} runs ({' x '.join(f'{a.name}[{len(a.labels)}]' for a in spec.axes) or 'base'}"
              f" x seed[{len(spec.seeds)}]) -> {args.out}/", file=sys.stderr)
        t0 = time.perf_counter()
        outcome = run_sweep(spec, args.out, workers=args.workers, scheduler=args.scheduler,
                            retry_failed=args.retry_failed, rerun_stale=args.rerun_stale,
                            progress=_progress(), timeout_s=args.timeout)
    except SweepInvalid as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ScenarioError as err:
        print(f"error: the scenario has {len(err.problems)} problem(s):", file=sys.stderr)
        for p in err.problems:
            print(f"  {p}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SweepError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished runs are kept in {args.out}/runs/; run the same command "
              f"again to do only what is missing", file=sys.stderr)
        return 130
    except OSError as err:          # full disk, read-only file system: finished runs are kept
        print(f"error: cannot write to {args.out}/: {err.strerror or err}; finished runs are kept in "
              f"{args.out}/runs/", file=sys.stderr)
        return EXIT_FAILED
    wall = time.perf_counter() - t0
    ds = outcome.dataset
    print(f"{len(outcome.ran)} runs done, {len(outcome.reused)} reused from {args.out}/runs/, "
          f"{ds.attrs['runs_failed']} failed; {wall:.1f} s; wrote {args.out}/sweep.nc and summary.csv")
    if outcome.corrupt:
        print(f"warning: {len(outcome.corrupt)} stored runs were corrupt or partial and were run again:",
              file=sys.stderr)
        for key, why in sorted(outcome.corrupt.items())[:10]:
            print(f"  runs/{key}.json: {why}", file=sys.stderr)
    if outcome.retried:
        print(f"warning: {len(outcome.retried)} runs lost their worker ({outcome.retried[0][1]}) and were "
              f"run again", file=sys.stderr)
    from twin.sweep.store import RunStore
    store = RunStore(args.out)
    warned = sorted(k for k in set(outcome.ran) | set(outcome.reused) if (store.meta(k) or {}).get("warnings"))
    if warned:
        first = store.meta(warned[0])["warnings"][0]     # type: ignore[index]
        print(f"warning: {len(warned)} runs broke a run-time invariant (the 'warnings' of their "
              f"runs/<key>.json), e.g. {first['check']}: {first['message']}", file=sys.stderr)
    if outcome.stale:
        print(f"warning: {len(outcome.stale)} stored runs were made by a different version of the twin "
              f"code; --rerun-stale runs them again", file=sys.stderr)
    print(format_summary(ds))
    if ds.attrs["runs_failed"]:
        st = ds["status"].values.ravel()
        errors = ds["error"].values.ravel()
        first = errors[st == "failed"][0]
        print(f"{ds.attrs['runs_failed']} runs failed; first failure: {first}", file=sys.stderr)
        if not args.allow_failures:
            return EXIT_FAILED
    return 0
