"""Inventory import: racks, power panels, power feeds and devices from a DCIM tool
(NetBox, openDCIM) mapped onto a twin scenario, with a report of what could not be
mapped. ``twin import netbox|opendcim EXPORT --out scenario.yaml``."""

from twin.inventory.build import Report, build_scenario, match_node_model, scenario_yaml
from twin.inventory.model import (
           Device,
           DeviceType,
           Inventory,
           InventoryError,
           PowerFeed,
           PowerPanel,
           Rack,
)
from twin.inventory.netbox import read_netbox
from twin.inventory.opendcim import read_opendcim

__all__ = ["Device", "DeviceType", "Inventory", "InventoryError", "PowerFeed", "PowerPanel", "Rack", "Report",
           "build_scenario", "match_node_model", "read_netbox", "read_opendcim", "scenario_yaml"]
