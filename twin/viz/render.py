"""Render the hall: PNG, VTK export, GIF/MP4 animation of a run, interactive Jupyter view.

    from twin.viz import render
    render.render_image(source, "hall.png", color="inlet_temp", time="2024-06-01")
    render.export_scene(source, "hall.vtm")            # ParaView opens it
    render.animate(results, "ramp.gif", color="health")
    render.show(results, color="power")                # trame in Jupyter when available

``source`` is a :class:`twin.Results`, a run folder (with ``results.nc``), a Scenario or a
scenario YAML path; a scenario alone is drawn at its design point (see
:func:`twin.viz.snapshot.snapshot_from_scenario`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import numpy as np

from twin.results import Results
from twin.scenario.schema import Scenario

from .snapshot import (
    Snapshot,
    color_scale,
    parse_time,
    run_values,
    scenario_of,
    snapshot_from_results,
    snapshot_from_scenario,
)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
EXPORT_SUFFIXES = (".vtm", ".vtk")
PAGE_SUFFIXES = (".html",)
GLTF_SUFFIXES = (".gltf",)
ANIMATION_SUFFIXES = (".gif", ".mp4")


def load_source(source, overrides: list[str] | None = None) -> tuple[Scenario, Results | None]:
    """(scenario, results or None) of a run folder, Results, Scenario or scenario file."""
    if isinstance(source, Results):
        return scenario_of(source), source
    if isinstance(source, Scenario):
        return source, None
    path = Path(source)
    if path.is_dir():
        if not (path / "results.nc").exists():
            raise FileNotFoundError(f"{path}: a run folder must contain results.nc (made by `twin run`)")
        from .snapshot import load_view
        res = load_view(path)   # the series a picture shows, not the per-job tables
        return scenario_of(res), res
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such run folder or scenario file")
    from twin.scenario.loader import load_scenario

    return load_scenario(path, list(overrides or [])), None


def make_snapshot(source, color: str = "inlet_temp", time: str | None = None, field: bool = True,
                  clim: tuple[float, float] | None = None) -> Snapshot:
    """Snapshot of ``source`` at ``time`` (a run) or at its design point (a scenario);
    ``clim`` fixes the racks' colour range (compare halls or runs colour for colour)."""
    from .snapshot import with_clim
    scenario, results = load_source(source)
    if results is None:
        if time is not None:
            raise ValueError("--time needs a run (a run folder, or a scenario with --simulate)")
        return with_clim(snapshot_from_scenario(scenario, color, field=field), clim)
    i = parse_time(time, results.dataset["time"].values)
    return with_clim(snapshot_from_results(results, color, i, field=field, scenario=scenario), clim)


def _scene():
    """:mod:`twin.viz.scene` (pyvista), imported only by the exports that need it: a PNG
    or an animation is drawn by the render child and never loads pyvista here."""
    from . import scene
    return scene


def _plotter(window_size, off_screen=True, notebook=False):
    return _scene().new_plotter(window_size=window_size, off_screen=off_screen, notebook=notebook)


def render_snapshot(snap: Snapshot, out: str | Path | None = None, window_size=(1280, 800),
                    title: str | None = None, caption: bool = True, scalar_bars: bool = True,
                    streamlines: bool = True, labels: bool = True, rack_labels: bool = False) -> np.ndarray:
    """Render ``snap`` off-screen; write it to ``out`` (PNG/JPEG) if given; return the RGB
    image. The picture is drawn by the render child (:mod:`twin.viz.vtkdraw`, VTK alone in
    its own process), so this process never loads pyvista or an OpenGL driver."""
    from .drawlist import render_image as draw
    return draw(snap, out, window_size, title=title, caption=caption, scalar_bars=scalar_bars,
                streamlines=streamlines, labels=labels, rack_labels=rack_labels)


