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
  ``pp - (pp-1)/vpp`` (``(vpp - 1) pp + 1`` chunks) against 1 under 1F1B.
* **context-parallel KV**: ring attention double-buffers the K/V block it receives
  and, backward, the dK/dV it passes on: ``2 x 2 x 2 h_kv/tp x b s/cp x 2 B``.
* **logits**: the last stage's bf16 logits and the fp32 cross-entropy working set,
  ``6 b s/cp V/tp`` bytes; the first stage's embedding output ``2 b s/cp h``.
* **buffers**: CUDA context, cuBLAS/cuDNN workspaces, NCCL channel buffers and the
  caching allocator's fragmentation, a fixed ``buffer_bytes`` (2 GiB, engineering
  estimate: ~0.5 GB context, ~0.5-1 GB NCCL, the rest workspaces and fragments).

The worst of the first and the last pipeline stage is the job's figure; with dense first
layers (``moe_dense_layers``) also of every inner stage holding one and of the first inner
stage after them (all-MoE; later ones hold the same layers with fewer micro-batches in
flight), named ``"stage j"`` (1-based).  Layers sit where Megatron-core puts them
(``transformer_layer.get_transformer_layer_offset``): ``lps`` a rank without interleaving,
and with it virtual chunk ``v`` of rank ``r`` holds layers ``[(v pp + r) lpc, (v pp + r + 1)
lpc)``, ``lpc = lps / vpp``, so the dense layers fill chunk 0 of ranks 0, 1, ... ``lpc`` at a
time.  A rank whose chunks differ (dense and MoE layers) under interleaving is counted at
the peak of its chunks' own micro-batches in flight
(:func:`interleaved_chunks_in_flight`): early chunks hold more of them than late ones.
HBM sizes quoted in "GB" are GiB (H100 80 GB: 81,559 MiB in ``nvidia-smi``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: bytes per GiB
GIB = 2.0**30
#: fixed per-GPU overhead [B]: CUDA context, library workspaces, NCCL buffers,
#: allocator fragmentation (engineering estimate, see the module doc)
BUFFER_BYTES = 2.0 * GIB
#: Uncertainty of the estimate, fitted once: the largest ratio of estimate to capacity
#: among the published configurations that ran on 80 GB H100s (dgxc-benchmarking
#: NeMo 24.09/24.11 tables, tests/compute/test_memory.py): Nemotron-4 340B on 128
#: GPUs (TP8 PP8 VPP12, bf16 gradients) estimates 92.3 GiB against 80, ratio 1.154,
#: so 1 - 1/1.154 = 0.133, rounded up.
MEMORY_MODEL_MARGIN = 0.134
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


def interleaved_chunks_in_flight(*, pp: int, vpp: int, rank: int,
                                 microbatches: int | None = None) -> np.ndarray:
    """Micro-batches in flight on pipeline rank ``rank``, by model chunk, at each moment a
    forward has just run from the end of the warm-up on [-], shape ``(moments, vpp)``.

    Megatron-core's interleaved schedule (``schedules.py``: ``get_pp_rank_microbatches``,
    ``get_schedule_table``, ``forward_backward_pipelining_with_interleaving``) runs
    ``W = 2 (pp - rank - 1) + (vpp - 1) pp`` warm-up forwards (all ``m vpp`` if fewer), then
    forward ``W + k`` and backward ``k`` in each steady step.  Forward ``n`` runs chunk
    ``(n mod pp vpp) // pp`` (groups of ``pp`` micro-batches a chunk), backward ``n`` chunk
    ``vpp - 1 -`` that, so after ``n`` forwards and ``t`` backwards chunk ``v`` holds
    ``F_v(n) - B_v(t)`` micro-batches: ``F_v(n) = pp floor(n / pp vpp) + clip(n mod pp vpp -
    v pp, 0, pp)``, ``B_v(t)`` alike for chunk ``vpp - 1 - v``.  Each moment holds ``W + 1``
    chunks in all; the mix repeats every ``pp vpp`` steps, so one period is returned.  The
    cooldown only frees chunks.  Without interleaving (``vpp = 1``, or ``pp = 1``) one chunk,
    ``pp - rank`` micro-batches (1F1B), one with ``pp = 1``.  Never more than the step's
    ``microbatches`` of a chunk (None: the pipeline is full).  Assumes ``microbatches`` a
    multiple of ``pp`` (Megatron-core's default group size requires it).
    """
    m = microbatches
    if vpp == 1 or pp == 1:
        n = float(pp - rank)
        return np.array([[n if m is None else min(n, float(m))]])
    group = pp * vpp
    warmup = 2 * (pp - rank - 1) + (vpp - 1) * pp
    if m is not None and warmup >= m * vpp:  # every forward runs before the first backward
        return np.full((1, vpp), float(m))
    steps = group if m is None else min(group, m * vpp - warmup)
    t = np.arange(steps)[:, None]
    v = np.arange(vpp)[None, :]
    done = warmup + 1 + t
    fwd = pp * (done // group) + np.clip(done % group - v * pp, 0, pp)
    bwd = pp * (t // group) + np.clip(t % group - (vpp - 1 - v) * pp, 0, pp)
    if m is not None:
        fwd = np.minimum(fwd, m)
    return (fwd - bwd).astype(float)


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
    from twin.compute.step import _check_deepseek_terms  # step imports this module
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
        from twin.compute.specs import expert_dp_unit  # specs imports this module
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
    lps = math.ceil(layers / pp)
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
    # bf16 gradients: the optimizer keeps an fp32 copy of its gradient shard (Megatron)
    opt_b = 12.0 + (4.0 if grad_bytes < 4.0 else 0.0)
    w_b, g_b, o_b = model_state_bytes_per_parameter(d, zero_stage=zero_stage,
                                                    grad_bytes=grad_bytes, optimizer_bytes=opt_b)
    # expert weights are replicated over dp*cp/ep ranks only (EP takes ranks from DP);
    # folded (etp given): over the tp cp dp / (etp ep) expert-data-parallel ranks
    if moe_experts > 0 and moe_expert_tp is not None:
        d_exp = max(1, d * tp // (etp * moe_ep))
    else:
        d_exp = max(1, d // moe_ep) if moe_experts > 0 else d
    we, ge, oe = model_state_bytes_per_parameter(d_exp, zero_stage=zero_stage,
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
    if mla:  # ring attention passes the per-head keys and values
        cp_kv = 8.0 * heads * (d_qk + mla_v_head_dim) / 2.0 / tp * tokens if cp > 1 else 0.0
    else:
        cp_kv = 8.0 * 2.0 * hkv / tp * tokens if cp > 1 else 0.0

    # layers of a virtual chunk: Megatron-core gives chunk v of rank r the layers
    # [(v pp + r) lpc, (v pp + r + 1) lpc) (transformer_layer.get_transformer_layer_offset),
    # so dense first layers fill chunk 0 of ranks 0, 1, ... lpc at a time; without
    # interleaving the one chunk is the rank's lps layers
    interleaved = vpp > 1 and pp > 1
    lpc = lps / vpp if interleaved else float(lps)
    # pipeline ranks evaluated, by index: the first, every rank holding dense layers, the first
    # rank after them (an all-MoE rank with the most micro-batches in flight: later all-MoE
    # ranks hold the same layers and weights with fewer in flight, so they are never heavier)
    # and the last; one given rank with pipeline_rank
    if pipeline_rank is not None:
        if isinstance(pipeline_rank, bool) or int(pipeline_rank) != pipeline_rank \
                or not 0 <= pipeline_rank < pp:
            raise ValueError(f"pipeline_rank must be an integer in [0, pp={pp}), got "
                             f"{pipeline_rank!r}")
        ranks = [int(pipeline_rank)]
    else:
        # ranks j with a dense layer, j < nd / lpc (chunk 0 holds the rank's first ones)
        with_dense = -(-nd * vpp // lps) if interleaved else -(-nd // lps)
        ranks = sorted(set(range(min(with_dense + 1, pp))) | {pp - 1})
    stages = {}
    for j in ranks:
        stage = ("only" if pp == 1 else "first" if j == 0 else "last" if j == pp - 1
                 else f"stage {j + 1}")
        first = j == 0
        last = j == pp - 1
        p_dense = lps * p_layer_tp + (p_embed if first else 0.0) + (p_embed if last else 0.0)
        p_exp = lps * expert_params / (tp if moe_experts > 0 else 1)
        nd_s: float
        if interleaved and nd:  # dense layers in each of the rank's chunks
            d_chunk = np.clip(nd - (np.arange(vpp) * pp + j) * lpc, 0.0, lpc)
            nd_s = float(d_chunk.sum())
        else:  # the rank's share of the first nd layers, lps a rank (none: 0)
            nd_s = float(min(lps, max(0, nd - j * lps)))
        if nd_s:  # a dense MLP in place of the shared experts, router and routed experts
            p_dense += nd_s * (mats * h * F - dense_mlp) / tp
            p_exp = (lps - nd_s) * expert_params / tp
        weights = p_dense * (w_b + fp8_extra) + p_exp * (we + fp8_extra)
        if zero_stage >= 3:  # gathered working set of the layers being computed
            weights += fsdp_prefetch_layers * (p_layer_tp + expert_params / tp) * 2.0
        grads = p_dense * g_b + p_exp * ge
        optim = p_dense * o_b + p_exp * oe
        # micro-batches of the rank's layers in flight at its peak: Megatron-core's 1F1B
        # schedule runs pp - j - 1 warm-up forwards before its first backward, pp - j in
        # flight; the interleaved one (pp - j - 1) 2 + (vpp - 1) pp warm-up forwards of a 1/vpp
        # chunk and one more before its first backward, pp + (pp - 1 - 2j)/vpp micro-batches
        # (schedules.py, get_pp_rank_microbatches; j = 0: Korthikanti et al.'s first stage,
        # j = pp - 1: pp - (pp - 1)/vpp); never more than the step's micro-batches (its
        # m vpp chunks: the warm-up is capped at them)
        in_flight = pp + (pp - 1 - 2 * j) / vpp if vpp > 1 else float(pp - j)
        if microbatches is not None:
            in_flight = min(in_flight, float(microbatches))
        if interleaved and nd_s:
            # chunks differ (dense and MoE layers): the peak of the chunks' own counts in
            # flight, each chunk's micro-batches weighted by its layers
            per_chunk = (lpc - d_chunk) * a_tok + d_chunk * a_dense
            counts = interleaved_chunks_in_flight(pp=pp, vpp=vpp, rank=j,
                                                  microbatches=microbatches)
            acts = tokens * float((counts @ per_chunk).max())
        elif nd_s:
            acts = in_flight * tokens * ((lps - nd_s) * a_tok + nd_s * a_dense)
        else:
            acts = in_flight * lps * tokens * a_tok
        if activation_recompute in ("full", "save_qkv_proj"):
            acts += tokens * a_full  # one layer rebuilt during its backward
        if first:
            acts += 2.0 * tokens * h * in_flight / (tp if sequence_parallel else 1)
        logits = 6.0 * tokens * vocab / tp if last else 0.0
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
    ``capacity / (1 - margin)`` (92.4 GiB on an 80 GiB GPU at the fitted margin)."""
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

