"""Map an :class:`~twin.inventory.model.Inventory` onto a twin scenario, and say what
could not be mapped.

What maps: compute racks (racks holding GPU nodes of a catalog model) become rack
positions, grouped into halls by site/location and into rows by the row name (or the
rack name's prefix, ``r3-07`` -> row ``r3``, position 7); floor positions come from the
inventory when every rack of a row has one, else rows are laid out in hot/cold aisle
pairs (2.4 m row pitch, 0.6 m rack pitch). Power feeds give the RPP breakers (their
voltage, phases and the panel's summed available power, NetBox's V x A (x sqrt 3) x
max utilisation) and the utility feeds (primary and redundant sides; both present means
2N). Devices are matched to the hardware catalog by their device type. Each rack keeps
its own node model and node count: the most common model and count set ``hardware``, a
row whose racks all differ from them names its own, and single racks that differ carry a
``rack_overrides`` entry, as does a rack standing off its row's line (its own floor
position). The rest of the scenario (fabric, job mix, failures, UPS, cooling when the
inventory has none) comes from the shipped scenario of the most common node model and is
listed in the report as assumed.

A rack holding GPU nodes of two models keeps its majority model (a rack is one node
model); the minority devices are reported, not silently averaged.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from twin.inventory.model import DeviceType, Inventory, Rack

ROOT = Path(__file__).resolve().parents[2]
#: shipped scenario that supplies fabric, jobs and failures for each catalog node model
TEMPLATES = {"xe9680_h100": ("blue_vela_fixed.yaml", "blue_vela.yaml"), "sr675v3_h100nvl": ("lenovo_small.yaml",),
             "sr675v3_l40s": ("lenovo_small.yaml",), "vela_a100": ("vela.yaml",)}
#: a template whose workload is a stream (no fixed jobs) lends this one's job instead
JOB_TEMPLATE = "lenovo_small.yaml"
RACK_PITCH_M = 0.6
ROW_PITCH_M = 2.4      # 1.2 m rack depth + 1.2 m aisle (two tiles)
MARGIN_M = 3.0
GPU_WORDS = ("h100", "h200", "a100", "l40s", "l40", "b200", "gb200", "mi300")
COOLING_WORDS = ("cool", "crah", "crac", "in-row", "inrow", "cdu")
AIR_RHO_CP_J_M3K = 1.2 * 1005.0    # air density [kg/m3] x specific heat [J/(kg K)] at ~20 C
COOLING_DELTA_T_K = 12.0            # design supply-return difference of a CRAH [K]


@dataclass
class Report:
    """What the import mapped, what it assumed, and what it could not map."""

    mapped: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)

    def text(self) -> str:
        out = []
        for title, items in (("mapped", self.mapped), ("assumed (not in the inventory)", self.assumed),
                             ("not mapped", self.unmapped)):
            if items:
                out.append(f"{title}:")
                out += [f"  - {i}" for i in items]
        return "\n".join(out)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(text).lower())


def match_node_model(dtype: DeviceType, catalog_nodes: dict) -> tuple[str | None, str]:
    """Catalog key of a device type (by its model number and GPU words) and how it matched."""
    words = [w for w in re.split(r"[^a-z0-9]+", f"{dtype.model} {dtype.part_number} {dtype.slug}".lower())
             if len(w) >= 4 and any(c.isdigit() for c in w) and not w.isdigit()
             and not any(w.startswith(g) for g in GPU_WORDS)]     # GPU names only break ties
    hits = [k for k, n in catalog_nodes.items() if any(w in _norm(n.description) or w in _norm(k) for w in words)]
    if not hits:
        return None, "no catalog node has this model number"
    if len(hits) == 1:
        return hits[0], f"model number in '{catalog_nodes[hits[0]].description}'"
    text = _norm(f"{dtype.model} {dtype.part_number} {dtype.slug}")
    gpu = [k for k in hits if any(g in text and g in _norm(catalog_nodes[k].description + k) for g in GPU_WORDS)]
    if len(gpu) == 1:
        return gpu[0], "model number and GPU"
    return hits[0], (f"ambiguous ({', '.join(hits)}); took {hits[0]}: name the GPU in the device type or "
                     f"pass --node-model")


_TRAIL = re.compile(r"^(.*?)[-_. ]?(\d+)$")


def row_and_index(rack: Rack) -> tuple[str, int]:
    """(row name, position) of a rack: the inventory's row if it has one, else the rack
    name's prefix and trailing number (``R3-07`` -> (``R3``, 7))."""
    m = _TRAIL.match(rack.name)
    idx = int(m.group(2)) if m else 0
    if rack.row:
        return rack.row, rack.index if rack.index is not None else idx
    return ((m.group(1) or "row") if m else rack.name), idx


