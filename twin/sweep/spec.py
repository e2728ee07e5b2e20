"""Sweep definition: axes (fields or named cases), seeds, series; sweep files and ``--grid``.

A sweep is the cross product of its axes times its seeds. Seed index ``i`` runs every grid
point with ``simulation.seed = seeds[i]``: common random numbers, so the runs of one seed
index differ only by the swept parameters and paired differences across points cancel
most of the noise (:func:`twin.sweep.assembly.paired_differences`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from twin import outputs

#: time series kept per run by default (dims ``time`` only, or derived from per-rack/job data)
DEFAULT_SERIES = ("gpus_installed", "gpus_powered", "gpus_healthy", "gpus_busy", "tokens_cumulative",
                  "facility_it_power_w", "facility_total_power_w", "power_available_w", "inlet_max_c")
#: {name: (unit, long name)} of series derived from per-rack/job data (twin.outputs.DERIVED_SERIES)
DERIVED_SERIES = {o.name: (o.units, o.long_name) for o in outputs.DERIVED_SERIES}
TIME_SERIES = {"facility_it_power_w", "facility_total_power_w", "ups_loss_w",
               "distribution_loss_w", "cooling_power_w", "power_available_w", "outdoor_temp_c",
               "gpus_installed", "gpus_powered", "gpus_healthy", "gpus_busy", "nodes_failed",
               "throttle_fraction"}
#: seeds per grid point, and runs per sweep, above which a sweep needs ``force`` (``--force``)
MAX_SEEDS = 1000
MAX_RUNS = 20000
#: the largest seed (``simulation.seed`` is stored as int64)
MAX_SEED = 2**63 - 1


class SweepError(ValueError):
    """A sweep definition that cannot be run (bad file, bad --grid, bad scenario)."""


# --------------------------------------------------------------------------- definition
@dataclasses.dataclass(frozen=True)
class Axis:
    """One sweep dimension: ``labels`` are its coordinate values; label i applies the
    overrides ``overrides[i]`` (``dotted.path=value`` strings) and, if not None, replaces
    the base scenario file with ``scenarios[i]``."""

    name: str
    labels: tuple
    overrides: tuple[tuple[str, ...], ...]
    scenarios: tuple[str | None, ...] = ()

    def __post_init__(self):
        if not self.scenarios:
            object.__setattr__(self, "scenarios", (None,) * len(self.labels))
        if not (len(self.labels) == len(self.overrides) == len(self.scenarios)) or not self.labels:
            raise SweepError(f"axis {self.name!r}: needs one or more values, each with its overrides")
        if len(set(map(_label_key, self.labels))) != len(self.labels):
            raise SweepError(f"axis {self.name!r}: values repeat: {list(self.labels)}")

    @classmethod
    def grid(cls, path: str, values: Iterable[Any], name: str | None = None) -> Axis:
        """A field axis: ``path`` set to each of ``values`` (YAML scalars)."""
        values = list(values)
        return cls(name or path, tuple(values),
                   tuple((f"{path}={_yaml_scalar(v)}",) for v in values))

    def to_json(self) -> dict:
        return {"name": self.name, "labels": [_jsonable(v) for v in self.labels],
                "overrides": [list(o) for o in self.overrides], "scenarios": list(self.scenarios)}


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """A whole sweep: base scenario and overrides, axes (cross product), seeds, series."""

    scenario: str | None
    axes: tuple[Axis, ...] = ()
    seeds: tuple[int, ...] = (0,)
    overrides: tuple[str, ...] = ()
    series: tuple[str, ...] = DEFAULT_SERIES
    name: str = "sweep"
    study: str | None = None
    description: str = ""
    weights: tuple[tuple[str, float], ...] = ()   # siting weights for the report (criterion, weight)

    def __post_init__(self):
        names = [a.name for a in self.axes]
        if len(set(names)) != len(names):
            raise SweepError(f"two axes share a name: {names}")
        if "seed" in names or "day" in names:
            raise SweepError("'seed' and 'day' are reserved dimension names")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise SweepError(f"seeds must be distinct and at least one: {list(self.seeds)}")
        if self.scenario is None and not any(any(s is not None for s in a.scenarios) for a in self.axes):
            raise SweepError("no scenario: give SCENARIO or an axis whose values name scenario files")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.axes) + (len(self.seeds),)

    def points(self):
        """Yield (index tuple, scenario path, overrides) for every grid point (no seed)."""
        for idx in itertools.product(*(range(len(a.labels)) for a in self.axes)):
            path, overrides = self.scenario, list(self.overrides)
            for a, i in zip(self.axes, idx, strict=True):
                if a.scenarios[i] is not None:
                    path = a.scenarios[i]
                overrides.extend(a.overrides[i])
            yield idx, path, overrides

    def to_json(self) -> dict:
        return {"name": self.name, "study": self.study, "description": self.description,
                "scenario": self.scenario, "overrides": list(self.overrides),
                "axes": [a.to_json() for a in self.axes], "seeds": list(self.seeds),
                "series": list(self.series), "weights": dict(self.weights)}

    @classmethod
    def from_json(cls, d: dict) -> SweepSpec:
        return cls(scenario=d["scenario"], overrides=tuple(d.get("overrides", ())),
                   axes=tuple(Axis(a["name"], tuple(a["labels"]), tuple(tuple(o) for o in a["overrides"]),
                                   tuple(a["scenarios"])) for a in d.get("axes", ())),
                   seeds=tuple(d["seeds"]), series=tuple(d.get("series", DEFAULT_SERIES)),
                   name=d.get("name", "sweep"), study=d.get("study"), description=d.get("description", ""),
                   weights=tuple((d.get("weights") or {}).items()))

    @classmethod
    def from_file(cls, path: str | Path, force: bool = False) -> SweepSpec:
        """Read a sweep YAML file (see :func:`spec_from_mapping` for its keys)."""
        import yaml

        from twin.errors import ScenarioError
        from twin.scenario.loader import _read_text, safe_yaml
        path = Path(path)
        try:
            data = safe_yaml(_read_text(path, str(path)))
        except ScenarioError as exc:
            raise SweepError(str(exc)) from None
        except (yaml.YAMLError, ValueError) as exc:
            raise SweepError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
        return spec_from_mapping(data, path, force)


def _label_key(v):
    return (type(v).__name__, json.dumps(_jsonable(v), sort_keys=True))


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


def _yaml_scalar(v) -> str:
    """The text of a value for ``dotted.path=value`` (parsed back with yaml.safe_load)."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return json.dumps(_jsonable(v))


