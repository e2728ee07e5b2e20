"""The 3-D hall off-screen: reference images, colours follow the data, VTK export,
animation and the ``twin render`` command.

Reference images live in tests/viz/reference/; regenerate them (after a deliberate change
of the scene) with ``TWIN_UPDATE_REFERENCES=1 pytest tests/viz/test_render.py``.
"""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

pv = pytest.importorskip("pyvista")

from twin.cli.render import run_render_cli  # noqa: E402
from twin.viz import render, scene  # noqa: E402
from twin.viz import snapshot as S  # noqa: E402

from .hall_fixtures import fixed_snapshot  # noqa: E402

REFERENCE = Path(__file__).parent / "reference"
SIZE = (480, 320)
# vtkImageDifference error (pyvista.compare_images; it forgives pixels matched by a
# neighbour, so shifts of one pixel cost little). pyvista's own image cache fails above 500;
# here one rack of two changing colour scores about 270 and a re-render of the same scene 0,
# so 150 keeps room for anti-aliasing / font differences and still catches a wrong colour.
IMAGE_ERROR_MAX = 150.0


def _check_reference(name: str, img: np.ndarray) -> float:
    ref = REFERENCE / f"{name}.png"
    if os.environ.get("TWIN_UPDATE_REFERENCES") or not ref.exists():
        REFERENCE.mkdir(parents=True, exist_ok=True)
        import imageio.v3 as iio

        iio.imwrite(ref, img)
        if not os.environ.get("TWIN_UPDATE_REFERENCES"):
            pytest.fail(f"reference image {ref} was missing and has been written; commit it")
    import imageio.v3 as iio

    expected = iio.imread(ref)[..., :3]
    assert expected.shape == img.shape, f"{name}: image size changed"
    return pv.compare_images(pv.pyvista_ndarray(img), pv.pyvista_ndarray(expected))


@pytest.fixture(scope="module")
def design_snapshot(small_scenario):
    return S.snapshot_from_scenario(small_scenario, "power")


def _rack_pixels(snap, size=SIZE):
    """Render ``snap`` and return the RGB colour at the centre of each rack's top face."""
    pl = scene.new_plotter(size)
    try:
        scene.draw_snapshot(pl, snap, title="", caption=False)
        scene.frame_camera(pl, snap.scenario)
        img = pl.screenshot(return_img=True)
        ren = pl.renderer
        out = []
        for (x, y) in snap.rack_xy_m:
            ren.SetWorldPoint(x, y, scene.RACK_HEIGHT_M, 1.0)
            ren.WorldToDisplay()
            dx, dy, _ = ren.GetDisplayPoint()
            out.append(img[img.shape[0] - 1 - int(round(dy)), int(round(dx))].astype(int))
    finally:
        pl.close()
    return img, out


def test_inlet_and_field_match_reference(fixed_scenario):
    snap = fixed_snapshot(fixed_scenario, "inlet_temp", [19.0, 23.0, 27.0, 29.5], [2, 2, 2, 2], field=True)
    img = render.render_snapshot(snap, None, SIZE, title="fixed hall · inlet")
    assert img.shape == (SIZE[1], SIZE[0], 3)
    assert _check_reference("fixed_inlet_field", img) < IMAGE_ERROR_MAX


def test_health_matches_reference(fixed_scenario):
    snap = fixed_snapshot(fixed_scenario, "health", [np.nan, 1.0, 2.0, 3.0], [-1, 1, 2, 3])
    img = render.render_snapshot(snap, None, SIZE, title="fixed hall · health")
    assert _check_reference("fixed_health", img) < IMAGE_ERROR_MAX


def test_hot_rack_is_drawn_hotter(fixed_scenario):
    # coolwarm on 18-30 C: a rack at 19 C is drawn blue, one at 29.5 C red
    cold, hot = 19.0, 29.5
    img, px = _rack_pixels(fixed_snapshot(fixed_scenario, "inlet_temp", [cold, hot, cold, hot], [2] * 4))
    for k, c in enumerate(px):
        if k % 2 == 0:
            assert c[2] > c[0] + 40, f"cold rack {k} should be blue, got {c}"
        else:
            assert c[0] > c[2] + 40, f"hot rack {k} should be red, got {c}"
    # swap the data: the colours swap
    img2, px2 = _rack_pixels(fixed_snapshot(fixed_scenario, "inlet_temp", [hot, cold, hot, cold], [2] * 4))
    for k, c in enumerate(px2):
        assert (c[0] > c[2] + 40) if k % 2 == 0 else (c[2] > c[0] + 40), f"rack {k}: {c}"
    # and the image comparison notices the change (the reference tests have teeth)
    assert pv.compare_images(pv.pyvista_ndarray(img), pv.pyvista_ndarray(img2)) > IMAGE_ERROR_MAX


