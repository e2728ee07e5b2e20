"""Parameter sweeps: a grid of scenario fields (and named cases) x seeds, run in parallel on
the local cores (``concurrent.futures`` processes) or on a Dask cluster, resumable, with
Monte Carlo summaries over seeds.

Layout of a sweep folder ``DIR``::

    DIR/sweep.json        the resolved sweep (axes, seeds, series) as written by the last run
    DIR/runs/<key>.json   one finished run: status, KPIs, error (key = hash of the resolved
    DIR/runs/<key>.npz    scenario incl. its seed) and its selected time series
    DIR/sweep.nc          one xarray Dataset: every KPI with dims (axis..., seed), series with
                          (axis..., seed, day), ``status`` and ``error`` per run
    DIR/summary.csv       mean and 5-95 % band over seeds of every KPI, per grid point

Python::

    from twin.sweep import SweepSpec, Axis, run_sweep
    spec = SweepSpec.from_file("scenarios/studies/ups_mode.yaml")
    outcome = run_sweep(spec, "runs/ups", workers=2)
    outcome.dataset.tokens_total.mean("seed").sel({"site.power.ups.mode": "bypass"})

A run's key is the SHA-256 of its resolved scenario (the seed is ``simulation.seed``), so a
re-run of a killed sweep, or a different sweep sharing runs with it, does only what is
missing. The core never prints: progress goes to a callback; the CLI draws the bar.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

EXIT_BAD_INPUT = 2

#: time series kept per run by default (dims ``time`` only, or derived from per-rack/job data)
DEFAULT_SERIES = ("gpus_installed", "gpus_powered", "gpus_healthy", "gpus_busy", "tokens_cumulative",
                  "facility_it_power_w", "facility_total_power_w", "power_available_w", "inlet_max_c")
DERIVED_SERIES = {
    "tokens_cumulative": ("tokens", "training tokens done by all jobs (incl. not yet checkpointed)"),
    "inlet_max_c": ("degC", "hottest inlet of a powered rack"),
    "inlet_mean_c": ("degC", "mean inlet of powered racks"),
}


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
                "series": list(self.series)}

    @classmethod
    def from_json(cls, d: dict) -> SweepSpec:
        return cls(scenario=d["scenario"], overrides=tuple(d.get("overrides", ())),
                   axes=tuple(Axis(a["name"], tuple(a["labels"]), tuple(tuple(o) for o in a["overrides"]),
                                   tuple(a["scenarios"])) for a in d.get("axes", ())),
                   seeds=tuple(d["seeds"]), series=tuple(d.get("series", DEFAULT_SERIES)),
                   name=d.get("name", "sweep"), study=d.get("study"), description=d.get("description", ""))

    @classmethod
    def from_file(cls, path: str | Path) -> SweepSpec:
        """Read a sweep YAML file (see :func:`spec_from_mapping` for its keys)."""
        import yaml
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise SweepError(f"{path}: cannot read ({exc.strerror})") from None
        except yaml.YAMLError as exc:
            raise SweepError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
        return spec_from_mapping(data, path)


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


def parse_seeds(value) -> tuple[int, ...]:
    """``N`` -> seeds 0..N-1; ``a,b,c`` or a list -> those seeds."""
    if isinstance(value, bool):
        raise SweepError(f"seeds: got {value!r}; expected a count N or a list of seeds")
    if isinstance(value, int):
        if value < 1:
            raise SweepError(f"seeds: got {value}; expected at least 1")
        return tuple(range(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            if "," in text:
                return parse_seeds([int(x) for x in text.split(",")])
            return parse_seeds(int(text))
        except ValueError:
            raise SweepError(f"seeds: got {value!r}; expected a count N or a list a,b,c") from None
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value):
        return tuple(int(x) for x in value)
    raise SweepError(f"seeds: got {value!r}; expected a count N or a list of non-negative integers")


def spec_from_mapping(data: Any, path: str | Path = "<sweep>") -> SweepSpec:
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
    ``cases`` may also be a list of such blocks (one dimension each).
    """
    path = Path(path)
    where = str(path)
    if not isinstance(data, dict):
        raise SweepError(f"{where}: expected a mapping with keys scenario, grid, cases, seeds, ...")
    known = {"name", "study", "description", "scenario", "set", "seeds", "series", "grid", "cases"}
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
        seeds=parse_seeds(data.get("seeds", 1)), overrides=tuple(str_list(data.get("set"), "set")),
        series=tuple(series), name=str(data.get("name", path.stem)), study=data.get("study"),
        description=str(data.get("description", "")))


