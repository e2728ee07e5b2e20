"""Read an openDCIM export: cabinets (data center, zone, row, map position), power
panels, power distribution units (CDUs, with their panel, breaker and voltage), devices
and device templates.

Accepted forms: a folder of per-table files named after openDCIM's tables or API
resources (``cabinet`` / ``fac_Cabinet``, ``powerpanel``, ``pdu`` / ``fac_PowerDistribution``,
``device``, ``devicetemplate``, ``cabrow``, ``datacenter``; .json or .csv), or one JSON
bundle keyed by those names (an API answer ``{"cabinet": [...]}`` is such a bundle).
Cabinet map positions (MapX1..MapY2) are pixels of the floor drawing; ``m_per_px``
turns them into metres.
"""

from __future__ import annotations

from pathlib import Path

from twin.inventory._io import number, tables
from twin.inventory.model import Device, DeviceType, Inventory, PowerFeed, PowerPanel, Rack

TABLES: dict[str, tuple[str, ...]] = {
    "cabinet": ("cabinet", "cabinets", "fac_Cabinet"),
    "powerpanel": ("powerpanel", "powerpanels", "fac_PowerPanel"),
    "pdu": ("pdu", "powerdistribution", "fac_PowerDistribution"),
    "device": ("device", "devices", "fac_Device"),
    "devicetemplate": ("devicetemplate", "devicetemplates", "fac_DeviceTemplate"),
    "cabrow": ("cabrow", "cabrows", "fac_CabRow"),
    "datacenter": ("datacenter", "datacenters", "fac_DataCenter"),
    "zone": ("zone", "zones", "fac_Zone"),
}


def _id(v) -> str:
    return "" if v in (None, "") else str(v).strip()


def read_opendcim(path: str | Path, m_per_px: float | None = None) -> Inventory:
    """An :class:`Inventory` from an openDCIM export (folder or JSON bundle)."""
    t = tables(path, TABLES)
    inv = Inventory(source=f"openDCIM export {path}")
    dc = {_id(r.get("DataCenterID")): str(r.get("Name", "")) for r in t["datacenter"]}
    zones = {_id(r.get("ZoneID")): str(r.get("Description", r.get("Name", ""))) for r in t["zone"]}
    rows = {_id(r.get("CabRowID")): str(r.get("Name", "")) for r in t["cabrow"]}
    cab_name = {}
    for i, r in enumerate(t["cabinet"]):
        name = str(r.get("Location") or r.get("Name") or "")
        if not name:
            inv.notes.append(f"cabinet[{i}]: no Location (cabinet name); skipped")
            continue
        cab_name[_id(r.get("CabinetID"))] = name
        x = y = None
        x1, x2, y1, y2 = (number(r.get(k)) for k in ("MapX1", "MapX2", "MapY1", "MapY2"))
        if m_per_px and None not in (x1, x2, y1, y2) and (x1, x2, y1, y2) != (0, 0, 0, 0):
            x, y = 0.5 * (x1 + x2) * m_per_px, 0.5 * (y1 + y2) * m_per_px
        front = str(r.get("FrontEdge", "")).lower()
        facing = {"top": "north", "bottom": "south", "left": "west", "right": "east"}.get(front, "")
        zone = zones.get(_id(r.get("ZoneID")), "")
        hall = dc.get(_id(r.get("DataCenterID")), _id(r.get("DataCenterID")))
        inv.racks.append(Rack(name=name, site=hall, location=zone or hall,
                              row=rows.get(_id(r.get("CabRowID")), ""), x_m=x, y_m=y, facing=facing,
                              u_height=int(number(r.get("CabinetHeight"), 42))))
    panel_name = {}
    for r in t["powerpanel"]:
        pid = _id(r.get("PanelID"))
        panel_name[pid] = str(r.get("PanelLabel") or pid)
        inv.panels.append(PowerPanel(name=panel_name[pid], main_breaker_a=number(r.get("MainBreakerSize")),
                                     voltage_v=number(r.get("PanelVoltage"))))
    panel_volts = {p.name: p.voltage_v for p in inv.panels}
    for i, r in enumerate(t["pdu"]):
        panel = panel_name.get(_id(r.get("PanelID")), "")
        # openDCIM: InputAmperage is the CDU's input current, BreakerSize its breaker's poles
        # (1, 2 or 3), the voltage is the panel's
        amps = number(r.get("InputAmperage"))
        volts = number(r.get("Voltage")) or panel_volts.get(panel)
        if not amps or not volts:
            inv.notes.append(f"pdu[{i}] {r.get('Label', '')}: no InputAmperage or panel voltage; skipped")
            continue
        poles = int(number(r.get("BreakerSize"), 1) or 1)
        inv.feeds.append(PowerFeed(name=str(r.get("Label", f"pdu{i}")), panel=panel,
                                   rack=cab_name.get(_id(r.get("CabinetID")), ""), voltage_v=volts,
                                   amperage_a=amps, phases=3 if poles >= 3 else 1, max_utilization_pct=80.0))
    templates = {}
    for r in t["devicetemplate"]:
        tid = _id(r.get("TemplateID"))
        templates[tid] = str(r.get("Model", tid))
        inv.device_types.append(DeviceType(model=templates[tid], manufacturer=str(r.get("ManufacturerID", "")),
                                           u_height=number(r.get("Height"), 1.0),
                                           max_power_w=number(r.get("Wattage"))))
    for r in t["device"]:
        inv.devices.append(Device(name=str(r.get("Label", "")),
                                  device_type=templates.get(_id(r.get("TemplateID")), str(r.get("Model", ""))),
                                  role=str(r.get("DeviceType", "")).lower(),
                                  rack=cab_name.get(_id(r.get("Cabinet")), ""), position_u=number(r.get("Position"))))
    return inv
