"""Mixture of experts (expert all-to-all) and FSDP/ZeRO-3: public step times, physics,
and exit-2 errors for impossible layouts."""

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from twin.cli.estimate import run_estimate_cli
from twin.compute import step_estimate
from twin.compute.collectives import collective_bandwidths_gb_s
from twin.compute.shapes import MODEL_SHAPES, MOE_SHAPES
from twin.compute.step import (
    FSDP_WHOLE_GEMM_EFFICIENCY,
    H100_SXM,
    H100_SXM_XLA,
    KERNEL_EFFICIENCY,
    MOE_DROPLESS_BUSIEST_LOAD,
)

ROOT = Path(__file__).resolve().parents[2]
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
            inter_node_gbps=3200.0)
GROK_FILE = ROOT / "scenarios/estimates/grok1_314b_bf16_512gpu.yaml"


def _rows():
    with open(ROOT / "assets/reference/step_times_h100_moe_fsdp.csv") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _estimate(r, **kw):
    prec = r["precision"]
    if r["model"].startswith("grok"):
        shape = dict(MOE_SHAPES["grok1_314b"])
        extra = dict(moe_experts=shape.pop("experts"), moe_top_k=shape.pop("top_k"),
                     moe_ep=int(r["ep"]))
        rec = "none"
    else:  # dgxc-benchmarking maxtext/configure.sh (8f5cbb3): POLICY="save_qkv_proj"
        shape = dict(MODEL_SHAPES["llama31_70b"])
        extra = dict(zero_stage=3, fsdp_shard=int(r["fsdp_shard"]),
                     kernel_efficiency=H100_SXM_XLA)
        rec = "save_qkv_proj"
    shape.update(layers=int(r["layers"]), seq_len=int(r["seq_len"]))
    rec = kw.pop("activation_recompute", rec)
    extra.update(kw)
    return step_estimate(**shape, gpus=int(r["gpus"]), global_batch=int(r["global_batch"]),
                         micro_batch=int(r["micro_batch"]), tp=int(r["tp"]), pp=int(r["pp"]),
                         cp=int(r["cp"]), vpp=int(r["vpp"]), precision=prec,
                         peak_tflops=989.0 if prec == "bf16" else 1979.0,
                         activation_recompute=rec, **{**H100, **extra})


def test_grok1_moe_step_times():
    # 14 NeMo step times of Grok-1 314B (8 experts, top-2, EP8) on 32..2,048 H100, BF16
    # and FP8; nothing was fitted on them
    rows = [r for r in _rows() if r["model"] == "grok1_314b"]
    err = np.array([_estimate(r).step_time_s / float(r["step_time_s"]) - 1 for r in rows])
    assert len(err) == 14
    # issue 16 goals for step times: mean <= 3 % (held: 2.6 %), worst <= 8 % (5.7 %)
    assert np.abs(err).mean() <= 0.03 and np.abs(err).max() <= 0.08, err
    # the expert all-to-alls are a real share of the step (EP8 ranks on 8 nodes)
    e = _estimate(rows[4])
    share = e.breakdown["moe_a2a_exposed"] / e.step_time_s
    assert 0.1 < share < 0.35
    # without them the estimate would be 15-25 % fast: they are not a rounding error
    fast = e.step_time_s - e.breakdown["moe_a2a_exposed"]
    assert fast / float(rows[4]["step_time_s"]) < 0.9


