"""What a DCIM inventory holds, as plain records (no I/O): racks, power panels, power
feeds, devices and device types. :mod:`twin.inventory.netbox` and
:mod:`twin.inventory.opendcim` read their exports into an :class:`Inventory`;
:mod:`twin.inventory.build` maps it onto a twin scenario."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Rack:
    name: str
    site: str = ""
    location: str = ""          # NetBox location / OpenDCIM zone or data center: one hall each
    row: str = ""               # row name if the tool has one (else taken from the rack name)
    index: int | None = None    # position in the row
    x_m: float | None = None    # floor position of the rack centre [m], if the tool has one
    y_m: float | None = None
    facing: str = ""            # north/south/east/west: the side it breathes from
    u_height: int = 42
    status: str = "active"


@dataclass
class PowerPanel:
    name: str
    site: str = ""
    location: str = ""
    main_breaker_a: float | None = None
    voltage_v: float | None = None


@dataclass
class PowerFeed:
    name: str
    panel: str = ""
    rack: str = ""
    voltage_v: float = 0.0
    amperage_a: float = 0.0
    phases: int = 1
    max_utilization_pct: float = 80.0
    feed_type: str = "primary"   # primary / redundant (NetBox)
    status: str = "active"

    def available_power_w(self) -> float:
        """Available power of the feed [W]: V x A (x sqrt 3 for three phase, V line to line)
        x max utilisation, NetBox's own definition (dcim.PowerFeed.available_power)."""
        p = self.voltage_v * self.amperage_a * (math.sqrt(3) if self.phases == 3 else 1.0)
        return p * self.max_utilization_pct / 100.0


@dataclass
class DeviceType:
    model: str
    manufacturer: str = ""
    slug: str = ""
    part_number: str = ""
    u_height: float = 1.0
    max_power_w: float | None = None


@dataclass
class Device:
    name: str
    device_type: str = ""       # DeviceType.model (or slug)
    role: str = ""
    rack: str = ""
    position_u: float | None = None
    status: str = "active"


@dataclass
class Inventory:
    source: str
    racks: list[Rack] = field(default_factory=list)
    panels: list[PowerPanel] = field(default_factory=list)
    feeds: list[PowerFeed] = field(default_factory=list)
    devices: list[Device] = field(default_factory=list)
    device_types: list[DeviceType] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)     # what the reader skipped and why


class InventoryError(ValueError):
    """An export that cannot be read (file, record and field named in the message)."""
