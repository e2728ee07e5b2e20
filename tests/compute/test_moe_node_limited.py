"""DeepSeek-V3's node-limited routing, FP8 dispatch and multi-token prediction (helper HNL):
hand-valued all-to-all sizes, MTP FLOPs and parameters, defaults unchanged, bad values refused.
Sources: arXiv 2412.19437 sec. 2.2 (MTP), 3.2.2 (node-limited dispatch), 3.3.4 (FP8 dispatch)."""

from __future__ import annotations

from math import comb
from pathlib import Path

import pytest

import twin.compute.step as step_mod
from twin.compute import step_estimate
from twin.compute.estimate_file import (
    EstimateFileError,
    estimate_from_file,
    job_specs,
    load_estimate,
)
from twin.compute.memory import memory_per_gpu_bytes
from twin.compute.step import moe_nodes_per_token, mtp_flops_per_sequence

ROOT = Path(__file__).resolve().parents[2]
MIXTRAL = ROOT / "scenarios" / "estimates" / "mixtral_8x22b_bf16_128gpu.yaml"
FP8_DISPATCH = 1.0 + 4.0 / 128.0  # FP8 with one fp32 scale per 1x128 tile

#: 4 nodes x 8 H100, one expert per GPU (EP 32, TP 1): 8 experts a node, top-4 routing
SMALL = dict(layers=2, hidden=1024, ffn_hidden=4096, heads=8, kv_heads=8, vocab=32000,
             seq_len=4096, global_batch=64, micro_batch=1, tp=1, pp=1, cp=1, vpp=1, gpus=32,
             gpus_per_node=8, peak_tflops=989.0, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0,
             nvls=True, inter_node_gbps=3200.0, moe_experts=32, moe_top_k=4, moe_ep=32)
T_H = 4096 * 1024  # tokens x hidden a rank and micro-batch (TP 1: no sequence split)


def _a2a_calls(monkeypatch, **kw) -> list[tuple[float, int, int]]:
    """(bytes a rank, nodes, ranks a node) of every all-to-all the step model times."""
    calls: list[tuple[float, int, int]] = []
    real = step_mod.group_collective_time_s

    def spy(op, nbytes, **ckw):
        if op == "all_to_all":
            calls.append((float(nbytes), ckw["nodes"], ckw["ranks_per_node"]))
        return real(op, nbytes, **ckw)
    monkeypatch.setattr(step_mod, "group_collective_time_s", spy)
    step_estimate(**dict(SMALL, **kw))
    return calls


def test_expected_nodes_per_token_by_hand():
    # 4 nodes of 8 experts, k 4, limit 2: a chosen node misses all 4 with C(8,4)/C(16,4) =
    # 70/1820 = 1/26, so D = 2 (1 - 1/26) = 25/13
    assert moe_nodes_per_token(experts=32, top_k=4, nodes=4, node_limit=2) == \
        pytest.approx(25.0 / 13.0, rel=1e-12)
    # DeepSeek-V3: 256 experts on 8 nodes, k 8, M 4: 4 (1 - C(96,8)/C(128,8))
    d = moe_nodes_per_token(experts=256, top_k=8, nodes=8, node_limit=4)
    assert d == pytest.approx(4.0 * (1.0 - comb(96, 8) / comb(128, 8)), rel=1e-12)
    assert d == pytest.approx(3.6290, abs=1e-4)
    # one expert a token always lands on one node; M = 1 is one node whatever k
    assert moe_nodes_per_token(experts=32, top_k=1, nodes=4, node_limit=4) == 1.0
    assert moe_nodes_per_token(experts=32, top_k=4, nodes=4, node_limit=1) == 1.0


def test_node_limited_dispatch_bytes_by_hand(monkeypatch):
    # today: 4 all-to-alls of k = 4 bf16 rows a token over 4 nodes x 8 ranks, (N-1)/N = 3/4
    # of them over IB: 3 rows of h a token leave the node
    base = _a2a_calls(monkeypatch)
    assert base == [(T_H * 4 * 2.0, 4, 8)]
    # node limit 2: the IB leg carries D = 25/13 rows a token (3/4 of them remote: 1.44 rows,
    # not 3), the NVLink leg the k = 4 copies inside the node; dispatch FP8, combine bf16
    calls = _a2a_calls(monkeypatch, moe_node_limit=2, moe_dispatch_bytes=FP8_DISPATCH)
    assert sorted(calls) == sorted([
        (T_H * (25.0 / 13.0) * FP8_DISPATCH, 4, 8), (T_H * 4 * FP8_DISPATCH, 1, 8),
        (T_H * (25.0 / 13.0) * 2.0, 4, 8), (T_H * 4 * 2.0, 1, 8)])
    # rows leaving a node a token: (N-1)/N D = 1.44 against (N-1)/N k = 3


