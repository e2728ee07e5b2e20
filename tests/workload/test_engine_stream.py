"""Streams and traces inside the engine: the LSF-like scheduler places stream jobs on the
ramp's healthy nodes, each job trains for its drawn run time and ends in its drawn state,
the busy GPUs the sampler counts equal the GPUs the jobs hold, and a stream scenario fills
a cluster that three fixed jobs leave part idle."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from twin.scenario import load_scenario
from twin.sim.engine import Engine

from .trace_fixtures import sample_jobs, write_acme, write_sacct

SHORT = ["simulation.duration_days=24"]


@pytest.fixture(scope="module")
def stream_run(scenarios_dir_module):
    s = load_scenario(scenarios_dir_module / "blue_vela.yaml", SHORT)
    e = Engine(s)
    return s, e, e.run()


@pytest.fixture(scope="module")
def scenarios_dir_module():
    from pathlib import Path
    return Path(__file__).resolve().parents[2] / "scenarios"


def test_busy_gpus_equal_the_gpus_jobs_hold(stream_run):
    """Two independent counts: the sampler's busy nodes (node_job >= 0) and the sum of each
    job's recorded GPUs, at every sample."""
    _, _, r = stream_run
    ds = r.dataset
    np.testing.assert_array_equal(ds.gpus_busy.values, ds.job_gpus.sum("job").values)
    assert (ds.gpus_busy <= ds.gpus_healthy + 0).all()
    assert ds.gpus_busy.max() > 0


def test_stream_jobs_run_their_drawn_time_and_end_in_their_state(stream_run):
    s, e, r = stream_run
    done = [j for j in e.jobs if j.stream is not None and j.status == "done"]
    assert len(done) > 20
    for j in done:
        # the drawn time is a wall time holding the first launch and the committed checkpoint
        # writes (audit HA2 F13): training alone is shorter; a job no failure hit holds its
        # nodes for exactly that time
        assert j.wall_s_useful + j.wall_s_pending + j.wall_s_inside == pytest.approx(
            j.stream.run_s, rel=1e-9, abs=1e-6)
        if j.interruptions == 0:
            assert j.wall_s_inside >= min(j.spec.restart_s, j.stream.run_s) - 1e-6
            assert j.end_s - j.first_start_s == pytest.approx(j.stream.run_s, rel=1e-9, abs=1e-6)
        assert j.end_s >= j.first_start_s >= j.submit_s
    ds = r.dataset
    state = ds.job_state.values.astype(str)
    assert set(state) <= {"completed", "failed", "cancelled", "running", "pending"}
    k = r.kpis
    assert k["jobs_completed"] == int((state == "completed").sum())
    assert k["jobs_failed"] == int((state == "failed").sum())
    # evaluation and debug jobs train no tokens; the training classes do
    cls = ds.job_class.values.astype(str)
    tok = ds.job_tokens.isel(time=-1).values
    assert np.all(tok[np.isin(cls, ["evaluation", "debug"])] == 0)
    assert k["tokens_total"] == pytest.approx(k["tokens_pretrain"] + k["tokens_finetune"] + k["tokens_ablation"],
                                              rel=1e-9)
    started = ~np.isnan(ds.job_start_s.values)
    assert np.all(ds.job_start_s.values[started] >= ds.job_submit_s.values[started])
    assert 0 < k["utilization"] <= 1
    assert k["queue_wait_p95_h"] >= k["queue_wait_p50_h"] >= 0


def test_arrivals_follow_the_delivered_gpus(stream_run):
    """No job is submitted before the first wave; the submit rate after the second wave is
    about twice the rate between the two (rate proportional to delivered GPUs)."""
    s, e, _ = stream_run
    sub = np.array([j.submit_s for j in e.jobs if j.stream is not None]) / 86400
    first = (pd.Timestamp(s.ramp.waves[0].date) - pd.Timestamp(s.simulation.start)).days
    assert sub.min() >= first


