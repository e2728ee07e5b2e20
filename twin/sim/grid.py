"""The grid and the feeds: dated and Poisson disturbances of the utility, ride-through or
drop, and single-feed losses that move the load to the survivor."""

from __future__ import annotations

import numpy as np

from twin import power, reliability
from twin.plant import seconds_since
from twin.power.chain import feed_mechanical_w
from twin.sim.component import Component

H = 3600.0
NODE_REBOOT_S = 600.0   # stateless xCAT boot of a node after a power loss (seed 000: "minutes")


class Grid(Component):
    """Sags and outages of the utility pass through a bypassed UPS (its mode at the time:
    ``PowerChain.ups_mode_at_s``) and drop every powered
    node (rebooted after power returns), or are ridden through; a single-feed loss moves
    the load to the survivor, which holds (PSUs cabled to the lost feed go dark, the GPU
    power brake may cut the clocks) or trips and drops every rack. A utility outage is also a
    power transfer of the cooling plant (:meth:`twin.sim.hall_thermal.HallThermal.power_transfer`:
    chillers restart after their delay, physical cooling model)."""

    name = "grid"
    reads = ("node_up", "feed_up")
    writes = ("feed_up", "rack_unfed", "brake_clock", "psu_capacity_w", "node_grid_down")
    emits = ("grid_ride_through", "grid_drop", "grid_restored", "feed_loss", "feed_restored")

    def processes(self):
        yield self._disturbances()

    def times(self) -> list[tuple[float, float, str, float, int | None]]:
        """(start [s], duration [s], kind, residual voltage [pu], lost feed index or None) of
        every grid disturbance: the scenario's dated events, Poisson sags and outages of the
        utility, and Poisson losses of single feeds."""
        g, start = self.s.site.power.grid, self.s.simulation.start
        rng, horizon = self.e.rng["grid"], self.e.horizon_s
        names = [f.name for f in self.s.site.power.feeds]
        out = [(seconds_since(start, e.time), e.duration_s, e.kind, 0.0,
                names.index(e.feed) if e.feed is not None else None) for e in g.events]
        ev = power.sample_grid_events(
            rng, horizon, sag_rate_per_year=g.sag_rate_per_year,
            outage_rate_per_year=g.outage_rate_per_year, sag_mean_duration_s=g.sag_duration_s,
            outage_mean_duration_s=g.outage_duration_s)
        kinds = np.where(np.asarray(ev["kind"]) == power.GRID_OUTAGE, "outage", "sag")
        out += list(zip(np.asarray(ev["start_s"], float).tolist(), np.asarray(ev["duration_s"], float).tolist(),
                        kinds.tolist(), np.asarray(ev["residual_voltage_pu"], float).tolist(),
                        [None] * len(kinds), strict=True))
        if len(names) > 1:
            out += [(t, dur, "outage", 0.0, f) for t, f, dur in reliability.sample_unit_outages(
                rng, horizon, len(names), g.feed_outage_rate_per_year, g.feed_outage_duration_s)]
        return sorted((e for e in out if 0 <= e[0] < horizon), key=lambda e: (e[0], e[2], e[4] or 0))

    def _disturbances(self):
        pw, st, e = self.s.site.power, self.state, self.e
        for t, dur, kind, residual, feed in self.times():
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            if feed is not None:
                self.env.process(self._feed_outage(feed, dur))
                continue
            if kind == "outage":
                # the mechanical plant is not on the UPS: the chillers stop and restart on
                # the generator after their restart delay, whatever the IT side does
                self.env.process(e.thermal.power_transfer(dur, f"utility outage {dur:.3g} s"))
            # the UPS mode at the disturbance (the chain's dated stages may bypass it part-way)
            mode = e.power.ups_mode_at_s(self.env.now)
            drops = bool(power.ride_through_outcome(
                dur, mode, psu_holdup_s=pw.psu_holdup_s, ups_ride_through_s=pw.ups.ride_through_s,
                generator_start_s=pw.generator_start_s, residual_voltage_pu=residual))
            if not drops:
                e.log("grid_ride_through", "facility", f"{kind} {dur:.3g} s, UPS {mode}")
                continue
            victims = np.flatnonzero(st.node_up)
            if len(victims) == 0:
                # nothing up to drop (no rack powered yet): not a drop (grid_drop_events counts drops)
                e.log("grid_ride_through", "facility", f"{kind} {dur:.3g} s, UPS {mode}: no node up to drop")
                continue
            e.log("grid_drop", "facility", f"{kind} {dur:.3g} s dropped {len(victims)} nodes")
            st.node_grid_down[victims] = True
            e.jobs.interrupt_nodes(victims, f"grid {kind}")
            back = min(dur, pw.generator_start_s) if kind == "outage" else dur
            self.env.process(self._restore(victims, back + NODE_REBOOT_S))

    def record(self, i: int, rec) -> None:
        """The live feeds of sample ``i`` (``Recorder.feed_up``), for the feed series."""
        rec.feed_up[i] = self.state.feed_up

    def record_range(self, i0: int, i1: int, rec) -> None:
        rec.feed_up[i0:i1] = self.state.feed_up

    def _restore(self, nodes: np.ndarray, after_s: float):
        yield self.env.timeout(after_s)
        self.state.node_grid_down[nodes] = False
        self.e.log("grid_restored", f"{len(nodes)} nodes", f"after {after_s:.0f} s")
        self.e.scheduler.schedule()

    def _psu_state_per_model(self, st) -> None:
        """Brake clock and PSU capacity of every node [(N,)] from its own model's PSUs
        (count, rating, required) with the feeds that are up; floats when all agree."""
        from twin.plant import uniform
        p = self.plant
        brake, cap = [], []
        for m in p.models:
            failed = power.psus_without_input(m.psu_count, st.feed_up)
            brake.append(float(power.gpu_power_brake_clock_fraction(failed, m.psu_count, m.psus_required)))
            cap.append(float(power.psu_capacity_w(m.psu_count, m.psu_rating_w, failed)))
        st.brake_clock = uniform(np.array(brake)[p.node_model_index])
        st.psu_capacity_w = np.array(cap)[p.node_model_index]

    def _feed_outage(self, f: int, dur: float):
        """One feed is lost: its load moves to the other feeds (A/B cords). If a survivor is
        overloaded it trips too and every rack drops; otherwise the racks keep running, but
        the PSUs cabled to the lost feed go dark and, past the PSU redundancy, the GPU power
        brake cuts the clocks (Dell XE9680: 3 of 6 PSUs per feed)."""
        st, e = self.state, self.e
        if not st.feed_up[f]:
            return
        node, name = self.plant.node, self.s.site.power.feeds[f].name
        st.feed_up[f] = False
        # through the UPS in its mode now (its loss is part of what the survivors carry)
        tree = e.power.tree_at_s(self.env.now)
        flow = power.evaluate_power_tree(tree, e.sampler.last_rack_power_w(), st.feed_up)
        # the survivors carry the mechanical plant too where the chain puts it on the feeds
        mech = feed_mechanical_w(self.s, float(flow.it_w), float(e.power.outdoor_temp_c(self.env.now)),
                                 st.feed_up)
        load = (np.asarray(flow.feed_w, float) + mech) / tree.feed_capacity_w
        held = bool(np.all(load[st.feed_up] <= 1.0)) and st.feed_up.any()
        failed_psus = power.psus_without_input(node.psu_count, st.feed_up)
        st.brake_clock = float(power.gpu_power_brake_clock_fraction(failed_psus, node.psu_count,
                                                                    node.psus_required))
        st.psu_capacity_w = float(power.psu_capacity_w(node.psu_count, node.psu_rating_w, failed_psus))
        if len(self.plant.models) > 1:     # each node model has its own PSUs and redundancy
            self._psu_state_per_model(st)
        if held:
            e.log("feed_loss", name, f"survivor holds at {float(np.max(load[st.feed_up])):.2f} of "
                  f"capacity; {failed_psus} PSUs per node dark, GPU clock x"
                  f"{float(np.min(st.brake_clock)):g}")
        else:
            st.rack_unfed[:] = True
            e.log("feed_loss", name, f"survivor overloaded ({float(np.max(load[st.feed_up])):.2f} of capacity "
                  f"with {float(mech.sum()) / 1e3:.0f} kW mechanical) and tripped: every rack dropped")
            e.jobs.interrupt_nodes(np.arange(self.plant.n_nodes), f"feed {name} lost")
        e.jobs.rates_changed()
        yield self.env.timeout(dur)
        st.feed_up[f] = True
        st.rack_unfed[:] = False
        st.brake_clock = 1.0
        st.psu_capacity_w = float(node.psu_count * node.psu_rating_w)
        e.log("feed_restored", name, f"after {dur / H:.2f} h")
        e.jobs.rates_changed()
        e.ramp.admit()          # racks held while the feed was lost (Ramp.admit)
        e.scheduler.schedule()
