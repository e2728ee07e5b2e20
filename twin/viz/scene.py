"""The 3-D hall scene in pyvista: floor, walls, racks, cooling units, containment,
enclosures, obstacles, a temperature slice and airflow streamlines.

:func:`build_scene` turns a :class:`~twin.viz.snapshot.Snapshot` into a named
``pyvista.MultiBlock`` (what ``--out hall.vtm`` writes, so ParaView opens the same
scene); :func:`add_scene` draws those blocks into a Plotter with colours and scalar bars.
Halls of a multi-hall site stand side by side along x, ``HALL_GAP_M`` apart.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np

from .snapshot import ColorScale, Snapshot

if TYPE_CHECKING:
    from pyvista.plotting._typing import ScalarBarArgs

if not os.environ.get("DISPLAY") and "VTK_DEFAULT_OPENGL_WINDOW" not in os.environ:
    # headless: go straight to EGL (OSMesa if EGL is missing) instead of trying X first
    os.environ["VTK_DEFAULT_OPENGL_WINDOW"] = "vtkEGLRenderWindow"

import pyvista as pv  # noqa: E402

RACK_HEIGHT_M = 2.0
"""Drawn rack height [m]: a 42U cabinet (42 x 44.45 mm = 1.87 m of rails, EIA-310) with plinth and top."""
COOLING_SIZE_M = (1.0, 1.0, 1.9)
"""Drawn cooling unit (CRAH/CRAC) footprint and height [m]."""
HALL_GAP_M = 4.0
"""Gap between halls drawn side by side [m]."""
SLICE_HEIGHT_M = 1.0
"""Height of the drawn temperature slice [m] (the plan model is depth-averaged)."""
ENCLOSURE_DEPTH_M = 0.6
"""Depth of a drawn rack enclosure / half of a contained aisle in front of the rack [m]."""
OBSTACLE_HEIGHT_M = {"cable_tray": 0.4, "other": 1.5}
"""Drawn height of low obstacles [m]; columns and walls reach the ceiling."""
SLICE_CMAP: Final = "YlOrRd"
"""Colour map of the room-air temperature slice (distinct from the racks' map)."""
WALL_HEIGHT_M = 0.3
"""Drawn height of the solid part of the hall walls [m] (the rest is an outline, so the
view is not blocked)."""

PART_CODES = {"floor": 0, "walls": 1, "racks": 2, "rack_slots": 3, "cooling_units": 4,
              "enclosures": 5, "containment": 6, "obstacles": 7, "temperature_slice": 8,
              "streamlines": 9, "labels": 10}


# --------------------------------------------------------------------------- primitives
def boxes(bounds) -> pv.UnstructuredGrid:
    """One hexahedron per row of ``bounds`` (N, 6): xmin, xmax, ymin, ymax, zmin, zmax [m]."""
    b = np.asarray(bounds, float).reshape(-1, 6)
    x0, x1, y0, y1, z0, z1 = b.T
    corners = np.stack([
        np.column_stack(c) for c in (
            (x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0),
            (x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1))
    ], axis=1)  # (N, 8, 3)
    n = len(b)
    cells = np.hstack([np.full((n, 1), 8), np.arange(8 * n).reshape(n, 8)]).ravel()
    types = np.full(n, pv.CellType.HEXAHEDRON, np.uint8)
    return pv.UnstructuredGrid(cells, types, corners.reshape(-1, 3))


def rack_bounds(xy_m, intake, width_m: float, depth_m: float, height_m: float = RACK_HEIGHT_M,
                offset_x_m: float = 0.0) -> np.ndarray:
    """(N, 6) box bounds of racks centred at ``xy_m`` with depth along their intake axis."""
    xy = np.asarray(xy_m, float).reshape(-1, 2)
    d = np.asarray(intake, float).reshape(-1, 2)
    depth_x = np.abs(d[:, 0]) >= np.abs(d[:, 1])
    hx = np.where(depth_x, depth_m / 2, width_m / 2)
    hy = np.where(depth_x, width_m / 2, depth_m / 2)
    x = xy[:, 0] + offset_x_m
    return np.column_stack([x - hx, x + hx, xy[:, 1] - hy, xy[:, 1] + hy,
                            np.zeros(len(xy)), np.full(len(xy), height_m)])


def front_bounds(xy_m, intake, width_m: float, depth_m: float, side: float, reach_m: float,
                 height_m: float, offset_x_m: float = 0.0) -> np.ndarray:
    """(N, 6) bounds of the volume in front of (``side`` = +1, intake face) or behind
    (``side`` = -1, exhaust face) each rack, ``reach_m`` deep."""
    xy = np.asarray(xy_m, float).reshape(-1, 2)
    d = np.asarray(intake, float).reshape(-1, 2)
    out = []
    for (cx, cy), (dx, dy) in zip(xy, d, strict=True):
        cx += offset_x_m
        if abs(dx) >= abs(dy):
            s = np.sign(dx) * side
            xa = cx + s * depth_m / 2
            xb = xa + s * reach_m
            out.append([min(xa, xb), max(xa, xb), cy - width_m / 2, cy + width_m / 2, 0.0, height_m])
        else:
            s = np.sign(dy) * side
            ya = cy + s * depth_m / 2
            yb = ya + s * reach_m
            out.append([cx - width_m / 2, cx + width_m / 2, min(ya, yb), max(ya, yb), 0.0, height_m])
    return np.asarray(out, float).reshape(-1, 6)


def hall_offsets_m(scenario) -> np.ndarray:
    """x offset of each hall in the drawn site [m]."""
    widths = np.array([h.width_m for h in scenario.site.halls])
    return np.concatenate([[0.0], np.cumsum(widths + HALL_GAP_M)[:-1]])


def _tag(mesh, part: str, value=np.nan):
    """Give every block the same cell arrays so that the scene can be merged into one .vtk."""
    mesh.cell_data["part"] = np.full(mesh.n_cells, PART_CODES[part], np.int32)
    v = np.broadcast_to(np.asarray(value, float), (mesh.n_cells,))
    mesh.cell_data["value"] = np.array(v, float)
    return mesh


# --------------------------------------------------------------------------- scene
def nice_length_m(span_m: float) -> float:
    """A round scale-bar length [m] (1, 2 or 5 x 10^k) close to a quarter of ``span_m``."""
    target = max(float(span_m) / 4.0, 0.1)
    k = np.floor(np.log10(target))
    for m in (5.0, 2.0, 1.0):
        if m * 10 ** k <= target:
            return float(m * 10 ** k)
    return float(10 ** k)


def scale_bar(scenario) -> tuple[pv.PolyData, float]:
    """A scale bar on the floor in front of the first hall: a line of a round length with
    end ticks (point data ``length_m``); returns (mesh, length [m])."""
    x_lo, x_hi, y_lo, _ = rack_extent_m(scenario)
    length = nice_length_m(x_hi - x_lo)
    y = y_lo - 0.5
    x0 = x_lo
    pts = np.array([[x0, y, 0.02], [x0 + length, y, 0.02], [x0, y - 0.3, 0.02], [x0, y + 0.3, 0.02],
                    [x0 + length, y - 0.3, 0.02], [x0 + length, y + 0.3, 0.02]])
    lines = np.array([2, 0, 1, 2, 2, 3, 2, 4, 5])
    mesh = pv.PolyData(pts, lines=lines)
    mesh.field_data["length_m"] = [length]
    return _tag(mesh, "labels"), length


def build_scene(snap: Snapshot, streamlines: bool = True) -> pv.MultiBlock:
    """Named blocks of the scene: floor, walls, racks (cell array ``value`` and ``state``),
    rack_slots (positions not yet delivered), cooling_units (``active``), enclosures,
    containment, obstacles, and per hall with a field: temperature_slice, streamlines."""
    s = snap.scenario
    off = hall_offsets_m(s)
    blocks = pv.MultiBlock()
    floors, walls, outlines, units, unit_active, enc, cont, obst = [], [], [], [], [], [], [], []
    for h, hall in enumerate(s.site.halls):
        ox = off[h]
        W, D, H = hall.width_m, hall.depth_m, hall.height_m
        floors.append([ox, ox + W, 0.0, D, -0.05, 0.0])
        t = 0.15
        walls += [[ox - t, ox, -t, D + t, 0, WALL_HEIGHT_M], [ox + W, ox + W + t, -t, D + t, 0, WALL_HEIGHT_M],
                  [ox, ox + W, -t, 0, 0, WALL_HEIGHT_M], [ox, ox + W, D, D + t, 0, WALL_HEIGHT_M]]
        outlines.append(pv.Box((ox, ox + W, 0.0, D, 0.0, H)).extract_feature_edges(
            boundary_edges=False, feature_edges=True, manifold_edges=False, non_manifold_edges=False))
        for c, cu in enumerate(hall.cooling_units):
            a, b, z = COOLING_SIZE_M
            units.append([ox + cu.x_m - a / 2, ox + cu.x_m + a / 2, cu.y_m - b / 2, cu.y_m + b / 2, 0.0, z])
            unit_active.append(bool(snap.cooling_active[h][c]) if h < len(snap.cooling_active) else True)
        idx = np.flatnonzero(snap.rack_hall == h)
        xy, intake = snap.rack_xy_m[idx], snap.rack_intake[idx]
        if hall.containment != "none" and len(idx):
            side = 1.0 if hall.containment == "cold_aisle" else -1.0
            cont.append(front_bounds(xy, intake, hall.rack_width_m, hall.rack_depth_m, side,
                                     ENCLOSURE_DEPTH_M, RACK_HEIGHT_M + 0.1, ox))
        sel = idx[snap.rack_enclosed[idx]]
        if len(sel):
            enc.append(front_bounds(snap.rack_xy_m[sel], snap.rack_intake[sel], hall.rack_width_m,
                                    hall.rack_depth_m, 1.0, ENCLOSURE_DEPTH_M, RACK_HEIGHT_M + 0.1, ox))
        for o in hall.obstacles:
            z = OBSTACLE_HEIGHT_M.get(o.kind, H)
            obst.append([ox + min(o.x0_m, o.x1_m), ox + max(o.x0_m, o.x1_m),
                         min(o.y0_m, o.y1_m), max(o.y0_m, o.y1_m), 0.0, z])

    blocks["scale_bar"], _ = scale_bar(s)
    row_pts, row_names, cu_pts, cu_names = [], [], [], []
    for h, hall in enumerate(s.site.halls):
        for row in hall.rows:
            dx, dy = (row.pitch_m, 0.0) if row.along == "x" else (0.0, row.pitch_m)
            row_pts.append([off[h] + row.x_m - 1.2 * dx, row.y_m - 1.2 * dy, RACK_HEIGHT_M * 0.5])
            row_names.append(row.name)
        for cu in hall.cooling_units:
            cu_pts.append([off[h] + cu.x_m, cu.y_m, COOLING_SIZE_M[2] + 0.15])
            cu_names.append(cu.name)
    if row_pts:
        rl = pv.PolyData(np.asarray(row_pts, float))
        rl.point_data["name"] = np.array(row_names)
        blocks["row_labels"] = _tag(rl, "labels")
    if cu_pts:
        cl = pv.PolyData(np.asarray(cu_pts, float))
        cl.point_data["name"] = np.array(cu_names)
        blocks["cooling_unit_labels"] = _tag(cl, "labels")
    if len(s.site.halls) > 1:  # name the halls of a multi-hall site at their front-left corner
        pts = pv.PolyData(np.array([[off[h] + 0.5, -1.0, 0.0] for h in range(len(s.site.halls))]))
        pts.point_data["hall_name"] = np.array([h.name for h in s.site.halls])
        blocks["hall_labels"] = _tag(pts, "walls")
    blocks["floor"] = _tag(boxes(floors), "floor")
    wall_mesh = _tag(boxes(walls), "walls")
    blocks["walls"] = wall_mesh
    edge = outlines[0].merge(outlines[1:]) if len(outlines) > 1 else outlines[0]
    blocks["hall_outline"] = _tag(pv.UnstructuredGrid(edge.cast_to_unstructured_grid()), "walls")

    # racks: one hexahedron per delivered rack, positions not delivered as floor footprints
    rb = np.zeros((snap.n_racks, 6))
    for h, hall in enumerate(s.site.halls):
        idx = np.flatnonzero(snap.rack_hall == h)
        rb[idx] = rack_bounds(snap.rack_xy_m[idx], snap.rack_intake[idx], hall.rack_width_m,
                              hall.rack_depth_m, RACK_HEIGHT_M, off[h])
    shown = snap.rack_state >= 0
    racks = _tag(boxes(rb[shown]) if shown.any() else pv.UnstructuredGrid(), "racks",
                 snap.rack_value[shown])
    racks.cell_data["rack"] = np.flatnonzero(shown).astype(np.int32)
    racks.cell_data["state"] = snap.rack_state[shown].astype(np.int32)
    racks.cell_data["heat_w"] = snap.rack_heat_w[shown].astype(float)
    racks.field_data["quantity"] = [snap.scale.quantity]
    blocks["racks"] = racks
    if (~shown).any():
        slots = rb[~shown].copy()
        slots[:, 5] = 0.02
        blocks["rack_slots"] = _tag(boxes(slots), "rack_slots")
    if units:
        um = _tag(boxes(units), "cooling_units")
        um.cell_data["active"] = np.array(unit_active, np.int32)
        blocks["cooling_units"] = um
    if enc:
        blocks["enclosures"] = _tag(boxes(np.concatenate(enc)), "enclosures")
    if cont:
        blocks["containment"] = _tag(boxes(np.concatenate(cont)), "containment")
    if obst:
        blocks["obstacles"] = _tag(boxes(obst), "obstacles")

    for h, f in enumerate(snap.fields):
        if f is None:
            continue
        sl = temperature_slice(f, off[h])
        if sl.n_cells:
            blocks[f"temperature_slice_{h}"] = sl
        if streamlines:
            st = airflow_streamlines(f, off[h])
            if st.n_cells:
                blocks[f"streamlines_{h}"] = st
    return blocks


def temperature_slice(field, offset_x_m: float = 0.0, z_m: float = SLICE_HEIGHT_M) -> pv.UnstructuredGrid:
    """Room-air cells of a steady field as a horizontal slice at ``z_m`` (cell array
    ``temperature`` [°C]); cells inside racks and obstacles are left out."""
    x = field["x_m"].values
    y = field["y_m"].values
    h = float(field.attrs.get("cell_m", x[1] - x[0] if len(x) > 1 else 1.0))
    grid = pv.ImageData(dimensions=(len(x) + 1, len(y) + 1, 1), spacing=(h, h, 1.0),
                        origin=(offset_x_m + x[0] - h / 2, y[0] - h / 2, z_m))
    t = field["temperature"].values.astype(float)  # (ny, nx), x fastest as VTK wants
    grid.cell_data["temperature"] = t.ravel()
    keep = np.flatnonzero(np.isfinite(t.ravel()))
    out = grid.extract_cells(keep)  # type: ignore[arg-type]  # pyvista stub wants dtype[int], rejects np.intp indices
    return _tag(out, "temperature_slice", out.cell_data["temperature"])


def airflow_streamlines(field, offset_x_m: float = 0.0, z_m: float = SLICE_HEIGHT_M,
                        seed_spacing_m: float | None = None) -> pv.PolyData:
    """Streamlines of the plan-view room velocity at height ``z_m`` (point array ``speed``)."""
    x = field["x_m"].values
    y = field["y_m"].values
    h = float(field.attrs.get("cell_m", x[1] - x[0] if len(x) > 1 else 1.0))
    u = np.nan_to_num(field["velocity"].values[0].astype(float))
    v = np.nan_to_num(field["velocity"].values[1].astype(float))
    img = pv.ImageData(dimensions=(len(x), len(y), 1), spacing=(h, h, 1.0),
                       origin=(offset_x_m + x[0], y[0], z_m))
    img.point_data["velocity"] = np.column_stack([u.ravel(), v.ravel(), np.zeros(u.size)])
    img.point_data["speed"] = np.hypot(u, v).ravel()
    img.set_active_vectors("velocity")
    fluid = ~field["solid"].values.astype(bool)
    step = max(1, int(round((seed_spacing_m or max(1.2, max(x[-1], y[-1]) / 14)) / h)))
    iy, ix = np.mgrid[step // 2:len(y):step, step // 2:len(x):step]
    ok = fluid[iy, ix] & (np.hypot(u, v)[iy, ix] > 1e-4)
    if not ok.any():
        return _tag(pv.PolyData(), "streamlines")
    seeds = pv.PolyData(np.column_stack([offset_x_m + x[ix[ok]], y[iy[ok]], np.full(ok.sum(), z_m)]))
    # stop in stagnant air (< 1 cm/s) so that lines do not spiral in place
    lines = img.streamlines_from_source(seeds, vectors="velocity", integration_direction="both",
                                        max_length=2 * max(x[-1], y[-1]), initial_step_length=1.0,
                                        max_steps=600, terminal_speed=0.01)
    if lines.n_cells == 0:
        return _tag(pv.PolyData(), "streamlines")
    return _tag(lines, "streamlines")


# --------------------------------------------------------------------------- drawing
def _scalar_bar(title: str, position_y: float, categories: bool) -> ScalarBarArgs:
    args = dict(title=title, vertical=True, position_x=0.86, position_y=position_y, width=0.06,
                height=0.38, title_font_size=14, label_font_size=12, fmt="%.1f", color="black")
    if categories:
        args.update(n_labels=0)
    return cast("ScalarBarArgs", args)


def _mesh_kwargs(scale: ColorScale) -> dict:
    kw: dict[str, Any] = dict(cmap=scale.cmap, clim=list(scale.clim))
    if scale.categories is not None:
        kw.update(n_colors=len(scale.categories), annotations={float(k): v for k, v in scale.categories.items()})
    return kw


def rack_rgb(scale: ColorScale, values) -> np.ndarray:
    """(N, 3) uint8 colours of rack values on ``scale`` (NaN: light grey)."""
    import matplotlib
    v = np.asarray(values, float)
    out = np.full((len(v), 3), 208, np.uint8)
    ok = np.isfinite(v)
    if scale.categories is not None:
        cols = np.array([matplotlib.colors.to_rgb(c) for c in scale.cmap])
        idx = np.clip(np.round(v[ok]).astype(int), 0, len(cols) - 1)
        out[ok] = (cols[idx] * 255).round().astype(np.uint8)
        return out
    lo, hi = scale.clim
    cmap = matplotlib.colormaps[cast(str, scale.cmap)]   # continuous scale: cmap is a name
    out[ok] = (np.asarray(cmap(np.clip((v[ok] - lo) / (hi - lo), 0, 1)))[:, :3] * 255).round().astype(np.uint8)
    return out


def _block(blocks: pv.MultiBlock, key: str) -> pv.DataSet:
    """A block of :func:`build_scene` (always a mesh, never None or nested)."""
    return cast(pv.DataSet, blocks[key])


def add_scene(plotter: pv.Plotter, blocks: pv.MultiBlock, scale: ColorScale,
              title: str | None = None, caption: str | None = None, scalar_bars: bool = True,
              slice_clim: tuple[float, float] | None = None, labels: bool = True,
              rack_labels: list[str] | None = None, bake_colors: bool = False) -> None:
    """Draw the blocks of :func:`build_scene` with the colours of ``scale`` (racks) and
    ``slice_clim`` (room-air slice; default: its own range)."""
    names = blocks.keys()
    plotter.set_background("white")  # type: ignore[arg-type]  # pyvista: functools.wraps(Renderers.set_background) keeps the unbound signature
    plotter.add_mesh(_block(blocks, "floor"), color="#e9e6df", name="floor", render=False)
    plotter.add_mesh(_block(blocks, "walls"), color="#b8b2a7", name="walls", render=False)
    plotter.add_mesh(_block(blocks, "hall_outline"), color="#6d675e", line_width=1.5, name="hall_outline", render=False)
    if "rack_slots" in names:
        plotter.add_mesh(_block(blocks, "rack_slots"), color="#cfcac0", show_edges=True, edge_color="#a49d90",
                         name="rack_slots", render=False)
    racks = _block(blocks, "racks")
    if racks.n_cells:
        kw = _mesh_kwargs(scale)
        categorical = scale.categories is not None
        if bake_colors:   # exporters (vtk.js page, glTF) get the colours as RGB, not a lookup table
            racks = racks.copy()
            racks.cell_data["rgb"] = rack_rgb(scale, racks.cell_data["value"])
            plotter.add_mesh(racks, scalars="rgb", rgb=True, show_edges=True, edge_color="#303030",
                             name="racks", render=False)
            scalar_bars = False
        else:
            plotter.add_mesh(racks, scalars="value", show_edges=True, edge_color="#303030", line_width=1,
                             nan_color="#d0d0d0", show_scalar_bar=scalar_bars and not categorical,
                             scalar_bar_args=_scalar_bar(scale.title, 0.52, False),
                             name="racks", **kw, render=False)
        if scalar_bars and categorical:
            assert scale.categories is not None   # categorical
            # named categories as a legend box (upper right), never over the room-air colour bar
            shown = sorted({int(v) for v in np.asarray(racks.cell_data["value"]) if np.isfinite(v)})
            entries = [[f"{scale.categories[k]}", scale.cmap[k]] for k in sorted(scale.categories)
                       if k in shown or len(shown) == 0]
            w, h = plotter.window_size
            fs = 10 if h >= 600 else 7
            step = int(fs * 2.0)
            x = w - 12 * fs - 20
            plotter.add_text(scale.title, position=(x, h - step - 6), font_size=fs + 1, color="black",
                             name="legend_title", render=False)
            for i, (label, colour) in enumerate(entries):
                plotter.add_text(f"{label}", position=(x, h - step * (i + 2) - 6),
                                 font_size=fs, color=colour, name=f"legend_{i}", render=False)
    if "cooling_units" in names:
        cu = _block(blocks, "cooling_units")
        plotter.add_mesh(cu, scalars=cu.cell_data["active"].astype(float), cmap=["#c0392b", "#5dade2"],
                         clim=[0, 1], show_scalar_bar=False, show_edges=True, edge_color="#1b4f72",
                         name="cooling_units", render=False)
    if "enclosures" in names:
        plotter.add_mesh(_block(blocks, "enclosures"), color="#7fb3d5", opacity=0.25, show_edges=True,
                         edge_color="#2e86c1", name="enclosures", render=False)
    if "containment" in names:
        plotter.add_mesh(_block(blocks, "containment"), color="#a9cce3", opacity=0.25, show_edges=True,
                         edge_color="#2874a6", name="containment", render=False)
    if "obstacles" in names:
        plotter.add_mesh(_block(blocks, "obstacles"), color="#7b7d7d", name="obstacles", render=False)
    slices = [k for k in names if k.startswith("temperature_slice")]
    if slices:
        lo = min(float(np.nanmin(_block(blocks, k)["temperature"])) for k in slices)
        hi = max(float(np.nanmax(_block(blocks, k)["temperature"])) for k in slices)
        clim = slice_clim or [np.floor(lo), max(np.ceil(hi), np.floor(lo) + 2)]
        for i, k in enumerate(slices):
            plotter.add_mesh(_block(blocks, k), scalars="temperature", cmap=SLICE_CMAP, clim=list(clim),
                             opacity=0.8, show_scalar_bar=scalar_bars and i == 0,
                             scalar_bar_args=_scalar_bar(f"room air at {SLICE_HEIGHT_M:g} m [°C]", 0.06, False),
                             name=k, render=False)
    for k in names:
        if k.startswith("streamlines"):
            plotter.add_mesh(_block(blocks, k), color="#1c2833", line_width=1.2, opacity=0.8, name=k, render=False)
    if "scale_bar" in names:
        sb = _block(blocks, "scale_bar")
        plotter.add_mesh(sb, color="black", line_width=3, name="scale_bar", render=False)
        length = float(sb.field_data["length_m"][0])
        plotter.add_point_labels(sb.points[[1]] + np.array([0.3, -0.6, 0.0]), [f"{length:g} m"], font_size=12,
                                 shape=None, show_points=False, always_visible=True, text_color="black",
                                 name="scale_bar_label", render=False)
    if labels and "row_labels" in names:
        rl = _block(blocks, "row_labels")
        plotter.add_point_labels(rl.points, [str(n) for n in rl.point_data["name"]], font_size=10, bold=True,
                                 shape="rounded_rect", shape_color="white", shape_opacity=0.7, show_points=False,
                                 always_visible=True, text_color="#1b2631", name="row_labels", render=False)
    if labels and "cooling_unit_labels" in names:
        cl = _block(blocks, "cooling_unit_labels")
        plotter.add_point_labels(cl.points, [str(n) for n in cl.point_data["name"]], font_size=9, shape=None,
                                 show_points=False, always_visible=True, text_color="#1b4f72",
                                 name="cooling_unit_labels", render=False)
    if rack_labels is not None and len(rack_labels) and racks.n_cells:
        centres = racks.cell_centers().points.copy()
        centres[:, 2] = RACK_HEIGHT_M + 0.1
        names_r = [str(rack_labels[i]) for i in racks.cell_data["rack"]]
        plotter.add_point_labels(centres, names_r, font_size=7, shape=None, show_points=False,
                                 always_visible=True, text_color="black", name="rack_labels", render=False)
    if "hall_labels" in names:
        lab = _block(blocks, "hall_labels")
        plotter.add_point_labels(lab.points, [str(n) for n in lab.point_data["hall_name"]], font_size=12,
                                 shape=None, show_points=False, always_visible=True, text_color="black",
                                 name="hall_labels", render=False)
    if title:
        plotter.add_text(title, position="upper_left", font_size=11, color="black", name="title", render=False)
    if caption:
        plotter.add_text(caption, position="lower_left", font_size=8, color="black", name="caption", render=False)


def remove_scene(plotter: pv.Plotter) -> None:
    """Remove the scene's actors but keep lights, camera and scalar bars (which the next
    frame of an animation re-uses: its colour scales do not change). ``Plotter.clear``
    would also remove the lights."""
    for name in list(plotter.renderer.actors):
        if not name.startswith("vtkScalarBarActor"):
            plotter.remove_actor(name, render=False)  # type: ignore[arg-type]  # pyvista: functools.wraps(Renderer.remove_actor) keeps the unbound signature


def rack_extent_m(scenario) -> np.ndarray:
    """(xmin, xmax, ymin, ymax) [m] of every rack position of the site (halls side by side)."""
    off = hall_offsets_m(scenario)
    xs, ys = [], []
    for h, hall in enumerate(scenario.site.halls):
        for row in hall.rows:
            n = row.racks - 1
            dx, dy = (row.pitch_m * n, 0.0) if row.along == "x" else (0.0, row.pitch_m * n)
            xs += [off[h] + row.x_m, off[h] + row.x_m + dx]
            ys += [row.y_m, row.y_m + dy]
    pad = 2.5
    return np.array([min(xs) - pad, max(xs) + pad, min(ys) - pad, max(ys) + pad])


def frame_camera(plotter: pv.Plotter, scenario, zoom: float = 0.95) -> None:
    """Look at the racks from the south-east, above, so that rows and aisles are visible:
    the camera frames the racks (plus the cooling units near them), not the empty hall."""
    x0, x1, y0, y1 = rack_extent_m(scenario)
    centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2, 0.6])
    span = max(x1 - x0, y1 - y0)
    direction = np.array([0.35, -1.0, 1.05])
    direction /= np.linalg.norm(direction)
    plotter.camera.focal_point = centre
    plotter.camera.position = centre + direction * span * 1.6
    plotter.camera.up = (0.0, 0.0, 1.0)
    plotter.reset_camera(bounds=(x0, x1, y0, y1, 0.0, RACK_HEIGHT_M + 0.5))  # type: ignore[call-arg]  # pyvista: functools.wraps(Renderer.reset_camera) keeps the unbound signature
    plotter.camera.zoom(zoom)


