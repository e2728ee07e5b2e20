"""Sub-second swings and branch circuits: the meter ramp of synchronous jobs (with the
site's battery and GPU power floor) and each rack PDU cord's load, normal and on A/B
failover.

The hourly sampler cannot see a swing that lasts a second, so after the run this
component evaluates, for every job that trained, the 1-s meter power of its nodes moving
together through its steps, a checkpoint and a restart (:func:`twin.power.chain.swing_report`,
with the job's last step estimate and the run's typical inlet temperature), and the
mitigations of ``site.power.chain`` (battery, GPU power floor) with their energy cost.
At every sample it checks each powered rack's cords against the chain's branch circuits
(:mod:`twin.power.branch`); a rack whose remaining cord would be overloaded if its partner
were lost is logged once (``branch_failover_overload``). During a feed loss the cords on the
lost feed carry nothing and the live ones the whole rack, in both fractions.
"""

from __future__ import annotations

import math

import numpy as np

from twin import power, storage
from twin.power.chain import swing_report
from twin.power.electrical import breaker_continuous_limit_w
from twin.sim.component import Component
from twin.sim.state import RackState


class Swing(Component):
    name = "swing"
    reads = ("feed_up",)
    writes = ()
    emits = ("branch_failover_overload",)
    outputs = ("branch_load_fraction_max", "failover_branch_load_fraction_max", "job_meter_ramp_kw_per_s",
               "job_meter_ramp_unmitigated_kw_per_s", "job_swing_mitigation_kwh_per_h")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        chain = self.s.site.power.chain
        br = chain.branch if chain is not None else None
        self.cord_limit_w = None
        if br is not None:
            self.cords = br.cords_per_rack
            self.cord_limit_w = float(breaker_continuous_limit_w(br.breaker_a, br.voltage_v, br.phases,
                                                                 br.rated_100pct, br.power_factor))
        self._overloaded = np.zeros(self.plant.n_racks, dtype=bool)
        self._cache: dict = {}

    def record(self, i: int, rec) -> None:
        if self.cord_limit_w is None:
            rec["branch_load_fraction_max"][i] = np.nan
            rec["failover_branch_load_fraction_max"][i] = np.nan
            return
        p = rec["rack_power_w"][i]
        top = float(p.max()) if p.size else 0.0          # an unpowered rack draws nothing
        # during a feed loss the cords on the lost feed carry nothing and the live ones the
        # whole rack (cord i on feed i mod F, as the PSUs: power.psus_without_input)
        up = self.state.feed_up
        dark = 0 if up.all() else power.psus_without_input(self.cords, up)
        now = max(self.cords - dark, 1)
        live = max(now - 1, 1)
        rec["branch_load_fraction_max"][i] = top / now / self.cord_limit_w
        rec["failover_branch_load_fraction_max"][i] = top / live / self.cord_limit_w
        if top / live <= self.cord_limit_w:              # the common case: nothing to log
            return
        p = np.where(RackState.powered(rec["rack_state"][i]), p.astype(float), 0.0)
        fail = p / live / self.cord_limit_w
        new = (fail > 1.0) & ~self._overloaded
        why = "if its partner is lost" if dark == 0 else "with its partner's feed lost"
        for r in np.flatnonzero(new):
            self.e.log("branch_failover_overload", self.plant.rack_names[r],
                       f"{p[r] / 1e3:.1f} kW on one cord of {self.cord_limit_w / 1e3:.1f} kW continuous "
                       f"({fail[r]:.2f} x) {why}")
        self._overloaded |= new

    def _typical_inlet_c(self, rec) -> float:
        if rec.agg is not None:                # outputs.rack_series below full
            med = rec.agg.median_powered_inlet_c()
            return med if np.isfinite(med) else 25.0
        on = RackState.powered(rec["rack_state"])
        vals = rec["rack_inlet_c"][on]
        return float(np.median(vals)) if vals.size else 25.0

    def finish(self, rec) -> None:
        n = len(self.e.jobs)
        ramp = np.full(n, np.nan)
        ramp0 = np.full(n, np.nan)
        cost = np.full(n, np.nan)
        inlet = None
        jobs = self.e.jobs
        for k, job in enumerate(jobs):
            if math.isnan(job.first_start_s) or getattr(job, "step", None) is None:
                continue
            if inlet is None:
                inlet = round(self._typical_inlet_c(rec), 1)
            spec, step = job.spec, job.step
            if not (math.isfinite(step.step_time_s) and step.step_time_s > 0):
                continue
            b = step.breakdown
            exposed = sum(b.get(x, 0.0) for x in ("tp_comm_exposed", "cp_comm_exposed", "pp_comm_exposed",
                                                  "dp_comm_exposed", "pipeline_bubble", "stragglers"))
            exposed = min(exposed, 0.9 * step.step_time_s)
            ckpt = float(storage.checkpoint_write_s(job.checkpoint_bytes, jobs.storage_write_gb_s))
            restart = spec.restart_s + float(storage.checkpoint_read_s(job.checkpoint_bytes, jobs.storage_read_gb_s))
            model = self.plant.model_names[jobs.model_of(job)]       # the job's nodes' model
            key = (spec.nodes, round(step.step_time_s, 3), round(exposed, 3), round(ckpt, 2), round(restart, 1),
                   model)
            if key not in self._cache:
                r = swing_report(self.s, nodes=spec.nodes, step_s=step.step_time_s, exposed_s=exposed,
                                 checkpoint_s=ckpt, restart_s=restart, inlet_c=inlet, node_model=model)
                self._cache[key] = (r["mitigated"]["peak_meter_ramp_kw_per_s"], r["peak_meter_ramp_kw_per_s"],
                                    r["mitigated"]["energy_cost_kwh"] / (r["window_s"] / 3600.0))
            ramp[k], ramp0[k], cost[k] = self._cache[key]
        rec.set("job_meter_ramp_kw_per_s", ramp)
        rec.set("job_meter_ramp_unmitigated_kw_per_s", ramp0)
        rec.set("job_swing_mitigation_kwh_per_h", cost)
