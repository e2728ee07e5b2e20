"""Steady airflow and heat of the hall: conservation, limits, linearity, cross-checks."""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from twin.thermal import (
    AIR_CP_J_KG_K,
    AIR_DENSITY_KG_M3,
    HallGeometry,
    inlet_model,
    inlet_temp_c,
    rack_airflow_m3_s,
    row_hall,
    steady_field,
)
from twin.thermal.inlet import linear_maps
from twin.thermal.solver import build_problem, face_operator

RHO_CP = AIR_DENSITY_KG_M3 * AIR_CP_J_KG_K


def test_energy_balance_heat_in_equals_heat_removed(small_hall):
    g, heat, v = small_hall
    ds = steady_field(g, heat, v)
    removed = ds.cooling_heat_removed.values.sum()
    assert removed == pytest.approx(heat.sum(), rel=0.01)  # issue: within 1 %
    assert removed == pytest.approx(heat.sum(), rel=1e-9)  # conservative scheme: exact
    # each rack's exhaust is its inlet plus Q / (rho cp V)
    np.testing.assert_allclose(ds.rack_exhaust_temp - ds.rack_inlet_temp, heat / (RHO_CP * v))


@pytest.mark.parametrize("containment", ["none", "cold_aisle", "hot_aisle"])
def test_mass_balance_in_every_cell(small_hall, containment):
    g, heat, v = small_hall
    prob = build_problem(replace(g, containment=containment, containment_leakage_fraction=0.05), v)
    ri, rj, _, flux = prob.room_face
    out = np.zeros(prob.n_room)
    np.add.at(out, ri, flux)
    np.add.at(out, rj, -flux)
    scale = v.sum()
    assert np.abs(out - prob.room_source_m3_s).max() < 1e-9 * scale
    pi, pj, _, pflux = prob.plenum_face
    pout = np.zeros(prob.plenum_pressure.size)
    np.add.at(pout, pi, pflux)
    np.add.at(pout, pj, -pflux)
    assert np.abs(pout + prob.floor_flow_m3_s - prob.plenum_source_m3_s).max() < 1e-9 * scale
    # whole hall: what the units blow equals what leaves the floor plus enclosed draws
    assert prob.floor_flow_m3_s.sum() == pytest.approx(prob.plenum_source_m3_s.sum(), rel=1e-9)


def test_recirculation_matrix_reproduces_full_solve(small_hall):
    g, _, v = small_hall
    model = inlet_model(g, v)
    rng = np.random.default_rng(7)
    for _ in range(3):
        heat = rng.uniform(2e3, 12e3, g.n_racks)
        full = steady_field(g, heat, v).rack_inlet_temp.values
        np.testing.assert_allclose(inlet_temp_c(model, heat), full, atol=1e-8)
    # every watt of every rack ends in some cooling unit
    np.testing.assert_allclose(model.cooling_heat_share.sum(axis=0), 1.0, atol=1e-9)
    np.testing.assert_allclose(model.base_inlet_c, 18.0, atol=1e-9)
    assert np.all(model.recirculation_k_per_w >= -1e-12)


def test_recirculation_matrix_after_a_unit_trips(small_hall):
    g, heat, v = small_hall
    active = np.array([True, False])
    model = inlet_model(g, v, cooling_active=active)
    full = steady_field(g, heat, v, cooling_active=active)
    np.testing.assert_allclose(inlet_temp_c(model, heat), full.rack_inlet_temp.values, atol=1e-8)
    assert model.cooling_load_w(heat)[1] == 0.0
    assert model.cooling_load_w(heat)[0] == pytest.approx(heat.sum(), rel=1e-9)
    # losing half the airflow makes every rack at least as hot, most much hotter
    before = inlet_temp_c(inlet_model(g, v), heat)
    assert np.all(inlet_temp_c(model, heat) >= before - 1e-9)
    assert inlet_temp_c(model, heat).max() > before.max() + 3.0