def parse_grid(text: str) -> Axis:
    """``[NAME:]dotted.path=v1,v2,...`` -> an :class:`Axis` (values parsed as YAML scalars)."""
    import yaml
    if "=" not in text:
        raise SweepError(f"--grid {text!r}: expected dotted.path=v1,v2,...")
    key, raw = text.split("=", 1)
    name = None
    if ":" in key:
        name, key = key.split(":", 1)
    key = key.strip()
    if not key or any(not p for p in key.split(".")):
        raise SweepError(f"--grid {text!r}: expected a dotted path such as site.power.ups.mode")
    parts = [p.strip() for p in raw.split(",")]
    if not raw.strip() or any(p == "" for p in parts):
        raise SweepError(f"--grid {text!r}: expected one or more comma-separated values")
    values = []
    for p in parts:
        try:
            values.append(yaml.safe_load(p))
        except yaml.YAMLError:
            values.append(p)
    return Axis.grid(key, values, name=(name or None))


def parse_seeds(value, force: bool = False) -> tuple[int, ...]:
    """``N`` -> seeds 0..N-1; ``a,b,c`` or a list -> those seeds. More than
    :data:`MAX_SEEDS` seeds needs ``force`` (ten million runs are a typo, not a plan)."""
    if isinstance(value, bool):
        raise SweepError(f"seeds: got {value!r}; expected a count N or a list of seeds")
    if isinstance(value, int):
        if value < 1:
            raise SweepError(f"seeds: got {value}; expected at least 1")
        _check_seed_count(value, force)
        return tuple(range(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed: Any = [int(x) for x in text.split(",")] if "," in text else int(text)
        except ValueError:
            raise SweepError(f"seeds: got {value!r}; expected a count N or a list a,b,c") from None
        return parse_seeds(parsed, force)
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_SEED for x in value):
        _check_seed_count(len(value), force)
        return tuple(int(x) for x in value)
    raise SweepError(f"seeds: got {value!r}; expected a count N or a list of integers 0..2**63-1")


def _check_seed_count(n: int, force: bool) -> None:
    if n > MAX_SEEDS and not force:
        raise SweepError(f"seeds: got {n:,} seeds; expected at most {MAX_SEEDS:,} per grid point "
                         f"(give --force if you mean it)")


def spec_from_mapping(data: Any, path: str | Path = "<sweep>", force: bool = False) -> SweepSpec:
    """Build a spec from a sweep file's mapping. Keys (relative paths are relative to the file)::

        name: ups_mode                    # label of the sweep
        study: tradeoff                   # optional: siting | ramp_slip | tradeoff (report tables)
        description: ...
        scenario: ../blue_vela.yaml       # base scenario
        set: [simulation.duration_days=90]  # overrides applied to every run
        seeds: 3                          # N (0..N-1) or a list
        series: [gpus_powered, ...]       # time series kept per run (default: DEFAULT_SERIES)
        grid:                             # cross product of fields
          site.power.ups.mode: [double_conversion, bypass]
          cap: {path: hardware.gpu_power_cap_w, values: [500, 600, 700]}
        cases:                            # named values that set several fields (one dimension)
          dim: site                       # dimension name (default 'case')
          values:
            hall_a: {scenario: ../sites/hall_a.yaml, set: [...]}
            stage_1_slip: [site.power.plan.1.date=2024-04-15]
        weights: {gpus_hosted: 3, co2_t: 2}  # optional: siting weights of the report (twin report --weights)
    ``cases`` may also be a list of such blocks (one dimension each).
    """
    path = Path(path)
    where = str(path)
    if not isinstance(data, dict):
        raise SweepError(f"{where}: expected a mapping with keys scenario, grid, cases, seeds, ...")
    known = {"name", "study", "description", "scenario", "set", "seeds", "series", "grid", "cases", "weights"}
    extra = sorted(set(data) - known)
    if extra:
        raise SweepError(f"{where}: unknown keys {extra}; expected some of {sorted(known)}")
    base = path.parent

    def rel(p):
        if p is None:
            return None
        if not isinstance(p, str):
            raise SweepError(f"{where}: scenario: got {p!r}; expected a file path")
        q = Path(p)
        return str(q if q.is_absolute() else (base / q))

    def str_list(v, what):
        if v is None:
            return []
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) and "=" in x for x in v):
            raise SweepError(f"{where}: {what}: got {v!r}; expected a list of dotted.path=value")
        return list(v)

    axes: list[Axis] = []
    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        raise SweepError(f"{where}: grid: expected a mapping dotted.path: [values]")
    for key, spec in grid.items():
        if isinstance(spec, dict):
            if set(spec) - {"path", "values"} or "values" not in spec:
                raise SweepError(f"{where}: grid.{key}: expected {{path: dotted.path, values: [...]}}")
            p, vals = spec.get("path", key), spec["values"]
        else:
            p, vals = key, spec
        if not isinstance(vals, list) or not vals:
            raise SweepError(f"{where}: grid.{key}: got {vals!r}; expected a non-empty list of values")
        axes.append(Axis.grid(str(p), vals, name=str(key)))
    cases = data.get("cases")
    blocks = cases if isinstance(cases, list) else ([cases] if cases else [])
    for b, block in enumerate(blocks):
        if not isinstance(block, dict) or "values" not in block or set(block) - {"dim", "values"}:
            raise SweepError(f"{where}: cases[{b}]: expected {{dim: name, values: {{label: overrides}}}}")
        vals = block["values"]
        if not isinstance(vals, dict) or not vals:
            raise SweepError(f"{where}: cases[{b}].values: expected a mapping label: overrides")
        labels, ovs, scs = [], [], []
        for label, v in vals.items():
            if isinstance(v, dict):
                if set(v) - {"scenario", "set"}:
                    raise SweepError(f"{where}: cases value {label!r}: expected keys scenario, set")
                scs.append(rel(v.get("scenario")))
                ovs.append(tuple(str_list(v.get("set"), f"cases value {label!r}")))
            else:
                scs.append(None)
                ovs.append(tuple(str_list(v, f"cases value {label!r}")))
            labels.append(str(label))
        axes.append(Axis(str(block.get("dim", "case")), tuple(labels), tuple(ovs), tuple(scs)))
    series = data.get("series", list(DEFAULT_SERIES))
    if series is None:
        series = []
    if not isinstance(series, list) or not all(isinstance(x, str) for x in series):
        raise SweepError(f"{where}: series: expected a list of variable names")
    return SweepSpec(
        scenario=rel(data.get("scenario")), axes=tuple(axes),
        seeds=parse_seeds(data.get("seeds", 1), force=force), overrides=tuple(str_list(data.get("set"), "set")),
        series=tuple(series), name=str(data.get("name", path.stem)), study=data.get("study"),
        description=str(data.get("description", "")), weights=_weights(data.get("weights"), where))


def _weights(value, where: str) -> tuple[tuple[str, float], ...]:
    """The sweep file's ``weights:`` mapping (siting criteria -> weight), checked."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise SweepError(f"{where}: weights: got {value!r}; expected a mapping criterion: weight")
    from twin.studies.tables import parse_weights
    try:
        parse_weights(value)
    except ValueError as exc:
        raise SweepError(f"{where}: weights: {exc}") from None
    return tuple((str(k), float(v)) for k, v in value.items())




def is_sweep_file(path: str | Path) -> bool:
    """A YAML file whose top level has sweep keys (grid/cases/seeds) and no scenario sections."""
    import yaml

    from twin.errors import ScenarioError
    from twin.scenario.loader import _read_text, safe_yaml
    try:
        data = safe_yaml(_read_text(Path(path), str(path)))
    except (ScenarioError, yaml.YAMLError, ValueError):
        return False
    return isinstance(data, dict) and "site" not in data and "simulation" not in data and bool(
        {"grid", "cases", "seeds", "scenario"} & set(data))
