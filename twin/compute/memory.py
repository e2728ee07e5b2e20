"""Memory per GPU of a Megatron-style training job: model states, activations, buffers.

One pipeline stage's share on one GPU, as bytes [B]:

* **model states** per local parameter ``P`` (Megatron-LM docs/distrib_optimizer.md;
  Rajbhandari et al., ZeRO, SC20, doi:10.1109/SC41405.2020.00024): bf16 weights
  (2 B), gradients (``grad_bytes``: 4 with fp32 gradient buffers, Megatron/NeMo's
  ``grad_reduce_in_fp32``; 2 for bf16 gradients, DeepSpeed's default) and the Adam state
  (fp32 master weights, m and v: 12 B).  Sharded over the ``d`` data-parallel ranks
  (data x context parallel group) by stage: ZeRO-0 nothing, ZeRO-1 / the distributed
  optimizer the 12 B, ZeRO-2 also the gradients, ZeRO-3 / FSDP also the weights (plus
  the working set of ``fsdp_prefetch_layers`` gathered layers).  Megatron's distributed
  optimizer with bf16 weights and fp32 gradients: ``6 + 12/d`` bytes per parameter (the
  table of the Megatron docs); FP8 training keeps an FP8 copy of the GEMM weights
  (+1 B each, Transformer Engine).
* **mixture of experts**: ``E`` experts of ``mats h F`` parameters per layer, ``E / ep`` of
  them on each GPU.  Without expert tensor parallelism given (``moe_expert_tp`` None: the
  experts split over ``tp`` as the dense MLP, EP taken from the data x context group) a GPU
  holds ``E/ep x mats h F / tp`` expert parameters per layer, and their states shard over
  the ``d / ep`` ranks that hold the same experts.  With ``moe_expert_tp = etp``
  (Megatron-core's ``--expert-tensor-parallel-size``, "MoE parallel folding": expert
  groups drawn over a stage's ``tp cp dp`` ranks in the order ETP, EP, expert-DP;
  Megatron-LM ``megatron/core/parallel_state.py``, ``initialize_model_parallel``) a GPU
  holds ``E/ep x mats h F / etp`` and the states shard over the expert-data-parallel
  ``edp = tp cp dp / (etp ep)`` ranks (Megatron-LM
  ``megatron/training/theoretical_memory_usage.py``: expert parameters ``/ (etp ep)``,
  ``6 + 12/edp`` bytes each with the distributed optimizer).  With ``etp = 1`` each GPU
  keeps ``tp`` times the expert weights and gradients of the TP-split layout; the
  optimizer state is the same, ``tp`` times the parameters over ``tp`` times the shards.
  Expert activations count the routed copies a GPU computes: ``b s/cp x k c etp / tp``
  copies of ``mats F / etp`` each, ``k c`` (top-k x capacity factor) copies of a
  ``mats F / tp`` MLP per token of the micro-batch whatever ``etp`` is (with ``etp = tp``
  the sequence-parallel shards are gathered and the experts split; with 1 each GPU runs
  whole experts on its own shard's copies).  The router (``h E``) stays with the
  TP-split part.
* **dispatched expert inputs**: the token dispatcher permutes each rank's routed copies of
  the MoE layer's (normed) input into expert order, and the experts' first linear layer
  keeps that permuted tensor for its weight gradient (Megatron-core
  ``megatron/core/transformer/moe``: the dispatcher's ``permute`` output is the input of the
  grouped expert MLP's ``linear_fc1``; Korthikanti et al. count a linear layer's input among
  the activations saved for backward).  It is not the norm output the count below already
  keeps but a new ``h``-wide tensor per routed copy: ``2 h x k c etp / tp`` bytes per token of
  ``b s/cp`` (``k c etp / tp`` copies per token, as for the expert activations: whole, ``2 h k
  c``, when the experts split over ``tp`` and the sequence-parallel shards are gathered;
  ``/ tp`` with ``etp = 1``).  Kept with no recompute and with selective recompute (attention
  scores only); with full recompute and MaxText's ``save_qkv_proj`` only the layer being
  rebuilt holds it.  Dropless routing (``moe_routing = "dropless"``): the rank's routed
  copies are ``k x moe_dropless_load`` instead of ``k c`` (the busiest rank's load of the
  step model, :data:`twin.compute.step.MOE_DROPLESS_BUSIEST_LOAD`, for the expert
  activations and their dispatched inputs: a per-layer maximum, so an upper bound for a
  rank summed over its layers).
* **activations** saved for backward per token and layer (Korthikanti et al., "Reducing
  Activation Recomputation in Large Transformer Models", MLSys 2023, arXiv 2205.05198,
  generalised to grouped-query attention and gated MLPs), bf16::

      2 [4h (two norm inputs and outputs) + (h + 2 h_kv) (q, k, v) + h (attention out)
         + (3 if gated else 2) F (MLP up/gate and activation out)]

  divided by ``tp`` (sequence parallel; without it the four norm tensors stay whole),
  with ``5 a s / h`` bytes per token more for unfused attention (score, softmax and
  dropout matrices; flash attention keeps only its log-sum-exp).  For a GPT layer
  (MHA, F = 4h) this is the paper's ``s b h (34/t + 5 a s/(h t))`` less the two dropout
  masks a dropout-free model does not keep.  Selective recompute drops the score terms;
  full recompute keeps only each layer's input (``2h/tp`` per token) plus one layer's
  full set while it is recomputed.  Tokens per micro-batch and rank: ``b s / cp``.
* **pipeline in flight**: pipeline rank ``j`` (0-based) holds the saved activations of
  ``pp - j`` micro-batches of its layers under 1F1B and ``pp + (pp - 1 - 2j)/vpp`` under
  the interleaved schedule (Megatron-core ``schedules.py``: ``2 (pp - j - 1) + (vpp - 1) pp``
  warm-up forwards of a ``1/vpp`` chunk and one more before the first backward), never more
  than the ``m`` micro-batches of the step (``m vpp`` chunks; with ``m = pp`` every
  micro-batch is in flight at once).  The first stage's ``pp + (pp-1)/vpp`` is Korthikanti
  et al.'s §4.2.3 ``L (1 + (p-1)/(p v))`` layers' worth; the last stage's interleaved
  ``pp - (pp-1)/vpp`` (``(vpp - 1) pp + 1`` chunks) against 1 under 1F1B.  Interleaved, each
  chunk is counted at its own micro-batches in flight and the rank at the peak of their sum
  over the schedule (:func:`interleaved_chunks_in_flight`): equal chunks give the figures
  above, while what sits in one chunk only counts at that chunk's own count, so the
  embedding output (chunk 0 of rank 0: early chunks hold more micro-batches than the mean)
  and the MTP modules (the last rank's last chunk: about one) are not taken at the rank's
  mean (the twin's figures until HU4).  The counts are read from the op order the step model
  replays (:mod:`twin.compute.schedules`), in the same micro-batch group: ``pp`` when it
  divides ``m``, else the smallest group ``g`` Megatron-core accepts (it refuses a last group
  of 1 .. ``pp - 1``), whose warm-up is ``2 (pp - j - 1) + (vpp - 1) g`` forwards, so such a
  step holds more than the figures above (until HMS the memory model counted the default
  group's order, which Megatron-core does not run).
* **DualPipe** (``pipeline_schedule="dualpipe"``; DeepSeek-V3 Technical Report arXiv
  2412.19437 sec. 3.2.1 and Table 2, deepseek-ai/DualPipe): rank ``j`` holds stages ``s =
  min(j, pp-1-j)`` and ``pp-1-s`` (``DualPipe``'s two modules, ``examples/example_dualpipe.py``),
  each with the per-stage weights, gradients, dense layers, embedding and output layer above,
  so ranks 0 and ``pp-1`` both hold the first and the last stage.  Their sharded states are
  taken over ``2 d`` ranks (ZeRO-1: ``12 / (2 d)`` a parameter): every stage lives on the ``d``
  data-parallel ranks of each of its two pipeline ranks, and the example sums the mirror
  rank's gradient into each copy, so the copies are one data-parallel group of ``2 d`` that
  can share one optimizer partition, as the step model moves them (``2 p_local`` over the
  group; neither the report nor the repository states the optimizer's layout, and keeping a
  state per copy over ``d`` would double the optimizer term).  Activations: stepping
  ``DualPipe.step`` chunk by chunk, every rank's peak holds ``pp - s`` micro-batches of
  stage ``s`` and ``s + 1`` of stage ``pp-1-s`` at once (``pp + 1``, Table 2's "PP + 1"; the
  zero-bubble weight gradients deferred then are none), i.e. each stage as many as its index
  holds under 1F1B; ``DualPipe.step`` asserts ``m >= 2 pp``, so the step never caps it.
  Every rank pair ``(j, pp-1-j)`` is evaluated; the pair's two ranks are alike.
* **DeepSeek-V3's memory savings** (options, all off by default; sec. 3.2.3 and 3.3.3,
  :func:`saved_bytes_per_token_layer`): RMSNorm and MLA up-projection outputs recomputed,
  Linear inputs cached in FP8 (attention output E5M6, MoE SwiGLU inputs FP8 with its output
  recomputed, FP8 dispatch), BF16 AdamW moments (``4 + 2 x 2`` B of optimizer state a
  parameter).  The report's EMA in CPU memory saves nothing here (the twin counts no EMA);
  MTP's shared embedding and head add no copy (``mtp_depth``: the MTP modules' own layer,
  projection, activations and second logits on the last stage).
* **context-parallel KV**: ring attention double-buffers the K/V block it receives
  and, backward, the dK/dV it passes on: ``2 x 2 x 2 h_kv/tp x b s/cp x 2 B``.
* **logits**: the last stage's bf16 logits and the fp32 cross-entropy working set,
  ``6 b s/cp V/tp`` bytes; the first stage's embedding output ``2 b s/cp h``.
* **buffers**: CUDA context, cuBLAS/cuDNN workspaces, NCCL channel buffers and the
  caching allocator's fragmentation, a fixed ``buffer_bytes`` (2 GiB, engineering
  estimate: ~0.5 GB context, ~0.5-1 GB NCCL, the rest workspaces and fragments).

Every pipeline rank is evaluated (DualPipe: every rank pair) and the heaviest is the job's
figure, named ``"first"``, ``"last"``, ``"stage j"`` (1-based) or ``"stages s+t"``.  One code
path: the ranks' chunks come from a ``pipeline_layout`` (Megatron-core's
``--pipeline-model-parallel-layout``, :mod:`twin.compute.pipeline_layout`), else from the
even split written as one (:func:`~twin.compute.pipeline_layout.even_pipeline_layout`:
``lps`` decoder layers a rank, ``lps / vpp`` a chunk, the embedding on rank 0's chunk 0, the
loss and the MTP modules on the last rank's last chunk).  Layers sit where Megatron-core puts
them (``transformer_layer.get_transformer_layer_offset``): chunk ``v`` of rank ``r`` holds
layers ``[(v pp + r) lpc, (v pp + r + 1) lpc)``, ``lpc = lps / vpp``, so dense first layers
(``moe_dense_layers``) fill chunk 0 of ranks 0, 1, ... ``lpc`` at a time.
HBM sizes quoted in "GB" are GiB (H100 80 GB: 81,559 MiB in ``nvidia-smi``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from twin.compute.pipeline_layout import (
    DECODER,
    EMBED,
    LOSS,
    MTP,
    even_pipeline_layout,
    parse_pipeline_layout,
)
from twin.compute.schedules import interleaved_in_flight, schedule_microbatch_group

#: bytes per GiB
GIB = 2.0**30
#: fixed per-GPU overhead [B]: CUDA context, library workspaces, NCCL buffers,
#: allocator fragmentation (engineering estimate, see the module doc)
BUFFER_BYTES = 2.0 * GIB
#: Uncertainty of the estimate, fitted once: the largest ratio of estimate to capacity
#: among the published configurations that ran on 80 GB H100s (dgxc-benchmarking
#: NeMo 24.09/24.11 tables, tests/compute/test_memory.py): Nemotron-4 340B on 128
#: GPUs (TP8 PP8 VPP12, bf16 gradients) estimates 92.425 GiB against 80 (its first stage;
#: 92.295 until HU4 counted the embedding output at chunk 0's own peak), ratio
#: 92.425 / 80 = 1.1553, so 1 - 1/1.1553 = 0.1344, rounded up: 0.135 (limit 80 / 0.865 =
#: 92.49 GiB; 0.134 would give 92.38 and refuse it).
MEMORY_MODEL_MARGIN = 0.135
#: ZeRO stages: 0 none, 1 optimizer state (= Megatron distributed optimizer),
#: 2 + gradients, 3 + weights (= FSDP full shard)
ZERO_STAGES = (0, 1, 2, 3)


def stage_label(stage: str) -> str:
    """A breakdown's ``stage`` for a sentence: "first" -> "first stage", "stage 2" as it is."""
    return stage if stage.startswith("stage") else f"{stage} stage"


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU [B] on the most loaded pipeline stage, by part."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    cp_kv: float
    logits: float
    buffers: float
    stage: str

    @property
    def total(self) -> float:
        return (self.weights + self.gradients + self.optimizer + self.activations + self.cp_kv
                + self.logits + self.buffers)

    def as_dict(self) -> dict:
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer": self.optimizer, "activations": self.activations,
                "cp_kv": self.cp_kv, "logits": self.logits, "buffers": self.buffers,
                "total": self.total, "stage": self.stage}

    def describe_gib(self) -> str:
        """One line: ``total GiB (weights a + gradients b + ...)``."""
        parts = [f"{k} {v / GIB:.1f}" for k, v in self.as_dict().items()
                 if k not in ("total", "stage") and v > 0]
        where = stage_label(self.stage)
        return f"{self.total / GIB:.1f} GiB ({' + '.join(parts)}; {where})"


