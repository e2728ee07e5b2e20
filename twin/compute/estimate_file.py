"""The estimate file: one training job on one cluster, for ``twin estimate step``.

A YAML file with four sections, every field overridable with ``--set dotted.path=value``
(see ``scenarios/estimates/llama31_70b_bf16_64gpu.yaml``)::

    name: llama31_70b_bf16_64gpu
    model:        {layers, hidden, ffn_hidden, heads, kv_heads, vocab, gated_mlp,
                   experts, top_k, capacity_factor, routing, expert_ffn_hidden, shared_experts,
                   shared_expert_ffn_hidden, dense_layers, mla_q_lora_rank, mla_kv_lora_rank,
                   mla_qk_nope_head_dim, mla_qk_rope_head_dim, mla_v_head_dim, node_limit,
                   mtp_depth}
    training:     {seq_len, global_batch, micro_batch, precision, activation_recompute,
                   zero_stage, fsdp_shard, grad_reduce_dtype, recompute_norms_mla_up,
                   fp8_cached_linear_inputs, adam_moment_dtype, moe_dispatch_dtype}
    parallelism:  {tp, pp, cp, vpp, ep, moe_expert_tp, pipeline_schedule, pipeline_layout}
    cluster:
      gpus, gpus_per_node, deployment, clock_fraction
      gpu:    {peak_bf16_tflops, peak_fp8_tflops, hbm_bw_tb_s, nvlink_gb_s, nvls, nvswitch,
               pcie_gb_s, kernel_efficiency, compute_capability}
      fabric: {kind, su_nodes, rails, link_gbps, switch_ports, oversubscription,
               tor_uplinks_per_spine, spines, transport, inter_node_gbps, hops, nics_per_node}
    reference:    {step_time_s, mfu, tokens_per_s_per_gpu, source}   # optional

``parallelism.moe_expert_tp`` (Megatron-core's expert tensor parallel size, 1 or ``tp``;
null = the experts split over ``tp``) folds the expert groups over a stage's tp x cp x dp
ranks; etp x ep must divide them (Megatron-core's ``initialize_model_parallel``).
``parallelism.pipeline_schedule`` (``1f1b``, ``interleaved``, ``dualpipe``; null = the one
``vpp`` implies, interleaved when ``vpp`` > 1) picks the step model's pipeline schedule
(:func:`twin.compute.step_estimate`); ``dualpipe`` (DeepSeek-V3's bidirectional schedule)
needs an even ``pp``, ``vpp`` 1, an even number of micro-batches of at least ``2 pp`` and
``zero_stage`` below 3; the memory model then counts two stages a rank (both parameter
copies, their states over twice the data-parallel ranks) and PP + 1 micro-batches in flight.
``parallelism.pipeline_layout`` (Megatron-core's ``--pipeline-model-parallel-layout``: pp x vpp
virtual stages split by ``|``, ``E`` embedding, ``t`` decoder layer, ``m`` MTP layer, ``L`` loss,
``X*n`` repeats, e.g. Llama 3 405B's ``E|(t|)*126,L`` at pp 16, vpp 8; null = the even split)
places the layers for the step and memory models (:mod:`twin.compute.pipeline_layout`); a
layout the parser refuses, or with another stage count than pp x vpp, is a problem naming the
field.  With a layout ``layers`` need not be a multiple of ``pp x vpp``.
``training.recompute_norms_mla_up``, ``training.fp8_cached_linear_inputs`` (precision fp8)
and ``training.adam_moment_dtype`` (bf16: 2 B AdamW moments) are DeepSeek-V3's memory
savings (:func:`twin.compute.memory.memory_per_gpu_bytes`); they move the memory estimate
only (false / fp32: the former one).
``model.routing`` and the DeepSeek-style shape (``expert_ffn_hidden``, ``shared_experts``,
``shared_expert_ffn_hidden``, ``dense_layers``, the five ``mla_*`` ranks of multi-head latent
attention) go to the step and memory models under their ``moe_*`` / ``mla_*`` names
(:class:`twin.compute.specs.ModelSpec`); at their defaults the estimate is the former one.
DeepSeek-V3's ``model.node_limit`` (node-limited routing: at most that many nodes of the
expert-parallel group a token, IB once per node, NVLink forwarding; null: off),
``model.mtp_depth`` (multi-token prediction modules on the last stage; 0: none) and
``training.moe_dispatch_dtype`` (fp8: the expert dispatch in FP8 with 1x128-tile fp32 scales,
1 + 4/128 B an element, the combine bf16) go to :func:`twin.compute.step_estimate` (and
``mtp_depth`` to the memory model); at their defaults the estimate is the former one.
``fabric.inter_node_gbps`` / ``fabric.hops`` left null are computed by building the
fabric for ``gpus / gpus_per_node`` nodes and placing the job on the first nodes.
``gpu.compute_capability`` (sm x 10) and ``fabric.nics_per_node`` go to the collective
model (NCCL's Tree ceiling per channel, one channel per NIC); left null, the NICs are the
fabric's ``rails`` when the file states them, else one per GPU, and the generation is
guessed from the NVLink.
All models are frozen and forbid unknown keys, so a typo is an error, not a default.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from twin.compute import specs
from twin.compute.memory import MemoryBreakdown, memory_fit_problem
from twin.compute.pipeline_layout import parse_pipeline_layout
from twin.compute.specs import GpuSpec, ModelSpec, ParallelSpec, memory_per_gpu, step_time
from twin.compute.step import (
    COMPUTE_CAPABILITIES,
    KERNEL_EFFICIENCY,
    PIPELINE_SCHEDULES,
    StepEstimate,
    dualpipe_problems,
    expert_dp_unit,
    fabric_traffic_pattern,
    resolved_schedule,
    schedule_vpp_mismatch,
)

_Frac = Annotated[float, Field(gt=0.0, le=1.0)]
#: bytes per element of the expert dispatch: bf16, or FP8 with one fp32 scale per 1x128 tile
#: (DeepSeek-V3 arXiv 2412.19437 sec. 3.3.2 fine-grained quantization, sec. 3.3.4 dispatch)
MOE_DISPATCH_BYTES = {"bf16": 2.0, "fp8": 1.0 + 4.0 / 128.0}
#: bytes [B] of an AdamW moment element by ``adam_moment_dtype`` (fp32, or DeepSeek-V3's bf16
#: moments, arXiv 2412.19437 sec. 3.3.3)
ADAM_MOMENT_BYTES = {"fp32": 4.0, "bf16": 2.0}
#: the C-accelerated safe loader when libyaml is there (same safety: no Python tags)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


class ModelShape(_Model):
    layers: PositiveInt
    hidden: PositiveInt
    ffn_hidden: PositiveInt = Field(description="MLP inner size (SwiGLU: per gate/up matrix)")
    heads: PositiveInt
    kv_heads: PositiveInt = Field(description="key/value heads (grouped-query attention)")
    vocab: PositiveInt
    gated_mlp: StrictBool = Field(True, description="SwiGLU (3 matrices); false = GeLU/ReLU^2 (2)")
    experts: Annotated[int, Field(ge=0)] = Field(
        0, description="mixture of experts: experts per layer (ffn_hidden is one expert's); "
                       "0 = dense")
    top_k: PositiveInt = Field(2, description="experts each token is routed to")
    capacity_factor: PositiveFloat = Field(
        1.0, description="an expert's token capacity over its even share (padded work)")
    routing: Literal["capacity", "dropless"] = Field(
        "capacity", description="capacity: every expert padded to capacity_factor x its share; "
                                "dropless: no capacity, the busiest expert-parallel rank carries "
                                "MOE_DROPLESS_BUSIEST_LOAD x its even share")
    expert_ffn_hidden: Annotated[StrictInt, Field(ge=1)] | None = Field(
        None, description="a routed expert's inner size (DeepSeek moe_intermediate_size); null = "
                          "ffn_hidden, which then sizes the dense layers' MLP")
    shared_experts: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="shared experts every token passes through (DeepSeek n_shared_experts)")
    shared_expert_ffn_hidden: Annotated[StrictInt, Field(ge=1)] | None = Field(
        None, description="a shared expert's inner size; null = the routed expert's")
    dense_layers: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="first layers with a dense MLP of ffn_hidden (DeepSeek "
                       "first_k_dense_replace)")
    mla_q_lora_rank: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="multi-head latent attention: query latent rank (0 = no query "
                       "compression)")
    mla_kv_lora_rank: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="multi-head latent attention: key/value latent rank (0 = no MLA)")
    mla_qk_nope_head_dim: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="MLA: per-head query/key size without rotary embedding")
    mla_qk_rope_head_dim: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="MLA: per-head query/key size with rotary embedding")
    mla_v_head_dim: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="MLA: per-head value size")
    node_limit: Annotated[StrictInt, Field(ge=1)] | None = Field(
        None, description="DeepSeek-V3 node-limited routing: nodes of the expert-parallel "
                          "group a token's experts may span (config topk_group); the dispatch "
                          "crosses IB once a node and forwards over NVLink; null = off")
    mtp_depth: Annotated[StrictInt, Field(ge=0)] = Field(
        0, description="multi-token prediction modules on the last stage (DeepSeek-V3 "
                       "num_nextn_predict_layers); 0 = none")


#: the mixture-of-experts fields of :class:`ModelShape` beyond experts / top_k /
#: capacity_factor, with the value that leaves them out (the fields a dense model refuses)
MOE_SHAPE_DEFAULTS = {"routing": "capacity", "expert_ffn_hidden": None, "shared_experts": 0,
                      "shared_expert_ffn_hidden": None, "dense_layers": 0}
#: the multi-head latent attention fields of :class:`ModelShape`
MLA_FIELDS = ("mla_q_lora_rank", "mla_kv_lora_rank", "mla_qk_nope_head_dim",
              "mla_qk_rope_head_dim", "mla_v_head_dim")


def shape_problems(m: Any, prefix: str = "model.") -> list[str]:
    """Cross-field problems of the mixture-of-experts and multi-head latent attention fields
    of a model shape (an estimate file's or a scenario job's: they share the names), each
    ``"<prefix><field> = value ..."``: MoE fields on a dense model, dense_layers not below
    layers, shared_expert_ffn_hidden without shared experts, MLA head dims below 1 with
    mla_kv_lora_rank > 0 or MLA fields without it (:func:`twin.compute.step_estimate`'s own
    rules, said with the file's names)."""
    out = []
    if m.experts == 0:
        for name, off in MOE_SHAPE_DEFAULTS.items():
            v = getattr(m, name)
            if v != off:
                out.append(f"{prefix}{name} = {v!r} needs a mixture of experts "
                           f"({prefix}experts > 0)")
    if m.dense_layers >= m.layers:
        out.append(f"{prefix}dense_layers = {m.dense_layers} must be below {prefix}layers = "
                   f"{m.layers}")
    if m.shared_expert_ffn_hidden is not None and m.shared_experts == 0:
        out.append(f"{prefix}shared_expert_ffn_hidden = {m.shared_expert_ffn_hidden} needs "
                   f"{prefix}shared_experts > 0")
    if m.mla_kv_lora_rank:
        for name in MLA_FIELDS[2:]:
            if getattr(m, name) < 1:
                out.append(f"{prefix}{name} = {getattr(m, name)} must be >= 1 with multi-head "
                           f"latent attention ({prefix}mla_kv_lora_rank > 0)")
    else:
        for name in (MLA_FIELDS[0],) + MLA_FIELDS[2:]:
            if getattr(m, name):
                out.append(f"{prefix}{name} = {getattr(m, name)} needs multi-head latent "
                           f"attention ({prefix}mla_kv_lora_rank > 0)")
    return out


class Training(_Model):
    seq_len: PositiveInt = Field(description="tokens per sequence")
    global_batch: PositiveInt = Field(description="sequences per optimizer step")
    micro_batch: PositiveInt = 1
    precision: Literal["bf16", "fp8"] = "bf16"
    activation_recompute: Literal["none", "selective", "save_qkv_proj", "full"] = "none"
    zero_stage: Literal[0, 1, 2, 3] = Field(
        1, description="1 = Megatron distributed optimizer (ZeRO-1); 3 = FSDP / ZeRO-3")
    fsdp_shard: PositiveInt | None = Field(
        None, description="ZeRO-3 shard group size [ranks]; null = all data-parallel ranks")
    grad_reduce_dtype: Literal["fp32", "bf16"] = Field(
        "fp32", description="gradient buffer dtype (NeMo default fp32; its performance "
                            "recipes set bf16)")
    recompute_norms_mla_up: StrictBool = Field(
        False, description="DeepSeek-V3 (arXiv 2412.19437 sec. 3.2.3): RMSNorm and MLA "
                           "up-projection outputs recomputed in backward, not kept (memory "
                           "only); needs activation_recompute none or selective")
    fp8_cached_linear_inputs: StrictBool = Field(
        False, description="DeepSeek-V3 (sec. 3.3.3): Linear inputs cached in FP8 (attention "
                           "output E5M6, MoE SwiGLU inputs FP8 and its output recomputed, the "
                           "dispatched expert inputs FP8; memory only); needs precision fp8 and "
                           "activation_recompute none or selective")
    adam_moment_dtype: Literal["fp32", "bf16"] = Field(
        "fp32", description="AdamW first and second moments (DeepSeek-V3 sec. 3.3.3: bf16; "
                            "master weights fp32); memory only")
    moe_dispatch_dtype: Literal["bf16", "fp8"] = Field(
        "bf16", description="expert dispatch element, forward and backward (DeepSeek-V3 sec. "
                            "3.3.4: fp8 with an fp32 scale per 1x128 tile, 1 + 4/128 B); the "
                            "combine stays bf16; step model only")


class Parallelism(_Model):
    tp: PositiveInt = 1
    pp: PositiveInt = 1
    cp: PositiveInt = 1
    vpp: PositiveInt = Field(1, description="virtual pipeline stages per pipeline rank")
    ep: PositiveInt = Field(1, description="expert parallel ranks (from the data x context "
                                           "parallel group)")
    # strict: a YAML ``true`` is not a size
    moe_expert_tp: Annotated[StrictInt, Field(ge=1)] | None = Field(
        None, description="expert tensor parallel size (Megatron-core "
                          "--expert-tensor-parallel-size): 1 or tp, expert groups folded over "
                          "the tp x cp x dp ranks; null = experts split over tp, EP from the "
                          "data x context ranks")
    pipeline_schedule: Literal[PIPELINE_SCHEDULES] | None = Field(  # type: ignore[valid-type]
        None, description="pipeline schedule: 1f1b, interleaved (vpp > 1) or dualpipe "
                          "(DeepSeek-V3's bidirectional schedule: even pp, vpp 1, an even "
                          "number of micro-batches >= 2 pp, zero_stage 0-2; all-to-alls "
                          "overlapped); null = interleaved when vpp > 1, else 1f1b")
    pipeline_layout: StrictStr | None = Field(
        None, description="Megatron-core --pipeline-model-parallel-layout: pp x vpp virtual "
                          "stages split by |, E embedding, t decoder layer, m MTP layer, L loss, "
                          "X*n and (...)*n repeats, commas cosmetic; e.g. 'E|(t|)*126,L' (Llama 3 "
                          "405B, pp 16, vpp 8); null = ceil(layers / pp) decoder layers a rank")


class Gpu(_Model):
    peak_bf16_tflops: PositiveFloat = Field(description="dense BF16 peak [TFLOP/s]")
    peak_fp8_tflops: PositiveFloat | None = Field(None, description="dense FP8 peak [TFLOP/s]")
    hbm_bw_tb_s: PositiveFloat = Field(description="HBM bandwidth [TB/s]")
    nvlink_gb_s: PositiveFloat = Field(description="NVLink one-way per GPU [GB/s]")
    nvls: StrictBool = Field(description="NVSwitch in-switch reduction (NVLS)")
    nvswitch: StrictBool = Field(True, description="GPUs on an NVSwitch; false = NVLink pairs + PCIe")
    pcie_gb_s: PositiveFloat = Field(64.0, description="PCIe per direction per GPU [GB/s]")
    memory_gb: PositiveFloat = Field(
        80.0, description="HBM capacity as the datasheet quotes it [GiB]; a job that does "
                          "not fit is refused")
    kernel_efficiency: Literal[tuple(KERNEL_EFFICIENCY)] | None = Field(  # type: ignore[valid-type]
        None, description="per-kernel efficiency table; null = from the peak")
    compute_capability: Literal[COMPUTE_CAPABILITIES] | None = Field(  # type: ignore[valid-type]
        None, description="GPU generation, sm x 10 (80 A100, 90 H100, 100 B200; NVIDIA's CUDA "
                          "compute-capability table); null = guessed from the NVLink")


class FabricSpec(_Model):
    kind: Literal["rail_optimized", "clos", "fat_tree"] = "rail_optimized"
    su_nodes: PositiveInt = 32
    rails: PositiveInt = 8
    link_gbps: PositiveFloat = 400.0
    switch_ports: PositiveInt = 64
    oversubscription: Annotated[float, Field(ge=1.0)] = 1.0
    tor_uplinks_per_spine: PositiveInt = 2
    spines: PositiveInt | None = None
    transport: Literal["ib_rdma", "roce", "roce_host", "tcp"] = "ib_rdma"
    in_network_reduction: StrictBool = Field(False, description="switch all-reduce (IB SHARP)")
    inter_node_gbps: PositiveFloat | None = Field(
        None, description="per-node achievable bandwidth [Gb/s]; null = from the fabric")
    hops: Annotated[float, Field(ge=0.0)] | None = Field(
        None, description="switch hops between the job's nodes; null = from the fabric")
    nics_per_node: PositiveInt | None = Field(
        None, description="compute NICs per node (NCCL's Tree: one channel each); null = "
                          "rails when stated, else one per GPU")

    def nics(self) -> int | None:
        """NICs per node the collective model takes: ``nics_per_node``, else ``rails`` when
        the file states it (the fabric builds one NIC per rail), else None (one per GPU)."""
        if self.nics_per_node is not None:
            return self.nics_per_node
        return self.rails if "rails" in self.model_fields_set else None


class Cluster(_Model):
    gpus: PositiveInt
    gpus_per_node: PositiveInt = 8
    gpu: Gpu
    fabric: FabricSpec = FabricSpec()
    deployment: Literal["bare_metal", "container", "vm"] = "bare_metal"
    clock_fraction: _Frac = Field(1.0, description="slowest GPU's clock over nominal")


class Reference(_Model):
    step_time_s: PositiveFloat | None = None
    mfu: _Frac | None = None
    tokens_per_s_per_gpu: PositiveFloat | None = None
    source: str = ""


class EstimateFile(_Model):
    name: str
    description: str = ""
    model: ModelShape
    training: Training
    parallelism: Parallelism = Parallelism()
    cluster: Cluster
    reference: Reference | None = None


class EstimateFileError(ValueError):
    """Bad estimate file or override: ``problems`` is a list of one-line messages."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def apply_overrides(data: dict, overrides: list[str] | None) -> dict:
    """Apply ``dotted.path=value`` overrides (value parsed as YAML) to a copy of ``data``,
    with the scenario loader's one ``--set`` parser (list indices such as ``jobs.0.tp``
    included)."""
    from twin.errors import ScenarioError
    from twin.scenario.loader import apply_override, parse_override

    out = copy.deepcopy(data)
    problems = []
    for text in overrides or []:
        try:
            parts, value = parse_override(text)
            apply_override(out, parts, value)
        except ScenarioError as err:
            problems += [f"--set {text!r}: {p}" for p in err.problems]
    if problems:
        raise EstimateFileError(problems)
    return out


def parse_estimate(data: Any, file: str = "<estimate>") -> EstimateFile:
    """Validate a mapping as an :class:`EstimateFile`; one message per problem."""
    if not isinstance(data, dict):
        raise EstimateFileError([f"{file}: expected a mapping at the top level"])
    try:
        return EstimateFile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            path = ".".join(str(p) for p in err["loc"]) or "<root>"
            value = err.get("input")
            shown = "" if isinstance(value, dict) else f" = {value!r}"
            problems.append(f"{file}: {path}{shown}: {err['msg']}")
        raise EstimateFileError(problems) from None


def load_estimate(path: str | Path, overrides: list[str] | None = None) -> EstimateFile:
    """Read an estimate YAML file (safe loader), apply overrides, validate."""
    path = Path(path)
    try:
        data = yaml.load(path.read_text(), Loader=SAFE_LOADER)
    except OSError as exc:
        raise EstimateFileError([f"{path}: cannot read ({exc.strerror})"]) from None
    except yaml.YAMLError as exc:
        raise EstimateFileError([f"{path}: not valid YAML ({exc})"]) from None
    return parse_estimate(apply_overrides(data or {}, overrides), str(path))


def fabric_figures(cluster: Cluster, pattern: str = "ring") -> tuple[float, float]:
    """(inter_node_gbps per node, hops) of the job on the first nodes of its fabric, its
    traffic routed as ``pattern`` (:func:`twin.compute.step.fabric_traffic_pattern`)."""
    f = cluster.fabric
    if f.inter_node_gbps is not None and f.hops is not None:
        return f.inter_node_gbps, f.hops
    import numpy as np

    from twin.fabric import bottleneck_bandwidth_gbps, build_fabric, placement_hops

    n_nodes = max(1, -(-cluster.gpus // cluster.gpus_per_node))
    try:
        g = build_fabric(f.kind, n_nodes, gpus_per_node=cluster.gpus_per_node,
                         su_nodes=f.su_nodes, rails=f.rails, link_gbps=f.link_gbps,
                         switch_ports=f.switch_ports, oversubscription=f.oversubscription,
                         tor_uplinks_per_spine=f.tor_uplinks_per_spine, spines=f.spines)
    except ValueError as exc:
        raise EstimateFileError([f"cluster.gpus = {cluster.gpus} ({n_nodes} nodes): the "
                                 f"{f.kind} fabric cannot hold them: {exc}"]) from None
    nodes = np.arange(n_nodes)
    bw = f.inter_node_gbps if f.inter_node_gbps is not None else bottleneck_bandwidth_gbps(
        g, nodes, pattern=pattern)
    hops = f.hops if f.hops is not None else float(placement_hops(g, nodes)["max_hops"])
    return float(bw), float(hops)


def layout_problems(est: EstimateFile) -> list[str]:
    """Parallel-layout, mixture-of-experts and latent-attention problems, each naming the
    file's field."""
    c, m, t, p = est.cluster, est.model, est.training, est.parallelism
    out = []
    mp = p.tp * p.pp * p.cp
    if c.gpus % mp:
        out.append(f"{est.name}: cluster.gpus = {c.gpus} is not a multiple of "
                   f"parallelism.tp*pp*cp = {mp}")
        return out
    dpcp = c.gpus // mp * p.cp
    out += [f"{est.name}: {problem}" for problem in shape_problems(m)]
    if m.experts == 0:
        if m.node_limit is not None:
            out.append(f"{est.name}: model.node_limit = {m.node_limit} needs a mixture of "
                       "experts (model.experts > 0)")
        if t.moe_dispatch_dtype != "bf16":
            out.append(f"{est.name}: training.moe_dispatch_dtype = {t.moe_dispatch_dtype!r} "
                       "needs a mixture of experts (model.experts > 0)")
        if p.ep != 1:
            out.append(f"{est.name}: parallelism.ep = {p.ep} needs a mixture of experts "
                       "(model.experts > 0)")
        if p.moe_expert_tp is not None:
            out.append(f"{est.name}: parallelism.moe_expert_tp = {p.moe_expert_tp} needs a "
                       "mixture of experts (model.experts > 0)")
    else:
        if m.top_k > m.experts:
            out.append(f"{est.name}: model.top_k = {m.top_k} is more than model.experts = "
                       f"{m.experts}")
        if m.experts % p.ep:
            out.append(f"{est.name}: model.experts = {m.experts} is not a multiple of "
                       f"parallelism.ep = {p.ep}")
        unit = expert_dp_unit(tp=p.tp, cp=p.cp, ep=p.ep, moe_expert_tp=p.moe_expert_tp)
        if p.moe_expert_tp is None:
            if (dpcp // p.cp) % unit:
                out.append(f"{est.name}: parallelism.ep = {p.ep} does not divide the data x "
                           f"context parallel ranks ({dpcp})")
        else:
            # Megatron-core (parallel_state.initialize_model_parallel) requires the world
            # size to be a multiple of etp x ep x pp, i.e. etp x ep dividing a stage's
            # tp x cp x dp ranks; the step model takes etp = 1 or tp only
            etp = p.moe_expert_tp
            if etp not in (1, p.tp):
                out.append(f"{est.name}: parallelism.moe_expert_tp = {etp} must be 1 or "
                           f"parallelism.tp = {p.tp}")
            elif (dpcp // p.cp) % unit:
                out.append(f"{est.name}: parallelism.moe_expert_tp x ep = {etp * p.ep} does "
                           f"not divide the tensor x context x data parallel ranks "
                           f"({dpcp * p.tp})")
    sched = resolved_schedule(p.pipeline_schedule, p.vpp)
    if schedule_vpp_mismatch(sched, p.vpp):
        out.append(f"{est.name}: parallelism.pipeline_schedule = {sched} "
                   + ("needs parallelism.vpp > 1" if sched == "interleaved" else
                      f"needs parallelism.vpp = 1, got {p.vpp}"))
    if sched == "dualpipe":  # deepseek-ai/DualPipe's DualPipe.step assertions
        dp = dpcp // p.cp
        mb = t.global_batch // (dp * t.micro_batch)
        said = {
            "pp": f"needs an even parallelism.pp, got {p.pp}",
            "microbatches": f"needs an even number of micro-batches >= 2 pp = {2 * p.pp}, got "
                            f"{mb} (training.global_batch / (dp x training.micro_batch))",
            "zero_stage": "is modelled with the distributed optimizer; training.zero_stage = 3 "
                          "is not"}
        whole = t.global_batch % (dp * t.micro_batch) == 0
        out += [f"{est.name}: parallelism.pipeline_schedule = dualpipe {said[rule]}"
                for rule, _ in dualpipe_problems(pp=p.pp, microbatches=mb if whole else None,
                                                 zero_stage=t.zero_stage)]
    if p.pipeline_layout is not None:
        try:
            parse_pipeline_layout(p.pipeline_layout, pp=p.pp, vpp=p.vpp, layers=m.layers,
                                  mtp_depth=m.mtp_depth)
        except ValueError as exc:   # the parser's message starts "pipeline_layout ..."
            out.append(f"{est.name}: parallelism.{exc}")
    for flag in ("recompute_norms_mla_up", "fp8_cached_linear_inputs"):
        if getattr(t, flag) and t.activation_recompute not in ("none", "selective"):
            out.append(f"{est.name}: training.{flag} describes what DeepSeek-V3 keeps without "
                       f"layer recompute; training.activation_recompute must be none or "
                       f"selective, got {t.activation_recompute}")
    if t.fp8_cached_linear_inputs and t.precision != "fp8":
        out.append(f"{est.name}: training.fp8_cached_linear_inputs needs training.precision "
                   f"= fp8, got {t.precision}")
    if t.fsdp_shard is not None and (t.zero_stage != 3 or dpcp % t.fsdp_shard):
        out.append(f"{est.name}: training.fsdp_shard = {t.fsdp_shard} needs "
                   f"training.zero_stage = 3 and must divide the data x context parallel "
                   f"ranks ({dpcp})")
    return out


def job_specs(est: EstimateFile) -> tuple[ModelSpec, ParallelSpec, GpuSpec]:
    """The model, parallelism and GPU records (:mod:`twin.compute.specs`) of an estimate
    file's job (the fabric record needs :func:`fabric_figures`)."""
    c, m, t, p = est.cluster, est.model, est.training, est.parallelism
    ke = KERNEL_EFFICIENCY[c.gpu.kernel_efficiency] if c.gpu.kernel_efficiency else None
    model = ModelSpec.of(m)
    par = ParallelSpec(tp=p.tp, pp=p.pp, cp=p.cp, vpp=p.vpp, ep=p.ep,
                       moe_expert_tp=p.moe_expert_tp, pipeline_schedule=p.pipeline_schedule,
                       pipeline_layout=p.pipeline_layout, seq_len=t.seq_len,
                       global_batch=t.global_batch, micro_batch=t.micro_batch,
                       precision=t.precision, activation_recompute=t.activation_recompute,
                       zero_stage=t.zero_stage, fsdp_shard=t.fsdp_shard,
                       grad_bytes=4.0 if t.grad_reduce_dtype == "fp32" else 2.0,
                       recompute_norms_mla_up=t.recompute_norms_mla_up,
                       fp8_cached_linear_inputs=t.fp8_cached_linear_inputs,
                       adam_moment_bytes=ADAM_MOMENT_BYTES[t.adam_moment_dtype],
                       moe_dispatch_bytes=MOE_DISPATCH_BYTES[t.moe_dispatch_dtype])
    gpu = GpuSpec(peak_bf16_tflops=c.gpu.peak_bf16_tflops, peak_fp8_tflops=c.gpu.peak_fp8_tflops,
                  hbm_bw_tb_s=c.gpu.hbm_bw_tb_s, nvlink_gb_s=c.gpu.nvlink_gb_s, nvls=c.gpu.nvls,
                  nvswitch=c.gpu.nvswitch, pcie_gb_s=c.gpu.pcie_gb_s,
                  gpus_per_node=c.gpus_per_node, memory_gb=c.gpu.memory_gb,
                  kernel_efficiency=ke, compute_capability=c.gpu.compute_capability)
    return model, par, gpu


def memory_from_file(est: EstimateFile) -> MemoryBreakdown:
    """Per-GPU memory of the job (:func:`twin.compute.specs.memory_per_gpu`)."""
    problems = layout_problems(est)
    if problems:
        raise EstimateFileError(problems)
    model, par, gpu = job_specs(est)
    try:
        return memory_per_gpu(model, par, gpu, gpus=est.cluster.gpus)
    except ValueError as exc:
        raise EstimateFileError([f"{est.name}: {exc}"]) from None


def estimate_from_file(est: EstimateFile) -> StepEstimate:
    """Run :func:`twin.compute.specs.step_time` on a validated estimate file.

    A job that does not fit in ``cluster.gpu.memory_gb`` is an :class:`EstimateFileError`
    naming the capacity and the breakdown.
    """
    c, t, p = est.cluster, est.training, est.parallelism
    problem = memory_fit_problem(memory_from_file(est), c.gpu.memory_gb)
    if problem:
        raise EstimateFileError([f"{est.name}: tp={p.tp} pp={p.pp} cp={p.cp} on {c.gpus} GPUs "
                                 f"{problem} (cluster.gpu.memory_gb)"])
    if t.precision == "fp8" and c.gpu.peak_fp8_tflops is None:
        raise EstimateFileError(["cluster.gpu.peak_fp8_tflops: needed for precision fp8"])
    m = est.model
    bw, hops = fabric_figures(c, fabric_traffic_pattern(
        experts=m.experts, ep=p.ep, tp=p.tp, cp=p.cp, moe_expert_tp=p.moe_expert_tp,
        gpus_per_node=c.gpus_per_node))
    fabric = specs.FabricSpec(inter_node_gbps=bw, transport=c.fabric.transport, hops=hops,
                              nics_per_node=c.fabric.nics())
    model, par, gpu = job_specs(est)
    try:
        return step_time(model, par, gpu, fabric, gpus=c.gpus, clock_fraction=c.clock_fraction,
                         deployment=c.deployment)
    except ValueError as exc:
        raise EstimateFileError([f"{est.name}: {exc}"]) from None
