"""Where the runs of a sweep execute: in this process, in local worker processes, or on a
Dask cluster; and what a run returns.

Local workers are forked processes, at most ``workers``, each running one run at a time
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
``LocalCluster`` with the sweep. A Dask worker cannot be killed per run, so ``timeout_s``
holds there in two steps (:func:`run_dask`):

- in the worker, :func:`execute_run_bounded` runs the scenario under a watchdog thread that
  raises :class:`RunTimeout` in the run's thread at the deadline (an asynchronous exception,
  delivered between two Python bytecodes: the engine's event loop is Python, so a run stops
  within milliseconds); the run is recorded as failed by timeout and the worker is free for
  the next run;
- in the sweep, a run still processing ``timeout_s`` plus a grace period after it started
  (stuck inside one long C call, where no Python exception can reach it) is recorded as
  failed by timeout and cancelled; on a ``LocalCluster`` of the sweep's own, its worker is
  restarted.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import dataclasses
import gc
import math
import os
import signal
import sys
import threading
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
                         f"nothing was stored or written:\n{lines}")


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
    return [t for batch in iter_point_tasks(spec) for t in batch]


def iter_point_tasks(spec: SweepSpec):
    """:func:`resolve_tasks` point by point: yields the tasks (one per seed) of each grid
    point that validates, in grid order, and raises :class:`SweepInvalid` with every
    problem of every point after the last one, so a caller may start the first points' runs
    while the others are validated, provided it keeps their results until the end."""
    from twin.errors import ScenarioError
    from twin.scenario.loader import load_scenario, scenario_hash

    problems: list[tuple[str, str]] = []
    for idx, path, overrides in spec.points():
        ov = [*overrides, f"simulation.seed={spec.seeds[0]}"]
        try:
            first = load_scenario(path, ov)
        except ScenarioError as err:
            problems.extend((point_label(spec, idx), str(p)) for p in err.problems)
            continue
        batch = []
        for si, seed in enumerate(spec.seeds):
            s = first if si == 0 else first.model_copy(
                update={"simulation": first.simulation.model_copy(update={"seed": int(seed)})})
            batch.append(RunTask((*idx, si), scenario_hash(s), s))
        yield batch
    if problems:
        raise SweepInvalid(problems)


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


#: how often a Dask run's watchdog repeats its timeout until the run has stopped [s]
WATCHDOG_REPEAT_S = 0.1


class RunTimeout(BaseException):
    """Raised asynchronously in a run's thread when its ``timeout_s`` is up (Dask workers).
    A BaseException, so that no ``except Exception`` on the way swallows it."""


def _raise_in_thread(thread_id: int, exc_type: type[BaseException]) -> None:
    """Raise ``exc_type`` in the thread ``thread_id`` at its next bytecode (CPython's
    ``PyThreadState_SetAsyncExc``)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc_type))


def execute_run_bounded(scenario, series: tuple[str, ...] = DEFAULT_SERIES,
                        timeout_s: float | None = None) -> dict:
    """:func:`execute_run` in this thread, stopped after ``timeout_s`` [s] of wall time.

    A watchdog thread raises :class:`RunTimeout` in this thread at the deadline, and again
    every :data:`WATCHDOG_REPEAT_S` until this thread has taken note (an asynchronous
    exception that lands in a garbage-collector callback is printed and dropped by
    Python); the run becomes a ``failure='timeout'`` record, like a local worker killed at
    its timeout. A lock makes the watchdog and the end of the run exclusive, so nothing is
    raised once this function has taken note. The engine's modules are imported before
    the clock starts (a local worker imports them before it forks).
    """
    if timeout_s is None:
        return execute_run(scenario, series)
    import twin.invariants  # noqa: F401  (imports are not the run's time)
    import twin.results  # noqa: F401
    import twin.sim.engine  # noqa: F401
    import twin.studies.metrics  # noqa: F401
    me, lock, stop = threading.get_ident(), threading.Lock(), threading.Event()

    def expire() -> None:
        while not stop.wait(0.0):
            with lock:
                if stop.is_set():
                    return
                _raise_in_thread(me, RunTimeout)
            stop.wait(WATCHDOG_REPEAT_S)

    watchdog = threading.Timer(timeout_s, expire)
    watchdog.daemon = True
    t0 = time.perf_counter()
    rec: dict | None = None
    try:
        watchdog.start()
        rec = execute_run(scenario, series)
        with lock:
            stop.set()
    except RunTimeout:
        with lock:            # a repeat can land only in the first microseconds here (run_dask
            stop.set()        # records a RunTimeout that escapes as a timeout too)
    watchdog.cancel()
    if rec is None:
        rec = failed_record(f"timeout: the run took longer than {timeout_s:g} s", "timeout",
                            time.perf_counter() - t0, timeout_s=timeout_s)
    return rec


