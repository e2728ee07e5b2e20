"""PyTorch FSDP (ZeRO-3) step times: MosaicML's MPT benchmark table (llm-foundry) run
through the twin's FSDP path with the dense parameters as fitted on H100 / A100 (nothing
refitted here).  docs/validation.md, "MoE and FSDP", has the table and the limits."""

import csv
from pathlib import Path

import numpy as np
import pytest

from twin.compute import step_estimate
from twin.compute.step import A100_SXM, A100_SXM_MODERN, H100_SXM, H100_SXM_FA2

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "assets/reference/fsdp_step_times_llm_foundry.csv"
#: mpt-*.yaml (llm-foundry): d_model, n_heads, n_layers; expansion 4, vocab 50,368
MPT = {"mpt_7b": (4096, 32, 32), "mpt_13b": (5120, 40, 40), "mpt_30b": (7168, 56, 48),
       "mpt_70b": (8192, 64, 80)}
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
            inter_node_gbps=3200.0, peak_tflops=989.0)
#: the table's heading: A100 40 GB, 1600 Gb/s node-node RoCE
A100_40 = dict(gpus_per_node=8, hbm_bw_tb_s=1.555, nvlink_gb_s=300.0, nvls=False,
               inter_node_gbps=1600.0, transport="roce", peak_tflops=312.0)


def _rows():
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _estimate(r, kernels=None, **kw):
    """The twin's step for a table row; kernels default: H100 with FlashAttention-2, A100
    with today's software (flash attention; MPT's ``attn_impl: flash``)."""
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
    args["kernel_efficiency"] = kernels or (H100_SXM_FA2 if h100 else A100_SXM_MODERN)
    args.update(kw)
    return step_estimate(**args)


def _err(rows, **kw):
    return np.array([_estimate(r, **kw).step_time_s / float(r["step_time_s"]) - 1
                     for r in rows])


def _in_scope(r, gpu="h100_80gb"):
    """Activation checkpointing, sequences up to 2,048 tokens, micro-batches of
    16,384 tokens and more (the runs the twin matches; the others are below)."""
    return (r["gpu"] == gpu and r["recompute"] == "full"
            and int(r["seq_len"]) <= 2048 and _mb_tokens(r) >= 16384)


def _mb_tokens(r):
    return int(r["micro_batch"]) * int(r["seq_len"])


def test_rows_and_step_times_follow_the_table():
    rows = _rows()
    assert len(rows) == 57 and all(r["sharding"] == "FULL_SHARD" for r in rows)
    for r in rows:  # step = global batch in tokens / throughput, as the table prints them
        tokens = int(r["global_batch"]) * int(r["seq_len"])
        assert float(r["step_time_s"]) == pytest.approx(tokens / int(r["tokens_per_s"]),
                                                        abs=1e-4)
        assert int(r["global_batch"]) == (int(r["micro_batch"]) * int(r["grad_accum"])
                                          * int(r["gpus"]))


def test_mpt_h100_fsdp_step_times_with_flash_attention_2():
    # 14 H100 rows with activation checkpointing, sequences <= 2,048 and micro-batches of
    # >= 16,384 tokens (13b, 30b, 70b on 8..512 GPUs, 7b / 13b at 1,024 tokens): the H100
    # table with FlashAttention-2's published attention throughput (Dao 2023), nothing
    # fitted: mean 1.65 %, worst 2.84 % (-2.4 .. +2.8 %); with the H100 table's own
    # (cuDNN / Transformer Engine) attention the twin is fast: mean 2.06 %, worst 4.82 %
    rows = [r for r in _rows() if _in_scope(r)]
    assert len(rows) == 14
    e = np.abs(_err(rows))
    assert e.mean() == pytest.approx(0.0165, abs=0.0005)
    assert e.max() == pytest.approx(0.0284, abs=0.0005)
    e0 = _err(rows, kernels=H100_SXM)
    assert np.abs(e0).mean() == pytest.approx(0.0206, abs=0.0005)
    assert np.abs(e0).max() == pytest.approx(0.0482, abs=0.0005)
    assert e0.mean() < -0.015  # too fast on the whole without FlashAttention-2's speed
    # FSDP's per-layer gathers (bf16) and reduce-scatters (fp32) hide behind each layer:
    # the measured step grows 5.1 % from 128 to 512 GPUs for 70b (3.9 % for 30b), the
    # twin's less (its rank jitter only), and none of it is exposed collectives
    by = {(r["model"], r["gpus"]): r for r in rows}
    for m in ("mpt_70b", "mpt_30b"):
        lo, hi = _estimate(by[m, "128"]), _estimate(by[m, "512"])
        assert hi.breakdown["dp_comm_exposed"] == 0.0 == lo.breakdown["dp_comm_exposed"]
        assert 1.0 < hi.step_time_s / lo.step_time_s < float(by[m, "512"]["step_time_s"]) \
            / float(by[m, "128"]["step_time_s"])


