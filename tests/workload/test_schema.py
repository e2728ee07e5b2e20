"""workload.stream / workload.trace / workload.scheduler in scenarios: the fixed-job form
stays valid, bad combinations are exit-2 problems, and the models map onto the package."""

from __future__ import annotations

import re

import pytest

from twin.errors import ScenarioError
from twin.scenario import load_scenario
from twin.workload.config import load_trace, scheduler_config_for, stream_params_for
from twin.workload.stream import default_stream_params, stream_moments
from twin.workload.traces import TraceError

from .trace_fixtures import sample_jobs, write_acme

BV = "scenarios/blue_vela.yaml"


def test_blue_vela_default_is_the_stream_and_the_fixed_form_stays_valid(scenarios_dir):
    s = load_scenario(scenarios_dir / "blue_vela.yaml")
    assert s.workload.jobs == [] and s.workload.stream is not None and s.workload.trace is None
    assert s.workload.stream.arrivals.load == 1.2 and s.workload.stream.arrivals.follow == "delivered"
    f = load_scenario(scenarios_dir / "blue_vela_fixed.yaml")
    assert [j.name for j in f.workload.jobs] == ["granite_34b", "granite_20b", "granite_8b_ablation"]
    assert f.workload.stream is None and f.workload.trace is None
    # only the workload differs
    assert f.site == s.site and f.ramp == s.ramp and f.hardware == s.hardware


@pytest.mark.parametrize("override,expected", [
    ("workload.jobs=[]", "at least one job, a stream or a trace"),
    ("workload.trace={path: t.csv, format: acme}", "a trace replaces the jobs list"),
    ("workload.stream={arrivals: {load: 0.9, jobs_per_hour: 3}}", "exactly one of jobs_per_hour and load"),
    ("workload.stream={classes: [{name: training}]}", "pretrain"),
    ("workload.trace={path: t.csv, format: pbs}", "acme"),
    ("workload.scheduler.order=lottery", "fifo"),
    ("workload.stream={arrivals: {load: 1.0}}", "hot_spares 0, elastic false"),
])
def test_bad_workloads_are_problems(scenarios_dir, override, expected):
    with pytest.raises(ScenarioError, match=expected):
        load_scenario(scenarios_dir / "blue_vela_fixed.yaml", [override])


def test_a_trace_on_the_stream_scenario_must_drop_the_stream(scenarios_dir):
    with pytest.raises(ScenarioError, match="a trace replaces the stream"):
        load_scenario(scenarios_dir / "blue_vela.yaml", ["workload.trace={path: t.csv, format: acme}"])


def test_stream_overrides_rescale_the_other_shares(scenarios_dir):
    s = load_scenario(scenarios_dir / "blue_vela.yaml", [
        "workload.stream={arrivals: {load: 0.9}, classes: [{name: pretrain, share: 0.1, gpus: [256, 512], gpu_weights: [1, 1]}]}"])
    p = stream_params_for(s.workload.stream, max_gpus=2048)
    assert p.cls("pretrain").share == pytest.approx(0.1)
    assert sum(c.share for c in p.classes) == pytest.approx(1.0)
    d = default_stream_params()
    assert p.cls("debug").share / p.cls("evaluation").share == pytest.approx(
        d.cls("debug").share / d.cls("evaluation").share)
    assert stream_moments(p)["mean_gpus"] > 30


def test_scheduler_policy_and_trace_mapping(scenarios_dir, tmp_path):
    path = write_acme(sample_jobs(0.5), tmp_path / "t.csv")
    s = load_scenario(scenarios_dir / "blue_vela.yaml", [
        "workload.stream=null", f"workload.trace={{path: {path}, format: acme}}",
        "workload.scheduler={order: fairshare, shares: {alice: 3}, half_life_h: 2}"])
    c = scheduler_config_for(s.workload.scheduler)
    assert c.order == "fairshare" and c.shares == {"alice": 3.0} and c.half_life_s == 7200.0
    assert [q.name for q in c.queues] == ["interactive", "prod", "normal", "low"]
    tr = load_trace(s.workload.trace, cluster_gpus=2048)
    assert len(tr.jobs) > 0
    with pytest.raises(TraceError, match="at most the cluster's 8 GPUs"):
        load_trace(s.workload.trace, cluster_gpus=8)


