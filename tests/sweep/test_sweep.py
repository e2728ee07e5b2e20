"""Sweeps: same numbers as one-by-one runs, resumable after a stop or a kill, Dask equals
local processes, failed runs recorded, Monte Carlo bands equal numpy's quantiles."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import twin
from twin.sweep import (
    Axis,
    SweepInvalid,
    SweepSpec,
    kpi_names,
    load_sweep,
    parse_grid,
    resolve_tasks,
    run_sweep,
    spec_from_mapping,
    summarize,
)

from .conftest import SCENARIOS, SMALL

ROOT = SCENARIOS.parent


def _one_by_one(spec: SweepSpec, task_index):
    """The run at ``task_index`` done by hand: load with the same overrides, simulate."""
    *idx, si = task_index
    ov = list(spec.overrides)
    for a, i in zip(spec.axes, idx, strict=True):
        ov.extend(a.overrides[i])
    ov.append(f"simulation.seed={spec.seeds[si]}")
    return twin.simulate(twin.load_scenario(spec.scenario, ov))


def test_sweep_equals_runs_done_one_by_one(small_spec, tmp_path):
    out = run_sweep(small_spec, tmp_path / "sw", workers=2)
    ds = out.dataset
    assert dict(ds.sizes)["seed"] == 2 and dict(ds.sizes)["site.power.ups.mode"] == 2
    assert (ds.status.values == "ok").all()
    assert len(out.ran) == 4 and not out.reused
    for t in resolve_tasks(small_spec):
        ref = _one_by_one(small_spec, t.index)
        for k, v in ref.kpis.items():
            got = ds[k].values[t.index]
            assert (np.isnan(v) and np.isnan(got)) or got == v, (k, t.index, got, v)
        # a selected series, bit for bit (stored as float32 like the run's own recorder)
        np.testing.assert_array_equal(ds.gpus_healthy.values[t.index],
                                      ref.dataset.gpus_healthy.values.astype(np.float32))
        tok = ref.dataset.job_tokens.sum("job").values
        np.testing.assert_array_equal(ds.tokens_cumulative.values[t.index], tok)
    # the notebook idiom of the issue works, and bypass has no UPS conversion loss
    loss = ds.ups_loss_mwh.mean("seed")
    assert loss.sel({"site.power.ups.mode": "bypass"}) < loss.sel({"site.power.ups.mode": "double_conversion"})
    # the file on disk is the same Dataset
    disk, spec = load_sweep(tmp_path / "sw")
    np.testing.assert_array_equal(disk.tokens_total.values, ds.tokens_total.values)
    assert spec == small_spec


def test_stopped_sweep_resumes_without_repeating_a_run(small_spec, tmp_path):
    spec = dataclasses.replace(small_spec, seeds=(0, 1, 2))      # 6 runs
    first: list[str] = []

    def stop_after_two(task, rec):
        first.append(task.key)
        if len(first) == 2:
            raise KeyboardInterrupt      # what Ctrl-C does between two runs

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, tmp_path / "sw", workers=1, on_result=stop_after_two)
    stored = sorted(p.stem for p in (tmp_path / "sw" / "runs").glob("*.json"))
    assert stored == sorted(first)
    again = run_sweep(spec, tmp_path / "sw", workers=1)
    assert sorted(again.reused) == sorted(first)
    assert len(again.ran) == 4 and not set(again.ran) & set(first)
    assert (again.dataset.status.values == "ok").all()
    # a third call has nothing left to do
    third = run_sweep(spec, tmp_path / "sw", workers=1)
    assert third.ran == [] and len(third.reused) == 6
    np.testing.assert_array_equal(third.dataset.tokens_total.values, again.dataset.tokens_total.values)


def test_killed_sweep_process_is_completed_by_a_rerun(tmp_path):
    """SIGKILL the `twin sweep` process once it has stored a run; the re-run does the rest
    and nothing twice (each run's JSON records the pid of the process that ran it)."""
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "twin.cli", "sweep", str(SCENARIOS / "lenovo_small.yaml"),
           *sum((["--set", o] for o in SMALL), []), "--grid", "failures.rate_scale=1,20,40",
           "--seeds", "2", "--workers", "1", "--series", "none", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not list((out / "runs").glob("*.json")):
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    before = {p.stem: json.loads(p.read_text())["pid"] for p in (out / "runs").glob("*.json")}
    assert 1 <= len(before) < 6, "the sweep should be killed half way"
    assert not (out / "sweep.nc").exists()
    rc = subprocess.run(cmd, capture_output=True, text=True)
    assert rc.returncode == 0, rc.stderr
    after = {p.stem: json.loads(p.read_text())["pid"] for p in (out / "runs").glob("*.json")}
    assert len(after) == 6
    assert all(after[k] == v for k, v in before.items()), "a stored run was done again"
    ds, _ = load_sweep(out)
    assert (ds.status.values == "ok").all()


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_numbers_as_local_processes(small_spec, tmp_path):
    distributed = pytest.importorskip("distributed")
    local = run_sweep(small_spec, tmp_path / "local", workers=2).dataset
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        # the address as `--scheduler tcp://HOST:PORT` gives it: run_sweep connects its own client
        assert cluster.scheduler_address.startswith("tcp://")
        dask = run_sweep(small_spec, tmp_path / "dask", scheduler=cluster.scheduler_address)
        pids = {json.loads(p.read_text())["pid"] for p in (tmp_path / "dask" / "runs").glob("*.json")}
    assert os.getpid() not in pids
    for k in kpi_names(local):
        np.testing.assert_array_equal(dask.dataset[k].values, local[k].values, err_msg=k)
    np.testing.assert_array_equal(dask.dataset.tokens_cumulative.values, local.tokens_cumulative.values)


def test_failed_runs_are_recorded_and_the_rest_go_on(tmp_path, monkeypatch):
    real = twin.simulate

    def flaky(scenario, progress=None):
        if scenario.simulation.seed == 1 and scenario.site.power.ups.mode == "bypass":
            raise RuntimeError("solver diverged (test)")
        return real(scenario, progress)

    monkeypatch.setattr(twin, "simulate", flaky)
    spec = SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"), overrides=SMALL,
                     axes=(Axis.grid("site.power.ups.mode", ["double_conversion", "bypass"]),),
                     seeds=(0, 1))
    out = run_sweep(spec, tmp_path / "sw", workers=1)
    ds = out.dataset
    st_ = ds.status
    bad = {"site.power.ups.mode": "bypass", "seed": 1}
    assert st_.sel(bad) == "failed"
    assert "solver diverged" in str(ds.error.sel(bad).values)
    assert int((st_ == "ok").sum()) == 3 and ds.attrs["runs_failed"] == 1
    assert np.isnan(ds.tokens_total.sel(bad))
    # failed runs are kept (not re-run) unless asked
    monkeypatch.setattr(twin, "simulate", real)
    again = run_sweep(spec, tmp_path / "sw", workers=1)
    assert again.ran == []
    retry = run_sweep(spec, tmp_path / "sw", workers=1, retry_failed=True)
    assert len(retry.ran) == 1
    assert int((retry.dataset.status == "ok").sum()) == 4


