"""Issue 18, sweeps heal: a run fails only by its own exception or timeout, a lost worker's
run is retried, the parent's death takes its workers, stored runs are verified on reuse,
absurd seed counts need --force, and `twin sweep` exits non-zero on failed runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from twin.sweep import Axis, SweepInvalid, SweepSpec, run_sweep
from twin.sweep import executors as ex

from .conftest import ROOT, SMALL

ONE_DAY = ("simulation.duration_days=1", "simulation.sample_interval_s=3600")


def _spec(seeds=(0, 1, 2), series=("gpus_powered",)):
    return SweepSpec(scenario=str(SMALL), overrides=ONE_DAY, seeds=seeds, series=series,
                     axes=(Axis.grid("site.power.ups.mode", ["double_conversion", "bypass"]),))


def test_a_killed_worker_is_retried_not_recorded_as_failed(tmp_path, monkeypatch):
    """Killing one worker used to mark every pending run failed for good."""
    real = ex.execute_run
    marker = tmp_path / "killed_once"

    def dies_once(scenario, series):
        if scenario.simulation.seed == 1 and not marker.exists():
            marker.write_text("x")
            os.kill(os.getpid(), signal.SIGKILL)         # as the OOM killer would
        return real(scenario, series)
    monkeypatch.setattr(ex, "execute_run", dies_once)
    out = run_sweep(_spec(), tmp_path / "sw", workers=2)
    assert (out.dataset.status.values == "ok").all()
    assert len(out.retried) == 1 and "SIGKILL" in out.retried[0][1]
    assert len(out.ran) == 6


def test_a_run_that_always_kills_its_worker_fails_alone_and_is_retried_on_rerun(tmp_path, monkeypatch):
    real = ex.execute_run

    def always_dies(scenario, series):
        if scenario.simulation.seed == 2 and scenario.site.power.ups.mode == "bypass":
            os.kill(os.getpid(), signal.SIGKILL)
        return real(scenario, series)
    monkeypatch.setattr(ex, "execute_run", always_dies)
    out = run_sweep(_spec(), tmp_path / "sw", workers=2)
    st = out.dataset.status
    assert int((st == "failed").sum()) == 1 and int((st == "ok").sum()) == 5
    bad = {"site.power.ups.mode": "bypass", "seed": 2}
    assert "worker lost 3 times" in str(out.dataset.error.sel(bad).values)
    assert len(out.retried) == 2
    monkeypatch.setattr(ex, "execute_run", real)
    again = run_sweep(_spec(), tmp_path / "sw", workers=2)    # a lost worker is not a verdict
    assert len(again.ran) == 1 and (again.dataset.status.values == "ok").all()


def test_timeout_fails_only_the_slow_run(tmp_path, monkeypatch):
    real = ex.execute_run

    def slow(scenario, series):
        if scenario.simulation.seed == 0 and scenario.site.power.ups.mode == "bypass":
            time.sleep(120)
        return real(scenario, series)
    monkeypatch.setattr(ex, "execute_run", slow)
    t0 = time.monotonic()
    out = run_sweep(_spec(), tmp_path / "sw", workers=2, timeout_s=8.0)
    assert time.monotonic() - t0 < 100
    st = out.dataset.status
    assert int((st == "failed").sum()) == 1
    assert "timeout" in str(out.dataset.error.sel({"site.power.ups.mode": "bypass", "seed": 0}).values)
    rec = json.loads((tmp_path / "sw" / "runs" / f"{out.failed[0]}.json").read_text())
    assert rec["failure"] == "timeout" and rec["timeout_s"] == 8.0
    # the same timeout keeps the verdict; a longer one (or none) tries again
    monkeypatch.setattr(ex, "execute_run", real)
    assert run_sweep(_spec(), tmp_path / "sw", workers=2, timeout_s=8.0).ran == []
    assert len(run_sweep(_spec(), tmp_path / "sw", workers=2, timeout_s=300.0).ran) == 1


@pytest.mark.parametrize("damage", ["truncate_npz", "delete_kpi", "edit_kpi", "empty_json", "delete_npz"])
def test_corrupt_or_partial_stored_runs_are_redone_and_reported(tmp_path, damage):
    """A truncated .npz used to block the sweep; a stored run without its KPIs, or with an
    edited one, passed into sweep.nc as NaN or the edited value."""
    spec = _spec(seeds=(0,))
    first = run_sweep(spec, tmp_path / "sw", workers=1)
    key = sorted(first.ran)[0]
    runs = tmp_path / "sw" / "runs"
    j, z = runs / f"{key}.json", runs / f"{key}.npz"
    rec = json.loads(j.read_text())
    if damage == "truncate_npz":
        z.write_bytes(z.read_bytes()[:100])
    elif damage == "delete_npz":
        z.unlink()
    elif damage == "delete_kpi":
        del rec["kpis"]["tokens_total"]
        j.write_text(json.dumps(rec))
    elif damage == "edit_kpi":
        rec["kpis"]["energy_facility_mwh"] += 1.0
        j.write_text(json.dumps(rec))
    else:
        j.write_text("")
    again = run_sweep(spec, tmp_path / "sw", workers=1)
    assert list(again.corrupt) == [key] and again.ran == [key]
    for k in ("tokens_total", "energy_facility_mwh"):
        np.testing.assert_array_equal(again.dataset[k].values, first.dataset[k].values)
    np.testing.assert_array_equal(again.dataset.gpus_powered.values, first.dataset.gpus_powered.values)
    assert (again.dataset.status.values == "ok").all()


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(p.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux")
def test_killing_the_parent_takes_its_workers(tmp_path):
    """Killing the parent used to leave orphan workers holding the terminal."""
    cmd = [sys.executable, "-m", "twin.cli", "sweep", str(SMALL), "--set", "simulation.duration_days=30",
           "--grid", "failures.rate_scale=1,2", "--seeds", "2", "--workers", "2", "--series", "none",
           "--out", str(tmp_path / "sw")]
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 240
        kids: list[int] = []
        while time.monotonic() < deadline and len(kids) < 2:
            kids = _children(parent.pid)
            time.sleep(0.1)
        assert len(kids) == 2, f"the sweep should have two workers running: {log.read_text()}"
        parent.kill()                         # SIGKILL: no cleanup code of the parent runs
        parent.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.1)
        assert not any(_alive(k) for k in kids), "orphan workers outlived the sweep"
    finally:
        for k in _children(parent.pid):
            os.kill(k, signal.SIGKILL)


def _sweep_cli(*args, cwd=ROOT, timeout=600):
    return subprocess.run([sys.executable, "-m", "twin.cli", "sweep", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def test_absurd_seed_counts_need_force(tmp_path):
    r = _sweep_cli(SMALL, "--seeds", "10000000", "--out", tmp_path / "sw")
    assert r.returncode == 2 and "--force" in r.stderr and "10,000,000" in r.stderr
    r = _sweep_cli(SMALL, "--grid", "failures.rate_scale=" + ",".join(str(i) for i in range(1, 41)),
                   "--seeds", "600", "--out", tmp_path / "sw")
    assert r.returncode == 2 and "24,000 runs" in r.stderr
    assert not (tmp_path / "sw").exists()


def test_sweep_exits_1_on_failed_runs_unless_allowed(tmp_path):
    args = [SMALL, *sum((["--set", o] for o in ONE_DAY), []), "--seeds", "2", "--workers", "1",
            "--timeout", "0.001", "--series", "none"]
    r = _sweep_cli(*args, "--out", tmp_path / "a")
    assert r.returncode == 1 and "2 runs failed" in r.stderr and "timeout" in r.stderr
    r = _sweep_cli(*args, "--out", tmp_path / "b", "--allow-failures")
    assert r.returncode == 0, r.stderr


def test_a_job_that_cannot_progress_stops_the_sweep_before_it_starts(tmp_path):
    """`tokens_target: 1e-9` hung the whole sweep; now every point is validated first."""
    r = _sweep_cli(SMALL, "--grid", "workload.jobs.0.tokens_target=1e-9,1e12", "--out", tmp_path / "sw",
                   timeout=120)
    assert r.returncode == 2 and "one step's tokens" in r.stderr
    assert "1 grid point(s)" in r.stderr and not (tmp_path / "sw").exists()


def test_sweep_out_with_user_files_is_refused(tmp_path):
    (tmp_path / "thesis.tex").write_text("x")
    r = _sweep_cli(SMALL, "--out", tmp_path)
    assert r.returncode == 2 and "--force" in r.stderr


def test_invalid_point_lists_every_problem_of_every_point(tmp_path):
    spec = SweepSpec(scenario=str(SMALL), overrides=ONE_DAY,
                     axes=(Axis.grid("simulation.sample_interval_s", [3600, 7000, 1e12]),))
    with pytest.raises(SweepInvalid) as exc:
        run_sweep(spec, tmp_path / "sw")
    assert {p for p, _ in exc.value.problems} == {"simulation.sample_interval_s=7000",
                                                   "simulation.sample_interval_s=1000000000000.0"}


def test_temporaries_of_a_killed_sweep_are_removed_and_never_globbed(tmp_path):
    """The flaky kill test globbed the store's temporary JSON files, which SIGKILL leaves
    empty: temporaries now live in runs/.tmp/ and are removed when a sweep starts."""
    out = tmp_path / "sw"
    (out / "runs" / ".tmp").mkdir(parents=True)
    (out / "runs" / ".tmp" / "abc.123.json").write_text("")
    (out / ".sweep.xyz.nc").write_bytes(b"")
    spec = _spec(seeds=(0,), series=())
    run_sweep(spec, out, workers=1)
    assert list((out / "runs" / ".tmp").iterdir()) == []
    assert not list(out.glob(".sweep.*"))
    assert all(p.stat().st_size > 0 for p in (out / "runs").glob("*.json"))
