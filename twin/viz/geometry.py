"""Where the parts of the hall view stand, in numpy only (no pyvista, no VTK).

One place for the geometry and the look of the 3-D view: box bounds of floors, walls,
racks, cooling units, enclosures, containment and obstacles; label anchors; the scale bar;
the camera; the colours. :mod:`twin.viz.scene` turns these into pyvista meshes (VTK
export, glTF, the interactive page, animations in process) and :mod:`twin.viz.drawlist`
into the compact description the render child (:mod:`twin.viz.vtkdraw`) draws a PNG from.
Halls of a multi-hall site stand side by side along x, ``HALL_GAP_M`` apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

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
WALL_HEIGHT_M = 0.3
"""Drawn height of the solid part of the hall walls [m] (the rest is an outline, so the
view is not blocked)."""
WALL_THICKNESS_M = 0.15
"""Drawn thickness of the hall walls [m]."""
SLICE_CMAP: Final = "YlOrRd"
"""Colour map of the room-air temperature slice (distinct from the racks' map)."""

COLOURS = {
    "background": "#ffffff", "floor": "#e9e6df", "walls": "#b8b2a7", "outline": "#6d675e",
    "slots": "#cfcac0", "slot_edges": "#a49d90", "rack_edges": "#303030", "no_value": "#d0d0d0",
    "unit_off": "#c0392b", "unit_on": "#5dade2", "unit_edges": "#1b4f72",
    "enclosures": "#7fb3d5", "enclosure_edges": "#2e86c1", "containment": "#a9cce3",
    "containment_edges": "#2874a6", "obstacles": "#7b7d7d", "streamlines": "#1c2833",
    "text": "#000000", "row_labels": "#1b2631", "unit_labels": "#1b4f72", "model_labels": "#4a235a",
}
"""Colours of the parts of the view (one table for the PNG child and the pyvista scene)."""
OPACITY = {"enclosures": 0.25, "containment": 0.25, "slice": 0.8, "streamlines": 0.8}
"""Opacities of the see-through parts."""
LABELS: Final[dict[str, dict[str, Any]]] = {
    "scale": {"font_size": 12, "color": COLOURS["text"]},
    "row": {"font_size": 10, "bold": True, "color": COLOURS["row_labels"], "shape": "rounded_rect",
            "shape_color": "#ffffff", "shape_opacity": 0.7},
    "unit": {"font_size": 9, "color": COLOURS["unit_labels"]},
    "model": {"font_size": 9, "bold": False, "color": COLOURS["model_labels"], "shape": "rounded_rect",
              "shape_color": "#ffffff", "shape_opacity": 0.6},
    "rack": {"font_size": 7, "color": COLOURS["text"]},
    "hall": {"font_size": 12, "color": COLOURS["text"]},
}
"""Styles of the names drawn at 3-D points, in drawing order (one table for the PNG child and
the pyvista scene): bold unless ``bold`` says otherwise, no frame unless ``shape``."""


def box_corners(bounds) -> np.ndarray:
    """(N, 8, 3) corners of the boxes ``bounds`` (N, 6) [m] in VTK's hexahedron order
    (bottom face counter-clockwise from (xmin, ymin), then the top face)."""
    b = np.asarray(bounds, float).reshape(-1, 6)
    x0, x1, y0, y1, z0, z1 = b.T
    return np.stack([np.column_stack(c) for c in (
        (x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0),
        (x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1))], axis=1)


def legend_layout(window_size, title: str, labels) -> tuple[int, list[int], int]:
    """Where a categorical legend stands in the upper right of a picture [px]: its left
    edge, the baseline of the title and of each label, and the font size (pyvista's text
    size; a character is about 1.2 times it wide, so the longest line fits)."""
    w, h = (int(v) for v in window_size)
    fs = 10 if h >= 600 else 7
    step = int(fs * 2.0)
    chars = max([len(str(t)) for t in [title, *labels]] + [12])
    x = max(4, w - int(1.2 * chars * fs) - 12)
    return x, [h - step * (i + 1) - 6 for i in range(len(labels) + 1)], fs


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


def nice_length_m(span_m: float) -> float:
    """A round scale-bar length [m] (1, 2 or 5 x 10^k) close to a quarter of ``span_m``."""
    target = max(float(span_m) / 4.0, 0.1)
    k = np.floor(np.log10(target))
    for m in (5.0, 2.0, 1.0):
        if m * 10 ** k <= target:
            return float(m * 10 ** k)
    return float(10 ** k)


def rack_extent_m(scenario) -> np.ndarray:
    """(xmin, xmax, ymin, ymax) [m] of every rack position of the site (halls side by side,
    racks placed on their own by ``rack_overrides`` included), 2.5 m around the centres."""
    from twin.plant import rack_positions

    off = hall_offsets_m(scenario)
    xy = np.concatenate([rack_positions(hall)[0] + np.array([off[h], 0.0])
                         for h, hall in enumerate(scenario.site.halls)])
    pad = 2.5
    return np.array([xy[:, 0].min() - pad, xy[:, 0].max() + pad, xy[:, 1].min() - pad, xy[:, 1].max() + pad])


def scale_bar_points(scenario) -> tuple[np.ndarray, np.ndarray, float]:
    """A scale bar on the floor in front of the racks, inside the first hall: (points
    (6, 3), segments (3, 2), length [m]): a line of a round length with end ticks."""
    x_lo, x_hi, y_lo, _ = rack_extent_m(scenario)
    length = nice_length_m(x_hi - x_lo)
    y = max(y_lo - 0.5, 0.5)   # in front of the racks, on the floor (not under the front wall)
    x0 = max(x_lo, 0.5)
    pts = np.array([[x0, y, 0.02], [x0 + length, y, 0.02], [x0, y - 0.3, 0.02], [x0, y + 0.3, 0.02],
                    [x0 + length, y - 0.3, 0.02], [x0 + length, y + 0.3, 0.02]])
    return pts, np.array([[0, 1], [2, 3], [4, 5]]), length


def camera_frame(scenario, zoom: float = 0.95) -> dict:
    """The camera that frames the racks (plus the cooling units near them), from the
    south-east, above, so that rows and aisles are visible: focal point, position, view
    up, the bounds the renderer resets the camera to, and the zoom after that."""
    x0, x1, y0, y1 = rack_extent_m(scenario)
    centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2, 0.6])
    span = max(x1 - x0, y1 - y0)
    direction = np.array([0.35, -1.0, 1.05])
    direction /= np.linalg.norm(direction)
    return {"focal": centre.tolist(), "position": (centre + direction * span * 1.6).tolist(),
            "up": [0.0, 0.0, 1.0], "bounds": [float(x0), float(x1), float(y0), float(y1), 0.0, RACK_HEIGHT_M + 0.5],
            "zoom": float(zoom)}