# MaxText kernel entry, rule set before the rows were run with it (HM3, 2026-12-01; nothing
# fitted on these rows): h100_sxm_xla = the NeMo H100 table with gemm =
# FSDP_WHOLE_GEMM_EFFICIENCY (0.7921, whole TP-1 GEMMs, fitted on PyTorch FSDP llm-foundry
# runs; XLA on GPU runs its dots through cuBLAS(Lt) too), gemm_fp8 scaled by the same
# whole/split ratio 0.7921 / 0.7020 (a GEMM-shape effect that acts on the FP8 tensor-core
# path alike; XLA's fused FP8 scaling stays unmodelled), attention unchanged (the recipe's
# cudnn_flash_te is the cuDNN / TE kernel the table is fitted on), XLA's overlapped FSDP
# collectives (fsdp_backward_overlap=True), no PyTorch-FSDP term.  Success: BF16 mean |error|
# <= 3 %, worst <= 8 %, weak scaling flat as measured; FP8 reported whatever it is; no other
# figure moves.  Else the entry is reverted.
def test_fsdp_maxtext_scaling_and_absolute_error():
    # 10 MaxText Llama 3 70B FSDP step times on 128..2,048 H100: FSDP gathers hide behind
    # each layer's compute, so the step stays flat from 128 to 2,048 GPUs (measured +2.1 %
    # BF16, +2.9 % FP8; twin +3.3 %, +3.2 %).  With h100_sxm_xla (rule above, held out) the
    # BF16 rows are +0.1..+2.4 % (mean 1.6 %); with the NeMo table's TP-split GEMMs (0.702)
    # they were +11..+14 %.  FP8 stays +18..+22 % slow (+29..+34 % before): what is left is
    # not the GEMM shape (XLA's fused FP8 scaling is not modelled, docs/validation.md)
    rows = [r for r in _rows() if r["model"] == "llama3_70b"]
    for prec, lo, hi in (("bf16", -0.01, 0.035), ("fp8", 0.16, 0.24)):
        sel = [r for r in rows if r["precision"] == prec]
        t = np.array([_estimate(r).step_time_s for r in sel])
        ref = np.array([float(r["step_time_s"]) for r in sel])
        assert np.all((t / ref - 1 > lo) & (t / ref - 1 < hi)), t / ref - 1
        if prec == "bf16":  # issue 16 goals for step times: mean <= 3 %, worst <= 8 %
            err = np.abs(t / ref - 1)
            assert err.mean() <= 0.03 and err.max() <= 0.08, err
        assert t[-1] / t[0] == pytest.approx(ref[-1] / ref[0], abs=0.03)
        assert all(_estimate(r).breakdown["dp_comm_exposed"] < 0.02 * ts
                   for r, ts in zip(sel, t, strict=True))


def test_maxtext_entry_is_the_h100_table_with_whole_gemms():
    # only the two GEMM efficiencies differ from the NeMo table (source is not compared);
    # 0.7921 until the refit after the step model took pp = 1 as the layout path does (HU3),
    # 0.7923 / 0.7020 until HIR's refit (the interleaved bubble replayed)
    assert H100_SXM_XLA.gemm == FSDP_WHOLE_GEMM_EFFICIENCY == 0.7945
    assert H100_SXM_XLA.gemm_fp8 / H100_SXM.gemm_fp8 == pytest.approx(0.7945 / 0.7041)
    assert replace(H100_SXM_XLA, gemm=H100_SXM.gemm, gemm_fp8=H100_SXM.gemm_fp8) == H100_SXM
    assert H100_SXM_XLA.fsdp_backward_overlap and KERNEL_EFFICIENCY["h100_sxm_xla"] is H100_SXM_XLA


def test_fsdp_gathers_show_when_the_network_is_slow():
    r = [r for r in _rows() if r["model"] == "llama3_70b"][0]
    fast = _estimate(r)
    slow = _estimate(r, inter_node_gbps=200.0)  # 2x 100 GbE per node
    assert slow.breakdown["dp_comm_exposed"] > 0.2 * fast.step_time_s
    # ZeRO-1 moves far fewer bytes per step than ZeRO-3 (no per-layer gathers)
    z1 = _estimate(r, inter_node_gbps=200.0, zero_stage=1, fsdp_shard=None)
    assert z1.step_time_s < slow.step_time_s


def test_all_to_all_inside_a_node_beats_across_nodes():
    shape = dict(MOE_SHAPES["mixtral_8x7b"])
    e_, k = shape.pop("experts"), shape.pop("top_k")
    kw = dict(shape, gpus=64, global_batch=256, micro_batch=1, tp=1, pp=1, cp=1, vpp=1,
              peak_tflops=989.0, moe_experts=e_, moe_top_k=k, moe_ep=8, **H100)
    inside = step_estimate(**kw)                  # EP ranks are a node's 8 GPUs (NVLink)
    across = step_estimate(**dict(kw, tp=2, global_batch=128))  # EP spans 2 nodes
    assert inside.breakdown["moe_a2a_exposed"] < across.breakdown["moe_a2a_exposed"]
    # top-k sets the expert work: top-1 does half the expert GEMMs of top-2
    one = step_estimate(**dict(kw, moe_top_k=1))
    assert one.breakdown["gemm"] < inside.breakdown["gemm"]
    assert one.step_time_s < inside.step_time_s
    # capacity factor pads work: 1.25 costs more GEMM time than 1.0
    padded = step_estimate(**dict(kw, moe_capacity_factor=1.25))
    assert padded.breakdown["gemm"] > inside.breakdown["gemm"]
    assert padded.mfu < inside.mfu  # padded work is not model FLOPs


