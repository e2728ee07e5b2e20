"""Per-GPU memory under DeepSeek's DualPipe and with DeepSeek-V3's memory savings, by hand:
each rank's two stages, the micro-batches the schedule holds, the options' bytes per tensor."""

import itertools
import json
import math
from pathlib import Path

import pytest
from reference_scripts import reference_script

from twin.compute.memory import (
    GIB,
    activation_bytes_per_token_layer,
    memory_fit_problem,
    memory_per_gpu_bytes,
    mla_activation_width,
    saved_bytes_per_token_layer,
)

ds = reference_script("step_times_deepseek")


def _dualpipe_held(pp, m, rank):
    """Largest (near, far) micro-batches in flight on ``rank``, stepping deepseek-ai/DualPipe's
    ``DualPipe.step`` one chunk at a time: half rank ``hr = min(rank, pp-1-rank)``; "near" is
    the direction entering at the rank's own end (phase 0 after the second-half swap), "far"
    the other.  Steps 1-8 as the code runs them: 2 (pp/2 - hr - 1) F near; hr + 1 x (F near,
    F far); pp/2 - hr - 1 x (B far, W, F far); m/2 - pp + hr + 1 x (F near & B far, F far &
    B near); pp/2 - hr - 1 x (B far, F far & B near); hr + 1 x (B far, B near); then only B
    near and W.  A forward adds its micro-batch, a backward frees it; an overlapped pair is
    counted after its forward and before its backward (the peak of the pair).  Also returns
    the largest total counting each zero-bubble backward's deferred weight gradient (W) as a
    whole micro-batch still held."""
    half, hr, hm = pp // 2, min(rank, pp - 1 - rank), m // 2
    ev = []
    ev += [("F", 0)] * (2 * (half - hr - 1))
    ev += [("F", 0), ("F", 1)] * (hr + 1)
    ev += [("B", 1, True), ("W",), ("F", 1)] * (half - hr - 1)
    ev += [("F", 0), ("B", 1, False), ("F", 1), ("B", 0, False)] * (hm - pp + hr + 1)
    ev += [("B", 1, False), ("F", 1), ("B", 0, False)] * (half - hr - 1)
    zb = False
    for i in range(hr + 1):  # step 6: the second half of the chunks use zero bubble
        zb = zb or (i == (hr + 1) // 2 and hr % 2 == 1)
        ev.append(("B", 1, zb))
        zb = zb or (i == (hr + 1) // 2 and hr % 2 == 0)
        ev.append(("B", 0, zb))
    ev += [("W",), ("B", 0, True)] * (half - hr - 1)
    ev += [("W",)] * (hr + 1)
    held, pending, near, far, total, with_w = [0, 0], 0, 0, 0, 0, 0
    for e in ev:
        if e[0] == "F":
            held[e[1]] += 1
        elif e[0] == "B":
            held[e[1]] -= 1
            pending += e[2]
        else:
            pending -= 1
        assert min(held) >= 0 and pending >= 0
        near, far = max(near, held[0]), max(far, held[1])
        total, with_w = max(total, sum(held)), max(with_w, sum(held) + pending)
    assert held == [0, 0] and pending == 0  # every micro-batch ran forward and backward
    return near, far, total, with_w


@pytest.mark.parametrize("pp, m", [(2, 4), (4, 8), (4, 12), (8, 20), (8, 16), (16, 120)])
def test_dualpipe_holds_pp_plus_one_micro_batches_on_every_rank(pp, m):
    # rank r < pp/2 holds stage r (its near direction) and stage pp-1-r: at the end of step 2
    # it has run 2 (pp/2 - r - 1) + r + 1 = pp - r - 1 near forwards and r + 1 far ones, the
    # first near forward of step 4 makes pp - r, and both maxima are reached together:
    # pp + 1 in all (Table 2 of arXiv 2412.19437, the DualPipe README), whatever m >= 2 pp
    for r in range(pp):
        s = min(r, pp - 1 - r)
        near, far, total, with_w = _dualpipe_held(pp, m, r)
        assert (near, far, total) == (pp - s, s + 1, pp + 1)
        # zero-bubble weight gradients deferred at the peak: none (they never raise it)
        assert with_w == pp + 1


# a tiny dense model: 8 layers on pp 4 (2 a stage), h 64, F 256 (gated), 4 heads (MHA),
# vocab 1000, 32-token sequences, micro-batch 1, tp 1, dp 2, 8 micro-batches (= 2 pp)
TINY = dict(layers=8, hidden=64, ffn_hidden=256, heads=4, kv_heads=4, vocab=1000, seq_len=32,
            micro_batch=1, pp=4, dp=2, microbatches=8)
P_LAYER = 64 * (64 + 128) + 64 * 64 + 2 * 64 + 3 * 64 * 256   # 65,664: QKV, out, norms, MLP
P_EMBED = 1000 * 64                                            # 64,000 (input and output)
A_TOK = 2 * 4 * 64 + 2 * ((64 + 128) + 64 + 3 * 256)          # 2,560 B per token and layer


def test_tiny_dualpipe_layout_by_hand():
    assert P_LAYER == 65_664 and A_TOK == 2_560
    # rank 0 (and 3): stages 1 and 4 (1-based), 2 layers each, the embedding and output layer;
    # 4 micro-batches of stage 1 and 1 of stage 4 in flight; states over 2 d = 4 ranks
    r0 = memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=0)
    p0 = 4 * P_LAYER + 2 * P_EMBED                                # 390,656
    assert r0.stage == "stages 1+4"
    assert (r0.weights, r0.gradients, r0.optimizer) == (2 * p0, 4 * p0, 12 / 4 * p0)
    assert r0.activations == (4 + 1) * 2 * 32 * A_TOK + 2 * 32 * 64 * 4   # + embedding out
    assert r0.activations == 835_584
    assert r0.logits == 6 * 32 * 1000
    # rank 1 (and 2): stages 2 and 3, 3 and 2 micro-batches in flight, no embedding or logits
    r1 = memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=1)
    p1 = 4 * P_LAYER
    assert r1.stage == "stages 2+3"
    assert (r1.weights, r1.gradients, r1.optimizer) == (2 * p1, 4 * p1, 3.0 * p1)
    assert r1.activations == (3 + 2) * 2 * 32 * A_TOK == 819_200
    assert r1.logits == 0.0
    # mirror ranks alike; the job's figure is the heavier, rank 0
    assert memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=3) == r0
    assert memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=2) == r1
    assert memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe") == r0
    # against 1F1B's first stage: one parameter copy, its optimizer over d = 2 ranks, the
    # same 4 micro-batches of its own 2 layers
    f = memory_per_gpu_bytes(**TINY, pipeline_rank=0)
    pf = 2 * P_LAYER + P_EMBED
    assert (f.weights, f.optimizer) == (2 * pf, 6 * pf)
    assert f.activations == 4 * 2 * 32 * A_TOK + 2 * 32 * 64 * 4


