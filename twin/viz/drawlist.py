"""A snapshot as a compact scene description for the render child, and the child's driver.

:func:`describe` turns a :class:`~twin.viz.snapshot.Snapshot` into plain arrays (boxes,
quads and lines with their colours baked in as RGB, streamline seeds, label anchors,
colour-bar tables) and a JSON ``meta`` that names them, with the texts and the camera.
:func:`render_image` writes that description to a temporary ``.npz`` and runs
:mod:`twin.viz.vtkdraw` as a separate Python process, which imports VTK alone (no
pyvista, matplotlib, xarray, the simulation, or for a picture numpy: it reads the ``.npz``
with zipfile) and writes the PNG. :class:`FrameStream`
feeds an animation's frames to one child over a pipe, one at a time.

Nothing here imports pyvista or VTK: the parent keeps the run and the physics, the child
keeps the OpenGL driver, and neither holds both (bench/RESULTS.md, "Memory per hall PNG").
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from . import geometry as g
from .snapshot import ColorScale, Snapshot

CHILD = Path(__file__).with_name("vtkdraw.py")
"""The render child's script (run by path, so that it imports nothing of twin)."""
STREAMLINE_LIFT_M = 0.02
"""Height of the drawn streamlines above the room-air slice [m]."""


def _hex(rgb) -> str:
    r, gg, b = (int(round(float(c) * 255)) for c in rgb[:3])
    return f"#{r:02x}{gg:02x}{b:02x}"


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


def cmap_table(cmap: str, n: int = 256) -> np.ndarray:
    """(n, 3) uint8 colours of a matplotlib colour map (what a VTK lookup table holds)."""
    import matplotlib
    return (np.asarray(matplotlib.colormaps[cmap](np.linspace(0.0, 1.0, n)))[:, :3] * 255).round().astype(np.uint8)


def table_rgb(table: np.ndarray, values, clim) -> np.ndarray:
    """(N, 3) colours of ``values`` looked up in ``table`` over ``clim`` as a VTK lookup
    table maps them (index = (v - lo) / (hi - lo) * n, clamped)."""
    v = np.asarray(values, float)
    lo, hi = float(clim[0]), float(clim[1])
    idx = np.floor((v - lo) / (hi - lo) * len(table)).astype(int)
    return table[np.clip(idx, 0, len(table) - 1)]


def slice_quads(field, offset_x_m: float, z_m: float = g.SLICE_HEIGHT_M) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Room-air cells of a steady field as quads at height ``z_m``: (points (4K, 3),
    quads (K, 4), temperature (K,) [°C]); cells inside racks and obstacles left out."""
    x = field["x_m"].values
    y = field["y_m"].values
    h = float(field.attrs.get("cell_m", x[1] - x[0] if len(x) > 1 else 1.0))
    t = field["temperature"].values.astype(float)
    iy, ix = np.nonzero(np.isfinite(t))
    cx, cy = offset_x_m + x[ix], y[iy]
    k = len(ix)
    pts = np.empty((k, 4, 3))
    pts[:, :, 2] = z_m
    for j, (sx, sy) in enumerate(((-1, -1), (1, -1), (1, 1), (-1, 1))):
        pts[:, j, 0] = cx + sx * h / 2
        pts[:, j, 1] = cy + sy * h / 2
    return pts.reshape(-1, 3), np.arange(4 * k).reshape(k, 4), t[iy, ix]


def slice_range(snap: Snapshot) -> tuple[float, float] | None:
    """Colour range of the room-air slice [°C]: whole degrees around the slice's values."""
    temps = [f["temperature"].values for f in snap.fields if f is not None]
    temps = [t[np.isfinite(t)] for t in temps]
    temps = [t for t in temps if t.size]
    if not temps:
        return None
    lo = float(min(t.min() for t in temps))
    hi = float(max(t.max() for t in temps))
    return (float(np.floor(lo)), float(max(np.ceil(hi), np.floor(lo) + 2)))


def _bar(title: str, key: str, clim, position_y: float, colour: str) -> dict:
    return {"title": title, "colors": key, "clim": [float(clim[0]), float(clim[1])], "position": [0.86, position_y],
            "width": 0.06, "height": 0.38, "title_font_size": 14, "label_font_size": 12, "fmt": "%.1f",
            "n_labels": 5, "color": colour}