def new_plotter(window_size=(1280, 800), off_screen: bool = True, notebook: bool = False) -> pv.Plotter:
    pl = pv.Plotter(off_screen=off_screen, window_size=list(window_size), notebook=notebook)
    return pl


def draw_snapshot(plotter: pv.Plotter, snap: Snapshot, title: str | None = None,
                  caption: bool = True, streamlines: bool = True, scalar_bars: bool = True,
                  slice_clim: tuple[float, float] | None = None, labels: bool = True,
                  rack_labels: bool = False, bake_colors: bool = False) -> pv.MultiBlock:
    """Build and draw the scene of ``snap``; returns its blocks. ``labels``: row and
    cooling-unit names; ``rack_labels``: every rack's name (dense: on demand)."""
    from .snapshot import containment_note
    blocks = build_scene(snap, streamlines=streamlines)
    if title is None:
        title = f"{snap.scenario.name} · {snap.label} · {snap.scale.title}"
    text = snap.caption if caption else None
    note = containment_note(snap) if caption else ""
    if note:
        import textwrap
        note = "\n".join(textwrap.wrap(note, 130))
        text = f"{note}\n{text}" if text else note
    add_scene(plotter, blocks, snap.scale, title=title, caption=text, scalar_bars=scalar_bars,
              slice_clim=slice_clim, labels=labels,
              rack_labels=snap.rack_names if rack_labels and snap.rack_names else None,
              bake_colors=bake_colors)
    return blocks
