"""Buoyancy in the layered (3-D) room: warm air rises, cool air sinks, and the hot layer
under the ceiling spills over rack tops and round row ends into open cold aisles.

The layered model of :mod:`twin.thermal.solver` moves air by potential flow: hot exhaust
reaches the ceiling only because the returns draw it there. Real rooms stratify: exhaust
warmer than its surroundings rises at a velocity set by its buoyancy, spreads under the
ceiling, and what the cold-aisle tops and row ends draw from above is that hot layer.

Model (Boussinesq, in the spirit of a zero-equation buoyant exchange): on every vertical
face between layers, air crosses at the buoyant velocity of the face's temperature excess
over the mean of its height,

    w_b = c_b sign(dT) sqrt(g beta H |dT|),   dT = T_face - <T>_layer,  beta = 1 / T_mean [1/K],

with H the rack height (the length over which a rack-exhaust plume accelerates) and c_b a
dimensionless plume coefficient. Upward flux where the air is warm, downward where cool:
an overturning exchange that carries no net volume across a layer on average. The
potential flow then corrects for continuity (L phi = s - div F_b,
:func:`twin.thermal.solver.build_problem`), which makes the horizontal spreading under
the ceiling and the compensating descent, so mass is conserved in every cell. Because
F_b depends on the temperatures, the flow is found by a relaxed Picard iteration
(flow -> temperatures -> buoyant fluxes); D is then derived once at the converged flow and
holds for heat loads near the one it was derived at (re-derive, or interpolate, when the
heat moves materially, as for airflow in :mod:`twin.thermal.airflow`). How near is near
enough was measured in Blue Vela's hall: a D derived at 0.57 of the heat it is applied to
moves the inlets by at most 0.3 K in the open hall short of supply air, below 0.01 K with
the enclosures (tests/sim/test_buoyant_heat_scaling.py).

c_b = 0.3 by default: the centre-line velocity of a line plume, w = 1.66 (g beta Q' / (rho cp))^(1/3)
(Rouse, Yih & Humphreys, Tellus 4 (1952) 201; Lee & Chu, Turbulent Jets and Plumes, 2003),
written in terms of its own temperature excess over a rack height, gives
w / sqrt(g beta H dT) between about 0.3 and 0.6 for 1-3 m plumes; the lower end because
a plume's mean excess over a layer face is below its centre-line excess. It is an
assumption, not a fit: no measured benchmark with open and contained aisles was available
to the twin to fit it (see docs/validation.md); ``coefficient=0`` is the potential flow.
"""

from __future__ import annotations

import hashlib
import pickle
from collections import OrderedDict
from dataclasses import dataclass, fields, replace

import numpy as np
import scipy.sparse as sp

from .geometry import HallGeometry
from .inlet import InletModel, inlet_model_of_problem
from .mixing import MIXING_LAWS, room_face_diffusivity_m2_s
from .solver import HallProblem, build_problem

__all__ = ["BuoyantFlow", "buoyant_face_flux_m3_s", "buoyant_field", "buoyant_flow", "buoyant_inlet_model"]

GRAVITY_M_S2 = 9.80665
PLUME_COEFFICIENT = 0.3
#: vertical mixing in the buoyant passes (twin.thermal.mixing)
MIXING_LAW = "constant"


def buoyant_face_flux_m3_s(prob: HallProblem, temp_c: np.ndarray, *, coefficient: float = PLUME_COEFFICIENT,
                           plume_height_m: float | None = None) -> np.ndarray:
    """Buoyant volume flux on every room face [m3/s] (vertical faces only; + = upward).

    F = A c_b sign(dT) sqrt(g beta H |dT|) with A = cell area, dT the face temperature
    (mean of its two cells) minus the mean of the two layers' mean temperatures, beta =
    1 / (mean room temperature in K), H = ``plume_height_m`` (default the rack height).
    """
    g = prob.geometry
    ri, rj, fax, _ = prob.room_face
    n = prob.grid.nx * prob.grid.ny
    cell_of = np.flatnonzero(prob.room_id >= 0)
    layer = cell_of // n
    t = np.asarray(temp_c, float)[: prob.n_room]
    nz = int(g.n_layers)
    t_layer = np.bincount(layer, weights=t, minlength=nz) / np.maximum(np.bincount(layer, minlength=nz), 1)
    vert = fax == 2
    out = np.zeros(ri.size)
    if not vert.any() or coefficient == 0:
        return out
    i, j = ri[vert], rj[vert]
    d_t = 0.5 * (t[i] + t[j]) - 0.5 * (t_layer[layer[i]] + t_layer[layer[j]])
    beta = 1.0 / (float(t.mean()) + 273.15)
    h_p = g.rack_height_m if plume_height_m is None else plume_height_m
    area = prob.grid.cell_m**2
    out[vert] = area * coefficient * np.sign(d_t) * np.sqrt(GRAVITY_M_S2 * beta * h_p * np.abs(d_t))
    return out


