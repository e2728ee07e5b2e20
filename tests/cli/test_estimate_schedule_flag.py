"""``twin estimate step SCENARIO --pipeline-schedule X``: the flag is the estimated job's
``workload.jobs.<n>.pipeline_schedule``, set before the scenario is validated (HPLAN defects 1
and 2), with the estimate file's conflict rule; ``--json`` names the schedule that ran; the
DeepSeek-V3 memory options of a scenario job are strict booleans (defect 3).

The job is the Mixtral-8x7B-shaped mixture of experts of tests/scenario/test_pipeline_schedule.py
on the Lenovo "large" cluster (16 SR675 V3, 128 H100 NVL): tp 2, pp 2, EP 8, DualPipe. At a
global batch of 480 it has 480 / 32 = 15 micro-batches a rank, odd, so DualPipe cannot run it
there but 1F1B can.
"""

import json
from pathlib import Path

import pytest

import twin
from twin.cli.estimate import run_estimate_cli
from twin.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "scenarios" / "lenovo_large.yaml"
MIXTRAL = """\
      model: {layers: 32, hidden: 4096, ffn_hidden: 14336, heads: 32, kv_heads: 8, vocab: 32000,
              experts: 8, top_k: 2}
      seq_len: 4096
      tp: 2
      pp: 2
      ep: 8
      checkpoint_interval_s: 3600
      pipeline_schedule: dualpipe
"""
GB480 = ["--set", "workload.jobs.0.global_batch=480"]


@pytest.fixture(scope="module")
def moe_dp(tmp_path_factory) -> Path:
    """One 16-node DualPipe job, global batch 512 (16 micro-batches a rank)."""
    path = tmp_path_factory.mktemp("hfix") / "moe_dp.yaml"
    path.write_text(f"extends: {BASE}\nname: moe_dp\nworkload:\n  jobs:\n"
                    f"    - name: mixtral_dp\n      nodes: 16\n      global_batch: 512\n{MIXTRAL}")
    return path


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory) -> Path:
    """A dense 8-node pp-1 blocker (job 0) and an elastic 12-node DualPipe job, GB 240 (job 1)."""
    path = tmp_path_factory.mktemp("hfix") / "moe_dp_el2.yaml"
    path.write_text(
        f"extends: {BASE}\nname: moe_dp_el2\nworkload:\n  jobs:\n"
        "    - name: blocker\n"
        "      model: {layers: 32, hidden: 4096, ffn_hidden: 14336, heads: 32, kv_heads: 8, "
        "vocab: 128256}\n"
        "      seq_len: 4096\n      global_batch: 512\n      tp: 2\n      nodes: 8\n"
        "      checkpoint_interval_s: 3600\n"
        f"    - name: mixtral_dp\n      nodes: 12\n      global_batch: 240\n      elastic: true\n"
        f"{MIXTRAL}")
    return path


def _step(capsys, *argv) -> tuple[int, dict | None, str]:
    rc = run_estimate_cli(["step", *map(str, argv), "--json"])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 else None), err


def test_flag_overrides_a_job_schedule_that_does_not_run_at_the_set_size(moe_dp, capsys):
    """Defect 1: the job's own DualPipe was checked at GB 480 before the flag applied (exit 2,
    "got 'dualpipe'; ... got 15"); the flag now estimates 1F1B there, as the --set does."""
    rc, by_set, _ = _step(capsys, moe_dp, *GB480, "--set", "workload.jobs.0.pipeline_schedule=1f1b")
    assert rc == 0
    rc, by_flag, err = _step(capsys, moe_dp, *GB480, "--pipeline-schedule", "1f1b")
    assert rc == 0, err
    assert by_flag == by_set
    assert by_flag["pipeline_schedule"] == "1f1b"
    assert by_flag["step_time_s"] == pytest.approx(4.3557, abs=1e-3)   # HPLAN: 4.356 s
    assert "comm_sm_reserved" not in by_flag["breakdown"]


def test_flag_on_the_job_named_by_job(two_jobs, capsys):
    """The elastic DualPipe job (job 1) at its 8-node fallback size: 1F1B, 4.3305 s (HPLAN's
    elastic-fallback figure, the engine's step there)."""
    sets = ["--job", "mixtral_dp", "--set", "workload.jobs.1.nodes=8"]
    rc, by_set, _ = _step(capsys, two_jobs, *sets, "--set", "workload.jobs.1.pipeline_schedule=1f1b")
    assert rc == 0
    rc, by_flag, err = _step(capsys, two_jobs, *sets, "--pipeline-schedule", "1f1b")
    assert rc == 0, err
    assert by_flag == by_set
    assert by_flag["step_time_s"] == pytest.approx(4.3305, abs=1e-3)
    # a --set of another job's schedule is not the estimated job's: no conflict
    rc, other, err = _step(capsys, two_jobs, *sets, "--set", "workload.jobs.0.pipeline_schedule=1f1b",
                           "--pipeline-schedule", "1f1b")
    assert rc == 0, err
    assert other == by_flag


