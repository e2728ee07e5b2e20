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
    ceiling_jet_shear_1_s,
    jet_edge_shear_1_s,
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


def test_two_layer_column_with_jet_shear_by_hand():
    # the column above with 0.6 1/s of sub-grid shear on its vertical faces: S^2 = 0.2^2 + 0.6^2
    # = 0.4, Ri = 0.066452 / 0.4 = 0.16613, Gamma_z = 0.1 (1 + 3.33 x 0.16613)^-1.5 = 0.1 / 1.9357
    # = 0.051660 m2/s (against 0.0059898 from the layer-mean shear alone)
    prob, t = _column([20.5, 20.5, 23.5, 23.5], 0.15, 0.6)
    extra = np.array([0.0, 0.0, 0.6, 0.6])
    ri = layered_face_richardson_number(prob, t, extra)
    assert ri[2:] == pytest.approx([0.16613, 0.16613], rel=1e-4)
    assert vertical_eddy_diffusivity_m2_s(0.1, ri[2:]) == pytest.approx([0.051660, 0.051660], rel=1e-4)
    # no sub-grid shear: the layer-mean law, bit for bit
    assert np.array_equal(layered_face_richardson_number(prob, t, np.zeros(4)), layered_face_richardson_number(prob, t),
                          equal_nan=True)


def _jet_hall():
    """row_hall(2, 6) (0.3 m cells, 3 m high, three 1 m layers; racks 0.6 m wide, 2 m high, so
    they fill layers 0-1) whose two units blow 3 m3/s each from a 1 m x 1.7 m outlet (0.1-1.8 m)
    across the room toward each other."""
    from dataclasses import replace
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=3.0, cooling_supply_temp_c=18.0, n_layers=3)
    direc = np.array([[1.0 if x < 0.5 * g.width_m else -1.0, 0.0] for x, _ in g.cooling_xy_m])
    return replace(g, cooling_outlet_z_m=np.tile([0.1, 1.8], (g.n_cooling, 1)), cooling_outlet_width_m=np.ones(g.n_cooling),
                   cooling_throw_dir=direc)


def test_jet_edge_shear_by_hand():
    # unit 0 at (1.0, 3.0) m, cell (3, 10), blowing +x along the middle aisle. Outlet velocity
    # v_0 = 3 / 1.7 = 1.7647 m/s; the core reaches K sqrt(A_0) = 6.2 x 1.3038 = 8.08 m, so v = v_0
    # wherever the jet runs. Two cells on (k = 2, x = 2.5 x 0.3 = 0.75 m) its top edge is at
    # 1.8 + 0.75 tan 11 deg = 1.946 m, in layer 1, and its half-width 0.5 + 0.6 tan 11 deg = 0.617 m
    # rounds to 2 cells: S = 1.7647 / (0.18 x 0.75) = 13.072 1/s on the faces above layer 1 at
    # y cells 8-12. From k = 3 (x = 1.05 m) the edge is above 2 m, in the top layer: no face above.
    # Rack exhaust at 0.5 m3/s through 0.6 m x 2 m: 0.41667 m/s, x = 0.15 m (half a cell):
    # S = 0.41667 / (0.18 x 0.15) = 15.432 1/s, on the faces above layer 1 behind each rack.
    g = _jet_hall()
    prob = build_problem(g, 0.5)
    s = jet_edge_shear_1_s(prob)
    n, nx = prob.grid.nx * prob.grid.ny, prob.grid.nx
    face_above = {int(i): f for f, (i, ax) in enumerate(zip(prob.room_face[0], prob.room_face[2], strict=True))
                  if ax == 2}

    def at(layer, ix, iy):
        return s[face_above[int(prob.room_id[layer * n + iy * nx + ix])]]

    assert at(1, 5, 10) == pytest.approx(1.7647 / (0.18 * 0.75), rel=1e-4)
    assert [at(1, 5, iy) for iy in range(7, 14)] == pytest.approx([0, *[13.072] * 5, 0], rel=1e-4)
    assert at(1, 3, 10) == pytest.approx(1.7647 / (0.18 * 0.15), rel=1e-4)  # at the outlet, k = 0
    assert at(1, 6, 10) == 0.0 and at(0, 5, 10) == 0.0
    for r in range(g.n_racks):
        for c in prob.grid.exhaust_cells[r]:
            k = int(prob.room_id[1 * n + c])
            if k >= 0:
                assert s[face_above[k]] >= 15.432 * (1 - 1e-4)  # the exhaust's, or a jet's if larger
    assert np.all(s[prob.room_face[2] != 2] == 0)  # nothing on horizontal faces
    lower = np.array([face_above[int(k)] for k in prob.room_id[:n] if k >= 0])
    assert np.all(s[lower] == 0)  # nor above layer 0, below every edge
    # half again the outlet flow, a jet half again as fast: half again the shear (all in the core)
    s2 = jet_edge_shear_1_s(build_problem(replace_airflow(g, 4.5), 0.5))
    assert s2[face_above[int(prob.room_id[n + 10 * nx + 5])]] == pytest.approx(1.5 * 13.072, rel=1e-4)


