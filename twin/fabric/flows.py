"""Flow-level sharing of the fabric between concurrent jobs (max-min fairness).

Each job offers its collective's traffic (:func:`twin.fabric.link_loads`: every NIC at
line rate, routed over the adaptive or ECMP-hashed paths, around failed cables and
switches).  A job scales all its flows together (a synchronous collective runs at the
pace of its slowest flow), so a job ``j`` is one demand vector ``L_j`` over the links
and gets a rate fraction ``x_j`` in [0, 1] of it, subject to
``sum_j x_j L_jl <= C_l`` on every link ``l``.

Max-min fairness (progressive filling; Bertsekas and Gallager, *Data Networks*, 2nd ed.
1992, section 6.5.2): raise every unfrozen job's ``x`` together until a link
saturates or a job reaches 1; freeze the jobs on that link; repeat.  No job can then be
sped up without slowing a job that is no faster.  The proportional rule of
:func:`twin.fabric.shared_bandwidths_gbps` (each link split by offered load) is the other
policy offered; max-min gives every job at least its proportional share on its
bottleneck.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np
import scipy.sparse as sp

from twin.fabric.routing import LinkLoads, _Failures, _job_loads, _layout

POLICIES = ("max_min", "proportional")
_DIRECT_KEYS = 1 << 22  # largest (vertex, vertex) grid addressed directly (32 MiB)


def max_min_fractions(demand, capacity, *, max_fraction=1.0) -> np.ndarray:
    """Max-min fair rate fractions [-] of jobs sharing links (progressive filling).

    demand: (jobs, links) offered load of each job on each link at full rate [any unit,
    e.g. Gb/s] (dense array or scipy sparse).  capacity: (links,) in the same unit.
    Returns ``x`` (jobs,) with ``0 <= x <= max_fraction`` and
    ``demand.T @ x <= capacity`` (up to rounding); a job with no demand gets
    ``max_fraction``.  A link with zero capacity stops every job on it at 0.
    """
    D = sp.coo_matrix(demand, dtype=float)
    cap = np.asarray(capacity, dtype=float)
    if cap.shape != (D.shape[1],):
        raise ValueError(f"capacity has shape {cap.shape}, expected ({D.shape[1]},)")
    return _max_min(D.row, D.col, D.data, cap, D.shape[0], max_fraction)


def _max_min(job: np.ndarray, link: np.ndarray, val: np.ndarray, cap: np.ndarray, J: int,
             max_fraction=1.0) -> np.ndarray:
    """Progressive filling on (job, link, demand) triplets; see :func:`max_min_fractions`.

    ``max_fraction``: a scalar or one cap per job (a job's links that no other job uses
    bound it alone, so they enter as its cap instead of as links)."""
    if np.any(cap < 0) or not np.all(np.isfinite(cap)):
        raise ValueError("capacity must be finite and >= 0")
    if val.size and (val.min() < 0 or not np.all(np.isfinite(val))):
        raise ValueError("demand must be finite and >= 0")
    keep = val > 0
    job, link, val = job[keep], link[keep], val[keep]
    L = cap.size
    mf = np.broadcast_to(np.asarray(max_fraction, dtype=float), (J,))
    x = np.zeros(J)
    has = np.bincount(job, minlength=J) > 0
    x[~has] = mf[~has]
    # a job on a dead link (zero capacity, positive demand) cannot move
    active = has & ~(np.bincount(job, weights=(cap[link] <= 0).astype(float), minlength=J) > 0)
    for _ in range(J + 1):
        if not np.any(active):
            break
        rate = np.bincount(link, weights=val * active[job], minlength=L)
        room = cap - np.bincount(link, weights=val * x[job], minlength=L)
        live = rate > 1e-15
        step_link = np.min(room[live] / rate[live]) if np.any(live) else np.inf
        step_job = np.min(mf[active] - x[active])
        x[active] += max(0.0, min(step_link, step_job))
        # freeze the jobs on saturated links and the jobs at their demand
        slack = cap - np.bincount(link, weights=val * x[job], minlength=L)
        full = live & (slack <= 1e-9 * np.maximum(cap, 1.0))
        frozen = np.bincount(job, weights=full[link].astype(float), minlength=J) > 0
        frozen |= x >= mf - 1e-12
        if not np.any(frozen & active):
            break
        active &= ~frozen
    return np.minimum(x, mf)


def fair_share_bandwidths_gbps(
    graph: nx.Graph,
    jobs: Sequence,
    *,
    pattern: str | Sequence[str] = "ring",
    policy: str = "max_min",
    routing: str = "adaptive",
    seed: int = 0,
    qps: int = 4,
    failed_links=(),
    failed_switches=(),
) -> dict:
    """Per-node achievable bandwidth [Gb/s] of jobs sharing the fabric, and link use.

    jobs: a node-index array per job; pattern: one traffic pattern for all or one per
    job (``"ring"``, ``"all_to_all"``); policy: ``"max_min"`` (progressive filling) or
    ``"proportional"``; routing: ``"adaptive"`` or ``"ecmp"`` (seeded hashing, ``qps``
    flows per connection); failed_links / failed_switches as :func:`link_loads`, the
    traffic re-routed around them.  Returns ``{"bandwidth_gbps": (jobs,), "fraction":
    (jobs,), "alone_gbps": (jobs,) each job alone on the same fabric, "slowdown": (jobs,)
    alone / shared, "max_link_utilization": float}``.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    lay = _layout(graph)
    node_bw = lay.nics_per_node * lay.node_nic_links * lay.link_gbps
    fails = _Failures.build(lay, failed_links, failed_switches)
    pats = [pattern] * len(jobs) if isinstance(pattern, str) else list(pattern)
    if len(pats) != len(jobs):
        raise ValueError(f"{len(pats)} patterns for {len(jobs)} jobs")
    rng = np.random.default_rng(seed)
    per_job = [_job_loads(graph, nodes, p, fails, 1.0, routing, rng, qps)
               for nodes, p in zip(jobs, pats, strict=True)]
    nv = len(lay.vertex_names)
    J = len(jobs)
    # NIC cables belong to one node, hence one job: they bound that job alone (a per-job
    # cap), and only the switch links enter the shared solve
    nic_cap = np.ones(J)
    nic_util = 0.0
    sw = []
    for j, ld in enumerate(per_job):
        on_nic = (ld.src < lay.n_nodes) | (ld.dst < lay.n_nodes)
        loaded = on_nic & (ld.load_gbps > 1e-12)
        if np.any(loaded):
            with np.errstate(divide="ignore"):
                nic_cap[j] = min(1.0, float(np.min(ld.capacity_gbps[loaded] / ld.load_gbps[loaded])))
        sw.append(~on_nic)
    nic_loads = [(ld.load_gbps[~k], ld.capacity_gbps[~k]) for ld, k in zip(per_job, sw, strict=True)]
    per_job_sw = [LinkLoads(ld.src[k], ld.dst[k], ld.load_gbps[k], ld.capacity_gbps[k], ld.names,
                            ld.partitioned) for ld, k in zip(per_job, sw, strict=True)]
    keys = np.concatenate([ld.src.astype(np.int64) * nv + ld.dst for ld in per_job_sw]) \
        if per_job else np.zeros(0, np.int64)
    if nv * nv <= _DIRECT_KEYS:
        # link ids by direct addressing over the (vertex, vertex) grid (no sort)
        table = np.full(nv * nv, -1, dtype=np.int64)
        table[keys] = 1
        used_keys = np.flatnonzero(table > 0)
        table[used_keys] = np.arange(used_keys.size)
        inv = table[keys]
    else:  # a large fabric: sort the keys instead (same ids, in key order)
        used_keys, inv = np.unique(keys, return_inverse=True)
    caps = np.zeros(used_keys.size)
    caps[inv] = np.concatenate([ld.capacity_gbps for ld in per_job_sw]) if per_job else 0.0
    job_of = np.repeat(np.arange(J), [ld.src.size for ld in per_job_sw])
    vals = np.concatenate([ld.load_gbps for ld in per_job_sw]) if per_job else np.zeros(0)
    alone = np.array([0.0 if ld.partitioned else ld.fraction() for ld in per_job])
    if policy == "max_min":
        frac = _max_min(job_of, inv, vals, caps, J, max_fraction=nic_cap)
    else:  # each link split by offered load; a job runs at its worst link
        total = np.bincount(inv, weights=vals, minlength=caps.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total > 0, caps / total, np.inf)
        worst = np.full(J, np.inf)
        on = vals > 1e-12
        np.minimum.at(worst, job_of[on], share[inv[on]])
        frac = np.minimum(nic_cap, worst)
    partitioned = np.array([ld.partitioned for ld in per_job], bool)
    frac = np.where(partitioned, 0.0, np.minimum(frac, alone))
    used = np.bincount(inv, weights=vals * frac[job_of], minlength=caps.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(caps > 0, used / caps, 0.0)
        for j, (nl, nc) in enumerate(nic_loads):
            if nl.size:
                nic_util = max(nic_util, float(np.max(np.where(nc > 0, nl * frac[j] / nc, 0.0))))
    return {"bandwidth_gbps": node_bw * frac, "fraction": frac,
            "alone_gbps": node_bw * alone,
            "slowdown": np.divide(alone, frac, out=np.full(len(jobs), np.inf), where=frac > 0),
            "max_link_utilization": max(float(util.max()) if util.size else 0.0, nic_util)}
