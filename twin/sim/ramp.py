"""The ramp: racks arrive in waves, the staged power plan grows, racks are admitted at
their worst-case draw against every limit, burn in, and join the cluster."""

from __future__ import annotations

import numpy as np

from twin.plant import available_it_w
from twin.sim.component import Component, repeat_record

DAY = 86400.0


class Ramp(Component):
    """Deliveries and power stages at their dates; admission of delivered racks in order
    while their worst-case draw (scaled by ``power.oversubscription``) fits the plan, the
    chain's capacity under its redundancy, each feed path (its share of the IT and, where
    the chain says so, of the cooling: ``PowerChain.feed_it_limit_w``), each RPP and the
    rack's branch circuits; shedding when a limit falls. Delivered racks a limit keeps dark
    are logged (``power_held``, naming the limit), as is the limit a stage is admitted
    against when the chain's is below the plan's. While a feed is lost no rack is powered on
    (``power_held`` names the feed; they are admitted when it is restored)."""

    name = "ramp"
    reads = ("rack_delivered", "rack_powered", "rack_ready", "feed_up")
    writes = ("rack_delivered", "rack_powered", "rack_on_since", "rack_ready")
    emits = ("delivery", "power_stage", "power_on", "power_off", "burn_in_done", "power_held")
    outputs = ("power_available_w", "gpus_installed")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.power_available_w = 0.0
        self._installed: tuple[int, int] | None = None      # (rack_delivered version, GPUs)
        self._held: tuple[int, str] | None = None            # the last power_held logged

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
                # the limit admission applies, when the chain's is below the plan's
                name, chain_w = e.power.binding_limit()
                k = self.s.site.power.oversubscription
                e.log("power_stage", "facility", f"{level / 1e3:.0f} kW IT available" + (
                    f"; racks admitted against {chain_w * k / 1e3:.0f} kW, the limit of {name}"
                    + (f" x oversubscription {k:g}" if k != 1 else "") if chain_w < level else ""))
            self.admit()

    def facility_limit_w(self) -> float:
        """IT power the racks may be admitted against [W]: the staged plan, what the chain
        carries under its redundancy policy (``power.facility_it_capacity_w``), and each feed
        path's worst-case IT limit (``PowerChain.feed_it_limit_w``: the equal split over the
        feeds makes a feed's limit a limit on the sum), both with the UPS in its mode now
        (the chain's dated stages may bypass it part-way, lifting its limit: the power chain
        admits again then)."""
        return min(self.power_available_w, self.e.power.chain_capacity_w)

    def admit(self) -> None:
        """Power on delivered racks, in order, while their worst-case draw fits every limit;
        shed the last racks if a limit fell."""
        st, e = self.state, self.e
        k = self.s.site.power.oversubscription
        limit = self.facility_limit_w() * k
        wc = e.power.rack_worst_w
        committed = e.power.rack_committed_w(st.rack_powered)
        for r in np.flatnonzero(st.rack_powered)[::-1]:
            if committed <= limit + 1e-6:
                break
            self.power_off_rack(r, "power plan below committed load")
            committed -= float(wc) if np.ndim(wc) == 0 else float(np.asarray(wc)[r])
        # a rack whose worst case its branch circuits cannot carry is never a candidate
        fits_branch = np.asarray(wc) <= e.power.branch_rack_limit_w * k * (1 + 1e-12)
        # the power chain admits: site.power.rpp's panels and, by stage, the chain's RPP pairs
        admitted = e.power.racks_admitted(limit, k, candidate=st.rack_delivered & fits_branch,
                                          powered=st.rack_powered)
        turned_on = np.flatnonzero(admitted & ~st.rack_powered)
        if len(turned_on) and not st.feed_up.all():
            # a feed is lost: the limits above hold with every feed live, and the survivor was
            # judged (Grid._feed_outage) on the load of the loss; no new load goes onto it, the
            # racks wait for the feed (Grid admits again when it is restored)
            self._log_held(limit, k, fits_branch, feed_hold=len(turned_on))
            return
        st.rack_powered[turned_on] = True
        st.rack_on_since[turned_on] = self.env.now
        committed = e.power.rack_committed_w(st.rack_powered)
        if len(turned_on):
            e.log("power_on", f"{len(turned_on)} racks",
                  f"{committed / 1e3:.0f} of {limit / 1e3:.0f} kW worst case committed")
            self.env.process(self._burn_in(turned_on))
        self._log_held(limit, k, fits_branch)

    def _log_held(self, limit_w: float, k: float, fits_branch, feed_hold: int = 0) -> None:
        """Log ``power_held`` when delivered racks stay dark, naming the limit that holds the
        first of them (its branch circuits, the facility limit, or its RPP), or the lost feed
        when ``feed_hold`` racks that fit every limit wait for it; once per change."""
        st, e = self.state, self.e
        held = np.flatnonzero(st.rack_delivered & ~st.rack_powered)
        if len(held) == 0:
            self._held = None
            return
        r = int(held[0])
        wc = e.power.rack_worst_w
        w = float(wc) if np.ndim(wc) == 0 else float(np.asarray(wc)[r])
        committed = e.power.rack_committed_w(st.rack_powered)
        if feed_hold:
            lost = [f.name for f, up in zip(self.s.site.power.feeds, st.feed_up, strict=True) if not up]
            why = (f"feed {', '.join(lost)} lost: {feed_hold} racks that fit every limit wait until it is "
                   f"restored (the limits hold with every feed live; no new load on the surviving feed)")
        elif not bool(np.broadcast_to(fits_branch, st.rack_delivered.shape)[r]):
            why = (f"one rack's worst case {w / 1e3:.1f} kW exceeds its branch circuits' "
                   f"{e.power.branch_rack_limit_w * k / 1e3:.1f} kW (site.power.chain.branch)")
        elif committed + w > limit_w * (1 + 1e-12):
            plan = self.power_available_w * k
            name, chain_w = e.power.binding_limit()
            pch = self.s.site.power.chain
            # with stages_set_plan the plan is the chain's own derived capacity by date
            planned = ("the power chain's derived stage (site.power.chain.stages)"
                       if pch is not None and pch.stages_set_plan else "the power plan (site.power.plan)")
            what = planned if plan <= chain_w * k else name
            why = (f"{committed / 1e3:.0f} kW committed + {w / 1e3:.1f} kW worst case over the "
                   f"{limit_w / 1e3:.0f} kW limit of {what}")
        else:
            why = e.power.rpp_held_why(r, k)
        key = (len(held), why)
        if key != self._held:
            self._held = key
            e.log("power_held", f"{len(held)} racks", f"delivered, not powered: {why}")

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
