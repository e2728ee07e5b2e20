"""PyTorch FSDP (ZeRO-3) step times: MosaicML's MPT benchmark table (llm-foundry) run
through the twin's FSDP path with the dense parameters as fitted on H100 / A100 (nothing
refitted here).  docs/validation.md, "MoE and FSDP", has the table and the limits."""

import csv
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from twin.compute import step_estimate
from twin.compute.collectives import group_collective_time_s
from twin.compute.step import (
    A100_SXM,
    A100_SXM_FSDP,
    A100_SXM_FSDP_TRITON,
    A100_SXM_MODERN,
    FSDP_WHOLE_GEMM_EFFICIENCY,
    H100_SXM,
    H100_SXM_FA2,
    H100_SXM_FSDP_FA2,
    H100_SXM_FSDP_TRITON,
    TRITON_FLASH_ATTENTION_SLOWDOWN,
)

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "assets/reference/fsdp_step_times_llm_foundry.csv"
#: mpt-*.yaml (llm-foundry): d_model, n_heads, n_layers; expansion 4, vocab 50,368
MPT = {"mpt_7b": (4096, 32, 32), "mpt_13b": (5120, 40, 40), "mpt_30b": (7168, 56, 48),
       "mpt_70b": (8192, 64, 80), "mpt_760m": (1536, 12, 24), "mpt_1b": (2048, 16, 24),
       "mpt_3b": (2560, 20, 32)}
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
            inter_node_gbps=3200.0, peak_tflops=989.0)
#: the table's heading: A100 40 GB, 1600 Gb/s node-node RoCE
A100_40 = dict(gpus_per_node=8, hbm_bw_tb_s=1.555, nvlink_gb_s=300.0, nvls=False,
               inter_node_gbps=1600.0, transport="roce", peak_tflops=312.0)


def _rows(path=CSV):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _kernels(r):
    """The PyTorch-FSDP kernel entry of a row: its GPU and its attention kernel (the
    ``attn_impl`` the benchmark's sweep scripts set: FlashAttention-2 or Triton)."""
    if r["gpu"] == "h100_80gb":
        return H100_SXM_FSDP_FA2 if r["attn_impl"] == "flash2" else H100_SXM_FSDP_TRITON
    return A100_SXM_FSDP if r["attn_impl"] == "flash2" else A100_SXM_FSDP_TRITON


def _fit_rows():
    """The 19 rows TRITON_FLASH_ATTENTION_SLOWDOWN and FSDP_WHOLE_GEMM_EFFICIENCY are
    fitted on: H100, activation checkpointing, micro-batches >= 16,384 tokens, sequences
    <= 2,048 or >= 8,192 tokens (assets/reference/fit_fsdp_llm_foundry.py)."""
    return [r for r in _rows() if r["gpu"] == "h100_80gb" and r["recompute"] == "full"
            and _mb_tokens(r) >= 16384
            and (int(r["seq_len"]) <= 2048 or int(r["seq_len"]) >= 8192)]


def _estimate(r, kernels=None, **kw):
    """The twin's step for a table row; kernels default: the row's PyTorch-FSDP entry."""
    h, heads, layers = MPT[r["model"]]
    h100 = r["gpu"] == "h100_80gb"
    args = dict(
        layers=layers, hidden=h, ffn_hidden=4 * h, heads=heads, kv_heads=heads, vocab=50368,
        seq_len=int(r["seq_len"]), global_batch=int(r["global_batch"]),
        micro_batch=int(r["micro_batch"]), tp=1, pp=1, cp=1, vpp=1, gpus=int(r["gpus"]),
        precision="bf16", activation_recompute=r["recompute"], gated_mlp=False,
        zero_stage=3,  # FULL_SHARD over all ranks (no hybrid sharding in the table)
        # Composer amp_bf16 + DEFAULT: bf16 gathers, fp32 gradient reduce; PURE: all bf16
        grad_bytes=4.0 if r["mixed_precision"] == "amp_bf16" else 2.0,
        **(H100 if h100 else A100_40))
    args["kernel_efficiency"] = kernels or _kernels(r)
    args.update(kw)
    return step_estimate(**args)


def _err(rows, **kw):
    return np.array([_estimate(r, **kw).step_time_s / float(r["step_time_s"]) - 1
                     for r in rows])


