"""The estimate file and ``twin estimate`` (exit codes, JSON, overrides, bad input)."""

import json
from pathlib import Path

import pytest
from reference_scripts import reference_script

from twin.cli.estimate import run_estimate_cli
from twin.compute.estimate_file import (
    EstimateFileError,
    estimate_from_file,
    load_estimate,
    memory_from_file,
)

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


#: shipped files with no published measurement (scenarios/estimates/README.md says why)
WITHOUT_REFERENCE = {"deepseek_v2_lite_bf16_16gpu"}
#: shipped files the twin misses by more than the tolerance, a documented miss pinned instead
#: (docs/validation.md): Llama 3 405B on 16,384 GPUs with the pipeline the paper describes
#: (vpp 8, E|(t|)*126,L since HU4; the assumed vpp 4 even split gave +3.0 %), MFU 49.8 %
#: against 41 %, +21.4 % (49.2 %, +20.1 % until HIR replayed the interleaved bubble: 0.480 ->
#: 0.417 s, the one-chunk ends crossed by the fill and the drain; tests/compute/test_step.py
#: pins the 8,192 and 16,384 points)
KNOWN_MISS = {"llama3_405b_bf16_16k_roce": 0.214}


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios/estimates").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_every_shipped_estimate_matches_its_reference(path):
    est = load_estimate(path)
    r = estimate_from_file(est)
    ref = est.reference
    if path.stem in WITHOUT_REFERENCE:      # a layout of the twin's, said so in its header
        assert ref is None and "no reference" in path.read_text()
        return
    assert ref is not None and ref.source
    tol = 0.05 if path.stem == "llama31_70b_bf16_64gpu" else 0.12
    if path.stem in KNOWN_MISS:
        assert ref.mfu and r.mfu / ref.mfu - 1 == pytest.approx(KNOWN_MISS[path.stem], abs=0.005)
        return
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
    # the stream's training classes are listed (audit polish 13f, 5d9cff0)
    assert "is not one of them" in (err := capsys.readouterr().err) and "pretrain, finetune, ablation" in err


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


def test_context_parallel_kv_in_the_cli_memory_report(capsys):
    # the calibration file: Llama 3.1 70B (h_kv 1024), tp 4, cp 2, b 1, s 8192:
    # 16 x 1024/4 x 4096 B = 16 MiB = 0.015625 GiB (test_memory.py states the formula)
    assert run_estimate_cli(["step", str(FILE), "--json"]) == 0
    mem = json.loads(capsys.readouterr().out)["memory_gib"]
    assert mem["cp_kv"] == 16 / 1024
    assert run_estimate_cli(["step", str(FILE), "--json", "--set", "parallelism.cp=1"]) == 0
    assert json.loads(capsys.readouterr().out)["memory_gib"]["cp_kv"] == 0.0


@pytest.mark.parametrize("stem,total,ratio", [
    # HU4: Nemotron 92.3 -> 92.4 GiB (1.154x -> 1.155x), its interleaved first stage's embedding
    # output at chunk 0's own peak; the margin refitted on it 0.134 -> 0.135 (limit 92.4 -> 92.5)
    ("nemotron4_340b_bf16_128gpu", "92.4", "1.155x"),
    # HU4: the paper's layout at vpp 8 (stage 2 the heaviest) 85.6 -> 83.6 GiB, 1.070x -> 1.045x
    ("llama3_405b_bf16_16k_roce", "83.6", "1.045x")])
