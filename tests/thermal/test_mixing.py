"""Richardson-damped vertical mixing (twin.thermal.mixing; issue 12, point d): the damping
laws' values from their sources, a two-layer column by hand, the solver hook on the right
faces, the limits (no stratification changes nothing, Ri -> 0 gives Gamma_0), energy
conservation and the Picard iteration's convergence."""

from types import SimpleNamespace

import numpy as np
import pytest

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal.buoyancy import buoyant_flow, buoyant_inlet_model
from twin.thermal.mixing import (
    AIR_THERMAL_DIFFUSIVITY_M2_S,
    layered_face_richardson_number,
    munk_anderson_heat_fraction,
    pacanowski_philander_heat_fraction,
    richardson_number,
    room_face_diffusivity_m2_s,
    vertical_eddy_diffusivity_m2_s,
)
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K
from twin.thermal.solver import build_problem


def test_munk_anderson_values_from_the_formula():
    # K_h / K_0 = (1 + 3.33 Ri)^-1.5 (Munk & Anderson 1948), by hand:
    # Ri = 0.3: 1.999^-1.5 = 0.35381; Ri = 1: 4.33^-1.5 = 0.11099; Ri = 3: 10.99^-1.5 = 0.027448
    ri = np.array([0.0, 0.3, 1.0, 3.0])
    assert munk_anderson_heat_fraction(ri) == pytest.approx([1.0, 0.35381, 0.11099, 0.027448], rel=1e-4)
    # unstable: the neutral value; very stable: no turbulent mixing
    assert munk_anderson_heat_fraction([-0.5, -5.0, np.inf]) == pytest.approx([1.0, 1.0, 0.0])


def test_pacanowski_philander_values_from_the_formula():
    # K / K_0 = (1 + 5 Ri)^-3 without background terms: Ri = 0.2: 2^-3 = 0.125; Ri = 1: 6^-3 = 0.0046296
    assert pacanowski_philander_heat_fraction([0.0, 0.2, 1.0, -1.0]) == pytest.approx([1.0, 0.125, 0.0046296, 1.0],
                                                                                       rel=1e-4)


def test_richardson_number_by_hand():
    # dT/dz = 2 K/m at 20 C: N^2 = 9.80665 / 293.15 x 2 = 0.066905 1/s2; S = 0.5 1/s: Ri = 0.26762
    assert richardson_number(2.0, 0.5, 20.0) == pytest.approx(0.26762, rel=1e-4)
    assert richardson_number(-2.0, 0.5, 20.0) == pytest.approx(-0.26762, rel=1e-4)
    # no shear: infinitely stable / unstable; no gradient: neutral
    assert richardson_number([1.0, -1.0, 0.0], 0.0, 20.0).tolist() == [np.inf, -np.inf, 0.0]


def test_vertical_diffusivity_limits():
    g0 = 0.1
    assert vertical_eddy_diffusivity_m2_s(g0, 1e-12) == pytest.approx(g0, rel=1e-10)  # Ri -> 0
    assert vertical_eddy_diffusivity_m2_s(g0, -3.0) == g0  # unstable keeps Gamma_0
    assert vertical_eddy_diffusivity_m2_s(g0, np.inf) == AIR_THERMAL_DIFFUSIVITY_M2_S  # molecular floor
    assert AIR_THERMAL_DIFFUSIVITY_M2_S == pytest.approx(2.13e-5, rel=0.01)
    assert vertical_eddy_diffusivity_m2_s(g0, [0.5, 2.0], law="constant").tolist() == [g0, g0]
    ri = np.linspace(0, 10, 50)
    assert np.all(np.diff(vertical_eddy_diffusivity_m2_s(g0, ri)) < 0)  # more stable, less mixing
    with pytest.raises(ValueError, match="mixing law"):
        vertical_eddy_diffusivity_m2_s(g0, 1.0, law="smagorinsky")


def _column(temp_c, flux_low_m3_s, flux_up_m3_s, h=0.5, height=3.0, gamma=0.1):
    """Two plan cells side by side (a, b), two layers: cells a0, b0, a1, b1; x faces a0-b0,
    a1-b1 carry the given fluxes, vertical faces a0-a1, b0-b1 carry none."""
    geom = SimpleNamespace(height_m=height, n_layers=2, eddy_diffusivity_m2_s=gamma)
    face = (np.array([0, 2, 0, 1]), np.array([1, 3, 2, 3]), np.array([0, 0, 2, 2]),
            np.array([flux_low_m3_s, flux_up_m3_s, 0.0, 0.0]))
    return SimpleNamespace(geometry=geom, grid=SimpleNamespace(cell_m=h), room_face=face, n_room=4), np.asarray(temp_c)


