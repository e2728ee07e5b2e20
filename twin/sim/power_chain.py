"""The power chain: node power settings, the power tree (RPPs, UPS or bypass, feeds), its
capacity under the redundancy policy, RPP breakers, and the facility series after the run."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from twin import power
from twin.plant import seconds_since
from twin.power.capacity import racks_on_groups
from twin.power.chain import (
    RppStage,
    feed_it_limits_w,
    mechanical_on_feeds,
    rpp_stage_limits,
    split_mechanical_w,
    utility_it_limits_w,
)
from twin.power.electrical import BREAKER_MAGNETIC_TRIP_S, breaker_continuous_limit_w
from twin.power.tree import evaluate_ups_stage
from twin.scenario.power_chain import stage_in_force, ups_mode_changes
from twin.sim.component import Component

H = 3600.0


class PowerChain(Component):
    """Builds the power tree; trips RPP breakers on their thermal state (carried from sample
    to sample) or magnetic pick-up; evaluates UPS, feed, distribution and cooling power for
    every sample at once after the run (nothing in the feedback loops needs them within)."""

    name = "power_chain"
    reads = ("rack_powered", "rack_tripped", "psu_capacity_w", "feed_up")
    writes = ("rack_tripped",)
    emits = ("breaker_trip", "breaker_reset", "feed_overload", "ups_mode")
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
        #: the UPS mode the run starts in and its dated changes [(s, mode)], by the chain's
        #: stages when they change it (:func:`twin.scenario.power_chain.ups_mode_changes`);
        #: else ``site.power.ups.mode`` all run and no change
        mode0, changes = ups_mode_changes(pw.chain, s.simulation.start, pw.ups.mode)
        self.ups_mode = self._ups_mode0 = mode0
        self.ups_changes_s = [(seconds_since(s.simulation.start, d), m, d) for d, m in changes]
        self.ups_changes_s = [c for c in self.ups_changes_s if c[0] < engine.horizon_s]
        #: one power tree per UPS mode the run holds, built once; ``tree`` is the starting
        #: mode's (the sampler routes every window through it; :meth:`finish` re-evaluates
        #: the UPS stage of the samples in other modes)
        self._trees = {m: power.build_power_tree(
            rack_rpp=p.rack_rpp, rpp_limit_w=p.rpp_limit_w,
            feed_capacity_w=np.array([f.capacity_kw * 1e3 for f in pw.feeds]),
            ups_mode=m, ups_capacity_w=pw.ups.capacity_kw * 1e3 / len(pw.feeds),
            rpp_rating_w=p.rpp_rating_w, ups_ride_through_s=pw.ups.ride_through_s,
            ups_curve=pw.chain.ups.curve if pw.chain is not None and pw.chain.ups is not None else None)
            for m in dict.fromkeys([mode0, *(c[1] for c in self.ups_changes_s)])}
        self.tree = self._trees[mode0]
        #: the chain's limits in each UPS mode the run holds (the UPS limit is lifted in bypass)
        self._limits_by_mode = {m: self._mode_limits_w(m) for m in self._trees}
        #: the utility service's limit on the IT power from each of the chain's stages on
        #: [(s, W, name)], the first in force from the start: the constraint `twin capacity`
        #: lists (:func:`twin.power.chain.utility_it_limits_w`); empty without a typed service
        self.utility_changes_s = self._utility_schedule_s(engine.horizon_s)
        #: the chain's RPPs from each of its stages on [(s, RppStage)], the first in force from
        #: the start: each rack is admitted only while its A/B pair (2N) or panel (N) carries it
        #: whole, the rule `twin capacity` counts (:func:`twin.power.chain.rpp_stage_limits`);
        #: empty without ``site.power.chain.rpps``
        self.rpp_changes_s = self._rpp_schedule_s(engine.horizon_s)
        #: the instants after the start at which a chain stage moves an admission limit
        self._stage_times_s = sorted({t for t, _, _ in self.ups_changes_s}
                                     | {t for t, _, _ in self.utility_changes_s[1:]}
                                     | {t for t, _ in self.rpp_changes_s[1:]})
        self._limits_cache: dict[tuple, tuple[dict[str, float], np.ndarray]] = {}
        #: worst-case power one rack may draw on its branch circuits in normal operation (all its
        #: cords live, each at its breaker's continuous rule) [W]; inf without
        #: ``site.power.chain.branch``. A cord that would be overloaded on A/B failover is the
        #: swing component's ``branch_failover_overload`` event, not an admission limit.
        br = pw.chain.branch if pw.chain is not None else None
        self.branch_rack_limit_w = np.inf
        #: a rack's load over its branch breakers' rating (trip-curve reference) in normal operation
        #: [W]: cords x the breaker's 100 % rating; None without branch circuits
        self._branch_rating_w: float | None = None
        self._branch_cords = 1
        if br is not None:
            self._branch_cords = br.cords_per_rack
            self.branch_rack_limit_w = br.cords_per_rack * float(breaker_continuous_limit_w(
                br.breaker_a, br.voltage_v, br.phases, br.rated_100pct, br.power_factor))
            self._branch_rating_w = br.cords_per_rack * float(breaker_continuous_limit_w(
                br.breaker_a, br.voltage_v, br.phases, True, br.power_factor))
        self.branch_theta = np.zeros(p.n_racks)    # thermal state of each rack's branch breakers [pu^2]
        self.breaker_theta = np.zeros(len(p.rpp_limit_w))   # thermal state [pu^2]
        #: the last check found every breaker at or below rating (its thermal state then is
        #: the square of its load, the same at the same load: a quiet sample repeats it)
        self.breakers_steady = True

    def _mode_limits_w(self, mode: str) -> tuple[dict[str, float], np.ndarray]:
        """The chain's limits on admitted IT power [W], by name, with the UPS in ``mode``
        (the utility service's, by stage, joins them in :meth:`limits_at_s`):
        the chain under its redundancy (:func:`twin.power.facility_it_capacity_w`) and each
        feed path's worst-case IT limit (:func:`twin.power.chain.feed_it_limits_w`: its
        share of the IT chain and, where the chain puts the mechanical plant on the
        switchboards, of the cooling at the design outdoor temperature and the house loads;
        the one definition of a feed's load)."""
        s = self.s
        pw = s.site.power
        if mode != pw.ups.mode:
            ups = pw.ups.model_copy(update={"mode": mode})
            site = s.site.model_copy(update={"power": pw.model_copy(update={"ups": ups})})
            s = s.model_copy(update={"site": site})
        limits = {"the chain under its redundancy": float(power.facility_it_capacity_w(self._trees[mode],
                                                                                      pw.redundancy))}
        feed_limits = feed_it_limits_w(s)
        for f, lim in zip(pw.feeds, feed_limits, strict=True):
            limits[f"feed {f.name} ({f.capacity_kw:g} kW" + (
                " incl. its share of the cooling)" if mechanical_on_feeds(s) else ")")] = float(lim)
        return limits, feed_limits

    def _utility_schedule_s(self, horizon_s: float) -> list[tuple[float, float, str]]:
        """The utility service's limit [(s, W, name)]: the stage in force at the start (the
        first stage before any date, as the UPS mode's :func:`twin.scenario.power_chain.ups_mode_at`),
        then each later stage before the horizon that moves it."""
        s = self.s
        sched = utility_it_limits_w(s)
        if not sched:
            return []
        start = s.simulation.start
        k0 = stage_in_force([d for d, _, _ in sched], start)
        out = [(0.0, sched[k0][1], sched[k0][2])]
        for d, w, name in sched[k0 + 1:]:
            t = seconds_since(start, d)
            if t < horizon_s and (w, name) != out[-1][1:]:
                out.append((t, w, name))
        return out

    def _rpp_schedule_s(self, horizon_s: float) -> list[tuple[float, RppStage]]:
        """The chain's RPPs [(s, RppStage)]: the stage in force at the start, then each later
        stage before the horizon that changes them (as :meth:`_utility_schedule_s`)."""
        s = self.s
        sched = rpp_stage_limits(s)
        if not sched:
            return []
        start = s.simulation.start
        k0 = stage_in_force([d for d, _ in sched], start)
        out = [(0.0, sched[k0][1])]
        for d, rs in sched[k0 + 1:]:
            t = seconds_since(start, d)
            last = out[-1][1]
            if t < horizon_s and (rs.name != last.name or not np.array_equal(rs.group, last.group)
                                  or not np.array_equal(rs.group_limit_w, last.group_limit_w)):
                out.append((t, rs))
        return out

    def rpp_at_s(self, t_s: float) -> RppStage | None:
        """The chain's RPPs at simulation time ``t_s`` [s], None without ``site.power.chain.rpps``."""
        now = None
        for t, rs in self.rpp_changes_s:
            if t <= t_s:
                now = rs
        return now

    def racks_admitted(self, limit_w: float, k: float, *, candidate: np.ndarray,
                       powered: np.ndarray) -> np.ndarray:
        """Racks that may be powered now [bool (R,)]: the ramp's admission (its order, the
        powered racks committed first). The chain's RPPs in force now (:meth:`rpp_at_s`) keep
        a candidate out unless its pair (2N: one panel carries the pair's racks) or panel (N)
        carries it whole at worst case, each group's limit x ``k`` (``site.power.oversubscription``),
        by :func:`twin.power.capacity.racks_on_groups`, the rule ``twin capacity`` counts; a
        full group keeps its later racks out, not the other groups'. The rest must fit
        ``limit_w`` [W] (already x ``k``) and each ``site.power.rpp`` panel
        (:func:`twin.power.racks_admitted`, the first that does not ends the admission)."""
        p = self.plant
        rs = self.rpp_at_s(self.env.now)
        if rs is not None:
            candidate = candidate & racks_on_groups(self.rack_worst_w, rs.group, rs.group_limit_w * k,
                                                    candidate=candidate, powered=powered)
        return power.racks_admitted(self.rack_worst_w, limit_w, p.rack_rpp, p.rpp_limit_w * k,
                                    candidate=candidate, powered=powered, policy="stop")

    def rpp_held_why(self, r: int, k: float) -> str:
        """Why rack ``r`` stays dark when the facility limit would take it: its pair or panel of
        the chain's RPPs in force now is full (naming the group, the site panels it spans and
        its limit), else its ``site.power.rpp`` panel's continuous limit."""
        p, st = self.plant, self.state
        wc = self.rack_worst_w
        w = float(wc) if np.ndim(wc) == 0 else float(np.asarray(wc)[r])
        rs = self.rpp_at_s(self.env.now)
        if rs is not None:
            g = int(rs.group[r])
            mine = (rs.group == g) & st.rack_powered
            committed = float(mine.sum() * wc) if np.ndim(wc) == 0 else float(np.asarray(wc)[mine].sum())
            lim = float(rs.group_limit_w[g]) * k
            if committed + w > lim * (1 + 1e-12):
                panels = np.unique(np.asarray(p.rack_rpp).reshape(len(rs.group), -1)[rs.group == g])
                on = ("site.power.rpp panels " + " and ".join(str(int(q)) for q in panels) if len(panels) > 1
                      else f"site.power.rpp panel {int(panels[0])}")
                return (f"RPP {rs.what} {g} ({on}) carries {int(mine.sum())} racks, {committed / 1e3:.1f} kW "
                        f"worst case, and cannot take {p.rack_names[r]}'s {w / 1e3:.1f} kW within "
                        f"{lim / 1e3:.1f} kW, {rs.name}")
        q = int(np.ravel(p.rack_rpp)[r]) if np.ndim(p.rack_rpp) == 1 else int(p.rack_rpp[r, 0])
        return (f"RPP {q}'s continuous limit {p.rpp_limit_w[q] * k / 1e3:.1f} kW "
                f"(site.power.rpp) cannot take {p.rack_names[r]}'s {w / 1e3:.1f} kW worst case")

    def utility_at_s(self, t_s: float) -> tuple[float, str] | None:
        """The utility service's limit on the IT power at simulation time ``t_s`` [s]:
        ([W], name), None without a typed service."""
        now = None
        for t, w, name in self.utility_changes_s:
            if t <= t_s:
                now = (w, name)
        return now

    def limits_at_s(self, t_s: float) -> tuple[dict[str, float], np.ndarray]:
        """The chain's limits on the IT power racks are admitted against at simulation time
        ``t_s`` [s], by name [W] (the UPS mode's and the utility service's stage in force then),
        and the IT power each feed path carries at worst case before it reaches its capacity
        [W (F,)]. By the clock, not by the order in which processes wake at a stage's instant:
        the ramp's plan stage and the chain's stage on one date see the same limits."""
        mode, utility, rpps = self.ups_mode_at_s(t_s), self.utility_at_s(t_s), self.rpp_at_s(t_s)
        key = (mode, utility, None if rpps is None else (rpps.name, rpps.it_w))
        hit = self._limits_cache.get(key)
        if hit is None:
            limits, feeds = self._limits_by_mode[mode]
            limits = dict(limits)
            if utility is not None:
                limits[utility[1]] = utility[0]
            if rpps is not None:
                # the kW of the racks the groups carry whole (`twin capacity`'s RPP figure); the
                # groups themselves are checked rack by rack (racks_admitted)
                limits[rpps.name] = rpps.it_w
            hit = self._limits_cache[key] = (limits, feeds)
        return hit

    @property
    def limits_w(self) -> dict[str, float]:
        """The chain's limits on admitted IT power now [W], by name (:meth:`limits_at_s`)."""
        return self.limits_at_s(self.env.now)[0]

    @property
    def feed_it_limit_w(self) -> np.ndarray:
        """The IT power each feed path carries at worst case now [W (F,)] (:meth:`limits_at_s`)."""
        return self.limits_at_s(self.env.now)[1]

    @property
    def chain_capacity_w(self) -> float:
        """The chain's tightest limit on admitted IT power now [W]."""
        return min(self.limits_w.values())

    def ups_mode_at_s(self, t_s: float) -> str:
        """The UPS mode at simulation time ``t_s`` [s] (a change applies from its instant)."""
        mode = self._ups_mode0
        for t, m, _ in self.ups_changes_s:
            if t <= t_s:
                mode = m
        return mode

    def tree_at_s(self, t_s: float):
        """The power tree in force at simulation time ``t_s`` [s] (its UPS mode's)."""
        return self._trees[self.ups_mode_at_s(t_s)]

    def flow_by_ups_mode(self, flow, t_s: np.ndarray, feed_up=None):
        """``flow`` (evaluated through the starting mode's tree at the times ``t_s`` [s]) with
        the samples from each UPS mode change on re-evaluated above the RPPs in that mode
        (:func:`twin.power.tree.evaluate_ups_stage`); a run without changes gets ``flow`` back.
        The run's series (:meth:`finish`) and a replay (:mod:`twin.telemetry.replay`) share it."""
        t_s = np.asarray(t_s, float)
        for k, (t0, mode, _) in enumerate(self.ups_changes_s):
            t1 = self.ups_changes_s[k + 1][0] if k + 1 < len(self.ups_changes_s) else np.inf
            rows = (t_s >= t0) & (t_s < t1)
            if mode != self._ups_mode0 and rows.any():
                flow = evaluate_ups_stage(self._trees[mode], flow, feed_up, rows)
        return flow

    def processes(self):
        if self._stage_times_s:
            yield self._chain_stages()

    def _chain_stages(self):
        """At each of the chain's dated stages that moves a limit: the UPS mode (``ups_mode``)
        and the admission limits from then on (bypass lifts the UPS's; the utility service's
        follows its kVA and the UPS loss); racks are admitted again, once, when the tightest
        limit moved or the chain's RPPs changed (after shedding, from the end of each pair or
        panel, the racks a tighter RPP stage no longer carries)."""
        e = self.e
        ups_at = {t: (mode, date) for t, mode, date in self.ups_changes_s}
        rpp_at = dict(self.rpp_changes_s)
        p = self.plant
        ramp_at = set(p.plan_s.tolist()) | set(p.rack_delivery_s[np.isfinite(p.rack_delivery_s)].tolist())
        cap = min(self.limits_at_s(0.0)[0].values())
        for t in self._stage_times_s:
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            if t in ups_at:
                old, (mode, date) = self.ups_mode, ups_at[t]
                self.ups_mode = mode
                e.log("ups_mode", "ups", f"{old} -> {mode} from {date} (site.power.chain.stages): UPS loss "
                      + ("none" if mode == "bypass" else "on its curve")
                      + ("; grid sags reach the PSUs" if mode == "bypass" else "; sags ridden through on battery"))
            shed = self._shed_rpp_groups(rpp_at[t]) if t in rpp_at else 0
            # the limits follow the clock (limits_at_s, rpp_at_s): at an instant the ramp wakes
            # at too (a plan stage or a delivery) its admission, before or after this one, sees
            # them, so one admission, not two split by the plan's old level; after shedding,
            # which the ramp may have admitted before, the groups with room fill again
            if self.chain_capacity_w != cap or t in rpp_at:
                cap = self.chain_capacity_w
                if t not in ramp_at or shed:
                    e.ramp.admit()

    def _shed_rpp_groups(self, rs: RppStage) -> int:
        """Power off, from the end of each group, the racks a new RPP stage's pair or panel no
        longer carries at worst case (x ``site.power.oversubscription``); how many."""
        st, k = self.state, self.s.site.power.oversubscription
        keep = racks_on_groups(self.rack_worst_w, rs.group, rs.group_limit_w * k,
                               candidate=st.rack_powered, powered=np.zeros_like(st.rack_powered))
        off = np.flatnonzero(st.rack_powered & ~keep)[::-1]
        for r in off:
            self.e.ramp.power_off_rack(int(r), f"RPP {rs.what} {int(rs.group[r])} over its limit: {rs.name}")
        return len(off)

    def binding_limit(self) -> tuple[str, float]:
        """The chain's tightest limit on admitted IT power: (what it is, [W])."""
        name = min(self.limits_w, key=self.limits_w.__getitem__)
        return name, self.limits_w[name]

    def start(self) -> None:
        super().start()
        # the flushed windows are routed with each sample's live feeds (Recorder.flush)
        self.e.recorder.feed_tree = self.tree

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
        trips exactly when ``power.breaker_trip_time_s`` < the step. The racks' branch
        breakers (``site.power.chain.branch``) follow the same law (:meth:`_check_branches`)."""
        p, st, e = self.plant, self.state, self.e
        frac = rpp_w / p.rpp_rating_w
        branches_steady = self._check_branches()
        if frac.max() <= 1.0 and self.breaker_theta.max() <= 1.0:
            self.breaker_theta = frac ** 2          # at or below rating: steady, never trips
            self.breakers_steady = branches_steady
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

    def _check_branches(self) -> bool:
        """The branch breakers of every rack at its power of this sample, its live cords
        sharing it equally (all of them in normal operation; during a feed loss the cords on
        the lost feed carry nothing, cord i on feed i mod F as the swing component's series):
        each rack's load over its live cords' rating advances their thermal state as an RPP
        breaker's does; a rack whose branch breakers reach their trip state (or magnetic
        pick-up) goes down until the reset (``breaker_trip``). True when every branch is at or
        below rating with every feed live (steady: the same load repeats the same check; a
        feed loss is checked at every sample)."""
        if self._branch_rating_w is None:
            return True
        p, st, e = self.plant, self.state, self.e
        up = st.feed_up
        dark = 0 if up.all() else power.psus_without_input(self._branch_cords, up)
        live = max(self._branch_cords - dark, 1)
        frac = e.sampler.last_rack_power_w() / (self._branch_rating_w * live / self._branch_cords)
        if frac.max(initial=0.0) <= 1.0 and self.branch_theta.max(initial=0.0) <= 1.0:
            self.branch_theta = frac ** 2
            return dark == 0
        self.branch_theta = np.asarray(power.breaker_thermal_state_step(self.branch_theta, frac, e.dt_s))
        magnetic = np.asarray(power.breaker_trip_time_s(frac)) <= BREAKER_MAGNETIC_TRIP_S
        trip = ((self.branch_theta >= power.breaker_thermal_trip_state()) | magnetic) & st.rack_powered & ~st.rack_tripped
        racks = np.flatnonzero(trip)
        if len(racks):
            self.branch_theta[racks] = 0.0          # reset cold
            st.rack_tripped[racks] = True
            when = "its cords' rating in normal operation" if dark == 0 else "its live cords' rating with feed " + \
                ", ".join(f.name for f, u in zip(self.s.site.power.feeds, up, strict=True) if not u) + " lost"
            for r in racks:
                e.log("breaker_trip", p.rack_names[r], f"branch circuit at {frac[r]:.2f} x {when}, rack down")
            e.jobs.interrupt_nodes(np.flatnonzero(np.isin(p.node_rack, racks)), "branch breaker trip")
            self.env.process(self._breaker_reset(racks))
        return False

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
        """Power chain and cooling for every sample at once, (T, R) -> (T,), vectorised.

        Each sample is routed with the feeds that were live then (``Recorder.feed_up``): during
        a feed loss the survivors carry the load. ``feed_power_w`` is what each utility feed
        carries: its IT path (IT, RPP, UPS and transformer losses) and, where the chain puts
        the mechanical plant on the switchboards, its share of ``cooling_power_w`` and of the
        house loads (:func:`twin.power.chain.split_mechanical_w`); ``feed_load_fraction`` is
        that over the feed's capacity. A feed above its capacity is a ``feed_overload`` event
        (one per episode)."""
        # below outputs.rack_series: full the sampler pushed each window through the tree
        flow = rec.flow or power.evaluate_power_tree(self.tree, rec["rack_power_w"].astype(float), rec.feed_up)
        t_s = np.arange(rec.n_samples) * self.e.dt_s
        flow = self.flow_by_ups_mode(flow, t_s, rec.feed_up)
        # the cooling plant's power and the outdoor temperature come from the hall thermal
        # component (legacy formula, or fan laws, set points and weather: issue 12)
        cool, out_c = self.e.thermal.plant_power(rec, np.asarray(flow.building_heat_w, float), t_s)
        ups_loss = np.asarray(flow.ups_loss_w, float).sum(axis=-1)
        mech = split_mechanical_w(self.s, np.asarray(cool, float), rec.feed_up)
        feed_w = np.asarray(flow.feed_w, float) + mech
        feed_lf = feed_w / self.tree.feed_capacity_w
        rec.set("rpp_load_fraction", flow.rpp_load_fraction)
        rec.set("rpp_power_w", flow.rpp_w)
        rec.set("feed_load_fraction", feed_lf)
        rec.set("feed_power_w", feed_w)
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
        self._log_feed_overloads(feed_lf, feed_w, mech)

    def _log_feed_overloads(self, feed_lf: np.ndarray, feed_w: np.ndarray, mech: np.ndarray) -> None:
        """One ``feed_overload`` event per episode of consecutive samples with a feed above its
        capacity, at the episode's first sample (inserted in time order: the series are
        evaluated after the run)."""
        over = feed_lf > 1.0
        if not over.any():
            return
        dt, ev = self.e.dt_s, self.e.events
        for f, feed in enumerate(self.s.site.power.feeds):
            x = np.concatenate(([False], over[:, f], [False])).astype(np.int8)
            starts, ends = np.flatnonzero(np.diff(x) == 1), np.flatnonzero(np.diff(x) == -1)
            for a, b in zip(starts, ends, strict=True):
                k = a + int(np.argmax(feed_lf[a:b, f]))
                detail = (f"{feed_lf[k, f]:.2f} of its {feed.capacity_kw:g} kW capacity ({feed_w[k, f] / 1e3:.0f} kW"
                          + (f" incl. {mech[k, f] / 1e3:.0f} kW cooling and house" if mech[k, f] > 0 else "")
                          + f") at the worst of {(b - a) * dt / H:.3g} h above it; no protection modelled")
                t0 = float(a * dt)
                ev.insert(bisect_right(ev, t0, key=lambda e: e[0]), (t0, "feed_overload", feed.name, detail))
