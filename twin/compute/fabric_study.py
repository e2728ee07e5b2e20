"""Where the fabric choice matters: dense and mixture-of-experts jobs, alone and sharing.

For each fabric (rail-optimised InfiniBand, a k-ary fat tree, a 2:1 RoCE CLOS at
400 Gb/s, and a Vela-like RoCE CLOS at 100 Gb/s) and each workload (one dense job, one
MoE job, several jobs sharing the spines on a fragmented placement), the jobs' per-node
bandwidth comes from the max-min fair flow solve (:func:`twin.fabric.fair_share_bandwidths_gbps`,
adaptive routing or hashed static ECMP) and feeds :func:`twin.compute.specs.step_time`
(``inter_node_gbps``, transport, switch hops of the placement).  The GPUs are the same
DGX H100 nodes everywhere, so the differences are the fabric's.
"""

from __future__ import annotations

import numpy as np

from twin.compute.shapes import MODEL_SHAPES, MOE_SHAPES
from twin.compute.specs import FabricSpec, GpuSpec, ModelSpec, ParallelSpec, step_time
from twin.fabric import build_fabric, fair_share_bandwidths_gbps, placement_hops

#: fabrics of the study: build_fabric arguments and the transport
FABRICS: dict[str, dict] = {
    "ib_rail_400g": dict(kind="rail_optimized", link_gbps=400.0, transport="ib_rdma"),
    "ib_fat_tree_400g": dict(kind="fat_tree", link_gbps=400.0, transport="ib_rdma"),
    "roce_clos_400g_2to1": dict(kind="clos", link_gbps=400.0, oversubscription=2.0, spines=4,
                                transport="roce"),
    # Vela (IBM Research blog 2023): each NIC to a different TOR, each TOR with two 100G
    # links to each of four spines
    "vela_roce_clos_100g": dict(kind="clos", link_gbps=100.0, spines=4,
                                tor_uplinks_per_spine=2, su_nodes=16, transport="roce"),
}

#: DGX H100 GPUs: NVLink4 450 GB/s one way, NVLS, Hopper (compute capability 9.0)
H100_GPU = GpuSpec(peak_bf16_tflops=989.0, peak_fp8_tflops=1979.0, hbm_bw_tb_s=3.35,
                   nvlink_gb_s=450.0, nvls=True, gpus_per_node=8, compute_capability=90)
#: DGX H100 compute NICs (eight ConnectX-7, one per GPU), one per rail of every fabric here
H100_NICS_PER_NODE = 8


def _job(kind: str, nodes: int) -> tuple[ModelSpec, ParallelSpec, str]:
    """(model, parallelism, traffic pattern) of a study job on ``nodes`` nodes."""
    if kind == "dense":  # Llama 3.1 70B, NeMo layout
        shape = dict(MODEL_SHAPES["llama31_70b"])
        seq = shape.pop("seq_len")
        return (ModelSpec(**shape),
                ParallelSpec(tp=4, pp=4, cp=2, vpp=5, seq_len=seq, micro_batch=1,
                             global_batch=nodes * 8 // 32 * 32), "ring")
    shape = dict(MOE_SHAPES["mixtral_8x22b"])  # Mixtral 8x22B, experts spread over nodes
    seq = shape.pop("seq_len")
    return (ModelSpec(**shape),
            ParallelSpec(tp=2, pp=4, cp=1, vpp=1, ep=8, seq_len=seq, micro_batch=1,
                         global_batch=nodes * 8 // 8 * 8), "all_to_all")


def _workloads(n_nodes: int, seed: int) -> dict[str, list[tuple[str, np.ndarray]]]:
    half = n_nodes // 2
    quarter = n_nodes // 4
    perm = np.random.default_rng(seed).permutation(n_nodes)  # fragmented placement
    return {
        "dense_alone": [("dense", np.arange(half))],
        "moe_alone": [("moe", np.arange(half))],
        "shared_3dense_1moe": [("dense", np.sort(perm[i * quarter:(i + 1) * quarter]))
                               for i in range(3)]
        + [("moe", np.sort(perm[3 * quarter:]))],
    }


def fabric_study(n_nodes: int = 128, *, routings=("adaptive", "ecmp"), seed: int = 0,
                 qps: int = 4) -> list[dict]:
    """Rows ``{fabric, workload, routing, job, kind, nodes, bandwidth_gbps, step_time_s,
    tokens_per_s_per_gpu, vs_ib_rail}`` (``vs_ib_rail``: throughput over the same job on
    the rail-optimised InfiniBand fabric with the same routing)."""
    rows = []
    for fname, spec in FABRICS.items():
        spec = dict(spec)
        transport = spec.pop("transport")
        g = build_fabric(spec.pop("kind"), n_nodes, **spec)
        for wname, jobs in _workloads(n_nodes, seed).items():
            for routing in routings:
                nodes = [n for _, n in jobs]
                pats = [_job(kind, len(n))[2] for kind, n in jobs]
                share = fair_share_bandwidths_gbps(g, nodes, pattern=pats, routing=routing,
                                                   seed=seed, qps=qps)
                for j, (kind, n) in enumerate(jobs):
                    model, par, _ = _job(kind, len(n))
                    bw = float(share["bandwidth_gbps"][j])
                    hops = float(placement_hops(g, n)["max_hops"])
                    e = step_time(model, par, H100_GPU,
                                  FabricSpec(inter_node_gbps=bw, transport=transport, hops=hops,
                                             nics_per_node=H100_NICS_PER_NODE),
                                  gpus=len(n) * H100_GPU.gpus_per_node)
                    rows.append(dict(fabric=fname, workload=wname, routing=routing, job=j,
                                     kind=kind, nodes=int(len(n)), bandwidth_gbps=bw,
                                     step_time_s=e.step_time_s,
                                     tokens_per_s_per_gpu=e.tokens_per_s_per_gpu))
    base = {(r["workload"], r["routing"], r["job"]): r["tokens_per_s_per_gpu"]
            for r in rows if r["fabric"] == "ib_rail_400g"}
    for r in rows:
        b = base[(r["workload"], r["routing"], r["job"])]
        r["vs_ib_rail"] = r["tokens_per_s_per_gpu"] / b if b > 0 else float("nan")
    return rows
