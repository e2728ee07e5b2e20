"""Topology builders: rail-optimised InfiniBand fat tree, two-tier CLOS, generic k-ary fat tree.

Every builder returns a :class:`networkx.Graph` whose vertices are compute nodes
``"n{i}"`` (attrs ``kind="node"``, ``tier=0``, ``su``, ``index``) and switches
(attrs ``kind`` in ``{"leaf", "spine", "core"}``, ``tier`` 1..3, ``plane``, ``pod``).
Parallel cables between the same two boxes are one edge (a *bundle*) with attrs
``links`` (number of cables), ``link_gbps`` (one cable, one direction),
``capacity_gbps = links * link_gbps`` (per direction, links are full duplex),
``tier`` in ``{"node-leaf", "leaf-spine", "spine-core"}`` and ``plane``.

The structure needed for fast routing is kept in ``graph.graph["layout"]`` (a
:class:`FabricLayout`): the routing code never walks the graph for a job's traffic, it
uses the regular up/down structure of a folded Clos.

Folded-Clos construction used by all kinds (one *plane* = one independent set of
spines; a rail in the rail-optimised design, the whole fabric otherwise):

* a leaf has ``d`` down ports and ``u`` up ports (``u = d / oversubscription``);
* two tiers when a plane has at most ``k`` leaves (``k`` = switch ports): every leaf
  connects to every spine of its plane with ``m1`` cables, ``m1`` the largest divisor of
  ``u`` with ``n_leaves * m1 <= k``, hence ``u / m1`` spines per plane.  For the NVIDIA
  DGX SuperPOD H100 reference architecture (4 SU of 32 nodes, 8 rails, 64-port QM9700)
  this gives 2 spines per rail with 16 cables to each leaf, 16 spines in all, as in the
  reference design;
* three tiers otherwise: pods of ``k/2`` leaves, ``u`` spines per pod (one cable to each
  leaf of the pod, ``k/2`` up), and ``u`` core groups; spine ``j`` of every pod connects
  to the cores of group ``j`` with ``m2`` cables each, ``m2`` the largest divisor of
  ``k/2`` with ``n_pods * m2 <= k``.  With ``u = k/2`` and ``k`` pods this is exactly
  the textbook k-ary fat tree (Al-Fares et al., SIGCOMM 2008): ``k^3/4`` hosts,
  ``5k^2/4`` switches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

KINDS = ("rail_optimized", "clos", "fat_tree")


@dataclass(frozen=True)
class PlaneLayout:
    """Up/down structure of one fabric plane (one rail, or the whole Clos)."""

    plane: int
    leaves: np.ndarray  # global leaf indices of this plane, in position order
    leaf_pod: np.ndarray  # pod of each leaf of the plane (position order)
    n_pods: int
    spines_per_pod: int  # u_s: spines in each pod (2-tier: the whole plane)
    m1: int  # cables leaf -> each spine of its pod
    cores_per_group: int  # 0 for two tiers
    m2: int  # cables spine -> each core of its group (0 for two tiers)
    shared_spines: bool = False  # clos: several "planes" of TORs share one spine set

    @property
    def tiers(self) -> int:
        return 3 if self.cores_per_group else 2


@dataclass(frozen=True)
class FabricLayout:
    """Regular structure of a built fabric (kept in ``graph.graph["layout"]``)."""

    kind: str
    n_nodes: int
    nics_per_node: int
    link_gbps: float
    node_su: np.ndarray  # (n_nodes,) scalable unit / rack / leaf group of each node
    node_leaf: np.ndarray  # (n_nodes, nics) global leaf index of each NIC
    node_nic_links: int  # cables per NIC edge (fat_tree bundles all NICs on one leaf)
    leaf_names: tuple[str, ...]
    leaf_plane: np.ndarray  # (n_leaves,) plane (index into planes) of each leaf
    leaf_pos: np.ndarray  # (n_leaves,) position of the leaf within its plane
    planes: tuple[PlaneLayout, ...]
    # integer vertex ids (0..n_nodes-1 are the compute nodes) for fast link keys
    vertex_names: tuple[str, ...] = ()
    vertex_index: dict = field(default_factory=dict, repr=False)
    leaf_vid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    spine_vid: tuple = ()  # per plane: (n_pods, spines_per_pod) vertex ids
    core_vid: tuple = ()  # per plane: (spines_per_pod, cores_per_group) ids, or empty

    def spine_name(self, plane: int, pod: int, j: int) -> str:
        return f"spine:p{plane}:{pod}:{j}"

    def core_name(self, plane: int, j: int, c: int) -> str:
        return f"core:p{plane}:{j}:{c}"


def _largest_divisor_at_most(n: int, limit: int) -> int:
    """Largest divisor of ``n`` that is <= ``limit`` (at least 1)."""
    best = 1
    for m in range(1, min(n, max(limit, 1)) + 1):
        if n % m == 0:
            best = m
    return best


def _add_clos_plane(
    edges: list,
    switches: list,
    plane: int,
    leaf_ids: np.ndarray,
    leaf_names: list[str],
    uplinks: int,
    switch_ports: int,
    link_gbps: float,
    spines_per_plane: int | None,
) -> PlaneLayout:
    """Add spines (and cores) above ``leaf_ids`` of one plane; return its layout."""
    k = switch_ports
    n_leaves = len(leaf_ids)
    if n_leaves == 1:  # one leaf per plane (a single SU, a Lenovo T-shirt size): no spines
        return PlaneLayout(plane, np.asarray(leaf_ids), np.zeros(1, dtype=np.int64), 1, 0, 0, 0, 0)
    if n_leaves <= k:
        if spines_per_plane is not None:
            if uplinks % spines_per_plane:
                raise ValueError(
                    f"spines={spines_per_plane} must divide the {uplinks} leaf uplinks")
            m1 = uplinks // spines_per_plane
            if n_leaves * m1 > k:
                raise ValueError(
                    f"{spines_per_plane} spines of {k} ports cannot take {n_leaves} leaves "
                    f"x {m1} cables")
        else:
            m1 = _largest_divisor_at_most(uplinks, k // n_leaves)
        n_sp = uplinks // m1
        for j in range(n_sp):
            name = f"spine:p{plane}:0:{j}"
            switches.append((name, {"kind": "spine", "tier": 2, "plane": plane, "pod": 0}))
            for li in leaf_ids:
                edges.append((leaf_names[li], name, m1, "leaf-spine", plane))
        return PlaneLayout(plane, np.asarray(leaf_ids), np.zeros(n_leaves, dtype=np.int64),
                           1, n_sp, m1, 0, 0)
    # three tiers: pods of k/2 leaves, uplinks spines per pod, one cable per leaf
    p = k // 2
    n_pods = math.ceil(n_leaves / p)
    if n_pods > k:
        raise ValueError(f"{n_leaves} leaves per plane exceed a three-tier fabric of "
                         f"{k}-port switches ({k * p} leaves)")
    m2 = _largest_divisor_at_most(p, k // n_pods)
    cpg = p // m2
    leaf_pod = np.arange(n_leaves) // p
    for pod in range(n_pods):
        members = leaf_ids[leaf_pod == pod]
        for j in range(uplinks):
            sname = f"spine:p{plane}:{pod}:{j}"
            switches.append((sname, {"kind": "spine", "tier": 2, "plane": plane, "pod": pod}))
            for li in members:
                edges.append((leaf_names[li], sname, 1, "leaf-spine", plane))
            for c in range(cpg):
                edges.append((sname, f"core:p{plane}:{j}:{c}", m2, "spine-core", plane))
    for j in range(uplinks):
        for c in range(cpg):
            switches.append((f"core:p{plane}:{j}:{c}",
                             {"kind": "core", "tier": 3, "plane": plane, "pod": -1}))
    return PlaneLayout(plane, np.asarray(leaf_ids), leaf_pod, n_pods, uplinks, 1, cpg, m2)


def build_fabric(
    kind: str,
    n_nodes: int,
    *,
    gpus_per_node: int = 8,
    su_nodes: int = 32,
    rails: int = 8,
    link_gbps: float = 400.0,
    switch_ports: int = 64,
    oversubscription: float = 1.0,
    tor_uplinks_per_spine: int = 2,
    spines: int | None = None,
    ports_per_nic: int = 1,
) -> nx.Graph:
    """Build a compute fabric as a networkx graph.

    kind
        ``"rail_optimized"``: NVIDIA DGX SuperPOD H100 style InfiniBand (Blue Vela,
        arXiv 2407.05467): scalable units of ``su_nodes`` nodes, ``rails`` NICs per
        node, NIC ``r`` of every node of an SU to the rail-``r`` leaf of that SU, each
        rail a separate folded-Clos plane (spines per rail); ``spines`` = spines per
        rail (default: fewest that fit).
        ``"clos"``: Vela-style two-tier Ethernet CLOS (IBM Research blog, 2023): racks
        of ``su_nodes`` nodes, each of the ``rails`` NICs to a different TOR of the
        rack, every TOR with ``tor_uplinks_per_spine`` links to each of ``spines``
        spines (default 4).  ``switch_ports`` bounds the TORs; the spines are modular
        chassis with one port per TOR uplink (``n_tors * tor_uplinks_per_spine``).
        ``"fat_tree"``: generic k-ary fat tree (``k = switch_ports``) with leaf
        oversubscription ``d:u``; every node attaches to one leaf with ``rails``
        cables, ``floor(d / rails)`` nodes per leaf.
    n_nodes [-], link_gbps [Gb/s per cable per direction], switch_ports [-],
    oversubscription [-] (leaf down/up bandwidth ratio, 1 = non-blocking).
    ports_per_nic [-]: cables from each NIC to its leaf (Lenovo: 4 dual-port CX-7 split
    over two switches = 2 rails x 4 ports of 200 Gb/s).  A plane with a single leaf gets
    no spines.  gpus_per_node is recorded in ``graph.graph`` (collectives use it).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown fabric kind {kind!r}; expected one of {KINDS}")
    if n_nodes < 1:
        raise ValueError("n_nodes must be >= 1")
    if oversubscription < 1.0:
        raise ValueError("oversubscription must be >= 1")
    k = int(switch_ports)
    nodes_idx = np.arange(n_nodes)
    leaf_names: list[str] = []
    leaf_plane: list[int] = []
    leaf_pos: list[int] = []
    switches: list = []
    edges: list = []  # (u, v, links, tier, plane)
    planes: list[PlaneLayout] = []

    if ports_per_nic < 1:
        raise ValueError("ports_per_nic must be >= 1")
    if kind == "rail_optimized":
        d = su_nodes * ports_per_nic
        u = max(1, round(d / oversubscription))
        n_su = math.ceil(n_nodes / su_nodes)
        if d + (u if n_su > 1 else 0) > k:
            raise ValueError(f"a leaf needs {d} down + {u} up ports > {k}")
        node_su = nodes_idx // su_nodes
        nics = rails
        node_leaf = np.empty((n_nodes, rails), dtype=np.int64)
        for r in range(rails):
            ids = np.arange(n_su) + r * n_su
            for s in range(n_su):
                name = f"leaf:p{r}:{s}"
                leaf_names.append(name)
                leaf_plane.append(r)
                leaf_pos.append(s)
                switches.append((name, {"kind": "leaf", "tier": 1, "plane": r, "pod": -1, "su": s}))
            node_leaf[:, r] = ids[node_su]
            planes.append(_add_clos_plane(edges, switches, r, ids, leaf_names, u, k,
                                          link_gbps, spines))
        nic_links = ports_per_nic
    elif kind == "clos":
        n_racks = math.ceil(n_nodes / su_nodes)
        node_su = nodes_idx // su_nodes
        nics = rails
        if su_nodes > k:
            raise ValueError(f"{su_nodes} nodes per rack exceed {k} TOR ports")
        n_tors = n_racks * rails
        n_sp = spines if spines is not None else 4
        if su_nodes * ports_per_nic + n_sp * tor_uplinks_per_spine > k:
            raise ValueError(f"a TOR needs {su_nodes * ports_per_nic} down + "
                             f"{n_sp * tor_uplinks_per_spine} up ports > {k}")
        node_leaf = np.empty((n_nodes, rails), dtype=np.int64)
        for rack in range(n_racks):
            for i in range(rails):
                name = f"leaf:p0:{rack * rails + i}"
                leaf_names.append(name)
                leaf_plane.append(0)
                leaf_pos.append(rack * rails + i)
                switches.append((name, {"kind": "leaf", "tier": 1, "plane": 0, "pod": 0, "su": rack}))
        for i in range(rails):
            node_leaf[:, i] = node_su * rails + i
        for j in range(n_sp):
            sname = f"spine:p0:0:{j}"
            switches.append((sname, {"kind": "spine", "tier": 2, "plane": 0, "pod": 0}))
            for t in range(n_tors):
                edges.append((leaf_names[t], sname, tor_uplinks_per_spine, "leaf-spine", 0))
        planes.append(PlaneLayout(0, np.arange(n_tors), np.zeros(n_tors, dtype=np.int64), 1,
                                  n_sp, tor_uplinks_per_spine, 0, 0, shared_spines=True))
        nic_links = ports_per_nic
    else:  # fat_tree
        d = round(k * oversubscription / (1.0 + oversubscription))
        u = k - d
        per_leaf = d // (rails * ports_per_nic)
        if per_leaf < 1:
            raise ValueError(f"{rails} cables per node exceed {d} leaf down ports")
        n_leaves = math.ceil(n_nodes / per_leaf)
        node_su = nodes_idx // per_leaf
        nics = 1
        for s in range(n_leaves):
            name = f"leaf:p0:{s}"
            leaf_names.append(name)
            leaf_plane.append(0)
            leaf_pos.append(s)
            switches.append((name, {"kind": "leaf", "tier": 1, "plane": 0, "pod": -1, "su": s}))
        node_leaf = node_su[:, None].copy()
        planes.append(_add_clos_plane(edges, switches, 0, np.arange(n_leaves), leaf_names, u, k,
                                      link_gbps, spines))
        nic_links = rails * ports_per_nic

    g = nx.Graph()
    g.add_nodes_from((f"n{i}", {"kind": "node", "tier": 0, "su": int(node_su[i]), "index": i})
                     for i in range(n_nodes))
    g.add_nodes_from(switches)
    # leaf pods are known only after planes are built
    for pl in planes:
        for pos, li in enumerate(pl.leaves):
            g.nodes[leaf_names[li]]["pod"] = int(pl.leaf_pod[pos])
    node_edges = (
        (f"n{i}", leaf_names[node_leaf[i, r]],
         {"links": nic_links, "link_gbps": link_gbps, "capacity_gbps": nic_links * link_gbps,
          "tier": "node-leaf", "plane": int(leaf_plane[node_leaf[i, r]])})
        for i in range(n_nodes) for r in range(nics)
    )
    g.add_edges_from(node_edges)
    g.add_edges_from(
        (a, b, {"links": m, "link_gbps": link_gbps, "capacity_gbps": m * link_gbps,
                "tier": t, "plane": p})
        for a, b, m, t, p in edges
    )
    names = tuple(g.nodes)
    index = {name: i for i, name in enumerate(names)}
    spine_vid, core_vid = [], []
    for pl in planes:
        p = pl.plane
        spine_vid.append(np.array([[index[f"spine:p{p}:{pod}:{j}"] for j in range(pl.spines_per_pod)]
                                   for pod in range(pl.n_pods)], dtype=np.int64))
        core_vid.append(np.array([[index[f"core:p{p}:{j}:{c}"] for c in range(pl.cores_per_group)]
                                  for j in range(pl.spines_per_pod)], dtype=np.int64)
                        if pl.cores_per_group else np.zeros((0, 0), np.int64))
    layout = FabricLayout(
        kind=kind, n_nodes=n_nodes, nics_per_node=nics, link_gbps=float(link_gbps),
        node_su=node_su, node_leaf=node_leaf, node_nic_links=nic_links,
        leaf_names=tuple(leaf_names), leaf_plane=np.asarray(leaf_plane),
        leaf_pos=np.asarray(leaf_pos), planes=tuple(planes),
        vertex_names=names, vertex_index=index,
        leaf_vid=np.array([index[x] for x in leaf_names], dtype=np.int64),
        spine_vid=tuple(spine_vid), core_vid=tuple(core_vid),
    )
    g.graph.update(kind=kind, n_nodes=n_nodes, gpus_per_node=gpus_per_node,
                   link_gbps=float(link_gbps), switch_ports=k, layout=layout,
                   node_bandwidth_gbps=float(nics * nic_links * link_gbps))
    return g


