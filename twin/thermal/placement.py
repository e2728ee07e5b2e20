"""Siting: choose rack positions in a hall that keep the hottest inlet low.

Given K candidate positions (the racks of a :class:`HallGeometry`, with their intake
directions) and N racks of equal heat and airflow, pick N positions that minimise the
hottest inlet temperature. The surrogate is the recirculation matrix D of the hall with
every candidate present (unchosen candidates carry no heat but still move air, like
blanked idle racks), used in a greedy fill followed by pairwise-swap improvement (a
min-max assignment heuristic in the spirit of Tang, Gupta & Varsamopoulos, IEEE TPDS
19 (2008) 1458, who place heat with an abstract heat-flow (recirculation) model).
The chosen and the naive layouts are then re-solved in full, with the racks that are
absent removed, so the reported gain is not a surrogate figure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .geometry import HallGeometry, default_tile_xy_m
from .inlet import inlet_model
from .properties import ASHRAE_RECOMMENDED_C
from .solver import build_problem


@dataclass(frozen=True, eq=False)
class PlacementResult:
    chosen: np.ndarray  # (N,) candidate indices, sorted
    naive: np.ndarray  # (N,) candidate indices of the naive fill
    hottest_inlet_c: float  # chosen layout, full solve
    naive_hottest_inlet_c: float  # naive layout, full solve
    gain_k: float  # naive_hottest_inlet_c - hottest_inlet_c
    inlet_temp_c: np.ndarray  # (N,) chosen layout, full solve, order of ``chosen``
    naive_inlet_temp_c: np.ndarray  # (N,) naive layout, order of ``naive``
    predicted_hottest_inlet_c: float  # surrogate (all candidates present)
    all_recommended: bool  # every chosen inlet inside the ASHRAE recommended envelope


def subset_geometry(geometry: HallGeometry, racks) -> HallGeometry:
    """The hall with only the given candidate racks installed; the tile layout of the
    full candidate hall is kept (tiles are part of the building)."""
    idx = np.asarray(racks, int)
    tiles = geometry.tile_xy_m if geometry.tile_xy_m is not None else default_tile_xy_m(geometry)
    return replace(
        geometry,
        rack_center_xy_m=geometry.rack_center_xy_m[idx],
        rack_intake_dir=geometry.rack_intake_dir[idx],
        rack_enclosed=None if geometry.rack_enclosed is None else geometry.rack_enclosed[idx],
        tile_xy_m=tiles,
    )


def _layout_inlets(geometry, racks, heat_w, airflow_m3_s):
    g = subset_geometry(geometry, racks)
    prob = build_problem(g, np.full(len(racks), airflow_m3_s))
    q = np.full(len(racks), heat_w)
    return prob.inlet_temp_c(prob.solve(q), q)


def greedy_min_max(base_c, d_k_per_w, heat_w, n, swap_passes=4):
    """Choose n of K positions minimising max_i in S (base_i + sum_j in S D_ij Q).

    Greedy: add the candidate giving the lowest new maximum (ties broken by the lowest
    sum of inlets); then swap passes: replace a chosen position by an unchosen one when
    that lowers the maximum. base_c (K,), d_k_per_w (K, K), heat_w scalar [W].
    """
    k = base_c.size
    if not 0 < n <= k:
        raise ValueError(f"cannot place {n} racks on {k} candidate positions")
    dq = d_k_per_w * heat_w
    chosen = np.zeros(k, bool)
    cur = base_c.copy()  # inlet of every candidate given the chosen heat
    for _ in range(n):
        sel = np.flatnonzero(chosen)
        # new inlet of chosen racks if candidate c is added: cur[sel] + dq[sel, c]
        if sel.size:
            new_chosen = cur[sel][:, None] + dq[sel, :]
            new_max = np.maximum(new_chosen.max(axis=0), cur + np.diag(dq))
            new_sum = new_chosen.sum(axis=0) + cur + np.diag(dq)
        else:
            new_max = cur + np.diag(dq)
            new_sum = new_max.copy()
        score = np.where(chosen, np.inf, new_max + 1e-9 * new_sum)
        c = int(np.argmin(score))
        chosen[c] = True
        cur = cur + dq[:, c]
    for _ in range(swap_passes):
        improved = False
        for i in np.flatnonzero(chosen):
            sel = np.flatnonzero(chosen)
            keep = sel[sel != i]
            base_wo = cur - dq[:, i]  # inlets without rack i
            # swapping i -> c: chosen inlets base_wo[keep] + dq[keep, c]; new rack c: base_wo[c] + dq[c, c]
            cand_max = np.maximum((base_wo[keep][:, None] + dq[keep, :]).max(axis=0), base_wo + np.diag(dq))
            cand_max[chosen] = np.inf
            c = int(np.argmin(cand_max))
            current_max = cur[sel].max()
            if cand_max[c] < current_max - 1e-9:
                chosen[i] = False
                chosen[c] = True
                cur = base_wo + dq[:, c]
                improved = True
        if not improved:
            break
    sel = np.flatnonzero(chosen)
    return sel, float(cur[sel].max())


def suggest_placement(
    candidates: HallGeometry,
    n_racks: int,
    rack_heat_w: float,
    rack_airflow_m3_s: float,
    *,
    naive_order=None,
    swap_passes: int = 4,
) -> PlacementResult:
    """Suggest positions for ``n_racks`` racks among the candidate racks of a hall.

    candidates: the hall with one rack per candidate position. rack_heat_w [W] and
    rack_airflow_m3_s [m3/s] are per rack (all racks alike). naive_order: the order a
    naive fill would use (default: candidate order, i.e. fill rows from the first).
    Returns the chosen positions, the full-solve inlets of chosen and naive layouts and
    the gain in hottest inlet [K].
    """
    k = candidates.n_racks
    model = inlet_model(candidates, np.full(k, rack_airflow_m3_s))
    sel, predicted = greedy_min_max(model.base_inlet_c, model.recirculation_k_per_w, rack_heat_w, n_racks, swap_passes)
    naive = np.asarray(naive_order if naive_order is not None else np.arange(k), int)[:n_racks]
    t_sel = _layout_inlets(candidates, sel, rack_heat_w, rack_airflow_m3_s)
    t_naive = _layout_inlets(candidates, naive, rack_heat_w, rack_airflow_m3_s)
    lo, hi = ASHRAE_RECOMMENDED_C
    return PlacementResult(
        chosen=sel,
        naive=naive,
        hottest_inlet_c=float(t_sel.max()),
        naive_hottest_inlet_c=float(t_naive.max()),
        gain_k=float(t_naive.max() - t_sel.max()),
        inlet_temp_c=t_sel,
        naive_inlet_temp_c=t_naive,
        predicted_hottest_inlet_c=predicted,
        all_recommended=bool(np.all((t_sel >= lo) & (t_sel <= hi))),
    )


@dataclass(frozen=True, eq=False)
class CapacityResult:
    n_racks: int  # racks that fit with every inlet <= limit_c (full solve)
    positions: np.ndarray  # (n_racks,) candidate indices
    hottest_inlet_c: float  # full solve of that layout
    limit_c: float
    predicted_n_racks: int  # what the surrogate alone allowed


def racks_that_fit(
    candidates: HallGeometry,
    rack_heat_w: float,
    rack_airflow_m3_s: float,
    *,
    limit_c: float = ASHRAE_RECOMMENDED_C[1],
) -> CapacityResult:
    """How many racks of this heat fit in the hall with every inlet at or below limit_c.

    The siting question "how many racks fit, and where": racks are added greedily where
    they raise the hottest inlet least (surrogate D of all candidates), as long as the
    predicted hottest inlet stays <= limit_c (default: the top of the ASHRAE TC 9.9
    recommended envelope, 27 C); the layout is then re-solved in full and racks are
    removed (last added first) until the full solve agrees.
    """
    k = candidates.n_racks
    model = inlet_model(candidates, np.full(k, rack_airflow_m3_s))
    dq = model.recirculation_k_per_w * rack_heat_w
    base = model.base_inlet_c
    chosen: list[int] = []
    cur = base.copy()
    free = np.ones(k, bool)
    while free.any():
        sel = np.asarray(chosen, int)
        own = cur + np.diag(dq)
        new_max = np.maximum((cur[sel][:, None] + dq[sel, :]).max(axis=0), own) if sel.size else own
        new_max = np.where(free, new_max, np.inf)
        c = int(np.argmin(new_max))
        if new_max[c] > limit_c:
            break
        chosen.append(c)
        free[c] = False
        cur = cur + dq[:, c]
    predicted = len(chosen)
    hottest = -np.inf
    while chosen:
        t = _layout_inlets(candidates, np.asarray(chosen), rack_heat_w, rack_airflow_m3_s)
        hottest = float(t.max())
        if hottest <= limit_c:
            break
        chosen.pop()
    return CapacityResult(
        n_racks=len(chosen),
        positions=np.sort(np.asarray(chosen, int)),
        hottest_inlet_c=hottest if chosen else float("nan"),
        limit_c=limit_c,
        predicted_n_racks=predicted,
    )
