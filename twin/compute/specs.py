"""Typed records of one training job, and the one call of the step and memory models.

The physics (:func:`twin.compute.step.step_estimate`,
:func:`twin.compute.memory.memory_per_gpu_bytes`) are pure functions of numbers.  Every
caller that starts from a description of a job (a scenario job through
:mod:`twin.plant`, an estimate file, the fabric study) builds four records instead and
calls :func:`step_time` / :func:`memory_per_gpu`, so the long keyword list of the physics
is written here once:

* :class:`ModelSpec`: the network's shape (dense or mixture of experts);
* :class:`ParallelSpec`: how the job is split and run (tensor, pipeline, context, expert
  parallelism, batch, precision, recompute, optimizer sharding);
* :class:`GpuSpec`: a node's GPUs, their generation and their NVLink domain;
* :class:`FabricSpec`: the fabric as the job's placement sees it (per-node bandwidth,
  the NICs that carry it, transport, switch hops).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from twin.compute.memory import MemoryBreakdown, memory_per_gpu_bytes
from twin.compute.step import (
    KernelEfficiency,
    StepEstimate,
    moe_parameter_counts,
    parameter_count,
    step_estimate,
)

#: Activation recompute choices, the one list the step model, the memory model and the
#: estimate file's schema accept: nothing, the attention core ("selective", Korthikanti
#: et al. 2022), all but the QKV projection (MaxText's ``save_qkv_proj`` remat policy),
#: the whole layer ("full").  (step.py and memory.py import it where they check, since
#: this module imports them.)
RECOMPUTE_CHOICES = ("none", "selective", "save_qkv_proj", "full")


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a decoder transformer.

    ffn_hidden is one MLP's inner size (one expert's for a mixture of experts); gated_mlp
    marks SwiGLU (three ``h x F`` matrices) against a two-matrix GeLU / ReLU^2 MLP.
    experts > 0 makes every MLP a mixture of ``experts`` experts, each token routed to
    ``top_k`` of them, an expert computing at most ``capacity_factor`` times its even share.

    routing: "capacity" (the padded share above) or "dropless" (the busiest expert-parallel
    rank carries :data:`twin.compute.step.MOE_DROPLESS_BUSIEST_LOAD` times its even share).
    DeepSeek-style terms (DeepSeek-V2 arXiv 2405.04434, V3 arXiv 2412.19437; the names of
    their config.json in brackets), each off by default: expert_ffn_hidden, one routed
    expert's inner size (``moe_intermediate_size``; None: ``ffn_hidden``, which then sizes the
    dense layers' MLP); shared_experts, experts every token passes through
    (``n_shared_experts``), each of shared_expert_ffn_hidden (None: the expert size);
    dense_layers, the first layers with a dense MLP (``first_k_dense_replace``); multi-head
    latent attention when mla_kv_lora_rank > 0 (``q_lora_rank``, ``kv_lora_rank``,
    ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``).
    DeepSeek-V3's routing and MTP (arXiv 2412.19437), off by default: node_limit, the nodes a
    token's experts may span (sec. 3.2.2, the config's ``topk_group`` with ``n_group`` = the
    expert-parallel group's nodes; None or 0: off), which makes the expert all-to-all cross IB
    once per target node and forward over NVLink; mtp_depth, multi-token prediction modules
    (sec. 2.2, ``num_nextn_predict_layers``; :func:`twin.compute.step_estimate`,
    :func:`twin.compute.memory.memory_per_gpu_bytes`).
    """

    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    vocab: int
    gated_mlp: bool = True
    experts: int = 0
    top_k: int = 2
    capacity_factor: float = 1.0
    routing: str = "capacity"
    expert_ffn_hidden: int | None = None
    shared_experts: int = 0
    shared_expert_ffn_hidden: int | None = None
    dense_layers: int = 0
    mla_q_lora_rank: int = 0
    mla_kv_lora_rank: int = 0
    mla_qk_nope_head_dim: int = 0
    mla_qk_rope_head_dim: int = 0
    mla_v_head_dim: int = 0
    node_limit: int | None = None
    mtp_depth: int = 0

    @classmethod
    def of(cls, shape) -> ModelSpec:
        """The record of a model shape that names its fields as this record does: an estimate
        file's ``model`` (:class:`twin.compute.estimate_file.ModelShape`) or a scenario job's
        (:class:`twin.scenario.schema.ModelShape`), both of which carry every field (a shape
        that lacks one is an ``AttributeError``, not a silent default)."""
        kw: dict[str, Any] = {f.name: getattr(shape, f.name) for f in fields(cls)}
        return cls(**kw)

    def parameters(self) -> float:
        """Parameters of the whole model [-]: :func:`twin.compute.step.parameter_count` for a
        dense model, the total of :func:`twin.compute.step.moe_parameter_counts` (every expert,
        shared experts, dense first layers, MLA) for a mixture of experts; with ``mtp_depth``
        MTP modules, each one more layer of the model's kind (the count with one layer more
        less the count without), its ``2h x h`` projection and two RMSNorms (``2h``), sharing
        the embedding and output head (DeepSeek-V3 report sec. 2.2).  What a checkpoint holds
        (:func:`twin.storage.checkpoint_bytes`)."""
        def count(layers: int) -> float:
            shape: dict[str, Any] = dict(layers=layers, hidden=self.hidden,
                                         ffn_hidden=self.ffn_hidden, heads=self.heads,
                                         kv_heads=self.kv_heads, vocab=self.vocab,
                                         gated_mlp=self.gated_mlp)
            if not self.experts:
                return parameter_count(**shape)
            return moe_parameter_counts(**shape, experts=self.experts, top_k=self.top_k,
                                        **self.deepseek_terms())[0]

        total = count(self.layers)
        if self.mtp_depth:
            h = self.hidden
            total += self.mtp_depth * (count(self.layers + 1) - total + 2.0 * h * h + 2.0 * h)
        return total

    def deepseek_terms(self) -> dict:
        """The DeepSeek-style shape as the keyword arguments of
        :func:`twin.compute.step_estimate` and :func:`twin.compute.memory.memory_per_gpu_bytes`
        (both name them alike)."""
        return dict(moe_ffn_hidden=self.expert_ffn_hidden, moe_shared_experts=self.shared_experts,
                    moe_shared_ffn_hidden=self.shared_expert_ffn_hidden,
                    moe_dense_layers=self.dense_layers, mla_q_lora_rank=self.mla_q_lora_rank,
                    mla_kv_lora_rank=self.mla_kv_lora_rank,
                    mla_qk_nope_head_dim=self.mla_qk_nope_head_dim,
                    mla_qk_rope_head_dim=self.mla_qk_rope_head_dim,
                    mla_v_head_dim=self.mla_v_head_dim)