@dataclass
class SceneParts:
    """Boxes (N, 6) [m] and label anchors of one snapshot's view, halls side by side."""

    floors: np.ndarray
    walls: np.ndarray
    halls: np.ndarray                  # (H, 6) the hall volumes (drawn as outlines)
    racks: np.ndarray                  # (R, 6) every rack position, plant order
    units: np.ndarray
    unit_active: np.ndarray            # (C,) bool
    enclosures: np.ndarray
    containment: np.ndarray
    obstacles: np.ndarray
    row_label_xyz: np.ndarray
    row_names: list[str] = field(default_factory=list)
    unit_label_xyz: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    unit_names: list[str] = field(default_factory=list)
    hall_label_xyz: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    hall_names: list[str] = field(default_factory=list)
    model_label_xyz: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    model_labels: list[str] = field(default_factory=list)


def _stack(rows) -> np.ndarray:
    rows = [np.asarray(r, float).reshape(-1, 6) for r in rows]
    return np.concatenate(rows) if rows else np.zeros((0, 6))


def scene_parts(snap) -> SceneParts:
    """The boxes and label anchors of ``snap`` (a :class:`~twin.viz.snapshot.Snapshot`)."""
    s = snap.scenario
    off = hall_offsets_m(s)
    floors, walls, halls, units, active, enc, cont, obst = [], [], [], [], [], [], [], []
    racks = np.zeros((snap.n_racks, 6))
    t = WALL_THICKNESS_M
    for h, hall in enumerate(s.site.halls):
        ox = off[h]
        W, D, H = hall.width_m, hall.depth_m, hall.height_m
        floors.append([ox, ox + W, 0.0, D, -0.05, 0.0])
        walls += [[ox - t, ox, -t, D + t, 0, WALL_HEIGHT_M], [ox + W, ox + W + t, -t, D + t, 0, WALL_HEIGHT_M],
                  [ox, ox + W, -t, 0, 0, WALL_HEIGHT_M], [ox, ox + W, D, D + t, 0, WALL_HEIGHT_M]]
        halls.append([ox, ox + W, 0.0, D, 0.0, H])
        for c, cu in enumerate(hall.cooling_units):
            a, b, z = COOLING_SIZE_M
            units.append([ox + cu.x_m - a / 2, ox + cu.x_m + a / 2, cu.y_m - b / 2, cu.y_m + b / 2, 0.0, z])
            active.append(bool(snap.cooling_active[h][c]) if h < len(snap.cooling_active) else True)
        idx = np.flatnonzero(snap.rack_hall == h)
        xy, intake = snap.rack_xy_m[idx], snap.rack_intake[idx]
        racks[idx] = rack_bounds(xy, intake, hall.rack_width_m, hall.rack_depth_m, RACK_HEIGHT_M, ox)
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
    row_xyz, row_names, cu_xyz, cu_names = [], [], [], []
    for h, hall in enumerate(s.site.halls):
        for row in hall.rows:
            dx, dy = (row.pitch_m, 0.0) if row.along == "x" else (0.0, row.pitch_m)
            row_xyz.append([off[h] + row.x_m - 1.2 * dx, row.y_m - 1.2 * dy, RACK_HEIGHT_M * 0.5])
            row_names.append(row.name)
        for cu in hall.cooling_units:
            cu_xyz.append([off[h] + cu.x_m, cu.y_m, COOLING_SIZE_M[2] + 0.15])
            cu_names.append(cu.name)
    groups = model_groups(snap)
    multi = len(s.site.halls) > 1   # name the halls of a multi-hall site at their front-left corner
    return SceneParts(
        floors=_stack(floors), walls=_stack(walls), halls=_stack(halls), racks=racks, units=_stack(units),
        unit_active=np.asarray(active, bool), enclosures=_stack(enc), containment=_stack(cont),
        obstacles=_stack(obst), row_label_xyz=np.asarray(row_xyz, float).reshape(-1, 3), row_names=row_names,
        unit_label_xyz=np.asarray(cu_xyz, float).reshape(-1, 3), unit_names=cu_names,
        hall_label_xyz=(np.array([[off[h] + 0.5, -1.0, 0.0] for h in range(len(s.site.halls))])
                        if multi else np.zeros((0, 3))),
        hall_names=[h.name for h in s.site.halls] if multi else [],
        model_label_xyz=np.array([grp["xyz"] for grp in groups], float).reshape(-1, 3),
        model_labels=[grp["model"] for grp in groups])


