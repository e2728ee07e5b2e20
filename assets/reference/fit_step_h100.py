"""Fit the H100 kernel table of twin/compute/step.py on the "fit" rows of
step_times_h100_dgxc.csv (log least squares) and report the "validate" rows.

    .venv/bin/python assets/reference/fit_step_h100.py

Four parameters: gemm, gemm_fp8, attention_fwd (attention_bwd tied at 0.82 x forward),
rank_jitter_fraction.  (Until 2026-11-30 a fifth, the hidden share of tensor-parallel
collectives ``tp_overlap``; now the overlap follows the recipes' userbuffer methods.)  Each row runs with its configuration as the source's
recipe sets it (the CSV's columns after ``role``: gradient and parameter all-gather
element sizes, FP8 forward reduce-scatters, the 405B recipe's 16 KV groups and GPT-2
vocabulary, Nemotron-4 340B's selective recompute).  The printed values are what
``twin.compute.step.H100_SXM`` holds.

Then the A100 table's one parameter (``A100_SXM.gemm``, log least squares) on the 18
Megatron-LM A100 rows of tests/compute/test_step.py (SC21 Table 1, Korthikanti et al.
2022), as ``twin.compute.step.A100_SXM`` holds it.

Decision rule of the tile-quantisation refit (HG2, issue 16), committed before the new law ran on
any row: GEMM compute time = whole waves of whole tiles, ``waves x sms x 2 tm tn k / (peak eff)``
(tile and wave quantisation, NVIDIA "Matrix Multiplication Background User's Guide"), replacing
``2 m n k / (peak eff wave_eff)``, which counts a partial tile as partial work and lets a GEMM get
faster as it grows.  Refit once with this script unchanged (H100: 4 parameters on the 20 fit
rows; A100: one on its 18), fit_fsdp_llm_foundry.py on its 19 rows, and step_times_moe2.py
--fit-dropless.  Ship only if: the 88 rows keep issue 16's goals (held-out and all: mean <= 3 %,
worst <= 8 %; A100 mean <= 4 %, worst <= 8 %); Grok-1 and the Megatron-core MoE rows held out from
the dropless fit: mean <= 3 %, worst <= 8 %, dropless f in [1.0, 1.5]; llm-foundry fit rows
(1.35 / 3.72 %) and A100 held-out rows (1.98 / 5.39 %) within +- 1 point; no set's mean |error|
worse by > 0.5 point (dgxc fit, held-out, A100, 88, MLPerf 21 and >= 4,096 GPUs, Grok-1,
Megatron-core MoE, MaxText, llm-foundry, torchtitan); Llama 3 405B 8k / 16k-GPU MFU within 8 % of
43 / 41 %; no fitted parameter at a bound; H100 BF16 GEMM efficiency <= 0.82.  Property tests:
GEMM time non-decreasing in m, n, k; step time non-decreasing in global batch per rank, hidden
and ffn_hidden.  Otherwise twin/ is reverted and the figures reported.
Result (run once): the rule FAILED and the law is not in the twin.  Refit: H100 gemm 0.7029,
gemm_fp8 0.5572, attention_fwd 0.6922, jitter 0.0497; A100 0.7511; FSDP 1.6828 / 0.7923; dropless
f 1.03125 (the 465/445 target falls inside the wave step at f = 33/32: no exact solution).  88
rows, A100, llm-foundry, Megatron-core MoE held out: goals kept (held-out 2.04 / 7.35 %, all 2.45 /
7.35 %, A100 3.78 / 6.62 %, MoE 1.87 / 6.18 %), but Grok-1's mean 2.75 -> 3.61 % (> 3 %, +0.86
point): its 8-wide router GEMM padded to a 256-wide tile.  Figures: /work/helpers/hg2_validation.md.
(This script at the commit before HG2, with the partial-tile law, gives gemm 0.7020, gemm_fp8
0.5565, attention_fwd 0.6950, jitter 0.0496 and A100 0.7495: not what H100_SXM / A100_SXM held,
0.7050 / 0.5587 / 0.7020 / 0.0517 and 0.7503, fitted before the collective model's NIC-share and
fill-time laws moved the optimum.  Refitted on 2026-12-01 (HG3) with this script and its rows
unchanged: the tables hold these values now, and tests/compute/test_fits_reproduce_constants.py
runs :func:`fit_h100` and :func:`fit_a100_gemm` and requires the constants to equal their result
to the 4 printed decimals.)

Decision rule of the best-tile-shape GEMM law (HG4, issue 16), committed before the law ran on any
row.  Disclosure: HG2 looked, after its verdict, at a variant with narrower tiles for skinny GEMMs
(Grok-1 2.60 / 5.63 %, dense sets unchanged; not refitted); this law is defined from the sources
below, not from that figure.  Law: each GEMM runs whole waves of whole tiles of the one tile
shape, from a fixed list, that gives the least time (as a library's heuristic picks a kernel per
GEMM shape); t_c = min over shapes (tm, tn) of ceil(ceil(m/tm) ceil(n/tn) / sms) sms 2 tm tn k /
(peak eff), either orientation of each shape (a GEMM and its transpose are one kernel with the
operands swapped); t = max(t_c, HBM roofline) as before.  A minimum of non-decreasing functions is
non-decreasing: monotone in m, n, k by construction.  Lists (CUTLASS, python/cutlass_library):
H100 (SM90) = sm90_shapes.py (NVIDIA/cutlass 56e011a) CTA shape = WGMMA shape x MMA multiplier:
16-bit dense WGMMA 64 x N, N in {8, 16, 32, 64, 128, 256} (levels 0-2: the default 64x128, 64x256
and the powers of two) times multipliers (1,1), (2,1), (4,1) (levels 0-2): tm in {64, 128, 256},
tn in {8, 16, 32, 64, 128, 256}; A100 (SM80) = generator.py GenerateSM80_TensorOp_16816 (bf16):
256x128, 128x256, 256x64, 64x256, 128x128, 128x64, 64x128, 64x64.  Assumption: one efficiency
(``gemm`` / ``gemm_fp8``) for every shape (small tiles' lower throughput is not modelled; the HBM
roofline bounds a skinny GEMM below); the consequence, stated before the run: a large GEMM takes
the shape with the least padding, so wave quantisation mostly vanishes on H100.  Refit once,
scripts and subsets unchanged, in HG3's order: this script (H100 4 parameters, A100 1),
fit_fsdp_llm_foundry.py, step_times_moe2.py --fit-dropless; constants = the printed values
(tests/compute/test_fits_reproduce_constants.py).  Ship only if: issue 16's step goals hold where
they hold now (88 rows held-out and all: mean <= 3 %, worst <= 8 %; A100 18 rows mean <= 4 %,
worst <= 8 %; Grok-1 mean <= 3 %, worst <= 8 %; Megatron-core MoE rows held out from the dropless
fit mean <= 3 %, worst <= 8 %, f in [1.0, 1.5]; MLPerf >= 4,096 GPUs mean <= 3 %); no set's mean
|error| worse by more than 0.5 point than HEAD 0ef5645 (HG3's list of 18 sets); Llama 3 405B
8k / 16k-GPU MFU within 8 % of 43 / 41 %; no fitted parameter at a bound; H100 BF16 gemm <= 0.82;
property tests pass (GEMM time non-decreasing in m, n, k; step time non-decreasing in hidden and
ffn_hidden, kept if they hold); ``twin estimate step`` still a few ms.  Otherwise twin/ and the
constants are reverted and the figures reported (/work/helpers/hg4_validation.md).
Result (run once): the rule FAILED and the law is not in the twin.  Refit: H100 gemm 0.6752,
gemm_fp8 0.5338, attention_fwd 0.7378, jitter 0.0506; A100 0.7309; FSDP 1.6800 / 0.7826; dropless
f 1.0580.  Kept: dgxc held-out 2.03 / 7.21 %, all 88 2.50 / 7.21 %, Grok-1 2.92 / 6.04 %,
Megatron-core MoE held out 1.88 / 5.93 %, MLPerf >= 4,096 GPUs 2.38 %, property tests 0
violations.  Failed: A100 3.70 -> 4.09 % (> 4 %), MaxText 22.52 -> 24.62 % (+2.11 points),
llm-foundry 760m-3b without checkpointing 8.71 -> 11.09 % (+2.38), llm-foundry H100 without
checkpointing 5.11 -> 5.63 % (+0.51).  Why: with one efficiency for every shape the 8 x 64 tile
(or 64 x 8) wins on every large GEMM (padding 1.000-1.006), wave quantisation vanishes, the dgxc
fit lowers gemm by 4 %, and runs whose GEMMs were barely quantised before (whole FSDP GEMMs) come
out slower: a later rule needs each shape's own efficiency.

Decision rule of the interleaved-schedule replay (HIR, issue 16), committed before the replay
priced any row.  Change: for ``vpp > 1`` the pipeline bubble is no longer the closed form
``(pp - 1)/vpp t_stage_max`` (SC21 sec. 2.2.2, exact only for equal chunks) but the makespan of
Megatron-core's interleaved op order (twin/compute/schedules.py: warm-up ``2 (pp - r - 1) + (vpp
- 1) pp``, steady 1F1B, cool-down; chunk order in groups of ``pp`` micro-batches, the last group
``m mod pp``; where that order deadlocks, the smallest group Megatron-core accepts) replayed with
each rank's and chunk's forward and backward time from the layout (the embedding on rank 0's
first chunk, the output layer + loss on the last rank's last chunk, MTP modules where they sit)
and free sends, minus the critical rank's busy time; everywhere: the step, its breakdown
``pipeline_bubble`` and the data-parallel overlap that reads the bubble.  ``vpp = 1`` (1F1B) and
DualPipe unchanged.  Refit once with the scripts unchanged, HG3's order: this script (H100 4
parameters on the 20 fit rows; A100 gemm on its 18 rows, which run interleaved too);
step_times_moe2.py --fit-dropless (the Megatron-core MoE rows run interleaved, vpp 7 and 8);
fit_fsdp_llm_foundry.py not (no FSDP row runs pp > 1); constants = the printed values
(tests/compute/test_fits_reproduce_constants.py).  Ship only if (all): (1) issue 16's step goals
hold where they hold now: 88 rows held-out and all mean <= 3 %, worst <= 8 %; A100 18 rows mean
<= 4 %, worst <= 8 %; Grok-1 mean <= 3 %, worst <= 8 %; Megatron-core MoE rows held out from the
dropless fit mean <= 3 %, worst <= 8 %, f in [1.0, 1.5]; MLPerf >= 4,096 GPUs mean <= 3 %; (2) no
set's mean |error| worse by more than 0.5 point than HEAD 9ba2ad1 (HG4's 18 sets: dgxc fit,
held-out, A100, all 88, MLPerf 21 and >= 4,096 GPUs, Grok-1, Megatron-core MoE goal and held
out, MaxText, llm-foundry H100 fit, 4,096-token, no checkpointing, A100 large and small
micro-batch, 760m-3b with and without checkpointing, torchtitan); (3) no fitted parameter at a
bound; (4) ``twin estimate step`` under 10 ms (bench/bench_estimate.py).  Otherwise the switch
in twin/ and the constants are reverted (the replay and its tests kept, unused) and the figures
reported.  Reported either way: the Llama 3 405B points (E|(t|)*126,L, 8,192 / 16,384 GPUs:
51.9 / 49.2 % MFU before), the shipped estimate files, the golden KPIs that move.
Result (run once): the rule HOLDS and the replay is in the twin.  Refit: H100 gemm 0.7020 ->
0.7041, gemm_fp8 0.5565 -> 0.5580, attention_fwd 0.6952 -> 0.6958, jitter 0.0497 -> 0.0507; A100
0.7498 -> 0.7488; dropless f 1.0341 (unchanged).  Deviation, disclosed: the rule said the FSDP
fit is not run, but it inherits the H100 table (tests/compute/test_fits_reproduce_constants.py),
so it was run in HG3's order: TRITON_FLASH_ATTENTION_SLOWDOWN 1.6828 -> 1.6803,
FSDP_WHOLE_GEMM_EFFICIENCY 0.7923 -> 0.7945.  Mean / worst |error| [%] before -> after: dgxc fit
2.35 / 6.68 -> 2.38 / 6.72, held-out 2.06 / 7.43 -> 2.07 / 7.46, A100 3.72 / 6.49 -> 3.70 /
6.41, all 88 2.46 / 7.43 -> 2.48 / 7.46, MLPerf >= 4,096 GPUs 2.37 -> 2.39, Grok-1 2.66 / 5.71
-> 2.65 / 5.69, Megatron-core MoE held out 2.65 / 7.12 -> 2.75 / 7.21; the largest change of a
set's mean +0.10 point (Megatron-core MoE), MaxText +0.07, torchtitan -0.11; no parameter at a
bound; bench 70B step 0.45 ms, twin estimate step 4.4 ms.  The replay alone (constants as
before) changed the 88 rows' steps by -0.37 .. +0.36 % (56 unchanged: pp 1 or vpp 1).  After the
verdict, one change that moves no row: where pp does not divide m the order takes the smallest
group Megatron-core accepts, not the short last group (which can deadlock and, where it runs,
made test_more_micro_batches_never_shorten_the_step fail); the one such row (pp 16 vpp 2 m 72)
deadlocked and took that group already.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares, minimize_scalar

import twin.compute.step as step_module
from twin.compute.step import H100_SXM, step_estimate

HERE = Path(__file__).resolve().parent


def _test_rows():
    """tests/compute/test_step.py: the CSV row reader and the 18 A100 rows."""
    spec = importlib.util.spec_from_file_location(
        "test_step_rows", HERE.parents[1] / "tests/compute/test_step.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ROWS = _test_rows()


def predict(r: dict, ke=H100_SXM) -> float:
    return step_estimate(**ROWS._dgxc_kwargs(r), kernel_efficiency=ke).step_time_s


def table(x) -> object:
    gemm, gemm_fp8, att, jit = x
    return dataclasses.replace(H100_SXM, gemm=gemm, gemm_fp8=gemm_fp8,
                               attention_fwd=att, attention_bwd=0.82 * att,
                               rank_jitter_fraction=jit)


#: Names of the four fitted H100 parameters, in the order of :func:`fit_h100`'s result.
H100_PARAMETERS = ("gemm", "gemm_fp8", "attention_fwd", "rank_jitter_fraction")


def fit_h100() -> np.ndarray:
    """The four H100 parameters (:data:`H100_PARAMETERS`) fitted on the 20 fit rows [-]."""
    fit = [r for r in ROWS._dgxc_rows() if r["role"] == "fit"]

    def resid(x):
        ke = table(x)
        return [np.log(predict(r, ke) / float(r["step_time_s"])) for r in fit]

    bounds = ([0.3, 0.3, 0.2, 0.0], [1.0, 1.0, 1.0, 0.1])
    # the cost is piecewise smooth (wave quantisation, overlap limits): several starts,
    # the best on the fit rows wins
    starts = [[0.705, 0.559, 0.702, 0.052], [0.8, 0.7, 0.45, 0.022],
              [0.695, 0.548, 0.54, 0.022]]
    scale = [0.1, 0.1, 0.1, 0.01]
    res = min((least_squares(resid, x, bounds=bounds, x_scale=scale) for x in starts),
              key=lambda r: r.cost)
    return res.x


def main() -> None:
    data = ROWS._dgxc_rows()
    x = fit_h100()
    print("fitted: " + ", ".join(f"{k} {v:.4f}" for k, v in zip(H100_PARAMETERS, x, strict=True))
          + f" (attention_bwd 0.82 x attention_fwd = {0.82 * round(x[2], 4):.4f})")
    ke = table(x)
    for role in ("fit", "validate"):
        e = np.array([predict(r, ke) / float(r["step_time_s"]) - 1 for r in data
                      if r["role"] == role])
        print(f"{role:8s} n={e.size:2d} MAE {100 * np.abs(e).mean():.2f} % "
              f"worst {100 * np.abs(e).max():.2f} %")


def _a100_errors(g: float) -> np.ndarray:
    """Errors of the 18 A100 rows [-] with ``A100_SXM``'s GEMM efficiency set to ``g``."""
    base = step_module.A100_SXM
    step_module.A100_SXM = dataclasses.replace(base, gemm=g, gemm_fp8=g)
    try:
        return np.array(ROWS._a100_errors())
    finally:
        step_module.A100_SXM = base


def fit_a100_gemm() -> float:
    """``A100_SXM.gemm`` fitted on the 18 A100 rows (log least squares) [-]."""
    res = minimize_scalar(lambda g: float((np.log1p(_a100_errors(g)) ** 2).sum()),
                          bounds=(0.5, 0.95), method="bounded", options=dict(xatol=1e-5))
    return float(res.x)


def fit_a100() -> None:
    g = fit_a100_gemm()
    e = np.abs(_a100_errors(g))
    print(f"A100 gemm: {g:.4f}  n={e.size} MAE {100 * e.mean():.2f} % "
          f"worst {100 * e.max():.2f} %")


if __name__ == "__main__":
    main()
    fit_a100()
