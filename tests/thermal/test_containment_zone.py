"""The contained aisle's own air balance (twin.thermal.containment): the deficit of a zone
short of air is drawn in through the enclosure's gaps, evenly over its racks; a surplus
spills out; a baseline leak remains at balance. Hand values, conservation of air and heat,
and the physical direction it restores: a starved contained aisle is no longer hotter at
its hottest rack than the open hall."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.thermal import inlet_temp_c, rack_airflow_m3_s, row_hall, steady_field
from twin.thermal.buoyancy import buoyant_flow
from twin.thermal.containment import (
    cold_aisle_zone_index,
    contained_aisle_zone_of_cell,
    enclosure_balance_m3_s,
    enclosure_zone_index,
    zone_room_share_fraction,
    zone_supply_by_rack_m3_s,
)
from twin.thermal.inlet import inlet_model_of_problem
from twin.thermal.solver import build_problem

SUPPLY_C = 18.0
RISE_K = 15.0


@pytest.fixture(scope="module")
def racks():
    heat = np.full(40, 10e3)
    return heat, rack_airflow_m3_s(heat, RISE_K)


def _hall(v, r, containment, **kw):
    """The 40-rack hall of test_containment_benchmark.py: cooling air r times the rack air."""
    return row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=r * v.sum() / 4,
                    containment=containment, **kw)


def test_room_share_by_hand():
    # short: S = 0.8, D = 1 -> 0.2 from the room; balance with a 5 % leak -> 0.05; surplus
    # S = 1.2 -> the leak only, and 1.2 - 0.95 = 0.25 m3/s spills out
    f = zone_room_share_fraction([0.8, 1.0, 1.2, 0.0], [1.0, 1.0, 1.0, 1.0], 0.05)
    np.testing.assert_allclose(f, [0.2, 0.05, 0.05, 1.0], atol=1e-15)
    share, spill = enclosure_balance_m3_s([0.5, 0.7, 0.3, 1.0], [1.0, 1.0, 0.5, 0.5], [0, 0, 1, -1], 0.05)
    # zone 0: S 1.2, D 2 -> 0.4; zone 1: S 0.3, D 0.5 -> 0.4; the open rack draws room air only
    np.testing.assert_allclose(share, [0.4, 0.4, 0.4, 1.0], atol=1e-15)
    np.testing.assert_allclose(spill, 0.0, atol=1e-15)
    # surplus: S 3.6, D 3, sealed -> supply air only, 0.6 m3/s spills, shared by draw 1 : 2
    share, spill = enclosure_balance_m3_s([1.5, 2.1], [1.0, 2.0], [0, 0], 0.0)
    np.testing.assert_allclose(share, 0.0, atol=1e-15)
    np.testing.assert_allclose(spill, [0.2, 0.4], atol=1e-15)
    with pytest.raises(ValueError, match="positive rack draw"):
        zone_room_share_fraction(1.0, 0.0, 0.05)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 3.0), st.floats(0.05, 2.0), st.integers(-1, 3)), min_size=1, max_size=12),
       st.floats(0.0, 0.3))
def test_every_zone_conserves_air(rows, leak):
    s, d, z = (np.array(c) for c in zip(*rows, strict=True))
    z = np.unique(z, return_inverse=True)[1] - (1 if (z < 0).any() else 0)  # zones 0..Z-1, -1 open
    share, spill = enclosure_balance_m3_s(s, d, z, leak)
    assert np.all((share >= leak - 1e-15) & (share <= 1.0)) and np.all(spill >= 0)
    for k in range(int(z.max()) + 1):
        m = z == k
        supply_used = ((1 - share[m]) * d[m]).sum() + spill[m].sum()
        assert supply_used == pytest.approx(s[m].sum(), abs=1e-12)  # in = out, each zone
        assert np.ptp(share[m]) == 0  # the deficit spreads evenly over the zone's racks
    assert np.all(share[z < 0] == 1.0)


def test_zones_are_the_contained_aisles():
    g = row_hall(4, 10, cooling_per_wall=2)  # rows 0 + 1 and 2 + 3 face each other
    zone = cold_aisle_zone_index(g.rack_center_xy_m, g.rack_intake_dir, g.rack_width_m, g.rack_depth_m)
    np.testing.assert_array_equal(zone, np.repeat([0, 1], 20))
    wide = row_hall(2, 6, cold_aisle_m=3.6, cooling_per_wall=1)  # beyond the widest aisle: two zones
    zone = cold_aisle_zone_index(wide.rack_center_xy_m, wide.rack_intake_dir, 0.6, 1.2)
    np.testing.assert_array_equal(zone, np.repeat([0, 1], 6))
    enc = np.arange(40) % 3 == 0  # rack enclosures without aisle containment: one zone each
    zone = enclosure_zone_index(enc, "none", g.rack_center_xy_m, g.rack_intake_dir, 0.6, 1.2)
    np.testing.assert_array_equal(zone[enc], np.arange(enc.sum()))
    assert np.all(zone[~enc] == -1)


def _cells(nx, *ixy):
    return np.array([iy * nx + ix for ix, iy in ixy], np.int64)


def test_aisle_footprint_by_hand():
    """A 7 x 8 grid of 0.3 m cells. Racks 0 and 1 (two cells wide, x 1-2 and 4-5) stand at
    y 0-1 facing +y; rack 2 (x 1-2) at y 5-6 faces rack 0 across an aisle three cells wide
    (y 2-4); rack 1 faces nothing. One zone: the aisle's floor is rack 0's and rack 2's
    intake rows and the row between them (6 cells), plus rack 1's own intake cells (2)."""
    nx, ny = 7, 8
    solid = np.zeros((ny, nx), bool)
    rack_cells = [_cells(nx, (1, 0), (2, 0), (1, 1), (2, 1)), _cells(nx, (4, 0), (5, 0), (4, 1), (5, 1)),
                  _cells(nx, (1, 5), (2, 5), (1, 6), (2, 6))]
    for c in rack_cells:
        solid.ravel()[c] = True
    intake = [_cells(nx, (1, 2), (2, 2)), _cells(nx, (4, 2), (5, 2)), _cells(nx, (1, 4), (2, 4))]
    dirs = np.array([(0.0, 1.0), (0.0, 1.0), (0.0, -1.0)])
    got = contained_aisle_zone_of_cell([0, 0, 0], intake, dirs, rack_cells, solid, 0.3)
    want = -np.ones(nx * ny, np.int64)
    want[_cells(nx, (1, 2), (2, 2), (1, 3), (2, 3), (1, 4), (2, 4), (4, 2), (5, 2))] = 0
    np.testing.assert_array_equal(got, want)
    # an obstacle in the aisle's middle row ends the walks there: only the intake cells
    blocked = solid.copy()
    blocked[3, 2] = True
    got = contained_aisle_zone_of_cell([0, 0, 0], intake, dirs, rack_cells, blocked, 0.3)
    assert np.flatnonzero(got == 0).tolist() == sorted(_cells(nx, (1, 2), (2, 2), (4, 2), (5, 2), (1, 4), (2, 4), (1, 3)))
    # facing racks of two zones, an aisle wider than the widest (0.6 m < 0.9 m), open racks
    for zone, width in (([0, 0, 1], 3.0), ([0, 0, 0], 0.6)):
        got = contained_aisle_zone_of_cell(zone, intake, dirs, rack_cells, solid, 0.3, width)
        np.testing.assert_array_equal(np.sort(np.flatnonzero(got >= 0)), np.sort(np.concatenate(intake)))
    assert np.all(contained_aisle_zone_of_cell([-1, -1, -1], intake, dirs, rack_cells, solid, 0.3) == -1)


