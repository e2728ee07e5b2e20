"""The estimate file and ``twin estimate`` (exit codes, JSON, overrides, bad input)."""

import json
from pathlib import Path

import pytest

from twin.cli.estimate import run_estimate_cli
from twin.compute.estimate_file import EstimateFileError, estimate_from_file, load_estimate

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "scenarios/estimates/llama31_70b_bf16_64gpu.yaml"


def test_shipped_estimate_reproduces_its_reference():
    est = load_estimate(FILE)
    r = estimate_from_file(est)
    ref = est.reference
    assert r.step_time_s == pytest.approx(ref.step_time_s, rel=0.05)
    assert r.mfu == pytest.approx(ref.mfu, rel=0.05)
    assert r.tokens_per_s_per_gpu == pytest.approx(ref.tokens_per_s_per_gpu, rel=0.05)


def test_step_json(capsys):
    assert run_estimate_cli(["step", str(FILE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("step_time_s", "mfu", "tokens_per_s_per_gpu", "tokens_per_day", "breakdown"):
        assert key in out
    assert sum(out["breakdown"].values()) == pytest.approx(out["step_time_s"])


def test_set_overrides_every_field(capsys):
    run_estimate_cli(["step", str(FILE), "--json"])
    base = json.loads(capsys.readouterr().out)
    assert run_estimate_cli(["step", str(FILE), "--json", "--set", "cluster.gpus=128",
                             "--set", "training.global_batch=256"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert two["tokens_per_day"] == pytest.approx(2 * base["tokens_per_day"], rel=0.05)
    assert run_estimate_cli(["step", str(FILE), "--json", "--set",
                             "cluster.fabric.transport=tcp", "--set", "cluster.gpus=2048",
                             "--set", "training.global_batch=4096"]) == 0
    tcp = json.loads(capsys.readouterr().out)
    assert tcp["step_time_s"] > base["step_time_s"]


def test_text_output(capsys):
    assert run_estimate_cli(["step", str(FILE)]) == 0
    out = capsys.readouterr().out
    assert "step_time_s" in out and "breakdown" in out


def test_collective(capsys):
    assert run_estimate_cli(["collective", "--op", "allreduce", "--bytes", "8589934592",
                             "--nodes", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["busbw_gb_s"] == pytest.approx(480.2, rel=0.10)  # calibration.yaml
    assert out["algbw_gb_s"] * 1.75 == pytest.approx(out["busbw_gb_s"])
    assert run_estimate_cli(["collective", "--op", "all_to_all", "--bytes", "1e6",
                             "--nodes", "4", "--gpus-per-node", "4"]) == 0
    assert "busbw_gb_s" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    [],
    ["step"],
    ["step", "missing.yaml"],
    ["step", str(FILE), "--set", "model.layerz=3"],
    ["step", str(FILE), "--set", "training.seq_len=-1"],
    ["step", str(FILE), "--set", "cluster.gpus=100"],
    ["step", str(FILE), "--set", "nonsense"],
    ["step", str(FILE), "--cluster", "no/such/scenario.yaml"],
    ["collective", "--op", "broadcast", "--bytes", "1", "--nodes", "1"],
    ["collective", "--op", "allreduce", "--bytes", "-5", "--nodes", "1"],
    ["collective", "--op", "allreduce", "--bytes", "1e6", "--nodes", "zero"],
    ["collective", "--op", "allreduce", "--bytes", "1e6", "--nodes", "1", "--gpus-per-node", "1"],
])
def test_bad_input_exits_2_with_a_message(argv, capsys):
    assert run_estimate_cli(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "Traceback" not in err


def test_bad_yaml_and_missing_fields(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nmodel: [1, 2\n")
    assert run_estimate_cli(["step", str(p)]) == 2
    p.write_text("name: x\nmodel: {layers: 2}\n")
    with pytest.raises(EstimateFileError) as exc:
        load_estimate(p)
    text = "\n".join(exc.value.problems)
    assert "model.hidden" in text and "training" in text and "cluster" in text


def test_cluster_from_scenario(capsys):
    scen = ROOT / "scenarios/blue_vela.yaml"
    if not scen.exists():
        pytest.skip("no Blue Vela scenario")
    rc = run_estimate_cli(["collective", "--op", "allreduce", "--bytes", "1e9", "--nodes", "4",
                           "--cluster", str(scen), "--json"])
    out = capsys.readouterr()
    if rc == 2:
        pytest.skip(f"scenario not loadable here: {out.err}")
    assert json.loads(out.out)["transport"] == "ib_rdma"


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios/estimates").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_shipped_estimate_matches_its_reference(path):
    est = load_estimate(path)
    r = estimate_from_file(est)
    ref = est.reference
    assert ref is not None and ref.source
    tol = 0.05 if path.stem == "llama31_70b_bf16_64gpu" else 0.12
    if ref.step_time_s:
        assert r.step_time_s == pytest.approx(ref.step_time_s, rel=tol)
    if ref.mfu and ref.step_time_s is None:
        assert r.mfu == pytest.approx(ref.mfu, rel=tol)


def test_step_on_a_scenario(capsys):
    scen = ROOT / "scenarios/blue_vela.yaml"
    if not scen.exists():
        pytest.skip("no Blue Vela scenario")
    rc = run_estimate_cli(["step", str(scen), "--json"])
    out = capsys.readouterr()
    if rc == 2:
        pytest.skip(f"scenario not loadable here: {out.err}")
    first = json.loads(out.out)
    assert first["name"].startswith("blue_vela:") and first["step_time_s"] > 0
    # a power cap lowers the clock, so the step takes longer
    assert run_estimate_cli(["step", str(scen), "--json", "--set",
                             "hardware.gpu_power_cap_w=400"]) == 0
    capped = json.loads(capsys.readouterr().out)
    assert capped["step_time_s"] > first["step_time_s"]
    assert run_estimate_cli(["step", str(scen), "--job", "no_such_job"]) == 2
    assert "no job" in capsys.readouterr().err


def test_step_reports_memory_and_refuses_a_job_that_does_not_fit(capsys):
    assert run_estimate_cli(["step", str(FILE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    mem = out["memory_gib"]
    parts = ("weights", "gradients", "optimizer", "activations", "cp_kv", "logits", "buffers")
    assert mem["total"] == pytest.approx(sum(mem[k] for k in parts))
    assert 30 < mem["total"] < out["gpu_memory_gib"] == 80
    # Llama 3.1 70B with TP1 PP1 on 8 GPUs: 141 GB of bf16 weights alone
    assert run_estimate_cli(["step", str(FILE), "--set", "parallelism.tp=1", "--set",
                             "parallelism.pp=1", "--set", "parallelism.cp=1", "--set",
                             "parallelism.vpp=1", "--set", "cluster.gpus=8"]) == 2
    err = capsys.readouterr().err
    assert "80 GiB" in err and "weights 131" in err and "cluster.gpu.memory_gb" in err
    assert "Traceback" not in err


def test_recompute_choices_are_one_list():
    # the estimate file's schema, the step model and the memory model accept the same
    # recompute choices: twin.compute.specs.RECOMPUTE_CHOICES
    from typing import get_args

    from twin.compute import step_estimate
    from twin.compute.estimate_file import Training
    from twin.compute.memory import memory_per_gpu_bytes
    from twin.compute.specs import RECOMPUTE_CHOICES

    assert get_args(Training.model_fields["activation_recompute"].annotation) == RECOMPUTE_CHOICES
    shape = dict(layers=32, hidden=4096, ffn_hidden=14336, heads=32, kv_heads=8, vocab=128256,
                 seq_len=8192, micro_batch=1)
    step = dict(shape, global_batch=8, tp=1, pp=1, cp=1, vpp=1, gpus=8, gpus_per_node=8,
                peak_tflops=989.0, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
                inter_node_gbps=3200.0)
    for choice in RECOMPUTE_CHOICES:  # every choice runs in both models
        assert step_estimate(**step, activation_recompute=choice).step_time_s > 0
        assert memory_per_gpu_bytes(**shape, activation_recompute=choice).total > 0
    with pytest.raises(ValueError, match="save_qkv_proj"):
        step_estimate(**step, activation_recompute="attention_only")
    with pytest.raises(ValueError, match="save_qkv_proj"):
        memory_per_gpu_bytes(**shape, activation_recompute="attention_only")