def test_dualpipe_state_sharding_by_zero_stage():
    # ZeRO-0: every rank keeps the 12 B of both its stages; ZeRO-2: the gradients too over
    # the 2 d = 4 ranks holding a stage
    p1 = 4 * P_LAYER
    z0 = memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=1,
                              zero_stage=0)
    assert (z0.gradients, z0.optimizer) == (4 * p1, 12 * p1)
    z2 = memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=1,
                              zero_stage=2)
    assert (z2.gradients, z2.optimizer) == (1.0 * p1, 3.0 * p1)
    # bf16 AdamW moments: 4 + 2 x 2 = 8 B a parameter, over 4 ranks; + 4 B of fp32 gradient
    # copy with bf16 gradients
    bm = memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=1,
                              adam_moment_bytes=2.0)
    assert bm.optimizer == 8 / 4 * p1
    bg = memory_per_gpu_bytes(**TINY, pipeline_schedule="dualpipe", pipeline_rank=1,
                              adam_moment_bytes=2.0, grad_bytes=2.0)
    assert (bg.gradients, bg.optimizer) == (2 * p1, 12 / 4 * p1)
    # and without DualPipe, 8 B over d = 2 (1F1B's stage 2: 2 layers)
    one = memory_per_gpu_bytes(**TINY, pipeline_rank=1, adam_moment_bytes=2.0)
    assert one.optimizer == 8 / 2 * (2 * P_LAYER)