@dataclass(frozen=True)
class ParallelSpec:
    """How a job is split and run.

    tp, pp, cp: tensor, pipeline, context parallel sizes; vpp: virtual stages per pipeline
    rank; ep: expert-parallel ranks (taken from the data x context group).
    moe_expert_tp: expert tensor parallel size (Megatron-core's
    ``--expert-tensor-parallel-size``, "MoE parallel folding"): None keeps the experts split
    over ``tp`` with EP taken from the data x context group; 1 or ``tp`` draws the expert
    groups over a stage's ``tp x cp x dp`` ranks in the order ETP, EP, expert-DP
    (:func:`twin.compute.step_estimate`, :func:`twin.compute.memory.memory_per_gpu_bytes`).
    seq_len
    [tokens], global_batch and micro_batch [sequences].  precision "bf16" or "fp8";
    activation_recompute one of :data:`RECOMPUTE_CHOICES`; zero_stage 1 (Megatron's
    distributed optimizer) or 3 (FSDP / ZeRO-3, shard group ``fsdp_shard`` ranks, None =
    all data x context ranks); grad_bytes [B] per gradient element (4: fp32 buffers);
    param_gather_bytes [B] per gathered parameter (2: bf16, 1: FP8 weights);
    tp_fp8_reduce_scatter: the forward tensor-parallel reduce-scatters carry FP8.
    pipeline_schedule: one of :data:`twin.compute.step.PIPELINE_SCHEDULES` ("1f1b",
    "interleaved", "dualpipe") or None, the schedule ``vpp`` implies (interleaved when
    ``vpp`` > 1, else 1F1B); goes to the step and the memory model (DualPipe: two stages a
    rank, PP + 1 micro-batches in flight).
    pipeline_layout: Megatron-core's ``--pipeline-model-parallel-layout`` string (``|``
    between the pp x vpp virtual stages, ``E`` embedding, ``t`` decoder layer, ``m`` MTP
    layer, ``L`` loss, ``X*n`` repeats; :mod:`twin.compute.pipeline_layout`) or None, the
    even split (``ceil(layers / pp)`` a rank); goes to the step and the memory model, which
    parse and check it.
    recompute_norms_mla_up, fp8_cached_linear_inputs, adam_moment_bytes [B]: DeepSeek-V3's
    memory savings (:func:`twin.compute.memory.memory_per_gpu_bytes`; off / 4 B: none); they
    go to the memory model only (the step model does not charge the recompute).
    moe_dispatch_bytes [B per element]: the expert dispatch's element size, forward and
    backward (2: bf16; DeepSeek-V3's FP8 dispatch with one fp32 scale per 1x128 tile: 1 +
    4/128); the combines stay bf16 (step model only).
    """

    tp: int
    pp: int
    cp: int
    vpp: int
    seq_len: int
    global_batch: int
    micro_batch: int = 1
    ep: int = 1
    moe_expert_tp: int | None = None
    precision: str = "bf16"
    activation_recompute: str = "none"
    zero_stage: int = 1
    fsdp_shard: int | None = None
    grad_bytes: float = 4.0
    param_gather_bytes: float = 2.0
    tp_fp8_reduce_scatter: bool = False
    pipeline_schedule: str | None = None
    recompute_norms_mla_up: bool = False
    fp8_cached_linear_inputs: bool = False
    adam_moment_bytes: float = 4.0
    moe_dispatch_bytes: float = 2.0
    pipeline_layout: str | None = None

    @property
    def model_parallel(self) -> int:
        """GPUs of one model replica's tensor x pipeline x context group."""
        return self.tp * self.pp * self.cp

    def data_parallel(self, gpus: int) -> int:
        """Data-parallel ranks of a job on ``gpus`` GPUs."""
        return gpus // self.model_parallel