def failed_record(error: str, failure: str, wall_s: float = math.nan, **more) -> dict:
    """A failed run: ``failure`` is 'exception', 'timeout' or 'worker_lost'."""
    return {"status": "failed", "kpis": {}, "error": error, "failure": failure, "wall_s": wall_s,
            "pid": os.getpid(), "code": code_fingerprint(), **more}


# --------------------------------------------------------------------------- in this process
#: glibc's ``mallopt`` parameters (malloc.h) and the values a sweep's runs use: freed memory is
#: kept up to 256 MiB above the heap's top, blocks under 32 MiB (the ceiling of glibc's own
#: adaptive threshold) come from the heap
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
SWEEP_TRIM_THRESHOLD_BYTES = 256 << 20
SWEEP_MMAP_THRESHOLD_BYTES = 32 << 20


def _mallopt(param: int, value: int) -> bool:
    try:
        return bool(ctypes.CDLL(None).mallopt(param, value))
    except (AttributeError, OSError):       # not glibc (macOS, musl): nothing to tune
        return False


def keep_freed_memory() -> bool:
    """Let this process's allocator keep the memory a run frees for the next run (glibc).

    By default glibc gives the top of its heap back to the kernel as soon as 128 KiB or more
    are free there, so every run of a sweep faults its working memory in again, page by
    page: 53,000 minor page faults for the 40 short runs of issue 19's benchmark 5, 1,440
    with the memory kept; their CPU 1.34 -> 1.03-1.11 s in one process, and 1.36 -> 1.21 s
    (-10 %) in two workers side by side, where the kernel's page clearing is shared (this is
    a virtual machine, where a fault costs more). Peak RSS unchanged (178 MB): the runs reuse
    the same memory. Returns whether the setting took (False where ``mallopt`` is missing)."""
    return _mallopt(_M_MMAP_THRESHOLD, SWEEP_MMAP_THRESHOLD_BYTES) and \
        _mallopt(_M_TRIM_THRESHOLD, SWEEP_TRIM_THRESHOLD_BYTES)


def run_serial(tasks, series, store_result: Callable[[Any, dict], None]) -> None:
    """The runs in this process, one after the other. The allocator is left as the caller
    set it: this is the caller's process (a notebook, a script), and glibc cannot give back
    its adaptive mmap threshold once ``mallopt`` has fixed it, so :func:`keep_freed_memory`
    is for the sweep's own worker processes only."""
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


def _worker(conn, series, parent_pid: int) -> None:
    """Body of a forked worker: runs the scenarios it receives one at a time, sending each
    record back, until it receives None (or its parent dies)."""
    _die_with_parent()
    if os.getppid() != parent_pid:        # the parent died before the line above took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the sweep's to handle
    # the sweep froze its objects for itself (run_sweep): a worker's runs see the collector as a
    # fresh process does (Engine.run freezes each model). Unconditionally: unfreeze is O(1),
    # while gc.get_freeze_count() walks every frozen object (~30 ms in a fresh worker)
    gc.unfreeze()
    keep_freed_memory()
    try:
        while True:
            try:
                scenario = conn.recv()
            except (EOFError, OSError):
                break
            if scenario is None:
                break
            rec = execute_run(scenario, series)
            try:
                conn.send(rec)
            except Exception:     # noqa: BLE001  (an unpicklable record): report it, go on
                conn.send(failed_record(f"worker error: {traceback.format_exc(limit=1).strip()}",
                                        "exception"))
    finally:
        conn.close()
        os._exit(0)