def test_zone_supply_by_rack_by_hand():
    """Cells 0-5; rack 0 fronts cells 0, 1, rack 1 cell 2, both in zone 0, whose middle is cells
    3, 4; rack 2 is its own zone 1 (cell 5); rack 3 is open. Own supplies 0.3, 0.2, 0.4; the
    middle's 0.6 shared by draw 1 : 2 -> 0.2, 0.4; the open rack is credited nothing."""
    q = np.array([0.1, 0.2, 0.2, 0.25, 0.35, 0.4])
    aisle = np.array([0, 0, 0, 0, 0, -1])
    intake = [np.array([0, 1]), np.array([2]), np.array([5]), np.array([], np.int64)]
    s = zone_supply_by_rack_m3_s(q, aisle, intake, [True, True, True, False], [1.0, 2.0, 0.5, 1.0], [0, 0, 1, -1])
    np.testing.assert_allclose(s, [0.5, 0.6, 0.4, 0.0], atol=1e-15)
    assert s[:2].sum() == pytest.approx(q[:5].sum(), abs=1e-15)  # every cell of the aisle, once
    # no aisle floor beyond the intake cells (a rack's own enclosure): its own cells only
    s = zone_supply_by_rack_m3_s(q, -np.ones(6, np.int64), intake, [True, True, True, False],
                                 [1.0, 2.0, 0.5, 1.0], [0, 0, 1, -1])
    np.testing.assert_allclose(s, [0.3, 0.2, 0.4, 0.0], atol=1e-15)


