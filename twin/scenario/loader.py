"""Read scenario YAML (safe loader only), resolve ``extends:``, apply ``--set`` overrides,
validate, and report every problem with file, dotted path, value and expectation.

Validation has two channels.  A :class:`~twin.errors.Problem` stops the scenario (the CLI
exits 2).  A :class:`Note` is something a planner must see that does not stop the run (a
job whose memory estimate is above its GPU's capacity but within the memory model's
margin, a DualPipe job that may run another schedule at run time);
:func:`check_scenario` returns the notes beside the scenario, while
:func:`load_scenario` and :func:`validate_data` return the scenario alone, as before.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from twin.catalog import load_catalog
from twin.errors import Problem, ScenarioError
from twin.scenario.schema import Scenario

_MISSING = object()
# The C-accelerated safe loader when libyaml is there (same safety: no Python tags).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: largest scenario file read [B]; anything larger is not a hand-written scenario
MAX_SCENARIO_BYTES = 4 * 2**20
#: largest scenario once aliases are expanded [values]: an alias bomb stops here
MAX_EXPANDED_VALUES = 1_000_000


class StrictSafeLoader(_SAFE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, refusing a key given twice in one mapping (YAML would silently
    keep the last one). Merge keys (``<<: *base``) may still be overridden."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                k = (key_node.tag, key_node.value)
                if k in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found the key {key_node.value!r} twice (first on line {seen[k]})", key_node.start_mark)
                seen[k] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def _expanded_values(data: Any) -> int:
    """Number of values ``data`` has once every alias is expanded (shared objects counted
    at each use, computed once each); raises ValueError on a recursive alias or past
    :data:`MAX_EXPANDED_VALUES`."""
    memo: dict[int, int] = {}
    busy: set[int] = set()

    def size(obj: Any) -> int:
        if not isinstance(obj, (dict, list)):
            return 1
        oid = id(obj)
        if oid in memo:
            return memo[oid]
        if oid in busy:
            raise ValueError("a recursive alias (a value that contains itself)")
        busy.add(oid)
        items = obj.values() if isinstance(obj, dict) else obj
        n = 1
        for v in items:
            n += size(v)
            if n > MAX_EXPANDED_VALUES:
                raise ValueError(f"more than {MAX_EXPANDED_VALUES:,} values once aliases are expanded")
        busy.discard(oid)
        memo[oid] = n
        return n
    return size(data)


def _read_text(path: Path, shown: str) -> str:
    """The text of a regular file of at most :data:`MAX_SCENARIO_BYTES` (a FIFO would block,
    ``/dev/zero`` would never end)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ScenarioError([Problem(shown, "", str(path), "an existing scenario file")]) from None
    except OSError as exc:
        raise ScenarioError([Problem(shown, "", str(path), f"a readable file ({exc.strerror})")]) from None
    if not stat.S_ISREG(st.st_mode):
        raise ScenarioError([Problem(shown, "", str(path), "a regular file (not a folder, pipe or device)")])
    if st.st_size > MAX_SCENARIO_BYTES:
        raise ScenarioError([Problem(shown, "", f"{st.st_size:,} bytes",
                                     f"a scenario file of at most {MAX_SCENARIO_BYTES:,} bytes")])
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SCENARIO_BYTES + 1)
        if len(raw) > MAX_SCENARIO_BYTES:
            raise ScenarioError([Problem(shown, "", "a growing file",
                                         f"a scenario file of at most {MAX_SCENARIO_BYTES:,} bytes")])
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError([Problem(shown, "", str(path), f"a readable UTF-8 file ({exc})")]) from None


def safe_yaml(text: str) -> Any:
    """Parse YAML text with :class:`StrictSafeLoader` and bound its expanded size. Raises
    ``yaml.YAMLError`` for bad syntax or duplicate keys, ValueError for an impossible date
    (2025-02-30, 25:00:00), an alias bomb or a recursive alias."""
    try:
        data = yaml.load(text, Loader=StrictSafeLoader)
    except RecursionError:
        raise ValueError("nesting too deep") from None
    except (OverflowError, TypeError) as exc:
        raise ValueError(str(exc)) from None
    try:
        _expanded_values(data)
    except RecursionError:
        raise ValueError("nesting too deep") from None
    return data


# --------------------------------------------------------------------------- other YAML files
@dataclass(frozen=True)
class NotAScenario(Problem):
    """A YAML file of the twin that is not an engine scenario (a sweep, a step estimate, a
    room-benchmark case): one line saying what it is and what runs it."""

    def __str__(self) -> str:
        return f"not an engine scenario: {self.file} is {self.expected}"


#: a top-level key that marks another kind of twin file, (what it is, what runs it; ``{file}``
#: is the file as given): a scenario never has these keys (``Scenario`` forbids unknown keys)
_OTHER_FILES: dict[str, tuple[str, str]] = {
    "twin_grid": ("a room-benchmark validation case (a measured room encoded on the twin's layered grid)",
                  "pytest tests/validation"),
    "parallelism": ("a step-time estimate file (a model, its training and parallelism on a cluster)",
                    "twin estimate step {file}"),
}
#: the room-benchmark cases and the tests that run them (twin.studies.room_benchmark's layouts)
_ROOM_CASES = {
    "rise_pod2.yaml": "pytest tests/validation/test_room_benchmark.py "
                      "(twin.studies.room_benchmark.pod2_comparison)",
    "rise_pod2_2018.yaml": "pytest tests/validation/test_room_benchmark.py -k pod2_2018 "
                           "(twin.studies.room_benchmark.pod2_2018_comparison)",
    "room_benchmark_contained_layout.yaml": "pytest tests/validation/test_contained_room.py",
    "room_benchmark_module1_layout.yaml": "pytest tests/validation/test_module1_room.py",
}


def _other_file(data: dict, path: Path, shown: str) -> NotAScenario | None:
    """The problem of a file that is another kind of twin file, or None: a mapping without
    ``site`` or ``extends`` (every scenario has one) that is a sweep file (:func:`twin.sweep.spec.is_sweep_file`)
    or has one of the keys of :data:`_OTHER_FILES`."""
    if "site" in data or "extends" in data:
        return None
    from twin.sweep.spec import is_sweep_file

    if is_sweep_file(path):
        return NotAScenario(shown, "", "a sweep", "a sweep file (scenarios over a grid or cases and seeds, "
                            f"twin.sweep); run it with twin sweep {shown} --out DIR")
    for key, (kind, command) in _OTHER_FILES.items():
        if key in data:
            if key == "twin_grid":
                command = _ROOM_CASES.get(path.name, "pytest tests/validation")
            return NotAScenario(shown, "", key, f"{kind}; run it with {command.format(file=shown)}")
    return None