def expected_samples(scenario) -> float:
    """A run's expected cost for ordering the queue (longest first, so that no long run is
    left alone at the end of a sweep): its number of samples, duration over sample interval."""
    sim = scenario.simulation
    return sim.duration_days * 86400.0 / sim.sample_interval_s


@dataclasses.dataclass
class _Slot:
    """A worker process and the one task it is running (None when idle)."""

    proc: Any
    conn: Any
    task: Any = None
    attempt: int = 0
    started: float = 0.0


def run_local(tasks, series, store_result, workers: int, timeout_s: float | None = None,
              max_attempts: int = MAX_ATTEMPTS, on_retry: Callable[[Any, str], None] | None = None,
              stopping: list | None = None, more=None) -> None:
    """Forked worker processes, each running one task at a time (so a worker's death or
    timeout is charged to exactly one run); see the module docstring.

    ``more``: an iterator of further lists of tasks (grid points still being validated, see
    :func:`iter_point_tasks`). One list is taken whenever no worker has an answer waiting,
    so the runs already known go on meanwhile; an exception it raises stops every worker.

    A worker is forked and handed its first run before the next is forked (a fork of the
    sweep process takes ~5-10 ms), and a worker with nothing left to run while others still
    run is told to stop at once. Workers exit by themselves (tearing down a worker's memory
    takes ~10-20 ms of CPU); ``stopping``, when given, receives every worker, those still
    idle at the end not yet told, so that the caller stops them after its own work and reaps
    them in the background (:func:`release`); else they are stopped and reaped here. On any
    error every worker is killed before this returns."""
    import multiprocessing
    from multiprocessing.connection import wait

    import twin.sim.engine  # noqa: F401  (import once in the parent, before forking)
    import twin.studies.metrics  # noqa: F401
    ctx: Any = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    queue = [(t, 1) for t in tasks]
    queue.reverse()                 # popped from the end: in the order given
    me = os.getpid()
    slots: list[_Slot] = []
    leaving: list[_Slot] = []       # workers told to stop, not yet reaped

    def start() -> _Slot:
        mine, theirs = ctx.Pipe(duplex=True)
        p = ctx.Process(target=_worker, args=(theirs, series, me), daemon=True)
        p.start()
        theirs.close()
        return _Slot(p, mine)

    def retire(slot: _Slot) -> None:
        _kill(slot.proc)
        slot.conn.close()
        slots.remove(slot)

    def send(sl: _Slot) -> None:
        sl.task, sl.attempt = queue.pop()
        sl.started = time.monotonic()
        sl.conn.send(sl.task.scenario)

    def dispatch() -> None:
        for sl in slots:
            if sl.task is None and queue:
                send(sl)
        while queue and len(slots) < workers:     # each new worker gets its run before the next fork
            slots.append(start())
            send(slots[-1])

    def pull() -> None:
        """Take the next list of tasks from ``more``; the queue runs the longest first."""
        nonlocal more
        try:
            batch = next(more)
        except StopIteration:
            more = None
            return
        queue[:0] = [(t, 1) for t in reversed(batch)]
        queue.sort(key=lambda ta: expected_samples(ta[0].scenario))    # stable: grid order among equals

    def stop_idle() -> None:
        """Workers with nothing to run while others still run exit now (they would idle to
        the end of the sweep); at the end, the caller stops them after its own work."""
        if queue or more is not None:
            return
        idle = [sl for sl in slots if sl.task is None]
        if stopping is not None and len(idle) == len(slots):
            return
        for sl in idle:
            _stop(sl)
            slots.remove(sl)
            leaving.append(sl)

    done = False
    try:
        while queue or more is not None or any(sl.task is not None for sl in slots):
            dispatch()
            busy = [sl for sl in slots if sl.task is not None]
            if not busy:                # nothing runs yet: the next tasks are all there is to do
                pull()
                continue
            wait_s = None
            if timeout_s is not None:
                wait_s = max(0.0, min(sl.started + timeout_s for sl in busy) - time.monotonic())
            if more is not None:
                wait_s = 0.0
            ready = set(wait([sl.conn for sl in busy] + [sl.proc.sentinel for sl in busy], timeout=wait_s))
            if not ready and more is not None:
                pull()                  # the workers are busy: meanwhile, the next grid point
                continue
            now = time.monotonic()
            finished: list[tuple[Any, dict]] = []      # stored after the next runs are sent
            for sl in busy:
                rec = None
                if sl.conn in ready:
                    try:
                        rec = sl.conn.recv()
                    except (EOFError, OSError):
                        rec = None
                elif sl.proc.sentinel in ready:
                    rec = None
                elif timeout_s is not None and now - sl.started >= timeout_s:
                    rec = failed_record(f"timeout: the run took longer than {timeout_s:g} s", "timeout",
                                        now - sl.started, timeout_s=timeout_s)
                    task = sl.task
                    retire(sl)                   # the worker is still busy with it: replace it
                    finished.append((task, rec))
                    continue
                else:
                    continue
                task, attempt = sl.task, sl.attempt
                if rec is None:             # the worker died without an answer: not the run's verdict
                    sl.proc.join(timeout=5)
                    code = sl.proc.exitcode
                    why = (f"signal {-code} ({signal.Signals(-code).name})" if code is not None and code < 0
                           else f"exit code {code}")
                    retire(sl)
                    if attempt < max_attempts:
                        if on_retry:
                            on_retry(task, why)
                        queue.append((task, attempt + 1))
                        continue
                    rec = failed_record(f"worker lost {max_attempts} times ({why}): the run may need more "
                                        f"memory than a worker has", "worker_lost", now - sl.started)
                else:
                    sl.task = None
                finished.append((task, rec))
            if finished:
                # the freed workers get their next run before this process writes the results
                # (a worker would otherwise idle for the store's file writes after every run)
                dispatch()
                stop_idle()
                for task, rec in finished:
                    store_result(task, rec)
        done = True
    finally:
        if done and stopping is not None:
            stopping.extend(leaving + slots)        # all idle now
        elif done:
            for sl in slots:
                _stop(sl)
            reap([sl.proc for sl in leaving + slots])
        else:
            for sl in list(slots):
                retire(sl)
            for sl in leaving:
                _kill(sl.proc)


