"""ECMP routing, link loads and achievable bandwidth of a job's collectives.

Routing model (fluid, per flow): up/down shortest paths of the folded Clos, split over
the equal-cost next hops in proportion to the number of working cables to each (static
ECMP hashing of many flows, as RoCE/IB adaptive-off fabrics do).  A flow from leaf ``L``
to leaf ``L'`` goes through spine index ``j`` with weight ``M[L,j] * A[L',j] * R_j``,
where ``M`` counts working cables leaf->spine, ``A`` says spine ``j`` still reaches
``L'`` and ``R_j`` that the core group ``j`` still joins the two pods (three tiers).
Between pods the spine->core hop is split the same way over the cores of group ``j``.

The achieved rate of a job is set by its most loaded link: every NIC offers its line
rate, the job runs at ``min(1, capacity / load)`` over the links it uses (jobs sharing a
link each get a share proportional to their offered load).  A failed NIC moves that
node's traffic to its remaining NICs (NCCL PXN through NVLink), so the node offers
``nics / working_nics`` times more per NIC.

Traffic patterns of a collective on the job's nodes (ascending node order, the order a
topology-aware NCCL ring uses):

* ``"ring"``: ring all-reduce / reduce-scatter / all-gather, one ring per NIC (rail);
  node ``k`` sends to node ``k+1`` at line rate.
* ``"all_to_all"``: every node sends ``1/(n-1)`` of its line rate to every other node
  (MoE all-to-all; also the worst case for bisection).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from twin.fabric.topology import FabricLayout, PlaneLayout

PATTERNS = ("ring", "all_to_all")


def _layout(graph: nx.Graph) -> FabricLayout:
    try:
        return graph.graph["layout"]
    except KeyError:
        raise ValueError("graph was not built by twin.fabric.build_fabric") from None


def _as_nodes(node_indices, n_nodes: int) -> np.ndarray:
    idx = np.unique(np.asarray(node_indices, dtype=np.int64).ravel())
    if idx.size and (idx[0] < 0 or idx[-1] >= n_nodes):
        raise ValueError(f"node index out of range 0..{n_nodes - 1}")
    return idx


def placement_hops(graph: nx.Graph, node_indices) -> dict:
    """Switch hops between the nodes of a placement (cables crossed, NIC 0 plane).

    Same leaf: 2 (node-leaf-node); same pod, other leaf: 4; other pod: 6.
    Returns ``{"max_hops", "mean_hops" (over ordered pairs of distinct nodes), "sus"
    (distinct scalable units / racks), "leaves", "pods", "nodes"}``.
    """
    lay = _layout(graph)
    idx = _as_nodes(node_indices, lay.n_nodes)
    n = idx.size
    leaves = lay.node_leaf[idx, 0]
    plane = lay.planes[int(lay.leaf_plane[leaves[0]])] if n else lay.planes[0]
    pods = plane.leaf_pod[lay.leaf_pos[leaves]] if n else leaves
    _, c_leaf = np.unique(leaves, return_counts=True)
    _, c_pod = np.unique(pods, return_counts=True)
    sus = int(np.unique(lay.node_su[idx]).size)
    if n < 2:
        return {"max_hops": 0, "mean_hops": 0.0, "sus": sus, "leaves": int(c_leaf.size),
                "pods": int(c_pod.size), "nodes": int(n)}
    same_leaf = float(np.sum(c_leaf * (c_leaf - 1.0)))
    same_pod = float(np.sum(c_pod * (c_pod - 1.0))) - same_leaf
    other = n * (n - 1.0) - same_leaf - same_pod
    mean = (2 * same_leaf + 4 * same_pod + 6 * other) / (n * (n - 1.0))
    mx = 6 if other > 0 else (4 if same_pod > 0 else 2)
    return {"max_hops": mx, "mean_hops": mean, "sus": sus, "leaves": int(c_leaf.size),
            "pods": int(c_pod.size), "nodes": int(n)}


def ecmp_path_count(graph: nx.Graph, src: int, dst: int) -> int:
    """Number of equal-cost shortest node-to-node paths, counting parallel cables.

    Closed form from the layout over every pair of NICs of ``src`` and ``dst`` whose
    leaves share a plane, keeping the pairs at the shortest distance: same leaf 1 path
    (2 hops); same pod ``spines * m1^2`` (4 hops); other pods
    ``spines * m1^2 * cores_per_group * m2^2`` (6 hops); a path picks one cable per hop.
    """
    lay = _layout(graph)
    best, total = None, 0
    nic = lay.node_nic_links**2
    for i in range(lay.nics_per_node):
        la = lay.node_leaf[src, i]
        for j in range(lay.nics_per_node):
            lb = lay.node_leaf[dst, j]
            if lay.leaf_plane[la] != lay.leaf_plane[lb]:
                continue
            pl = lay.planes[int(lay.leaf_plane[la])]
            if la == lb:
                hops, paths = 2, 1
            else:
                pa, pb = pl.leaf_pod[lay.leaf_pos[la]], pl.leaf_pod[lay.leaf_pos[lb]]
                paths = pl.spines_per_pod * pl.m1**2
                hops = 4
                if pa != pb:
                    paths *= pl.cores_per_group * pl.m2**2
                    hops = 6
            if best is None or hops < best:
                best, total = hops, 0
            if hops == best:
                total += nic * paths
    return total


# ---------------------------------------------------------------- failures


@dataclass
class _Failures:
    """Cables removed per bundle, and dead switches, keyed by vertex names."""

    cut: Counter
    dead: frozenset

    @classmethod
    def build(cls, failed_links: Iterable = (), failed_switches: Iterable = ()) -> _Failures:
        cut: Counter = Counter()
        for link in failed_links:
            a, b = link
            cut[frozenset((a, b))] += 1
        return cls(cut, frozenset(failed_switches))

    def working(self, a: str, b: str, links: int) -> int:
        if a in self.dead or b in self.dead:
            return 0
        return max(0, links - self.cut.get(frozenset((a, b)), 0))

    def __bool__(self) -> bool:
        return bool(self.cut) or bool(self.dead)


# ---------------------------------------------------------------- traffic


@dataclass
class _Segment:
    """Loads on a group of directed links: keys built lazily (names are slow)."""

    load_gbps: np.ndarray
    cap_gbps: np.ndarray
    keys: object  # callable returning a list of (u, v) names aligned with the arrays

    def fraction(self) -> float:
        used = self.load_gbps > 1e-12
        if not np.any(used):
            return 1.0
        return float(np.min(self.cap_gbps[used] / self.load_gbps[used]))


def _nic_state(lay: FabricLayout, idx: np.ndarray, fails: _Failures) -> np.ndarray:
    """(n, nics) working cables on each NIC edge of the job's nodes."""
    ok = np.full((idx.size, lay.nics_per_node), lay.node_nic_links, dtype=np.int64)
    if fails:
        for row, i in enumerate(idx):
            for r in range(lay.nics_per_node):
                ok[row, r] = fails.working(f"n{i}", lay.leaf_names[lay.node_leaf[i, r]],
                                           lay.node_nic_links)
    return ok


