"""Static ECMP in a plane of the folded Clos: working cables per hop and flow hashing.

``_plane_cables`` counts the working cables of each leaf->spine (and spine->core) hop of a
plane; ``_append_plane`` / ``_append_cores`` turn per-hop loads into link records. The
rest is static ECMP: every flow (queue pair) of a job is hashed onto one equal-cost path,
weighted by the working cables, so paths collide by chance. ``_plane_loads_hashed`` does it
for one plane; ``_planes_hashed_intact`` for several intact planes that carry the same
traffic, in one batch that takes the flow-by-flow loop's random draws in the same order
(``tests/fabric/test_flows.py`` checks both against a flow-by-flow reference).
Split out of :mod:`twin.fabric.routing`, which calls these for ``routing="ecmp"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twin.fabric.topology import FabricLayout, PlaneLayout

if TYPE_CHECKING:
    from twin.fabric.routing import _Failures


def _plane_cables(pl: PlaneLayout, leaf_v: np.ndarray, sp_v: np.ndarray, pod_sp_v,
                  core_v, fails: _Failures):
    """Working cables of one plane after the failures.

    Returns ``M`` (ni, u) cables from each involved leaf to each spine of its pod, ``A``
    (ni, u) whether that spine still reaches the leaf, and for three tiers ``M2`` (u,
    npod, cpg) cables spine -> core, ``A2`` its reachability and ``R`` (u, npod, npod)
    whether core group ``j`` still joins two pods (``None`` for two tiers).
    """
    ni, u = sp_v.shape
    dead = np.fromiter(fails.dead, dtype=np.int64, count=len(fails.dead))
    M = np.full((ni, u), float(pl.m1))
    leaf_row = {int(v): a for a, v in enumerate(leaf_v)}
    for (x, y), c in fails.cut.items():
        for lf, other in ((x, y), (y, x)):
            a = leaf_row.get(lf)
            if a is not None:
                M[a, sp_v[a] == other] -= c
    if dead.size:
        M[np.isin(sp_v, dead)] = 0.0
        M[np.isin(leaf_v, dead)] = 0.0
    np.maximum(M, 0.0, out=M)
    A = (M > 0).astype(float)
    if pod_sp_v is None:
        return M, A, None, None, None
    npod = pod_sp_v.shape[0]
    cpg = core_v.shape[1]
    M2 = np.full((u, npod, cpg), float(pl.m2))
    sp_where = {int(v): (j, a) for a, row in enumerate(pod_sp_v) for j, v in enumerate(row)}
    for (x, y), c in fails.cut.items():
        for sp, other in ((x, y), (y, x)):
            ja = sp_where.get(sp)
            if ja is not None:
                j, a = ja
                M2[j, a, core_v[j] == other] -= c
    if dead.size:
        sp_grid = np.broadcast_to(pod_sp_v.T[:, :, None], (u, npod, cpg))
        co_grid = np.broadcast_to(core_v[:, None, :], (u, npod, cpg))
        M2[np.isin(sp_grid, dead) | np.isin(co_grid, dead)] = 0.0
    np.maximum(M2, 0.0, out=M2)
    A2 = (M2 > 0).astype(float)
    R = (np.einsum("jpc,jqc->jpq", A2, A2) > 0).astype(float)
    for j in range(u):
        np.fill_diagonal(R[j], 1.0)
    return M, A, M2, A2, R


def _append_plane(link, leaf_v, sp_v, M, up, down, src, dst, load, cap) -> None:
    """Append the leaf->spine and spine->leaf links of one plane (loads and capacities)."""
    u = sp_v.shape[1]
    lv = np.repeat(leaf_v, u)
    sv = sp_v.ravel()
    c1 = (M * link).ravel()
    src += [lv, sv]
    dst += [sv, lv]
    load += [np.asarray(up).ravel(), np.asarray(down).ravel()]
    cap += [c1, c1]


def _append_cores(link, pod_sp_v, core_v, M2, up2, down2, src, dst, load, cap) -> None:
    """Append the spine->core and core->spine links of one three-tier plane."""
    u, npod, cpg = M2.shape
    spv = np.broadcast_to(pod_sp_v.T[:, :, None], (u, npod, cpg)).ravel()
    cv = np.broadcast_to(core_v[:, None, :], (u, npod, cpg)).ravel()
    c2 = (M2 * link).ravel()
    src += [spv, cv]
    dst += [cv, spv]
    load += [np.ascontiguousarray(up2).ravel(), np.ascontiguousarray(down2).ravel()]
    cap += [c2, c2]


def _bins_of(draw: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``#{j: edges[j] <= draw}`` per draw (``edges`` sorted, ``k - 1`` of them).

    Evenly spaced edges (an even split over ``k`` paths, the intact fabric) are searched
    arithmetically: a guess ``floor(draw / step)`` is corrected by one bin either way
    where rounding put it off, and any draw still off falls back to a sorted search, so
    the bins equal those of the comparison count exactly.
    """
    k = edges.size + 1
    if k == 1:
        return np.zeros(draw.size, np.int64)
    step = edges[-1] / (k - 1)
    grid = step * np.arange(1, k)
    if step <= 0 or not np.allclose(edges, grid, rtol=1e-12, atol=0.0):
        return np.searchsorted(edges, draw, side="right")
    if np.array_equal(edges, grid) and np.frexp(step)[0] == 0.5:
        # edges exactly j * 2^e: draw / step is an exact scaling, its floor the bin
        return np.minimum((draw / step).astype(np.int64), k - 1)
    g = np.clip((draw / step).astype(np.int64), 0, k - 1)
    lo = np.r_[-np.inf, edges]  # bin g holds lo[g] <= draw < hi[g]
    hi = np.r_[edges, np.inf]
    g += draw >= hi[g]
    g -= draw < lo[g]
    bad = (draw < lo[g]) | (draw >= hi[g])
    if np.any(bad):
        g[bad] = np.searchsorted(edges, draw[bad], side="right")
    return g