def _stop(sl: _Slot) -> None:
    """Tell an idle worker to exit."""
    with contextlib.suppress(OSError, ValueError):
        sl.conn.send(None)
    sl.conn.close()


def release(workers: list, kill: bool = False) -> None:
    """The end of :func:`run_local`'s ``stopping`` workers: the idle ones are told to stop
    and all are reaped by a background thread while the caller goes on (each takes ~10-20 ms
    to exit); ``kill``: killed and reaped here (the sweep failed)."""
    if kill:
        for sl in workers:
            _kill(sl.proc)
            sl.conn.close()
        return
    if workers:
        # The thread stops them too (woken here, their exits would hold up its start), and is
        # started without waiting for it to run (threading.Thread.start waits, 1-5 ms here)
        _thread.start_new_thread(_stop_and_reap, (list(workers),))


def _stop_and_reap(workers: list) -> None:
    for sl in workers:
        if not sl.conn.closed:
            _stop(sl)
    reap([sl.proc for sl in workers])


def reap(procs) -> None:
    """Wait for workers told to stop (a worker still there after 30 s is killed)."""
    from multiprocessing.connection import wait
    for p in procs:
        p.join(timeout=30)
        # exitcode stays None also when another thread reaped it first (active_children()):
        # kill only a worker whose end of its sentinel pipe is still open, i.e. alive
        if p.exitcode is None and not wait([p.sentinel], timeout=0):
            _kill(p)


