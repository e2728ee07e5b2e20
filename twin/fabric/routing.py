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

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from twin.fabric.ecmp import (
    _append_cores,
    _append_plane,
    _plane_cables,
    _plane_loads_hashed,
    _planes_hashed_intact,
)
from twin.fabric.topology import FabricLayout, PlaneLayout

PATTERNS = ("ring", "all_to_all")
#: "adaptive": traffic spreads over the equal-cost paths in proportion to their working
#: cables (adaptive routing, or ECMP over very many flows: the fluid limit);
#: "ecmp": static ECMP, every flow hashed onto one path (collisions by chance)
ROUTINGS = ("adaptive", "ecmp")


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
    pods = lay.leaf_pod_id[leaves] if n else leaves
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
    hall = _node_hall(lay, idx)
    if hall[0] != hall[-1]:
        # another hall: up the hall's tiers to the site tier and down again
        _, c_hall = np.unique(hall, return_counts=True)
        cross = n * (n - 1.0) - float(np.sum(c_hall * (c_hall - 1.0)))
        far = 2 * plane.tiers + 2
        mean = (mean * n * (n - 1.0) + (far - 6) * cross) / (n * (n - 1.0))  # cross pairs
        mx = far                                                          # were counted 6
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
    """Cables removed per bundle (vertex-id pairs) and dead switches (vertex ids)."""

    cut: dict  # (min_id, max_id) -> cables removed
    dead: frozenset
    planes: frozenset  # planes with a failed leaf/spine/core cable or switch
    nic: bool  # some node cable failed

    @classmethod
    def build(cls, lay: FabricLayout, failed_links: Iterable = (),
              failed_switches: Iterable = ()) -> _Failures:
        idx = lay.vertex_index
        cut: dict = {}
        planes = set()
        nic = False

        def vid(name):
            try:
                return idx[name]
            except KeyError:
                raise ValueError(f"no vertex {name!r} in this fabric") from None

        def plane_of(v):
            name = lay.vertex_names[v]
            return int(name.split(":")[1][1:]) if ":" in name else None

        for link in failed_links:
            a, b = (vid(x) for x in link)
            key = (min(a, b), max(a, b))
            cut[key] = cut.get(key, 0) + 1
            for v in key:
                if v < lay.n_nodes:
                    nic = True
                else:
                    planes.add(plane_of(v))
        dead = frozenset(vid(x) for x in failed_switches)
        for v in dead:
            planes.add(plane_of(v))
            if lay.vertex_names[v].startswith("leaf"):
                nic = True
        return cls(cut, dead, frozenset(p for p in planes if p is not None), nic)


# ---------------------------------------------------------------- link loads


@dataclass(frozen=True)
class LinkLoads:
    """Offered load on the directed links a job uses (integer vertex ids, see ``names``).

    ``load_gbps`` may exceed ``capacity_gbps``: the ratio is how much the job is slowed
    on that link.  ``partitioned`` is True when failures cut some of the job's nodes off.
    """

    src: np.ndarray
    dst: np.ndarray
    load_gbps: np.ndarray
    capacity_gbps: np.ndarray
    names: tuple
    partitioned: bool = False

    def fraction(self) -> float:
        """Achievable fraction of the offered rate: ``min(1, min capacity/load)``."""
        if self.partitioned:
            return 0.0
        used = self.load_gbps > 1e-12
        if not np.any(used):
            return 1.0
        return float(min(1.0, np.min(self.capacity_gbps[used] / self.load_gbps[used])))

    def utilization(self) -> np.ndarray:
        """Load over capacity per link [-] (inf on a link with no capacity left)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.capacity_gbps > 0, self.load_gbps / self.capacity_gbps, np.inf)

    def as_dict(self) -> dict[tuple[str, str], float]:
        """``{(from_name, to_name): load_gbps}`` for the links with load."""
        out: dict = {}
        names = self.names
        for a, b, x in zip(self.src.tolist(), self.dst.tolist(), self.load_gbps.tolist(),
                           strict=True):
            if x > 0:
                key = (names[a], names[b])
                out[key] = out.get(key, 0.0) + x
        return out


def _empty_loads(lay: FabricLayout, partitioned: bool = False) -> LinkLoads:
    z = np.zeros(0)
    zi = np.zeros(0, np.int64)
    return LinkLoads(zi, zi, z, z, lay.vertex_names, partitioned)


def _nic_state(lay: FabricLayout, idx: np.ndarray, fails: _Failures) -> np.ndarray:
    """(n, nics) working cables on each NIC edge of the job's nodes."""
    ok = np.full((idx.size, lay.nics_per_node), lay.node_nic_links, dtype=np.int64)
    if fails.nic:
        leaf_v = lay.leaf_vid[lay.node_leaf[idx]]  # (n, nics)
        for (a, b), c in fails.cut.items():
            if a < lay.n_nodes:
                row = np.searchsorted(idx, a)
                if row < idx.size and idx[row] == a:
                    ok[row, leaf_v[row] == b] -= c
        for v in fails.dead:
            ok[leaf_v == v] = 0
        np.maximum(ok, 0, out=ok)
    return ok


