"""The power chain: node power settings, the power tree (RPPs, UPS or bypass, feeds), its
capacity under the redundancy policy, RPP breakers, and the facility series after the run."""

from __future__ import annotations

import numpy as np

from twin import power
from twin.power.electrical import BREAKER_MAGNETIC_TRIP_S
from twin.sim.component import Component


class PowerChain(Component):
    """Builds the power tree; trips RPP breakers on their thermal state (carried from sample
    to sample) or magnetic pick-up; evaluates UPS, feed, distribution and cooling power for
    every sample at once after the run (nothing in the feedback loops needs them within)."""

    name = "power_chain"
    reads = ("rack_powered", "rack_tripped", "psu_capacity_w")
    writes = ("rack_tripped",)
    emits = ("breaker_trip", "breaker_reset")
    outputs = ("rpp_load_fraction", "rpp_power_w", "feed_load_fraction", "feed_power_w", "ups_output_w",
               "ups_load_fraction", "rpp_loss_w", "feed_loss_w", "facility_it_power_w", "ups_loss_w",
               "distribution_loss_w", "cooling_power_w", "facility_total_power_w", "outdoor_temp_c")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        s, p, n = self.s, self.plant, self.plant.node
        pw = s.site.power
        self._node_kw = p.node_power_kwargs()
        #: per-GPU cap of every node [W]: a float, or (N,) when the racks hold several models
        self.gpu_cap_w = p.gpu_cap_w()
        #: clock of a GPU in training held to the cap (the power model's DVFS law inverted),
        #: of the default model, and of every model (M,) for jobs on other models
        self.cap_clock_fraction = float(power.gpu_clock_fraction_at_power(
            float(s.hardware.gpu_power_cap_w or n.gpu_tdp_w), gpu_tdp_w=n.gpu_tdp_w, gpu_idle_w=n.gpu_idle_w))
        tdp = p.model_param("gpu_tdp_w")
        cap = np.minimum(s.hardware.gpu_power_cap_w, tdp) if s.hardware.gpu_power_cap_w else tdp
        self.cap_clock_fraction_by_model = np.asarray(power.gpu_clock_fraction_at_power(
            cap, gpu_tdp_w=tdp, gpu_idle_w=p.model_param("gpu_idle_w")), float)
        #: worst-case admission draw of every rack [W]: a float, or (R,) for mixed racks
        self.rack_worst_w = p.rack_worst_case_w()
        self._psu_full_w = float(n.psu_count * n.psu_rating_w)
        self.tree = power.build_power_tree(
            rack_rpp=p.rack_rpp, rpp_limit_w=p.rpp_limit_w,
            feed_capacity_w=np.array([f.capacity_kw * 1e3 for f in pw.feeds]),
            ups_mode=pw.ups.mode, ups_capacity_w=pw.ups.capacity_kw * 1e3 / len(pw.feeds),
            rpp_rating_w=p.rpp_rating_w, ups_ride_through_s=pw.ups.ride_through_s,
            ups_curve=pw.chain.ups.curve if pw.chain is not None and pw.chain.ups is not None else None)
        self.chain_capacity_w = float(power.facility_it_capacity_w(self.tree, pw.redundancy))
        self.breaker_theta = np.zeros(len(p.rpp_limit_w))   # thermal state [pu^2]
        #: the last check found every breaker at or below rating (its thermal state then is
        #: the square of its load, the same at the same load: a quiet sample repeats it)
        self.breakers_steady = True

    def node_kwargs(self) -> dict:
        """Keyword arguments of ``power.node_power_w`` for this node model, with the PSU
        capacity that has input now (``ClusterState.psu_capacity_w``)."""
        if self.plant.homogeneous or np.ndim(self.state.psu_capacity_w) > 0:
            return {**self._node_kw, "psu_capacity_w": self.state.psu_capacity_w}
        # mixed models, all feeds up: each node's full PSU capacity (the state holds the
        # first model's; a feed loss sets every node's own, Grid._psu_state_per_model)
        share = self.state.psu_capacity_w / self._psu_full_w
        return {**self._node_kw, "psu_capacity_w": self._node_kw["psu_capacity_w"] * share}

    def rack_committed_w(self, racks: np.ndarray) -> float:
        """Worst-case draw committed by the racks selected by the (R,) mask ``racks`` [W]."""
        wc = self.rack_worst_w
        return float(racks.sum() * wc) if np.ndim(wc) == 0 else float(np.sum(np.asarray(wc)[racks]))

    def check_breakers(self, rpp_w: np.ndarray) -> None:
        """Advance each RPP breaker's thermal state over the coming sample at this load
        (``power.breaker_thermal_state_step``, exact for a constant current) and trip the
        breakers that reach their trip state, or their magnetic pick-up. From cold a breaker
        trips exactly when ``power.breaker_trip_time_s`` < the step."""
        p, st, e = self.plant, self.state, self.e
        frac = rpp_w / p.rpp_rating_w
        if frac.max() <= 1.0 and self.breaker_theta.max() <= 1.0:
            self.breaker_theta = frac ** 2          # at or below rating: steady, never trips
            self.breakers_steady = True
            return
        self.breakers_steady = False
        self.breaker_theta = np.asarray(power.breaker_thermal_state_step(self.breaker_theta, frac, e.dt_s))
        magnetic = np.asarray(power.breaker_trip_time_s(frac)) <= BREAKER_MAGNETIC_TRIP_S
        for q in np.flatnonzero((self.breaker_theta >= power.breaker_thermal_trip_state()) | magnetic):
            racks = np.flatnonzero((p.rack_rpp == q) & st.rack_powered & ~st.rack_tripped)
            if len(racks) == 0:
                continue
            self.breaker_theta[q] = 0.0              # reset cold
            st.rack_tripped[racks] = True
            e.log("breaker_trip", f"rpp{q}", f"{frac[q]:.2f} x rating, {len(racks)} racks down")
            e.jobs.interrupt_nodes(np.flatnonzero(np.isin(p.node_rack, racks)), f"RPP {q} breaker trip")
            self.env.process(self._breaker_reset(racks))

    def _breaker_reset(self, racks: np.ndarray):
        yield self.env.timeout(self.s.site.power.breaker_reset_s)
        self.state.rack_tripped[racks] = False
        self.e.log("breaker_reset", f"{len(racks)} racks", "")
        self.e.scheduler.schedule()

    def outdoor_temp_c(self, t_s):
        """Outdoor dry-bulb [degC] at simulation time(s) ``t_s`` (``power.outdoor_temp_c``)."""
        c = self.s.site.power.cooling
        return power.outdoor_temp_c(t_s, mean_c=c.outdoor_temp_c, seasonal_swing_c=c.outdoor_temp_swing_c,
                                    start_day_of_year=self.s.simulation.start.timetuple().tm_yday,
                                    daily_swing_c=c.outdoor_daily_swing_c)

    def finish(self, rec) -> None:
        """Power chain and cooling for every sample at once, (T, R) -> (T,), vectorised."""
        # below outputs.rack_series: full the sampler pushed each window through the tree
        flow = rec.flow or power.evaluate_power_tree(self.tree, rec["rack_power_w"].astype(float))
        t_s = np.arange(rec.n_samples) * self.e.dt_s
        # the cooling plant's power and the outdoor temperature come from the hall thermal
        # component (legacy formula, or fan laws, set points and weather: issue 12)
        cool, out_c = self.e.thermal.plant_power(rec, np.asarray(flow.building_heat_w, float), t_s)
        ups_loss = np.asarray(flow.ups_loss_w, float).sum(axis=-1)
        rec.set("rpp_load_fraction", flow.rpp_load_fraction)
        rec.set("rpp_power_w", flow.rpp_w)
        rec.set("feed_load_fraction", flow.feed_load_fraction)
        rec.set("feed_power_w", flow.feed_w)
        rec.set("ups_output_w", flow.ups_output_w)
        rec.set("ups_load_fraction", flow.ups_load_fraction)
        rec.set("rpp_loss_w", np.asarray(flow.rpp_loss_w, float).sum(axis=-1))
        rec.set("feed_loss_w", np.asarray(flow.feed_loss_w, float).sum(axis=-1))
        rec.set("facility_it_power_w", flow.it_w)
        rec.set("ups_loss_w", ups_loss)
        rec.set("distribution_loss_w", np.asarray(flow.utility_w) - np.asarray(flow.it_w) - ups_loss)
        rec.set("cooling_power_w", cool)
        rec.set("facility_total_power_w", np.asarray(flow.utility_w) + cool)
        rec.set("outdoor_temp_c", out_c)
