"""Chen & Xu's flow-dependent eddy diffusivity (twin.thermal.mixing, ``mixing="chen_xu"``; issue
12, points b and d): the law's values from its source, the wall distance and the cells' velocity
by hand, the face diffusivity with Munk & Anderson's damping on a two-layer column by hand, the
limits (still air: the molecular floor; isothermal: no damping), energy conservation and the
Picard iteration's convergence (those two in test_mixing.py, on its hall). The benchmarks are in test_mixing_pod2.py and
tests/validation/test_contained_room.py."""

from types import SimpleNamespace

import numpy as np
import pytest

from twin.thermal.mixing import (
    AIR_THERMAL_DIFFUSIVITY_M2_S,
    CHEN_XU_COEFFICIENT,
    chen_xu_face_diffusivity_m2_s,
    chen_xu_heat_diffusivity_m2_s,
    room_cell_velocity_m_s,
    room_face_diffusivity_m2_s,
    room_wall_distance_m,
)


def test_chen_xu_values_from_the_formula():
    # nu_t = 0.03874 V l (Chen & Xu 1998), Gamma = nu_t / 0.9: V = 1 m/s, l = 1 m: 0.043044 m2/s;
    # V = 0.5 m/s, l = 2 m the same; V = 0.2 m/s, l = 0.3 m: 0.0025827 m2/s
    assert CHEN_XU_COEFFICIENT == 0.03874
    got = chen_xu_heat_diffusivity_m2_s([1.0, 0.5, 0.2, -1.0], [1.0, 2.0, 0.3, 1.0])
    assert got == pytest.approx([0.043044, 0.043044, 0.0025827, 0.043044], rel=1e-4)  # |V|: sign does not matter
    # still air or a wall: air's molecular diffusivity, 2.13e-5 m2/s, not zero
    assert chen_xu_heat_diffusivity_m2_s([0.0, 1.0], [1.0, 0.0]).tolist() == [AIR_THERMAL_DIFFUSIVITY_M2_S] * 2
    # Pr_t = 1: nu_t itself
    assert chen_xu_heat_diffusivity_m2_s(1.0, 1.0, turbulent_prandtl=1.0) == pytest.approx(0.03874)


def _box(nx, ny, nz, h, height, solid=()):
    """A bare layered hall of nx x ny x nz cells (h in plan, height / nz high) with the listed
    (z, y, x) cells solid, as room_wall_distance_m reads it."""
    room = np.ones((nz, ny, nx), bool)
    for c in solid:
        room[c] = False
    room_id = -np.ones(room.size, np.int64)
    room_id[room.ravel()] = np.arange(room.sum())
    return SimpleNamespace(geometry=SimpleNamespace(n_layers=nz, height_m=height),
                           grid=SimpleNamespace(nx=nx, ny=ny, cell_m=h), room_id=room_id), room


def test_wall_distance_by_hand():
    # 5 x 5 cells of 1 m, 3 layers of 2 m (6 m high), the middle cell of the middle layer solid.
    # Middle layer: floor and ceiling 3 m from the centres; cell (y 1, x 1) is diagonal to the
    # solid box: 0.5 m in x and y, 0 in z -> sqrt(0.5) = 0.70711 m (walls 1.5 m); cell (y 2, x 0)
    # touches the x = 0 wall: 0.5 m; cell (y 2, x 1) the solid box's side: 0.5 m; a corner cell
    # of the bottom layer: 0.5 m in x, in y and 1 m above the floor: the walls at 0.5 m.
    prob, room = _box(5, 5, 3, 1.0, 6.0, solid=[(1, 2, 2)])
    d = np.full(room.shape, np.nan)
    d[room] = room_wall_distance_m(prob)
    assert d[1, 1, 1] == pytest.approx(np.sqrt(0.5), rel=1e-12)
    assert d[1, 2, 0] == pytest.approx(0.5) and d[1, 2, 1] == pytest.approx(0.5)
    assert d[0, 0, 0] == pytest.approx(0.5)
    # without the solid cell the middle layer's centre is 2.5 m from the walls, 3 m from floor / ceiling
    prob, room = _box(5, 5, 3, 1.0, 6.0)
    d[room] = room_wall_distance_m(prob)
    assert d[1, 2, 2] == pytest.approx(2.5)
    # a tall thin hall: the floor and ceiling are nearest (layer of 0.4 m: 0.2 m)
    prob, room = _box(9, 9, 2, 1.0, 0.8)
    assert room_wall_distance_m(prob).max() == pytest.approx(0.2)