def test_inlet_rise_is_linear_in_rack_power(small_hall):
    g, heat, v = small_hall
    rise1 = steady_field(g, heat, v).rack_inlet_temp.values - 18.0
    rise2 = steady_field(g, 2 * heat, v).rack_inlet_temp.values - 18.0
    np.testing.assert_allclose(rise2, 2 * rise1, atol=1e-9)
    half_a = np.where(np.arange(g.n_racks) % 2 == 0, heat, 0.0)
    half_b = heat - half_a
    ra = steady_field(g, half_a, v).rack_inlet_temp.values - 18.0
    rb = steady_field(g, half_b, v).rack_inlet_temp.values - 18.0
    np.testing.assert_allclose(ra + rb, rise1, atol=1e-9)
    assert rise1.max() > 5.0  # the case really recirculates


@pytest.mark.parametrize("containment", ["cold_aisle", "hot_aisle"])
def test_perfect_containment_gives_supply_temperature(containment):
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=8.0, containment=containment)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)  # 22.6 m3/s of racks for 32 m3/s of cooling
    open_hall = steady_field(replace(g, containment="none", floor_leakage_fraction=0.5), heat, v)
    ds = steady_field(g, heat, v)
    np.testing.assert_allclose(ds.rack_inlet_temp.values, 18.0, atol=1e-9)
    assert open_hall.rack_inlet_temp.values.max() > 18.5  # without containment it recirculates
    assert ds.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)


def test_leaky_containment_lies_between_open_and_perfect(small_hall):
    g, heat, v = small_hall
    g = replace(g, cooling_airflow_m3_s=np.full(2, 12.5))  # enough air for the racks
    worst = []
    for leak in (1.0, 0.3, 0.1, 0.0):
        ds = steady_field(replace(g, containment="hot_aisle", containment_leakage_fraction=leak), heat, v)
        worst.append(ds.rack_inlet_temp.values.max())
    assert worst[0] > worst[1] > worst[2] > worst[3]
    assert worst[3] == pytest.approx(18.0, abs=1e-9)


def _pair_hall(second_xy, second_dir):
    """Rack 0 at (6, 3) blowing +y (intake -y); rack 1 elsewhere; room-based supply:
    the only tiles are along the far walls, so racks breathe room air."""
    return HallGeometry(
        width_m=12.0, depth_m=9.0, height_m=3.0,
        rack_center_xy_m=np.array([(6.0, 3.0), second_xy]),
        rack_intake_dir=np.array([(0.0, -1.0), second_dir]),
        cooling_xy_m=np.array([(1.0, 4.5), (11.0, 4.5)]),
        cooling_airflow_m3_s=np.array([1.0, 1.0]),
        cooling_supply_temp_c=np.array([18.0, 18.0]),
        cooling_capacity_w=np.array([50e3, 50e3]),
        tile_xy_m=np.array([(3.0, 0.6), (9.0, 0.6), (3.0, 8.4), (9.0, 8.4)]),
    )


def test_exhaust_blowing_into_a_neighbours_intake_runs_it_hotter():
    heat = np.array([10e3, 10e3])
    v = rack_airflow_m3_s(heat, 15.0)
    # rack 1 stands 1.2 m behind rack 0, intake facing rack 0's exhaust
    inline = steady_field(_pair_hall((6.0, 5.4), (0.0, -1.0)), heat, v).rack_inlet_temp.values
    # rack 1 turned round: its intake faces away from rack 0
    turned = steady_field(_pair_hall((6.0, 5.4), (0.0, 1.0)), heat, v).rack_inlet_temp.values
    assert inline[1] > turned[1] + 2.0
    assert inline[1] > inline[0] + 2.0


