"""Local workers of a sweep (issue 19, benchmark 5): the first grid points run while the
others are validated, their results held until every point validates; a point that does not
stops the workers and nothing is written; workers stop as soon as nothing is left for them and
are reaped; the sweep process freezes its objects for the collector only while it needs to, the
workers' runs see nothing frozen; the summary's vectorised quantiles are numpy's."""

from __future__ import annotations

import gc
import json
import os
import time
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reliability_suite.test_sweeps_heal import _alive as alive
from reliability_suite.test_sweeps_heal import _children as children_of

from twin.sweep import Axis, SweepInvalid, SweepSpec, run_sweep
from twin.sweep import executors as ex
from twin.sweep.assembly import nanquantile_rows

from .conftest import SCENARIOS, SMALL


def _children() -> list[int]:
    """Live (not zombie) child processes of this process."""
    return [k for k in children_of(os.getpid()) if alive(k)]


def _gone_soon(before: set[int], within_s: float = 20.0) -> bool:
    """No child process but those in ``before`` within ``within_s`` (workers exit and are
    reaped in the background after run_sweep returns; each takes ~10-20 ms)."""
    deadline = time.monotonic() + within_s
    while set(_children()) - before and time.monotonic() < deadline:
        time.sleep(0.02)
    return not set(_children()) - before


def _spec(rates=(1, 20, 40), seeds=(0, 1), overrides=SMALL) -> SweepSpec:
    return SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"), overrides=overrides,
                     axes=(Axis.grid("failures.rate_scale", list(rates)),), seeds=seeds, series=("gpus_powered",))


def test_runs_that_end_before_the_last_point_validates_are_held_then_stored(tmp_path, monkeypatch):
    """Validation is slowed point by point: runs of the first point end (and reach this
    process) while later points are still validated; nothing may be on disk before the last
    point has validated, and the sweep equals the one run in this process."""
    import twin.sweep.run as run_mod
    real_points, real_run = ex.iter_point_tasks, ex.execute_run
    on_disk_while_validating: list[bool] = []
    validated_at: list[float] = []

    def slow_points(spec):
        for i, batch in enumerate(real_points(spec)):
            if i:
                time.sleep(1.5)                 # the workers go on with the first point's runs
                on_disk_while_validating.append((tmp_path / "w2").exists())
            yield batch
        validated_at.append(time.time())

    def noting_the_end(scenario, series):
        rec = real_run(scenario, series)
        rec["ended_at"] = time.time()
        return rec
    # the hall model built here first, so the forked workers' runs take ~0.1 s, not a cold build
    run_sweep(_spec(rates=(1,), seeds=(0,)), tmp_path / "warm", workers=1)
    monkeypatch.setattr(run_mod, "iter_point_tasks", slow_points)
    monkeypatch.setattr(ex, "execute_run", noting_the_end)
    two = run_sweep(_spec(), tmp_path / "w2", workers=2)
    assert on_disk_while_validating == [False, False]
    ends = [json.loads(p.read_text())["ended_at"] for p in (tmp_path / "w2" / "runs").glob("*.json")]
    assert len(ends) == 6 and sum(e < validated_at[0] for e in ends) >= 2     # held, then stored
    monkeypatch.setattr(run_mod, "iter_point_tasks", real_points)
    one = run_sweep(_spec(), tmp_path / "w1", workers=1)
    assert len(two.ran) == len(one.ran) == 6 and sorted(two.ran) == sorted(one.ran)
    for k in one.dataset.data_vars:
        if k != "wall_s":
            np.testing.assert_array_equal(two.dataset[k].values, one.dataset[k].values, err_msg=k)


def test_a_later_invalid_point_stops_the_running_workers_and_writes_nothing(tmp_path):
    spec = SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"), overrides=SMALL,
                     axes=(Axis.grid("site.power.ups.capacity_kw", [80, 90, -5, 100, -7]),), seeds=(0, 1, 2))
    before = set(_children())           # (other tests' processes may still be ending)
    with pytest.raises(SweepInvalid) as exc:
        run_sweep(spec, tmp_path / "sw", workers=2)
    assert {p for p, _ in exc.value.problems} == {"site.power.ups.capacity_kw=-5", "site.power.ups.capacity_kw=-7"}
    assert not (tmp_path / "sw").exists()
    assert set(_children()) <= before           # killed and reaped before SweepInvalid is raised
    assert gc.get_freeze_count() == 0


def test_workers_are_gone_and_nothing_stays_frozen_after_a_sweep(tmp_path, monkeypatch):
    """The workers' runs see nothing frozen (as in a fresh process); the sweep process
    unfreezes what it froze; no worker outlives run_sweep."""
    real = ex.execute_run

    def noting_the_collector(scenario, series):
        rec = real(scenario, series)
        rec["frozen_objects"] = gc.get_freeze_count()
        return rec
    monkeypatch.setattr(ex, "execute_run", noting_the_collector)
    assert gc.get_freeze_count() == 0
    before = set(_children())
    out = run_sweep(_spec(rates=(1, 20)), tmp_path / "sw", workers=2)
    assert gc.get_freeze_count() == 0
    assert _gone_soon(before)
    recs = [json.loads(p.read_text()) for p in (tmp_path / "sw" / "runs").glob("*.json")]
    assert len(recs) == 4 and {r["frozen_objects"] for r in recs} == {0}
    assert len({r["pid"] for r in recs} - {os.getpid()}) >= 1       # they ran in workers
    assert (out.dataset.status.values == "ok").all()


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=7),
                  elements=st.one_of(st.floats(-1e6, 1e6), st.just(np.nan), st.just(np.inf), st.just(-np.inf))),
       st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3))