def _three_cell_aisle(v, r, tiles_y_m, layers, leak=0.05):
    """Two rows of four racks facing across a 1.8 m aisle of 0.6 m cells (three cells wide,
    y 2.4-4.2 m), four tiles in one cell row of it, a stiff plenum (300 m spread)."""
    return row_hall(2, 4, cold_aisle_m=1.8, cell_m=0.6, cooling_per_wall=1, cooling_airflow_m3_s=r * v.sum() / 2,
                    containment="cold_aisle", plenum_spread_m=300.0, containment_leakage_fraction=leak,
                    n_layers=layers, tile_xy_m=np.array([(x, tiles_y_m) for x in (3.3, 3.9, 4.5, 5.1)]))


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("r", [0.8, 1.3])
def test_three_cell_aisle_counts_its_middle_tiles(layers, r):
    """Tiles only in the middle row of a contained aisle three cells wide: they deliver into
    the aisle. Hand, at uniform plenum pressure: the tiles take 1 - lf of the units' air and
    the floor lf evenly over its 138 cells (14 x 11 less 8 racks of 2), 12 of them the
    aisle's, so S / V_c = 0.9 + 0.1 x 12 / 138 = 0.908696 and f = max(l, 1 - S / D): r 0.8,
    f = 1 - 0.726957 = 0.273043; r 1.3, air to spare, f = l = 0.05 and S - 0.95 D spills.
    Before the fix the middle tiles fed the room and the aisle counted only what its racks'
    front cells delivered. Air and heat conserved to 1e-9; the balance does not depend on
    which row of the aisle holds the tiles (front row: same S within 1e-5)."""
    heat = np.full(8, 6e3)
    v = rack_airflow_m3_s(heat, RISE_K)
    g = _three_cell_aisle(v, r, 3.3, layers)
    prob = build_problem(g, v)
    v_c = g.cooling_airflow_m3_s.sum()
    assert int((~prob.grid.solid).sum()) == 138
    s = prob.enclosure_supply_m3_s.sum()
    assert s / v_c == pytest.approx(0.9 + 0.1 * 12 / 138, abs=5e-5)
    np.testing.assert_allclose(prob.room_share, max(0.05, 1 - 0.908696 * r), atol=5e-5)
    np.testing.assert_allclose(prob.room_share, max(0.05, 1 - s / v.sum()), atol=1e-12)
    assert s + prob.floor_flow_m3_s.sum() == pytest.approx(v_c, rel=1e-9)
    assert prob.plenum_source_m3_s.sum() == pytest.approx(prob.floor_flow_m3_s.sum(), rel=1e-9)
    assert abs(prob.room_source_m3_s.sum()) < 1e-9 * v_c
    ds = steady_field(g, heat, v)
    assert ds.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)
    np.testing.assert_allclose(ds.cooling_return_temp.values, SUPPLY_C + RISE_K / r, atol=1e-9)
    front = build_problem(_three_cell_aisle(v, r, 2.7, layers), v)
    assert front.enclosure_supply_m3_s.sum() == pytest.approx(s, rel=1e-5)


@pytest.mark.parametrize("r", [0.8, 1.5])
def test_air_and_heat_are_conserved_short_and_spilling(racks, r):
    """Plenum: the units' air leaves through tiles, leaks and the enclosures' tiles; each
    aisle: tile supply = (1 - f) draw + spill; the room: all sources sum to 0; heat: every
    watt leaves through a unit (1e-9)."""
    heat, v = racks
    g = _hall(v, r, "cold_aisle", containment_leakage_fraction=0.02)
    prob = build_problem(g, v)
    v_c = g.cooling_airflow_m3_s.sum()
    assert prob.enclosure_supply_m3_s.sum() + prob.floor_flow_m3_s.sum() == pytest.approx(v_c, rel=1e-9)
    assert prob.plenum_source_m3_s.sum() == pytest.approx(prob.floor_flow_m3_s.sum(), rel=1e-9)
    assert abs(prob.room_source_m3_s.sum()) < 1e-9 * v_c
    zone = np.repeat([0, 1], 20)
    for k in (0, 1):
        s_z = prob.enclosure_supply_m3_s[zone == k].sum()
        f = prob.room_share[zone == k]
        assert np.ptp(f) == 0
        # hand: f = max(l, 1 - S / D) with S the zone's delivered supply
        assert f[0] == pytest.approx(max(0.02, 1 - s_z / v[zone == k].sum()), abs=1e-12)
    ds = steady_field(g, heat, v)
    assert ds.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)
    np.testing.assert_allclose(ds.cooling_return_temp.values, SUPPLY_C + RISE_K / r, atol=1e-9)
    if r > 1:  # surplus: the racks draw (1 - l) supply, l room air, the rest spills
        assert prob.room_share[0] == 0.02