def test_all_to_all_bus_bandwidth_is_one_nic_per_gpu_across_nodes():
    # NCCL maintainers (nccl-tests issue 267): "alltoall cannot aggregate the bandwidth of
    # multiple NICs": from many nodes on, each GPU gets its own NIC, ~50 GB/s on NDR
    bb = float(collective_bandwidths_gb_s("all_to_all", 2**30, 32, 8)["busbw_gb_s"])
    assert 40.0 < bb < 50.0


@pytest.mark.parametrize("override,expect", [
    (["--set", "model.top_k=9"], "model.top_k = 9 is more than model.experts = 8"),
    (["--set", "parallelism.ep=3"], "model.experts = 8 is not a multiple of parallelism.ep = 3"),
    (["--set", "model.experts=16", "--set", "parallelism.ep=16", "--set", "cluster.gpus=256",
      "--set", "training.global_batch=512"],
     "parallelism.ep = 16 does not divide the data x context parallel ranks (8)"),
    (["--set", "model.experts=-1"], "model.experts"),
    (["--set", "model.experts=0"], "parallelism.ep = 8 needs a mixture of experts"),
    (["--set", "cluster.gpus=0"], "cluster.gpus"),
    (["--set", "cluster.gpus=800000", "--set", "training.global_batch=1600000"],
     "fabric cannot hold"),
])
def test_bad_moe_and_layout_exit_2_naming_the_field(capsys, override, expect):
    assert run_estimate_cli(["step", str(GROK_FILE), *override]) == 2
    err = capsys.readouterr().err
    assert expect in err and "Traceback" not in err


@pytest.mark.parametrize("args,expect", [
    (["--bytes", "0", "--nodes", "2"], "--bytes"),
    (["--bytes", "-1e6", "--nodes", "2"], "--bytes"),
    (["--bytes", "1e9", "--nodes", "0"], "--nodes"),
    (["--bytes", "1e9", "--nodes", "100000"], "--nodes 100000"),
])
def test_bad_collective_input_exits_2(capsys, args, expect):
    assert run_estimate_cli(["collective", "--op", "all_to_all", *args]) == 2
    err = capsys.readouterr().err
    assert expect in err and "Traceback" not in err


def test_expert_tensor_parallelism_places_and_splits_the_experts():
    # Megatron-core's --expert-tensor-parallel-size (MoE parallel folding): expert groups are
    # drawn in the order ETP, EP, EDP over a stage's tp x cp x dp ranks
    shape = dict(MOE_SHAPES["mixtral_8x22b"])
    e_, k = shape.pop("experts"), shape.pop("top_k")
    kw = dict(shape, gpus=128, global_batch=256, micro_batch=1, tp=2, pp=8, cp=1, vpp=7,
              peak_tflops=989.0, moe_experts=e_, moe_top_k=k, moe_ep=8, **H100)
    legacy = step_estimate(**kw)
    # given as tp (cp = 1) it is the legacy layout bit for bit
    same = step_estimate(**dict(kw, moe_expert_tp=2))
    assert same.step_time_s == legacy.step_time_s and same.breakdown == legacy.breakdown
    folded = step_estimate(**dict(kw, moe_expert_tp=1))
    # EP8 on 8 adjacent ranks (one node, NVLink) instead of 8 ranks 2 apart (two nodes)
    assert folded.breakdown["moe_a2a_exposed"] < 0.25 * legacy.breakdown["moe_a2a_exposed"]
    # whole experts on T/tp tokens: the same expert FLOPs, so GEMM time within wave effects
    assert folded.breakdown["gemm"] == pytest.approx(legacy.breakdown["gemm"], rel=0.01)
    # no tensor-parallel collectives around the experts: less TP communication exposed
    assert folded.breakdown["tp_comm_exposed"] < legacy.breakdown["tp_comm_exposed"]
    # the same FLOPs: MFU differs only by the step
    assert folded.mfu * folded.step_time_s == pytest.approx(legacy.mfu * legacy.step_time_s)
    with pytest.raises(ValueError, match="moe_expert_tp=4 must be 1 or tp=2"):
        step_estimate(**dict(kw, moe_expert_tp=4))
    # 32 GPUs at PP8 leave tp x dp = 4 ranks a stage: EP8 cannot be folded into them
    with pytest.raises(ValueError, match="moe_expert_tp x moe_ep = 8 does not divide the "
                                         "tensor x context x data parallel ranks 4"):
        step_estimate(**dict(kw, gpus=32, moe_expert_tp=1))