def fabric_counts(graph: nx.Graph) -> dict:
    """Count nodes, switches per tier and cables per tier of a built fabric."""
    out = {"node": 0, "leaf": 0, "spine": 0, "core": 0,
           "node-leaf": 0, "leaf-spine": 0, "spine-core": 0}
    for _, kind in graph.nodes(data="kind"):
        out[kind] += 1
    out["nodes"] = out.pop("node")
    for _, _, data in graph.edges(data=True):
        out[data["tier"]] += data["links"]
    return out


#: Reference fabrics of the seed systems: ``build_fabric`` keyword arguments and the
#: transport the compute model should use.
FABRIC_PRESETS: dict[str, dict] = {
    # Blue Vela: DGX SuperPOD H100 compute fabric, 8 rails of NDR 400 Gb/s, QM9700
    "blue_vela": {"kind": "rail_optimized", "su_nodes": 32, "rails": 8, "link_gbps": 400.0,
                  "switch_ports": 64, "transport": "ib_rdma"},
    # Vela: two-tier CLOS, each NIC on its own TOR, 2 x 100G from each TOR to 4 spines,
    # RoCE with GPUDirect RDMA; 2 NICs per node (2 TORs x 800G = the 1.6 Tb/s cross-rack
    # of the seed); 6 nodes per rack is an assumption
    "vela": {"kind": "clos", "su_nodes": 6, "rails": 2, "link_gbps": 100.0, "switch_ports": 64,
             "spines": 4, "tor_uplinks_per_spine": 2, "transport": "roce"},
    # Lenovo GenAI RA, 4/8/16 nodes: 2 switches, each node 4 x 200G to each (8 x 200G,
    # 200 Gb/s per GPU); QM9700 NDR (ports split to 200G) or Spectrum SN4600 200GbE
    "lenovo_qm9700": {"kind": "rail_optimized", "su_nodes": 16, "rails": 2, "ports_per_nic": 4,
                      "link_gbps": 200.0, "switch_ports": 128, "transport": "ib_rdma"},
    "lenovo_sn4600": {"kind": "rail_optimized", "su_nodes": 16, "rails": 2, "ports_per_nic": 4,
                      "link_gbps": 200.0, "switch_ports": 64, "transport": "roce"},
}


def build_preset_fabric(name: str, n_nodes: int, **overrides) -> tuple[nx.Graph, str]:
    """``(graph, transport)`` of a reference fabric (see :data:`FABRIC_PRESETS`)."""
    try:
        kw = dict(FABRIC_PRESETS[name])
    except KeyError:
        raise ValueError(f"unknown fabric preset {name!r}; expected one of "
                         f"{tuple(FABRIC_PRESETS)}") from None
    kw.update(overrides)
    transport = kw.pop("transport")
    kind = kw.pop("kind")
    return build_fabric(kind, n_nodes, **kw), transport