# DeepSeek-V3 MoE layer, tp 1, top-8 capacity 1: saved bytes per token, tensor by tensor
H, N, FE, K = 7168, 128, 2048, 8
NORM_IN = 2 * 2 * H                        # two RMSNorm inputs, bf16
NORM_OUT = 2 * H                           # their outputs (the projections' inputs), elements
QKV = N * (192 + 192 + 128)                # MLA queries, keys (nope + rope), values
LATENT, ROPE = 1536 + 512, 64              # query and KV latents, the shared RoPE key
ATTN_OUT = N * 128                         # input of the output projection
MOE_KW = dict(hidden=H, heads=N, kv_heads=N, seq_len=4096,
              mla_dims=(1536, 512, 128, 64, 128), routed_ffn_hidden=FE, routed_copies=K,
              shared_ffn_hidden=FE, dispatched_copies=K)


def test_deepseek_savings_bytes_per_token_by_hand():
    # all off: the module's bf16 count of the MoE layer, 450,688 B (test_deepseek_shapes)
    off = NORM_IN + 2 * NORM_OUT + 2 * QKV + 2 * (LATENT + ROPE) + 2 * ATTN_OUT \
        + (K + 1) * 2 * 3 * FE + 2 * H * K
    assert off == 450_688 == saved_bytes_per_token_layer(**MOE_KW)
    # (a) norm outputs and the up-projections' q, k, v rebuilt: 28,672 + 131,072 B fewer
    a = saved_bytes_per_token_layer(**MOE_KW, recompute_norms_mla_up=True)
    assert a == off - 2 * NORM_OUT - 2 * QKV == 290_944
    # (b) FP8: norm outputs and latents 1 B, attention output E5M6 1.5 B, routed and shared
    # experts' SwiGLU inputs 2 F at 1 B and its output not kept, dispatched inputs 1 B
    b = saved_bytes_per_token_layer(**MOE_KW, fp8_cached_linear_inputs=True)
    assert b == (NORM_IN + NORM_OUT + 2 * QKV + LATENT + 2 * ROPE + 1.5 * ATTN_OUT
                 + (K + 1) * 2 * FE + H * K) == 295_040
    # (a) and (b): the latents kept as their norms' inputs, bf16
    ab = saved_bytes_per_token_layer(**MOE_KW, recompute_norms_mla_up=True,
                                     fp8_cached_linear_inputs=True)
    assert ab == NORM_IN + 2 * (LATENT + ROPE) + 1.5 * ATTN_OUT + (K + 1) * 2 * FE + H * K
    assert ab == 151_680
    # a dense layer (F 18,432) under (b): SwiGLU's inputs stay bf16, its output (the down
    # projection's input) 1 B: 5 F instead of 6 F
    dense = saved_bytes_per_token_layer(hidden=H, heads=N, kv_heads=N, seq_len=4096,
                                        mla_dims=(1536, 512, 128, 64, 128),
                                        dense_ffn_hidden=18432, fp8_cached_linear_inputs=True)
    assert dense == NORM_IN + NORM_OUT + 2 * QKV + LATENT + 2 * ROPE + 1.5 * ATTN_OUT \
        + 5 * 18432 == 292_992
    # without a query latent (DeepSeek-V2-Lite's q_lora 0) (a) keeps the queries
    lite = dict(hidden=2048, heads=16, kv_heads=16, seq_len=4096, mla_dims=(0, 512, 128, 64, 128),
                dense_ffn_hidden=10944)
    assert saved_bytes_per_token_layer(**lite) - saved_bytes_per_token_layer(
        **lite, recompute_norms_mla_up=True) == 2 * 2 * 2048 + 2 * 16 * (192 + 128)


