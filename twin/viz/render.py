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

import numpy as np

from twin.results import Results
from twin.scenario.schema import Scenario

from . import scene as sc
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
        res = Results.load(path)
        return scenario_of(res), res
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such run folder or scenario file")
    from twin.scenario.loader import load_scenario

    return load_scenario(path, list(overrides or [])), None


def make_snapshot(source, color: str = "inlet_temp", time: str | None = None, field: bool = True) -> Snapshot:
    """Snapshot of ``source`` at ``time`` (a run) or at its design point (a scenario)."""
    scenario, results = load_source(source)
    if results is None:
        if time is not None:
            raise ValueError("--time needs a run (a run folder, or a scenario with --simulate)")
        return snapshot_from_scenario(scenario, color, field=field)
    i = parse_time(time, results.dataset["time"].values)
    return snapshot_from_results(results, color, i, field=field, scenario=scenario)


def _plotter(window_size, off_screen=True, notebook=False):
    return sc.new_plotter(window_size=window_size, off_screen=off_screen, notebook=notebook)


def render_snapshot(snap: Snapshot, out: str | Path | None = None, window_size=(1280, 800),
                    title: str | None = None, caption: bool = True, scalar_bars: bool = True,
                    streamlines: bool = True) -> np.ndarray:
    """Render ``snap`` off-screen; write it to ``out`` if given; return the RGB image."""
    pl = _plotter(window_size)
    try:
        sc.draw_snapshot(pl, snap, title=title, caption=caption, scalar_bars=scalar_bars,
                         streamlines=streamlines)
        sc.frame_camera(pl, snap.scenario)
        img = pl.screenshot(str(out) if out else None, return_img=True)
    finally:
        pl.close()
    return img


def render_image(source, out: str | Path, color: str = "inlet_temp", time: str | None = None,
                 field: bool = True, window_size=(1280, 800)) -> Path:
    """Draw the hall of ``source`` to an image file (PNG/JPEG)."""
    snap = make_snapshot(source, color, time, field)
    render_snapshot(snap, out, window_size)
    return Path(out)


def scene_blocks(snap: Snapshot):
    return sc.build_scene(snap)


def export_scene(source_or_snapshot, out: str | Path, color: str = "inlet_temp",
                 time: str | None = None, field: bool = True) -> Path:
    """Write the scene as a VTK multiblock (``.vtm``, one block per part) or a single
    legacy ``.vtk`` unstructured grid (cell arrays ``part`` (see
    ``twin.viz.scene.PART_CODES``) and ``value``). ParaView opens both."""
    snap = (source_or_snapshot if isinstance(source_or_snapshot, Snapshot)
            else make_snapshot(source_or_snapshot, color, time, field))
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


def frame_indices(n_samples: int, frames: int) -> np.ndarray:
    """Up to ``frames`` sample indices spread evenly over a run, first and last included."""
    frames = max(1, min(int(frames), n_samples))
    return np.unique(np.round(np.linspace(0, n_samples - 1, frames)).astype(int))


def animate(source, out: str | Path, color: str = "health", frames: int = 60, fps: float = 8.0,
            field: bool = False, window_size=(1024, 640), progress=None) -> Path:
    """Animate a run over its samples: racks appear as they are delivered and powered,
    colours follow the sampled quantity on one scale for the whole run, the title carries
    the clock and the caption the KPIs of the moment. GIF (imageio) or MP4 (imageio-ffmpeg).
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
    scale = color_scale(color, run_values(results, color))
    idx = frame_indices(results.dataset.sizes["time"], frames)
    snaps = [snapshot_from_results(results, color, i, field=field, scale=scale, scenario=scenario,
                                   plant=plant) for i in idx]
    slice_clim = None
    temps = [f["temperature"].values for s in snaps for f in s.fields if f is not None]
    if temps:
        lo = float(min(np.nanmin(t) for t in temps))
        hi = float(max(np.nanmax(t) for t in temps))
        slice_clim = (np.floor(lo), max(np.ceil(hi), np.floor(lo) + 2))
    out.parent.mkdir(parents=True, exist_ok=True)
    pl = _plotter(window_size)
    try:
        if suffix == ".gif":
            pl.open_gif(str(out), fps=fps, subrectangles=True)
        else:
            pl.open_movie(str(out), framerate=fps, quality=7)
        for k, snap in enumerate(snaps):
            sc.remove_scene(pl)
            sc.draw_snapshot(pl, snap, slice_clim=slice_clim)
            if k == 0:
                sc.frame_camera(pl, scenario)
            # one explicit render per frame (Plotter.write_frame renders twice; a bare
            # screenshot of an off-screen plotter may return the previous frame)
            pl.render_window.Render()
            pl.mwriter.append_data(pl.screenshot(return_img=True))
            if progress is not None:
                progress((k + 1) / len(snaps))
    finally:
        pl.close()
    return out


def jupyter_backend() -> str:
    """pyvista's trame backend when trame is installed, else static images.
    ``TWIN_JUPYTER_BACKEND`` overrides (e.g. ``static`` in tests)."""
    forced = os.environ.get("TWIN_JUPYTER_BACKEND")
    if forced:
        return forced
    try:
        import trame  # noqa: F401
        import trame_vtk  # noqa: F401
        import trame_vuetify  # noqa: F401
    except ImportError:
        return "static"
    return "trame"


def show(source, color: str = "inlet_temp", time: str | None = None, field: bool = True,
         window_size=(1024, 640), jupyter_backend_name: str | None = None):
    """Show the hall in Jupyter: interactive through pyvista's trame backend when it is
    installed, a static image otherwise. Returns what ``Plotter.show`` returns."""
    snap = source if isinstance(source, Snapshot) else make_snapshot(source, color, time, field)
    backend = jupyter_backend_name or jupyter_backend()

    def shown(name):
        pl = _plotter(window_size, off_screen=name == "static", notebook=True)
        sc.draw_snapshot(pl, snap)
        sc.frame_camera(pl, snap.scenario)
        return pl.show(jupyter_backend=name)

    if backend == "static":
        return shown("static")
    try:
        return shown(backend)
    except Exception:  # no trame server here (e.g. a headless kernel): show a picture
        return shown("static")