def test_mpt_rows_outside_the_twins_reach_are_measured_not_hidden():
    # documented limits (docs/validation.md): the twin is fast on H100 runs without
    # activation checkpointing (7b and 13b, 6 and 2 sequences per GPU: -13.6 .. -27.0 %),
    # on long sequences on 8 GPUs (4,096..65,536 tokens: -3.0 .. -31.4 %; A100 -16.1 ..
    # -2.2 %) and on A100 micro-batches under 16,384 tokens (-29.8 .. +3.2 %)
    rows = _rows()
    noac = _err([r for r in rows if r["gpu"] == "h100_80gb" and r["recompute"] == "none"])
    assert len(noac) == 8 and np.all((noac > -0.275) & (noac < -0.13)), noac
    long_ = _err([r for r in rows if r["gpu"] == "h100_80gb" and int(r["seq_len"]) > 2048])
    assert len(long_) == 9 and np.all((long_ > -0.32) & (long_ < -0.02)), long_
    a100 = [r for r in rows if r["gpu"] == "a100_40gb"]
    small = _err([r for r in a100 if int(r["seq_len"]) <= 2048 and _mb_tokens(r) < 16384])
    assert len(small) == 7 and small.min() == pytest.approx(-0.298, abs=0.002)
    assert small.max() < 0.035
    long_ = _err([r for r in a100 if int(r["seq_len"]) > 2048])
    assert len(long_) == 5 and np.all((long_ > -0.165) & (long_ < -0.02)), long_


def test_mpt_a100_fsdp_step_times_with_todays_software():
    # the 11 A100 40 GB rows under the same rule (13b and 7b, 8..128 GPUs, 1600 Gb/s RoCE)
    # with the A100 kernels and today's software (flash attention, A100_SXM_MODERN, its
    # first public check): mean 2.56 %, worst 4.17 % (+0.5 .. +4.2 %); the Megatron 2021
    # stack's table (unfused attention) is 8-27 % slow on them (the unfused attention
    # costs most at 2,048 tokens: +23..+27 %)
    rows = [r for r in _rows() if _in_scope(r, "a100_40gb")]
    assert len(rows) == 11
    e = _err(rows)
    assert np.abs(e).mean() == pytest.approx(0.0256, abs=0.0005)
    assert np.abs(e).max() == pytest.approx(0.0417, abs=0.0005)
    old = _err(rows, kernels=A100_SXM)
    assert old.min() == pytest.approx(0.080, abs=0.002)
    assert old.max() == pytest.approx(0.268, abs=0.002)


def test_flash_attention_2_changes_only_the_attention():
    # physics of the kernel entry: same GEMMs, attention time scales by the efficiency
    # ratio (no ramp change: attention_seq_half is the H100 table's), hand-computed
    r = next(r for r in _rows() if r["model"] == "mpt_7b" and r["seq_len"] == "65536")
    fa2, te = _estimate(r), _estimate(r, kernels=H100_SXM)
    assert fa2.breakdown["gemm"] == pytest.approx(te.breakdown["gemm"], rel=1e-12)
    ratio = (H100_SXM.attention_fwd / H100_SXM_FA2.attention_fwd,
             H100_SXM.attention_bwd / H100_SXM_FA2.attention_bwd)
    assert min(ratio) * te.breakdown["attention"] <= fa2.breakdown["attention"] \
        <= max(ratio) * te.breakdown["attention"] * (1 + 1e-9)
    assert H100_SXM_FA2.attention_fwd == pytest.approx(0.3387, abs=1e-4)  # 335 / 989


#: torchtitan's Llama shapes (layers, hidden, ffn, heads, kv heads, vocab)
LLAMA = {"llama3_8b": (32, 4096, 14336, 32, 8, 128256),
         "llama3_70b": (80, 8192, 28672, 64, 8, 128256),
         "llama2_13b": (40, 5120, 13824, 40, 40, 32000),
         "llama2_70b": (80, 8192, 28672, 64, 8, 32000)}
A100_80 = dict(gpus_per_node=8, hbm_bw_tb_s=2.039, nvlink_gb_s=300.0, nvls=False,
               inter_node_gbps=1600.0, peak_tflops=312.0)


def test_torchtitan_fsdp2_a100_step_times():
    # torchtitan docs/performance.md (0413364): 64 A100 80 GB, FSDP2, one micro-batch of 1-2
    # sequences per GPU.  Full checkpointing (Llama 3 70B at 8,192, Llama 2 70B at 4,096):
    # -2.9 % and -3.1 % with a100_sxm_modern, nothing fitted; Llama 2 13B without
    # checkpointing -10.6 % (fast, as the MPT runs without it).  The op-level and
    # every-other-layer selective schemes are not the twin's "selective" (attention core
    # only) and are not estimated.
    with open(ROOT / "assets/reference/fsdp_step_times_torchtitan.csv") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == 8
    err = {}
    for r in rows:
        if r["recompute"] not in ("full", "none"):
            continue
        layers, h, ffn, heads, kvh, vocab = LLAMA[r["model"]]
        b = int(r["local_batch"])
        e = step_estimate(layers=layers, hidden=h, ffn_hidden=ffn, heads=heads, kv_heads=kvh,
                          vocab=vocab, seq_len=int(r["seq_len"]), global_batch=64 * b,
                          micro_batch=b, tp=1, pp=1, cp=1, vpp=1, gpus=64, precision="bf16",
                          activation_recompute=r["recompute"], zero_stage=3, grad_bytes=4.0,
                          kernel_efficiency=A100_SXM_MODERN, **A100_80)
        assert e.breakdown["dp_comm_exposed"] == 0.0
        err[r["model"], r["recompute"]] = e.step_time_s / float(r["step_time_s"]) - 1
    assert err["llama3_70b", "full"] == pytest.approx(-0.029, abs=0.002)
    assert err["llama2_70b", "full"] == pytest.approx(-0.031, abs=0.002)
    assert err["llama2_13b", "none"] == pytest.approx(-0.106, abs=0.002)
