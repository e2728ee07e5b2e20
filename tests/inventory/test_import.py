"""Inventory import: NetBox (API JSON and UI CSV) and openDCIM exports become scenarios
that validate; the numbers that map are checked against the exports, and what cannot map
is reported."""

import json
import math
import subprocess
import sys

import pytest

from tests.inventory.fixtures import (
    NODES_PER_RACK,
    PER_ROW,
    ROWS,
    netbox_records,
    opendcim_bundle,
    write_netbox_api_folder,
    write_netbox_csv_folder,
)
from twin.catalog import load_catalog
from twin.inventory import (
    DeviceType,
    InventoryError,
    PowerFeed,
    build_scenario,
    match_node_model,
    read_netbox,
    read_opendcim,
)
from twin.plant import build_plant, rack_worst_case_w
from twin.scenario.loader import load_scenario


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "twin.cli", "import", *args], capture_output=True, text=True,
                          cwd=cwd)


def test_available_power_is_netboxs_formula():
    # NetBox dcim.PowerFeed: V x A x sqrt(3) (three phase) x max_utilization / 100
    f = PowerFeed("f", voltage_v=415, amperage_a=32, phases=3, max_utilization_pct=80)
    assert f.available_power_w() == pytest.approx(415 * 32 * math.sqrt(3) * 0.8)
    assert PowerFeed("g", voltage_v=230, amperage_a=16, phases=1, max_utilization_pct=100).available_power_w() == 3680


@pytest.mark.parametrize("model, part, key", [
    ("PowerEdge XE9680", "", "xe9680_h100"),
    ("ThinkSystem SR675 V3 (H100 NVL)", "", "sr675v3_h100nvl"),
    ("ThinkSystem SR675 V3", "SR675V3-L40S", "sr675v3_l40s"),
    ("QM9700", "", None),
])
def test_device_types_match_the_catalog(model, part, key):
    got, _ = match_node_model(DeviceType(model=model, part_number=part), load_catalog().nodes)
    assert got == key


def test_netbox_api_export_maps_racks_feeds_and_devices(tmp_path):
    folder = write_netbox_api_folder(tmp_path / "nb")
    inv = read_netbox(folder)
    assert len(inv.racks) == ROWS * PER_ROW + 1 and len(inv.feeds) == 2 * ROWS * PER_ROW
    data, report = build_scenario(inv, "pok", None, None, 10)
    out = tmp_path / "pok.yaml"
    out.write_text(json.dumps(data))         # JSON is YAML
    s = load_scenario(out)
    hall = s.site.halls[0]
    assert [r.racks for r in hall.rows] == [PER_ROW] * ROWS
    assert [r.intake for r in hall.rows] == ["north", "south", "north", "south"]
    assert hall.rows[0].pitch_m == pytest.approx(0.6) and hall.rows[1].y_m - hall.rows[0].y_m == pytest.approx(2.4)
    assert s.hardware.node_model == "xe9680_h100" and s.hardware.nodes_per_rack == NODES_PER_RACK
    assert sum(w.racks for w in s.ramp.waves) == ROWS * PER_ROW
    # power: primary side = sum of the feeds' available power; both sides present -> 2N
    side = ROWS * PER_ROW * 415 * 32 * math.sqrt(3) * 0.8 / 1e3
    assert s.site.power.redundancy == "2N"
    assert [f.capacity_kw for f in s.site.power.feeds] == pytest.approx([side, side], rel=1e-3)
    assert s.site.power.rpp.count == ROWS and s.site.power.rpp.voltage_v == 415 and s.site.power.rpp.phases == 3
    # R4-08 holds one node instead of two: its own node count, not the row's
    (odd,) = hall.rows[3].rack_overrides
    assert (odd.rack, odd.nodes_per_rack, odd.node_model, odd.x_m) == (PER_ROW, 1, None, None)
    assert build_plant(s).n_nodes == ROWS * PER_ROW * NODES_PER_RACK - 1
    text = "\n".join(report.unmapped)
    assert "NET-01" in text and "Leaf switch: QM9700" in text and "PDU: AP8886" in text
    assert any("cooling" in a for a in report.assumed)


