"""A wall jet that runs along an aisle feeds the racks on its flanks (twin.thermal.jets,
issue 12 point c): intakes under the jet's cross-section before it ends take their air from
it, with the jet's mixture there (supply plus the room air it has entrained so far, ASHRAE
Fundamentals ch. 20: Q_x / Q_0 = 2 x / (K sqrt(A_0)) beyond half the core); the jet carries
on with the rest. Hand-computed deliveries, conservation of air and heat, causality."""

import numpy as np
import pytest

from twin.thermal.jets import JET_THROW_CONSTANT, wall_jet_cells

NX, NY, CELL, H = 20, 5, 0.3, 3.0
V0, A0 = 0.5, 0.3 * 3.0  # outlet 0.3 m wide, full height: one layer
CORE = JET_THROW_CONSTANT * np.sqrt(A0)  # 5.8818 m: no entrainment before 2.94 m


def _jet(demand_cells=()):
    demand = np.zeros(NX * NY)
    for (ix, iy), d in demand_cells:
        demand[iy * NX + ix] = d
    return wall_jet_cells(NX, NY, 1, CELL, H, np.ones(NX * NY, bool), outlet_xy_m=(0.15, 0.75), direction=(1.0, 0.0),
                          outlet_z_m=(0.0, H), outlet_width_m=0.3, airflow_m3_s=V0, intake_demand_m3_s=demand)


def test_no_intake_under_the_jet_changes_nothing():
    """Without demand under it the jet is the free jet: it runs to the wall (x = 5.7 m) and
    entrains Q_0 (2 x / (K sqrt(A_0)) - 1) = 0.5 (11.4 / 5.8818 - 1) = 0.46909 m3/s (1e-4)."""
    j = _jet()
    assert j.side_cells is None and j.mix is None
    assert j.reach_m == pytest.approx(5.7)
    assert j.entrained_m3_s == pytest.approx(0.46909, abs=1e-4)


def test_flank_intakes_in_the_core_take_pure_supply():
    """Two intakes of 0.05 m3/s at x = 1.5 and 1.8 m (inside the core) take 0.05 each of
    supply (end weight 0.1 each); the rest of the supply, 0.8, reaches the end, and the jet,
    carrying 0.8 of its flow, entrains 0.8 x 0.46909 = 0.37527 m3/s (1e-4). Volume: supply
    shares sum to 1, entrained shares to 1."""
    j = _jet([((5, 1), 0.05), ((6, 3), 0.05)])
    np.testing.assert_allclose(j.side_m3_s, [0.05, 0.05], rtol=1e-12)
    np.testing.assert_array_equal(j.side_cells, [1 * NX + 5, 3 * NX + 6])
    np.testing.assert_allclose(j.end_weight[:2], [0.1, 0.1], rtol=1e-12)
    assert j.end_weight.sum() == pytest.approx(1.0, abs=1e-12)
    assert j.entrained_m3_s == pytest.approx(0.8 * 0.46909, abs=1e-4)
    assert j.mix.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(j.mix[:2] == 0)  # nothing entrained yet where they were fed


def test_flank_intake_past_the_core_takes_the_mixture_so_far():
    """One 0.05 m3/s intake at x = 4.5 m: the jet carries Q = 0.5 x 9 / 5.8818 = 0.76507 m3/s
    there, supply share 0.5 / 0.76507, so it takes 0.03268 of supply and 0.01732 of room air
    entrained before x = 4.5 m only (causality). The jet then carries 1 - 0.05 / 0.76507 =
    0.93465 of its flow: entrained in total 0.26507 + 0.93465 (0.96909 - 0.76507) = 0.45576
    m3/s (1e-4)."""
    j = _jet([((15, 1), 0.05)])
    q = V0 * 2 * 4.5 / CORE
    assert j.end_weight[0] * V0 == pytest.approx(0.05 * V0 / q, rel=1e-9)
    assert j.mix[0].sum() * j.entrained_m3_s == pytest.approx(0.05 * (1 - V0 / q), rel=1e-9)
    assert j.end_weight[0] * V0 + j.mix[0].sum() * j.entrained_m3_s == pytest.approx(0.05, rel=1e-12)
    x_path = (j.path_cells % NX + 0.5) * CELL - 0.15  # distance of each path cell from the outlet
    assert np.all(j.mix[0][x_path >= 4.5 - 1e-9] == 0)
    assert j.entrained_m3_s == pytest.approx(0.26507 + 0.93465 * (0.96909 - 0.76507), abs=1e-4)