def render_image(source, out: str | Path, color: str = "inlet_temp", time: str | None = None,
                 field: bool = True, window_size=(1280, 800)) -> Path:
    """Draw the hall of ``source`` to an image file (PNG/JPEG)."""
    snap = make_snapshot(source, color, time, field)
    render_snapshot(snap, out, window_size)
    return Path(out)


def scene_blocks(snap: Snapshot):
    return _scene().build_scene(snap)


def export_scene(source_or_snapshot, out: str | Path, color: str = "inlet_temp",
                 time: str | None = None, field: bool = True) -> Path:
    """Write the scene as a VTK multiblock (``.vtm``, one block per part) or a single
    legacy ``.vtk`` unstructured grid (cell arrays ``part`` (see
    ``twin.viz.scene.PART_CODES``) and ``value``). ParaView opens both."""
    snap = (source_or_snapshot if isinstance(source_or_snapshot, Snapshot)
            else make_snapshot(source_or_snapshot, color, time, field))
    sc = _scene()
    blocks = sc.build_scene(snap)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".vtm":
        blocks.save(out)
    elif out.suffix.lower() == ".vtk":
        merged = blocks.combine(merge_points=False)
        merged.field_data["part_names"] = list(sc.PART_CODES)
        merged.field_data["quantity"] = [snap.scale.quantity]
        merged.save(out, binary=True)
    else:
        raise ValueError(f"{out}: export needs .vtm or .vtk")
    return out


def export_gltf(snap: Snapshot, out: str | Path) -> Path:
    """Write the scene as glTF 2.0 (``.gltf`` with its buffers inlined) for Blender, three.js
    or any glTF viewer: the meshes with their colours baked in (no text, no colour bars),
    written by the render child (VTK alone, no OpenGL context; bench/RESULTS.md)."""
    out = Path(out)
    if out.suffix.lower() not in GLTF_SUFFIXES:
        raise ValueError(f"{out}: glTF export needs .gltf")
    out.parent.mkdir(parents=True, exist_ok=True)
    from .drawlist import export_gltf as child_gltf  # VTK alone, in the render child
    return child_gltf(snap, out)


def _page_overlay(snap: Snapshot) -> str:
    """HTML drawn over the interactive view: title, colour legend, caption (vtk.js shows
    no 2-D text, so the page carries it)."""
    import html as _html

    from .snapshot import containment_note
    sc_ = snap.scale
    if sc_.categories is not None:
        legend = "".join(f"<div><span style='background:{sc_.cmap[k]}'></span>{_html.escape(v)}</div>"
                         for k, v in sorted(sc_.categories.items()))
    else:
        import matplotlib
        cmap = matplotlib.colormaps[cast(str, sc_.cmap)]   # continuous scale: cmap is a name
        stops = ",".join(matplotlib.colors.to_hex(cmap(x)) for x in np.linspace(0, 1, 9))
        legend = (f"<div class='bar' style='background:linear-gradient(to right,{stops})'></div>"
                  f"<div class='ends'><span>{sc_.clim[0]:.1f}</span><span>{sc_.clim[1]:.1f}</span></div>")
    from .geometry import model_summary
    note = containment_note(snap)
    models = model_summary(snap)
    title = f"{snap.scenario.name} · {snap.label} · {sc_.title}"
    return ("<div id='twin-overlay' style='position:fixed;left:10px;top:8px;z-index:2147483647;font:14px system-ui,"
            "sans-serif;background:rgba(255,255,255,.85);padding:6px 10px;border-radius:6px;max-width:46%'>"
            f"<b>{_html.escape(title)}</b><div id='twin-legend' style='margin-top:4px'>"
            f"<div style='font-size:12px'>{_html.escape(sc_.title)}</div>{legend}</div>"
            f"<div style='font-size:12px;margin-top:4px'>{_html.escape(snap.caption)}</div>"
            + (f"<div style='font-size:12px;margin-top:4px;color:#1b4f72'>{_html.escape(note)}</div>" if note else "")
            + (f"<div id='twin-models' style='font-size:12px;margin-top:4px;color:#4a235a'>node models: "
               f"{_html.escape(models)}</div>" if models else "")
            + "<div style='font-size:11px;color:#666;margin-top:4px'>drag to rotate, wheel to zoom, "
              "shift+drag to pan</div></div>"
            "<style>#twin-legend span{display:inline-block;width:12px;height:12px;margin-right:5px;"
            "border:1px solid #555;vertical-align:middle} #twin-legend .bar{height:12px;width:220px;"
            "border:1px solid #555} #twin-legend .ends{display:flex;justify-content:space-between;width:222px;"
            "font-size:11px}</style>")


