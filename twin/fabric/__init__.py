"""Fabric topologies (networkx), ECMP routing, link loads and achievable bandwidth."""

from twin.fabric.routing import (
    PATTERNS,
    LinkLoads,
    bottleneck_bandwidth_gbps,
    bottleneck_fraction,
    ecmp_path_count,
    link_loads,
    link_loads_gbps,
    placement_hops,
    shared_bandwidths_gbps,
)
from twin.fabric.storage import build_storage_fabric, storage_bandwidth_gb_s
from twin.fabric.topology import (
    FABRIC_PRESETS,
    KINDS,
    FabricLayout,
    build_fabric,
    build_preset_fabric,
    fabric_counts,
)

__all__ = [
    "FABRIC_PRESETS",
    "KINDS",
    "PATTERNS",
    "FabricLayout",
    "LinkLoads",
    "bottleneck_bandwidth_gbps",
    "bottleneck_fraction",
    "build_fabric",
    "build_preset_fabric",
    "build_storage_fabric",
    "ecmp_path_count",
    "fabric_counts",
    "link_loads",
    "link_loads_gbps",
    "placement_hops",
    "shared_bandwidths_gbps",
    "storage_bandwidth_gb_s",
]
