"""Where the runs of a sweep execute: in this process, in local worker processes, or on a
Dask cluster; and what a run returns.

Local workers are one forked process per run, at most ``workers`` at a time
(:func:`run_local`). That makes the failure rules exact:

- a run fails only by its own exception (recorded with its traceback) or its own timeout
  (``timeout_s``: the process is killed);
- a worker that dies without an answer (killed, out of memory) is not the run's verdict:
  the run is retried, up to :data:`MAX_ATTEMPTS` times, before it is recorded as lost;
- each worker asks the kernel to kill it when the sweep process dies
  (``PR_SET_PDEATHSIG``, Linux), and the sweep kills its workers on any exit, so no
  orphan keeps running or holds the terminal.

On Dask, the scheduler retries the tasks of a lost worker (``retries``) and a task that
kills workers again fails as ``KilledWorker``; Dask's own lifecycle stops the workers of a
``LocalCluster`` with the sweep.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import math
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from twin.sweep.spec import DEFAULT_SERIES, DERIVED_SERIES, SweepError, SweepSpec
from twin.sweep.store import code_fingerprint

#: attempts of a run whose worker died without an answer
MAX_ATTEMPTS = 3


class SweepInvalid(SweepError):
    """Grid points whose scenario does not validate; carries every problem of every point."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems           # (point label, problem line)
        n_points = len({p for p, _ in problems})
        lines = "\n".join(f"  {point}: {line}" for point, line in problems)
        super().__init__(f"{n_points} grid point(s) do not validate ({len(problems)} problem(s)); "
                         f"nothing was run:\n{lines}")


@dataclasses.dataclass
class RunTask:
    """One run of the sweep: where it sits in the grid and its resolved scenario."""

    index: tuple[int, ...]          # (axis indices..., seed index)
    key: str                        # SHA-256 of the resolved scenario (seed included)
    scenario: Any                   # twin.scenario.Scenario
    problem: str | None = None      # kept for callers of older versions; always None now


def point_label(spec: SweepSpec, idx: tuple[int, ...]) -> str:
    return ", ".join(f"{a.name}={a.labels[i]}" for a, i in zip(spec.axes, idx, strict=True)) or "base"


def resolve_tasks(spec: SweepSpec) -> list[RunTask]:
    """Load and validate every grid point before anything runs; raise :class:`SweepInvalid`
    listing every problem of every point that does not validate.

    Each grid point is loaded once (with its first seed) and the other seeds are copies with
    ``simulation.seed`` replaced: the same model as loading with ``--set simulation.seed=S``
    (the seed is only range-checked, which :func:`~twin.sweep.spec.parse_seeds` did)."""
    from twin.errors import ScenarioError
    from twin.scenario.loader import load_scenario, scenario_hash

    tasks: list[RunTask] = []
    problems: list[tuple[str, str]] = []
    for idx, path, overrides in spec.points():
        ov = [*overrides, f"simulation.seed={spec.seeds[0]}"]
        try:
            first = load_scenario(path, ov)
        except ScenarioError as err:
            problems.extend((point_label(spec, idx), str(p)) for p in err.problems)
            continue
        for si, seed in enumerate(spec.seeds):
            s = first if si == 0 else first.model_copy(
                update={"simulation": first.simulation.model_copy(update={"seed": int(seed)})})
            tasks.append(RunTask((*idx, si), scenario_hash(s), s))
    if problems:
        raise SweepInvalid(problems)
    return tasks


def _series_from(results, names: Iterable[str]) -> dict[str, np.ndarray]:
    ds = results.dataset
    out: dict[str, np.ndarray] = {}
    for n in names:
        if n == "tokens_cumulative":
            out[n] = ds["job_tokens"].sum("job").values.astype(np.float64)
        elif n in ("inlet_max_c", "inlet_mean_c"):
            on = ds["rack_state"] >= 1
            inlet = ds["rack_inlet_c"].where(on)
            red = inlet.max("rack") if n == "inlet_max_c" else inlet.mean("rack")
            out[n] = red.values.astype(np.float32)
        elif n in ds and ds[n].dims == ("time",):
            out[n] = ds[n].values.astype(np.float32 if ds[n].dtype.kind == "f" else np.float64)
        else:
            raise KeyError(f"series {n!r}: not a time series of the run (choose a variable with dims "
                           f"('time',) or one of {sorted(DERIVED_SERIES)})")
    return out


def _num(v) -> float:
    return float(v) if v is not None else math.nan