PAGE_VIEW: dict[str, Any] = {"window_size": (1280, 800), "caption": False, "scalar_bars": False, "labels": False}
"""What the interactive page draws in 3-D (vtk.js shows no 2-D text: the page's overlay
carries the title, legend and caption)."""


def page_description(snap: Snapshot, streamlines: bool = True) -> tuple[dict, dict]:
    """The render child's description of the interactive page: the meshes and, as
    ``meta["page_overlay"]``, the script that lays the title, legend and caption over the view."""
    import json as _json

    from .drawlist import describe
    meta, arrays = describe(snap, **PAGE_VIEW, streamlines=streamlines)
    # the vtk.js app rebuilds the page body when it starts: add the overlay after it has
    meta["page_overlay"] = (
        "<script>(function(){const html=" + _json.dumps(_page_overlay(snap)).replace("</", "<\\/")
        + ";function add(){if(!document.getElementById('twin-overlay')){const d=document.createElement"
        "('div');d.innerHTML=html;while(d.firstChild){document.body.appendChild(d.firstChild)}}}"
        "window.addEventListener('load',()=>{add();setTimeout(add,300);setTimeout(add,1500)});})();"
        "</script>")
    return meta, arrays


def export_page(snap: Snapshot, out: str | Path, streamlines: bool = True) -> Path:
    """Write an interactive page of the scene: one self-contained HTML file that works
    offline (no server, nothing fetched), vtk.js with the title, colour legend and caption
    laid over it. Written by the render child (VTK and trame-vtk's serializers, no pyvista
    and no OpenGL context; bench/RESULTS.md)."""
    out = Path(out)
    if out.suffix.lower() not in PAGE_SUFFIXES:
        raise ValueError(f"{out}: an interactive page is written as .html")
    try:
        import trame_vtk  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("writing .html needs trame-vtk (pip install -e .[viz]); or write .png / .vtm") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    from .drawlist import run_child
    return run_child("page", *page_description(snap, streamlines), out)


def frame_indices(n_samples: int, frames: int) -> np.ndarray:
    """Up to ``frames`` sample indices spread evenly over a run, first and last included."""
    frames = max(1, min(int(frames), n_samples))
    return np.unique(np.round(np.linspace(0, n_samples - 1, frames)).astype(int))


