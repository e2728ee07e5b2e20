"""The separate storage fabric: compute nodes to the Storage Scale units (Blue Vela).

Blue Vela (arXiv 2407.05467) gives every compute node two ConnectX-7 NDR 400 Gb/s HCAs
for storage, on an InfiniBand fabric of its own, separate from the 8-rail compute
fabric; the IBM Storage Scale System 6000 units (up to 310 GB/s read, 155 GB/s write
each) hang off the same storage fabric.  Built here as a two-tier folded Clos:

* compute side: per scalable unit one storage leaf per storage NIC (``storage:leaf:{su}:{k}``),
  ``su_nodes`` cables down, ``ceil(su_nodes / oversubscription)`` up;
* storage side: leaves ``storage:leaf:units:{m}`` holding up to ``switch_ports/2`` unit
  ports each, as many cables up (non-blocking toward the units);
* ``spines`` (default: fewest that fit) joined to every leaf, the leaf's uplinks spread
  as evenly as whole cables allow.

:func:`storage_bandwidth_gb_s` is the closed-form fluid limit of a job's nodes streaming
from (or to) all units: ``min(sum over the job's storage leaves of min(its nodes' NIC
rate, its uplinks), spine->unit-leaf cables, unit ports, unit media rate)``.  Edges carry
the same attrs as the compute fabric (``links``, ``capacity_gbps``, ``tier``), so a
failed cable is modelled by lowering ``links``/``capacity_gbps`` on the graph.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np


def build_storage_fabric(
    n_nodes: int,
    *,
    su_nodes: int = 32,
    nics_per_node: int = 2,
    link_gbps: float = 400.0,
    storage_units: int = 2,
    unit_ports: int = 8,
    switch_ports: int = 64,
    oversubscription: float = 1.0,
    spines: int | None = None,
) -> nx.Graph:
    """Storage fabric graph [link_gbps: Gb/s per cable per direction].

    Vertices ``n{i}`` (kind ``node``), ``storage{j}`` (kind ``storage_unit``), leaves
    and spines (kind ``leaf`` / ``spine``).  unit_ports: NDR ports per storage unit
    (8 x 400 Gb/s = 400 GB/s covers an SSS 6000's 310 GB/s read).
    """
    k = int(switch_ports)
    if n_nodes < 1 or storage_units < 1:
        raise ValueError("need at least one node and one storage unit")
    if oversubscription < 1.0:
        raise ValueError("oversubscription must be >= 1")
    up_c = max(1, math.ceil(su_nodes / oversubscription))
    if su_nodes + up_c > k:
        raise ValueError(f"a storage leaf needs {su_nodes} down + {up_c} up ports > {k}")
    if unit_ports > k // 2:
        raise ValueError(f"a unit's {unit_ports} ports exceed half a {k}-port leaf")
    n_su = math.ceil(n_nodes / su_nodes)
    g = nx.Graph()
    g.add_nodes_from((f"n{i}", {"kind": "node", "tier": 0, "su": i // su_nodes, "index": i})
                     for i in range(n_nodes))
    g.add_nodes_from((f"storage{j}", {"kind": "storage_unit", "tier": 0, "index": j})
                     for j in range(storage_units))
    leaves: list[tuple[str, int]] = []  # (name, uplinks)
    edges = []

    def add(a, b, links, tier):
        edges.append((a, b, {"links": links, "link_gbps": link_gbps,
                             "capacity_gbps": links * link_gbps, "tier": tier}))

    for su in range(n_su):
        for nic in range(nics_per_node):
            name = f"storage:leaf:{su}:{nic}"
            leaves.append((name, up_c))
            g.add_node(name, kind="leaf", tier=1, side="compute", su=su)
            for i in range(su * su_nodes, min(n_nodes, (su + 1) * su_nodes)):
                add(f"n{i}", name, 1, "node-leaf")
    per_leaf = max(1, (k // 2) // unit_ports)  # units per storage-side leaf
    for m in range(math.ceil(storage_units / per_leaf)):
        name = f"storage:leaf:units:{m}"
        units = range(m * per_leaf, min(storage_units, (m + 1) * per_leaf))
        leaves.append((name, unit_ports * len(units)))
        g.add_node(name, kind="leaf", tier=1, side="storage")
        for j in units:
            add(f"storage{j}", name, unit_ports, "unit-leaf")
    total_up = sum(u for _, u in leaves)
    n_sp = spines if spines is not None else max(1, math.ceil(total_up / k))
    for s in range(n_sp):
        g.add_node(f"storage:spine:{s}", kind="spine", tier=2)
    for name, u in leaves:
        base, extra = divmod(u, n_sp)
        for s in range(n_sp):
            c = base + (1 if s < extra else 0)
            if c:
                add(name, f"storage:spine:{s}", c, "leaf-spine")
    g.add_edges_from(edges)
    g.graph.update(kind="storage", n_nodes=n_nodes, link_gbps=float(link_gbps),
                   switch_ports=k, storage_units=storage_units)
    return g


def storage_bandwidth_gb_s(graph: nx.Graph, node_indices, *, unit_media_gb_s=310.0) -> float:
    """Streaming bandwidth [GB/s] between a job's nodes and all storage units.

    Fluid limit over the two-tier Clos with even ECMP:
    ``min(sum_leaf min(nodes' NIC Gb/s, leaf uplink Gb/s), unit-leaf uplinks, unit
    ports) / 8`` and ``units * unit_media_gb_s`` (SSS 6000: 310 GB/s read, 155 GB/s write
    per unit, calibration reference README).  The spine layer is never the limit: every
    leaf reaches every spine and the storage-side leaves are non-blocking.
    """
    idx = np.unique(np.asarray(node_indices, dtype=np.int64).ravel())
    if idx.size == 0:
        return 0.0
    compute_side = 0.0
    leaf_nodes: dict[str, float] = {}
    for i in idx.tolist():
        for _, leaf, d in graph.edges(f"n{i}", data=True):
            leaf_nodes[leaf] = leaf_nodes.get(leaf, 0.0) + d["capacity_gbps"]
    for leaf, nic_gbps in leaf_nodes.items():
        up = sum(d["capacity_gbps"] for _, v, d in graph.edges(leaf, data=True)
                 if d["tier"] == "leaf-spine")
        compute_side += min(nic_gbps, up)
    unit_side = 0.0
    ports = 0.0
    for v, data in graph.nodes(data=True):
        if data.get("kind") == "leaf" and data.get("side") == "storage":
            unit_side += sum(d["capacity_gbps"] for _, _, d in graph.edges(v, data=True)
                             if d["tier"] == "leaf-spine")
        if data.get("kind") == "storage_unit":
            ports += sum(d["capacity_gbps"] for _, _, d in graph.edges(v, data=True))
    media = graph.graph["storage_units"] * float(unit_media_gb_s)
    return float(min(compute_side / 8.0, unit_side / 8.0, ports / 8.0, media))