def _column(flux_m3_s, temp_c=(20.5, 20.5, 23.5, 23.5)):
    """Two plan cells (a, b) of 0.5 m, two layers of 1.5 m: cells a0, b0, a1, b1 (room ids 0-3);
    faces a0-b0, a1-b1 (x) and a0-a1, b0-b1 (vertical) carry ``flux_m3_s``."""
    geom = SimpleNamespace(height_m=3.0, n_layers=2, eddy_diffusivity_m2_s=0.1)
    face = (np.array([0, 2, 0, 1]), np.array([1, 3, 2, 3]), np.array([0, 0, 2, 2]), np.asarray(flux_m3_s, float))
    prob = SimpleNamespace(geometry=geom, grid=SimpleNamespace(nx=2, ny=1, cell_m=0.5), room_face=face, n_room=4,
                           room_id=np.arange(4))
    return prob, np.asarray(temp_c, float)


def test_cell_velocity_by_hand():
    # x faces 0.15 and 0.6 m3/s over h dz = 0.75 m2, half to each cell: 0.1 and 0.4 m/s;
    # a vertical face of 0.05 m3/s over h^2 = 0.25 m2, half to each cell: w = 0.1 m/s in a0 and a1
    prob, _ = _column([0.15, 0.6, 0.05, 0.0])
    u = room_cell_velocity_m_s(prob)
    assert u[0] == pytest.approx([0.1, 0.1, 0.4, 0.4])
    assert u[1] == pytest.approx([0.0, 0.0, 0.0, 0.0])
    assert u[2] == pytest.approx([0.1, 0.0, 0.1, 0.0])


def test_two_layer_column_by_hand():
    # every cell is h / 2 = 0.25 m from a side wall (the layers are 1.5 m deep), so l = 0.25 m.
    # Lower x face: |V| = 0.1 m/s: Gamma = 0.03874 x 0.1 x 0.25 / 0.9 = 0.0010761 m2/s;
    # upper: 0.4 m/s: 0.0043044 m2/s; vertical faces: the mean speed 0.25 m/s: 0.0026903 m2/s.
    # Warm over cool by 3 K (mean 22 C): Ri = 1.6613 (the shear 0.3 m/s over 1.5 m, as in
    # test_mixing.py), Munk & Anderson: 0.0026903 / (1 + 3.33 x 1.6613)^1.5 = 0.0026903 / 16.695
    # = 1.6114e-4 m2/s on the vertical faces
    prob, t = _column([0.15, 0.6, 0.0, 0.0])
    assert room_wall_distance_m(prob) == pytest.approx([0.25] * 4)
    cx = chen_xu_face_diffusivity_m2_s(prob)
    assert cx == pytest.approx([0.0010761, 0.0043044, 0.0026903, 0.0026903], rel=1e-4)
    d = room_face_diffusivity_m2_s(prob, t, "chen_xu")
    assert d == pytest.approx([0.0010761, 0.0043044, 1.6114e-4, 1.6114e-4], rel=1e-3)
    # isothermal: no damping, Chen & Xu's value on every face
    assert room_face_diffusivity_m2_s(prob, np.full(4, 21.0), "chen_xu") == pytest.approx(cx, rel=1e-12)
    # still air: the molecular floor everywhere
    still, _ = _column([0.0, 0.0, 0.0, 0.0])
    assert room_face_diffusivity_m2_s(still, t, "chen_xu").tolist() == [AIR_THERMAL_DIFFUSIVITY_M2_S] * 4