def _job_segments(graph: nx.Graph, node_indices, pattern: str, fails: _Failures,
                  rate_scale: float = 1.0) -> list[_Segment]:
    """Directed link loads [Gb/s] of one job's collective traffic, by link group."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown traffic pattern {pattern!r}; expected one of {PATTERNS}")
    lay = _layout(graph)
    idx = _as_nodes(node_indices, lay.n_nodes)
    n = idx.size
    if n < 2:
        return []
    link = lay.link_gbps
    nics = lay.nics_per_node
    ok = _nic_state(lay, idx, fails)  # working cables per NIC
    ok_nic = ok > 0
    n_ok = ok_nic.sum(axis=1)
    if np.any(n_ok == 0):
        # a node with no working NIC partitions the job
        dead = np.flatnonzero(n_ok == 0)
        return [_Segment(np.ones(dead.size), np.zeros(dead.size),
                         lambda d=dead: [(f"n{idx[i]}", "fabric") for i in d])]
    # offered rate per working NIC [Gb/s]: the node's full line rate over fewer NICs
    node_rate = nics * lay.node_nic_links * link * rate_scale
    nic_rate = np.where(ok_nic, node_rate / n_ok[:, None], 0.0)

    segments: list[_Segment] = []
    names_nodes = [f"n{i}" for i in idx]

    # per-NIC flow rates [Gb/s] and the NIC edges: node -> leaf (send), leaf -> node
    if pattern == "ring":
        nxt = np.roll(np.arange(n), -1)
        common = ok_nic & ok_nic[nxt]  # a pair talks over the NICs working at both ends
        n_common = common.sum(axis=1)
        if np.any(n_common == 0):
            bad = np.flatnonzero(n_common == 0)
            return [_Segment(np.ones(bad.size), np.zeros(bad.size),
                             lambda b=bad: [(f"n{idx[i]}", f"n{idx[nxt[i]]}") for i in b])]
        flow = np.where(common, node_rate / np.maximum(n_common, 1)[:, None], 0.0)
        send = flow
        recv = np.roll(flow, 1, axis=0)
    else:
        flow = nic_rate
        send = nic_rate
        recv = np.where(ok_nic, (nic_rate.sum(axis=0)[None, :] - nic_rate) / (n - 1), 0.0)
    cap_nic = ok.astype(float) * link

    def nic_keys(up: bool):
        def keys():
            out = []
            for row in range(n):
                for r in range(nics):
                    leaf = lay.leaf_names[lay.node_leaf[idx[row], r]]
                    out.append((names_nodes[row], leaf) if up else (leaf, names_nodes[row]))
            return out
        return keys

    segments.append(_Segment(send.ravel(), cap_nic.ravel(), nic_keys(True)))
    segments.append(_Segment(recv.ravel(), cap_nic.ravel(), nic_keys(False)))

    # leaf-level traffic matrix per plane
    for p_i, pl in enumerate(lay.planes):
        nic_cols = [r for r in range(nics)
                    if int(lay.leaf_plane[lay.node_leaf[idx[0], r]]) == p_i]
        if not nic_cols:
            continue
        src_l, dst_l, rate = [], [], []
        for r in nic_cols:
            leaf_r = lay.leaf_pos[lay.node_leaf[idx, r]]
            src_l.append(leaf_r)
            dst_l.append(leaf_r[nxt] if pattern == "ring" else leaf_r)
            rate.append(flow[:, r])
        involved, inv = np.unique(np.concatenate(src_l + dst_l), return_inverse=True)
        ni = involved.size
        if ni < 2:
            continue
        T = np.zeros((ni, ni))
        m = idx.size
        for c in range(len(nic_cols)):
            s_i = inv[c * m:(c + 1) * m]
            d_i = inv[(len(nic_cols) + c) * m:(len(nic_cols) + c + 1) * m]
            if pattern == "ring":
                np.add.at(T, (s_i, d_i), rate[c])
            else:
                # every NIC spreads its rate evenly over the same NIC of the n-1 others
                out_l = np.bincount(s_i, weights=rate[c], minlength=ni)
                cnt_l = np.bincount(d_i, minlength=ni).astype(float)
                T += np.outer(out_l, cnt_l) / (n - 1)
        np.fill_diagonal(T, 0.0)
        segments.extend(_plane_segments(lay, pl, involved, T, fails))
    return segments


def _plane_segments(lay: FabricLayout, pl: PlaneLayout, involved: np.ndarray, T: np.ndarray,
                    fails: _Failures) -> list[_Segment]:
    """Leaf->spine, spine->leaf, spine->core, core->spine loads of one plane."""
    link = lay.link_gbps
    u = pl.spines_per_pod
    p = pl.plane
    pods = pl.leaf_pod[involved]
    leaf_names = [lay.leaf_names[pl.leaves[x]] for x in involved]
    M = np.full((involved.size, u), pl.m1, dtype=float)
    if fails:
        for a, name in enumerate(leaf_names):
            for j in range(u):
                M[a, j] = fails.working(name, lay.spine_name(p, int(pods[a]), j), pl.m1)
    A = (M > 0).astype(float)
    three = pl.tiers == 3
    if three:
        upods = np.unique(pods)
        npod = upods.size
        pod_i = np.searchsorted(upods, pods)
        cpg = pl.cores_per_group
        # M2[j, P, c]: working cables spine (P, j) -> core (j, c)
        M2 = np.full((u, npod, cpg), pl.m2, dtype=float)
        if fails:
            for j in range(u):
                for a, P in enumerate(upods):
                    for c in range(cpg):
                        M2[j, a, c] = fails.working(lay.spine_name(p, int(P), j),
                                                    lay.core_name(p, j, c), pl.m2)
        A2 = (M2 > 0).astype(float)
        # R[j, P, P']: spine j of P reaches spine j of P' through some core
        R = (np.einsum("jpc,jqc->jpq", A2, A2) > 0).astype(float)
        for j in range(u):
            np.fill_diagonal(R[j], 1.0)
        Rl = R[:, pod_i][:, :, pod_i]  # (u, ni, ni)
        W = M.T[:, :, None] * A.T[:, None, :] * Rl  # (u, src, dst)
    else:
        W = M.T[:, :, None] * A.T[:, None, :]
    den = W.sum(axis=0)
    unreachable = (T > 0) & (den <= 0)
    share = np.divide(T, den, out=np.zeros_like(T), where=den > 0)
    F = W * share[None, :, :]  # (u, src, dst) flow through spine index j
    up = F.sum(axis=2).T  # (ni, u)
    down = F.sum(axis=1).T  # (ni, u)
    cap = M * link

    def up_keys():
        return [(leaf_names[a], lay.spine_name(p, int(pods[a]), j))
                for a in range(len(leaf_names)) for j in range(u)]

    def down_keys():
        return [(lay.spine_name(p, int(pods[a]), j), leaf_names[a])
                for a in range(len(leaf_names)) for j in range(u)]

    segs = [_Segment(up.ravel(), cap.ravel(), up_keys),
            _Segment(down.ravel(), cap.ravel(), down_keys)]
    if np.any(unreachable):
        bad = np.argwhere(unreachable)
        segs.append(_Segment(np.ones(len(bad)), np.zeros(len(bad)),
                             lambda b=bad: [(leaf_names[x], leaf_names[y]) for x, y in b]))
    if three and npod > 1:
        # inter-pod flow through spine j between pods: X[j, P, P']
        E = np.zeros((involved.size, npod))
        E[np.arange(involved.size), pod_i] = 1.0
        X = np.matmul(np.matmul(E.T[None, :, :], F), E[None, :, :])
        for j in range(u):
            np.fill_diagonal(X[j], 0.0)
        W2 = M2[:, :, None, :] * A2[:, None, :, :]  # (u, P, P', c)
        den2 = W2.sum(axis=3)
        share2 = np.divide(X, den2, out=np.zeros_like(X), where=den2 > 0)
        F2 = W2 * share2[..., None]
        up2 = F2.sum(axis=2)  # (u, P, c): spine (P, j) -> core (j, c)
        down2 = F2.sum(axis=1)  # (u, P', c): core (j, c) -> spine (P', j)
        cap2 = M2 * link

        def up2_keys():
            return [(lay.spine_name(p, int(upods[a]), j), lay.core_name(p, j, c))
                    for j in range(u) for a in range(npod) for c in range(cpg)]

        def down2_keys():
            return [(lay.core_name(p, j, c), lay.spine_name(p, int(upods[a]), j))
                    for j in range(u) for a in range(npod) for c in range(cpg)]

        segs.append(_Segment(up2.ravel(), cap2.ravel(), up2_keys))
        segs.append(_Segment(down2.ravel(), cap2.ravel(), down2_keys))
    return segs


# ---------------------------------------------------------------- public API


def link_loads_gbps(graph: nx.Graph, node_indices, *, pattern: str = "ring",
                    failed_links: Iterable = (), failed_switches: Iterable = (),
                    rate_scale: float = 1.0) -> dict[tuple[str, str], float]:
    """Offered load [Gb/s] on every directed link a job's collective uses.

    Every NIC offers ``rate_scale`` times its line rate; keys are ``(from, to)`` vertex
    names.  Loads may exceed capacity: the ratio is how far the job is slowed there.
    """
    fails = _Failures.build(failed_links, failed_switches)
    out: dict = {}
    for seg in _job_segments(graph, node_indices, pattern, fails, rate_scale):
        for key, load in zip(seg.keys(), seg.load_gbps.tolist(), strict=True):
            if load > 0:
                out[key] = out.get(key, 0.0) + load
    return out


def bottleneck_fraction(graph: nx.Graph, node_indices, failed_links: Iterable = (), *,
                        failed_switches: Iterable = (), pattern: str = "ring") -> float:
    """Fraction [0..1] of its NIC line rate a job's collective achieves (worst link)."""
    fails = _Failures.build(failed_links, failed_switches)
    segs = _job_segments(graph, node_indices, pattern, fails)
    if not segs:
        return 1.0
    return min(1.0, min(s.fraction() for s in segs))