# --------------------------------------------------------------------------- runs
@dataclasses.dataclass
class RunTask:
    """One run of the sweep: where it sits in the grid and its resolved scenario."""

    index: tuple[int, ...]          # (axis indices..., seed index)
    key: str                        # SHA-256 of the resolved scenario (seed included)
    scenario: Any                   # twin.scenario.Scenario, or None if it did not validate
    problem: str | None = None      # why the scenario did not validate


def resolve_tasks(spec: SweepSpec) -> list[RunTask]:
    """Load and validate every run's scenario. A combination that does not validate becomes
    a task with ``problem`` set (recorded as failed); a bad base scenario raises.

    Each grid point is loaded once (with its first seed) and the other seeds are copies with
    ``simulation.seed`` replaced: the same model as loading with ``--set simulation.seed=S``
    (the seed is only range-checked, which :func:`parse_seeds` did)."""
    from twin.errors import ScenarioError
    from twin.scenario.loader import load_scenario, scenario_hash

    tasks = []
    for idx, path, overrides in spec.points():
        ov = [*overrides, f"simulation.seed={spec.seeds[0]}"]
        try:
            first = load_scenario(path, ov)
        except ScenarioError as err:
            if not any(idx):          # the first grid point: the base itself is bad
                raise
            text = "; ".join(str(p) for p in err.problems)
            for si, seed in enumerate(spec.seeds):
                key = hashlib.sha256(json.dumps([str(path), [*overrides, f"simulation.seed={seed}"]]).encode()
                                     ).hexdigest()
                tasks.append(RunTask((*idx, si), key, None, f"scenario does not validate: {text}"))
            continue
        for si, seed in enumerate(spec.seeds):
            s = first if si == 0 else first.model_copy(
                update={"simulation": first.simulation.model_copy(update={"seed": int(seed)})})
            tasks.append(RunTask((*idx, si), scenario_hash(s), s))
    return tasks


_CODE_FINGERPRINT: str | None = None


