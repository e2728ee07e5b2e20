"""The render child (twin/viz/vtkdraw.py): the same picture as the pyvista scene, in a
process that holds VTK alone, under 300 MB per PNG, and animations that stream.

Memory: bench/RESULTS.md, "Memory per hall PNG", has the peak RSS before and after (569 MB
-> 270 MB -> 243 MB). Peak RSS also counts the file pages of the shared libraries the process
maps, and how many of those the kernel maps depends on the page cache: library files just
written by pip sit in the page cache as large folios that a page fault maps whole, so the
same PNG peaked 35-40 MB higher from a freshly installed venv (309 MB before the child
dropped numpy and VTK's Python overrides, 278 MB after) than from a long-used one. The tests
assert both the peak RSS (ru_maxrss) and the private memory (RssAnon + RssShmem of
/proc/PID/status, sampled every 5 ms) under 300 MB.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pv = pytest.importorskip("pyvista")

from twin.viz import drawlist, render, scene  # noqa: E402

from .hall_fixtures import fixed_snapshot  # noqa: E402
from .test_render import SIZE  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PNG_LIMIT_MB = 300.0
"""Issue 17: memory per PNG under 300 MB."""


def _pyvista_picture(snap, size=SIZE):
    """The scene drawn in process by pyvista (the renderer before the child)."""
    pl = scene.new_plotter(size)
    try:
        scene.draw_snapshot(pl, snap, title="t")
        scene.frame_camera(pl, snap.scenario)
        return pl.screenshot(return_img=True)
    finally:
        pl.close()


def _blocks(img, k=8):
    """Means over k x k pixel blocks: anti-aliasing and one-pixel shifts average out,
    a part drawn in another colour or place does not."""
    h, w, _ = img.shape
    return img[:h // k * k, :w // k * k].astype(float).reshape(h // k, k, w // k, k, 3).mean(axis=(1, 3))


def _block_difference(a, b) -> float:
    return float(np.abs(_blocks(a) - _blocks(b)).max())


# old renderer (pyvista, MSAA x8, order-independent translucency) against the child (FXAA,
# blending in drawing order): 64 (inlet with field and streamlines) and 22 (health) at
# most per 8 x 8 block, where racks swapped to other colours score 147 and 139.
SAME_PICTURE_MAX = 80.0


@pytest.mark.parametrize("quantity,values,states,swapped,field", [
    ("inlet_temp", [19.0, 23.0, 27.0, 29.5], [2, 2, 2, 2], [29.5, 27.0, 23.0, 19.0], True),
    ("health", [np.nan, 1.0, 2.0, 3.0], [-1, 1, 2, 3], [np.nan, 3.0, 2.0, 1.0], False),
])
def test_child_draws_the_pyvista_picture(fixed_scenario, quantity, values, states, swapped, field):
    snap = fixed_snapshot(fixed_scenario, quantity, values, states, field=field)
    before = _pyvista_picture(snap)
    after = render.render_snapshot(snap, None, SIZE, title="t")
    assert after.shape == before.shape
    assert _block_difference(before, after) < SAME_PICTURE_MAX
    # teeth: the same comparison notices racks drawn in each other's colours
    other = render.render_snapshot(fixed_snapshot(fixed_scenario, quantity, swapped, states, field=field),
                                   None, SIZE, title="t")
    assert _block_difference(after, other) > SAME_PICTURE_MAX


def test_child_colours_each_rack_by_its_value(fixed_scenario):
    # coolwarm on 18-30 C: 19 C blue, 29.5 C red, sampled at each rack's top in the child's picture
    cold, hot = 19.0, 29.5
    snap = fixed_snapshot(fixed_scenario, "inlet_temp", [cold, hot, cold, hot], [2] * 4)
    img = render.render_snapshot(snap, None, SIZE, title="", caption=False)
    pl = scene.new_plotter(SIZE)   # the child's camera is the scene's: project rack tops with it
    try:
        scene.draw_snapshot(pl, snap, title="", caption=False)
        scene.frame_camera(pl, snap.scenario)
        ren = pl.renderer
        for k, (x, y) in enumerate(snap.rack_xy_m):
            ren.SetWorldPoint(x, y, scene.RACK_HEIGHT_M, 1.0)
            ren.WorldToDisplay()
            dx, dy, _ = ren.GetDisplayPoint()
            c = img[img.shape[0] - 1 - int(round(dy)), int(round(dx))].astype(int)
            if k % 2 == 0:
                assert c[2] > c[0] + 40, f"cold rack {k} should be blue, got {c}"
            else:
                assert c[0] > c[2] + 40, f"hot rack {k} should be red, got {c}"
    finally:
        pl.close()


def test_description_holds_no_pyvista_and_names_every_array(fixed_scenario):
    import dataclasses

    snap = fixed_snapshot(fixed_scenario, "inlet_temp", [19.0, 23.0, 27.0, 29.5], [2, 2, -1, 2], field=True)
    snap = dataclasses.replace(snap, rack_names=["a", "b", "c", "d"])
    meta, arrays = drawlist.describe(snap, SIZE, rack_labels=True)
    named = {v for m in meta["meshes"] + meta["labels"] + meta["scalar_bars"] for k, v in m.items()
             if isinstance(v, str) and v in arrays}
    assert named == set(arrays)                      # nothing sent that is not drawn
    assert all(isinstance(a, np.ndarray) and a.dtype != object for a in arrays.values())
    racks = next(m for m in meta["meshes"] if m.get("bounds") == "racks")
    assert arrays[racks["rgb"]].shape == (3, 3)      # colours baked, one per delivered rack
    assert arrays["slots"].shape == (1, 6) and arrays["slots"][0, 5] < 0.05   # the other on the floor
    assert [lab["names"] for lab in meta["labels"] if lab["points"] == "rack_label_xyz"] == [["a", "b", "d"]]


def _status_kb(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as fh:
        return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in fh) if v.strip().endswith("kB")}


def _descendants(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
        for k in kids:
            out += [k, *_descendants(k)]
    return out


# ru_maxrss is read by a small wrapper process, not by the test process: subprocess starts a
# child with vfork, and the kernel folds the rss high-water mark of the address space the
# child leaves at exec (the caller's, several hundred MB for pytest with pyvista loaded) into
# the child's ru_maxrss. The wrapper's own 10-15 MB is what that can add here.
_MAXRSS_WRAPPER = ("import resource, subprocess, sys\n"
                   "rc = subprocess.run(sys.argv[1:]).returncode\n"
                   "print('ru_maxrss_kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)\n"
                   "sys.exit(rc)\n")


def _run_sampled(argv: list[str], children_only: bool, timeout=600) -> tuple[int, str, float, float]:
    """Run ``argv``; return (exit code, stdout, peak private MB, peak RSS MB): the private
    memory of the process (or, with ``children_only``, of its largest descendant), sampled
    every 5 ms, and the process's ru_maxrss (before and after an exec; with
    ``children_only``, the largest of the process and its descendants)."""
    import time

    p = subprocess.Popen([sys.executable, "-c", _MAXRSS_WRAPPER, *argv], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    private = 0
    t_end = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < t_end:
        procs = _descendants(p.pid)[:1]
        if children_only and procs:
            procs = _descendants(procs[0])
        for pid in procs:
            try:
                st = _status_kb(pid)
            except (OSError, ValueError):
                continue
            private = max(private, st.get("RssAnon", 0) + st.get("RssShmem", 0))
        time.sleep(0.005)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, out + err
    out, maxrss = out.rsplit("ru_maxrss_kb ", 1)
    return p.returncode, out, private / 1024, int(maxrss) / 1024


def _run(code: str, timeout=600) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_png_child_peak_memory_under_300_mb(tmp_path):
    # a shipped scenario's design point with its thermal field, drawn from Python (the
    # child runs beside the caller): the child's peaks and the caller never loading pyvista
    png = tmp_path / "bv.png"
    code = ("import sys\n"
            "from twin.cli.render import run_render_cli\n"
            f"rc = run_render_cli(['scenarios/blue_vela.yaml', '--out', {str(png)!r}], hand_over=False)\n"
            "gl = sorted(m for m in sys.modules if m.split('.')[0] in ('pyvista', 'vtkmodules', 'vtk'))\n"
            "print(rc, len(gl))\n")
    _, out, child_private_mb, rss_mb = _run_sampled([sys.executable, "-c", code], children_only=True)
    rc, n_gl = out.split()[-2:]
    assert rc == "0" and png.stat().st_size > 50_000
    assert 20.0 < child_private_mb < PNG_LIMIT_MB      # the child was seen, and stayed small
    # the largest peak RSS of the caller (run, field, description: about 190 MB) and the child
    assert 100.0 < rss_mb < PNG_LIMIT_MB
    assert n_gl == "0"


def test_twin_render_command_peak_memory_under_300_mb(tmp_path):
    # the command hands its process over to the child once the description is written
    # (exec: the same process id), so one process is sampled before and after the exec,
    # and its ru_maxrss covers both
    png = tmp_path / "bv.png"
    cmd = [sys.executable, "-m", "twin.cli", "render", "scenarios/blue_vela.yaml", "--out", str(png), "--color", "power"]
    rc, out, private_mb, rss_mb = _run_sampled(cmd, children_only=False)
    assert rc == 0 and f"wrote {png} (power) in " in out
    assert 20.0 < private_mb < PNG_LIMIT_MB
    assert 100.0 < rss_mb < PNG_LIMIT_MB
    import imageio.v3 as iio
    assert iio.imread(png).shape[:2] == (800, 1280)


@pytest.mark.parametrize("suffix", [".gltf", ".html"])
def test_twin_render_export_peak_memory_under_300_mb(tmp_path, suffix):
    # glTF and the interactive page are written by the render child too (VTK's glTF exporter,
    # trame-vtk's serializers; no OpenGL context): before, pyvista drew them in the command's
    # process (glTF 408 MB RSS, page 463 MB; 468 and 524 MB from a fresh install)
    out = tmp_path / f"bv{suffix}"
    cmd = [sys.executable, "-m", "twin.cli", "render", "scenarios/blue_vela.yaml", "--out", str(out)]
    _, stdout, private_mb, rss_mb = _run_sampled(cmd, children_only=False)
    assert f"wrote {out} (inlet_temp) in " in stdout
    assert 20.0 < private_mb < PNG_LIMIT_MB and 100.0 < rss_mb < PNG_LIMIT_MB
    text = out.read_text(encoding="utf-8")
    if suffix == ".gltf":
        import json
        doc = json.loads(text)
        racks = [m for m in doc["meshes"] if "COLOR_0" in m["primitives"][0]["attributes"]]
        assert doc["asset"]["version"] == "2.0" and len(doc["meshes"]) >= 8 and racks
    else:   # the vtk.js scene and the overlay, nothing fetched
        assert "OfflineLocalView.load" in text and "twin-overlay" in text and "vtk-js/icon/favicon" not in text


def test_png_child_imports_neither_numpy_nor_vtk_python_overrides(tmp_path, fixed_scenario):
    # what keeps the child small: for a picture it reads the description with zipfile and
    # hands VTK the bytes, without numpy or VTK's numpy-backed Python conveniences
    snap = fixed_snapshot(fixed_scenario, "inlet_temp", [19.0, 23.0, 27.0, 29.5], [2, 2, 2, 2], field=True)
    meta, arrays = drawlist.describe(snap, (320, 200))
    drawlist.pack(meta, arrays, tmp_path / "scene.npz")
    code = ("import runpy, sys\n"
            f"sys.argv = ['vtkdraw.py', 'image', {str(tmp_path / 'scene.npz')!r}, {str(tmp_path / 'a.png')!r},"
            f" {str(tmp_path / 'a.npy')!r}]\n"
            "try:\n"
            f"    runpy.run_path({str(drawlist.CHILD)!r}, run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy' or 'numpy_interface' in m\n"
            "             or m.startswith('vtkmodules.util.')))\n")
    assert _run(code).split("\n")[-2] == "[]"
    import imageio.v3 as iio
    png, raw = iio.imread(tmp_path / "a.png"), np.load(tmp_path / "a.npy")
    assert raw.shape == (200, 320, 3) and np.array_equal(png, raw)    # the .npy written by hand is the picture
    assert len(np.unique(raw.reshape(-1, 3), axis=0)) > 50              # and something was drawn


def test_gif_stream_stores_what_it_was_given(tmp_path):
    from PIL import Image

    from twin.viz import vtkdraw

    rng = np.random.default_rng(7)
    palette = rng.integers(0, 256, (40, 3), dtype=np.uint8)
    frames = [palette[rng.integers(0, 40, (30, 50))] for _ in range(2)]
    frames.append(frames[1].copy())                       # an unchanged frame
    third = frames[1].copy()
    third[10:14, 20:31] = palette[3]                      # a small change: a sub-rectangle
    frames.append(third)
    gif = vtkdraw.GifStream(str(tmp_path / "a.gif"), fps=5.0)
    for f in frames:
        gif.append(f)
    gif.close()
    with Image.open(tmp_path / "a.gif") as im:
        assert im.n_frames == len(frames)
        for k, f in enumerate(frames):
            im.seek(k)
            assert np.array_equal(np.asarray(im.convert("RGB")), f), f"frame {k}"
            assert im.info["duration"] == 200


def _animation_peak_mb(run_dir, out, frames) -> tuple[float, float]:
    code = ("import resource\n"
            "from twin.viz import render\n"
            f"render.animate({str(run_dir)!r}, {str(out)!r}, color='power', frames={frames}, window_size=(320, 200))\n"
            "r = resource.getrusage\n"
            "print(r(resource.RUSAGE_SELF).ru_maxrss / 1024, r(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n")
    parent, child = _run(code).split()[-2:]
    return float(parent), float(child)


@pytest.mark.slow
def test_animation_memory_does_not_grow_with_frames(tmp_path, small_run_dir):
    few = _animation_peak_mb(small_run_dir, tmp_path / "few.gif", 3)
    many = _animation_peak_mb(small_run_dir, tmp_path / "many.gif", 40)
    import imageio.v3 as iio
    assert iio.imread(tmp_path / "many.gif", index=None).shape[0] == 40
    # 37 more frames of 320 x 200: held in memory they would add 7 MB of RGB (and the
    # snapshots); streamed, the peaks stay within a few MB of each other
    assert many[0] - few[0] < 5.0 and many[1] - few[1] < 5.0
    assert many[1] < PNG_LIMIT_MB