# --------------------------------------------------------------------------- YAML + extends
def _read_yaml(path: Path, shown: str) -> dict:
    text = _read_text(path, shown)
    try:
        data = safe_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError([Problem(shown, f"({where})", what, "valid YAML")]) from None
    except ValueError as exc:     # impossible date or time, alias bomb
        raise ScenarioError([Problem(shown, "", str(exc), "valid YAML values (real dates and times, "
                                     "a bounded document)")]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ScenarioError([Problem(shown, "", type(data).__name__, "a mapping at the top level")])
    other = _other_file(data, path, shown)
    if other is not None:
        raise ScenarioError([other])
    return data


def deep_merge(base: Any, over: Any) -> Any:
    """Mappings merge key by key (``over`` wins); anything else is replaced by ``over``."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(over)


def _origins(data: Any, file: str, prefix: str, out: dict[str, str]) -> None:
    out[prefix] = file
    if isinstance(data, dict):
        for key, value in data.items():
            _origins(value, file, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            _origins(value, file, f"{prefix}.{i}" if prefix else str(i), out)


def _resolve(path: Path, chain: tuple[Path, ...], origins: dict[str, str]) -> dict:
    shown = str(path)
    real = path.resolve()
    if real in chain:
        cycle = " -> ".join(str(p) for p in (*chain, real))
        raise ScenarioError([Problem(shown, "extends", cycle, "no cycle of extends")])
    data = _read_yaml(path, shown)
    parent = data.pop("extends", None)
    if parent is None:
        _origins(data, shown, "", origins)
        return data
    if not isinstance(parent, str) or not parent:
        raise ScenarioError([Problem(shown, "extends", parent, "a path to another scenario file")])
    parent_path = (path.parent / parent)
    if not parent_path.exists():
        raise ScenarioError([Problem(shown, "extends", parent, f"an existing file ({parent_path})")])
    if not parent_path.is_file():
        raise ScenarioError([Problem(shown, "extends", parent, "a regular file (not a folder, pipe or device)")])
    base = _resolve(parent_path, (*chain, real), origins)
    _origins(data, shown, "", origins)
    return deep_merge(base, data)


# --------------------------------------------------------------------------- overrides
def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b.0.c=value`` -> (['a','b','0','c'], value parsed as a YAML scalar/flow value)."""
    if "=" not in text:
        raise ScenarioError([Problem("--set", text, text, "dotted.path=value")])
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in parts):
        raise ScenarioError([Problem("--set", key, text, "a dotted path such as site.power.ups.mode")])
    try:
        value = safe_yaml(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    except ValueError as exc:
        raise ScenarioError([Problem(f"--set {text}", key, raw, f"a valid value ({exc})")]) from None
    return parts, value


def apply_override(data: dict, parts: list[str], value: Any) -> None:
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = ".".join(parts[: i + 1])
        if isinstance(node, list):
            if not part.lstrip("-").isdigit() or not -len(node) <= int(part) < len(node):
                raise ScenarioError([Problem("--set", where, part, f"a list index 0..{len(node) - 1}")])
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ScenarioError([Problem("--set", where, node, "a mapping or list to descend into")])


# --------------------------------------------------------------------------- validation
def _expected(err: dict) -> str:
    kind = err.get("type", "")
    msg = err.get("msg", "")
    if kind == "extra_forbidden":
        return "no such field (unknown key)"
    if kind == "missing":
        return "a required field"
    ctx = err.get("ctx") or {}
    if "expected" in ctx:
        return f"one of {ctx['expected']}"
    msg = msg.removeprefix("Value error, ")
    return msg[0].lower() + msg[1:] if msg else kind


#: loc parts pydantic adds for the members of a union (not fields of the scenario)
_UNION_TAGS = {"float", "int", "str", "bool", "date", "datetime", "none"}


def _clean_loc(loc: tuple) -> list:
    """``loc`` without the union members' tags; a part right after a list index is a field
    of the list's item (``site.power.plan.1.date``), never a tag."""
    return [p for k, p in enumerate(loc)
            if not (isinstance(p, str) and ("[" in p or "-" in p or p in _UNION_TAGS)
                    and not (k and isinstance(loc[k - 1], int)))]


def _origin_of(path: str, origins: dict[str, str], default: str) -> str:
    """The file that set the value at ``path``, or the ``--set`` that did: a ``--set`` of the
    path itself or of a parent names the ``--set``; one of a part of the path (a row's x_m
    for a problem with the row) names the file and the ``--set``."""
    sets = {k: v for k, v in origins.items() if v.startswith("--set")}
    parts = path.split(".")
    while parts:
        key = ".".join(parts)
        if key in sets:
            return sets[key]
        parts.pop()
    inner = [v for k, v in sets.items() if k.startswith(path + ".")]
    parts = path.split(".")
    while parts:
        key = ".".join(parts)
        if key in origins:
            base = origins[key]
            break
        parts.pop()
    else:
        base = origins.get("", default)
    return f"{base} with {', '.join(inner)}" if inner else base


def _pipeline_schedule_problems(job, path: str, micro_batches: int | None) -> list[tuple[str, object, str]]:
    """A job's ``pipeline_schedule`` against its layout: the estimate file's rules
    (:func:`twin.compute.estimate_file.layout_problems`), which are the step model's
    (:func:`twin.compute.step_estimate`): interleaved needs vpp > 1 and the others vpp 1;
    dualpipe needs an even pp, an even number of micro-batches >= 2 pp (deepseek-ai/DualPipe,
    DualPipe.step's assertions) and the distributed optimizer (zero_stage < 3), the rules of
    :func:`twin.compute.step.dualpipe_problems`.
    ``micro_batches`` per data-parallel rank at the job's size, None when unknown (the
    layout's own problems are reported elsewhere)."""
    from twin.compute.step import dualpipe_problems, resolved_schedule, schedule_vpp_mismatch

    sched = resolved_schedule(job.pipeline_schedule, job.vpp)
    out: list[tuple[str, object, str]] = []
    if schedule_vpp_mismatch(sched, job.vpp):
        out.append((path, job.pipeline_schedule,
                    "vpp > 1 for the interleaved schedule (vpp = 1)" if sched == "interleaved" else
                    f"vpp = 1 for {sched} (vpp = {job.vpp} is the interleaved schedule)"))
    if sched != "dualpipe":
        return out
    said = {"pp": f"an even pp for dualpipe (rank r holds stages r and pp-1-r), got pp = {job.pp}",
            "microbatches": f"an even number of micro-batches >= 2 pp = {2 * job.pp} for dualpipe, "
                            f"got {micro_batches} (global_batch / (data-parallel ranks x micro_batch))",
            "zero_stage": "zero_stage 0-2 for dualpipe (modelled with the distributed optimizer), "
                          "got zero_stage = 3"}
    out += [(path, job.pipeline_schedule, said[rule])
            for rule, _ in dualpipe_problems(pp=job.pp, microbatches=micro_batches,
                                             zero_stage=job.zero_stage)]
    return out


def _pipeline_layout_problems(job, path: str) -> list[tuple[str, object, str]]:
    """A job's ``pipeline_layout`` against the job: the parser's checks
    (:func:`twin.compute.pipeline_layout.parse_pipeline_layout`: the grammar, ``pp x vpp``
    virtual stages, ``model.layers`` decoder layers, ``model.mtp_depth`` MTP layers, the
    embedding first and the loss last), its message kept as the expected text."""
    from twin.compute.pipeline_layout import parse_pipeline_layout

    if job.pipeline_layout is None:
        return []
    m = job.model
    try:
        parse_pipeline_layout(job.pipeline_layout, pp=job.pp, vpp=job.vpp, layers=m.layers,
                              mtp_depth=m.mtp_depth)
    except ValueError as exc:
        return [(path, job.pipeline_layout,
                 f"a Megatron-core pipeline layout of pp x vpp = {job.pp} x {job.vpp} virtual stages "
                 f"holding the model's {m.layers} layers and {m.mtp_depth} MTP layers ({exc})")]
    return []


#: a scenario job's DeepSeek-V3 memory options and the values that leave them off
_MEMORY_OPTIONS = {"recompute_norms_mla_up": False, "fp8_cached_linear_inputs": False,
                   "adam_moment_dtype": "fp32"}


def _deepseek_problems(job, path: str, gpus: int, node) -> list[tuple[str, object, str]]:
    """A job's DeepSeek-V3 options (``model.node_limit``, ``moe_dispatch_dtype`` and the
    memory options of :data:`_MEMORY_OPTIONS`) against the rest of the job on ``gpus`` GPUs of
    the catalog ``node``, each at its own path.

    The step and memory models' own checks decide: node-limited routing by
    :func:`twin.compute.step.moe_nodes_per_token` on the expert-parallel group's nodes
    (:func:`twin.plant.expert_group_nodes`, as :func:`twin.compute.step_estimate` counts
    them), each memory option set alone on the job by
    :func:`twin.plant.job_memory_error` (:func:`twin.compute.memory.memory_per_gpu_bytes`'s
    raises), their messages kept as the expected text.  ``node_limit`` and fp8 dispatch on a
    dense model are the step model's ``moe_experts > 0`` rule said with the job's names."""
    from twin.compute.step import moe_nodes_per_token
    from twin.plant import expert_group_nodes, job_memory_error, parallel_spec
    out: list[tuple[str, object, str]] = []
    m = job.model
    if not m.experts:
        if m.node_limit is not None:
            out.append((f"{path}.model.node_limit", m.node_limit,
                        "null on a dense model (node-limited routing needs model.experts > 0)"))
        if job.moe_dispatch_dtype != "bf16":
            out.append((f"{path}.moe_dispatch_dtype", job.moe_dispatch_dtype,
                        "bf16 on a dense model (the expert dispatch needs model.experts > 0)"))
    elif m.node_limit is not None and m.experts % job.ep == 0:
        nodes = expert_group_nodes(parallel_spec(job), node.gpu_count)
        try:
            moe_nodes_per_token(experts=m.experts, top_k=m.top_k, nodes=nodes, node_limit=m.node_limit)
        except ValueError as exc:
            out.append((f"{path}.model.node_limit", m.node_limit,
                        f"node-limited routing over the expert-parallel group's {nodes} node(s) "
                        f"(ep = {job.ep}); the step model: {exc}"))
    off = {k: v for k, v in _MEMORY_OPTIONS.items() if getattr(job, k) != v}
    if off:
        base = job.model_copy(update=_MEMORY_OPTIONS)
        if job_memory_error(base, gpus, node) is None:     # else the job's other problems
            for name in off:
                err = job_memory_error(base.model_copy(update={name: getattr(job, name)}), gpus, node)
                if err:
                    if job.activation_recompute:    # the job's true is the memory model's 'full'
                        err += " (a job's activation_recompute: true is 'full')"
                    out.append((f"{path}.{name}", getattr(job, name), f"what the memory model accepts: {err}"))
    return out


def semantic_problems(s: Scenario) -> list[tuple[str, object, str]]:
    """Cross-field checks that the field types alone cannot express: (path, value, expected)."""
    out: list[tuple[str, object, str]] = []
    catalog = load_catalog()
    if s.hardware.node_model not in catalog.nodes:
        out.append(("hardware.node_model", s.hardware.node_model,
                    f"a node model in the catalog: {sorted(catalog.nodes)}"))
    from twin.scenario.racks import delivered_nodes_by_model, job_node_model, rack_hardware_problems
    out += rack_hardware_problems(s, catalog.nodes)
    if s.fabric.switch_model not in catalog.switches:
        out.append(("fabric.switch_model", s.fabric.switch_model,
                    f"a switch model in the catalog: {sorted(catalog.switches)}"))
    from twin.fabric.scenario import fabric_fault_problems, fabric_problems
    from twin.plant import rack_hardware
    hall_nodes = [sum(rack_hardware(h, s.hardware)[1]) for h in s.site.halls]
    fabric_out = fabric_problems(s.fabric, hall_nodes)
    out += fabric_out
    if not fabric_out:      # faults name parts of a fabric that can be built
        out += fabric_fault_problems(s.fabric, hall_nodes)
    n_racks = 0
    for h, hall in enumerate(s.site.halls):
        hw, hd = hall.rack_width_m / 2, hall.rack_depth_m / 2
        for r, row in enumerate(hall.rows):
            n_racks += row.racks
            end = row.pitch_m * (row.racks - 1)
            xs = (row.x_m, row.x_m + (end if row.along == "x" else 0.0))
            ys = (row.y_m, row.y_m + (end if row.along == "y" else 0.0))
            # footprint: width along the row, depth across it
            ax, ay = (hw, hd) if row.along == "x" else (hd, hw)
            if min(xs) - ax < 0 or max(xs) + ax > hall.width_m or min(ys) - ay < 0 or max(ys) + ay > hall.depth_m:
                out.append((f"site.halls.{h}.rows.{r}",
                            {"x_m": row.x_m, "y_m": row.y_m, "racks": row.racks},
                            f"every rack footprint inside the {hall.width_m} m x {hall.depth_m} m hall"))
        for c, cu in enumerate(hall.cooling_units):
            if not (0 <= cu.x_m <= hall.width_m and 0 <= cu.y_m <= hall.depth_m):
                out.append((f"site.halls.{h}.cooling_units.{c}", {"x_m": cu.x_m, "y_m": cu.y_m},
                            f"a position inside the {hall.width_m} m x {hall.depth_m} m hall"))
        if hall.supply == "overhead" and not hall.tiles and (
                hall.containment != "none" or any(r.enclosure for r in hall.rows)):
            out.append((f"site.halls.{h}.tiles", [], "diffuser positions: with contained or enclosed "
                        "intakes an overhead supply has no default diffuser in front of the racks"))
        for t, tile in enumerate(hall.tiles):
            if not (0 <= tile.x_m <= hall.width_m and 0 <= tile.y_m <= hall.depth_m):
                out.append((f"site.halls.{h}.tiles.{t}", {"x_m": tile.x_m, "y_m": tile.y_m},
                            f"a position inside the {hall.width_m} m x {hall.depth_m} m hall"))
        for o, ob in enumerate(hall.obstacles):
            if not (0 <= min(ob.x0_m, ob.x1_m) and max(ob.x0_m, ob.x1_m) <= hall.width_m
                    and 0 <= min(ob.y0_m, ob.y1_m) and max(ob.y0_m, ob.y1_m) <= hall.depth_m):
                out.append((f"site.halls.{h}.obstacles.{o}", ob.name, "an obstacle inside the hall"))
    for e, ev in enumerate(s.site.cooling_faults.events):
        if ev.hall >= len(s.site.halls):
            out.append((f"site.cooling_faults.events.{e}.hall", ev.hall, f"a hall index below {len(s.site.halls)}"))
        elif ev.unit not in {c.name for c in s.site.halls[ev.hall].cooling_units}:
            out.append((f"site.cooling_faults.events.{e}.unit", ev.unit,
                        f"a cooling unit of hall {ev.hall}: {[c.name for c in s.site.halls[ev.hall].cooling_units]}"))
    p = s.site.power
    feeds = [f.name for f in p.feeds]
    for e, gev in enumerate(p.grid.events):
        if gev.feed is not None and (gev.feed not in feeds or len(feeds) < 2 or gev.kind != "outage"):
            out.append((f"site.power.grid.events.{e}.feed", gev.feed,
                        f"an outage of one of two or more feeds: {feeds}"))
    for k in range(1, len(p.plan)):
        if p.plan[k].date <= p.plan[k - 1].date:
            out.append((f"site.power.plan.{k}.date", p.plan[k].date.isoformat(),
                        f"a date after the previous stage ({p.plan[k - 1].date.isoformat()})"))
    waves = s.ramp.waves
    for k in range(1, len(waves)):
        if waves[k].date < waves[k - 1].date:
            out.append((f"ramp.waves.{k}.date", waves[k].date.isoformat(),
                        f"a date not before the previous wave ({waves[k - 1].date.isoformat()})"))
    delivered = sum(w.racks for w in waves)
    if delivered > n_racks:
        out.append(("ramp.waves", delivered, f"at most {n_racks} racks (positions in the halls)"))
    if p.rpp.count * p.rpp.racks_per_rpp < n_racks:
        out.append(("site.power.rpp.count", p.rpp.count,
                    f"enough RPPs for {n_racks} racks at {p.rpp.racks_per_rpp} racks per RPP"))
    by_model = delivered_nodes_by_model(s)     # a job runs on the nodes of one model
    # jobs a stream class trains: its refits halve pp while layers % (pp vpp) != 0
    # (twin.workload.engine_jobs.fit_parallelism), which needs pp vpp dividing the layers
    templates = {c.model_job for c in s.workload.stream.classes} if s.workload.stream else set()
    for j, job in enumerate(s.workload.jobs):
        micro_batches = None        # per data-parallel rank and step, when the layout divides
        bad_layout = _pipeline_layout_problems(job, f"workload.jobs.{j}.pipeline_layout")
        jm = job_node_model(s, job, by_model)
        total_nodes = by_model.get(jm, 0)
        gpn = catalog.nodes[jm].gpu_count if jm in catalog.nodes else None
        if job.node_model is not None and job.node_model not in by_model:
            out.append((f"workload.jobs.{j}.node_model", job.node_model,
                        f"a node model of the delivered racks: {sorted(m for m in by_model if m in catalog.nodes)}"))
        elif job.nodes + job.hot_spares > total_nodes:
            of = f" of {jm}" if len(by_model) > 1 else ""
            out.append((f"workload.jobs.{j}.nodes", job.nodes,
                        f"nodes + hot_spares at most the {total_nodes} delivered nodes{of}"))
        if gpn:
            gpus = job.nodes * gpn
            model_par = job.tp * job.pp * job.cp
            if gpus % model_par:
                out.append((f"workload.jobs.{j}", {"gpus": gpus, "tp*pp*cp": model_par},
                            "a GPU count divisible by tp*pp*cp"))
            else:
                dp = gpus // model_par
                if job.global_batch % (dp * job.micro_batch):
                    out.append((f"workload.jobs.{j}.global_batch", job.global_batch,
                                f"a multiple of data-parallel ranks x micro_batch = {dp * job.micro_batch}"))
                else:
                    micro_batches = job.global_batch // (dp * job.micro_batch)
                from twin.compute.step import expert_dp_unit
                etp = job.moe_expert_tp
                if dp % expert_dp_unit(tp=job.tp, cp=job.cp, ep=job.ep, moe_expert_tp=etp):
                    if etp is None:
                        out.append((f"workload.jobs.{j}.ep", job.ep,
                                    f"a divisor of the data x context parallel ranks ({dp * job.cp})"))
                    else:
                        out.append((f"workload.jobs.{j}.ep", job.ep,
                                    f"moe_expert_tp x ep = {etp * job.ep} dividing the tensor x "
                                    f"context x data parallel ranks ({job.tp * job.cp * dp})"))
                if job.fsdp_shard is not None and (dp * job.cp) % job.fsdp_shard:
                    out.append((f"workload.jobs.{j}.fsdp_shard", job.fsdp_shard,
                                f"a divisor of the data x context parallel ranks ({dp * job.cp})"))
            if job.tp > gpn:
                out.append((f"workload.jobs.{j}.tp", job.tp, f"tensor parallelism within a node (<= {gpn})"))
            from twin.plant import job_memory_problem
            # a bad layout is its own problem, not a memory estimate of the even split
            mem = None if bad_layout else job_memory_problem(job, gpus, catalog.nodes[jm])
            if mem:
                out.append((f"workload.jobs.{j}", {"tp": job.tp, "pp": job.pp, "cp": job.cp, "gpus": gpus},
                            f"a layout that fits in GPU memory; it {mem}"))
            out += _deepseek_problems(job, f"workload.jobs.{j}", gpus, catalog.nodes[jm])
        if job.model.heads % job.tp:
            out.append((f"workload.jobs.{j}.tp", job.tp,
                        f"a tensor-parallel size that divides the {job.model.heads} attention heads"))
        if job.model.heads % job.model.kv_heads:
            out.append((f"workload.jobs.{j}.model.kv_heads", job.model.kv_heads, "a divisor of heads"))
        if job.model.layers % (job.pp * job.vpp):
            if job.pipeline_layout is None:
                out.append((f"workload.jobs.{j}.pp", job.pp, "pp * vpp dividing the number of layers"))
            elif job.name in templates:  # a layout places the layers itself, a refit does not
                out.append((f"workload.jobs.{j}.pp", job.pp,
                            "pp * vpp dividing the number of layers: a stream class trains this job "
                            "(model_job) and its refits split the layers evenly"))
        out += bad_layout
        out += _pipeline_schedule_problems(job, f"workload.jobs.{j}.pipeline_schedule", micro_batches)
    from twin.reliability import load_failure_classes
    classes = load_failure_classes()
    known = {c.name for c in classes}
    parts = {c.part for c in classes if c.part}
    if isinstance(s.failures.spares, dict):
        for part in s.failures.spares:
            if part not in parts:
                out.append((f"failures.spares.{part}", part, f"a spare part of the failure catalog: {sorted(parts)}"))
    for name in s.failures.class_rate_scale:
        if name not in known:
            out.append((f"failures.class_rate_scale.{name}", name, f"a failure class: {sorted(known)}"))
    plant = s.site.power.cooling
    for sign, word in ((1, "warmest"), (-1, "coldest")):
        extreme_c = plant.outdoor_temp_c + sign * (plant.outdoor_temp_swing_c + plant.outdoor_daily_swing_c)
        if not -90.0 <= extreme_c <= 60.0:
            out.append(("site.power.cooling.outdoor_temp_swing_c", plant.outdoor_temp_swing_c,
                        f"swings that keep the {word} outdoor temperature within -90..60 C (it reaches {extreme_c:g} C)"))
    from twin.scenario.bounds import all_problems
    out.extend(all_problems(s))
    names = [job.name for job in s.workload.jobs]
    for j, name in enumerate(names):
        if names.index(name) != j:
            out.append((f"workload.jobs.{j}.name", name, "a unique job name"))
    if s.hardware.gpu_power_cap_w is not None and s.hardware.node_model in catalog.nodes:
        node = catalog.nodes[s.hardware.node_model]
        if not node.gpu_min_power_cap_w <= s.hardware.gpu_power_cap_w <= node.gpu_tdp_w:
            out.append(("hardware.gpu_power_cap_w", s.hardware.gpu_power_cap_w,
                        f"a cap between {node.gpu_min_power_cap_w} and {node.gpu_tdp_w} W"))
    # cooling events, fault windows, weather file
    from twin.scenario.cooling import cooling_problems
    out += cooling_problems(s)
    out += _ups_mode_problems(s)
    if s.hardware.node_model in catalog.nodes:
        from twin.power.chain import chain_problems  # branch circuits against a rack's idle draw
        out += chain_problems(s)
        if not rack_hardware_problems(s, catalog.nodes):    # one rack's worst case needs its models
            out += _power_limit_findings(s)[0]
    return out


def _ups_mode_problems(s: Scenario) -> list[tuple[str, object, str]]:
    """The run's UPS mode against the chain's (``site.power.chain.ups``): a run whose chain
    changes the UPS mode at a dated stage follows the chain from its as-built mode
    (:func:`twin.scenario.power_chain.ups_mode_changes`), so ``site.power.ups.mode`` must be
    that as-built mode (else the file says two UPS histories); and every mode the chain
    gives a run must be one the engine models."""
    from twin.power.electrical import UPS_MODES
    from twin.scenario.power_chain import ups_mode_schedule

    pw = s.site.power
    if pw.chain is None or pw.chain.ups is None:
        return []
    sched = ups_mode_schedule(pw.chain)
    out: list[tuple[str, object, str]] = []
    if sched and sched[0][1] != pw.ups.mode:
        out.append(("site.power.ups.mode", pw.ups.mode,
                    f"the chain's as-built UPS mode {sched[0][1]!r} (site.power.chain.ups.mode); set both to the "
                    f"UPS as built and give later changes as dated site.power.chain.stages"))
    if len(sched) > 1:
        for when, mode in sched:
            if mode not in UPS_MODES:
                path = "site.power.chain.ups.mode"       # as built, or the stage that sets it
                for k, st in enumerate(pw.chain.stages):
                    if st.date == when:
                        key = next((key for key in st.set if str(key).startswith("ups")), None)
                        path = f"site.power.chain.stages.{k}" + (f".set.{key}" if key else "")
                out.append((path, f"ups.mode {mode} from {when or 'as built'}",
                            f"a UPS mode the engine models, {list(UPS_MODES)}"))
    return out


def _power_limit_findings(s: Scenario) -> tuple[list[tuple[str, object, str]], list[tuple[str, str]]]:
    """Limits that keep racks dark for the whole run, against one rack's worst case (what
    admission reserves, :func:`twin.plant.rack_worst_case_w`), each limit scaled by
    ``site.power.oversubscription`` as the engine admits: a rack's branch circuits in normal
    operation (every cord live), an RPP's continuous limit, a feed path's worst-case IT limit
    (:func:`twin.power.chain.feed_it_limits_w`: its share of the IT and of the cooling), the
    UPS, the largest plan stage. Problems (path, value, expected) where no rack can ever be
    powered; notes (path, text) where only some racks cannot, or a plan stage powers none."""
    import numpy as np

    from twin.power.chain import feed_it_limits_w, rack_figures_w
    from twin.power.electrical import breaker_continuous_limit_w

    pw = s.site.power
    k = pw.oversubscription
    fig = rack_figures_w(s)
    wc = np.atleast_1d(np.asarray(fig["worst_case_racks_w"], float))
    lo, hi = float(wc.min()), float(wc.max())
    problems: list[tuple[str, object, str]] = []
    notes: list[tuple[str, str]] = []

    def check(path: str, value: object, limit_w: float, what: str) -> None:
        if lo > limit_w * k:
            problems.append((path, value, f"{what} of at least one rack's worst case ({lo / 1e3:.1f} kW); it is "
                                          f"{limit_w * k / 1e3:.1f} kW, so no rack can ever be powered"))
        elif hi > limit_w * k:
            n = int((wc > limit_w * k).sum())
            notes.append((path, f"{what} ({limit_w * k / 1e3:.1f} kW) is below the worst case of {n} rack(s) "
                                f"(up to {hi / 1e3:.1f} kW): they are never powered"))

    br = pw.chain.branch if pw.chain is not None else None
    if br is not None:
        cord = float(breaker_continuous_limit_w(br.breaker_a, br.voltage_v, br.phases, br.rated_100pct,
                                                br.power_factor))
        check("site.power.chain.branch.breaker_a", br.breaker_a, br.cords_per_rack * cord,
              f"a rack's branch circuits in normal operation ({br.cords_per_rack} cords at the continuous rule)")
    rpp = pw.rpp
    check("site.power.rpp.breaker_a", rpp.breaker_a, float(breaker_continuous_limit_w(
        rpp.breaker_a, rpp.voltage_v, rpp.phases, rpp.rated_100pct, rpp.power_factor)),
        "an RPP's continuous limit")
    feeds = feed_it_limits_w(s)
    f = int(np.argmin(feeds))
    a = 1.0 if pw.redundancy == "2N" else 1.0 / len(pw.feeds)
    ups_binds = pw.ups.mode != "bypass" and pw.ups.capacity_kw * 1e3 / len(pw.feeds) / a <= feeds[f] * (1 + 1e-12)
    path, value = (("site.power.ups.capacity_kw", pw.ups.capacity_kw) if ups_binds
                   else (f"site.power.feeds.{f}.capacity_kw", pw.feeds[f].capacity_kw))
    mech = pw.chain is not None and "switchboards" in pw.chain.mechanical.carried_by
    what = (f"the IT power of feed path {pw.feeds[f].name}'s UPS share (redundancy {pw.redundancy})" if ups_binds
            else f"the IT power of feed {pw.feeds[f].name} at worst case (redundancy {pw.redundancy}"
            + (", with its share of the cooling at the design outdoor temperature)" if mech else ")"))
    check(path, value, float(feeds[f]), what)
    if pw.chain is None or not pw.chain.stages_set_plan:
        plan = [st.it_power_kw * 1e3 for st in pw.plan]
        if max(plan) * k < lo:
            problems.append(("site.power.plan", [st.it_power_kw for st in pw.plan],
                             f"a stage of at least one rack's worst case ({lo / 1e3:.1f} kW): no rack can "
                             f"ever be powered"))
        else:
            for i, st in enumerate(pw.plan):
                if st.it_power_kw * 1e3 * k < lo:
                    notes.append((f"site.power.plan.{i}.it_power_kw", f"{st.it_power_kw:g} kW from {st.date} is "
                                  f"below one rack's worst case ({lo / 1e3:.1f} kW): no rack is powered in "
                                  f"that stage"))
    return problems, notes


@dataclass(frozen=True)
class Note:
    """Something a planner must see about a valid scenario that does not stop the run:
    the file that set the part it is about, its dotted path, and what to know."""

    file: str
    path: str
    text: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.text}"


