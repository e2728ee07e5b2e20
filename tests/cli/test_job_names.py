"""`--job NAME` that names no job a per-job command can model (audit polish item 13f): the
message lists the valid names from where they come (fixed jobs, or a stream's training
classes) and says why evaluation/debug are refused; an estimate file refuses --job."""

from pathlib import Path

import pytest

from twin.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
BV = str(ROOT / "scenarios" / "blue_vela.yaml")       # a stream: training classes only
BVF = str(ROOT / "scenarios" / "blue_vela_fixed.yaml")   # three fixed jobs
EST = str(ROOT / "scenarios" / "estimates" / "llama31_70b_bf16_64gpu.yaml")


@pytest.mark.parametrize("cmd", [["capacity", BV, "--no-swing"], ["estimate", "step", BV]])
def test_stream_scenario_lists_its_training_classes(cmd, capsys):
    assert main([*cmd, "--job", "nope"]) == 2
    err = capsys.readouterr().err
    assert "workload.jobs has no job" not in err        # the scenario has a stream, not jobs
    assert "the jobs of workload.stream are its training classes (pretrain, finetune, ablation)" in err
    assert "'nope' is not one of them" in err
    assert "train no tokens" not in err                 # nope is no class at all


@pytest.mark.parametrize("cmd", [["capacity", BV, "--no-swing"], ["estimate", "step", BV]])
@pytest.mark.parametrize("name", ["evaluation", "debug"])
def test_non_training_class_is_refused_with_the_reason(cmd, name, capsys):
    assert main([*cmd, "--job", name]) == 2
    err = capsys.readouterr().err
    assert "(pretrain, finetune, ablation)" in err
    assert f"{name} jobs use GPUs and power but train no tokens" in err


@pytest.mark.parametrize("cmd", [["capacity", BVF, "--no-swing"], ["estimate", "step", BVF]])
def test_fixed_jobs_are_listed(cmd, capsys):
    assert main([*cmd, "--job", "nope"]) == 2
    assert ("workload.jobs has no job 'nope' (jobs: granite_34b, granite_20b, granite_8b_ablation)"
            in capsys.readouterr().err)


def test_estimate_file_refuses_job_rather_than_ignoring_it(capsys):
    """`twin estimate step FILE --cluster SCENARIO --job X` estimated FILE's own job and
    ignored X (exit 0)."""
    assert main(["estimate", "step", EST, "--cluster", BV, "--job", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--job nope:" in err and "is an estimate file, which describes one job" in err
    assert "gives the cluster only" in err
