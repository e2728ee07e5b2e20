"""Fabric topologies (networkx), ECMP routing, link loads and achievable bandwidth.

* :func:`build_fabric` (``rail_optimized`` / ``clos`` / ``fat_tree``; multi-plane, one
  fabric per hall joined by a site tier, aggregated above 200,000 node cables),
  :func:`build_preset_fabric`, :func:`fabric_counts`, :func:`max_fabric_nodes`,
  :func:`build_storage_fabric`; :func:`build_scenario_fabric` / :func:`fabric_problems` (a
  scenario's ``fabric`` section);
* :func:`placement_hops`, :func:`ecmp_path_count`;
* :func:`link_loads` (arrays) / :func:`link_loads_gbps` (dict) of a job's collective,
  :func:`bottleneck_bandwidth_gbps` (per-node achievable Gb/s, with failed cables,
  switches or NICs), :func:`shared_bandwidths_gbps` (jobs sharing links, proportional),
  :func:`fair_share_bandwidths_gbps` / :func:`max_min_fractions` (max-min fair sharing,
  adaptive routing or hashed static ECMP, failures re-routed),
  :func:`storage_bandwidth_gb_s`.
"""

from twin.fabric.flows import POLICIES, fair_share_bandwidths_gbps, max_min_fractions
from twin.fabric.routing import (
    PATTERNS,
    ROUTINGS,
    LinkLoads,
    bottleneck_bandwidth_gbps,
    bottleneck_fraction,
    ecmp_path_count,
    link_loads,
    link_loads_gbps,
    placement_hops,
    shared_bandwidths_gbps,
)
from twin.fabric.scenario import build_scenario_fabric, fabric_build_kwargs, fabric_problems
from twin.fabric.storage import build_storage_fabric, storage_bandwidth_gb_s
from twin.fabric.topology import (
    FABRIC_PRESETS,
    KINDS,
    FabricLayout,
    build_fabric,
    build_preset_fabric,
    fabric_counts,
    max_fabric_nodes,
)

__all__ = [
    "FABRIC_PRESETS",
    "KINDS",
    "PATTERNS",
    "POLICIES",
    "ROUTINGS",
    "FabricLayout",
    "LinkLoads",
    "bottleneck_bandwidth_gbps",
    "bottleneck_fraction",
    "build_fabric",
    "build_preset_fabric",
    "build_scenario_fabric",
    "build_storage_fabric",
    "ecmp_path_count",
    "fabric_build_kwargs",
    "fabric_counts",
    "fabric_problems",
    "fair_share_bandwidths_gbps",
    "link_loads",
    "link_loads_gbps",
    "max_fabric_nodes",
    "max_min_fractions",
    "placement_hops",
    "shared_bandwidths_gbps",
    "storage_bandwidth_gb_s",
]