def model_groups(snap) -> list[dict]:
    """Runs of neighbouring racks of one row that hold the same node model, when the site
    holds more than one model (else none): ``model``, ``racks`` (their names), ``row``,
    ``whole_row`` and ``xyz``, a label anchor [m] above the run's middle rack."""
    models = list(snap.rack_models)
    if len(set(models)) < 2 or len(models) != snap.n_racks:
        return []
    off = hall_offsets_m(snap.scenario)
    names = snap.rack_names or [str(i) for i in range(snap.n_racks)]
    out: list[dict] = []
    r = 0
    for h, hall in enumerate(snap.scenario.site.halls):
        for row in hall.rows:
            idx = np.arange(r, r + row.racks)
            r += row.racks
            start = 0
            for k in range(1, len(idx) + 1):
                if k == len(idx) or models[idx[k]] != models[idx[start]]:
                    run = idx[start:k]
                    mid = run[len(run) // 2]
                    out.append({"model": models[run[0]], "racks": [names[i] for i in run], "row": row.name,
                                "whole_row": len(run) == len(idx),
                                "xyz": [off[h] + snap.rack_xy_m[mid, 0], snap.rack_xy_m[mid, 1], RACK_HEIGHT_M + 0.35]})
                    start = k
    return out


def model_summary(snap) -> str:
    """Which racks hold which node model, in one line ('' when the site holds one model):
    'xe9680: h1, h2 · sr675v3_h100nvl: l1-01…l1-06 · sr675v3_l40s: l1-07'."""
    per_model: dict[str, list[str]] = {}
    for grp in model_groups(snap):
        racks = grp["racks"]
        where = grp["row"] if grp["whole_row"] else (racks[0] if len(racks) == 1 else f"{racks[0]}…{racks[-1]}")
        per_model.setdefault(grp["model"], []).append(where)
    return " · ".join(f"{m}: {', '.join(w)}" for m, w in per_model.items())


def streamline_seeds(field, offset_x_m: float = 0.0, z_m: float = SLICE_HEIGHT_M,
                     seed_spacing_m: float | None = None) -> dict:
    """What the streamlines of a steady field start from: the plan velocity on the cell
    centres (``u``, ``v`` (ny, nx) [m/s], NaN as 0), the grid ``origin`` and ``spacing``
    [m], seed points (S, 3) on a regular lattice over moving room air, and the tracer's
    limits (length, first step, steps; it stops in air slower than 1 cm/s so that lines
    do not spiral in place)."""
    x = field["x_m"].values
    y = field["y_m"].values
    h = float(field.attrs.get("cell_m", x[1] - x[0] if len(x) > 1 else 1.0))
    u = np.nan_to_num(field["velocity"].values[0].astype(float))
    v = np.nan_to_num(field["velocity"].values[1].astype(float))
    fluid = ~field["solid"].values.astype(bool)
    step = max(1, int(round((seed_spacing_m or max(1.2, max(x[-1], y[-1]) / 14)) / h)))
    iy, ix = np.mgrid[step // 2:len(y):step, step // 2:len(x):step]
    ok = fluid[iy, ix] & (np.hypot(u, v)[iy, ix] > 1e-4)
    seeds = np.column_stack([offset_x_m + x[ix[ok]], y[iy[ok]], np.full(int(ok.sum()), z_m)])
    return {"u": u, "v": v, "origin": [float(offset_x_m + x[0]), float(y[0]), float(z_m)], "spacing": h,
            "seeds": seeds, "max_length": float(2 * max(x[-1], y[-1])), "initial_step": 1.0,
            "max_steps": 600, "terminal_speed": 0.01}


def overlay_text(snap, title: str | None = None, caption: bool = True,
                 wrap: int = 130) -> tuple[str, str | None]:
    """(title, caption) drawn over the view: the default title names the scenario, the
    time and the colour; the caption is the containment note (wrapped) over the KPI line."""
    from .snapshot import containment_note

    if title is None:
        title = f"{snap.scenario.name} · {snap.label} · {snap.scale.title}"
    text = snap.caption if caption else None
    note = containment_note(snap) if caption else ""
    if note:
        import textwrap
        note = "\n".join(textwrap.wrap(note, wrap))
        text = f"{note}\n{text}" if text else note
    return title, text