def _mb_tokens(r):
    return int(r["micro_batch"]) * int(r["seq_len"])


def _by(rows, **kw):
    return [r for r in rows if all(r[k] == v for k, v in kw.items())]


def test_rows_and_step_times_follow_the_table():
    rows = _rows()
    assert len(rows) == 57 and all(r["sharding"] == "FULL_SHARD" for r in rows)
    for r in rows:  # step = global batch in tokens / throughput, as the table prints them
        tokens = int(r["global_batch"]) * int(r["seq_len"])
        assert float(r["step_time_s"]) == pytest.approx(tokens / int(r["tokens_per_s"]),
                                                        abs=1e-4)
        assert int(r["global_batch"]) == (int(r["micro_batch"]) * int(r["grad_accum"])
                                          * int(r["gpus"]))
        # software per table (sweep scripts): only the >= 128-GPU table ran
        # FlashAttention-2 (7b, 70b) and BACKWARD_PRE with forward prefetch
        large = r["gpu"] == "h100_80gb" and int(r["gpus"]) >= 128
        assert r["fsdp_prefetch"] == ("forward+backward_pre" if large else "backward_post")
        assert r["attn_impl"] == ("flash2" if large and r["model"] in ("mpt_7b", "mpt_70b")
                                  else "triton")


def _objective(slowdown, gemm):
    """Sum of squared log errors on the fit rows at trial parameter values."""
    out = 0.0
    for r in _fit_rows():
        ke = replace(H100_SXM_FA2, gemm=gemm, fsdp_backward_overlap=False)
        if r["attn_impl"] == "triton":
            ke = replace(ke, attention_fwd=ke.attention_fwd / slowdown,
                         attention_bwd=ke.attention_bwd / slowdown)
        out += math.log(_estimate(r, kernels=ke).step_time_s / float(r["step_time_s"])) ** 2
    return out


def test_fsdp_parameters_are_fitted_once_on_their_stated_subset():
    # TRITON_FLASH_ATTENTION_SLOWDOWN and FSDP_WHOLE_GEMM_EFFICIENCY minimise the log
    # errors of the 19 fit rows (assets/reference/fit_fsdp_llm_foundry.py: 1.6830, 0.7921)
    # and sit inside the published ranges: FlashAttention-2 1.3-2.5x the Triton kernel
    # (Dao 2023, A100), cuBLAS BF16 650-800 TFLOP/s on H100 SXM
    assert len(_fit_rows()) == 19
    k, g = TRITON_FLASH_ATTENTION_SLOWDOWN, FSDP_WHOLE_GEMM_EFFICIENCY
    best = _objective(k, g)
    for dk, dg in ((0.05, 0), (-0.05, 0), (0, 0.01), (0, -0.01)):
        assert best < _objective(k + dk, g + dg)
    assert 1.3 <= k <= 2.5 and 650.0 / 989.0 <= g <= 800.0 / 989.0
    assert H100_SXM_FSDP_FA2.gemm == g and H100_SXM_FSDP_TRITON.attention_fwd == \
        pytest.approx(H100_SXM_FA2.attention_fwd / k, rel=1e-12)


def test_mpt_h100_fsdp_step_times():
    # fit rows (19): mean 1.34 %, worst 3.6 % (1.38 / 3.7 % before the H100 table's refit of
    # 2026-12-01); the two held-out H100 rows with checkpointing at 4,096 tokens: -1.2 %,
    # -1.4 % (were -3.0 %, -4.2 %); the seven at
    # 8,192..65,536 tokens with micro-batches >= 16,384 tokens were -11.8 .. -31.4 % with
    # FlashAttention-2 speed assumed for every run (the Triton kernel they ran is slower)
    fit = _err(_fit_rows())
    # (tolerances: the multi-node rows move by up to 0.7 points with the collective model's
    # network efficiency, being refitted in twin/compute/collectives.py)
    assert np.abs(fit).mean() == pytest.approx(0.0134, abs=0.001)
    assert np.abs(fit).max() == pytest.approx(0.0357, abs=0.001)
    mid = [r for r in _rows() if r["gpu"] == "h100_80gb" and r["recompute"] == "full"
           and r["seq_len"] == "4096" and _mb_tokens(r) >= 16384]
    e = _err(mid)
    assert len(e) == 2 and np.all(np.abs(e) < 0.015), e
    long_ = [r for r in _fit_rows() if int(r["seq_len"]) >= 8192]
    old = _err(long_, kernels=H100_SXM_FA2)
    assert len(long_) == 5 and old.max() < -0.11 and old.min() < -0.31
    assert np.all(np.abs(_err(long_)) < 0.021)