def test_undelivered_racks_are_slots_not_boxes(small_scenario):
    snap = S.snapshot_from_scenario(small_scenario, "health", field=False)
    snap = dataclasses.replace(snap, rack_state=np.array([2, -1]), rack_value=np.array([2.0, np.nan]))
    blocks = scene.build_scene(snap)
    assert blocks["racks"].n_cells == 1 and blocks["racks"]["rack"].tolist() == [0]
    slot = blocks["rack_slots"]
    assert slot.n_cells == 1 and slot.bounds[5] < 0.05   # a footprint on the floor
    # the drawn rack box has the rack's footprint and position
    b = blocks["racks"].bounds
    x, y = snap.rack_xy_m[0]
    assert (b[0] + b[1]) / 2 == pytest.approx(x) and (b[2] + b[3]) / 2 == pytest.approx(y)
    assert b[1] - b[0] == pytest.approx(0.6) and b[3] - b[2] == pytest.approx(1.2)  # intake south: depth along y


def test_field_blocks_cover_the_room(design_snapshot):
    blocks = scene.build_scene(design_snapshot)
    f = design_snapshot.fields[0]
    sl = blocks["temperature_slice_0"]
    fluid = int(np.isfinite(f["temperature"].values).sum())
    assert sl.n_cells == fluid
    assert sl["temperature"].min() == pytest.approx(np.nanmin(f["temperature"].values))
    st = blocks["streamlines_0"]
    assert st.n_cells > 0
    # streamlines stay inside the hall, at the slice height
    b = st.bounds
    hall = design_snapshot.scenario.site.halls[0]
    assert b[0] >= -1e-6 and b[1] <= hall.width_m + 1e-6 and b[2] >= -1e-6 and b[3] <= hall.depth_m + 1e-6
    assert b[4] == pytest.approx(scene.SLICE_HEIGHT_M) and b[5] == pytest.approx(scene.SLICE_HEIGHT_M)


def test_vtk_export_opens(tmp_path, design_snapshot):
    vtm = render.export_scene(design_snapshot, tmp_path / "hall.vtm")
    mb = pv.read(vtm)
    assert isinstance(mb, pv.MultiBlock)
    assert {"floor", "racks", "cooling_units", "temperature_slice_0"} <= set(mb.keys())
    assert mb["racks"]["value"] == pytest.approx(design_snapshot.rack_value)
    vtk = render.export_scene(design_snapshot, tmp_path / "hall.vtk")
    grid = pv.read(vtk)
    parts = set(np.unique(grid["part"]).tolist())
    assert {scene.PART_CODES["racks"], scene.PART_CODES["floor"], scene.PART_CODES["temperature_slice"]} <= parts
    racks = grid["value"][grid["part"] == scene.PART_CODES["racks"]]
    assert np.sort(racks) == pytest.approx(np.sort(design_snapshot.rack_value))


def test_two_halls_stand_side_by_side(small_scenario):
    data = small_scenario.model_dump()
    second = dict(data["site"]["halls"][0], name="annex")
    data["site"]["halls"].append(second)
    data["site"]["power"]["rpp"]["racks_per_rpp"] = 8
    s2 = type(small_scenario).model_validate(data)
    snap = S.snapshot_from_scenario(s2, "inlet_temp")
    blocks = scene.build_scene(snap)
    off = scene.hall_offsets_m(s2)
    assert off[1] == pytest.approx(small_scenario.site.halls[0].width_m + scene.HALL_GAP_M)
    xs = np.sort(blocks["racks"].cell_centers().points[:, 0])
    assert xs[2:] == pytest.approx(xs[:2] + off[1])           # same layout, shifted
    assert "temperature_slice_1" in blocks.keys()


def test_animation_gif(tmp_path, small_results):
    iio = pytest.importorskip("imageio.v3")
    out = render.animate(small_results, tmp_path / "ramp.gif", color="power", frames=3, window_size=(240, 160))
    frames = iio.imread(out, index=None)
    assert frames.shape[0] == 3 and frames.shape[1:3] == (160, 240)
    # every frame is drawn anew: the clock in the title changes, the title is there
    assert not np.array_equal(frames[0], frames[2])
    assert all((f[:12, :, :3] < 100).any() for f in frames)
    assert render.frame_indices(49, 3).tolist() == [0, 24, 48]
    assert render.frame_indices(2, 10).tolist() == [0, 1]