def test_twin_run_reports_a_bad_trace_with_exit_2(tmp_path, capsys, scenarios_dir):
    """A trace with an unparseable date: `twin run` prints file, line and column and exits 2,
    writing nothing."""
    from twin.cli.main import main
    path = _bad_date_trace(tmp_path)
    out = tmp_path / "run"
    rc = main(["run", str(scenarios_dir / "blue_vela.yaml"), "--out", str(out),
               "--set", "workload.stream=null", "--set", f"workload.trace={{path: {path}, format: acme}}",
               "--set", "simulation.duration_days=2"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{path}: line 4, column 8 (submit): got 'yesterday'" in err
    assert not out.exists()


def _bad_date_trace(tmp_path):
    path = write_acme(sample_jobs(0.2), tmp_path / "t.csv")
    lines = path.read_text().splitlines()
    cells = lines[3].split(",")
    cells[7] = "yesterday"
    lines[3] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_twin_validate_parses_the_trace(tmp_path, capsys, scenarios_dir):
    """`twin validate` reads workload.trace as `twin run` does: a good trace is counted, a bad
    one is exit 2 with the same file, line and column message, and a trace with more GPUs
    than the cluster is refused."""
    from twin.cli.main import main
    good = write_acme(sample_jobs(0.2), tmp_path / "good.csv")
    base = ["--set", "workload.stream=null"]
    assert main(["validate", str(scenarios_dir / "blue_vela.yaml"), *base,
                 "--set", f"workload.trace={{path: {good}, format: acme}}"]) == 0
    m = re.search(r"a trace of (\d+) jobs \((\d+) rows, (\d+) skipped\)", capsys.readouterr().out)
    n_rows = len(good.read_text().splitlines()) - 1
    assert m and int(m[2]) == n_rows and int(m[1]) + int(m[3]) == n_rows and int(m[3]) > 0   # CPU rows

    bad = _bad_date_trace(tmp_path)
    rc = main(["validate", str(scenarios_dir / "blue_vela.yaml"), *base,
               "--set", f"workload.trace={{path: {bad}, format: acme}}"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{bad}: line 4, column 8 (submit): got 'yesterday'" in err

    rc = main(["validate", str(scenarios_dir / "lenovo_small.yaml"), "--set", "workload.jobs=[]",
               "--set", f"workload.trace={{path: {good}, format: acme}}"])
    err = capsys.readouterr().err
    assert rc == 2 and "at most the cluster's 32 GPUs" in err and "Traceback" not in err


def test_per_job_tools_see_the_streams_training_classes(scenarios_dir):
    """`twin estimate step`, `twin capacity` and the report's job mix on a stream scenario:
    the training classes with the model each trains (the fixed jobs where there are some)."""
    from twin.workload.config import describe_workload
    from twin.workload.engine_jobs import CLASS_MODELS, representative_jobs
    s = load_scenario(scenarios_dir / "blue_vela.yaml")
    jobs = representative_jobs(s)
    assert [j.name for j in jobs] == ["pretrain", "finetune", "ablation"]
    assert jobs[0].model == CLASS_MODELS["pretrain"].model and jobs[0].nodes == 128
    f = load_scenario(scenarios_dir / "blue_vela_fixed.yaml")
    assert representative_jobs(f) == list(f.workload.jobs)
    text = describe_workload(s, 2048)
    assert text.startswith("job stream offering 1.2x the delivered GPUs' hours (FIFO, EASY backfill")
    assert "pretrain 12% (256-1,024 GPUs, median 4 d)" in text and "debug 15% (8 GPUs, median 30 min)" in text
    assert describe_workload(f, 2048) == ""