def test_a_recorded_trace_starts_its_jobs_at_their_recorded_times(tmp_path, scenarios_dir_module):
    """Acme trace with recorded starts, its dates kept (align: first_submit) after the first
    wave has burned in: every job that fits starts exactly at its recorded start."""
    jobs = sample_jobs(0.5, seed=3, jobs_per_hour=4)
    jobs = jobs[(jobs.gpus >= 8) & (jobs.gpus <= 64)].copy()
    path = write_acme(jobs, tmp_path / "trace.csv", epoch=pd.Timestamp("2024-01-20T00:00:00", tz="UTC"))
    s = load_scenario(scenarios_dir_module / "blue_vela.yaml", [
        "simulation.duration_days=25", "workload.stream=null",
        f"workload.trace={{path: {path}, format: acme, starts: recorded, align: first_submit}}"])
    e = Engine(s)
    r = e.run()
    ds = r.dataset
    t0 = (pd.Timestamp("2024-01-20") - pd.Timestamp("2024-01-01")).total_seconds()
    want = np.sort(jobs.start.to_numpy() + t0)
    got = np.sort(ds.job_start_s.values)
    assert len(got) == len(want) > 0
    np.testing.assert_allclose(got, want)
    # the jobs table keeps the trace's submit times (the engine submits at the recorded starts)
    assert math.isclose(float(ds.job_submit_s.min()), t0 + jobs.submit.min())


def test_preemption_in_the_engine(tmp_path, scenarios_dir_module):
    """A Slurm trace re-scheduled by the twin: four 16-node ablations of the preemptable low
    queue fill the first pod; a 32-node pre-training job of the preemptive prod queue then
    preempts the two youngest, which roll back to their last checkpoint, are requeued, and
    restart when the pre-training job is done. The GPU accounting holds throughout."""
    day = 86400.0
    jobs = pd.DataFrame({
        "job_id": [f"j{i}" for i in range(5)], "user": ["u1", "u2", "u3", "u4", "u5"],
        "project": "granite", "queue": ["low"] * 4 + ["prod"], "type": "x",
        "gpus": [128] * 4 + [256], "nodes": [16] * 4 + [32], "state": "COMPLETED",
        "submit": [0.0, 600.0, 1200.0, 1800.0, day], "start": [0.0, 600.0, 1200.0, 1800.0, day],
        "end": [3 * day, 3 * day, 3 * day, 3 * day, 1.5 * day]})
    path = write_sacct(jobs, tmp_path / "sacct.txt", epoch=pd.Timestamp("2024-01-12T00:00:00"))
    s = load_scenario(scenarios_dir_module / "blue_vela.yaml", [
        "simulation.duration_days=20", "workload.stream=null", "failures.enabled=false",
        "site.power.grid.sag_rate_per_year=0", "site.power.grid.outage_rate_per_year=0",
        f"workload.trace={{path: {path}, format: slurm_sacct, starts: reschedule, align: first_submit, "
        "class_map: {low: ablation, prod: pretrain}}",
        "workload.scheduler.preemption=true"])
    r = Engine(s).run()
    ev = r.events
    pre = ev[(ev.kind == "job_interrupted") & ev.detail.str.startswith("preempted")]
    assert sorted(pre.target) == ["ablation_2", "ablation_3"]
    ds = r.dataset
    t0 = (pd.Timestamp("2024-01-12") - pd.Timestamp("2024-01-01")).total_seconds()
    assert ds.job_start_s.values[4] == pytest.approx(t0 + day)          # prod starts at once
    assert (ds.job_state.values.astype(str) == "completed").all()       # everyone finishes
    np.testing.assert_array_equal(ds.gpus_busy.values, ds.job_gpus.sum("job").values)


@pytest.fixture(scope="module")
def blue_vela_stream_full(scenarios_dir_module):
    """The whole nine-month ramp of the stream scenario, 6-hour samples."""
    s = load_scenario(scenarios_dir_module / "blue_vela.yaml", ["simulation.sample_interval_s=21600"])
    return s, Engine(s).run()


