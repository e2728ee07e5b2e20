"""DualPipe in the step model (issue 16, helper HK): DeepSeek-V3's bidirectional pipeline
schedule (arXiv 2412.19437 sec. 3.2.1, Table 2; deepseek-ai/DualPipe), its overlapped pair and
bubble by hand, never slower than 1F1B where all-to-alls exist, the default unchanged, and the
bad inputs naming the parameter (step model, estimate file, CLI)."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.cli.estimate import run_estimate_cli
from twin.compute import step_estimate
from twin.compute.step import (
    DUALPIPE_COMM_SMS,
    H100_SXM,
    PipelineChunk,
    _gemm_time_s,
    dualpipe_pair_s,
    dualpipe_rank,
)

ROOT = Path(__file__).resolve().parents[2]
MIXTRAL_FILE = ROOT / "scenarios/estimates/mixtral_8x22b_bf16_128gpu.yaml"
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, inter_node_gbps=3200.0,
            peak_tflops=989.0, nvls=True)


def test_pair_by_hand():
    # computation 1 s, communication 2 s on 20 % of the SMs: the computation runs at 0.8 of its
    # rate under the communication and needs 1.25 s; 0.75 s of communication stays exposed
    lost, exposed = dualpipe_pair_s(1.0, 2.0, 0.2)
    assert (lost, exposed) == pytest.approx((0.25, 0.75), rel=1e-12)
    # communication 0.5 s: all hidden; the computation loses 0.2 x 0.5 s of its rate
    lost, exposed = dualpipe_pair_s(1.0, 0.5, 0.2)
    assert (lost, exposed) == pytest.approx((0.1, 0.0), abs=1e-15)
    # no reserved SMs: max(compute, comm)
    assert sum(dualpipe_pair_s(1.0, 3.0, 0.0)) == pytest.approx(2.0, rel=1e-12)


def test_rank_bubble_by_hand():
    a = PipelineChunk(parts={"gemm": 3.0}, fwd=1.0, bwd=2.0, wgrad=0.8, a2a_fwd=0.5, a2a_bwd=0.5)
    b = PipelineChunk(parts={"gemm": 4.5}, fwd=1.5, bwd=3.0, wgrad=1.0, a2a_fwd=2.0, a2a_bwd=2.0)
    r = dualpipe_rank(a, b, pp=8, microbatches=16, t_send_s=0.1, sm_share=0.2)
    # F_a & B_b: compute 1 + 3, comm 0.5 + 2 + 2 x 0.1 = 2.7, all hidden (4 / 0.8 = 5 > 2.7):
    # 4 + 0.2 x 2.7 = 4.54; F_b & B_a: compute 1.5 + 2, the same comm: 3.5 + 0.54 = 4.04
    assert r["pair"] == pytest.approx(0.5 * (4.54 + 4.04), rel=1e-12)
    assert r["sm_lost"] == pytest.approx(0.54, rel=1e-12)
    assert (r["a2a"], r["pp"]) == (0.0, 0.0)
    # B: the full backward chunk with its all-to-alls, W the weight-gradient GEMMs, per stage
    assert r["B"] == pytest.approx(0.5 * (2.0 + 0.5 + 3.0 + 2.0), rel=1e-12)
    assert r["W"] == pytest.approx(0.9, rel=1e-12)
    # (PP/2 - 1)(F&B + B - 3W)
    assert r["bubble"] == pytest.approx(3 * (4.29 + 3.75 - 2.7), rel=1e-12)
    assert r["step"] == pytest.approx(16 * 4.29 + 3 * (4.29 + 3.75 - 2.7), rel=1e-12)
    assert r["parts"] == {"gemm": pytest.approx(3.75)}
    # comm-bound: a2a 5 s each way on a; the pair F_a & B_b exposes what outlasts 4 / 0.8
    a5 = PipelineChunk(parts={}, fwd=1.0, bwd=2.0, wgrad=0.8, a2a_fwd=5.0, a2a_bwd=5.0)
    r = dualpipe_rank(a5, b, pp=2, microbatches=4, t_send_s=0.0, sm_share=0.2)
    # pairs: comm 7 against 4 / 0.8 = 5 and 3.5 / 0.8 = 4.375: exposed 2 and 2.625
    assert r["a2a"] == pytest.approx(0.5 * (2.0 + 2.625), rel=1e-12)
    assert r["pair"] == pytest.approx(7.0, rel=1e-12)  # the communication sets both pairs
    assert r["bubble"] == 0.0  # pp = 2: no bubble


def _tiny(**over):
    """A dense 8-layer model on 4 GPUs of one node, PP4, 8 micro-batches (2 pp)."""
    kw = dict(H100, layers=8, hidden=1024, ffn_hidden=4096, heads=8, kv_heads=8, vocab=32000,
              seq_len=1024, global_batch=8, micro_batch=1, tp=1, pp=4, cp=1, vpp=1, gpus=4)
    kw.update(over)
    return kw


def test_tiny_layout_bubble_from_the_kernels_by_hand():
    """F, B, W of a tiny layout from the kernel formulas, and the bubble (PP/2-1)(F&B+B-3W)."""
    e = step_estimate(**_tiny(pipeline_schedule="dualpipe"))
    ke, T, h, F, V, s = H100_SXM, 1024, 1024, 4096, 32000, 1024
    hbm = 3.35e12 * ke.hbm
    kw = dict(peak_flops=989e12, eff=ke.gemm, ke=ke, hbm_b_s=3.35e12, bytes_per_el=2.0)
    fm, fn, fk = [T, T, T, T], [3 * h, h, 2 * F, h], [h, h, h, F]  # qkv, proj, fc1 (SwiGLU), fc2
    g_f = _gemm_time_s(fm, fn, fk, **kw).sum()
    g_d = _gemm_time_s(fm, fk, fn, **kw).sum()
    g_w = _gemm_time_s(fk, fn, fm, **kw).sum()
    flops = 4.0 * s * s / 2 * h  # causal flash attention forward
    seq_eff = s / (s + ke.attention_seq_half)
    a_f = flops / (989e12 * ke.attention_fwd * seq_eff)
    a_b = 2.5 * flops / (989e12 * ke.attention_bwd * seq_eff)
    mem = 2.0 * (T * 10.0 * h + T * 2.0 * (2 * h) + T * 3 * F)
    m_f = mem / hbm + 14 * ke.kernel_gap_s
    m_b = 2.0 * mem / hbm + 28 * ke.kernel_gap_s
    Fl, Bl = g_f + a_f + m_f, g_d + g_w + a_b + m_b  # one layer
    lg = _gemm_time_s([T, T, h], [V, h, V], [h, V, T], **kw)
    ce = T * V * 20.0 / hbm
    emb = 3.0 * T * h * 2.0 / hbm
    # rank 0 holds the first stage (2 layers + embedding) and the last (2 layers + output
    # layer); it is the slowest (the inner rank has neither)
    F_first, B_first, W_first = 2 * Fl + emb / 3, 2 * Bl + 2 * emb / 3, 2 * g_w
    F_last, B_last, W_last = 2 * Fl + lg[0] + ce, 2 * Bl + lg[1] + lg[2], 2 * g_w + lg[2]
    # no expert all-to-alls: no reserved SMs, the two sends hide behind the pair
    pair = 0.5 * (F_first + B_last + F_last + B_first)
    B, W = 0.5 * (B_first + B_last), 0.5 * (W_first + W_last)
    assert e.breakdown["pipeline_bubble"] == pytest.approx((4 / 2 - 1) * (pair + B - 3 * W),
                                                           rel=1e-9)
    # the weight-gradient GEMMs are a fifth of this small model's backward (half its GEMMs;
    # attention and memory-bound kernels weigh at hidden 1,024)
    assert W / B == pytest.approx(0.193, abs=0.002)
    assert e.breakdown["comm_sm_reserved"] == 0.0
    t_send = T * h * 2.0 / (0.8 * 450e9) + 10e-6
    assert e.breakdown["pp_comm_exposed"] == pytest.approx(2 * 3 * t_send, rel=1e-9)  # fill
    steps = e.step_time_s - e.breakdown["stragglers"] - e.breakdown["optimizer"]
    assert steps == pytest.approx(8 * pair + (pair + B - 3 * W) + 6 * t_send, rel=1e-9)
    # the 1F1B bubble of the same layout: (pp - 1) stage times, 3 (F + B) of the last stage
    f1 = step_estimate(**_tiny())
    assert f1.breakdown["pipeline_bubble"] == pytest.approx(3 * (F_last + B_last), rel=1e-9)
    assert e.step_time_s < f1.step_time_s


def test_moe_chunk_weight_gradients_by_hand(monkeypatch):
    """W of an inner stage of MoE layers: each layer's weight-gradient GEMMs (QKV, output
    projection, the experts' SwiGLU up/gate and down over the routed copies) and the router's
    ``h x E`` gradient; the all-to-alls split two forward, two backward."""
    import twin.compute.step as step_mod
    seen = []
    real = step_mod.dualpipe_rank

    def spy(a, b, **kw):
        seen.append((a, b))
        return real(a, b, **kw)
    monkeypatch.setattr(step_mod, "dualpipe_rank", spy)
    step_estimate(**_moe(pipeline_schedule="dualpipe"))
    inner = seen[-1][0]
    assert seen[-1][1] is inner  # the inner rank: two like stages
    ke, T, h, hkv, Fe, E, k = H100_SXM, 2048, 2048, 512, 4096, 16, 2
    kw = dict(peak_flops=989e12, eff=ke.gemm, ke=ke, hbm_b_s=3.35e12, bytes_per_el=2.0)
    w = _gemm_time_s([h, h, h, Fe], [h + 2 * hkv, h, 2 * Fe, h], [T, T, k * T, k * T],
                     **kw).sum() + _gemm_time_s(T, E, h, **kw)
    assert inner.wgrad == pytest.approx(2 * w, rel=1e-12)  # 8 layers over pp 4: 2 per stage
    f1 = step_estimate(**_moe())
    a2a_per_mb = f1.breakdown["moe_a2a_exposed"] / 8  # 1F1B: the last stage, 8 micro-batches
    assert (inner.a2a_fwd, inner.a2a_bwd) == pytest.approx((a2a_per_mb / 2, a2a_per_mb / 2),
                                                           rel=1e-12)


def test_default_is_the_schedule_vpp_implies_bit_for_bit():
    for over, sched in ((dict(vpp=1), "1f1b"), (dict(vpp=2), "interleaved")):
        a = step_estimate(**_tiny(**over))
        b = step_estimate(**_tiny(**over, pipeline_schedule=sched))
        assert (a.step_time_s, a.breakdown) == (b.step_time_s, b.breakdown)
        assert "comm_sm_reserved" not in a.breakdown


def _moe(**over):
    kw = dict(H100, layers=8, hidden=2048, ffn_hidden=4096, heads=16, kv_heads=4, vocab=32000,
              seq_len=2048, global_batch=128, micro_batch=1, tp=1, pp=4, cp=1, vpp=1, gpus=64,
              moe_experts=16, moe_top_k=2, moe_ep=16)
    kw.update(over)
    return kw


@settings(max_examples=40, deadline=None)
@given(hidden=st.sampled_from([512, 1024, 2048]), ffn=st.sampled_from([1024, 2816, 8192]),
       experts=st.sampled_from([8, 16, 32]), top_k=st.integers(1, 4),
       ep=st.sampled_from([2, 4, 8]), pp=st.sampled_from([2, 4]),
       tp=st.sampled_from([1, 2]), extra_mb=st.integers(0, 8),
       net=st.sampled_from([200.0, 800.0, 3200.0]), prec=st.sampled_from(["bf16", "fp8"]),
       dense=st.integers(0, 2))
def test_dualpipe_never_slower_than_1f1b_with_all_to_alls(hidden, ffn, experts, top_k, ep, pp,
                                                          tp, extra_mb, net, prec, dense):
    """DualPipe's pair is at most the serial pair and its bubble below 1F1B's, at the same
    layout, when the experts' all-to-alls run (ep > 1).  Its two parameter copies double the
    data-parallel traffic, which can surface on small models over slow links: the step less
    that term is never slower, and the whole step is not when the traffic stays hidden."""
    dp = 64 // (tp * pp)
    m = 2 * pp + 2 * extra_mb
    kw = _moe(hidden=hidden, ffn_hidden=ffn, heads=hidden // 128, kv_heads=hidden // 512,
              moe_experts=experts, moe_top_k=top_k, moe_ep=ep, pp=pp, tp=tp,
              global_batch=dp * m, inter_node_gbps=net, precision=prec,
              peak_tflops=1979.0 if prec == "fp8" else 989.0, moe_dense_layers=dense,
              moe_ffn_hidden=ffn // 4 if dense else None)
    f1 = step_estimate(**kw)
    dual = step_estimate(**kw, pipeline_schedule="dualpipe")
    assert f1.breakdown["moe_a2a_exposed"] > 0
    x_dp = dual.breakdown["dp_comm_exposed"]
    assert dual.step_time_s - x_dp <= f1.step_time_s * (1 + 1e-12)
    if x_dp == 0.0:
        assert dual.step_time_s <= f1.step_time_s * (1 + 1e-12)
    assert dual.breakdown["pipeline_bubble"] < f1.breakdown["pipeline_bubble"]
    assert sum(dual.breakdown.values()) == pytest.approx(dual.step_time_s, rel=1e-12)


def test_two_parameter_copies_double_the_data_parallel_traffic():
    # a small MoE over 200 Gb/s: 1F1B hides most of its gradient reduce-scatter behind the
    # bubble; DualPipe moves twice the parameters with no bubble (pp 2) and shows it
    kw = _moe(hidden=512, ffn_hidden=1024, heads=4, kv_heads=1, moe_experts=8, moe_top_k=1,
              moe_ep=2, pp=2, global_batch=128, inter_node_gbps=200.0)
    f1 = step_estimate(**kw)
    dual = step_estimate(**kw, pipeline_schedule="dualpipe")
    assert dual.breakdown["dp_comm_exposed"] > 3 * f1.breakdown["dp_comm_exposed"] > 0
    assert dual.step_time_s > f1.step_time_s
    assert dual.breakdown["optimizer"] == f1.breakdown["optimizer"]  # shards of 2x over 2x


def test_reserved_sms_are_the_reports_20():
    # a layout whose all-to-alls (EP4 inside a node) and sends (to the next stage on the same
    # node) hide behind the pair: the computation loses 20 / 132 of the communication's
    # duration (DeepSeek-V3 sec. 3.2.2: 20 SMs of the H800's 132 for communication)
    assert DUALPIPE_COMM_SMS == 20 and H100_SXM.sms == 132
    kw = _moe(gpus=16, moe_ep=4, global_batch=64)  # dp 4, 16 micro-batches
    f1 = step_estimate(**kw)
    e = step_estimate(**kw, pipeline_schedule="dualpipe")
    assert e.breakdown["moe_a2a_exposed"] == 0.0
    # the inner rank's four all-to-alls per layer, as 1F1B exposes them, and two sends per pair
    t_send = 2048 * 2048 * 2.0 / (0.8 * 450e9) + 10e-6
    comm = f1.breakdown["moe_a2a_exposed"] + 16 * 2 * t_send
    assert e.breakdown["comm_sm_reserved"] == pytest.approx(20 / 132 * comm, rel=1e-9)


@pytest.mark.parametrize("over, word", [
    (dict(pipeline_schedule="zb1p"), "pipeline_schedule must be one of"),
    (dict(pipeline_schedule="dualpipe", pp=3, layers=9, gpus=48, global_batch=96),
     "even pp"),
    (dict(pipeline_schedule="dualpipe", vpp=2), "needs vpp=1"),
    (dict(pipeline_schedule="dualpipe", global_batch=16), "micro-batches >= 2 pp = 8"),
    (dict(pipeline_schedule="dualpipe", global_batch=144), "even number of micro-batches"),
    (dict(pipeline_schedule="dualpipe", zero_stage=3), "zero_stage"),
    (dict(pipeline_schedule="1f1b", vpp=2), "needs vpp=1"),
    (dict(pipeline_schedule="interleaved"), "needs vpp > 1"),
])
def test_bad_schedules_name_the_parameter(over, word):
    with pytest.raises(ValueError, match=word):
        step_estimate(**_moe(**over))


def test_estimate_file_and_cli(capsys):
    base = ["step", str(MIXTRAL_FILE), "--set", "parallelism.vpp=1", "--json"]
    assert run_estimate_cli(base) == 0
    f1 = json.loads(capsys.readouterr().out)
    assert run_estimate_cli([*base, "--pipeline-schedule", "dualpipe"]) == 0
    dual = json.loads(capsys.readouterr().out)
    assert run_estimate_cli([*base, "--set", "parallelism.pipeline_schedule=dualpipe"]) == 0
    assert json.loads(capsys.readouterr().out) == dual
    assert dual["step_time_s"] < f1["step_time_s"]
    assert "comm_sm_reserved" in dual["breakdown"] and "comm_sm_reserved" not in f1["breakdown"]
    # the shipped file runs interleaved (vpp 7): DualPipe there is refused, naming the field
    assert run_estimate_cli(["step", str(MIXTRAL_FILE), "--pipeline-schedule", "dualpipe"]) == 2
    assert "parallelism.pipeline_schedule = dualpipe needs parallelism.vpp = 1" \
        in capsys.readouterr().err
    # pp 4 on 64 GPUs passes the layout checks; the memory model then counts DualPipe's two
    # parameter copies (HM2): 122.3 GiB a GPU on ranks 0 and 3 (1F1B: 86.3), refused
    assert run_estimate_cli([*base, "--set", "parallelism.pp=4", "--set",
                             "cluster.gpus=64", "--pipeline-schedule", "dualpipe"]) == 2
    err = capsys.readouterr().err
    assert "does not fit in GPU memory: needs 122.3 GiB" in err and "stages 1+4" in err
    assert run_estimate_cli([*base, "--set", "training.global_batch=96",
                             "--pipeline-schedule", "dualpipe"]) == 2
    assert "micro-batches >= 2 pp = 16, got 12" in capsys.readouterr().err
    assert run_estimate_cli([*base, "--pipeline-schedule", "zb"]) == 2
    assert "--pipeline-schedule" in capsys.readouterr().err
    assert math.isfinite(dual["step_time_s"])
