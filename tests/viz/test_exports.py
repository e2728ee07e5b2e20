"""The readable 3-D view: labels, scale bar, fixed colour ranges, categorical legends,
the containment caption, the offline interactive page (screenshot in Chromium) and glTF."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyvista")
from twin.report import chromium, chromium_executable  # noqa: E402
from twin.viz import render  # noqa: E402
from twin.viz import scene as sc  # noqa: E402
from twin.viz.snapshot import HEALTH_COLORS, containment_note, with_clim  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
needs_chromium = pytest.mark.skipif(chromium_executable() is None,
                                    reason="headless Chromium is not installed (.ci/run installs it)")


@pytest.mark.parametrize("span, length", [(30.0, 5.0), (12.0, 2.0), (100.0, 20.0), (3.0, 0.5), (41.0, 10.0)])
def test_scale_bar_is_a_round_quarter_of_the_span(span, length):
    got = sc.nice_length_m(span)
    assert got == length and span / 10 <= got <= span / 4


def test_scene_carries_row_and_cooling_unit_labels_and_a_scale_bar(small_scenario):
    snap = render.make_snapshot(small_scenario, "inlet_temp", field=False)
    blocks = sc.build_scene(snap)
    rows = [r.name for h in small_scenario.site.halls for r in h.rows]
    units = [u.name for h in small_scenario.site.halls for u in h.cooling_units]
    assert list(blocks["row_labels"].point_data["name"]) == rows
    assert list(blocks["cooling_unit_labels"].point_data["name"]) == units
    sb = blocks["scale_bar"]
    length = float(sb.field_data["length_m"][0])
    assert np.linalg.norm(sb.points[1] - sb.points[0]) == pytest.approx(length)
    assert len(snap.rack_names) == snap.n_racks


def test_clim_fixes_the_colour_range_and_refuses_categories(small_scenario):
    snap = render.make_snapshot(small_scenario, "inlet_temp", field=False)
    assert with_clim(snap, (18, 32)).scale.clim == (18.0, 32.0)
    with pytest.raises(ValueError, match="LOW < HIGH"):
        with_clim(snap, (30, 20))
    health = render.make_snapshot(small_scenario, "health", field=False)
    with pytest.raises(ValueError, match="continuous"):
        with_clim(health, (0, 1))


def test_same_clim_gives_the_same_colour_for_the_same_value(small_scenario):
    snap = render.make_snapshot(small_scenario, "inlet_temp", field=False, clim=(18, 32))
    rgb = sc.rack_rgb(snap.scale, [18.0, 25.0, 32.0, np.nan])
    again = sc.rack_rgb(with_clim(snap, (18, 32)).scale, [18.0, 25.0, 32.0, np.nan])
    assert (rgb == again).all() and (rgb[3] == 208).all()
    assert rgb[0][2] > rgb[0][0] and rgb[2][0] > rgb[2][2]      # coolwarm: cold blue, hot red


def test_categorical_rack_colours_are_the_legend_colours(small_scenario):
    import matplotlib
    health = render.make_snapshot(small_scenario, "health", field=False)
    rgb = sc.rack_rgb(health.scale, [0, 1, 2, 3])
    for k, colour in enumerate(HEALTH_COLORS):
        assert tuple(rgb[k]) == tuple(round(255 * c) for c in matplotlib.colors.to_rgb(colour))


def test_blue_vela_caption_explains_the_enclosures():
    import twin
    s = twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml")
    snap = render.make_snapshot(s, "inlet_temp", field=True)
    note = containment_note(snap)
    inlet = float(np.nanmax(snap.rack_value))
    room = max(float(np.nanmax(f["temperature"].values)) for f in snap.fields if f is not None)
    assert room - inlet > 3.0
    assert "enclosures" in note and f"{inlet:.1f} °C" in note and f"{room:.1f} °C" in note


def test_no_caption_when_room_and_inlets_agree(small_scenario):
    snap = render.make_snapshot(small_scenario, "inlet_temp", field=True)
    inlet = float(np.nanmax(snap.rack_value))
    room = max(float(np.nanmax(f["temperature"].values)) for f in snap.fields if f is not None)
    assert (containment_note(snap) == "") == (room - inlet < 3.0)


def test_gltf_export_is_gltf2_with_inline_buffers(tmp_path, small_scenario):
    snap = render.make_snapshot(small_scenario, "health", field=False)
    out = render.export_gltf(snap, tmp_path / "hall.gltf")
    doc = json.loads(out.read_text())
    assert doc["asset"]["version"] == "2.0"
    assert len(doc["meshes"]) >= 4
    assert all(b["uri"].startswith("data:") for b in doc["buffers"])
    # colours travel with the meshes (racks by health), and the scene is turned to glTF's y up:
    # the hall's floor (z = 0 in twin) lies in y = 0
    assert sum("COLOR_0" in m["primitives"][0]["attributes"] for m in doc["meshes"]) >= 2
    floor = doc["nodes"][0]["matrix"]                          # column-major 4 x 4
    assert abs(floor[9] - 1.0) < 1e-9 and abs(floor[2] - 1.0) < 1e-9   # y <- z and z <- x (RotateX, RotateZ -90)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "twin.cli", "render", *args], capture_output=True, text=True)


@pytest.mark.parametrize("args, needle", [
    (["--clim", "30,20"], "LOW must be below HIGH"),
    (["--clim", "x"], "LOW,HIGH"),
    (["--color", "health", "--clim", "0,3"], "continuous"),
])
def test_cli_clim_bad_input_exits_2(tmp_path, small_run_dir, args, needle):
    r = _cli(str(small_run_dir), "--out", str(tmp_path / "h.png"), "--no-field", *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


@needs_chromium
def test_interactive_page_works_offline_in_chromium(tmp_path, small_run_dir):
    out = tmp_path / "hall.html"
    r = _cli(str(small_run_dir), "--out", str(out), "--color", "health", "--no-field")
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    # nothing is fetched: no remote script, stylesheet or image
    assert not re.search(r"""(src|href)\s*=\s*["']https?://""", text)
    assert "vtk-js/icon/favicon" not in text      # the one URL the page would load (its favicon)
    png = tmp_path / "hall.png"
    got = chromium(["--window-size=1000,700", "--virtual-time-budget=8000", "--hide-scrollbars",
                    "--disable-features=NetworkService", f"--screenshot={png}", out.as_uri()])
    assert png.exists(), got.stderr[-500:]
    import matplotlib.image as mpimg
    img = (mpimg.imread(png)[..., :3] * 255).round().astype(int)
    green = np.array([0x3a, 0x9d, 0x5d])      # HEALTH_COLORS "in service": the racks drawn by WebGL
    near = (np.abs(img - green).max(axis=-1) <= 40).sum()
    assert near > 500, near
    dom = chromium(["--virtual-time-budget=8000", "--dump-dom", out.as_uri()]).stdout
    assert "twin-overlay" in dom and "in service" in dom