def test_racks_of_different_device_types_keep_their_own_node_model(tmp_path):
    """The last row holds four Lenovo SR675 V3 (H100 NVL) per rack, one of them 1.2 m off
    the row's pitch: the row names its own model and count, the rack keeps its position,
    and nothing about the models is left unmapped."""
    inv = read_netbox(write_netbox_api_folder(tmp_path / "nb", odd_rack=False, mixed=True))
    data, report = build_scenario(inv, "pok_mixed", None, None, 10)
    out = tmp_path / "mixed.yaml"
    out.write_text(json.dumps(data))
    s = load_scenario(out)
    rows = s.site.halls[0].rows
    assert s.hardware.node_model == "xe9680_h100" and s.hardware.nodes_per_rack == NODES_PER_RACK
    assert [r.node_model for r in rows] == [None, None, None, "sr675v3_h100nvl"]
    assert rows[3].nodes_per_rack == 4
    (apart,) = rows[3].rack_overrides
    assert apart.rack == PER_ROW and apart.x_m - rows[3].x_m == pytest.approx(7 * 0.6 + 1.2)
    p = build_plant(s)
    nodes = load_catalog().nodes
    want = (ROWS - 1) * PER_ROW * NODES_PER_RACK * nodes["xe9680_h100"].gpu_count \
        + PER_ROW * 4 * nodes["sr675v3_h100nvl"].gpu_count
    assert p.rack_gpus.sum() == want
    assert list(p.rack_node_model).count("sr675v3_h100nvl") == PER_ROW
    text = "\n".join(report.unmapped)
    assert "node model" not in text and "gaps" not in text
    assert any("keep their own floor position" in m for m in report.mapped)
    # the cooling the import sizes covers every rack at its own model's worst case
    worst_kw = sum(rack_worst_case_w(s, nodes[m], nodes_per_rack=int(n), network_w=s.hardware.network_power_per_rack_w)
                   for m, n in zip(p.rack_node_model, p.rack_nodes, strict=True)) / 1e3
    cool_kw = sum(u.capacity_kw for u in s.site.halls[0].cooling_units)
    assert cool_kw == pytest.approx(1.25 * worst_kw, rel=1e-3)


def test_netbox_csv_export_without_coordinates_lays_out_rows(tmp_path):
    inv = read_netbox(write_netbox_csv_folder(tmp_path / "csv"))
    data, report = build_scenario(inv, "pok_csv", None, None, 10)
    out = tmp_path / "s.yaml"
    out.write_text(json.dumps(data))
    s = load_scenario(out)
    assert [r.name for r in s.site.halls[0].rows] == ["R1", "R2", "R3", "R4"]
    assert any("hot/cold aisle pairs" in a for a in report.assumed)
    assert s.site.power.redundancy == "2N"


def test_opendcim_bundle_with_map_scale(tmp_path):
    bundle = tmp_path / "dcim.json"
    bundle.write_text(json.dumps(opendcim_bundle()))
    inv = read_opendcim(bundle, m_per_px=0.05)
    data, report = build_scenario(inv, "lab", None, None, 10)
    out = tmp_path / "lab.yaml"
    out.write_text(json.dumps(data))
    s = load_scenario(out)
    assert s.hardware.node_model == "sr675v3_h100nvl" and s.hardware.nodes_per_rack == 2
    rows = s.site.halls[0].rows
    assert [r.racks for r in rows] == [4] * ROWS
    assert rows[0].pitch_m == pytest.approx(12 * 0.05)                    # 12 px apart at 5 cm/px
    assert rows[1].y_m - rows[0].y_m == pytest.approx(48 * 0.05)
    assert [r.intake for r in rows] == ["north", "south", "north", "south"]   # FrontEdge Top / Bottom
    assert s.site.power.redundancy == "none"
    assert "Switch: SN2201" in "\n".join(report.unmapped).replace("switch", "Switch")


def test_cli_writes_a_valid_scenario_and_reports(tmp_path):
    folder = write_netbox_api_folder(tmp_path / "nb")
    out = tmp_path / "hall.yaml"
    r = _cli("netbox", str(folder), "--out", str(out), "--start", "2025-03-03")
    assert r.returncode == 0, r.stderr
    assert "it validates" in r.stdout and "not mapped:" in r.stdout
    head = out.read_text().splitlines()[0]
    assert head.startswith("# Written by `twin import`")
    s = load_scenario(out)
    assert str(s.simulation.start) == "2025-03-03"
    v = subprocess.run([sys.executable, "-m", "twin.cli", "validate", str(out)], capture_output=True, text=True)
    assert v.returncode == 0, v.stderr


@pytest.mark.slow
def test_imported_scenario_runs(tmp_path):
    import twin
    folder = write_netbox_api_folder(tmp_path / "nb", odd_rack=False)
    out = tmp_path / "hall.yaml"
    assert _cli("netbox", str(folder), "--out", str(out), "--days", "3").returncode == 0
    res = twin.simulate(load_scenario(out))
    assert res.kpis["gpu_hours_installed"] > 0


@pytest.mark.parametrize("make, needle", [
    (lambda p: p.write_text("{not json"), "not valid JSON"),
    (lambda p: p.write_text(json.dumps({"racks": "x"})), "racks: expected a list"),
    (lambda p: p.write_text(json.dumps({"racks": netbox_records()["racks"]})), "no device matches"),
])
def test_bad_exports_exit_2_with_one_line(tmp_path, make, needle):
    f = tmp_path / "export.json"
    make(f)
    r = _cli("netbox", str(f), "--out", str(tmp_path / "s.yaml"))
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "s.yaml").exists()


def test_missing_export_and_wrong_suffix(tmp_path):
    r = _cli("netbox", str(tmp_path / "nope"), "--out", str(tmp_path / "s.yaml"))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = _cli("opendcim", str(tmp_path), "--out", str(tmp_path / "s.json"))
    assert r.returncode == 2 and ".yaml" in r.stderr
    with pytest.raises(InventoryError):
        read_netbox(tmp_path / "nope.json")