def _safe(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("_.-")
    return s if s and s[0].isalnum() else f"x{s}"


def _layout_rows(racks: list[Rack], report: Report, hall: str) -> tuple[list[dict], float, float, list[list[str]]]:
    """Rows of one hall (scenario dicts), the hall's width and depth [m], and the rack
    names of each row in rack order. A rack off its row's line (a gap, a rack standing
    apart) keeps its own floor position as a ``rack_overrides`` entry."""
    rows = defaultdict(list)
    for r in racks:
        name, idx = row_and_index(r)
        rows[name].append((idx, r))
    names = sorted(rows, key=lambda n: (len(n), n))
    explicit = all(r.x_m is not None and r.y_m is not None for r in racks)
    out = []
    order: list[list[str]] = []
    if explicit:
        xs = [cast(float, r.x_m) for r in racks]   # explicit: every rack has x_m and y_m
        ys = [cast(float, r.y_m) for r in racks]
        dx, dy = MARGIN_M - min(xs), MARGIN_M - min(ys)
        for name in names:
            members = [r for _, r in sorted(rows[name], key=lambda t: t[0])]
            px = [cast(float, r.x_m) for r in members]
            py = [cast(float, r.y_m) for r in members]
            along = "x" if (max(px) - min(px)) >= (max(py) - min(py)) else "y"
            coord = px if along == "x" else py
            steps = [abs(b - a) for a, b in zip(coord, coord[1:], strict=False) if abs(b - a) > 1e-6]
            pitch = sorted(steps)[len(steps) // 2] if steps else RACK_PITCH_M
            facing = members[0].facing if members[0].facing in ("north", "south", "east", "west") else (
                "north" if along == "x" else "east")
            if not members[0].facing:
                report.assumed.append(f"hall {hall} row {name}: intake {facing} (no facing in the inventory)")
            members.sort(key=lambda r: (r.x_m, r.y_m) if along == "x" else (r.y_m, r.x_m))
            fx, fy = cast(float, members[0].x_m), cast(float, members[0].y_m)
            row = {"name": _safe(name), "x_m": round(fx + dx, 3), "y_m": round(fy + dy, 3),
                   "racks": len(members), "along": along, "pitch_m": round(pitch, 3), "intake": facing}
            placed = []
            for i, r in enumerate(members):   # racks off the row's line keep their own position
                lx, ly = (fx + i * pitch, fy) if along == "x" else (fx, fy + i * pitch)
                if abs(cast(float, r.x_m) - lx) > 0.01 or abs(cast(float, r.y_m) - ly) > 0.01:
                    placed.append({"rack": i + 1, "x_m": round(cast(float, r.x_m) + dx, 3),
                                   "y_m": round(cast(float, r.y_m) + dy, 3)})
            if placed:
                row["rack_overrides"] = placed
                report.mapped.append(f"hall {hall} row {name}: {len(placed)} racks off the row's {pitch:.2f} m "
                                     f"pitch keep their own floor position")
            out.append(row)
            order.append([r.name for r in members])
        width = max(xs) + dx + MARGIN_M
        depth = max(ys) + dy + MARGIN_M
        report.mapped.append(f"hall {hall}: {len(racks)} rack positions from the inventory's floor coordinates")
        return out, round(width, 2), round(depth, 2), order
    longest = max(len(v) for v in rows.values())
    for i, name in enumerate(names):
        out.append({"name": _safe(name), "x_m": MARGIN_M, "y_m": round(MARGIN_M + i * ROW_PITCH_M, 3),
                    "racks": len(rows[name]), "along": "x", "pitch_m": RACK_PITCH_M,
                    "intake": "north" if i % 2 == 0 else "south"})
        order.append([r.name for _, r in sorted(rows[name], key=lambda t: t[0])])
    report.assumed.append(f"hall {hall}: no floor coordinates; {len(names)} rows laid out in hot/cold aisle pairs "
                          f"({ROW_PITCH_M} m row pitch, {RACK_PITCH_M} m rack pitch)")
    width = 2 * MARGIN_M + (longest - 1) * RACK_PITCH_M + 1.2
    depth = 2 * MARGIN_M + (len(names) - 1) * ROW_PITCH_M + 1.2
    return out, round(width, 2), round(depth, 2), order


def _row_hardware(row: dict, hw: list[tuple[str, int]], default: tuple[str, int]) -> None:
    """Node model and count of a row's racks (``hw`` in rack order) on the row dict: the
    row's own when all its racks agree and differ from ``default``, else overrides of the
    racks that differ (merged with position overrides already there)."""
    base = hw[0] if len(set(hw)) == 1 else default
    if base != default:
        row["node_model"], row["nodes_per_rack"] = base
    over = {o["rack"]: o for o in row.get("rack_overrides", [])}
    for i, (m, n) in enumerate(hw):
        if (m, n) != base:
            o = over.setdefault(i + 1, {"rack": i + 1})
            if m != base[0]:
                o["node_model"] = m
            if n != base[1]:
                o["nodes_per_rack"] = n
    if over:
        row["rack_overrides"] = [over[k] for k in sorted(over)]


def _template_path(model: str) -> Path:
    """The shipped scenario that lends fabric, jobs and failures to a node model."""
    for name in TEMPLATES.get(model, ("blue_vela_fixed.yaml", "blue_vela.yaml")):
        if (ROOT / "scenarios" / name).is_file():
            return ROOT / "scenarios" / name
    return ROOT / "scenarios" / "blue_vela.yaml"


def _template(path: Path) -> dict:
    """A shipped scenario as a mapping, with its ``extends:`` chain merged."""
    from twin.scenario.loader import _resolve
    return _resolve(path, (), {})


def _cooling_units(width: float, depth: float, capacity_kw: float, supply_c: float) -> list[dict]:
    """Cooling units along the west and east walls sharing ``capacity_kw``; airflow for a
    ``COOLING_DELTA_T_K`` rise: V = Q / (rho cp dT)."""
    n_side = max(1, math.ceil(capacity_kw / 2 / 250.0))
    each = capacity_kw / (2 * n_side)
    flow = each * 1e3 / (AIR_RHO_CP_J_M3K * COOLING_DELTA_T_K)
    units = []
    for side, x in (("w", 1.0), ("e", width - 1.0)):
        for k in range(n_side):
            units.append({"name": f"crah_{side}{k + 1}", "x_m": round(x, 2),
                          "y_m": round(depth * (k + 1) / (n_side + 1), 2), "airflow_m3_s": round(flow, 3),
                          "capacity_kw": round(each, 1), "supply_temp_c": supply_c})
    return units


def build_scenario(inv: Inventory, name: str = "imported", start: dt.date | None = None,
                   node_model: str | None = None, duration_days: float = 30.0) -> tuple[dict, Report]:
    """(scenario mapping, report) for an inventory. ``node_model`` forces the catalog key
    of every GPU device type."""
    from twin.catalog import load_catalog
    from twin.scenario.loader import load_scenario

    report = Report(unmapped=[f"reader: {n}" for n in inv.notes])
    catalog = load_catalog().nodes
    if node_model is not None and node_model not in catalog:
        raise ValueError(f"--node-model {node_model!r}: expected one of {', '.join(catalog)}")
    types = {d.model: d for d in inv.device_types}
    matched: dict[str, str | None] = {}
    for model in sorted({d.device_type for d in inv.devices}):
        dtype = types.get(model, DeviceType(model=model))
        key, how = (node_model, "--node-model") if node_model and match_node_model(dtype, catalog)[0] else \
            match_node_model(dtype, catalog)
        matched[model] = key
        if key:
            report.mapped.append(f"device type '{model}' -> node model {key} ({how})")
    per_model = Counter(cast(str, matched[d.device_type]) for d in inv.devices if matched.get(d.device_type))
    if not per_model:
        raise ValueError("no device matches a GPU node of the hardware catalog "
                         f"({', '.join(catalog)}); pass --node-model if the device types name no model number")
    model, _ = per_model.most_common(1)[0]       # the scenario's default node model
    other_devices = Counter(f"{d.role or 'no role'}: {d.device_type}" for d in inv.devices if not matched.get(d.device_type))
    for what, n in sorted(other_devices.items()):
        report.unmapped.append(f"{n} x {what} (no compute node of the catalog; its power is not modelled)")
    # each rack: its majority node model and the count of those nodes
    in_rack: defaultdict[str, Counter] = defaultdict(Counter)
    for d in inv.devices:
        if matched.get(d.device_type) and d.rack:
            in_rack[d.rack][cast(str, matched[d.device_type])] += 1
    rack_hw = {r: c.most_common(1)[0] for r, c in in_rack.items()}      # rack -> (model, nodes)
    for rname, c in sorted(in_rack.items()):
        keep, keep_n = rack_hw[rname]
        for other, n in c.items():
            if other != keep:
                report.unmapped.append(f"rack {rname}: {n} {other} nodes beside {keep_n} {keep} "
                                       f"(a rack holds one node model; it keeps {keep})")
    nodes_in = {r: n for r, (_, n) in rack_hw.items()}
    counts = Counter(n for m, n in rack_hw.values() if m == model)
    per_rack = counts.most_common(1)[0][0] if counts else Counter(nodes_in.values()).most_common(1)[0][0]
    racks = [r for r in inv.racks if r.name in nodes_in]
    skipped = [r.name for r in inv.racks if r.name not in nodes_in]
    if skipped:
        report.unmapped.append(f"{len(skipped)} racks without compute nodes (network, storage, empty): "
                               f"{', '.join(skipped[:8])}{', ...' if len(skipped) > 8 else ''}")
    unknown_rack = sum(1 for d in inv.devices if matched.get(d.device_type) and not d.rack)
    if unknown_rack:
        report.unmapped.append(f"{unknown_rack} GPU nodes are in no rack")
    missing_racks = sorted(set(nodes_in) - {r.name for r in inv.racks})
    if missing_racks:
        report.unmapped.append(f"devices name racks the export does not list: {', '.join(missing_racks[:6])}")
    if not racks:
        raise ValueError("no rack of the export holds a compute node")

    template_path = _template_path(model)
    template = _template(template_path)
    halls_by = defaultdict(list)
    for r in racks:
        halls_by[(r.site, r.location)].append(r)
    halls: list[dict[str, Any]] = []
    for (site, loc), members in sorted(halls_by.items()):
        hall_name = _safe(loc or site or "hall_1")
        rows, width, depth, order = _layout_rows(members, report, hall_name)
        for row, names in zip(rows, order, strict=True):
            _row_hardware(row, [rack_hw[n] for n in names], (model, per_rack))
        halls.append({"name": hall_name, "width_m": width, "depth_m": depth, "height_m": 3.0,
                      "containment": "none", "rows": rows, "cooling_units": []})
    kinds = Counter(rack_hw[r.name] for r in racks)
    report.mapped.append(f"{len(racks)} compute racks in {len(halls)} hall(s): " + ", ".join(
        f"{n} x {c} {m} nodes" for (m, c), n in kinds.most_common()))
    if len(kinds) > 1:
        report.mapped.append(f"hardware: {per_rack} {model} nodes per rack by default; rows and racks that "
                             f"differ name their own node model and count")

    # power: the feeds of the compute racks
    rack_names = {r.name for r in racks}
    feeds = [f for f in inv.feeds if f.status not in ("offline", "decommissioning") and
             (f.rack in rack_names or not f.rack)]
    primary = [f for f in feeds if f.feed_type != "redundant"]
    redundant = [f for f in feeds if f.feed_type == "redundant"]
    if primary:
        volts = sorted(f.voltage_v for f in primary)[len(primary) // 2]
        phases = Counter(f.phases for f in primary).most_common(1)[0][0]
        panel_w: defaultdict[str, float] = defaultdict(float)
        for f in primary:
            panel_w[f.panel or "panel"] += f.available_power_w()
        n_rpp = len(panel_w)
        racks_per_rpp = math.ceil(len(racks) / n_rpp)
        pf = 0.95
        # the RPP breaker whose continuous limit (80 % rated) carries the panel's feeds
        breaker_a = max(panel_w.values()) / ((math.sqrt(3) if phases == 3 else 1.0) * volts * pf * 0.8)
        side_a_kw = sum(f.available_power_w() for f in primary) / 1e3
        side_b_kw = sum(f.available_power_w() for f in redundant) / 1e3
        report.mapped.append(f"{len(primary)} primary power feeds ({volts:g} V, {phases}-phase) on {n_rpp} panels: "
                             f"{side_a_kw:,.0f} kW available (V x A{' x sqrt 3' if phases == 3 else ''} x max "
                             f"utilisation); RPP breaker {breaker_a:.0f} A carries the largest panel")
        if redundant:
            report.mapped.append(f"{len(redundant)} redundant feeds ({side_b_kw:,.0f} kW): redundancy 2N")
    else:
        tp = template["site"]["power"]
        volts, phases = tp["rpp"].get("voltage_v", 415), tp["rpp"].get("phases", 3)
        n_rpp, racks_per_rpp = max(1, math.ceil(len(racks) / 8)), 8
        breaker_a = float(tp["rpp"]["breaker_a"])
        side_a_kw = side_b_kw = 0.0
        report.unmapped.append("no power feeds: RPP breakers and feed capacity from the template")

    hw = dict(template["hardware"], node_model=model, nodes_per_rack=per_rack)
    start = start or dt.date.today()
    sim = {"start": start.isoformat(), "duration_days": duration_days, "sample_interval_s": 3600, "seed": 0}
    scenario = {
        "name": _safe(name),
        "description": f"Imported from {inv.source} by twin import; see the header for what was assumed.",
        "simulation": sim,
        "site": {"halls": halls, "power": {}},
        "hardware": hw,
        "fabric": template["fabric"],
        "workload": template["workload"],
        "failures": template.get("failures", {}),
        "ramp": {"burn_in_days": template.get("ramp", {}).get("burn_in_days", 3),
                 "waves": [{"date": start.isoformat(), "racks": len(racks)}]},
    }
    # the job mix of the template, sized to the nodes of the default model
    nodes = sum(n for m, n in rack_hw.values() if m == model)
    jobs = []
    job_source = template if template["workload"].get("jobs") else _template(ROOT / "scenarios" / JOB_TEMPLATE)
    for j in job_source["workload"]["jobs"]:
        jj = dict(j)
        spares = int(j.get("hot_spares", 0))
        gpn = catalog[model].gpu_count
        shard = int(j.get("tp", 1)) * int(j.get("pp", 1)) * int(j.get("cp", 1))
        fits = [n for n in range(min(int(j["nodes"]), nodes - spares), 0, -1)
                if (n * gpn) % shard == 0 and int(j["global_batch"]) %
                ((n * gpn // shard) * int(j.get("micro_batch", 1))) == 0]
        jj["nodes"] = fits[0] if fits else max(1, min(int(j["nodes"]), nodes - spares))
        jj["hot_spares"] = min(spares, nodes - jj["nodes"])
        jj.pop("submit", None)
        jobs.append(jj)
        break
    scenario["workload"] = {k: v for k, v in dict(template["workload"], jobs=jobs).items()
                            if k not in ("stream", "trace")}
    report.assumed.append(f"job mix: {jobs[0]['name']} of {template_path.name} on {jobs[0]['nodes']} of {nodes} "
                          f"nodes; fabric {scenario['fabric']['kind']} and failures of {template_path.name}")
    # size what the inventory does not hold from the racks' worst case
    from twin.plant import rack_worst_cases_w
    supply = template["site"]["halls"][0]["cooling_units"][0].get("supply_temp_c", 18.0)
    probe_halls = [dict(h, cooling_units=_cooling_units(h["width_m"], h["depth_m"], 100.0, supply)) for h in halls]
    # the racks' worst case needs only the racks: the probe's power is a placeholder that
    # validation would refuse (1 GW for a few racks looks like W typed as kW), so schema only
    from twin.scenario.schema import Scenario
    probe = Scenario.model_validate(_with_power(scenario, template, 1e6, 1e6, 1, len(racks), 1e4, volts,
                                                phases, start, probe_halls, 1e6))
    worst_kw = float(rack_worst_cases_w(probe).sum()) / 1e3        # every rack at its own model's worst case
    feed_kw = side_a_kw if side_a_kw > 0 else worst_kw * 1.1
    if side_a_kw <= 0:
        report.assumed.append(f"utility feed {feed_kw:,.0f} kW (110 % of the racks' worst case)")
    for h in halls:
        share = sum(r["racks"] for r in h["rows"]) / len(racks)
        h["cooling_units"] = _cooling_units(h["width_m"], h["depth_m"], 1.25 * worst_kw * share, supply)
    report.assumed.append(f"cooling: {sum(len(h['cooling_units']) for h in halls)} CRAH units on the side walls, "
                          f"125 % of the racks' worst case ({1.25 * worst_kw:,.0f} kW); the inventory has no "
                          f"cooling plant")
    report.assumed.append(f"UPS double conversion sized to the feed ({feed_kw:,.0f} kW); power plan one stage at "
                          f"{min(feed_kw, worst_kw * 1.05):,.0f} kW from {start}")
    scenario = _with_power(scenario, template, feed_kw, side_b_kw, n_rpp, racks_per_rpp, breaker_a, volts, phases,
                           start, halls, min(feed_kw, worst_kw * 1.05))
    _ = load_scenario  # the caller validates the written file with the loader
    return scenario, report


def _with_power(scenario, template, feed_kw, side_b_kw, n_rpp, racks_per_rpp, breaker_a, volts, phases, start,
                halls, stage_kw) -> dict:
    tp = template["site"]["power"]
    two = side_b_kw > 0
    power = {
        "feeds": [{"name": "A", "capacity_kw": round(feed_kw, 1)}]
        + ([{"name": "B", "capacity_kw": round(side_b_kw, 1)}] if two else []),
        "ups": {"mode": "double_conversion", "capacity_kw": round(feed_kw * (2 if two else 1), 1),
                "ride_through_s": tp.get("ups", {}).get("ride_through_s", 300)},
        "redundancy": "2N" if two else "none",
        "rpp": {"count": int(n_rpp), "racks_per_rpp": int(racks_per_rpp), "breaker_a": round(float(breaker_a), 1),
                "voltage_v": float(volts), "phases": int(phases)},
        "plan": [{"date": start.isoformat(), "it_power_kw": round(float(stage_kw), 1)}],
        "cooling": tp.get("cooling", {}),
    }
    out = dict(scenario)
    out["site"] = {"halls": halls, "power": power}
    return out


def load_scenario_from_mapping(data: dict):
    """Validate a scenario mapping through the loader (writes a temporary file)."""
    import tempfile

    from twin.scenario.loader import load_scenario
    with tempfile.TemporaryDirectory(prefix="twin-import-") as tmp:
        p = Path(tmp) / "s.yaml"
        p.write_text(yaml.safe_dump(data, sort_keys=False))
        return load_scenario(p)


def scenario_yaml(scenario: dict, report: Report) -> str:
    """The scenario as YAML with the import report as its header comment."""
    head = ["# Written by `twin import`. What it mapped, assumed and could not map:"]
    head += [f"# {line}" for line in report.text().splitlines()]
    return "\n".join(head) + "\n" + yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True)
