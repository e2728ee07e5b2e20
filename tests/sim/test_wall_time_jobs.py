"""A trace or stream job's length is a wall time that already holds its own start-up and
checkpoint writes (audit HA2 F13): replayed at its recorded starts on an empty cluster with
failures off, each job holds its nodes for exactly its recorded duration, and the run's
GPU-hours are the trace's. Before the fix every job ran ``restart_s`` (600 s) plus its
checkpoint writes longer (+7.3 % GPU-hours on the audit's trace)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from twin.scenario import load_scenario
from twin.sim.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workload"))
from trace_fixtures import write_acme  # noqa: E402

SCEN = Path(__file__).resolve().parents[2] / "scenarios" / "vela.yaml"
START = pd.Timestamp("2023-03-01T00:00:00", tz="UTC")       # vela.yaml's start, 2-day burn-in


def _jobs(first_start_s: float) -> pd.DataFrame:
    # durations: shorter than a launch (600 s), shorter than a checkpoint interval (3,600 s),
    # several intervals, a day; whole nodes of 8 GPUs
    dur = np.array([300.0, 2508.0, 5000.0, 27464.0, 86400.0, 7201.0])
    gpus = np.array([8, 64, 32, 16, 8, 24])
    start = first_start_s + np.array([0.0, 600.0, 1800.0, 3600.0, 7200.0, 9000.0])
    submit = start - np.array([100.0, 200.0, 0.0, 300.0, 60.0, 500.0])      # in submit order
    return pd.DataFrame({"job_id": [f"j{i}" for i in range(len(dur))], "user": "u1", "project": "p",
                         "queue": "normal", "type": "SFT", "gpus": gpus, "nodes": gpus // 8,
                         "state": "COMPLETED", "submit": submit, "start": start, "end": start + dur})


def _run(tmp_path, jobs: pd.DataFrame, epoch: pd.Timestamp):
    path = write_acme(jobs, tmp_path / "trace.csv", epoch=epoch)
    s = load_scenario(SCEN, ["simulation.duration_days=6", "workload.jobs=[]", "failures.enabled=false",
                             f"workload.trace={{path: {path}, format: acme, starts: recorded, "
                             "align: first_submit}"])
    e = Engine(s)
    return e, e.run()


def test_a_recorded_trace_holds_its_nodes_for_exactly_its_recorded_durations(tmp_path):
    # the trace's epoch 3 days after the run's start: every node is burned in and free
    epoch = START + pd.Timedelta(days=3)
    jobs = _jobs(first_start_s=5000.0)
    e, r = _run(tmp_path, jobs, epoch)
    ds = r.dataset
    shift = (epoch - START).total_seconds()        # align: first_submit keeps the dates
    np.testing.assert_allclose(ds.job_start_s.values, jobs.start + shift, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ds.job_end_s.values - ds.job_start_s.values, jobs.end - jobs.start,
                               rtol=0, atol=1e-6)
    # GPU-hours by hand: 8 x 300 + 64 x 2,508 + 32 x 5,000 + 16 x 27,464 + 8 x 86,400 + 24 x 7,201
    # = 2,400 + 160,512 + 160,000 + 439,424 + 691,200 + 172,824 = 1,626,360 GPU-s = 451.7667 GPU-h
    hand_gpu_h = 1_626_360 / 3600
    got = float(np.sum((ds.job_end_s.values - ds.job_start_s.values) * ds.job_gpus_requested.values)) / 3600
    assert got == pytest.approx(hand_gpu_h, rel=1e-12)
    assert sum(j.gpu_s_allocated for j in e.jobs) / 3600 == pytest.approx(hand_gpu_h, rel=1e-9)
    # the jobs table keeps the trace's submit times (the engine submits at the recorded start)
    np.testing.assert_allclose(ds.job_submit_s.values, jobs.submit + shift, rtol=0, atol=1e-6)
    # the day-long job wrote checkpoints, inside its length; the 300 s one never trained
    ev = r.events
    assert (ev[ev.kind == "checkpoint"].target == "finetune_4").sum() >= 20
    assert (ev[ev.kind == "checkpoint"].target == "finetune_0").sum() == 0
    assert not ev[ev.kind == "job_start"].detail.str.contains("recorded start").any()


def test_a_job_recorded_in_the_burn_in_starts_later_with_an_event(tmp_path):
    # epoch at the run's start: the first jobs' recorded starts fall in the 2-day burn-in
    jobs = _jobs(first_start_s=5000.0)
    _, r = _run(tmp_path, jobs, START)
    ds = r.dataset
    assert np.all(ds.job_start_s.values == pytest.approx(2 * 86400.0))
    late = r.events[(r.events.kind == "job_start") & r.events.detail.str.contains("after its recorded start")]
    assert len(late) == len(jobs)
    # still exactly their recorded durations
    np.testing.assert_allclose(ds.job_end_s.values - ds.job_start_s.values, jobs.end - jobs.start,
                               rtol=0, atol=1e-6)


def test_what_a_failure_adds_comes_on_top_of_the_recorded_duration(tmp_path):
    """The trace's duration cannot hold the twin's own failures: a job interrupted once holds
    its nodes for its recorded duration + the relaunch (restart_s + reload of its checkpoint)
    + the training lost since its last checkpoint, redone."""
    epoch = START + pd.Timedelta(days=3)
    jobs = _jobs(first_start_s=5000.0)
    path = write_acme(jobs, tmp_path / "trace.csv", epoch=epoch)
    s = load_scenario(SCEN, ["simulation.duration_days=6", "workload.jobs=[]", "failures.enabled=false",
                             f"workload.trace={{path: {path}, format: acme, starts: recorded, "
                             "align: first_submit}"])
    e = Engine(s)
    t_start = (epoch - START).total_seconds() + jobs.start[4]     # the day-long job, one node
    t_hit = t_start + 6000.0       # launch 600 s, first write from 4,200 s, then 1,800 s less the write
    job = e.jobs.all[4]

    def hit():
        yield e.env.timeout(t_hit)
        e.jobs.interrupt_nodes(job.nodes.copy(), "test failure", 0.0)

    start = e.start

    def start_and_hit():
        start()
        e.env.process(hit())
    e.start = start_and_hit
    r = e.run()
    assert job.interruptions == 1 and job.status == "done"
    write_s = e.jobs.checkpoint_write_s(job, 1)
    reload_s = e.jobs.checkpoint_read_s(job)
    lost_s = 6000.0 - 4200.0 - write_s                  # training since the first checkpoint
    assert job.gpu_s_lost == pytest.approx(8 * lost_s, rel=1e-9)
    held = r.dataset.job_end_s.values[4] - r.dataset.job_start_s.values[4]
    assert held == pytest.approx(86400.0 + job.spec.restart_s + reload_s + lost_s, abs=1e-6)
    # the other jobs are untouched: exactly their recorded durations
    others = np.arange(len(jobs)) != 4
    np.testing.assert_allclose((r.dataset.job_end_s.values - r.dataset.job_start_s.values)[others],
                               (jobs.end - jobs.start)[others], rtol=0, atol=1e-6)
