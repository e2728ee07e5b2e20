"""Read a NetBox export: racks (site, location, position), power panels, power feeds
(voltage, amperage, phase, max utilisation, primary/redundant), devices and device types.

Accepted forms:

- a folder with one file per table, as the REST API returns them (``racks.json``,
  ``power-panels.json``, ``power-feeds.json``, ``devices.json``, ``device-types.json``:
  a list or an API page ``{"results": [...]}``) or as the web UI exports them to CSV
  (``racks.csv``, ... with the UI's column titles: Name, Site, Location, Voltage, ...);
- one JSON bundle ``{"racks": [...], "power_panels": [...], "power_feeds": [...],
  "devices": [...], "device_types": [...]}``.

Rack floor positions are not a NetBox field; the reader takes them from custom fields
``x_m`` / ``y_m`` (and ``row`` / ``facing``) when present.
"""

from __future__ import annotations

from pathlib import Path

from twin.inventory._io import nested, number, tables
from twin.inventory.model import Device, DeviceType, Inventory, PowerFeed, PowerPanel, Rack

TABLES = {
    "racks": ("racks", "rack", "dcim_racks"),
    "power_panels": ("power-panels", "power_panels", "powerpanels", "dcim_powerpanels"),
    "power_feeds": ("power-feeds", "power_feeds", "powerfeeds", "dcim_powerfeeds"),
    "devices": ("devices", "device", "dcim_devices"),
    "device_types": ("device-types", "device_types", "devicetypes", "dcim_devicetypes"),
}


def _get(rec: dict, *keys, default=""):
    """First present key of ``keys`` (API names, then the UI's CSV titles)."""
    for k in keys:
        if k in rec and rec[k] not in (None, ""):
            return nested(rec[k])
    return default


def _custom(rec: dict, key: str):
    cf = rec.get("custom_fields") or {}
    if isinstance(cf, dict) and cf.get(key) not in (None, ""):
        return cf[key]
    return rec.get(f"cf_{key}", rec.get(key))


def _phase(v) -> int:
    text = str(v).lower()
    return 3 if ("three" in text or text.strip() == "3") else 1


def read_netbox(path: str | Path) -> Inventory:
    """An :class:`Inventory` from a NetBox export (folder or JSON bundle)."""
    t = tables(path, TABLES)
    inv = Inventory(source=f"NetBox export {path}")
    for i, r in enumerate(t["racks"]):
        name = str(_get(r, "name", "Name"))
        if not name:
            inv.notes.append(f"racks[{i}]: no name; skipped")
            continue
        x, y = number(_custom(r, "x_m")), number(_custom(r, "y_m"))
        inv.racks.append(Rack(
            name=name, site=str(_get(r, "site", "Site")), location=str(_get(r, "location", "Location")),
            row=str(_custom(r, "row") or ""), x_m=x, y_m=y, facing=str(_custom(r, "facing") or "").lower(),
            u_height=int(number(_get(r, "u_height", "Height (U)", "U height"), 42)),
            status=str(_get(r, "status", "Status", default="active")).lower()))
    for r in t["power_panels"]:
        inv.panels.append(PowerPanel(name=str(_get(r, "name", "Name")), site=str(_get(r, "site", "Site")),
                                     location=str(_get(r, "location", "Location"))))
    for i, r in enumerate(t["power_feeds"]):
        v = number(_get(r, "voltage", "Voltage"))
        a = number(_get(r, "amperage", "Amperage"))
        if v is None or a is None:
            inv.notes.append(f"power_feeds[{i}] {_get(r, 'name', 'Name')}: no voltage or amperage; skipped")
            continue
        inv.feeds.append(PowerFeed(
            name=str(_get(r, "name", "Name")), panel=str(_get(r, "power_panel", "Power panel", "Power Panel")),
            rack=str(_get(r, "rack", "Rack")), voltage_v=abs(v), amperage_a=a,
            phases=_phase(_get(r, "phase", "Phase", default="single-phase")),
            max_utilization_pct=number(_get(r, "max_utilization", "Max utilization", "Max Utilization"), 80.0),
            feed_type=str(_get(r, "type", "Type", default="primary")).lower(),
            status=str(_get(r, "status", "Status", default="active")).lower()))
    for r in t["device_types"]:
        inv.device_types.append(DeviceType(
            model=str(_get(r, "model", "Model")), manufacturer=str(_get(r, "manufacturer", "Manufacturer")),
            slug=str(_get(r, "slug", "Slug")), part_number=str(_get(r, "part_number", "Part number")),
            u_height=number(_get(r, "u_height", "Height (U)"), 1.0)))
    for r in t["devices"]:
        dtype = r.get("device_type")
        model = (nested(dtype, "model") if isinstance(dtype, dict) else
                 str(_get(r, "device_type", "Type", "Device type", "Device Type")))
        if isinstance(dtype, dict) and not any(d.model == model for d in inv.device_types):
            inv.device_types.append(DeviceType(model=str(model), manufacturer=str(nested(dtype, "manufacturer")),
                                               slug=str(dtype.get("slug", ""))))
        inv.devices.append(Device(
            name=str(_get(r, "name", "Name")), device_type=str(model),
            role=str(_get(r, "role", "device_role", "Role", "Device role")),
            rack=str(_get(r, "rack", "Rack")), position_u=number(_get(r, "position", "Position")),
            status=str(_get(r, "status", "Status", default="active")).lower()))
    return inv