def test_vectorised_row_quantiles_are_numpys_bit_for_bit(a, q):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # all-NaN rows: numpy warns, gives NaN
        want = np.nanquantile(a, q, axis=-1)
        got = nanquantile_rows(a, q)
    np.testing.assert_array_equal(got, want)


def test_the_longest_runs_known_are_dispatched_first(tmp_path, monkeypatch):
    """Runs of 1, 2 and 4 simulated days: the two workers get the first point's runs at once
    (the other points are validated meanwhile, ~3 ms each); from then on the queue hands out
    the longest first. The 1-day runs are held 0.5 s so that every point has been validated
    (and queued) before a worker asks for its second run, however loaded the machine.
    Start times of two runs handed to the two workers at nearly the same moment can come out
    in either order (each worker reads its own clock), so after the two 4-day runs that both
    workers take first, the order is checked worker by worker: each takes ever shorter runs."""
    real_run = ex.execute_run

    def noting_the_start(scenario, series):
        t = time.time()
        if scenario.simulation.duration_days == 1:
            time.sleep(0.5)
        rec = real_run(scenario, series)
        rec["started_at"], rec["worker_pid"] = t, os.getpid()
        return rec
    run_sweep(_spec(rates=(1,), seeds=(0,)), tmp_path / "warm", workers=1)
    monkeypatch.setattr(ex, "execute_run", noting_the_start)
    spec = SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"), overrides=SMALL,
                     axes=(Axis.grid("simulation.duration_days", [1, 2, 4]),), seeds=(0, 1, 2), series=())
    run_sweep(spec, tmp_path / "sw", workers=2)
    recs = sorted((json.loads(p.read_text()) for p in (tmp_path / "sw" / "runs").glob("*.json")),
                  key=lambda r: r["started_at"])
    days = [r["labels"]["simulation.duration_days"] for r in recs]
    assert len(days) == 9 and days[:2] == [1, 1] and days[2:4] == [4, 4]
    assert sorted(days) == [1, 1, 1, 2, 2, 2, 4, 4, 4]
    by_worker: dict[int, list] = {}
    for r in recs:
        by_worker.setdefault(r["worker_pid"], []).append(r["labels"]["simulation.duration_days"])
    assert len(by_worker) == 2
    for seq in by_worker.values():             # its held 1-day run, then longest first
        assert seq[0] == 1 and seq[1:] == sorted(seq[1:], reverse=True), by_worker


def test_workers_keep_the_memory_a_run_frees_for_the_next(tmp_path):
    """glibc gives the heap's free top back to the kernel at once by default, so each run
    faulted its working memory in again; a worker keeps it (keep_freed_memory): far fewer
    page faults per run, the same numbers. In a fresh interpreter: a forked worker inherits
    the allocator's thresholds, which glibc raises as a long-lived process (a test worker)
    frees large blocks, so the comparison needs a process with glibc's starting state."""
    import platform
    import subprocess
    import sys
    from pathlib import Path
    assert platform.libc_ver()[0] == "glibc"        # the machines the tests run on
    code = f"""
import json, resource, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from sweep.test_sweep_workers import _spec
from twin.sweep import run_sweep
from twin.sweep import executors as ex
out = Path({str(tmp_path)!r})
real_run, real_keep = ex.execute_run, ex.keep_freed_memory
def noting_faults(scenario, series):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    rec = real_run(scenario, series)
    rec["page_faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    return rec
ex.execute_run = noting_faults
two_days = ("simulation.duration_days=2", "simulation.sample_interval_s=3600")  # one-day runs fault little either way
run_sweep(_spec(rates=(1,), seeds=(0,), overrides=two_days), out / "warm", workers=1)
faults, same = {{}}, True
sweeps = {{}}
for keep in (True, False):
    ex.keep_freed_memory = real_keep if keep else (lambda: False)
    sweeps[keep] = run_sweep(_spec(seeds=(0, 1, 2, 3), overrides=two_days), out / f"keep{{keep}}", workers=2)
    recs = [json.loads(p.read_text()) for p in (out / f"keep{{keep}}" / "runs").glob("*.json")]
    by_worker = {{}}
    for r in recs:
        by_worker.setdefault(r["pid"], []).append(r["page_faults"])
    # each worker's first run copies the pages it shares with the sweep process: left out
    faults[keep] = float(np.median([f for fs in by_worker.values() for f in sorted(fs)[:-1]]))
for k in sweeps[True].dataset.data_vars:
    if k != "wall_s":
        a, b = sweeps[True].dataset[k].values, sweeps[False].dataset[k].values
        same &= bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
print(json.dumps({{"kept": faults[True], "not_kept": faults[False], "same": same}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["kept"] * 3 < got["not_kept"], got
    assert got["same"], got


def test_an_in_process_sweep_leaves_the_callers_allocator_alone(tmp_path, monkeypatch):
    """One worker runs in the caller's own process (a notebook, a script): glibc cannot
    restore its adaptive mmap threshold once mallopt has fixed it, so the serial sweep
    must not call mallopt at all (only the sweep's forked workers tune their allocator)."""
    calls: list = []
    monkeypatch.setattr(ex, "_mallopt", lambda param, value: calls.append((param, value)) or True)
    sweep = run_sweep(_spec(rates=(1,), seeds=(0, 1)), tmp_path / "serial", workers=1)
    assert sweep.dataset.sizes["seed"] == 2
    assert calls == []
