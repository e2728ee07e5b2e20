"""Failure classes of a training node and their default rates (package data).

The catalog ``twin/catalog/failures.yaml`` gives, for every class of the Llama 3 Table 5
mix, the interruption count observed on 2,048 nodes in 54 days, what the failure takes
down (scope), how it is repaired and detected, and its source. Rates per node-hour follow
as ``count / (nodes * days * 86,400 s)``: the catalog keeps the published units (counts
over days, repair medians and detection delays in hours) and this package converts them
to SI seconds once, where it loads them; every rate it returns is per second and every
time and duration is in seconds.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

#: Seconds per hour and per day: the catalog's published units to SI seconds.
HOUR_S = 3600.0
DAY_S = 86400.0

SCOPES = ("node", "rail_su", "job", "none")
REPAIRS = ("reimage", "hardware", "warranty", "none")
DETECTIONS = ("immediate", "health_check", "timeout", "silent")


@dataclass(frozen=True)
class FailureClass:
    """One failure process of a node.

    name             class name (``gpu``, ``gpu_hbm3``, ``software_bug``, ...)
    rate_per_node_s  failures per node per second [1/s] at rate scale 1 and no thermal
                     acceleration
    scope            what it takes down: ``node``, ``rail_su``, ``job`` or ``none``
    repair           ``reimage``, ``hardware``, ``warranty`` or ``none``
    thermal          hazard multiplied by the temperature acceleration factor
    source           where the rate comes from
    part             spare part a ``hardware`` repair consumes (None: technician only)
    detection        ``immediate``, ``health_check``, ``timeout`` or ``silent``
    count            interruptions of this class in the calibration basis (Table 5)
    """

    name: str
    rate_per_node_s: float
    scope: str
    repair: str
    thermal: bool
    source: str
    part: str | None = None
    detection: str = "immediate"
    count: float = 0.0

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"{self.name}: scope {self.scope!r} not in {SCOPES}")
        if self.repair not in REPAIRS:
            raise ValueError(f"{self.name}: repair {self.repair!r} not in {REPAIRS}")
        if self.detection not in DETECTIONS:
            raise ValueError(f"{self.name}: detection {self.detection!r} not in {DETECTIONS}")
        if not self.rate_per_node_s >= 0.0:
            raise ValueError(f"{self.name}: rate_per_node_s must be >= 0")

    @property
    def interrupts_job(self) -> bool:
        """True when a failure of this class stops the job that uses the node."""
        return self.scope != "none"


@lru_cache(maxsize=1)
def _catalog_path() -> Path:
    # cached: importlib.resources lookups cost ~0.1 ms, and repair/detection draws call this
    return Path(str(resources.files("twin.catalog").joinpath("failures.yaml")))


@lru_cache(maxsize=8)
def _load_yaml(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))   # C parser, same data


def _catalog(path: str | Path | None = None) -> dict[str, Any]:
    """The cached catalog dict (shared: never mutate)."""
    return _load_yaml(str(Path(path) if path is not None else _catalog_path()))


def load_failure_catalog(path: str | Path | None = None) -> dict[str, Any]:
    """The raw failure catalog (basis, classes, repair, detection, ...) as a new dict."""
    return copy.deepcopy(_catalog(path))


def basis_node_s(catalog: dict[str, Any] | None = None) -> float:
    """Node-seconds [node*s] of the calibration basis (2,048 nodes * 54 d * 86,400 s)."""
    b = (catalog or _catalog())["basis"]
    return float(b["nodes"]) * float(b["days"]) * DAY_S


def load_failure_classes(path: str | Path | None = None) -> tuple[FailureClass, ...]:
    """Failure classes from ``twin/catalog/failures.yaml`` (or ``path``).

    rate_per_node_s [1/s] = count / (nodes * days * 86,400 s) of the catalog's basis
    (Llama 3, arXiv 2407.21783, Table 5: 2,048 nodes, 54 days, 419 interruptions).
    """
    cat = _catalog(path)
    node_s = basis_node_s(cat)
    out = []
    for c in cat["classes"]:
        out.append(
            FailureClass(
                name=str(c["name"]),
                rate_per_node_s=float(c["count"]) / node_s,
                scope=str(c["scope"]),
                repair=str(c["repair"]),
                thermal=bool(c["thermal"]),
                source=str(c["source"]),
                part=None if c.get("part") is None else str(c["part"]),
                detection=str(c.get("detection", "immediate")),
                count=float(c["count"]),
            )
        )
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError("duplicate failure class names in the catalog")
    return tuple(out)


def class_index(classes: tuple[FailureClass, ...], name: str) -> int:
    """Index of the class called ``name``."""
    for i, c in enumerate(classes):
        if c.name == name:
            return i
    raise KeyError(name)


def planned_maintenance_rate_per_s(path: str | Path | None = None) -> float:
    """Planned (announced) interruptions of a cluster-wide job per second [1/s].

    47 planned interruptions in 54 days (Llama 3, arXiv 2407.21783): 47 / 4,665,600 s.
    Planned maintenance is announced: the job checkpoints at the announcement and loses
    no work beyond it, unlike the unplanned ``host_maintenance`` class.
    """
    cat = _catalog(path)
    return float(cat["planned_maintenance"]["count"]) / (float(cat["basis"]["days"]) * DAY_S)


def scale_class_rates(
    classes: tuple[FailureClass, ...], factors: Mapping[str, float]
) -> tuple[FailureClass, ...]:
    """Classes with the rates of the named classes multiplied by their factor [-].

    E.g. {"gpu_hbm3": 2.0, "software_bug": 0.5} for a what-if on one failure mode.
    Unknown names raise KeyError; factors must be >= 0.
    """
    names = {c.name for c in classes}
    unknown = set(factors) - names
    if unknown:
        raise KeyError(f"unknown failure classes: {sorted(unknown)}")
    out = []
    for c in classes:
        f = float(factors.get(c.name, 1.0))
        if f < 0:
            raise ValueError(f"{c.name}: factor must be >= 0")
        out.append(replace(c, rate_per_node_s=c.rate_per_node_s * f) if f != 1.0 else c)
    return tuple(out)
