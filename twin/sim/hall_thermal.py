"""Hall thermal: each hall's recirculation model (rack heat -> inlet temperatures), cooling
units that fail and come back, and the lumped transient that carries the inlets meanwhile.

Two models, chosen by ``site.cooling_system.model``:

- ``legacy`` (the schema default): fixed rack airflow, unlimited coils, a fault
  transient from the steady state of the moment the unit trips;
- ``physical`` (every shipped scenario): rack airflow from the servers' fan law with the
  recirculation matrix interpolated to it (:class:`twin.thermal.airflow.RecirculationFamily`;
  with ``recirculation: buoyant`` each knot's D comes from the layered Boussinesq field of
  :mod:`twin.thermal.buoyancy`), coils and the
  chilled-water plant with finite capacity (:func:`twin.thermal.capacity.capped_steady_state`),
  and an event-driven hall state (:mod:`twin.thermal.events`) carried from event to event
  and sample to sample while the hall is out of its steady state (a trip, a restart, a
  power transfer, or heat beyond capacity): sub-sample extremes are recorded, the chiller
  restarts after its delay, chilled-water storage buffers, GPUs throttle and shut down.
  The cooling plant's energy follows the CRAH fan laws, the set points and the weather file
  (:func:`twin.power.cooling_plant.cooling_plant_power_w`), through :meth:`HallThermal.plant_power`.
  A utility outage of :mod:`twin.sim.grid` is a power transfer of the plant.

In both models a running rack whose inlet reaches :data:`twin.thermal.SERVER_INLET_SHUTDOWN_C`
shuts itself down (:meth:`HallThermal.protect_racks`). A node that is off (any cause) has its
fans stopped: a rack with every node off draws no air (:meth:`HallThermal.rack_fan_airflow_m3_s`).
"""

from __future__ import annotations

import math
import operator
import pickle
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from twin import power, reliability, thermal
from twin.phases import Phase
from twin.plant import hall_geometries, seconds_since
from twin.power import cooling_plant
from twin.power.node import node_heat_w
from twin.sim.component import Component, repeat_record
from twin.thermal import events as hall_events
from twin.thermal import transient as thermal_transient
from twin.thermal import weather as thermal_weather
from twin.thermal.airflow import (
    RecirculationFamily,
    airflow_change_threshold_m3_s,
    airflow_changed,
    flow_field_airflow_m3_s,
)
from twin.thermal.capacity import capped_steady_state, cooling_margin_w
from twin.thermal.fans import (
    crah_airflow_m3_s,
    crah_fan_power_w,
    fan_design_power_w,
    rack_airflow_from_fans_m3_s,
)
from twin.thermal.properties import ASHRAE_ALLOWABLE_C, ASHRAE_RECOMMENDED_MAX_C
from twin.thermal.transient import WATER_VOLUMETRIC_HEAT_J_M3_K

H = 3600.0
A1_ALLOWABLE_MAX_C = ASHRAE_ALLOWABLE_C["A1"][1]
#: recirculation models and event operators kept per hall (physical model: each airflow
#: state and running-unit set has its own; the oldest go first)
MODEL_CACHE = 24


@dataclass
class HallModel:
    """One hall: its racks, geometry, cooling units and the recirculation model in force."""

    idx: np.ndarray                       # racks of the hall (indices into the plant)
    geom: Any                             # thermal.HallGeometry
    units: list[str]                      # cooling unit names
    active: np.ndarray                    # (U,) bool, units running
    model: Any                            # thermal inlet model, None with no unit running
    models: dict = field(default_factory=dict)   # by the tuple of active flags
    transient: tuple[float, Any] | None = None   # (start [s], fault transient) while one runs
    transient_before: Any = None          # legacy: the steady model the running transient started from
    # --- physical model ---
    first_unit: int = 0                   # index of the hall's first unit among all units
    family: Any = None                    # RecirculationFamily (all units running)
    airflow: np.ndarray | None = None     # (R_h,) rack airflow the models hold for [m3/s]
    masses: Any = None                    # thermal.events.ThermalMasses
    hstate: Any = None                    # thermal.events.HallThermalState while out of steady state
    dynamic_until: float = -np.inf        # integrate the state until then [s]
    unit_load_w: np.ndarray | None = None  # (U,) heat removed by each unit now [W]
    unit_demand_w: np.ndarray | None = None  # (U,) heat each unit would remove at its set point [W]
    peak_inlet_c: np.ndarray | None = None  # (R_h,) hottest inlet since the last sample [degC]
    peak_gpu_c: np.ndarray | None = None    # (R_h,) hottest GPU since the last sample [degC]
    short: bool = False                   # heat beyond the running coils or the plant
    deficit_w: float = 0.0                # by how much [W]
    last_inlet_c: np.ndarray | None = None  # (R_h,) inlets of the carried state [degC]
    pending: bool = False                 # running set changed, model not derived yet (physical)
    ops: dict = field(default_factory=dict)  # event operators by (active flags, airflow key)
    derive: Any = None                    # (airflow, active) -> buoyant inlet model, or None (plan view)
    wake_gen: int = 0                     # trip forecasts made so far: a wake of an older one is stale
    wakes: int = 0                        # trip wakes since the last sample (bounded: _arm_trip_wake)
    #: the last trip forecast that found no trip: (state, model, operator, duration [s], heat,
    #: plant and GPU arguments, its segment), the next _advance's own integration when those match
    forecast: tuple | None = None
    rearm: bool = False                   # a forecast is due once this instant's restores are done
    #: a power transfer's excursion, open from the transfer until the hall settles: (start [s],
    #: cause, the hall's heat then [W]) and every rack's hottest inlet since [degC (R_h,)]
    excursion: tuple | None = None
    excursion_peak_c: np.ndarray | None = None
    #: (R_h,) racks powered at some time of the open excursion (the only ones whose inlet counts)
    excursion_powered: np.ndarray | None = None
    #: racks of the hall shut down by their inlet protection within the open excursion:
    #: (plant rack indices, nodes up in them, GPUs up in them, jobs on them) per shutdown
    excursion_shut: list = field(default_factory=list)


NO_LOAD = "no IT load in the hall"
#: the per-unit outputs of :meth:`HallThermal.finish`, in the order of
#: :meth:`FaultForecast.shortest_minutes`
FORECAST_OUTPUTS = ("cooling_fault_minutes_to_a1", "cooling_fault_minutes_to_gpu_slowdown",
                    "cooling_fault_minutes_to_rack_shutdown")


@dataclass(frozen=True)
class FaultForecast:
    """What a cooling fault will do, forecast at the trip: per rack, minutes [min] from the
    forecast's start until its inlet reaches the ASHRAE A1 allowable limit ``limit_c``, its
    GPU the slowdown and shutdown temperatures, and its inlet the servers' protection
    ``rack_shutdown_c`` (the rack shuts down); inf: not within the forecast. One object
    gives both the ``cooling_fault`` event's text and the data (``cooling_fault_minutes_to_*``
    per unit, ``cooling_fault_min_minutes_to_*`` KPIs), so they cannot disagree."""

    start_s: float                   # [s] since the run's start
    units_running: int | None        # physical model: units running in the forecast (legacy: None)
    limit_c: float
    rack_shutdown_c: float
    to_a1_min: np.ndarray            # (R_h,)
    to_gpu_slowdown_min: np.ndarray
    to_gpu_shutdown_min: np.ndarray
    to_rack_shutdown_min: np.ndarray
    hottest_inlet_c: float | None    # physical model: the hottest inlet of the forecast [degC]

    @classmethod
    def of_segment(cls, seg, start_s: float, *, units_running: int,
                   rack_shutdown_c: float = thermal.SERVER_INLET_SHUTDOWN_C,
                   limit_c: float = hall_events.ASHRAE_ALLOWABLE_C["A1"][1]) -> FaultForecast:
        """From a ``hall_events.advance`` segment started at ``start_s`` [s] (run with
        ``limit_c`` and ``inlet_shutdown_c`` = ``rack_shutdown_c``): its first-crossing times."""
        def minutes(t):
            return (np.asarray(t, float) - start_s) / 60.0
        trip = seg.time_to_inlet_shutdown_s
        return cls(float(start_s), units_running, float(limit_c), float(rack_shutdown_c),
                   minutes(seg.time_to_inlet_limit_s), minutes(seg.time_to_gpu_slowdown_s),
                   minutes(seg.time_to_gpu_shutdown_s),
                   minutes(trip) if trip is not None else np.full(seg.max_inlet_temp_c.size, np.inf),
                   float(seg.max_inlet_temp_c.max()))

    @classmethod
    def of_transient(cls, tr, rack_shutdown_c: float = thermal.SERVER_INLET_SHUTDOWN_C) -> FaultForecast:
        """From the legacy model's ``thermal.fault_transient`` result (times from the trip)."""
        shut_s = tr.rack_shutdown_s if tr.rack_shutdown_s is not None else np.full(tr.minutes_to_limit.size, np.inf)
        return cls(0.0, None, float(tr.limit_c), float(rack_shutdown_c), np.asarray(tr.minutes_to_limit, float),
                   np.asarray(tr.minutes_to_gpu_slowdown, float), np.asarray(tr.minutes_to_gpu_shutdown, float),
                   np.asarray(shut_s, float) / 60.0, None)

    def shortest_minutes(self) -> tuple[float, float, float]:
        """(A1 limit, GPU slowdown, rack shutdown): the first rack's minutes [min], NaN when
        no rack gets there within the forecast."""
        def first(x):
            x = x[np.isfinite(x)]
            return float(x.min()) if x.size else math.nan
        return first(self.to_a1_min), first(self.to_gpu_slowdown_min), first(self.to_rack_shutdown_min)

    def text(self) -> str:
        """The forecast as the ``cooling_fault`` event's detail."""
        def first(x):
            ok = np.isfinite(x)
            return f"{x[ok].min():.1f} min ({int(ok.sum())} racks)" if ok.any() else "never"
        body = (f"inlet above {self.limit_c:g} C: {first(self.to_a1_min)}; GPU slowdown: "
                f"{first(self.to_gpu_slowdown_min)}; GPU shutdown: {first(self.to_gpu_shutdown_min)}; rack "
                f"shutdown ({self.rack_shutdown_c:g} C inlet): {first(self.to_rack_shutdown_min)}")
        if self.units_running is None:
            return body
        return (f"from the hall's state at {self.start_s / H:.2f} h, {self.units_running} units running: {body}; "
                f"hottest inlet {self.hottest_inlet_c:.1f} C")