@pytest.mark.parametrize("gated, sp, flash, rec, tp", list(itertools.product(
    (True, False), (True, False), (True, False), ("none", "selective"), (1, 4))))
def test_saved_bytes_with_the_options_off_is_the_module_count(gated, sp, flash, rec, tp):
    kw = dict(hidden=4096, heads=32, kv_heads=8, seq_len=8192, tp=tp, gated_mlp=gated,
              sequence_parallel=sp, flash_attention=flash, recompute=rec)
    base = activation_bytes_per_token_layer(ffn_hidden=14336, **kw)
    assert saved_bytes_per_token_layer(dense_ffn_hidden=14336, **kw) == pytest.approx(
        base, rel=1e-14)
    width = mla_activation_width(heads=32, q_lora_rank=1536, kv_lora_rank=512,
                                 qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, tp=tp)
    mla = activation_bytes_per_token_layer(ffn_hidden=14336, attention_width=width, **kw)
    assert saved_bytes_per_token_layer(dense_ffn_hidden=14336, mla_dims=(1536, 512, 128, 64, 128),
                                       **kw) == pytest.approx(mla, rel=1e-14)


def test_deepseek_v3_dualpipe_by_hand():
    # the published layout (PP16, 4 layers a stage, 120 micro-batches): an inner rank holds two
    # stages of 4 MoE layers, 17 micro-batches of 4,096 tokens, 450,688 B a token and layer
    # (by hand at the even share, k = 8 routed copies a token: capacity routing at factor 1;
    # the row itself routes dropless, the busiest rank's 1.0341 x, pinned at the end)
    (row,) = [r for r in ds.rows() if r["model"] == "deepseek_v3"]
    kw = dict(ds.memory_kwargs(row), moe_routing="capacity")
    assert kw["pipeline_schedule"] == "dualpipe" and kw["microbatches"] == 120
    inner = memory_per_gpu_bytes(**kw, pipeline_rank=7)
    assert inner.stage == "stages 8+9"
    assert inner.activations == 17 * 4 * 4096 * 450_688
    # twice the 1F1B stage 2's parameter copy (its weights 4.6 GiB, gradients 6.1 GiB);
    # optimizer: twice the parameters over twice the shards, the same
    one = memory_per_gpu_bytes(**dict(ds.memory_kwargs(row, "1f1b"), moe_routing="capacity"),
                               pipeline_rank=1)
    assert inner.weights == pytest.approx(2 * one.weights, rel=1e-12)
    assert inner.gradients == pytest.approx(2 * one.gradients, rel=1e-12)
    assert inner.optimizer == pytest.approx(one.optimizer, rel=1e-12)
    m = memory_per_gpu_bytes(**kw)
    assert m.stage == "stages 2+15" and m.total / GIB == pytest.approx(144.307, abs=0.001)
    assert memory_fit_problem(m, 80.0) is not None
    # rank 0: stage 1 (3 dense layers, 1 MoE layer, embedding) 16 micro-batches, stage 16
    # (4 MoE layers) 1
    a_dense = NORM_IN + 2 * NORM_OUT + 2 * QKV + 2 * (LATENT + ROPE) + 2 * ATTN_OUT + 6 * 18432
    r0 = memory_per_gpu_bytes(**kw, pipeline_rank=0)
    assert r0.activations == 16 * 4096 * (3 * a_dense + 450_688 + 2 * H) + 4 * 4096 * 450_688
    # with the report's savings: 151,680 B a MoE layer, 292,992 - 14,336 - 131,072 - 2,048
    # + 2 x 2,048 = 149,632 B a dense one (norm outputs and q, k, v rebuilt, latents bf16)
    sv = dict(ds.memory_kwargs(row, savings=True), moe_routing="capacity")
    assert memory_per_gpu_bytes(**sv, pipeline_rank=7).activations == 17 * 4 * 4096 * 151_680
    a_dense_s = NORM_IN + 2 * (LATENT + ROPE) + 1.5 * ATTN_OUT + 5 * 18432
    assert a_dense_s == 149_632
    r0s = memory_per_gpu_bytes(**sv, pipeline_rank=0)
    assert r0s.activations == 16 * 4096 * (3 * a_dense_s + 151_680 + 2 * H) \
        + 4 * 4096 * 151_680
    ms = memory_per_gpu_bytes(**sv)
    assert ms == r0s and ms.stage == "stages 1+16"
    assert ms.total / GIB == pytest.approx(83.432, abs=0.001)
    assert memory_fit_problem(ms, 80.0) is None   # accepted, 4 % above the GPU, in the margin
    assert ms.total / GIB > 80.0
    # with the MTP module (helper HNL): on rank 0's stage 16, one micro-batch in flight of one
    # more MoE layer (151,680 B a token) and the projection's 2h bf16 input (4 h B), a second
    # logits working set; the inner ranks unchanged
    mt = dict(ds.memory_kwargs(row, savings=True, mtp=True), moe_routing="capacity")
    assert mt["mtp_depth"] == 1
    r0m = memory_per_gpu_bytes(**mt, pipeline_rank=0)
    assert r0m.activations == r0s.activations + 1 * 4096 * (151_680 + 4 * H)
    assert r0m.logits == 2 * r0s.logits
    assert memory_per_gpu_bytes(**mt, pipeline_rank=7) == memory_per_gpu_bytes(**sv,
                                                                                pipeline_rank=7)
    mm = memory_per_gpu_bytes(**mt)
    assert mm == r0m and mm.total / GIB == pytest.approx(90.758, abs=0.001)
    assert memory_fit_problem(mm, 80.0) is None   # 1.13x the GPU, still inside the margin
    # the row as routed (dropless: the busiest expert-parallel rank's 1.0341 x the even share of
    # routed copies, as the step model, the estimate file and the engine count it)
    drop = {label: memory_per_gpu_bytes(**ds.memory_kwargs(row, **k)) for label, k in (
        ("plain", {}), ("savings", dict(savings=True)), ("mtp", dict(savings=True, mtp=True)))}
    assert drop["plain"].stage == "stages 2+15"
    assert drop["plain"].total / GIB == pytest.approx(146.191, abs=0.001)
    assert memory_fit_problem(drop["plain"], 80.0) is not None
    assert drop["savings"].total / GIB == pytest.approx(83.667, abs=0.001)
    assert drop["mtp"].stage == "stages 1+16"
    assert drop["mtp"].total / GIB == pytest.approx(91.004, abs=0.001)
    assert memory_fit_problem(drop["mtp"], 80.0) is None