@dataclass(frozen=True)
class CheckedScenario:
    """A valid scenario and the notes its validation found (:func:`check_scenario`)."""

    scenario: Scenario
    notes: tuple[Note, ...] = ()


def semantic_notes(s: Scenario) -> list[tuple[str, str]]:
    """Notes on a valid scenario, as (dotted path, text): each fixed job whose memory
    estimate is above its GPU's capacity but within the memory model's margin
    (:func:`twin.plant.job_memory_note`; above the margin it is a problem of
    :func:`semantic_problems`), and each training class of a job stream with jobs estimated
    above their GPU's capacity (one note per class, for the largest estimate, not one per
    job; above the margin too, since a stream's jobs are not refused); and each DualPipe job
    that may run another schedule: an elastic job on a size it may shrink to
    (:func:`_elastic_dualpipe_note`), a stream class refitted from a DualPipe job
    (:func:`_stream_dualpipe_notes`); and each stream class refitted from a job with a
    ``pipeline_layout`` to another pp (:func:`_stream_layout_notes`); limits that keep some
    racks dark (:func:`_power_limit_findings`), among them plan stages above the chain's
    utility service or RPPs at their dates (:func:`twin.power.chain.utility_plan_notes`,
    :func:`twin.power.chain.rpp_plan_notes`) or above the chain's usable IT capacity whatever
    else binds (:func:`twin.power.chain.capacity_plan_notes`); and cooling units short of the racks'
    worst-case heat, a hall's or one unit's (:func:`twin.scenario.cooling.cooling_capacity_notes`)."""
    from twin.plant import job_memory_note
    from twin.scenario.racks import delivered_nodes_by_model, job_node_model

    out: list[tuple[str, str]] = []
    catalog = load_catalog()
    by_model = delivered_nodes_by_model(s)
    for j, job in enumerate(s.workload.jobs):
        jm = job_node_model(s, job, by_model)      # the node model semantic_problems checks
        if jm in catalog.nodes:
            note = job_memory_note(job, job.nodes * catalog.nodes[jm].gpu_count, catalog.nodes[jm])
            if note is not None:
                out.append((f"workload.jobs.{j}", note))
            note = _elastic_dualpipe_note(job, catalog.nodes[jm].gpu_count)
            if note is not None:
                out.append((f"workload.jobs.{j}.pipeline_schedule", note))
    if s.hardware.node_model in catalog.nodes:
        out += _power_limit_findings(s)[1]
        from twin.power.chain import capacity_plan_notes, rpp_plan_notes, utility_plan_notes
        out += utility_plan_notes(s) + rpp_plan_notes(s) + capacity_plan_notes(s)
    from twin.scenario.cooling import cooling_capacity_notes
    out += cooling_capacity_notes(s)
    refitter = _stream_refitter(s, catalog)    # the stream's refitted jobs, set up once
    if refitter is not None:
        out += _stream_memory_notes(s, catalog, refitter)
        out += _stream_dualpipe_notes(refitter)
        out += _stream_layout_notes(refitter)
    return out


