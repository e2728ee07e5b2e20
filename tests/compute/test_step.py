"""Training step model: calibration point, public step times, scaling laws, stragglers."""

import csv
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.compute import (
    DEPLOYMENT_STEP_FACTOR,
    gpu_clock_fraction_at_power_cap,
    model_flops_per_sequence,
    step_estimate,
)
from twin.compute.shapes import MODEL_SHAPES

ROOT = Path(__file__).resolve().parents[2]
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
            inter_node_gbps=3200.0)
A100 = dict(gpus_per_node=8, hbm_bw_tb_s=2.0, nvlink_gb_s=300.0, nvls=False,
            inter_node_gbps=1600.0, peak_tflops=312.0)
SHAPES = {  # public model cards / NeMo configs
    "8b": dict(layers=32, hidden=4096, ffn_hidden=14336, heads=32, kv_heads=8, vocab=128256,
               seq_len=8192),
    "70b": dict(layers=80, hidden=8192, ffn_hidden=28672, heads=64, kv_heads=8, vocab=128256,
                seq_len=8192),
    "405b": dict(layers=126, hidden=16384, ffn_hidden=53248, heads=128, kv_heads=8,
                 vocab=128256, seq_len=8192),
    "340b": dict(layers=96, hidden=18432, ffn_hidden=73728, heads=96, kv_heads=8, vocab=256000,
                 seq_len=4096, gated_mlp=False),
    "175b": dict(layers=96, hidden=12288, ffn_hidden=49152, heads=96, kv_heads=96, vocab=51200,
                 seq_len=2048, gated_mlp=False),
}
PAR = {"8b": dict(tp=1, pp=1, cp=2, vpp=1), "70b": dict(tp=4, pp=4, cp=2, vpp=5),
       "405b": dict(tp=8, pp=9, cp=2, vpp=7), "340b": dict(tp=8, pp=8, cp=1, vpp=12),
       "175b": dict(tp=4, pp=8, cp=1, vpp=12)}
#: NVIDIA dgxc-benchmarking (DGX H100, NeMo 24.09/24.11): llama3.1/README_{8b,70b,405b}.md,
#: nemotron/README_340b.md, nemo_megatron/README_175b.md; (model, GPUs, global batch,
#: BF16 step [s], FP8 step [s]) at the smallest and largest scale of each table.
DGXC = [("8b", 8, 128, 12.91, 9.67), ("8b", 128, 2048, 13.10, 9.82),
        ("70b", 64, 128, 14.72, 11.01), ("70b", 2048, 4096, 14.98, 11.39),
        ("405b", 576, 252, 17.20, 11.24), ("405b", 2304, 1008, 17.62, 12.35),
        ("340b", 128, 32, 4.61, 3.16), ("340b", 2048, 512, 4.84, 3.49),
        ("175b", 128, 256, 8.309, 5.626), ("175b", 2048, 4096, 8.49, 5.96)]


def est(model="70b", gpus=64, global_batch=128, precision="bf16", **kw):
    args = dict(SHAPES[model], **PAR[model], gpus=gpus, global_batch=global_batch, micro_batch=1,
                peak_tflops=989.0 if precision == "bf16" else 1979.0, precision=precision, **H100)
    args.update(kw)
    return step_estimate(**args)


def test_flops_formula_matches_the_published_example():
    # dgxc-benchmarking README_70b: 3.94e15 FLOPs per sequence; MFU 0.542 at 14.72 s
    f = model_flops_per_sequence(**SHAPES["70b"])
    assert f == pytest.approx(3.94e15, rel=0.005)
    assert 128 * f / 14.72 / 64 / 989e12 == pytest.approx(0.542, abs=0.001)


def test_llama31_70b_64gpu_within_5_percent():
    # calibration.yaml training.llama31_70b_bf16_64gpu
    e = est()
    assert e.step_time_s == pytest.approx(14.72, rel=0.05)
    assert e.mfu == pytest.approx(0.541, rel=0.05)
    assert e.tokens_per_s_per_gpu == pytest.approx(1113, rel=0.05)
    assert e.tokens_per_day == pytest.approx(e.tokens_per_s_per_gpu * 64 * 86400)
    assert sum(e.breakdown.values()) == pytest.approx(e.step_time_s)
    # per-kernel parts, not one factor: GEMMs dominate, then attention
    b = e.breakdown
    assert b["gemm"] > b["attention"] > b["elementwise"] > b["pipeline_bubble"] > 0