def bottleneck_bandwidth_gbps(graph: nx.Graph, node_indices, failed_links: Iterable = (), *,
                              failed_switches: Iterable = (), pattern: str = "ring") -> float:
    """Per-node achievable inter-node bandwidth [Gb/s] for the job's collectives.

    ``= nics * link_gbps * min(1, min_links capacity/load)`` with every NIC offering its
    line rate in the given traffic pattern (see module doc).  0 when the failures
    partition the job.  A one-node job does not use the fabric: its NIC rate is returned.
    """
    lay = _layout(graph)
    node_bw = lay.nics_per_node * lay.node_nic_links * lay.link_gbps
    return node_bw * bottleneck_fraction(graph, node_indices, failed_links,
                                         failed_switches=failed_switches, pattern=pattern)


def shared_bandwidths_gbps(graph: nx.Graph, jobs: list, *, pattern: str = "ring",
                           failed_links: Iterable = (), failed_switches: Iterable = ()) -> np.ndarray:
    """Per-node achievable bandwidth [Gb/s] of several jobs that share the fabric.

    Offered loads of all jobs add up on every link; a job gets ``capacity * own/total``
    on each link it uses and runs at its worst link (proportional sharing, as congestion
    control converges to for long flows of equal RTT).
    """
    lay = _layout(graph)
    node_bw = lay.nics_per_node * lay.node_nic_links * lay.link_gbps
    fails = _Failures.build(failed_links, failed_switches)
    per_job = []
    total: dict = {}
    caps: dict = {}
    for nodes in jobs:
        loads: dict = {}
        for seg in _job_segments(graph, nodes, pattern, fails):
            for key, load, cap in zip(seg.keys(), seg.load_gbps.tolist(), seg.cap_gbps.tolist(),
                                      strict=True):
                if load > 0:
                    loads[key] = loads.get(key, 0.0) + load
                    caps[key] = cap
        per_job.append(loads)
        for key, load in loads.items():
            total[key] = total.get(key, 0.0) + load
    out = np.empty(len(jobs))
    for j, loads in enumerate(per_job):
        frac = 1.0
        for key in loads:
            frac = min(frac, caps[key] / total[key])
        out[j] = node_bw * frac
    return out
