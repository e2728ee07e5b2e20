"""Issue 18, sweeps heal: ``--timeout`` holds on a real Dask cluster. A run past its
timeout is recorded as failed by timeout and the sweep goes on: in the worker a watchdog
stops the run (the worker is not lost), and a run stuck where no Python exception reaches
it is given up by the sweep after the grace period."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import cloudpickle
import distributed
import numpy as np
import pytest

from twin.sim.engine import MAX_PROCESS_EVENTS_ENV
from twin.sweep import Axis, SweepSpec, run_sweep
from twin.sweep import executors as ex

SMALL = Path(__file__).resolve().parents[2] / "scenarios" / "lenovo_small.yaml"
#: checkpoint_bytes = 1 under an ``auto`` interval checkpoints every ~0.03 s once the job
#: starts (after a day of burn-in): ~2.5 M events per simulated day. Since checkpoint writes
#: that end before the next event are done in closed form (issue 19) two days of it take
#: 16.7 s of CPU, under the timeout, so the sweep runs ten days (~85 s of CPU for a storm
#: point); the other point (1.2 TB, the scenario's own) runs them in a few seconds
STORM_BYTES = 1.0
TIMEOUT_S = 30.0
DAYS = 10


def _spec(seeds=(0, 1)) -> SweepSpec:
    return SweepSpec(scenario=str(SMALL),
                     overrides=(f"simulation.duration_days={DAYS}", "simulation.sample_interval_s=3600",
                                "workload.jobs.0.checkpoint_interval_s=auto"),
                     axes=(Axis.grid("workload.jobs.0.checkpoint_bytes", [1.2e12, STORM_BYTES]),),
                     seeds=seeds, series=("gpus_powered",))


def _records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (out / "runs").glob("*.json")]


@pytest.fixture
def cluster(monkeypatch):
    # no run-time event ceiling in the workers (they inherit the environment): the storm
    # points run until their timeout, as a legitimately long run would
    monkeypatch.setenv(MAX_PROCESS_EVENTS_ENV, "inf")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c:
        yield c


@pytest.mark.slow
def test_a_run_past_its_timeout_on_dask_fails_by_timeout_and_the_sweep_goes_on(cluster, tmp_path):
    out = tmp_path / "sw"
    t0 = time.monotonic()
    # wall-clock timeout, generous for a shared, loaded machine (a normal point needs ~0.5 s
    # of CPU); the storm points need minutes
    res = run_sweep(_spec(), out, scheduler=cluster.scheduler_address, timeout_s=TIMEOUT_S)
    assert time.monotonic() - t0 < 4 * TIMEOUT_S
    st = res.dataset.status
    storm = {"workload.jobs.0.checkpoint_bytes": STORM_BYTES}
    assert (st.sel(storm).values == "failed").all()
    assert (st.sel({"workload.jobs.0.checkpoint_bytes": 1.2e12}).values == "ok").all()
    assert all("timeout" in str(e) for e in res.dataset.error.sel(storm).values)
    recs = _records(out)
    timed_out = [r for r in recs if r["status"] == "failed"]
    assert len(timed_out) == 2
    assert all(r["failure"] == "timeout" and r["timeout_s"] == TIMEOUT_S and r["wall_s"] < TIMEOUT_S + 5
               for r in timed_out)
    # the watchdog stopped the runs inside the workers: no worker was lost or replaced
    with distributed.Client(cluster) as client:
        worker_pids = set(client.run(os.getpid).values())
    assert len(worker_pids) == 2
    assert {r["pid"] for r in recs} <= worker_pids
    # a stored timeout is a verdict for the same timeout; a longer one would try again
    assert run_sweep(_spec(), out, scheduler=cluster.scheduler_address, timeout_s=TIMEOUT_S).ran == []


def _stuck_in_c(scenario, series):
    """A run that sits in one C call (a 120 s sleep) where no asynchronous exception lands."""
    if scenario.workload.jobs[0].checkpoint_bytes == STORM_BYTES:
        time.sleep(120)
    return ex._unpatched_execute_run(scenario, series)


def _install_stuck_run() -> None:
    if not hasattr(ex, "_unpatched_execute_run"):
        ex._unpatched_execute_run = ex.execute_run
    ex.execute_run = _stuck_in_c


@pytest.mark.slow
def test_a_run_stuck_in_c_on_dask_is_given_up_by_the_sweep(cluster, tmp_path, monkeypatch):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with distributed.Client(cluster) as client:
            client.run(_install_stuck_run)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(ex, "dask_grace_s", lambda timeout_s: 5.0)
    t0 = time.monotonic()
    res = run_sweep(_spec(seeds=(0,)), tmp_path / "sw", scheduler=cluster.scheduler_address, timeout_s=20.0)
    assert time.monotonic() - t0 < 80           # not the 120 s of the stuck call
    st = res.dataset.status
    assert str(st.sel({"workload.jobs.0.checkpoint_bytes": 1.2e12, "seed": 0}).values) == "ok"
    err = str(res.dataset.error.sel({"workload.jobs.0.checkpoint_bytes": STORM_BYTES, "seed": 0}).values)
    assert "timeout" in err and "stopped by the sweep" in err
    assert np.isfinite(res.dataset["gpus_powered"].sel({"workload.jobs.0.checkpoint_bytes": 1.2e12}).values).all()


def test_the_watchdog_never_fires_after_a_run_that_finished_in_time():
    """A run that ends before its deadline returns its own record, and the thread carries
    no pending exception afterwards."""
    from twin.scenario import load_scenario
    s = load_scenario(SMALL, ["simulation.duration_days=1", "simulation.sample_interval_s=3600"])
    rec = ex.execute_run_bounded(s, ("gpus_powered",), timeout_s=60.0)
    assert rec["status"] == "ok"
    time.sleep(0.05)                            # any stray asynchronous exception would land here
    rec = ex.execute_run_bounded(s, ("gpus_powered",), timeout_s=1e-3)
    assert rec["status"] == "failed" and rec["failure"] == "timeout"
    time.sleep(0.05)