def test_tiles_deliver_the_floor_share_at_uniform_pressure(racks):
    """Plan view: the floor leaks lf / (1 - lf) of the tiles' conductance spread over the
    floor, so at uniform plenum pressure the floor takes lf of the cooling air, evenly per
    cell, and the leak over a contained aisle's floor feeds that aisle: the aisles get
    1 - lf (1 - A_aisles / A_floor). By hand: two aisles of 4 x 20 cells (1.2 m x 6 m at
    0.3 m), 160 of the 1,120 floor cells, lf 0.1: 1 - 0.1 x 960 / 1120 = 0.91429 (before the
    aisles took their own floor's leak, 1 - lf = 0.9). The plenum's pressure drop from the
    end-wall units moves that by under 1 %."""
    heat, v = racks
    g = _hall(v, 0.8, "cold_aisle")
    prob = build_problem(g, v)
    share = prob.enclosure_supply_m3_s.sum() / g.cooling_airflow_m3_s.sum()
    fluid = int((~prob.grid.solid).sum())
    assert fluid == 1120 and g.floor_leakage_fraction == 0.1
    assert share == pytest.approx(1 - 0.1 * (1120 - 160) / 1120, abs=0.01)


def test_rack_enclosures_balance_one_by_one(racks):
    """IBM-style enclosures on single racks (no aisle containment): each is its own zone, so
    a rack whose tile gets more than it draws spills and one that gets less pulls room air:
    share = max(l, 1 - S_r / V_r), per rack."""
    heat, v = racks
    # a floor whose pressure falls off over 10 m (tile flows vary by about +-4 % here)
    g = _hall(v, 1.12, "none", rack_enclosed=np.ones(40, bool), containment_leakage_fraction=0.05,
              plenum_spread_m=10.0)
    prob = build_problem(g, v)
    s = prob.enclosure_supply_m3_s
    np.testing.assert_allclose(prob.room_share, np.maximum(0.05, 1 - s / v), atol=1e-12)
    assert s.max() > v.max() > s.min()  # near the units a surplus, mid-row a deficit
    spill_w = np.maximum(s - 0.95 * v, 0.0)
    assert prob.room_source_m3_s.sum() == pytest.approx(0.0, abs=1e-9)
    assert spill_w.sum() > 0
    ds = steady_field(g, heat, v)
    assert ds.cooling_heat_removed.sum() == pytest.approx(heat.sum(), rel=1e-9)


@pytest.mark.parametrize("r", [0.7, 0.8])
def test_starved_contained_aisle_is_even_and_below_the_open_hall(racks, r):
    """Buoyant 3-layer room (the engine's), sealed cold aisle short of air. Every rack draws
    the share f = 1 - S / Vr of room air. Even spread at the mixed return (T_s + dT / r)
    gives the hand figure f dT / r; the maximum principle (room air no hotter than the
    hottest exhaust, T_in,max + dT) bounds the hottest rack by f dT / (1 - f). The hottest
    rack must lie within the width of that band, f dT (1 / (1 - f) - 1 / r), of the hand
    figure (r = 0.8: 5.27 K +- 0.59 K, measured 5.39 K; r = 0.7: 7.94 K +- 0.89 K, measured
    8.19 K), and below the open hall's hottest (7.91 K, 10.71 K). Before the zone balance it
    was 7.52 / 12.11 K, above the open hall, with the deficit carried mid-row by the plenum.
    Until the floor leaked its full lf in layered halls (test_floor_leakage.py; it leaked
    lf / 3 here) the aisles got more air, f was 0.23 / 0.32 instead of 0.28 / 0.37, and the
    band was asserted under 0.3 K (4.25 +- 0.15 K, 6.93 +- 0.24 K); it is under 1 K now."""
    heat, v = racks
    hot = {}
    for containment in ("none", "cold_aisle"):
        bf = buoyant_flow(_hall(v, r, containment, n_layers=3), heat, v)
        hot[containment] = inlet_temp_c(inlet_model_of_problem(bf.problem), heat).max() - SUPPLY_C
        if containment == "cold_aisle":
            f = 1 - bf.problem.enclosure_supply_m3_s.sum() / v.sum()
    hand = f * RISE_K / r
    tol = f * RISE_K * (1 / (1 - f) - 1 / r)
    assert 0 < tol < 1.0
    assert hot["cold_aisle"] == pytest.approx(hand, abs=tol)
    assert hot["cold_aisle"] <= f * RISE_K / (1 - f) + 1e-9
    assert hot["cold_aisle"] < hot["none"] - 2.0