@dataclass(frozen=True)
class BuoyantFlow:
    """Converged buoyant flow of a hall: the problem, its temperatures and the iteration."""

    problem: HallProblem
    temp_c: np.ndarray
    face_flux_m3_s: np.ndarray
    iterations: int
    change_k: float  # largest inlet change in the last iteration [K]


def buoyant_flow(geometry: HallGeometry, rack_heat_w, rack_airflow_m3_s, cooling_active=None, *,
                 coefficient: float = PLUME_COEFFICIENT, iterations: int = 12, relaxation: float = 0.5,
                 tol_k: float = 0.05, mixing: str = MIXING_LAW) -> BuoyantFlow:
    """Picard iteration: potential flow -> temperatures -> buoyant fluxes -> flow ...

    Each pass adds ``relaxation`` of the new buoyant fluxes to the old ones and stops when
    no rack inlet moves by more than ``tol_k`` [K] or after ``iterations`` passes. Needs
    ``geometry.n_layers`` >= 2 (one layer has no vertical faces: the potential flow).
    ``mixing``: the vertical eddy diffusivity, ``"constant"`` (the hall's
    ``eddy_diffusivity_m2_s`` on every face) or a Richardson-damped law of
    :mod:`twin.thermal.mixing` (``"munk_anderson"``, ``"pacanowski_philander"``, or
    ``"munk_anderson_jets"`` with the shear of the units' jets and of the racks' exhaust
    plumes under the ceiling added, which takes ``rack_heat_w``), or ``"chen_xu"``, Chen &
    Xu's flow-dependent eddy diffusivity on every face in place of the constant (Munk-Anderson
    damped on vertical faces), evaluated in each pass from the last pass's temperatures and
    flow and relaxed like the fluxes.
    """
    if mixing not in MIXING_LAWS:
        raise ValueError(f"mixing must be one of {MIXING_LAWS}, got {mixing!r}")
    heat = np.broadcast_to(np.asarray(rack_heat_w, float), (geometry.n_racks,))
    prob = build_problem(geometry, rack_airflow_m3_s, cooling_active)
    temp = prob.solve(heat)
    inlet = prob.inlet_temp_c(temp, heat)
    flux = np.zeros(prob.room_face[0].size)
    change = np.inf
    k = 0
    if geometry.n_layers < 2 or coefficient == 0:
        return BuoyantFlow(prob, temp, flux, 0, 0.0)
    diff = None
    while k < iterations:
        k += 1
        flux = (1 - relaxation) * flux + relaxation * buoyant_face_flux_m3_s(prob, temp, coefficient=coefficient)
        if mixing != "constant":
            new_diff = room_face_diffusivity_m2_s(prob, temp, mixing, heat)
            diff = new_diff if diff is None else (1 - relaxation) * diff + relaxation * new_diff
        prob = build_problem(geometry, rack_airflow_m3_s, cooling_active, room_extra_flux_m3_s=flux,
                             room_face_diffusivity_m2_s=diff)
        temp = prob.solve(heat)
        new = prob.inlet_temp_c(temp, heat)
        change = float(np.abs(new - inlet).max())
        inlet = new
        if change < tol_k:
            break
    return BuoyantFlow(prob, temp, flux, k, change)