def code_fingerprint() -> str:
    """SHA-256 (first 16 hex) of the twin package's code and catalog data: runs stored by a
    different fingerprint were made by other code and may differ (see ``rerun_stale``)."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for f in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml", ".csv") and p.is_file()):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _CODE_FINGERPRINT = h.hexdigest()[:16]
    return _CODE_FINGERPRINT


def _series_from(results, names: Iterable[str]) -> dict[str, np.ndarray]:
    ds = results.dataset
    out: dict[str, np.ndarray] = {}
    for n in names:
        if n == "tokens_cumulative":
            out[n] = ds["job_tokens"].sum("job").values.astype(np.float64)
        elif n in ("inlet_max_c", "inlet_mean_c"):
            on = ds["rack_state"] >= 1
            inlet = ds["rack_inlet_c"].where(on)
            red = inlet.max("rack") if n == "inlet_max_c" else inlet.mean("rack")
            out[n] = red.values.astype(np.float32)
        elif n in ds and ds[n].dims == ("time",):
            out[n] = ds[n].values.astype(np.float32 if ds[n].dtype.kind == "f" else np.float64)
        else:
            raise KeyError(f"series {n!r}: not a time series of the run (choose a variable with dims "
                           f"('time',) or one of {sorted(DERIVED_SERIES)})")
    return out


def execute_run(scenario, series: tuple[str, ...] = DEFAULT_SERIES) -> dict:
    """Run one scenario; return a picklable record (status, KPIs incl. study figures, series).

    Runs in a worker process (local pool or Dask). Exceptions become ``status='failed'``
    records with the error text; KeyboardInterrupt and SystemExit propagate.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        import twin
        from twin.studies.metrics import study_kpis
        res = twin.simulate(scenario)
        kpis = {k: _num(v) for k, v in res.kpis.items()}
        kpis.update({k: _num(v) for k, v in study_kpis(scenario, res).items()})
        t = res.dataset["time"].values
        day = ((t - t[0]) / np.timedelta64(1, "s")).astype(np.float64) / 86400.0
        ser = _series_from(res, series)
        return {"status": "ok", "kpis": kpis, "error": None, "day": day, "series": ser,
                "start": str(scenario.simulation.start), "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0, "pid": os.getpid(), "code": code_fingerprint()}
    except Exception as exc:  # a failed run is recorded, the sweep goes on
        return {"status": "failed", "kpis": {}, "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(), "wall_s": time.perf_counter() - t0,
                "pid": os.getpid(), "code": code_fingerprint()}


def _num(v) -> float:
    return float(v) if v is not None else math.nan


class RunStore:
    """Finished runs on disk, one JSON (+ NPZ of series) per run key, written atomically."""

    def __init__(self, root: str | Path):
        self.dir = Path(root) / "runs"
        self.dir.mkdir(parents=True, exist_ok=True)

    def _json(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def has(self, key: str) -> bool:
        return self._json(key).exists()

    def meta(self, key: str) -> dict | None:
        """The stored JSON of a run (status, KPIs, error, code), or None if not stored."""
        try:
            return json.loads(self._json(key).read_text())
        except (OSError, json.JSONDecodeError):
            return None

    def load(self, key: str) -> dict | None:
        try:
            rec = json.loads(self._json(key).read_text())
        except (OSError, json.JSONDecodeError):
            return None
        npz = self.dir / f"{key}.npz"
        rec["series"], rec["day"] = {}, None
        if rec.get("status") == "ok" and npz.exists():
            with np.load(npz) as z:
                rec["day"] = z["__day__"]
                rec["series"] = {k: z[k] for k in z.files if k != "__day__"}
        return rec

    def save(self, key: str, record: dict, extra: dict) -> None:
        """Write the series first and the JSON last: the JSON's presence means 'done'."""
        if record.get("status") == "ok":
            fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".npz", dir=self.dir)
            os.close(fd)
            with open(tmp, "wb") as fh:
                np.savez(fh, __day__=record["day"], **record["series"])
            os.replace(tmp, self.dir / f"{key}.npz")
        meta = {k: v for k, v in record.items() if k not in ("series", "day")}
        meta.update(extra)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".json", dir=self.dir)
        with os.fdopen(fd, "w") as fh:
            json.dump(meta, fh, indent=1, sort_keys=True, default=_jsonable)
        os.replace(tmp, self._json(key))


@dataclasses.dataclass
class SweepOutcome:
    dataset: Any                    # xarray.Dataset (sweep.nc)
    ran: list[str]                  # run keys executed by this call
    reused: list[str]               # run keys found on disk
    failed: list[str]               # run keys whose status is 'failed'
    out_dir: Path
    stale: list[str] = dataclasses.field(default_factory=list)  # reused runs made by other code


ProgressFn = Callable[[int, int, int, float], None]   # (done, failed, total, elapsed_s)


