"""Air balance of contained aisles and rack enclosures (pressure-driven containment leak).

A contained cold aisle (or a rack's own intake enclosure, IBM Blue Vela's airflow-control
enclosures) is one pressure zone. The perforated tiles that open into it deliver what the
raised-floor plenum gives them; the racks in it draw their fans' airflow. The zone's
pressure settles where the two balance through the enclosure's gaps (doors, roof panels,
rack-to-rack and under-rack gaps), whose flow follows the orifice law

    Q_gap = C_d A_gap sqrt(2 |dp| / rho)    (ASHRAE Handbook - Fundamentals, ch. 21)

so the gaps carry the *difference*:

- **zone short of air** (tile supply S below the racks' draw D): the aisle runs below the
  room's pressure and the deficit D - S is drawn in through the gaps, spread over the leak
  area, from the room air next to the enclosure (hot air at the top and ends of the rows);
  every rack of the zone takes the same share (D - S) / D of its intake from the room;
- **zone with air to spare** (S > D): the aisle runs above the room and the surplus spills
  out through the gaps into the room; the racks draw supply air only;
- **at balance** a small share ``leak_fraction`` still reaches the intakes from the room
  (recirculation through rack gaps and cable openings that pressure does not close); it
  is the existing ``containment_leakage_fraction`` and keeps its meaning.

Hence the share of each rack's intake drawn from the room is
``max(leak_fraction, 1 - S / D)`` (:func:`zone_room_share_fraction`). The tiles are taken
to deliver at the room's pressure: a well-sealed aisle held a few pascals below the room
would pull slightly more through its tiles, which this model neglects (it overstates the
deficit by at most the tiles' flow gain, sqrt(1 + dp_aisle / dp_tile) - 1). The same law
sets a hot-aisle enclosure's ducted share: the units take what they can of the racks'
exhaust and the rest spills into the room (units as the "supply", rack exhaust as the
"draw").

References
----------
ASHRAE, *Handbook - Fundamentals* (2021), ch. 21 (duct design): orifice and crack flow,
Q = C_d A sqrt(2 dp / rho).
Radmehr, A., Schmidt, R. R., Karki, K. C., Patankar, S. V., "Distributed leakage flow in
raised-floor data centers", ASME InterPACK 2005, IPACK2005-73273: the floor's seam
leakage grows with plenum pressure and open area and reduces the cooling air reaching the
equipment (here ``floor_leakage_fraction``, bypass that containment does not recover).
DatacenterDynamics, "Containment systems: a disappointing outcome" (opinion; the
"availability of flow", cooling air over IT air): with too little air supplied hot air
enters a contained cold aisle through its doors, with a slight oversupply air comes out.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

AISLE_WIDTH_MAX_M = 3.0
"""Widest cold aisle [m] whose two facing rows are taken as one contained zone (aisles are
two to four 0.6 m tiles wide, 1.2-2.4 m)."""


def zone_room_share_fraction(zone_supply_m3_s, zone_draw_m3_s, leak_fraction):
    """Share of an enclosed zone's intake air that comes from the room [-].

    f = clip(max(l, 1 - S / D), 0, 1), with S [m3/s] the supply air the zone's tiles
    deliver, D [m3/s] the racks' draw (D > 0) and l [-] the leak at balance. Vectorised
    over zones. See the module docstring for the pressure balance behind it.
    """
    s = np.asarray(zone_supply_m3_s, float)
    d = np.asarray(zone_draw_m3_s, float)
    if np.any(d <= 0):
        raise ValueError("an enclosed zone needs a positive rack draw")
    return np.clip(np.maximum(leak_fraction, 1.0 - s / d), 0.0, 1.0)


def enclosure_balance_m3_s(rack_supply_m3_s, rack_draw_m3_s, zone, leak_fraction):
    """Air balance of every enclosed zone, per rack.

    Parameters
    ----------
    rack_supply_m3_s : (R,) supply air the tiles of each rack's enclosure deliver [m3/s]
    rack_draw_m3_s : (R,) air each rack draws [m3/s], > 0
    zone : (R,) int, zone of each rack (0..Z-1), -1 for a rack that is not enclosed
    leak_fraction : share of an intake drawn from the room at balance [-]

    Returns
    -------
    room_share : (R,) share of each rack's intake drawn from the room [-] (1 for racks
        not enclosed): the zone's :func:`zone_room_share_fraction`
    spill_m3_s : (R,) supply air spilling out of the zone through its gaps, attributed to
        the racks in proportion to their draw [m3/s]; in each zone
        S_z = sum (1 - f) D_r + sum spill_r (mass conservation)
    """
    s = np.asarray(rack_supply_m3_s, float)
    d = np.asarray(rack_draw_m3_s, float)
    z = np.asarray(zone, np.int64)
    room_share = np.ones(d.size)
    spill = np.zeros(d.size)
    inside = z >= 0
    if not inside.any():
        return room_share, spill
    n_z = int(z.max()) + 1
    s_z = np.bincount(z[inside], s[inside], n_z)
    d_z = np.bincount(z[inside], d[inside], n_z)
    f_z = zone_room_share_fraction(s_z, d_z, leak_fraction)
    spill_z = np.maximum(s_z - (1.0 - f_z) * d_z, 0.0)
    room_share[inside] = f_z[z[inside]]
    spill[inside] = spill_z[z[inside]] * d[inside] / d_z[z[inside]]
    return room_share, spill


def cold_aisle_zone_index(rack_center_xy_m, rack_intake_dir, rack_width_m, rack_depth_m,
                          aisle_width_max_m=AISLE_WIDTH_MAX_M):
    """Contained cold aisle of every rack (0..Z-1): racks whose intake faces stand side by
    side in one row line, or face each other across an aisle no wider than
    ``aisle_width_max_m`` [m] with overlapping extents, share a zone (connected components).
    Intake directions are snapped to the nearest grid axis, as when rasterised."""
    xy = np.asarray(rack_center_xy_m, float).reshape(-1, 2)
    d = np.asarray(rack_intake_dir, float).reshape(-1, 2)
    n = len(xy)
    if n == 0:
        return np.zeros(0, np.int64)
    ax = np.where(np.abs(d[:, 0]) >= np.abs(d[:, 1]), 0, 1)  # axis the intake faces along
    sign = np.sign(d[np.arange(n), ax])
    face = xy[np.arange(n), ax] + sign * rack_depth_m / 2  # intake face coordinate
    lat = xy[np.arange(n), 1 - ax]  # position along the row
    i, j = np.triu_indices(n, 1)
    same_axis = ax[i] == ax[j]
    gap = np.abs(lat[i] - lat[j])
    tol = 1e-6 + 0.01 * rack_width_m
    row = same_axis & (sign[i] == sign[j]) & (np.abs(face[i] - face[j]) < rack_depth_m / 4) \
        & (gap <= rack_width_m + tol)
    across = (face[j] - face[i]) * sign[i]
    facing = same_axis & (sign[i] == -sign[j]) & (across > 0) & (across <= aisle_width_max_m + tol) \
        & (gap < rack_width_m - tol)
    link = row | facing
    adj = sp.csr_matrix((np.ones(int(link.sum())), (i[link], j[link])), shape=(n, n))
    _, labels = connected_components(adj, directed=False)
    return labels.astype(np.int64)


def enclosure_zone_index(enclosed, containment, rack_center_xy_m, rack_intake_dir, rack_width_m,
                         rack_depth_m):
    """Zone of every rack (0..Z-1, -1 if its intake is open): with ``containment ==
    "cold_aisle"`` the contained aisles (:func:`cold_aisle_zone_index`); otherwise each
    enclosed rack is its own zone (a rack's own intake enclosure, ``rack_enclosed``)."""
    enc = np.asarray(enclosed, bool)
    if containment == "cold_aisle":
        return cold_aisle_zone_index(rack_center_xy_m, rack_intake_dir, rack_width_m, rack_depth_m)
    zone = -np.ones(enc.size, np.int64)
    zone[enc] = np.arange(int(enc.sum()))
    return zone


def contained_aisle_zone_of_cell(zone, intake_cells, rack_intake_dir, rack_cells, solid, cell_m,
                                 aisle_width_max_m=AISLE_WIDTH_MAX_M):
    """Contained cold aisle over every plan cell of the grid (0..Z-1), -1 outside any aisle.

    A contained aisle's footprint is the floor between its two facing rows, over the length
    where they face each other, plus every intake cell of its racks (a rack at a row end that
    faces no rack keeps its own intake cells only). On the grid: from each intake cell of a
    rack in zone z, step along the rack's intake direction (snapped to the nearest grid axis,
    as when rasterised) across at most ``aisle_width_max_m`` [m]; if the first solid cell met
    is a rack of the same zone, every cell crossed lies in the aisle. An obstacle, the wall or
    a rack of another zone ends the walk, and only the intake cell is the zone's.

    Parameters
    ----------
    zone : (R,) int, the contained aisle of each rack (:func:`cold_aisle_zone_index`), -1 if
        the rack's intake is open
    intake_cells : per rack, flat indices (iy * nx + ix) of the room cells in front of its
        intake face
    rack_intake_dir : (R, 2) intake direction of each rack [-]
    rack_cells : per rack, flat indices of its footprint
    solid : (ny, nx) bool, rack bodies and obstacles
    cell_m : grid cell size [m]
    aisle_width_max_m : widest aisle taken as one zone [m] (:data:`AISLE_WIDTH_MAX_M`)

    Returns
    -------
    (ny * nx,) int: the zone whose footprint holds each plan cell, -1 elsewhere. Every tile
    and floor leak inside a zone's footprint delivers into that zone (the enclosure's gaps
    are its doors and roof, not its floor).
    """
    solid = np.asarray(solid, bool)
    ny, nx = solid.shape
    z_r = np.asarray(zone, np.int64)
    out = -np.ones(nx * ny, np.int64)
    racks = np.flatnonzero(z_r >= 0)
    if racks.size == 0:
        return out
    owner = -np.ones(nx * ny, np.int64)  # the rack standing on each plan cell
    sizes = [len(c) for c in rack_cells]
    if sum(sizes):
        owner[np.concatenate([np.asarray(c, np.int64) for c in rack_cells])] = np.repeat(np.arange(len(sizes)), sizes)
    d = np.asarray(rack_intake_dir, float).reshape(-1, 2)[racks]
    ax = np.where(np.abs(d[:, 0]) >= np.abs(d[:, 1]), 0, 1)  # the grid axis the intake faces along
    step = np.zeros((racks.size, 2), np.int64)
    step[np.arange(racks.size), ax] = np.where(d[np.arange(racks.size), ax] > 0, 1, -1)
    n_c = np.array([len(intake_cells[r]) for r in racks])
    start = np.concatenate([np.asarray(intake_cells[r], np.int64) for r in racks])
    z_c = np.repeat(z_r[racks], n_c)
    st = np.repeat(step, n_c, axis=0)
    n_max = int(np.floor(aisle_width_max_m / cell_m + 1e-9))  # widest aisle [cells]
    k = np.arange(n_max + 2)  # k cells crossed before the facing row; n_max + 1: out of reach
    ix = (start % nx)[:, None] + k[None, :] * st[:, :1]
    iy = (start // nx)[:, None] + k[None, :] * st[:, 1:]
    inside = (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
    flat = np.where(inside, iy * nx + ix, 0)
    stop = ~inside | solid.ravel()[flat]
    stop[:, -1] = True
    first = np.argmax(stop, axis=1)  # the first solid cell (or wall) on the walk
    rows = np.arange(start.size)
    met = np.where(inside[rows, first], owner[flat[rows, first]], -1)
    same = (first <= n_max) & (met >= 0) & (z_r[np.maximum(met, 0)] == z_c)
    span = np.where(same, first, 1)  # cells of the aisle from this intake cell (at least itself)
    take = k[None, :] < span[:, None]
    out[flat[take]] = np.broadcast_to(z_c[:, None], take.shape)[take]
    return out


def zone_supply_by_rack_m3_s(cell_supply_m3_s, aisle_zone_of_cell, intake_cells, enclosed, rack_draw_m3_s, zone):
    """Supply air credited to each enclosed rack [m3/s]: what its zone's tiles deliver.

    s_r = s_own,r + S_mid,z D_r / D_z, with s_own,r the delivery of the plan cells in front
    of rack r's intake (its own tiles and floor leak) and S_mid,z that of the zone's floor
    that is no rack's intake cell (a contained aisle's middle, :func:`contained_aisle_zone_of_cell`),
    shared in proportion to each rack's draw D_r [m3/s] over the zone's D_z = sum D_r. Per
    zone sum s_r = sum s_own + S_mid: every tile and leak of the aisle reaches the zone
    balance (:func:`enclosure_balance_m3_s`). A rack's own enclosure has no middle (its zone's
    floor is its intake cells); a rack whose intake is open is credited 0.

    Parameters
    ----------
    cell_supply_m3_s : (nx * ny,) supply each plan cell delivers into an enclosure [m3/s]
    aisle_zone_of_cell : (nx * ny,) int, the contained aisle over each plan cell, -1 elsewhere
    intake_cells : per rack, flat plan indices of the cells in front of its intake face
    enclosed : (R,) bool, racks whose intake is enclosed
    rack_draw_m3_s : (R,) air each rack draws [m3/s], > 0
    zone : (R,) int, the zone of each rack, 0..Z-1, -1 if open
    """
    q = np.asarray(cell_supply_m3_s, float)
    enc = np.asarray(enclosed, bool)
    s = np.array([q[intake_cells[r]].sum() if enc[r] else 0.0 for r in range(enc.size)])
    z = np.asarray(zone, np.int64)
    inside = z >= 0
    mid = np.array(aisle_zone_of_cell, np.int64)
    if not inside.any() or not (mid >= 0).any():
        return s
    mid[np.concatenate([np.asarray(c, np.int64) for c in intake_cells])] = -1  # the middle only
    n_z = int(z.max()) + 1
    s_mid = np.bincount(mid[mid >= 0], q[mid >= 0], n_z)
    d = np.asarray(rack_draw_m3_s, float)
    d_z = np.bincount(z[inside], d[inside], n_z)
    s[inside] += s_mid[z[inside]] * d[inside] / d_z[z[inside]]
    return s
