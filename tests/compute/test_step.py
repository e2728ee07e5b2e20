"""Training step model: calibration point, public step times, scaling laws, stragglers."""

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import twin.compute.step as step_module
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


def _dgxc_kwargs(r) -> dict:
    """step_estimate keywords of one CSV row: shape, layout and the recipe's settings (the
    CSV's columns after ``role``; assets/reference/fit_step_h100.py uses this too)."""
    shape = dict(MODEL_SHAPES[r["model"]], layers=int(r["layers"]))
    for k in ("kv_heads", "vocab"):
        if r[k]:
            shape[k] = int(r[k])
    prec = r["precision"]
    return dict(**shape, gpus=int(r["gpus"]), global_batch=int(r["global_batch"]),
                micro_batch=int(r["micro_batch"]), tp=int(r["tp"]), pp=int(r["pp"]),
                cp=int(r["cp"]), vpp=int(r["vpp"]), precision=prec,
                peak_tflops=989.0 if prec == "bf16" else 1979.0,
                grad_bytes=float(r["grad_bytes"]), param_gather_bytes=float(r["param_bytes"]),
                tp_fp8_reduce_scatter=r["tp_rs_fp8"] == "1",
                activation_recompute=r["recompute"], **H100)


def _dgxc_error(r) -> float:
    return step_estimate(**_dgxc_kwargs(r)).step_time_s / float(r["step_time_s"]) - 1.0


def test_public_dgx_h100_step_times():
    # 70 DGX H100 NeMo step times (8B..405B, BF16 and FP8, 8..2,304 GPUs); the kernel
    # table was fitted on the 20 "fit" rows only (assets/reference/fit_step_h100.py)
    rows = _dgxc_rows()
    assert len(rows) >= 70 and {r["precision"] for r in rows} == {"bf16", "fp8"}
    err = {role: np.abs([_dgxc_error(r) for r in rows if r["role"] == role])
           for role in ("fit", "validate")}
    both = np.concatenate(list(err.values()))
    # issue 16 goals: mean |error| <= 3 %, worst <= 8 %, on the held-out rows and on all
    # (measured: held-out 2.1 %, worst 7.40 %, the Llama 3.1 405B FP8 proxy on 192 GPUs)
    assert err["validate"].mean() <= 0.03 and both.mean() <= 0.03
    assert err["validate"].max() <= 0.08 and both.max() <= 0.08
    # 405B FP8 stays 6-7 % slow on four rows while 70B FP8 is 2-4 % fast (docs/validation.md);
    # every other row within 5 % (measured 4.6 %, 70B FP8 on 64 GPUs)
    others = [abs(_dgxc_error(r)) for r in rows
              if not (r["model"] == "llama31_405b" and r["precision"] == "fp8")]
    assert max(others) <= 0.05


def test_405b_rows_run_the_recipes_shape():
    # dgxc-benchmarking llama3.1/README_405b.md: "model flops ... = 2.17E16" per sequence
    # with (number of query groups)/(attention heads) = 16/128: the recipe runs 16 KV groups
    # (llama3.1_405b.yaml num_query_groups: 16), not Llama 3.1's 8
    shape = dict(MODEL_SHAPES["llama31_405b"])
    assert model_flops_per_sequence(**dict(shape, kv_heads=16)) == pytest.approx(2.17e16,
                                                                                  rel=0.003)
    assert model_flops_per_sequence(**shape) != pytest.approx(2.17e16, rel=0.003)
    rows = [r for r in _dgxc_rows() if r["model"] == "llama31_405b"]
    assert {(r["kv_heads"], r["vocab"]) for r in rows} == {("16", "51200")}
    # GPT-2 BPE (50,257 tokens) padded to a multiple of 128 x TP 8
    assert 51200 % (128 * 8) == 0 and 51200 - 1024 < 50257 <= 51200


#: Llama 3 405B's pipeline as the Llama 3 paper (arXiv 2407.21783, sec. 3.3.2) describes it:
#: "we reduce one Transformer layer each from the first and the last stages ... the first
#: model chunk on the first stage has only the embedding, and the last model chunk on the last
#: stage has only output projection and loss calculation": 126 + 2 slots over 16 ranks is 8 a
#: rank, and a chunk left with the embedding alone holds one layer, so V = 8 (Megatron-core's
#: layout grammar, twin.compute.pipeline_layout).
LLAMA3_405B_LAYOUT = "E|(t|)*126,L"


