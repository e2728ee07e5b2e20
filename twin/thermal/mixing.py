"""Vertical turbulent mixing damped by stable stratification (issue 12, point d).

The layered room of :mod:`twin.thermal.solver` mixes heat with one eddy diffusivity
Gamma_0 (``HallGeometry.eddy_diffusivity_m2_s``) on every face. Warm exhaust over a cold
aisle is stably stratified, and stratification damps vertical turbulent exchange: the
buoyancy a parcel must overcome grows with dT/dz while the shear that feeds the
turbulence does not. The ratio is the gradient Richardson number

    Ri = N^2 / S^2,   N^2 = g beta dT/dz,   S = |dU_h/dz|,   beta = 1 / T_mean [1/K],

and Munk & Anderson's empirical law for the eddy diffusivity of heat is

    Gamma_z = Gamma_0 (1 + 3.33 Ri)^(-3/2)   (Ri >= 0; Gamma_0 where Ri < 0).

Horizontal mixing is not damped (stratification acts on vertical exchange only). Where
turbulence is fully suppressed the air still conducts: Gamma_z never falls below air's
molecular thermal diffusivity, k / (rho cp) = 2.2e-5 m2/s near 20 C (k = 0.0257 W/(m K)).

On the layered grid (:func:`layered_face_richardson_number`):

- dT/dz on a vertical face = (T_upper - T_lower) / dz of its two cells;
- the shear from the resolved flow: each cell's horizontal velocity is the mean of the
  volume fluxes through its two x faces (and two y faces) over the face area h dz (a wall
  or solid face counts zero, as in :func:`twin.thermal.solver.steady_field`), and
  S = |u_h(upper) - u_h(lower)| / dz. This is the shear of the layer-mean potential flow
  (the jets' momentum enters only where their air is delivered), so it is a lower bound on
  the true shear and Ri is an upper bound: the damping is, if anything, too strong.

Shear the layer-mean flow does not carry (``law="munk_anderson_jets"``): a cooling unit's
wall jet runs across its aisle at up to its outlet velocity V_0 / A_0 (m/s) under air that
moves at a few cm/s, and its velocity falls to the room's across the thin mixing layer at its
edge, not over a layer's depth dz. That layer's vorticity thickness grows as 0.18 x with
the distance x from the outlet (Brown & Roshko 1974), so the shear at the jet's top edge is

    S_jet = v(x) / (0.18 x),   v(x) the jet's centre-line velocity (ASHRAE laws, twin.thermal.jets),

put on the vertical faces above the highest layer the jet fills, over the plan cells
between its outlet and where it ends (:func:`jet_edge_shear_1_s`); likewise a rack's
exhaust, v = V_r / (rack width x rack height), on the face above the rack's top layer
behind its exhaust face. The two shears feed turbulence side by side, and shear
production is Gamma S^2, so their squares add:

    S^2 = S_mean^2 + S_jet^2

(the same sum of squares as the two horizontal components in S). No jets: S = S_mean, the
law above; no stratification: Ri = 0, Gamma_0. Floor tiles blow upward: their shear is
horizontal (dw/dx), not in Ri, and is left out.

The hot layer's spill over the rows: each rack's exhaust rises as a line plume at
w = 1.66 (g beta Q')^(1/3) / (rho cp)^(1/3), Q' its heat per metre of row that enters the room
(Rouse, Yih & Humphreys 1952; Lee & Chu 2003; independent of height), and spreads under the
ceiling from above its exhaust face as a ceiling jet. Taking the jet's speed as the plume's
(an upper bound: turning at the ceiling costs some) and its lower edge as a mixing layer
again, S_ceiling = w / (0.18 x) with x = (d + 1/2) h, d the plan distance in cells from the
rack's nearest exhaust cell, on the face under the top layer (the ceiling jet runs in the
top layer, so that face is the nearest to its lower edge); the largest over the racks
(:func:`ceiling_jet_shear_1_s`). With hot-aisle containment only the share of the exhaust
that spills into the room counts.

A flow-dependent eddy diffusivity in place of the constant Gamma_0 (``law="chen_xu"``): Chen &
Xu's zero-equation model of indoor airflow takes the eddy viscosity from the local mean speed
and the distance to the nearest wall,

    nu_t = 0.03874 |V| l,   Gamma = nu_t / Pr_t,   Pr_t = 0.9,

on every room face, with |V| the mean of the two cells' resolved speeds
(:func:`room_cell_velocity_m_s`: the potential flow plus the buoyant exchange) and l the mean of
their distances to the nearest wall surface (:func:`room_wall_distance_m`: the hall's walls,
floor and ceiling, rack bodies and obstacles). On vertical faces the Richardson damping above
is applied to that Gamma (Munk & Anderson, the layer-mean shear), Gamma_z = max(Gamma_CX f(Ri),
kappa_air); everywhere Gamma >= kappa_air. Nothing is fitted: the constant is Chen & Xu's, the
turbulent Prandtl number the customary 0.9 for air. The jets' momentum is not in the resolved
speed (it enters where their air is delivered), so |V| and Gamma are, if anything, low in a
jet's path.

References
----------
Chen, Q. & Xu, W. (1998). A zero-equation turbulence model for indoor airflow simulation.
Energy and Buildings 28, 137-144. doi:10.1016/S0378-7788(98)00020-6 (mu_t = 0.03874 rho V l,
l the distance to the nearest wall).
Munk, W. H. & Anderson, E. R. (1948). Notes on a theory of the thermocline. Journal of
Marine Research 7(3), 276-295 (K_h = K_0 (1 + 3.33 Ri)^-3/2, A_v = A_0 (1 + 10 Ri)^-1/2;
as coded in GOTM's ``cmue_ma``, Burchard et al.).
Pacanowski, R. C. & Philander, S. G. H. (1981). Parameterization of vertical mixing in
numerical models of tropical oceans. J. Phys. Oceanogr. 11, 1443-1451.
doi:10.1175/1520-0485(1981)011<1443:POVMIN>2.0.CO;2 (the same form, alpha = 5, n = 2;
offered as ``law="pacanowski_philander"``).
Rouse, H., Yih, C. S. & Humphreys, H. W. (1952). Gravitational convection from a boundary
source. Tellus 4, 201-210. doi:10.3402/tellusa.v4i3.8687 (line plume, w = 1.66 B'^(1/3)).
Brown, G. L. & Roshko, A. (1974). On density effects and large structure in turbulent
mixing layers. J. Fluid Mech. 64, 775-816. doi:10.1017/S002211207400190X
ASHRAE Handbook - Fundamentals, ch. 20 "Space Air Diffusion" (the jet laws).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .solver import HallProblem

__all__ = [
    "AIR_THERMAL_DIFFUSIVITY_M2_S",
    "CHEN_XU_COEFFICIENT",
    "MIXING_LAWS",
    "LINE_PLUME_VELOCITY_COEFFICIENT",
    "SHEAR_LAYER_GROWTH",
    "ceiling_jet_shear_1_s",
    "chen_xu_face_diffusivity_m2_s",
    "chen_xu_heat_diffusivity_m2_s",
    "jet_edge_shear_1_s",
    "layered_face_richardson_number",
    "munk_anderson_heat_fraction",
    "pacanowski_philander_heat_fraction",
    "richardson_number",
    "room_cell_velocity_m_s",
    "room_face_diffusivity_m2_s",
    "room_wall_distance_m",
    "vertical_eddy_diffusivity_m2_s",
]

GRAVITY_M_S2 = 9.80665

AIR_THERMAL_DIFFUSIVITY_M2_S = 0.0257 / (1.2 * 1005.0)
"""Molecular thermal diffusivity of air near 20 C [m2/s]: k / (rho cp) with k = 0.0257
W/(m K) (Incropera & DeWitt, Fundamentals of Heat and Mass Transfer, Table A.4, 293 K),
rho cp as :data:`twin.thermal.properties.AIR_VOLUMETRIC_HEAT_J_M3_K`; 2.13e-5 m2/s."""

MUNK_ANDERSON_HEAT_COEFFICIENT = 3.33
MUNK_ANDERSON_HEAT_EXPONENT = 1.5
PACANOWSKI_PHILANDER_ALPHA = 5.0
PACANOWSKI_PHILANDER_N = 2.0

MIXING_LAWS = ("constant", "munk_anderson", "pacanowski_philander", "munk_anderson_jets", "chen_xu")
_JETS = "_jets"  # a law's suffix: the jets' edge shear added to S
_VERTICAL_DAMPING = {"chen_xu": "munk_anderson"}  # a flow-dependent law's damping on vertical faces

CHEN_XU_COEFFICIENT = 0.03874
"""nu_t / (|V| l) of Chen & Xu's zero-equation indoor-airflow model [-] (Chen & Xu 1998, Energy
Build. 28, 137, doi:10.1016/S0378-7788(98)00020-6: mu_t = 0.03874 rho V l)."""

TURBULENT_PRANDTL_NUMBER = 0.9
"""nu_t / Gamma_t for heat in air [-], the customary turbulent Prandtl number of room-airflow
CFD (that of the standard k-epsilon model's energy equation); Chen & Xu's model is used with it here."""

LINE_PLUME_VELOCITY_COEFFICIENT = 1.66
"""w / B'^(1/3) of a turbulent line plume's centre line [-], B' = g beta Q' / (rho cp) its
buoyancy flux per unit length (Rouse, Yih & Humphreys 1952; Lee & Chu, Turbulent Jets and
Plumes, 2003), as in :mod:`twin.thermal.buoyancy`."""

SHEAR_LAYER_GROWTH = 0.18
"""Growth of a single-stream plane mixing layer's vorticity thickness, d(delta_w)/dx [-]
(Brown & Roshko 1974, J. Fluid Mech. 64, 775, doi:10.1017/S002211207400190X: 0.181 for
one stream into still fluid); the largest shear across it is dU / delta_w."""


def richardson_number(temp_gradient_k_m, shear_1_s, temp_mean_c):
    """Gradient Richardson number Ri = g beta (dT/dz) / S^2 [-].

    Parameters
    ----------
    temp_gradient_k_m : array_like
        dT/dz [K/m], positive when warm air lies over cool (stable).
    shear_1_s : array_like
        |dU_h/dz| [1/s].
    temp_mean_c : float or array_like
        Reference temperature [C] for the expansion coefficient beta = 1 / (T + 273.15).

    Returns
    -------
    ndarray
        Ri; +inf where the layer is stable without shear, -inf where unstable without
        shear, 0 where there is no gradient.

    References
    ----------
    Turner, J. S. (1973). Buoyancy Effects in Fluids, ch. 4. Cambridge University Press.
    """
    dtdz = np.asarray(temp_gradient_k_m, float)
    s2 = np.asarray(shear_1_s, float) ** 2
    n2 = GRAVITY_M_S2 / (np.asarray(temp_mean_c, float) + 273.15) * dtdz
    n2, s2 = np.broadcast_arrays(n2, s2)
    out = np.where(n2 == 0, 0.0, np.copysign(np.inf, n2))
    return np.divide(n2, s2, out=out, where=s2 > 0)


def munk_anderson_heat_fraction(richardson):
    """Munk & Anderson's damping of the eddy diffusivity of heat, K_h / K_0 [-].

    f = (1 + 3.33 Ri)^(-3/2) for Ri >= 0 (stable), 1 for Ri < 0 (unstable: the neutral
    value; the law was fitted on stable thermoclines only). f(0) = 1, f(0.3) = 0.35,
    f(1) = 0.11, f(inf) = 0.

    References
    ----------
    Munk, W. H. & Anderson, E. R. (1948). J. Mar. Res. 7(3), 276-295.
    """
    ri = np.maximum(np.asarray(richardson, float), 0.0)
    return (1.0 + MUNK_ANDERSON_HEAT_COEFFICIENT * ri) ** -MUNK_ANDERSON_HEAT_EXPONENT


def pacanowski_philander_heat_fraction(richardson):
    """Pacanowski & Philander's damping of the eddy diffusivity of heat, K / K_0 [-].

    K = nu / (1 + alpha Ri) with nu = nu_0 / (1 + alpha Ri)^n, alpha = 5, n = 2, the
    background terms dropped: f = (1 + 5 Ri)^-3 for Ri >= 0, 1 for Ri < 0.

    References
    ----------
    Pacanowski, R. C. & Philander, S. G. H. (1981). J. Phys. Oceanogr. 11, 1443-1451.
    doi:10.1175/1520-0485(1981)011<1443:POVMIN>2.0.CO;2
    """
    ri = np.maximum(np.asarray(richardson, float), 0.0)
    return (1.0 + PACANOWSKI_PHILANDER_ALPHA * ri) ** -(PACANOWSKI_PHILANDER_N + 1.0)


_FRACTION = {"munk_anderson": munk_anderson_heat_fraction,
             "pacanowski_philander": pacanowski_philander_heat_fraction}


def jet_edge_shear_1_s(prob: HallProblem) -> np.ndarray:
    """Shear at the top edge of the hall's jets on every room face [1/s] (0 elsewhere):
    S_jet = v(x) / (0.18 x) on the vertical face above a jet's top layer, v the jet's
    velocity at distance x from its source and 0.18 x the vorticity thickness of the
    mixing layer at its edge (:data:`SHEAR_LAYER_GROWTH`), x = (k + 1/2) h for the k-th
    cell from the source; where two edges meet on a face, the larger shear.

    - a unit's wall jet: v = :func:`twin.thermal.jets.jet_centreline_velocity_m_s`, over
      the plan cells it covers from its outlet to where it ends (half-width w_0 / 2 + x tan
      11 deg across its axis, as :func:`twin.thermal.jets.wall_jet_cells` marches it), on
      the face above the layer that holds its top edge z_1 + x tan 11 deg (none once the
      edge reaches the ceiling);
    - a rack's exhaust: v = V_r / (rack width x rack height), over the cells behind its
      exhaust face (k = 0), on the face above the highest layer the rack fills.
    """
    from .jets import JET_SPREAD_HALF_ANGLE_DEG, hall_wall_jets, jet_centreline_velocity_m_s

    g, grid = prob.geometry, prob.grid
    n, h = grid.nx * grid.ny, grid.cell_m
    nz = int(g.n_layers)
    dz = g.height_m / nz
    ri, rj, fax, _ = prob.room_face
    face_above = np.full(prob.n_room, -1)  # vertical face above each room cell
    vert = np.flatnonzero(fax == 2)
    face_above[ri[vert]] = vert
    s2 = np.zeros(ri.size)

    def add(layer, plan, shear):  # shear on the face above (layer, plan cell); the larger where two meet
        layer = np.broadcast_to(layer, np.shape(plan))
        k = np.where(layer + 1 < nz, prob.room_id[np.minimum(layer, nz - 2) * n + plan], -1)
        ok = k >= 0
        f = face_above[k[ok]]
        np.maximum.at(s2, f[f >= 0], (np.asarray(shear, float)[ok][f >= 0]) ** 2)

    v_c = np.asarray(prob.cooling_airflow_m3_s, float)
    if g.cooling_outlet_z_m is not None:
        z = np.asarray(g.cooling_outlet_z_m, float).reshape(-1, 2)
        yy, xx = np.divmod(np.arange(n), grid.nx)
        tan_a = np.tan(np.radians(JET_SPREAD_HALF_ANGLE_DEG))
        throw = np.asarray(g.cooling_throw_dir, dtype=np.float64).reshape(-1, 2)
        widths = np.asarray(g.cooling_outlet_width_m, dtype=np.float64).reshape(-1)
        for c, jet in enumerate(hall_wall_jets(g, grid.nx, grid.ny, prob.room_id >= 0, v_c)):
            if jet is None:
                continue
            d = throw[c]
            axis = (np.sign(d[0]), 0.0) if abs(d[0]) >= abs(d[1]) else (0.0, np.sign(d[1]))
            o = np.minimum(np.maximum(np.asarray(g.cooling_xy_m[c], float) // h, 0), [grid.nx - 1, grid.ny - 1])
            along = (xx - o[0]) * axis[0] + (yy - o[1]) * axis[1]  # stations from the outlet's cell
            across = (xx - o[0]) * axis[1] + (yy - o[1]) * axis[0]
            x = (along + 0.5) * h
            width = float(widths[c])
            z_top = z[c, 1] + x * tan_a  # the jet's top edge [m]
            half = np.floor((0.5 * width + along * h * tan_a) / h + 0.5 - 1e-9)  # cells across, as the march
            on = (along >= 0) & (along * h <= jet.reach_m + 1e-9) & (np.abs(across) <= half) & (z_top < g.height_m)
            v = jet_centreline_velocity_m_s(x[on], v_c[c], width * (z[c, 1] - z[c, 0]))
            layer = np.floor(z_top[on] / dz).astype(int)  # the layer holding the top edge
            add(layer, np.flatnonzero(on), v / (SHEAR_LAYER_GROWTH * x[on]))
    top_rack = int(np.flatnonzero((np.arange(nz) == 0) | ((np.arange(nz) + 0.5) * dz < g.rack_height_m)).max())
    v_r = np.asarray(prob.rack_airflow_m3_s, float) / (g.rack_width_m * g.rack_height_m)
    for r, cells in enumerate(grid.exhaust_cells):
        cells = np.asarray(cells)
        add(top_rack, cells, np.full(cells.size, v_r[r] / (SHEAR_LAYER_GROWTH * 0.5 * h)))
    return np.sqrt(s2)


def ceiling_jet_shear_1_s(prob: HallProblem, rack_heat_w, temp_mean_c: float) -> np.ndarray:
    """Shear under the ceiling jets that the racks' exhaust plumes spread [1/s] on every room
    face (module docstring; 0 off the faces under the top layer): S = max_r w_r / (0.18 x_r),
    w_r = 1.66 (g beta f Q_r / (W rho cp))^(1/3) the line-plume velocity of rack r (heat
    ``rack_heat_w`` [W] over its width W, f the share of the exhaust that enters the room:
    1, or what hot-aisle containment does not duct, 1 - V_duct / V_racks), beta = 1 / (T +
    273.15) at ``temp_mean_c``, x_r = (d + 1/2) h with d the plan distance in cells to the
    rack's nearest exhaust cell."""
    from .properties import AIR_VOLUMETRIC_HEAT_J_M3_K

    g, grid = prob.geometry, prob.grid
    n, h = grid.nx * grid.ny, grid.cell_m
    nz = int(g.n_layers)
    ri, _, fax, _ = prob.room_face
    out = np.zeros(ri.size)
    if nz < 2:
        return out
    heat = np.broadcast_to(np.asarray(rack_heat_w, float), (g.n_racks,))
    v_r = float(np.sum(prob.rack_airflow_m3_s))
    share = 1.0 if v_r <= 0 else min(max(1.0 - float(np.sum(prob.duct_m3_s)) / v_r, 0.0), 1.0)
    buoyancy = GRAVITY_M_S2 / (float(temp_mean_c) + 273.15) * share * np.maximum(heat, 0.0) / (
        g.rack_width_m * AIR_VOLUMETRIC_HEAT_J_M3_K)
    w = LINE_PLUME_VELOCITY_COEFFICIENT * np.cbrt(buoyancy)
    yy, xx = np.divmod(np.arange(n), grid.nx)
    shear = np.zeros(n)
    for r in np.flatnonzero(w > 0):
        cy, cx = np.divmod(np.asarray(grid.exhaust_cells[r]), grid.nx)
        d = np.sqrt(np.min((xx[:, None] - cx[None, :]) ** 2 + (yy[:, None] - cy[None, :]) ** 2, axis=1))
        np.maximum(shear, w[r] / (SHEAR_LAYER_GROWTH * (d + 0.5) * h), out=shear)
    below_top = prob.room_id[(nz - 2) * n + np.arange(n)]  # the cells under the top layer
    face_above = np.full(prob.n_room, -1)
    vert = np.flatnonzero(fax == 2)
    face_above[ri[vert]] = vert
    ok = below_top >= 0
    f = face_above[below_top[ok]]
    out[f[f >= 0]] = shear[ok][f >= 0]
    return out


def vertical_eddy_diffusivity_m2_s(neutral_diffusivity_m2_s, richardson, law: str = "munk_anderson"):
    """Vertical eddy diffusivity of heat under stratification [m2/s].

    Gamma_z = max(Gamma_0 f(Ri), kappa_air) with f the ``law``'s damping
    (:func:`munk_anderson_heat_fraction`, :func:`pacanowski_philander_heat_fraction`;
    ``"constant"``: f = 1) and kappa_air = :data:`AIR_THERMAL_DIFFUSIVITY_M2_S`, the
    molecular floor when turbulence is suppressed.
    """
    g0 = np.asarray(neutral_diffusivity_m2_s, float)
    ri = np.asarray(richardson, float)
    if law == "constant":
        return np.broadcast_to(g0, np.broadcast_shapes(g0.shape, ri.shape)).astype(float)
    law = _VERTICAL_DAMPING.get(law, law).removesuffix(_JETS)
    if law not in _FRACTION:
        raise ValueError(f"mixing law must be one of {MIXING_LAWS}, got {law!r}")
    return np.maximum(g0 * _FRACTION[law](ri), AIR_THERMAL_DIFFUSIVITY_M2_S)


def layered_face_richardson_number(prob: HallProblem, temp_c, extra_shear_1_s=None) -> np.ndarray:
    """Gradient Richardson number on every room face of a layered hall [-] (NaN on the
    horizontal faces), from the solved temperatures ``temp_c`` and the problem's face
    fluxes (module docstring: dT/dz and the shear of the layer-mean flow; beta from the
    mean room temperature). ``extra_shear_1_s`` (one per room face, optional): shear the
    layer-mean flow does not carry, e.g. :func:`jet_edge_shear_1_s`, added as
    S^2 = S_mean^2 + S_extra^2."""
    g = prob.geometry
    dz = g.height_m / int(g.n_layers)
    ri, rj, fax, _ = prob.room_face
    t = np.asarray(temp_c, float)[: prob.n_room]
    u = room_cell_velocity_m_s(prob)
    out = np.full(ri.size, np.nan)
    vert = fax == 2
    i, j = ri[vert], rj[vert]  # j is the cell above i
    shear = np.hypot(u[0, j] - u[0, i], u[1, j] - u[1, i]) / dz
    if extra_shear_1_s is not None:  # sub-grid shear: the productions add, S^2 = S_mean^2 + S_jet^2
        shear = np.hypot(shear, np.asarray(extra_shear_1_s, float)[vert])
    out[vert] = richardson_number((t[j] - t[i]) / dz, shear, float(t.mean()))
    return out


def room_cell_velocity_m_s(prob: HallProblem) -> np.ndarray:
    """Resolved velocity of every room cell [m/s], shape (3, n_room) for x, y, z: on each axis
    the mean of the volume fluxes through the cell's two faces over the face area (h dz
    sideways, h^2 vertically), a wall or solid face counting zero (as in
    :func:`twin.thermal.solver.steady_field`). The flow is the problem's room faces' (the
    potential flow plus any extra flux such as the buoyant exchange); a single-layer problem
    has no vertical faces (w = 0)."""
    g = prob.geometry
    h = prob.grid.cell_m
    dz = g.height_m / int(g.n_layers)
    ri, rj, fax, flux = prob.room_face
    u = np.zeros((3, prob.n_room))
    for ax, area in ((0, h * dz), (1, h * dz), (2, h * h)):
        sel = fax == ax
        q = 0.5 * flux[sel] / area
        np.add.at(u[ax], ri[sel], q)
        np.add.at(u[ax], rj[sel], q)
    return u


def room_wall_distance_m(prob: HallProblem) -> np.ndarray:
    """Distance from every room cell's centre to the nearest wall surface [m], shape (n_room,):
    the hall's four walls, its floor and ceiling (a single layer: the walls only, the
    depth-averaged layer has no vertical position) and the faces of every solid cell (rack
    bodies in the rack layers, obstacles). Exact to the nearest solid cell's box, the cell
    found by the Euclidean distance transform of the cell centres (scipy.ndimage,
    anisotropic spacing dz, h, h); a cell beside a wall is h / 2 (or dz / 2) from it."""
    from scipy.ndimage import distance_transform_edt

    g, grid = prob.geometry, prob.grid
    nz = int(g.n_layers)
    h, dz = grid.cell_m, g.height_m / nz
    solid = (prob.room_id < 0).reshape(nz, grid.ny, grid.nx)
    pad = ((1, 1) if nz > 1 else (0, 0), (1, 1), (1, 1))  # one solid cell round the hall
    solid = np.pad(solid, pad, constant_values=True)
    spacing = np.array([dz, h, h])
    _, idx = distance_transform_edt(~solid, sampling=spacing, return_indices=True)
    here = np.indices(solid.shape)
    gap = np.maximum(np.abs(idx - here) * spacing[:, None, None, None] - 0.5 * spacing[:, None, None, None], 0.0)
    dist = np.sqrt((gap**2).sum(axis=0))
    inner = dist[tuple(slice(a, s - b) for (a, b), s in zip(pad, solid.shape, strict=True))]
    return inner.ravel()[prob.room_id >= 0]


def chen_xu_heat_diffusivity_m2_s(speed_m_s, wall_distance_m, turbulent_prandtl: float = TURBULENT_PRANDTL_NUMBER):
    """Eddy diffusivity of heat of Chen & Xu's zero-equation indoor-airflow model [m2/s]:

        Gamma = max(0.03874 |V| l / Pr_t, kappa_air),

    ``speed_m_s`` |V| the local mean air speed [m/s], ``wall_distance_m`` l the distance to the
    nearest wall [m], Pr_t the turbulent Prandtl number (0.9) and kappa_air
    (:data:`AIR_THERMAL_DIFFUSIVITY_M2_S`) the molecular floor. |V| = 1 m/s, l = 1 m: 0.0430 m2/s.

    References
    ----------
    Chen, Q. & Xu, W. (1998). A zero-equation turbulence model for indoor airflow simulation.
    Energy and Buildings 28, 137-144. doi:10.1016/S0378-7788(98)00020-6
    """
    nu_t = CHEN_XU_COEFFICIENT * np.abs(np.asarray(speed_m_s, float)) * np.asarray(wall_distance_m, float)
    return np.maximum(nu_t / turbulent_prandtl, AIR_THERMAL_DIFFUSIVITY_M2_S)


def chen_xu_face_diffusivity_m2_s(prob: HallProblem) -> np.ndarray:
    """Chen & Xu's eddy diffusivity of heat on every room face [m2/s]
    (:func:`chen_xu_heat_diffusivity_m2_s`), |V| and l the means of the face's two cells'
    resolved speed (:func:`room_cell_velocity_m_s`) and wall distance
    (:func:`room_wall_distance_m`); no stratification damping (see
    :func:`room_face_diffusivity_m2_s`)."""
    ri, rj, _, _ = prob.room_face
    speed = np.sqrt((room_cell_velocity_m_s(prob) ** 2).sum(axis=0))
    wall = room_wall_distance_m(prob)
    return chen_xu_heat_diffusivity_m2_s(0.5 * (speed[ri] + speed[rj]), 0.5 * (wall[ri] + wall[rj]))


def room_face_diffusivity_m2_s(prob: HallProblem, temp_c, law: str = "munk_anderson", rack_heat_w=None) -> np.ndarray:
    """Eddy diffusivity on every room face [m2/s]: the hall's Gamma_0 on horizontal faces,
    :func:`vertical_eddy_diffusivity_m2_s` of :func:`layered_face_richardson_number` on
    vertical ones (for ``build_problem(room_face_diffusivity_m2_s=...)``). A law ending in
    ``"_jets"`` takes Ri with the jets' edge shear added (:func:`jet_edge_shear_1_s`,
    S^2 = S_mean^2 + S_jet^2) and, given ``rack_heat_w`` [W], the shear under the plumes'
    ceiling jets (:func:`ceiling_jet_shear_1_s`; the larger of the two on a face).
    ``law="chen_xu"``: Chen & Xu's flow-dependent diffusivity (:func:`chen_xu_face_diffusivity_m2_s`)
    in place of Gamma_0 on every face, damped on vertical ones by Munk & Anderson's law."""
    g0: float | np.ndarray = float(prob.geometry.eddy_diffusivity_m2_s)
    if law == "chen_xu":
        g0 = chen_xu_face_diffusivity_m2_s(prob)
    shear = None
    if law.endswith(_JETS):
        shear = jet_edge_shear_1_s(prob)
        if rack_heat_w is not None:
            t_mean = float(np.mean(np.asarray(temp_c, float)[: prob.n_room]))
            shear = np.maximum(shear, ceiling_jet_shear_1_s(prob, rack_heat_w, t_mean))
    ri = layered_face_richardson_number(prob, temp_c, shear)
    out = np.broadcast_to(g0, ri.shape).astype(float)
    vert = prob.room_face[2] == 2
    out[vert] = vertical_eddy_diffusivity_m2_s(np.broadcast_to(g0, ri.shape)[vert], ri[vert], law)
    return out
