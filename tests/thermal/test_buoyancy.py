"""Buoyant exchange in the layered room: conservation, stratification, the value of
containment and enclosures, and grid convergence."""

from dataclasses import replace

import numpy as np
import pytest

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal.buoyancy import buoyant_face_flux_m3_s, buoyant_flow, buoyant_inlet_model
from twin.thermal.solver import build_problem


@pytest.fixture(scope="module")
def hall():
    # 4 rows of 10 racks at 10 kW, 4 layers; cooling air 1.1 x the rack air (balanced floor)
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=6.1, n_layers=4, containment_leakage_fraction=0.05)
    heat = np.full(g.n_racks, 10e3)
    return g, heat, rack_airflow_m3_s(heat, 15.0)


def _inlets(g, heat, v, c=0.3):
    bf = buoyant_flow(g, heat, v, coefficient=c)
    return bf.problem.inlet_temp_c(bf.temp_c, heat), bf


def test_zero_coefficient_is_the_potential_flow(hall):
    g, heat, v = hall
    t0, bf = _inlets(g, heat, v, c=0.0)
    prob = build_problem(g, v)
    assert bf.iterations == 0
    assert t0 == pytest.approx(prob.inlet_temp_c(prob.solve(heat), heat), abs=1e-12)


def test_buoyant_flow_conserves_mass_and_energy(hall):
    g, heat, v = hall
    t, bf = _inlets(g, heat, v)
    assert bf.change_k < 0.05 and bf.iterations >= 2
    prob = bf.problem
    ri, rj, _, flux = prob.room_face
    out = np.zeros(prob.n_room)
    np.add.at(out, ri, flux)
    np.add.at(out, rj, -flux)
    assert np.abs(out - prob.room_source_m3_s).max() < 1e-9 * v.sum()
    m = buoyant_inlet_model(g, heat, v)
    assert m.cooling_load_w(heat).sum() == pytest.approx(heat.sum(), rel=1e-9)
    assert m.base_inlet_c + m.recirculation_k_per_w @ heat == pytest.approx(t, abs=1e-9)


def test_warm_air_rises_and_stratifies(hall):
    g, heat, v = hall
    _, pot = _inlets(g, heat, v, c=0.0)
    _, bf = _inlets(g, heat, v)
    n = g.nx * g.ny

    def layer_means(b):
        cell_of = np.flatnonzero(b.problem.room_id >= 0)
        t = b.temp_c[: b.problem.n_room]
        return np.bincount(cell_of // n, weights=t) / np.bincount(cell_of // n)

    lp, lb = layer_means(pot), layer_means(bf)
    assert lb[-1] - lb[0] > lp[-1] - lp[0] + 0.2  # a stronger top-to-bottom gradient
    flux = buoyant_face_flux_m3_s(bf.problem, bf.temp_c)
    ri, rj, fax, _ = bf.problem.room_face
    t = bf.temp_c
    up = (fax == 2) & (flux > 0)
    down = (fax == 2) & (flux < 0)
    assert np.mean(t[ri[up]] + t[rj[up]]) > np.mean(t[ri[down]] + t[rj[down]])  # warm goes up


def test_containment_and_enclosures_show_more_value_with_buoyancy(hall):
    g, heat, v = hall
    gain = {}
    for c in (0.0, 0.3):
        open_ = _inlets(g, heat, v, c)[0]
        enclosed = _inlets(replace(g, rack_enclosed=np.ones(g.n_racks, bool)), heat, v, c)[0]
        contained = _inlets(replace(g, containment="cold_aisle"), heat, v, c)[0]
        gain[c] = open_.max() - enclosed.max()
        assert contained.max() == pytest.approx(enclosed.max(), abs=0.05)
        assert enclosed.max() < 18.0 + 1.0  # sealed intakes: supply plus the 5 % leak
    assert gain[0.3] > gain[0.0] + 0.3


@pytest.mark.slow
def test_grid_convergence_of_the_buoyant_field(hall):
    # refined solves of the model itself: half the cell size, twice the layers (within 1 K)
    g, heat, v = hall
    base = _inlets(g, heat, v)[0]
    fine = _inlets(replace(g, cell_m=0.15), heat, v)[0]
    layered = _inlets(replace(g, n_layers=8), heat, v)[0]
    assert np.abs(fine - base).max() < 1.0
    assert np.abs(layered - base).max() < 1.0
