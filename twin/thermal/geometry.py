"""Hall geometry (plan view) and its rasterisation onto a uniform grid.

The hall is a rectangle [0, width_m] x [0, depth_m] seen from above, with a raised-floor
supply plenum under it. Cells are squares of side ``cell_m``; cell (iy, ix) has its
centre at ((ix + 0.5) * cell_m, (iy + 0.5) * cell_m) and flat index iy * nx + ix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONTAINMENT_KINDS = ("none", "cold_aisle", "hot_aisle")


@dataclass(frozen=True, kw_only=True, eq=False)
class HallGeometry:
    """Plan view of a data hall with racks, cooling units, tiles and obstacles.

    Racks stand with their intake face towards ``rack_intake_dir`` (unit vector, snapped
    to the nearest grid axis when rasterised); the exhaust face is the opposite side.
    Cooling units (CRAH) draw room air at their position (return, spread over a disc of
    radius ``cooling_return_radius_m``) and blow the same airflow, cooled to
    ``cooling_supply_temp_c``, into the raised-floor plenum there. The plenum feeds the
    room through perforated tiles (``tile_xy_m``, 0.6 m squares; by default one tile in
    front of each rack's intake) and through distributed floor leakage.

    containment:
      - ``"none"``: racks draw room air at their intake face;
      - ``"cold_aisle"``: rack intakes draw from the plenum through the contained aisle,
        except max(``containment_leakage_fraction``, the aisle's deficit) of their
        airflow, drawn from the room (:mod:`twin.thermal.containment`: the aisle's tiles
        deliver what the plenum gives them; a surplus spills into the room);
      - ``"hot_aisle"``: rack exhausts are ducted to a common return plenum feeding the
        cooling units, except the leakage fraction, which escapes into the room.
    ``rack_enclosed[r]`` gives one rack the cold-side enclosure on its own (IBM Blue
    Vela's custom airflow-control enclosures, arXiv 2407.05467).
    Obstacles (columns, low cable trays) block room airflow in their rectangles.

    Model parameters (defaults documented in :mod:`twin.thermal.solver`):
    ``floor_leakage_fraction`` share of plenum air leaving through cable cut-outs and
    gaps rather than tiles at uniform plenum pressure (raised floors leak 5-15 %);
    ``plenum_spread_m`` decay length of the plenum pressure away from a cooling unit;
    ``eddy_diffusivity_m2_s`` effective horizontal mixing of room air;
    ``advection_scheme`` "auto" (default: "quick" in plan view, where its low numerical
    diffusion keeps the hottest inlet within 1 K under grid refinement; "power_law" with
    layers, where both agree within 0.1 K and power-law factorises 2-3x faster),
    "quick" or "power_law".
    ``supply`` "raised_floor" (default) or "overhead": ducted overhead supply through
    diffusers at the tile positions, every diffuser blowing alike (no floor leakage).
    ``rack_bypass_fraction`` share of each rack's server airflow that is its own exhaust
    drawn back inside the rack through open U spaces (0 = fully blanked; blanking
    panels are what bring it to 0).
    ``n_layers`` > 1 splits the room height into layers (3-D): racks are solid up to
    ``rack_height_m`` (42U is about 2.0 m) and breathe evenly over those layers, air can
    pass over them above, tiles feed the bottom layer, cooling units draw their return
    from the top layer (overhead diffusers blow into the top layer). 1 = plan view.
    """

    width_m: float
    depth_m: float
    height_m: float
    rack_center_xy_m: np.ndarray
    rack_intake_dir: np.ndarray
    rack_width_m: float = 0.6
    rack_depth_m: float = 1.2
    cooling_xy_m: np.ndarray
    cooling_airflow_m3_s: np.ndarray
    cooling_supply_temp_c: np.ndarray
    cooling_capacity_w: np.ndarray
    containment: str = "none"
    rack_enclosed: np.ndarray | None = None
    obstacles_xyxy_m: np.ndarray | None = None
    cell_m: float = 0.3
    # --- model parameters beyond the engine's interface (all defaulted) ---
    tile_xy_m: np.ndarray | None = None
    containment_leakage_fraction: float = 0.0
    floor_leakage_fraction: float = 0.1
    plenum_spread_m: float = 30.0
    eddy_diffusivity_m2_s: float = 0.1
    cooling_return_radius_m: float = 0.6
    advection_scheme: str = "auto"
    supply: str = "raised_floor"
    rack_bypass_fraction: float = 0.0
    n_layers: int = 1
    rack_height_m: float = 2.0
    # wall-jet supply (twin.thermal.jets); None = every unit supplies as ``supply`` says
    cooling_outlet_z_m: np.ndarray | None = None  # (C, 2) outlet bottom / top [m]; a NaN row: that unit as ``supply``
    cooling_outlet_width_m: np.ndarray | None = None  # (C,) outlet width [m]
    cooling_throw_dir: np.ndarray | None = None  # (C, 2) direction the outlet blows (snapped to a grid axis)

    def __post_init__(self):
        for name in ("width_m", "depth_m", "height_m", "cell_m", "rack_width_m", "rack_depth_m"):
            if not getattr(self, name) > 0:
                raise ValueError(f"HallGeometry.{name} must be positive, got {getattr(self, name)}")
        arr = {}
        for name in ("rack_center_xy_m", "rack_intake_dir", "cooling_xy_m"):
            a = np.asarray(getattr(self, name), dtype=float).reshape(-1, 2)
            arr[name] = a
        for name in ("cooling_airflow_m3_s", "cooling_supply_temp_c", "cooling_capacity_w"):
            arr[name] = np.asarray(getattr(self, name), dtype=float).reshape(-1)
        r = len(arr["rack_center_xy_m"])
        c = len(arr["cooling_xy_m"])
        if len(arr["rack_intake_dir"]) != r:
            raise ValueError("rack_intake_dir must have one row per rack")
        for name in ("cooling_airflow_m3_s", "cooling_supply_temp_c", "cooling_capacity_w"):
            if len(arr[name]) != c:
                raise ValueError(f"{name} must have one entry per cooling unit ({c})")
        norm = np.linalg.norm(arr["rack_intake_dir"], axis=1)
        if np.any(norm == 0):
            raise ValueError("rack_intake_dir rows must be non-zero vectors")
        if self.containment not in CONTAINMENT_KINDS:
            raise ValueError(f"containment must be one of {CONTAINMENT_KINDS}, got {self.containment!r}")
        if not 0.0 <= self.containment_leakage_fraction <= 1.0:
            raise ValueError("containment_leakage_fraction must be in [0, 1]")
        if int(self.n_layers) != self.n_layers or self.n_layers < 1:
            raise ValueError(f"n_layers must be a positive integer, got {self.n_layers}")
        if not self.rack_height_m > 0:
            raise ValueError("rack_height_m must be positive")
        if self.advection_scheme not in ("auto", "quick", "power_law"):
            raise ValueError(f"advection_scheme must be 'auto', 'quick' or 'power_law', got {self.advection_scheme!r}")
        if self.supply not in ("raised_floor", "overhead"):
            raise ValueError(f"supply must be 'raised_floor' or 'overhead', got {self.supply!r}")
        if not 0.0 <= self.rack_bypass_fraction < 1.0:
            raise ValueError("rack_bypass_fraction must be in [0, 1)")
        if not 0.0 < self.floor_leakage_fraction < 1.0:
            raise ValueError("floor_leakage_fraction must be in (0, 1)")
        if self.rack_enclosed is not None:
            enc = np.asarray(self.rack_enclosed, dtype=bool).reshape(-1)
            if len(enc) != r:
                raise ValueError("rack_enclosed must have one entry per rack")
            object.__setattr__(self, "rack_enclosed", enc)
        if self.obstacles_xyxy_m is not None:
            object.__setattr__(self, "obstacles_xyxy_m", np.asarray(self.obstacles_xyxy_m, float).reshape(-1, 4))
        if self.tile_xy_m is not None:
            object.__setattr__(self, "tile_xy_m", np.asarray(self.tile_xy_m, float).reshape(-1, 2))
        for name, a in arr.items():
            object.__setattr__(self, name, a)
        if self.cooling_outlet_z_m is not None:
            jet = {"cooling_outlet_z_m": np.asarray(self.cooling_outlet_z_m, float).reshape(c, 2),
                   "cooling_outlet_width_m": np.asarray(self.cooling_outlet_width_m, float).reshape(c),
                   "cooling_throw_dir": np.asarray(self.cooling_throw_dir, float).reshape(c, 2)}
            for name, a in jet.items():
                object.__setattr__(self, name, a)

    @property
    def scheme(self) -> str:
        """The advection scheme in use ("auto" resolved)."""
        if self.advection_scheme != "auto":
            return self.advection_scheme
        return "quick" if self.n_layers == 1 else "power_law"

    @property
    def n_racks(self) -> int:
        return len(self.rack_center_xy_m)

    @property
    def n_cooling(self) -> int:
        return len(self.cooling_xy_m)

    @property
    def nx(self) -> int:
        return max(1, int(round(self.width_m / self.cell_m)))

    @property
    def ny(self) -> int:
        return max(1, int(round(self.depth_m / self.cell_m)))


def _axis_dir(d: np.ndarray) -> tuple[int, int]:
    """Snap a direction to the nearest grid axis: returns (dx, dy) in {-1, 0, 1}."""
    if abs(d[0]) >= abs(d[1]):
        return (1 if d[0] > 0 else -1, 0)
    return (0, 1 if d[1] > 0 else -1)


def _index_range(lo_m: float, hi_m: float, cell: float, n: int) -> np.ndarray:
    """Indices of cells whose centres lie in [lo_m, hi_m) (at least the centre's cell)."""
    eps = 1e-9
    i0 = int(np.ceil(lo_m / cell - 0.5 - eps))
    i1 = int(np.ceil(hi_m / cell - 0.5 - eps)) - 1
    if i1 < i0:
        mid = int(np.floor(0.5 * (lo_m + hi_m) / cell))
        i0 = i1 = mid
    return np.arange(max(i0, 0), min(i1, n - 1) + 1)


@dataclass(frozen=True)
class HallGrid:
    """Rasterised hall: solid mask and per-rack / per-unit / per-tile cell lists."""

    nx: int
    ny: int
    cell_m: float
    solid: np.ndarray  # (ny, nx) bool: rack bodies and obstacles (room layer)
    rack_mask: np.ndarray  # (ny, nx) bool: rack bodies
    obstacle_mask: np.ndarray  # (ny, nx) bool: obstacles
    rack_cells: list  # per rack: flat indices of its footprint
    intake_cells: list  # per rack: flat indices of room cells in front of the intake face
    exhaust_cells: list  # per rack: flat indices of room cells behind the exhaust face
    cooling_cells: list  # per unit: flat indices of its return/supply disc
    tile_cells: list  # per tile: flat indices of the plenum cells it opens


def rasterise(g: HallGeometry) -> HallGrid:
    """Put racks, obstacles, cooling units and tiles on the grid of ``g``."""
    nx, ny, h = g.nx, g.ny, g.cell_m
    solid = np.zeros((ny, nx), dtype=bool)
    owner = -np.ones((ny, nx), dtype=np.int64)
    rack_cells, faces = [], []
    for r in range(g.n_racks):
        cx, cy = g.rack_center_xy_m[r]
        dx, dy = _axis_dir(g.rack_intake_dir[r])
        if dx != 0:  # depth along x
            half_x, half_y = g.rack_depth_m / 2, g.rack_width_m / 2
        else:
            half_x, half_y = g.rack_width_m / 2, g.rack_depth_m / 2
        ix = _index_range(cx - half_x, cx + half_x, h, nx)
        iy = _index_range(cy - half_y, cy + half_y, h, ny)
        if not (0 <= cx <= g.width_m and 0 <= cy <= g.depth_m) or ix.size == 0 or iy.size == 0:
            raise ValueError(f"rack {r} at ({cx:.2f}, {cy:.2f}) m lies outside the hall")
        sub = owner[np.ix_(iy, ix)]
        if np.any(sub >= 0):
            raise ValueError(f"rack {r} overlaps rack {int(sub[sub >= 0][0])}")
        owner[np.ix_(iy, ix)] = r
        solid[np.ix_(iy, ix)] = True
        rack_cells.append((iy[:, None] * nx + ix[None, :]).ravel())
        faces.append((ix, iy, dx, dy))
    rack_mask = solid.copy()
    obstacle_mask = np.zeros_like(solid)
    if g.obstacles_xyxy_m is not None:
        for x0, y0, x1, y1 in g.obstacles_xyxy_m:
            ix = _index_range(min(x0, x1), max(x0, x1), h, nx)
            iy = _index_range(min(y0, y1), max(y0, y1), h, ny)
            obstacle_mask[np.ix_(iy, ix)] = True
    solid |= obstacle_mask

    def face_cells(r, ix, iy, dx, dy, sign, what):
        if dx != 0:
            col = ix[-1] + 1 if dx * sign > 0 else ix[0] - 1
            if not 0 <= col < nx:
                raise ValueError(f"rack {r} {what} face is against the hall wall")
            cells = iy * nx + col
        else:
            row = iy[-1] + 1 if dy * sign > 0 else iy[0] - 1
            if not 0 <= row < ny:
                raise ValueError(f"rack {r} {what} face is against the hall wall")
            cells = row * nx + ix
        if np.any(solid.ravel()[cells]):
            raise ValueError(f"rack {r} {what} face is blocked by another rack or an obstacle")
        return cells

    intake_cells = [face_cells(r, *faces[r], +1, "intake") for r in range(g.n_racks)]
    exhaust_cells = [face_cells(r, *faces[r], -1, "exhaust") for r in range(g.n_racks)]

    yc = (np.arange(ny) + 0.5) * h
    xc = (np.arange(nx) + 0.5) * h
    cooling_cells = []
    for c in range(g.n_cooling):
        px, py = g.cooling_xy_m[c]
        d2 = (xc[None, :] - px) ** 2 + (yc[:, None] - py) ** 2
        mask = (d2 <= g.cooling_return_radius_m**2) & ~solid
        if not mask.any():
            cx_i = min(max(int(px // h), 0), nx - 1)
            cy_i = min(max(int(py // h), 0), ny - 1)
            if solid[cy_i, cx_i]:
                raise ValueError(f"cooling unit {c} stands inside a rack or obstacle")
            mask[cy_i, cx_i] = True
        cooling_cells.append(np.flatnonzero(mask.ravel()))

    tile_centres = g.tile_xy_m if g.tile_xy_m is not None else default_tile_xy_m(g)
    tile_cells = []
    for px, py in tile_centres:
        ix = _index_range(px - 0.3, px + 0.3, h, nx)
        iy = _index_range(py - 0.3, py + 0.3, h, ny)
        cells = (iy[:, None] * nx + ix[None, :]).ravel()
        cells = cells[~solid.ravel()[cells]]
        tile_cells.append(cells)
    return HallGrid(nx, ny, h, solid, rack_mask, obstacle_mask, rack_cells, intake_cells, exhaust_cells,
                    cooling_cells, tile_cells)


def default_tile_xy_m(g: HallGeometry) -> np.ndarray:
    """Centres of the default perforated tiles [m]: one 0.6 m tile against the intake
    face of every rack whose intake is not enclosed (standard cold-aisle practice)."""
    enclosed = _intake_enclosed(g)
    tc = []
    for r in range(g.n_racks):
        if enclosed[r]:
            continue
        dx, dy = _axis_dir(g.rack_intake_dir[r])
        cx, cy = g.rack_center_xy_m[r]
        off = g.rack_depth_m / 2 + 0.3
        tc.append((cx + dx * off, cy + dy * off))
    return np.asarray(tc, float).reshape(-1, 2)


def _intake_enclosed(g: HallGeometry) -> np.ndarray:
    """(R,) bool: racks whose intake is enclosed and fed from the plenum."""
    enc = np.zeros(g.n_racks, dtype=bool)
    if g.rack_enclosed is not None:
        enc |= g.rack_enclosed
    if g.containment == "cold_aisle":
        enc[:] = True
    return enc
