"""Wall-jet supply of a cooling unit: air that enters the room at a height and carries its
momentum along its throw direction (issue 12).

The room model of :mod:`twin.thermal.solver` is a potential flow: it has no momentum, so
air supplied at a point spreads from there by continuity alone. Wall coolers and in-row
units blow horizontal jets across an aisle onto the rack faces. A jet keeps its identity
over its throw: it advances along its axis, widens at a fixed angle and entrains room air
in proportion to the distance travelled, until it meets a solid face (a rack front, an
obstacle, a wall) or slows to the room's own air speed. This module carries that
integral jet to where it ends and hands its air, supply plus entrained room air, to the
room there; the potential flow takes over from that point.

Laws (free turbulent jet from a wall outlet of core area A_0 [m2], outlet velocity
v_0 = V_0 / A_0; ASHRAE Handbook - Fundamentals, ch. 20 "Space Air Diffusion",
"Principles of jet behavior", after Koestel 1955 and Tuve 1953):

- centre-line velocity, main region: v_x / v_0 = K sqrt(A_0) / x (no faster than v_0 in
  the core, x < K sqrt(A_0));
- volume flow with entrained air: Q_x / Q_0 = 2 x / (K sqrt(A_0)) (never below Q_0);
- throw to the terminal velocity v_T: x_T = K sqrt(A_0) v_0 / v_T;
- spread: an isothermal jet widens with an included angle of 20-24 deg (Jones, *Air
  Conditioning Engineering*, 5th ed., 2001, ch. "Air distribution"; ASHRAE ch. 20).

K, the throw (centre-line velocity) constant, is about 5-6 for free openings and grilles in
ASHRAE's table of centre-line velocity constants; 6.2 is used. None of these is fitted to a
room.

Racks along a jet's flanks (a unit blowing along an aisle): where the jet's cross-section
covers rack intake cells before it ends, those intakes take their air from the jet, up to
what the jet carries there, with the jet's mixture at that point (its supply and the room
air it has entrained so far); the jet carries on with the rest, and the rest entrains in
proportion (Q_x = f Q_free(x), f the share not yet given away). Volume and heat are
conserved delivery by delivery; with no intake under the jet before its end nothing changes. Where a jet meets a rack face inside its core, x < K sqrt(A_0) / 2 (POD 2: 1.2-1.6 m
against 3.3-4.1 m for K = 5-6.2), it has entrained nothing and K does not enter at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["JET_SPREAD_HALF_ANGLE_DEG", "JET_THROW_CONSTANT", "JET_TERMINAL_VELOCITY_M_S", "WallJet",
           "hall_wall_jets", "jet_centreline_velocity_m_s", "jet_throw_m", "jet_volume_flow_m3_s", "wall_jet_cells"]

JET_THROW_CONSTANT = 6.2
"""K of v_x / v_0 = K sqrt(A_0) / x [-] (ASHRAE Fundamentals ch. 20: about 5-6 for free
openings and grilles)."""
JET_SPREAD_HALF_ANGLE_DEG = 11.0
"""Half of a free jet's 20-24 deg included angle [deg]."""
JET_TERMINAL_VELOCITY_M_S = 0.25
"""Terminal velocity that ends a jet's throw [m/s] (ASHRAE's 50 fpm throw, about the
air speed of a room's own circulation)."""


def jet_centreline_velocity_m_s(x_m, outlet_airflow_m3_s, outlet_area_m2, throw_constant=JET_THROW_CONSTANT):
    """Centre-line velocity of a free jet [m/s] at distance ``x_m`` [m] from its outlet:
    v_x = v_0 min(1, K sqrt(A_0) / x), v_0 = V_0 / A_0 (ASHRAE Fundamentals ch. 20)."""
    x = np.asarray(x_m, float)
    v0 = float(outlet_airflow_m3_s) / float(outlet_area_m2)
    with np.errstate(divide="ignore"):
        ratio = np.where(x > 0, throw_constant * np.sqrt(outlet_area_m2) / np.maximum(x, 1e-12), 1.0)
    return v0 * np.minimum(1.0, ratio)


def jet_volume_flow_m3_s(x_m, outlet_airflow_m3_s, outlet_area_m2, throw_constant=JET_THROW_CONSTANT):
    """Volume flow of a free jet with its entrained air [m3/s] at distance ``x_m`` [m]:
    Q_x = Q_0 max(1, 2 x / (K sqrt(A_0))) (ASHRAE Fundamentals ch. 20)."""
    x = np.asarray(x_m, float)
    return float(outlet_airflow_m3_s) * np.maximum(1.0, 2.0 * x / (throw_constant * np.sqrt(outlet_area_m2)))