@dataclass(frozen=True)
class GpuSpec:
    """A node's GPUs: dense peaks [TFLOP/s], HBM bandwidth [TB/s] and capacity [GiB],
    NVLink one way per GPU [GB/s], NVSwitch and in-switch reduction (NVLS), PCIe per
    direction [GB/s], GPUs per node, and the per-kernel efficiency table (None = from the
    peak).

    compute_capability [-]: the GPU generation, sm x 10 (80 A100, 90 H100/H200, 100 B200;
    NVIDIA's CUDA compute-capability table), which picks NCCL's per-channel Tree ceiling in
    the collective model; None = guessed from the NVLink
    (:func:`twin.compute.collectives.compute_capability_of`)."""

    peak_bf16_tflops: float
    peak_fp8_tflops: float | None
    hbm_bw_tb_s: float
    nvlink_gb_s: float
    nvls: bool
    nvswitch: bool = True
    pcie_gb_s: float = 64.0
    gpus_per_node: int = 8
    memory_gb: float = 80.0
    kernel_efficiency: KernelEfficiency | None = None
    compute_capability: int | None = None

    def peak_tflops(self, precision: str) -> float:
        """Dense peak [TFLOP/s] at the job's precision (fp8 or bf16)."""
        if precision == "fp8":
            if self.peak_fp8_tflops is None:
                raise ValueError("precision fp8 needs the GPU's peak_fp8_tflops")
            return self.peak_fp8_tflops
        return self.peak_bf16_tflops


@dataclass(frozen=True)
class FabricSpec:
    """The fabric as a job's placement sees it: achievable bandwidth per node [Gb/s] (all
    NICs; 0 = partitioned), transport (``ib_rdma``, ``roce``, ``roce_host``, ``tcp``)
    and switch hops [-] between the job's nodes.

    nics_per_node [-]: the compute NICs that carry ``inter_node_gbps`` (NCCL's classic Tree
    gets one channel per NIC, so a node with two GPUs per NIC has half the Tree ceiling);
    None = one NIC per GPU.  Here rather than on :class:`GpuSpec` because it describes the
    node's attachment to the fabric, beside the bandwidth it splits."""

    inter_node_gbps: float
    transport: str = "ib_rdma"
    hops: float = 4.0
    nics_per_node: int | None = None