def test_pytorch_fsdp_backward_collectives_add_to_each_layer():
    # mechanism (docs/validation.md): PyTorch FSDP runs all-gathers and reduce-scatters on
    # one NCCL stream, so a reduce-scatter the next all-gather waits behind stalls the next
    # layer's backward (PyTorch docs/source/notes/fsdp.rst; PRs 69282, 70235), and NCCL's
    # blocks take SMs from the GEMMs they overlap.  Held out, the 8 H100 runs without
    # checkpointing (7b, 13b; one micro-batch of 2-6 sequences) come to -9.5 .. +1.2 %
    # (mean 5.1 %); with the collectives hidden behind the layer, as the twin had them,
    # -18.0 .. -30.4 % (mean 26.1 %): the steady 5-9 ms per layer and micro-batch
    rows = _rows()
    noac = _by(rows, gpu="h100_80gb", recompute="none")
    e = _err(noac)
    assert len(e) == 8 and np.abs(e).mean() == pytest.approx(0.051, abs=0.004)
    assert e.min() == pytest.approx(-0.095, abs=0.002) and e.max() < 0.015
    hidden = np.array([_estimate(r, kernels=replace(_kernels(r), fsdp_backward_overlap=True))
                       .step_time_s / float(r["step_time_s"]) - 1 for r in noac])
    assert hidden.max() < -0.16 and np.abs(hidden).mean() > 0.2
    # the exposed time is one all-gather and one reduce-scatter per layer and micro-batch
    r = _by(noac, model="mpt_13b", gpus="8")[0]
    h, _, layers = MPT[r["model"]]
    p_layer = 12 * h * h + 2 * h
    coll = dict(nodes=1, ranks_per_node=8, gpus_per_node=8, nvlink_gb_s=450.0, nvls=True)
    ag = float(group_collective_time_s("all_gather", p_layer * 2.0, **coll))
    rs = float(group_collective_time_s("reduce_scatter", p_layer * 4.0, **coll))
    assert _estimate(r).breakdown["dp_comm_exposed"] == pytest.approx(layers * (ag + rs),
                                                                      rel=1e-9)
    # the held-out H100 runs with micro-batches of 2-6 sequences under checkpointing
    # (70b on 32 GPUs, 30b on 8): -3.1 .. +4.1 % (were -10.3 .. -17.3 %), except 30b on 8
    # GPUs with one 8,192-token sequence, at the memory edge: -21.8 % (was -31.3 %)
    small = [r for r in rows if r["gpu"] == "h100_80gb" and r["recompute"] == "full"
             and _mb_tokens(r) < 16384]
    e = dict(zip([r["seq_len"] + "x" + r["micro_batch"] for r in small], _err(small),
                 strict=True))
    assert len(e) == 5 and e.pop("8192x1") == pytest.approx(-0.218, abs=0.002)
    assert all(abs(v) < 0.042 for v in e.values()), e


