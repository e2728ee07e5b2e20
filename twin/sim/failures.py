"""Failures and repair: Poisson failures of every node and class, detection delays, silent
data corruption, repair crews and spare stock, thermal shutdown recovery, and announced
maintenance windows."""

from __future__ import annotations

import numpy as np
import simpy

from twin import reliability
from twin.plant import seconds_since
from twin.reliability.repair import lognormal_duration_s, repair_lognormal_params
from twin.sim.component import Component, repeat_record
from twin.sim.state import _RACK_ON_DEPS

H = 3600.0
DAY = 86400.0
#: standard exponentials drawn at once for the per-sample failure draws (issue 19)
_EXP_BLOCK = 256
_NO_BLOCK = np.empty(0)
#: the state's fields :meth:`Failures.rate_scale` reads, through ``node_up`` (its rack's
#: ``rack_on``, the node's grid drop and health) and the racks' on-times
_SCALE_READS = _RACK_ON_DEPS + ("node_grid_down", "node_healthy", "rack_on_since")


class Failures(Component):
    """Superposed exponential failures (``reliability.ClusterFailureSampler``) with rates
    scaled by burn-in age and the Arrhenius factor of each node's GPUs; each failure is
    detected after its class's delay, interrupts the jobs it touches and is repaired by a
    technician (hardware, after taking a spare part) or in place (software)."""

    name = "failures"
    reads = ("node_up", "rack_on_since", "node_accel", "node_job")
    writes = ("node_healthy", "node_repairing", "su_degraded")
    emits = ("failure", "detected", "rollback", "repair_start", "repair_end", "thermal_shutdown",
             "thermal_recovered", "fabric_fault", "fabric_restored")
    outputs = ("nodes_failed", "nodes_in_repair", "spares_in_stock")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        f = self.s.failures
        classes = reliability.load_failure_classes()
        self.classes = (reliability.scale_class_rates(classes, f.class_rate_scale)
                        if f.class_rate_scale else classes)
        self.base_rate_per_node_s = float(sum(c.rate_per_node_s for c in self.classes))
        #: GPU-package (thermal) classes fail per GPU: a node with g GPUs has g / g_basis
        #: times the catalog's rate (basis: Llama 3's 8-GPU H100 nodes); 1.0 when every
        #: node has the basis' GPU count (all catalog models today), else (N,)
        from twin.plant import uniform
        b = reliability.load_failure_catalog()["basis"]
        self.gpu_rate_factor = uniform(self.plant.node_gpus / (b["gpus"] / b["nodes"]))
        self._unit_gpu_factor = np.ndim(self.gpu_rate_factor) == 0 and self.gpu_rate_factor == 1.0
        self.crew = simpy.Resource(self.env, capacity=f.technicians)
        # spare stock: one shared pool, or one per part (parts not listed come without a wait)
        stock = f.spares if isinstance(f.spares, dict) else {"*": f.spares}
        self.spare_stock = {part: simpy.Container(self.env, init=n, capacity=1e12) for part, n in stock.items()}
        self.repair_times_s: list[float] = []          # failure -> back in service [s]
        self.open_repairs: dict[int, float] = {}       # repair id -> failure time [s], until done
        self._next_repair = 0
        self._scale: tuple | None = None               # (up mask, rate scale) while no node is young
        self._newest: tuple | None = None              # (racks on, on-time version, newest on-time)
        self._still: tuple | None = None               # (write counts read, rate scale, time [s]) with no young rack
        #: the block of standard exponentials :meth:`draw` takes its waiting times from, the
        #: next one to use and the stream's state before the block was drawn
        self._exp_block, self._exp_next = _NO_BLOCK, 0
        self._exp_state: dict | None = None
        self._pools = tuple(self.spare_stock.values())
        self._failed: tuple | None = None              # (write counts, nodes failed or in repair)
        self._delivered: tuple | None = None           # (rack_delivered version, delivered per node)
        #: per failure class: the spare pool its repair takes a part from (None: no part) and
        #: its repair law (median [s], log sigma), looked up once instead of at every repair
        self._repair_how: dict = {}
        self._su_order: tuple | None = None            # (nodes by unit, first index of each unit)
        #: the per-interval draws (:meth:`draw`): the sampler, the rates last set, the
        #: event the failure process waits on, and whether the draw follows the sample
        self.enabled = bool(self.s.failures.enabled)
        self._draws: reliability.ClusterFailureSampler | None = None
        self._last: tuple | None = None
        self._wake: simpy.Event | None = None
        self.after_sample = False
        #: the fabric faults in force (``fabric.faults``): failed spine/core switches and
        #: failed leaf-spine/spine-core cables (a ``(a, b)`` pair per cable), as the fabric
        #: library takes them; both empty while none is, the jobs' fault-free path
        self.failed_switches: tuple[str, ...] = ()
        self.failed_links: tuple[tuple[str, str], ...] = ()

    def processes(self):
        yield self._failures()
        if self.s.fabric.faults:        # no process without them: runs without stay event for event
            yield self._fabric_faults()

    def fabric_fault_times(self) -> list[tuple[float, int, int]]:
        """(time [s], +1 at a fault's start / -1 at its end, index in ``fabric.faults``) of
        every scheduled fabric fault, in time order (an end before a start at one instant)."""
        start = self.s.simulation.start
        out = []
        for i, f in enumerate(self.s.fabric.faults):
            t0 = seconds_since(start, f.time)
            out += [(t0, 1, i), (t0 + f.duration_s, -1, i)]
        return sorted(out)

    def _fabric_faults(self):
        """Spine switches and inter-switch cables out of service for their windows: at each
        start or end the set in force changes and every running job takes the bandwidth of
        its placement routed around it (:meth:`Jobs.fabric_faults_changed`). No job stops:
        the fabric re-routes (adaptive routing, or the subnet manager's new ECMP tables)."""
        e = self.e
        times = self.fabric_fault_times()
        in_force: dict[int, bool] = {}
        k = 0
        while k < len(times):
            t = times[k][0]
            if t > e.horizon_s:
                return
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            while k < len(times) and times[k][0] == t:      # every change at this instant, then one update
                _, sign, i = times[k]
                f = self.s.fabric.faults[i]
                part = f.switch if f.switch is not None else "-".join(f.link or ())
                if sign > 0:
                    in_force[i] = True
                    e.log("fabric_fault", part, f"{f.kind}" + (f", {f.cables} cables" if f.link else "")
                          + f", {f.duration_s / H:.2f} h")
                else:
                    in_force.pop(i, None)
                    e.log("fabric_restored", part, f.kind)
                k += 1
            faults = [self.s.fabric.faults[i] for i in sorted(in_force)]
            self.failed_switches = tuple(f.switch for f in faults if f.switch is not None)
            self.failed_links = tuple(tuple(f.link) for f in faults if f.link is not None
                                      for _ in range(f.cables))
            e.jobs.fabric_faults_changed()

    def rate_scale(self) -> np.ndarray:
        """Per-node multiplier on the class rates: scenario scale x node up x burn-in."""
        p, f, st = self.plant, self.s.failures, self.state
        # the writes to what the scale reads: node_up's and rack_on's fields and the racks'
        # on-times (the jobs' writes of their nodes and phases, and the sampler's of inlets,
        # clocks and acceleration, between two draws are none of them: issue 14)
        seq = st.versions(_SCALE_READS)
        still = self._still
        if still is not None and still[0] == seq and self.env.now >= still[2]:
            # none of them written since a call that found no young rack, and the clock only
            # moved on: a rack that was not young does not become so (speed only)
            return still[1]
        up = st.node_up
        burn_s = self.s.ramp.burn_in_days * DAY
        burning = burn_s > 0 and f.burn_in_expected_failures_per_node > 0
        if burning and not self.env.now - self._newest_on_since_s() < burn_s:
            burning = False                 # no powered rack is young: no node is (speed only)
        if not burning and self._scale is not None and self._scale[0] is up:
            self._still = (seq, self._scale[1], self.env.now)
            return self._scale[1]           # the same up mask (the state caches it): the same scale
        scale = up.astype(float)
        if f.rate_scale != 1.0:     # 1.0 * x is x: the same scale without a second pass
            scale = f.rate_scale * scale
        if not burning:
            self._scale = (up, scale)
            self._still = (seq, scale, self.env.now)
        if burning:
            age_s = self.env.now - st.rack_on_since[p.node_rack]
            young = up & (age_s < burn_s)
            if young.any():
                eta_s = reliability.weibull_scale_s_for_expected_failures(
                    f.burn_in_expected_failures_per_node, burn_s, f.burn_in_weibull_shape)
                scale = scale * reliability.burn_in_rate_multiplier(
                    np.where(young, age_s, burn_s), self.e.dt_s, f.burn_in_weibull_shape, eta_s,
                    self.base_rate_per_node_s, burn_s)
        return scale

    def _newest_on_since_s(self) -> float:
        """When the last of the powered racks was powered on [s] (-inf: none is): kept until
        the racks on or their on-times are written. Some powered rack is younger than ``a``
        exactly when ``now - newest < a`` (``now - t`` does not increase with ``t``, rounding
        included), so this one number answers what ``any(now - on_since[rack_on] < a)`` did."""
        st = self.state
        on, ver = st.rack_on, st.version("rack_on_since")
        if self._newest is None or self._newest[0] is not on or self._newest[1] != ver:
            since = st.rack_on_since.view(np.ndarray)[on]
            self._newest = (on, ver, float(since.max()) if since.size else -np.inf)
        return self._newest[2]

    def _failures(self):
        """The failures of each sampling interval, drawn by :meth:`draw` (which the sampler
        calls once per sample, see there) and acted on here: the process sleeps until a
        draw finds a failure within its interval, so it wakes at no sample."""
        if not self.s.failures.enabled:
            return
        rng = self.e.rng["fail"]
        while True:
            self._wake = self.env.event()
            hit, left_s = yield self._wake
            while hit is not None:
                dt_s, n, k = hit
                yield self.env.timeout(dt_s)
                left_s -= dt_s
                if self.state.node_up_at(n):
                    self.fail(int(n), int(k))
                self._rewind(rng)       # a draw may have started a block meanwhile
                hit = self._draws.next(rng, left_s)

    def draw(self) -> None:
        """Draw the failures of the interval from now to the next sample with that
        interval's rates (memoryless, so exact for piecewise-constant rates); a node that
        went down within the interval is thinned out (:meth:`_failures`).

        The sampler calls this at every sample instant, where the failure process used to
        wake (issue 19: a wake-up per sample kept the sampler's quiet stretches from being
        filled): before the sample until the first interval with a failure, after it from
        then on (:attr:`after_sample`), the order the process's timeouts had, with the same
        rates and the same draws from the ``fail`` stream."""
        if self._draws is None:
            self._draws = reliability.ClusterFailureSampler(self.classes, self.plant.n_nodes, rate_scale=0.0)
        nxt = self.e.sampler.next_sample_s
        boundary = nxt if nxt > self.env.now else self.env.now + self.e.dt_s
        accel, scale = self.state.node_accel, self.rate_scale()
        # the update is a pure function of the two factors: the same arrays, the same rates
        last = self._last
        if last is None or last[0] is not scale or last[1] is not accel:
            self._last = (scale, accel)
            # an unchanged scale (the same array) is not passed again: its sums are kept
            # (rate scales and Arrhenius factors are >= 0 by construction: not re-checked;
            # both arrays are replaced, never written in place, as the identity test above
            # already assumes, so the sampler keeps them without a copy)
            self._draws.update(rate_scale=None if last is not None and last[0] is scale else scale,
                               thermal_acceleration=accel if self._unit_gpu_factor
                               else accel * self.gpu_rate_factor, checked=False, borrowed=True)
        left_s = boundary - self.env.now
        draws, rng = self._draws, self.e.rng["fail"]
        hit = None
        if draws.total_rate_per_s > 0.0:
            dt_s = self._waiting_s(rng, 1.0 / draws.total_rate_per_s)
            if dt_s <= left_s:
                self._rewind(rng)       # the stream as one draw at a time would have left it
                hit = draws.place(rng, dt_s, left_s)
        if hit is not None:
            # the process used to end such an interval with a timeout scheduled after the
            # sampler's, so from the next sample on it drew after the sample
            self.after_sample = True
            assert self._wake is not None  # the process sleeps on it from its start
            self._wake.succeed((hit, left_s))

    def _waiting_s(self, rng: np.random.Generator, scale_s: float) -> float:
        """``rng.exponential(scale_s)`` [s], the waiting time :meth:`draw` draws at every
        sample, taken from a block of standard exponentials drawn at once: numpy fills a block
        one number at a time with the same algorithm and ``exponential(s)`` is ``s`` times a
        standard one, so these are the same numbers (tests/sim/test_sampler_speed.py); the
        stream is put back where single draws would have left it before anything else draws
        from it (:meth:`_rewind`)."""
        i = self._exp_next
        if i >= len(self._exp_block):
            self._exp_state = dict(rng.bit_generator.state)
            self._exp_block, i = rng.standard_exponential(_EXP_BLOCK), 0
        self._exp_next = i + 1
        return float(scale_s * self._exp_block[i])

    def _rewind(self, rng: np.random.Generator) -> None:
        """Put the stream where drawing the block's used numbers one by one would have left
        it, and drop the rest of the block."""
        if self._exp_state is not None:
            rng.bit_generator.state = self._exp_state
            rng.standard_exponential(self._exp_next)
        self._exp_block, self._exp_next, self._exp_state = _NO_BLOCK, 0, None

    def su_nodes(self, u: int) -> np.ndarray:
        """The nodes of scalable unit ``u``, ascending (``np.flatnonzero(node_su == u)``
        without a pass over every node: the units' nodes are indexed once)."""
        if self._su_order is None:
            su = self.plant.node_su
            order = np.argsort(su, kind="stable")
            self._su_order = (order, np.searchsorted(su[order], np.arange(int(su.max()) + 2)))
        order, bounds = self._su_order
        return order[bounds[u]:bounds[u + 1]]

    def detection_delay_s(self, c) -> float:
        if c.detection == "immediate":
            return 0.0      # what the draw below returns for it, without a draw (most classes)
        f = self.s.failures
        return float(reliability.sample_detection_delay_s(
            self.e.rng["detect"], c.detection, health_check_interval_s=f.health_check_interval_s,
            watchdog_timeout_s=f.watchdog_timeout_s, sdc_mean_s=f.sdc_detection_mean_s))

    def fail(self, n: int, k: int) -> None:
        """Failure of class ``k`` on node ``n`` now."""
        c = self.classes[k]
        e, p, st = self.e, self.plant, self.state
        detect_s = self.detection_delay_s(c)
        name = e.node_name(n)              # once per failure: its events all name the node
        e.log("failure", name, c.name)
        why = f"{c.name} on {name}"
        if c.detection == "silent" and c.scope in ("node", "job"):
            self.env.process(self._silent_corruption(n, c, detect_s, name))
            return
        if c.scope == "node":
            st.node_healthy[n] = False
            e.jobs.interrupt_nodes(np.array([n]), why, detect_s)
        elif c.scope == "job":
            e.jobs.interrupt_nodes(np.array([n]), why, detect_s)
        elif c.scope == "rail_su":
            u = p.node_su[n]
            st.su_degraded[u] += 1
            e.jobs.interrupt_nodes(self.su_nodes(int(u)), f"{c.name} in SU {u}", detect_s)
        if c.repair != "none":
            self.env.process(self._repair(n, c, detect_s, name=name))

    def _silent_corruption(self, n: int, c, detect_s: float, name: str):
        """Silent data corruption: the job keeps training on corrupt state until the numerics
        checks notice, then rolls back past every checkpoint written since the corruption."""
        e, st = self.e, self.state
        t0 = self.env.now
        j = int(st.node_job[n])
        yield self.env.timeout(detect_s)
        e.log("detected", name, f"{c.name} after {detect_s / H:.2f} h")
        if j >= 0:
            job = e.jobs[j]
            e.jobs.advance(job)
            thrown = job.roll_back_before(t0)
            e.log("rollback", job.spec.name, f"{c.name}: {thrown:.4g} checkpointed tokens discarded")
            if job.nodes.size and job.status != "waiting":
                e.jobs.interrupt_nodes(job.nodes, f"{c.name} on {name}", 0.0)
        if c.scope == "node" and st.node_up[n]:
            st.node_healthy[n] = False
            e.jobs.interrupt_nodes(np.array([n]), f"{c.name} on {name}", 0.0)
        if c.repair != "none":
            # the repair clock (MTTR: failure -> back in service) starts at the corruption,
            # not at its detection
            self.env.process(self._repair(n, c, 0.0, detected=True, name=name, failed_s=t0))

    def _repair(self, n: int, c, detect_s: float, *, name: str, detected: bool = False,
                failed_s: float | None = None):
        """Repair node ``n`` (named ``name``) after failure class ``c``, detected ``detect_s``
        [s] from now (already logged as detected when ``detected``). ``failed_s`` [s]: the
        failure's time, when it was before now (silent corruption found later); the repair
        time (``repair_times_s``, the open repairs' ages) runs from it."""
        e, st = self.e, self.state
        rng = e.rng["repair"]
        rid, self._next_repair = self._next_repair, self._next_repair + 1
        t0 = self.env.now if failed_s is None else failed_s
        self.open_repairs[rid] = t0
        yield self.env.timeout(detect_s)
        if not detected:
            e.log("detected", name, c.name)
        how = self._repair_how.get(c)
        if how is None:
            how = self._repair_how[c] = (
                self.spare_stock.get(c.part, self.spare_stock.get("*")) if c.part else None,
                repair_lognormal_params(c.repair))
        pool, (median_s, log_sigma) = how
        if c.repair == "hardware" and pool is not None:
            # one-for-one replenishment: every demand orders a replacement at once (Palm's
            # model, as reliability.spares_fill_rate assumes); the part is taken before a
            # technician is called, so no technician waits idle
            self._order_spare(pool)
            yield pool.get(1)
        if c.repair == "hardware":
            with self.crew.request() as req:
                yield req
                e.log("repair_start", name, c.name)
                st.node_repairing[n] = True
                # reliability.sample_repair_duration_s(rng, c.repair), its law looked up once
                yield self.env.timeout(lognormal_duration_s(rng, median_s, log_sigma))
        else:
            e.log("repair_start", name, c.name)
            st.node_repairing[n] = True
            yield self.env.timeout(lognormal_duration_s(rng, median_s, log_sigma))
        st.node_repairing[n] = False
        del self.open_repairs[rid]
        self.repair_times_s.append(self.env.now - t0)
        if c.scope == "rail_su":
            st.su_degraded[self.plant.node_su[n]] -= 1
        st.node_healthy[n] = True
        e.log("repair_end", name, f"{c.name}, {(self.env.now - t0) / H:.2f} h")
        e.scheduler.schedule()

    #: a spare ordered by a repair arrives by a timeout's callback (False: the reference, a
    #: process per order; the same stock at the same instants, issue 19)
    restock_by_callback = True

    def _order_spare(self, pool: simpy.Container) -> None:
        """Order one replacement part now; it is put in ``pool`` after ``restock_days``.

        The part arrives by a callback of the lead-time timeout, which puts it in stock in
        the same simpy step as the reference process (:meth:`_restock`), whose resumption is
        that timeout's callback: the same put, the same waiting repairs served in the same
        order. The process also cost an initialisation step, a wait on its put and an end
        event per order: ~138,000 orders in the million-GPU year
        (tests/sim/test_failures_speed_paths.py)."""
        if not self.restock_by_callback:
            self.env.process(self._restock(pool))
            return

        def arrive(_ev: simpy.Event) -> None:
            pool.put(1)
        self.env.timeout(self.s.failures.restock_days * DAY).callbacks.append(arrive)

    def _restock(self, pool: simpy.Container):
        yield self.env.timeout(self.s.failures.restock_days * DAY)
        yield pool.put(1)

    def thermal_shutdown(self, nodes: np.ndarray, gpu_temp_c: np.ndarray) -> None:
        """GPUs past their shutdown temperature: the nodes go down, their jobs stop, and
        operators bring them back an hour later."""
        e = self.e
        for n in nodes:
            e.log("thermal_shutdown", e.node_name(n), f"GPU {gpu_temp_c[n]:.1f} C")
        self.state.node_healthy[nodes] = False
        e.jobs.interrupt_nodes(nodes, "GPU thermal shutdown")
        self.env.process(self._thermal_recover(nodes))

    def _thermal_recover(self, nodes: np.ndarray):
        yield self.env.timeout(H)      # operators let the node cool, then reboot it
        self.state.node_healthy[nodes] = True
        self.e.log("thermal_recovered", f"{len(nodes)} nodes", "")
        self.e.scheduler.schedule()

    def record(self, i: int, rec) -> None:
        st, p = self.state, self.plant
        ver = (st.version("node_healthy"), st.version("node_repairing"), st.version("rack_delivered"))
        if self._failed is None or self._failed[0] != ver:      # recounted only after a write
            # failed or in repair (a rail/NIC repair leaves its node healthy but under repair);
            # the nodes' delivered mask is gathered again only after a delivery (a 131,072-node
            # gather, 77 us, at every sample with a failure or repair: issue 19), and
            # count_nonzero counts the same nodes as a bool sum, without the sum's cast
            if self._delivered is None or self._delivered[0] != ver[2]:
                self._delivered = (ver[2], st.rack_delivered[p.node_rack].view(np.ndarray))
            self._failed = (ver, np.count_nonzero((~st.node_healthy | st.node_repairing) & self._delivered[1]),
                            np.count_nonzero(st.node_repairing))
        rec["nodes_failed"][i] = self._failed[1]
        rec["nodes_in_repair"][i] = self._failed[2]
        pools = self._pools
        rec["spares_in_stock"][i] = pools[0].level if len(pools) == 1 else sum(pool.level for pool in pools)

    def record_range(self, i0: int, i1: int, rec) -> None:
        """A quiet stretch: no event runs in it, so no repair, restock or failure changes the
        counts; sample ``i0``'s row repeats."""
        repeat_record(self, i0, i1, rec)


class Maintenance(Component):
    """Announced maintenance windows: every running job checkpoints at the announcement
    (no work lost), stops for the window, and relaunches."""

    name = "maintenance"
    emits = ("maintenance",)

    def processes(self):
        yield self._windows()

    def _windows(self):
        f, e = self.s.failures, self.e
        if f.planned_maintenance_per_day <= 0:
            return
        times_s = reliability.sample_planned_maintenance_times_s(
            e.rng["misc"], e.horizon_s, f.planned_maintenance_per_day / DAY)
        for t_s in np.asarray(times_s, float):
            if t_s > self.env.now:
                yield self.env.timeout(t_s - self.env.now)
            e.log("maintenance", "cluster", f"{f.planned_maintenance_downtime_s:.0f} s window")
            for job in e.jobs:
                if job.status in ("running", "checkpointing") and job.nodes.size:
                    e.jobs.advance(job)
                    job.commit(self.env.now)
                    e.jobs.interrupt_nodes(job.nodes, "planned maintenance", f.planned_maintenance_downtime_s)
