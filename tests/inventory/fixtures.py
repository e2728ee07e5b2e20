"""Realistic DCIM exports generated for the tests: a Blue Vela-like hall in NetBox's REST
API shape (nested objects, choice fields as {value, label}, custom fields) and in its web
UI CSV shape, and the same hall in openDCIM's table shape."""

from __future__ import annotations

import csv
import json
from pathlib import Path

ROWS, PER_ROW = 4, 8          # 32 compute racks
NODES_PER_RACK = 2


def _choice(value, label=None):
    return {"value": value, "label": label or value.replace("-", " ").title()}


def netbox_records(coords: bool = True, odd_rack: bool = True, mixed: bool = False):
    """``mixed``: the last row holds four Lenovo SR675 V3 (H100 NVL) per rack, and its
    last rack stands 1.2 m further along the row (a gap)."""
    site = {"id": 1, "name": "Poughkeepsie", "slug": "pok"}
    loc = {"id": 3, "name": "hall-1", "slug": "hall-1"}
    racks, feeds, devices, panels = [], [], [], []
    dt_xe = {"id": 10, "model": "PowerEdge XE9680", "slug": "dell-poweredge-xe9680",
             "manufacturer": {"id": 2, "name": "Dell", "slug": "dell"}}
    dt_sw = {"id": 11, "model": "QM9700", "slug": "nvidia-qm9700",
             "manufacturer": {"id": 4, "name": "NVIDIA", "slug": "nvidia"}}
    dt_pdu = {"id": 12, "model": "AP8886", "slug": "apc-ap8886", "manufacturer": {"id": 5, "name": "APC"}}
    dt_sr = {"id": 13, "model": "ThinkSystem SR675 V3 H100 NVL", "slug": "lenovo-sr675-v3-h100-nvl",
             "manufacturer": {"id": 6, "name": "Lenovo", "slug": "lenovo"}}
    for p in range(ROWS):
        panels.append({"id": 100 + p, "name": f"RPP-{p + 1:02d}", "site": site, "location": loc})
    rid = 0
    for row in range(ROWS):
        for k in range(PER_ROW):
            rid += 1
            name = f"R{row + 1}-{k + 1:02d}"
            lenovo = mixed and row == ROWS - 1
            gap = 1.2 if lenovo and k == PER_ROW - 1 else 0.0
            cf = {"x_m": round(4.0 + 0.6 * k + gap, 2), "y_m": round(3.0 + 2.4 * row, 2),
                  "facing": "north" if row % 2 == 0 else "south"} if coords else {}
            racks.append({"id": rid, "name": name, "site": site, "location": loc, "status": _choice("active"),
                          "u_height": 48, "custom_fields": cf, "facility_id": f"POK-{name}"})
            for side, kind in (("A", "primary"), ("B", "redundant")):
                feeds.append({"id": 1000 + 2 * rid + (side == "B"), "name": f"{name}-{side}",
                              "power_panel": {"id": 100 + row, "name": f"RPP-{row + 1:02d}"},
                              "rack": {"id": rid, "name": name}, "status": _choice("active"),
                              "type": _choice(kind), "supply": _choice("ac", "AC"),
                              "phase": _choice("three-phase"), "voltage": 415, "amperage": 32,
                              "max_utilization": 80})
            n = 1 if (odd_rack and row == ROWS - 1 and k == PER_ROW - 1) else NODES_PER_RACK
            n = 4 if lenovo else n
            for u in range(n):
                devices.append({"id": 10000 + 10 * rid + u, "name": f"{name}-n{u + 1}",
                                "device_type": dt_sr if lenovo else dt_xe,
                                "role": {"id": 1, "name": "GPU server"}, "rack": {"id": rid, "name": name},
                                "position": 2 + 6 * u, "status": _choice("active")})
            devices.append({"id": 20000 + rid, "name": f"{name}-pdu", "device_type": dt_pdu,
                            "role": {"id": 3, "name": "PDU"}, "rack": {"id": rid, "name": name},
                            "position": None, "status": _choice("active")})
    racks.append({"id": 999, "name": "NET-01", "site": site, "location": loc, "status": _choice("active"),
                  "u_height": 48, "custom_fields": {"x_m": 12.0, "y_m": 1.0} if coords else {}})
    for s in range(4):
        devices.append({"id": 30000 + s, "name": f"leaf-{s + 1}", "device_type": dt_sw,
                        "role": {"id": 2, "name": "Leaf switch"}, "rack": {"id": 999, "name": "NET-01"},
                        "position": 10 + s, "status": _choice("active")})
    types = [dict(dt_xe, u_height=6, part_number="XE9680-H100-SXM5"), dict(dt_sw, u_height=1),
             dict(dt_pdu, u_height=0), dict(dt_sr, u_height=3, part_number="7D9RCTO1WW")]
    return {"racks": racks, "power_panels": panels, "power_feeds": feeds, "devices": devices,
            "device_types": types}