def test_mpt_a100_fsdp_step_times_held_out():
    # A100 40 GB, nothing fitted on it: the H100 fit carried over (whole GEMMs at the H100
    # ratio 0.7921 / 0.7020 of the A100 table's 0.7495, the Triton attention, the serial
    # backward).  The 14 runs with micro-batches >= 16,384 tokens (7b, 13b, 8..128 GPUs,
    # 512..16,384 tokens): mean 1.84 %, worst 5.1 % (1.98 / 5.4 % before the refit of
    # 2026-12-01); with the A100 table's GEMM efficiency they are 5-11 % slow.  Smaller
    # micro-batches: 30b / 70b on 32-128 GPUs within 4.6 %; 13b on 8 GPUs (16 micro-batches
    # of 8,192 tokens, at the memory edge) -10 .. -16 %, 70b on 64 GPUs (two sequences)
    # -25.4 %: not matched
    a100 = _by(_rows(), gpu="a100_40gb")
    big = [r for r in a100 if _mb_tokens(r) >= 16384]
    e = _err(big)
    assert len(e) == 14
    assert np.abs(e).mean() == pytest.approx(0.0184, abs=0.001)
    assert np.abs(e).max() == pytest.approx(0.0514, abs=0.001)
    table = _err(big, kernels=replace(A100_SXM_FSDP_TRITON, gemm=A100_SXM_MODERN.gemm))
    assert table.min() > 0.05
    small = {(r["model"], r["gpus"], r["seq_len"]): v for r, v in
             zip([r for r in a100 if _mb_tokens(r) < 16384],
                 _err([r for r in a100 if _mb_tokens(r) < 16384]), strict=True)}
    assert len(small) == 9
    # 70b on 64 and 128 GPUs: -25.4 and -4.6 % under the NIC-share law (the FSDP rings at
    # 0.91 of the 8x 200G NICs' line rate: the wire's 0.94 times RoCE's ratio to InfiniBand,
    # A100_40, the table's 1600 Gb/s RoCE), -24.2 and -3.9 % before it
    assert small["mpt_70b", "64", "2048"] == pytest.approx(-0.254, abs=0.003)
    assert small["mpt_70b", "128", "2048"] == pytest.approx(-0.046, abs=0.003)
    on8 = [v for (m, g, _), v in small.items() if m == "mpt_13b" and g == "8"]
    assert len(on8) == 5 and all(-0.165 < v < -0.095 for v in on8), on8
    assert all(abs(v) < 0.05 for (m, g, _), v in small.items() if g in ("128", "32"))
    # the Megatron 2021 table (unfused attention) stays far off
    assert _err(big, kernels=A100_SXM).min() > 0.05


def test_flash_attention_kernels_change_only_the_attention():
    # physics of the kernel entries: same GEMMs, attention time scales by the efficiency
    # ratio (no ramp change: attention_seq_half is the H100 table's), hand-computed
    r = next(r for r in _rows() if r["model"] == "mpt_7b" and r["seq_len"] == "65536")
    fa2, te = _estimate(r, kernels=H100_SXM_FA2), _estimate(r, kernels=H100_SXM)
    assert fa2.breakdown["gemm"] == pytest.approx(te.breakdown["gemm"], rel=1e-12)
    ratio = (H100_SXM.attention_fwd / H100_SXM_FA2.attention_fwd,
             H100_SXM.attention_bwd / H100_SXM_FA2.attention_bwd)
    assert min(ratio) * te.breakdown["attention"] <= fa2.breakdown["attention"] \
        <= max(ratio) * te.breakdown["attention"] * (1 + 1e-9)
    assert H100_SXM_FA2.attention_fwd == pytest.approx(0.3387, abs=1e-4)  # 335 / 989
    tri, f2 = _estimate(r, kernels=H100_SXM_FSDP_TRITON), _estimate(r, kernels=H100_SXM_FSDP_FA2)
    assert tri.breakdown["attention"] == pytest.approx(
        TRITON_FLASH_ATTENTION_SLOWDOWN * f2.breakdown["attention"], rel=1e-12)
    assert tri.breakdown["gemm"] == pytest.approx(
        fa2.breakdown["gemm"] * H100_SXM_FA2.gemm / FSDP_WHOLE_GEMM_EFFICIENCY, rel=1e-12)


#: torchtitan's Llama shapes (layers, hidden, ffn, heads, kv heads, vocab)
LLAMA = {"llama3_8b": (32, 4096, 14336, 32, 8, 128256),
         "llama3_70b": (80, 8192, 28672, 64, 8, 128256),
         "llama2_13b": (40, 5120, 13824, 40, 40, 32000),
         "llama2_70b": (80, 8192, 28672, 64, 8, 32000)}
A100_80 = dict(gpus_per_node=8, hbm_bw_tb_s=2.039, nvlink_gb_s=300.0, nvls=False,
               inter_node_gbps=1600.0, peak_tflops=312.0)