def _hash_counts(rng: np.random.Generator, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Flows per path (columns of ``p``, rows summing to 1) when ``n[i]`` flows are hashed
    independently: one uniform draw per flow, in row order, against the row's
    cumulative ``p`` (flow falls on the first path whose cumulative share exceeds it).

    Rows with the same cumulative split share one search (an intact plane has a single
    such group), so a flow costs one search instead of one comparison per path; the bins
    are those of the flow-by-flow comparison.
    """
    n = np.asarray(n, dtype=np.int64)
    k = p.shape[1]
    if k == 1:
        return n[:, None].astype(float)
    cum = np.cumsum(p, axis=1)
    u = rng.random(int(n.sum()))
    if n.size == 0:
        return np.zeros((0, k))
    if np.all(cum == cum[0]):
        path = _bins_of(u if cum[0, -1] == 1.0 else u * cum[0, -1], cum[0, :-1])
    else:
        order = np.lexsort(cum.T[::-1])
        first = np.r_[True, np.any(cum[order[1:]] != cum[order[:-1]], axis=1)]
        grp = np.empty(n.size, np.int64)
        grp[order] = np.cumsum(first) - 1
        groups = cum[order[first]]
        row = np.repeat(np.arange(n.size), n)
        if groups.shape[0] > 16:  # many distinct splits (heavy failures): compare per path
            path = (u[:, None] * cum[row, -1][:, None] >= cum[row, :-1]).sum(axis=1)
        else:
            path = np.empty(row.size, np.int64)
            gflow = grp[row]
            for gi in range(groups.shape[0]):
                sel = gflow == gi
                path[sel] = _bins_of(u[sel] * groups[gi, -1], groups[gi, :-1])
    np.minimum(path, k - 1, out=path)
    path += np.repeat(np.arange(0, n.size * k, k), n)
    return np.bincount(path, minlength=n.size * k).reshape(n.size, k).astype(float)


def _cable_excess(rng: np.random.Generator, flows: np.ndarray, load: np.ndarray,
                  M: np.ndarray) -> np.ndarray:
    """Extra load [Gb/s] on each (leaf, spine) bundle from hashing flows onto its cables.

    ``flows`` (ni, u) flows and ``load`` (ni, u) their total rate [Gb/s] on the bundle
    from each leaf to each spine; every flow picks one of the bundle's ``M`` working
    cables at random (cable ``floor(draw * M)``, one draw per flow, bundle after bundle;
    flows of one bundle taken at their mean rate).  The bundle is as slow as its busiest
    cable: its equivalent load is ``M x max cable load``; the excess over the even spread
    is returned (zero when the flows fall evenly).
    """
    ni, u = M.shape
    flows = np.rint(flows).ravel().astype(np.int64)
    load = load.ravel()
    m = np.maximum(M.ravel(), 1.0)
    mmax = int(max(1.0, M.max()))
    total = int(flows.sum())
    if total == 0 or mmax == 1:
        return np.zeros((ni, u))
    draw = rng.random(total)
    if np.all(m == m[0]):
        # flows of a bundle are contiguous: cable floor(draw * m) >= c counted by
        # segment sums of draw * m >= c
        scaled = draw * m[0]
        has = flows > 0
        starts = (np.cumsum(flows) - flows)[has]
        at_least = np.zeros((flows.size, mmax + 1), np.int64)
        at_least[:, 0] = flows
        for c in range(1, mmax):
            at_least[has, c] = np.add.reduceat((scaled >= c).view(np.int8), starts,
                                               dtype=np.int64)
        busiest = (at_least[:, :-1] - at_least[:, 1:]).max(axis=1)
    else:
        bundle = np.repeat(np.arange(flows.size), flows)
        cable = np.minimum((draw * m[bundle]).astype(np.int64), mmax - 1)
        busiest = np.bincount(bundle * mmax + cable,
                              minlength=flows.size * mmax).reshape(flows.size, mmax).max(axis=1)
    eq = busiest * np.divide(load, flows, out=np.zeros_like(load), where=flows > 0) * m
    return np.maximum(eq - load, 0.0).reshape(ni, u)


def _plane_loads_hashed(lay: FabricLayout, pl: PlaneLayout, p_i: int, involved: np.ndarray,
                        T: np.ndarray, C: np.ndarray, fails: _Failures,
                        rng: np.random.Generator, qps: int, src: list, dst: list,
                        load: list, cap: list) -> bool:
    """Static ECMP: each flow is hashed onto one path; True if partitioned.

    ``T`` (ni, ni) leaf-to-leaf traffic [Gb/s] and ``C`` the connections carrying it;
    every connection opens ``qps`` flows (NCCL queue pairs), each of equal rate, each
    placed on one working spine (and core) with probability proportional to the cables
    there and on one cable of that bundle; so flows collide
    on a cable by chance instead of spreading evenly (balls into bins: the most loaded of
    ``k`` cables carries ~``ln k / ln ln k`` times the mean when flows are as many as
    cables; Meta reports such ECMP collisions on its RoCE training fabric, Gangidi et
    al., SIGCOMM 2024, doi:10.1145/3651890.3672233).  The spine-core tier is hashed per
    bundle only.
    """
    link = lay.link_gbps
    u = pl.spines_per_pod
    ni = involved.size
    pods = pl.leaf_pod[involved]
    leaf_v = lay.leaf_vid[pl.leaves[involved]]
    sp_v = lay.spine_vid[p_i][pods]
    three = pl.tiers == 3
    pod_sp_v = core_v = None
    if three:
        upods, pod_i = np.unique(pods, return_inverse=True)
        npod = upods.size
        core_v = lay.core_vid[p_i]
        pod_sp_v = lay.spine_vid[p_i][upods]
    M, A, M2, A2, R = _plane_cables(pl, leaf_v, sp_v, pod_sp_v, core_v, fails)
    s_idx, d_idx = np.nonzero(T)
    w = M[s_idx] * A[d_idx]
    cross = np.zeros(s_idx.size, bool)
    if three and npod > 1:
        ps, pd = pod_i[s_idx], pod_i[d_idx]
        cross = ps != pd
        w[cross] *= R[:, ps[cross], pd[cross]].T
    den = w.sum(axis=1)
    partitioned = bool(np.any(den <= 0))
    ok = den > 0
    # every NIC cable of a connection opens its own queue pairs (a fat tree bundles a
    # node's NICs on one leaf)
    n_f = np.maximum(1, np.rint(C[s_idx, d_idx] * qps * lay.node_nic_links)).astype(np.int64)
    p = np.divide(w, den[:, None], out=np.full_like(w, 1.0 / u), where=ok[:, None])
    counts = _hash_counts(rng, n_f, p) * ok[:, None]
    per_flow = T[s_idx, d_idx] / n_f
    both = np.concatenate([counts * per_flow[:, None], counts], axis=1)  # load, flows
    leaf_ids = np.arange(ni)[:, None]
    at_src = (s_idx[None, :] == leaf_ids).astype(float) @ both  # per (leaf, spine)
    at_dst = (d_idx[None, :] == leaf_ids).astype(float) @ both
    up, down = at_src[:, :u], at_dst[:, :u]
    # each flow also picks one cable of its leaf-spine bundle (and the spine one of the
    # bundle down to the destination leaf); a bundle runs at its busiest cable
    up = up + _cable_excess(rng, at_src[:, u:], up, M)
    down = down + _cable_excess(rng, at_dst[:, u:], down, M)
    _append_plane(link, leaf_v, sp_v, M, up, down, src, dst, load, cap)
    if three and npod > 1:
        cpg = pl.cores_per_group
        up2 = np.zeros((u, npod, cpg))
        down2 = np.zeros((u, npod, cpg))
        k = np.nonzero(cross)[0]
        if k.size:
            jj = np.arange(u)[None, :]
            wc = M2[jj, ps[k][:, None], :] * A2[jj, pd[k][:, None], :]  # (k, u, cpg)
            dc = wc.sum(axis=2, keepdims=True)
            pc = np.divide(wc, dc, out=np.full_like(wc, 1.0 / cpg), where=dc > 0)
            cc = _hash_counts(rng, counts[k].ravel(), pc.reshape(-1, cpg)).reshape(pc.shape)
            fl2 = cc * per_flow[k][:, None, None]
            E_s = np.zeros((k.size, npod))
            E_s[np.arange(k.size), ps[k]] = 1.0
            E_d = np.zeros((k.size, npod))
            E_d[np.arange(k.size), pd[k]] = 1.0
            up2 = np.einsum("ijc,ip->jpc", fl2, E_s)
            down2 = np.einsum("ijc,iq->jqc", fl2, E_d)
        _append_cores(link, pod_sp_v, core_v, M2, up2, down2, src, dst, load, cap)
    return partitioned


def _planes_hashed_intact(lay: FabricLayout, tasks: list, rng: np.random.Generator,
                          qps: int, src: list, dst: list, load: list, cap: list) -> None:
    """:func:`_plane_loads_hashed` for several intact planes carrying the same traffic,
    in one vectorised pass.

    The draws are taken in the order the plane-by-plane loop takes them (for each plane:
    one per flow onto a spine, then one per flow onto a cable of its up bundle, then of
    its down bundle), from one block, so the result is the loop's.  Every path has the
    same weight on an intact plane (``m1`` cables to each of ``u`` spines).
    """
    _, pl, involved, T, C = tasks[0]
    R = len(tasks)
    u, m1 = pl.spines_per_pod, pl.m1
    ni = involved.size
    s_idx, d_idx = np.nonzero(T)
    P = s_idx.size
    n_f = np.maximum(1, np.rint(C[s_idx, d_idx] * qps * lay.node_nic_links)).astype(np.int64)
    N = int(n_f.sum())
    w = np.full(u, float(m1))
    cum = np.cumsum(w / w.sum())  # the loop's p row, m1 / (u m1)
    n_hash = N if u > 1 else 0  # one spine: nothing to hash
    per_plane = n_hash + (2 * N if m1 > 1 else 0)
    block = rng.random(R * per_plane).reshape(R, per_plane)
    if u > 1:
        draw = block[:, :N].ravel()
        path = _bins_of(draw if cum[-1] == 1.0 else draw * cum[-1], cum[:-1])
        np.minimum(path, u - 1, out=path)
        row = np.repeat(np.arange(0, P * u, u), n_f)
        path += (row[None, :] + np.arange(0, R * P * u, P * u)[:, None]).ravel()
        counts = np.bincount(path, minlength=R * P * u).reshape(R, P, u).astype(float)
    else:
        counts = np.broadcast_to(n_f[None, :, None], (R, P, 1)).astype(float)
    per_flow = T[s_idx, d_idx] / n_f
    both = np.concatenate([counts * per_flow[:, None], counts], axis=2)  # load, flows
    leaf_ids = np.arange(ni)[:, None]
    at_src = np.matmul((s_idx[None, :] == leaf_ids).astype(float), both)  # (R, ni, 2u)
    at_dst = np.matmul((d_idx[None, :] == leaf_ids).astype(float), both)
    up, down = at_src[..., :u], at_dst[..., :u]
    if m1 > 1:
        # cable floor(draw * m1) of each bundle: segment sums of draw * m1 >= c over
        # the up draws, then the down draws, of every plane
        flows = np.rint(np.stack([at_src[..., u:], at_dst[..., u:]], axis=1)).astype(np.int64)
        flows = flows.reshape(R, 2, ni * u)
        begin = (np.cumsum(flows, axis=2) - flows
                 + (np.arange(R)[:, None, None] * 2 * N + np.array([0, N])[None, :, None]))
        has = (flows > 0).ravel()
        starts = begin.ravel()[has]
        scaled = block[:, n_hash:].ravel() * float(m1)
        at_least = np.zeros((R * 2 * ni * u, m1 + 1), np.int64)
        at_least[:, 0] = flows.ravel()
        for c in range(1, m1):
            at_least[has, c] = np.add.reduceat((scaled >= c).view(np.int8), starts,
                                               dtype=np.int64)
        busiest = (at_least[:, :-1] - at_least[:, 1:]).max(axis=1).reshape(R, 2, ni, u)
        fl = flows.reshape(R, 2, ni, u).astype(float)
        ld = np.stack([up, down], axis=1)
        eq = busiest * np.divide(ld, fl, out=np.zeros_like(ld), where=fl > 0) * float(m1)
        ld = ld + np.maximum(eq - ld, 0.0)
        up, down = ld[:, 0], ld[:, 1]
    M = np.full((ni, u), float(m1))
    for r, (p_i, plr, inv, _, _) in enumerate(tasks):
        leaf_v = lay.leaf_vid[plr.leaves[inv]]
        sp_v = lay.spine_vid[p_i][plr.leaf_pod[inv]]
        _append_plane(lay.link_gbps, leaf_v, sp_v, M, up[r], down[r], src, dst, load, cap)