def model_state_bytes_per_parameter(dp_shards: int, *, zero_stage: int = 1,
                                    grad_bytes: float = 4.0, weight_bytes: float = 2.0,
                                    optimizer_bytes: float = 12.0) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per parameter [B] on one of ``dp_shards`` ranks.

    ``zero_stage`` 0..3 shards the optimizer state, then the gradients, then the weights
    over the ``dp_shards`` data-parallel ranks (ZeRO, Rajbhandari et al. 2020, eq. in
    Fig. 1: ``(2 + 2 + K) Psi`` -> ``2 Psi + 2 Psi + K Psi / N_d`` -> ... ->
    ``(2 + 2 + K) Psi / N_d`` with ``K = 12``).
    """
    if zero_stage not in ZERO_STAGES:
        raise ValueError(f"zero_stage must be one of {ZERO_STAGES}, got {zero_stage!r}")
    d = float(dp_shards)
    w = weight_bytes / (d if zero_stage >= 3 else 1.0)
    g = grad_bytes / (d if zero_stage >= 2 else 1.0)
    o = optimizer_bytes / (d if zero_stage >= 1 else 1.0)
    return w, g, o


def megatron_state_bytes_per_parameter(dp_shards: int, *, grad_bytes: float = 4.0,
                                       distributed_optimizer: bool = True) -> float:
    """Model-state bytes per parameter [B] of Megatron-LM's optimizer (its docs' table).

    bf16 weights; gradients of ``grad_bytes`` (4: fp32 main-grad buffer; 2: bf16, then
    the optimizer keeps an fp32 copy of its gradient shard, 4 B more in the sharded
    part).  Distributed optimizer: ``6 + 12/d`` (fp32 grads) or ``4 + 16/d`` (bf16);
    without it ``18`` or ``20``.
    """
    sharded = 12.0 + (4.0 if grad_bytes < 4.0 else 0.0)
    w, g, o = model_state_bytes_per_parameter(
        dp_shards, zero_stage=1 if distributed_optimizer else 0, grad_bytes=grad_bytes,
        optimizer_bytes=sharded)
    return w + g + o


def activation_bytes_per_token_layer(*, hidden: int, ffn_hidden: int, heads: int,
                                     kv_heads: int, seq_len: int, tp: int = 1, cp: int = 1,
                                     gated_mlp: bool = True, sequence_parallel: bool = True,
                                     flash_attention: bool = True,
                                     recompute: str = "none",
                                     attention_width: float | None = None) -> float:
    """Activation bytes saved for backward per token and layer [B] (bf16; module doc).

    recompute: "none", "selective" (attention scores recomputed), "save_qkv_proj"
    (MaxText's remat policy: the layer input and the Q, K, V projections kept, the rest
    recomputed) or "full" (only the layer input kept).  attention_width: elements per token
    of the saved queries, keys, values and attention output, TP-split (None: ``3 h + 2 h_kv``
    less nothing, i.e. ``(h + 2 h_kv) + h``; multi-head latent attention passes its own,
    :func:`mla_activation_width`).
    """
    h, F = float(hidden), float(ffn_hidden)
    hkv = h * kv_heads / heads
    sp = tp if sequence_parallel else 1
    if recompute == "full":
        return 2.0 * h / sp
    if recompute == "save_qkv_proj":
        return 2.0 * h / sp + 2.0 * (h + 2.0 * hkv) / tp
    norms = 2.0 * 4.0 * h / sp
    if attention_width is None:
        body = 2.0 * ((h + 2.0 * hkv) + h + (3.0 if gated_mlp else 2.0) * F) / tp
    else:
        body = 2.0 * (attention_width + (3.0 if gated_mlp else 2.0) * F) / tp
    scores = 0.0
    if not flash_attention and recompute != "selective":
        # softmax out (2 B), dropout mask (1 B), dropout out (2 B) per score and head
        scores = 5.0 * heads * (seq_len / cp) / tp
    return norms + body + scores


def mla_activation_width(*, heads: int, q_lora_rank: int, kv_lora_rank: int,
                         qk_nope_head_dim: int, qk_rope_head_dim: int, v_head_dim: int,
                         tp: int = 1) -> float:
    """Elements per token a multi-head latent attention block saves for backward, in the
    TP-split units of :func:`activation_bytes_per_token_layer` (DeepSeek-V2 arXiv 2405.04434
    sec. 2.1): queries and keys ``n (d_nope + d_rope)`` each, values and the attention output
    ``n d_v`` each (split over ``tp``), and the normed query and KV latents with the shared
    RoPE key, ``q_lora + kv_lora + d_rope``, whole on every TP rank (duplicated down
    projections), hence ``x tp`` here."""
    d_qk = qk_nope_head_dim + qk_rope_head_dim
    return float(heads * (2 * d_qk + 2 * v_head_dim)
                 + (q_lora_rank + kv_lora_rank + qk_rope_head_dim) * tp)


#: Bytes per cached element under DeepSeek-V3's FP8 activation caching (arXiv 2412.19437 sec.
#: 3.3.3, "Low-Precision Activation"): a Linear operator's input in FP8 (1 B); the input of the
#: Linear after attention in the report's E5M6 format (12 bits, 1.5 B), as that tensor also
#: serves the attention backward; everything else (norm inputs, attention inputs) in bf16 (2 B).
FP8_CACHED_BYTES = 1.0
E5M6_CACHED_BYTES = 1.5


def saved_bytes_per_token_layer(*, hidden: int, heads: int, kv_heads: int, seq_len: int,
                                tp: int = 1, cp: int = 1, sequence_parallel: bool = True,
                                flash_attention: bool = True, recompute: str = "none",
                                gated_mlp: bool = True, mla_dims: tuple | None = None,
                                dense_ffn_hidden: float = 0.0, routed_ffn_hidden: float = 0.0,
                                routed_copies: float = 0.0, shared_ffn_hidden: float = 0.0,
                                dispatched_copies: float = 0.0,
                                recompute_norms_mla_up: bool = False,
                                fp8_cached_linear_inputs: bool = False) -> float:
    """Activation bytes saved for backward per token and layer [B], tensor by tensor, with
    DeepSeek-V3's memory savings as options (arXiv 2412.19437; all off: the same tensors as
    :func:`activation_bytes_per_token_layer` plus the module doc's MoE terms, bf16).

    Elements per token (TP-split as in the module doc; ``sp = tp`` with sequence parallel):

    * norm inputs ``2 h / sp`` (bf16, always kept);
    * norm outputs ``2 h / sp``, the inputs of the QKV (or MLA down) projections and of the
      MLP / router;
    * attention inputs: ``(h + 2 h_kv) / tp`` (q, k, v), or with multi-head latent attention
      (``mla_dims = (q_lora, kv_lora, d_nope, d_rope, d_v)``) the up-projections' outputs
      ``n (2 (d_nope + d_rope) + d_v) / tp`` (queries, keys, values), the latents ``q_lora +
      kv_lora`` (the up-projections' inputs, whole on every TP rank) and the RoPE key
      ``d_rope`` (bf16);
    * attention output ``h / tp`` (``n d_v / tp`` with MLA), the input of the output
      projection;
    * per MLP of inner size ``F`` (``dense_ffn_hidden`` once; ``routed_ffn_hidden`` for each of
      ``routed_copies`` routed copies; ``shared_ffn_hidden`` once): gated, the up/gate outputs
      (SwiGLU's inputs) ``2 F / tp`` and SwiGLU's output (the down projection's input)
      ``F / tp``; ungated ``F / tp`` each;
    * dispatched expert inputs ``h x dispatched_copies`` (module doc: ``k c etp / tp``);
    * unfused attention: ``5 n (s / cp) / tp`` bytes of scores unless selective recompute.

    recompute_norms_mla_up (sec. 3.2.3, "Recomputation of RMSNorm and MLA Up-Projection": "We
    recompute all RMSNorm operations and MLA up-projections during back-propagation, thereby
    eliminating the need to persistently store their output activations"): the norm outputs
    and the MLA queries, keys and values are not kept; the latents are then kept as the latent
    norms' inputs (bf16); without a query latent (``q_lora`` 0) the queries, a direct
    projection's output, stay.  fp8_cached_linear_inputs (sec. 3.3.3, "Low-Precision Activation":
    activations cached for the backward of Linear operators in FP8, with two exceptions): norm
    outputs, the MLA latents (when kept as the up-projections' inputs), the dispatched expert
    inputs (dispatched in FP8, sec. 3.3.3 "Low-Precision Communication") and the dense MLP's
    down-projection input at :data:`FP8_CACHED_BYTES`; the attention output (the Linear after
    attention) at :data:`E5M6_CACHED_BYTES`; in the MoE layer's MLPs (routed and shared
    experts) SwiGLU's inputs at 1 B and its output not kept ("we cache the inputs of the
    SwiGLU operator and recompute its output in the backward pass"); q, k, v, norm inputs
    and the RoPE key stay bf16.  Assumed, not stated: the shared expert counts as "in MoE";
    the MoE layer's norm output is counted once at 1 B though the BF16 router (sec. 3.3.1)
    reads it too.
    """
    h = float(hidden)
    sp = tp if sequence_parallel else 1
    lin = FP8_CACHED_BYTES if fp8_cached_linear_inputs else 2.0
    out_b = E5M6_CACHED_BYTES if fp8_cached_linear_inputs else 2.0
    b = 2.0 * 2.0 * h / sp                                    # norm inputs
    if not recompute_norms_mla_up:
        b += lin * 2.0 * h / sp                               # norm outputs
    if mla_dims is None:
        hkv = h * kv_heads / heads
        b += 2.0 * (h + 2.0 * hkv) / tp + out_b * h / tp
    else:
        q_lora, kv_lora, d_nope, d_rope, d_v = (float(x) for x in mla_dims)
        if recompute_norms_mla_up:  # latents kept as their norms' inputs, bf16
            b += 2.0 * (q_lora + kv_lora + d_rope)
            if not q_lora:  # queries of a direct projection (no query latent) are kept
                b += 2.0 * heads * (d_nope + d_rope) / tp
        else:
            b += (2.0 * heads * (2.0 * (d_nope + d_rope) + d_v) / tp
                  + lin * (q_lora + kv_lora) + 2.0 * d_rope)
        b += out_b * heads * d_v / tp

    def mlp(f: float, in_moe: bool) -> float:
        if not gated_mlp:
            return (2.0 + lin) * f / tp
        if fp8_cached_linear_inputs and in_moe:  # SwiGLU inputs in FP8, output recomputed
            return FP8_CACHED_BYTES * 2.0 * f / tp
        return (2.0 * 2.0 + lin) * f / tp

    b += mlp(float(dense_ffn_hidden), False) + routed_copies * mlp(float(routed_ffn_hidden), True)
    b += mlp(float(shared_ffn_hidden), True)
    b += lin * h * dispatched_copies
    if not flash_attention and recompute != "selective":
        b += 5.0 * heads * (seq_len / cp) / tp
    return b


def interleaved_chunks_in_flight(*, pp: int, vpp: int, rank: int,
                                 microbatches: int | None = None) -> np.ndarray:
    """Micro-batches in flight on pipeline rank ``rank``, by model chunk, at each moment a
    forward has just run from the end of the warm-up on [-], shape ``(moments, vpp)``: read
    from the op order the step model replays
    (:func:`twin.compute.schedules.interleaved_in_flight` of
    :func:`twin.compute.schedules.interleaved_rank_order`), each distinct moment once, in
    ascending order.

    Megatron-core's interleaved schedule (``schedules.py``: ``get_pp_rank_microbatches``,
    ``get_schedule_table``, ``forward_backward_pipelining_with_interleaving``) runs the
    forwards in groups of ``g`` micro-batches a chunk with ``W = 2 (pp - rank - 1) + (vpp - 1)
    g`` warm-up forwards (all ``m vpp`` if fewer), then forward ``W + k`` and backward ``k`` in
    each steady step; a moment holds ``W + 1`` chunks in all (``m vpp`` when every forward runs
    first).  The group is the step model's
    (:func:`~twin.compute.schedules.schedule_microbatch_group`): ``pp`` when it divides ``m``
    or ``m < pp`` (one group), else the smallest group Megatron-core accepts
    (:func:`~twin.compute.schedules.megatron_microbatch_group`; its default group's short last
    group of ``m mod pp`` is refused), so the memory model counts the schedule the step model
    times.  With ``g = pp`` chunk ``v`` holds ``F_v(n) - B_v(t)`` after ``n`` forwards and
    ``t`` backwards, ``F_v(n) = pp floor(n / pp vpp) + clip(n mod pp vpp - v pp, 0, pp)``,
    ``B_v`` alike for chunk ``vpp - 1 - v``, a mix that repeats every ``pp vpp`` steps.
    ``microbatches`` None (the pipeline full, as in a long step): the order of ``3 pp``
    micro-batches, whose ``2 pp vpp - pp + 2`` or more steady steps hold one whole period and
    nothing else.  Without interleaving (``vpp = 1``, or ``pp = 1``) one chunk, 1F1B: ``pp -
    rank`` micro-batches (one with ``pp = 1``), at most ``m``.  The array is read-only (cached:
    every memory estimate asks for each rank's).
    """
    return _chunks_in_flight(int(pp), int(vpp), int(rank),
                             None if microbatches is None else int(microbatches))


@functools.lru_cache(maxsize=4096)
def _chunks_in_flight(pp: int, vpp: int, rank: int, m: int | None) -> np.ndarray:
    """:func:`interleaved_chunks_in_flight`, read-only."""
    v = 1 if pp == 1 else vpp  # one rank interleaves nothing
    m_run = 3 * pp if m is None else m
    rows = interleaved_in_flight(pp, v, m_run, rank, schedule_microbatch_group(pp, v, m_run))
    # distinct moments, ascending (np.unique(rows, axis=0), about 10x faster through lexsort):
    # a step of m micro-batches has ~m vpp moments and a few dozen distinct ones
    rows = rows[np.lexsort(rows.T[::-1])]
    keep = np.ones(len(rows), dtype=bool)
    keep[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    out = rows[keep].astype(float)
    out.setflags(write=False)
    return out


def memory_per_gpu_bytes(
    *,
    layers: int,
    hidden: int,
    ffn_hidden: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    vpp: int = 1,
    dp: int = 1,
    microbatches: int | None = None,
    precision: str = "bf16",
    activation_recompute: str = "none",
    zero_stage: int = 1,
    grad_bytes: float = 4.0,
    gated_mlp: bool = True,
    sequence_parallel: bool = True,
    flash_attention: bool = True,
    fsdp_prefetch_layers: int = 2,
    buffer_bytes: float = BUFFER_BYTES,
    moe_experts: int = 0,
    moe_ep: int = 1,
    moe_top_k: int = 2,
    moe_capacity_factor: float = 1.0,
    moe_expert_tp: int | None = None,
    moe_routing: str = "capacity",
    moe_dropless_load: float | None = None,
    shard_ranks: int | None = None,
    moe_ffn_hidden: int | None = None,
    moe_shared_experts: int = 0,
    moe_shared_ffn_hidden: int | None = None,
    moe_dense_layers: int = 0,
    mla_q_lora_rank: int = 0,
    mla_kv_lora_rank: int = 0,
    mla_qk_nope_head_dim: int = 0,
    mla_qk_rope_head_dim: int = 0,
    mla_v_head_dim: int = 0,
    pipeline_rank: int | None = None,
    pipeline_schedule: str | None = None,
    recompute_norms_mla_up: bool = False,
    fp8_cached_linear_inputs: bool = False,
    adam_moment_bytes: float = 4.0,
    mtp_depth: int = 0,
    pipeline_layout: str | None = None,
) -> MemoryBreakdown:
    """Per-GPU memory [B] of one training job, the worst of its pipeline stages (module doc).

    Model shape as :func:`twin.compute.step_estimate`; dp: data-parallel ranks
    (the optimizer shards over ``dp * cp``); microbatches: micro-batches per step and
    DP rank (``None`` = enough to fill the pipeline).  zero_stage 0-3 (1 = Megatron
    distributed optimizer, 3 = FSDP/ZeRO-3), grad_bytes [B] per gradient element.
    moe_experts > 0 makes the MLP a mixture of ``moe_experts`` experts of inner size
    ``ffn_hidden`` each, split over ``moe_ep`` expert-parallel ranks (weights,
    gradients and optimizer of ``moe_experts / moe_ep`` experts per GPU; expert
    activations for ``moe_top_k x moe_capacity_factor`` routed copies of each token).
    moe_expert_tp: expert tensor parallel size (None: the experts split over ``tp``, the
    former layout; else a positive integer with ``moe_expert_tp x moe_ep`` dividing
    ``tp x cp x dp``, as Megatron-core requires): ``moe_experts / moe_ep`` experts split
    over ``moe_expert_tp`` ranks, their states sharded over the ``tp cp dp / (moe_expert_tp
    moe_ep)`` expert-data-parallel ranks (module doc).
    moe_routing: "capacity" (``moe_top_k x moe_capacity_factor`` routed copies per token)
    or "dropless" (``moe_top_k x moe_dropless_load``, None: the step model's
    :data:`twin.compute.step.MOE_DROPLESS_BUSIEST_LOAD`; capacity factor left at 1.0), as
    :func:`twin.compute.step_estimate` takes them.  Expert activations and the dispatched
    expert inputs (``2 h k c etp / tp`` bytes per token and MoE layer, module doc) scale with
    the routed copies.
    shard_ranks: ranks the sharded states are split over (ZeRO-3 / FSDP shard group;
    default ``dp * cp``; the expert states over ``shard_ranks x tp / (etp ep)``).

    DeepSeek-style terms (defaults give the model above unchanged; names and meaning as
    :func:`twin.compute.step_estimate`): moe_ffn_hidden (expert inner size; ``ffn_hidden``
    is then the dense MLP), moe_shared_experts of moe_shared_ffn_hidden (default the expert
    size: TP-split weights with the dense part, activations for every token),
    moe_dense_layers (the first layers dense, placed on the ranks as Megatron-core places
    them: module doc), and multi-head latent attention (``mla_kv_lora_rank`` > 0: its
    projections' weights, :func:`twin.compute.step.mla_parameters_per_layer`, the down
    projections whole on each TP rank; activations :func:`mla_activation_width`;
    context-parallel KV blocks of the per-head keys and values).

    pipeline_rank: None (default) gives the heaviest pipeline stage (module doc); a rank
    ``0 <= pipeline_rank < pp`` gives that rank's breakdown, named as in the module doc.

    pipeline_schedule: as :func:`twin.compute.step_estimate` (None: "interleaved" when ``vpp``
    > 1, else "1f1b", the figures above bit for bit; "1f1b" needs ``vpp`` 1, "interleaved"
    ``vpp`` > 1).  "dualpipe" (DeepSeek's DualPipe, module doc): ``vpp`` 1, ``pp`` even,
    ``microbatches`` None or even and >= ``2 pp`` (``DualPipe.step``'s assertions), zero_stage
    0-2; rank ``j`` holds stages ``j`` and ``pp-1-j``, named ``"stages a+b"`` (1-based).

    DeepSeek-V3's memory savings (arXiv 2412.19437; all off by default, the figures above bit
    for bit), each as the report states it, nothing fitted (:func:`saved_bytes_per_token_layer`):
    recompute_norms_mla_up (sec. 3.2.3: RMSNorm and MLA up-projection outputs recomputed in
    backward, not kept) and fp8_cached_linear_inputs (sec. 3.3.3: Linear inputs cached in FP8,
    the attention output in E5M6, MoE SwiGLU inputs in FP8 with its output recomputed, FP8
    dispatch; needs ``precision="fp8"``), both with activation_recompute "none" or "selective"
    (the report keeps the rest); adam_moment_bytes [B] per AdamW moment element (4: fp32; 2:
    the report's BF16 moments, sec. 3.3.3 "Low-Precision Optimizer States", master weights and
    gradients staying fp32): the optimizer state is ``4 + 2 x adam_moment_bytes`` bytes per
    parameter (+4 for the fp32 gradient copy with bf16 gradients).

    mtp_depth (0: none; DeepSeek-V3 sec. 2.2, ``num_nextn_predict_layers``): multi-token
    prediction modules on the last stage (DualPipe: ranks 0 and ``pp - 1``), each a layer of
    the model's kind (an MoE layer when it has them) with its weights, gradients, optimizer
    states and saved activations for the stage's micro-batches in flight, its ``2h x h``
    projection and two RMSNorms (TP-split; the projection's ``2h`` input kept in bf16), and
    one more logits working set (the main and the MTP loss are summed before one backward,
    so both heads' logits live at once); the embedding and output head are shared (DualPipe
    puts them on the same rank), no extra copy.

    pipeline_layout (None: the even split of the module doc, written as a layout and run
    through the same code, :func:`~twin.compute.pipeline_layout.even_pipeline_layout`):
    Megatron-core's ``--pipeline-model-parallel-layout`` string
    (:mod:`twin.compute.pipeline_layout`; ``pp vpp`` virtual stages, ``v pp + r`` on rank
    ``r`` as its chunk ``v``; DualPipe: vpp 1, the schedule's ``pp`` stages).  Every rank is
    evaluated from its own chunks: weights, gradients and optimizer states of its decoder
    layers (the first ``moe_dense_layers`` in layout order dense), MTP modules, input
    embedding (``E``) and output layer (``L``); activations of each chunk's layers, MTP
    modules and embedding output for that chunk's micro-batches in flight
    (:func:`interleaved_chunks_in_flight`: the peak over the schedule; 1F1B ``pp - j`` of all
    of them; DualPipe the module doc's ``pp - s`` and ``s + 1`` of its two stages); logits
    where ``L`` and each ``m`` sit.  The heaviest rank is returned, named as above.
    """
    for name, v in (("layers", layers), ("hidden", hidden), ("ffn_hidden", ffn_hidden),
                    ("heads", heads), ("kv_heads", kv_heads), ("vocab", vocab),
                    ("seq_len", seq_len), ("micro_batch", micro_batch), ("tp", tp), ("pp", pp),
                    ("cp", cp), ("vpp", vpp), ("dp", dp), ("moe_ep", moe_ep)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    from twin.compute.specs import RECOMPUTE_CHOICES  # specs imports this module
    if activation_recompute not in RECOMPUTE_CHOICES:
        raise ValueError(f"activation_recompute must be one of {RECOMPUTE_CHOICES}, "
                         f"got {activation_recompute!r}")
    # step imports this module
    from twin.compute.step import (
        PIPELINE_SCHEDULES,
        _check_deepseek_terms,
        dualpipe_problems,
        expert_dp_unit,
        resolved_schedule,
        schedule_vpp_mismatch,
    )
    schedule = resolved_schedule(pipeline_schedule, vpp)
    if schedule not in PIPELINE_SCHEDULES:
        raise ValueError(f"pipeline_schedule must be one of {PIPELINE_SCHEDULES} or None, got "
                         f"{pipeline_schedule!r}")
    if schedule_vpp_mismatch(schedule, vpp):
        raise ValueError(f"pipeline_schedule={schedule!r} needs "
                         f"{'vpp > 1' if schedule == 'interleaved' else 'vpp=1'}, got vpp={vpp}")
    dualpipe = schedule == "dualpipe"
    broken = dualpipe_problems(pp=pp, microbatches=microbatches, zero_stage=zero_stage) \
        if dualpipe else []
    if broken:  # the first rule it breaks (deepseek-ai/DualPipe, DualPipe.step's assertions)
        raise ValueError({
            "pp": f"pipeline_schedule='dualpipe' needs an even pp >= 2 (rank j holds "
                  f"stages j and pp-1-j), got pp={pp}",
            "microbatches": f"pipeline_schedule='dualpipe' needs an even number of "
                            f"microbatches >= 2 pp = {2 * pp}, got {microbatches!r}",
            "zero_stage": "pipeline_schedule='dualpipe' is modelled with zero_stage 0-2 "
                          "(the step model's limit), got zero_stage=3"}[broken[0][0]])
    for name, flag in (("recompute_norms_mla_up", recompute_norms_mla_up),
                       ("fp8_cached_linear_inputs", fp8_cached_linear_inputs)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    savings = bool(recompute_norms_mla_up or fp8_cached_linear_inputs)
    if savings and activation_recompute not in ("none", "selective"):
        raise ValueError(f"recompute_norms_mla_up and fp8_cached_linear_inputs describe what "
                         f"DeepSeek-V3 keeps without layer recompute: activation_recompute must "
                         f"be 'none' or 'selective', got {activation_recompute!r}")
    if fp8_cached_linear_inputs and precision != "fp8":
        raise ValueError(f"fp8_cached_linear_inputs needs precision='fp8' (FP8 GEMMs read the "
                         f"cached FP8 inputs), got precision={precision!r}")
    if isinstance(adam_moment_bytes, bool) or not isinstance(adam_moment_bytes, (int, float)) \
            or not math.isfinite(adam_moment_bytes) or adam_moment_bytes <= 0:
        raise ValueError(f"adam_moment_bytes must be a positive number of bytes per AdamW "
                         f"moment element (4 fp32, 2 bf16), got {adam_moment_bytes!r}")
    if isinstance(mtp_depth, bool) or int(mtp_depth) != mtp_depth or mtp_depth < 0:
        raise ValueError(f"mtp_depth must be a whole number >= 0, got {mtp_depth!r}")
    mtp = int(mtp_depth)
    # per rank and chunk: embedding, decoder layers, MTP layers, loss (DualPipe: vpp 1, the
    # schedule's pp stages)
    layout = None if pipeline_layout is None else parse_pipeline_layout(
        pipeline_layout, pp=int(pp), vpp=int(vpp), layers=int(layers), mtp_depth=mtp)
    _check_deepseek_terms(layers=layers, moe_experts=moe_experts, moe_ffn_hidden=moe_ffn_hidden,
                          moe_shared_experts=moe_shared_experts,
                          moe_shared_ffn_hidden=moe_shared_ffn_hidden,
                          moe_dense_layers=moe_dense_layers, mla_q_lora_rank=mla_q_lora_rank,
                          mla_kv_lora_rank=mla_kv_lora_rank,
                          mla_qk_nope_head_dim=mla_qk_nope_head_dim,
                          mla_qk_rope_head_dim=mla_qk_rope_head_dim, mla_v_head_dim=mla_v_head_dim)
    if moe_experts > 0 and moe_expert_tp is not None:
        if isinstance(moe_expert_tp, bool) or int(moe_expert_tp) != moe_expert_tp \
                or moe_expert_tp < 1:
            raise ValueError(f"moe_expert_tp must be a positive integer or None, got "
                             f"{moe_expert_tp!r}")
        # Megatron-core's one condition (parallel_state.initialize_model_parallel: the world a
        # multiple of etp ep pp), any etp; the step model also wants etp in (1, tp), its
        # expert communication's two cases, a limit of that model and not of the layout
        if dp % expert_dp_unit(tp=tp, cp=cp, ep=moe_ep, moe_expert_tp=int(moe_expert_tp)):
            raise ValueError(f"moe_expert_tp x moe_ep = {moe_expert_tp * moe_ep} does not divide "
                             f"the tensor x context x data parallel ranks {tp * cp * dp}")
    # routed copies a rank's experts take per token: k c, or the busiest rank's load dropless
    moe_copies = moe_top_k * moe_capacity_factor
    if moe_experts > 0:
        from twin.compute.step import moe_routed_load
        moe_copies = moe_top_k * float(moe_routed_load(moe_routing, moe_capacity_factor,
                                                       moe_dropless_load))
    # experts split over etp ranks: tp unless expert tensor parallelism is given
    etp = tp if (moe_experts == 0 or moe_expert_tp is None) else int(moe_expert_tp)
    h, F = float(hidden), float(ffn_hidden)
    hkv = h * kv_heads / heads
    mats = 3 if gated_mlp else 2
    attn_params = h * (h + 2 * hkv) + h * h + 2 * h
    mla = mla_kv_lora_rank > 0
    if mla:
        from twin.compute.step import mla_parameters_per_layer  # step imports this module
        mla_kw: dict[str, Any] = dict(hidden=hidden, heads=heads, q_lora_rank=mla_q_lora_rank,
                      kv_lora_rank=mla_kv_lora_rank, qk_nope_head_dim=mla_qk_nope_head_dim,
                      qk_rope_head_dim=mla_qk_rope_head_dim, v_head_dim=mla_v_head_dim)
        p_mla = mla_parameters_per_layer(**mla_kw)
        d_qk = mla_qk_nope_head_dim + mla_qk_rope_head_dim
        # duplicated over TP (the code divides by tp below): the down projections + norms
        p_down = h * ((mla_q_lora_rank if mla_q_lora_rank else 0) + mla_kv_lora_rank
                      + mla_qk_rope_head_dim) + mla_q_lora_rank + mla_kv_lora_rank
        attn_params = p_down * tp + (p_mla - p_down) + 2 * h
    Fe = F if moe_ffn_hidden is None else float(moe_ffn_hidden)
    Fs = moe_shared_experts * (Fe if moe_shared_ffn_hidden is None else moe_shared_ffn_hidden)
    if moe_experts > 0:
        if moe_experts % moe_ep:
            raise ValueError(f"moe_experts={moe_experts} is not a multiple of moe_ep={moe_ep}")
        dense_mlp = mats * h * Fs if Fs else 0.0  # shared experts, TP-split
        # TP-split equivalent (the code divides by tp below): the experts' tp / etp times
        # their TP-split share (exactly 1.0 without expert tensor parallelism), + router
        expert_params = moe_experts / moe_ep * mats * h * Fe * (tp / etp) + h * moe_experts
    else:
        dense_mlp = mats * h * F
        expert_params = 0.0
    p_layer_tp = (attn_params + dense_mlp) / tp  # sharded by TP
    p_embed = vocab * h / tp
    d = dp * cp if shard_ranks is None else int(shard_ranks)
    # fp32 master weights and the two AdamW moments; bf16 gradients: the optimizer keeps an
    # fp32 copy of its gradient shard (Megatron)
    opt_b = 4.0 + 2.0 * float(adam_moment_bytes) + (4.0 if grad_bytes < 4.0 else 0.0)
    # DualPipe: each stage lives on the d ranks of rank j and the d of rank pp-1-j, whose
    # gradients are summed (deepseek-ai/DualPipe examples/example_dualpipe.py adds the mirror
    # rank's gradient), so its sharded states are taken over those 2 d ranks, as the step
    # model moves them (module doc)
    copies = 2 if dualpipe else 1
    w_b, g_b, o_b = model_state_bytes_per_parameter(d * copies, zero_stage=zero_stage,
                                                    grad_bytes=grad_bytes, optimizer_bytes=opt_b)
    # expert weights are replicated over dp*cp/ep ranks only (EP takes ranks from DP);
    # folded (etp given): over the tp cp dp / (etp ep) expert-data-parallel ranks
    if moe_experts > 0 and moe_expert_tp is not None:
        d_exp = max(1, d * tp // (etp * moe_ep))
    else:
        d_exp = max(1, d // moe_ep) if moe_experts > 0 else d
    we, ge, oe = model_state_bytes_per_parameter(d_exp * copies, zero_stage=zero_stage,
                                                 grad_bytes=grad_bytes, optimizer_bytes=opt_b)
    fp8_extra = 1.0 if precision == "fp8" else 0.0

    tokens = micro_batch * seq_len / cp
    act_kw: dict[str, Any] = dict(heads=heads, kv_heads=kv_heads, seq_len=seq_len, tp=tp,
                                  cp=cp, gated_mlp=gated_mlp,
                                  sequence_parallel=sequence_parallel,
                                  flash_attention=flash_attention)
    if mla:
        act_kw["attention_width"] = mla_activation_width(
            heads=heads, q_lora_rank=mla_q_lora_rank, kv_lora_rank=mla_kv_lora_rank,
            qk_nope_head_dim=mla_qk_nope_head_dim, qk_rope_head_dim=mla_qk_rope_head_dim,
            v_head_dim=mla_v_head_dim, tp=tp)
    # a layer's MLP: one expert's inner size in MoE layers, the dense one otherwise
    Fl = int(Fe) if moe_experts > 0 else ffn_hidden
    a_tok = activation_bytes_per_token_layer(hidden=hidden, ffn_hidden=Fl,
                                             recompute=activation_recompute, **act_kw)
    # the routed copies' permuted h-wide inputs, kept by the experts' first linear layer: k c
    # etp/tp copies per token (module doc); 0 for a dense model
    dispatch = 2.0 * h * moe_copies * etp / tp if moe_experts > 0 else 0.0
    if moe_experts > 0 and activation_recompute != "full":
        # expert MLP activations for top_k x capacity routed copies instead of one MLP: a
        # GPU computes k c etp/tp copies per token of mats F/etp each, so etp drops out
        a_tok += 2.0 * mats * Fe / tp * (moe_copies - 1.0)
        if Fs:  # shared experts on every token, TP-split
            a_tok += 2.0 * mats * Fs / tp
    if activation_recompute in ("none", "selective"):  # else rebuilt with the layer
        a_tok += dispatch
    a_full = activation_bytes_per_token_layer(hidden=hidden, ffn_hidden=Fl, recompute="none",
                                              **act_kw) + dispatch
    nd = moe_dense_layers if moe_experts > 0 else 0
    if nd:  # the first layers' dense MLP of ffn_hidden
        a_dense = activation_bytes_per_token_layer(hidden=hidden, ffn_hidden=ffn_hidden,
                                                   recompute=activation_recompute, **act_kw)
        a_full = max(a_full, activation_bytes_per_token_layer(
            hidden=hidden, ffn_hidden=ffn_hidden, recompute="none", **act_kw))
    if savings:  # DeepSeek-V3's kept tensors, tensor by tensor (none / selective recompute)
        sv_kw: dict[str, Any] = dict(
            hidden=hidden, heads=heads, kv_heads=kv_heads, seq_len=seq_len, tp=tp, cp=cp,
            sequence_parallel=sequence_parallel, flash_attention=flash_attention,
            recompute=activation_recompute, gated_mlp=gated_mlp,
            recompute_norms_mla_up=bool(recompute_norms_mla_up),
            fp8_cached_linear_inputs=bool(fp8_cached_linear_inputs),
            mla_dims=(mla_q_lora_rank, mla_kv_lora_rank, mla_qk_nope_head_dim,
                      mla_qk_rope_head_dim, mla_v_head_dim) if mla else None)
        if moe_experts > 0:
            a_tok = saved_bytes_per_token_layer(
                routed_ffn_hidden=Fe, routed_copies=moe_copies, shared_ffn_hidden=Fs,
                dispatched_copies=moe_copies * etp / tp, **sv_kw)
        else:
            a_tok = saved_bytes_per_token_layer(dense_ffn_hidden=ffn_hidden, **sv_kw)
        if nd:
            a_dense = saved_bytes_per_token_layer(dense_ffn_hidden=ffn_hidden, **sv_kw)
    # one MTP module's saved activations a token: its layer's and the projection's 2h input
    # (each m of the layout; until HU3 the layout path counted mtp_depth of them per m)
    a_mtp = a_tok + 2.0 * 2.0 * h / (tp if sequence_parallel else 1)
    if mla:  # ring attention passes the per-head keys and values
        cp_kv = 8.0 * heads * (d_qk + mla_v_head_dim) / 2.0 / tp * tokens if cp > 1 else 0.0
    else:
        cp_kv = 8.0 * 2.0 * hkv / tp * tokens if cp > 1 else 0.0

    # where the layers sit: each rank's chunks from the layout, else the even split written as
    # one (even_pipeline_layout: lps a rank, lps / vpp a chunk; Megatron-core gives chunk v of
    # rank r the layers [(v pp + r) lpc, (v pp + r + 1) lpc),
    # transformer_layer.get_transformer_layer_offset, so dense first layers fill chunk 0 of
    # ranks 0, 1, ... lpc at a time); one code path for both
    if layout is None:
        layout = even_pipeline_layout(pp=int(pp), vpp=int(vpp), layers=int(layers),
                                      mtp_depth=mtp)
    interleaved = vpp > 1 and pp > 1
    # pipeline ranks evaluated: every rank (DualPipe: one of each pair j, pp-1-j, which hold
    # the same two stages); one given rank with pipeline_rank
    if pipeline_rank is not None:
        if isinstance(pipeline_rank, bool) or int(pipeline_rank) != pipeline_rank \
                or not 0 <= pipeline_rank < pp:
            raise ValueError(f"pipeline_rank must be an integer in [0, pp={pp}), got "
                             f"{pipeline_rank!r}")
        ranks = [int(pipeline_rank)]
    else:
        ranks = list(range(pp // 2 if dualpipe else pp))

    lsum = layout.rank_counts()  # per rank: E, t, m, L
    l_dense = layout.dense_layers(nd)  # (pp, vpp)
    sp_div = tp if sequence_parallel else 1

    def layout_params(j: int) -> tuple[float, float]:
        """Rank ``j``'s (dense-side, expert) parameters per GPU [-] from its chunks: its
        decoder layers, the input embedding and the output layer where E and L sit, a dense
        MLP in place of the shared experts, router and routed experts of its dense layers, and
        each MTP module's layer, 2h x h projection and two RMSNorms."""
        e_j, t_j, m_j, l_j = (float(x) for x in lsum[j])
        nd_j = float(l_dense[j].sum())
        p_dense = t_j * p_layer_tp + (e_j + l_j) * p_embed
        p_exp = (t_j - nd_j) * expert_params / (tp if moe_experts > 0 else 1)
        if nd_j:
            p_dense += nd_j * (mats * h * F - dense_mlp) / tp
        if m_j:
            p_dense += m_j * (p_layer_tp + (2.0 * h * h + 2.0 * h) / tp)
            p_exp += m_j * expert_params / (tp if moe_experts > 0 else 1)
        return p_dense, p_exp

    def layout_chunk_bytes(j: int) -> np.ndarray:
        """Saved bytes per token and micro-batch of each of rank ``j``'s chunks [B]: its
        MoE and dense layers, MTP modules and the embedding output where E sits."""
        c = layout.counts[j]
        d = l_dense[j]
        out = (c[:, DECODER] - d) * a_tok + c[:, MTP] * a_mtp + c[:, EMBED] * 2.0 * h / sp_div
        return out + d * a_dense if nd else out

    def layout_states(j: int) -> tuple[float, float, float]:
        p_dense, p_exp = layout_params(j)
        return (p_dense * (w_b + fp8_extra) + p_exp * (we + fp8_extra),
                p_dense * g_b + p_exp * ge, p_dense * o_b + p_exp * oe)

    def logits_of(j: int) -> float:  # the output layer's and each MTP module's logits
        return float(lsum[j, LOSS] + lsum[j, MTP]) * 6.0 * tokens * vocab / tp

    stages = {}
    for j in ranks:
        if dualpipe:
            # rank j holds stage s = min(j, pp-1-j) and stage pp-1-s (DualPipe's two modules):
            # both stages' weights, gradients and optimizer states (over 2 d ranks, above); the
            # schedule's peak (DualPipe.step, stepped chunk by chunk in
            # tests/compute/test_memory_dualpipe.py) holds pp - s micro-batches of stage s and
            # s + 1 of stage pp-1-s at once, pp + 1 in all on every rank, each stage as many as
            # its index holds under 1F1B; DualPipe.step's m >= 2 pp (m/2 a direction >= pp)
            # means the step's micro-batches never cap it
            s_near = min(j, pp - 1 - j)
            stage = f"stages {s_near + 1}+{pp - s_near}"
            weights = grads = optim = acts = logits = 0.0
            for s_j, held in ((s_near, pp - s_near), (pp - 1 - s_near, s_near + 1)):
                w_s, g_s, o_s = layout_states(s_j)
                weights += w_s
                grads += g_s
                optim += o_s
                acts += held * tokens * float(layout_chunk_bytes(s_j).sum())
                logits += logits_of(s_j)
        else:
            stage = ("only" if pp == 1 else "first" if j == 0 else "last" if j == pp - 1
                     else f"stage {j + 1}")
            weights, grads, optim = layout_states(j)
            per_chunk = layout_chunk_bytes(j)
            if interleaved:
                # each chunk at its own micro-batches in flight, the peak over the schedule
                # (interleaved_chunks_in_flight: the step model's op order and group, warm-up
                # 2 (pp - j - 1) + (vpp - 1) g forwards of a 1/vpp chunk and one more before the
                # first backward; capped at the step's micro-batches)
                counts = interleaved_chunks_in_flight(pp=pp, vpp=vpp, rank=j,
                                                      microbatches=microbatches)
                acts = tokens * float((counts @ per_chunk).max())
            else:  # 1F1B: pp - j micro-batches of the rank's (one or more) chunks in flight
                in_flight = float(pp - j)
                if microbatches is not None:
                    in_flight = min(in_flight, float(microbatches))
                acts = in_flight * tokens * float(per_chunk.sum())
            logits = logits_of(j)
        if zero_stage >= 3:  # gathered working set of the layers being computed
            weights += fsdp_prefetch_layers * (p_layer_tp + expert_params / tp) * 2.0
        if activation_recompute in ("full", "save_qkv_proj"):
            acts += tokens * a_full  # one layer rebuilt during its backward
        stages[stage] = MemoryBreakdown(weights=weights, gradients=grads, optimizer=optim,
                                        activations=acts, cp_kv=cp_kv, logits=logits,
                                        buffers=float(buffer_bytes), stage=stage)
    return max(stages.values(), key=lambda m: m.total)


def memory_fit_problem(mem: MemoryBreakdown, capacity_gib: float,
                       margin: float = MEMORY_MODEL_MARGIN) -> str | None:
    """``None`` if ``mem`` fits in a GPU of ``capacity_gib`` [GiB], else a one-line reason.

    A job is refused when even ``(1 - margin)`` of the estimate exceeds the capacity:
    the model's stated uncertainty (:data:`MEMORY_MODEL_MARGIN`), so a configuration
    that is published as running is never refused.
    """
    if mem.total * (1.0 - margin) <= capacity_gib * GIB:
        return None
    return (f"does not fit in GPU memory: needs {mem.describe_gib()} "
            f"per GPU, the GPU has {capacity_gib:g} GiB")


def memory_limit_gib(capacity_gib: float, margin: float = MEMORY_MODEL_MARGIN) -> float:
    """Largest estimate [GiB] accepted on a GPU of ``capacity_gib`` [GiB]:
    ``capacity / (1 - margin)`` (92.5 GiB on an 80 GiB GPU at the fitted margin)."""
    return capacity_gib / (1.0 - margin)


def memory_margin_note(mem: MemoryBreakdown, capacity_gib: float,
                       margin: float = MEMORY_MODEL_MARGIN) -> str | None:
    """One line when the estimate exceeds the GPU's capacity yet is accepted, else ``None``.

    Accepted means within :func:`memory_limit_gib`: the margin is fitted so that no
    configuration published as running is refused, so an estimate between the capacity
    and that limit is a layout at the edge of fitting, which the user should be told
    about rather than shown a total above the GPU without comment.  ``None`` when the
    estimate fits outright, and when it is refused (:func:`memory_fit_problem` says why).
    """
    total_gib = mem.total / GIB
    limit_gib = memory_limit_gib(capacity_gib, margin)
    if total_gib <= capacity_gib or memory_fit_problem(mem, capacity_gib, margin) is not None:
        return None
    return (f"the estimate, {total_gib:.1f} GiB per GPU, is above the GPU's {capacity_gib:g} GiB "
            f"({total_gib / capacity_gib:.3f}x) but within the memory model's margin, so it is "
            f"accepted: MEMORY_MODEL_MARGIN = {margin:g} is fitted so that no configuration "
            f"published as running is refused (they estimate up to {1 / (1 - margin):.3f}x "
            f"their GPU's memory), and only estimates above {limit_gib:.1f} GiB are refused; "
            f"this layout may not fit")