@pytest.mark.parametrize("bad, word", [
    (dict(pipeline_schedule="gpipe"), "pipeline_schedule must be one of"),
    (dict(pipeline_schedule="interleaved"), "pipeline_schedule='interleaved' needs vpp > 1"),
    (dict(pipeline_schedule="dualpipe", vpp=2), "pipeline_schedule='dualpipe' needs vpp=1"),
    (dict(pipeline_schedule="1f1b", vpp=2), "pipeline_schedule='1f1b' needs vpp=1"),
    (dict(pipeline_schedule="dualpipe", pp=3, layers=9), "even pp >= 2"),
    (dict(pipeline_schedule="dualpipe", microbatches=6), "microbatches >= 2 pp = 8"),
    (dict(pipeline_schedule="dualpipe", microbatches=9), "microbatches >= 2 pp = 8"),
    (dict(pipeline_schedule="dualpipe", zero_stage=3), "zero_stage"),
    (dict(recompute_norms_mla_up=1), "recompute_norms_mla_up must be True or False"),
    (dict(fp8_cached_linear_inputs="yes"), "fp8_cached_linear_inputs must be True or False"),
    (dict(fp8_cached_linear_inputs=True), "fp8_cached_linear_inputs needs precision='fp8'"),
    (dict(recompute_norms_mla_up=True, activation_recompute="full"), "activation_recompute"),
    (dict(adam_moment_bytes=0.0), "adam_moment_bytes"),
    (dict(adam_moment_bytes=math.nan), "adam_moment_bytes"),
    (dict(adam_moment_bytes=True), "adam_moment_bytes"),
    (dict(adam_moment_bytes="2"), "adam_moment_bytes"),
])
def test_bad_values_name_the_parameter(bad, word):
    with pytest.raises(ValueError, match=word.replace("(", r"\(").replace(")", r"\)")):
        memory_per_gpu_bytes(**dict(TINY, **bad))