def test_every_grid_point_is_validated_before_any_run(tmp_path):
    """Issue 17: an invalid grid value used to run the rest, record one failure and exit 0.
    Now every problem of every point is listed and nothing is written."""
    spec = SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"), overrides=SMALL,
                     axes=(Axis.grid("site.power.ups.capacity_kw", [80, -5]),
                           Axis.grid("hardware.gpu_power_cap_w", [300, 9999])),
                     seeds=(0, 1))
    with pytest.raises(SweepInvalid) as exc:
        run_sweep(spec, tmp_path / "sw", workers=1)
    points = {p for p, _ in exc.value.problems}
    assert points == {"site.power.ups.capacity_kw=80, hardware.gpu_power_cap_w=9999",
                      "site.power.ups.capacity_kw=-5, hardware.gpu_power_cap_w=300",
                      "site.power.ups.capacity_kw=-5, hardware.gpu_power_cap_w=9999"}
    text = str(exc.value)
    assert "capacity_kw" in text and "gpu_power_cap_w" in text and "9999" in text
    assert not (tmp_path / "sw").exists()


def test_monte_carlo_bands_are_numpy_quantiles_over_seeds(tmp_path):
    spec = SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"),
                     overrides=(*SMALL, "simulation.duration_days=3", "failures.rate_scale=60"),
                     seeds=tuple(range(5)), series=())
    ds = run_sweep(spec, tmp_path / "sw", workers=2).dataset
    sm = summarize(ds)
    for k in ("tokens_total", "failures", "lost_gpu_hours"):
        v = ds[k].values
        assert float(sm[k].sel(stat="mean")) == pytest.approx(v.mean(), rel=1e-12)
        assert float(sm[k].sel(stat="p05")) == pytest.approx(np.quantile(v, 0.05), rel=1e-12)
        assert float(sm[k].sel(stat="p95")) == pytest.approx(np.quantile(v, 0.95), rel=1e-12)
        assert sm[k].sel(stat="p05") <= sm[k].sel(stat="mean") <= sm[k].sel(stat="p95")
    assert ds.failures.values.std() > 0, "60x failure rate over 3 days should vary across seeds"
    table = (tmp_path / "sw" / "summary.csv").read_text().splitlines()
    assert "tokens_total_p95" in table[0] and len(table) == 2