def jet_throw_m(outlet_airflow_m3_s, outlet_area_m2, terminal_velocity_m_s=JET_TERMINAL_VELOCITY_M_S,
                throw_constant=JET_THROW_CONSTANT):
    """Throw [m]: distance at which the centre-line velocity falls to ``terminal_velocity_m_s``,
    x_T = K sqrt(A_0) v_0 / v_T (never shorter than the core, K sqrt(A_0))."""
    v0 = float(outlet_airflow_m3_s) / float(outlet_area_m2)
    core = throw_constant * np.sqrt(outlet_area_m2)
    return float(core * max(1.0, v0 / terminal_velocity_m_s))


@dataclass(frozen=True)
class WallJet:
    """Where one unit's jet ends on the layered grid (flat cell indices iz * ny * nx + iy * nx + ix).

    The supply V_0 and the entrained air enter the room at ``end_cells`` (weights sum to 1);
    the entrained air is drawn from ``path_cells`` (weights sum to 1) along the way. With
    racks fed along the flanks, ``end_cells`` also holds their intake cells, ``end_weight``
    is each cell's share of the supply and ``mix[e, p]`` the share of the entrained air
    drawn at path cell p that enters at end cell e (sums to 1); ``mix`` None: the
    entrained air enters like the supply (end_weight x path_weight)."""

    end_cells: np.ndarray
    end_weight: np.ndarray
    path_cells: np.ndarray
    path_weight: np.ndarray
    entrained_m3_s: float
    reach_m: float  # distance from the outlet to where the jet ends [m]
    throw_m: float  # free throw to the terminal velocity [m]
    mix: np.ndarray | None = None  # (end, path) entrained air from path cell p entering at end cell e [-]
    side_cells: np.ndarray | None = None  # intake cells fed along the flanks (a subset of end_cells)
    side_m3_s: np.ndarray | None = None  # air each of them took from the jet [m3/s]

    def end_source_m3_s(self, airflow_m3_s: float) -> np.ndarray:
        """Air entering the room at each end cell [m3/s] (supply + entrained)."""
        if self.mix is None:
            return (airflow_m3_s + self.entrained_m3_s) * self.end_weight
        return airflow_m3_s * self.end_weight + self.entrained_m3_s * self.mix.sum(axis=1)

    def end_path_m3_s(self) -> np.ndarray:
        """(end, path) entrained air drawn at each path cell that enters at each end cell [m3/s]."""
        if self.mix is None:
            return -(-self.entrained_m3_s * self.end_weight[:, None] * self.path_weight[None, :])
        return self.entrained_m3_s * self.mix


def _layer_weights(z_lo: float, z_hi: float, dz: float, nz: int) -> np.ndarray:
    """Share of the height range [z_lo, z_hi] in each layer (sums to 1)."""
    lo, hi = np.arange(nz) * dz, (np.arange(nz) + 1) * dz
    w = np.clip(np.minimum(hi, z_hi) - np.maximum(lo, z_lo), 0.0, None)
    return w / w.sum()