@pytest.mark.parametrize("key", ["workload.jobs.0.pipeline_schedule",
                                 "workload.jobs.-1.pipeline_schedule"])
def test_a_set_of_the_same_field_to_another_schedule_exits_2_naming_both(moe_dp, key, capsys):
    rc, _, err = _step(capsys, moe_dp, "--set", f"{key}=dualpipe", "--pipeline-schedule", "1f1b")
    assert rc == 2
    assert f"--pipeline-schedule 1f1b contradicts --set {key}=dualpipe: give one of them" in err


def test_a_set_to_the_same_schedule_or_to_null_is_no_conflict(moe_dp, capsys):
    rc, dual, err = _step(capsys, moe_dp, "--pipeline-schedule", "dualpipe")
    assert rc == 0, err
    assert dual["pipeline_schedule"] == "dualpipe" and "comm_sm_reserved" in dual["breakdown"]
    for value in ("dualpipe", "null"):
        rc, out, err = _step(capsys, moe_dp, "--set", f"workload.jobs.0.pipeline_schedule={value}",
                             "--pipeline-schedule", "dualpipe")
        assert rc == 0, err
        assert out == dual


def test_flag_errors_name_the_scenario_paths(moe_dp, two_jobs, capsys):
    """Defect 2: the estimate file's parallelism.* / training.* names are not a scenario's."""
    errs = []
    rc, _, err = _step(capsys, moe_dp, "--set", "workload.jobs.0.pipeline_schedule=null", *GB480,
                       "--pipeline-schedule", "dualpipe")
    assert rc == 2
    assert err.count("error:") == 1
    assert ("error: --pipeline-schedule dualpipe: workload.jobs.0.pipeline_schedule: got "
            "'dualpipe'; expected an even number of micro-batches >= 2 pp = 4 for dualpipe, got 15"
            in err)
    errs.append(err)
    rc, _, err = _step(capsys, two_jobs, "--job", "blocker", "--pipeline-schedule", "dualpipe")
    assert rc == 2
    assert ("--pipeline-schedule dualpipe: workload.jobs.0.pipeline_schedule: got 'dualpipe'; "
            "expected an even pp for dualpipe" in err and "got pp = 1" in err)
    errs.append(err)
    rc, _, err = _step(capsys, moe_dp, "--pipeline-schedule", "interleaved")
    assert rc == 2
    assert "workload.jobs.0.pipeline_schedule: got 'interleaved'; expected vpp > 1" in err
    errs.append(err)
    for err in errs:
        for fields in ("parallelism.", "training.", ":mixtral_dp", ":blocker"):
            assert fields not in err


def test_json_names_the_schedule_the_job_runs(moe_dp, capsys):
    """null is what vpp implies; the job's own DualPipe runs at its size."""
    rc, own, _ = _step(capsys, moe_dp)
    assert rc == 0 and own["pipeline_schedule"] == "dualpipe"
    rc, null, _ = _step(capsys, moe_dp, "--set", "workload.jobs.0.pipeline_schedule=null")
    assert rc == 0 and null["pipeline_schedule"] == "1f1b"
    rc, inter, _ = _step(capsys, moe_dp, "--set", "workload.jobs.0.pipeline_schedule=null",
                         "--set", "workload.jobs.0.vpp=2")
    assert rc == 0 and inter["pipeline_schedule"] == "interleaved"


@pytest.mark.parametrize("field", ["recompute_norms_mla_up", "fp8_cached_linear_inputs"])
@pytest.mark.parametrize("value", ["1", "0", "0.0", "1.0"])
def test_scenario_memory_options_are_strict_booleans(moe_dp, field, value):
    """Defect 3: 1 and 0.0 were read as true and false."""
    path = f"workload.jobs.0.{field}"
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(moe_dp, [f"{path}={value}"])
    assert [p.path for p in exc.value.problems] == [path]
    assert "valid boolean" in str(exc.value)


def test_scenario_memory_options_take_true_and_false(moe_dp):
    s = twin.load_scenario(moe_dp, ["workload.jobs.0.recompute_norms_mla_up=true"])
    assert s.workload.jobs[0].recompute_norms_mla_up is True
    s = twin.load_scenario(moe_dp, ["workload.jobs.0.fp8_cached_linear_inputs=false"])
    assert s.workload.jobs[0].fp8_cached_linear_inputs is False
