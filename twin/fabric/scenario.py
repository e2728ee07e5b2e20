"""The one translation of a scenario's ``fabric`` section into :func:`build_fabric` arguments,
and its cross-field checks (the node count the fabric must hold).

Declaring a fabric for a million GPUs (131,072 nodes of 8 GPUs), for example::

    fabric:
      kind: rail_optimized
      switch_model: q3400          # 144 x 800G XDR: three tiers hold 144 x 72 SUs per rail
      switch_ports: 144
      link_gbps: 800
      su_nodes: 32
      site_tier: {oversubscription: 2.0}   # one fabric per hall, halls joined by a site tier

With 64-port switches a hall's three-tier fabric holds at most 65,536 nodes (2,048 SUs of
32), so such a site needs ``site_tier`` with halls of at most that size, or ``planes``
(each NIC port split into ports of lower speed on a switch of higher radix).
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from twin.fabric.topology import build_fabric, max_fabric_nodes


def fabric_build_kwargs(fabric, hall_nodes: Sequence[int]) -> dict:
    """``build_fabric`` keyword arguments of a scenario's ``fabric`` (a
    :class:`twin.scenario.schema.Fabric`) for halls of ``hall_nodes`` nodes each."""
    kw = dict(su_nodes=fabric.su_nodes, rails=fabric.rails, link_gbps=fabric.link_gbps,
              switch_ports=fabric.switch_ports, oversubscription=fabric.oversubscription,
              tor_uplinks_per_spine=fabric.tor_uplinks_per_spine, spines=fabric.spines,
              ports_per_nic=fabric.ports_per_nic, planes=fabric.planes)
    halls = [int(n) for n in hall_nodes if n > 0]
    if fabric.site_tier is not None and len(halls) > 1:
        kw.update(hall_nodes=halls, site_oversubscription=fabric.site_tier.oversubscription)
    return kw


def build_scenario_fabric(fabric, hall_nodes: Sequence[int], gpus_per_node: int,
                          aggregate: bool | None = True) -> nx.Graph:
    """The compute fabric of a scenario whose halls hold ``hall_nodes`` nodes each.

    ``aggregate=True`` (the default: what the engine needs) builds the layout only, no
    networkx vertices or edges: hops, bottleneck bandwidths and fair shares come from the
    layout either way and are identical (``tests/fabric/test_scale_fabric.py``), and the
    9,216-node graph alone took 0.35 s of CPU to build (issue 19). ``None`` builds the full
    graph below :data:`twin.fabric.topology.AGGREGATE_ABOVE_CABLES` node cables.
    """
    return build_fabric(fabric.kind, int(sum(hall_nodes)), gpus_per_node=gpus_per_node,
                        aggregate=aggregate, **fabric_build_kwargs(fabric, hall_nodes))


def fabric_problems(fabric, hall_nodes: Sequence[int]) -> list[tuple[str, object, str]]:
    """``(path, value, expected)`` for a fabric that cannot hold the scenario's nodes: the
    node count against the largest the fabric holds (per hall with a site tier), halls that
    split a scalable unit, and multi-plane on a fat tree."""
    out: list[tuple[str, object, str]] = []
    total = int(sum(hall_nodes))
    halls = [int(n) for n in hall_nodes if n > 0]
    if fabric.planes > 1 and fabric.kind == "fat_tree":
        out.append(("fabric.planes", fabric.planes, "1 for a fat_tree (one plane)"))
        return out
    site = fabric.site_tier is not None and len(halls) > 1
    rails = fabric.rails * fabric.planes
    cap = max_fabric_nodes(fabric.kind, su_nodes=fabric.su_nodes, rails=rails,
                           switch_ports=fabric.switch_ports,
                           oversubscription=fabric.oversubscription,
                           ports_per_nic=fabric.ports_per_nic)
    if cap is None or total == 0:
        return out
    k = fabric.switch_ports
    if site:
        if len(halls) > k:
            out.append(("fabric.site_tier", len(halls),
                        f"at most {k} halls on a site tier of {k}-port switches"))
        if max(halls) > cap:
            out.append(("fabric.switch_ports", k,
                        f"a fabric that holds the largest hall's {max(halls)} nodes: a "
                        f"{fabric.kind} hall fabric of {k}-port switches holds at most {cap} "
                        f"nodes"))
        unit = fabric.su_nodes
        if fabric.kind == "fat_tree":
            k_ = fabric.switch_ports
            d = round(k_ * fabric.oversubscription / (1.0 + fabric.oversubscription))
            unit = max(d // (rails * fabric.ports_per_nic), 1)
        if any(n % unit for n in halls[:-1]):
            out.append(("fabric.site_tier", list(halls),
                        f"halls of a multiple of {unit} nodes (the nodes under one leaf; a "
                        f"scalable unit never spans halls)"))
    elif cap == 0:
        out.append(("fabric.switch_ports", k,
                    f"a leaf with ports for su_nodes={fabric.su_nodes} x ports_per_nic="
                    f"{fabric.ports_per_nic} nodes (and its uplinks): {k} ports hold none"))
    elif total > cap:
        hint = (f"; with site_tier, halls of up to {cap} nodes each" if len(halls) > 1 else "")
        out.append(("fabric.switch_ports", k,
                    f"a fabric that holds the scenario's {total} nodes: a {fabric.kind} fabric "
                    f"of {k}-port switches ({fabric.su_nodes} nodes per scalable unit, three "
                    f"tiers) holds at most {cap} nodes; use switches with more ports{hint}"))
    return out


def fabric_fault_problems(fabric, hall_nodes: Sequence[int]) -> list[tuple[str, object, str]]:
    """``(path, value, expected)`` of each fault of ``fabric.faults`` (a scenario's ``fabric``,
    its halls holding ``hall_nodes`` nodes) that names no part of that fabric: a switch that is
    not a spine or core switch of it, a link that is no leaf-spine or spine-core bundle of it,
    or more cables than the bundle has. A fabric that cannot be built for the scenario's nodes
    is reported by :func:`fabric_problems` instead (the loader runs this check only when that
    one finds nothing)."""
    if not fabric.faults:
        return []
    try:
        g = build_scenario_fabric(fabric, hall_nodes, 8)
    except ValueError:
        return []
    lay = g.graph["layout"]
    above = [n for n in lay.vertex_names if n.startswith(("spine:", "core:"))]
    out: list[tuple[str, object, str]] = []
    for i, f in enumerate(fabric.faults):
        if f.switch is not None and f.switch not in above:
            shown = ", ".join(above[:4]) + (", ..." if len(above) > 4 else "")
            out.append((f"fabric.faults.{i}.switch", f.switch,
                        f"a spine or core switch of this fabric ({len(above)}: {shown})" if above
                        else "a spine or core switch: this fabric has none (one leaf per plane)"))
        elif f.link is not None:
            cables = _bundle_cables(lay, *f.link)
            if not cables:
                out.append((f"fabric.faults.{i}.link", list(f.link),
                            "a leaf-spine or spine-core bundle of this fabric, e.g. "
                            f"[{lay.leaf_names[0]}, {above[0] if above else 'none'}]"))
            elif f.cables > cables:
                out.append((f"fabric.faults.{i}.cables", f.cables,
                            f"at most the {cables} cables of that bundle"))
    return out


def _bundle_cables(lay, a: str, b: str) -> int:
    """Cables between switches ``a`` and ``b`` of a fabric layout (a leaf and a spine of its
    pod, or a spine ``j`` and a core of group ``j``, in one plane); 0 when they are not joined."""
    idx = lay.vertex_index
    if a not in idx or b not in idx:
        return 0
    va, vb = idx[a], idx[b]
    for p_i, pl in enumerate(lay.planes):
        sp = lay.spine_vid[p_i]
        if pl.spines_per_pod == 0:
            continue
        leaf_pods = {int(lay.leaf_vid[leaf]): int(pod) for leaf, pod in zip(pl.leaves, pl.leaf_pod, strict=True)}
        for x, y in ((va, vb), (vb, va)):
            if x in leaf_pods and y in sp[leaf_pods[x]]:
                return int(pl.m1)
            if pl.cores_per_group and len(lay.core_vid[p_i]):
                hit = np.argwhere(sp == x)
                if hit.size and y in lay.core_vid[p_i][int(hit[0][1])]:
                    return int(pl.m2)
    return 0