def test_ceiling_jet_shear_by_hand():
    # row_hall(2, 6), floor supply, three 1 m layers: the face under the top layer is 1 -> 2 (2 m).
    # 5 kW racks 0.6 m wide: Q' = 8333.3 W/m; at 20 C, B' = 9.80665 / 293.15 x 8333.3 / 1206
    # = 0.23115 m3/s3, w = 1.66 x 0.23115^(1/3) = 1.66 x 0.61372 = 1.01877 m/s. Over an exhaust cell
    # (d = 0, x = 0.15 m): S = 1.01877 / (0.18 x 0.15) = 37.732 1/s; two cells beyond it (x = 0.75 m):
    # 7.5464 1/s.
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=3.0, n_layers=3)
    prob = build_problem(g, 0.5)
    heat = np.full(g.n_racks, 5e3)
    s = ceiling_jet_shear_1_s(prob, heat, 20.0)
    n, nx = prob.grid.nx * prob.grid.ny, prob.grid.nx
    face_above = {int(i): f for f, (i, ax) in enumerate(zip(prob.room_face[0], prob.room_face[2], strict=True))
                  if ax == 2}

    def at(layer, ix, iy):
        return s[face_above[int(prob.room_id[layer * n + iy * nx + ix])]]

    ex = int(prob.grid.exhaust_cells[0][0])
    iy, ix = divmod(ex, nx)
    assert at(1, ix, iy) == pytest.approx(37.732, rel=1e-4)
    out = iy - 2 if iy >= 2 and ex - 2 * nx not in set(np.concatenate(prob.grid.exhaust_cells).tolist()) else iy + 2
    assert at(1, ix, out) == pytest.approx(7.5464, rel=1e-4)
    assert at(0, ix, iy) == 0.0 and np.all(s[prob.room_face[2] != 2] == 0)  # only under the top layer
    # w ~ Q^(1/3): eight times the heat, twice the shear; no heat, no plume
    assert ceiling_jet_shear_1_s(prob, 8 * heat, 20.0)[face_above[int(prob.room_id[n + ex])]] == pytest.approx(
        2 * 37.732, rel=1e-4)
    assert np.all(ceiling_jet_shear_1_s(prob, 0.0, 20.0) == 0)
    # the law takes the larger of the jets' and the plumes' shear on a face
    t = np.full(prob.n_unknowns, 20.0)
    t[: prob.n_room] += np.flatnonzero(prob.room_id >= 0) // n  # warmer by 1 K per layer up
    lo = room_face_diffusivity_m2_s(prob, t, "munk_anderson_jets")
    hi = room_face_diffusivity_m2_s(prob, t, "munk_anderson_jets", heat)
    assert np.all(hi >= lo) and np.any(hi > lo)


def replace_airflow(g, airflow_m3_s):
    from dataclasses import replace
    return replace(g, cooling_airflow_m3_s=np.full(g.n_cooling, airflow_m3_s))


def test_jet_shear_limits():
    g = _jet_hall()
    heat = np.full(g.n_racks, 5e3)
    # no stratification (no heat: the room is at supply within 1e-11 K): Gamma_0 on every face
    a = buoyant_flow(g, np.zeros_like(heat), 0.5, mixing="munk_anderson_jets")
    d = room_face_diffusivity_m2_s(a.problem, a.temp_c, "munk_anderson_jets")
    assert d == pytest.approx(np.full(d.size, g.eddy_diffusivity_m2_s), rel=1e-8)
    # faces without a jet or exhaust edge keep the layer-mean law bit for bit; the jets' faces
    # mix more (never less), up to Gamma_0
    bf = buoyant_flow(g, heat, 0.5, mixing="munk_anderson")
    prob, t = bf.problem, bf.temp_c
    s = jet_edge_shear_1_s(prob)
    d0 = room_face_diffusivity_m2_s(prob, t, "munk_anderson")
    dj = room_face_diffusivity_m2_s(prob, t, "munk_anderson_jets")
    assert np.array_equal(dj[s == 0], d0[s == 0])
    assert np.all(dj >= d0) and np.all(dj <= g.eddy_diffusivity_m2_s)
    assert np.any(dj[s > 0] > 2 * d0[s > 0])


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


@pytest.mark.parametrize("law", ["munk_anderson", "pacanowski_philander", "munk_anderson_jets"])
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


def test_chen_xu_conserves_energy_and_converges(hall):
    g, heat, v = hall
    bf = buoyant_flow(g, heat, v, mixing="chen_xu")
    assert bf.change_k < 0.05 and 2 <= bf.iterations < 12
    # asked for more, the passes settle to within 1e-3 K but no further (measured: 7.4e-4 K after
    # 40, 80 and 160 passes, where munk_anderson contracts to 1e-9): the diffusivity now follows
    # the speed, which the buoyant exchange moves, so the fixed point is a small cycle, 50 times
    # below the default tolerance
    again = buoyant_flow(g, heat, v, mixing="chen_xu", tol_k=1e-4, iterations=40)
    assert again.change_k < 1e-3
    t = bf.problem.inlet_temp_c(bf.temp_c, heat)
    assert again.problem.inlet_temp_c(again.temp_c, heat) == pytest.approx(t, abs=0.1)
    m = buoyant_inlet_model(g, heat, v, mixing="chen_xu", memo=False)
    assert m.cooling_load_w(heat).sum() == pytest.approx(heat.sum(), rel=1e-9)  # energy in = energy out
    assert m.base_inlet_c + m.recirculation_k_per_w @ heat == pytest.approx(t, abs=1e-9)
    # the diffusivity the converged pass used is flow-dependent: far below Gamma_0 = 0.1 m2/s in
    # most of the room (the hall's air moves at tenths of a m/s within a metre or two of a wall)
    d = room_face_diffusivity_m2_s(bf.problem, bf.temp_c, "chen_xu")
    assert np.median(d) < 0.02 and d.min() >= AIR_THERMAL_DIFFUSIVITY_M2_S


def test_chen_xu_no_heat_no_rise(hall):
    # no rack heat and one supply temperature: every inlet at the supply, whatever the mixing
    g, heat, v = hall
    zero = np.zeros_like(heat)
    b = buoyant_flow(g, zero, v, mixing="chen_xu")
    assert b.problem.inlet_temp_c(b.temp_c, zero) == pytest.approx(g.cooling_supply_temp_c[0], abs=1e-9)