def test_the_other_schedules_and_options_off_leave_every_figure():
    # None, "1f1b" with vpp 1 and "interleaved" with vpp > 1 are one figure; the options at
    # their defaults (off, 4 B moments) change nothing
    for extra in ({}, dict(vpp=2), dict(zero_stage=0), dict(pp=2, microbatches=None)):
        kw = dict(TINY, **extra)
        sched = "interleaved" if kw.get("vpp", 1) > 1 else "1f1b"
        base = memory_per_gpu_bytes(**kw)
        assert memory_per_gpu_bytes(**kw, pipeline_schedule=sched) == base
        assert memory_per_gpu_bytes(**kw, recompute_norms_mla_up=False,
                                    fp8_cached_linear_inputs=False,
                                    adam_moment_bytes=4.0) == base


def test_estimate_step_reports_dualpipe_memory(capsys):
    # twin estimate step --pipeline-schedule dualpipe: the memory block is DualPipe's (two
    # stages a rank), the same figure as the memory call, and the file's DeepSeek savings
    # reach it; Mixtral 8x22B at vpp 1 (PP8, 128 GPUs, TP2 EP8 ETP1)
    from twin.cli.estimate import run_estimate_cli
    from twin.compute.estimate_file import job_specs, load_estimate
    from twin.compute.specs import memory_per_gpu
    path = str(Path(__file__).resolve().parents[2] / "scenarios/estimates"
               / "mixtral_8x22b_bf16_128gpu.yaml")
    base = ["step", path, "--set", "parallelism.vpp=1", "--json"]
    assert run_estimate_cli([*base, "--pipeline-schedule", "dualpipe"]) == 0
    dual = json.loads(capsys.readouterr().out)["memory_gib"]
    assert run_estimate_cli(base) == 0
    f1 = json.loads(capsys.readouterr().out)["memory_gib"]
    assert dual["stage"] == "stages 1+8" and f1["stage"] == "first"
    est = load_estimate(path, ["parallelism.vpp=1", "parallelism.pipeline_schedule=dualpipe"])
    model, par, gpu = job_specs(est)
    m = memory_per_gpu(model, par, gpu, gpus=128)
    assert par.pipeline_schedule == "dualpipe"
    assert dual["total"] == pytest.approx(m.total / GIB, rel=1e-12)
    assert dual["total"] == pytest.approx(79.07, abs=0.01)
    # rank 0 holds both parameter copies' weights: stage 1's 7 layers and embedding, stage
    # 8's 7 layers and output layer, against the 1F1B first stage's one
    assert dual["weights"] > 1.9 * f1["weights"]
    # the file's savings fields move the memory only: BF16 moments, 8 B over 12 B
    assert run_estimate_cli([*base, "--pipeline-schedule", "dualpipe", "--set",
                             "training.adam_moment_dtype=bf16"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["memory_gib"]["optimizer"] == pytest.approx(dual["optimizer"] * 8 / 12,
                                                           rel=1e-12)
    assert run_estimate_cli([*base, "--set", "training.fp8_cached_linear_inputs=true"]) == 2
    assert "training.fp8_cached_linear_inputs needs training.precision = fp8" \
        in capsys.readouterr().err