#: what :func:`twin.plant.runnable_schedule` checks before it keeps DualPipe
_DUALPIPE_NEEDS = "an even pp and, per data-parallel rank, an even number of micro-batches >= 2 pp"
_FALLBACK = "the engine runs the schedule vpp = 1 implies (1f1b) instead, at that schedule's step time"


def _dualpipe_lost(job, gpus: int) -> str | None:
    """Why DualPipe does not run for ``job`` on ``gpus`` GPUs ("pp 1", "5 micro-batches per rank",
    "a global batch of 100 over 24 ranks"), counting the GPUs the engine uses
    (:func:`twin.plant.usable_gpus`); None when it runs or the job is not DualPipe
    (:func:`twin.plant.runnable_schedule` decides)."""
    from twin.compute.step import dualpipe_problems
    from twin.plant import parallel_spec, runnable_schedule, usable_gpus

    par = parallel_spec(job)
    gpus = usable_gpus(par, gpus)
    if par.pipeline_schedule != "dualpipe" or runnable_schedule(par, gpus).pipeline_schedule == "dualpipe":
        return None
    dp = par.data_parallel(gpus)
    unit = dp * par.micro_batch
    whole = bool(unit) and par.global_batch % unit == 0
    # the rules runnable_schedule checks (zero_stage 3 never loads)
    why = [f"pp {got}" if rule == "pp" else f"{got} micro-batch{'es' if got != 1 else ''} per rank"
           for rule, got in dualpipe_problems(
               pp=par.pp, microbatches=par.global_batch // unit if whole else None, zero_stage=None)]
    if not whole:
        why.append(f"a global batch of {par.global_batch} over {dp} ranks")
    return ", ".join(why) or "its layout"


def _listed(items: list[str], most: int = 6) -> str:
    """``a, b or c``: at most ``most`` items, then how many more."""
    if len(items) > most:
        items = items[:most] + [f"{len(items) - most} more"]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _elastic_dualpipe_note(job, gpus_per_node: int) -> str | None:
    """The note on an elastic DualPipe job that may shrink to a size where DualPipe's
    conditions fail, or None.  The sizes are the scheduler's
    (:meth:`twin.sim.scheduler.Scheduler.elastic_size`, by :func:`twin.plant.elastic_gpus_run`:
    node counts below the job's whose GPUs its tp x pp x cp divide, that leave a usable
    expert-parallel group, and whose data-parallel ranks x micro_batch divide its global
    batch); on one of them the engine runs the schedule vpp implies
    (:func:`twin.plant.runnable_schedule`).  At the job's own size the loader has checked
    DualPipe's conditions (a problem, not a note)."""
    from twin.plant import elastic_gpus_run

    if not job.elastic or job.pipeline_schedule != "dualpipe":
        return None
    lost = []
    for n in range(job.nodes - 1, 0, -1):
        gpus = n * gpus_per_node
        if not elastic_gpus_run(job, gpus):
            continue                    # not a size the scheduler shrinks the job to
        why = _dualpipe_lost(job, gpus)
        if why is not None:
            lost.append(f"{n} ({why})")
    if not lost:
        return None
    return (f"the job is elastic and may shrink to {_listed(lost)} of its {job.nodes} nodes, "
            f"where DualPipe does not run (it needs {_DUALPIPE_NEEDS} = {2 * job.pp}): there "
            f"{_FALLBACK}")


def _stream_refitter(s: Scenario, catalog):
    """The stream's classes as the engine builds their jobs: ``None`` without a stream (or with
    a node model the catalog lacks), else ``(stream, gpus_per_node, templates, refits)``: the
    stream, the default node model's GPUs, each class's template (:func:`twin.workload.engine_jobs.class_templates`)
    and ``refits(name)``, the (GPUs the class asks for, the job fitted to them on whole nodes,
    :func:`twin.workload.engine_jobs.fit_parallelism`) pairs of a class, ``None`` for a class the
    cluster cannot host (it is never drawn).  The one set-up of the stream notes below."""
    import math

    from twin.plant import rack_gpus
    from twin.workload.config import stream_params_for
    from twin.workload.engine_jobs import class_templates, fit_parallelism

    stream = s.workload.stream
    if stream is None or s.hardware.node_model not in catalog.nodes:
        return None
    gpn = catalog.nodes[s.hardware.node_model].gpu_count    # the engine's gpus_per_node
    delivered = int(rack_gpus(s)[:sum(w.racks for w in s.ramp.waves)].sum())
    params = stream_params_for(stream, max_gpus=delivered)
    templates = class_templates(s)

    def refits(name: str):
        try:
            counts = params.cls(name).gpus
        except KeyError:                # a class the cluster cannot host is not drawn
            return None
        return [(gpus, fit_parallelism(templates[name], math.ceil(gpus / gpn), gpn))
                for gpus in counts]
    return stream, gpn, templates, refits


def _refitted_classes(refitter, keep):
    """``(index, class, template, refitted jobs)`` of each stream class whose template passes
    ``keep`` and that the cluster can host; ``refitter`` is :func:`_stream_refitter`'s set-up."""
    stream, _, templates, refits = refitter
    for k, c in enumerate(stream.classes):
        template = templates.get(c.name)
        if template is None or not keep(template):
            continue
        jobs = refits(c.name)
        if jobs is not None:
            yield k, c, template, jobs


def _stream_dualpipe_notes(refitter) -> list[tuple[str, str]]:
    """One note per class of the stream whose model is a DualPipe job (``model_job``) and
    whose jobs, refitted to the GPU counts the class asks for
    (:func:`twin.workload.engine_jobs.fit_parallelism`: pp halved, the batch rounded), lose
    DualPipe's conditions: those jobs run the schedule vpp implies
    (:func:`twin.plant.runnable_schedule`). ``refitter``: :func:`_stream_refitter`'s set-up."""
    gpn = refitter[1]
    out = []
    for k, c, _, jobs in _refitted_classes(refitter, lambda t: t.pipeline_schedule == "dualpipe"):
        lost = []
        for gpus, job in jobs:
            why = _dualpipe_lost(job, job.nodes * gpn)
            if why is not None:
                lost.append(f"{gpus:,} GPUs ({why})")
        if lost:
            out.append((f"workload.stream.classes.{k}",
                        f"job class {c.name!r} trains {c.model_job!r}, a DualPipe job; its jobs "
                        f"of {_listed(lost)}, refitted to their GPUs, do not run DualPipe (it "
                        f"needs {_DUALPIPE_NEEDS}): for those {_FALLBACK}"))
    return out


def _stream_layout_notes(refitter) -> list[tuple[str, str]]:
    """One note per class of the stream whose model is a job with a ``pipeline_layout``
    (``model_job``) and whose jobs, refitted to the GPU counts the class asks for
    (:func:`twin.workload.engine_jobs.fit_parallelism` halves pp), have another pp: the layout
    names the template's pp x vpp stages, so those jobs run the even split
    (:func:`twin.plant.runnable_layout`). ``refitter``: :func:`_stream_refitter`'s set-up."""
    from twin.plant import runnable_layout

    out = []
    for k, c, template, jobs in _refitted_classes(refitter, lambda t: t.pipeline_layout is not None):
        lost = [f"{gpus:,} GPUs (pp {job.pp})" for gpus, job in jobs
                if runnable_layout(job) is None]
        if lost:
            out.append((f"workload.stream.classes.{k}",
                        f"job class {c.name!r} trains {c.model_job!r}, whose pipeline_layout names "
                        f"pp x vpp = {template.pp} x {template.vpp} virtual stages; its jobs of "
                        f"{_listed(lost)}, refitted to their GPUs, have another pp: for those the "
                        f"engine splits the layers evenly (ceil(layers / pp) a rank) instead"))
    return out


def _stream_memory_notes(s: Scenario, catalog, refitter) -> list[tuple[str, str]]:
    """One note per training class of the stream whose jobs, on some GPU count the class asks
    for, are estimated above their GPU's memory: each job as the engine builds it (the class's
    model on whole nodes of the default node model,
    :func:`twin.workload.engine_jobs.fit_parallelism`).  The note lists those GPU counts and
    speaks for the largest estimate: the margin note, or, above the margin, the reason a fixed
    job would be refused (a stream's jobs are drawn during the run, and run).  Evaluation and
    debug jobs train nothing and are not estimated."""
    from twin.compute.memory import GIB, memory_fit_problem, memory_margin_note
    from twin.plant import job_memory
    from twin.workload.engine_jobs import TRAINING_CLASSES

    stream, _, _, refits = refitter    # _stream_refitter's set-up
    index = {c.name: k for k, c in enumerate(stream.classes)}
    out = []
    for name in TRAINING_CLASSES:
        jobs = refits(name)
        if jobs is None:
            continue
        found: list[tuple[float, int, str]] = []
        for gpus, job in jobs:
            node = catalog.nodes.get(job.node_model or s.hardware.node_model)
            if node is None:
                continue
            est = job_memory(job, job.nodes * node.gpu_count, node)    # computed once
            if est is None or est[0].total / GIB <= node.gpu_memory_gb:
                continue
            total = est[0].total / GIB
            note = memory_margin_note(*est)
            if note is None:
                note = (f"it {memory_fit_problem(*est)}; validation refuses a fixed job "
                        f"like this, but the stream's jobs are drawn during the run and run")
            found.append((total, gpus, note))
        if found:
            _, worst_gpus, text = max(found)
            sizes = sorted(g for _, g, _ in found)
            which = (f"its jobs of {sizes[0]:,} GPUs" if len(sizes) == 1 else
                     f"its jobs of {', '.join(f'{g:,}' for g in sizes)} GPUs (the largest "
                     f"estimate, on {worst_gpus:,} GPUs)")
            path = f"workload.stream.classes.{index[name]}" if name in index else "workload.stream"
            out.append((path, f"job class {name!r}, {which}: {text}"))
    return out


def _stand_in(err: dict, i: int, variant: int) -> Any:
    """A value that passes the field's own check, to go on to the cross-field checks; or
    _MISSING to drop the key (the field's default), e.g. for an unknown key. Two variants
    (near the bound, far from it): a cross-field problem found with only one of them
    depends on the stand-in and is not reported."""
    import re
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind in ("greater_than", "greater_than_equal", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()))
        if not isinstance(bound, (int, float)):
            return _MISSING
        sign = 1 if kind.startswith("greater") else -1
        step = (1 if kind in ("greater_than", "less_than") else 0) + (1000 * max(1, abs(bound)) if variant else 0)
        return type(bound)(bound + sign * step)
    if kind == "finite_number":
        return 1.0
    if kind == "literal_error":
        m = re.match(r"'([^']*)'|(-?\d+)", str(ctx.get("expected", "")))
        if m:
            return m.group(1) if m.group(1) is not None else int(m.group(2))
    if kind == "string_pattern_mismatch":
        return f"unnamed_{i}"
    return _MISSING


def _patched(data: dict, errors: list[dict], variant: int) -> tuple[dict, list[str]] | None:
    """``data`` with every failing field replaced by a stand-in (or dropped); None when a
    required field is missing (nothing sensible can stand in)."""
    out = copy.deepcopy(data)
    paths = []
    for i, err in enumerate(errors):
        if err.get("type") == "missing":
            return None
        loc = _clean_loc(err["loc"])
        if not loc:
            return None
        node: Any = out
        try:
            for part in loc[:-1]:
                node = node[part]
            value = _stand_in(err, i, variant)
            if value is _MISSING:
                if isinstance(node, dict):
                    node.pop(loc[-1], None)
                else:
                    return None
            else:
                node[loc[-1]] = value
        except (KeyError, IndexError, TypeError):
            return None
        paths.append(".".join(str(p) for p in loc))
    return out, paths


def _one_per_union(errors: list[Any]) -> list[Any]:
    """A value that fails every member of a union (``spares: 2.5`` is neither a whole
    number nor a mapping) gives one error per member; keep the member that matched the
    value's type (drop '... should be a valid dictionary' when another member said more)."""
    by_path: dict[str, list[dict]] = {}
    for err in errors:
        by_path.setdefault(".".join(map(str, _clean_loc(err["loc"]))), []).append(err)
    out = []
    for errs in by_path.values():
        specific = [e for e in errs if not str(e.get("type", "")).endswith("_type")]
        out.extend(specific if specific and len(errs) > 1 else errs)
    return out


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def validate_data(data: dict, file: str = "<scenario>", origins: dict[str, str] | None = None) -> Scenario:
    """Validate a merged scenario mapping; raise :class:`ScenarioError` with every problem.

    Field problems and cross-field problems are reported together: when fields fail their
    own checks, each is replaced by a stand-in that passes and the cross-field checks run
    on the rest (problems that involve a replaced field are left out)."""
    origins = origins or {}
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        errors = _one_per_union(exc.errors(include_url=False))
        problems = []
        for err in errors:
            path = ".".join(str(p) for p in _clean_loc(err["loc"]))
            value = err.get("input", _MISSING)
            if err.get("type") == "missing":
                value = None
            problems.append(Problem(_origin_of(path, origins, file), path, value, _expected(err)))
        found = []
        for variant in (0, 1):
            patched = _patched(data, errors, variant)
            try:
                stand_in = Scenario.model_validate(patched[0]) if patched else None
                more = semantic_problems(stand_in) if stand_in else []
            except Exception:   # noqa: BLE001  (the field problems above are the answer)
                more = []
            found.append([(path, value, expected) for path, value, expected in more
                          if patched and not any(_related(path, q) for q in patched[1])])
        problems += [Problem(_origin_of(path, origins, file), path, value, expected)
                     for path, value, expected in found[0] if (path, value, expected) in found[1]]
        raise ScenarioError(problems) from None
    problems = [Problem(_origin_of(path, origins, file), path, value, expected)
                for path, value, expected in semantic_problems(scenario)]
    if problems:
        raise ScenarioError(problems)
    return scenario


def resolved_mapping(path: Path, overrides: list[str] | None) -> tuple[dict, dict[str, str]]:
    """The merged mapping of a scenario file with its overrides, and where each value came from."""
    origins: dict[str, str] = {}
    data = _resolve(path, (), origins)
    for text in overrides or []:
        parts, value = parse_override(text)
        apply_override(data, parts, value)
        origins[".".join(parts)] = f"--set {text}"
    return data, origins


def load_scenario(path: str | Path, overrides: list[str] | None = None) -> Scenario:
    """Load, merge (``extends:``), override (``a.b.c=value``) and validate a scenario file.

    Raises :class:`twin.errors.ScenarioError` listing every problem (file, dotted path, value,
    what was expected). YAML is read with ``yaml.safe_load`` only.  The notes of a valid
    scenario are not computed here: :func:`check_scenario` returns them.
    """
    path = Path(path)
    data, origins = resolved_mapping(path, overrides)
    return validate_data(data, str(path), origins)


def check_scenario(path: str | Path, overrides: list[str] | None = None) -> CheckedScenario:
    """:func:`load_scenario` plus the notes of the valid scenario (:func:`semantic_notes`),
    each naming the file that set the part it is about.  Raises :class:`ScenarioError` as
    :func:`load_scenario` does; the notes never stop a scenario."""
    path = Path(path)
    data, origins = resolved_mapping(path, overrides)
    scenario = validate_data(data, str(path), origins)
    notes = tuple(Note(_origin_of(where, origins, str(path)), where, text)
                  for where, text in semantic_notes(scenario))
    return CheckedScenario(scenario, notes)


def scenario_hash(scenario: Scenario) -> str:
    """SHA-256 of the canonical JSON of the resolved scenario (seed included)."""
    text = json.dumps(scenario.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
