"""Cost model of NCCL-style collectives: NVLink/NVSwitch inside a node, rails across nodes.

Conventions (nccl-tests doc/PERFORMANCE.md): for a collective on ``n`` ranks over a
buffer of ``S`` bytes, ``algbw = S / t`` and ``busbw = algbw * F(n)`` with the bus
factor ``F = 2(n-1)/n`` for all-reduce and ``(n-1)/n`` for reduce-scatter, all-gather
and all-to-all; ``busbw`` is the speed of the bottleneck link.  So
``t = F(n) * S / busbw(S)``, and the model is a model of ``busbw(S)``.

Protocol regimes instead of one alpha-beta line (calibration.yaml:
collectives.cost_model note), each ``t = latency + F S / bandwidth``, the tuner taking the
fastest:

* LL (8-byte flag words, few channels): ``13 us`` start-up, a trickle of bandwidth
  (0.5 % of ``B_inf``): the flat 13-17 us of messages up to a few KB;
* LL128 (128-byte lines): ``18.1 us`` start-up, ``0.39 B_inf`` (medium messages run on a
  fraction of the channels): the 18-21 us plateau from 32 KB to 512 KB;
* Simple: ``t = max(F S / B_inf * (1 + (S_0 / S)**gamma), 2 * 13 us)`` (``S_0`` of the
  NVLS all-reduce below; rings ramp up faster, ``RING_FILL_S0_BYTES``).  The second
  factor is the pipeline fill and channel ramp-up: NCCL splits a buffer into chunks over
  channels, and the number of channels and the chunk size grow with ``S``; the measured
  curve has ``1/eff - 1`` falling as ``S**-0.75`` over three decades (a fixed latency
  would give ``S**-1``).

Fitted (log least squares, sizes >= 16 MB weighted 3x) on the full DGX H100 all-reduce
curve, 8 B..16 GB, of NVIDIA dgxc-benchmarking nccl/README.md, which contains the five
calibration.yaml points (collectives.h100_sxm_8gpu_allreduce_busbw): ``B_inf = 1.072 *
nvlink_gb_s`` with NVLS (in-switch reduction: busbw above the one-way NVLink 450 GB/s),
``S_0 = 17.6 MB``, ``gamma = 0.755``.  Errors: under 3 % from 16 MB to 16 GB, under
11 % from 1 MB, 5.6 % mean over all 30 sizes.  Without NVLS the ring's ``B_inf`` is
``0.80 * nvlink_gb_s`` (DGX A100: ~235 GB/s all-reduce busbw on 300 GB/s NVLink3,
nccl-tests results published by NVIDIA; the same ratio is used for H100).

Across nodes (hierarchical ring, one ring per NIC/rail, NCCL's default for large
buffers): each ring crosses every node boundary once, so a node's NICs carry
``F S`` bytes per node for a collective that uses all its GPUs; with ``r`` ranks of the
group per node and ``g`` GPUs per node the group gets ``r/g`` of the node's NIC
bandwidth (the other GPUs run their own groups at the same time, as data parallelism
does).  ``busbw_net = r/g * inter_node_GB/s * eta_transport`` and the NVLink part of the
ring moves ``(r-1)/r`` of the bus bytes; the slower of the two sets ``B_inf``.
With NVLS an all-reduce may instead reduce inside each node first (NCCL's NVLS tree), so
that only ``2(N-1)/N`` of a GPU's shard crosses the network: its bus bandwidth is
``min(B_nvls, busbw_net * [2(n-1)/n] / [2(N-1)/N])``, well above the NICs on 2-4 nodes
and tending to the ring's on many; the faster of the two algorithms is taken.
Latency across nodes grows as a tree, ``2 ceil(log2 N) (alpha_transport + hops *
alpha_switch)``.
"""

from __future__ import annotations

import math

import numpy as np

OPS = ("allreduce", "reduce_scatter", "all_gather", "all_to_all")

#: small-message (LL) latency of an 8x H100 all-reduce [s] (calibration.yaml: 13 us)
INTRA_LATENCY_S = 13e-6
#: LL bandwidth over B_inf [-] (fit, see module doc)
LL_BW_FRACTION = 0.005
#: LL128 start-up latency [s] and bandwidth over B_inf [-] (fit)
LL128_LATENCY_S = 18.1e-6
LL128_BW_FRACTION = 0.39
#: pipeline-fill law of the Simple protocol (fit to the 8x H100 curve, see module doc)
FILL_S0_BYTES = 17.6e6
FILL_GAMMA = 0.755
#: half-efficiency size of ring algorithms (reduce-scatter, all-gather, all-to-all,
#: all-reduce without NVLS) [B].  Two bounds: the measured 8x H100 all-reduce curve is
#: the best of ring and NVLS, so a ring may not beat it at 2-8 MB, which needs
#: S_0 >= 9.4 MB; the Megatron-LM A100 step times (exposed tensor-parallel rings of
#: 10-100 MB, twin/compute/step.py) favour small S_0 (mean error 3.9 % at 0.25-2 MB,
#: 4.5 % at 10 MB, 4.9 % at 17.6 MB).  10 MB meets both.
RING_FILL_S0_BYTES = 10.0e6
#: NVLS all-reduce asymptote over the one-way NVLink bandwidth (same fit)
NVLS_BUSBW_OVER_NVLINK = 1.072
#: ring (no in-switch reduction) asymptote over one-way NVLink (DGX A100 nccl-tests)
RING_BUSBW_OVER_NVLINK = 0.80

