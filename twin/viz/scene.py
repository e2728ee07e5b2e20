"""The 3-D hall scene in pyvista: floor, walls, racks, cooling units, containment,
enclosures, obstacles, a temperature slice and airflow streamlines.

:func:`build_scene` turns a :class:`~twin.viz.snapshot.Snapshot` into a named
``pyvista.MultiBlock`` (what ``--out hall.vtm`` writes, so ParaView opens the same
scene); :func:`add_scene` draws those blocks into a Plotter with colours and scalar bars.
Halls of a multi-hall site stand side by side along x, ``HALL_GAP_M`` apart.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .drawlist import rack_rgb
from .snapshot import ColorScale, Snapshot

if TYPE_CHECKING:
    from pyvista.plotting._typing import ScalarBarArgs

if not os.environ.get("DISPLAY") and "VTK_DEFAULT_OPENGL_WINDOW" not in os.environ:
    # headless: go straight to EGL (OSMesa if EGL is missing) instead of trying X first
    os.environ["VTK_DEFAULT_OPENGL_WINDOW"] = "vtkEGLRenderWindow"

import pyvista as pv  # noqa: E402

from .geometry import (  # noqa: E402  (re-exported: the scene's constants and geometry)
    COLOURS,
    COOLING_SIZE_M,
    ENCLOSURE_DEPTH_M,
    HALL_GAP_M,
    LABELS,
    OBSTACLE_HEIGHT_M,
    OPACITY,
    RACK_HEIGHT_M,
    SLICE_CMAP,
    SLICE_HEIGHT_M,
    WALL_HEIGHT_M,
    box_corners,
    camera_frame,
    front_bounds,
    hall_offsets_m,
    legend_layout,
    nice_length_m,
    overlay_text,
    rack_bounds,
    rack_extent_m,
    scale_bar_points,
    scene_parts,
    streamline_seeds,
)

__all__ = ["COOLING_SIZE_M", "ENCLOSURE_DEPTH_M", "HALL_GAP_M", "OBSTACLE_HEIGHT_M", "RACK_HEIGHT_M",
           "SLICE_CMAP", "SLICE_HEIGHT_M", "WALL_HEIGHT_M", "add_scene", "boxes", "build_scene",
           "draw_snapshot", "frame_camera", "front_bounds", "hall_offsets_m", "new_plotter", "nice_length_m",
           "rack_bounds", "rack_extent_m", "remove_scene", "scale_bar"]

PART_CODES = {"floor": 0, "walls": 1, "racks": 2, "rack_slots": 3, "cooling_units": 4,
              "enclosures": 5, "containment": 6, "obstacles": 7, "temperature_slice": 8,
              "streamlines": 9, "labels": 10}


# --------------------------------------------------------------------------- primitives
def boxes(bounds) -> pv.UnstructuredGrid:
    """One hexahedron per row of ``bounds`` (N, 6): xmin, xmax, ymin, ymax, zmin, zmax [m]."""
    b = np.asarray(bounds, float).reshape(-1, 6)
    corners = box_corners(b)  # (N, 8, 3)
    n = len(b)
    cells = np.hstack([np.full((n, 1), 8), np.arange(8 * n).reshape(n, 8)]).ravel()
    types = np.full(n, pv.CellType.HEXAHEDRON, np.uint8)
    return pv.UnstructuredGrid(cells, types, corners.reshape(-1, 3))


def _tag(mesh, part: str, value=np.nan):
    """Give every block the same cell arrays so that the scene can be merged into one .vtk."""
    mesh.cell_data["part"] = np.full(mesh.n_cells, PART_CODES[part], np.int32)
    v = np.broadcast_to(np.asarray(value, float), (mesh.n_cells,))
    mesh.cell_data["value"] = np.array(v, float)
    return mesh


# --------------------------------------------------------------------------- scene
def scale_bar(scenario) -> tuple[pv.PolyData, float]:
    """A scale bar on the floor in front of the first hall: a line of a round length with
    end ticks (point data ``length_m``); returns (mesh, length [m])."""
    pts, segments, length = scale_bar_points(scenario)
    lines = np.hstack([np.full((len(segments), 1), 2), segments]).ravel()
    mesh = pv.PolyData(pts, lines=lines)
    mesh.field_data["length_m"] = [length]
    return _tag(mesh, "labels"), length


def build_scene(snap: Snapshot, streamlines: bool = True) -> pv.MultiBlock:
    """Named blocks of the scene: floor, walls, racks (cell array ``value`` and ``state``),
    rack_slots (positions not yet delivered), cooling_units (``active``), enclosures,
    containment, obstacles, and per hall with a field: temperature_slice, streamlines."""
    s = snap.scenario
    off = hall_offsets_m(s)
    parts = scene_parts(snap)
    blocks = pv.MultiBlock()
    blocks["scale_bar"], _ = scale_bar(s)
    if len(parts.row_names):
        rl = pv.PolyData(parts.row_label_xyz)
        rl.point_data["name"] = np.array(parts.row_names)
        blocks["row_labels"] = _tag(rl, "labels")
    if len(parts.unit_names):
        cl = pv.PolyData(parts.unit_label_xyz)
        cl.point_data["name"] = np.array(parts.unit_names)
        blocks["cooling_unit_labels"] = _tag(cl, "labels")
    if len(parts.model_labels):
        ml = pv.PolyData(parts.model_label_xyz)
        ml.point_data["name"] = np.array(parts.model_labels)
        blocks["model_labels"] = _tag(ml, "labels")
    if len(parts.hall_names):
        pts = pv.PolyData(parts.hall_label_xyz)
        pts.point_data["hall_name"] = np.array(parts.hall_names)
        blocks["hall_labels"] = _tag(pts, "walls")
    blocks["floor"] = _tag(boxes(parts.floors), "floor")
    blocks["walls"] = _tag(boxes(parts.walls), "walls")
    outlines = [pv.Box(tuple(b)).extract_feature_edges(boundary_edges=False, feature_edges=True, manifold_edges=False,
                                                      non_manifold_edges=False) for b in parts.halls]
    edge = outlines[0].merge(outlines[1:]) if len(outlines) > 1 else outlines[0]
    blocks["hall_outline"] = _tag(pv.UnstructuredGrid(edge.cast_to_unstructured_grid()), "walls")

    # racks: one hexahedron per delivered rack, positions not delivered as floor footprints
    rb = parts.racks
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
    if len(parts.units):
        um = _tag(boxes(parts.units), "cooling_units")
        um.cell_data["active"] = parts.unit_active.astype(np.int32)
        blocks["cooling_units"] = um
    if len(parts.enclosures):
        blocks["enclosures"] = _tag(boxes(parts.enclosures), "enclosures")
    if len(parts.containment):
        blocks["containment"] = _tag(boxes(parts.containment), "containment")
    if len(parts.obstacles):
        blocks["obstacles"] = _tag(boxes(parts.obstacles), "obstacles")

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
    sd = streamline_seeds(field, offset_x_m, z_m, seed_spacing_m)
    u, v = sd["u"], sd["v"]
    ny, nx = u.shape
    img = pv.ImageData(dimensions=(nx, ny, 1), spacing=(sd["spacing"], sd["spacing"], 1.0), origin=sd["origin"])
    img.point_data["velocity"] = np.column_stack([u.ravel(), v.ravel(), np.zeros(u.size)])
    img.point_data["speed"] = np.hypot(u, v).ravel()
    img.set_active_vectors("velocity")
    if not len(sd["seeds"]):
        return _tag(pv.PolyData(), "streamlines")
    lines = img.streamlines_from_source(pv.PolyData(sd["seeds"]), vectors="velocity", integration_direction="both",
                                        max_length=sd["max_length"], initial_step_length=sd["initial_step"],
                                        max_steps=sd["max_steps"], terminal_speed=sd["terminal_speed"])
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
    plotter.add_mesh(_block(blocks, "floor"), color=COLOURS["floor"], name="floor", render=False)
    plotter.add_mesh(_block(blocks, "walls"), color=COLOURS["walls"], name="walls", render=False)
    plotter.add_mesh(_block(blocks, "hall_outline"), color=COLOURS["outline"], line_width=1.5, name="hall_outline", render=False)
    if "rack_slots" in names:
        plotter.add_mesh(_block(blocks, "rack_slots"), color=COLOURS["slots"], show_edges=True, edge_color=COLOURS["slot_edges"],
                         name="rack_slots", render=False)
    racks = _block(blocks, "racks")
    if racks.n_cells:
        kw = _mesh_kwargs(scale)
        categorical = scale.categories is not None
        if bake_colors:   # exporters (vtk.js page, glTF) get the colours as RGB, not a lookup table
            racks = racks.copy()
            racks.cell_data["rgb"] = rack_rgb(scale, racks.cell_data["value"])
            plotter.add_mesh(racks, scalars="rgb", rgb=True, show_edges=True, edge_color=COLOURS["rack_edges"],
                             name="racks", render=False)
            scalar_bars = False
        else:
            plotter.add_mesh(racks, scalars="value", show_edges=True, edge_color=COLOURS["rack_edges"], line_width=1,
                             nan_color=COLOURS["no_value"], show_scalar_bar=scalar_bars and not categorical,
                             scalar_bar_args=_scalar_bar(scale.title, 0.52, False),
                             name="racks", **kw, render=False)
        if scalar_bars and categorical:
            assert scale.categories is not None   # categorical
            # named categories as a legend box (upper right), never over the room-air colour bar
            shown = sorted({int(v) for v in np.asarray(racks.cell_data["value"]) if np.isfinite(v)})
            entries = [[f"{scale.categories[k]}", scale.cmap[k]] for k in sorted(scale.categories)
                       if k in shown or len(shown) == 0]
            x, ys, fs = legend_layout(plotter.window_size, scale.title, [e[0] for e in entries])
            plotter.add_text(scale.title, position=(x, ys[0]), font_size=fs + 1, color="black",
                             name="legend_title", render=False)
            for i, (label, colour) in enumerate(entries):
                plotter.add_text(f"{label}", position=(x, ys[i + 1]), font_size=fs, color=colour,
                                 name=f"legend_{i}", render=False)
    if "cooling_units" in names:
        cu = _block(blocks, "cooling_units")
        plotter.add_mesh(cu, scalars=cu.cell_data["active"].astype(float), cmap=[COLOURS["unit_off"], COLOURS["unit_on"]],
                         clim=[0, 1], show_scalar_bar=False, show_edges=True, edge_color=COLOURS["unit_edges"],
                         name="cooling_units", render=False)
    if "enclosures" in names:
        plotter.add_mesh(_block(blocks, "enclosures"), color=COLOURS["enclosures"], opacity=OPACITY["enclosures"], show_edges=True,
                         edge_color=COLOURS["enclosure_edges"], name="enclosures", render=False)
    if "containment" in names:
        plotter.add_mesh(_block(blocks, "containment"), color=COLOURS["containment"], opacity=OPACITY["containment"], show_edges=True,
                         edge_color=COLOURS["containment_edges"], name="containment", render=False)
    if "obstacles" in names:
        plotter.add_mesh(_block(blocks, "obstacles"), color=COLOURS["obstacles"], name="obstacles", render=False)
    slices = [k for k in names if k.startswith("temperature_slice")]
    if slices:
        lo = min(float(np.nanmin(_block(blocks, k)["temperature"])) for k in slices)
        hi = max(float(np.nanmax(_block(blocks, k)["temperature"])) for k in slices)
        clim = slice_clim or [np.floor(lo), max(np.ceil(hi), np.floor(lo) + 2)]
        for i, k in enumerate(slices):
            plotter.add_mesh(_block(blocks, k), scalars="temperature", cmap=SLICE_CMAP, clim=list(clim),
                             opacity=OPACITY["slice"], show_scalar_bar=scalar_bars and i == 0,
                             scalar_bar_args=_scalar_bar(f"room air at {SLICE_HEIGHT_M:g} m [°C]", 0.06, False),
                             name=k, render=False)
    for k in names:
        if k.startswith("streamlines"):
            plotter.add_mesh(_block(blocks, k), color=COLOURS["streamlines"], line_width=1.2, opacity=OPACITY["streamlines"], name=k, render=False)
    if "scale_bar" in names:
        sb = _block(blocks, "scale_bar")
        plotter.add_mesh(sb, color="black", line_width=3, name="scale_bar", render=False)
        length = float(sb.field_data["length_m"][0])
        _add_names(plotter, sb.points[[1]] + np.array([0.3, -0.6, 0.0]), [f"{length:g} m"], "scale", "scale_bar_label")
    for key, block in (("row", "row_labels"), ("unit", "cooling_unit_labels"), ("model", "model_labels")):
        if labels and block in names:
            lab = _block(blocks, block)
            _add_names(plotter, lab.points, lab.point_data["name"], key, block)
    if rack_labels is not None and len(rack_labels) and racks.n_cells:
        centres = racks.cell_centers().points.copy()
        centres[:, 2] = RACK_HEIGHT_M + 0.1
        _add_names(plotter, centres, [rack_labels[i] for i in racks.cell_data["rack"]], "rack", "rack_labels")
    if "hall_labels" in names:
        lab = _block(blocks, "hall_labels")
        _add_names(plotter, lab.points, lab.point_data["hall_name"], "hall", "hall_labels")
    if title:
        plotter.add_text(title, position="upper_left", font_size=11, color="black", name="title", render=False)
    if caption:
        plotter.add_text(caption, position="lower_left", font_size=8, color="black", name="caption", render=False)


def _add_names(plotter: pv.Plotter, points, names, style: str, name: str) -> None:
    """Names at 3-D points, always visible, in the style ``LABELS[style]`` (geometry.py)."""
    st: dict[str, Any] = dict(LABELS[style])
    plotter.add_point_labels(points, [str(n) for n in names], text_color=st.pop("color"), shape=st.pop("shape", None),
                             show_points=False, always_visible=True, name=name, render=False, **st)


def remove_scene(plotter: pv.Plotter) -> None:
    """Remove the scene's actors but keep lights, camera and scalar bars (which the next
    frame of an animation re-uses: its colour scales do not change). ``Plotter.clear``
    would also remove the lights."""
    for name in list(plotter.renderer.actors):
        if not name.startswith("vtkScalarBarActor"):
            plotter.remove_actor(name, render=False)  # type: ignore[arg-type]  # pyvista: functools.wraps(Renderer.remove_actor) keeps the unbound signature


def frame_camera(plotter: pv.Plotter, scenario, zoom: float = 0.95) -> None:
    """Look at the racks from the south-east, above, so that rows and aisles are visible:
    the camera frames the racks (plus the cooling units near them), not the empty hall."""
    cam = camera_frame(scenario, zoom)
    plotter.camera.focal_point = cam["focal"]
    plotter.camera.position = cam["position"]
    plotter.camera.up = tuple(cam["up"])
    plotter.reset_camera(bounds=cam["bounds"])  # type: ignore[call-arg]  # pyvista: functools.wraps(Renderer.reset_camera) keeps the unbound signature
    plotter.camera.zoom(cam["zoom"])


def new_plotter(window_size=(1280, 800), off_screen: bool = True, notebook: bool = False) -> pv.Plotter:
    pl = pv.Plotter(off_screen=off_screen, window_size=list(window_size), notebook=notebook)
    return pl


def draw_snapshot(plotter: pv.Plotter, snap: Snapshot, title: str | None = None,
                  caption: bool = True, streamlines: bool = True, scalar_bars: bool = True,
                  slice_clim: tuple[float, float] | None = None, labels: bool = True,
                  rack_labels: bool = False, bake_colors: bool = False) -> pv.MultiBlock:
    """Build and draw the scene of ``snap``; returns its blocks. ``labels``: row and
    cooling-unit names; ``rack_labels``: every rack's name (dense: on demand)."""
    blocks = build_scene(snap, streamlines=streamlines)
    title, text = overlay_text(snap, title, caption)
    add_scene(plotter, blocks, snap.scale, title=title, caption=text, scalar_bars=scalar_bars,
              slice_clim=slice_clim, labels=labels,
              rack_labels=snap.rack_names if rack_labels and snap.rack_names else None,
              bake_colors=bake_colors)
    return blocks