def test_jupyter_default_is_the_offline_page(monkeypatch, small_scenario):
    monkeypatch.delenv("TWIN_JUPYTER_BACKEND", raising=False)
    assert render.jupyter_backend() == "html"
    snap = render.make_snapshot(small_scenario, "power", field=False)
    frame = render.page_iframe(snap, 400, 300)
    assert frame.startswith('<iframe srcdoc="') and 'width="400"' in frame
    assert "<script" not in frame and "&lt;script" in frame      # the page is escaped into srcdoc


def test_jupyter_page_shows_without_a_warning(small_scenario):
    # IPython.display.HTML of an <iframe> warned "Consider using IPython.display.IFrame
    # instead" into every notebook that showed a hall; the page is shown as text/html
    import warnings

    snap = render.make_snapshot(small_scenario, "power", field=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shown = render.show(snap, window_size=(400, 300), jupyter_backend_name="html")
    html = shown._repr_html_()
    assert html.startswith('<iframe srcdoc="') and 'width="400"' in html and "twin-overlay" in html
    from IPython.core.formatters import DisplayFormatter
    data, _ = DisplayFormatter().format(shown)
    assert data["text/html"] == html                  # what Jupyter stores in the notebook


def test_page_export_inside_an_event_loop_fetches_nothing(tmp_path, small_scenario, monkeypatch):
    """Jupyter runs an event loop; writing the page there must not start trame-vtklocal's
    download of VTK's WebAssembly (offline it printed a traceback into the notebook)."""
    import asyncio

    import trame_vtklocal.module.wasm as wasm

    from twin.viz.snapshot import snapshot_from_scenario

    attempts = []

    async def spy(*args, **kwargs):
        attempts.append(args)

    monkeypatch.setattr(wasm, "setup_wasm_directory", spy)
    snap = snapshot_from_scenario(small_scenario, "inlet_temp", field=False)

    async def in_a_loop():
        out = render.export_page(snap, tmp_path / "hall.html")
        await asyncio.sleep(0.1)       # let a scheduled background task start
        return out

    out = asyncio.run(in_a_loop())
    assert out.stat().st_size > 100_000 and "vtk" in out.read_text(encoding="utf-8").lower()
    assert attempts == []
    assert wasm.setup_wasm_directory is spy          # put back as it was