def test_llama3_405b_at_16k_gpus_with_the_papers_pipeline():
    # Table 4: 405B on 8,192 / 16,384 H100 over RoCE, TP8 PP16, DP 64 / 128, 8k sequences,
    # 16M tokens per batch: 43 % / 41 % BF16 MFU.  With the paper's pipeline the twin gives
    # 52.2 % / 49.8 % (+21.4 % / +21.4 % in MFU; 51.9 / 49.2 %, +20.7 / +20.1 %, until HIR
    # replayed the interleaved bubble, 0.48 -> 0.42 s a step at both; its step 16-17 %
    # shorter if Meta counts FLOPs as
    # the twin does, 10-11 % if it counts 6 N a token): a known miss, pinned here so that it
    # shows when it moves (docs/validation.md).  NVIDIA's own 405B recipe on DGX H100
    # measured 54.4 % on the twin's FLOP count (2,304 GPUs, 17.62 s, below), so the gap is
    # between the two software stacks on the same GPU, which the twin, fitted on NVIDIA's
    # recipes, does not know.
    mfu = [est("405b", g, 2048, tp=8, pp=16, cp=1, vpp=8, transport="roce",
               pipeline_layout=LLAMA3_405B_LAYOUT).mfu for g in (8192, 16384)]
    assert mfu[0] == pytest.approx(0.522, abs=0.002)
    assert mfu[1] == pytest.approx(0.498, abs=0.002)  # 0.493 before 2ad1752's refit
    assert mfu[0] / 0.43 - 1 == pytest.approx(0.214, abs=0.005)
    assert mfu[1] / 0.41 - 1 == pytest.approx(0.214, abs=0.005)
    # without a layout V = 8 does not fit (126 layers < 16 x 8 chunks); the even split at
    # V = 4 this test assumed until 1 Dec 2026 gives 46.5 % / 42.7 % (+8.2 % / +4.1 %; 46.3 /
    # 42.2 % with the closed-form bubble before HIR), but
    # leaves the output layer on a rank of 8 layers, which the paper's balancing removes
    with pytest.raises(ValueError, match="layers=126 < pp\\*vpp=128"):
        est("405b", 8192, 2048, tp=8, pp=16, cp=1, vpp=8, transport="roce")
    old = [est("405b", g, 2048, tp=8, pp=16, cp=1, vpp=4, transport="roce").mfu
           for g in (8192, 16384)]
    assert old == pytest.approx([0.465, 0.427], abs=0.002)
    # NVIDIA's measured 405B BF16 row at 2,304 GPUs (dgxc-benchmarking, DGXC above):
    # 1,008 sequences of 8,192 tokens in 17.62 s, the recipe's 16 KV heads and 51,200-token
    # vocabulary (test_405b_rows_run_the_recipes_shape)
    flops = 1008 * model_flops_per_sequence(**dict(SHAPES["405b"], kv_heads=16, vocab=51200))
    assert flops / (17.62 * 2304 * 989e12) == pytest.approx(0.544, abs=0.002)


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
#: (2022, arXiv 2205.05198), A100 80 GB, seq 2048, TP 8, Table 3 (configurations) and
#: Table 5 (time per iteration): (name, heads, hidden, layers, PP, GPUs, batch, micro-batch,
#: step [s] with full recompute, with selective recompute).  The 22B runs its whole batch
#: of 4 as one micro-batch (Table 3; its per-layer times, Table 4, times 48 layers give
#: the step time only so), the others micro-batch 1.
K22 = [("22B", 64, 6144, 48, 1, 8, 4, 4, 1.42, 1.10),
       ("175B", 96, 12288, 96, 8, 64, 64, 1, 18.13, 13.75),
       ("530B", 128, 20480, 105, 35, 280, 280, 1, 49.05, 37.83),
       ("1T", 160, 25600, 128, 64, 512, 512, 1, 94.42, 71.49)]