def test_estimates_above_the_gpu_are_accepted_with_a_memory_note(stem, total, ratio, capsys):
    path = ROOT / "scenarios/estimates" / f"{stem}.yaml"
    assert run_estimate_cli(["step", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert f"{out['memory_gib']['total']:.1f}" == total and out["gpu_memory_gib"] == 80
    note = out["memory_note"]
    expect = (f"the estimate, {total} GiB per GPU, is above the GPU's 80 GiB ({ratio}) but "
              "within the memory model's margin, so it is accepted: MEMORY_MODEL_MARGIN = "
              "0.135 is fitted so that no configuration published as running is refused (they "
              "estimate up to 1.156x their GPU's memory), and only estimates above 92.5 GiB "
              "are refused; this layout may not fit")
    assert note == expect
    assert run_estimate_cli(["step", str(path)]) == 0
    assert f"  memory note: {expect}\n" in capsys.readouterr().out


def test_estimates_that_fit_have_no_memory_note(capsys):
    assert run_estimate_cli(["step", str(FILE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["memory_gib"]["total"] < 80 and out["memory_note"] is None
    assert run_estimate_cli(["step", str(FILE)]) == 0
    assert "memory note" not in capsys.readouterr().out


BLUE_VELA = ROOT / "scenarios/blue_vela.yaml"   # 256 delivered xe9680_h100 nodes
VELA = ROOT / "scenarios/vela.yaml"             # 128 delivered vela_a100 nodes, a CLOS


@pytest.mark.parametrize("argv,message", [
    (["collective", "--op", "allreduce", "--bytes", "1e9", "--nodes", "10000",
      "--cluster", str(BLUE_VELA)],
     f"error: twin estimate collective: --nodes 10000: expected at most the 256 nodes that "
     f"{BLUE_VELA} delivers (--cluster)\n"),
    (["collective", "--op", "allreduce", "--bytes", "1e9", "--nodes", "257",
      "--cluster", str(BLUE_VELA)],
     f"error: twin estimate collective: --nodes 257: expected at most the 256 nodes that "
     f"{BLUE_VELA} delivers (--cluster)\n"),
    (["collective", "--op", "allreduce", "--bytes", "1e9", "--nodes", "129",
      "--cluster", str(VELA)],
     f"error: twin estimate collective: --nodes 129: expected at most the 128 nodes that "
     f"{VELA} delivers (--cluster)\n"),
    (["step", str(FILE), "--cluster", str(BLUE_VELA), "--set", "cluster.gpus=16384"],
     f"error: llama31_70b_bf16_64gpu: cluster.gpus = 16384 needs 2048 nodes of 8 GPUs: "
     f"expected at most the 256 nodes that {BLUE_VELA} delivers (--cluster)\n"),
    (["step", str(FILE), "--cluster", str(VELA), "--set", "cluster.gpus=65536"],
     f"error: llama31_70b_bf16_64gpu: cluster.gpus = 65536 needs 8192 nodes of 8 GPUs: "
     f"expected at most the 128 nodes that {VELA} delivers (--cluster)\n"),
])
def test_cluster_scenario_bounds_the_node_count(argv, message, capsys):
    assert run_estimate_cli(argv) == 2
    assert capsys.readouterr().err == message


def test_cluster_scenario_accepts_its_own_size(capsys):
    assert run_estimate_cli(["collective", "--op", "allreduce", "--bytes", "1e9", "--nodes",
                             "256", "--cluster", str(BLUE_VELA), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == 256
    # 2,048 GPUs = all 256 nodes; the 70B layout's global batch kept a multiple of dp
    assert run_estimate_cli(["step", str(FILE), "--cluster", str(BLUE_VELA), "--set",
                             "cluster.gpus=2048", "--set", "training.global_batch=1024",
                             "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step_time_s"] > 0
    # a scenario's own job is bounded by the scenario loader (nodes + hot_spares)
    assert run_estimate_cli(["step", str(ROOT / "scenarios/blue_vela_fixed.yaml"), "--set",
                             "workload.jobs.0.nodes=10000"]) == 2
    assert "at most the 256 delivered nodes" in capsys.readouterr().err


@pytest.mark.parametrize("size", ["0.5", "0.999", "0", "-5", "nan", "inf", "1e-3"])
def test_collective_below_one_byte_exits_2(size, capsys):
    assert run_estimate_cli(["collective", "--op", "allreduce", "--bytes", size,
                             "--nodes", "2"]) == 2
    assert capsys.readouterr().err == (f"error: twin estimate: argument --bytes: expected a "
                                       f"size of at least 1 B, got {size!r}\n")


def test_collective_of_one_byte_runs(capsys):
    assert run_estimate_cli(["collective", "--op", "allreduce", "--bytes", "1",
                             "--nodes", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bytes"] == 1.0


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        run_estimate_cli([*argv, "--help"])
    assert exc.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines


def test_collective_help_documents_every_option(capsys):
    text = _help(["collective"], capsys)
    assert ("--op {allreduce,reduce_scatter,all_gather,all_to_all} collective operation "
            "(nccl-tests' all_reduce_perf,") in text
    assert "bus bandwidth = algorithm bandwidth x 2(n-1)/n for allreduce" in text
    assert "--bytes N buffer size [B], at least 1" in text
    assert "--nodes K nodes the collective spans [nodes]; with --cluster at most the nodes " \
           "the scenario delivers" in text
    assert "--gpus-per-node G GPUs per node taking part [GPUs]" in text
    from twin.cli.estimate import _parser
    sub = next(a for a in _parser()._actions if a.dest == "what")
    for name in ("step", "collective", "fabric-study"):
        for action in sub.choices[name]._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_step_help_names_the_memory_report_and_the_refusal(capsys):
    text = _help(["step"], capsys)
    assert "memory per GPU [GiB] on the most loaded pipeline stage" in text
    # HU4: the margin refitted 13.4 -> 13.5 % (limit 92.4 -> 92.5 GiB)
    assert "within the memory model's 13.5 % margin (up to 92.5 GiB on an 80 GiB GPU) is " \
           "accepted with a memory note (JSON: memory_note)" in text
    assert "the job does not fit and the command exits 2 naming the capacity and the " \
           "breakdown" in text


MIXTRAL = ROOT / "scenarios/estimates/mixtral_8x22b_bf16_128gpu.yaml"


def test_mixtral_8x22b_with_expert_tensor_parallel_1(capsys):
    # Megatron-core's model-zoo layout (TP2 PP8 VPP7 EP8 ETP1, 128 H100): HU's twin figure
    # (assets/reference/step_times_moe2.py, e43eda3) is 4.186 s (4.189 s before the H100
    # table's refit of 2026-12-01); the file gives it through
    # the estimate-file path (fabric built for 16 nodes, kernel table h100_sxm)
    assert run_estimate_cli(["step", str(MIXTRAL), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step_time_s"] == pytest.approx(4.186, rel=0.005)
    # the run ran on 80 GB GPUs: accepted without a note (64.79 GiB, test_memory.py by hand;
    # HU4: 64.62 -> 64.79, the embedding output at chunk 0's own peak of 16 micro-batches)
    assert out["memory_gib"]["total"] == pytest.approx(69_565_967_360 / 2**30, rel=1e-12)
    assert out["memory_note"] is None and out["gpu_memory_gib"] == 80
    # the reference is the forced-balance row, 465 TFLOP/s -> 4.2668 s: the twin -1.9 %
    assert out["step_time_s"] / out["reference"]["step_time_s"] - 1 == pytest.approx(-0.019,
                                                                                       abs=0.001)


def test_expert_tensor_parallel_through_set(capsys):
    def run(*sets):
        argv = ["step", str(MIXTRAL), "--json"]
        for s in sets:
            argv += ["--set", s]
        assert run_estimate_cli(argv) == 0
        return json.loads(capsys.readouterr().out)

    folded = run()
    # etp = tp (cp 1) is the former layout bit for bit, step and memory
    split, legacy = run("parallelism.moe_expert_tp=2"), run("parallelism.moe_expert_tp=null")
    assert split["step_time_s"] == legacy["step_time_s"]
    assert split["breakdown"] == legacy["breakdown"] and split["memory_gib"] == legacy["memory_gib"]
    # the legacy order strides EP by TP over two nodes: +16.5 % (HU: +9.5..+15.6 % against
    # the measured rows); whole experts hold 5.9 GiB more weights and gradients a GPU and
    # 2.95 GiB fewer dispatched expert inputs (their own shard's routed copies)
    assert legacy["step_time_s"] / folded["step_time_s"] - 1 == pytest.approx(0.165, abs=0.002)
    assert folded["breakdown"]["moe_a2a_exposed"] < 0.25 * legacy["breakdown"]["moe_a2a_exposed"]
    assert folded["memory_gib"]["total"] - legacy["memory_gib"]["total"] == pytest.approx(
        5.906 - 2.953, abs=1e-3)
    # folded, EP may take tensor-parallel ranks: 64 GPUs leave dp cp = 4 < ep = 8 ranks,
    # which only the legacy layout refuses
    assert run("cluster.gpus=64")["step_time_s"] > folded["step_time_s"]


@pytest.mark.parametrize("sets,message", [
    (["parallelism.moe_expert_tp=4"],
     "error: mixtral_8x22b_bf16_128gpu: parallelism.moe_expert_tp = 4 must be 1 or "
     "parallelism.tp = 2\n"),
    # Megatron-core: world size a multiple of etp x ep x pp (32 GPUs: tp cp dp = 4)
    (["cluster.gpus=32"],
     "error: mixtral_8x22b_bf16_128gpu: parallelism.moe_expert_tp x ep = 8 does not divide "
     "the tensor x context x data parallel ranks (4)\n"),
    (["cluster.gpus=64", "parallelism.moe_expert_tp=null"],
     "error: mixtral_8x22b_bf16_128gpu: parallelism.ep = 8 does not divide the data x "
     "context parallel ranks (4)\n"),
    (["parallelism.moe_expert_tp=0"],
     f"error: {MIXTRAL}: parallelism.moe_expert_tp = 0: Input should be greater than or "
     "equal to 1\n"),
    (["parallelism.moe_expert_tp=true"],
     f"error: {MIXTRAL}: parallelism.moe_expert_tp = True: Input should be a valid integer\n"),
])
def test_bad_expert_tensor_parallel_exits_2_naming_the_field(sets, message, capsys):
    argv = ["step", str(MIXTRAL)]
    for s in sets:
        argv += ["--set", s]
    assert run_estimate_cli(argv) == 2
    assert capsys.readouterr().err == message


def test_expert_tensor_parallel_needs_experts(capsys):
    assert run_estimate_cli(["step", str(FILE), "--set", "parallelism.moe_expert_tp=1"]) == 2
    assert capsys.readouterr().err == ("error: llama31_70b_bf16_64gpu: parallelism.moe_expert_tp "
                                       "= 1 needs a mixture of experts (model.experts > 0)\n")


def test_deepseek_v3_file_is_the_held_out_point():
    # the shipped estimate file and assets/reference/step_times_deepseek.py reach the same
    # figures by two routes (the file's fields through estimate_file, the script's keywords
    # straight into step_estimate and memory_per_gpu_bytes): step and memory bit for bit
    ds = reference_script("step_times_deepseek")
    from twin.compute import step_estimate
    from twin.compute.memory import GIB, memory_per_gpu_bytes
    (row,) = [r for r in ds.rows() if r["model"] == "deepseek_v3"]
    est = load_estimate(ROOT / "scenarios/estimates/deepseek_v3_fp8_2048gpu.yaml")
    r = estimate_from_file(est)
    assert r.step_time_s == step_estimate(**ds.kwargs(row)).step_time_s
    assert r.step_time_s / ds.measured_step_s(row) - 1 == pytest.approx(0.117, abs=0.001)
    assert est.reference.step_time_s == pytest.approx(ds.measured_step_s(row), abs=5e-4)
    mem = memory_per_gpu_bytes(**ds.memory_kwargs(row, savings=True, mtp=True))
    fm = memory_from_file(est)
    assert fm.total == pytest.approx(mem.total, rel=1e-12)
    assert fm.stage == mem.stage == "stages 1+16"
    assert fm.total / GIB == pytest.approx(91.004, abs=0.001)


# --- HFIX: the schedule that ran in --json, the vpp hint of --pipeline-schedule, and the
# DeepSeek-V3 memory options as strict booleans (HPLAN defects 3-5) ---------------------------

DSV3 = ROOT / "scenarios/estimates/deepseek_v3_fp8_2048gpu.yaml"
MIXTRAL_8X22B = ROOT / "scenarios/estimates/mixtral_8x22b_bf16_128gpu.yaml"


@pytest.mark.parametrize("argv, schedule", [
    ([str(FILE)], "interleaved"),                              # vpp 5, no schedule: vpp's
    ([str(FILE), "--set", "parallelism.vpp=1"], "1f1b"),
    ([str(MIXTRAL_8X22B), "--set", "parallelism.vpp=1", "--pipeline-schedule", "dualpipe"],
     "dualpipe"),
    ([str(DSV3)], "dualpipe"),                                 # the file's own
])
def test_step_json_names_the_pipeline_schedule_that_ran(argv, schedule, capsys):
    assert run_estimate_cli(["step", *argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pipeline_schedule"] == schedule
    assert ("comm_sm_reserved" in out["breakdown"]) == (schedule == "dualpipe")


@pytest.mark.parametrize("flag", ["1f1b", "dualpipe"])
def test_schedule_flag_on_an_interleaved_file_says_to_set_vpp(flag, capsys):
    """Every shipped file with vpp > 1 exits 2 under --pipeline-schedule 1f1b / dualpipe; the
    line says which --set goes with the flag, and the help says so too."""
    assert run_estimate_cli(["step", str(MIXTRAL_8X22B), "--pipeline-schedule", flag]) == 2
    err = capsys.readouterr().err
    assert (f"parallelism.pipeline_schedule = {flag} needs parallelism.vpp = 1, got 7 "
            f"(--pipeline-schedule {flag}: add --set parallelism.vpp=1)") in err
    assert run_estimate_cli(["step", str(MIXTRAL_8X22B), "--pipeline-schedule", flag,
                             "--set", "parallelism.vpp=1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pipeline_schedule"] == flag


def test_schedule_flag_interleaved_on_a_vpp_1_file_says_to_set_vpp(capsys):
    assert run_estimate_cli(["step", str(DSV3), "--pipeline-schedule", "interleaved"]) == 2
    assert ("needs parallelism.vpp > 1 (--pipeline-schedule interleaved: add --set "
            "parallelism.vpp=N" in capsys.readouterr().err)


def test_schedule_flag_help_names_the_vpp_set(capsys):
    with pytest.raises(SystemExit):
        run_estimate_cli(["step", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "add --set parallelism.vpp=1" in text
    assert "workload.jobs.N.pipeline_schedule" in text


@pytest.mark.parametrize("field", ["recompute_norms_mla_up", "fp8_cached_linear_inputs"])
@pytest.mark.parametrize("value", ["1", "0", "0.0", "1.0"])
def test_memory_options_are_strict_booleans(field, value, capsys):
    """1 was read as true and 0.0 as false (HPLAN defect 3); wrong types exit 2 naming the
    field."""
    with pytest.raises(EstimateFileError, match=f"training.{field} = {value}: .*valid boolean"):
        load_estimate(DSV3, [f"training.{field}={value}"])
    assert run_estimate_cli(["step", str(DSV3), "--set", f"training.{field}={value}"]) == 2
    assert f"training.{field} = {value}" in capsys.readouterr().err


def test_memory_options_take_yaml_booleans():
    for value, want in (("true", True), ("false", False)):
        est = load_estimate(DSV3, [f"training.recompute_norms_mla_up={value}",
                                   f"training.fp8_cached_linear_inputs={value}"])
        assert est.training.recompute_norms_mla_up is want
        assert est.training.fp8_cached_linear_inputs is want