def execute_run(scenario, series: tuple[str, ...] = DEFAULT_SERIES) -> dict:
    """Run one scenario; return a picklable record (status, KPIs incl. study figures, series).

    Runs in a worker process (local or Dask). Exceptions become ``status='failed'`` records
    with the error text (``failure='exception'``); KeyboardInterrupt and SystemExit propagate.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        import twin
        from twin.studies.metrics import study_kpis
        res = twin.simulate(scenario)
        kpis = {k: _num(v) for k, v in res.kpis.items()}
        kpis.update({k: _num(v) for k, v in study_kpis(scenario, res).items()})
        t = res.dataset["time"].values
        day = ((t - t[0]) / np.timedelta64(1, "s")).astype(np.float64) / 86400.0
        ser = _series_from(res, series)
        from twin.invariants import check_results
        return {"status": "ok", "kpis": kpis, "error": None, "day": day, "series": ser,
                "warnings": check_results(res),
                "start": str(scenario.simulation.start), "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0, "pid": os.getpid(), "code": code_fingerprint()}
    except Exception as exc:  # a failed run is recorded, the sweep goes on
        return failed_record(f"{type(exc).__name__}: {exc}", "exception", time.perf_counter() - t0,
                             traceback=traceback.format_exc())


def failed_record(error: str, failure: str, wall_s: float = math.nan, **more) -> dict:
    """A failed run: ``failure`` is 'exception', 'timeout' or 'worker_lost'."""
    return {"status": "failed", "kpis": {}, "error": error, "failure": failure, "wall_s": wall_s,
            "pid": os.getpid(), "code": code_fingerprint(), **more}


# --------------------------------------------------------------------------- in this process
def run_serial(tasks, series, store_result: Callable[[Any, dict], None]) -> None:
    for t in tasks:
        store_result(t, execute_run(t.scenario, series))


# --------------------------------------------------------------------------- local processes
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); elsewhere the
    parent's own cleanup is the only guard."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _child(conn, scenario, series, parent_pid: int) -> None:
    """Body of a forked worker: one run, its record sent through ``conn``."""
    _die_with_parent()
    if os.getppid() != parent_pid:        # the parent died before the line above took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the sweep's to handle
    try:
        rec = execute_run(scenario, series)
        conn.send(rec)
    except BaseException:                 # noqa: BLE001  (unpicklable record, ...): report it
        with contextlib.suppress(Exception):
            conn.send(failed_record(f"worker error: {traceback.format_exc(limit=1).strip()}", "exception"))
    finally:
        conn.close()
        os._exit(0)


@dataclasses.dataclass
class _Running:
    task: Any
    proc: Any
    conn: Any
    started: float
    attempt: int


def run_local(tasks, series, store_result, workers: int, timeout_s: float | None = None,
              max_attempts: int = MAX_ATTEMPTS, on_retry: Callable[[Any, str], None] | None = None) -> None:
    """One forked process per run, at most ``workers`` at a time; see the module docstring."""
    import multiprocessing
    from multiprocessing.connection import wait

    import twin.sim.engine  # noqa: F401  (import once in the parent, before forking)
    import twin.studies.metrics  # noqa: F401
    ctx: Any = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    queue = [(t, 1) for t in tasks]
    queue.reverse()
    running: list[_Running] = []
    me = os.getpid()
    try:
        while queue or running:
            while queue and len(running) < workers:
                t, attempt = queue.pop()
                recv, send = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_child, args=(send, t.scenario, series, me), daemon=True)
                p.start()
                send.close()
                running.append(_Running(t, p, recv, time.monotonic(), attempt))
            wait_s = None
            if timeout_s is not None:
                now = time.monotonic()
                wait_s = max(0.0, min(r.started + timeout_s - now for r in running))
            ready = wait([r.conn for r in running] + [r.proc.sentinel for r in running], timeout=wait_s)
            now = time.monotonic()
            for r in list(running):
                rec = None
                if r.conn in ready or r.proc.sentinel in ready:
                    try:
                        rec = r.conn.recv() if r.conn.poll() else None
                    except (EOFError, OSError):
                        rec = None
                    if rec is None and r.proc.is_alive() and r.conn not in ready:
                        continue
                    r.proc.join(timeout=5)
                elif timeout_s is not None and now - r.started >= timeout_s:
                    _kill(r.proc)
                    rec = failed_record(f"timeout: the run took longer than {timeout_s:g} s", "timeout",
                                        now - r.started, timeout_s=timeout_s)
                else:
                    continue
                running.remove(r)
                r.conn.close()
                if rec is None:             # the worker died without an answer: not the run's verdict
                    code = r.proc.exitcode
                    why = (f"signal {-code} ({signal.Signals(-code).name})" if code is not None and code < 0
                           else f"exit code {code}")
                    if r.attempt < max_attempts:
                        if on_retry:
                            on_retry(r.task, why)
                        queue.append((r.task, r.attempt + 1))
                        continue
                    rec = failed_record(f"worker lost {max_attempts} times ({why}): the run may need more "
                                        f"memory than a worker has", "worker_lost", now - r.started)
                store_result(r.task, rec)
    finally:
        for r in running:
            _kill(r.proc)
            r.conn.close()


def _kill(proc) -> None:
    with contextlib.suppress(Exception):
        proc.kill()
        proc.join(timeout=5)


# --------------------------------------------------------------------------- Dask
def run_dask(tasks, series, store_result, client, scheduler, workers, retries: int = MAX_ATTEMPTS - 1) -> None:
    """Submit every run to Dask; a lost worker's tasks are retried by the scheduler
    (``retries``); a task that keeps killing workers fails as ``KilledWorker``."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise SweepError("--scheduler needs dask.distributed: pip install -e .[sweep]") from exc
    with contextlib.ExitStack() as stack:
        if client is None:
            if scheduler == "local":
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                    dashboard_address=None))
                client = stack.enter_context(Client(cluster))
            else:
                try:
                    client = stack.enter_context(Client(scheduler, timeout="10s"))
                except (OSError, TimeoutError) as exc:
                    raise SweepError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        futures = {client.submit(execute_run, t.scenario, series, pure=False, retries=retries,
                                 key=f"twin-run-{t.key}"): t for t in tasks}
        try:
            for f in as_completed(list(futures)):
                t = futures[f]
                if f.status == "cancelled":
                    raise SweepError("the Dask scheduler cancelled the runs (lost?); finished runs are "
                                     "stored: run the same command again to do the rest")
                try:
                    rec = f.result()
                except Exception as exc:   # KilledWorker after the retries
                    rec = failed_record(f"worker lost: {type(exc).__name__}: {exc}", "worker_lost")
                store_result(t, rec)
        finally:
            for f in futures:
                f.release()