def test_rack_far_from_cooling_runs_hotter():
    # a 30 m hall, cooling only at the west wall, one row of 40 racks
    xs = 3.3 + 0.6 * np.arange(40)
    g = HallGeometry(
        width_m=30.0, depth_m=6.0, height_m=3.0,
        rack_center_xy_m=np.column_stack([xs, np.full(40, 2.4)]),
        rack_intake_dir=np.tile([0.0, 1.0], (40, 1)),
        cooling_xy_m=np.array([(1.0, 1.5), (1.0, 4.5)]),
        cooling_airflow_m3_s=np.array([12.0, 12.0]),
        cooling_supply_temp_c=np.array([18.0, 18.0]),
        cooling_capacity_w=np.array([300e3, 300e3]),
    )
    heat = np.full(40, 10e3)
    t = steady_field(g, heat, rack_airflow_m3_s(heat, 15.0)).rack_inlet_temp.values
    near, far = t[2:10].mean(), t[-8:].mean()
    assert far > near + 1.0
    ds = steady_field(g, heat, rack_airflow_m3_s(heat, 15.0))
    tiles = ds.floor_airflow.values
    assert tiles[:, :40].sum() > tiles[:, -40:].sum()  # tiles far from the units blow less


def test_enclosing_the_hottest_racks_cools_them(small_hall):
    g, heat, v = small_hall
    base = steady_field(g, heat, v).rack_inlet_temp.values
    hottest = np.argsort(base)[-4:]
    enclosed = np.zeros(g.n_racks, bool)
    enclosed[hottest] = True
    after = steady_field(replace(g, rack_enclosed=enclosed), heat, v).rack_inlet_temp.values
    assert np.all(after[hottest] < base[hottest] - 1.0)
    assert after.max() < base.max()


def test_grid_refinement_changes_hottest_inlet_by_less_than_1c(small_hall):
    g, heat, v = small_hall
    coarse = steady_field(g, heat, v).rack_inlet_temp.values.max()
    fine = steady_field(replace(g, cell_m=g.cell_m / 2), heat, v).rack_inlet_temp.values.max()
    assert coarse > 25.0  # a case with real recirculation
    assert abs(fine - coarse) < 1.0