def test_fp8_dispatch_without_node_limit(monkeypatch):
    calls = _a2a_calls(monkeypatch, moe_dispatch_bytes=FP8_DISPATCH)
    assert sorted(calls) == sorted([(T_H * 4 * 1.03125, 4, 8), (T_H * 4 * 2.0, 4, 8)])
    e0 = step_estimate(**SMALL)
    e1 = step_estimate(**SMALL, moe_dispatch_bytes=FP8_DISPATCH)
    # two of the four all-to-alls shrink: the exposed time falls, by less than half
    a0, a1 = e0.breakdown["moe_a2a_exposed"], e1.breakdown["moe_a2a_exposed"]
    assert 0.5 * a0 < a1 < 0.9 * a0


def test_node_limit_cuts_the_exposed_all_to_all():
    e0 = step_estimate(**SMALL)
    e1 = step_estimate(**SMALL, moe_node_limit=2)
    # IB-bound: 1.44 remote rows a token instead of 3 (0.48 of the bytes); the collective
    # model's latency and pipeline fill weigh more on the smaller message
    ratio = e1.breakdown["moe_a2a_exposed"] / e0.breakdown["moe_a2a_exposed"]
    assert 0.48 < ratio < 0.8
    # limit = all 4 nodes still sends once a node: D = 4 (1 - C(24,4)/C(32,4)) < k = 4
    e4 = step_estimate(**SMALL, moe_node_limit=4)
    assert e4.breakdown["moe_a2a_exposed"] < e0.breakdown["moe_a2a_exposed"]


def test_defaults_are_the_former_model():
    # the step model before these inputs existed (cd74870, 1 Dec 2026) gave SMALL this step and
    # exposed all-to-all, bit for bit; the defaults, spelled out or not, still do.  The step
    # moved since (HU3): pp = 1 counts the input embedding and the untied output layer in the
    # optimizer and the data-parallel sync (0.03531247409483296 -> 0.035325465139609075), then
    # the H100 refit that followed (rank jitter 0.0496 -> 0.0497, attention 0.6950 -> 0.6952),
    # then HIR's H100 refit (0.035328725110937285 -> 0.03532754553058834; SMALL has pp 1)
    e0 = step_estimate(**SMALL)
    assert e0.step_time_s == 0.03532754553058834
    assert e0.breakdown["moe_a2a_exposed"] == 0.016817111148936168
    for kw in (dict(moe_node_limit=None), dict(moe_node_limit=0), dict(moe_dispatch_bytes=2.0),
               dict(mtp_depth=0)):
        assert step_estimate(**SMALL, **kw).breakdown == e0.breakdown


def test_mtp_flops_by_hand():
    # a plain dense model: one more layer 12 h^2 (1 + kv/heads + s/h) + 18 F h a token, the
    # 2h x h projection 6 (2 h^2) and the output head 6 V h
    h, F, V, s = 1024, 4096, 32000, 4096
    per_tok = 12.0 * h * h * (1.0 + 1.0 + s / h) + 18.0 * F * h + 12.0 * h * h + 6.0 * V * h
    got = mtp_flops_per_sequence(layers=2, hidden=h, ffn_hidden=F, heads=8, kv_heads=8,
                                 vocab=V, seq_len=s)
    assert got == pytest.approx(s * per_tok, rel=1e-12)
    # 75,497,472 + 75,497,472 + 12,582,912 + 196,608,000 FLOPs a token
    assert got == pytest.approx(4096 * 360_185_856.0, rel=1e-12)


def test_mtp_step_adds_head_layer_and_flops():
    dense = {k: v for k, v in SMALL.items() if not k.startswith("moe_")}
    e0 = step_estimate(**dense)
    e1 = step_estimate(**dense, mtp_depth=1)
    # pp 1: the output layer and the embedding pass once more
    assert e1.breakdown["output_layer"] == pytest.approx(2.0 * e0.breakdown["output_layer"],
                                                         rel=1e-12)
    assert e1.breakdown["attention"] == pytest.approx(1.5 * e0.breakdown["attention"],
                                                      rel=1e-12)
    # MFU counts the MTP module's FLOPs: model FLOPs = mfu x step x peak x gpus
    f0 = e0.mfu * e0.step_time_s
    f1 = e1.mfu * e1.step_time_s
    base = step_mod.model_flops_per_sequence(layers=2, hidden=1024, ffn_hidden=4096, heads=8,
                                             kv_heads=8, vocab=32000, seq_len=4096)
    extra = mtp_flops_per_sequence(layers=2, hidden=1024, ffn_hidden=4096, heads=8, kv_heads=8,
                                   vocab=32000, seq_len=4096)
    assert f1 / f0 == pytest.approx((base + extra) / base, rel=1e-9)