@pytest.mark.slow
def test_blue_vela_stream_fills_the_cluster_as_it_grows(blue_vela_stream_full):
    """Each power stage turns into more busy GPU-hours (30 days after vs 30 days before),
    the last 90 days keep >= 85 % of the healthy GPU-hours busy, and the full-capacity token
    rate stays in IBM's 90-321 B tokens/day (arXiv 2407.05467)."""
    s, r = blue_vela_stream_full
    ds = r.dataset
    t = ds.time.values
    busy = ds.gpus_busy.values.astype(float)
    for stage in s.site.power.plan[1:]:
        d = np.datetime64(stage.date.isoformat())
        before = busy[(t >= d - np.timedelta64(30, "D")) & (t < d)].mean()
        after = busy[(t >= d) & (t < d + np.timedelta64(30, "D"))].mean()
        assert after > before, (stage.date, before, after)
    assert r.kpis["utilization_last_90_days"] >= 0.85
    assert 90e9 <= r.kpis["tokens_per_day_full_capacity"] <= 321e9


@pytest.mark.slow
def test_the_stream_fills_what_the_fixed_jobs_leave_idle(blue_vela_stream_full, scenarios_dir_module):
    """Blue Vela's default (the stream) against its fixed-job form (blue_vela_fixed.yaml,
    three jobs on 208 of 256 nodes): in the last 90 days the stream keeps >= 85 % of the
    healthy GPU-hours busy, the fixed jobs about 80 % (their 208 nodes of 256, less repairs)."""
    _, r = blue_vela_stream_full
    f = load_scenario(scenarios_dir_module / "blue_vela_fixed.yaml", ["simulation.sample_interval_s=21600"])
    rf = Engine(f).run()
    assert rf.kpis["utilization_last_90_days"] < 208 / 256 + 0.01
    assert r.kpis["utilization_last_90_days"] > rf.kpis["utilization_last_90_days"] + 0.05


#: seeds the late-stage test pools over: in one seed's 30-day window the share of withheld
#: healthy GPU-hours lost as busy ones ranged from -0.05 to 1.22 (seeds 1-3, 7, before audit
#: HA2 F13) and from 0.02 to 1.12 (after): a 128-node head job's reservation may keep the
#: stage's nodes idle anyway, which one seed's packing decides
LATE_SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def blue_vela_stream_seeds(scenarios_dir_module):
    """The whole ramp of the stream scenario for each of :data:`LATE_SEEDS`, 6-hour samples."""
    return {seed: Engine(load_scenario(scenarios_dir_module / "blue_vela.yaml", [
        "simulation.sample_interval_s=21600", f"simulation.seed={seed}"])).run() for seed in LATE_SEEDS}


@pytest.mark.slow
@pytest.mark.parametrize("stage,late", [(1, "2024-04-14"), (2, "2024-07-01"), (3, "2024-10-01")])
def test_every_late_stage_costs_busy_gpu_hours(blue_vela_stream_seeds, scenarios_dir_module, stage, late):
    """The ramp question on the default: while a power stage is 30 days late, the GPUs it
    would have powered stay dark and the queue has work for them, so, pooled over three
    seeds (each late run paired with its on-time run: same job stream, since arrivals follow
    the delivered GPUs, not the powered ones), at least half of the healthy GPU-hours the
    slip withholds in that window are busy GPU-hours lost. One seed alone is too noisy for
    that (:data:`LATE_SEEDS`); over the whole run the packing of whole-node jobs varies by
    about a point of utilization between runs (notebooks/02_power_plan.ipynb pairs seeds)."""
    on_time = load_scenario(scenarios_dir_module / "blue_vela.yaml")
    withheld = lost = 0.0
    for seed, r in blue_vela_stream_seeds.items():
        s = load_scenario(scenarios_dir_module / "blue_vela.yaml", [
            "simulation.sample_interval_s=21600", f"simulation.seed={seed}", f"site.power.plan.{stage}.date={late}"])
        rs = Engine(s).run()
        t = r.dataset.time.values
        d = np.datetime64(on_time.site.power.plan[stage].date.isoformat())
        w = (t >= d) & (t < d + np.timedelta64(30, "D"))
        dt_h = s.simulation.sample_interval_s / 3600.0

        def window(res, name, w=w, dt_h=dt_h):
            return float(res.dataset[name].values[w].astype(float).sum()) * dt_h
        withheld += window(r, "gpus_healthy") - window(rs, "gpus_healthy")
        lost += window(r, "gpus_busy") - window(rs, "gpus_busy")
    assert withheld > 3 * 20_000                 # GPU-h: racks the stage would have powered
    assert lost > 0.5 * withheld, (withheld, lost)
