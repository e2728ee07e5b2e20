"""The ramp: racks arrive in waves, the staged power plan grows, racks are admitted at
their worst-case draw against every limit, burn in, and join the cluster."""

from __future__ import annotations

import numpy as np

from twin import power
from twin.plant import available_it_w
from twin.sim.component import Component, repeat_record

DAY = 86400.0


class Ramp(Component):
    """Deliveries and power stages at their dates; admission of delivered racks in order
    while their worst-case draw (scaled by ``power.oversubscription``) fits the plan, the
    chain's capacity under its redundancy, and each RPP; shedding when a limit falls."""

    name = "ramp"
    reads = ("rack_delivered", "rack_powered", "rack_ready")
    writes = ("rack_delivered", "rack_powered", "rack_on_since", "rack_ready")
    emits = ("delivery", "power_stage", "power_on", "power_off", "burn_in_done")
    outputs = ("power_available_w", "gpus_installed")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.power_available_w = 0.0
        self._installed: tuple[int, int] | None = None      # (rack_delivered version, GPUs)

    def processes(self):
        yield self._plan()

    def _plan(self):
        p, st, e = self.plant, self.state, self.e
        times = sorted(set(p.plan_s.tolist()) | set(p.rack_delivery_s[np.isfinite(p.rack_delivery_s)].tolist()))
        for t in times:
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            new = (p.rack_delivery_s <= self.env.now) & ~st.rack_delivered
            if new.any():
                st.rack_delivered |= new
                e.log("delivery", f"{int(new.sum())} racks", ", ".join(
                    p.rack_names[i] for i in np.flatnonzero(new)[[0, -1]]))
            level = available_it_w(p, self.env.now)
            if level != self.power_available_w:
                self.power_available_w = level
                e.log("power_stage", "facility", f"{level / 1e3:.0f} kW IT available")
            self.admit()

    def facility_limit_w(self) -> float:
        """IT power the racks may be admitted against [W]: the staged plan, and what the
        chain carries under its redundancy policy (``power.facility_it_capacity_w``)."""
        return min(self.power_available_w, self.e.power.chain_capacity_w)

    def admit(self) -> None:
        """Power on delivered racks, in order, while their worst-case draw fits every limit;
        shed the last racks if a limit fell."""
        p, st, e = self.plant, self.state, self.e
        k = self.s.site.power.oversubscription
        limit = self.facility_limit_w() * k
        wc = e.power.rack_worst_w
        committed = e.power.rack_committed_w(st.rack_powered)
        for r in np.flatnonzero(st.rack_powered)[::-1]:
            if committed <= limit + 1e-6:
                break
            self.power_off_rack(r, "power plan below committed load")
            committed -= float(wc) if np.ndim(wc) == 0 else float(np.asarray(wc)[r])
        admitted = power.racks_admitted(wc, limit, p.rack_rpp, p.rpp_limit_w * k,
                                        candidate=st.rack_delivered, powered=st.rack_powered,
                                        policy="stop")
        turned_on = np.flatnonzero(admitted & ~st.rack_powered)
        st.rack_powered[turned_on] = True
        st.rack_on_since[turned_on] = self.env.now
        committed = e.power.rack_committed_w(st.rack_powered)
        if len(turned_on):
            e.log("power_on", f"{len(turned_on)} racks",
                  f"{committed / 1e3:.0f} of {limit / 1e3:.0f} kW worst case committed")
            self.env.process(self._burn_in(turned_on))

    def power_off_rack(self, r: int, why: str) -> None:
        self.state.rack_powered[r] = False
        self.e.log("power_off", self.plant.rack_names[r], why)
        self.e.jobs.interrupt_nodes(np.flatnonzero(self.plant.node_rack == r), f"rack power off: {why}")

    def _burn_in(self, racks: np.ndarray):
        st = self.state
        days = self.s.ramp.burn_in_days
        todo = racks[~st.rack_ready[racks]]
        if len(todo) == 0:
            return
        if days > 0:
            yield self.env.timeout(days * DAY)
        st.rack_ready[todo] = True
        self.e.log("burn_in_done", f"{len(todo)} racks", f"after {days:g} days")
        self.e.scheduler.schedule()

    def record(self, i: int, rec) -> None:
        rec["power_available_w"][i] = self.power_available_w
        ver = self.state.version("rack_delivered")
        if self._installed is None or self._installed[0] != ver:     # recounted after a delivery
            self._installed = (ver, int(self.plant.rack_gpus[self.state.rack_delivered].sum()))
        rec["gpus_installed"][i] = self._installed[1]

    def record_range(self, i0: int, i1: int, rec) -> None:
        repeat_record(self, i0, i1, rec)        # the plan level and the deliveries only