def test_two_layer_column_by_hand():
    # h = 0.5 m, dz = 1.5 m; lower x face 0.15 m3/s, upper 0.6 m3/s: each cell's velocity is half
    # its one face's flux over h dz = 0.75 m2: 0.1 and 0.4 m/s, S = 0.3 / 1.5 = 0.2 1/s.
    # Warm over cool by 3 K: dT/dz = 2 K/m, mean 22 C: N^2 = 9.80665 / 295.15 x 2 = 0.066452,
    # Ri = 0.066452 / 0.04 = 1.6613; Gamma_z = 0.1 (1 + 3.33 x 1.6613)^-1.5 = 0.1 / 16.695 = 0.0059898 m2/s;
    # heat flux down through one face: rho cp Gamma_z h^2 / dz dT = 1206 x 0.0059898 x 0.25 / 1.5 x 3 = 3.6119 W
    prob, t = _column([20.5, 20.5, 23.5, 23.5], 0.15, 0.6)
    ri = layered_face_richardson_number(prob, t)
    assert np.isnan(ri[:2]).all()
    assert ri[2:] == pytest.approx([1.6613, 1.6613], rel=1e-4)
    d = room_face_diffusivity_m2_s(prob, t)
    assert d[:2].tolist() == [0.1, 0.1]  # horizontal mixing unchanged
    assert d[2:] == pytest.approx([0.0059898, 0.0059898], rel=1e-4)
    flux_w = AIR_VOLUMETRIC_HEAT_J_M3_K * d[2] * 0.5**2 / 1.5 * (t[2] - t[0])
    assert flux_w == pytest.approx(3.6119, rel=1e-4)
    # cool over warm (unstable): Gamma_0; no stratification: Gamma_0 whatever the shear
    assert room_face_diffusivity_m2_s(prob, t[::-1])[2:].tolist() == [0.1, 0.1]
    assert room_face_diffusivity_m2_s(prob, np.full(4, 21.0))[2:].tolist() == [0.1, 0.1]


@pytest.fixture(scope="module")
def hall():
    # 2 rows of 6 racks at 10 kW, 3 layers, QUICK (its diffusive part is linear in Gamma)
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=4.0, n_layers=3, advection_scheme="quick")
    heat = np.full(g.n_racks, 10e3)
    return g, heat, rack_airflow_m3_s(heat, 15.0)


def test_solver_hook_puts_the_diffusivity_on_its_faces(hall):
    g, _, v = hall
    base = build_problem(g, v)
    ri, rj, fax, _ = base.room_face
    same = build_problem(g, v, room_face_diffusivity_m2_s=np.full(ri.size, g.eddy_diffusivity_m2_s))
    assert (same.A != base.A).nnz == 0  # Gamma_0 on every face is the shipped operator, bit for bit
    # lower the vertical faces' diffusivity by 0.05 m2/s: A changes by -0.05 h^2/dz on exactly
    # those faces' four entries (QUICK's central diffusion: +d on the diagonal, -d off it)
    vert = fax == 2
    gam = np.where(vert, g.eddy_diffusivity_m2_s - 0.05, g.eddy_diffusivity_m2_s)
    low = build_problem(g, v, room_face_diffusivity_m2_s=gam)
    h, dz = base.grid.cell_m, g.height_m / g.n_layers
    d = 0.05 * h * h / dz
    n = base.n_unknowns
    expect = np.zeros((n, n))
    np.add.at(expect, (ri[vert], ri[vert]), -d)
    np.add.at(expect, (rj[vert], rj[vert]), -d)
    np.add.at(expect, (ri[vert], rj[vert]), d)
    np.add.at(expect, (rj[vert], ri[vert]), d)
    assert np.abs((low.A - base.A).toarray() - expect).max() < 1e-12
    with pytest.raises(ValueError, match="one value per room face"):
        build_problem(g, v, room_face_diffusivity_m2_s=np.ones(3))


def test_no_stratification_changes_nothing(hall):
    # no rack heat and one supply temperature: the room is isothermal, Ri = 0 on every face
    g, heat, v = hall
    zero = np.zeros_like(heat)
    a = buoyant_flow(g, zero, v, mixing="constant")
    b = buoyant_flow(g, zero, v, mixing="munk_anderson")
    assert b.temp_c == pytest.approx(a.temp_c, abs=1e-12)
    assert b.problem.inlet_temp_c(b.temp_c, zero) == pytest.approx(g.cooling_supply_temp_c[0], abs=1e-9)


@pytest.mark.parametrize("law", ["munk_anderson", "pacanowski_philander"])
def test_damped_mixing_conserves_energy_and_converges(hall, law):
    g, heat, v = hall
    bf = buoyant_flow(g, heat, v, mixing=law)
    assert bf.change_k < 0.05 and 2 <= bf.iterations < 12  # the Picard iteration converged
    again = buoyant_flow(g, heat, v, mixing=law, tol_k=1e-4, iterations=40)
    assert again.change_k < 1e-4  # and keeps converging when asked for more
    t = bf.problem.inlet_temp_c(bf.temp_c, heat)
    assert again.problem.inlet_temp_c(again.temp_c, heat) == pytest.approx(t, abs=0.1)
    m = buoyant_inlet_model(g, heat, v, mixing=law, memo=False)
    assert m.cooling_load_w(heat).sum() == pytest.approx(heat.sum(), rel=1e-9)  # energy in = energy out
    assert m.base_inlet_c + m.recirculation_k_per_w @ heat == pytest.approx(t, abs=1e-9)


def test_stratification_damps_vertical_mixing_where_stable(hall):
    g, heat, v = hall
    bf = buoyant_flow(g, heat, v, mixing="munk_anderson")
    prob = bf.problem
    ri = layered_face_richardson_number(prob, bf.temp_c)
    d = room_face_diffusivity_m2_s(prob, bf.temp_c)
    vert = prob.room_face[2] == 2
    stable, unstable = vert & (ri > 0), vert & (ri < 0)
    assert stable.any()
    assert np.all(d[stable] < g.eddy_diffusivity_m2_s) and np.all(d[unstable] == g.eddy_diffusivity_m2_s)
    assert np.all(d[~vert] == g.eddy_diffusivity_m2_s)
    with pytest.raises(ValueError, match="mixing must be one of"):
        buoyant_flow(g, heat, v, mixing="k_epsilon")

