"""Training step time of a dense decoder transformer under Megatron-style 4D parallelism.

The step is built bottom-up from kernels on the most loaded pipeline stage, each at its
own efficiency (no blanket MFU factor):

* GEMMs (QKV, attention output, SwiGLU up/gate, down; forward, data-grad and weight-grad)
  at ``gemm`` x wave quantisation (tiles of 128x256 over the SMs), or the HBM roofline if
  that is slower; FP8 GEMMs at ``gemm_fp8`` of the FP8 peak;
* flash attention (causal: half the score matrix is computed; backward does 2.5x the
  forward FLOPs: 5 matmuls against 2, Dao 2023) at ``attention_fwd`` / ``attention_bwd``
  of the BF16 peak;
* memory-bound kernels (RMSNorm, residual adds, RoPE, SwiGLU, FP8 casts, vocab-parallel
  cross-entropy) at ``hbm`` of the HBM bandwidth, plus a launch gap per kernel;
* tensor-parallel all-gather / reduce-scatter (sequence parallel: 4 collectives forward,
  6 backward per layer), each overlapped with the GEMM Transformer Engine's userbuffers
  pair it with, by the overlap method the recipes set: ring-exchange and bulk overlaps
  hide a collective as far as its GEMM lasts; the pipelined forward reduce-scatters
  (``num_splits`` chunks) expose their last chunk and whatever of the rest outlasts the
  GEMM, so a collective longer than its GEMM (FP8 GEMMs are short) shows its excess; FP8
  runs gather FP8 and reduce-scatter bf16 (FP8 in the forward with
  ``tp_fp8_reduce_scatter``);
* context-parallel ring attention (KV blocks passed around the CP ring) hidden behind
  the attention kernels as far as they last;
* pipeline-parallel point-to-point sends (2 x vpp per micro-batch and stage), each
  hidden behind the next chunk's forward by the share ``pp_overlap`` as far as it lasts,
  and the fill and drain sends (2 (pp-1)) exposed; the 1F1B bubble ``(pp-1)`` micro-batch
  times, the interleaved one (vpp > 1) the replay of Megatron-core's op order with each
  chunk's own forward and backward (:func:`interleaved_bubble_s`: ``(pp-1)/vpp`` stage times
  for equal chunks, SC21 sec. 2.2.2); the last stage also carries the output layer (BF16
  also in FP8 runs: Megatron's output layer is not a Transformer Engine module) and loss
  (the pipeline runs at its slowest stage);
* data-parallel gradient reduce-scatter (fp32 or bf16) and parameter all-gather (bf16, or
  FP8 with FP8 weights: ``param_gather_bytes``) of the
  distributed optimizer over the DP x CP group, overlapped with the last backward /
  first forward micro-batch and the pipeline cool-down/warm-up;
* the Adam update of the local optimizer shard (HBM bound);
* the deployment overhead (bare metal / container / VM).

``clock_fraction`` scales the compute-bound kernels only (GEMM, attention): HBM,
NVLink and the network do not slow with the SM clock.  The job runs at its slowest GPU,
so an array of clock fractions is reduced with ``min``.

Step time (``m`` micro-batches per data-parallel rank, ``t_stage`` the slowest stage's
time per micro-batch including exposed TP/CP/PP communication)::

    t_step = [ m t_stage + bubble + t_pp_fill + t_dp_exposed + t_adam
               + sigma sqrt(2 ln gpus) t_compute ] * deployment_factor

with ``bubble = (pp-1) t_stage`` (1F1B) or, interleaved, the replayed makespan of the
schedule minus the slowest rank's ``m t_stage`` (about ``(pp-1)/vpp t_stage``);

with ``t_compute`` the compute-bound part (GEMMs, attention, recompute, output layer):
the slowest rank's clock and thermal noise acts on those kernels only.

DualPipe (``pipeline_schedule="dualpipe"``, DeepSeek-V3 Technical Report arXiv 2412.19437
sec. 3.2.1, Fig. 4-5, Table 2; deepseek-ai/DualPipe): rank ``r`` holds stages ``r`` and
``pp-1-r`` and runs micro-batches in from both ends; where ``DualPipe.step`` overlaps a
backward chunk with a forward chunk of the other stage (``m - 3pp/2 + 1 + h`` pairs on rank
``r``, ``h = min(r, pp-1-r)``, one fewer on the two middle ranks), their expert all-to-alls
and pipeline sends hide behind the pair's computation while DUALPIPE_COMM_SMS of the SMs
serve the communication (:func:`dualpipe_pair_s`); the other chunks run alone with their
communication serial.  The pipeline term is the makespan of ``DualPipe.step``'s op order
with those durations (:func:`dualpipe_schedule_s`), not Table 2's ``(pp/2 - 1)(F&B + B -
3W)``, which holds only where a pair takes ``F + B`` in the drawing's units::

    t_step = [ makespan(DualPipe.step) + t_dp_exposed + t_adam + stragglers ]
             * deployment_factor

MFU uses the model-FLOPs formula of calibration.yaml (training.flops_per_sequence):
``s (12 L h^2 (1 + kv/heads + s/h) + 18 L F h + 6 V h)`` per sequence.

Calibration (see the efficiency tables below, tests/compute/test_step.py and
docs/validation.md): the 20 fitted DGX H100 step times of dgxc-benchmarking (8B..405B,
BF16 and FP8, 8..2,304 GPUs, each with its recipe's settings): mean |error| 2.4 %, worst
6.7 %; the 50 held out: 2.1 %, worst +7.5 % (Llama 3.1 405B FP8 proxy on 192 GPUs);
18 Megatron-LM A100 step times (SC21 and 2022 papers, 8..3,072 GPUs): mean |error|
3.7 %, worst 6.4 %; all 88: 2.5 %, worst 7.5 %.

PyTorch FSDP (ZeRO-3) jobs take their own kernel entries (``h100_sxm_fsdp_fa2``,
``h100_sxm_fsdp_triton``, ``a100_sxm_fsdp``, ``a100_sxm_fsdp_triton``): whole GEMMs, the
attention kernel the run used, and each layer's backward all-gather and reduce-scatter
serial with its compute; two parameters fitted on 19 of llm-foundry's MPT step times,
checked on 68 more and on torchtitan (tests/compute/test_fsdp_validation.py).  MaxText
(JAX / XLA) FSDP jobs take ``h100_sxm_xla``: that whole-GEMM efficiency with XLA's overlapped
collectives, nothing fitted (tests/compute/test_moe_fsdp.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from twin.compute.collectives import (
    group_collective_time_s,
    p2p_efficiency,
    transport_efficiency,
)
from twin.compute.pipeline_layout import (
    DECODER,
    EMBED,
    LOSS,
    MTP,
    even_pipeline_layout,
    parse_pipeline_layout,
)
from twin.compute.schedules import (
    ScheduleDeadlock,
    interleaved_program,
    interleaved_schedule_s,
    schedule_microbatch_group,
)


@dataclass(frozen=True)
class KernelEfficiency:
    """Per-kernel efficiencies of one GPU generation (fractions of datasheet peaks).

    gemm: large BF16 GEMM throughput over the dense BF16 peak at the sustained clock of
    a GPU at its power limit.  gemm_fp8: the same for FP8 over the FP8 peak.
    attention_fwd / attention_bwd: flash-attention throughput (actual FLOPs) over the
    BF16 peak at long sequences; attention_seq_half [tokens]: KV length at which it
    reaches half of that (short sequences leave the tensor cores idle between tiles).
    hbm: achieved over datasheet HBM bandwidth in streaming kernels.
    kernel_gap_s: launch gap per kernel [s].  sms / tile_m / tile_n: wave quantisation.
    tp_comm_overlap: tensor-parallel collectives overlapped with the GEMM Transformer
    Engine's userbuffers pair them with (NeMo ``ub_tp_comm_overlap``; else not at all).
    tp_rs_splits: chunks of the pipelined forward reduce-scatter overlap (the recipes'
    ``num_splits: 4`` for ``proj_fprop`` and ``fc2_fprop``): the last chunk's
    reduce-scatter has no GEMM left to hide behind.  pp_overlap: share of a pipeline send
    hidden behind the next chunk's forward, as far as that lasts.
    rank_jitter_fraction: standard deviation of one rank's compute-bound time (GEMMs,
    attention) over its mean [-] (clock, thermal and OS noise); a synchronous step
    waits for the slowest of ``n`` ranks, ``E[max] ~ mean (1 + sigma sqrt(2 ln n))``
    (extreme value of ``n`` normal draws, Gumbel limit).
    Software generation: flash_attention (fused causal attention; else batched GEMMs over
    the full ``s x s`` scores plus memory-bound softmax and dropout, Megatron 2021),
    sequence_parallel (TP all-gather/reduce-scatter and norms on ``1/tp`` of the tokens;
    else all-reduce and norms on all tokens), distributed_optimizer (DP reduce-scatter /
    all-gather and a sharded Adam; else a DP all-reduce and a full Adam per rank),
    fsdp_backward_overlap (ZeRO-3 / FSDP: each layer's backward all-gather and gradient
    reduce-scatter hide behind the layer's backward compute as far as it lasts, as XLA's
    scheduler does for MaxText; False for PyTorch FSDP, where they add to it: see
    ``H100_SXM_FSDP_FA2``).
    """

    gemm: float
    gemm_fp8: float
    attention_fwd: float
    attention_bwd: float
    attention_seq_half: float
    hbm: float
    kernel_gap_s: float
    sms: int
    tile_m: int = 128
    tile_n: int = 256
    tp_comm_overlap: bool = True
    tp_rs_splits: int = 4
    pp_overlap: float = 0.7
    rank_jitter_fraction: float = 0.015
    flash_attention: bool = True
    sequence_parallel: bool = True
    distributed_optimizer: bool = True
    fsdp_backward_overlap: bool = True
    source: str = field(default="", compare=False)


#: H100 SXM.  Fitted once (log least squares, 4 parameters: gemm, gemm_fp8,
#: attention_fwd with attention_bwd tied at 0.82 of it, rank_jitter_fraction)
#: on the 20 "fit" rows of assets/reference/step_times_h100_dgxc.csv (NVIDIA
#: dgxc-benchmarking DGX H100 NeMo step times, BF16 and FP8, the smallest and largest
#: scale of each table, each run with its recipe's settings: bf16 gradient reduction,
#: FP8 weights gathered in FP8, the 405B recipe's 16 KV groups and GPT-2 vocabulary, FP8
#: forward reduce-scatters, selective recompute for Nemotron-4 340B;
#: assets/reference/fit_step_h100.py reproduces these values), which include the
#: calibration point of calibration.yaml (training.llama31_70b_bf16_64gpu): mean |error|
#: 2.4 % on them, worst 6.7 %; on the 50 held-out rows (intermediate scales, Nemotron-4
#: 15B, 405B reduced-depth proxies) 2.1 %, worst 7.5 % (405B FP8 on 192 GPUs: Llama 3.1
#: 405B FP8 stays 6-7 % slow while 70B FP8 is 2-4 % fast, docs/validation.md).  The
#: tensor-parallel overlap is not fitted (until 2026-11-30 a hidden share, 0.678): each
#: collective hides behind its paired GEMM by the recipe's overlap method
#: (``tp_comm_overlap``, ``tp_rs_splits``).  The rank jitter (5.1 % of the compute-bound
#: time) also carries what else grows with the job's size.  The fitted values sit inside
#: the ranges kernel benchmarks give: cuBLAS BF16 GEMMs sustain ~650-800 TFLOP/s on H100
#: SXM at 700 W (0.66-0.81 of 989), FP8 GEMMs ~1,100-1,300 of 1,979; fused BF16
#: attention forward up to 740 TFLOP/s (0.75 of 989, FlashAttention-3, Shah et al.
#: 2024; the fit: 687), less backward.  HBM3 streaming ~2.7 of 3.35 TB/s.  Refitted on
#: 2026-12-01 with the script and rows unchanged, after the collective model (NIC-share and
#: fill-time laws) had moved the optimum: 0.7050 / 0.5587 / 0.7020 / 0.0517 -> 0.7020 /
#: 0.5565 / 0.6950 / 0.0496; refitted again (HU3) when the step model took every layout
#: through the per-rank code, so that pp = 1 counts the input embedding and the untied output
#: layer in the optimizer and the data-parallel sync: attention_fwd 0.6950 -> 0.6952, jitter
#: 0.0496 -> 0.0497; refitted again (HIR) when the interleaved bubble became the replay of
#: Megatron-core's op order (interleaved_bubble_s): 0.7020 / 0.5565 / 0.6952 / 0.0497 ->
#: 0.7041 / 0.5580 / 0.6958 / 0.0507 (tests/compute/test_fits_reproduce_constants.py keeps
#: them equal to the fit).
H100_SXM = KernelEfficiency(
    gemm=0.7041, gemm_fp8=0.5580, attention_fwd=0.6958, attention_bwd=0.82 * 0.6958,
    attention_seq_half=256.0, hbm=0.80, kernel_gap_s=2.0e-6, sms=132,
    pp_overlap=0.7, rank_jitter_fraction=0.0507,
    source="fit to dgxc-benchmarking DGX H100 step times, see comment")

#: A100 SXM with the Megatron-LM software of the public A100 measurements: unfused
#: attention, tensor-parallel all-reduce (or sequence-parallel rings) without overlap,
#: data-parallel all-reduce.  ``gemm`` = 0.7495 fitted (1 parameter, log least squares;
#: refitted on 2026-11-30: 0.764 -> 0.7549 when the rank jitter came to act on
#: compute-bound kernels only, -> 0.7503 when the unfused attention stopped counting a
#: micro-batch's sequences twice and each row got its own tensor-parallel scheme; on
#: 2026-12-01 -> 0.7495 after the collective-model changes, -> 0.7498 when pp = 1 came to
#: count the input embedding and the untied output layer (HU3), -> 0.7488 with the replayed
#: interleaved bubble (HIR);
#: assets/reference/fit_step_h100.py reproduces it) on
#: 18 A100 step times: Narayanan et al., "Efficient Large-Scale Language Model Training
#: on GPU Clusters Using Megatron-LM", SC21, Table 1 (GPT 1.7B..1T on 32..3,072 A100,
#: full recompute, no sequence parallelism (2021); mean |error| 3.7 %, worst 6.5 %) and
#: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
#: 2022 (22B..1T on 8..512 A100, full recompute without and selective recompute with
#: sequence parallelism, micro-batches as their Table 3; mean |error| 3.8 %, worst
#: 5.7 %); SC21 rows at the best micro-batch / virtual stages, as the paper tuned them.  Attention and HBM efficiencies as measured for
#: A100 kernels (FlashAttention-2, Dao 2023; HBM2e ~1.6 of 2.0 TB/s).  The default for
#: GPUs below 600 dense BF16 TFLOP/s.
A100_SXM = KernelEfficiency(
    gemm=0.7488, gemm_fp8=0.7488, attention_fwd=0.55, attention_bwd=0.45,
    attention_seq_half=256.0, hbm=0.80, kernel_gap_s=2.5e-6, sms=108, tile_n=128,
    tp_comm_overlap=False, pp_overlap=0.0, rank_jitter_fraction=0.020, flash_attention=False,
    sequence_parallel=True, distributed_optimizer=False,
    source="fit to Megatron-LM A100 step times (SC21, 2022), see comment")

#: A100 SXM with today's software (flash attention, sequence parallel, distributed
#: optimizer, TP overlap as fitted on H100): the same kernels, nothing fitted.  PyTorch FSDP
#: runs take A100_SXM_FSDP / A100_SXM_FSDP_TRITON below (docs/validation.md).
A100_SXM_MODERN = KernelEfficiency(
    gemm=0.7488, gemm_fp8=0.7488, attention_fwd=0.55, attention_bwd=0.45,
    attention_seq_half=256.0, hbm=0.80, kernel_gap_s=2.5e-6, sms=108, tile_n=128,
    pp_overlap=0.7, rank_jitter_fraction=0.020,
    source="A100 kernels with the H100 software stack, see comment")

#: H100 SXM running FlashAttention-2 (PyTorch stacks of 2023-24: MosaicML llm-foundry's
#: ``attn_impl: flash``) instead of the cuDNN / Transformer Engine attention the H100 table
#: is fitted on.  Only the attention changes: forward and backward at FlashAttention-2's
#: published H100 throughput, 335 TFLOP/s forward + backward (causal and not, head dim
#: 128, long sequences) over the 989 TFLOP/s BF16 peak = 0.339 (Dao 2023,
#: arXiv:2307.08691, Fig. 7 and abstract).  Not fitted.  PyTorch FSDP runs take
#: H100_SXM_FSDP_FA2 / H100_SXM_FSDP_TRITON below (whole GEMMs, serial backward collectives,
#: the attention kernel each run used; docs/validation.md).
H100_SXM_FA2 = replace(
    H100_SXM, attention_fwd=335.0 / 989.0, attention_bwd=335.0 / 989.0,
    source="H100 table with FlashAttention-2's published throughput (Dao 2023)")

#: FlashAttention-2's speed over the Triton FlashAttention kernel [-] (the FlashAttention
#: algorithm of 2022 written in Triton, ``flash_attn_triton``; MosaicML's ``attn_impl:
#: triton``, which most of llm-foundry's MPT benchmark runs used: its sweep scripts,
#: assets/reference/fsdp_step_times_llm_foundry.csv).  Dao 2023 (arXiv:2307.08691, §4.1)
#: measures FlashAttention-2 1.3-2.5x faster than the Triton kernel on A100; no H100 figure
#: is published.  Fitted once (log least squares, jointly with FSDP_WHOLE_GEMM_EFFICIENCY) on
#: the 19 H100 MPT runs with micro-batches of >= 16,384 tokens and activation
#: checkpointing whose sequences are <= 2,048 (14) or >= 8,192 tokens (5), with the
#: backward collectives serialised (``fsdp_backward_overlap=False``): 1.6830, inside the
#: published range (1.68 until the H100 table's refit of 2026-12-01; 1.6830 until pp = 1
#: counted both vocabulary matrices and the H100 refit that followed, HU3; 1.6828 until the
#: H100 refit with the replayed interleaved bubble, HIR).
#: assets/reference/fit_fsdp_llm_foundry.py reproduces it.
TRITON_FLASH_ATTENTION_SLOWDOWN = 1.6803

#: BF16 GEMM efficiency on H100 SXM of whole GEMMs (tp = 1: FSDP / ZeRO-3 runs each layer's
#: GEMM on one GPU, M = micro-batch tokens up to 65 k, N x K = h x 3h .. 4h x h) [-], where
#: the H100 table's 0.702 is fitted on NeMo's tensor-parallel GEMMs (N or K split 4-8 ways,
#: userbuffer chunks).  Fitted once with TRITON_FLASH_ATTENTION_SLOWDOWN on the same 19 runs:
#: 0.7945 (786 TFLOP/s; 0.7923 before HIR's H100 refit; 0.7921 before HU3's refit; 0.797 before the H100 table's refit of
#: 2026-12-01, whose rank jitter and collectives the FSDP entries inherit), inside the
#: 650-800 TFLOP/s cuBLAS range quoted for H100 SXM at 700 W (the top of it: one GEMM per
#: layer and micro-batch, M up to 65 k tokens).  Without the serial backward collectives the fit gives 0.734 and leaves the runs without activation
#: checkpointing 13-26 % fast (docs/validation.md).
FSDP_WHOLE_GEMM_EFFICIENCY = 0.7945

#: PyTorch FSDP stacks (whole GEMMs, no tensor parallelism) on H100 SXM: with
#: FlashAttention-2 (llm-foundry's large-scale 7b / 70b runs, ``attn_impl: flash``,
#: flash-attn 2.4.2) and with the Triton FlashAttention kernel (``attn_impl: triton``).
#: Their backward pays each layer's all-gather and reduce-scatter on top of its compute
#: (``fsdp_backward_overlap=False``, not fitted): PyTorch FSDP runs both collectives on one
#: process group, i.e. one NCCL stream where they execute one after the other, so a
#: reduce-scatter issued before the next layer's all-gather holds that all-gather and with it
#: the next layer's backward ("the current reduce-scatter would block the next all-gather
#: and hence the next backward computation", PyTorch docs/source/notes/fsdp.rst; traces
#: with no backward overlap in pytorch/pytorch PRs 69282 and 70235, where the post-backward
#: hooks fire out of the reverse forward order); and what does overlap competes for the SMs:
#: NCCL's all-gather holds 24 of the H100's 132 SMs and pushes a one-wave GEMM into a second
#: wave, nearly doubling it (NVIDIA developer forum, "Compute-Communication Overlap Causes
#: Severe GEMM Performance Degradation because of Tail Effect").  Checked on held-out
#: runs: without activation checkpointing (8 H100 runs) -9.6 .. +1.2 % against -13 .. -26 %
#: with the collectives hidden; torchtitan's FSDP2 on A100 alike (docs/validation.md).
H100_SXM_FSDP_FA2 = replace(
    H100_SXM_FA2, gemm=FSDP_WHOLE_GEMM_EFFICIENCY, fsdp_backward_overlap=False,
    source="H100, whole GEMMs and FlashAttention-2, fitted on MPT FSDP runs, see comment")
H100_SXM_FSDP_TRITON = replace(
    H100_SXM_FSDP_FA2,
    attention_fwd=H100_SXM_FA2.attention_fwd / TRITON_FLASH_ATTENTION_SLOWDOWN,
    attention_bwd=H100_SXM_FA2.attention_bwd / TRITON_FLASH_ATTENTION_SLOWDOWN,
    source="H100, whole GEMMs and Triton FlashAttention, fitted on MPT FSDP runs")
#: The same two changes carried to A100 (nothing fitted on A100): whole GEMMs at the H100
#: ratio FSDP_WHOLE_GEMM_EFFICIENCY / H100_SXM.gemm (0.7923 / 0.7020) over the A100 table's
#: GEMM efficiency, attention as a100_sxm_modern (FlashAttention-2 class; PyTorch SDPA in
#: torchtitan) or slower by the Triton factor.
A100_SXM_FSDP = replace(
    A100_SXM_MODERN, gemm=A100_SXM_MODERN.gemm * FSDP_WHOLE_GEMM_EFFICIENCY / H100_SXM.gemm,
    fsdp_backward_overlap=False, source="A100 modern with the H100 whole-GEMM ratio, see comment")
A100_SXM_FSDP_TRITON = replace(
    A100_SXM_FSDP,
    attention_fwd=A100_SXM_MODERN.attention_fwd / TRITON_FLASH_ATTENTION_SLOWDOWN,
    attention_bwd=A100_SXM_MODERN.attention_bwd / TRITON_FLASH_ATTENTION_SLOWDOWN,
    source="A100 FSDP with Triton FlashAttention, see comment")

#: MaxText (JAX / XLA) on H100 SXM, FSDP with tensor parallelism 1: every GEMM whole on one
#: GPU, so the NeMo table with the whole-GEMM efficiency measured on PyTorch FSDP runs
#: (FSDP_WHOLE_GEMM_EFFICIENCY; XLA on GPU runs its dots through cuBLAS(Lt) as PyTorch does)
#: and the FP8 GEMMs by the same whole / split ratio 0.7923 / 0.7020 (a GEMM-shape effect:
#: N or K 4-8x larger than NeMo's tensor-parallel splits, no userbuffer chunks; it acts on
#: the FP8 tensor-core path alike; XLA's fusion of the FP8 casts and amax reductions, which
#: Transformer Engine runs as separate kernels, is not modelled).  Attention as the H100
#: table: the recipe's ``attention=cudnn_flash_te`` is the cuDNN fused attention the table is
#: fitted on.  Collectives as XLA schedules them (``fsdp_backward_overlap=True``), none of the
#: PyTorch-FSDP terms.  Nothing fitted: the rule was set before the 10 MaxText Llama 3 70B
#: rows (dgxc-benchmarking, tests/compute/test_moe_fsdp.py) were run with it; they are held
#: out.
H100_SXM_XLA = replace(
    H100_SXM, gemm=FSDP_WHOLE_GEMM_EFFICIENCY,
    gemm_fp8=H100_SXM.gemm_fp8 * FSDP_WHOLE_GEMM_EFFICIENCY / H100_SXM.gemm,
    source="H100 table with the whole-GEMM efficiency of FSDP runs (MaxText / XLA), see comment")

KERNEL_EFFICIENCY = {"h100_sxm": H100_SXM, "h100_sxm_fa2": H100_SXM_FA2, "a100_sxm": A100_SXM,
                     "a100_sxm_modern": A100_SXM_MODERN, "h100_sxm_fsdp_fa2": H100_SXM_FSDP_FA2,
                     "h100_sxm_fsdp_triton": H100_SXM_FSDP_TRITON, "a100_sxm_fsdp": A100_SXM_FSDP,
                     "a100_sxm_fsdp_triton": A100_SXM_FSDP_TRITON, "h100_sxm_xla": H100_SXM_XLA}

#: Step-time factor of the deployment mode [-].  Vela (IBM Research, 2023): the
#: OpenShift container platform stays within 5 % of bare-metal performance and its
#: iteration time is within 4 % of VMs at all batch sizes; Lenovo offers bare metal or
#: VMware.  Taken as +3 % for containers and +5 % for VMs (both inside the quoted bounds,
#: 2 % apart).
DEPLOYMENT_STEP_FACTOR = {"bare_metal": 1.00, "container": 1.03, "vm": 1.05}

PRECISIONS = ("bf16", "fp8")
#: Routing of a mixture-of-experts layer: "capacity" (each expert computes
#: ``moe_capacity_factor`` times its even share, padded: Megatron-core's
#: ``--moe-expert-capacity-factor`` with ``--moe-pad-expert-input-to-capacity``, and forced
#: balancing at 1.0) or "dropless" (no capacity: each expert takes what the router sends it).
MOE_ROUTINGS = ("capacity", "dropless")
#: Load of the busiest expert-parallel rank in dropless routing, over its even share of
#: routed token copies [-] (the layer waits for it at the combine all-to-all).  Aux-loss
#: routing (coefficient 1e-2) of Mixtral-type models, one expert per EP rank.  Fitted once on
#: the one pair that isolates it: Megatron-core's Mixtral 8x22B on 128 H100 (Megatron-MoE-
#: ModelZoo b09773a, best_practice/Mixtral/run_mixtral_8x22B.sh lines 27-31), dropless 445
#: against forced balance 465 TFLOP/s, same code, layout and FLOPs: the twin's dropless step
#: over its balanced step = 465 / 445 (assets/reference/step_times_moe2.py --fit-dropless;
#: decision rule in step_times_moe2_sources.md): 1.0341 (1.034 before the H100 table's
#: refit of 2026-12-01), inside the 1.0-1.25 capacity factors
#: that aux-loss routing is run with (Switch Transformer, Fedus et al. 2021).  The twin's step
#: is a sawtooth in this load (wave quantisation of the busiest rank's expert GEMMs: on both
#: Mixtral layouts M = 4,096 or 8,192 routed copies steps up a wave at 33/32 of it); the fit
#: lies just above that step, where the mean slope (0.8 of the step per unit load) gives ~1.055.
MOE_DROPLESS_BUSIEST_LOAD = 1.0341
#: GPU generations (compute capability, sm x 10) the collective model takes: those NVIDIA's
#: CUDA compute-capability table lists from Volta on (developer.nvidia.com/cuda-gpus and its
#: legacy page: 7.0 V100, 7.2, 7.5, 8.0 A100, 8.6, 8.7, 8.9 L40S, 9.0 H100/H200, 10.0 B200,
#: 10.3 B300, 11.0, 12.0, 12.1), each of which NCCL's per-channel Tree table
#: (``twin.compute.collectives.NCCL_TREE_PER_CHANNEL_GB_S``: Volta, Ampere, Hopper, Blackwell
#: rows) places; older GPUs (Pascal and before) have no row of their own there.
COMPUTE_CAPABILITIES = (70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121)


@dataclass(frozen=True)
class StepEstimate:
    """One training step: time [s], MFU [-], throughput and the time per part [s]."""

    step_time_s: float
    mfu: float
    tokens_per_s_per_gpu: float
    tokens_per_day: float
    breakdown: dict[str, float]

    def as_dict(self) -> dict:
        return {"step_time_s": self.step_time_s, "mfu": self.mfu,
                "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
                "tokens_per_day": self.tokens_per_day, "breakdown": dict(self.breakdown)}


def model_flops_per_sequence(*, layers, hidden, ffn_hidden, heads, kv_heads, vocab, seq_len,
                             gated_mlp: bool = True, moe_top_k: int = 1,
                             moe_ffn_hidden: int | None = None, moe_shared_experts: int = 0,
                             moe_shared_ffn_hidden: int | None = None, moe_dense_layers: int = 0,
                             mla_q_lora_rank: int = 0, mla_kv_lora_rank: int = 0,
                             mla_qk_nope_head_dim: int = 0, mla_qk_rope_head_dim: int = 0,
                             mla_v_head_dim: int = 0):
    """Forward+backward model FLOPs per sequence [FLOP] (calibration.yaml formula).

    ``s (12 L h^2 (1 + kv/heads + s/h) + 18 k L F h + 6 V h)``: grouped-query attention,
    SwiGLU MLP (three F x h matrices; ``12 k L F h`` for a plain two-matrix MLP), ``k``
    experts per token for a mixture of experts (1 for dense), untied output layer; no
    causal discount, no recompute, no capacity padding (MFU counts model FLOPs only).

    DeepSeek-style terms (all off by default; the formula above is then returned as is):
    ``moe_ffn_hidden`` ``F_e`` (expert inner size), ``moe_shared_experts`` ``n_s`` of
    ``moe_shared_ffn_hidden`` ``F_s`` (default ``F_e``), ``moe_dense_layers`` ``L_d`` (the
    first layers, dense MLP of ``F``), and multi-head latent attention (``mla_kv_lora_rank``
    > 0; :func:`mla_parameters_per_layer` for its projections).  Each weight of a GEMM
    costs 6 FLOPs per token (2 forward, 4 backward)::

        s [ L (6 P_attn + 6 s n (d_qk + d_v)) + 6 mats h (L_d F + (L - L_d)(k F_e + n_s F_s))
            + 6 V h ]

    with ``P_attn`` the attention projections' weights and ``n (d_qk + d_v)`` the per-token
    score and value width (``2 h`` for MHA, which gives the ``12 s h`` term above; full
    score matrix, as above).
    """
    L, h, F, s = layers, hidden, ffn_hidden, seq_len
    mats = 3.0 if gated_mlp else 2.0
    plain = (moe_ffn_hidden is None and not moe_shared_experts and not moe_dense_layers
             and not mla_kv_lora_rank)
    if plain:
        return s * (12.0 * L * h * h * (1.0 + kv_heads / heads + s / h)
                    + 6.0 * mats * moe_top_k * L * F * h + 6.0 * vocab * h)
    if mla_kv_lora_rank:
        p_attn = mla_parameters_per_layer(
            hidden=h, heads=heads, q_lora_rank=mla_q_lora_rank, kv_lora_rank=mla_kv_lora_rank,
            qk_nope_head_dim=mla_qk_nope_head_dim, qk_rope_head_dim=mla_qk_rope_head_dim,
            v_head_dim=mla_v_head_dim, norms=False)
        width = heads * (mla_qk_nope_head_dim + mla_qk_rope_head_dim + mla_v_head_dim)
    else:
        p_attn = h * (h + 2.0 * h * kv_heads / heads) + h * h
        width = 2.0 * h
    Fe = F if moe_ffn_hidden is None else moe_ffn_hidden
    Fs = moe_shared_experts * (Fe if moe_shared_ffn_hidden is None else moe_shared_ffn_hidden)
    Ld = moe_dense_layers
    mlp = 6.0 * mats * h * (Ld * F + (L - Ld) * (moe_top_k * Fe + Fs))
    return s * (L * (6.0 * p_attn + 6.0 * s * width) + mlp + 6.0 * vocab * h)


def mla_parameters_per_layer(*, hidden, heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                             qk_rope_head_dim, v_head_dim, norms: bool = True) -> float:
    """Weights of one multi-head latent attention block [-] (DeepSeek-V2, arXiv 2405.04434,
    sec. 2.1.2-2.1.3, eqs. 9-14; the projections of DeepSeek's published modelling code).

    Query: ``h x q_lora`` down, ``q_lora x n (d_nope + d_rope)`` up (without query
    compression, ``q_lora_rank`` 0: ``h x n (d_nope + d_rope)``); key/value: ``h x (kv_lora +
    d_rope)`` down (the latent and the shared RoPE key), ``kv_lora x n (d_nope + d_v)`` up;
    output ``n d_v x h``; with ``norms`` the two latents' RMSNorm weights.
    """
    h, n = hidden, heads
    d_qk = qk_nope_head_dim + qk_rope_head_dim
    if q_lora_rank:
        q = h * q_lora_rank + q_lora_rank * n * d_qk + (q_lora_rank if norms else 0)
    else:
        q = h * n * d_qk
    kv = h * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank * n * (qk_nope_head_dim + v_head_dim)
    return float(q + kv + n * v_head_dim * h + (kv_lora_rank if norms else 0))


def moe_parameter_counts(*, layers, hidden, ffn_hidden, heads, kv_heads, vocab, experts, top_k,
                         gated_mlp: bool = True, moe_ffn_hidden: int | None = None,
                         moe_shared_experts: int = 0, moe_shared_ffn_hidden: int | None = None,
                         moe_dense_layers: int = 0, mla_q_lora_rank: int = 0,
                         mla_kv_lora_rank: int = 0, mla_qk_nope_head_dim: int = 0,
                         mla_qk_rope_head_dim: int = 0, mla_v_head_dim: int = 0,
                         router_bias: bool = False) -> tuple[float, float]:
    """(total, activated per token) parameters of a mixture-of-experts decoder [-].

    Counts the input embedding and the untied output layer (``2 V h``), the final norm and
    two norms per layer, each layer's attention (GQA, or MLA with its latent norms:
    :func:`mla_parameters_per_layer`), the ``moe_dense_layers`` dense MLPs of ``ffn_hidden``,
    and in each MoE layer the router (``h E``, plus ``E`` bias terms with ``router_bias``:
    DeepSeek-V3's auxiliary-loss-free balancing bias), the ``E`` routed experts of
    ``moe_ffn_hidden`` (activated: ``top_k`` of them) and the shared experts (always
    active).  No multi-token-prediction module (DeepSeek-V3 reports its 14 B apart from the
    671 B).  Activated: the weights a token's forward multiplies, i.e. the total less the
    unselected routed experts and less the input embedding (a table lookup); the output
    layer counts.  DeepSeek-V3 / V2 / V2-Lite: 36.6 / 20.9 / 2.45 B against the 37 / 21 /
    2.4 B of their papers (with the input embedding 37.6 / 21.4 / 2.66 B).
    """
    h = hidden
    mats = 3 if gated_mlp else 2
    if mla_kv_lora_rank:
        attn = mla_parameters_per_layer(
            hidden=h, heads=heads, q_lora_rank=mla_q_lora_rank, kv_lora_rank=mla_kv_lora_rank,
            qk_nope_head_dim=mla_qk_nope_head_dim, qk_rope_head_dim=mla_qk_rope_head_dim,
            v_head_dim=mla_v_head_dim)
    else:
        attn = h * (h + 2 * h * kv_heads / heads) + h * h
    Fe = ffn_hidden if moe_ffn_hidden is None else moe_ffn_hidden
    Fs = moe_shared_experts * (Fe if moe_shared_ffn_hidden is None else moe_shared_ffn_hidden)
    router = h * experts + (experts if router_bias else 0)
    Ld, Lm = moe_dense_layers, layers - moe_dense_layers
    common = layers * (attn + 2 * h) + Ld * mats * h * ffn_hidden + Lm * (router + mats * h * Fs) \
        + 2 * vocab * h + h
    return (float(common + Lm * experts * mats * h * Fe),
            float(common + Lm * top_k * mats * h * Fe - vocab * h))


def _check_deepseek_terms(*, layers, moe_experts, moe_ffn_hidden, moe_shared_experts,
                          moe_shared_ffn_hidden, moe_dense_layers, mla_q_lora_rank,
                          mla_kv_lora_rank, mla_qk_nope_head_dim, mla_qk_rope_head_dim,
                          mla_v_head_dim) -> None:
    """ValueError naming the parameter when a DeepSeek-style input is malformed."""
    def _int(name: str, v: Any, lo: int) -> None:
        _check(not isinstance(v, bool) and int(v) == v and v >= lo,
               f"{name} must be a whole number >= {lo}, got {v!r}")
    for name, v in (("moe_ffn_hidden", moe_ffn_hidden),
                    ("moe_shared_ffn_hidden", moe_shared_ffn_hidden)):
        if v is not None:
            _int(name, v, 1)
    _int("moe_shared_experts", moe_shared_experts, 0)
    _int("moe_dense_layers", moe_dense_layers, 0)
    if not moe_experts:
        for name, v in (("moe_ffn_hidden", moe_ffn_hidden),
                        ("moe_shared_ffn_hidden", moe_shared_ffn_hidden)):
            _check(v is None, f"{name} applies to mixture-of-experts models (moe_experts > 0)")
        for name, v in (("moe_shared_experts", moe_shared_experts),
                        ("moe_dense_layers", moe_dense_layers)):
            _check(v == 0, f"{name} applies to mixture-of-experts models (moe_experts > 0)")
    _check(moe_dense_layers < layers,
           f"moe_dense_layers={moe_dense_layers!r} must be below layers={layers}")
    _check(moe_shared_ffn_hidden is None or moe_shared_experts > 0,
           "moe_shared_ffn_hidden needs moe_shared_experts > 0")
    for name, v in (("mla_q_lora_rank", mla_q_lora_rank), ("mla_kv_lora_rank", mla_kv_lora_rank),
                    ("mla_qk_nope_head_dim", mla_qk_nope_head_dim),
                    ("mla_qk_rope_head_dim", mla_qk_rope_head_dim),
                    ("mla_v_head_dim", mla_v_head_dim)):
        _int(name, v, 0)
    dims = (mla_qk_nope_head_dim, mla_qk_rope_head_dim, mla_v_head_dim)
    if mla_kv_lora_rank:
        _check(all(d >= 1 for d in dims),
               "multi-head latent attention (mla_kv_lora_rank > 0) needs mla_qk_nope_head_dim, "
               f"mla_qk_rope_head_dim and mla_v_head_dim >= 1, got {dims}")
    else:
        _check(mla_q_lora_rank == 0 and not any(dims),
               "mla_q_lora_rank and the mla head dims need mla_kv_lora_rank > 0")


def expert_dp_unit(*, tp: int, cp: int, ep: int, moe_expert_tp: int | None) -> int:
    """Data-parallel ranks [-] whose multiples, and only those, hold the expert-parallel layout.

    Without expert tensor parallelism (``moe_expert_tp`` None) the expert groups come from the
    data x context ranks: ``ep`` must divide ``dp cp``, i.e. ``dp`` a multiple of
    ``ep / gcd(cp, ep)``.  With it (``etp``, Megatron-core's "MoE parallel folding",
    Megatron-LM 7f22e21) the groups are drawn over a pipeline stage's ``tp cp dp`` ranks and
    ``parallel_state.initialize_model_parallel`` requires the world size to be a multiple of
    ``etp ep pp``: ``etp ep`` divides ``tp cp dp``, i.e. ``dp`` a multiple of
    ``etp ep / gcd(tp cp, etp ep)`` The one predicate of
    :func:`twin.compute.estimate_file.layout_problems`, the scenario loader and
    :func:`twin.plant.usable_gpus`."""
    if moe_expert_tp is None:
        return ep // math.gcd(cp, ep)
    group = moe_expert_tp * ep
    return group // math.gcd(tp * cp, group)


def moe_routed_load(routing: str, capacity_factor: float, dropless_load: float | None) -> float:
    """Routed copies a rank's experts take per token, over ``top_k`` [-]: ``capacity_factor``
    with capacity routing (padded to capacity), the busiest expert-parallel rank's load with
    dropless routing (``dropless_load``, None: :data:`MOE_DROPLESS_BUSIEST_LOAD`).  Raises
    ``ValueError`` for a routing outside :data:`MOE_ROUTINGS`, a capacity factor other than 1
    with dropless routing, a load below 1, or a load with capacity routing.  The one rule of
    the step (:func:`step_estimate`) and memory (:func:`twin.compute.memory.memory_per_gpu_bytes`)
    models."""
    _check(routing in MOE_ROUTINGS, f"moe_routing must be one of {MOE_ROUTINGS}, got {routing!r}")
    if routing == "dropless":
        _check(capacity_factor == 1.0,
               f"moe_capacity_factor={capacity_factor!r} applies to capacity routing; "
               "dropless routing has no capacity (leave it at 1.0)")
        load = MOE_DROPLESS_BUSIEST_LOAD if dropless_load is None else dropless_load
        _check(load >= 1.0, f"moe_dropless_load must be >= 1 (the busiest rank carries at least "
                            f"the mean), got {dropless_load!r}")
        return load
    _check(dropless_load is None, "moe_dropless_load applies to moe_routing='dropless' only")
    return capacity_factor


def expert_ranks_per_node(*, ep: int, tp: int, cp: int, moe_expert_tp: int | None,
                          gpus_per_node: int) -> int:
    """Ranks of one expert-parallel group on a node [-].

    EP ranks are ``tp cp`` apart (Megatron's order TP, CP, EP, DP), or ``moe_expert_tp``
    apart with folded expert groups (Megatron-core "MoE parallel folding": ETP, EP, EDP), so a
    node of ``g`` GPUs holds ``min(ep, g // stride)`` of them, 1 when the stride exceeds ``g``.
    The group's all-to-all crosses nodes when this is below ``ep``."""
    stride = tp * cp if moe_expert_tp is None else moe_expert_tp
    return max(1, min(ep, gpus_per_node // stride)) if stride <= gpus_per_node else 1


def moe_nodes_per_token(*, experts: int, top_k: int, nodes: int, node_limit: int) -> float:
    """Expected distinct nodes [-] a token's ``top_k`` routed copies land on under DeepSeek-V3's
    node-limited routing (arXiv 2412.19437 sec. 3.2.2: "each token will be sent to at most
    M nodes"; its config's group-limited gate, ``n_group`` groups = the EP group's nodes, the
    top ``topk_group`` = M of them, then the top-k experts inside those).

    The expectation when the ``top_k`` experts are drawn uniformly without replacement from
    the ``M e`` experts of the M chosen nodes (``e = experts / nodes`` a node)::

        D = M (1 - C((M - 1) e, k) / C(M e, k))

    (a chosen node gets none of the k with the hypergeometric probability of the ratio), at
    most ``min(M, k)``.  Uniform routing is an assumption: the gate picks groups by the sum of
    their two best affinities, so a chosen node is likelier to receive a copy than uniform
    draws say, and D lies between this and the bound M."""
    _check(int(nodes) == nodes and nodes >= 1, f"nodes must be a positive integer, got {nodes!r}")
    _check(not isinstance(node_limit, bool) and int(node_limit) == node_limit
           and 1 <= node_limit <= nodes,
           f"moe_node_limit={node_limit!r} must be between 1 and the expert-parallel group's "
           f"nodes ({nodes})")
    _check(experts % nodes == 0, f"moe_experts={experts} do not split over the expert-parallel "
                                 f"group's {nodes} nodes (moe_node_limit)")
    e = experts // nodes
    m, k = int(node_limit), int(top_k)
    _check(m * e >= k, f"moe_node_limit={node_limit} nodes hold {m * e} experts, fewer than "
                       f"moe_top_k={top_k}")
    return m * (1.0 - math.comb((m - 1) * e, k) / math.comb(m * e, k))


def mtp_flops_per_sequence(*, layers, hidden, vocab, seq_len, **shape) -> float:
    """Forward+backward FLOPs per sequence [FLOP] of one multi-token prediction module
    (DeepSeek-V3, arXiv 2412.19437 sec. 2.2, depth 1): one more transformer block of the
    model's kind (an MoE layer when the model has them: the difference of
    :func:`model_flops_per_sequence` at ``layers + 1`` and ``layers``), its ``2h x h``
    projection and a pass through the shared output head, 6 FLOPs per weight and token::

        s (6 (2 h h) + 6 V h) + (one layer's FLOPs)

    ``shape``: the other keywords of :func:`model_flops_per_sequence`; the two RMSNorms and
    the embedding lookup are not counted."""
    kw = dict(hidden=hidden, vocab=vocab, seq_len=seq_len, **shape)
    block = (model_flops_per_sequence(layers=layers + 1, **kw)
             - model_flops_per_sequence(layers=layers, **kw))
    return float(block + seq_len * 6.0 * (2.0 * hidden * hidden + vocab * hidden))


def fabric_traffic_pattern(*, experts: int, ep: int, tp: int, cp: int,
                           moe_expert_tp: int | None, gpus_per_node: int) -> str:
    """The pattern a job's traffic loads the fabric with (:data:`twin.fabric.routing.PATTERNS`):
    ``"all_to_all"`` for a mixture of experts whose expert-parallel group spans nodes
    (:func:`expert_ranks_per_node` below ``ep``), else ``"ring"``; the one rule of the engine
    (:meth:`twin.sim.jobs.Jobs.traffic_pattern`), ``twin estimate step`` and the fabric study."""
    if not experts or ep <= 1:
        return "ring"
    rpn = expert_ranks_per_node(ep=ep, tp=tp, cp=cp, moe_expert_tp=moe_expert_tp,
                                gpus_per_node=gpus_per_node)
    return "all_to_all" if rpn < ep else "ring"


def parameter_count(*, layers, hidden, ffn_hidden, heads, kv_heads, vocab,
                    gated_mlp: bool = True) -> float:
    """Parameters of a Llama-style decoder (untied embeddings, RMSNorm, no biases) [-]."""
    h = hidden
    hkv = h * kv_heads / heads
    mats = 3 if gated_mlp else 2
    per_layer = h * (h + 2 * hkv) + h * h + mats * h * ffn_hidden + 2 * h
    return layers * per_layer + 2 * vocab * h + h


def kernel_efficiency_for(peak_tflops: float, precision: str = "bf16") -> KernelEfficiency:
    """Default efficiencies from the peak: Hopper-class above 600 dense BF16 TFLOP/s."""
    bf16 = peak_tflops / (2.0 if precision == "fp8" else 1.0)
    return H100_SXM if bf16 > 600.0 else A100_SXM


def _gemm_time_s(m, n, k, *, peak_flops, eff: float, ke: KernelEfficiency, hbm_b_s: float,
                 bytes_per_el: float):
    """Time [s] of GEMMs ``(m x k) @ (k x n)`` (arrays): wave-quantised compute or HBM roofline."""
    m = np.asarray(m, dtype=float)
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    flops = 2.0 * m * n * k
    tiles = np.ceil(m / ke.tile_m) * np.ceil(n / ke.tile_n)
    waves = np.ceil(tiles / ke.sms)
    wave_eff = tiles / (waves * ke.sms)
    t_c = flops / (peak_flops * eff * wave_eff)
    t_m = bytes_per_el * (m * k + k * n + m * n) / (hbm_b_s * ke.hbm)
    return np.maximum(t_c, t_m)


#: Pipeline schedules of :func:`step_estimate` (``pipeline_schedule``): Megatron's 1F1B
#: (``vpp`` 1), its interleaved 1F1B (``vpp`` > 1) and DeepSeek's DualPipe (``vpp`` 1).
PIPELINE_SCHEDULES = ("1f1b", "interleaved", "dualpipe")


def resolved_schedule(schedule: str | None, vpp: int) -> str:
    """The pipeline schedule a layout runs: ``schedule``, or when it is None the one ``vpp``
    implies ('interleaved' for vpp > 1, else '1f1b')."""
    return schedule if schedule is not None else ("interleaved" if vpp > 1 else "1f1b")


def schedule_vpp_mismatch(schedule: str, vpp: int) -> bool:
    """True when a resolved ``schedule`` (:func:`resolved_schedule`) and ``vpp`` disagree:
    'interleaved' needs vpp > 1, '1f1b' and 'dualpipe' need vpp = 1 (Megatron's
    interleaved 1F1B is the only schedule of :data:`PIPELINE_SCHEDULES` with virtual stages).
    The callers word the message: 'interleaved' with vpp 1, or another schedule with vpp > 1."""
    return (schedule == "interleaved") != (vpp > 1)


def dualpipe_problems(*, pp: int, microbatches: int | None,
                      zero_stage: int | None) -> list[tuple[str, int]]:
    """The rules of DualPipe a layout breaks, as ``(rule, value)`` pairs in this order, for
    the callers to word in their own field names (step, memory, estimate file, scenario
    loader, engine):

    - ``("pp", pp)``: pp must be even (and >= 2): rank r holds stages r and pp-1-r;
    - ``("microbatches", m)``: an even number of micro-batches per data-parallel rank,
      at least 2 pp (global_batch / (dp micro_batch)); None: not known, not checked;
    - ``("zero_stage", 3)``: DualPipe is modelled with the distributed optimizer (zero_stage
      0-2, the step model's limit); None: not checked.

    The first two are deepseek-ai/DualPipe's (dualpipe.py, ``DualPipe.step``'s assertions).
    vpp 1 is the schedule's rule (:func:`schedule_vpp_mismatch`), which every caller checks
    first."""
    out: list[tuple[str, int]] = []
    if pp < 2 or pp % 2:
        out.append(("pp", pp))
    if microbatches is not None and (microbatches < 2 * pp or microbatches % 2):
        out.append(("microbatches", microbatches))
    if zero_stage == 3:
        out.append(("zero_stage", zero_stage))
    return out


#: SMs DeepSeek-V3's all-to-all kernels hold while they overlap computation [-]: "we employ
#: the warp specialization technique and partition 20 SMs into 10 communication channels"
#: (DeepSeek-V3 Technical Report, arXiv 2412.19437, sec. 3.2.2), of the H800's 132.  The
#: twin takes the same 20 on any GPU (``KernelEfficiency.sms`` of them): the count DeepSeek
#: found to saturate IB and NVLink, not re-derived for other links.
DUALPIPE_COMM_SMS = 20


@dataclass(frozen=True)
class PipelineChunk:
    """One pipeline stage's work for one micro-batch [s], as DualPipe schedules it.

    parts: the stage's serial time by breakdown key (gemm, attention, elementwise,
    recompute, tp_comm_exposed, cp_comm_exposed, output_layer), forward and backward;
    fwd / bwd: its forward chunk F and full backward chunk B without communication (bwd
    includes wgrad); wgrad: the weight-gradient GEMMs W ("backward for weights");
    a2a_fwd / a2a_bwd: the expert all-to-alls (dispatch + combine) of the forward and of
    the backward chunk."""

    parts: dict[str, float]
    fwd: float
    bwd: float
    wgrad: float
    a2a_fwd: float = 0.0
    a2a_bwd: float = 0.0


def dualpipe_pair_s(compute_s: float, comm_s: float, sm_share: float) -> tuple[float, float]:
    """(compute lost to reserved SMs, communication left exposed) [s] of one DualPipe pair.

    A forward and a backward chunk run mutually overlapped (DeepSeek-V3, arXiv 2412.19437,
    sec. 3.2.1, Fig. 4): the pair's communication ``comm_s`` (all-to-alls, pipeline sends)
    runs beside its computation ``compute_s`` on a share ``sm_share`` of the SMs, so for as
    long as it runs the computation proceeds at ``1 - sm_share`` of its rate::

        t_pair = max(comm, compute + sm_share comm)

    (computation done under the communication: ``comm (1 - sm_share)``; the rest at full
    rate).  Returned split as ``t_pair = compute + lost + exposed``: ``lost = sm_share
    min(comm, compute / (1 - sm_share))``, ``exposed = max(0, comm - compute / (1 -
    sm_share))``.  Never more than ``compute + comm`` (the serial pair).  Ideal
    interleaving: DeepSeek splits each chunk into attention, dispatch, MLP and combine and
    orders them so; the twin assumes the arrangement always finds work to hide behind.
    """
    under = compute_s / (1.0 - sm_share)
    return sm_share * min(comm_s, under), max(0.0, comm_s - under)


def dualpipe_pair(f: PipelineChunk, b: PipelineChunk, *, t_send_s: float,
                  sm_share: float) -> tuple[float, float, float, float]:
    """(time, compute lost to reserved SMs, exposed all-to-all, exposed sends) [s] of one
    DualPipe pair: forward chunk ``f`` overlapped with backward chunk ``b`` of the rank's
    other stage (:func:`dualpipe_pair_s`), the communication being both chunks' all-to-alls
    and the pair's two pipeline sends (``t_send_s`` each), the exposed part split between
    them by their shares of the communication."""
    a2a = f.a2a_fwd + b.a2a_bwd
    comm = a2a + 2.0 * t_send_s
    lost, exposed = dualpipe_pair_s(f.fwd + b.bwd, comm, sm_share)
    a2a_share = a2a / comm if comm > 0 else 0.0
    return (f.fwd + b.bwd + lost + exposed, lost, exposed * a2a_share,
            exposed * (1.0 - a2a_share))


@functools.lru_cache(maxsize=32)
def _dualpipe_program(pp: int, microbatches: int) -> tuple[Any, ...]:
    """The op graph of ``DualPipe.step`` (deepseek-ai/DualPipe, dualpipe.py, steps 1-8) on
    ``pp`` ranks with ``microbatches`` chunks; it does not depend on durations (cached).

    Each rank's program replays ``step``'s calls.  A chunk first commits the receives and
    sends queued since the previous commit (``_commit_and_wait_comm``), so an op waits for
    every receive queued before it, including ones posted early (step 2 posts the next
    phase-0 input before the phase-1 forward; step 3 posts the forward input before the
    weight chunk), and a queued send leaves at that commit, i.e. when the op after which it
    was queued ends (step 2 holds a non-middle rank's phase-0 output until its phase-1
    forward ends; step 4's unoverlapped first chunks on the middle ranks hold theirs until
    the backward ends).  Sends do not block the sender (the data is taken as buffered).

    Rank ``pp-1-r`` runs rank ``r``'s ops on the same stages in the other direction (its
    phase ``p`` is direction ``1 - d``): the same keys, every message with its direction
    flipped, so the map "op of rank r <-> the same op of rank pp-1-r" carries the graph onto
    itself, keys and all, and both copies end at the same time bit for bit (the same maxima
    and sums of the same durations).  Only ranks ``0 .. pp/2-1`` are built and replayed; a
    message from a rank of the other half is waited for as its mirror's launching op.

    Returns ``(prog, k, starts, key, rank, counts)``: ``prog`` the ``k`` ops of ranks
    ``0 .. pp/2-1`` in a topological order, each as ``(op, key, predecessor on its rank,
    a1, a2, h1, h2)`` (predecessor -1 for a rank's first op; ``a1, a2`` the ops launching
    the messages it waits for whose send adds ``t_send``, ``h1, h2`` those whose message was
    computed by the pair that launches it, its send counted in the pair; ``k`` where there
    is none); ``starts`` each of those ranks' first op (a rank's ops are consecutive); per
    op its duration key (stage ``s``: forward ``s``, full backward ``pp + s``, backward for
    inputs ``2 pp + s``, weight chunk ``3 pp + s``; pair of forward stage ``s_f`` and
    backward stage ``s_b``: ``4 pp + s_f pp + s_b``) and its rank; ``counts[rank, key]`` the
    number of ops of each key on every rank (all ``pp``).
    """
    n, half, J = pp, pp // 2, microbatches
    # message (backward?, direction, sending stage, index j) -> ((bwd 2 + d) n + s) J + j
    launch_op = [-1] * (4 * n * J)
    launch_hid = [False] * (4 * n * J)
    ranks: list[int] = []
    keys: list[int] = []
    # the (at most two) messages each op waits for: those queued since its rank's previous
    # op; -1 for none (flat lists: a list per op would cost more in garbage collection than
    # the build itself)
    recv1: list[int] = []
    recv2: list[int] = []
    prevs: list[int] = []
    pair_key0 = 4 * n

    def build(r: int) -> None:  # one rank below pp/2 (its phase p is direction p)
        hr = r
        middle = r == half - 1
        pos = (r, n - 1 - r)  # the rank's stage in direction 0 (rank 0 first) and 1
        q_recv: list[int] = []
        q_send: list[tuple[int, int]] = []
        n_recv = [[0, 0], [0, 0]]  # [forward / backward][direction]
        n_send = [[0, 0], [0, 0]]
        made: list[list[list[int]]] = [[[], []], [[], []]]  # op computing each chunk
        wq: list[int] = []  # stages of the deferred weight gradients, first in first out
        last = [-1]
        # per [bwd][d]: the first message id of the stage it receives from / sends as (-1: none)
        rbase = [[-1 if pos[d] == 0 else (2 * 0 + d) * n * J + (pos[d] - 1) * J
                  for d in (0, 1)],
                 [-1 if pos[d] == n - 1 else (2 + d) * n * J + (pos[d] + 1) * J
                  for d in (0, 1)]]
        sbase = [[-1 if pos[d] == n - 1 else d * n * J + pos[d] * J for d in (0, 1)],
                 [-1 if pos[d] == 0 else (2 + d) * n * J + pos[d] * J for d in (0, 1)]]

        def commit() -> None:
            if q_send:
                op = last[0]
                hid = keys[op] >= pair_key0
                for mid, producer in q_send:
                    launch_op[mid] = op
                    launch_hid[mid] = hid and producer == op
                q_send.clear()

        def emit(key: int) -> int:
            i = len(keys)
            ranks.append(r)
            keys.append(key)
            nq = len(q_recv)
            if nq > 2:  # cannot happen for the dualpipe.py order; guards a wrong replay
                raise RuntimeError(f"DualPipe op {i} waits for {nq} messages (pp={pp})")
            recv1.append(q_recv[0] if nq else -1)
            recv2.append(q_recv[1] if nq == 2 else -1)
            prevs.append(last[0])
            q_recv.clear()
            last[0] = i
            return i

        def recv(bwd: int, d: int) -> None:
            b = rbase[bwd][d]
            if b >= 0:  # not the first stage's input / last stage's loss
                c = n_recv[bwd]
                q_recv.append(b + c[d])
                c[d] += 1

        def send(bwd: int, d: int) -> None:
            b = sbase[bwd][d]
            if b >= 0:
                c = n_send[bwd]
                j = c[d]
                q_send.append((b + j, made[bwd][d][j]))
                c[d] = j + 1

        def fwd(d: int, do_recv: bool = True, do_send: bool = True) -> None:
            if do_recv:
                recv(0, d)
            commit()
            made[0][d].append(emit(pos[d]))
            if do_send:
                send(0, d)

        def bwd(d: int, zb: bool = False, do_send: bool = True) -> None:
            recv(1, d)
            commit()
            made[1][d].append(emit((2 if zb else 1) * n + pos[d]))
            if zb:
                wq.append(pos[d])
            if do_send:
                send(1, d)

        def pair(d0: int, d1: int, recv0: bool = True) -> None:
            if recv0:
                recv(0, d0)
            recv(1, d1)
            commit()
            i = emit(pair_key0 + pos[d0] * n + pos[d1])
            made[0][d0].append(i)
            made[1][d1].append(i)
            send(0, d0)
            send(1, d1)

        def weight() -> None:
            commit()
            emit(3 * n + wq.pop(0))

        def steady(rounds: int) -> None:
            # ``rounds`` times pair(0, 1) then pair(1, 0), all at once: the same ops, receives,
            # sends and launches as the calls one by one (the bulk of the ops for m >> pp)
            if rounds <= 0:
                return
            commit()
            base = len(keys)
            ops = (range(base, base + 2 * rounds, 2), range(base + 1, base + 2 * rounds, 2))
            ranks.extend([r] * (2 * rounds))
            keys.extend([pair_key0 + pos[0] * n + pos[1], pair_key0 + pos[1] * n + pos[0]]
                        * rounds)
            prevs.append(last[0])
            prevs.extend(range(base, base + 2 * rounds - 1))
            if q_recv:  # cannot happen: pair(1, 0) was the last op
                raise RuntimeError(f"DualPipe: a receive queued before step 4 (pp={pp})")
            slots = ([-1] * (2 * rounds), [-1] * (2 * rounds))
            for d in (0, 1):  # pair(d, 1 - d): forward of direction d, backward of 1 - d
                slot = 0
                for bwd, dd in ((0, d), (1, 1 - d)):
                    b = rbase[bwd][dd]
                    if b >= 0:
                        j = n_recv[bwd][dd]
                        n_recv[bwd][dd] = j + rounds
                        slots[slot][d::2] = range(b + j, b + j + rounds)
                        slot += 1
            recv1.extend(slots[0])
            recv2.extend(slots[1])
            for d in (0, 1):
                made[0][d].extend(ops[d])
                made[1][1 - d].extend(ops[d])
                for bwd, dd in ((0, d), (1, 1 - d)):
                    b = sbase[bwd][dd]
                    if b >= 0:
                        j = n_send[bwd][dd]
                        n_send[bwd][dd] = j + rounds
                        launch_op[b + j:b + j + rounds] = ops[d]
                        launch_hid[b + j:b + j + rounds] = [
                            x == y for x, y in zip(made[bwd][dd][j:j + rounds], ops[d], strict=True)]
            last[0] = base + 2 * rounds - 1

        for _ in range(2 * (half - hr - 1)):  # step 1: phase-0 forwards
            fwd(0)
        recv(0, 0)  # step 2: forward pairs, the next phase-0 input posted early
        for i in range(hr + 1):
            fwd(0, do_recv=False, do_send=middle)
            recv(0, 0)
            fwd(1, do_send=(not middle) or i < hr)
            if not middle:
                send(0, 0)
        for _ in range(half - hr - 1):  # step 3: backward for inputs, weight, forward
            bwd(1, zb=True)
            recv(0, 1)
            weight()
            fwd(1, do_recv=False)
        rounds = microbatches // 2 - n + hr + 1  # step 4: the overlapped pairs
        if rounds > 0:
            if middle:  # dualpipe.py: "We don't overlap these two chunks"
                fwd(0, do_recv=False, do_send=False)
                send(0, 1)
                bwd(1, do_send=False)
                send(0, 0)
                send(1, 1)
            else:
                pair(0, 1, recv0=False)
            pair(1, 0)
            steady(rounds - 1)
        for _ in range(half - hr - 1):  # step 5
            bwd(1)
            pair(1, 0)
        zb = False  # step 6: the later backwards split for the zero bubble
        for i in range(hr + 1):
            if i == (hr + 1) // 2 and hr % 2 == 1:
                zb = True
            bwd(1, zb=zb)
            if i == (hr + 1) // 2 and hr % 2 == 0:
                zb = True
            bwd(0, zb=zb)
        for _ in range(half - hr - 1):  # step 7
            weight()
            bwd(0, zb=True)
        for _ in range(hr + 1):  # step 8
            weight()
        commit()

    starts: list[int] = []  # each rank's first op (a rank's ops are consecutive)
    for r in range(half):
        starts.append(len(keys))
        build(r)
    # per op (op, key, predecessor, a1, a2, h1, h2) as returned
    k = len(keys)
    nJ = n * J
    ops: list[tuple[int, int, int, int, int, int, int]] = []
    for i in range(k):
        m1 = recv1[i]
        if m1 < 0:
            ops.append((i, keys[i], prevs[i], k, k, k, k))
            continue
        m2 = recv2[i]
        w = [k, k, k, k]
        na, nh = 0, 2
        for mid in (m1, m2) if m2 >= 0 else (m1,):
            op = launch_op[mid]
            if op < 0:  # sent by the other half: its mirror's launch, the same op here
                mid += nJ if (mid // nJ) % 2 == 0 else -nJ
                op = launch_op[mid]
            if launch_hid[mid]:
                w[nh] = op
                nh += 1
            else:
                w[na] = op
                na += 1
        ops.append((i, keys[i], prevs[i], w[0], w[1], w[2], w[3]))
    # topological order: each rank advanced while its next op's messages have been launched
    nxt = [-1] * k
    for i, p in enumerate(prevs):
        if p >= 0:
            nxt[p] = i
    done = [False] * k + [True]
    heads = list(starts)
    order: list[int] = []
    while len(order) < k:
        moved = False
        for h, i in enumerate(heads):
            while i >= 0:
                _, _, _, a1, a2, h1, h2 = ops[i]
                if not (done[a1] and done[a2] and done[h1] and done[h2]):
                    break
                done[i] = True
                order.append(i)
                i = nxt[i]
                moved = True
            heads[h] = i
        if not moved:  # cannot happen for the dualpipe.py order; guards a wrong replay
            raise RuntimeError(f"DualPipe op graph has a cycle (pp={pp}, m={microbatches})")
    prog = [ops[i] for i in order]
    counts = np.zeros((n, 4 * n + n * n))
    np.add.at(counts, (np.asarray(ranks), np.asarray(keys)), 1.0)
    counts[half:] = counts[half - 1::-1]
    return prog, k, np.asarray(starts), tuple(keys), np.asarray(ranks), counts


def dualpipe_schedule_s(pp: int, microbatches: int, *, fwd_s: Any, bwd_s: Any, wgrad_s: Any,
                        pair_s: Any, t_send_s: float) -> dict[str, Any]:
    """Finish times [s] of DualPipe's op order (:func:`_dualpipe_program`) with durations.

    fwd_s, bwd_s, wgrad_s: per stage (length ``pp``) the forward chunk run alone, the full
    backward chunk run alone and its weight-gradient part W [s] (a split backward runs
    ``bwd - wgrad``, then W in a later weight chunk); pair_s [pp, pp]: the overlapped pair of
    a forward of stage ``i`` and a backward of stage ``j`` [s]; t_send_s: a pipeline send
    [s], added to a dependency unless the message was computed and sent by a pair (then its
    send is in the pair's communication).  An op starts when its rank's previous op has
    ended and its messages have arrived; the result is the longest path::

        end(op) = max(end(prev), max_msg end(launch) + t_send) + duration(op)

    Returns ``step`` (the last rank's finish), ``step_free`` (the same with ``t_send_s`` 0),
    per rank ``finish`` and ``busy`` (sum of its op durations), and ``counts`` [rank, key]
    (:func:`_dualpipe_program`).  Cost: the graph once per (pp, m), then one pass over the
    ops of half the ranks (rank ``pp-1-r`` mirrors rank ``r``).  CPU time on 2 shared cores
    at load 4-5: pp 16 and m 120 (2,418 ops, 1,209 replayed) about 1.5 ms to build and
    0.35 ms a pass; pp 64 and m 512 (40,898 ops) about 40 ms and 10 ms.
    """
    prog, k, starts, _, _, counts = _dualpipe_program(pp, microbatches)
    f = np.asarray(fwd_s, dtype=float)
    b = np.asarray(bwd_s, dtype=float)
    w = np.asarray(wgrad_s, dtype=float)
    table = np.concatenate([f, b, b - w, w, np.asarray(pair_s, dtype=float).ravel()])
    dur = table.tolist()
    ts = float(t_send_s)
    # end[k]: a missing message (-inf); end[-1]: the start (a rank's first op has predecessor -1)
    end = [0.0] * k + [-math.inf, 0.0]
    free = end[:]  # the same with free sends, in the same pass
    for i, key, p, a1, a2, h1, h2 in prog:  # compares inline: twice max()'s speed
        t = end[p]
        a = end[a1] + ts
        if a > t:
            t = a
        a = end[a2] + ts
        if a > t:
            t = a
        a = end[h1]
        if a > t:
            t = a
        a = end[h2]
        if a > t:
            t = a
        d = dur[key]
        end[i] = t + d
        t = free[p]
        a = free[a1]
        if a > t:
            t = a
        a = free[a2]
        if a > t:
            t = a
        a = free[h1]
        if a > t:
            t = a
        a = free[h2]
        if a > t:
            t = a
        free[i] = t + d
    half_finish = np.maximum(np.maximum.reduceat(np.asarray(end[:k]), starts), 0.0)
    finish = np.concatenate([half_finish, half_finish[::-1]])
    return {"step": float(finish.max()), "step_free": max(free[:k]), "finish": finish,
            "busy": counts @ table, "counts": counts}


def dualpipe_pipeline(chunks: list[PipelineChunk], *, microbatches: int, t_send_s: float,
                      sm_share: float) -> dict[str, Any]:
    """DualPipe's pipeline terms [s] from its schedule (:func:`dualpipe_schedule_s`).

    chunks: per stage (length ``pp``) its chunk; rank ``r`` holds stages ``r`` and
    ``pp-1-r``.  A forward run alone takes ``fwd + a2a_fwd``, a backward ``bwd + a2a_bwd``
    (communication serial, all SMs), a pair :func:`dualpipe_pair`.  The slowest rank ``R``
    is the one with the most busy time; its terms add up to ``step``::

        step = busy_R + bubble + pp_wait
        busy_R = m/2 (parts_R + parts_pp-1-R) + sm_lost + a2a + pp

    with ``bubble`` the idle time of rank R under free dependencies (the schedule's
    ``step`` with ``t_send`` 0 on the dependencies, minus ``busy_R``) and ``pp_wait`` what
    the dependencies' sends add to the step; ``sm_lost``, ``a2a`` (exposed in pairs, whole
    for chunks run alone) and ``pp`` (the pairs' exposed sends) summed over R's ops.
    Returns those, ``pair`` (R's mean pair, the micro-batch time for the data-parallel
    overlap), ``rank`` R, and per rank ``finish``, ``busy`` and ``pairs`` (its overlapped
    pairs).
    """
    pp = len(chunks)
    memo: dict[tuple[int, int], tuple[float, float, float, float]] = {}
    terms = np.empty((pp, pp, 4))
    for i, f in enumerate(chunks):
        for j, b in enumerate(chunks):
            k = (id(f), id(b))
            if k not in memo:
                memo[k] = dualpipe_pair(f, b, t_send_s=t_send_s, sm_share=sm_share)
            terms[i, j] = memo[k]
    kw: dict[str, Any] = dict(fwd_s=[c.fwd + c.a2a_fwd for c in chunks],
                              bwd_s=[c.bwd + c.a2a_bwd for c in chunks],
                              wgrad_s=[c.wgrad for c in chunks], pair_s=terms[:, :, 0])
    sched = dualpipe_schedule_s(pp, microbatches, t_send_s=t_send_s, **kw)
    free = sched["step_free"]
    busy = sched["busy"]
    R = int(np.argmax(busy))
    ra, rb = R, pp - 1 - R
    zeros = np.zeros(pp)
    a2a_f = np.array([c.a2a_fwd for c in chunks])
    a2a_b = np.array([c.a2a_bwd for c in chunks])
    n_R = sched["counts"][R]
    per_key = np.stack([
        np.concatenate([zeros, zeros, zeros, zeros, terms[:, :, 1].ravel()]),
        np.concatenate([a2a_f, a2a_b, a2a_b, zeros, terms[:, :, 2].ravel()]),
        np.concatenate([zeros, zeros, zeros, zeros, terms[:, :, 3].ravel()])])
    sm_lost, a2a, x_pp = (per_key @ n_R).tolist()
    half = 0.5 * microbatches
    keys = dict.fromkeys([*chunks[ra].parts, *chunks[rb].parts])
    parts = {k: half * (chunks[ra].parts.get(k, 0.0) + chunks[rb].parts.get(k, 0.0))
             for k in keys}
    # idle time; below 1e-12 of the step it is the rounding of the same durations summed in
    # two orders (a rank that never waits)
    idle = free - float(busy[R])
    idle = idle if idle > 1e-12 * free else 0.0
    return {"step": sched["step"], "bubble": idle,
            "pp_wait": sched["step"] - free, "parts": parts, "sm_lost": sm_lost, "a2a": a2a,
            "pp": x_pp, "pair": 0.5 * float(terms[ra, rb, 0] + terms[rb, ra, 0]), "rank": R,
            "finish": sched["finish"], "busy": busy,
            "pairs": sched["counts"][:, 4 * pp:].sum(axis=1)}


def interleaved_chunk_times_s(layout: Any, *, lay_main: tuple, lay_dense: tuple,
                              moe_dense_layers: float, g_logits: Any, t_ce: float,
                              t_embed: float, g_mtp: Any) -> tuple[np.ndarray, np.ndarray]:
    """Forward and backward time [s] of each rank's chunk for one micro-batch, ``(pp, vpp)``
    each, from what the chunk holds (``layout``, a :class:`PipelineLayout`).

    A decoder layer (``lay_main``, or ``lay_dense`` for the first ``moe_dense_layers`` in layer
    order; each ``(times by term, (gemm_f, attn_f, mem_f, gemm_b, attn_b, mem_b, recompute,
    gemm_w))`` as step_estimate's ``_layer``) splits as DualPipe's chunks do: forward ``c_f``
    (GEMMs, attention, memory-bound kernels), backward ``c_b`` (the same and recompute), the
    exposed TP / CP collectives by those shares, the expert all-to-alls half each (2 forward, 2
    backward).  The embedding (``E``) 1/3 forward, 2/3 backward; the output layer + loss
    (``L``): forward GEMM and cross-entropy forward, data- and weight-grad GEMMs backward; an
    MTP module (``m``): a layer of the model's kind, its ``2h x h`` projection (``g_mtp``) and
    another pass through the output layer and the embedding.  Summed over a rank's chunks:
    its time per micro-batch in step_estimate (the same terms)."""
    def split(lay: tuple) -> tuple[float, float]:
        t_lay, (gf, af, mf, gb, ab, mb, rec, _) = lay
        cf, cb = gf + af + mf, gb + ab + mb + rec
        serial = t_lay["tp_comm_exposed"] + t_lay["cp_comm_exposed"]
        a2a = t_lay.get("moe_a2a_exposed", 0.0)
        return (cf + serial * cf / (cf + cb) + 0.5 * a2a,
                cb + serial * cb / (cf + cb) + 0.5 * a2a)
    c = layout.counts
    e, t, mtp, loss = c[:, :, EMBED], c[:, :, DECODER], c[:, :, MTP], c[:, :, LOSS]
    d = layout.dense_layers(moe_dense_layers) if moe_dense_layers else np.zeros_like(t)
    (f_main, b_main), (f_dense, b_dense) = split(lay_main), split(lay_dense)
    out_f = float(g_logits[0]) + t_ce
    out_b = float(g_logits[1] + g_logits[2])
    fwd = ((t - d + mtp) * f_main + d * f_dense + loss * out_f + e * t_embed / 3.0
           + mtp * (float(g_mtp[0]) + out_f + t_embed / 3.0))
    bwd = ((t - d + mtp) * b_main + d * b_dense + loss * out_b + e * 2.0 * t_embed / 3.0
           + mtp * (float(g_mtp[1] + g_mtp[2]) + out_b + 2.0 * t_embed / 3.0))
    return fwd, bwd


def interleaved_bubble_s(layout: Any, *, microbatches: int, **chunk_terms: Any) -> float:
    """The interleaved 1F1B bubble [s]: the makespan of Megatron-core's op order with each
    chunk's forward and backward (:func:`interleaved_chunk_times_s`, ``chunk_terms`` its
    arguments) and free sends (:func:`twin.compute.schedules.interleaved_schedule_s`), minus
    the busiest rank's busy time (``m`` times its chunks' forward + backward).

    Equal chunks give SC21's ``(pp - 1)/vpp`` stage times (sec. 2.2.2); uneven ones (the
    embedding on rank 0's first chunk, the output layer on the last rank's last, a layout's
    chunks) the bubble the fill and the drain cross.  The chunk order runs in groups of ``pp``
    micro-batches when ``pp`` divides ``m``; otherwise in the smallest group Megatron-core
    accepts (:func:`twin.compute.schedules.megatron_microbatch_group`: it refuses a last group
    of 1 .. ``pp - 1``, whose order can deadlock and, where it runs, makes the step shorter
    with more micro-batches), one group when ``m < pp``; should that order deadlock, SC21's
    closed form on the busiest rank."""
    fwd, bwd = interleaved_chunk_times_s(layout, **chunk_terms)
    pp, vpp = fwd.shape
    m = int(microbatches)
    # pp not dividing m: Megatron-core refuses a last group of 1 .. pp - 1, so the run sets a
    # group it accepts (the default order's short last group can deadlock, and where it runs
    # its dependency bubbles make the step shorten with more micro-batches); m < pp: one group.
    # The memory model's micro-batches in flight read the same rule.
    group = schedule_microbatch_group(pp, vpp, m)
    try:
        interleaved_program(pp, vpp, m, group)
    except ScheduleDeadlock:  # none found for pp 2-9, vpp 1-5, m < 5 pp: a guard
        return (pp - 1) / vpp * float((fwd + bwd).sum(axis=1).max())
    sched = interleaved_schedule_s(pp, vpp, m, fwd_s=fwd, bwd_s=bwd, group=group)
    busy = float(sched["busy"].max())
    idle = sched["step"] - busy
    # below 1e-12 of the step: the rounding of the same durations summed in two orders
    return idle if idle > 1e-12 * sched["step"] else 0.0


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def step_estimate(
    *,
    layers: int,
    hidden: int,
    ffn_hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    seq_len: int,
    global_batch: int,
    micro_batch: int,
    tp: int,
    pp: int,
    cp: int,
    vpp: int,
    gpus: int,
    gpus_per_node: int,
    peak_tflops: float,
    precision: str = "bf16",
    hbm_bw_tb_s: float,
    nvlink_gb_s: float,
    nvls: bool,
    inter_node_gbps: float,
    transport: str = "ib_rdma",
    hops: float = 4.0,
    activation_recompute: bool | str = False,
    clock_fraction=1.0,
    deployment: str = "bare_metal",
    gated_mlp: bool = True,
    kernel_efficiency: KernelEfficiency | None = None,
    nvswitch: bool = True,
    pcie_gb_s: float = 64.0,
    moe_experts: int = 0,
    moe_top_k: int = 2,
    moe_ep: int = 1,
    moe_capacity_factor: float = 1.0,
    moe_expert_tp: int | None = None,
    moe_routing: str = "capacity",
    moe_dropless_load: float | None = None,
    moe_ffn_hidden: int | None = None,
    moe_shared_experts: int = 0,
    moe_shared_ffn_hidden: int | None = None,
    moe_dense_layers: int = 0,
    mla_q_lora_rank: int = 0,
    mla_kv_lora_rank: int = 0,
    mla_qk_nope_head_dim: int = 0,
    mla_qk_rope_head_dim: int = 0,
    mla_v_head_dim: int = 0,
    zero_stage: int = 1,
    fsdp_shard: int | None = None,
    grad_bytes: float = 4.0,
    param_gather_bytes: float = 2.0,
    tp_fp8_reduce_scatter: bool = False,
    compute_capability: int | None = None,
    nics_per_node: int | None = None,
    pipeline_schedule: str | None = None,
    moe_node_limit: int | None = None,
    moe_dispatch_bytes: float = 2.0,
    mtp_depth: int = 0,
    pipeline_layout: str | None = None,
) -> StepEstimate:
    """Estimate one optimizer step of a transformer (dense or mixture of experts) [s], MFU.

    Model shape: layers, hidden, ffn_hidden (SwiGLU inner size), heads, kv_heads, vocab,
    seq_len [tokens].  global_batch and micro_batch [sequences].  tp, pp, cp, vpp
    (virtual stages per pipeline rank), gpus; data parallelism ``dp = gpus / (tp pp cp)``.
    peak_tflops [TFLOP/s]: dense peak per GPU in ``precision`` ("bf16" or "fp8"; FP8
    runs GEMMs in FP8 and attention in BF16 at half that peak).  hbm_bw_tb_s [TB/s],
    nvlink_gb_s [GB/s one way per GPU], nvls (NVSwitch in-switch reduction),
    inter_node_gbps [Gb/s per node, all NICs, e.g. ``fabric.bottleneck_bandwidth_gbps``],
    transport (``ib_rdma``, ``roce`` (RoCE with GPUDirect), ``roce_host``, ``tcp``),
    hops [-] between the job's nodes, activation_recompute (False/"none", True/"full",
    "selective": the attention core, "save_qkv_proj": all but the QKV projection,
    MaxText's policy), clock_fraction [-] (scalar or per-GPU array, the slowest GPU sets the
    pace), deployment (``bare_metal``, ``container``, ``vm``), gated_mlp (SwiGLU with
    three F x h matrices, else a two-matrix GeLU / squared-ReLU MLP as GPT-3 and
    Nemotron-4), kernel_efficiency (default from the peak: H100 or A100 table),
    nvswitch / pcie_gb_s [GB/s] (no NVSwitch, e.g. H100 NVL with NVLink bridges between
    pairs: traffic among more than two GPUs of a node crosses PCIe).
    MFU is relative to ``peak_tflops``.  A multi-node job with ``inter_node_gbps = 0``
    (partitioned fabric) gets an infinite step and zero throughput.

    Mixture of experts (``moe_experts > 0``): every layer's MLP is ``moe_experts`` experts
    of inner size ``ffn_hidden``; a router sends each token to ``moe_top_k`` of them, and
    an expert processes at most ``moe_capacity_factor`` times its even share (the padded
    work is computed).  Experts are split over ``moe_ep`` expert-parallel ranks taken from
    the data x context parallel group (Megatron order: TP, CP, EP, DP), and each layer
    pays two all-to-alls forward (dispatch, combine) and two backward over the EP group,
    not overlapped (Megatron-core's default dispatcher); expert weights are TP-split as the
    dense ones and their gradients reduce over ``dp cp / ep`` ranks.  moe_expert_tp (None,
    1 or ``tp``): Megatron-core's expert tensor parallelism (``--expert-tensor-parallel-size``,
    "MoE parallel folding", Megatron-LM ``parallel_state.initialize_model_parallel`` since
    Nov 2024).  None keeps the layout above.  Given, the experts are split over
    ``moe_expert_tp`` ranks and the expert groups are drawn from all ``tp cp dp`` ranks of a
    pipeline stage in the order ETP, EP, EDP, so the EP ranks are ``moe_expert_tp`` apart (a
    node holds ``gpus_per_node / moe_expert_tp`` of them); with 1 each expert's GEMMs run
    whole on its rank over the routed copies of the tokens of its sequence-parallel shard
    (the same FLOPs as the TP-split experts), the expert MLP has no tensor-parallel
    collectives (its tokens stay on their sequence-parallel shard, the all-to-all moves them),
    and expert gradients reduce over ``tp cp dp / (moe_expert_tp ep)`` ranks.
    moe_routing (:data:`MOE_ROUTINGS`): "capacity" (default) pads every expert to
    ``moe_capacity_factor`` times its share as above (forced balancing is capacity 1.0);
    "dropless" routes without capacity, and the busiest EP rank of each layer, which the
    others wait for, processes ``moe_dropless_load`` times its even share of routed copies
    (None: :data:`MOE_DROPLESS_BUSIEST_LOAD`): its expert GEMMs, expert activation and
    permutation, and the all-to-all volume it receives scale by it, i.e.
    ``T top_k load`` copies where capacity routing has ``T top_k moe_capacity_factor``.

    DeepSeek-style terms (DeepSeekMoE and MLA: DeepSeek-V2 arXiv 2405.04434 sec. 2,
    DeepSeek-V3 arXiv 2412.19437 sec. 2.1; names after their config.json), each off by
    default so that the model above is unchanged bit for bit: moe_ffn_hidden (expert inner
    size, ``moe_intermediate_size``; None: ``ffn_hidden``), moe_shared_experts (experts every
    token passes through, ``n_shared_experts``, each of moe_shared_ffn_hidden, default the
    expert size: one TP-split SwiGLU MLP of their summed size on all ``T`` tokens, its GEMMs
    and SwiGLU traffic added to the MoE layer; their sequence-parallel collectives are not
    modelled), moe_dense_layers (``first_k_dense_replace``: the first layers keep a dense MLP
    of ``ffn_hidden``, no router or all-to-all; they sit first in layer order, on the ranks
    and chunks that hold the first layers, which run their own per-layer times) and multi-head latent attention (mla_kv_lora_rank > 0
    with mla_q_lora_rank (0: no query compression), mla_qk_nope_head_dim,
    mla_qk_rope_head_dim, mla_v_head_dim): the down projections (query latent, KV latent and
    the shared RoPE key) as one GEMM on the gathered norm output, duplicated over TP ranks as
    Megatron-core does, the query and key/value up-projections and the output projection
    split over TP, and causal attention of ``2 (d_qk + d_v)`` FLOPs per query, key and head.

    zero_stage: 1 (default) keeps Megatron's distributed optimizer (ZeRO-1, weights whole
    on every rank); 3 is FSDP / ZeRO-3: each layer's weights are all-gathered (bf16) for
    its forward and again for its backward, its gradients reduce-scattered, over a shard
    group of ``fsdp_shard`` ranks (default all ``dp cp``; the rest replicate the shards
    and all-reduce them once per step, as MaxText's FSDP x DP), each overlapped with the
    layer's own compute (the backward pair added to it instead when the kernel entry has
    ``fsdp_backward_overlap=False``: PyTorch FSDP).  grad_bytes [B]: size of a gradient element in the data-parallel
    reduce-scatter / all-reduce (4: fp32, Megatron's ``grad_reduce_in_fp32``; 2: bf16,
    NeMo's ``grad_sync_dtype: bf16``).  param_gather_bytes [B]: element of the parameter
    all-gather (2: bf16; 1: FP8 weights, NeMo's ``fp8_params``).  tp_fp8_reduce_scatter:
    the forward sequence-parallel reduce-scatters carry FP8 (Transformer Engine userbuffers
    with ``fp8_buf`` on the pipelined reduce-scatters, FP8 runs only).

    compute_capability [-] (sm x 10: 80 A100, 90 H100, 100 B200; one of
    :data:`COMPUTE_CAPABILITIES`) and nics_per_node [-] (the node's compute NICs, >= 1) go to
    every collective (:func:`twin.compute.collectives.group_collective_time_s`): the GPU
    generation picks NCCL's per-channel Tree ceiling and the NICs count the Tree's channels
    (one per NIC).  None: the collective model's defaults (generation from the NVLink, one
    NIC per GPU).

    pipeline_schedule (:data:`PIPELINE_SCHEDULES`; None: "interleaved" when ``vpp`` > 1,
    else "1f1b", the model above bit for bit): "dualpipe" is DeepSeek-V3's bidirectional
    schedule (arXiv 2412.19437 sec. 3.2.1; deepseek-ai/DualPipe, whose ``DualPipe.step``
    asserts an even number of ranks and an even number of micro-batches of at least twice
    them): ``pp`` even, ``vpp`` 1, ``m`` micro-batches even and >= ``2 pp``, ``zero_stage``
    0-2 (ValueError naming the parameter otherwise).  Nothing fitted.  Each rank runs ``m``
    forward and ``m`` backward chunks of a stage (``ceil(layers / pp)`` layers), half of its
    stage ``r`` and half of its stage ``pp-1-r``, and pairs every backward with a forward
    of its other stage where ``DualPipe.step`` overlaps them (steps 4-5: ``m - 3pp/2 + 1 + h``
    pairs on rank r, ``h = min(r, pp-1-r)``, one fewer on the middle ranks); a pair takes
    ``max(comm, compute + s comm)`` (:func:`dualpipe_pair_s`)
    with ``comm`` the two chunks' dispatch + combine all-to-alls (2 forward and 2 backward
    per MoE layer, as above) and their two pipeline sends, ``compute`` the two chunks'
    serial time (GEMMs, attention, memory-bound kernels, recompute, the exposed TP / CP
    collectives, embedding / output layer) and ``s = DUALPIPE_COMM_SMS / sms`` (20 of the
    H800's 132 SMs, the report's sec. 3.2.2) the share the communication holds while it
    runs; ``s`` is 0 without expert all-to-alls.  The other chunks run alone, their
    all-to-alls serial on all SMs: forward ``F``, full backward ``B``, or, where the schedule
    splits it (steps 3, 6, 7), ``B - W`` and later ``W`` (the weight-gradient GEMMs of the
    projections, experts, shared experts and router, and of the output layer).  The pipeline
    term is the makespan of ``DualPipe.step``'s op order on all ``pp`` ranks with these
    durations (:func:`dualpipe_schedule_s`; each stage's chunk from the layers, embedding
    and output layer it holds, below): an op starts when its rank is free and its inputs have arrived; a send adds
    ``t_send`` to a dependency unless a pair computed and sent the message (its two sends
    are in the pair's communication).  Breakdown: the busiest rank's compute parts,
    ``moe_a2a_exposed`` (exposed in its pairs, whole in its chunks run alone),
    ``comm_sm_reserved`` (its computation slowed by the reserved SMs), ``pp_comm_exposed``
    (its pairs' exposed sends plus what the dependencies' sends add to the makespan) and
    ``pipeline_bubble`` (its idle time: the makespan with free sends minus its busy time),
    summing to the makespan (:func:`dualpipe_pipeline`); no separate fill term.  Two
    parameter copies: the data-parallel reduce-scatter and all-gather move ``2 p_local``
    (each stage's copies over ``2 dp cp`` ranks, taken as twice the volume over the ``dp
    cp`` group), Adam per rank unchanged with the distributed optimizer (its shard of twice
    the parameters over twice the ranks), doubled without.  Approximations: sends never block the sender (NCCL's rendezvous with the
    receiver's posted receive is not modelled); the pair's interleaving is ideal
    (DeepSeek's attention / dispatch / MLP / combine ordering always finds work to hide
    behind); the reserved SMs slow all of the pair's computation alike (memory-bound
    kernels too); TP and CP collectives stay serial, split between forward and backward by
    their compute; the cross-entropy counts in the forward, the embedding 1/3 forward, 2/3
    backward and not in W; the gradient sum between the two copies of a stage is taken as
    part of the data-parallel reduce-scatter; the data-parallel overlap takes the busiest
    rank's mean pair as the micro-batch time and its idle time as the bubble.  Not
    modelled: DualPipeV.  The memory of both copies and of the micro-batches in flight:
    :mod:`twin.compute.memory`.

    DeepSeek-V3's communication and MTP (arXiv 2412.19437), each an input, off by default (the
    model above bit for bit), nothing fitted.  moe_node_limit (None or 0: off): node-limited
    routing with IB-to-NVLink forwarding (sec. 3.2.2; ``topk_group`` of the config): a token's
    copies go to at most M = moe_node_limit nodes of the EP group, and a token crosses IB once
    to each of them (to the GPU with the same in-node index), which forwards it over NVLink to
    the GPUs of its experts; the combine the reverse.  Each all-to-all is then two concurrent
    legs, the slower one sets its time: IB, an all-to-all over the EP group's nodes of ``D``
    h-wide rows per token (:func:`moe_nodes_per_token`, the expected distinct nodes, ``(N -
    1)/N`` of them remote) in place of ``top_k``, and NVLink, an all-to-all inside the node of
    the ``top_k`` copies (``(r - 1)/r`` of them change GPU); both scale with the busiest rank's
    load as above.  ValueError unless ``1 <= M <=`` the EP group's nodes and the M nodes hold
    ``top_k`` experts.  moe_dispatch_bytes [B per element] (2: bf16): the forward dispatch and
    the backward dispatch of the activation gradient (sec. 3.3.4: FP8 "before MoE
    up-projections" and "before MoE down-projections"; 1 + 4/128 with one fp32 scale per 1x128
    tile); the two combines stay bf16.  mtp_depth (0: none; ``num_nextn_predict_layers``):
    multi-token prediction modules on the stage holding the output layer (DualPipe: ranks 0 and
    ``pp - 1``), each one more layer of the model's kind (an MoE layer with its all-to-alls), a
    ``2h x h`` projection of the two normed inputs (in ``gemm``) and another pass through the
    output layer and the embedding (in ``output_layer``); its FLOPs count in the MFU
    (:func:`mtp_flops_per_sequence`), its weights in the data-parallel and optimizer terms.

    pipeline_layout: Megatron-core's ``--pipeline-model-parallel-layout`` string (:mod:`twin.compute.pipeline_layout`; ``pp
    vpp`` virtual stages, virtual stage ``v pp + r`` is rank ``r``'s chunk ``v``), with which
    ``layers`` need not reach ``pp vpp`` (Llama 3 405B: 126 layers, pp 16, vpp 8, ``E|(t|)*126,L``,
    arXiv 2407.21783 sec. 3.3.2).  Each rank's time per micro-batch is the sum over its chunks:
    its decoder layers (the first ``moe_dense_layers`` in layout order with a dense MLP, the
    rest MoE), each ``m`` an MTP module as above, the embedding where ``E`` sits and the
    output layer + loss where ``L`` sits (both in ``output_layer``); the critical rank (the
    largest time) gives the stage time and the breakdown; the interleaved bubble is the
    replay of Megatron-core's op order with each chunk's forward and backward from what it
    holds (:func:`interleaved_bubble_s`), the sum over the chunks the fill and drain cross
    rather than ``(pp-1)/vpp`` of the slowest rank's stage (which it equals for equal
    chunks).  DualPipe (vpp 1): the layout's ``pp`` stages are
    the schedule's, rank ``j`` runs stages ``j`` and ``pp-1-j``, each chunk from its stage's
    contents (the embedding's passes where ``E`` sits, the output layer's where ``L`` and each
    ``m`` sit).  Parameters per rank from its chunks (layers, MTP modules, the input embedding
    and the output layer where ``E`` and ``L`` sit); the data-parallel sync and the optimizer
    take the rank with the most (DualPipe: the rank pair's two stages, as their mean twice,
    the two-copy rule above), FSDP's per-layer terms the critical rank's layers and MTP
    modules.  None: the even split (``ceil(layers / pp)`` decoder layers a rank, ``/ vpp`` a
    chunk, the embedding on rank 0, the output layer and the MTP modules on rank ``pp - 1``;
    :func:`twin.compute.pipeline_layout.even_pipeline_layout`) through the same code, so that
    with ``pp = 1`` the one rank counts the input embedding and the untied output layer, two
    ``V h`` matrices, in the data-parallel and optimizer terms, and dense first layers sit on
    whichever ranks hold the first layers in layer order (chunk 0 of ranks 0, 1, ... when
    interleaved), the heaviest and the critical rank found among all ranks.
    """
    _check(precision in PRECISIONS, f"precision must be one of {PRECISIONS}, got {precision!r}")
    _check(deployment in DEPLOYMENT_STEP_FACTOR,
           f"deployment must be one of {tuple(DEPLOYMENT_STEP_FACTOR)}, got {deployment!r}")
    for name, v in (("layers", layers), ("hidden", hidden), ("ffn_hidden", ffn_hidden),
                    ("heads", heads), ("kv_heads", kv_heads), ("vocab", vocab),
                    ("seq_len", seq_len), ("global_batch", global_batch),
                    ("micro_batch", micro_batch), ("tp", tp), ("pp", pp), ("cp", cp),
                    ("vpp", vpp), ("gpus", gpus), ("gpus_per_node", gpus_per_node)):
        _check(int(v) == v and v >= 1, f"{name} must be a positive integer, got {v!r}")
    for name, x in (("peak_tflops", peak_tflops), ("hbm_bw_tb_s", hbm_bw_tb_s),
                    ("nvlink_gb_s", nvlink_gb_s)):
        _check(x > 0, f"{name} must be > 0, got {x!r}")
    _check(inter_node_gbps >= 0, f"inter_node_gbps must be >= 0, got {inter_node_gbps!r}")
    _check(grad_bytes > 0, f"grad_bytes must be > 0, got {grad_bytes!r}")
    _check(param_gather_bytes > 0,
           f"param_gather_bytes must be > 0, got {param_gather_bytes!r}")
    _check(compute_capability is None or compute_capability in COMPUTE_CAPABILITIES,
           f"compute_capability must be one of {COMPUTE_CAPABILITIES} (sm x 10) or None, got "
           f"{compute_capability!r}")
    _check(nics_per_node is None or (not isinstance(nics_per_node, bool)
                                     and int(nics_per_node) == nics_per_node
                                     and nics_per_node >= 1),
           f"nics_per_node must be a positive integer or None, got {nics_per_node!r}")
    mp = tp * pp * cp
    _check(gpus % mp == 0, f"gpus={gpus} is not a multiple of tp*pp*cp={mp}")
    dp = gpus // mp
    _check(global_batch % (dp * micro_batch) == 0,
           f"global_batch={global_batch} is not a multiple of dp*micro_batch={dp * micro_batch}")
    _check(heads % tp == 0 and kv_heads <= heads and heads % kv_heads == 0,
           f"heads={heads}, kv_heads={kv_heads} do not split over tp={tp}")
    if pipeline_layout is None:  # a layout places the layers itself (checked below)
        _check(layers >= pp * vpp, f"layers={layers} < pp*vpp={pp * vpp}")
    schedule = resolved_schedule(pipeline_schedule, vpp)
    _check(schedule in PIPELINE_SCHEDULES,
           f"pipeline_schedule must be one of {PIPELINE_SCHEDULES} or None, got "
           f"{pipeline_schedule!r}")
    _check(not schedule_vpp_mismatch(schedule, vpp),
           f"pipeline_schedule='interleaved' needs vpp > 1, got vpp={vpp}"
           if schedule == "interleaved" else
           f"pipeline_schedule={schedule!r} needs vpp=1, got vpp={vpp} (vpp > 1 is the "
           "'interleaved' schedule)")
    dualpipe = schedule == "dualpipe"
    m_dual = global_batch // (dp * micro_batch)
    # deepseek-ai/DualPipe's rules; zero_stage's is checked below, after zero_stage itself
    dualpipe_broken = dict(dualpipe_problems(pp=pp, microbatches=m_dual, zero_stage=zero_stage)
                           if dualpipe else ())
    _check("pp" not in dualpipe_broken,
           f"pipeline_schedule='dualpipe' needs an even pp >= 2 (each rank holds stages "
           f"r and pp-1-r), got pp={pp}")
    _check("microbatches" not in dualpipe_broken,
           f"pipeline_schedule='dualpipe' needs an even number of micro-batches >= 2 pp = "
           f"{2 * pp} (global_batch / (dp micro_batch)), got {m_dual}")
    _check(seq_len % cp == 0, f"seq_len={seq_len} is not a multiple of cp={cp}")
    _check(int(moe_experts) == moe_experts and moe_experts >= 0,
           f"moe_experts must be a whole number >= 0, got {moe_experts!r}")
    if moe_experts:
        _check(int(moe_top_k) == moe_top_k and 1 <= moe_top_k <= moe_experts,
               f"moe_top_k={moe_top_k!r} must be between 1 and moe_experts={moe_experts}")
        _check(int(moe_ep) == moe_ep and moe_ep >= 1 and moe_experts % moe_ep == 0,
               f"moe_experts={moe_experts} is not a multiple of moe_ep={moe_ep!r}")
        if moe_expert_tp is not None:  # the expert communication's two cases (a model limit)
            _check(not isinstance(moe_expert_tp, bool) and moe_expert_tp in (1, tp),
                   f"moe_expert_tp={moe_expert_tp!r} must be 1 or tp={tp}")
        # the loader's, the engine's and the memory model's one predicate (Megatron-core)
        unit = expert_dp_unit(tp=int(tp), cp=int(cp), ep=int(moe_ep),
                              moe_expert_tp=None if moe_expert_tp is None else int(moe_expert_tp))
        _check(dp % unit == 0,
               f"moe_ep={moe_ep} does not divide the data x context parallel ranks {dp * cp}"
               if moe_expert_tp is None else
               f"moe_expert_tp x moe_ep = {moe_expert_tp * moe_ep} does not divide the "
               f"tensor x context x data parallel ranks {tp * cp * dp}")
        _check(moe_capacity_factor > 0, f"moe_capacity_factor must be > 0, got "
                                        f"{moe_capacity_factor!r}")
        moe_routed_load(moe_routing, moe_capacity_factor, moe_dropless_load)     # checks
    _check(not isinstance(mtp_depth, bool) and int(mtp_depth) == mtp_depth and mtp_depth >= 0,
           f"mtp_depth must be a whole number >= 0, got {mtp_depth!r}")
    _check(moe_dispatch_bytes > 0, f"moe_dispatch_bytes must be > 0, got {moe_dispatch_bytes!r}")
    # the layout's counts (pp, vpp, 4): embedding, decoder layers, MTP layers, loss per rank and
    # chunk; DualPipe's vpp is 1, so its pp virtual stages are the schedule's pp stages
    layout = None if pipeline_layout is None else parse_pipeline_layout(
        pipeline_layout, pp=int(pp), vpp=int(vpp), layers=int(layers), mtp_depth=int(mtp_depth))
    node_limit = int(moe_node_limit) if moe_node_limit else 0
    _check(moe_node_limit is None or (not isinstance(moe_node_limit, bool)
                                      and int(moe_node_limit) == moe_node_limit
                                      and moe_node_limit >= 0),
           f"moe_node_limit must be a whole number >= 0 or None, got {moe_node_limit!r}")
    if not moe_experts:
        _check(not node_limit, "moe_node_limit applies to mixture-of-experts models "
                               "(moe_experts > 0)")
        _check(moe_dispatch_bytes == 2.0, "moe_dispatch_bytes applies to mixture-of-experts "
                                          "models (moe_experts > 0)")
    elif node_limit:
        rpn_nl = expert_ranks_per_node(ep=int(moe_ep), tp=tp, cp=cp, moe_expert_tp=moe_expert_tp,
                                       gpus_per_node=gpus_per_node)
        moe_nodes_per_token(experts=int(moe_experts), top_k=int(moe_top_k),
                            nodes=math.ceil(moe_ep / rpn_nl), node_limit=node_limit)  # checks
    _check_deepseek_terms(layers=layers, moe_experts=moe_experts, moe_ffn_hidden=moe_ffn_hidden,
                          moe_shared_experts=moe_shared_experts,
                          moe_shared_ffn_hidden=moe_shared_ffn_hidden,
                          moe_dense_layers=moe_dense_layers, mla_q_lora_rank=mla_q_lora_rank,
                          mla_kv_lora_rank=mla_kv_lora_rank,
                          mla_qk_nope_head_dim=mla_qk_nope_head_dim,
                          mla_qk_rope_head_dim=mla_qk_rope_head_dim, mla_v_head_dim=mla_v_head_dim)
    _check(zero_stage in (0, 1, 2, 3), f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    _check("zero_stage" not in dualpipe_broken,
           "pipeline_schedule='dualpipe' is modelled with the distributed optimizer "
           "(zero_stage 0-2), got zero_stage=3")
    shard = dp * cp if fsdp_shard is None else fsdp_shard
    _check(int(shard) == shard and shard >= 1 and (dp * cp) % shard == 0,
           f"fsdp_shard={fsdp_shard!r} must divide the data x context parallel ranks {dp * cp}")
    if activation_recompute is True:
        recompute = "full"
    elif activation_recompute in (False, None, "none"):
        recompute = "none"
    else:
        from twin.compute.specs import RECOMPUTE_CHOICES  # specs imports this module
        recompute = str(activation_recompute)
        _check(recompute in RECOMPUTE_CHOICES,
               f"activation_recompute must be one of {RECOMPUTE_CHOICES}, got "
               f"{activation_recompute!r}")
    transport_efficiency(transport)  # validates
    clock = float(np.min(np.asarray(clock_fraction, dtype=float)))
    _check(np.isfinite(clock) and clock <= 1.0 + 1e-6,
           f"clock_fraction must be in [0, 1], got {clock!r}")
    clock = min(clock, 1.0)
    if clock <= 0.0:  # a stopped GPU (power brake to zero, shut down): the job stalls
        return StepEstimate(step_time_s=math.inf, mfu=0.0, tokens_per_s_per_gpu=0.0,
                            tokens_per_day=0.0, breakdown={"stalled": math.inf})
    if inter_node_gbps <= 0 and gpus > gpus_per_node:
        # partitioned fabric: the job's nodes cannot talk, no step completes
        return StepEstimate(step_time_s=math.inf, mfu=0.0, tokens_per_s_per_gpu=0.0,
                            tokens_per_day=0.0, breakdown={"partitioned": math.inf})

    ke = kernel_efficiency or kernel_efficiency_for(peak_tflops, precision)
    g = gpus_per_node
    m_micro = global_batch // (dp * micro_batch)
    h, F, s, b = hidden, ffn_hidden, seq_len, micro_batch
    hkv = h * kv_heads / heads
    T = b * s / cp  # tokens per micro-batch on one rank (GEMM M dimension)
    peak = peak_tflops * 1e12 * clock
    peak_bf16 = peak / (2.0 if precision == "fp8" else 1.0)
    gemm_eff = ke.gemm_fp8 if precision == "fp8" else ke.gemm
    hbm = hbm_bw_tb_s * 1e12
    el = 1.0 if precision == "fp8" else 2.0

    # ---- one transformer layer, one micro-batch, one GPU --------------------------
    # forward GEMMs (M, N, K); backward = data-grad (M, K, N) + weight-grad (K, N, M)
    mats = 3 if gated_mlp else 2
    # MoE: each rank's experts process top_k x capacity routed copies of its tokens; in
    # dropless routing the busiest rank's load sets the pace
    moe_load = (moe_routed_load(moe_routing, moe_capacity_factor, moe_dropless_load)
                if moe_experts else moe_capacity_factor)
    # expert tensor parallelism: ``etp`` = tp unless given (moe_expert_tp); with 1 an expert
    # runs whole on the routed copies of its rank's sequence-parallel shard (T / tp tokens)
    etp = tp if (not moe_experts or moe_expert_tp is None) else int(moe_expert_tp)
    # expert inner size (fine-grained experts: DeepSeek's moe_intermediate_size) and the
    # shared experts' total inner size (always active, TP-split as a dense MLP)
    Fe = F if moe_ffn_hidden is None else moe_ffn_hidden
    Fs = moe_shared_experts * (Fe if moe_shared_ffn_hidden is None else moe_shared_ffn_hidden)
    kw: dict[str, Any] = dict(peak_flops=peak, eff=gemm_eff, ke=ke, hbm_b_s=hbm, bytes_per_el=el)
    # BF16 GEMMs of an FP8 run (the MoE router) and of unfused attention
    bkw: dict[str, Any] = dict(kw, peak_flops=peak_bf16, eff=ke.gemm, bytes_per_el=2.0)
    sp = tp if ke.sequence_parallel else 1
    tp_nodes = math.ceil(tp / g)
    tp_rpn = min(tp, g)
    net = inter_node_gbps if inter_node_gbps > 0 else 1e-9
    coll: dict[str, Any] = dict(gpus_per_node=g, nvlink_gb_s=nvlink_gb_s, nvls=nvls,
                                inter_node_gbps=net, transport=transport, hops=hops,
                                nvswitch=nvswitch, pcie_gb_s=pcie_gb_s,
                                compute_capability=compute_capability,
                                nics_per_node=None if nics_per_node is None else int(nics_per_node))
    # point-to-point inside a node: NVLink through the switch, else PCIe beyond a pair
    p2p_intra = nvlink_gb_s if nvswitch else min(nvlink_gb_s, pcie_gb_s)
    mla = mla_kv_lora_rank > 0
    if mla:  # multi-head latent attention (DeepSeek-V2 arXiv 2405.04434 sec. 2.1)
        d_qk = mla_qk_nope_head_dim + mla_qk_rope_head_dim
        n_q_up = heads * d_qk / tp  # per-head queries (nope + rope), column-parallel
        n_kv_up = heads * (mla_qk_nope_head_dim + mla_v_head_dim) / tp  # keys (nope), values
        # down projections, duplicated over the TP ranks (Megatron-core MLA): the query
        # latent (or, without query compression, the whole queries) and the KV latent with
        # the shared RoPE key
        n_down = (mla_q_lora_rank if mla_q_lora_rank else heads * d_qk) \
            + mla_kv_lora_rank + mla_qk_rope_head_dim
        k_o = heads * mla_v_head_dim / tp

    def _layer(moe_layer: bool) -> tuple[dict[str, float], tuple[float, ...]]:
        """One layer's times per micro-batch [s] (an MoE layer or, ``moe_layer`` False, a
        dense one) and (gemm_f, attn_f, mem_f, gemm_b, attn_b, mem_b, rec) for FSDP."""
        E = moe_experts if moe_layer else 0
        Fl = Fe if E else F  # the layer's MLP inner size: one expert's, or the dense MLP's
        Tm = T * moe_top_k * moe_load if E else T
        etp_l = etp if E else tp
        Te = Tm if etp_l == tp else Tm * etp_l / tp
        fm = np.array([T, T, Te, Te])
        fn = np.array([(h + 2 * hkv) / tp, h, (mats - 1) * Fl / etp_l, h])
        fk = np.array([h, h / tp, h, Fl / etp_l])
        if mla:  # [0]: the down projections (their input is the gathered norm output)
            fn[0], fk[1] = n_down, k_o
        # per GEMM [qkv, proj, fc1, fc2]: forward, data-grad, weight-grad (each TP collective
        # overlaps with one of them, below)
        g_fwd = _gemm_time_s(fm, fn, fk, **kw)
        g_dgrad = _gemm_time_s(fm, fk, fn, **kw)
        g_wgrad = _gemm_time_s(fk, fn, fm, **kw)
        t_gemm_f = float(g_fwd.sum())
        t_gemm_b = float(g_dgrad.sum() + g_wgrad.sum())
        # weight-gradient GEMMs alone (DualPipe's W); t_gemm_b is kept as summed above
        t_gemm_w = float(g_wgrad.sum())
        extra: list[tuple[float, float, float]] = []  # GEMMs without a TP collective (M, N, K)
        if mla:  # query up-projection from its latent, key/value up-projection
            if mla_q_lora_rank:
                extra.append((T, n_q_up, mla_q_lora_rank))
            extra.append((T, n_kv_up, mla_kv_lora_rank))
        if E and Fs:  # shared experts: every token, TP-split as a dense MLP
            extra += [(T, (mats - 1) * Fs / tp, h), (T, h, Fs / tp)]
        for em, en, ek in extra:
            t_gemm_f += float(_gemm_time_s(em, en, ek, **kw))
            t_gemm_b += float(_gemm_time_s(em, ek, en, **kw) + _gemm_time_s(ek, en, em, **kw))
            t_gemm_w += float(_gemm_time_s(ek, en, em, **kw))
        if E:  # router: T x h @ h x E, forward and two backward GEMMs (bf16)
            t_gemm_f += float(_gemm_time_s(T, E, h, **bkw))
            t_gemm_b += 2.0 * float(_gemm_time_s(T, E, h, **bkw))
            t_gemm_w += float(_gemm_time_s(T, E, h, **bkw))  # the router's h x E gradient
        # causal flash attention: queries T, average keys s/2 (load-balanced CP), heads h/tp;
        # MLA: scores over d_qk, values of v_head_dim per head, i.e. 2 (d_qk + d_v) FLOPs
        # per query, key and head where MHA has 4 d
        if ke.flash_attention:
            if mla:
                attn_f_flops = 2.0 * b * (s * s / (2.0 * cp)) * (heads / tp) \
                    * (d_qk + mla_v_head_dim)
            else:
                attn_f_flops = 4.0 * b * (s * s / (2.0 * cp)) * (h / tp)
            kv_len = s / cp
            seq_eff = kv_len / (kv_len + ke.attention_seq_half)
            t_attn_f = attn_f_flops / (peak_bf16 * ke.attention_fwd * seq_eff)
            t_attn_b = 2.5 * attn_f_flops / (peak_bf16 * ke.attention_bwd * seq_eff)
        else:
            # unfused: QK^T and AV batched GEMMs over all s x s scores of each local head
            # (masked half included), softmax + mask + dropout streamed through HBM
            # (~9 B per score forward, ~11 B backward: fp16 scores, 1 B dropout mask)
            hl = heads / tp
            d = h / heads
            kvl = s / cp
            bat = hl  # T already counts the micro-batch's b sequences
            t_qk = float(_gemm_time_s(T * bat, kvl, d_qk if mla else d, **bkw))
            t_av = float(_gemm_time_s(T * bat, mla_v_head_dim if mla else d, kvl, **bkw))
            scores = bat * T * kvl
            t_attn_f = t_qk + t_av + 9.0 * scores / (hbm * ke.hbm) + 4 * ke.kernel_gap_s
            t_attn_b = 2.0 * (t_qk + t_av) + 11.0 * scores / (hbm * ke.hbm) \
                + 6 * ke.kernel_gap_s
        # memory-bound kernels [bytes]: norms + residuals on T/tp tokens (sequence
        # parallel), RoPE on q,k, SwiGLU on F/tp; backward ~2x forward; FP8 adds casts of
        # GEMM inputs (read 2 B, write 1 B): the two normed inputs on the sequence-parallel
        # shard (the norm writes FP8 before the all-gather, Transformer Engine's
        # LayerNormLinear), the attention output and the MLP activation on the TP shard
        if mla:  # latent norms, RoPE and assembly of the per-head queries and keys
            qk = mla_q_lora_rank + mla_kv_lora_rank + 2.0 * heads * d_qk / tp
            mem_f = 2.0 * (T / sp * 10.0 * h + T * 2.0 * qk + Tm * mats * Fl / tp)
        else:
            mem_f = 2.0 * (T / sp * 10.0 * h + T * 2.0 * (h + hkv) / tp + Tm * mats * Fl / tp)
        if E:  # softmax/top-k over E, permute and un-permute the routed copies
            mem_f += 2.0 * (T * E * 4.0 / 2.0 + 2.0 * 2.0 * Tm * h / sp)
            if Fs:
                mem_f += 2.0 * T * mats * Fs / tp
        if precision == "fp8":
            mem_f += 3.0 * T * (2.0 * h / sp + h / tp + Fl / tp)
        t_mem_f = mem_f / (hbm * ke.hbm) + 14 * ke.kernel_gap_s
        t_mem_b = 2.0 * mem_f / (hbm * ke.hbm) + 28 * ke.kernel_gap_s

        # tensor parallel (sequence parallel AG/RS of T x h activations): 4 fwd + 6 bwd
        if tp > 1:
            def _tp(op: str, el_bytes: float) -> float:
                return float(group_collective_time_s(op, T * h * el_bytes, nodes=tp_nodes,
                                                     ranks_per_node=tp_rpn, **coll))
            if ke.sequence_parallel:
                # each collective against the GEMM it is overlapped with (Transformer
                # Engine userbuffers): forward AG -> qkv, RS <- proj, AG -> fc1, RS <- fc2;
                # backward AG(dY) -> fc2 dgrad, AG(ln2 out) with fc1 dgrad, RS(dX) with fc1
                # wgrad, AG(dY) -> proj dgrad, AG(ln1 out) with qkv dgrad, RS(dX) with qkv
                # wgrad.  FP8 runs gather FP8 (1 B); the forward reduce-scatters carry FP8
                # only with ``tp_fp8_reduce_scatter``; the backward ones bf16
                fp8 = precision == "fp8"
                t_ag = _tp("all_gather", 1.0 if fp8 else 2.0)
                t_rs_f = _tp("reduce_scatter", 1.0 if fp8 and tp_fp8_reduce_scatter else 2.0)
                t_rs_b = _tp("reduce_scatter", 2.0)
                comm = np.array([t_ag, t_rs_f, t_ag, t_rs_f, t_ag, t_ag, t_rs_b, t_ag, t_ag,
                                 t_rs_b])
                gemm = np.array([g_fwd[0], g_fwd[1], g_fwd[2], g_fwd[3], g_dgrad[3],
                                 g_dgrad[2], g_wgrad[2], g_dgrad[1], g_dgrad[0], g_wgrad[0]])
                if etp_l != tp:  # experts not TP-split: the MLP's five collectives do not run
                    comm[[2, 3, 4, 5, 6]] = 0.0
            else:  # 2 all-reduces forward (after proj, fc2), 2 backward (after qkv, fc1 dgrad)
                t_ar = float(group_collective_time_s("allreduce", T * h * 2.0, nodes=tp_nodes,
                                                     ranks_per_node=tp_rpn, **coll))
                comm = np.full(4, t_ar)
                gemm = np.array([g_fwd[1], g_fwd[3], g_wgrad[0], g_wgrad[2]])
                if etp_l != tp:  # experts not TP-split: no all-reduce after fc2 and fc1 dgrad
                    comm[[1, 3]] = 0.0
            if not ke.tp_comm_overlap:
                t_tp_exposed = float(comm.sum())
            else:
                # ring-exchange (forward gathers, data-grad gathers) and bulk (backward
                # gathers and reduce-scatters beside the other GEMM) overlaps hide a
                # collective as far as its GEMM lasts; the pipelined forward reduce-scatters
                # (``pipe``) run chunk i's reduce-scatter under chunk i+1's GEMM, so the last
                # of n chunks is exposed (Transformer Engine userbuffers; NeMo recipes:
                # ring_exchange for qkv/fc1 fprop and proj/fc2 dgrad, pipeline with
                # num_splits 4 for proj/fc2 fprop, bulk for qkv/fc1 dgrad and wgrad)
                excess = np.maximum(0.0, comm - gemm)
                if ke.sequence_parallel:
                    n = float(ke.tp_rs_splits)
                    pipe = np.zeros(comm.size, dtype=bool)
                    pipe[[1, 3]] = True
                    excess = np.where(pipe, comm / n + (1.0 - 1.0 / n) * excess, excess)
                t_tp_exposed = float(excess.sum())
        else:
            t_tp_exposed = 0.0

        # context parallel ring attention: (cp-1) KV blocks forward, KV + dKV backward
        if cp > 1:
            # K and V blocks (bf16); MLA passes the per-head keys (d_qk) and values (d_v)
            kv_bytes = (T * heads * (d_qk + mla_v_head_dim) / tp * 2.0 if mla
                        else T * 2.0 * hkv / tp * 2.0)
            cp_in_node = tp * cp <= g
            bw = (0.8 * p2p_intra * 1e9 if cp_in_node
                  else net / 8.0 / g * p2p_efficiency(transport) * 1e9)
            t_cp = 3.0 * (cp - 1) * (kv_bytes / bw + 10e-6)
            t_cp_exposed = max(0.0, t_cp - (t_attn_f + t_attn_b))
        else:
            t_cp_exposed = 0.0

        # expert parallel: dispatch and combine all-to-alls of the routed token copies
        # (combines bf16), two forward and two backward per layer; EP ranks are strided by tp x cp,
        # so an EP group holds g / (tp cp) ranks of a node at most
        if E and moe_ep > 1:
            a2a_bytes = T / sp * moe_top_k * moe_load * h * 2.0
            ep_rpn = expert_ranks_per_node(ep=moe_ep, tp=tp, cp=cp, moe_expert_tp=moe_expert_tp,
                                           gpus_per_node=g)
            ep_nodes = math.ceil(moe_ep / ep_rpn)

            def _a2a(nbytes: float, nodes: int, rpn: int) -> float:
                if nodes * rpn <= 1:
                    return 0.0
                return float(group_collective_time_s("all_to_all", nbytes, nodes=nodes,
                                                     ranks_per_node=rpn, **coll))
            rows_ib = moe_nodes_per_token(experts=int(E), top_k=int(moe_top_k), nodes=ep_nodes,
                                          node_limit=node_limit) if node_limit else 0.0

            def _one_way(el_bytes: float) -> float:
                """One all-to-all of the routed copies at ``el_bytes`` an element; node-limited:
                IB once per distinct target node (D rows of h a token) and NVLink forwarding of
                the top_k copies inside the node, the two legs concurrent (sec. 3.2.2)."""
                if not node_limit:
                    return _a2a(a2a_bytes * el_bytes / 2.0, ep_nodes, ep_rpn)
                row = T / sp * moe_load * h * el_bytes
                return max(_a2a(row * rows_ib, ep_nodes, ep_rpn) if ep_nodes > 1 else 0.0,
                           _a2a(row * moe_top_k, 1, ep_rpn))
            # two dispatches (at their element size) and two combines (bf16) a layer
            t_comb = _one_way(2.0)
            t_disp = t_comb if moe_dispatch_bytes == 2.0 else _one_way(moe_dispatch_bytes)
            t_a2a_exposed = 2.0 * t_disp + 2.0 * t_comb
        else:
            t_a2a_exposed = 0.0

        fwd = t_gemm_f + t_attn_f + t_mem_f
        if recompute == "full":
            t_rec = fwd
        elif recompute == "selective":
            t_rec = t_attn_f
        elif recompute == "save_qkv_proj":  # MaxText's policy: all but the QKV projection
            t_rec = fwd - float(g_fwd[0])
        else:
            t_rec = 0.0
        t_lay = {
            "gemm": t_gemm_f + t_gemm_b,
            "attention": t_attn_f + t_attn_b,
            "elementwise": t_mem_f + t_mem_b,
            "recompute": t_rec,
            "tp_comm_exposed": t_tp_exposed,
            "cp_comm_exposed": t_cp_exposed,
        }
        if moe_experts:
            t_lay["moe_a2a_exposed"] = t_a2a_exposed
        return t_lay, (t_gemm_f, t_attn_f, t_mem_f, t_gemm_b, t_attn_b, t_mem_b, t_rec,
                       t_gemm_w)

    lay_main = _layer(bool(moe_experts))
    t_layer, (t_gemm_f, t_attn_f, t_mem_f, t_gemm_b, t_attn_b, t_mem_b, t_rec, _) = lay_main
    # DeepSeek's first ``moe_dense_layers`` layers have a dense MLP of ``ffn_hidden``
    lay_dense = _layer(False) if moe_experts and moe_dense_layers else lay_main
    t_layer_dense = lay_dense[0]

    # ---- output layer + loss (last stage) and embedding (first stage) ------------
    # Megatron's output layer is not a Transformer Engine module: BF16 in FP8 runs too
    # [forward, data-grad, weight-grad]
    g_logits = _gemm_time_s(np.array([T, T, h]), np.array([vocab / tp, h, vocab / tp]),
                            np.array([h, vocab / tp, T]), **bkw)
    t_logits = float(g_logits.sum())
    t_ce = T * vocab / tp * 20.0 / (hbm * ke.hbm)  # fp32 vocab-parallel cross-entropy
    t_logits += t_ce
    t_embed = 3.0 * T * h * 2.0 / (hbm * ke.hbm)

    # ---- where the layers sit: each rank's chunks, from the layout or the even split -------
    # (ceil(layers / pp) decoder layers a rank, the embedding on the first, the output layer
    # and the MTP modules on the last: even_pipeline_layout), one code path for both
    if layout is None:
        layout = even_pipeline_layout(pp=int(pp), vpp=int(vpp), layers=int(layers),
                                      mtp_depth=int(mtp_depth))
    nd = moe_dense_layers if moe_experts else 0
    lc = layout.rank_counts()  # per rank: E, t, m, L
    n_t_r, n_m_r = lc[:, DECODER], lc[:, MTP]
    # dense layers (DeepSeek's first moe_dense_layers) in layer order, the rest MoE
    n_d_r = layout.dense_layers(nd).sum(axis=1) if nd else np.zeros(pp)
    # multi-token prediction (each m): a layer of the model's kind, the 2h x h projection
    # [forward, data-grad, weight-grad] and one more pass through the output layer and the
    # embedding
    g_mtp = _gemm_time_s(np.array([T, T, 2 * h]), np.array([h / tp, 2 * h, h / tp]),
                         np.array([2 * h, h / tp, T]), **kw) if mtp_depth else np.zeros(3)
    # each rank's time per micro-batch, by term, summed over its chunks: its MoE and dense
    # layers, MTP modules, the embedding (E) and the output layer + loss (L) in output_layer;
    # the critical rank (the largest time) sets the stage time and the breakdown
    rank_parts = {k: v * (n_t_r - n_d_r) + t_layer_dense[k] * n_d_r + v * n_m_r
                  for k, v in t_layer.items()}
    rank_parts["gemm"] = rank_parts["gemm"] + n_m_r * float(g_mtp.sum())
    rank_parts["output_layer"] = (lc[:, LOSS] * t_logits + lc[:, EMBED] * t_embed
                                  + n_m_r * (t_logits + t_embed))
    rank_t = np.zeros(pp)
    for part in rank_parts.values():  # in the breakdown's order, as each rank's sum
        rank_t = rank_t + part
    crit = int(np.argmax(rank_t))
    stage_last = {k: float(v[crit]) for k, v in rank_parts.items()}
    t_stage_max = float(rank_t[crit])

    # pipeline point-to-point: 2*vpp sends of T x h / tp per micro-batch and stage
    if pp > 1:
        stride = tp * cp * dp
        p2p_bytes = T * h * 2.0 / tp
        if stride < g:
            p2p_bw = 0.8 * p2p_intra * 1e9
        else:
            p2p_bw = net / 8.0 / g * p2p_efficiency(transport) * 1e9
        t_send = p2p_bytes / p2p_bw + 10e-6
        # each send overlaps the next virtual chunk's forward (or longer backward) as far
        # as that lasts, by the share pp_overlap; the fill and the drain cross pp - 1
        # stage boundaries each with nothing to hide behind
        per_send = t_send - ke.pp_overlap * min(t_send, t_stage_max / vpp / 3.0)
        t_pp_exposed = 2.0 * vpp * per_send
        t_pp_fill = 2.0 * (pp - 1) * t_send
        bubble = (pp - 1) / vpp * t_stage_max
        if vpp > 1:  # the interleaved order's own bubble (interleaved_bubble_s)
            bubble = interleaved_bubble_s(
                layout, microbatches=m_micro, lay_main=lay_main, lay_dense=lay_dense,
                moe_dense_layers=nd, g_logits=g_logits, t_ce=t_ce, t_embed=t_embed, g_mtp=g_mtp)
    else:
        t_pp_exposed = t_pp_fill = 0.0
        bubble = 0.0
    if dualpipe:
        def _chunk(n_main: float, n_dense: float, out_f: float, out_b: float,
                   out_w: float, gemm_fbw: tuple[float, float, float] = (0.0, 0.0, 0.0)
                   ) -> PipelineChunk:
            parts: dict[str, float] = {}
            fw, bw, wg = gemm_fbw  # GEMMs outside the layers (MTP's projection)
            a2a = 0.0
            for (t_lay, tup), n in ((lay_main, n_main), (lay_dense, n_dense)):
                gf, af, mf, gb, ab, mb, rec, gw = tup
                cf, cb = gf + af + mf, gb + ab + mb + rec
                # TP / CP exposure stays serial in its chunk, split by the chunks' compute
                serial = t_lay["tp_comm_exposed"] + t_lay["cp_comm_exposed"]
                fw += n * (cf + serial * cf / (cf + cb))
                bw += n * (cb + serial * cb / (cf + cb))
                wg += n * gw
                a2a += n * t_lay.get("moe_a2a_exposed", 0.0)
                for k, v in t_lay.items():
                    if k != "moe_a2a_exposed":
                        parts[k] = parts.get(k, 0.0) + n * v
            parts["output_layer"] = out_f + out_b
            if any(gemm_fbw):
                parts["gemm"] = parts.get("gemm", 0.0) + gemm_fbw[0] + gemm_fbw[1]
            return PipelineChunk(parts=parts, fwd=fw + out_f, bwd=bw + out_b, wgrad=wg + out_w,
                                 a2a_fwd=0.5 * a2a, a2a_bwd=0.5 * a2a)
        # the SMs of the all-to-all kernels: only where there are expert all-to-alls
        sm_share = DUALPIPE_COMM_SMS / ke.sms if (moe_experts and moe_ep > 1) else 0.0
        # stage s is the layout's virtual stage s (vpp 1): its layers (dense first in layer
        # order, MTP layers of the model's kind), the embedding's passes where E sits (1
        # forward, 2 backward), the output layer where L and each MTP module sit (forward GEMM
        # and cross-entropy forward, data- and weight-grad GEMMs backward); alike stages
        # share a chunk
        d_st = layout.dense_layers(nd)[:, 0] if nd else np.zeros(pp)
        memo_chunk: dict[tuple[float, ...], PipelineChunk] = {}
        stage_chunks = []
        for s_i in range(pp):
            e_s, t_s, m_s, l_s = (float(x) for x in layout.counts[s_i, 0])
            key_s = (e_s, t_s, m_s, l_s, float(d_st[s_i]))
            if key_s not in memo_chunk:
                n_h = l_s + m_s
                memo_chunk[key_s] = _chunk(
                    t_s - key_s[4] + m_s, key_s[4],
                    (e_s + m_s) * t_embed / 3.0 + n_h * (float(g_logits[0]) + t_ce),
                    (e_s + m_s) * 2.0 * t_embed / 3.0 + n_h * float(g_logits[1] + g_logits[2]),
                    n_h * float(g_logits[2]),
                    (m_s * float(g_mtp[0]), m_s * float(g_mtp[1] + g_mtp[2]),
                     m_s * float(g_mtp[2])))
            stage_chunks.append(memo_chunk[key_s])
        rank = dualpipe_pipeline(stage_chunks, microbatches=m_micro,
                                 t_send_s=t_send, sm_share=sm_share)
        bubble = rank["bubble"]
        t_stage_max = rank["pair"]  # per micro-batch, for the data-parallel overlap below

    # ---- data parallel: distributed optimizer (or FSDP) over the DP x CP group ------
    if mla:  # TP-split equivalent: the duplicated down projections count whole on each rank
        attn_params = h * n_down * tp + (n_q_up * mla_q_lora_rank + n_kv_up * mla_kv_lora_rank
                                         + k_o * h) * tp
    else:
        attn_params = h * (h + 2 * hkv) + h * h
    # each rank's parameters per GPU from its chunks: attention (and router) of every decoder
    # layer, the dense MLPs of its dense layers, the routed experts (moe_experts / ep per rank,
    # split over etp) and the shared experts (TP-split) of its MoE layers, the MTP modules (a
    # layer each and the 2h x h projection), the input embedding and the output layer where E
    # and L sit
    n_head_r = lc[:, EMBED] + lc[:, LOSS]
    if moe_experts:
        per_exp = (moe_experts / moe_ep) * mats * h * Fe / etp
        pe_r = (n_t_r - n_d_r + n_m_r) * per_exp
        pd_r = (n_t_r * (attn_params + h * moe_experts) / tp + n_head_r * vocab * h / tp
                + 2 * h * n_t_r
                + ((n_t_r - n_d_r) * mats * h * Fs + n_d_r * (mats * h * F - h * moe_experts))
                / tp
                + n_m_r * ((attn_params + h * moe_experts + mats * h * Fs + 2 * h * h) / tp
                           + 4 * h))
    else:
        pe_r = np.zeros(pp)
        pd_r = (n_t_r * (attn_params + mats * h * F) / tp + n_head_r * vocab * h / tp
                + 2 * h * n_t_r + n_m_r * ((attn_params + mats * h * F + 2 * h * h) / tp
                                           + 4 * h))
    if dualpipe:  # rank j holds stages j and pp-1-j: their mean, twice (copies below)
        pd_r = 0.5 * (pd_r + pd_r[::-1])
        pe_r = 0.5 * (pe_r + pe_r[::-1])
    # the data-parallel sync and the optimizer: the rank with the most
    heavy = int(np.argmax(pd_r + pe_r))
    p_dense, p_exp = float(pd_r[heavy]), float(pe_r[heavy])
    p_local = p_dense + p_exp
    n_dp = dp * cp
    t_mb_bwd = (2.0 / 3.0) * t_stage_max
    t_mb_fwd = (1.0 / 3.0) * t_stage_max

    def _dp_group(ranks: int, stride: int = tp) -> dict:
        rpn = max(1, min(ranks, g // stride)) if stride <= g else 1
        return dict(nodes=math.ceil(ranks / rpn), ranks_per_node=rpn, **coll)

    if zero_stage == 3:
        # FSDP: per layer and micro-batch, gather the layer's weights before its forward
        # and again before its backward, reduce-scatter its gradients after; each hidden
        # behind that layer's own compute (prefetch of the next layer); PyTorch FSDP's
        # backward pair runs serially with it (one NCCL stream, SM contention)
        # (the critical rank's layers and MTP modules, its parameters without E and L)
        n_fsdp_layers = float(n_t_r[crit] + n_m_r[crit])
        p_layer = (float(pd_r[crit] + pe_r[crit] - n_head_r[crit] * vocab * h / tp)
                   / n_fsdp_layers) if n_fsdp_layers else 0.0
        grp = _dp_group(shard)
        t_ag_l = float(group_collective_time_s("all_gather", p_layer * param_gather_bytes,
                                                 **grp)) \
            if shard > 1 else 0.0
        t_rs_l = float(group_collective_time_s("reduce_scatter", p_layer * grad_bytes, **grp)) \
            if shard > 1 else 0.0
        t_fwd_l = t_gemm_f + t_attn_f + t_mem_f
        t_bwd_l = t_gemm_b + t_attn_b + t_mem_b + t_rec
        if ke.fsdp_backward_overlap:
            per_layer = max(0.0, t_ag_l - t_fwd_l) + max(0.0, t_ag_l + t_rs_l - t_bwd_l)
        else:  # PyTorch FSDP: the backward gather and reduce-scatter add to the layer
            per_layer = max(0.0, t_ag_l - t_fwd_l) + t_ag_l + t_rs_l
        t_dp_exposed = per_layer * n_fsdp_layers * m_micro
        if n_dp > shard:  # replicas of each shard: one gradient all-reduce per step
            t_rep = float(group_collective_time_s(
                "allreduce", p_local / shard * grad_bytes, nodes=n_dp // shard, ranks_per_node=1,
                **coll))
            t_dp_exposed += max(0.0, t_rep - t_mb_bwd - bubble / 2.0)
        opt_shards = shard
    elif n_dp > 1:
        def _sync(params: float, ranks: int, stride: int = tp) -> tuple[float, float]:
            if ranks <= 1 or params <= 0:
                return 0.0, 0.0
            grp = _dp_group(ranks, stride)
            if ke.distributed_optimizer:
                return (float(group_collective_time_s("reduce_scatter", params * grad_bytes,
                                                      **grp)),
                        float(group_collective_time_s("all_gather", params * param_gather_bytes,
                                                      **grp)))
            # gradient all-reduce, overlapped with the last backward
            return float(group_collective_time_s("allreduce", params * grad_bytes, **grp)), 0.0
        # DualPipe: two stages per rank, both copies' gradients and parameters move (1.0 x
        # leaves the other schedules' floats as they are)
        copies = 2.0 if dualpipe else 1.0
        rs_d, ag_d = _sync(copies * p_dense, n_dp)
        if moe_experts and moe_expert_tp is not None:  # expert DP ranks, etp x ep apart
            rs_e, ag_e = _sync(copies * p_exp, tp * n_dp // (etp * moe_ep), etp * moe_ep)
        else:
            rs_e, ag_e = _sync(copies * p_exp, n_dp // moe_ep if moe_experts else 1)
        t_grad_rs, t_param_ag = rs_d + rs_e, ag_d + ag_e
        t_dp_exposed = (max(0.0, t_grad_rs - t_mb_bwd - bubble / 2.0)
                        + max(0.0, t_param_ag - t_mb_fwd - bubble / 2.0))
        opt_shards = n_dp if ke.distributed_optimizer else 1
    else:
        t_dp_exposed = 0.0
        opt_shards = 1
    # Adam on the local shard: fp32 param, m, v read+write, fp32 grad read, bf16 param
    # write, grad-norm read: ~34 B per parameter
    t_opt = p_local / opt_shards * 34.0 / (hbm * ke.hbm)
    if dualpipe and not ke.distributed_optimizer:  # every rank updates both copies
        t_opt *= 2.0

    if dualpipe:
        # the slowest rank's busy time by term, the sends the dependencies wait for, its idle
        # time as pipeline_bubble (dualpipe_pipeline): they add up to the schedule's step
        breakdown = dict(rank["parts"])
        if moe_experts:
            breakdown["moe_a2a_exposed"] = rank["a2a"]
        breakdown["comm_sm_reserved"] = rank["sm_lost"]
        breakdown["pp_comm_exposed"] = rank["pp"] + rank["pp_wait"]
    else:
        breakdown = {k: v * m_micro for k, v in stage_last.items()}
        breakdown["pp_comm_exposed"] = t_pp_exposed * m_micro + t_pp_fill
    breakdown["pipeline_bubble"] = bubble
    breakdown["dp_comm_exposed"] = t_dp_exposed
    breakdown["optimizer"] = t_opt
    # synchronous step: everyone waits for the slowest of the gpus ranks; the noise is in
    # the compute-bound kernels (clock, thermal), as clock_fraction acts on them only
    noisy = sum(breakdown[k] for k in ("gemm", "attention", "recompute", "output_layer"))
    breakdown["stragglers"] = noisy * ke.rank_jitter_fraction * math.sqrt(
        2.0 * math.log(gpus)) if gpus > 1 else 0.0
    base = sum(breakdown.values())
    breakdown["deployment_overhead"] = base * (DEPLOYMENT_STEP_FACTOR[deployment] - 1.0)
    step = base + breakdown["deployment_overhead"]

    tokens = global_batch * seq_len
    flops = global_batch * model_flops_per_sequence(
        layers=layers, hidden=hidden, ffn_hidden=ffn_hidden, heads=heads, kv_heads=kv_heads,
        vocab=vocab, seq_len=seq_len, gated_mlp=gated_mlp,
        moe_top_k=moe_top_k if moe_experts else 1,
        **(dict[str, Any](moe_ffn_hidden=moe_ffn_hidden, moe_shared_experts=moe_shared_experts,
                          moe_shared_ffn_hidden=moe_shared_ffn_hidden,
                          moe_dense_layers=moe_dense_layers) if moe_experts else {}),
        mla_q_lora_rank=mla_q_lora_rank, mla_kv_lora_rank=mla_kv_lora_rank,
        mla_qk_nope_head_dim=mla_qk_nope_head_dim, mla_qk_rope_head_dim=mla_qk_rope_head_dim,
        mla_v_head_dim=mla_v_head_dim)
    if mtp_depth:
        flops += global_batch * mtp_depth * mtp_flops_per_sequence(
            layers=layers, hidden=hidden, ffn_hidden=ffn_hidden, heads=heads, kv_heads=kv_heads,
            vocab=vocab, seq_len=seq_len, gated_mlp=gated_mlp,
            moe_top_k=moe_top_k if moe_experts else 1,
            **(dict[str, Any](moe_ffn_hidden=moe_ffn_hidden, moe_shared_experts=moe_shared_experts,
                              moe_shared_ffn_hidden=moe_shared_ffn_hidden,
                              moe_dense_layers=moe_dense_layers) if moe_experts else {}),
            mla_q_lora_rank=mla_q_lora_rank, mla_kv_lora_rank=mla_kv_lora_rank,
            mla_qk_nope_head_dim=mla_qk_nope_head_dim,
            mla_qk_rope_head_dim=mla_qk_rope_head_dim, mla_v_head_dim=mla_v_head_dim)
    mfu = flops / (gpus * peak_tflops * 1e12 * step)
    return StepEstimate(step_time_s=step, mfu=mfu, tokens_per_s_per_gpu=tokens / step / gpus,
                        tokens_per_day=tokens / step * 86400.0,
                        breakdown={k: float(v) for k, v in breakdown.items()})