def _dgxc_rows():
    with open(ROOT / "assets/reference/step_times_h100_dgxc.csv") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _dgxc_error(r) -> float:
    shape = dict(MODEL_SHAPES[r["model"]], layers=int(r["layers"]))
    prec = r["precision"]
    e = step_estimate(**shape, gpus=int(r["gpus"]), global_batch=int(r["global_batch"]),
                      micro_batch=int(r["micro_batch"]), tp=int(r["tp"]), pp=int(r["pp"]),
                      cp=int(r["cp"]), vpp=int(r["vpp"]), precision=prec,
                      grad_bytes=float(r["grad_bytes"]),
                      peak_tflops=989.0 if prec == "bf16" else 1979.0, **H100)
    return e.step_time_s / float(r["step_time_s"]) - 1.0


def test_public_dgx_h100_step_times():
    # 70 DGX H100 NeMo step times (8B..405B, BF16 and FP8, 8..2,304 GPUs); the kernel
    # table was fitted on the 20 "fit" rows only (assets/reference/fit_step_h100.py)
    rows = _dgxc_rows()
    assert len(rows) >= 70 and {r["precision"] for r in rows} == {"bf16", "fp8"}
    err = {role: np.abs([_dgxc_error(r) for r in rows if r["role"] == role])
           for role in ("fit", "validate")}
    both = np.concatenate(list(err.values()))
    # issue 16 goals: mean |error| <= 3 % (held: 2.3 % on the held-out rows, 2.4 % on all)
    assert err["validate"].mean() <= 0.025 and both.mean() <= 0.025
    # worst <= 8 % is NOT met: Llama 3.1 405B FP8 is 8-13 % slow on five of its six rows
    # while 70B FP8 is 4-7 % fast; no physical term found separates them (the FP8 casts on
    # sequence-parallel shards, bf16 gradient reduction of the FP8 runs, output layer and
    # TP traffic in FP8, a size-dependent FP8 GEMM efficiency were tried: docs/validation.md);
    # every other model and precision is within 5.5 %
    assert both.max() <= 0.13
    others = [abs(_dgxc_error(r)) for r in rows
              if not (r["model"] == "llama31_405b" and r["precision"] == "fp8")]
    assert max(others) <= 0.055


def test_llama3_405b_at_16k_gpus_in_the_reported_mfu_band():
    # Llama 3 paper (arXiv 2407.21783) Table 4: 405B on 8,192 / 16,384 H100, TP8 PP16,
    # DP 64 / 128, 8k sequences, 16M tokens per batch: 43 % / 41 % BF16 MFU (RoCE fabric).
    # Meta's virtual-stage count is not published; 4 is assumed.
    mfu = []
    for gpus in (8192, 16384):
        e = est("405b", gpus, 2048, tp=8, pp=16, cp=1, vpp=4, transport="roce")
        mfu.append(e.mfu)
    assert 0.36 < mfu[1] < mfu[0] < 0.48
    assert mfu[0] == pytest.approx(0.43, rel=0.12)
    assert mfu[1] == pytest.approx(0.41, rel=0.12)


def test_fp8_is_faster_but_less_than_twice():
    b, f = est(), est(precision="fp8")
    assert 1.0 < b.step_time_s / f.step_time_s < 2.0


