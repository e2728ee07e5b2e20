"""``twin render``: draw the hall of a run or scenario to PNG, VTK, GIF or MP4.

    twin render RUN_DIR_OR_SCENARIO --color inlet_temp|power|rpp_load|health|ashrae|node_model
                [--time T] --out hall.png|hall.html|hall.gltf|hall.vtm|hall.vtk
    twin render RUN_DIR_OR_SCENARIO --animate --out ramp.gif|ramp.mp4 [--frames N] [--fps F]

A PNG or JPEG is drawn by the render child (``twin/viz/vtkdraw.py``, VTK alone): this
process writes the scene description and then hands itself over to the child (exec), so
the command never holds the run and the OpenGL driver at once (243 MB instead of 570 MB
for Blue Vela, bench/RESULTS.md). An animation streams its frames to one child.

Bad input (missing file, run folder without results.nc, unknown colour, unreadable time,
unsupported output type, invalid scenario) exits 2 with one clear message.
"""

from __future__ import annotations

import argparse
import sys
import time as _time

from twin.errors import EXIT_BAD_INPUT, ScenarioError
from twin.viz.snapshot import COLORS


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 too; keep its message on one line
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="twin render", description=(
        "Draw the hall in 3D (pyvista, off-screen): floor, walls, racks coloured by a quantity, "
        "cooling units, containment/enclosures, obstacles, and where the field is solved a "
        "room-air temperature slice with airflow streamlines. A run folder shows its samples; "
        "a scenario file shows its design point (every rack at worst-case power) unless "
        "--simulate runs it first."))
    ap.add_argument("source", help="run folder (results.nc from `twin run`) or scenario YAML")
    ap.add_argument("--color", default="inlet_temp", choices=COLORS,
                    help="rack colour: inlet temperature, rack power, RPP load fraction, rack "
                         "state (health), ASHRAE class or the rack's node model (default inlet_temp)")
    ap.add_argument("--time", help="sample to show: ISO date or date-time (2024-06-01T12:00), "
                                   "offset from the start (90d, 36h), 'start' or 'end' (default end)")
    ap.add_argument("--out", required=True,
                    help="output: .png/.jpg image, .html interactive page (offline), .gltf for other 3D "
                         "tools, .vtm/.vtk scene for ParaView, or .gif/.mp4 with --animate")
    ap.add_argument("--clim", metavar="LOW,HIGH",
                    help="fixed colour range of the racks (e.g. 18,32 for inlet_temp), so that two halls "
                         "or runs compare colour for colour (default: fitted to the data)")
    ap.add_argument("--labels", choices=("none", "rows", "racks"), default="rows",
                    help="names drawn in the view: rows and cooling units (default), also every rack, "
                         "or none")
    ap.add_argument("--animate", action="store_true", help="animate the run over its samples")
    ap.add_argument("--frames", type=int, default=60, help="frames of an animation (default 60)")
    ap.add_argument("--fps", type=float, default=8.0, help="frames per second (default 8)")
    fg = ap.add_mutually_exclusive_group()
    fg.add_argument("--field", dest="field", action="store_true", default=None,
                    help="solve and draw the temperature slice and streamlines (default: on for "
                         "images and VTK, off for animations)")
    fg.add_argument("--no-field", dest="field", action="store_false", help="draw racks only")
    ap.add_argument("--size", default=None, metavar="WxH",
                    help="image size in pixels (default 1280x800; 1024x640 for animations)")
    ap.add_argument("--simulate", action="store_true",
                    help="for a scenario file: run it first (honours --set) and draw the run")
    ap.add_argument("--set", action="append", metavar="dotted.path=value",
                    help="override a scenario field (scenario sources only)")
    return ap


def _size(text: str | None, default: tuple[int, int]) -> tuple[int, int]:
    if text is None:
        return default
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError as exc:
        raise ValueError(f"--size {text!r}: expected WIDTHxHEIGHT, e.g. 1280x800") from exc
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise ValueError(f"--size {text!r}: width and height must be 16 to 8192 pixels")
    return w, h