def _kill(proc) -> None:
    with contextlib.suppress(Exception):
        proc.kill()
        proc.join(timeout=5)


# --------------------------------------------------------------------------- Dask
#: how often the sweep asks the Dask scheduler which runs are processing, with a timeout [s]
DASK_POLL_S = 1.0


def dask_grace_s(timeout_s: float) -> float:
    """Time a Dask run may overrun its timeout before the sweep gives up on it [s]: the
    worker-side watchdog normally ends it at once; this covers a run stuck in one C call."""
    return max(30.0, 0.5 * timeout_s)


def run_dask(tasks, series, store_result, client, scheduler, workers, retries: int = MAX_ATTEMPTS - 1,
             timeout_s: float | None = None) -> None:
    """Submit every run to Dask; a lost worker's tasks are retried by the scheduler
    (``retries``); a task that keeps killing workers fails as ``KilledWorker``. With
    ``timeout_s`` each run is bounded in its worker (:func:`execute_run_bounded`) and, as a
    backstop, by the sweep (see the module docstring)."""
    try:
        from distributed import Client, LocalCluster, wait
    except ImportError as exc:
        raise SweepError("--scheduler needs dask.distributed: pip install -e .[sweep]") from exc
    own_cluster = False
    with contextlib.ExitStack() as stack:
        if client is None:
            if scheduler == "local":
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                    dashboard_address=None))
                client = stack.enter_context(Client(cluster))
                own_cluster = True
            else:
                try:
                    client = stack.enter_context(Client(scheduler, timeout="10s"))
                except (OSError, TimeoutError) as exc:
                    raise SweepError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        futures = {client.submit(execute_run_bounded, t.scenario, series, timeout_s, pure=False, retries=retries,
                                 key=f"twin-run-{t.key}"): t for t in tasks}
        by_key = {f.key: f for f in futures}
        pending = set(futures)
        started: dict[str, float] = {}
        try:
            while pending:
                try:
                    done = wait(list(pending), timeout=DASK_POLL_S if timeout_s is not None else None,
                                return_when="FIRST_COMPLETED").done
                except TimeoutError:
                    done = set()
                for f in done:
                    pending.discard(f)
                    t = futures[f]
                    if f.status == "cancelled":
                        raise SweepError("the Dask scheduler cancelled the runs (lost?); finished runs are "
                                         "stored: run the same command again to do the rest")
                    try:
                        rec = f.result()
                    except RunTimeout:         # escaped its run's handler (see execute_run_bounded)
                        rec = failed_record(f"timeout: the run took longer than {timeout_s:g} s", "timeout",
                                            timeout_s=timeout_s)
                    except Exception as exc:   # KilledWorker after the retries
                        rec = failed_record(f"worker lost: {type(exc).__name__}: {exc}", "worker_lost")
                    store_result(t, rec)
                if timeout_s is not None and pending:
                    _expire_stuck_runs(client, by_key, pending, futures, started, timeout_s, own_cluster,
                                       store_result)
        finally:
            for f in futures:
                f.release()


def _expire_stuck_runs(client, by_key, pending, futures, started, timeout_s, own_cluster, store_result) -> None:
    """The sweep's backstop: a run processing longer than ``timeout_s`` plus
    :func:`dask_grace_s` is recorded as failed by timeout and cancelled (on a LocalCluster
    of the sweep's own, its worker is restarted to free the slot)."""
    now = time.monotonic()
    for worker, keys in client.processing().items():
        for key in keys:
            f = by_key.get(key)
            if f is None or f not in pending:
                continue
            t0 = started.setdefault(key, now)
            if now - t0 < timeout_s + dask_grace_s(timeout_s):
                continue
            pending.discard(f)
            f.cancel()
            if own_cluster:
                with contextlib.suppress(Exception):
                    client.restart_workers([worker])
            store_result(futures[f], failed_record(
                f"timeout: the run took longer than {timeout_s:g} s (stopped by the sweep after "
                f"{now - t0:.0f} s: the worker did not stop it)", "timeout", now - t0, timeout_s=timeout_s))