def run_sweep(spec: SweepSpec, out_dir: str | Path, *, workers: int | None = None,
              scheduler: str | None = None, client=None, retry_failed: bool = False,
              rerun_stale: bool = False, progress: ProgressFn | None = None,
              on_result: Callable[[RunTask, dict], None] | None = None) -> SweepOutcome:
    """Run every missing run of ``spec``, store each as it finishes, then assemble ``sweep.nc``
    and ``summary.csv`` in ``out_dir``.

    ``workers``: local processes (default: all cores; 1 = in this process, no pool).
    ``scheduler``: ``tcp://host:port`` of a running Dask scheduler, or ``local`` for a fresh
    ``dask.distributed.LocalCluster`` of ``workers`` processes; ``client``: an existing
    ``dask.distributed.Client`` (overrides both). ``retry_failed`` runs again the runs stored
    as failed; ``rerun_stale`` the runs stored by other code (:func:`code_fingerprint`).
    ``on_result`` is called after each stored run (tests use it to stop a sweep half way).
    """
    out = Path(out_dir)
    tasks = resolve_tasks(spec)          # a bad base scenario raises before anything is written
    out.mkdir(parents=True, exist_ok=True)
    store = RunStore(out)
    (out / "sweep.json").write_text(json.dumps(spec.to_json(), indent=1, default=_jsonable))
    todo, reused, seen, stale = [], [], set(), set()
    failed_n = 0
    code = code_fingerprint()
    for t in tasks:
        meta = store.meta(t.key) if t.key not in seen else None
        if t.key in seen:
            (reused if t.key in set(reused) else []).append(t.key)
            continue
        seen.add(t.key)
        if meta is not None:
            is_stale = meta.get("code") != code
            stale.update([t.key] if is_stale else [])
            if not ((retry_failed and meta.get("status") == "failed") or (rerun_stale and is_stale)):
                reused.append(t.key)
                failed_n += meta.get("status") == "failed"
                continue
        todo.append(t)
    total = len(tasks)
    done_n = len(reused)
    ran: list[str] = []
    t0 = time.monotonic()
    if progress:
        progress(done_n, failed_n, total, 0.0)

    def store_result(task: RunTask, rec: dict) -> None:
        nonlocal done_n, failed_n
        store.save(task.key, rec, {"index": list(task.index), "seed": spec.seeds[task.index[-1]],
                                   "labels": {a.name: _jsonable(a.labels[i])
                                              for a, i in zip(spec.axes, task.index, strict=False)}})
        ran.append(task.key)
        done_n += 1 + sum(1 for t in tasks if t.key == task.key and t is not task)
        failed_n += rec["status"] == "failed"
        if progress:
            progress(done_n, failed_n, total, time.monotonic() - t0)
        if on_result:
            on_result(task, rec)

    runnable = []
    for t in todo:
        if t.scenario is None:
            store_result(t, {"status": "failed", "kpis": {}, "error": t.problem, "wall_s": 0.0})
        else:
            runnable.append(t)
    if runnable:
        if client is not None or scheduler:
            _run_dask(runnable, spec.series, store_result, client, scheduler, workers)
        elif (workers or os.cpu_count() or 1) <= 1 or len(runnable) == 1:
            for t in runnable:
                store_result(t, execute_run(t.scenario, spec.series))
        else:
            _run_local(runnable, spec.series, store_result, workers or os.cpu_count() or 1)
    ds = assemble(spec, tasks, store)
    write_dataset(ds, out)
    failed = sorted({t.key for t in tasks if str(ds["status"].values[t.index]) == "failed"})
    return SweepOutcome(ds, ran, reused, failed, out, sorted(stale - set(ran)))