def buoyant_field(geometry: HallGeometry, rack_heat_w, rack_airflow_m3_s, cooling_active=None, **kw):
    """Full steady field of the converged buoyant flow (:func:`buoyant_flow`, the flow whose
    inlet model :func:`buoyant_inlet_model` gives the engine), as
    :func:`twin.thermal.solver.steady_field` returns it for the plan view: the same variables
    [C, m/s, W], with the buoyant face fluxes in the room velocity, and ``attrs["model"]``
    naming the layered Boussinesq flow and its iterations."""
    from .solver import _field_dataset

    heat = np.broadcast_to(np.asarray(rack_heat_w, float), (geometry.n_racks,))
    bf = buoyant_flow(geometry, heat, rack_airflow_m3_s, cooling_active, **kw)
    ds = _field_dataset(bf.problem, bf.temp_c, heat)
    ds.attrs["model"] = (f"layered Boussinesq: buoyant fluxes on the potential flow, {int(geometry.n_layers)} layers, "
                         f"{bf.iterations} Picard passes (last inlet change {bf.change_k:.3f} K)")
    return ds


#: converged buoyant inlet models kept per process, by a digest of every input (see
#: :func:`buoyant_inlet_model`): at most this many, and at most ``MODEL_MEMO_BYTES`` of
#: arrays (a 128-rack hall's model is about 0.2 MB; the oldest go first)
MODEL_MEMO_SIZE = 64
MODEL_MEMO_BYTES = 256 * 2**20
_MODEL_MEMO: OrderedDict[bytes, InletModel] = OrderedDict()


def _memo_key(geometry: HallGeometry, rack_heat_w, rack_airflow_m3_s, cooling_active, coefficient, kw) -> bytes:
    """Digest of everything :func:`buoyant_inlet_model` reads: the geometry (pickled, so every
    field and array counts), the heat, airflow and running units as float64/bool bytes, the
    plume coefficient and the iteration settings."""
    n_r, n_c = geometry.n_racks, geometry.n_cooling
    parts = (pickle.dumps(geometry, protocol=5),
             np.broadcast_to(np.asarray(rack_heat_w, float), (n_r,)).tobytes(),
             np.broadcast_to(np.asarray(rack_airflow_m3_s, float), (n_r,)).tobytes(),
             b"all" if cooling_active is None else np.asarray(cooling_active, bool).reshape(n_c).tobytes(),
             repr((float(coefficient), sorted(kw.items()))).encode())
    h = hashlib.blake2b(digest_size=32)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


def _model_bytes(m: InletModel) -> int:
    """Bytes of a model's dense arrays (the memo's budget)."""
    return sum(getattr(m, f.name).nbytes for f in fields(m) if isinstance(getattr(m, f.name), np.ndarray))


def _copy_model(m: InletModel) -> InletModel:
    """A copy whose arrays the caller may change without touching the memo's."""
    return replace(m, **{f.name: getattr(m, f.name).copy() for f in fields(m)
                         if isinstance(getattr(m, f.name), (np.ndarray, sp.spmatrix))})


def buoyant_inlet_model(geometry: HallGeometry, rack_heat_w, rack_airflow_m3_s, cooling_active=None, *,
                        coefficient: float = PLUME_COEFFICIENT, memo: bool = True, **kw) -> InletModel:
    """Inlet model (D, S) of the hall at the converged buoyant flow for ``rack_heat_w``.

    A pure function of its inputs, so with ``memo`` (default) a process keeps the last
    :data:`MODEL_MEMO_SIZE` results by a digest of every input and returns a copy of the
    kept model when asked again (a sweep, a study or the tests run the same hall many
    times; one derivation of a Blue Vela knot costs about 0.45 s of CPU, issue 19). The
    copy is bit for bit the model a fresh derivation gives (tested).
    """
    key = _memo_key(geometry, rack_heat_w, rack_airflow_m3_s, cooling_active, coefficient, kw) if memo else b""
    if memo and key in _MODEL_MEMO:
        _MODEL_MEMO.move_to_end(key)
        return _copy_model(_MODEL_MEMO[key])
    bf = buoyant_flow(geometry, rack_heat_w, rack_airflow_m3_s, cooling_active, coefficient=coefficient, **kw)
    model = inlet_model_of_problem(bf.problem)
    if memo:
        _MODEL_MEMO[key] = _copy_model(model)
        while len(_MODEL_MEMO) > MODEL_MEMO_SIZE or (
                len(_MODEL_MEMO) > 1 and sum(map(_model_bytes, _MODEL_MEMO.values())) > MODEL_MEMO_BYTES):
            _MODEL_MEMO.popitem(last=False)
    return model