def wall_jet_cells(nx: int, ny: int, nz: int, cell_m: float, height_m: float, fluid3: np.ndarray, *,
                   outlet_xy_m, direction, outlet_z_m, outlet_width_m: float, airflow_m3_s: float,
                   throw_constant: float = JET_THROW_CONSTANT,
                   spread_half_angle_deg: float = JET_SPREAD_HALF_ANGLE_DEG,
                   terminal_velocity_m_s: float = JET_TERMINAL_VELOCITY_M_S,
                   intake_demand_m3_s: np.ndarray | None = None) -> WallJet:
    """March a wall jet from its outlet along its (grid-snapped) direction.

    Stations are the cells along the axis from the outlet's cell, x = k cell_m. At each
    the jet covers the cells within its half-width b = w_0 / 2 + x tan(alpha) across the
    axis and the layers overlapping [z_0 - x tan(alpha), z_1 + x tan(alpha)] (clipped to the
    room). It ends at the last station before the axis meets a solid cell (rack, obstacle)
    or a wall in any layer it covers, or at its throw x_T, whichever comes first; there its
    volume flow Q_x (supply plus entrained air) enters the room over its cross-section,
    weighted by each layer's share of the height range. The entrained air Q_x - Q_0 is
    taken from the cells it passed on its axis (each covered layer), in proportion to dQ/dx,
    and carried at their temperature to the end (energy is conserved; the axis cells alone
    keep the operator sparse: every entraining cell couples to every end cell).
    ``intake_demand_m3_s`` (nz * ny * nx, optional): air each rack intake cell draws; where
    a station before the end covers such cells, they take it from the jet (module docstring).
    """
    d = np.asarray(direction, float)
    step = (1 if d[0] > 0 else -1, 0) if abs(d[0]) >= abs(d[1]) else (0, 1 if d[1] > 0 else -1)
    side = (-step[1], step[0])
    n = nx * ny
    dz = height_m / nz
    z0, z1 = float(outlet_z_m[0]), float(outlet_z_m[1])
    area = outlet_width_m * (z1 - z0)
    if not (outlet_width_m > 0 and z1 > z0 >= 0 and z1 <= height_m):
        raise ValueError(f"wall-jet outlet needs a width > 0 and 0 <= z_from < z_to <= room height, "
                         f"got width {outlet_width_m}, z {z0}-{z1} m")
    tan_a = np.tan(np.radians(spread_half_angle_deg))
    throw = jet_throw_m(airflow_m3_s, area, terminal_velocity_m_s, throw_constant)
    ix0 = min(max(int(outlet_xy_m[0] // cell_m), 0), nx - 1)
    iy0 = min(max(int(outlet_xy_m[1] // cell_m), 0), ny - 1)
    fluid = np.asarray(fluid3, bool).reshape(nz, ny, nx)

    def station(k):
        x = k * cell_m
        b = 0.5 * outlet_width_m + x * tan_a
        m = int(np.floor(b / cell_m + 0.5 - 1e-9))
        offs = np.arange(-m, m + 1)
        cx, cy = ix0 + k * step[0], iy0 + k * step[1]
        px, py = cx + offs * side[0], cy + offs * side[1]
        ok = (px >= 0) & (px < nx) & (py >= 0) & (py < ny)
        lw = _layer_weights(max(0.0, z0 - x * tan_a), min(height_m, z1 + x * tan_a), dz, nz)
        return x, cx, cy, px[ok], py[ok], lw

    def blocked(cx, cy, lw):
        if not (0 <= cx < nx and 0 <= cy < ny):
            return True
        return bool(np.any(~fluid[lw > 0, cy, cx]))

    stations = []
    k = 0
    while True:
        s = station(k)
        if blocked(s[1], s[2], s[5]):
            break
        stations.append(s)
        if s[0] >= throw:
            break
        k += 1
    if not stations:
        raise ValueError(f"wall-jet outlet at ({outlet_xy_m[0]:.2f}, {outlet_xy_m[1]:.2f}) m blows into a solid cell")

    def cells_of(s, axis_only=False):
        _, cx, cy, px, py, lw = s
        if axis_only:
            px, py = np.array([cx]), np.array([cy])
        layers = np.flatnonzero(lw > 0)
        flat = (layers[:, None] * n + (py * nx + px)[None, :]).ravel()
        w = np.repeat(lw[layers], px.size) / px.size
        keep = fluid.ravel()[flat]
        return flat[keep], w[keep]

    end, ew = cells_of(stations[-1])
    reach = stations[-1][0]
    q = jet_volume_flow_m3_s([s[0] for s in stations], airflow_m3_s, area, throw_constant)
    entrained = float(q[-1] - airflow_m3_s)
    pc, pw = [np.zeros(0, np.int64)], [np.zeros(0)]
    for j in range(len(stations) - 1):
        dq = float(q[j + 1] - q[j])
        if dq > 0:
            c, w = cells_of(stations[j], axis_only=True)
            pc.append(c)
            pw.append(w / w.sum() * dq)
    if intake_demand_m3_s is not None:
        side = _fed_along_flanks(stations, cells_of, q, airflow_m3_s, np.asarray(intake_demand_m3_s, float))
        if side is not None:
            cells, weight, path, path_weight, ent, mix, side_cells, side_m3 = side
            return WallJet(cells, weight, path, path_weight, ent, reach, throw, mix, side_cells, side_m3)
    path, path_w = np.concatenate(pc), np.concatenate(pw)
    if entrained > 0 and path_w.sum() > 0:
        path_w = path_w / path_w.sum()
    else:
        entrained, path, path_w = 0.0, np.zeros(0, np.int64), np.zeros(0)
    return WallJet(end, ew / ew.sum(), path, path_w, entrained, float(reach), throw)


def _fed_along_flanks(stations, cells_of, q_free, airflow_m3_s, demand):
    """March the jet again, giving air to the intake cells its cross-section covers before
    the end (each takes its demand, at most what the jet carries, with the jet's mixture);
    None if no station before the end covers a demanding cell. Returns (end_cells,
    end_weight, path_cells, path_weight, entrained_m3_s, mix, side_cells, side_m3_s)."""
    crossings = [cells_of(s)[0] for s in stations[:-1]]
    if not any(demand[c].sum() > 0 for c in crossings):
        return None
    axis = [cells_of(s, axis_only=True) for s in stations[:-1]]
    path = np.concatenate([c for c, _ in axis]) if axis else np.zeros(0, np.int64)
    ent = np.zeros(path.size)  # entrained air the jet carries, by the path cell it came from [m3/s]
    off = np.cumsum([0] + [c.size for c, _ in axis])
    sup, f = float(airflow_m3_s), 1.0
    cells, s_sup, s_ent = [], [], []
    for j, cross in enumerate(crossings):
        if j > 0:  # entrainment between stations j-1 and j, from station j-1's axis cells
            dq = f * float(q_free[j] - q_free[j - 1])
            if dq > 0:
                w = axis[j - 1][1]
                ent[off[j - 1]:off[j]] += dq * w / w.sum()
        d = demand[cross]
        want, carried = float(d.sum()), sup + float(ent.sum())
        if want <= 0 or carried <= 0:
            continue
        give = min(want, carried)
        share = give / carried
        take = d[d > 0] / want * give  # per fed cell [m3/s]
        cells.append(cross[d > 0])
        s_sup.append(take * sup / carried)
        s_ent.append(take[:, None] * ent[None, :] / carried)
        sup, ent, f = sup * (1 - share), ent * (1 - share), f * (1 - share)
    if len(stations) > 1:  # last stretch before the end
        dq = f * float(q_free[-1] - q_free[-2])
        if dq > 0:
            w = axis[-1][1]
            ent[off[-2]:off[-1]] += dq * w / w.sum()
    side_cells, side_m3 = np.concatenate(cells), np.concatenate([a + b.sum(1) for a, b in zip(s_sup, s_ent, strict=True)])
    end, ew = cells_of(stations[-1])
    ew = ew / ew.sum()
    all_cells = np.concatenate([side_cells, end])
    supply = np.concatenate(s_sup + [sup * ew])
    ent_in = np.vstack(s_ent + [ew[:, None] * ent[None, :]])
    total = float(ent_in.sum())
    keep = ent_in.sum(axis=0) > 0
    if total > 0:
        path_w, mix = ent_in[:, keep].sum(axis=0) / total, ent_in[:, keep] / total
    else:
        path_w, mix = np.zeros(0), np.zeros((all_cells.size, 0))
    return (all_cells, supply / float(airflow_m3_s), path[keep], path_w, total, mix, side_cells, side_m3)


def hall_wall_jets(geometry, nx: int, ny: int, fluid3: np.ndarray, cooling_airflow_m3_s,
                   intake_demand_m3_s: np.ndarray | None = None) -> list[WallJet | None]:
    """The wall jet of every cooling unit of a :class:`twin.thermal.geometry.HallGeometry`
    (None for a unit without an outlet height, or not running): each outlet at the unit's
    position, blowing its airflow along ``cooling_throw_dir``. ``intake_demand_m3_s``
    (nz * ny * nx): air each rack intake cell draws; racks along a jet's flanks take it
    from the jet (units in order; an intake fed by one jet is not fed again)."""
    g = geometry
    v = np.asarray(cooling_airflow_m3_s, float)
    if g.cooling_outlet_z_m is None:
        return [None] * g.n_cooling
    demand = None if intake_demand_m3_s is None else np.array(intake_demand_m3_s, float)
    out: list[WallJet | None] = []
    for c in range(g.n_cooling):
        z = g.cooling_outlet_z_m[c]
        if np.isnan(z).any() or v[c] <= 0:
            out.append(None)
            continue
        out.append(wall_jet_cells(nx, ny, int(g.n_layers), g.cell_m, g.height_m, fluid3,
                                  outlet_xy_m=g.cooling_xy_m[c], direction=g.cooling_throw_dir[c], outlet_z_m=z,
                                  outlet_width_m=float(g.cooling_outlet_width_m[c]), airflow_m3_s=float(v[c]),
                                  intake_demand_m3_s=demand))
        jet = out[-1]
        if demand is not None and jet is not None and jet.side_cells is not None and jet.side_m3_s is not None:
            np.subtract.at(demand, jet.side_cells, jet.side_m3_s)
            np.clip(demand, 0.0, None, out=demand)
    return out