def _gpt(heads, h, layers, tp, pp, gpus, batch, mb, vpp, rec, sequence_parallel=False):
    # the module's A100 table looked up at call time (the fit script swaps it), with the
    # row's own tensor-parallel scheme
    ke = dataclasses.replace(step_module.A100_SXM, sequence_parallel=sequence_parallel)
    return step_estimate(layers=layers, hidden=h, ffn_hidden=4 * h, heads=heads, kv_heads=heads,
                         vocab=51200, seq_len=2048, global_batch=batch, micro_batch=mb, tp=tp,
                         pp=pp, cp=1, vpp=vpp, gpus=gpus, gated_mlp=False,
                         activation_recompute=rec, kernel_efficiency=ke, **A100_80)


def _a100_rows() -> list[tuple]:
    """The 18 A100 rows (SC21 Table 1 and Korthikanti et al. 2022) with the twin's figure:
    (name, recompute, GPUs, quantity, measured, twin, relative error).

    SC21 rows compare the share of peak (higher is faster), Korthikanti's rows the step
    time; both errors are signed as the twin's speed over the measured one, minus 1.
    Sequence parallelism as each run had it: SC21 (2021) predates it (tensor-parallel
    all-reduces, norms and dropout on every token); Korthikanti et al. compare full
    recompute without it (their baseline) against "present work", selective recompute
    with sequence parallelism (Table 5).
    """
    rows = []
    for _, heads, h, layers, tp, pp, gpus, batch, ref in PTDP:
        best = max(_gpt(heads, h, layers, tp, pp, gpus, batch, mb, vpp, "full").mfu * 4 / 3
                   for mb in (1, 2) for vpp in (1, 2)
                   if batch % (gpus // (tp * pp) * mb) == 0 and layers % (pp * vpp) == 0)
        rows.append((f"GPT {h}h {layers}L (SC21 Table 1)", "full", gpus, "share of peak",
                     ref, best, best / ref - 1))
    for name, heads, h, layers, pp, gpus, batch, mb, full, sel in K22:
        for rec, ref in (("full", full), ("selective", sel)):
            t = min(_gpt(heads, h, layers, 8, pp, gpus, batch, mb, vpp, rec,
                         sequence_parallel=rec == "selective").step_time_s
                    for vpp in (1, 2, 3) if layers % (pp * vpp) == 0)
            rows.append((f"GPT-{name} (Korthikanti 2022)", rec, gpus, "step [s]", ref, t,
                         ref / t - 1))
    return rows


def _a100_errors() -> list[float]:
    """Relative errors of the 18 A100 rows (:func:`_a100_rows`)."""
    return [r[-1] for r in _a100_rows()]


def test_a100_megatron_scaling_tables():
    # SC21: the paper's FLOP count includes the recompute forward (share = MFU * 4/3);
    # each row at the best micro-batch (1, 2) and virtual stages (1, 2, 3), as tuned
    errs = np.abs(_a100_errors())
    assert errs.mean() <= 0.03 * 4 / 3 and errs.max() <= 0.08, errs
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
    # issue 16 goals, both met: mean 2.5 %, worst 7.40 % (A100 alone: 3.7 %, 6.5 %)
    assert e.mean() <= 0.030, e.mean()
    assert e.max() <= 0.080, e.max()


def test_tp_collectives_hide_behind_their_gemm_as_far_as_it_lasts():
    # userbuffers pair each TP collective with one GEMM: ring-exchange and bulk overlaps
    # hide it as far as the GEMM lasts; the pipelined forward reduce-scatters (num_splits 4
    # in the NeMo recipes) leave their last chunk exposed
    from twin.compute.collectives import group_collective_time_s
    from twin.compute.step import H100_SXM

    # 70B TP4 on NVLink: every GEMM outlasts its collective, so what shows is the last
    # quarter of the two forward reduce-scatters per layer and micro-batch (bf16 T x h)
    rs = group_collective_time_s("reduce_scatter", 4096 * 8192 * 2.0, nodes=1, ranks_per_node=4)
    n = 20 * 64  # layers on the last stage x micro-batches
    assert H100_SXM.tp_comm_overlap and H100_SXM.tp_rs_splits == 4
    assert est().breakdown["tp_comm_exposed"] == pytest.approx(n * 2 * rs / 4, rel=1e-9)
    eight = dataclasses.replace(H100_SXM, tp_rs_splits=8)
    assert est(kernel_efficiency=eight).breakdown["tp_comm_exposed"] == pytest.approx(
        n * 2 * rs / 8, rel=1e-9)
    # a slow link: collectives outlast their GEMMs and show the excess, less than no overlap
    slow = est(nvlink_gb_s=20.0).breakdown["tp_comm_exposed"]
    none = est(kernel_efficiency=dataclasses.replace(H100_SXM, tp_comm_overlap=False),
               nvlink_gb_s=20.0).breakdown["tp_comm_exposed"]
    assert n * 2 * rs / 4 < slow < none


def test_fp8_runs_gather_fp8_and_reduce_scatter_fp8_only_when_asked():
    # Transformer Engine initialize_ub: FP8 userbuffers for every all-gather overlap, for a
    # pipelined reduce-scatter only with fp8_buf (dgxc llama3.1 configure.sh, 405b only)
    from twin.compute.step import H100_SXM
    ke = dataclasses.replace(H100_SXM, tp_comm_overlap=False)  # all TP time exposed
    kw = dict(model="405b", gpus=576, global_batch=252, kernel_efficiency=ke)
    bf16 = est(**kw).breakdown["tp_comm_exposed"]
    fp8 = est(precision="fp8", **kw).breakdown["tp_comm_exposed"]
    fp8_rs = est(precision="fp8", tp_fp8_reduce_scatter=True, **kw).breakdown["tp_comm_exposed"]
    # 10 collectives per layer and micro-batch of T x h activations over TP 8 (one node):
    # 6 gathers in FP8, 2 forward reduce-scatters bf16 (FP8 with the flag), 2 backward bf16
    from twin.compute.collectives import group_collective_time_s

    def coll(op, el):
        return group_collective_time_s(op, 4096 * 16384 * el, nodes=1, ranks_per_node=8)
    n = 14 * 63  # layers on the last stage x micro-batches
    ag, rs = coll("all_gather", 2.0), coll("reduce_scatter", 2.0)
    assert bf16 == pytest.approx(n * (6 * ag + 4 * rs), rel=1e-9)
    assert fp8 == pytest.approx(n * (6 * coll("all_gather", 1.0) + 4 * rs), rel=1e-9)
    assert fp8_rs == pytest.approx(n * (6 * coll("all_gather", 1.0)
                                        + 2 * coll("reduce_scatter", 1.0) + 2 * rs), rel=1e-9)
    assert fp8_rs < fp8 < bf16
    assert est(tp_fp8_reduce_scatter=True, **kw).step_time_s == est(**kw).step_time_s


def test_fp8_weights_halve_the_parameter_gather_and_never_slow_the_step():
    kw = dict(model="405b", gpus=2304, global_batch=1008, precision="fp8", inter_node_gbps=400.0)
    b2, b1 = est(**kw), est(param_gather_bytes=1.0, **kw)
    assert b1.breakdown["dp_comm_exposed"] < b2.breakdown["dp_comm_exposed"]
    assert b1.step_time_s <= b2.step_time_s
    with pytest.raises(ValueError, match="param_gather_bytes"):
        est(param_gather_bytes=0.0)


def test_output_layer_runs_bf16_in_fp8_runs():
    # Megatron-core's output layer is a ColumnParallelLinear, outside Transformer Engine's
    # FP8 autocast: its time does not change with the precision of the layers
    b, f = est(), est(precision="fp8")
    # (the FP8 datasheet peak, 1,979, is 2 x 989.5 against BF16's 989)
    assert f.breakdown["output_layer"] == pytest.approx(b.breakdown["output_layer"], rel=1e-3)
    assert f.breakdown["gemm"] < 0.7 * b.breakdown["gemm"]


def test_stragglers_wait_on_compute_not_on_the_network():
    # the rank jitter is clock and thermal noise of compute-bound kernels: a slower network
    # lengthens the step but not the wait for the slowest rank
    fast = est(gpus=2048, global_batch=4096)
    slow = est(gpus=2048, global_batch=4096, inter_node_gbps=100.0)
    assert slow.step_time_s > fast.step_time_s
    assert slow.breakdown["stragglers"] == pytest.approx(fast.breakdown["stragglers"], rel=1e-12)
    noisy = sum(fast.breakdown[k] for k in ("gemm", "attention", "recompute", "output_layer"))
    from twin.compute.step import H100_SXM
    assert fast.breakdown["stragglers"] == pytest.approx(
        noisy * H100_SXM.rank_jitter_fraction * np.sqrt(2 * np.log(2048)))


def test_maxtext_save_qkv_proj_recomputes_all_but_the_qkv_projection():
    none, qkv, full = (est(activation_recompute=r) for r in ("none", "save_qkv_proj", "full"))
    assert none.step_time_s < qkv.step_time_s < full.step_time_s
    # what full recompute adds beyond save_qkv_proj is the QKV forward GEMM: per layer and
    # micro-batch T x h @ h x (h + 2 h_kv)/tp at the fitted GEMM efficiency (waves aside)
    from twin.compute.step import H100_SXM
    h, hkv, T, tp = 8192, 1024, 4096, 4
    qkv_s = 2 * T * h * (h + 2 * hkv) / tp / (989e12 * H100_SXM.gemm)
    n = 20 * 64  # layers per stage x micro-batches
    gap = full.breakdown["recompute"] - qkv.breakdown["recompute"]
    assert gap == pytest.approx(n * qkv_s, rel=0.25)


def test_gemm_law_counts_a_partial_tile_as_partial_work():
    # known artefact of _gemm_time_s, pinned so that a change to it shows (HG2,
    # /work/helpers/hg2_validation.md): the wave efficiency tiles / (waves x SMs) counts a
    # partial tile as partial work, so a GEMM whose M passes a tile boundary without a new wave
    # gets FASTER.  H100 (128 x 256 tiles, 132 SMs), N = K = 6,144 (24 tile columns): M = 4,096
    # is 768 tiles in 6 waves, M = 4,097 is 792 tiles in the same 6 waves: 4,097 / 4,096 of the
    # FLOPs at 792 / 768 of the efficiency, 3.0 % faster; M = 4,224 (33 whole tile rows) costs
    # the same as 4,096, one more row is a 7th wave.  Whole waves of whole tiles (NVIDIA,
    # "Matrix Multiplication Background User's Guide") would never fall; that law failed its
    # decision rule (Grok-1's 8-wide router GEMM padded to a 256-wide tile: mean 3.6 %).
    from twin.compute.step import H100_SXM, _gemm_time_s
    kw = dict(peak_flops=989e12, eff=H100_SXM.gemm, ke=H100_SXM, hbm_b_s=3.35e12,
              bytes_per_el=2.0)

    def t(m):
        return float(_gemm_time_s(m, 6144, 6144, **kw))
    assert t(4097) / t(4096) == pytest.approx((4097 / 4096) / (792 / 768), rel=1e-12)
    assert t(4097) / t(4096) == pytest.approx(0.96993, abs=1e-5)
    assert t(4224) == pytest.approx(t(4096), rel=1e-12)
    assert t(4225) / t(4096) == pytest.approx(1.13262, abs=1e-5)


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(["8b", "70b", "175b"]), acc=st.integers(1, 8),
       prec=st.sampled_from(["bf16", "fp8"]), rec=st.sampled_from(["none", "selective", "full"]))
def test_more_micro_batches_never_shorten_the_step(model, acc, prec, rec):
    # a rank with one more micro-batch to run never finishes its step sooner (HG2's property;
    # it holds with either GEMM law, unlike monotonicity in hidden or ffn_hidden, which the
    # partial-tile law above breaks: 45 of 400 and 123 of 400 random steps of h or F fell)
    p = PAR[model]
    dp = 2
    gpus = p["tp"] * p["pp"] * p["cp"] * dp
    a = est(model, gpus=gpus, global_batch=dp * acc, precision=prec, activation_recompute=rec)
    b = est(model, gpus=gpus, global_batch=dp * (acc + 1), precision=prec,
            activation_recompute=rec)
    assert b.step_time_s > a.step_time_s
