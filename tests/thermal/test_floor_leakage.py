"""The raised floor's leakage (cable cut-outs, panel gaps) in plan view and in layered halls.

``floor_leakage_fraction`` lf is the share of the plenum's air that leaves through the floor
rather than the tiles at uniform plenum pressure; raised floors leak 5-15 % (Radmehr et al.,
IPACK2005-73273, doi:10.1115/IPACK2005-73273). The solver spreads a leak conductance
g = lf / (1 - lf) x (the tiles' conductance) / (floor cells) over every floor cell of the
plan: the plenum is one plan layer whatever the room's height, so the floor cells are the
plan's fluid cells, never the room cells of all layers (a layered hall divided by those and
leaked lf / n_layers: 3.27 % with three layers, 2.53 % with four, instead of 10 %).
"""

import numpy as np
import pytest

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal.solver import build_problem

RISE_K = 15.0


@pytest.fixture(scope="module")
def rack_air():
    return rack_airflow_m3_s(np.full(40, 10e3), RISE_K)


def _hall(v, layers, **kw):
    """40 racks in four rows, four end-wall units with 1.2 x the racks' air."""
    return row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=1.2 * v.sum() / 4, n_layers=layers, **kw)


def _tile_conductance(prob) -> np.ndarray:
    """Plan-cell conductance of the perforated tiles: one per tile, spread over its cells."""
    g = np.zeros(prob.plenum_pressure.size)
    for cells in prob.grid.tile_cells:
        if len(cells):
            np.add.at(g, cells, 1.0 / len(cells))
    return g


@pytest.mark.parametrize("layers", [1, 3, 4])
@pytest.mark.parametrize("lf", [0.05, 0.1, 0.15])
def test_floor_leaks_its_fraction_at_uniform_pressure(rack_air, layers, lf):
    """Hand: each floor cell's leak is its floor flow minus its tiles' conductance x its
    pressure; per unit pressure that is the same at every floor cell (g), and g x (floor
    cells) / (g x floor cells + tiles) is the leak's share at uniform pressure = lf, within
    1e-9, for one, three and four layers (failed with three and four layers before the fix:
    lf / layers)."""
    g = _hall(rack_air, layers, floor_leakage_fraction=lf)
    prob = build_problem(g, rack_air)
    floor = ~prob.grid.solid.ravel()
    p = prob.plenum_pressure
    g_tile = _tile_conductance(prob)
    g_leak = (prob.floor_flow_m3_s - g_tile * p)[floor] / p[floor]
    assert np.ptp(g_leak) < 1e-12 * g_leak.mean()  # one leak conductance per floor cell
    leak = g_leak.sum()
    assert leak / (leak + g_tile.sum()) == pytest.approx(lf, abs=1e-9)
    assert not prob.floor_flow_m3_s[~floor].any()  # nothing leaks under a rack


def _leaked_share(v, layers, spread):
    """Share of the units' air leaving through the floor's leaks (not the tiles)."""
    g = _hall(v, layers, plenum_spread_m=spread)
    prob = build_problem(g, v)
    v_c = g.cooling_airflow_m3_s.sum()
    assert prob.floor_flow_m3_s.sum() == pytest.approx(v_c, rel=1e-9)  # no enclosures: all through the floor
    return (prob.floor_flow_m3_s - _tile_conductance(prob) * prob.plenum_pressure).sum() / v_c


@pytest.mark.parametrize("layers", [3, 4])
def test_leaked_air_share_of_the_units_supply(rack_air, layers):
    """The air itself: the leaks carry lf = 0.1 of the units' air. With the plenum's
    pressure even to 0.03 % (spread 300 m) within 2e-5 (the pressure weighting); with the
    default 30 m spread (3 % pressure drop from the end-wall units) within 2e-3. Layers
    change the room above, not the plenum: the same share as plan view's within 1e-9."""
    for spread, tol in ((300.0, 2e-5), (30.0, 2e-3)):
        share = _leaked_share(rack_air, layers, spread)
        assert share == pytest.approx(0.1, abs=tol)
        assert share == pytest.approx(_leaked_share(rack_air, 1, spread), abs=1e-9)


@pytest.mark.parametrize("layers", [1, 3])
def test_enclosures_take_what_the_leaks_leave(rack_air, layers):
    """Every rack in its own enclosure and no open tiles: the floor's air is all leak, the
    enclosures' tiles take the rest, 1 - lf of the units' air at uniform pressure (spread
    300 m: within 2e-5)."""
    v = rack_air
    g = _hall(v, layers, rack_enclosed=np.ones(40, bool), tile_xy_m=np.zeros((0, 2)), plenum_spread_m=300.0)
    prob = build_problem(g, v)
    v_c = g.cooling_airflow_m3_s.sum()
    assert prob.enclosure_supply_m3_s.sum() + prob.floor_flow_m3_s.sum() == pytest.approx(v_c, rel=1e-9)
    assert prob.floor_flow_m3_s.sum() / v_c == pytest.approx(g.floor_leakage_fraction, abs=2e-5)
