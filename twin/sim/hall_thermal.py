"""Hall thermal: each hall's recirculation model (rack heat -> inlet temperatures), cooling
units that fail and come back, and the lumped transient that carries the inlets meanwhile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twin import power, reliability, thermal
from twin.plant import hall_geometries, seconds_since
from twin.sim.component import Component

H = 3600.0


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


class HallThermal(Component):
    """Inlet temperatures from rack heat, one mat-vec per hall; a cooling fault switches
    the hall's recirculation model (re-derived or reused per set of running units) and
    starts the lumped-capacitance transient from the current rack heat."""

    name = "hall_thermal"
    reads = ("node_phase", "node_clock")
    emits = ("cooling_fault", "cooling_restored")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        s, p = self.s, self.plant
        self.rack_airflow_m3_s = np.full(p.n_racks, p.node.airflow_m3_s_at_max * s.hardware.nodes_per_rack)
        self.halls: list[HallModel] = []
        for (geom, idx), hall in zip(hall_geometries(s, p), s.site.halls, strict=True):
            active = np.ones(len(hall.cooling_units), bool)
            model = thermal.inlet_model(geom, self.rack_airflow_m3_s[idx], active)
            self.halls.append(HallModel(idx=idx, geom=geom, units=[c.name for c in hall.cooling_units],
                                        active=active, model=model, models={tuple(active): model}))
            self.state.rack_inlet_c[idx] = model.base_inlet_c

    def processes(self):
        yield self._faults()

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
        hall.active = hall.active.copy()
        hall.active[u] = active
        key = tuple(hall.active)
        if key not in hall.models:
            try:
                hall.models[key] = thermal.inlet_model(hall.geom, self.rack_airflow_m3_s[hall.idx], hall.active)
            except thermal.NoSteadyStateError:
                hall.models[key] = None
        hall.model = hall.models[key]

    def _fault(self, h: int, u: int, dur: float):
        hall = self.halls[h]
        name = hall.units[u]
        before = hall.model
        self.set_unit(h, u, False)
        tr = self._transient(h, before, dur) if before is not None else None
        if tr is not None:
            # the lumped-capacitance transient sets the inlets until the hall settles
            hall.transient = (self.env.now, tr)
        self.e.log("cooling_fault", name, f"for {dur / H:.2f} h; {self.fault_outlook(tr)}")
        yield self.env.timeout(dur)
        self.set_unit(h, u, True)
        if hall.transient is not None and hall.transient[1] is tr:
            hall.transient = None
        self.e.log("cooling_restored", name, "")

    def _transient(self, h: int, before, dur: float):
        """Lumped-capacitance transient of the hall after a cooling fault
        (``thermal.fault_transient``) from the current rack heat and GPU power."""
        hall, p, node, st = self.halls[h], self.plant, self.plant.node, self.state
        heat = self.e.sampler.last_rack_power_w()[hall.idx]
        if heat.sum() <= 0:
            return None
        cap_w = self.e.power.gpu_cap_w
        gpu_w = power.gpu_power_w(st.node_phase, cap_w, gpu_tdp_w=node.gpu_tdp_w,
                                  gpu_idle_w=node.gpu_idle_w, clock_fraction=st.node_clock)
        rack_gpu_w = gpu_w.reshape(p.n_racks, -1).max(axis=1)[hall.idx]
        return thermal.fault_transient(
            before, hall.model, heat, air_volume_m3=thermal.hall_air_volume_m3(hall.geom),
            duration_s=min(dur, 2 * H), gpu_power_w=rack_gpu_w,
            gpu_thermal_resistance_k_per_w=node.gpu_thermal_resistance_k_per_w,
            gpu_slowdown_c=node.gpu_slowdown_c, gpu_shutdown_c=node.gpu_shutdown_c, output_step_s=10.0)

    @staticmethod
    def fault_outlook(tr) -> str:
        """Minutes until the first rack inlet crosses the ASHRAE A1 allowable limit and the
        first GPU reaches its slowdown and shutdown temperatures."""
        if tr is None:
            return "no IT load in the hall"

        def first(x):
            x = np.asarray(x, float)
            return f"{x.min():.1f} min ({int(np.isfinite(x).sum())} racks)" if np.isfinite(x).any() else "never"
        return (f"inlet above {tr.limit_c:g} C: {first(tr.minutes_to_limit)}; GPU slowdown: "
                f"{first(tr.minutes_to_gpu_slowdown)}; GPU shutdown: {first(tr.minutes_to_gpu_shutdown)}")

    def hall_inlets_c(self, hall: HallModel, rack_w: np.ndarray) -> np.ndarray:
        """Inlet temperatures of a hall's racks [degC]: the fault transient while one runs
        (or while no cooling is left), else the steady recirculation model, one mat-vec."""
        if hall.transient is not None:
            t0, res = hall.transient
            if hall.model is None or self.env.now - t0 <= res.time_s[-1]:
                return res.inlet_at(self.env.now - t0)
        if hall.model is None:           # no cooling and no transient (no load at the fault)
            return np.full(len(hall.idx), np.inf)
        return thermal.inlet_temp_c(hall.model, rack_w[hall.idx])

    def inlets_c(self, rack_w: np.ndarray) -> np.ndarray:
        """Inlet temperature of every rack [degC (R,)] for rack heat ``rack_w`` [W (R,)]."""
        inlet_c = np.empty(self.plant.n_racks)
        for hall in self.halls:
            inlet_c[hall.idx] = self.hall_inlets_c(hall, rack_w)
        return inlet_c

    def cache_key(self) -> tuple:
        """What the inlets depend on besides rack heat: the model in force and, while a
        transient runs, the time."""
        return (tuple(id(h.model) for h in self.halls),
                tuple(self.env.now if h.transient else None for h in self.halls))