def animate(source, out: str | Path, color: str = "health", frames: int = 60, fps: float = 8.0,
            field: bool = False, window_size=(1024, 640), progress=None,
            clim: tuple[float, float] | None = None) -> Path:
    """Animate a run over its samples: racks appear as they are delivered and powered,
    colours follow the sampled quantity on one scale for the whole run, the title carries
    the clock and the caption the KPIs of the moment. GIF (Pillow) or MP4 (imageio-ffmpeg),
    drawn and written frame by frame by the render child (memory does not grow with frames).
    """
    scenario, results = load_source(source)
    if results is None:
        raise ValueError("an animation needs a run (a run folder, or a scenario with --simulate)")
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in ANIMATION_SUFFIXES:
        raise ValueError(f"{out}: an animation is written as .gif or .mp4")
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError as exc:
            raise RuntimeError("writing MP4 needs imageio-ffmpeg (pip install imageio-ffmpeg); "
                               "or write a .gif") from exc
    from twin.plant import build_plant

    plant = build_plant(scenario)
    scale = color_scale(color, run_values(results, color, plant), plant.model_names)
    if clim is not None:
        from dataclasses import replace
        if scale.categories is not None:
            raise ValueError(f"--clim applies to a continuous colour, not to {color}")
        scale = replace(scale, clim=(float(clim[0]), float(clim[1])))
    idx = frame_indices(results.dataset.sizes["time"], frames)

    def snap_at(i: int) -> Snapshot:
        return snapshot_from_results(results, color, int(i), field=field, scale=scale, scenario=scenario,
                                     plant=plant)

    slice_clim = None
    if field:   # one room-air scale for the whole film: a first pass keeps only each frame's range
        from .drawlist import slice_range
        ranges = [r for r in (slice_range(snap_at(i)) for i in idx) if r is not None]
        if ranges:
            slice_clim = (min(r[0] for r in ranges), max(r[1] for r in ranges))
    out.parent.mkdir(parents=True, exist_ok=True)
    from .drawlist import FrameStream, describe

    def done(k: int) -> None:
        if progress is not None:
            progress(k / len(idx))

    # frames are described one at a time and drawn and encoded by the render child as they
    # come: neither process holds more than the frame in flight
    with FrameStream(out, fps, done) as stream:
        for i in idx:
            stream.send(*describe(snap_at(i), window_size, slice_clim=slice_clim))
    return out


def jupyter_backend() -> str:
    """How :func:`show` draws in Jupyter: ``html`` (default: the offline interactive page of
    :func:`export_page` in an iframe; no server, nothing downloaded), ``static`` (an
    image) or ``trame`` (pyvista's server-side backend; needs network access for some of
    its clients). ``TWIN_JUPYTER_BACKEND`` overrides."""
    forced = os.environ.get("TWIN_JUPYTER_BACKEND")
    if forced:
        return forced
    try:
        import trame_vtk  # noqa: F401
    except ImportError:
        return "static"
    return "html"


def page_iframe(snap: Snapshot, width: int = 960, height: int = 600) -> str:
    """The interactive page of ``snap`` as one ``<iframe srcdoc=...>`` (self-contained)."""
    import html as _html
    import tempfile

    with tempfile.TemporaryDirectory(prefix="twin-page-") as tmp:
        text = export_page(snap, Path(tmp) / "hall.html").read_text(encoding="utf-8")
    return (f'<iframe srcdoc="{_html.escape(text, quote=True)}" width="{width}" height="{height}" '
            f'style="border:1px solid #ccc"></iframe>')


class HallPage:
    """The offline interactive page as Jupyter shows it (``_repr_html_``: one ``<iframe
    srcdoc=...>``, see :func:`page_iframe`). Not ``IPython.display.HTML``, which warns for
    iframe markup ("Consider using IPython.display.IFrame instead"); ``IFrame`` only points
    at a URL, and the page must travel inside the notebook to work offline."""

    def __init__(self, iframe: str):
        self.iframe = iframe

    def _repr_html_(self) -> str:
        return self.iframe

    def __repr__(self) -> str:
        return "<twin hall page: interactive, offline (shown in Jupyter)>"


def show(source, color: str = "inlet_temp", time: str | None = None, field: bool = True,
         window_size=(1024, 640), jupyter_backend_name: str | None = None):
    """Show the hall in Jupyter: an interactive page that works offline (``html``), a
    static image, or pyvista's trame backend. Returns what Jupyter displays."""
    snap = source if isinstance(source, Snapshot) else make_snapshot(source, color, time, field)
    backend = jupyter_backend_name or jupyter_backend()

    def shown(name):
        sc = _scene()
        pl = _plotter(window_size, off_screen=name == "static", notebook=True)
        sc.draw_snapshot(pl, snap)
        sc.frame_camera(pl, snap.scenario)
        return pl.show(jupyter_backend=name)

    if backend == "html":
        return HallPage(page_iframe(snap, *window_size))
    if backend == "static":
        return shown("static")
    try:
        return shown(backend)
    except Exception:  # no trame server here (e.g. a headless kernel): show a picture
        return shown("static")
