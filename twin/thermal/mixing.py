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

References
----------
Munk, W. H. & Anderson, E. R. (1948). Notes on a theory of the thermocline. Journal of
Marine Research 7(3), 276-295 (K_h = K_0 (1 + 3.33 Ri)^-3/2, A_v = A_0 (1 + 10 Ri)^-1/2;
as coded in GOTM's ``cmue_ma``, Burchard et al.).
Pacanowski, R. C. & Philander, S. G. H. (1981). Parameterization of vertical mixing in
numerical models of tropical oceans. J. Phys. Oceanogr. 11, 1443-1451.
doi:10.1175/1520-0485(1981)011<1443:POVMIN>2.0.CO;2 (the same form, alpha = 5, n = 2;
offered as ``law="pacanowski_philander"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .solver import HallProblem

__all__ = [
    "AIR_THERMAL_DIFFUSIVITY_M2_S",
    "MIXING_LAWS",
    "layered_face_richardson_number",
    "munk_anderson_heat_fraction",
    "pacanowski_philander_heat_fraction",
    "richardson_number",
    "room_face_diffusivity_m2_s",
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

MIXING_LAWS = ("constant", "munk_anderson", "pacanowski_philander")


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
    if law not in _FRACTION:
        raise ValueError(f"mixing law must be one of {MIXING_LAWS}, got {law!r}")
    return np.maximum(g0 * _FRACTION[law](ri), AIR_THERMAL_DIFFUSIVITY_M2_S)


def layered_face_richardson_number(prob: HallProblem, temp_c) -> np.ndarray:
    """Gradient Richardson number on every room face of a layered hall [-] (NaN on the
    horizontal faces), from the solved temperatures ``temp_c`` and the problem's face
    fluxes (module docstring: dT/dz and the shear of the layer-mean flow; beta from the
    mean room temperature)."""
    g = prob.geometry
    h = prob.grid.cell_m
    dz = g.height_m / int(g.n_layers)
    ri, rj, fax, flux = prob.room_face
    t = np.asarray(temp_c, float)[: prob.n_room]
    u = np.zeros((2, prob.n_room))
    for ax in (0, 1):
        sel = fax == ax
        q = 0.5 * flux[sel] / (h * dz)
        np.add.at(u[ax], ri[sel], q)
        np.add.at(u[ax], rj[sel], q)
    out = np.full(ri.size, np.nan)
    vert = fax == 2
    i, j = ri[vert], rj[vert]  # j is the cell above i
    shear = np.hypot(u[0, j] - u[0, i], u[1, j] - u[1, i]) / dz
    out[vert] = richardson_number((t[j] - t[i]) / dz, shear, float(t.mean()))
    return out


def room_face_diffusivity_m2_s(prob: HallProblem, temp_c, law: str = "munk_anderson") -> np.ndarray:
    """Eddy diffusivity on every room face [m2/s]: the hall's Gamma_0 on horizontal faces,
    :func:`vertical_eddy_diffusivity_m2_s` of :func:`layered_face_richardson_number` on
    vertical ones (for ``build_problem(room_face_diffusivity_m2_s=...)``)."""
    g0 = float(prob.geometry.eddy_diffusivity_m2_s)
    ri = layered_face_richardson_number(prob, temp_c)
    out = np.full(ri.size, g0)
    vert = prob.room_face[2] == 2
    out[vert] = vertical_eddy_diffusivity_m2_s(g0, ri[vert], law)
    return out