def test_sweep_file_cases_and_grid(tmp_path):
    f = tmp_path / "study.yaml"
    f.write_text(f"""
name: t
scenario: {SCENARIOS / 'lenovo_small.yaml'}
set: [{', '.join(SMALL)}]
seeds: [3, 4]
series: [gpus_powered]
grid:
  cap: {{path: hardware.gpu_power_cap_w, values: [250, 400]}}
cases:
  dim: storage
  values:
    scale: [workload.storage.kind=storage_scale]
    nfs: {{set: [workload.storage.kind=nfs]}}
""")
    spec = SweepSpec.from_file(f)
    assert [a.name for a in spec.axes] == ["cap", "storage"] and spec.seeds == (3, 4)
    assert spec.shape == (2, 2, 2)
    tasks = resolve_tasks(spec)
    assert len({t.key for t in tasks}) == 8
    s = tasks[0].scenario
    assert s.hardware.gpu_power_cap_w == 250 and s.workload.storage.kind == "storage_scale"
    assert s.simulation.seed == 3 and s.simulation.duration_days == 1
    rel = tmp_path / "rel.yaml"
    rel.write_text("scenario: ../x.yaml\ngrid: {a.b: [1]}\n")
    assert spec_from_mapping({"scenario": "../x.yaml", "grid": {"a.b": [1]}}, rel).scenario == str(
        tmp_path / "../x.yaml")


@given(st.lists(st.one_of(st.integers(-10**6, 10**6), st.sampled_from(["bypass", "nfs", "auto"]),
                          st.floats(0.5, 1e4, allow_nan=False).map(lambda x: round(x, 3))),
                min_size=1, max_size=5, unique=True))
def test_grid_flag_round_trips_values(values):
    text = ",".join(str(v) for v in values)
    ax = parse_grid(f"workload.jobs.0.checkpoint_interval_s={text}")
    assert list(ax.labels) == values
    assert ax.overrides[0] == (f"workload.jobs.0.checkpoint_interval_s={values[0]}",)


