"""The recirculation matrix D: the linear map from rack heat to rack inlet temperature.

The heat problem of :mod:`twin.thermal.solver` is linear in the rack heat loads, so the
inlet temperatures are exactly ``T_in = S @ T_supply + D @ Q_rack``. This module derives
``S`` and ``D`` (and the cooling units' share of each rack's heat) once per layout and
airflow from one sparse LU factorisation and R transposed solves, and evaluates them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .geometry import HallGeometry
from .properties import AIR_VOLUMETRIC_HEAT_J_M3_K
from .solver import HallProblem, build_problem


@dataclass(frozen=True, eq=False)
class InletModel:
    """Linear map from rack heat to rack inlet temperature for one layout and airflow.

    inlet_temp_c = base_inlet_c + recirculation_k_per_w @ rack_heat_w       (exact)
    base_inlet_c = supply_mix @ cooling_supply_temp_c
    cooling heat removed [W] = cooling_base_w + cooling_heat_share @ rack_heat_w
    The columns of cooling_heat_share sum to 1 (every watt ends in some unit).
    """

    base_inlet_c: np.ndarray  # (R,) [C]
    recirculation_k_per_w: np.ndarray  # (R, R) D [K/W]
    supply_mix: np.ndarray  # (R, C) d inlet / d supply temperature [-]
    cooling_supply_temp_c: np.ndarray  # (C,) [C]
    cooling_airflow_m3_s: np.ndarray  # (C,) effective airflow, 0 for inactive units
    cooling_capacity_w: np.ndarray  # (C,) [W]
    cooling_active: np.ndarray  # (C,) bool
    return_mix: np.ndarray  # (C, C) d return temperature / d supply temperature [-]
    return_k_per_w: np.ndarray  # (C, R) d return temperature / d rack heat [K/W]
    cooling_base_w: np.ndarray  # (C,) heat removed with zero rack heat [W]
    cooling_heat_share: np.ndarray  # (C, R) fraction of rack j's heat removed by unit c [-]
    rack_airflow_m3_s: np.ndarray  # (R,) [m3/s]
    recirculation_csr: sp.csr_matrix | None = None  # truncated D for large halls (or None)
    truncation_k_per_w: float = 0.0  # bound on the dropped |D| per row [K/W]

    def cooling_load_w(self, rack_heat_w) -> np.ndarray:
        """Heat removed by each cooling unit [W] (compare with cooling_capacity_w)."""
        return self.cooling_base_w + self.cooling_heat_share @ np.asarray(rack_heat_w, float)

    def return_temp_c(self, rack_heat_w) -> np.ndarray:
        """Return-air temperature of each cooling unit [C] (NaN for inactive units)."""
        t = self.return_mix @ self.cooling_supply_temp_c + self.return_k_per_w @ np.asarray(rack_heat_w, float)
        return np.where(self.cooling_active, t, np.nan)


def linear_maps(prob: HallProblem, block_size: int = 512):
    """Sensitivities of rack inlets and unit returns: rows [W; M] of A^-1 B and A^-1 E.

    Returns (d_all (R+C, R) [K/W], s_all (R+C, C) [-]). No room air flows down into the
    plenum (every floor flow >= 0, asserted by :func:`build_problem`), so the operator is
    block lower-triangular in the order (plenum, room, return node): the plenum does not
    see the room. D comes from transposed solves with the room block alone (a smaller
    factor than the whole operator's, the one the problem's own solve used) and S from C
    forward block substitutions. Exact.
    """
    n_r, n_c = prob.geometry.n_racks, prob.geometry.n_cooling
    rows = sp.vstack([prob.W, prob.M]).tocsr()
    n_out = n_r + n_c
    d_all = np.empty((n_out, n_r))
    s_all = np.empty((n_out, n_c))
    nr, n_u = prob.n_room, prob.n_unknowns
    n_p = prob.plenum_pressure.size
    a = prob.a_csr
    rr, pp, nn = slice(0, nr), slice(nr, nr + n_p), slice(nr + n_p, n_u)
    lu_r = prob.block_lu("room")      # the factors the problem's own solve used
    lu_p = prob.block_lu("plenum")
    has_n = n_u > nr + n_p
    a_nn = a[nn, nn].toarray().ravel() if has_n else np.zeros(0)
    a_nr = a[nn, rr] if has_n else None
    b = prob.B.tocsr()
    b_r, b_n = b[rr], b[nn]
    # B^T Y reads Y only on the room cells that receive a rack's exhaust: the product of those
    # rows of B (each row's entries in its order) with those rows of Y adds the same terms in
    # the same order (csc_matvecs runs over B's rows, ascending) without copying all of Y
    ex = np.flatnonzero(np.diff(b_r.indptr))
    b_ex_t = b_r[ex].T
    for start in range(0, n_out, block_size):
        stop = min(start + block_size, n_out)
        w = rows[start:stop]
        w_r = w[:, rr].T.toarray()
        if has_n:
            assert a_nr is not None  # set whenever has_n
            y_n = w[:, nn].T.toarray() / a_nn[:, None]
            y_r = lu_r.solve(w_r - (a_nr.T @ y_n), trans="T")
            d_all[start:stop] = (b_ex_t @ y_r[ex] + b_n.T @ y_n).T
        else:
            y_r = lu_r.solve(w_r, trans="T")
            d_all[start:stop] = (b_ex_t @ y_r[ex]).T
    e = prob.E.tocsr()
    t_p = lu_p.solve(e[pp].toarray())
    t_r = lu_r.solve(e[rr].toarray() - a[rr, pp] @ t_p)
    t_all = [t_r, t_p]
    if has_n:
        t_all.append((e[nn].toarray() - a[nn, pp] @ t_p - a_nr @ t_r) / a_nn[:, None])
    s_all[:] = rows @ np.vstack(t_all)
    return d_all, s_all


def truncate_recirculation(d_k_per_w: np.ndarray, drop_k_per_w: float) -> sp.csr_matrix:
    """Sparse copy of D without its smallest entries.

    In each row the smallest |D_ij| are dropped while their sum stays <= drop_k_per_w, so
    for rack heats below Q_max the inlet error is at most drop_k_per_w * Q_max [K].
    """
    a = np.abs(d_k_per_w)
    order = np.argsort(a, axis=1)
    csum = np.cumsum(np.take_along_axis(a, order, axis=1), axis=1)
    drop_sorted = csum <= drop_k_per_w
    drop = np.zeros_like(drop_sorted)
    np.put_along_axis(drop, order, drop_sorted, axis=1)
    return sp.csr_matrix(np.where(drop, 0.0, d_k_per_w))


def inlet_model(
    geometry: HallGeometry,
    rack_airflow_m3_s,
    cooling_active=None,
    *,
    block_size: int = 512,
    sparse_min_racks: int = 1024,
    truncation_error_k: float = 0.01,
    max_rack_heat_w: float = 100e3,
    room_extra_flux_m3_s=None,
) -> InletModel:
    """Derive the recirculation matrix D (and supply mixing) of a layout.

    One sparse LU factorisation (of the room block alone: the plenum is upstream of the
    room, see :func:`linear_maps`), then transposed solves A^T Y = [W; M]^T, one per
    rack and per cooling unit in blocks of ``block_size``; D = (B^T Y_W)^T, S = (E^T Y_W)^T.
    Re-derive when the layout, rack airflow or the set of running cooling units
    (``cooling_active``, (C,) bool; False = fans stopped) changes. Unit capacity does not
    enter D (the steady model is linear); compare ``cooling_load_w`` with
    ``cooling_capacity_w`` and use :func:`twin.thermal.fault_transient` when it is short.

    Halls of ``sparse_min_racks`` racks or more also get a truncated sparse D
    (``recirculation_csr``) that :func:`inlet_temp_c` uses: recirculation decays with
    distance, so most of D is negligible; the inlet error it allows is at most
    ``truncation_error_k`` for rack heats up to ``max_rack_heat_w``.
    ``room_extra_flux_m3_s``: extra room face fluxes (see :func:`build_problem`).
    """
    prob = build_problem(geometry, rack_airflow_m3_s, cooling_active, room_extra_flux_m3_s)
    return inlet_model_of_problem(prob, block_size=block_size, sparse_min_racks=sparse_min_racks,
                                  truncation_error_k=truncation_error_k, max_rack_heat_w=max_rack_heat_w)


def inlet_model_of_problem(prob: HallProblem, *, block_size: int = 512, sparse_min_racks: int = 1024,
                           truncation_error_k: float = 0.01, max_rack_heat_w: float = 100e3) -> InletModel:
    """:func:`inlet_model` of an assembled problem (e.g. a converged buoyant flow)."""
    geometry = prob.geometry
    d_all, s_all = linear_maps(prob, block_size)
    n_r = geometry.n_racks
    d_all[np.arange(n_r), np.arange(n_r)] += prob.self_heating_k_per_w()
    v_c = prob.cooling_airflow_m3_s
    t_sup = geometry.cooling_supply_temp_c
    active = v_c > 0
    ret_mix = s_all[n_r:]
    ret_k = d_all[n_r:]
    vol = AIR_VOLUMETRIC_HEAT_J_M3_K * v_c
    base_w = vol * (ret_mix @ t_sup - t_sup)
    return InletModel(
        base_inlet_c=s_all[:n_r] @ t_sup,
        recirculation_k_per_w=d_all[:n_r],
        supply_mix=s_all[:n_r],
        cooling_supply_temp_c=t_sup.copy(),
        cooling_airflow_m3_s=v_c,
        cooling_capacity_w=geometry.cooling_capacity_w.copy(),
        cooling_active=active,
        return_mix=ret_mix,
        return_k_per_w=ret_k,
        cooling_base_w=np.where(active, base_w, 0.0),
        cooling_heat_share=vol[:, None] * ret_k,
        rack_airflow_m3_s=prob.rack_airflow_m3_s,
        **_sparse_part(d_all[:n_r], sparse_min_racks, truncation_error_k / max_rack_heat_w),
    )


def _sparse_part(d, sparse_min_racks, drop):
    if d.shape[0] < sparse_min_racks:
        return {}
    return {"recirculation_csr": truncate_recirculation(d, drop), "truncation_k_per_w": drop}


def inlet_temp_c(model: InletModel, rack_heat_w) -> np.ndarray:
    """Rack inlet temperatures [C]: T_in = base_inlet_c + D @ rack_heat_w (one mat-vec).

    Uses the truncated sparse D of large halls when the model has one (error at most
    truncation_k_per_w * max(rack_heat_w)), the dense D otherwise (exact).
    """
    d = model.recirculation_csr if model.recirculation_csr is not None else model.recirculation_k_per_w
    return model.base_inlet_c + d @ rack_heat_w