@pytest.mark.slow
def test_grid_refinement_200_racks():
    g = row_hall(10, 20, cooling_per_wall=5)
    heat = np.full(g.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    coarse = steady_field(g, heat, v).rack_inlet_temp.values.max()
    fine = steady_field(replace(g, cell_m=g.cell_m / 2), heat, v).rack_inlet_temp.values.max()
    assert coarse > 25.0
    assert abs(fine - coarse) < 1.0


@pytest.mark.parametrize("scheme, n, tol", [("power_law", 50, 0.01), ("quick", 50, 0.02), ("quick", 200, 0.002)])
def test_one_dimensional_advection_diffusion_matches_analytic(scheme, n, tol):
    # Channel of length L, uniform flow u, diffusivity Gamma, T(0) = 0, T(L) = 1:
    # T(x) = (exp(Pe x / L) - 1) / (exp(Pe) - 1), Pe = u L / Gamma  (Patankar 1980, 5.2)
    length, pe = 1.0, 5.0
    h = length / n
    flux = 1.0  # u * area
    cond = flux * length / pe / h  # Gamma * area / h
    a = face_operator(n, 1, np.ones(n, bool), flux, cond, scheme).tolil()
    b = np.zeros(n)
    t0, t1 = 0.0, 1.0
    a[0, 0] += 2 * cond  # boundary at half a cell: inflow F * T0 and diffusion 2 D (T_0 - T0)
    b[0] += flux * t0 + 2 * cond * t0
    a[n - 1, n - 1] += flux + 2 * cond  # outflow F * T_n and diffusion to the wall value
    b[n - 1] += 2 * cond * t1
    t = np.linalg.solve(a.toarray(), b)
    x = (np.arange(n) + 0.5) * h
    exact = (np.exp(pe * x / length) - 1) / (np.exp(pe) - 1)
    assert np.abs(t - exact).max() < tol


def test_steady_field_dataset_for_the_viewer(small_hall):
    g, heat, v = small_hall
    ds = steady_field(g, heat, v)
    assert ds.temperature.dims == ("y_m", "x_m")
    assert ds.velocity.dims == ("component", "y_m", "x_m")
    assert ds.temperature.attrs["units"] == "degC" and ds.velocity.attrs["units"] == "m/s"
    assert ds.x_m.attrs["units"] == "m"
    assert ds.x_m.size == g.nx and ds.y_m.size == g.ny
    assert np.isnan(ds.temperature.values[ds.solid.values]).all()
    fluid = ~ds.solid.values
    assert np.nanmin(ds.temperature.values[fluid]) >= 18.0 - 0.5
    # air speeds of a data hall: well below 10 m/s everywhere
    assert float(ds.speed.max()) < 10.0


def test_blocked_faces_are_reported():
    # two racks back to front with no gap: rack 1 would breathe rack 0's body
    with pytest.raises(ValueError, match="blocked"):
        steady_field(
            HallGeometry(
                width_m=6.0, depth_m=6.0, height_m=3.0,
                rack_center_xy_m=np.array([(3.0, 2.0), (3.0, 3.2)]),
                rack_intake_dir=np.array([(0.0, -1.0), (0.0, -1.0)]),
                cooling_xy_m=np.array([(1.0, 5.0)]), cooling_airflow_m3_s=np.array([2.0]),
                cooling_supply_temp_c=np.array([18.0]), cooling_capacity_w=np.array([50e3]),
            ),
            np.array([5e3, 5e3]), np.array([0.3, 0.3]),
        )


def test_block_substitution_agrees_with_the_whole_operator(small_hall):
    g, heat, v = small_hall
    for geom in (g, replace(g, containment="hot_aisle", containment_leakage_fraction=0.2)):
        prob = build_problem(geom, v)
        assert np.all(prob.floor_flow_m3_s >= 0)       # the plenum is upstream of the room
        d1, s1 = linear_maps(prob)
        lu = spla.splu(prob.A.tocsc())                 # the whole operator, one factor
        y = lu.solve(sp.vstack([prob.W, prob.M]).T.toarray(), trans="T")
        d2, s2 = (prob.B.T @ y).T, (prob.E.T @ y).T
        np.testing.assert_allclose(d1, d2, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(s1, s2, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(prob.solve(heat), lu.solve(prob.E @ geom.cooling_supply_temp_c + prob.B @ heat), atol=1e-9)


def test_starved_containment_draws_room_air_through_its_gaps(small_hall):
    # contained racks need 22.6 m3/s and the units blow 20: the aisle's deficit comes in
    # through the enclosure's gaps (twin.thermal.containment); the plenum stays above the
    # room's pressure (until the zone balance, room air leaked into the floor instead)
    g, heat, v = small_hall
    geom = replace(g, containment="cold_aisle")
    prob = build_problem(geom, v)
    assert np.all(prob.floor_flow_m3_s >= 0) and np.all(prob.room_share > 0.1)
    model = inlet_model(geom, v)
    full = steady_field(geom, heat, v)
    np.testing.assert_allclose(inlet_temp_c(model, heat), full.rack_inlet_temp.values, atol=1e-8)
    assert full.rack_inlet_temp.values.max() > 19.0  # starved containment recirculates
    assert full.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)


def test_missing_blanking_heats_the_server_inlets(small_hall):
    g, heat, v = small_hall
    g2 = replace(g, cooling_airflow_m3_s=np.full(2, 12.5))
    blanked = steady_field(g2, heat, v)
    leaky_g = replace(g2, rack_bypass_fraction=0.1)
    leaky = steady_field(leaky_g, heat, v)
    # 10 % of the server air is its own exhaust: b/(1-b) Q/(rho cp V) = 1.67 K above the
    # aisle air. Racks fed by their tile see all of it; at the row ends the racks draw
    # less room air, so less air wraps round the rows, which offsets part of it.
    own = 0.1 / 0.9 * heat / (RHO_CP * v)
    rise = leaky.rack_inlet_temp.values - blanked.rack_inlet_temp.values
    middle = np.tile(np.arange(10), 4) % 10 == 4
    np.testing.assert_allclose(rise[middle], own[middle], atol=0.05)
    assert rise.mean() > 0.5 * own.mean()
    assert leaky.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)
    model = inlet_model(leaky_g, v)
    np.testing.assert_allclose(inlet_temp_c(model, heat), leaky.rack_inlet_temp.values, atol=1e-8)


def test_overhead_supply_feeds_every_diffuser_alike():
    xs = 3.3 + 0.6 * np.arange(40)
    g = HallGeometry(
        width_m=30.0, depth_m=6.0, height_m=3.0,
        rack_center_xy_m=np.column_stack([xs, np.full(40, 2.4)]),
        rack_intake_dir=np.tile([0.0, 1.0], (40, 1)),
        cooling_xy_m=np.array([(1.0, 1.5), (1.0, 4.5)]),
        cooling_airflow_m3_s=np.array([12.0, 12.0]),
        cooling_supply_temp_c=np.array([18.0, 18.0]),
        cooling_capacity_w=np.array([300e3, 300e3]),
        supply="overhead",
    )
    heat = np.full(40, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    ds = steady_field(g, heat, v)
    per_tile = ds.floor_airflow.values[ds.floor_airflow.values > 0]
    assert per_tile.sum() == pytest.approx(24.0, rel=1e-9)  # no floor leakage overhead
    assert per_tile.max() / per_tile.min() < 1.01
    # the far half of the row, starved by the raised floor's pressure decay, runs cooler
    floor = steady_field(replace(g, supply="raised_floor"), heat, v)
    assert ds.rack_inlet_temp.values[20:].mean() < floor.rack_inlet_temp.values[20:].mean() - 0.5
    assert ds.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)


@pytest.fixture(scope="module")
def layered_hall(small_hall):
    g, heat, v = small_hall
    return replace(g, n_layers=4), heat, v


def test_layered_hall_conserves_mass_and_energy(layered_hall):
    g, heat, v = layered_hall
    prob = build_problem(g, v)
    ri, rj, _, flux = prob.room_face
    out = np.zeros(prob.n_room)
    np.add.at(out, ri, flux)
    np.add.at(out, rj, -flux)
    assert np.abs(out - prob.room_source_m3_s).max() < 1e-9 * v.sum()
    ds = steady_field(g, heat, v)
    assert ds.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)
    model = inlet_model(g, v)
    np.testing.assert_allclose(inlet_temp_c(model, heat), ds.rack_inlet_temp.values, atol=1e-8)
    assert ds.temperature.dims == ("z_m", "y_m", "x_m")
    assert ds.velocity.dims == ("component", "z_m", "y_m", "x_m") and ds.component.size == 3
    assert ds.z_m.size == 4 and ds.z_m.attrs["units"] == "m"
    # racks are solid in the three layers below 2 m and open above
    assert ds.solid.values[:3].sum() == 3 * g.n_racks * 8 and ds.solid.values[3].sum() == 0