def test_cli_render_png_and_vtk(tmp_path, small_run_dir, capsys):
    png = tmp_path / "hall.png"
    assert run_render_cli([str(small_run_dir), "--color", "rpp_load", "--time", "1d", "--out", str(png),
                           "--size", "320x200", "--no-field"]) == 0
    import imageio.v3 as iio

    assert iio.imread(png).shape[:2] == (200, 320)
    assert run_render_cli([str(small_run_dir), "--out", str(tmp_path / "hall.vtm")]) == 0
    assert isinstance(pv.read(tmp_path / "hall.vtm"), pv.MultiBlock)


@pytest.mark.parametrize("argv, message", [
    (["{run}", "--color", "humidity", "--out", "x.png"], "invalid choice"),
    (["{run}", "--time", "2031-01-01", "--out", "x.png"], "outside the run"),
    (["{run}", "--time", "soon", "--out", "x.png"], "expected an ISO date"),
    (["{tmp}/missing", "--out", "x.png"], "no such run folder"),
    (["{tmp}", "--out", "x.png"], "must contain results.nc"),
    (["{run}", "--out", "x.txt"], "expected .png"),
    (["{run}", "--out", "x.png", "--animate"], "animation is written as .gif or .mp4"),
    (["{run}", "--out", "x.gif"], "need --animate"),
    (["{run}", "--out", "x.png", "--size", "big"], "WIDTHxHEIGHT"),
    (["{scenario}", "--time", "2d", "--out", "x.png"], "--time needs a run"),
    (["{scenario}", "--set", "site.power.ups.capacity_kw=-5", "--out", "x.png"], "capacity_kw"),
    (["{run}", "--set", "a.b=1", "--out", "x.png"], "apply to a scenario file"),
])
def test_cli_bad_input_exits_2(tmp_path, small_run_dir, capsys, argv, message):
    fill = {"run": str(small_run_dir), "tmp": str(tmp_path), "scenario": str(Path(__file__).parents[2] / "scenarios" / "lenovo_small.yaml")}
    args = [a.format(**fill) for a in argv]
    args = [str(tmp_path / a) if a.startswith("x.") else a for a in args]
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(run_render_cli(args))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not list(tmp_path.glob("x.*"))


def test_animation_mp4(tmp_path, small_results):
    pytest.importorskip("imageio_ffmpeg")
    import imageio.v2 as iio2

    out = render.animate(small_results, tmp_path / "ramp.mp4", color="inlet_temp", frames=4,
                         window_size=(256, 160), field=True)
    reader = iio2.get_reader(out, format="FFMPEG")
    try:
        assert reader.count_frames() == 4
        assert reader.get_data(0).shape[:2] == (160, 256)
    finally:
        reader.close()


def test_obstacles_containment_and_enclosures(small_scenario):
    data = small_scenario.model_dump()
    hall = data["site"]["halls"][0]
    hall["containment"] = "cold_aisle"
    hall["rows"][0]["enclosure"] = True
    hall["obstacles"] = [{"name": "tray", "kind": "cable_tray", "x0_m": 6.0, "y0_m": 6.0, "x1_m": 9.0, "y1_m": 6.4},
                         {"name": "col", "kind": "column", "x0_m": 1.0, "y0_m": 6.5, "x1_m": 1.5, "y1_m": 7.0}]
    s = type(small_scenario).model_validate(data)
    snap = S.snapshot_from_scenario(s, "inlet_temp", field=False)
    blocks = scene.build_scene(snap)
    ob = blocks["obstacles"]
    tops = sorted(ob.extract_cells([i]).bounds[5] for i in range(ob.n_cells))
    assert tops == pytest.approx([scene.OBSTACLE_HEIGHT_M["cable_tray"], hall["height_m"]])
    # racks breathe from the south: containment and enclosures stand on their south face
    rack_b = blocks["racks"].bounds
    for name in ("containment", "enclosures"):
        b = blocks[name].bounds
        assert blocks[name].n_cells == 2
        assert b[3] == pytest.approx(rack_b[2]) and b[2] == pytest.approx(rack_b[2] - scene.ENCLOSURE_DEPTH_M)
    units = blocks["cooling_units"]
    assert units.n_cells == 2 and units["active"].tolist() == [1, 1]


def test_cli_scenario_simulate_and_design(tmp_path):
    scen = str(Path(__file__).parents[2] / "scenarios" / "lenovo_small.yaml")
    png = tmp_path / "sim.png"
    assert run_render_cli([scen, "--simulate", "--set", "simulation.duration_days=0.5", "--color", "ashrae",
                           "--time", "6h", "--out", str(png), "--size", "200x120", "--no-field"]) == 0
    assert png.stat().st_size > 0
    vtk = tmp_path / "design.vtk"
    assert run_render_cli([scen, "--color", "power", "--out", str(vtk)]) == 0
    grid = pv.read(vtk)
    assert (grid["part"] == scene.PART_CODES["racks"]).sum() == 2