#: Transports across nodes: fraction of NIC line rate a large collective reaches, per-hop
#: software/NIC latency [s] and per-switch latency [s].
#: ib_rdma: GPUDirect RDMA over InfiniBand NDR; perftest ib_write_bw reaches ~97 % of
#:   400 Gb/s and NCCL multi-node busbw on DGX H100 is ~90-95 % of the NIC aggregate;
#:   NDR switch port-to-port latency ~130 ns (QM9700 datasheet).
#: roce: RoCEv2 with GPUDirect RDMA (Vela after its 2023 upgrade; Llama 3's RoCE
#:   cluster): a few % below IB for congestion control headroom; Spectrum switch ~0.6 us.
#: roce_host: RoCE without GPUDirect, staged through host memory (extra PCIe copies and a
#:   proxy thread): engineering estimate 0.70.
#: tcp: NCCL socket transport, bounded by kernel copies and CPU threads: engineering
#:   estimate 0.25 and ~25 us per hop (Vela ran TCP before its RoCE/GDR upgrade and
#:   reported a large gain from the upgrade, IBM Research blog 2023-12).
TRANSPORTS: dict[str, tuple[float, float, float]] = {
    "ib_rdma": (0.93, 3.0e-6, 0.13e-6),
    "roce": (0.90, 4.0e-6, 0.6e-6),
    "roce_host": (0.70, 6.0e-6, 0.6e-6),
    "tcp": (0.25, 25.0e-6, 0.6e-6),
}


def bus_factor(op: str, n_ranks) -> np.ndarray:
    """Bus-bandwidth factor [-]: ``2(n-1)/n`` all-reduce, ``(n-1)/n`` the others (nccl-tests)."""
    n = np.asarray(n_ranks, dtype=float)
    if op == "allreduce":
        return 2.0 * (n - 1.0) / n
    if op in ("reduce_scatter", "all_gather", "all_to_all"):
        return (n - 1.0) / n
    raise ValueError(f"unknown collective {op!r}; expected one of {OPS}")


def transport_efficiency(transport: str) -> float:
    """Fraction [-] of NIC line rate a large collective reaches over ``transport``."""
    try:
        return TRANSPORTS[transport][0]
    except KeyError:
        raise ValueError(f"unknown transport {transport!r}; expected one of "
                         f"{tuple(TRANSPORTS)}") from None


def _fill_factor(message_bytes, s0_bytes: float = FILL_S0_BYTES):
    s = np.maximum(np.asarray(message_bytes, dtype=float), 1.0)
    return 1.0 + (s0_bytes / s) ** FILL_GAMMA