def _cli(*args, cwd=ROOT):
    args = [str(ROOT / a) if a.startswith("scenarios/") else a for a in args]
    return subprocess.run([sys.executable, "-m", "twin.cli", "sweep", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.parametrize("args, needle", [
    (["scenarios/lenovo_small.yaml", "--grid", "nonsense", "--out", "x"], "expected dotted.path=v1,v2"),
    (["scenarios/lenovo_small.yaml", "--grid", "a.b=", "--out", "x"], "comma-separated values"),
    (["scenarios/lenovo_small.yaml", "--seeds", "zero", "--out", "x"], "seeds"),
    (["scenarios/lenovo_small.yaml", "--workers", "0", "--out", "x"], "--workers"),
    (["nope.yaml", "--out", "x"], "no such file"),
    (["scenarios/lenovo_small.yaml", "--set", "site.power.ups.capacity_kw=-5", "--out", "x"],
     "capacity_kw"),
    (["scenarios/lenovo_small.yaml", "--series", "bogus", "--out", "x"], "unknown ['bogus']"),
    (["scenarios/lenovo_small.yaml"], "--out"),
    (["scenarios/lenovo_small.yaml", "--scheduler", "somewhere", "--out", "x"], "expected tcp://HOST:PORT"),
])
def test_cli_bad_input_exits_2_with_a_message(args, needle, tmp_path):
    r = _cli(*args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()


def test_cli_help_exits_0():
    r = _cli("--help")
    assert r.returncode == 0 and "--scheduler" in r.stdout


def test_every_shipped_study_file_resolves():
    """Each sweep file under scenarios/studies names valid scenarios for every grid point."""
    files = sorted((ROOT / "scenarios" / "studies").glob("*.yaml"))
    assert len(files) >= 5
    for f in files:
        spec = SweepSpec.from_file(f)
        for t in resolve_tasks(dataclasses.replace(spec, seeds=spec.seeds[:1])):
            assert t.scenario is not None, (f.name, t.index, t.problem)


def test_run_keys_are_content_hashes(small_spec):
    """Key = SHA-256 of the resolved scenario incl. seed: same for the same run in two
    different sweeps, different across seeds."""
    a = {t.index: t.key for t in resolve_tasks(small_spec)}
    other = dataclasses.replace(small_spec, axes=(Axis.grid("site.power.ups.mode", ["bypass"]),))
    b = resolve_tasks(other)
    assert b[0].key == a[(1, 0)] and b[1].key == a[(1, 1)]
    assert len(set(a.values())) == 4


def test_runs_made_by_other_code_are_flagged_and_rerun_on_request(small_spec, tmp_path, monkeypatch):
    import twin.sweep.store as sweep
    spec = dataclasses.replace(small_spec, seeds=(0,), series=())
    first = run_sweep(spec, tmp_path / "sw", workers=1)
    assert first.stale == [] and len(first.ran) == 2
    monkeypatch.setattr(sweep, "_CODE_FINGERPRINT", "0" * 16)     # as if the model code changed
    again = run_sweep(spec, tmp_path / "sw", workers=1)
    assert again.ran == [] and sorted(again.stale) == sorted(first.ran)
    redo = run_sweep(spec, tmp_path / "sw", workers=1, rerun_stale=True)
    assert sorted(redo.ran) == sorted(first.ran) and redo.stale == []
    np.testing.assert_array_equal(redo.dataset.tokens_total.values, first.dataset.tokens_total.values)


def test_progress_bar_shows_done_failed_and_time_left_only_on_a_terminal():
    import io

    from twin.sweep import SweepProgress
    silent = io.StringIO()
    SweepProgress(stream=silent)(3, 1, 10, 5.0)
    assert silent.getvalue() == ""                      # not a terminal: nothing
    out = io.StringIO()
    bar = SweepProgress(stream=out, force=True)
    bar(2, 0, 10, 0.0)                                  # 2 runs found on disk at the start
    bar(4, 1, 10, 20.0)                                 # 2 new runs in 20 s -> 6 left take 60 s
    text = out.getvalue()
    assert "4/10 runs, 1 failed" in text and "left 1:00" in text and "elapsed 0:20" in text
    bar(10, 1, 10, 60.0)
    assert out.getvalue().endswith("\n")