def describe(snap: Snapshot, window_size=(1280, 800), title: str | None = None, caption: bool = True,
             scalar_bars: bool = True, streamlines: bool = True, labels: bool = True,
             rack_labels: bool = False, slice_clim: tuple[float, float] | None = None) -> tuple[dict, dict]:
    """(meta, arrays) of ``snap``: what :mod:`twin.viz.vtkdraw` draws. The same view as
    :func:`twin.viz.scene.draw_snapshot` (same parts, colours, labels, bars, camera)."""
    c = g.COLOURS
    parts = g.scene_parts(snap)
    arrays: dict[str, np.ndarray] = {}
    meshes: list[dict] = []

    def boxes(name: str, bounds, **style):
        if len(bounds):
            arrays[name] = np.asarray(bounds, float)
            meshes.append({"kind": "boxes", "bounds": name, **style})

    boxes("floor", parts.floors, color=c["floor"])
    boxes("walls", parts.walls, color=c["walls"])
    arrays["outline_points"], arrays["outline_segments"] = _box_edges(parts.halls)
    meshes.append({"kind": "lines", "points": "outline_points", "segments": "outline_segments",
                   "color": c["outline"], "line_width": 1.5})
    shown = snap.rack_state >= 0
    if (~shown).any():
        slots = parts.racks[~shown].copy()
        slots[:, 5] = 0.02
        boxes("slots", slots, color=c["slots"], edges=c["slot_edges"])
    scale = snap.scale
    if shown.any():
        arrays["rack_rgb"] = rack_rgb(scale, snap.rack_value[shown])
        boxes("racks", parts.racks[shown], rgb="rack_rgb", edges=c["rack_edges"], line_width=1)
    if len(parts.units):
        hexes = np.array([c["unit_off"], c["unit_on"]])
        arrays["unit_rgb"] = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in hexes[parts.unit_active.astype(int)]],
                                      np.uint8)
        boxes("units", parts.units, rgb="unit_rgb", edges=c["unit_edges"])
    boxes("enclosures", parts.enclosures, color=c["enclosures"], opacity=g.OPACITY["enclosures"],
          edges=c["enclosure_edges"])
    boxes("containment", parts.containment, color=c["containment"], opacity=g.OPACITY["containment"],
          edges=c["containment_edges"])
    boxes("obstacles", parts.obstacles, color=c["obstacles"])

    bars: list[dict] = []
    off = g.hall_offsets_m(snap.scenario)
    s_clim = slice_clim or slice_range(snap)
    if s_clim is not None:
        table = cmap_table(g.SLICE_CMAP)
        arrays["slice_table"] = table
        for h, f in enumerate(snap.fields):
            if f is None:
                continue
            pts, quads, temp = slice_quads(f, off[h])
            if len(quads):
                arrays[f"slice{h}_points"], arrays[f"slice{h}_quads"] = pts, quads
                arrays[f"slice{h}_rgb"] = table_rgb(table, temp, s_clim)
                meshes.append({"kind": "quads", "points": f"slice{h}_points", "quads": f"slice{h}_quads",
                               "rgb": f"slice{h}_rgb", "opacity": g.OPACITY["slice"]})
        if scalar_bars:
            bars.append(_bar(f"room air at {g.SLICE_HEIGHT_M:g} m [°C]", "slice_table", s_clim, 0.06, c["text"]))
    if streamlines:
        for h, f in enumerate(snap.fields):
            if f is None:
                continue
            # a hair above the slice: translucent parts are blended in drawing order here, and a
            # line exactly on the slice would lose the depth test to it
            sd = g.streamline_seeds(f, off[h], g.SLICE_HEIGHT_M + STREAMLINE_LIFT_M)
            if not len(sd["seeds"]):
                continue
            for k in ("u", "v", "seeds"):
                arrays[f"stream{h}_{k}"] = sd.pop(k)
            meshes.append({"kind": "streamlines", "u": f"stream{h}_u", "v": f"stream{h}_v", "seeds": f"stream{h}_seeds",
                           **sd, "color": c["streamlines"], "line_width": 1.2, "opacity": g.OPACITY["streamlines"]})
    pts, segments, length = g.scale_bar_points(snap.scenario)
    arrays["scale_points"], arrays["scale_segments"] = pts, segments
    meshes.append({"kind": "lines", "points": "scale_points", "segments": "scale_segments", "color": c["text"],
                   "line_width": 3})

    texts: list[dict] = []
    w, h = (int(v) for v in window_size)
    if scalar_bars and shown.any():
        if scale.categories is None:
            arrays["rack_table"] = cmap_table(cast(str, scale.cmap))
            bars.insert(0, _bar(scale.title, "rack_table", scale.clim, 0.52, c["text"]))
        else:   # named categories as a legend (upper right), never over the room-air colour bar
            present = sorted({int(v) for v in snap.rack_value[shown] if np.isfinite(v)})
            entries = [(scale.categories[k], scale.cmap[k]) for k in sorted(scale.categories)
                       if k in present or not present]
            x, ys, fs = g.legend_layout((w, h), scale.title, [e[0] for e in entries])
            texts.append({"text": scale.title, "position": [x, ys[0]], "font_size": fs + 1, "color": c["text"]})
            texts += [{"text": str(label), "position": [x, ys[i + 1]], "font_size": fs,
                       "color": _hex(_rgb(colour))} for i, (label, colour) in enumerate(entries)]

    point_labels: list[dict] = []

    def anchor(name: str, xyz, names, **style):
        if len(names):
            arrays[name] = np.asarray(xyz, float).reshape(-1, 3)
            point_labels.append({"points": name, "names": [str(n) for n in names], **style})

    anchor("scale_label", pts[[1]] + np.array([0.3, -0.6, 0.0]), [f"{length:g} m"], **g.LABELS["scale"])
    if labels:
        anchor("row_label_xyz", parts.row_label_xyz, parts.row_names, **g.LABELS["row"])
        anchor("unit_label_xyz", parts.unit_label_xyz, parts.unit_names, **g.LABELS["unit"])
        anchor("model_label_xyz", parts.model_label_xyz, parts.model_labels, **g.LABELS["model"])
    if rack_labels and snap.rack_names and shown.any():
        b = parts.racks[shown]
        centres = np.column_stack([(b[:, 0] + b[:, 1]) / 2, (b[:, 2] + b[:, 3]) / 2,
                                   np.full(len(b), g.RACK_HEIGHT_M + 0.1)])
        anchor("rack_label_xyz", centres, [snap.rack_names[i] for i in np.flatnonzero(shown)], **g.LABELS["rack"])
    anchor("hall_label_xyz", parts.hall_label_xyz, parts.hall_names, **g.LABELS["hall"])

    title, text = g.overlay_text(snap, title, caption)
    if title:
        texts.append({"text": title, "corner": "upper_left", "font_size": 11, "color": c["text"]})
    if text:
        texts.append({"text": text, "corner": "lower_left", "font_size": 8, "color": c["text"]})
    meta = {"size": [w, h], "background": c["background"], "camera": g.camera_frame(snap.scenario),
            "meshes": meshes, "scalar_bars": bars, "labels": point_labels, "texts": texts}
    return meta, arrays