def _job_loads(graph: nx.Graph, node_indices, pattern: str, fails: _Failures,
               rate_scale: float = 1.0, routing: str = "adaptive",
               rng: np.random.Generator | None = None, qps: int = 4) -> LinkLoads:
    """Directed link loads [Gb/s] of one job's collective traffic."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown traffic pattern {pattern!r}; expected one of {PATTERNS}")
    if routing not in ROUTINGS:
        raise ValueError(f"unknown routing {routing!r}; expected one of {ROUTINGS}")
    lay = _layout(graph)
    idx = _as_nodes(node_indices, lay.n_nodes)
    n = idx.size
    if n < 2:
        return _empty_loads(lay)
    link = lay.link_gbps
    nics = lay.nics_per_node
    ok = _nic_state(lay, idx, fails)
    ok_nic = ok > 0
    n_ok = ok_nic.sum(axis=1)
    if np.any(n_ok == 0):
        return _empty_loads(lay, partitioned=True)
    node_rate = nics * lay.node_nic_links * link * rate_scale  # offered per node [Gb/s]
    nxt = np.roll(np.arange(n), -1)
    node_hall = _node_hall(lay, idx)
    if node_hall[0] != node_hall[-1]:  # sorted nodes: the job spans halls
        return _site_loads(lay, idx, pattern, fails, ok, node_rate, node_hall)
    if pattern == "ring":
        common = ok_nic & ok_nic[nxt]  # a pair talks over the NICs working at both ends
        n_common = common.sum(axis=1)
        if np.any(n_common == 0):
            return _empty_loads(lay, partitioned=True)
        flow = np.where(common, node_rate / np.maximum(n_common, 1)[:, None], 0.0)
        send = flow
        recv = np.roll(flow, 1, axis=0)
    else:
        flow = np.where(ok_nic, node_rate / n_ok[:, None], 0.0)
        send = flow
        recv = np.where(ok_nic, (flow.sum(axis=0)[None, :] - flow) / (n - 1), 0.0)
    cap_nic = (ok * link).astype(float).ravel()
    node_v = np.repeat(idx, nics)
    leaf_v = lay.leaf_vid[lay.node_leaf[idx]].ravel()
    src = [node_v, leaf_v]
    dst = [leaf_v, node_v]
    load = [send.ravel(), recv.ravel()]
    cap = [cap_nic, cap_nic]
    partitioned = False
    tasks = []  # (plane index, plane, involved leaves, T, C), in plane order
    prev: tuple | None = None  # (positions, flows, matrices) of the previous plane
    for p_i, pl in enumerate(lay.planes):
        cols = [r for r in range(nics) if int(lay.leaf_plane[lay.node_leaf[idx[0], r]]) == p_i]
        if not cols:
            continue
        pos = lay.leaf_pos[lay.node_leaf[idx][:, cols]]  # (n, len(cols))
        if (prev is not None and len(cols) == 1 and prev[0].shape == pos.shape
                and prev[1] is not None and np.array_equal(prev[0], pos)
                and np.array_equal(prev[1], flow[:, cols[0]])):
            # a rail wired like the previous one, carrying the same flows: same matrices
            if prev[2] is not None:
                tasks.append((p_i, pl) + prev[2])
            continue
        prev = (pos, flow[:, cols[0]] if len(cols) == 1 else None, None)
        dst_pos = pos[nxt] if pattern == "ring" else pos
        involved, inv = np.unique(np.concatenate([pos.ravel(), dst_pos.ravel()]),
                                  return_inverse=True)
        ni = involved.size
        if ni < 2:
            continue
        s_i = inv[: pos.size].reshape(pos.shape)
        d_i = inv[pos.size:].reshape(pos.shape)
        T = np.zeros((ni, ni))
        # node-to-node connections per leaf pair (hashing opens queue pairs per connection)
        C = np.zeros((ni, ni)) if routing == "ecmp" else None
        for c, r in enumerate(cols):
            if pattern == "ring":
                pair = s_i[:, c] * ni + d_i[:, c]
                T += np.bincount(pair, weights=flow[:, r], minlength=ni * ni).reshape(ni, ni)
                if C is not None:
                    C += np.bincount(pair, minlength=ni * ni).reshape(ni, ni)
            else:
                out_l = np.bincount(s_i[:, c], weights=flow[:, r], minlength=ni)
                cnt_l = np.bincount(d_i[:, c], minlength=ni).astype(float)
                T += np.outer(out_l, cnt_l) / (n - 1)
                if C is not None:
                    C += np.outer(np.bincount(s_i[:, c], minlength=ni), cnt_l)
        np.fill_diagonal(T, 0.0)
        prev = (prev[0], prev[1], (involved, T, C))
        tasks.append((p_i, pl, involved, T, C))
    if routing == "ecmp":
        rng = rng if rng is not None else np.random.default_rng(0)
        if _batchable(lay, tasks, fails):
            _planes_hashed_intact(lay, tasks, rng, qps, src, dst, load, cap)
            tasks = []
        for p_i, pl, involved, T, C in tasks:
            assert C is not None  # built for ECMP
            part = _plane_loads_hashed(lay, pl, p_i, involved, T, C, fails, rng, qps,
                                       src, dst, load, cap)
            partitioned = partitioned or part
    else:
        memo: dict = {}
        for p_i, pl, involved, T, _ in tasks:
            part = _plane_loads(lay, pl, p_i, involved, T, fails, src, dst, load, cap,
                                memo=memo)
            partitioned = partitioned or part
    return LinkLoads(np.concatenate(src), np.concatenate(dst), np.concatenate(load),
                     np.concatenate(cap), lay.vertex_names, partitioned)


def _batchable(lay: FabricLayout, tasks: list, fails: _Failures) -> bool:
    """True when the hashed planes can be drawn in one batch: intact planes of one
    structure carrying the same leaf-to-leaf matrices, with no spine-core hop."""
    if len(tasks) < 2:
        return False
    _, pl0, inv0, T0, _ = tasks[0]
    for _, pl, inv, T, _ in tasks:
        if (T is not T0 or pl.plane in fails.planes or pl.spines_per_pod != pl0.spines_per_pod
                or pl.m1 != pl0.m1 or pl.spines_per_pod == 0):
            return False
        if pl.tiers == 3 and np.unique(pl.leaf_pod[inv]).size > 1:
            return False
    return True


def _node_hall(lay: FabricLayout, idx: np.ndarray) -> np.ndarray:
    """Hall of each node (0 when one fabric serves every hall)."""
    if len(lay.hall_nodes) < 2:
        return np.zeros(idx.size, np.int64)
    return np.searchsorted(np.cumsum(lay.hall_nodes), idx, side="right")


def _site_loads(lay: FabricLayout, idx: np.ndarray, pattern: str, fails: _Failures,
                ok: np.ndarray, node_rate: float, node_hall: np.ndarray) -> LinkLoads:
    """Link loads of a job whose nodes lie in several halls (one fabric per hall, the
    halls joined by a site tier).

    Traffic between two nodes of one hall stays in the hall's planes (routed as
    everywhere else); traffic to another hall climbs the leaf's working uplinks in
    proportion to their cables, leaves the hall over its site uplink of rail ``r`` and
    enters the other hall the same way down.  The site uplink of a hall on one rail is
    one aggregated bundle of ``hall nodes x NIC rate / site_oversubscription`` per
    direction; the hall's spine (and core) tier is non-blocking by construction, so the
    leaf uplinks and the site bundles are the hops that can bind.  Routing beyond the
    leaves is fluid (even spread) for such a job, adaptive or ECMP alike.
    """
    n = idx.size
    nics = lay.nics_per_node
    link = lay.link_gbps
    ok_nic = ok > 0
    n_ok = ok_nic.sum(axis=1)
    nxt = np.roll(np.arange(n), -1)
    if pattern == "ring":
        common = ok_nic & ok_nic[nxt]
        if np.any(common.sum(axis=1) == 0):
            return _empty_loads(lay, partitioned=True)
        flow = np.where(common, node_rate / np.maximum(common.sum(axis=1), 1)[:, None], 0.0)
        recv = np.roll(flow, 1, axis=0)
    else:
        flow = np.where(ok_nic, node_rate / n_ok[:, None], 0.0)
        recv = np.where(ok_nic, (flow.sum(axis=0)[None, :] - flow) / (n - 1), 0.0)
    cap_nic = (ok * link).astype(float).ravel()
    node_v = np.repeat(idx, nics)
    leaf_v = lay.leaf_vid[lay.node_leaf[idx]].ravel()
    src, dst = [node_v, leaf_v], [leaf_v, node_v]
    load, cap = [flow.ravel(), recv.ravel()], [cap_nic, cap_nic]
    halls = np.unique(node_hall)
    partitioned = False
    hall_nodes = np.asarray(lay.hall_nodes, dtype=float)
    for r in range(nics):
        site_up = np.zeros(len(lay.hall_nodes))
        site_down = np.zeros(len(lay.hall_nodes))
        top_v = np.zeros(len(lay.hall_nodes), np.int64)
        for h in halls:
            rows = np.flatnonzero(node_hall == h)
            p_i = int(lay.leaf_plane[lay.node_leaf[idx[rows[0]], r]])
            pl = lay.planes[p_i]
            pos = lay.leaf_pos[lay.node_leaf[idx[rows], r]]
            involved, s_i = np.unique(pos, return_inverse=True)
            ni = involved.size
            T = np.zeros((ni, ni))
            out_r = np.zeros(ni)
            in_r = np.zeros(ni)
            if pattern == "ring":
                nb = nxt[rows]
                same = node_hall[nb] == h
                d_i = np.searchsorted(involved, lay.leaf_pos[lay.node_leaf[idx[nb[same]], r]])
                np.add.at(T, (s_i[same], d_i), flow[rows[same], r])
                np.add.at(out_r, s_i[~same], flow[rows[~same], r])
                prv = np.roll(np.arange(n), 1)[rows]
                from_out = node_hall[prv] != h
                np.add.at(in_r, s_i[from_out], flow[prv[from_out], r])
            else:
                out_l = np.bincount(s_i, weights=flow[rows, r], minlength=ni)
                cnt_l = np.bincount(s_i, minlength=ni).astype(float)
                T += np.outer(out_l, cnt_l) / (n - 1)
                out_r = out_l * (n - rows.size) / (n - 1)
                in_r = cnt_l * (flow[:, r].sum() - flow[rows, r].sum()) / (n - 1)
            np.fill_diagonal(T, 0.0)
            site_up[h] += out_r.sum()
            site_down[h] += in_r.sum()
            top_v[h] = lay.vertex_index[f"site:p{p_i}"]
            if pl.spines_per_pod == 0:  # a one-leaf hall plane: the leaf is the top
                continue
            part = _plane_loads(lay, pl, p_i, involved, T, fails, src, dst, load, cap,
                                remote_out=out_r, remote_in=in_r)
            partitioned = partitioned or part
        used = np.flatnonzero((site_up > 0) | (site_down > 0))
        c_site = hall_nodes[used] * lay.node_nic_links * link / lay.site_oversubscription
        top = top_v[used]
        rail = np.full(used.size, lay.vertex_index[f"site:r{r}"], np.int64)
        src += [top, rail]
        dst += [rail, top]
        load += [site_up[used], site_down[used]]
        cap += [c_site, c_site]
    return LinkLoads(np.concatenate(src), np.concatenate(dst), np.concatenate(load),
                     np.concatenate(cap), lay.vertex_names, partitioned)


def _plane_loads(lay: FabricLayout, pl: PlaneLayout, p_i: int, involved: np.ndarray,
                 T: np.ndarray, fails: _Failures, src: list, dst: list, load: list,
                 cap: list, remote_out=None, remote_in=None, memo: dict | None = None) -> bool:
    """Append leaf<->spine and spine<->core loads of one plane; True if partitioned.

    ``remote_out`` / ``remote_in`` (ni,): traffic [Gb/s] each involved leaf sends to /
    receives from other halls (site tier); it climbs the leaf's working uplinks in
    proportion to their cables.  ``memo``: loads of intact planes already done in this
    solve, by traffic matrix and plane structure (the rails of a job repeat them).
    """
    link = lay.link_gbps
    u = pl.spines_per_pod
    ni = involved.size
    pods = pl.leaf_pod[involved]
    leaf_v = lay.leaf_vid[pl.leaves[involved]]
    sp_v = lay.spine_vid[p_i][pods]  # (ni, u)
    three = pl.tiers == 3
    if three:
        upods, pod_i = np.unique(pods, return_inverse=True)
        npod = upods.size
        cpg = pl.cores_per_group
        core_v = lay.core_vid[p_i]  # (u, cpg)
        pod_sp_v = lay.spine_vid[p_i][upods]  # (npod, u)
    partitioned = False
    key = (id(T), u, pl.m1, pl.cores_per_group, pl.m2, pods.tobytes())
    if pl.plane not in fails.planes and memo is not None and key in memo:
        up, down, M, up2, down2, M2 = memo[key]  # a rail wired and loaded like one done
    elif pl.plane not in fails.planes:
        # intact plane: every leaf reaches every spine of its pod with m1 cables,
        # traffic splits evenly over the u spines (and the cores of each group)
        out_l, in_l = T.sum(axis=1), T.sum(axis=0)
        up = np.repeat(out_l[:, None] / u, u, axis=1)
        down = np.repeat(in_l[:, None] / u, u, axis=1)
        M = np.full((ni, u), float(pl.m1))
        up2 = down2 = M2 = None
        if three and npod > 1:
            # traffic leaving / entering each pod (pairs of leaves in different pods)
            s_idx, d_idx = np.nonzero(T)
            other = pod_i[s_idx] != pod_i[d_idx]
            w = T[s_idx[other], d_idx[other]]
            x_out = np.bincount(pod_i[s_idx[other]], weights=w, minlength=npod)
            x_in = np.bincount(pod_i[d_idx[other]], weights=w, minlength=npod)
            up2 = np.broadcast_to((x_out / (u * cpg))[None, :, None], (u, npod, cpg))
            down2 = np.broadcast_to((x_in / (u * cpg))[None, :, None], (u, npod, cpg))
            M2 = np.full((u, npod, cpg), float(pl.m2))
        if memo is not None:
            memo[key] = (up, down, M, up2, down2, M2)
    else:
        M, A, M2, A2, R = _plane_cables(pl, leaf_v, sp_v, pod_sp_v if three else None,
                                        core_v if three else None, fails)
        if three:
            W = M.T[:, :, None] * A.T[:, None, :] * R[:, pod_i][:, :, pod_i]
        else:
            W = M.T[:, :, None] * A.T[:, None, :]
        den = W.sum(axis=0)
        partitioned = bool(np.any((T > 0) & (den <= 0)))
        share = np.divide(T, den, out=np.zeros_like(T), where=den > 0)
        F = W * share[None, :, :]  # (u, src, dst)
        up = F.sum(axis=2).T
        down = F.sum(axis=1).T
        if three and npod > 1:
            E = np.zeros((ni, npod))
            E[np.arange(ni), pod_i] = 1.0
            X = np.matmul(np.matmul(E.T[None, :, :], F), E[None, :, :])
            for j in range(u):
                np.fill_diagonal(X[j], 0.0)
            W2 = M2[:, :, None, :] * A2[:, None, :, :]
            den2 = W2.sum(axis=3)
            partitioned = partitioned or bool(np.any((X > 0) & (den2 <= 0)))
            share2 = np.divide(X, den2, out=np.zeros_like(X), where=den2 > 0)
            F2 = W2 * share2[..., None]
            up2 = F2.sum(axis=2)
            down2 = F2.sum(axis=1)
    if remote_out is not None:
        share = np.divide(M, M.sum(axis=1, keepdims=True), out=np.zeros_like(M),
                          where=M.sum(axis=1, keepdims=True) > 0)
        up = up + remote_out[:, None] * share
        down = down + remote_in[:, None] * share
    _append_plane(link, leaf_v, sp_v, M, up, down, src, dst, load, cap)
    if three and npod > 1:
        _append_cores(link, pod_sp_v, core_v, M2, up2, down2, src, dst, load, cap)
    return partitioned


# ---------------------------------------------------------------- public API


def link_loads(graph: nx.Graph, node_indices, *, pattern: str = "ring",
               failed_links: Iterable = (), failed_switches: Iterable = (),
               rate_scale: float = 1.0, routing: str = "adaptive", seed: int = 0,
               qps: int = 4) -> LinkLoads:
    """Offered load [Gb/s] on every directed link a job's collective uses (arrays).

    Every NIC offers ``rate_scale`` times its line rate.  ``failed_links``: ``(u, v)``
    vertex-name pairs, each removing one cable of that bundle (repeat to remove more);
    ``failed_switches``: switch names.  routing: ``"adaptive"`` (fluid split over the
    working equal-cost paths) or ``"ecmp"`` (static hashing of ``qps`` flows per
    node-to-node connection, drawn from ``numpy.random.default_rng(seed)``).
    """
    lay = _layout(graph)
    fails = _Failures.build(lay, failed_links, failed_switches)
    return _job_loads(graph, node_indices, pattern, fails, rate_scale, routing,
                      np.random.default_rng(seed), qps)


def link_loads_gbps(graph: nx.Graph, node_indices, *, pattern: str = "ring",
                    failed_links: Iterable = (), failed_switches: Iterable = (),
                    rate_scale: float = 1.0) -> dict[tuple[str, str], float]:
    """:func:`link_loads` as ``{(from_name, to_name): load_gbps}`` (links with load)."""
    return link_loads(graph, node_indices, pattern=pattern, failed_links=failed_links,
                      failed_switches=failed_switches, rate_scale=rate_scale).as_dict()


def bottleneck_fraction(graph: nx.Graph, node_indices, failed_links: Iterable = (), *,
                        failed_switches: Iterable = (), pattern: str = "ring") -> float:
    """Fraction [0..1] of its NIC line rate a job's collective achieves (worst link)."""
    return link_loads(graph, node_indices, pattern=pattern, failed_links=failed_links,
                      failed_switches=failed_switches).fraction()


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
    fails = _Failures.build(lay, failed_links, failed_switches)
    nv = len(lay.vertex_names)
    per_job = [_job_loads(graph, nodes, pattern, fails) for nodes in jobs]
    keys = [ld.src * nv + ld.dst for ld in per_job]
    all_keys = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    uniq, inv = np.unique(all_keys, return_inverse=True)
    total = np.bincount(inv, weights=np.concatenate([ld.load_gbps for ld in per_job])
                        if per_job else np.zeros(0), minlength=uniq.size)
    caps = np.zeros(uniq.size)
    if per_job:
        caps[inv] = np.concatenate([ld.capacity_gbps for ld in per_job])
    out = np.empty(len(jobs))
    start = 0
    for j, ld in enumerate(per_job):
        sl = inv[start:start + ld.src.size]
        start += ld.src.size
        if ld.partitioned:
            out[j] = 0.0
            continue
        used = ld.load_gbps > 1e-12
        frac = 1.0
        if np.any(used):
            frac = min(1.0, float(np.min(caps[sl[used]] / total[sl[used]])))
        out[j] = node_bw * frac
    return out
