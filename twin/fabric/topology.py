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
    plane_hall: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    hall_nodes: tuple = ()  # nodes of each hall (one fabric per hall, joined at a site tier)
    site_oversubscription: float = 1.0
    aggregated: bool = False  # no networkx vertices or edges: the layout alone routes
    leaf_pod_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)

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
    edges: list | None,
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
            if edges is not None:
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
            if edges is None:
                continue
            for li in members:
                edges.append((leaf_names[li], sname, 1, "leaf-spine", plane))
            for c in range(cpg):
                edges.append((sname, f"core:p{plane}:{j}:{c}", m2, "spine-core", plane))
    for j in range(uplinks):
        for c in range(cpg):
            switches.append((f"core:p{plane}:{j}:{c}",
                             {"kind": "core", "tier": 3, "plane": plane, "pod": -1}))
    return PlaneLayout(plane, np.asarray(leaf_ids), leaf_pod, n_pods, uplinks, 1, cpg, m2)


def max_fabric_nodes(kind: str, *, su_nodes: int = 32, rails: int = 8, switch_ports: int = 64,
                     oversubscription: float = 1.0, ports_per_nic: int = 1,
                     halls: int = 1) -> int | None:
    """Largest number of nodes [-] a fabric of this kind and switch radix can hold.

    A plane is a folded Clos of ``k``-port switches of at most three tiers: two tiers
    hold ``k`` leaves, three tiers ``k`` pods of ``k/2`` leaves (Al-Fares et al., SIGCOMM
    2008: a three-tier fat tree of ``k``-port switches has ``k^3/4`` host ports).  A
    rail-optimised leaf serves one scalable unit of ``su_nodes`` nodes (``k (k/2)
    su_nodes`` nodes); a fat-tree leaf ``floor(d / rails)`` nodes.  With a site tier
    (``halls`` > 1) every hall has such a fabric and the site switches join at most
    ``k`` halls.  ``None`` for ``"clos"``: its spines are modular chassis sized to the
    TORs (only a rack's nodes are bounded by the TOR ports).
    """
    k = int(switch_ports)
    halls = max(int(halls), 1)
    if halls > k:
        return 0
    if kind == "rail_optimized":
        d = su_nodes * ports_per_nic
        if d > k:
            return 0
        u = max(1, round(d / oversubscription))
        per_hall = su_nodes if d + u > k else k * (k // 2) * su_nodes
    elif kind == "fat_tree":
        d = round(k * oversubscription / (1.0 + oversubscription))
        per_leaf = d // (rails * ports_per_nic)
        per_hall = k * (k // 2) * per_leaf if per_leaf >= 1 else 0
    elif kind == "clos":
        return None if su_nodes <= k else 0
    else:
        raise ValueError(f"unknown fabric kind {kind!r}; expected one of {KINDS}")
    return per_hall * halls


def _add_leaves(out: tuple, plane: int, positions, sus, pod: int) -> None:
    """Append the leaves ``leaf:p{plane}:{pos}`` (their scalable units ``sus``) to the
    ``(names, planes, positions, switches)`` lists of a fabric under construction."""
    names, planes, pos_out, switches = out
    for pos, su in zip(positions, sus, strict=True):
        name = f"leaf:p{plane}:{pos}"
        names.append(name)
        planes.append(plane)
        pos_out.append(pos)
        switches.append((name, {"kind": "leaf", "tier": 1, "plane": plane, "pod": pod,
                                "su": int(su)}))


#: above this many node-NIC cables the graph holds no vertices or edges (the layout
#: alone routes; see :func:`build_fabric`)
AGGREGATE_ABOVE_CABLES = 200_000


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
    planes: int = 1,
    hall_nodes=None,
    site_oversubscription: float = 1.0,
    aggregate: bool | None = None,
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
    planes [-]: multi-plane (rail_optimized, clos): every NIC port splits into
    ``planes`` ports of ``link_gbps / planes``, each cabled into its own plane (so a
    node has ``rails * planes`` fabric ports); ``switch_ports`` counts ports at the
    split speed (a 51.2 Tb/s switch: 64 x 800G or 256 x 200G).
    hall_nodes: node count of each hall when every hall has its own fabric (a multiple
    of ``su_nodes`` each, summing to ``n_nodes``); the halls' top tiers join at a site
    tier (a fourth tier) whose uplinks carry each hall's bandwidth divided by
    ``site_oversubscription``.  ``None``: one fabric for all nodes.
    aggregate: build no networkx vertices or edges, only the layout (the regular
    structure routing uses, per leaf, i.e. per scalable unit); ``None`` does so above
    :data:`AGGREGATE_ABOVE_CABLES` node cables.  Routing, flow and hop figures are the
    same either way; :func:`fabric_counts` counts from the layout.
    A fabric that cannot hold ``n_nodes`` is refused naming the largest it holds
    (:func:`max_fabric_nodes`).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown fabric kind {kind!r}; expected one of {KINDS}")
    if n_nodes < 1:
        raise ValueError("n_nodes must be >= 1")
    if oversubscription < 1.0:
        raise ValueError("oversubscription must be >= 1")
    if site_oversubscription < 1.0:
        raise ValueError("site_oversubscription must be >= 1")
    if ports_per_nic < 1:
        raise ValueError("ports_per_nic must be >= 1")
    if planes < 1 or (planes > 1 and kind == "fat_tree"):
        raise ValueError("planes must be >= 1 (and 1 for a fat_tree: one plane)")
    rails_in, link_in = rails, link_gbps
    rails, link_gbps = rails * planes, link_gbps / planes
    halls = [int(n_nodes)] if hall_nodes is None else [int(x) for x in hall_nodes]
    if sum(halls) != n_nodes or min(halls) < 1:
        raise ValueError(f"hall_nodes {halls} must be positive and sum to n_nodes={n_nodes}")
    k = int(switch_ports)
    cap = max_fabric_nodes(kind, su_nodes=su_nodes, rails=rails, switch_ports=k,
                           oversubscription=oversubscription, ports_per_nic=ports_per_nic)
    if len(halls) > k:
        raise ValueError(f"{len(halls)} halls exceed a site tier of {k}-port switches "
                         f"(at most {k} halls)")
    if cap is not None and max(halls) > cap:
        where = "a hall of" if len(halls) > 1 else ""
        raise ValueError(
            f"{where} {max(halls)} nodes exceed the largest {kind} fabric of {k}-port "
            f"switches ({su_nodes} nodes per scalable unit, three tiers): {cap} nodes "
            f"(with a site tier joining up to {k} such halls: {cap * k}); use switches with "
            f"more ports, more planes, or one fabric per hall".replace("  ", " ").strip())
    if kind == "fat_tree":
        d = round(k * oversubscription / (1.0 + oversubscription))
        per_leaf = d // (rails * ports_per_nic)
        if per_leaf < 1:
            raise ValueError(f"{rails} cables per node exceed {d} leaf down ports")
    if len(halls) > 1:
        unit = su_nodes if kind != "fat_tree" else per_leaf
        if any(h % unit for h in halls[:-1]):
            raise ValueError(f"hall_nodes {halls}: every hall but the last must hold a "
                             f"multiple of {unit} nodes (a scalable unit never spans halls)")
    if aggregate is None:
        aggregate = n_nodes * (rails if kind != "fat_tree" else 1) > AGGREGATE_ABOVE_CABLES
    leaf_names: list[str] = []
    leaf_plane: list[int] = []
    leaf_pos: list[int] = []
    switches: list = []
    edges: list | None = None if aggregate else []  # (u, v, links, tier, plane)
    planes_out: list[PlaneLayout] = []
    node_leaf = np.empty((n_nodes, rails if kind != "fat_tree" else 1), dtype=np.int64)
    node_su = np.empty(n_nodes, dtype=np.int64)
    plane_hall: list[int] = []
    leaves_out = (leaf_names, leaf_plane, leaf_pos, switches)
    off = 0
    su_off = 0
    for h, n_h in enumerate(halls):
        nodes_idx = np.arange(n_h)
        if kind == "rail_optimized":
            d = su_nodes * ports_per_nic
            u = max(1, round(d / oversubscription))
            n_su = math.ceil(n_h / su_nodes)
            if d + (u if n_su > 1 else 0) > k:
                raise ValueError(f"a leaf needs {d} down + {u} up ports > {k}")
            local_su = nodes_idx // su_nodes
            nics = rails
            for r in range(rails):
                p_i = h * rails + r
                ids = np.arange(n_su) + len(leaf_names)
                _add_leaves(leaves_out, p_i, range(n_su), su_off + np.arange(n_su), -1)
                node_leaf[off:off + n_h, r] = ids[local_su]
                planes_out.append(_add_clos_plane(edges, switches, p_i, ids, leaf_names, u, k,
                                                  link_gbps, spines))
                plane_hall.append(h)
            nic_links = ports_per_nic
        elif kind == "clos":
            n_racks = math.ceil(n_h / su_nodes)
            local_su = nodes_idx // su_nodes
            nics = rails
            if su_nodes > k:
                raise ValueError(f"{su_nodes} nodes per rack exceed {k} TOR ports")
            n_tors = n_racks * rails
            n_sp = spines if spines is not None else 4
            if su_nodes * ports_per_nic + n_sp * tor_uplinks_per_spine > k:
                raise ValueError(f"a TOR needs {su_nodes * ports_per_nic} down + "
                                 f"{n_sp * tor_uplinks_per_spine} up ports > {k}")
            first = len(leaf_names)
            _add_leaves(leaves_out, h, range(n_tors), su_off + np.arange(n_tors) // rails, 0)
            for i in range(rails):
                node_leaf[off:off + n_h, i] = first + local_su * rails + i
            for j in range(n_sp):
                sname = f"spine:p{h}:0:{j}"
                switches.append((sname, {"kind": "spine", "tier": 2, "plane": h, "pod": 0}))
                if edges is not None:
                    for t in range(n_tors):
                        edges.append((leaf_names[first + t], sname, tor_uplinks_per_spine,
                                      "leaf-spine", h))
            planes_out.append(PlaneLayout(h, np.arange(n_tors) + first,
                                          np.zeros(n_tors, dtype=np.int64), 1, n_sp,
                                          tor_uplinks_per_spine, 0, 0, shared_spines=True))
            plane_hall.append(h)
            n_su = n_racks
            nic_links = ports_per_nic
        else:  # fat_tree
            u = k - d
            n_leaves = math.ceil(n_h / per_leaf)
            local_su = nodes_idx // per_leaf
            nics = 1
            first = len(leaf_names)
            _add_leaves(leaves_out, h, range(n_leaves), su_off + np.arange(n_leaves), -1)
            node_leaf[off:off + n_h, 0] = first + local_su
            planes_out.append(_add_clos_plane(edges, switches, h, np.arange(n_leaves) + first,
                                              leaf_names, u, k, link_gbps, spines))
            plane_hall.append(h)
            n_su = n_leaves
            nic_links = rails * ports_per_nic
        node_su[off:off + n_h] = su_off + local_su
        off += n_h
        su_off += n_su

    if len(halls) > 1:  # site tier: each hall plane's top, and one site switch set per rail
        switches += [(f"site:p{pl.plane}", {"kind": "site_uplink", "tier": 4, "plane": pl.plane,
                                             "pod": -1}) for pl in planes_out]
        switches += [(f"site:r{r}", {"kind": "site", "tier": 4, "plane": -1, "pod": -1})
                     for r in range(rails if kind != "fat_tree" else 1)]
    names = tuple(f"n{i}" for i in range(n_nodes)) + tuple(name for name, _ in switches)
    index = {name: i for i, name in enumerate(names)}
    g = nx.Graph()
    if not aggregate:
        g.add_nodes_from((f"n{i}", {"kind": "node", "tier": 0, "su": int(node_su[i]), "index": i})
                         for i in range(n_nodes))
        g.add_nodes_from(switches)
        # leaf pods are known only after planes are built
        for pl in planes_out:
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
            for a, b, m, t, p in (edges or ())
        )
        assert tuple(g.nodes) == names
        if len(halls) > 1:
            per_plane = rails if kind != "fat_tree" else 1
            for pl in planes_out:
                rails_of = range(per_plane) if kind == "clos" else [pl.plane % per_plane]
                tops = ([f"core:p{pl.plane}:{j}:{c}" for j in range(pl.spines_per_pod)
                         for c in range(pl.cores_per_group)] if pl.cores_per_group else
                        [f"spine:p{pl.plane}:{pod}:{j}" for pod in range(pl.n_pods)
                         for j in range(pl.spines_per_pod)] or
                        [leaf_names[li] for li in pl.leaves])
                g.add_edges_from((t, f"site:r{r}", {"links": 1, "link_gbps": link_gbps,
                                                    "capacity_gbps": link_gbps,
                                                    "tier": "site", "plane": pl.plane})
                                 for t in tops for r in rails_of)
    leaf_pod_id = np.empty(len(leaf_names), dtype=np.int64)  # pods numbered site-wide
    n_pod_ids = 0
    for pl in planes_out:
        leaf_pod_id[pl.leaves] = n_pod_ids + pl.leaf_pod
        n_pod_ids += pl.n_pods
    spine_vid, core_vid = [], []
    for pl in planes_out:
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
        leaf_pos=np.asarray(leaf_pos), planes=tuple(planes_out),
        vertex_names=names, vertex_index=index,
        leaf_vid=np.array([index[x] for x in leaf_names], dtype=np.int64),
        spine_vid=tuple(spine_vid), core_vid=tuple(core_vid),
        plane_hall=np.asarray(plane_hall, dtype=np.int64),
        hall_nodes=tuple(halls), site_oversubscription=float(site_oversubscription),
        aggregated=bool(aggregate), leaf_pod_id=leaf_pod_id,
    )
    g.graph.update(kind=kind, n_nodes=n_nodes, gpus_per_node=gpus_per_node,
                   link_gbps=float(link_gbps), switch_ports=k, layout=layout,
                   node_bandwidth_gbps=float(nics * nic_links * link_gbps),
                   rails=rails_in, planes=planes, nic_port_gbps=float(link_in),
                   halls=len(halls), aggregated=bool(aggregate))
    return g


def fabric_counts(graph: nx.Graph) -> dict:
    """Count nodes, switches per tier and cables per tier of a built fabric.

    Closed form from the layout (so an aggregated fabric, with no networkx edges, is
    counted too): per plane ``n_pods * u`` spines, ``u * cores_per_group`` cores,
    ``leaves * u * m1`` leaf-spine and ``n_pods * u * cores_per_group * m2`` spine-core
    cables; ``nodes * nics * cables per NIC`` node-leaf cables.
    """
    lay = graph.graph["layout"]
    out = {"nodes": lay.n_nodes, "leaf": len(lay.leaf_names), "spine": 0, "core": 0,
           "node-leaf": lay.n_nodes * lay.nics_per_node * lay.node_nic_links,
           "leaf-spine": 0, "spine-core": 0}
    for pl in lay.planes:
        u = pl.spines_per_pod
        out["spine"] += pl.n_pods * u
        out["core"] += u * pl.cores_per_group
        out["leaf-spine"] += len(pl.leaves) * u * pl.m1
        out["spine-core"] += pl.n_pods * u * pl.cores_per_group * pl.m2
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
