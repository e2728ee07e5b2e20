"""Running a sweep: validate every grid point, reuse what the store holds and verifies, run
the rest where asked (this process, local workers, Dask), store each run as it finishes,
then assemble ``sweep.nc`` and ``summary.csv``."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from twin.sweep import executors
from twin.sweep.assembly import assemble, write_dataset
from twin.sweep.executors import RunTask, iter_point_tasks
from twin.sweep.spec import SweepSpec, _jsonable
from twin.sweep.store import RunStore, code_fingerprint


@dataclasses.dataclass
class SweepOutcome:
    dataset: Any                    # xarray.Dataset (sweep.nc)
    ran: list[str]                  # run keys executed by this call
    reused: list[str]               # run keys found on disk
    failed: list[str]               # run keys whose status is 'failed'
    out_dir: Path
    stale: list[str] = dataclasses.field(default_factory=list)     # reused runs made by other code
    corrupt: dict[str, str] = dataclasses.field(default_factory=dict)  # key -> why it was redone
    retried: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (key, why) lost workers


ProgressFn = Callable[[int, int, int, float], None]   # (done, failed, total, elapsed_s)


def _redo_failure(meta: dict, retry_failed: bool, timeout_s: float | None) -> bool:
    """A stored failure is kept unless asked (``retry_failed``); a lost worker is always
    redone, a timeout when the new timeout is longer (or none)."""
    kind = meta.get("failure", "exception")
    if retry_failed or kind == "worker_lost":
        return True
    if kind == "timeout":
        old = meta.get("timeout_s")
        return timeout_s is None or old is None or timeout_s > old
    return False


def run_sweep(spec: SweepSpec, out_dir: str | Path, *, workers: int | None = None,
              scheduler: str | None = None, client=None, retry_failed: bool = False,
              rerun_stale: bool = False, progress: ProgressFn | None = None,
              on_result: Callable[[RunTask, dict], None] | None = None,
              timeout_s: float | None = None) -> SweepOutcome:
    """Run every missing run of ``spec``, store each as it finishes, then assemble ``sweep.nc``
    and ``summary.csv`` in ``out_dir``.

    Every grid point is validated before anything is written: a point that does not validate
    raises :class:`~twin.sweep.executors.SweepInvalid` listing every problem of every point,
    and nothing is stored (with local workers the runs of the points validated so far start
    meanwhile, the longest first; their results are held until the last point validates, and
    dropped if one does not). ``workers``: local processes (default: all cores;
    1 = in this process unless ``timeout_s`` is set). ``scheduler``: ``tcp://host:port`` of
    a running Dask scheduler, or ``local`` for a fresh ``LocalCluster`` of ``workers``
    processes; ``client``: an existing ``dask.distributed.Client`` (overrides both).
    ``retry_failed`` runs again the runs stored as failed; ``rerun_stale`` the runs stored
    by other code (:func:`~twin.sweep.store.code_fingerprint`). Stored runs that do not
    verify (:meth:`~twin.sweep.store.RunStore.verify`) are run again and listed in
    ``SweepOutcome.corrupt``. ``timeout_s`` fails a run that takes longer (local workers:
    the worker is killed; Dask: the run is stopped in its worker, see
    :mod:`twin.sweep.executors`).
    ``on_result`` is called after each stored run (tests use it to stop a sweep half way).
    """
    out = Path(out_dir)
    n_workers = workers or os.cpu_count() or 1
    n_tasks = int(np.prod(spec.shape))
    dask = client is not None or bool(scheduler)
    local = not dask and (timeout_s is not None or (n_workers > 1 and n_tasks > 1))    # else in this process
    store = RunStore(out, create=False)         # read (verified) now, written once every point validates
    tasks: list[RunTask] = []
    reused: list[str] = []
    seen: set[str] = set()
    stale: set[str] = set()
    corrupt: dict[str, str] = {}
    copies: dict[str, int] = {}
    code = code_fingerprint()
    failed_n = 0
    done_n = 0
    opened = False
    held: list[tuple[RunTask, dict]] = []       # results of runs that ended before the store opened
    ran: list[str] = []
    fresh: dict[str, dict] = {}         # the records stored by this call, for the assembly
    retried: list[tuple[str, str]] = []
    t0 = time.monotonic()

    def to_run(batch: list[RunTask]) -> list[RunTask]:
        """The tasks of one grid point that must run: not stored, or stored but to be redone."""
        nonlocal failed_n
        todo = []
        for t in batch:
            tasks.append(t)
            copies[t.key] = copies.get(t.key, 0) + 1
            if t.key in seen:
                continue
            seen.add(t.key)
            meta, why = store.verify(t.key)
            if why is not None:
                corrupt[t.key] = why                # discarded when the store opens
            if meta is not None:
                is_stale = meta.get("code") != code
                if is_stale:
                    stale.add(t.key)
                failed = meta.get("status") == "failed"
                if not ((failed and _redo_failure(meta, retry_failed, timeout_s)) or (rerun_stale and is_stale)):
                    reused.append(t.key)
                    failed_n += failed
                    continue
            todo.append(t)
        return todo

    def open_store() -> None:
        """Every grid point validated: the sweep folder is written from here on."""
        nonlocal opened, done_n
        out.mkdir(parents=True, exist_ok=True)
        store.create()
        store.clean_temporaries()
        for stale_tmp in [*out.glob(".sweep.*.nc"), *out.glob(".summary.*.csv")]:   # a killed assembly's
            stale_tmp.unlink(missing_ok=True)
        (out / "sweep.json").write_text(json.dumps(spec.to_json(), indent=1, default=_jsonable))
        for key in corrupt:
            store.discard(key)
        opened = True
        done_n = sum(copies[k] for k in reused)
        if progress:
            progress(done_n, failed_n, len(tasks), 0.0)
        for task, rec in held:
            store_result(task, rec)
        held.clear()

    def grid_points():
        """The runs to do, point by point as each validates (every point is validated before
        anything is written; SweepInvalid after the last one lists every problem), then
        the store opens."""
        for batch in iter_point_tasks(spec):
            yield to_run(batch)
        open_store()

    def store_result(task: RunTask, rec: dict) -> None:
        nonlocal done_n, failed_n
        if not opened:
            held.append((task, rec))
            return
        store.save(task.key, rec, {"index": list(task.index), "seed": spec.seeds[task.index[-1]],
                                   "labels": {a.name: _jsonable(a.labels[i])
                                              for a, i in zip(spec.axes, task.index, strict=False)}})
        ran.append(task.key)
        fresh[task.key] = {**rec, "series": rec.get("series") or {}, "day": rec.get("day")}
        done_n += copies[task.key]
        failed_n += rec["status"] == "failed"
        if progress:
            progress(done_n, failed_n, len(tasks), time.monotonic() - t0)
        if on_result:
            on_result(task, rec)

    leaving: list = []                  # local workers: stopped after the assembly, reaped in the background
    frozen = ok = False
    try:
        if local:
            # The runs of the first grid points start while the rest are validated (their
            # results are held until every point validates; a point that does not stops the
            # workers and nothing is written). This process only validates, dispatches, stores
            # and assembles from here: what it holds is kept out of the collector's scans (a
            # full collection of the imported libraries cost ~0.1 s and copied every page
            # shared with the forked workers); the workers unfreeze at their start.
            frozen = gc.get_freeze_count() == 0
            if frozen:
                gc.freeze()
            executors.run_local([], spec.series, store_result, max(1, min(n_workers, n_tasks)),
                                timeout_s=timeout_s, on_retry=lambda t, why: retried.append((t.key, why)),
                                stopping=leaving, more=grid_points())
        else:
            todo = [t for batch in grid_points() for t in batch]
            if todo and dask:
                executors.run_dask(todo, spec.series, store_result, client, scheduler, workers, timeout_s=timeout_s)
            elif todo:
                executors.run_serial(todo, spec.series, store_result)
        ds = assemble(spec, tasks, store, fresh)
        write_dataset(ds, out)
        ok = True
    finally:
        executors.release(leaving, kill=not ok)
        if frozen:
            gc.unfreeze()
    status = ds["status"].values
    failed = sorted({t.key for t in tasks if str(status[t.index]) == "failed"})
    return SweepOutcome(ds, ran, reused, failed, out, sorted(stale - set(ran)), corrupt, retried)
