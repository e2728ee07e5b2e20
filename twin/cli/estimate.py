"""``twin estimate``: step-time and collective estimates without running the simulation.

    twin estimate step FILE [--set dotted.path=value ...] [--job NAME] [--cluster SCENARIO]
                       [--pipeline-schedule 1f1b|interleaved|dualpipe] [--json]
    twin estimate collective --op allreduce|reduce_scatter|all_gather|all_to_all
                             --bytes N --nodes K [--gpus-per-node 8]
                             [--in-network-reduction] [--compute-capability CC]
                             [--nics-per-node N] [--cluster SCENARIO] [--json]
    twin estimate fabric-study [--nodes 128] [--seed 0] [--qps 4] [--json]

``FILE`` is an estimate file (:mod:`twin.compute.estimate_file`) or a scenario (then the
job ``--job NAME``, default the first, on the scenario's cluster).  ``--cluster SCENARIO``
takes the cluster (GPU, node, fabric, transport, deployment) from a scenario through
:data:`CLUSTER_LOADER`; the default loader reads the scenario with
``twin.scenario.load_scenario`` and the node catalog.  Without ``--cluster`` the
collective runs on the Blue Vela compute fabric (DGX H100 nodes, 8x NDR 400 Gb/s,
GPUDirect RDMA over InfiniBand).  The GPU generation (compute capability) and the NICs per
node, which set NCCL's classic Tree ceiling, come from the node catalog with ``--cluster``
(``gpu_compute_capability``, ``compute_nics``); ``--compute-capability`` and
``--nics-per-node`` override them.  With ``--cluster`` the job may use at most the nodes the
scenario delivers (its ramp's racks of its node model): ``--nodes`` or the estimate file's
``cluster.gpus`` above that is an error.

``twin estimate step`` reports the per-GPU memory of the most loaded pipeline stage.  An
estimate above the GPU's memory that the memory model's margin still accepts
(:data:`twin.compute.memory.MEMORY_MODEL_MARGIN`) comes with a ``memory_note`` saying so;
above the margin the job is refused (exit 2, naming the capacity and the breakdown).

Bad input exits 2 with one line per problem on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from twin.compute.collectives import OPS, bus_factor, collective_algorithm, collective_time_s
from twin.compute.estimate_file import (
    SAFE_LOADER,
    Cluster,
    EstimateFileError,
    FabricSpec,
    Gpu,
    estimate_from_file,
    fabric_figures,
    load_estimate,
    memory_from_file,
)
from twin.compute.memory import MEMORY_MODEL_MARGIN, memory_limit_gib, memory_margin_note
from twin.compute.step import COMPUTE_CAPABILITIES, PIPELINE_SCHEDULES, resolved_schedule

#: Blue Vela compute node and fabric (arXiv 2407.05467; NVIDIA H100 SXM datasheet).
BLUE_VELA_CLUSTER = Cluster(
    gpus=8, gpus_per_node=8,
    gpu=Gpu(peak_bf16_tflops=989, peak_fp8_tflops=1979, hbm_bw_tb_s=3.35, nvlink_gb_s=450,
            nvls=True, kernel_efficiency="h100_sxm", compute_capability=90),
    fabric=FabricSpec(kind="rail_optimized", su_nodes=32, rails=8, link_gbps=400,
                      switch_ports=64, transport="ib_rdma"),
)


def _has_nvswitch(node) -> bool:
    """Catalog field ``nvswitch`` if present, else: NVL / PCIe / L40S boards have none."""
    flag = getattr(node, "nvswitch", None)
    if flag is not None:
        return bool(flag)
    model = str(getattr(node, "gpu_model", "")).upper()
    return not any(tag in model for tag in ("NVL", "PCIE", "L40"))


def cluster_from_scenario(path: str, overrides: list[str] | None = None) -> Cluster:
    """Cluster of a scenario file: node model from the catalog, fabric, deployment.

    The hook the ``--cluster`` option calls (replace :data:`CLUSTER_LOADER` to change it).
    ``gpus`` is the scenario's size: the nodes of its node model that its ramp delivers,
    times GPUs per node.  It bounds ``--nodes`` and the estimate file's ``cluster.gpus``,
    which is the job's size in ``twin estimate step``.
    """
    from twin.catalog import node_model
    from twin.plant import node_nics
    from twin.scenario import load_scenario
    from twin.scenario.racks import delivered_nodes_by_model

    s = load_scenario(path, overrides)
    node = node_model(s.hardware.node_model)
    f = s.fabric
    g = int(node.gpu_count)
    nodes = delivered_nodes_by_model(s).get(s.hardware.node_model, 0)
    if nodes < 1:
        raise EstimateFileError([f"{path}: the ramp delivers no {s.hardware.node_model} nodes "
                                 "(hardware.node_model)"])
    return Cluster(
        gpus=nodes * g, gpus_per_node=g,
        gpu=Gpu(peak_bf16_tflops=node.gpu_peak_bf16_tflops,
                peak_fp8_tflops=getattr(node, "gpu_peak_fp8_tflops", None),
                hbm_bw_tb_s=node.gpu_hbm_bw_tb_s, nvlink_gb_s=node.nvlink_gb_s, nvls=node.nvls,
                nvswitch=_has_nvswitch(node), memory_gb=node.gpu_memory_gb,
                compute_capability=getattr(node, "gpu_compute_capability", None)),
        # the NIC count the engine's step_estimate_for takes (twin.plant.node_nics)
        fabric=FabricSpec(kind=f.kind, su_nodes=f.su_nodes, rails=f.rails, link_gbps=f.link_gbps,
                          switch_ports=f.switch_ports, oversubscription=f.oversubscription,
                          tor_uplinks_per_spine=f.tor_uplinks_per_spine, spines=f.spines,
                          transport=f.transport,
                          nics_per_node=node_nics(node, f)),
        deployment=s.hardware.deployment,
    )


def _job_index(data: Any, job: str | None) -> int | None:
    """Index in the merged scenario mapping's ``workload.jobs`` of the job ``twin estimate
    step`` estimates: the one named ``job``, else the first (as :func:`estimate_from_scenario`
    picks it); None when there is no such fixed job (a stream's or a trace's classes, or a
    name the loader will report)."""
    workload = data.get("workload") if isinstance(data, dict) else None
    jobs = workload.get("jobs") if isinstance(workload, dict) else None
    if not isinstance(jobs, list) or not jobs:
        return None
    if job is None:
        return 0
    for i, item in enumerate(jobs):
        if isinstance(item, dict) and item.get("name") == job:
            return i
    return None


def _schedule_set_conflict(flag: str, sets: list[str], names_the_field) -> None:
    """``--pipeline-schedule X`` overrides the file's schedule, but a ``--set`` of the same
    field to another schedule on the same command line is a contradiction, not a default to
    override: the last ``--set`` whose dotted path ``names_the_field(parts)`` accepts, if its
    value is another schedule, exits 2 naming both; null (the schedule vpp implies) is no
    schedule, so the flag sets it.  The one rule for estimate files
    (``parallelism.pipeline_schedule``) and scenarios (:func:`_load_with_schedule`)."""
    from twin.scenario.loader import parse_override

    last = None
    for item in sets:
        parts, value = parse_override(item)
        if names_the_field(parts):
            last = (item.partition("=")[0].strip(), value)
    if last is not None and last[1] is not None and last[1] != flag:
        raise EstimateFileError([f"--pipeline-schedule {flag} contradicts --set "
                                 f"{last[0]}={last[1]}: give one of them"])


def _job_schedule_path(n: int, jobs: int):
    """Whether a ``--set`` path is ``workload.jobs.<n>.pipeline_schedule`` of a scenario with
    ``jobs`` fixed jobs (negative indices counted from the end, as ``--set`` counts them; a bad
    index is the loader's to report)."""
    def names_the_field(parts: list[str]) -> bool:
        return (len(parts) == 4 and parts[:2] == ["workload", "jobs"]
                and parts[3] == "pipeline_schedule" and parts[2].lstrip("-").isdigit()
                and -jobs <= int(parts[2]) < jobs and int(parts[2]) % jobs == n)
    return names_the_field


def _load_with_schedule(path: str, overrides: list[str] | None, job: str | None,
                        flag: str | None):
    """The scenario, and the override that sets the estimated job's schedule to ``flag``.

    ``--pipeline-schedule X`` on a scenario is ``workload.jobs.<n>.pipeline_schedule = X``
    for the job estimated, applied before the scenario is validated: the job's own schedule
    is then never checked (a DualPipe job at a ``--set`` size where DualPipe does not run can
    be estimated on 1F1B), and a problem with ``X`` names the scenario's path and the flag.
    Without a fixed job to set (a stream's classes) the override is None and the caller sets
    the estimate's schedule."""
    from dataclasses import replace

    from twin.errors import ScenarioError
    from twin.scenario import load_scenario
    from twin.scenario.loader import apply_override, resolved_mapping, validate_data

    if flag is None:
        return load_scenario(path, overrides), None
    data, origins = resolved_mapping(Path(path), overrides)
    n = _job_index(data, job)
    if n is None:
        return validate_data(data, str(path), origins), None
    _schedule_set_conflict(flag, list(overrides or []), _job_schedule_path(n, len(data["workload"]["jobs"])))
    key = f"workload.jobs.{n}.pipeline_schedule"
    apply_override(data, key.split("."), flag)
    origin = f"--set {key}={flag}"     # the loader names a --set as a problem's origin
    origins[key] = origin
    try:
        s = validate_data(data, str(path), origins)
    except ScenarioError as exc:
        raise ScenarioError([replace(p, file=p.file.replace(origin, f"--pipeline-schedule {flag}"))
                             for p in exc.problems]) from None
    return s, f"{key}={flag}"


def estimate_from_scenario(path: str, overrides: list[str] | None = None,
                           job: str | None = None, pipeline_schedule: str | None = None):
    """An :class:`EstimateFile` for one job of a scenario on that scenario's cluster.

    ``twin estimate step SCENARIO.yaml`` takes this path: the job (``--job NAME``, default
    the first) on ``job.nodes`` nodes, the scenario's node model, fabric, transport,
    deployment and GPU power cap (as a clock fraction).  ``--set`` applies to the scenario.
    ``pipeline_schedule`` (``--pipeline-schedule``) becomes the job's
    ``workload.jobs.<n>.pipeline_schedule`` before validation (:func:`_load_with_schedule`).
    The schedule estimated is the one the engine runs the job on at that size
    (:func:`twin.plant.runnable_schedule`); the pipeline layout is the job's
    ``workload.jobs.<n>.pipeline_layout`` (:func:`twin.plant.runnable_layout`).
    """
    from twin.catalog import node_model
    from twin.compute.estimate_file import EstimateFile
    from twin.compute.power_cap import gpu_clock_fraction_at_power_cap
    from twin.plant import parallel_spec, runnable_schedule

    s, schedule_set = _load_with_schedule(path, overrides, job, pipeline_schedule)
    if schedule_set is not None:
        overrides = [*(overrides or []), schedule_set]
    from twin.cli.jobnames import unknown_job_message
    from twin.workload.engine_jobs import representative_jobs
    listed = representative_jobs(s)       # the fixed jobs, or a stream's training classes
    jobs = {j.name: j for j in listed}
    bad_job = unknown_job_message(path, s, job) if job is not None else None
    if bad_job is not None:
        raise EstimateFileError([bad_job])
    j = jobs[job] if job is not None else listed[0]
    c = _CLUSTER_FROM_SCENARIO(path, overrides)
    node = node_model(s.hardware.node_model)
    clock = 1.0
    if s.hardware.gpu_power_cap_w is not None:
        clock = float(gpu_clock_fraction_at_power_cap(
            s.hardware.gpu_power_cap_w, node.gpu_tdp_w, gpu_idle_w=node.gpu_idle_w))
    c = c.model_copy(update={"gpus": j.nodes * c.gpus_per_node, "clock_fraction": clock})
    m = j.model
    par = parallel_spec(j)      # the engine's translation: its schedule and layout
    schedule = runnable_schedule(par, c.gpus).pipeline_schedule
    if pipeline_schedule is not None and schedule_set is None:
        schedule = pipeline_schedule    # a stream class: no scenario path to set it through
    return EstimateFile(
        name=f"{s.name}:{j.name}",
        model=m.model_dump(),       # the scenario's model shape has the file's fields
        training={"seq_len": j.seq_len, "global_batch": j.global_batch,
                  "micro_batch": j.micro_batch, "precision": j.precision,
                  "activation_recompute": "full" if j.activation_recompute else "none",
                  "zero_stage": j.zero_stage, "fsdp_shard": j.fsdp_shard,
                  "moe_dispatch_dtype": j.moe_dispatch_dtype,
                  "recompute_norms_mla_up": j.recompute_norms_mla_up,
                  "fp8_cached_linear_inputs": j.fp8_cached_linear_inputs,
                  "adam_moment_dtype": j.adam_moment_dtype},
        parallelism={"tp": j.tp, "pp": j.pp, "cp": j.cp, "vpp": j.vpp, "ep": j.ep,
                     "moe_expert_tp": j.moe_expert_tp,
                     "pipeline_schedule": schedule, "pipeline_layout": par.pipeline_layout},
        cluster=c)


#: ``--cluster`` hook: ``(scenario_path) -> Cluster``.
CLUSTER_LOADER: Callable[[str], Cluster] = cluster_from_scenario
_CLUSTER_FROM_SCENARIO = cluster_from_scenario


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 2 with one clear line (argparse's own convention)
        raise EstimateFileError([f"twin estimate: {message}"])


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="twin estimate",
                 description="step-time and collective estimates without a simulation")
    sub = ap.add_subparsers(dest="what", metavar="{step,collective,fabric-study}",
                            parser_class=_Parser)
    p = sub.add_parser(
        "step", help="training step time, MFU, breakdown and memory per GPU of a job",
        description="Step time [s], MFU, tokens per second per GPU and a breakdown [s] of "
                    "one training job, and its memory per GPU [GiB] on the most loaded "
                    "pipeline stage (weights, gradients, optimizer, activations, "
                    "context-parallel KV, logits, buffers, total) against the GPU's memory. "
                    "An estimate above the GPU's memory but within the memory model's "
                    f"{100 * MEMORY_MODEL_MARGIN:.1f} % margin (up to "
                    f"{memory_limit_gib(80.0):.1f} GiB on an 80 GiB GPU) is accepted with a "
                    "memory note (JSON: memory_note); beyond the margin the job does not fit "
                    "and the command exits 2 naming the capacity and the breakdown. Bad "
                    "input exits 2 with one line per problem.")
    p.add_argument("file", help="estimate file (scenarios/estimates/*.yaml) or a scenario")
    p.add_argument("--job", help="job name when FILE is a scenario (default: the first)")
    p.add_argument("--set", action="append", default=[], metavar="dotted.path=value",
                   help="override a field, e.g. --set cluster.gpus=128")
    p.add_argument("--cluster", metavar="SCENARIO",
                   help="take the cluster (GPU, node, fabric, transport, deployment) from a "
                        "scenario; cluster.gpus must fit in the nodes it delivers")
    p.add_argument("--pipeline-schedule", choices=PIPELINE_SCHEDULES, default=None,
                   help="pipeline schedule of the step model (sets "
                        "parallelism.pipeline_schedule): 1f1b, interleaved (needs vpp > 1) or "
                        "dualpipe (DeepSeek-V3's bidirectional schedule: even pp, vpp 1, an "
                        "even number of micro-batches >= 2 pp, zero_stage 0-2; expert all-to-alls and pipeline "
                        "sends overlapped with the paired chunk's compute on 20 reserved SMs, "
                        "the step timed by DualPipe.step's op order); default the file's, else "
                        "the one vpp implies. On a scenario it sets the estimated job's "
                        "workload.jobs.N.pipeline_schedule before the scenario is checked. A "
                        "--set of the same field to another schedule is an error. 1f1b and "
                        "dualpipe need vpp 1: on a file with vpp > 1 (the shipped interleaved "
                        "ones) add --set parallelism.vpp=1 (scenario: workload.jobs.N.vpp=1). "
                        "With dualpipe the memory estimate counts two stages a rank and PP + 1 "
                        "micro-batches in flight. JSON: pipeline_schedule is the one that ran")
    p.epilog = ("Pipeline layout: --set parallelism.pipeline_layout='E|(t|)*126,L' (scenario: "
                "--set workload.jobs.N.pipeline_layout=...) places the layers as Megatron-core's "
                "--pipeline-model-parallel-layout does (pp x vpp stages split by |, E embedding, "
                "t decoder layer, m MTP layer, L loss, X*n repeats; quote it in the shell); "
                "JSON: pipeline_layout, null for the even split.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p = sub.add_parser("collective", help="time and bus bandwidth of one collective")
    p.add_argument("--op", required=True, choices=OPS,
                   help="collective operation (nccl-tests' all_reduce_perf, "
                        "reduce_scatter_perf, all_gather_perf, alltoall_perf); bus bandwidth "
                        "= algorithm bandwidth x 2(n-1)/n for allreduce, x (n-1)/n for the "
                        "others, n = GPUs")
    p.add_argument("--bytes", required=True, type=_byte_count, metavar="N",
                   help="buffer size [B], at least 1 (nccl-tests convention: the size "
                        "printed in its 'size' column), e.g. 1e9 or 1073741824")
    p.add_argument("--nodes", required=True, type=_positive_int, metavar="K",
                   help="nodes the collective spans [nodes]; with --cluster at most the "
                        "nodes the scenario delivers")
    p.add_argument("--gpus-per-node", type=_positive_int, default=None, metavar="G",
                   help="GPUs per node taking part [GPUs]; default the cluster's (8)")
    p.add_argument("--in-network-reduction", action="store_true",
                   help="all-reduce in the switches (InfiniBand SHARP)")
    p.add_argument("--compute-capability", type=int, choices=COMPUTE_CAPABILITIES, default=None,
                   metavar="CC", help="GPU generation, sm x 10 (80 A100, 90 H100, 100 B200); "
                                      "default the cluster's")
    p.add_argument("--nics-per-node", type=_positive_int, default=None, metavar="N",
                   help="compute NICs per node (NCCL's Tree: one channel each); default the "
                        "cluster's")
    p.add_argument("--cluster", metavar="SCENARIO",
                   help="take the cluster from a scenario (default: Blue Vela's DGX H100 "
                        "nodes on 8x 400 Gb/s InfiniBand)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p = sub.add_parser("fabric-study", help="dense and MoE jobs, alone and sharing, on four "
                                            "fabrics (twin.compute.fabric_study)")
    p.add_argument("--nodes", type=_positive_int, default=128, metavar="N",
                   help="cluster size [nodes] (default 128)")
    p.add_argument("--seed", type=int, default=0, help="placement and ECMP hashing seed")
    p.add_argument("--qps", type=_positive_int, default=4,
                   help="flows per connection hashed by static ECMP (default 4)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return ap


#: largest cluster an estimate accepts [GPUs]: 2**23, about forty times the largest training
#: clusters announced by 2025 (assumption); beyond it the fabric model's graphs and arrays
#: need tens of GB before any answer (issue 18, "estimates bound their inputs")
MAX_ESTIMATE_GPUS = 2**23


def _check_size(what: str, gpus: int) -> None:
    if gpus > MAX_ESTIMATE_GPUS:
        raise EstimateFileError([f"{what}: {gpus:,} GPUs; expected at most {MAX_ESTIMATE_GPUS:,} "
                                 f"(the fabric model would need tens of GB of memory)"])


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _byte_count(text: str) -> float:
    """A buffer size [B]: finite and at least one byte (a smaller buffer holds no element)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size of at least 1 B, got {text!r}") from None
    if not np.isfinite(v) or v < 1:
        raise argparse.ArgumentTypeError(f"expected a size of at least 1 B, got {text!r}")
    return v


def _check_cluster_nodes(what: str, nodes: int, cluster: Cluster, path: str) -> None:
    """``nodes`` at most the ``--cluster`` scenario's delivered nodes (its ``gpus``)."""
    have = cluster.gpus // cluster.gpus_per_node
    if nodes > have:
        raise EstimateFileError([f"{what}: expected at most the {have} nodes that {path} "
                                 f"delivers (--cluster)"])


def _load_cluster(path: str) -> Cluster:
    if not Path(path).exists():
        raise EstimateFileError([f"{path}: no such scenario file"])
    try:
        return CLUSTER_LOADER(path)
    except EstimateFileError:
        raise
    except Exception as exc:  # scenario errors carry their own per-field messages
        raise EstimateFileError([f"{path}: {exc}"]) from None


def _is_scenario(path: str) -> bool:
    import yaml
    try:
        data = yaml.load(Path(path).read_text(), Loader=SAFE_LOADER)
    except (OSError, yaml.YAMLError):
        return False  # load_estimate reports it
    return isinstance(data, dict) and ("workload" in data or "extends" in data)


def _with_vpp_hint(flag: str, exc: EstimateFileError) -> EstimateFileError:
    """The layout check's lines, the one on ``vpp`` ending with the ``--set`` that goes with
    ``--pipeline-schedule`` (every shipped file with vpp > 1 needs ``parallelism.vpp=1`` for
    1f1b or dualpipe)."""
    hints = {"needs parallelism.vpp = 1": "add --set parallelism.vpp=1",
             "needs parallelism.vpp > 1": "add --set parallelism.vpp=N, N > 1 dividing the "
                                          "layers per stage"}
    lines = []
    for line in exc.problems:
        for cue, hint in hints.items():
            if cue in line and "parallelism.pipeline_schedule" in line:
                line = f"{line} (--pipeline-schedule {flag}: {hint})"
        lines.append(line)
    return EstimateFileError(lines)


def _cmd_step(args) -> dict:
    scenario = _is_scenario(args.file)
    if scenario:
        try:
            est = estimate_from_scenario(args.file, args.set, args.job, args.pipeline_schedule)
        except EstimateFileError:
            raise
        except Exception as exc:  # ScenarioError lists its own problems
            problems = getattr(exc, "problems", None)
            lines = [str(p) for p in problems] if problems else [f"{args.file}: {exc}"]
            raise EstimateFileError(lines) from None
    elif args.job is not None:
        # an estimate file is one job; silently estimating it under another name misleads
        where = f" (--cluster {args.cluster} gives the cluster only, not a job)" if args.cluster else ""
        raise EstimateFileError([f"--job {args.job}: {args.file} is an estimate file, which describes one "
                                 f"job; --job picks a job of a scenario FILE{where}"])
    else:
        est = load_estimate(args.file, args.set)
    if args.cluster:
        c = _load_cluster(args.cluster)
        nodes = -(-est.cluster.gpus // c.gpus_per_node)
        _check_cluster_nodes(f"{est.name}: cluster.gpus = {est.cluster.gpus} needs {nodes} "
                             f"nodes of {c.gpus_per_node} GPUs", nodes, c, args.cluster)
        c = c.model_copy(update={"gpus": est.cluster.gpus,
                                 "clock_fraction": est.cluster.clock_fraction})
        est = est.model_copy(update={"cluster": c})
    if args.pipeline_schedule is not None and not scenario:
        _schedule_set_conflict(args.pipeline_schedule, args.set,
                               lambda parts: parts == ["parallelism", "pipeline_schedule"])
        est = est.model_copy(update={"parallelism": est.parallelism.model_copy(
            update={"pipeline_schedule": args.pipeline_schedule})})
    _check_size("cluster.gpus", est.cluster.gpus)
    try:
        r = estimate_from_file(est)
        mem = memory_from_file(est)
    except EstimateFileError as exc:
        if args.pipeline_schedule is None or scenario:
            raise
        raise _with_vpp_hint(args.pipeline_schedule, exc) from None
    p = est.parallelism
    out = {"name": est.name,
           # the schedule the step model ran: null in the file means the one vpp implies
           "pipeline_schedule": resolved_schedule(p.pipeline_schedule, p.vpp),
           "pipeline_layout": p.pipeline_layout,     # null: ceil(layers / pp) a rank
           **r.as_dict(),
           "memory_gib": {k: (v / 2**30 if isinstance(v, float) else v)
                          for k, v in mem.as_dict().items()},
           "gpu_memory_gib": est.cluster.gpu.memory_gb,
           "memory_note": memory_margin_note(mem, est.cluster.gpu.memory_gb)}
    if est.reference is not None:
        out["reference"] = est.reference.model_dump()
    return out


def _cmd_collective(args) -> dict:
    c = _load_cluster(args.cluster) if args.cluster else BLUE_VELA_CLUSTER
    if args.cluster:
        _check_cluster_nodes(f"twin estimate collective: --nodes {args.nodes}", args.nodes, c,
                             args.cluster)
    g = args.gpus_per_node or c.gpus_per_node
    if args.nodes * g < 2:
        raise EstimateFileError(["twin estimate collective: needs at least 2 GPUs "
                                 f"(--nodes {args.nodes} x --gpus-per-node {g})"])
    _check_size(f"twin estimate collective: --nodes {args.nodes} x --gpus-per-node {g}", args.nodes * g)
    c = c.model_copy(update={"gpus": args.nodes * g, "gpus_per_node": g})
    try:
        bw, hops = fabric_figures(c)
    except EstimateFileError as exc:
        raise EstimateFileError([f"twin estimate collective: --nodes {args.nodes}: "
                                 + "; ".join(exc.problems)]) from None
    cc = args.compute_capability if args.compute_capability is not None \
        else c.gpu.compute_capability
    nics = args.nics_per_node if args.nics_per_node is not None else c.fabric.nics()
    kw: dict[str, Any] = dict(nvlink_gb_s=c.gpu.nvlink_gb_s, nvls=c.gpu.nvls, inter_node_gbps=bw,
                              transport=c.fabric.transport, hops=hops,
                              nvswitch=c.gpu.nvswitch, pcie_gb_s=c.gpu.pcie_gb_s,
                              in_network_reduction=(args.in_network_reduction
                                                    or c.fabric.in_network_reduction),
                              compute_capability=cc, nics_per_node=nics)
    t = float(collective_time_s(args.op, args.bytes, args.nodes, g, **kw))
    n = args.nodes * g
    algo = str(collective_algorithm(args.op, args.bytes, args.nodes, g, **kw)[0])
    alg = args.bytes / t / 1e9 if t > 0 else float("inf")
    return {"op": args.op, "bytes": args.bytes, "nodes": args.nodes, "gpus_per_node": g,
            "time_s": t, "algbw_gb_s": alg, "busbw_gb_s": alg * float(bus_factor(args.op, n)),
            "inter_node_gbps": bw, "transport": c.fabric.transport, "algorithm": algo,
            "compute_capability": cc, "nics_per_node": nics}


def _print_step(out: dict) -> None:
    print(f"{out['name']}")
    print(f"  step_time_s           {out['step_time_s']:12.3f}")
    print(f"  mfu                   {out['mfu']:12.3f}")
    print(f"  tokens_per_s_per_gpu  {out['tokens_per_s_per_gpu']:12.1f}")
    print(f"  tokens_per_day        {out['tokens_per_day']:12.4g}")
    print("  breakdown [s]:")
    for k, v in out["breakdown"].items():
        print(f"    {k:22s} {v:10.3f}")
    mem = out["memory_gib"]
    from twin.compute.memory import stage_label
    print(f"  memory per GPU [GiB] ({stage_label(mem['stage'])}, GPU {out['gpu_memory_gib']:g} GiB):")
    for k, v in mem.items():
        if k != "stage":
            print(f"    {k:22s} {v:10.2f}")
    if out.get("memory_note"):
        print(f"  memory note: {out['memory_note']}")
    ref = out.get("reference")
    if ref:
        for key in ("step_time_s", "mfu", "tokens_per_s_per_gpu"):
            if ref.get(key) is not None:
                print(f"  reference {key:22s} {ref[key]:10.4g}")
        print(f"  reference source: {ref.get('source', '')}")


def _print_collective(out: dict) -> None:
    for k in ("op", "bytes", "nodes", "gpus_per_node", "transport", "algorithm"):
        print(f"{k:16s} {out[k]}")
    print(f"{'time_s':16s} {out['time_s']:.6g}")
    print(f"{'algbw_gb_s':16s} {out['algbw_gb_s']:.4g}")
    print(f"{'busbw_gb_s':16s} {out['busbw_gb_s']:.4g}")


def _print_study(rows: list[dict]) -> None:
    print(f"{'fabric':22s} {'workload':20s} {'routing':8s} {'job':>3s} {'kind':5s} "
          f"{'Gb/s/node':>9s} {'tok/s/GPU':>9s} {'vs IB rail':>10s}")
    for r in rows:
        print(f"{r['fabric']:22s} {r['workload']:20s} {r['routing']:8s} {r['job']:3d} "
              f"{r['kind']:5s} {r['bandwidth_gbps']:9.0f} {r['tokens_per_s_per_gpu']:9.0f} "
              f"{r['vs_ib_rail']:10.3f}")


def run_estimate_cli(argv: list[str] | None = None) -> int:
    """Entry point of ``twin estimate``; returns the exit code (0 ok, 2 bad input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
        if args.what is None:
            raise EstimateFileError(["twin estimate: choose 'step', 'collective' or "
                                     "'fabric-study' (see twin estimate --help)"])
        if args.what == "step":
            out = _cmd_step(args)
        elif args.what == "collective":
            out = _cmd_collective(args)
        else:
            _check_size(f"twin estimate fabric-study: --nodes {args.nodes}", args.nodes * 8)
            if args.nodes < 8 or args.nodes % 8:
                raise EstimateFileError([f"twin estimate fabric-study: --nodes {args.nodes}: "
                                         "expected a multiple of 8, at least 8"])
            from twin.compute.fabric_study import fabric_study
            try:
                out = {"rows": fabric_study(args.nodes, seed=args.seed, qps=args.qps)}
            except ValueError as exc:
                raise EstimateFileError([f"twin estimate fabric-study: --nodes "
                                         f"{args.nodes}: {exc}"]) from None
    except EstimateFileError as exc:
        for line in exc.problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    except ValueError as exc:  # physics refused the configuration
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(out, indent=2, default=float))
    elif args.what == "step":
        _print_step(out)
    elif args.what == "collective":
        _print_collective(out)
    else:
        _print_study(out["rows"])
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run_estimate_cli())
