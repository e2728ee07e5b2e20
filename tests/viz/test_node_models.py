"""A hall of racks with different node models (scenarios/sites/mixed_hall.yaml) in the 3-D
view: racks coloured by their node model (``--color node_model``), labelled by runs of one
model, a one-line summary on the interactive page, and the design point drawn at each
rack's own worst case and fan airflow."""

from pathlib import Path

import matplotlib.colors as mcolors
import numpy as np
import pytest

pytest.importorskip("pyvista")

import twin  # noqa: E402
from twin.plant import build_plant  # noqa: E402
from twin.viz import drawlist, geometry, render  # noqa: E402
from twin.viz import snapshot as S  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MIXED = ROOT / "scenarios" / "sites" / "mixed_hall.yaml"


@pytest.fixture(scope="module")
def mixed():
    return twin.load_scenario(MIXED, ["simulation.duration_days=2"])


@pytest.fixture(scope="module")
def mixed_plant(mixed):
    return build_plant(mixed)


def test_racks_are_coloured_by_their_node_model(mixed, mixed_plant):
    snap = S.snapshot_from_scenario(mixed, "node_model", field=False)
    p = mixed_plant
    assert len(p.model_names) == 3
    assert snap.scale.categories == dict(enumerate(p.model_names))
    assert np.array_equal(snap.rack_value, p.rack_model.astype(float))
    assert snap.rack_models == list(p.rack_node_model)
    meta, arrays = drawlist.describe(snap)
    want = np.array([[round(255 * c) for c in mcolors.to_rgb(S.MODEL_COLORS[k])] for k in p.rack_model])
    assert np.array_equal(arrays["rack_rgb"].astype(int), want)        # each rack its model's colour
    assert len({tuple(c) for c in arrays["rack_rgb"]}) == 3
    legend = [t["text"] for t in meta["texts"] if "position" in t]
    assert legend == ["node model", *p.model_names]                     # a legend, not a colour bar
    assert not any(b["title"] == "node model" for b in meta["scalar_bars"])


def test_runs_of_one_model_are_labelled(mixed, mixed_plant):
    snap = S.snapshot_from_scenario(mixed, "inlet_temp", field=False)
    groups = geometry.model_groups(snap)
    # rows h1 and h2 hold XE9680s, row l1 six SR675 V3 H100 NVL and, standing apart, one L40S rack
    assert [(g["model"], g["racks"][0], len(g["racks"])) for g in groups] == [
        ("xe9680_h100", "h1-01", 8), ("xe9680_h100", "h2-01", 8),
        ("sr675v3_h100nvl", "l1-01", 6), ("sr675v3_l40s", "l1-07", 1)]
    assert geometry.model_summary(snap) == ("xe9680_h100: h1, h2 · sr675v3_h100nvl: l1-01…l1-06 · "
                                            "sr675v3_l40s: l1-07")
    # the label of the L40S rack stands over it, where its override puts it (12.5 m, 7.8 m)
    assert groups[-1]["xyz"][:2] == pytest.approx([12.5, 7.8])
    meta, arrays = drawlist.describe(snap)
    labels = next(lab for lab in meta["labels"] if lab["points"] == "model_label_xyz")
    assert labels["names"] == [g["model"] for g in groups]
    assert "sr675v3_l40s" in render._page_overlay(snap)
    # the camera and the scale bar take in the rack placed on its own
    x0, x1, y0, y1 = geometry.rack_extent_m(mixed)
    assert x0 < mixed_plant.rack_xy_m[:, 0].min() and x1 > 12.5


def test_one_model_draws_no_model_labels(small_scenario):
    snap = S.snapshot_from_scenario(small_scenario, "inlet_temp", field=False)
    assert geometry.model_groups(snap) == [] and geometry.model_summary(snap) == ""
    meta, _ = drawlist.describe(snap)
    assert all(lab["points"] != "model_label_xyz" for lab in meta["labels"])
    assert "node models" not in render._page_overlay(snap)
    # racks all alike: the design power and airflow stay one number (notebook 03 uses them so)
    p = build_plant(small_scenario)
    assert isinstance(S.rack_design_power_w(small_scenario, p), float)
    assert isinstance(S.rack_design_airflow_m3_s(small_scenario, p), float)


def test_design_point_uses_each_racks_worst_case_and_airflow(mixed, mixed_plant):
    p = mixed_plant
    heat = S.rack_design_power_w(mixed, p)
    assert isinstance(heat, np.ndarray) and heat == pytest.approx(p.rack_worst_case_w())
    by_model = {m: heat[p.rack_node_model == m] for m in p.model_names}
    assert np.ptp(by_model["xe9680_h100"]) == 0 and by_model["sr675v3_l40s"][0] < by_model["xe9680_h100"][0]
    airflow = S.rack_design_airflow_m3_s(mixed, p)
    cat = twin.plant.load_catalog().nodes
    for r in (0, 16, p.n_racks - 1):   # an XE9680 rack, an SR675 V3 rack, the L40S rack
        assert airflow[r] == pytest.approx(cat[p.rack_node_model[r]].airflow_m3_s_at_max * p.rack_nodes[r])
    snap = S.snapshot_from_scenario(mixed, "power", field=False)
    assert snap.rack_heat_w == pytest.approx(heat)
    assert "to" in snap.caption          # racks of different power: the caption gives the range


def test_a_run_of_the_mixed_hall_colours_by_model(tmp_path, mixed, mixed_plant):
    res = twin.simulate(mixed)
    snap = S.snapshot_from_results(res, "node_model", -1, field=False, scenario=mixed)
    shown = snap.rack_state >= 0
    assert shown.any()
    assert np.array_equal(snap.rack_value[shown], mixed_plant.rack_model[shown].astype(float))
    img = render.render_snapshot(snap, tmp_path / "m.png", (640, 400), caption=False)
    # some pixels of each delivered model's colour (shaded faces are darker: compare the lit tops loosely)
    for k in np.unique(mixed_plant.rack_model[shown]):
        rgb = np.array([round(255 * c) for c in mcolors.to_rgb(S.MODEL_COLORS[k])])
        assert (np.abs(img.astype(int) - rgb).max(axis=-1) <= 30).sum() > 50, mixed_plant.model_names[k]


def test_mixed_hall_page_shows_the_models_in_chromium(tmp_path, mixed):
    from twin.report import chromium, chromium_executable

    if chromium_executable() is None:
        pytest.skip("headless Chromium is not installed (.ci/run installs it)")
    out = render.export_page(S.snapshot_from_scenario(mixed, "node_model", field=False), tmp_path / "mixed.html",
                             streamlines=False)
    png = tmp_path / "page.png"
    got = chromium(["--window-size=1000,700", "--virtual-time-budget=8000", "--hide-scrollbars",
                    "--disable-features=NetworkService", f"--screenshot={png}", out.as_uri()])
    assert png.exists(), got.stderr[-500:]
    import matplotlib.image as mpimg
    img = (mpimg.imread(png)[..., :3] * 255).round().astype(int)
    for k in range(3):   # the racks drawn by WebGL in each model's colour
        rgb = np.array([round(255 * c) for c in mcolors.to_rgb(S.MODEL_COLORS[k])])
        assert (np.abs(img - rgb).max(axis=-1) <= 40).sum() > 30, k
    dom = chromium(["--virtual-time-budget=8000", "--dump-dom", out.as_uri()]).stdout
    assert "node models: xe9680_h100: h1, h2" in dom and "sr675v3_l40s" in dom
