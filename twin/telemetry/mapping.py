"""The mapping file: which measured series is which twin variable, on which rack or feed.

YAML, validated (unknown keys are errors)::

    timezone: Europe/Zurich        # for timestamps without an offset (default UTC)
    max_gap_s: 60                  # a longer step is a gap (default 2.5 x the median step)
    nodes: {gpu-node-001: r1-01}   # host/node name -> rack, for per-node series
    series:
      - match: {name: DCGM_FI_DEV_GPU_TEMP}   # the name and any labels, exact
        variable: rack_gpu_temp_max_c
        unit: degC                 # measured unit; converted explicitly, a mismatch is an error
        rack: Hostname             # the label that holds the rack (or a node, via nodes:)
        aggregate: max             # how series landing on one rack combine: mean|sum|max|min
        members: 16                # series expected per rack (2 nodes x 8 GPUs): fewer is an error
      - match: {name: crah_heat_removed_watts}
        variable: cooling_unit_load_w
        dims: {cooling_unit: crah}   # any other dimension: the label that holds it
      - match: {name: site_meter_power, meter: utility}
        variable: facility_total_power_w
        unit: kW
      - match: {name: site_energy_joules_total}
        variable: facility_total_power_w
        unit: J
        rate: true                 # a counter: its per-second rate (J -> W); a reset is an error

Series no rule matches fall back to the twin's own names: ``twin_<variable>`` (what
``twin export`` writes), ``<prefix><variable>`` of an export under another ``--prefix``
(recognised by the ``scenario`` and ``run`` labels every exported series carries, the prefix
found over the whole file), ``<variable>``, or a name without the variable's unit suffix
whose unit is stated (the meter CSV column ``feed_power [kW]`` is ``feed_power_w``, converted
kW -> W), with a label named like each dimension (``rack``, ``feed``, ``rpp``, ``job``,
``cooling_unit``, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twin.telemetry.series import Series, TelemetryError, canonical_unit, convert, unit_of_name

DIMS = ("rack", "feed", "rpp", "job")


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    match: dict[str, str] = Field(description="'name' (or '__name__') and labels, exact values; "
                                              "a value in slashes is a regular expression")
    variable: str
    unit: str | None = Field(None, description="unit of the measured values (default: the file's)")
    rack: str | None = Field(None, description="label holding the rack (or a node listed in nodes:)")
    feed: str | None = None
    rpp: str | None = None
    job: str | None = None
    dims: dict[str, str] = Field({}, description="any other dimension of the variable -> the label "
                                                 "holding it, e.g. {cooling_unit: crah}")
    aggregate: Literal["mean", "sum", "max", "min"] = "mean"
    members: int | None = Field(None, gt=0, description="series expected per position (8 GPUs, 2 nodes "
                                                         "per rack): fewer or more is an error, not a "
                                                         "partial sum")
    rate: bool = Field(False, description="a counter: compare its per-second rate (J -> W)")
    scale: float = Field(1.0, description="multiply after unit conversion (e.g. 2 for one of two "
                                          "equal A/B feeds); documented, never fitted")

    def matches(self, s: Series) -> bool:
        for k, want in self.match.items():
            have = s.name if k in ("name", "__name__") else s.labels.get(k)
            if have is None:
                return False
            if len(want) > 1 and want.startswith("/") and want.endswith("/"):
                if not re.fullmatch(want[1:-1], have):
                    return False
            elif have != want:
                return False
        return True


class Mapping(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    timezone: str = "UTC"
    max_gap_s: float | None = Field(None, gt=0)
    nodes: dict[str, str] = {}
    series: list[Rule] = []


def load_mapping(path: str | Path | None) -> Mapping:
    """Read and validate a mapping file (``None`` -> the default mapping)."""
    if path is None:
        return Mapping()
    p = Path(path)
    if not p.is_file():
        raise TelemetryError(str(p), "", "no such mapping file")
    try:
        doc = yaml.safe_load(p.read_text()) or {}
        return Mapping.model_validate(doc)
    except yaml.YAMLError as exc:
        raise TelemetryError(str(p), "", f"not YAML ({exc})") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = ".".join(str(x) for x in e["loc"])
        raise TelemetryError(str(p), "", f"{loc}: got {e.get('input')!r}; {e['msg'].lower()}") from None


@dataclass
class Mapped:
    """Measured series assigned to one twin variable and position (``dim``, ``coord``)."""

    variable: str
    dim: str | None
    coord: str | None
    unit: str
    aggregate: str
    members: list[Series]
    expected: int | None = None

    @property
    def label(self) -> str:
        return self.variable if self.dim is None else f"{self.variable}[{self.dim}={self.coord}]"


def _variable_unit(ds, var: str) -> str:
    return str(ds[var].attrs.get("units") or unit_of_name(var) or "1")


def apply_mapping(series: list[Series], mapping: Mapping, ds,
                  extra: dict[str, str] | None = None) -> tuple[list[Mapped], list[str]]:
    """Assign each series to a twin variable of ``ds`` (an xarray Dataset of a run).

    ``extra``: measured-only variables a rule may name (variable -> unit), per ``node``
    (``dims: {node: <label>}``), e.g. the node fan speed that calibration fits the fan law to.
    Returns the mapped groups and the keys of series no rule matched. Errors: a variable the
    run does not have, a rack/feed the run does not have, an unknown or mismatched unit.
    """
    groups: dict[tuple, Mapped] = {}
    unmapped: list[str] = []
    prefix = export_prefix([s for s in series if not any(r.matches(s) for r in mapping.series)], ds)
    for s in series:
        rule = next((r for r in mapping.series if r.matches(s)), None)
        if rule is None:
            rule = _default_rule(s, ds, prefix)
        if rule is None:
            unmapped.append(s.key)
            continue
        var = rule.variable
        if extra and var in extra:
            _map_extra(s, rule, extra[var], groups)
            continue
        if var not in ds.data_vars or "time" not in ds[var].dims:
            raise TelemetryError(s.source, s.key, f"mapped to {var!r}, which is not a time series of "
                                                  "the run")
        dim, coord = None, None
        wanted = {d: getattr(rule, d) for d in DIMS if getattr(rule, d) is not None} | dict(rule.dims)
        for d, label in wanted.items():
            if d not in ds[var].dims:
                raise TelemetryError(s.source, s.key, f"{var} has no {d} dimension")
            if label not in s.labels:
                raise TelemetryError(s.source, s.key, f"has no label {label!r} to find its {d}")
            coord = s.labels[label]
            if d == "rack":
                coord = mapping.nodes.get(coord, coord)
            known = [str(x) for x in ds[d].values]
            if coord not in known:
                raise TelemetryError(s.source, s.key, f"{d} {coord!r} is not in the run "
                                                      f"(it has {', '.join(known[:6])}{', ...' if len(known) > 6 else ''}); "
                                                      "map host names under nodes:")
            dim = d
        other_dims = [str(d) for d in ds[var].dims if d != "time" and d != dim]
        if other_dims:
            raise TelemetryError(s.source, s.key, f"{var} is per {other_dims[0]}: say which label holds "
                                                  f"it ({other_dims[0]}: <label>) in the mapping")
        target_unit = _variable_unit(ds, var)
        unit = rule.unit or s.unit or unit_of_name(s.name)
        if rule.rate:
            from twin.telemetry.series import counter_rate
            s = counter_rate(s) if unit is None else counter_rate(
                Series(s.source, s.name, s.labels, s.t_ns, s.values, unit, s.kind, s.gaps))
            unit = s.unit
        if unit is None:
            if target_unit in ("GPU", "node", "count", "part", "tokens", "tokens/s", "1"):
                unit = target_unit   # counts and ratios carry no unit in most exporters
            else:
                raise TelemetryError(s.source, s.key, f"its unit is unknown; state it in the mapping "
                                                      f"(unit: ...), the variable {var} is in {target_unit}")
        try:
            canonical_unit(unit)
            values = convert(s.values, unit, target_unit)
            if rule.scale != 1.0:
                values = values * rule.scale
        except ValueError as exc:
            raise TelemetryError(s.source, s.key, f"{exc} (variable {var})") from None
        conv = Series(s.source, s.name, s.labels, s.t_ns, values, target_unit, "gauge", s.gaps)
        key = (var, dim, coord)
        if key not in groups:
            groups[key] = Mapped(var, dim, coord, target_unit, rule.aggregate, [], rule.members)
        groups[key].members.append(conv)
    for g in groups.values():
        if g.expected is not None and len(g.members) != g.expected:
            s0 = g.members[0]
            raise TelemetryError(s0.source, s0.key, f"{len(g.members)} series land on {g.label}, the "
                                                    f"mapping expects {g.expected} (members:)")
    return list(groups.values()), unmapped


def _map_extra(s: Series, rule: Rule, target_unit: str, groups: dict) -> None:
    label = rule.dims.get("node")
    coord = None
    if label is not None:
        if label not in s.labels:
            raise TelemetryError(s.source, s.key, f"has no label {label!r} to find its node")
        coord = s.labels[label]
    unit = rule.unit or s.unit or unit_of_name(s.name) or target_unit
    try:
        values = convert(s.values, unit, target_unit) * rule.scale
    except ValueError as exc:
        raise TelemetryError(s.source, s.key, f"{exc} (variable {rule.variable})") from None
    key = (rule.variable, "node" if coord is not None else None, coord)
    if key not in groups:
        groups[key] = Mapped(rule.variable, key[1], coord, target_unit, rule.aggregate, [])
    groups[key].members.append(Series(s.source, s.name, s.labels, s.t_ns, values, target_unit, "gauge", s.gaps))


#: The name suffix of a twin variable in each canonical unit (``rack_power_w``, ``rack_inlet_c``).
SUFFIX_OF_UNIT = {"W": "_w", "degC": "_c", "1": "_fraction", "s": "_s"}
#: Labels on every series ``twin export`` writes: a series carrying both is the twin's own.
EXPORT_LABELS = ("scenario", "run")


def _is_series_var(ds, name: str) -> bool:
    return name in ds.data_vars and "time" in ds[name].dims


def export_prefix(series: list[Series], ds) -> str | None:
    """The metric-name prefix of a ``twin export`` file written with any ``--prefix``, or None.

    Among the series carrying the export's labels (``scenario``, ``run``), each distinct name
    that ends in a time-series variable of the run proposes the part before it as the prefix;
    the prefix proposed by most names wins (ties: the shortest, i.e. the longest variable), so
    that a variable that ends another one (``branch_load_fraction_max`` in
    ``failover_branch_load_fraction_max``) cannot pick a wrong split.
    """
    names = {s.name for s in series if all(k in s.labels for k in EXPORT_LABELS)}
    if not names:
        return None
    variables = [str(v) for v in ds.data_vars if _is_series_var(ds, str(v))]
    votes: dict[str, int] = {}
    for name in names:
        for p in {name[:-len(v)] for v in variables if len(name) > len(v) and name.endswith(v)}:
            votes[p] = votes.get(p, 0) + 1
    if not votes:
        return None
    return min(votes, key=lambda p: (-votes[p], len(p)))


def _own_variable(s: Series, ds, prefix: str | None = None) -> str | None:
    """The run variable a series names without a mapping rule (module docstring), or None."""
    name = s.name[5:] if s.name.startswith("twin_") else s.name
    if _is_series_var(ds, name):
        return name
    if prefix and s.name.startswith(prefix) and all(k in s.labels for k in EXPORT_LABELS):
        own = s.name[len(prefix):]
        if _is_series_var(ds, own):
            return own
    if s.unit:
        try:
            suffix = SUFFIX_OF_UNIT.get(canonical_unit(s.unit)[0])
        except ValueError:
            suffix = None   # an unknown unit: not a twin name (a rule must state the unit)
        if suffix and _is_series_var(ds, name + suffix):
            return name + suffix
    return None


def _default_rule(s: Series, ds, prefix: str | None = None) -> Rule | None:
    name = _own_variable(s, ds, prefix)
    if name is None:
        return None
    dims = {d: d for d in ds[name].dims if d != "time" and d in s.labels}
    own = s.unit is None or s.unit.lower() == name.rsplit("_", 1)[-1]
    unit = _variable_unit(ds, name) if own else s.unit
    return Rule(match={"name": s.name}, variable=name, unit=unit, dims=dims)


def stack_values(m: Mapped) -> np.ndarray:
    """All member values as one array (for quick summaries)."""
    return np.concatenate([x.values for x in m.members])