def test_dropless_routing_loads_the_busiest_rank():
    # dropless routing (Megatron-core without --moe-expert-capacity-factor): the busiest EP
    # rank processes f times its even share of routed copies and the layer waits for it
    shape = dict(MOE_SHAPES["mixtral_8x7b"])
    e_, k = shape.pop("experts"), shape.pop("top_k")
    kw = dict(shape, gpus=64, global_batch=256, micro_batch=1, tp=1, pp=4, cp=1, vpp=8,
              peak_tflops=989.0, moe_experts=e_, moe_top_k=k, moe_ep=8, **H100)
    balanced = step_estimate(**kw)  # capacity routing at 1.0: every expert its exact share
    assert step_estimate(**dict(kw, moe_routing="capacity")).step_time_s == balanced.step_time_s
    f = 1.2
    drop = step_estimate(**dict(kw, moe_routing="dropless", moe_dropless_load=f))
    # the busiest rank's T top_k f copies are the load a capacity factor f pads to: the same
    # expert GEMMs, activation, permutation and all-to-all volume, bit for bit
    pad = step_estimate(**dict(kw, moe_capacity_factor=f))
    assert drop.step_time_s == pad.step_time_s and drop.breakdown == pad.breakdown
    # what scales: the expert side; what does not: attention, output layer, TP/CP traffic
    for part in ("gemm", "elementwise", "moe_a2a_exposed"):
        assert drop.breakdown[part] > balanced.breakdown[part], part
    for part in ("attention", "output_layer", "tp_comm_exposed", "cp_comm_exposed"):
        assert drop.breakdown[part] == balanced.breakdown[part], part
    # the expert GEMMs are ~93 % of this layer's GEMM time: +20 % load, +18.6 % GEMM time
    assert drop.breakdown["gemm"] / balanced.breakdown["gemm"] == pytest.approx(1.186, abs=0.01)
    # MFU counts model FLOPs: the imbalance costs time, not FLOPs
    assert drop.mfu * drop.step_time_s == pytest.approx(balanced.mfu * balanced.step_time_s)
    # unset, the load is the constant fitted on Megatron-core's 8x22B pair (465 / 445)
    fitted = step_estimate(**dict(kw, moe_routing="dropless"))
    assert fitted.step_time_s == step_estimate(
        **dict(kw, moe_capacity_factor=MOE_DROPLESS_BUSIEST_LOAD)).step_time_s
    # +4.2 % on this layout (Megatron-LM's Mixtral 8x7B mapping): more than the 3.4 % load,
    # because the busiest rank's expert GEMMs of N = h = 4,096 (16 tile columns of 256) go
    # from 8 to 9 waves of 132 SMs once M = 8,192 f passes 66 x 128 = 8,448 (f = 33/32)
    assert fitted.step_time_s / balanced.step_time_s == pytest.approx(1.042, abs=0.003)
    # a dense model ignores the routing
    dense = dict(MODEL_SHAPES["llama31_8b"], gpus=8, global_batch=8, micro_batch=1, tp=1, pp=1,
                 cp=1, vpp=1, peak_tflops=989.0, **H100)
    assert step_estimate(**dense).step_time_s == step_estimate(
        **dict(dense, moe_routing="dropless")).step_time_s
    for bad, msg in (({"moe_routing": "token_drop"}, "moe_routing must be one of"),
                     ({"moe_routing": "dropless", "moe_capacity_factor": 1.25},
                      "applies to capacity routing"),
                     ({"moe_routing": "dropless", "moe_dropless_load": 0.9},
                      "moe_dropless_load must be >= 1"),
                     ({"moe_dropless_load": 1.1}, "applies to moe_routing='dropless' only")):
        with pytest.raises(ValueError, match=msg):
            step_estimate(**dict(kw, **bad))


def test_grok1_recipe_is_capacity_routing():
    # dgxc-benchmarking grok1/grok1_314b.yaml at 35a9aec, lines 53-54:
    # moe_pad_expert_input_to_capacity: true, moe_expert_capacity_factor: 1.0 (configure.sh
    # overrides no MoE key): capacity routing, so the dropless term never acts on the Grok
    # rows, whose estimates use the default routing
    r = [r for r in _rows() if r["model"] == "grok1_314b"][4]
    assert _estimate(r).step_time_s == _estimate(r, moe_routing="capacity",
                                                 moe_capacity_factor=1.0).step_time_s
    assert _estimate(r, moe_routing="dropless").step_time_s > _estimate(r).step_time_s