def test_layered_hall_hot_air_rises_over_the_racks_to_the_returns(layered_hall):
    g, heat, v = layered_hall
    ds = steady_field(g, heat, v)
    t = ds.temperature.values
    # the layer above the racks carries the exhaust towards the returns: warmer than the floor layer
    assert np.nanmean(t[3]) > np.nanmean(t[0]) + 1.0
    w = ds.velocity.sel(component="z").values
    assert np.nanmax(w) > 0.05  # air rises somewhere (to the top-layer returns)


@pytest.mark.parametrize("containment", ["cold_aisle", "hot_aisle"])
def test_layered_perfect_containment_gives_supply_temperature(containment):
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=8.0, containment=containment, n_layers=3)
    heat = np.full(g.n_racks, 10e3)
    ds = steady_field(g, heat, rack_airflow_m3_s(heat, 15.0))
    np.testing.assert_allclose(ds.rack_inlet_temp.values, 18.0, atol=1e-9)


@pytest.mark.slow
def test_layered_grid_refinement(layered_hall):
    g, heat, v = layered_hall
    coarse = steady_field(g, heat, v).rack_inlet_temp.values.max()
    fine = steady_field(replace(g, cell_m=g.cell_m / 2), heat, v).rack_inlet_temp.values.max()
    assert abs(fine - coarse) < 1.0


def test_no_running_unit_has_no_steady_state(small_hall):
    from twin.thermal import NoSteadyStateError

    g, heat, v = small_hall
    with pytest.raises(NoSteadyStateError):
        inlet_model(g, v, cooling_active=np.array([False, False]))