def test_demand_beyond_what_the_jet_carries_takes_it_all():
    """Intakes wanting 0.3 + 0.3 m3/s in the core from a 0.5 m3/s jet: the first takes 0.3,
    the second the remaining 0.2, nothing reaches the end and nothing is entrained."""
    j = _jet([((3, 1), 0.3), ((5, 1), 0.3)])
    np.testing.assert_allclose(j.side_m3_s, [0.3, 0.2], rtol=1e-12)
    assert j.end_weight[2:].sum() == pytest.approx(0.0, abs=1e-12)
    assert j.entrained_m3_s == 0.0


def _aisle_hall(side_feed: bool, monkeypatch):
    from dataclasses import replace

    import twin.thermal.solver as solver
    from twin.thermal import row_hall
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=3.0, cooling_supply_temp_c=18.0, n_layers=3)
    direc = np.array([[1.0 if x < 0.5 * g.width_m else -1.0, 0.0] for x, _ in g.cooling_xy_m])
    g = replace(g, cooling_outlet_z_m=np.tile([0.1, 1.8], (g.n_cooling, 1)), cooling_outlet_width_m=np.ones(g.n_cooling),
                cooling_throw_dir=direc)
    if not side_feed:
        orig = solver.hall_wall_jets
        monkeypatch.setattr(solver, "hall_wall_jets", lambda g, nx, ny, f, v, d=None: orig(g, nx, ny, f, v))
        monkeypatch.setattr(solver, "_FIXED_MEMO", type(solver._FIXED_MEMO)())  # no hall kept from a fed build
    return g


@pytest.mark.parametrize("side_feed", [True, False])
def test_side_fed_hall_conserves_air_and_heat(side_feed, monkeypatch):
    """Two rows of six racks face a cold aisle along which both units blow (row_hall(2, 6)):
    the room's sources sum to zero and the units remove the racks' heat (1e-6 relative), with
    and without feeding the flanks."""
    from twin.thermal.solver import build_problem, steady_field
    g = _aisle_hall(side_feed, monkeypatch)
    p = build_problem(g, 0.5)
    assert abs(p.room_source_m3_s.sum()) < 1e-9
    heat = np.full(g.n_racks, 5e3)
    ds = steady_field(g, heat, 0.5)
    assert float(ds["cooling_heat_removed"].sum()) == pytest.approx(heat.sum(), rel=1e-6)


def test_feeding_the_flanks_cools_the_racks_along_the_aisle(monkeypatch):
    """Same hall, 5 kW racks at 0.5 m3/s, 6 m3/s of 18 C supply: fed along the aisle, every
    rack's inlet is colder than when the jets deliver only at their end (measured: 18.6-19.6 C
    against 34.5-39.7 C; cooler air equals rack air, so the jets can carry the racks' whole
    draw and the inlets stay within 2 K of supply)."""
    from twin.thermal.solver import steady_field
    heat = np.full(12, 5e3)
    fed = steady_field(_aisle_hall(True, monkeypatch), heat, 0.5)
    end = steady_field(_aisle_hall(False, monkeypatch), heat, 0.5)
    t_fed, t_end = fed["rack_inlet_temp"].values, end["rack_inlet_temp"].values
    assert np.all(t_fed < t_end)
    assert t_fed.max() < 18.0 + 2.0 < 34.0 < t_end.min()