class HallThermal(Component):
    """Inlet temperatures from rack heat, one mat-vec per hall; a cooling fault switches
    the hall's recirculation model (re-derived or reused per set of running units) and
    starts the lumped-capacitance transient from the current rack heat (legacy), or carries
    the hall's thermal state through the event (physical)."""

    name = "hall_thermal"
    #: the CRAH fan law with its per-hall constants kept (:class:`_HallFans`); False:
    #: :func:`_crah_fans_w` at every new airflow state, the reference (the same numbers)
    fan_law_kept = True
    #: physical model, per sample: a hall's racks indexed by a slice when they are a run (views,
    #: not copies) and the state's inlets read as a plain array (issue 14); False: the racks'
    #: index array and the tracked array, the reference (the same numbers)
    sample_views = True
    #: legacy model, halls that tile the racks in plant order with equal rack and unit counts
    #: (a campus of equal halls): the inlets and the record evaluate the halls together, one
    #: batched product per distinct model (:meth:`_stacked_inlets_c`, :meth:`_record_stacked`;
    #: the same BLAS call and reductions per hall, so the same floats). False: the per-hall
    #: loop, the reference (issue 19)
    halls_stacked = True
    reads = ("node_phase", "node_clock", "rack_on")
    writes = ("rack_thermal_off",)
    emits = ("cooling_fault", "cooling_restored", "cooling_short", "cooling_power_transfer",
             "cooling_restart_excursion", "rack_thermal_shutdown", "rack_thermal_restart")
    outputs = ("cooling_unit_load_w", "cooling_capacity_margin_w", "cooling_unit_margin_w", "cooling_fan_power_w",
               "rack_inlet_peak_c", "rack_gpu_temp_peak_c", "economizer_fraction",
               "cooling_fault_minutes_to_a1", "cooling_fault_minutes_to_gpu_slowdown",
               "cooling_fault_minutes_to_rack_shutdown")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        s, p = self.s, self.plant
        self.cs = s.site.cooling_system
        self.physical = self.cs.model == "physical"
        #: legacy model: per hall, (heat, model, active, load, unit margin, hall margin) of the last
        #: record; reused while the same arrays come back (between events they do)
        self._record_memo: dict[int, tuple] = {}
        #: physical model: per hall, (rack airflow, running units, CRAH fan power [W]) of the last record
        self._fan_memo: dict[int, tuple] = {}
        self._fan_law: dict[int, tuple] = {}     # per hall: its racks as an index
        #: the node fan law's fixed inputs (heat keywords, design heat, full airflow, node racks)
        self._fan_fixed: tuple | None = None
        self._fan_v: np.ndarray | None = None    # every rack's fan airflow of this evaluation [m3/s]
        #: per hall: its racks as a slice when they are a contiguous run (views, not copies)
        self._rack_sel: dict[int, Any] = {}
        #: per hall: (running units, their summed capacity [W]) of the last record
        self._run_cap: dict[int, tuple] = {}
        self._plant_kw: dict[int, dict] = {}     # per hall: the plant's fixed settings
        #: per hall: (the airflow its models hold, the move beyond which it changes [m3/s])
        self._airflow_thr: dict[int, tuple] = {}
        #: per hall: (its running-unit flags, their tuple: the model keys' first part)
        self._active_key: dict[int, tuple] = {}
        #: each hall's share of the chilled-water plant's capacity [W] (inf: unlimited), and
        #: the share the record's hall margin reads (inf also under the legacy model)
        cap_kw = self.cs.plant.capacity_kw
        self._chiller_share_w = np.inf if cap_kw is None else cap_kw * 1e3 / len(s.site.halls)
        self._plant_share_w = self._chiller_share_w if self.physical else np.inf
        # full-speed airflow of every rack: its nodes' catalog airflow x its node count
        self.rack_airflow_m3_s = (p.model_param("airflow_m3_s_at_max")[p.rack_model] * p.rack_nodes).astype(float)
        self.halls: list[HallModel] = []
        first = 0
        #: identical halls (same geometry, rack airflow and running units: a campus of equal
        #: data halls) share one derivation of their recirculation matrix (issue 19)
        derived: dict[tuple, Any] = {}
        for (geom, idx), hall in zip(hall_geometries(s, p), s.site.halls, strict=True):
            if self.physical and self.cs.supply_setpoint_c is not None:
                geom = replace(geom, cooling_supply_temp_c=np.full(geom.n_cooling, self.cs.supply_setpoint_c))
            active = np.ones(len(hall.cooling_units), bool)
            if self.physical:
                derive = self._buoyant_deriver(geom, idx)
                family = RecirculationFamily(geom, self.rack_airflow_m3_s[idx], cooling_active=active,
                                             derive=derive)
                model = family.model(self.rack_airflow_m3_s[idx])
            else:
                family = None
                same = (pickle.dumps(geom), self.rack_airflow_m3_s[idx].tobytes(), active.tobytes())
                if same not in derived:
                    derived[same] = thermal.inlet_model(geom, self.rack_airflow_m3_s[idx], active)
                model = derived[same]
            hm = HallModel(idx=idx, geom=geom, units=[c.name for c in hall.cooling_units],
                           active=active, model=model, models={tuple(active): model}, first_unit=first,
                           family=family, airflow=self.rack_airflow_m3_s[idx].copy(),
                           unit_load_w=np.zeros(len(hall.cooling_units)),
                           derive=derive if self.physical else None)
            if self.physical:
                hm.masses = hall_events.ThermalMasses.of(
                    len(idx), thermal.hall_air_volume_m3(geom), geom.cooling_airflow_m3_s,
                    chilled_water_volume_m3=self.cs.plant.storage_m3 / len(s.site.halls))
            self.halls.append(hm)
            first += len(hall.cooling_units)
            self.state.rack_inlet_c[idx] = model.base_inlet_c
        self.n_units = first
        #: (halls, racks a hall, units a hall) when the legacy halls tile the racks and the
        #: units in order with equal counts, else None (:attr:`halls_stacked`)
        self._tiles = self._tiling()
        #: (the models of the halls, their grouping) of the last stacked evaluation
        self._groups_memo: tuple | None = None
        self.chiller_available_s = -np.inf
        #: (sample, rack heat [W], every hall's rack airflow [m3/s (R_h,)]) of the sample with the
        #: most rack heat so far: the state the peak-sample field (twin.sim.field) is drawn at
        self.peak_airflow: tuple[int, float, list[np.ndarray]] | None = None
        #: samples recorded while the chillers were off (restarting after a power transfer)
        self._chillers_off_samples: list[int] = []
        self.economizer_fraction: np.ndarray | None = None
        #: (time [s], hall, unit, forecast or None) of every cooling-unit fault, as logged
        self.fault_forecasts: list[tuple[float, int, int, FaultForecast | None]] = []

    def processes(self):
        yield self._faults()
        if self.physical:
            for ev in self.cs.events:
                yield self._system_event(ev)

    def fault_times(self) -> list[tuple[float, int, int, float]]:
        """(start [s], hall, unit, duration [s]) of every cooling-unit fault: the scenario's
        dated events and Poisson failures of every unit (``reliability.sample_unit_outages``)."""
        cf, start = self.s.site.cooling_faults, self.s.simulation.start
        out = [(seconds_since(start, ev.time), ev.hall, self.halls[ev.hall].units.index(ev.unit), ev.duration_s)
               for ev in cf.events]
        for h, hall in enumerate(self.halls):
            out += [(t, h, u, dur) for t, u, dur in reliability.sample_unit_outages(
                self.e.rng["cool"], self.e.horizon_s, len(hall.units), cf.unit_failure_rate_per_year,
                cf.repair_h * H)]
        return sorted(out)

    def _faults(self):
        for t, h, u, dur in self.fault_times():
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            self.env.process(self._fault(h, u, dur))

    def set_unit(self, h: int, u: int, active: bool) -> None:
        """Switch a cooling unit; re-derive (or reuse) the hall's recirculation matrix.
        With no unit left running the hall has no steady state: its model is None and the
        fault transient carries the inlet temperatures."""
        hall = self.halls[h]
        if self.physical:
            self._advance(hall)                     # the state up to now, under the old model
            hall.active = hall.active.copy()
            hall.active[u] = active
            hall.pending = True                     # derived when first needed (several units may
            return                                  # switch at one instant)
        hall.active = hall.active.copy()
        hall.active[u] = active
        self._select_model(hall)

    def _resolve(self, hall: HallModel) -> None:
        if hall.pending:
            hall.pending = False
            self._select_model(hall)

    def _select_model(self, hall: HallModel) -> None:
        keyed = self._active_key.get(id(hall))
        if keyed is None or keyed[0] is not hall.active:    # hall.active is replaced on a change
            keyed = self._active_key[id(hall)] = (hall.active, tuple(hall.active))
        key = keyed[1]
        if self.physical:
            assert hall.airflow is not None  # set when the hall is built
            key = key + _airflow_key(hall.airflow)
        if key not in hall.models:
            if self.physical and len(hall.models) >= MODEL_CACHE:
                hall.models.pop(next(iter(hall.models)))    # oldest first: airflow moves on
            if not hall.active.any():
                hall.models[key] = None
            elif self.physical and hall.active.all():
                hall.models[key] = hall.family.model(hall.airflow)
            elif hall.derive is not None:
                try:
                    hall.models[key] = hall.derive(hall.airflow, hall.active)
                except thermal.NoSteadyStateError:
                    hall.models[key] = None
            elif self.physical:
                # the field solver needs air through every rack: a stopped rack passes the
                # others' scale in the derivation, and the model carries its zero airflow
                try:
                    v_field = flow_field_airflow_m3_s(hall.airflow, self.rack_airflow_m3_s[hall.idx])
                    m = thermal.inlet_model(hall.geom, v_field, hall.active)
                    hall.models[key] = m if v_field is hall.airflow else replace(
                        m, rack_airflow_m3_s=np.array(hall.airflow, float))
                except thermal.NoSteadyStateError:
                    hall.models[key] = None
            else:
                try:
                    hall.models[key] = thermal.inlet_model(hall.geom, self.rack_airflow_m3_s[hall.idx], hall.active)
                except thermal.NoSteadyStateError:
                    hall.models[key] = None
        hall.model = hall.models[key]

    def _fault(self, h: int, u: int, dur: float):
        hall = self.halls[h]
        name = hall.units[u]
        if self.physical:
            self._begin_dynamic(hall, dur)
            self.set_unit(h, u, False)
            fc = self._forecast(hall, dur)
            self.fault_forecasts.append((self.env.now, h, u, fc))
            self.e.log("cooling_fault", name, f"for {dur / H:.2f} h; {fc.text() if fc else NO_LOAD}")
            self._arm_trip_wake(hall)
            yield self.env.timeout(dur)
            self._begin_dynamic(hall, 0.0)
            self.set_unit(h, u, True)
            self.e.log("cooling_restored", name, "")
            # forecast once every unit back at this instant is running: the model of a set
            # that lasts no time is never derived (the trips' outlooks derive theirs anyway)
            hall.rearm = True
            yield self.env.timeout(0.0)
            if hall.rearm:
                hall.rearm = False
                self._arm_trip_wake(hall)
            return
        before = hall.model
        if hall.transient is not None and self.env.now - hall.transient[0] <= hall.transient[1].time_s[-1]:
            # a trip while a transient runs starts from the steady state that transient left,
            # never from the steady state of the units still running, which the hall never
            # reached (twelve units tripping at one instant would compound to hundreds of C);
            # the heat stored since the earlier trip is not carried (the physical model does)
            before = hall.transient_before
        self.set_unit(h, u, False)
        tr = self._transient(h, before, dur) if before is not None else None
        if tr is not None:
            # the lumped-capacitance transient sets the inlets until the hall settles
            hall.transient = (self.env.now, tr)
            hall.transient_before = before
        fc = FaultForecast.of_transient(tr, self.cs.server_inlet_shutdown_c) if tr is not None else None
        self.fault_forecasts.append((self.env.now, h, u, fc))
        self.e.log("cooling_fault", name, f"for {dur / H:.2f} h; {fc.text() if fc else NO_LOAD}")
        if tr is not None:
            hall.wakes = 0               # a new transient: its own bound on wakes
            self._arm_transient_wake(hall)
        yield self.env.timeout(dur)
        self.set_unit(h, u, True)
        if hall.transient is not None and hall.transient[1] is tr:
            hall.transient = None
        self.e.log("cooling_restored", name, "")

    def _system_event(self, ev):
        """A dated ``site.cooling_system.events`` entry: a unit trip, or a power transfer
        (CRAH fans stop unless on UPS until the generator picks them up; the chiller restarts
        after ``plant.restart_delay_s``; pumps keep the stored chilled water moving)."""
        t = seconds_since(self.s.simulation.start, ev.time)
        if t > self.env.now:
            yield self.env.timeout(t - self.env.now)
        if ev.kind == "unit_trip":
            u = self.halls[ev.hall].units.index(ev.unit)
            yield from self._fault(ev.hall, u, ev.duration_s)
            return
        yield from self.power_transfer(ev.duration_s, "dated power transfer")

    def power_transfer(self, duration_s: float, cause: str):
        """The cooling plant loses the utility for ``duration_s`` [s] (a dated power transfer
        or a utility outage of :class:`twin.sim.grid.Grid`): the chillers stop and restart
        ``plant.restart_delay_s`` after power is back on the generator or the utility (their
        controls re-run the compressor start sequence and anti-recycle timers: about 30 min in
        reported outages); the CRAH fans stop until the generator picks them up unless they are
        on UPS; pumps on UPS keep the stored chilled water moving, so the coils draw on it
        while the chillers are off. The hall's thermal state is carried through (physical
        model; the legacy model has no plant)."""
        if not self.physical:
            return
        pl = self.cs.plant
        gen_s = self.s.site.power.generator_start_s
        back_s = self.env.now + min(duration_s, gen_s) + pl.restart_delay_s
        self.chiller_available_s = max(self.chiller_available_s, back_s)
        self.e.log("cooling_power_transfer", "plant", f"{cause}: chiller back after "
                   f"{(self.chiller_available_s - self.env.now) / 60:.0f} min; "
                   f"CRAH fans {'on UPS' if pl.fans_on_ups else f'off for {min(duration_s, gen_s):.0f} s'}")
        gen_s = min(duration_s, gen_s)
        for hall in self.halls:
            if hall.excursion is None:
                hall.excursion = (self.env.now, cause, float(self._heat(hall).sum()))
                hall.excursion_peak_c = np.full(len(hall.idx), -np.inf)
                hall.excursion_powered = self.state.rack_on.view(np.ndarray)[hall.idx].copy()
                hall.excursion_shut = []
        if pl.fans_on_ups:
            for hall in self.halls:
                self._begin_dynamic(hall, pl.restart_delay_s)
                self._arm_trip_wake(hall)
            return
        saved = [hall.active.copy() for hall in self.halls]
        for h, hall in enumerate(self.halls):
            self._begin_dynamic(hall, gen_s + pl.restart_delay_s)
            for u in range(len(hall.units)):
                if hall.active[u]:
                    self.set_unit(h, u, False)
            self._arm_trip_wake(hall)
        yield self.env.timeout(gen_s)
        for h, was in enumerate(saved):
            for k in np.flatnonzero(was):
                self.set_unit(h, int(k), True)
            self._arm_trip_wake(self.halls[h])

    # ------------------------------------------------------------------ physical model
    def _buoyant_deriver(self, geom, idx: np.ndarray):
        """``recirculation: buoyant``: a function (rack airflow, running units) -> the inlet
        model of the converged layered Boussinesq field (:func:`twin.thermal.buoyancy.
        buoyant_inlet_model`) on ``buoyant_layers`` layers of cells of at least
        ``buoyant_cell_m``, at the rack heat of that airflow state (the fan law's speed
        fraction of the racks' design heat, airflow / full airflow x design heat). It is called
        once per airflow knot and running-unit set (the family and the model cache keep the
        result). None for the plan-view model.

        The model is then applied linearly to the heat the racks give off (their AC power,
        about 1.8 x the knot's heat at full load). Against the field solved at that heat the
        scaling costs below 0.01 K in the shipped halls and at most 0.3 K in an open hall
        short of supply air (Blue Vela without enclosures at 8 m3/s a CRAH; helper HBZ,
        tests/sim/test_buoyant_heat_scaling.py), so one heat per knot is kept."""
        cs = self.cs
        if not self.physical or cs.recirculation != "buoyant":
            return None
        from twin.thermal.buoyancy import buoyant_inlet_model

        g_b = self.buoyant_geometry(geom)
        node = self.plant.node
        v_full = self.rack_airflow_m3_s[idx]
        heat_full = (node.gpu_count * node.gpu_tdp_w + node.host_active_w) * v_full / node.airflow_m3_s_at_max

        def derive(rack_airflow_m3_s, cooling_active=None):
            # a stopped rack (V = 0) gives off no heat; the field passes the others' scale
            # through it (the solver needs air through every rack), the model carries V = 0
            v = np.asarray(rack_airflow_m3_s, float)
            v_field = flow_field_airflow_m3_s(v, v_full)
            m = buoyant_inlet_model(g_b, heat_full * v / v_full, v_field, cooling_active)
            return m if v_field is v else replace(m, rack_airflow_m3_s=v.copy())
        return derive

    def buoyant_geometry(self, geom):
        """A hall's geometry on the buoyant field's grid: at least ``buoyant_layers`` layers and
        cells of at least ``buoyant_cell_m``."""
        cs = self.cs
        return replace(geom, n_layers=max(int(geom.n_layers), cs.buoyant_layers),
                       cell_m=max(float(geom.cell_m), cs.buoyant_cell_m))

    def _gpu_kwargs(self, hall: HallModel) -> dict:
        p, st = self.plant, self.state
        gpu_w = power.gpu_power_w(st.node_phase, self.e.power.gpu_cap_w, gpu_tdp_w=p.node_param("gpu_tdp_w"),
                                  gpu_idle_w=p.node_param("gpu_idle_w"))
        return {"gpu_power_w": np.maximum.reduceat(gpu_w, p.rack_first_node)[hall.idx],
                "gpu_thermal_resistance_k_per_w": _of_racks(p, "gpu_thermal_resistance_k_per_w", hall.idx),
                "slowdown_c": _of_racks(p, "gpu_slowdown_c", hall.idx),
                "shutdown_c": _of_racks(p, "gpu_shutdown_c", hall.idx),
                "inlet_shutdown_c": self.cs.server_inlet_shutdown_c}

    def _plant_fixed(self, hall: HallModel) -> dict:
        """The plant's settings for ``hall`` that do not change in a run (coil approach,
        chilled-water set point, the hall's share of the chiller capacity), worked out once."""
        fixed = self._plant_kw.get(id(hall))
        if fixed is None:                # the plant's settings and the hall's set points do not change
            pl = self.cs.plant
            chw = float(cooling_plant.chilled_water_supply_c(np.min(hall.geom.cooling_supply_temp_c),
                                                             pl.coil_approach_k))
            fixed = self._plant_kw[id(hall)] = {"coil_approach_k": pl.coil_approach_k,
                                                "chilled_water_setpoint_c": chw,
                                                "chiller_capacity_w": self._chiller_share_w}
        return fixed

    def _plant_kwargs(self, hall: HallModel) -> dict:
        return {**self._plant_fixed(hall), "chiller_available_s": self.chiller_available_s}

    def _heat(self, hall: HallModel) -> np.ndarray:
        return self.e.sampler.last_rack_power_w()[hall.idx] * ~self.state.rack_thermal_off[hall.idx]

    # ------------------------------------------------------------------ rack protection
    def protect_racks(self, inlet_c: np.ndarray) -> None:
        """The servers' own protection, in both cooling models: a running rack whose inlet
        reaches ``site.cooling_system.server_inlet_shutdown_c`` (default
        :data:`twin.thermal.SERVER_INLET_SHUTDOWN_C`, 43 C, below the 45 C ceiling of
        :mod:`twin.invariants`) shuts down; its jobs are interrupted and its power and heat
        go. Called by the sampler with the inlets of every rack [degC (R,)]; both models also
        shut racks between samples: the physical one at the step their inlet crosses the limit,
        the legacy one at the fault transient's ``rack_shutdown_s`` (:meth:`_arm_transient_wake`)."""
        hot = self.state.rack_on.view(np.ndarray) & (np.asarray(inlet_c, float) >= self.cs.server_inlet_shutdown_c)
        if hot.any():
            self._shut_racks(np.flatnonzero(hot), np.asarray(inlet_c, float))

    def _shut_racks(self, racks: np.ndarray, inlet_c: np.ndarray) -> None:
        """Shut ``racks`` down (one ``rack_thermal_shutdown`` event each, with the inlet
        [degC (R,)] that tripped it); operators restart them an hour later (if the room is
        still hot they trip again)."""
        st, p, e = self.state, self.plant, self.e
        for hall in self.halls:
            if hall.excursion is None:
                continue
            mine = np.asarray(racks)[np.isin(racks, hall.idx)]
            if mine.size:                # what the power event costs: kept for its closing event
                nodes = np.flatnonzero(np.isin(p.node_rack, mine) & st.node_up.view(np.ndarray))
                gpus = np.broadcast_to(np.asarray(p.node_param("gpu_count"), float), p.node_rack.shape)
                n_gpus = float(np.sum(gpus[nodes]))
                jobs = np.unique(st.node_job.view(np.ndarray)[nodes])
                hall.excursion_shut.append((mine, int(nodes.size), n_gpus, jobs[jobs >= 0]))
        st.rack_thermal_off[racks] = True
        for r in racks:
            e.log("rack_thermal_shutdown", p.rack_names[r], f"inlet {inlet_c[r]:.1f} C reached the servers' "
                  f"{self.cs.server_inlet_shutdown_c:g} C protection: rack shut down")
        e.jobs.interrupt_nodes(np.flatnonzero(np.isin(p.node_rack, racks)), "rack inlet protection")
        self.env.process(self._rack_restart(racks))

    def _rack_restart(self, racks: np.ndarray):
        yield self.env.timeout(H)      # operators let the room recover, then power the rack up
        # a hall that carries its state (physical model): the racks' heat in it is the last
        # sample's, zero when they were off then (the usual case: a sample lies between the
        # trip and the restart). Then nothing the physics reads changes and the forecast in
        # hand holds, now watching these racks too; else the state is carried to now
        # without their heat and the trip forecast again
        last = self.e.sampler.last_rack_power_w()
        carried, held = [], []
        for hall in self.halls:
            back = np.isin(hall.idx, racks)
            if hall.hstate is None or not back.any():
                continue
            if np.any(last[hall.idx[back]] != 0.0):
                self._advance(hall)
                carried.append(hall)
            else:
                held.append(hall)
        self.state.rack_thermal_off[racks] = False
        self.e.log("rack_thermal_restart", f"{len(racks)} racks", "")
        if not self.physical:
            self._restart_into_transient(racks)
        self.e.scheduler.schedule()
        for hall in carried:
            self._arm_trip_wake(hall)
        for hall in held:
            self._rewatch(hall)

    def _begin_dynamic(self, hall: HallModel, hold_s: float) -> None:
        """Make the hall carry its thermal state from now for ``hold_s`` plus the time the
        IT mass needs to settle (three of its time constants)."""
        assert hall.airflow is not None  # set when the hall is built
        # a stopped rack (no airflow) exchanges nothing with the air and holds no heat: it
        # does not set the time to settle (and its C / (rho cp V) would be infinite)
        draws = hall.airflow > 0.0
        settle = 3.0 * float(np.max(hall.masses.it_heat_capacity_j_k[draws]
                                    / (thermal.AIR_DENSITY_KG_M3 * thermal.AIR_CP_J_KG_K * hall.airflow[draws]),
                                    initial=0.0))
        if hall.hstate is None:
            self._resolve(hall)
            heat = self._heat(hall)
            if hall.model is None:
                return
            chw = self._plant_kwargs(hall)["chilled_water_setpoint_c"]
            cs = capped_steady_state(hall.model, heat)
            hall.hstate = hall_events.hall_steady_state(
                hall.model, heat, chilled_water_temp_c=chw,
                supply_temp_c=cs.supply_temp_c if cs.feasible else None, time_s=self.env.now)
            hall.last_inlet_c = cs.inlet_temp_c
        hall.dynamic_until = max(hall.dynamic_until, self.env.now + hold_s + settle)

    def _close_excursion(self, hall: HallModel) -> None:
        """Log the ``cooling_restart_excursion`` of a power transfer once the hall is back in
        its steady state: how long the chillers were off, how long the hall's share of the
        stored chilled water lasts at the heat of the transfer (V rho cp dT_design / Q, the
        storage's first design rise; beyond it the supply air warms with the water), and the
        hottest inlet since the transfer (sub-sample, of the racks with power, each up to its
        own trip: an unpowered rack's inlet means nothing), so the run says that a peak is a
        power-event transient and not a steady cooling shortfall. When racks shut down on
        their inlet protection meanwhile it also says which (count and the first
        :data:`EXCURSION_RACKS_NAMED`), the nodes, GPUs, GPU-hours and jobs lost
        (:func:`excursion_shutdown_text`, audit HA2 F7): such an event is not benign."""
        assert hall.excursion is not None and hall.excursion_peak_c is not None
        t0, cause, heat_w = hall.excursion
        shut = hall.excursion_shut
        # only a rack with power has an inlet that means anything (as max_rack_inlet_c reads
        # them): racks never powered in the excursion, or not delivered, are left out
        powered = (hall.excursion_powered if hall.excursion_powered is not None
                   else np.ones(len(hall.idx), bool)) | self.state.rack_on.view(np.ndarray)[hall.idx]
        for racks, *_ in shut:
            powered = powered | np.isin(hall.idx, racks)
        peak = np.where(powered, hall.excursion_peak_c, -np.inf)
        hall.excursion, hall.excursion_peak_c, hall.excursion_powered, hall.excursion_shut = None, None, None, []
        pl = self.cs.plant
        off_min = max(self.chiller_available_s - t0, 0.0) / 60.0
        store_j = (pl.storage_m3 / len(self.halls)) * WATER_VOLUMETRIC_HEAT_J_M3_K * pl.chilled_water_rise_k
        lasts = f"about {store_j / heat_w / 60.0:.0f} min at {heat_w / 1e6:.2f} MW" if heat_w > 0 else "no IT heat"
        h = self.halls.index(hall)
        if np.isfinite(peak).any():
            r = int(np.nanargmax(peak))
            hot = (f"hottest inlet {peak[r]:.1f} C ({self.plant.rack_names[hall.idx[r]]}); "
                   f"{int((peak > ASHRAE_RECOMMENDED_MAX_C).sum())} of {int(powered.sum())} powered racks above "
                   f"{ASHRAE_RECOMMENDED_MAX_C:g} C, {int((peak > A1_ALLOWABLE_MAX_C).sum())} above the A1 allowable "
                   f"{A1_ALLOWABLE_MAX_C:g} C")
        else:
            hot = "the hall kept its steady inlets"
        back = f"back to steady after {(self.env.now - t0) / 60.0:.0f} min"
        if not shut:
            verdict = f"{back}: a power-event transient, not a steady cooling shortfall"
        else:
            verdict = f"{back}; {excursion_shutdown_text(shut, self.plant.rack_names, self.cs.server_inlet_shutdown_c)}"
        self.e.log("cooling_restart_excursion", self.s.site.halls[h].name,
                   f"{cause}: chillers off {off_min:.0f} min; {pl.storage_m3:g} m3 of stored "
                   f"chilled water ({store_j / 1e6:.0f} MJ over its {pl.chilled_water_rise_k:g} K rise for this hall) "
                   f"lasts {lasts}; {hot}; {verdict}")

    def _operator(self, hall: HallModel):
        assert hall.airflow is not None  # set when the hall is built
        key = (tuple(hall.active),) + _airflow_key(hall.airflow)
        if key not in hall.ops:
            if len(hall.ops) >= MODEL_CACHE:
                hall.ops.pop(next(iter(hall.ops)))
            hall.ops[key] = hall_events.operator_for(hall.model, hall.masses, hall.airflow)
        return hall.ops[key]

    def _advance(self, hall: HallModel) -> None:
        """Carry the hall's state from its time to now under the model in force."""
        st = hall.hstate
        if st is None or self.env.now <= st.time_s:
            return
        self._resolve(hall)
        heat = self._heat(hall)
        op, pk, gk, dur = self._operator(hall), self._plant_kwargs(hall), self._gpu_kwargs(hall), self.env.now - st.time_s
        fc, hall.forecast = hall.forecast, None
        if (fc is not None and fc[0] is st and fc[1] is hall.model and fc[2] is op and fc[3] == dur
                and np.array_equal(fc[4], heat) and _same_arguments(fc[5], pk) and _same_arguments(fc[6], gk)):
            seg = fc[7]          # the forecast made from this state was this very integration
        else:
            # racks whose GPUs shut down drop their heat within a segment; across segments the
            # engine's node state (failures, repairs) decides, through the rack heat it passes
            seg = hall_events.advance(replace(st, rack_on=np.ones(len(hall.idx), bool)), hall.model, dur, heat,
                                      hall.masses, operator=op, **pk, **gk)
        hall.hstate = seg.state
        hall.unit_load_w = seg.unit_load_w
        hall.unit_demand_w = seg.unit_load_w
        hall.peak_inlet_c = np.fmax(hall.peak_inlet_c, seg.max_inlet_temp_c) if hall.peak_inlet_c is not None \
            else seg.max_inlet_temp_c
        hall.peak_gpu_c = np.fmax(hall.peak_gpu_c, seg.max_gpu_temp_c) if hall.peak_gpu_c is not None \
            else seg.max_gpu_temp_c
        hall.last_inlet_c = seg.inlet_temp_c
        if hall.excursion_peak_c is not None:
            # a rack's inlet counts while it has power (up to its own trip in this segment)
            on = self.state.rack_on.view(np.ndarray)[hall.idx]
            hall.excursion_peak_c = np.fmax(hall.excursion_peak_c, np.where(on, seg.max_inlet_temp_c, -np.inf))
        tripped = hall.idx[~seg.state.rack_on & self.state.rack_on[hall.idx] & (seg.max_inlet_temp_c
                                                                                  >= self.cs.server_inlet_shutdown_c)]
        if tripped.size:                 # shut down by their inlet protection within the segment
            inlet = np.zeros(self.plant.n_racks)
            inlet[hall.idx] = seg.max_inlet_temp_c
            self._shut_racks(tripped, inlet)

    def _arm_trip_wake(self, hall: HallModel, heat: np.ndarray | None = None) -> None:
        """Forecast the hall's next inlet-protection trip and wake the hall then (physical
        model, while it carries its state): ``hall_events.advance`` from the carried state
        with the heat in force [W (R_h,)] (default :meth:`_heat`) up to the next sample, the
        same integration the next :meth:`_advance` makes; the first time a running rack's inlet
        reaches ``server_inlet_shutdown_c`` (``time_to_inlet_shutdown_s``, interpolated within
        the solver's step) is when :meth:`_trip_wake` shuts it, with every running rack that
        crosses within that step. Every call makes the forecasts before it stale (the heat, the
        running units or the racks have changed); the caller calls it again after each such
        change.

        Bounded: each wake that acts shuts at least one running rack of the hall, and a rack
        comes back only by its restart an hour after its trip (or a repair), so between two
        samples a hall has at most R_h (1 + dt / 1 h) acting wakes; past that many (plus a
        margin) the forecast stops until the next sample, which resets the count."""
        hall.wake_gen += 1
        hall.forecast = None
        st = hall.hstate
        if not self.physical or st is None:
            return
        e = self.e
        end = e.sampler.next_sample_s
        if end is None or end <= self.env.now:         # (before the first sample)
            end = (math.floor(self.env.now / e.dt_s) + 1) * e.dt_s
        end = min(end, e.horizon_s)
        if end <= st.time_s or self._wakes_spent(hall):
            return
        heat = self._heat(hall) if heat is None else heat
        running = self.state.rack_on.view(np.ndarray)[hall.idx]
        if not running.any():
            return
        limit = self.cs.server_inlet_shutdown_c
        self._resolve(hall)
        pk = self._plant_kwargs(hall)
        # nothing can reach the limit by the next sample: every node, and the supply air the
        # coils and the chilled water can deliver, warm at most at the racks' source rate
        # (hall_events.adiabatic_temperature_bound_c); the integration is skipped
        supply_top = max(float(np.max(hall.geom.cooling_supply_temp_c)),
                         st.chilled_water_temp_c + float(pk["coil_approach_k"]))
        dur = end - st.time_s
        bound = max(hall_events.adiabatic_temperature_bound_c(st, heat, hall.masses, dur),
                    supply_top + dur * float(np.max(heat / hall.masses.it_heat_capacity_j_k)))
        if bound < limit:
            return
        op, gk = self._operator(hall), self._gpu_kwargs(hall)
        seg = hall_events.advance(replace(st, rack_on=np.ones(len(hall.idx), bool)), hall.model, dur, heat,
                                  hall.masses, operator=op, **pk, **gk, stop_on_trip=running)
        assert seg.time_to_inlet_shutdown_s is not None  # inlet_shutdown_c is passed (finite)
        t_trip = np.where(running, seg.time_to_inlet_shutdown_s, np.inf)
        if not np.isfinite(t_trip).any():
            # integrated to the next sample without a trip: the next _advance's own segment
            # while nothing it reads changes (the same arguments give the same floats)
            hall.forecast = (st, hall.model, op, dur, np.array(heat, float), pk, gk, seg)
            return
        self._wake_at_first(hall, t_trip, float(seg.time_s[1] - seg.time_s[0]) if seg.time_s.size > 1 else 0.0)

    def _wakes_spent(self, hall: HallModel) -> bool:
        """The bound on a hall's trip wakes (:meth:`_arm_trip_wake`): R_h (1 + dt / 1 h) + 8."""
        return hall.wakes > len(hall.idx) * (1 + self.e.dt_s / H) + 8

    def _arm_transient_wake(self, hall: HallModel) -> None:
        """Legacy model: wake the hall when the next running rack's inlet protection cuts
        it out in the fault transient in force (``FaultTransient.rack_shutdown_s`` [s from the
        trip], the solver's event time), so it shuts then and not at the next sample. Called
        at the fault and after each wake (:meth:`_trip_wake`); each call makes the wakes before
        it stale. A running rack the transient cut out before now (restarted since, below the
        limit then: :meth:`_restart_into_transient`) is watched at the transient's next crossing
        of the limit by its inlet (:func:`_next_crossing_s`; the transient holds no heat of it
        after its cut-out, as at the samples). Racks not running now are not watched: one off
        at its time that comes back later is looked at when it restarts. Each acting wake
        shuts at least one rack and comes later than the one before, so its wakes are few; the
        bound of :meth:`_wakes_spent` (reset at each fault) holds too."""
        hall.wake_gen += 1
        if hall.transient is None or self._wakes_spent(hall):
            return
        t0, tr = hall.transient
        if tr.rack_shutdown_s is None or not np.isfinite(tr.rack_shutdown_s).any():
            return
        t_trip = t0 + tr.rack_shutdown_s
        running = self.state.rack_on.view(np.ndarray)[hall.idx]
        past = running & (t_trip < self.env.now)
        if past.any():
            t_trip = np.where(past, t0 + _next_crossing_s(tr.time_s, tr.inlet_temp_c, self.env.now - t0,
                                                          self.cs.server_inlet_shutdown_c), t_trip)
        t_trip = np.where(running, t_trip, np.inf)
        if np.isfinite(t_trip).any():
            # racks the transient cuts out at one instant share its event time: one wake
            self._wake_at_first(hall, t_trip, 0.0)

    def _restart_into_transient(self, racks: np.ndarray) -> None:
        """Legacy model: racks ``racks`` just restarted into a hall whose fault transient
        still sets the inlets (:meth:`hall_inlets_c`) shut again at once if their inlet there
        is at the protection limit (the room has not recovered), and the hall's wakes are
        re-armed with them running. Only halls whose transient cuts racks out (finite
        ``rack_shutdown_s``: else no inlet of it reaches the limit) are looked at."""
        limit = self.cs.server_inlet_shutdown_c
        for hall in self.halls:
            if hall.transient is None:
                continue
            t0, tr = hall.transient
            back = np.isin(hall.idx, racks)
            if (not back.any() or tr.rack_shutdown_s is None or not np.isfinite(tr.rack_shutdown_s).any()
                    or (hall.model is not None and self.env.now - t0 > tr.time_s[-1])):
                continue
            inlet_h = tr.inlet_at(self.env.now - t0)
            hot = back & self.state.rack_on.view(np.ndarray)[hall.idx] & (inlet_h >= limit)
            if hot.any():
                inlet = np.zeros(self.plant.n_racks)
                inlet[hall.idx] = inlet_h
                self._shut_racks(hall.idx[hot], inlet)
            self._arm_transient_wake(hall)

    def _rewatch(self, hall: HallModel) -> None:
        """The running racks changed but nothing the physics reads did (racks back on with
        no heat in the model): the forecast in hand, which found no trip among the racks
        running then, gives every rack's crossing; wake the hall at the first of the racks
        running now. Without such a forecast, forecast again (:meth:`_arm_trip_wake`)."""
        fc = hall.forecast
        if fc is None or fc[0] is not hall.hstate:
            self._arm_trip_wake(hall)
            return
        seg = fc[7]
        running = self.state.rack_on.view(np.ndarray)[hall.idx]
        t_trip = np.where(running, seg.time_to_inlet_shutdown_s, np.inf)
        if not np.isfinite(t_trip).any():
            return                       # no trip by the next sample: the forecast stands
        self._wake_at_first(hall, t_trip, float(seg.time_s[1] - seg.time_s[0]) if seg.time_s.size > 1 else 0.0)

    def _wake_at_first(self, hall: HallModel, t_trip: np.ndarray, step_s: float) -> None:
        """Wake the hall at the first finite crossing of ``t_trip`` [s (R_h,)] (now if it is
        past) for the racks that cross within that step of it."""
        hall.wake_gen += 1
        first = float(t_trip.min())
        racks = np.flatnonzero(t_trip < first + step_s) if step_s > 0 else np.flatnonzero(t_trip <= first)
        self.env.process(self._trip_wake(hall, hall.wake_gen, max(first, self.env.now), racks))

    def _trip_wake(self, hall: HallModel, gen: int, at_s: float, racks: np.ndarray):
        """At the forecast trip ``at_s`` [s]: carry the hall's state there and shut its racks
        ``racks`` (hall-local) that still run, then forecast the next trip. A newer forecast
        (``hall.wake_gen`` moved on) makes this one stale: it does nothing. Legacy model: the
        fault transient in force gives the inlets (:meth:`_arm_transient_wake`)."""
        if at_s > self.env.now:
            yield self.env.timeout(at_s - self.env.now)
        if hall.wake_gen != gen or (hall.hstate is None if self.physical else hall.transient is None):
            return
        hall.wakes += 1
        if self.physical:
            self._advance(hall)      # the state to the trip (racks that crossed before it shut)
        on = self.state.rack_on.view(np.ndarray)[hall.idx[racks]]
        if on.any():
            inlet = np.zeros(self.plant.n_racks)
            inlet[hall.idx] = self.cs.server_inlet_shutdown_c
            if self.physical and hall.last_inlet_c is not None:
                inlet[hall.idx] = np.maximum(hall.last_inlet_c, self.cs.server_inlet_shutdown_c)
            elif not self.physical:
                assert hall.transient is not None  # checked above
                t0, tr = hall.transient
                inlet[hall.idx] = np.maximum(tr.inlet_at(self.env.now - t0), self.cs.server_inlet_shutdown_c)
            self._shut_racks(hall.idx[racks[on]], inlet)
            gen = hall.wake_gen
            yield self.env.timeout(0.0)  # the interrupted jobs leave the racks' nodes first
            if hall.wake_gen != gen:
                return
        if self.physical:
            self._arm_trip_wake(hall)
        else:
            self._arm_transient_wake(hall)

    def _forecast(self, hall: HallModel, dur: float) -> FaultForecast | None:
        """A look ahead from the hall's current state (not a fresh steady state): the fault
        evaluated at its own time with the units now running, over its duration (at most two
        hours), by ``hall_events.advance`` with the heat and GPU power of the moment
        (:class:`FaultForecast`: minutes to the ASHRAE A1 limit, GPU slowdown and shutdown,
        rack shutdown, and the hottest inlet). None with no IT load in the hall."""
        if hall.hstate is None or self._heat(hall).sum() <= 0:
            return None
        self._resolve(hall)
        seg = hall_events.advance(hall.hstate, hall.model, min(dur, 2 * H), self._heat(hall), hall.masses,
                                  operator=self._operator(hall), **self._plant_kwargs(hall),
                                  **self._gpu_kwargs(hall))
        return FaultForecast.of_segment(seg, hall.hstate.time_s, units_running=int(hall.active.sum()),
                                        rack_shutdown_c=self.cs.server_inlet_shutdown_c)

    def finish(self, rec) -> None:
        """Per cooling unit, the shortest forecast at its faults of the minutes to the ASHRAE
        A1 limit, to GPU slowdown and to rack shutdown (NaN: never within a fault, or no
        fault). Units that trip at one instant share the forecast of the last of them, made
        with every one of them off: the forecasts before it (with units still running that
        stop at the same instant) describe states that last no time."""
        out = np.full((3, self.n_units), np.nan)
        last: dict[tuple[float, int], FaultForecast | None] = {}
        units: dict[tuple[float, int], list[int]] = {}
        for t, h, u, fc in self.fault_forecasts:
            last[(t, h)] = fc
            units.setdefault((t, h), []).append(self.halls[h].first_unit + u)
        for key, fc in last.items():
            if fc is not None:
                cols = units[key]
                out[:, cols] = np.fmin(out[:, cols], np.array(fc.shortest_minutes())[:, None])
        for name, row in zip(FORECAST_OUTPUTS, out, strict=True):
            rec.set(name, row)

    def _fan_law_inputs(self, hall: HallModel) -> tuple:
        """(the hall's racks as an index: a slice when they are a contiguous ascending run, so
        a view, else hall.idx,): fixed by the plant, so worked out once per hall."""
        key = id(hall)
        if key not in self._fan_law:
            self._fan_law[key] = (_rack_index(hall.idx) if self.sample_views else hall.idx,)
        return self._fan_law[key]

    def rack_fan_airflow_m3_s(self) -> np.ndarray:
        """Every rack's airflow [m3/s (R,)] with its nodes' fans at the speed the power model
        turns them: per node the fan law (:func:`twin.power.node.node_fan_speed_fraction`,
        through :func:`rack_airflow_from_fans_m3_s`) of the node's GPU + host DC heat
        (:func:`twin.power.node.node_heat_w` of its phase, the GPU cap and its clock: thermal
        clock x power brake) at its rack's inlet, the inputs :func:`twin.power.node.node_power_w`
        reads in the same physics evaluation; V = V_max s per node, summed over the rack.
        The fan law is defined on that DC heat; feeding it the rack's AC power (fans, PSU loss
        and the network share included) turned the fans 17 % faster than the power model bills
        (audit finding 2). The heat the rack puts into the air stays its AC power.
        A node that is off (phase OFF: rack not delivered or powered, unfed, tripped, shut
        down on its inlet, the node failed or in repair) has its fans stopped and moves no
        air, as the power model bills it no fan power: a rack with every node off draws
        none (before helper HOF the fan law's 0.30 minimum speed kept it moving 0.3 of its
        full airflow)."""
        p, st = self.plant, self.state
        fixed = self._fan_fixed
        if fixed is None:
            kw = p.node_power_kwargs()
            heat_kw = {k: kw[k] for k in ("gpu_count", "gpu_tdp_w", "gpu_idle_w", "host_idle_w", "host_active_w")}
            design_w = kw["gpu_count"] * kw["gpu_tdp_w"] + kw["host_active_w"]
            fixed = self._fan_fixed = (heat_kw, design_w, p.node_param("airflow_m3_s_at_max"),
                                       np.asarray(p.node_rack), int(p.n_racks))
        heat_kw, design_w, v_max, node_rack, n_racks = fixed
        clock = st.node_clock.view(np.ndarray) * st.brake_clock
        phase = st.node_phase
        q = node_heat_w(phase, self.e.power.gpu_cap_w, clock_fraction=clock, **heat_kw)
        inlet = st.rack_inlet_c.view(np.ndarray)[node_rack]
        v = rack_airflow_from_fans_m3_s(q, inlet, nodes_per_rack=1, design_heat_w=design_w, airflow_max_m3_s=v_max,
                                        powered=np.asarray(phase) != int(Phase.OFF))
        return np.bincount(node_rack, weights=v, minlength=n_racks)

    def _update_airflow(self, hall: HallModel, rack_w: np.ndarray) -> None:
        if self.cs.rack_airflow != "fan_model":
            return
        if self._fan_v is None:          # once per physics evaluation (inlets_c resets it)
            self._fan_v = self.rack_fan_airflow_m3_s()
        v = self._fan_v[self._fan_law_inputs(hall)[0]]
        thr = self._airflow_thr.get(id(hall))
        if thr is None or thr[0] is not hall.airflow:     # the airflow the models hold changed
            thr = self._airflow_thr[id(hall)] = (hall.airflow, airflow_change_threshold_m3_s(hall.airflow, 0.05))
        if airflow_changed(hall.airflow, v, 0.05, threshold_m3_s=thr[1]):
            if hall.hstate is not None:
                self._advance(hall)
            hall.airflow = v
            self._select_model(hall)

    def _physical_inlets(self, hall: HallModel, rack_w: np.ndarray) -> np.ndarray:
        """Inlets of a hall under the physical model: the capped steady state while the hall
        is in one, else its carried state advanced to now."""
        self._resolve(hall)
        self._update_airflow(hall, rack_w)
        heat = rack_w[self._fan_law_inputs(hall)[0]]      # a view when the racks are a run
        cs = None
        if hall.model is not None:
            cs = capped_steady_state(hall.model, heat, plant_capacity_w=self._plant_fixed(hall)["chiller_capacity_w"])
        feasible = cs is not None and cs.feasible
        if cs is not None and not feasible:
            if not hall.short:
                self.e.log("cooling_short", self.s.site.halls[self.halls.index(hall)].name,
                           f"{'chilled-water plant' if cs.limiting == 'plant' else 'cooling units'} short by "
                           f"{cs.deficit_w / 1e3:.0f} kW: the hall heats up")
            hall.short, hall.deficit_w = True, cs.deficit_w
            self._begin_dynamic(hall, np.inf)
        elif hall.short and feasible:
            hall.short, hall.deficit_w = False, 0.0
            hall.dynamic_until = -np.inf
            self._begin_dynamic(hall, 0.0)
        if hall.hstate is None:
            if feasible:
                assert cs is not None  # feasible implies a capped steady state
                hall.unit_load_w = cs.unit_load_w
                hall.unit_demand_w = cs.unit_demand_w
                inlet = cs.inlet_temp_c
                hall.peak_inlet_c = inlet if hall.peak_inlet_c is None else np.fmax(hall.peak_inlet_c, inlet)
                return inlet
            return np.full(len(hall.idx), np.inf)     # no unit running and no load
        self._advance(hall)
        inlet = (hall.last_inlet_c if hall.last_inlet_c is not None
                 else self.state.rack_inlet_c[hall.idx].copy())
        if self.env.now >= hall.dynamic_until and feasible:
            hall.hstate = None                          # settled: back to the steady model
            if hall.excursion is not None and self.env.now >= self.chiller_available_s:
                self._close_excursion(hall)
        # the heat of this sample holds until the next one: forecast the next trip with it (a
        # settled hall only makes the forecasts before it stale)
        hall.wakes = 0
        self._arm_trip_wake(hall, heat * ~self.state.rack_thermal_off.view(np.ndarray)[hall.idx])
        return inlet

    def plant_power(self, rec, building_heat_w: np.ndarray, t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cooling-plant power [W (T,)] and the outdoor dry bulb [degC (T,)] for the
        building heat of every sample (called by the power chain after the run).

        legacy: ``power.cooling_power_w`` (fans and pumps as a share of heat, COP at a fixed
        chilled water, the sine outdoor temperature). physical: CRAH fans on the affinity
        laws (``cooling_fan_power_w`` recorded at each sample), chilled water from the
        supply set point, the weather file's dry and wet bulb (or the sine), economizer."""
        c = self.s.site.power.cooling
        if not self.physical:
            out_c = self.e.power.outdoor_temp_c(t_s)
            cool = np.asarray(power.cooling_power_w(building_heat_w, out_c, chiller_cop_at_25c=c.chiller_cop_at_25c,
                                                    fan_pump_fraction=c.fan_pump_fraction), float)
            self.economizer_fraction = np.asarray(power.economizer_fraction(out_c), float) * np.ones(len(t_s))
            rec.set("economizer_fraction", self.economizer_fraction)
            return cool, np.asarray(out_c, float)
        pl = self.cs.plant
        if self.cs.weather_file is not None:
            w = thermal_weather.read_weather(self.cs.weather_file)
            out_c, wet_c = thermal_weather.outdoor_conditions(w, t_s, start=self.s.simulation.start)
        else:
            out_c = np.asarray(self.e.power.outdoor_temp_c(t_s), float)
            wet_c = out_c - 5.0 if pl.heat_rejection == "cooling_tower" else None
        setpoint = (self.cs.supply_setpoint_c if self.cs.supply_setpoint_c is not None
                    else min(float(np.min(h.geom.cooling_supply_temp_c)) for h in self.halls))
        heat = np.asarray(building_heat_w, float)
        fans = rec["cooling_fan_power_w"]
        # building heat is IT + RPP + UPS losses (PowerFlow.building_heat_w): the CRAH fans' heat
        # is not in it, and cooling_plant_power_w adds it to the chiller load itself
        r = cooling_plant.cooling_plant_power_w(
            heat, out_c, wet_c, supply_air_setpoint_c=setpoint,
            coil_approach_k=pl.coil_approach_k, chilled_water_rise_k=pl.chilled_water_rise_k,
            heat_rejection=pl.heat_rejection, tower_approach_k=pl.tower_approach_k,
            chiller_cop_at_25c=pl.chiller_cop_at_25c, crah_fan_w=fans, pump_fraction=pl.pump_fraction)
        self.economizer_fraction = np.asarray(r["economizer_fraction"], float) * np.ones(len(t_s))
        total = np.array(r["total"], float) * np.ones(len(t_s))
        off = np.asarray(self._chillers_off_samples, int)
        if off.size:
            # chillers off (restarting after a power transfer): neither they nor their heat
            # rejection draw power; the CRAH fans (as recorded) and the pumps on UPS do
            total[off] = (np.asarray(r["crah_fans"], float) * np.ones(len(t_s)))[off] \
                + (np.asarray(r["pumps"], float) * np.ones(len(t_s)))[off]
            self.economizer_fraction[off] = 0.0
        rec.set("economizer_fraction", self.economizer_fraction)
        return total, np.asarray(out_c, float)

    # ------------------------------------------------------------------ legacy transient
    def _transient(self, h: int, before, dur: float):
        """Lumped-capacitance transient of the hall after a cooling fault
        (``thermal.fault_transient``) from the current rack heat and GPU power; a rack whose
        inlet reaches ``server_inlet_shutdown_c`` stops producing heat within the transient."""
        hall, p, st = self.halls[h], self.plant, self.state
        heat = self.e.sampler.last_rack_power_w()[hall.idx]
        if heat.sum() <= 0:
            return None
        cap_w = self.e.power.gpu_cap_w
        gpu_w = power.gpu_power_w(st.node_phase, cap_w, gpu_tdp_w=p.node_param("gpu_tdp_w"),
                                  gpu_idle_w=p.node_param("gpu_idle_w"), clock_fraction=st.node_clock)
        rack_gpu_w = np.maximum.reduceat(gpu_w, p.rack_first_node)[hall.idx]
        return thermal.fault_transient(
            before, hall.model, heat, air_volume_m3=thermal.hall_air_volume_m3(hall.geom),
            duration_s=min(dur, 2 * H), gpu_power_w=rack_gpu_w,
            gpu_thermal_resistance_k_per_w=_of_racks(p, "gpu_thermal_resistance_k_per_w", hall.idx),
            gpu_slowdown_c=_of_racks(p, "gpu_slowdown_c", hall.idx),
            gpu_shutdown_c=_of_racks(p, "gpu_shutdown_c", hall.idx), output_step_s=10.0,
            rack_shutdown_inlet_c=self.cs.server_inlet_shutdown_c)

    def hall_inlets_c(self, hall: HallModel, rack_w: np.ndarray) -> np.ndarray:
        """Inlet temperatures of a hall's racks [degC]: the fault transient while one runs
        (or while no cooling is left), else the steady recirculation model, one mat-vec."""
        if self.physical:
            return self._physical_inlets(hall, rack_w)
        if hall.transient is not None:
            t0, res = hall.transient
            if hall.model is None or self.env.now - t0 <= res.time_s[-1]:
                return res.inlet_at(self.env.now - t0)
        if hall.model is None:           # no cooling and no transient (no load at the fault)
            return np.full(len(hall.idx), np.inf)
        return thermal.inlet_temp_c(hall.model, rack_w[hall.idx])

    def inlets_c(self, rack_w: np.ndarray) -> np.ndarray:
        """Inlet temperature of every rack [degC (R,)] for rack heat ``rack_w`` [W (R,)]."""
        self._fan_v = None               # the fans' airflow of this evaluation, when first needed
        if self._tiles is not None and self.halls_stacked:
            return self._stacked_inlets_c(rack_w)
        inlet_c = np.empty(self.plant.n_racks)
        for hall in self.halls:
            inlet_c[hall.idx] = self.hall_inlets_c(hall, rack_w)
        return inlet_c

    def _tiling(self) -> tuple[int, int, int] | None:
        """(halls H, racks a hall n, units a hall U) when the model is the legacy one and hall
        h holds racks h n .. (h+1) n - 1 and units h U .. (h+1) U - 1 of the plant, every
        rack in a hall: the racks' and units' arrays are then (H, n) and (H, U) views. Else
        None, and the halls are evaluated one by one."""
        halls = self.halls
        if self.physical or not halls:
            return None
        n, u = len(halls[0].idx), len(halls[0].units)
        if n == 0 or len(halls) * n != self.plant.n_racks or len(halls) * u != self.n_units:
            return None
        for h, hall in enumerate(halls):
            if (len(hall.units) != u or hall.first_unit != h * u or len(hall.idx) != n
                    or not np.array_equal(hall.idx, np.arange(h * n, (h + 1) * n))):
                return None
        return len(halls), n, u

    def _model_groups(self) -> list[tuple[Any, Any]]:
        """The halls grouped by the model in force: (model, halls) with halls a slice over
        all of them when one model holds everywhere (a campus of equal halls between faults),
        else an index array; kept while the same model objects are in force (the list holds
        them, so their ids stay theirs)."""
        models = [hall.model for hall in self.halls]
        memo = self._groups_memo
        if memo is not None and _same_objects(memo[0], models):
            return memo[1]
        by: dict[int, list[int]] = {}
        for h, m in enumerate(models):
            by.setdefault(id(m), []).append(h)
        groups = [(models[hs[0]], slice(None) if len(hs) == len(models) else np.array(hs)) for hs in by.values()]
        self._groups_memo = (models, groups)
        return groups

    def _stacked_inlets_c(self, rack_w: np.ndarray) -> np.ndarray:
        """:meth:`inlets_c` over tiled legacy halls (:meth:`_tiling`): per model in force, the
        halls that hold it and have no transient, evaluated by one ``np.matmul`` of D with
        their (halls, racks, 1) heat, which calls the same BLAS matrix-vector product on each
        hall's heat as ``D @ heat`` does (:func:`twin.thermal.inlet_temp_c`), then adds the
        base inlets; halls with a transient, no model or a truncated sparse D go one by one
        (:meth:`hall_inlets_c`). The same floats."""
        assert self._tiles is not None
        n_h, n, _ = self._tiles
        x = np.asarray(rack_w, float).reshape(n_h, n)
        out = np.empty((n_h, n))
        halls = self.halls
        for model, sel in self._model_groups():
            hs = range(n_h) if isinstance(sel, slice) else sel.tolist()
            one = [h for h in hs if halls[h].transient is not None]
            if model is None or model.recirculation_csr is not None:
                one = list(hs)
            if one:                                  # one by one: the reference
                for h in one:
                    out[h] = self.hall_inlets_c(halls[h], rack_w)
                if len(one) == len(hs):
                    continue
                sel = np.array([h for h in hs if halls[h].transient is None])
            out[sel] = model.base_inlet_c + _matvec_rows(model.recirculation_k_per_w, x[sel])
        return out.reshape(-1)

    def cache_key(self) -> tuple:
        """What the inlets depend on besides rack heat: the model in force and, while a
        transient runs (or a physical hall carries its state), the time."""
        halls = self.halls
        for h in halls:
            if h.pending:
                self._resolve(h)
        return (tuple([id(h.model) for h in halls]),
                tuple([self.env.now if (h.transient or h.hstate is not None) else None for h in halls]))

    # ------------------------------------------------------------------ outputs
    def _hall_fan_power_w(self, h: int, hall: HallModel) -> float:
        """CRAH fan power of hall ``h`` [W] (:func:`_crah_fans_w`), kept while the hall's
        rack airflow (VFD fans only: constant-speed fans ignore it) and running units are the
        same arrays (they are replaced on a change).
        With :attr:`fan_law_kept` the fan law's per-hall constants are worked out once
        (:class:`_HallFans`); else :func:`_crah_fans_w` evaluates it, the reference."""
        assert hall.airflow is not None  # set when the hall is built
        memo = self._fan_memo.get(h)
        # constant-speed fans draw their design power whatever the racks' airflow: a new
        # airflow state keeps the figure (both the kept law and the reference ignore it)
        if memo is None or memo[1] is not hall.active or (memo[0] is not hall.airflow and memo[3].vfd):
            fans, v_c = self.cs.crah_fans, hall.geom.cooling_airflow_m3_s
            law = memo[3] if memo is not None else _HallFans.of(fans, v_c)      # fixed per hall
            memo = (hall.airflow, hall.active, law.power_w(hall.airflow, hall.active) if self.fan_law_kept
                    else _crah_fans_w(fans, hall.airflow, hall.active, v_c, law.design_w), law)
            self._fan_memo[h] = memo
        return memo[2]

    def record(self, i: int, rec) -> None:
        """Unit loads, the capacity margins, CRAH fan power and the sub-sample extremes.

        Two margins [W]. ``cooling_capacity_margin_w``, the hall's: per hall, what its running
        units together (and its share of the chilled-water plant) can remove minus the rack heat,
        min(sum P_cap,running, P_plant / n_halls) - sum Q, lowest over the halls; negative is
        the deficit the hall heats up at (``capped_steady_state(...).deficit_w``, the
        ``cooling_short`` event). ``cooling_unit_margin_w``, information: the lowest spare of a
        running unit, P_cap - demand at its set point; negative means that unit saturates and
        supplies warmer air while its neighbours take the rest (in the legacy model, whose coils
        are unlimited, only a reading)."""
        margin = np.inf                  # hall level
        unit_margin = np.inf             # unit level
        plant_w = self._plant_share_w
        if self.physical and self.env.now < self.chiller_available_s:
            # chillers restarting after a power transfer: the plant removes nothing (the stored
            # chilled water is a buffer of energy, not a rate), so the hall is short by its heat
            plant_w = 0.0
            self._chillers_off_samples.append(i)
        fan_w = 0.0
        heat = self.e.sampler.last_rack_power_w()
        if self.physical:
            total = float(heat.sum())
            if self.peak_airflow is None or total > self.peak_airflow[1]:
                self.peak_airflow = (i, total, [np.array(hall.airflow, float) for hall in self.halls])
        loads = rec["cooling_unit_load_w"]
        # no sub-sample extremes since the last sample (the common case): a rack's peak is its
        # sampled value, fmax(x, x) = x and fmax(NaN, g) = g, so whole rows are written at once
        no_peaks = all(hall.peak_inlet_c is None and hall.peak_gpu_c is None for hall in self.halls)
        if no_peaks and self._tiles is not None and self.halls_stacked:
            self._record_stacked(i, rec, heat)
            return
        for h, hall in enumerate(self.halls):
            racks = self._racks_of(h, hall)
            memo = self._record_memo.get(h)
            if (memo is not None and memo[0] is heat and memo[1] is hall.model and memo[2] is hall.active
                    and memo[3] is hall.unit_load_w and memo[4] is hall.unit_demand_w and memo[8] == plant_w):
                load, unit_m, hall_m = memo[5:8]     # same heat, model, units and loads: same figures
            else:
                cap = hall.geom.cooling_capacity_w
                if not self.physical:
                    load = (hall.model.cooling_load_w(heat[hall.idx]) if hall.model is not None
                            else np.zeros(len(hall.units)))
                    load = np.where(hall.active, load, 0.0)
                    demand = load
                else:
                    assert hall.unit_load_w is not None  # set when the hall is built, then by each update
                    load = hall.unit_load_w
                    demand = hall.unit_demand_w if hall.unit_demand_w is not None else load
                run = self._run_cap.get(h)
                if run is None or run[0] is not hall.active:   # hall_cooling_margin_w, its sum kept
                    run = self._run_cap[h] = (hall.active, float(cap[hall.active].sum()), bool(hall.active.all()))
                spare = cap - demand
                if not run[2]:
                    spare = spare[hall.active]
                unit_m = float(spare.min()) if spare.size else np.inf
                hall_m = cooling_margin_w(run[1], float(heat[racks].sum()), plant_w)    # np.sum's reduction
                self._record_memo[h] = (heat, hall.model, hall.active, hall.unit_load_w, hall.unit_demand_w,
                                        load, unit_m, hall_m, plant_w)
            loads[i, hall.first_unit:hall.first_unit + len(hall.units)] = load
            unit_margin = min(unit_margin, unit_m)
            margin = min(margin, hall_m)
            if self.physical:
                fan_w += self._hall_fan_power_w(h, hall)
            if no_peaks:
                continue
            # fmax(x, x) = x and fmax(NaN, g) = g: without a peak the sampled row is the peak
            inlet = (self.state.rack_inlet_c.view(np.ndarray) if self.sample_views      # (plain: no wrapping)
                     else self.state.rack_inlet_c)[racks]
            rec["rack_inlet_peak_c"][i, racks] = (np.fmax(hall.peak_inlet_c, inlet) if hall.peak_inlet_c is not None
                                                  else inlet)
            gpu = rec["rack_gpu_temp_max_c"][i, racks]
            rec["rack_gpu_temp_peak_c"][i, racks] = np.fmax(hall.peak_gpu_c, gpu) if hall.peak_gpu_c is not None else gpu
            hall.peak_inlet_c = None
            hall.peak_gpu_c = None
        if no_peaks:
            rec["rack_inlet_peak_c"][i] = self.state.rack_inlet_c
            rec["rack_gpu_temp_peak_c"][i] = rec["rack_gpu_temp_max_c"][i]
        rec["cooling_capacity_margin_w"][i] = margin if math.isfinite(margin) else np.nan
        rec["cooling_unit_margin_w"][i] = unit_margin if math.isfinite(unit_margin) else np.nan
        rec["cooling_fan_power_w"][i] = fan_w

    def _record_stacked(self, i: int, rec, heat: np.ndarray) -> None:
        """:meth:`record` of tiled legacy halls (:meth:`_tiling`) without sub-sample extremes,
        the halls together: per model in force, the unit loads of its halls by one
        ``np.matmul`` of the heat shares with their (halls, racks, 1) heat (the same BLAS
        product per hall as :meth:`InletModel.cooling_load_w`), the lowest running unit's
        spare per hall as a row minimum with stopped units at +inf, each hall's heat as a row
        sum (numpy's pairwise sum over the same n elements) and the margins' minimum over the
        halls with Python's ``min`` from +inf, as the loop takes it. The running units'
        summed capacity is the loop's, per hall, kept while the running sets are the same
        arrays. Kept whole while the same heat, models and running units come back (in
        ``_record_memo[-1]``)."""
        assert self._tiles is not None
        n_h, n, n_u = self._tiles
        halls = self.halls
        actives = [hall.active for hall in halls]
        models = [hall.model for hall in halls]
        memo = self._record_memo.get(-1)
        if not (memo is not None and memo[0] is heat and _same_objects(memo[1], models)
                and _same_objects(memo[2], actives)):
            run = self._run_cap.get(-1)
            if run is None or not _same_objects(run[0], actives):
                cap = np.array([hall.geom.cooling_capacity_w for hall in halls], float).reshape(n_h, n_u)
                on = np.array(actives, bool).reshape(n_h, n_u)
                run_w = np.array([float(cap[h][on[h]].sum()) for h in range(n_h)])
                run = self._run_cap[-1] = (actives, on, cap, run_w)
            _, on, cap, run_w = run
            x = np.asarray(heat, float).reshape(n_h, n)
            load = np.empty((n_h, n_u))
            for model, sel in self._model_groups():
                if model is None:
                    load[sel] = 0.0
                else:
                    load[sel] = model.cooling_base_w + _matvec_rows(model.cooling_heat_share, x[sel])
            load = np.where(on, load, 0.0)
            unit_m = np.where(on, cap - load, np.inf).min(axis=1)
            hall_m = np.minimum(run_w, float(self._plant_share_w)) - _row_sums(x)
            memo = self._record_memo[-1] = (heat, models, actives, load.reshape(-1),
                                            min([np.inf, *unit_m.tolist()]), min([np.inf, *hall_m.tolist()]))
        rec["cooling_unit_load_w"][i] = memo[3]
        rec["rack_inlet_peak_c"][i] = self.state.rack_inlet_c
        rec["rack_gpu_temp_peak_c"][i] = rec["rack_gpu_temp_max_c"][i]
        margin, unit_margin = memo[5], memo[4]
        rec["cooling_capacity_margin_w"][i] = margin if math.isfinite(margin) else np.nan
        rec["cooling_unit_margin_w"][i] = unit_margin if math.isfinite(unit_margin) else np.nan
        rec["cooling_fan_power_w"][i] = 0.0

    def _racks_of(self, h: int, hall: HallModel):
        """Hall ``h``'s racks as an index: a slice when they are a contiguous ascending run
        (one hall, or halls in plant order), else its index array; the same elements."""
        sel = self._rack_sel.get(h)
        if sel is None:
            idx = hall.idx
            run = idx.size > 0 and bool(np.all(np.diff(idx) == 1))
            sel = self._rack_sel[h] = slice(int(idx[0]), int(idx[-1]) + 1) if run else idx
        return sel

    def record_range(self, i0: int, i1: int, rec) -> None:
        """A quiet stretch (no event, no physics call since the last sample, so no sub-sample
        extreme): the loads, margins, fan power and peak rows of sample ``i0`` hold for
        every sample of it (written by H3 for the sampler's fill, issue 19)."""
        repeat_record(self, i0, i1, rec)


@dataclass(frozen=True, eq=False)
class _HallFans:
    """A hall's CRAH fan law with its constants worked out once (:func:`_crah_fans_w`'s
    operations on the same numbers: the unit shares, the minimum-speed floor, the design
    power and the system-curve terms): the fan power of a new airflow state is a few
    operations on the units' arrays (issue 19)."""

    coef: float                  # airflow_per_rack_airflow [-]
    v_c: np.ndarray              # (U,) design airflow [m3/s]
    v_sum: float                 # its sum [m3/s]
    floor: np.ndarray            # (U,) min_speed_fraction x design airflow [m3/s]
    design_w: np.ndarray         # (U,) design power [W]
    vfd: bool
    f_s: float                   # static-pressure share of the design pressure [-]
    constant_w: np.ndarray       # (U,) constant-speed power [W]

    @classmethod
    def of(cls, fans, v_c: np.ndarray) -> _HallFans:
        v_c = np.asarray(v_c, float)
        design_w = fan_design_power_w(v_c, fans.design_pressure_pa, fans.fan_efficiency)
        if fans.control not in ("vfd", "constant"):
            raise ValueError(f"fan control must be 'constant' or 'vfd', got {fans.control!r}")
        return cls(fans.airflow_per_rack_airflow, v_c, v_c.sum(), fans.min_speed_fraction * v_c, design_w,
                   fans.control == "vfd", float(fans.static_pressure_fraction), np.where(v_c > 0, design_w, 0.0))

    def power_w(self, airflow_m3_s: np.ndarray, active: np.ndarray) -> float:
        """:func:`_crah_fans_w` of rack airflow (R,) [m3/s] and running units (U,) [W]."""
        if self.vfd:
            need = self.coef * airflow_m3_s.sum() * self.v_c / self.v_sum
            s = np.minimum(np.maximum(need, self.floor), self.v_c) / self.v_c
            p = self.design_w * s * (self.f_s + (1.0 - self.f_s) * s**2)
        else:
            p = self.constant_w
        return float(np.sum(p if active.all() else np.where(active, p, 0.0)))


def _crah_fans_w(fans, airflow_m3_s: np.ndarray, active: np.ndarray, v_c: np.ndarray, design_power_w=None) -> float:
    """CRAH fan power of a hall [W]: the running units' fans at the airflow the racks need
    (``airflow_per_rack_airflow`` x the racks' airflow, shared by design airflow).
    ``design_power_w``: the units' design-point power if already known (see
    :func:`twin.thermal.fans.crah_fan_power_w`)."""
    need = fans.airflow_per_rack_airflow * airflow_m3_s.sum() * v_c / v_c.sum()
    flow = crah_airflow_m3_s(need, v_c, control=fans.control, min_speed_fraction=fans.min_speed_fraction)
    return float(np.sum(np.where(active, crah_fan_power_w(
        flow, v_c, fans.design_pressure_pa, fans.fan_efficiency, control=fans.control,
        static_pressure_fraction=fans.static_pressure_fraction, design_power_w=design_power_w), 0.0)))


#: racks a ``cooling_restart_excursion`` event names before "and N more"
EXCURSION_RACKS_NAMED = 5


def excursion_shutdown_text(shut: list, rack_names, shutdown_c: float, restart_h: float = H / 3600.0) -> str:
    """What the racks a power event shut down cost, for the ``cooling_restart_excursion``
    event: shut is a list of (plant rack indices, nodes up, GPUs up, job ids) per shutdown
    (:meth:`HallThermal._shut_racks`); each rack stays off ``restart_h`` [h] until operators
    restart it, so the GPU-hours lost are sum(GPUs up) x restart_h (a lower bound: a rack that
    trips again, and the work the jobs lose back to their checkpoints, are not in it)."""
    racks = np.concatenate([r for r, *_ in shut])
    nodes = sum(n for _, n, _, _ in shut)
    gpus = sum(g for _, _, g, _ in shut)
    jobs = np.unique(np.concatenate([np.asarray(j, int) for *_, j in shut]))
    names = [str(rack_names[r]) for r in racks[:EXCURSION_RACKS_NAMED]]
    more = f" and {racks.size - len(names)} more" if racks.size > len(names) else ""
    return (f"{racks.size} racks shut down on their {shutdown_c:g} C inlet protection ({', '.join(names)}{more}): "
            f"{nodes} nodes, {gpus:,.0f} GPUs off for {restart_h:g} h until restarted, {gpus * restart_h:,.0f} "
            f"GPU-h lost and {jobs.size} jobs interrupted: the stored chilled water did not carry the hall "
            f"through the chiller restart (a power-event transient, not a steady cooling shortfall, but one that "
            f"cost work)")


def _airflow_key(airflow_m3_s: np.ndarray) -> tuple:
    """The part of a physical hall's model and operator keys that its rack airflow sets: the
    total [m3/s] (rounded) and, when some rack draws no air, which racks do (two states of
    one total with different racks stopped hold different zero airflows)."""
    total = round(float(airflow_m3_s.sum()), 6)
    draws = airflow_m3_s > 0.0
    return (total,) if draws.all() else (total, draws.tobytes())


def _next_crossing_s(time_s: np.ndarray, inlet_c: np.ndarray, after_s: float, limit_c: float) -> np.ndarray:
    """Per rack, the first time [s] after ``after_s`` at which the trajectory ``inlet_c``
    [degC (K, R)] sampled at ``time_s`` [s (K,)] reaches ``limit_c`` (linear between samples,
    as ``FaultTransient.inlet_at``; ``after_s`` if it is there already); inf if never."""
    i0 = int(np.searchsorted(time_s, after_s, side="right"))
    return np.maximum(thermal_transient.first_crossing_s(time_s, inlet_c, limit_c, start=i0), after_s)


def _rack_index(idx: np.ndarray):
    """Racks ``idx`` as an index: a slice when they are a contiguous ascending run (indexing
    gives a view, not a copy), else ``idx``; the same elements either way."""
    if idx.size > 0 and bool(np.all(np.diff(idx) == 1)):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _same_arguments(a: dict, b: dict) -> bool:
    """The two keyword sets hold equal values (arrays element by element, exactly)."""
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _same_objects(a: list, b: list) -> bool:
    """The two lists hold the same objects in the same order (identity, as ``all(x is y for
    ...)`` over equal lengths; a length mismatch is False): ``operator.is_`` mapped in C,
    the check the per-sample paths make over every hall (speed only, issue 19)."""
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _matvec_rows(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``m @ x[h]`` for every row h of ``x`` (H, n), as (H, k): ``np.matmul`` of ``m`` (k, n)
    with the (H, n, 1) vectors, which calls the same BLAS matrix-vector product on each row
    as ``m @ x[h]`` does (not a matrix-matrix product, whose sums run in another order)."""
    return np.matmul(m, x[:, :, None])[:, :, 0]


def _row_sums(x: np.ndarray) -> np.ndarray:
    """Sum of each row of ``x`` (H, n): numpy's pairwise sum over each row's n elements, the
    same as ``np.sum`` of that row alone."""
    return x.sum(axis=1)


def _of_racks(plant, what, idx: np.ndarray):
    """A node-model quantity for the racks ``idx``: a catalog field name or an (M,) array
    per model; one float when those racks' models agree on it, else an array."""
    from twin.plant import uniform
    per_model = plant.model_param(what) if isinstance(what, str) else np.asarray(what, float)
    return uniform(per_model[plant.rack_model[idx]])