def group_collective_time_s(
    op: str,
    message_bytes,
    *,
    nodes: int,
    ranks_per_node: int,
    gpus_per_node: int = 8,
    nvlink_gb_s: float = 450.0,
    nvls: bool = True,
    inter_node_gbps: float = 3200.0,
    transport: str = "ib_rdma",
    hops: float = 4.0,
    latency_s: float = INTRA_LATENCY_S,
    nvswitch: bool = True,
    pcie_gb_s: float = 64.0,
    in_network_reduction: bool = False,
):
    """Time [s] of a collective on a group of ``nodes * ranks_per_node`` GPUs.

    in_network_reduction: all-reduce reduced in the switches (InfiniBand SHARP, as the
    QM9700 offers): a GPU's shard crosses its NIC once each way instead of 2(N-1)/N
    times, so the bus bandwidth reaches the intra-node limit (~480 GB/s on DGX H100).

    nvswitch: the node's GPUs sit on an NVSwitch (HGX/DGX).  Without it (H100 NVL, PCIe
    cards with NVLink bridges between pairs) a ring over more than two GPUs of a node
    crosses PCIe (``pcie_gb_s`` [GB/s] per direction; Gen5 x16 = 64), and there is no NVLS.

    message_bytes [B]: the buffer ``S`` of nccl-tests (all-reduce in/out size; the full
    gathered size for reduce-scatter / all-gather; each rank's send size for all-to-all).
    inter_node_gbps [Gb/s]: a node's achievable NIC bandwidth (all rails), e.g.
    ``twin.fabric.bottleneck_bandwidth_gbps``.  The group shares it with the other
    ``gpus_per_node / ranks_per_node`` groups of the node.  hops [-]: switch hops
    between the group's nodes (``placement_hops``).
    """
    s = np.asarray(message_bytes, dtype=float)
    r = int(ranks_per_node)
    if not nvswitch and r > 2:
        nvlink_gb_s = min(nvlink_gb_s, pcie_gb_s)
        nvls = False
    n_nodes = int(nodes)
    n = n_nodes * r
    if n <= 1:
        return np.zeros_like(s)
    f = bus_factor(op, n)
    eff, alpha_t, alpha_sw = TRANSPORTS[transport] if transport in TRANSPORTS else (
        transport_efficiency(transport), 0.0, 0.0)
    lat = latency_s
    ring_intra = RING_BUSBW_OVER_NVLINK * nvlink_gb_s * 1e9
    use_nvls = op == "allreduce" and nvls and r > 2
    if n_nodes == 1:
        algos = [(ring_intra, RING_FILL_S0_BYTES)]
        if use_nvls:
            algos.append((NVLS_BUSBW_OVER_NVLINK * nvlink_gb_s * 1e9, FILL_S0_BYTES))
    else:
        net = r / gpus_per_node * inter_node_gbps / 8.0 * eff * 1e9  # B/s for this group
        if op == "all_to_all":
            # every rank talks to every other: (N-1)/N of a rank's bytes leave the node
            # through the group's NICs, (r-1)/n of them stay on NVLink
            t_net_per_byte = (n_nodes - 1) / n_nodes * r / net
            t_nvl_per_byte = (r - 1) / n / ring_intra
            algos = [(f / max(t_net_per_byte, t_nvl_per_byte), RING_FILL_S0_BYTES)]
        else:
            b_nvl = ring_intra * r / max(r - 1, 1) if r > 1 else math.inf
            algos = [(min(net, b_nvl), RING_FILL_S0_BYTES)]
            if use_nvls:
                # NVLS tree: reduce inside the node in the NVSwitch, then only 1/r of the
                # buffer per GPU crosses the network, 2(N-1)/N of it (NCCL NVLSTree)
                ratio = (2.0 * (n - 1) / n) / (2.0 * (n_nodes - 1) / n_nodes)
                algos.append((min(NVLS_BUSBW_OVER_NVLINK * nvlink_gb_s * 1e9, net * ratio),
                              FILL_S0_BYTES))
            if op == "allreduce" and in_network_reduction:
                # SHARP: the switches reduce, each GPU's shard crosses its NIC once up and
                # once down, ratio 2(n-1)/n over 1 (NCCL CollNet / NVLS+SHARP)
                intra = NVLS_BUSBW_OVER_NVLINK * nvlink_gb_s * 1e9 if use_nvls else ring_intra
                algos.append((min(intra, net * 2.0 * (n - 1) / n),
                              FILL_S0_BYTES if use_nvls else RING_FILL_S0_BYTES))
        lat = latency_s + 2.0 * math.ceil(math.log2(n_nodes)) * (alpha_t + hops * alpha_sw)
    net_lat = lat - latency_s  # network latency, paid in every protocol
    # the tuner takes the fastest algorithm and protocol for each size
    b_top = max(b for b, _ in algos)
    t = lat + f * s / (LL_BW_FRACTION * b_top)
    t = np.minimum(t, LL128_LATENCY_S * latency_s / INTRA_LATENCY_S + net_lat
                   + f * s / (LL128_BW_FRACTION * b_top))
    for b_inf, s0 in algos:
        t_simple = np.maximum(f * s / b_inf * _fill_factor(s, s0), 2.0 * latency_s) + net_lat
        t = np.minimum(t, t_simple)
    return t


def collective_time_s(
    op: str,
    message_bytes,
    n_nodes: int,
    gpus_per_node: int = 8,
    *,
    nvlink_gb_s: float = 450.0,
    nvls: bool = True,
    inter_node_gbps: float = 3200.0,
    transport: str = "ib_rdma",
    hops: float = 4.0,
    nvswitch: bool = True,
    pcie_gb_s: float = 64.0,
    in_network_reduction: bool = False,
):
    """Time [s] of a collective over all ``gpus_per_node`` GPUs of ``n_nodes`` nodes.

    Defaults are a DGX H100 / Blue Vela node: NVLink4 450 GB/s one way per GPU,
    NVSwitch with NVLS, 8x NDR 400 Gb/s (3,200 Gb/s per node) GPUDirect RDMA over
    InfiniBand.  ``t = F(n) S / busbw(S)`` (see the module doc for ``busbw``).
    """
    return group_collective_time_s(
        op, message_bytes, nodes=n_nodes, ranks_per_node=gpus_per_node,
        gpus_per_node=gpus_per_node, nvlink_gb_s=nvlink_gb_s, nvls=nvls,
        inter_node_gbps=inter_node_gbps, transport=transport, hops=hops, nvswitch=nvswitch,
        pcie_gb_s=pcie_gb_s, in_network_reduction=in_network_reduction)


def collective_bandwidths_gb_s(op: str, message_bytes, n_nodes: int, gpus_per_node: int = 8,
                               **kw) -> dict:
    """``{"time_s", "algbw_gb_s", "busbw_gb_s"}`` for a collective (nccl-tests definitions)."""
    t = collective_time_s(op, message_bytes, n_nodes, gpus_per_node, **kw)
    s = np.asarray(message_bytes, dtype=float)
    alg = s / t / 1e9
    return {"time_s": t, "algbw_gb_s": alg,
            "busbw_gb_s": alg * bus_factor(op, n_nodes * gpus_per_node)}