def write_netbox_api_folder(folder: Path, **kw) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rec = netbox_records(**kw)
    for table, fname in (("racks", "racks"), ("power_panels", "power-panels"), ("power_feeds", "power-feeds"),
                         ("devices", "devices"), ("device_types", "device-types")):
        items = rec[table]
        (folder / f"{fname}.json").write_text(json.dumps(
            {"count": len(items), "next": None, "previous": None, "results": items}, indent=1))
    return folder


def write_netbox_csv_folder(folder: Path) -> Path:
    """The web UI's CSV export (column titles, flat values; no custom fields)."""
    folder.mkdir(parents=True, exist_ok=True)
    rec = netbox_records(coords=False)

    def dump(name, header, rows):
        with (folder / f"{name}.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
    dump("racks", ["Name", "Site", "Location", "Status", "Height (U)"],
         [[r["name"], r["site"]["name"], r["location"]["name"], "Active", r["u_height"]] for r in rec["racks"]])
    dump("power-feeds", ["Name", "Power panel", "Rack", "Status", "Type", "Supply", "Phase", "Voltage",
                         "Amperage", "Max utilization"],
         [[f["name"], f["power_panel"]["name"], f["rack"]["name"], "Active", f["type"]["label"], "AC",
           "Three-phase", f["voltage"], f["amperage"], f["max_utilization"]] for f in rec["power_feeds"]])
    dump("devices", ["Name", "Status", "Role", "Manufacturer", "Type", "Site", "Location", "Rack", "Position"],
         [[d["name"], "Active", d["role"]["name"], d["device_type"]["manufacturer"]["name"], d["device_type"]["model"],
           "Poughkeepsie", "hall-1", d["rack"]["name"], d["position"] or ""] for d in rec["devices"]])
    return folder


def opendcim_bundle() -> dict:
    cab, pdu, dev = [], [], []
    rows = [{"CabRowID": i + 1, "Name": f"Row-{chr(65 + i)}"} for i in range(ROWS)]
    panels = [{"PanelID": i + 1, "PanelLabel": f"PP-{i + 1}", "PanelVoltage": 415, "MainBreakerSize": 400,
               "NumberOfPoles": 42} for i in range(ROWS)]
    templates = [{"TemplateID": 7, "ManufacturerID": 3, "Model": "ThinkSystem SR675 V3 (H100 NVL)", "Height": 3,
                  "Wattage": 4800, "DeviceType": "Server"},
                 {"TemplateID": 8, "ManufacturerID": 4, "Model": "SN2201", "Height": 1, "Wattage": 200,
                  "DeviceType": "Switch"}]
    cid = 0
    for r in range(ROWS):
        for k in range(4):
            cid += 1
            cab.append({"CabinetID": cid, "DataCenterID": 1, "Location": f"{chr(65 + r)}{k + 1:02d}",
                        "CabRowID": r + 1, "ZoneID": 0, "CabinetHeight": 42,
                        "MapX1": 80 + 12 * k, "MapX2": 92 + 12 * k, "MapY1": 60 + 48 * r, "MapY2": 84 + 48 * r,
                        "FrontEdge": "Top" if r % 2 == 0 else "Bottom"})
            pdu.append({"PDUID": cid, "Label": f"{chr(65 + r)}{k + 1:02d}-PDU-A", "CabinetID": cid, "PanelID": r + 1,
                        "BreakerSize": 3, "PanelPole": 2 * k + 1, "InputAmperage": 32})
            for u in range(2):
                dev.append({"DeviceID": 100 * cid + u, "Label": f"gpu-{cid}-{u}", "Cabinet": cid, "Position": 4 + 3 * u,
                            "Height": 3, "TemplateID": 7, "DeviceType": "Server"})
    dev.append({"DeviceID": 9000, "Label": "mgmt-sw", "Cabinet": 1, "Position": 40, "Height": 1, "TemplateID": 8,
                "DeviceType": "Switch"})
    return {"datacenter": [{"DataCenterID": 1, "Name": "Lab DC"}], "cabrow": rows, "cabinet": cab,
            "powerpanel": panels, "pdu": pdu, "devicetemplate": templates, "device": dev}