@settings(max_examples=30, deadline=None)
@given(model=st.sampled_from(["8b", "70b", "175b"]), k=st.integers(0, 5))
def test_more_data_parallel_ranks_never_beat_linear_scaling(model, k):
    p = PAR[model]
    mp = p["tp"] * p["pp"] * p["cp"]
    gbs = 4096 if model != "8b" else 2048
    base = est(model, gpus=mp, global_batch=gbs)
    more = est(model, gpus=mp * 2**k, global_batch=gbs)
    # strong scaling: at best 2^k faster
    assert more.step_time_s >= base.step_time_s / 2**k * (1 - 1e-9)
    # weak scaling (batch grows with dp): per-GPU throughput never rises
    weak = est(model, gpus=mp * 2**k, global_batch=gbs // 2**5 * 2**k)
    weak0 = est(model, gpus=mp, global_batch=gbs // 2**5)
    assert weak.tokens_per_s_per_gpu <= weak0.tokens_per_s_per_gpu * (1 + 1e-9)


def test_a_throttled_gpu_slows_the_whole_job():
    nominal = est(gpus=128, global_batch=256)
    clocks = np.ones(128)
    clocks[77] = 0.8  # one hot GPU
    slow = est(gpus=128, global_batch=256, clock_fraction=clocks)
    assert slow.step_time_s == est(gpus=128, global_batch=256, clock_fraction=0.8).step_time_s
    # compute-bound kernels run 1/0.8 longer; memory and network parts do not
    ratio = slow.step_time_s / nominal.step_time_s
    assert 1.15 < ratio < 1.25
    assert slow.breakdown["gemm"] == pytest.approx(nominal.breakdown["gemm"] / 0.8)
    assert slow.breakdown["elementwise"] == pytest.approx(nominal.breakdown["elementwise"])


def test_power_cap_lowers_throughput_sublinearly():
    caps = np.array([300.0, 400.0, 500.0, 600.0, 700.0])
    f = gpu_clock_fraction_at_power_cap(caps, 700.0)
    assert np.all(np.diff(f) > 0) and f[-1] == 1.0
    assert gpu_clock_fraction_at_power_cap(800.0, 700.0) == 1.0
    assert gpu_clock_fraction_at_power_cap(None, 700.0) == 1.0
    steps = np.array([est(clock_fraction=x).step_time_s for x in f])
    thr = steps[-1] / steps
    power_ratio = caps / 700.0
    assert np.all(thr[:-1] > power_ratio[:-1])  # 43 % less power costs far less speed
    assert np.all(thr[:-1] < 1.0)


def test_deployment_overheads_match_the_vela_bounds():
    bm = est().step_time_s
    ct = est(deployment="container").step_time_s
    vm = est(deployment="vm").step_time_s
    assert bm < ct < vm
    assert ct / bm - 1 < 0.05          # OpenShift within 5 % of bare metal (Vela)
    assert abs(ct / vm - 1) < 0.04     # iteration time within 4 % of VMs (Vela)
    assert set(DEPLOYMENT_STEP_FACTOR) == {"bare_metal", "container", "vm"}


def test_slower_transport_and_fabric_slow_the_step():
    kw = dict(gpus=2048, global_batch=4096)
    ib = est(**kw).step_time_s
    tcp = est(transport="tcp", **kw).step_time_s
    thin = est(inter_node_gbps=400.0, **kw).step_time_s
    assert ib < tcp and ib < thin


def test_partitioned_job_makes_no_progress():
    e = est(inter_node_gbps=0.0)
    assert e.step_time_s == float("inf") and e.tokens_per_s_per_gpu == 0.0 and e.mfu == 0.0
    assert est(clock_fraction=np.r_[np.ones(63), 0.0]).step_time_s == float("inf")
    one_node = est("8b", gpus=8, global_batch=128, inter_node_gbps=0.0)
    assert np.isfinite(one_node.step_time_s)


def test_recompute_costs_a_forward():
    none, sel, full = (est(activation_recompute=r).step_time_s
                       for r in ("none", "selective", "full"))
    assert none < sel < full
    assert full / none == pytest.approx(1 + 1 / 3, abs=0.08)


#: Narayanan et al., SC21 (Megatron-LM PTD-P), Table 1: GPT on A100 80 GB (Selene, 8x HDR
#: 200 Gb/s per node), seq 2048, vocab 51200, full recompute: (params [B], heads, hidden,
#: layers, TP, PP, GPUs, batch, achieved share of peak incl. recompute FLOPs)
PTDP = [(1.7, 24, 2304, 24, 1, 1, 32, 512, .44), (3.6, 32, 3072, 30, 2, 1, 64, 512, .44),
        (7.5, 32, 4096, 36, 4, 1, 128, 512, .46), (18.4, 48, 6144, 40, 8, 1, 256, 1024, .43),
        (39.1, 64, 8192, 48, 8, 2, 512, 1536, .44), (76.1, 80, 10240, 60, 8, 4, 1024, 1792, .45),
        (145.6, 96, 12288, 80, 8, 8, 1536, 2304, .47),
        (310.1, 128, 16384, 96, 8, 16, 1920, 2160, .50),
        (529.6, 128, 20480, 105, 8, 35, 2520, 2520, .52),
        (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, .52)]
A100_80 = dict(gpus_per_node=8, hbm_bw_tb_s=2.039, nvlink_gb_s=300.0, nvls=False,
               inter_node_gbps=1600.0, peak_tflops=312.0)


#: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
#: (2022), A100 80 GB, seq 2048, micro-batch 1, TP 8: (name, heads, hidden, layers, PP,
#: GPUs, batch, step [s] with full recompute, with selective recompute)
K22 = [("22B", 64, 6144, 48, 1, 8, 4, 1.42, 1.10), ("175B", 96, 12288, 96, 8, 64, 64, 18.13, 13.75),
       ("530B", 128, 20480, 105, 35, 280, 280, 49.05, 37.83),
       ("1T", 160, 25600, 128, 64, 512, 512, 94.42, 71.49)]


def _gpt(heads, h, layers, tp, pp, gpus, batch, mb, vpp, rec):
    return step_estimate(layers=layers, hidden=h, ffn_hidden=4 * h, heads=heads, kv_heads=heads,
                         vocab=51200, seq_len=2048, global_batch=batch, micro_batch=mb, tp=tp,
                         pp=pp, cp=1, vpp=vpp, gpus=gpus, gated_mlp=False,
                         activation_recompute=rec, **A100_80)


def _a100_errors() -> list[float]:
    """Relative errors of the 18 A100 rows (SC21 Table 1 and Korthikanti et al. 2022)."""
    errs = []
    for _, heads, h, layers, tp, pp, gpus, batch, ref in PTDP:
        best = max(_gpt(heads, h, layers, tp, pp, gpus, batch, mb, vpp, "full").mfu * 4 / 3
                   for mb in (1, 2) for vpp in (1, 2)
                   if batch % (gpus // (tp * pp) * mb) == 0 and layers % (pp * vpp) == 0)
        errs.append(best / ref - 1)
    for _, heads, h, layers, pp, gpus, batch, full, sel in K22:
        for rec, ref in (("full", full), ("selective", sel)):
            t = min(_gpt(heads, h, layers, 8, pp, gpus, batch, 1, vpp, rec).step_time_s
                    for vpp in (1, 2, 3) if layers % (pp * vpp) == 0)
            errs.append(ref / t - 1)
    return errs


def test_a100_megatron_scaling_tables():
    # SC21: the paper's FLOP count includes the recompute forward (share = MFU * 4/3);
    # each row at the best micro-batch (1, 2) and virtual stages (1, 2, 3), as tuned
    errs = np.abs(_a100_errors())
    assert errs.mean() < 0.05 and errs.max() < 0.12, errs
    # selective recompute saves most of the full recompute's cost
    full = _gpt(96, 12288, 96, 8, 8, 64, 64, 1, 2, "full").step_time_s
    sel = _gpt(96, 12288, 96, 8, 8, 64, 64, 1, 2, "selective").step_time_s
    assert sel / full == pytest.approx(13.75 / 18.13, rel=0.06)


@pytest.mark.parametrize("bad", [dict(gpus=100), dict(global_batch=101), dict(tp=3),
                                 dict(precision="fp4"), dict(deployment="cloud"),
                                 dict(clock_fraction=1.5), dict(transport="x")])
def test_bad_configurations_raise(bad):
    with pytest.raises(ValueError):
        est(**bad)


@settings(max_examples=60, deadline=None)
@given(layers=st.sampled_from([16, 32, 48, 80]), hidden=st.sampled_from([2048, 4096, 8192]),
       tp=st.sampled_from([1, 2, 4, 8, 16]), pp=st.sampled_from([1, 2, 4]),
       cp=st.sampled_from([1, 2]), vpp=st.sampled_from([1, 2]), dp=st.sampled_from([1, 2, 8, 64]),
       seq=st.sampled_from([2048, 4096, 8192]), acc=st.integers(1, 16),
       prec=st.sampled_from(["bf16", "fp8"]), clock=st.floats(0.3, 1.0),
       rec=st.sampled_from(["none", "selective", "full"]))
def test_any_valid_configuration_gives_a_sane_step(layers, hidden, tp, pp, cp, vpp, dp, seq,
                                                   acc, prec, clock, rec):
    heads = hidden // 128
    gpus = tp * pp * cp * dp
    e = step_estimate(layers=layers, hidden=hidden, ffn_hidden=int(3.5 * hidden), heads=heads,
                      kv_heads=8, vocab=128256, seq_len=seq, global_batch=dp * acc, micro_batch=1,
                      tp=tp, pp=pp, cp=cp, vpp=vpp, gpus=gpus,
                      peak_tflops=989.0 if prec == "bf16" else 1979.0, precision=prec,
                      activation_recompute=rec, clock_fraction=clock, **H100)
    assert np.isfinite(e.step_time_s) and e.step_time_s > 0
    assert 0 < e.mfu < 1
    assert all(v >= 0 for v in e.breakdown.values())
    assert sum(e.breakdown.values()) == pytest.approx(e.step_time_s)


def test_all_88_public_step_times_mean_error_within_3_percent():
    # issue 16: >= 30 public points, H100 and A100, BF16 and FP8, 8B..1T, 8..3,072 GPUs
    h100 = [_dgxc_error(r) for r in _dgxc_rows()]
    a100 = _a100_errors()
    e = np.abs(h100 + a100)
    assert len(e) == 88
    assert e.mean() <= 0.030, e.mean()  # 2.8 %
    # worst <= 8 % is not met on 6 of 88: five 405B FP8 rows (8-13 %) and Korthikanti's
    # 22B with selective recompute on 8 A100 (10.3 %)
    assert (e > 0.08).sum() <= 6 and e.max() <= 0.13