def test_mtp_dualpipe_last_chunk_on_ranks_0_and_last():
    kw = dict(SMALL, layers=8, pp=2, gpus=64, global_batch=128, moe_ep=32,
              pipeline_schedule="dualpipe")
    e0 = step_estimate(**kw)
    e1 = step_estimate(**kw, mtp_depth=1)
    assert e1.step_time_s > e0.step_time_s
    assert e1.breakdown["output_layer"] > 1.9 * e0.breakdown["output_layer"]


def test_mtp_memory_parameters_by_hand():
    # dense, TP 1, DP 1, bf16 weights: the last stage gains one layer (4 h^2 MHA + 2h norms +
    # 3 h F) and the projection with its two norms (2 h^2 + 2h), 2 B each
    h, F = 1024, 4096
    kw = dict(layers=4, hidden=h, ffn_hidden=F, heads=8, kv_heads=8, vocab=32000, seq_len=4096,
              micro_batch=1, pp=2, dp=1, microbatches=8, pipeline_rank=1)
    m0 = memory_per_gpu_bytes(**kw)
    m1 = memory_per_gpu_bytes(**kw, mtp_depth=1)
    p_mtp = 4 * h * h + 2 * h + 3 * h * F + 2 * h * h + 2 * h
    assert m1.weights - m0.weights == pytest.approx(2.0 * p_mtp, rel=1e-12)
    assert m1.logits == pytest.approx(2.0 * m0.logits, rel=1e-12)
    assert m1.activations > m0.activations
    # the first stage is untouched
    first = dict(kw, pipeline_rank=0)
    assert memory_per_gpu_bytes(**first, mtp_depth=1).total == memory_per_gpu_bytes(**first).total


@pytest.mark.parametrize("kw, word", [
    (dict(moe_node_limit=5), "moe_node_limit"),      # 4 nodes in the EP group
    (dict(moe_node_limit=-1), "moe_node_limit"),
    (dict(moe_node_limit=1.5), "moe_node_limit"),
    (dict(moe_top_k=16, moe_node_limit=1), "moe_node_limit"),  # 8 experts on one node < k
    (dict(moe_dispatch_bytes=0.0), "moe_dispatch_bytes"),
    (dict(mtp_depth=-1), "mtp_depth"),
    (dict(mtp_depth=0.5), "mtp_depth"),
])
def test_bad_values_name_the_parameter(kw, word):
    with pytest.raises(ValueError, match=word):
        step_estimate(**dict(SMALL, **kw))


def test_dense_model_refuses_moe_inputs():
    dense = {k: v for k, v in SMALL.items() if not k.startswith("moe_")}
    for kw, word in ((dict(moe_node_limit=1), "moe_node_limit"),
                     (dict(moe_dispatch_bytes=1.0), "moe_dispatch_bytes")):
        with pytest.raises(ValueError, match=word):
            step_estimate(**dense, **kw)
    with pytest.raises(ValueError, match="mtp_depth"):
        memory_per_gpu_bytes(layers=2, hidden=64, ffn_hidden=128, heads=2, kv_heads=2,
                             vocab=100, seq_len=16, micro_batch=1, mtp_depth=-1)


def test_estimate_file_plumbs_the_inputs():
    est = load_estimate(MIXTRAL, ["model.node_limit=1", "model.mtp_depth=1",
                                  "training.moe_dispatch_dtype=fp8"])
    model, par, _ = job_specs(est)
    assert (model.node_limit, model.mtp_depth, par.moe_dispatch_bytes) == (1, 1, FP8_DISPATCH)
    base = estimate_from_file(load_estimate(MIXTRAL))
    assert estimate_from_file(est).step_time_s != base.step_time_s
    # EP 8 with ETP 1 sits on one node: a limit of 2 nodes is refused, naming the input
    with pytest.raises(EstimateFileError, match="moe_node_limit"):
        estimate_from_file(load_estimate(MIXTRAL, ["model.node_limit=2"]))
    with pytest.raises(EstimateFileError, match="node_limit"):
        estimate_from_file(load_estimate(MIXTRAL, ["model.experts=0", "model.node_limit=1",
                                                   "parallelism.ep=1",
                                                   "parallelism.moe_expert_tp=null"]))