def _bad(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def own_command_line(argv: list[str]) -> bool:
    """True when ``argv`` is this process's own ``twin render`` command line (the console
    command or ``python -m twin.cli``), not a call from Python code such as a test."""
    return sys.argv[1:] == ["render", *argv]


def run_render_cli(argv: list[str], hand_over: bool | None = None) -> int:
    """``twin render``. ``hand_over``: a PNG/JPEG is drawn by replacing this process with
    the render child (``os.execv``; default: only when ``argv`` is the process's own command
    line); otherwise the child runs beside it and this function returns."""
    if hand_over is None:
        hand_over = own_command_line(argv)
    args = build_parser().parse_args(argv)
    from pathlib import Path

    out = Path(args.out)
    suffix = out.suffix.lower()
    from twin.viz import render

    if args.animate and suffix not in render.ANIMATION_SUFFIXES:
        return _bad(f"--out {args.out}: an animation is written as .gif or .mp4")
    if not args.animate and suffix in render.ANIMATION_SUFFIXES:
        return _bad(f"--out {args.out}: .gif/.mp4 need --animate")
    if not args.animate and suffix not in (render.IMAGE_SUFFIXES + render.EXPORT_SUFFIXES
                                           + render.PAGE_SUFFIXES + render.GLTF_SUFFIXES):
        return _bad(f"--out {args.out}: expected .png, .jpg, .html, .gltf, .vtm or .vtk "
                    f"(or .gif/.mp4 with --animate)")
    clim = None
    if args.clim is not None:
        try:
            lo, hi = (float(v) for v in args.clim.split(","))
        except ValueError:
            return _bad(f"--clim {args.clim!r}: expected LOW,HIGH, e.g. 18,32")
        if not lo < hi:
            return _bad(f"--clim {args.clim!r}: LOW must be below HIGH")
        clim = (lo, hi)
    if args.frames < 1 or args.fps <= 0:
        return _bad("--frames must be at least 1 and --fps positive")
    try:
        size = _size(args.size, (1024, 640) if args.animate else (1280, 800))
    except ValueError as exc:
        return _bad(str(exc))
    src = Path(args.source)
    if not src.exists():
        return _bad(f"{src}: no such run folder or scenario file")
    if src.is_dir() and (args.set or args.simulate):
        return _bad("--set and --simulate apply to a scenario file, not to a run folder")
    try:
        scenario, results = render.load_source(src, args.set)
    except ScenarioError as err:
        n = len(err.problems)
        print(f"error: the scenario has {n} problem{'s' if n != 1 else ''}:", file=sys.stderr)
        for p in err.problems:
            print(f"  {p}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (FileNotFoundError, ValueError, OSError) as exc:
        return _bad(str(exc))
    if results is None and (args.simulate or args.animate):
        import twin

        t0 = _time.perf_counter()
        results = twin.simulate(scenario)
        print(f"simulated {scenario.name}: {scenario.simulation.duration_days:g} days in "
              f"{_time.perf_counter() - t0:.1f} s", file=sys.stderr)
    source = results if results is not None else scenario
    t0 = _time.perf_counter()
    from twin.cli.progress import fraction_progress, progress
    try:
        if args.animate:
            render.animate(source, out, color=args.color, frames=args.frames, fps=args.fps,
                           field=bool(args.field), window_size=size, clim=clim,
                           progress=fraction_progress(f"twin render {out.name}", steps=args.frames))
        else:
            field = True if args.field is None else args.field
            with progress(3, f"twin render {out.name}", unit="step") as bar:
                bar.set_postfix_str("thermal field" if field else "snapshot")
                snap = render.make_snapshot(source, args.color, args.time, field, clim)
                bar.update(1)
                bar.set_postfix_str("drawing")
                if suffix in render.EXPORT_SUFFIXES:
                    render.export_scene(snap, out)
                elif suffix in render.PAGE_SUFFIXES:
                    if hand_over:   # as a PNG: this process becomes the render child
                        from twin.viz.drawlist import hand_over_description
                        out.parent.mkdir(parents=True, exist_ok=True)
                        bar.close()
                        hand_over_description(*render.page_description(snap), out, mode="page",
                                              say=f"wrote {out} ({args.color})",
                                              since=_time.time() - (_time.perf_counter() - t0))
                    render.export_page(snap, out)
                elif suffix in render.GLTF_SUFFIXES:
                    if hand_over:   # as a PNG: this process becomes the render child
                        from twin.viz.drawlist import hand_over as exec_child
                        out.parent.mkdir(parents=True, exist_ok=True)
                        bar.close()
                        exec_child(snap, out, mode="gltf", say=f"wrote {out} ({args.color})",
                                   since=_time.time() - (_time.perf_counter() - t0))
                    render.export_gltf(snap, out)
                else:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    if hand_over:   # this process becomes the render child: the run leaves memory
                        from twin.viz.drawlist import hand_over as exec_child
                        bar.close()
                        exec_child(snap, out, size, labels=args.labels != "none",
                                   rack_labels=args.labels == "racks", say=f"wrote {out} ({args.color})",
                                   since=_time.time() - (_time.perf_counter() - t0))
                    render.render_snapshot(snap, out, size, labels=args.labels != "none",
                                           rack_labels=args.labels == "racks")
                bar.update(2)
    except ValueError as exc:
        return _bad(str(exc))
    except RuntimeError as exc:  # a missing optional writer (MP4 without imageio-ffmpeg)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({args.color}) in {_time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(run_render_cli(sys.argv[1:], hand_over=True))
