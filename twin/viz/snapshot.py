"""What the 3-D view shows at one instant: per-rack values, states, cooling units, field.

A :class:`Snapshot` is plain data (numpy arrays and xarray field datasets) taken either
from a run's Results at a sample time, or from a scenario alone at its design point
(every rack in service at its worst-case admission power). :mod:`twin.viz.scene` turns
it into pyvista meshes. Nothing here imports pyvista, so the data side is testable and
usable without a renderer.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from twin.plant import hall_geometries
from twin.scenario.schema import Scenario

COLORS = ("inlet_temp", "power", "rpp_load", "health", "ashrae", "node_model")

HEALTH_NAMES = {0: "off", 1: "burn-in", 2: "in service", 3: "tripped"}
HEALTH_COLORS = ("#9e9e9e", "#f2c14e", "#3a9d5d", "#d7263d")
ASHRAE_COLORS = ("#1a9850", "#a6d96a", "#fee08b", "#fdae61", "#f46d43", "#a50026")
MODEL_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974",
                "#64b5cd", "#c44e52")
"""Colours of the node models of a mixed hall (matplotlib's ``deep`` qualitative palette), in
the plant's model order; more models than colours reuse them."""


@dataclass
class ColorScale:
    """How rack values map to colours: a continuous colormap or categories."""

    quantity: str
    title: str
    clim: tuple[float, float]
    cmap: str | list[str]
    categories: dict[int, str] | None = None


@dataclass
class Snapshot:
    """Everything the hall view draws at one time (rack index = plant / Dataset order)."""

    scenario: Scenario
    rack_xy_m: np.ndarray          # (R, 2) [m] in each hall's own frame
    rack_intake: np.ndarray        # (R, 2) unit vectors
    rack_enclosed: np.ndarray      # (R,) bool
    rack_hall: np.ndarray          # (R,) int
    rack_state: np.ndarray         # (R,) int, -1 not delivered ... 3 tripped
    rack_value: np.ndarray         # (R,) value of the colour quantity (NaN where not drawn)
    rack_heat_w: np.ndarray        # (R,) [W]
    scale: ColorScale
    cooling_active: list[np.ndarray]   # per hall, (C,) bool
    label: str                     # e.g. "2024-06-01 12:00" or "design point"
    caption: str = ""              # KPI line
    fields: list[xr.Dataset | None] = field(default_factory=list)   # per hall steady field
    rack_names: list[str] = field(default_factory=list)             # (R,) e.g. "r1-01"
    rack_models: list[str] = field(default_factory=list)            # (R,) catalog node model of each rack
    rack_inlet_c: np.ndarray | None = None   # (R,) [°C] the inlets the caption's "max inlet" quotes (NaN: off)
    field_is_design: bool = False  # the room air is the design-airflow plan view, not the run's state

    @property
    def n_racks(self) -> int:
        return len(self.rack_state)


# --------------------------------------------------------------------------- scenario helpers
def scenario_of(results) -> Scenario:
    """The Scenario a run was made from (stored as JSON in the Dataset attributes)."""
    raw = results.dataset.attrs.get("scenario_json")
    if raw is None:
        raise ValueError("the run's results.nc has no scenario_json attribute")
    data = json.loads(raw) if isinstance(raw, str) else raw
    return _validate_tolerant(data)


def _validate_tolerant(data: dict) -> Scenario:
    """Validate a stored scenario; fields that this version of the schema no longer knows
    (a run saved by another twin version) are dropped rather than refused. Missing
    required fields still fail, with pydantic's message."""
    from pydantic import ValidationError

    for _ in range(4):
        try:
            return Scenario.model_validate(data)
        except ValidationError as exc:
            extra = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if not extra:
                raise ValueError(f"the run's stored scenario does not fit this twin version: {exc}") from exc
            for loc in extra:
                node = data
                for key in loc[:-1]:
                    node = node[key]
                node.pop(loc[-1], None)
    return Scenario.model_validate(data)


def _one_or_each(values, n: int) -> float | np.ndarray:
    v = np.broadcast_to(np.asarray(values, float), (n,))
    return float(v[0]) if n and np.all(v == v[0]) else v.copy()


def rack_design_airflow_m3_s(scenario: Scenario, plant) -> float | np.ndarray:
    """Airflow of a rack at full fan speed [m3/s]: its node model's fans times its node
    count (the engine's design airflow, ``twin.sim.hall_thermal``); one float when every
    rack is alike, else one per rack (R,)."""
    return _one_or_each(plant.rack_param("airflow_m3_s_at_max") * plant.rack_nodes, plant.n_racks)


def rack_design_power_w(scenario: Scenario, plant) -> float | np.ndarray:
    """Worst-case admission power of a rack [W] (``Plant.rack_worst_case_w``: its node
    model and count, the value the engine admits racks by); one float when every rack is
    alike, else one per rack (R,)."""
    return _one_or_each(plant.rack_worst_case_w(), plant.n_racks)


# --------------------------------------------------------------------------- reading a run
def load_view(run_dir, block: int = 512):
    """A run folder as the 3-D view reads it (:class:`twin.results.Results`): every series
    without a job dimension, and instead of the (time, job) tables the tokens of all jobs
    at each sample (``tokens_total``), summed ``block`` samples at a time. A nine-month
    job-stream run holds about 200 MB of per-job series that no picture shows."""
    from pathlib import Path

    from twin.results import Results
    from twin.store_io import recover

    out = Path(run_dir)
    recover(out)
    with xr.open_dataset(out / "results.nc", engine="h5netcdf") as ds:
        view = ds[[k for k, v in ds.data_vars.items() if "job" not in v.dims]].load()
        if "job_tokens" in ds.data_vars:
            n = ds.sizes["time"]
            total = np.empty(n)
            for a in range(0, n, block):
                total[a:a + block] = np.asarray(ds["job_tokens"][a:a + block].values, float).sum(axis=1)
            view["tokens_total"] = ("time", total, {"units": "token", "long_name": "tokens trained by all jobs"})
    events = pd.read_csv(out / "events.csv", keep_default_na=False)
    kpis = json.loads((out / "kpis.json").read_text())
    kpis.pop("warnings", None)
    return Results(view, events, kpis, {})


# --------------------------------------------------------------------------- time parsing
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([dhm])\s*$")


def parse_time(text: str | None, times: np.ndarray) -> int:
    """Index of the sample nearest to ``text`` in ``times`` (datetime64 array).

    ``text`` is an ISO date or date-time (``2024-06-01``, ``2024-06-01T12:00``), an offset
    from the start (``90d``, ``36h``, ``30m``), ``start``, ``end`` or None (the last sample).
    Raises ValueError for text it cannot read or a time outside the run.
    """
    times = np.asarray(times).astype("datetime64[s]")
    if len(times) == 0:
        raise ValueError("the run has no samples")
    if text is None or text.strip().lower() == "end":
        return len(times) - 1
    if text.strip().lower() == "start":
        return 0
    m = _DURATION.match(text)
    if m:
        unit = {"d": 86400.0, "h": 3600.0, "m": 60.0}[m.group(2)]
        when = times[0] + np.timedelta64(int(round(float(m.group(1)) * unit)), "s")
    else:
        try:
            when = np.datetime64(pd.Timestamp(text).to_pydatetime().replace(tzinfo=None), "s")
        except (ValueError, TypeError) as exc:
            raise ValueError(f"--time {text!r}: expected an ISO date (2024-06-01), a date-time "
                             f"(2024-06-01T12:00), an offset (90d, 36h), 'start' or 'end'") from exc
    step = (times[1] - times[0]) if len(times) > 1 else np.timedelta64(0, "s")
    if when < times[0] or when > times[-1] + step:
        raise ValueError(f"--time {text!r} is outside the run ({times[0]} to {times[-1]})")
    return int(np.argmin(np.abs((times - when).astype(np.int64))))


# --------------------------------------------------------------------------- colour scales
def _span(lo: float, hi: float, min_span: float) -> tuple[float, float]:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return (0.0, min_span)
    if hi - lo < min_span:
        mid = 0.5 * (lo + hi)
        lo, hi = mid - min_span / 2, mid + min_span / 2
    return (float(lo), float(hi))


def color_scale(quantity: str, values: np.ndarray, model_names: tuple[str, ...] | list[str] = ()) -> ColorScale:
    """Colour scale of ``quantity`` fitted to ``values`` (all the values it will show, e.g.
    over a whole animation, so that a colour means the same thing in every frame);
    ``node_model`` names its categories after ``model_names`` (the plant's models)."""
    from twin.thermal.properties import ASHRAE_CLASS_NAMES

    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    lo, hi = (float(v.min()), float(v.max())) if v.size else (np.nan, np.nan)
    if quantity == "inlet_temp":
        lo, hi = _span(np.floor(lo), np.ceil(hi), 4.0)
        return ColorScale(quantity, "rack inlet [°C]", (lo, hi), "coolwarm")
    if quantity == "power":
        return ColorScale(quantity, "rack power [kW]", (0.0, max(hi, 1.0) if np.isfinite(hi) else 1.0),
                          "plasma")
    if quantity == "rpp_load":
        top = max(1.0, hi) if np.isfinite(hi) else 1.0
        return ColorScale(quantity, "RPP load / breaker limit", (0.0, top), "RdYlGn_r")
    if quantity == "health":
        return ColorScale(quantity, "rack state", (-0.5, 3.5), list(HEALTH_COLORS), dict(HEALTH_NAMES))
    if quantity == "ashrae":
        names = {i: n for i, n in enumerate(ASHRAE_CLASS_NAMES)}
        return ColorScale(quantity, "ASHRAE class", (-0.5, len(names) - 0.5), list(ASHRAE_COLORS), names)
    if quantity == "node_model":
        models = list(model_names) or ["node"]
        colours = [MODEL_COLORS[k % len(MODEL_COLORS)] for k in range(len(models))]
        return ColorScale(quantity, "node model", (-0.5, len(models) - 0.5), colours, dict(enumerate(models)))
    raise ValueError(f"unknown colour {quantity!r}; expected one of {', '.join(COLORS)}")


def _rack_quantity(quantity: str, inlet_c, power_w, rpp_load, state, rack_model=None) -> np.ndarray:
    """Per-rack value of the colour quantity (NaN where not delivered); ``rack_model``:
    each rack's index into the plant's models (``node_model``)."""
    from twin.thermal.properties import ashrae_class

    state = np.asarray(state)
    if quantity == "inlet_temp":
        v = np.asarray(inlet_c, float)
    elif quantity == "power":
        v = np.asarray(power_w, float) / 1e3
    elif quantity == "rpp_load":
        v = np.asarray(rpp_load, float)
    elif quantity == "health":
        v = state.astype(float)
    elif quantity == "ashrae":
        v = ashrae_class(np.asarray(inlet_c, float)).astype(float)
    elif quantity == "node_model":
        v = np.broadcast_to(np.asarray(rack_model if rack_model is not None else 0, float), state.shape)
    else:
        raise ValueError(f"unknown colour {quantity!r}; expected one of {', '.join(COLORS)}")
    return np.where(state >= 0, v, np.nan)


# --------------------------------------------------------------------------- snapshots
def cooling_active_at(scenario: Scenario, events: pd.DataFrame, t_s: float) -> list[np.ndarray]:
    """Per hall, which cooling units run at time ``t_s`` (from cooling_fault / _restored events)."""
    down: set[str] = set()
    if events is not None and len(events):
        ev = events[events["kind"].isin(["cooling_fault", "cooling_restored"])]
        ev = ev[ev["time_s"].astype(float) <= t_s].sort_values("time_s", kind="stable")
        for kind, target in zip(ev["kind"], ev["target"], strict=True):
            (down.add if kind == "cooling_fault" else down.discard)(str(target))
    return [np.array([c.name not in down for c in hall.cooling_units], bool) for hall in scenario.site.halls]


#: what a drawn field is, when the run's own state is not what it solves (caption and attrs)
FIELD_DESIGN_NOTE = "room air: plan-view model with every rack at full-speed design airflow"


def field_differs_from_run(scenario: Scenario) -> bool:
    """A run of ``scenario`` holds rack airflow or recirculation that :func:`steady_fields`
    does not solve (the physical model's fan-law airflow, or its buoyant recirculation): the
    drawn room air is then a design-airflow plan view, not the run's state."""
    cs = scenario.site.cooling_system
    return cs.model == "physical" and (cs.rack_airflow == "fan_model" or cs.recirculation == "buoyant")


def steady_fields(scenario: Scenario, plant, rack_heat_w: np.ndarray,
                  cooling_active: list[np.ndarray]) -> list[xr.Dataset | None]:
    """Steady temperature/velocity field of each hall (None where it has no steady state):
    the plan-view model with every rack at its full-speed design airflow (``attrs``
    ``rack_airflow`` says so). A run whose racks follow the fan law or whose recirculation
    is buoyant held another state (:func:`field_differs_from_run`; its field_<hall>.nc at the
    peak sample, :func:`twin.sim.field.peak_sample_fields`, solves the run's own)."""
    from twin import thermal

    airflow = np.broadcast_to(rack_design_airflow_m3_s(scenario, plant), (plant.n_racks,))
    out: list[xr.Dataset | None] = []
    for h, (geom, idx) in enumerate(hall_geometries(scenario, plant)):
        if not cooling_active[h].any():
            out.append(None)
            continue
        f = thermal.steady_field(geom, np.nan_to_num(rack_heat_w[idx]), airflow[idx], cooling_active[h])
        f.attrs["rack_airflow"] = "every rack at its nodes' full-speed design airflow"
        out.append(f)
    return out


def format_power(w: float) -> str:
    """Power with a readable unit: 830 kW, 2.41 MW."""
    if not np.isfinite(w):
        return "n/a"
    return f"{w / 1e6:.2f} MW" if abs(w) >= 1e6 else f"{w / 1e3:.1f} kW"


def _caption(ds: xr.Dataset, i: int) -> str:
    from twin.studies.labels import human

    def g(name):
        return float(ds[name].values[i]) if name in ds else float("nan")

    tokens = (float(ds["tokens_total"].values[i]) if "tokens_total" in ds
              else float(ds["job_tokens"].values[i].sum()) if "job_tokens" in ds else float("nan"))
    inlet = ds["rack_inlet_c"].values[i]
    on = ds["rack_state"].values[i] >= 1
    tmax = float(np.nanmax(inlet[on])) if on.any() else float("nan")
    parts = [f"IT {format_power(g('facility_it_power_w'))} of {format_power(g('power_available_w'))}",
             f"facility {format_power(g('facility_total_power_w'))}",
             f"GPUs {g('gpus_installed'):.0f} installed / {g('gpus_powered'):.0f} powered / "
             f"{g('gpus_healthy'):.0f} healthy",
             f"tokens {human(tokens, 'tokens')}"]
    if np.isfinite(tmax):
        parts.append(f"max inlet {tmax:.1f} °C")
    return " · ".join(parts)


def run_values(results, quantity: str, plant=None) -> np.ndarray:
    """(T, R) values of ``quantity`` over the whole run (for a common colour scale);
    ``plant`` gives the racks' node models (``node_model``)."""
    ds = results.dataset
    rpp = ds["rpp_load_fraction"].values[:, ds["rack_rpp"].values]
    return _rack_quantity(quantity, ds["rack_inlet_c"].values, ds["rack_power_w"].values, rpp,
                          ds["rack_state"].values, None if plant is None else plant.rack_model)


def snapshot_from_results(results, quantity: str = "inlet_temp", time_index: int = -1,
                          field: bool = True, scale: ColorScale | None = None,
                          scenario: Scenario | None = None, plant=None) -> Snapshot:
    """Snapshot of a run at sample ``time_index``; ``scale`` defaults to one fitted to the
    whole run. ``field`` solves the steady hall field for the sampled rack heat."""
    from twin.plant import build_plant

    s = scenario or scenario_of(results)
    p = plant or build_plant(s)
    ds = results.dataset
    i = int(time_index) % ds.sizes["time"]
    state = ds["rack_state"].values[i].astype(int)
    power_w = np.nan_to_num(ds["rack_power_w"].values[i].astype(float))
    rpp = ds["rpp_load_fraction"].values[i][ds["rack_rpp"].values]
    value = _rack_quantity(quantity, ds["rack_inlet_c"].values[i], power_w, rpp, state, p.rack_model)
    if scale is None:
        scale = color_scale(quantity, run_values(results, quantity, p), p.model_names)
    t_s = float((ds["time"].values[i] - ds["time"].values[0]) / np.timedelta64(1, "s"))
    active = cooling_active_at(s, results.events, t_s)
    fields = steady_fields(s, p, power_w, active) if field else []
    when = f"{pd.Timestamp(ds['time'].values[i]):%Y-%m-%d %H:%M} (day {t_s / 86400:.0f})"
    design = any(f is not None for f in fields) and field_differs_from_run(s)
    return Snapshot(scenario=s, rack_xy_m=p.rack_xy_m, rack_intake=p.rack_intake,
                    rack_enclosed=p.rack_enclosed, rack_hall=p.rack_hall, rack_state=state,
                    rack_value=value, rack_heat_w=power_w, scale=scale, cooling_active=active,
                    label=when, caption=_caption(ds, i) + (f" · {FIELD_DESIGN_NOTE}" if design else ""),
                    fields=fields, rack_names=list(p.rack_names), rack_models=list(p.rack_node_model),
                    rack_inlet_c=np.where(state >= 1, ds["rack_inlet_c"].values[i].astype(float), np.nan),
                    field_is_design=design)


def snapshot_from_scenario(scenario: Scenario, quantity: str = "inlet_temp", field: bool = True,
                           rack_heat_w: np.ndarray | None = None, plant=None,
                           installed: np.ndarray | None = None) -> Snapshot:
    """Design-point snapshot of a scenario: every rack position in service at its worst-case
    admission power (or at ``rack_heat_w``), inlets from the steady hall field.

    ``installed`` (R,) bool marks the positions that hold a rack (e.g. a placement
    suggestion); the others are drawn as empty slots and carry no heat (their airflow
    stays in the field, as in the engine's recirculation model)."""
    from twin.plant import build_plant

    p = plant or build_plant(scenario)
    n = p.n_racks
    heat = (np.broadcast_to(rack_design_power_w(scenario, p), (n,)).astype(float) if rack_heat_w is None
            else np.asarray(rack_heat_w, float).reshape(n).copy())
    there = np.ones(n, bool) if installed is None else np.asarray(installed, bool).reshape(n)
    heat[~there] = 0.0
    active = [np.ones(len(h.cooling_units), bool) for h in scenario.site.halls]
    fields = steady_fields(scenario, p, heat, active)
    inlet = np.full(n, np.nan)
    for (_, idx), f in zip(hall_geometries(scenario, p), fields, strict=True):
        if f is not None:
            inlet[idx] = f["rack_inlet_temp"].values
    n_rpp = len(p.rpp_limit_w)
    load = np.bincount(p.rack_rpp, weights=heat, minlength=n_rpp)[:n_rpp] / p.rpp_limit_w
    rpp = load[np.minimum(p.rack_rpp, n_rpp - 1)]
    state = np.where(there, 2, -1)
    value = _rack_quantity(quantity, inlet, heat, rpp, state, p.rack_model)
    total = heat.sum()
    on = heat[there]
    each = (f"at {on.mean() / 1e3:.1f} kW" if on.size and np.ptp(on) < 1.0
            else f"at {on.min() / 1e3:.1f} to {on.max() / 1e3:.1f} kW" if on.size else "at 0.0 kW")
    caption = (f"design point: {int(there.sum())} racks {each} = {format_power(total)} IT; "
               f"first stage {format_power(scenario.site.power.plan[0].it_power_kw * 1e3)}")
    if np.isfinite(inlet[there]).any():
        caption += f" · max inlet {np.nanmax(inlet[there]):.1f} °C"
    return Snapshot(scenario=scenario, rack_xy_m=p.rack_xy_m, rack_intake=p.rack_intake,
                    rack_enclosed=p.rack_enclosed, rack_hall=p.rack_hall, rack_state=state,
                    rack_value=value, rack_heat_w=heat, scale=color_scale(quantity, value, p.model_names),
                    cooling_active=active, label="design point", caption=caption,
                    fields=fields if field else [], rack_names=list(p.rack_names),
                    rack_models=list(p.rack_node_model), rack_inlet_c=np.where(there, inlet, np.nan))


def with_clim(snap: Snapshot, clim: tuple[float, float] | None) -> Snapshot:
    """``snap`` with a fixed colour range for its racks (so two halls or two runs can be
    compared colour for colour); categorical scales (health, ASHRAE) keep theirs."""
    if clim is None:
        return snap
    lo, hi = (float(v) for v in clim)
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise ValueError(f"--clim {lo:g},{hi:g}: expected LOW,HIGH with LOW < HIGH")
    if snap.scale.categories is not None:
        raise ValueError(f"--clim applies to a continuous colour (inlet_temp, power, rpp_load), "
                         f"not to {snap.scale.quantity}")
    from dataclasses import replace
    return replace(snap, scale=replace(snap.scale, clim=(lo, hi)))


def containment_note(snap: Snapshot, threshold_c: float = 3.0) -> str:
    """A sentence explaining why the room air looks hot while the racks breathe cool air,
    when the hottest room air of the slice exceeds the hottest inlet by ``threshold_c``
    [K] and the racks draw from enclosures or a contained aisle; '' otherwise.

    The inlet figure is the caption's "max inlet" (``snap.rack_inlet_c``: the run's inlets
    of its powered racks, or the design point's); the room air is the drawn field. When that
    field is the design-airflow plan view and not the run's state (``snap.field_is_design``),
    the sentence says that the room-air figure comes from that picture."""
    temps = [f["temperature"].values for f in snap.fields if f is not None and "temperature" in f]
    if not temps:
        return ""
    room = float(max(np.nanmax(t) for t in temps))
    if snap.rack_inlet_c is not None:
        inlet = np.asarray(snap.rack_inlet_c, float)
    elif snap.scale.quantity == "inlet_temp":
        inlet = np.asarray(snap.rack_value, float)
    else:   # a snapshot built by hand without inlets: the field's own
        vals = [f["rack_inlet_temp"].values for f in snap.fields if f is not None and "rack_inlet_temp" in f]
        inlet = np.concatenate(vals) if vals else np.array([np.nan])
    on = np.isfinite(inlet)
    if not on.any():
        return ""
    hot_inlet = float(np.max(inlet[on]))
    if room - hot_inlet < threshold_c:
        return ""
    halls = snap.scenario.site.halls
    enclosed = bool(np.any(snap.rack_enclosed))
    contained = [h.containment for h in halls if h.containment != "none"]
    if enclosed:
        how = "through their airflow enclosures, which take supply air from the floor"
    elif contained:
        how = f"from the contained {contained[0].replace('_', ' ')}"
    else:
        how = "from the cold aisle in front of them"
    if snap.field_is_design:
        # the run's inlets beside room air re-solved at full-speed design airflow: say which
        # figure is which (the run's fans may turn slower, leaving hotter exhaust than drawn)
        return (f"Racks breathe {how}: every inlet of the run is at most {hot_inlet:.1f} °C, while "
                f"the room air outside is their exhaust (up to {room:.1f} °C on the slice in the "
                "design-airflow picture drawn, every rack at full-speed airflow).")
    return (f"Racks breathe {how}: every inlet is at most {hot_inlet:.1f} °C, while the room air "
            f"outside (up to {room:.1f} °C on the slice) is their exhaust.")


def start_datetime(scenario: Scenario) -> dt.datetime:
    return dt.datetime.combine(scenario.simulation.start, dt.time())