def _rgb(colour: str):
    import matplotlib
    return matplotlib.colors.to_rgb(colour)


def _box_edges(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 12 edges of each box (N, 6) as points (8N, 3) and segments (12N, 2)."""
    b = np.asarray(bounds, float).reshape(-1, 6)
    corners = g.box_corners(b).reshape(-1, 3)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4], [0, 4], [1, 5], [2, 6], [3, 7]])
    segs = (np.arange(len(b))[:, None, None] * 8 + edges[None]).reshape(-1, 2)
    return corners, segs


def _plain(a: np.ndarray) -> np.ndarray:
    """``a`` in one of the three types the render child reads (float64, int64, uint8), C order."""
    a = np.asarray(a)
    dtype = np.uint8 if a.dtype in (np.uint8, np.bool_) else np.int64 if a.dtype.kind in "iu" else np.float64
    return np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<"))


def pack(meta: dict, arrays: dict, target: str | Path | IO[bytes]) -> None:
    """Write a description as one ``.npz`` (arrays plus the JSON ``meta``). The render child
    reads it without numpy (:func:`twin.viz.vtkdraw.load`): little-endian float64, int64 and
    uint8 arrays in C order."""
    plain: dict[str, Any] = {k: _plain(v) for k, v in arrays.items()}
    np.savez(cast(Any, target), meta=np.array(json.dumps(meta)), **plain)


def child_command(*args: str) -> list[str]:
    return [sys.executable, str(CHILD), *args]


def render_image(snap: Snapshot, out: str | Path | None = None, window_size=(1280, 800),
                 **kwargs) -> np.ndarray:
    """Draw ``snap`` in the render child; write ``out`` (PNG/JPEG) if given; return the
    (H, W, 3) picture. ``kwargs`` as :func:`describe`. Raises RuntimeError with the
    child's message if it fails."""
    meta, arrays = describe(snap, window_size, **kwargs)
    with tempfile.TemporaryDirectory(prefix="twin-render-") as tmp:
        scene = Path(tmp) / "scene.npz"
        pack(meta, arrays, scene)
        img_path = Path(out) if out is not None else Path(tmp) / "image.png"
        raw = Path(tmp) / "image.npy"
        proc = subprocess.run(child_command("image", str(scene), str(img_path), str(raw)),
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the render child failed: {proc.stderr.strip()[-2000:]}")
        return np.load(raw)


GLTF_VIEW: dict[str, Any] = {"window_size": (640, 400), "caption": False, "scalar_bars": False, "labels": False}
"""What a glTF file holds of the view: the meshes (glTF has no text; the window size only
sets the camera's aspect ratio)."""


def run_child(mode: str, meta: dict, arrays: dict, out: str | Path) -> Path:
    """Write ``out`` from a description in a render child (``vtkdraw.py MODE``: ``gltf`` or
    ``page``) beside this process. Raises RuntimeError with the child's message if it fails."""
    with tempfile.TemporaryDirectory(prefix=f"twin-{mode}-") as tmp:
        scene = Path(tmp) / "scene.npz"
        pack(meta, arrays, scene)
        proc = subprocess.run(child_command(mode, str(scene), str(out)), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the render child failed: {proc.stderr.strip()[-2000:]}")
    return Path(out)


def export_gltf(snap: Snapshot, out: str | Path) -> Path:
    """Write ``snap``'s meshes as glTF 2.0 (inline buffers) through the render child
    (``vtkdraw.py gltf``: VTK's glTF exporter, no OpenGL context)."""
    return run_child("gltf", *describe(snap, **GLTF_VIEW), out)


def hand_over(snap: Snapshot, out: str | Path, window_size=(1280, 800), say: str | None = None,
              since: float | None = None, mode: str = "image", **kwargs) -> None:
    """Replace this process by the render child (``os.execv``) drawing ``snap``: ``mode``
    ``image`` a PNG/JPEG (``kwargs`` as :func:`describe`), ``gltf`` the meshes as glTF. See
    :func:`hand_over_description`; never returns."""
    meta, arrays = describe(snap, **GLTF_VIEW) if mode == "gltf" else describe(snap, window_size, **kwargs)
    hand_over_description(meta, arrays, out, mode, say, since)


def hand_over_description(meta: dict, arrays: dict, out: str | Path, mode: str = "image",
                          say: str | None = None, since: float | None = None) -> None:
    """Replace this process by the render child (``os.execv``): write the description to a
    temporary folder, flush, and exec :mod:`twin.viz.vtkdraw` ``mode`` (image, gltf, page),
    which deletes the folder, writes ``out`` and prints ``say``. Only for the ``twin render``
    command's own process (the run, xarray and scipy are gone while VTK works); never
    returns."""
    tmp = tempfile.mkdtemp(prefix="twin-render-")
    scene = Path(tmp) / "scene.npz"
    pack(meta, arrays, scene)
    del meta, arrays
    args = [mode, str(scene), str(out), "--remove", tmp]
    if say:
        args += ["--say", say]
    if since is not None:
        args += ["--since", repr(float(since))]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, child_command(*args))


class FrameStream:
    """An animation drawn by one render child: :meth:`send` one frame description at a
    time (the child draws and encodes it at once); :meth:`close` ends the file. ``progress``
    is called with the number of frames the child has finished."""

    def __init__(self, out: str | Path, fps: float, progress: Callable[[int], None] | None = None):
        self.proc = subprocess.Popen(child_command("stream", str(out), repr(float(fps))), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.progress = progress
        self.sent = 0
        self.done = 0

    def _drain(self, until: int) -> None:
        assert self.proc.stdout is not None
        while self.done < until:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith(b"frame "):
                self.done = int(line.split()[1])
                if self.progress is not None:
                    self.progress(self.done)

    def send(self, meta: dict, arrays: dict) -> None:
        buf = io.BytesIO()
        pack(meta, arrays, buf)
        data = buf.getvalue()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.close()
        self.sent += 1
        self._drain(self.sent - 1)   # keep at most one frame in flight

    def close(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(struct.pack("<Q", 0))
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        self._drain(self.sent)
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        if self.proc.wait() != 0:
            raise RuntimeError(f"the render child failed: {err.strip()[-2000:]}")

    def __enter__(self) -> FrameStream:
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            self.proc.kill()
            self.proc.wait()
            return
        self.close()