def step_time(model: ModelSpec, par: ParallelSpec, gpu: GpuSpec, fabric: FabricSpec, *,
              gpus: int, clock_fraction=1.0, deployment: str = "bare_metal") -> StepEstimate:
    """One optimizer step of the job on ``gpus`` GPUs (:func:`twin.compute.step_estimate`).

    clock_fraction [-]: scalar or per-GPU array (the slowest GPU sets the pace);
    deployment: ``bare_metal``, ``container`` or ``vm``.
    """
    return step_estimate(
        layers=model.layers, hidden=model.hidden, ffn_hidden=model.ffn_hidden,
        heads=model.heads, kv_heads=model.kv_heads, vocab=model.vocab,
        gated_mlp=model.gated_mlp, seq_len=par.seq_len, global_batch=par.global_batch,
        micro_batch=par.micro_batch, tp=par.tp, pp=par.pp, cp=par.cp, vpp=par.vpp, gpus=gpus,
        gpus_per_node=gpu.gpus_per_node, peak_tflops=gpu.peak_tflops(par.precision),
        precision=par.precision, hbm_bw_tb_s=gpu.hbm_bw_tb_s, nvlink_gb_s=gpu.nvlink_gb_s,
        nvls=gpu.nvls, nvswitch=gpu.nvswitch, pcie_gb_s=gpu.pcie_gb_s,
        kernel_efficiency=gpu.kernel_efficiency, inter_node_gbps=fabric.inter_node_gbps,
        transport=fabric.transport, hops=fabric.hops,
        activation_recompute=par.activation_recompute, clock_fraction=clock_fraction,
        deployment=deployment, moe_experts=model.experts, moe_top_k=model.top_k,
        moe_ep=par.ep, moe_capacity_factor=model.capacity_factor,
        moe_expert_tp=par.moe_expert_tp, moe_routing=model.routing, **model.deepseek_terms(),
        moe_node_limit=model.node_limit, moe_dispatch_bytes=par.moe_dispatch_bytes,
        mtp_depth=model.mtp_depth, zero_stage=par.zero_stage, fsdp_shard=par.fsdp_shard, grad_bytes=par.grad_bytes,
        param_gather_bytes=par.param_gather_bytes, tp_fp8_reduce_scatter=par.tp_fp8_reduce_scatter,
        compute_capability=gpu.compute_capability, nics_per_node=fabric.nics_per_node,
        pipeline_schedule=par.pipeline_schedule, pipeline_layout=par.pipeline_layout)


def memory_per_gpu(model: ModelSpec, par: ParallelSpec, gpu: GpuSpec, *,
                   gpus: int) -> MemoryBreakdown:
    """Per-GPU memory [B] of the job on ``gpus`` GPUs
    (:func:`twin.compute.memory.memory_per_gpu_bytes`), with the software the GPU's
    kernel table describes (distributed optimizer, sequence parallel, flash attention;
    Megatron's defaults when the table is None)."""
    ke = gpu.kernel_efficiency
    dp = par.data_parallel(gpus)
    mb = par.global_batch // (dp * par.micro_batch) if par.global_batch >= dp * par.micro_batch else 1
    distributed = ke is None or ke.distributed_optimizer
    return memory_per_gpu_bytes(
        layers=model.layers, hidden=model.hidden, ffn_hidden=model.ffn_hidden,
        heads=model.heads, kv_heads=model.kv_heads, vocab=model.vocab,
        gated_mlp=model.gated_mlp, seq_len=par.seq_len, micro_batch=par.micro_batch,
        tp=par.tp, pp=par.pp, cp=par.cp, vpp=par.vpp, dp=dp, microbatches=mb,
        precision=par.precision, activation_recompute=par.activation_recompute,
        zero_stage=par.zero_stage if par.zero_stage != 1 or distributed else 0,
        moe_experts=model.experts, moe_ep=par.ep, moe_top_k=model.top_k,
        moe_capacity_factor=model.capacity_factor, moe_expert_tp=par.moe_expert_tp,
        moe_routing=model.routing if model.experts else "capacity",
        **model.deepseek_terms(), shard_ranks=par.fsdp_shard if par.zero_stage == 3 else None,
        grad_bytes=par.grad_bytes,
        sequence_parallel=ke.sequence_parallel if ke else True,
        flash_attention=ke.flash_attention if ke else True,
        pipeline_schedule=par.pipeline_schedule, pipeline_layout=par.pipeline_layout,
        recompute_norms_mla_up=par.recompute_norms_mla_up,
        fp8_cached_linear_inputs=par.fp8_cached_linear_inputs,
        adam_moment_bytes=par.adam_moment_bytes, mtp_depth=model.mtp_depth)
