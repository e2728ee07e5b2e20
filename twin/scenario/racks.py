"""Checks of heterogeneous racks: node models and node counts per row and per rack, explicit
rack positions, and which node model a job runs on.

A scenario names a default node model and node count (``hardware``); a row may name its
own, and ``rack_overrides`` may change single racks (model, count, position). Each
problem is ``(dotted path, value, what was expected)`` for the loader's exit-2 report.
"""

from __future__ import annotations

import math
from collections import Counter

#: One rack unit [m] (EIA-310: 1U = 1.75 in = 44.45 mm).
RACK_UNIT_M = 0.04445
#: Height of a rack that is not mounting space (plinth, roof, cable entry) [m]: a 42U rack
#: is about 2.0 m tall (e.g. APC NetShelter SX AR3100: 1,991 mm for 42U = 1,867 mm of units).
RACK_FRAME_M = 0.125


def rack_units_available(rack_height_m: float) -> int:
    """Mounting units [U] of a rack of ``rack_height_m`` [m]: floor((h - frame) / 1U); 2.0 m -> 42U."""
    return int(math.floor((rack_height_m - RACK_FRAME_M) / RACK_UNIT_M + 1e-9))


def rack_hardware_problems(s, catalog_nodes: dict) -> list[tuple[str, object, str]]:
    """Unknown node models, overrides of racks a row does not have (or twice), half-given
    positions, and racks whose nodes do not fit in their height."""
    out: list[tuple[str, object, str]] = []
    known = sorted(catalog_nodes)
    hw = s.hardware
    for h, hall in enumerate(s.site.halls):
        units = rack_units_available(hall.rack_height_m)
        for r, row in enumerate(hall.rows):
            base = f"site.halls.{h}.rows.{r}"
            if row.node_model is not None and row.node_model not in catalog_nodes:
                out.append((f"{base}.node_model", row.node_model, f"a node model in the catalog: {known}"))
            seen: Counter[int] = Counter()
            for k, o in enumerate(row.rack_overrides):
                path = f"{base}.rack_overrides.{k}"
                seen[o.rack] += 1
                if o.rack > row.racks:
                    out.append((f"{path}.rack", o.rack, f"a rack of the row (1..{row.racks})"))
                if seen[o.rack] == 2:
                    out.append((f"{path}.rack", o.rack, "each rack of a row overridden once"))
                if o.node_model is not None and o.node_model not in catalog_nodes:
                    out.append((f"{path}.node_model", o.node_model, f"a node model in the catalog: {known}"))
                if (o.x_m is None) != (o.y_m is None):
                    out.append((path, {"x_m": o.x_m, "y_m": o.y_m}, "both x_m and y_m for an explicit position, or neither"))
            overs = {o.rack: o for o in row.rack_overrides}
            for i in range(row.racks):
                o = overs.get(i + 1)
                model = (o.node_model if o else None) or row.node_model or hw.node_model
                count = (o.nodes_per_rack if o else None) or row.nodes_per_rack or hw.nodes_per_rack
                if model not in catalog_nodes:
                    continue
                need = count * catalog_nodes[model].rack_units
                if need > units:
                    where = f"{path_of(base, o, row)}"
                    out.append((where, {"node_model": model, "nodes_per_rack": count, "rack_units": need},
                                f"nodes that fit in a {hall.rack_height_m:g} m rack ({units}U)"))
                    break    # one message per row
    used = delivered_nodes_by_model(s)
    w = s.workload
    if len(used) > 1 and (w.stream is not None or w.trace is not None):
        field = "workload.stream" if w.stream is not None else "workload.trace"
        out.append((field, sorted(used), "racks of one node model with a stream or trace (their jobs are "
                    "sized in GPUs of one model and the LSF-like scheduler treats nodes as alike); "
                    "mixed racks run fixed jobs, each on one node model"))
    cap = hw.gpu_power_cap_w
    if cap is not None:
        for model in used:
            node = catalog_nodes.get(model)
            if model != hw.node_model and node is not None and cap < node.gpu_min_power_cap_w:
                out.append(("hardware.gpu_power_cap_w", cap, f"a cap of at least {node.gpu_min_power_cap_w:g} W, "
                            f"the lowest {model} allows (a cap above a model's TDP leaves it at its TDP)"))
    return out


def path_of(base: str, override, row) -> str:
    """The field that set a rack's node count: its override, else its row, else hardware."""
    if override is not None and (override.nodes_per_rack or override.node_model):
        return f"{base}.rack_overrides.{row.rack_overrides.index(override)}"
    if row.nodes_per_rack or row.node_model:
        return base
    return "hardware.nodes_per_rack"


def delivered_nodes_by_model(s) -> dict[str, int]:
    """Nodes of each node model in the racks the ramp delivers (racks in order), default model first."""
    from twin.plant import scenario_racks
    models, counts = scenario_racks(s)
    delivered = sum(w.racks for w in s.ramp.waves)
    out: dict[str, int] = {}
    for m, c in zip(models[:delivered], counts[:delivered].tolist(), strict=True):
        out[m] = out.get(m, 0) + c
    return dict(sorted(out.items(), key=lambda kv: kv[0] != s.hardware.node_model))


def job_node_model(s, job, by_model: dict[str, int]) -> str:
    """The node model a job runs on: the one it names; else the default model when it has
    nodes enough for the job, else the model with the most delivered nodes (the scheduler
    picks among models that fit; validation checks the job against this one)."""
    if job.node_model is not None:
        return job.node_model
    need = job.nodes + job.hot_spares
    if by_model.get(s.hardware.node_model, 0) >= need or not by_model:
        return s.hardware.node_model
    return max(by_model, key=lambda m: by_model[m])