def test_torchtitan_fsdp2_a100_step_times():
    # torchtitan docs/performance.md (0413364): 64 A100 80 GB, FSDP2, one micro-batch of 1-2
    # sequences per GPU, attention by PyTorch SDPA (FlashAttention-2 class).  With the
    # PyTorch-FSDP A100 entry (a100_sxm_fsdp: whole GEMMs, serial backward collectives;
    # nothing fitted on A100), full checkpointing: Llama 3 70B (8,192) -3.3 %, Llama 2 70B
    # (4,096) -3.5 % (-2.8 / -3.0 % with a100_sxm_modern and the collectives hidden);
    # Llama 2 13B without checkpointing -7.7 % (was -10.5 %).  (-3.5, -3.7, -7.9 % before the
    # H100 and A100 tables' refit of 2026-12-01.)  The op-level and
    # every-other-layer selective schemes are not the twin's "selective" (attention core
    # only) and are not estimated.
    with open(ROOT / "assets/reference/fsdp_step_times_torchtitan.csv") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == 8
    err: dict = {}
    for name, ke in (("fsdp", A100_SXM_FSDP), ("modern", A100_SXM_MODERN)):
        for r in rows:
            if r["recompute"] not in ("full", "none"):
                continue
            layers, h, ffn, heads, kvh, vocab = LLAMA[r["model"]]
            b = int(r["local_batch"])
            e = step_estimate(layers=layers, hidden=h, ffn_hidden=ffn, heads=heads,
                              kv_heads=kvh, vocab=vocab, seq_len=int(r["seq_len"]),
                              global_batch=64 * b, micro_batch=b, tp=1, pp=1, cp=1, vpp=1,
                              gpus=64, precision="bf16", activation_recompute=r["recompute"],
                              zero_stage=3, grad_bytes=4.0, kernel_efficiency=ke, **A100_80)
            assert (e.breakdown["dp_comm_exposed"] > 0.0) == (ke is A100_SXM_FSDP)
            err[name, r["model"], r["recompute"]] = e.step_time_s / float(r["step_time_s"]) - 1
    new, old = "fsdp", "modern"
    # under the NIC-share law (docs/validation.md, collectives): a GPU has 25 GB/s of the
    # 8x HDR NICs, below the law's crossover, so the FSDP rings run at 0.94 of line rate
    # instead of 0.827 and these rows move 1.2-1.5 points further low (before the law:
    # -2.2, -2.3, -6.2 %); the fill-time law (the rings fill in the reference NICs' time)
    # 0.04-0.14 points more (before it: -3.42, -3.62, -7.72 %)
    assert err[new, "llama3_70b", "full"] == pytest.approx(-0.0326, abs=0.003)
    assert err[new, "llama2_70b", "full"] == pytest.approx(-0.0345, abs=0.003)
    assert err[new, "llama2_13b", "none"] == pytest.approx(-0.0771, abs=0.003)
    assert err[old, "llama3_70b", "full"] == pytest.approx(-0.028, abs=0.002)
    assert err[old, "llama2_13b", "none"] == pytest.approx(-0.105, abs=0.002)


def test_small_mpt_models_held_out():
    # the same H100 table's 760m, 1b and 3b FULL_SHARD rows (30, nothing fitted on them;
    # assets/reference/fsdp_step_times_llm_foundry_small.csv): the three with activation
    # checkpointing (65,536 / 32,768 tokens) -1.0 .. +0.9 % (were -29 .. -36 % with
    # FlashAttention-2 assumed and the collectives hidden); the 27 without it -17.9 .. -1.9 %,
    # mean 8.7 % (were -37 .. -7 %, mean 19 %): still fast without checkpointing, as the
    # 7b / 13b rows, more so at hidden sizes of 1,536-2,048 than at 2,560
    rows = _rows(ROOT / "assets/reference/fsdp_step_times_llm_foundry_small.csv")
    assert len(rows) == 30 and {r["model"] for r in rows} == {"mpt_760m", "mpt_1b", "mpt_3b"}
    for r in rows:
        assert float(r["step_time_s"]) == pytest.approx(
            int(r["global_batch"]) * int(r["seq_len"]) / int(r["tokens_per_s"]), abs=1e-4)
    ac = [r for r in rows if r["recompute"] == "full"]
    e = _err(ac)
    assert len(e) == 3 and np.all(np.abs(e) < 0.012), e
    assert np.all(_err(ac, kernels=H100_SXM_FA2) < -0.28)
    e = _err([r for r in rows if r["recompute"] == "none"])
    assert len(e) == 27 and np.abs(e).mean() == pytest.approx(0.087, abs=0.004)
    assert -0.185 < e.min() and e.max() < -0.015