def _run_local(tasks: list[RunTask], series, store_result, workers: int) -> None:
    """A process pool; forked workers inherit the already imported model code."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    import twin.sim.engine  # noqa: F401  (import once in the parent, before forking)
    import twin.studies.metrics  # noqa: F401
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx)
    try:
        pending = {pool.submit(execute_run, t.scenario, series): t for t in tasks}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                t = pending.pop(f)
                try:
                    rec = f.result()
                except Exception as exc:   # a worker died (e.g. killed, out of memory)
                    rec = {"status": "failed", "kpis": {}, "error": f"worker lost: {type(exc).__name__}: {exc}",
                           "wall_s": math.nan}
                store_result(t, rec)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _run_dask(tasks, series, store_result, client, scheduler, workers) -> None:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise SweepError("--scheduler needs dask.distributed: pip install -e .[sweep]") from exc
    with contextlib.ExitStack() as stack:
        if client is None:
            if scheduler == "local":
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                    dashboard_address=None))
                client = stack.enter_context(Client(cluster))
            else:
                try:
                    client = stack.enter_context(Client(scheduler, timeout="10s"))
                except (OSError, TimeoutError) as exc:
                    raise SweepError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        futures = {client.submit(execute_run, t.scenario, series, pure=False, key=f"twin-run-{t.key}"): t
                   for t in tasks}
        try:
            for f in as_completed(list(futures)):
                t = futures[f]
                try:
                    rec = f.result()
                except Exception as exc:
                    rec = {"status": "failed", "kpis": {}, "error": f"worker lost: {type(exc).__name__}: {exc}",
                           "wall_s": math.nan}
                store_result(t, rec)
        finally:
            for f in futures:
                f.release()


# --------------------------------------------------------------------------- assembly
def _coord(labels: tuple) -> np.ndarray:
    """Coordinate values: numbers stay numbers, bools stay bools, anything mixed is text."""
    if all(isinstance(v, bool) for v in labels):
        return np.array(labels, dtype=bool)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in labels):
        return np.array(labels, dtype=np.int64)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in labels):
        return np.array(labels, dtype=np.float64)
    return np.array([v if isinstance(v, str) else _yaml_scalar(v) for v in labels], dtype=str)


def assemble(spec: SweepSpec, tasks: list[RunTask], store: RunStore):
    """Build the sweep Dataset from the stored runs: KPIs (axis..., seed), series
    (axis..., seed, day), and status/error/key per run. Runs not on disk are 'missing'."""
    import xarray as xr

    from twin.results import KPI_UNITS
    from twin.studies.metrics import STUDY_KPI_UNITS

    shape = spec.shape
    dims = tuple(a.name for a in spec.axes) + ("seed",)
    recs = {}
    for t in tasks:
        if t.key not in recs:
            recs[t.key] = store.load(t.key)
    units = {**KPI_UNITS, **STUDY_KPI_UNITS}
    kpi_names = list(units)
    for r in recs.values():
        for k in (r or {}).get("kpis", {}):
            if k not in units:
                kpi_names.append(k)
                units[k] = ("", k)
    kpi = {k: np.full(shape, np.nan) for k in kpi_names}
    status = np.full(shape, "missing", dtype=object)
    error = np.full(shape, "", dtype=object)
    keys = np.full(shape, "", dtype=object)
    wall = np.full(shape, np.nan)
    days = [r["day"] for r in recs.values() if r and r.get("day") is not None and len(r["day"])]
    day = np.unique(np.round(np.concatenate(days), 9)) if days else np.zeros(0)
    ser = {n: np.full((*shape, len(day)), np.nan, dtype=np.float64 if n == "tokens_cumulative" else np.float32)
           for n in spec.series}
    for t in tasks:
        r = recs[t.key]
        keys[t.index] = t.key
        if not r:
            continue
        status[t.index] = r.get("status", "failed")
        error[t.index] = r.get("error") or ""
        wall[t.index] = r.get("wall_s", np.nan)
        for k, v in r.get("kpis", {}).items():
            kpi[k][t.index] = np.nan if v is None else v
        if r.get("day") is not None and len(day):
            pos = np.searchsorted(day, np.round(r["day"], 9))
            for n in spec.series:
                if n in r["series"]:
                    ser[n][t.index + (pos,)] = r["series"][n]
    data = {k: xr.DataArray(v, dims=dims, attrs={"units": units[k][0], "long_name": units[k][1]})
            for k, v in kpi.items()}
    for n, v in ser.items():
        unit, long = DERIVED_SERIES.get(n, ("", n))
        data[n] = xr.DataArray(v, dims=(*dims, "day"), attrs={"units": unit, "long_name": long})
    data["status"] = xr.DataArray(status.astype(str), dims=dims, attrs={"long_name": "ok, failed or missing"})
    data["error"] = xr.DataArray(error.astype(str), dims=dims, attrs={"long_name": "error of a failed run"})
    data["run_key"] = xr.DataArray(keys.astype(str), dims=dims,
                                   attrs={"long_name": "SHA-256 of the resolved scenario (runs/<key>.json)"})
    data["wall_s"] = xr.DataArray(wall, dims=dims, attrs={"units": "s", "long_name": "wall time of the run"})
    coords = {a.name: (a.name, _coord(a.labels)) for a in spec.axes}
    coords["seed"] = ("seed", np.array(spec.seeds, dtype=np.int64))
    coords["day"] = ("day", day, {"units": "days", "long_name": "days since the scenario start"})
    ds = xr.Dataset(data, coords=coords)
    from twin._version import __version__
    starts = sorted({r["start"] for r in recs.values() if r and r.get("start")})
    ds.attrs = {"title": f"twin sweep {spec.name}", "sweep_name": spec.name, "study": spec.study or "",
                "start": starts[0] if len(starts) == 1 else "",
                "sweep_json": json.dumps(spec.to_json(), default=_jsonable), "twin_version": __version__,
                "runs_total": int(np.prod(shape)), "runs_failed": int((status == "failed").sum()),
                "runs_missing": int((status == "missing").sum())}
    # series of a metric that comes from scenarios with their own templates: keep the first seen
    return ds


def write_dataset(ds, out: Path) -> None:
    """Write sweep.nc and summary.csv atomically."""
    fd, tmp = tempfile.mkstemp(prefix=".sweep.", suffix=".nc", dir=out)
    os.close(fd)
    ds.to_netcdf(tmp, engine="h5netcdf")
    os.replace(tmp, out / "sweep.nc")
    table = summary_table(ds)
    fd, tmp = tempfile.mkstemp(prefix=".summary.", suffix=".csv", dir=out)
    os.close(fd)
    table.to_csv(tmp, index=False)
    os.replace(tmp, out / "summary.csv")


def load_sweep(out_dir: str | Path):
    """Open ``DIR/sweep.nc`` (loaded into memory) and its spec: (Dataset, SweepSpec)."""
    import xarray as xr
    out = Path(out_dir)
    with xr.open_dataset(out / "sweep.nc", engine="h5netcdf") as ds:
        ds = ds.load()
    return ds, SweepSpec.from_json(json.loads(ds.attrs["sweep_json"]))


def kpi_names(ds) -> list[str]:
    """Numeric per-run variables of a sweep Dataset (no 'day' dim, not bookkeeping)."""
    return [k for k, v in ds.data_vars.items()
            if "day" not in v.dims and v.dtype.kind in "fiu" and k != "wall_s"]


def summarize(ds, dim: str = "seed", low: float = 0.05, high: float = 0.95):
    """Monte Carlo summary over ``dim``: a Dataset with a ``stat`` dimension
    (mean, p05, p95, n) for every KPI; failed/missing runs (NaN) are skipped."""
    import xarray as xr
    names = kpi_names(ds)
    sub = ds[names]
    with np.errstate(all="ignore"), _quiet():
        mean = sub.mean(dim, skipna=True)
        q = sub.quantile([low, high], dim=dim, skipna=True)
        n = sub.notnull().sum(dim)
    parts = [mean.expand_dims(stat=["mean"]),
             q.sel(quantile=low).drop_vars("quantile").expand_dims(stat=[f"p{round(low * 100):02d}"]),
             q.sel(quantile=high).drop_vars("quantile").expand_dims(stat=[f"p{round(high * 100):02d}"]),
             n.astype(float).expand_dims(stat=["n"])]
    out = xr.concat(parts, dim="stat")
    for k in names:
        out[k].attrs = ds[k].attrs
    return out


@contextlib.contextmanager
def _quiet():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def summary_table(ds):
    """Flat table: one row per grid point; columns axis labels, runs ok/failed, and
    ``<kpi>_mean``, ``<kpi>_p05``, ``<kpi>_p95`` for every KPI."""
    import pandas as pd
    sm = summarize(ds)
    axes = [d for d in ds["status"].dims if d != "seed"]
    shape = tuple(ds.sizes[d] for d in axes)
    grid = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij") if axes else []
    cols: dict[str, np.ndarray] = {d: ds[d].values[g.ravel()] for d, g in zip(axes, grid, strict=True)}
    cols["runs_ok"] = (ds["status"] == "ok").sum("seed").transpose(*axes).values.ravel().astype(int)
    cols["runs_failed"] = (ds["status"] == "failed").sum("seed").transpose(*axes).values.ravel().astype(int)
    for k in sm.data_vars:
        v = sm[k].transpose("stat", *axes)
        for stat in ("mean", "p05", "p95"):
            cols[f"{k}_{stat}"] = np.asarray(v.sel(stat=stat).values, float).ravel()
    return pd.DataFrame(cols)


# --------------------------------------------------------------------------- CLI
class SweepProgress:
    """Progress line on stderr (terminal only): runs done / total, failed, elapsed, time left."""

    def __init__(self, stream=None, force: bool = False):
        self.stream = stream or sys.stderr
        self.enabled = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.first: tuple[int, float] | None = None

    def __call__(self, done: int, failed: int, total: int, elapsed_s: float) -> None:
        if not self.enabled:
            return
        if self.first is None:
            self.first = (done, elapsed_s)
        new = done - self.first[0]
        left = (elapsed_s - self.first[1]) / new * (total - done) if new > 0 else math.nan
        width = 30
        fill = int(round(width * done / total)) if total else width
        self.stream.write(f"\rsweep [{'#' * fill}{'.' * (width - fill)}] {done}/{total} runs, "
                          f"{failed} failed, elapsed {_hms(elapsed_s)}, left {_hms(left)}  ")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def _hms(s: float) -> str:
    if not np.isfinite(s):
        return "--:--"
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def is_sweep_file(path: str | Path) -> bool:
    """A YAML file whose top level has sweep keys (grid/cases/seeds) and no scenario sections."""
    import yaml
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "site" not in data and "simulation" not in data and bool(
        {"grid", "cases", "seeds", "scenario"} & set(data))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="twin sweep",
        description="Run a scenario over a parameter grid x seeds (locally or on Dask) and write "
                    "DIR/sweep.nc (KPIs with the sweep dims + seed) and DIR/summary.csv. "
                    "Finished runs are kept in DIR/runs/, so re-running a killed sweep does only "
                    "what is missing.")
    ap.add_argument("scenario", help="scenario YAML, or a sweep YAML file (keys scenario, set, grid, "
                                     "cases, seeds, series) that replaces the flags")
    ap.add_argument("--grid", action="append", default=[], metavar="[NAME:]dotted.path=v1,v2,...",
                    help="a sweep axis (repeatable; the cross product is run)")
    ap.add_argument("--set", action="append", default=[], metavar="dotted.path=value",
                    help="override a field in every run")
    ap.add_argument("--seeds", help="N (seeds 0..N-1) or a list a,b,c (default: 1, or the sweep file's)")
    ap.add_argument("--series", help="comma-separated time series to keep per run, or 'none' "
                                     f"(default: {','.join(DEFAULT_SERIES)})")
    ap.add_argument("--out", required=True, help="sweep folder")
    ap.add_argument("--workers", type=int, help="local worker processes (default: all cores; 1 = serial)")
    ap.add_argument("--scheduler", metavar="tcp://HOST:PORT|local",
                    help="run on this Dask scheduler ('local': a fresh LocalCluster of --workers processes)")
    ap.add_argument("--retry-failed", action="store_true", help="run again the runs recorded as failed")
    ap.add_argument("--rerun-stale", action="store_true",
                    help="run again stored runs made by a different version of the twin code")
    return ap


def run_sweep_cli(argv: list[str]) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:      # argparse already printed the usage and the problem
        return int(exc.code or 0) and EXIT_BAD_INPUT
    from twin.errors import ScenarioError
    try:
        if args.workers is not None and args.workers < 1:
            raise SweepError(f"--workers: got {args.workers}; expected 1 or more")
        if args.scheduler and not (args.scheduler == "local" or "://" in args.scheduler):
            raise SweepError(f"--scheduler: got {args.scheduler!r}; expected tcp://HOST:PORT or 'local'")
        if not Path(args.scenario).is_file():
            raise SweepError(f"{args.scenario}: no such file")
        if is_sweep_file(args.scenario):
            spec = SweepSpec.from_file(args.scenario)
        else:
            spec = SweepSpec(scenario=args.scenario, name=Path(args.scenario).stem)
        axes = list(spec.axes) + [parse_grid(g) for g in args.grid]
        repl: dict[str, Any] = {"axes": tuple(axes), "overrides": (*spec.overrides, *args.set)}
        if args.seeds is not None:
            repl["seeds"] = parse_seeds(args.seeds)
        if args.series is not None:
            repl["series"] = () if args.series.strip() == "none" else tuple(
                s.strip() for s in args.series.split(",") if s.strip())
        spec = dataclasses.replace(spec, **repl)
        bad = [s for s in spec.series if s not in DERIVED_SERIES and s not in _TIME_SERIES]
        if bad:
            raise SweepError(f"--series: unknown {bad}; expected some of "
                             f"{sorted(_TIME_SERIES | set(DERIVED_SERIES))}")
        n = int(np.prod(spec.shape))
        print(f"sweep {spec.name}: {n} runs ({' x '.join(f'{a.name}[{len(a.labels)}]' for a in spec.axes) or 'base'}"
              f" x seed[{len(spec.seeds)}]) -> {args.out}/", file=sys.stderr)
        t0 = time.perf_counter()
        outcome = run_sweep(spec, args.out, workers=args.workers, scheduler=args.scheduler,
                            retry_failed=args.retry_failed, rerun_stale=args.rerun_stale,
                            progress=SweepProgress())
    except ScenarioError as err:
        print(f"error: the scenario has {len(err.problems)} problem(s):", file=sys.stderr)
        for p in err.problems:
            print(f"  {p}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SweepError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished runs are kept in {args.out}/runs/; run the same command "
              f"again to do only what is missing", file=sys.stderr)
        return 130
    wall = time.perf_counter() - t0
    ds = outcome.dataset
    print(f"{len(outcome.ran)} runs done, {len(outcome.reused)} reused from {args.out}/runs/, "
          f"{ds.attrs['runs_failed']} failed; {wall:.1f} s; wrote {args.out}/sweep.nc and summary.csv")
    if outcome.stale:
        print(f"warning: {len(outcome.stale)} stored runs were made by a different version of the twin "
              f"code; --rerun-stale runs them again", file=sys.stderr)
    print(format_summary(ds))
    if ds.attrs["runs_failed"]:
        st = ds["status"].values.ravel()
        err = ds["error"].values.ravel()
        first = err[st == "failed"][0]
        print(f"first failure: {first}", file=sys.stderr)
    return 0


_TIME_SERIES = {"rack_power_w", "facility_it_power_w", "facility_total_power_w", "ups_loss_w",
                "distribution_loss_w", "cooling_power_w", "power_available_w", "outdoor_temp_c",
                "gpus_installed", "gpus_powered", "gpus_healthy", "gpus_busy", "nodes_failed",
                "throttle_fraction"} - {"rack_power_w"}


def format_summary(ds, kpis: tuple[str, ...] = ("tokens_total", "goodput_fraction", "interruptions",
                                                   "energy_facility_mwh", "max_rack_inlet_c")) -> str:
    """Plain-text table: per grid point, mean [p05, p95] over seeds of a few KPIs."""
    table = summary_table(ds)
    axes = [d for d in ds["status"].dims if d != "seed"]
    w = {a: max(len(a), *(len(str(v)) for v in table[a])) for a in axes}
    head = ["  ".join(f"{a:>{w[a]}s}" for a in axes), f"{'ok/fail':>8s}",
            *(f"{k + ' mean [p05, p95]':>34s}" for k in kpis)]
    lines = ["  ".join(h for h in head if h)]
    for row in table.to_dict("records"):
        cells = [f"{str(row[a]):>{w[a]}s}" for a in axes]
        cells.append(f"{int(row['runs_ok']):>4d}/{int(row['runs_failed']):<3d}")
        for k in kpis:
            m, lo, hi = (row.get(f"{k}_{s}", math.nan) for s in ("mean", "p05", "p95"))
            cells.append(f"{m:12.4g} [{lo:9.3g}, {hi:9.3g}]")
        lines.append("  ".join(cells))
    return "\n".join(lines)
