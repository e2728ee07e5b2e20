"""The sampler: every ``simulation.sample_interval_s`` it evaluates node power -> rack power
-> inlet temperature -> GPU clock, temperature and failure acceleration for every node and
rack at once, applies what follows (thermal shutdowns, clock changes, breaker trips), and
asks every component to record its outputs."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from twin import power, thermal
from twin.power.node import _N_PHASES, _frozen, _scalar, node_power_plan
from twin.sim import coupling
from twin.sim.component import Component


class PhysicsResult(NamedTuple):
    """One vectorised evaluation of the plant's physics at a sample."""

    rack_power_w: np.ndarray       # (R,) rack IT power [W]
    inlet_c: np.ndarray            # (R,) inlet temperature [degC]
    clock: np.ndarray              # (N,) thermal clock fraction [-], 0 = shut down
    gpu_temp_c: np.ndarray         # (N,) GPU temperature [degC]
    accel: np.ndarray              # (N,) Arrhenius factor [-]
    rack_gpu_max_c: np.ndarray     # (R,) hottest GPU of each powered rack [degC], NaN off
    any_shutdown: bool = True      # some node's clock is 0 (past its shutdown temperature)


#: inlet moves [K] that keep the previous inlets (issues 14/19): the coupled loop inlets -> GPU
#: clock and temperature -> node power -> rack heat -> inlets converges across samples, and its
#: last steps move the inlets by round-off only (Blue Vela nine months: most moves of the
#: inlet-only evaluations are below 1e-9 K, bench/RESULTS.md); sensors read to +-0.5 K
INLET_TOLERANCE_K = 1e-6
#: nodes a rack -> (the unsigned integer of that many bytes, its byte-repeating multiplier):
#: a rack's one-byte phase codes compared as one word (:meth:`Sampler._rack_split`)
_RACK_WORDS = {2: (np.uint16, np.uint16(0x0101)), 4: (np.uint32, np.uint32(0x01010101)),
               8: (np.uint64, np.uint64(0x0101010101010101))}
#: the most nodes per rack for which a rack's hottest GPU is taken column by column (one
#: ``maximum`` call per node of a rack instead of ``reduceat``'s segment loop)
RACK_MAX_COLUMNS = 8
#: the fewest columns :meth:`Sampler._rack_sum` sums by one running sum along each row (fewer:
#: k column adds, as cheap; Blue Vela's RPP loads, 8 racks each: 3 numpy calls instead of 9)
ROW_ACCUMULATE_FROM = 4
#: the fewest nodes for which node power, GPU temperature and failure acceleration are
#: evaluated per rack (:meth:`Sampler._by_rack`): the per-rack path saves elementwise work on
#: ``N - R`` elements but costs ~20 more numpy calls an evaluation (the split, the odd nodes),
#: so below this the per-node path is the faster one (Blue Vela, 256 nodes in 128 racks: 40
#: against 60-120 us an evaluation; 512 nodes in 128 racks: even; Frontier-size, 9,216 nodes:
#: 155 against 230 us; issue 14)
PER_RACK_FROM_NODES = 2048


class Sampler(Component):
    """Drives the samples; between events the plant sits in a steady state, so an
    evaluation is reused while :meth:`ClusterState.physics_inputs` and the halls' models
    are unchanged."""

    name = "sampler"
    #: see :data:`PER_RACK_FROM_NODES` (0: per rack at every size, as ``node_power_per_rack`` says)
    per_rack_from_nodes = PER_RACK_FROM_NODES
    #: the full-clock GPU temperature per node as the inlet plus the phase's rise kept with the
    #: phase array, and the Arrhenius law prepared once (issue 14; False: the coupling's
    #: ``equilibrium_gpu_state`` and ``thermal.arrhenius_acceleration`` each time, the reference)
    gpu_rise_per_phase = True
    _rise_c: tuple | None = None        # (phase array, GPU cap, GPU figures, rise [K (N,)])
    _rise_t: tuple | None = None        # (GPU cap, GPU figures, rise of each phase code [K])
    _arr: tuple | None = None           # (reference temperature, energy, the prepared law or None)
    #: columns from which :meth:`_rack_sum` sums a row by one running sum (see there; a number
    #: above RACK_MAX_COLUMNS: the column adds, the reference)
    row_accumulate_from = ROW_ACCUMULATE_FROM
    _acc_bufs: dict | None = None       # (rows, columns) -> (zero-led buffer, its value columns, sums)
    #: each rack's hottest GPU as the fold's own array while every rack is on (issue 14; False:
    #: ``np.where(rack_on, ..., nan)`` at every evaluation, the reference)
    all_on_kept = True
    _on_all: tuple | None = None        # (rack_on array, every rack on)
    reads = ("node_phase", "rack_on", "rack_inlet_c", "node_clock", "brake_clock", "psu_capacity_w")
    writes = ("rack_inlet_c", "node_clock", "node_accel")
    outputs = ("rack_power_w", "rack_gpu_temp_max_c", "rack_state", "gpus_powered", "gpus_healthy",
               "gpus_busy", "throttle_fraction", "rack_inlet_c")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.next_sample_s = 0.0
        self.throttled_node_s = 0.0
        self._key: tuple | None = None
        self._physics: PhysicsResult | None = None
        self._gpn: int | None = None        # GPUs per node when uniform (0: mixed)
        self._thr: tuple | None = None      # (up mask, node_clock version, throttled nodes)
        #: fill quiet stretches of samples without a simpy wake-up each (issue 19; False
        #: samples one by one, the reference the bulk path is tested against)
        self.bulk = True
        #: pass node power one clock fraction (1.0) when every node runs at full clock (issue
        #: 19; False passes the per-node array, the reference)
        self.full_clock_scalar = True
        self._quiet = False                 # the last sample changed nothing: the next repeats it
        self._throttled_last = 0            # throttled nodes of the last sample
        self._protect_clear = False         # the inlet protection found nothing under this key
        self.next_step = None               # the sampler's pending timeout (the parked jobs wake after it)
        self.next_step_s: float | None = None   # ... and its time [s]
        self._clk: tuple | None = None      # (clock and brake versions, their product)
        self._nkw: tuple | None = None      # (PSU capacity version, node power keywords)
        #: node power at full clock through a plan prepared per node power keywords and GPU cap
        #: (issue 19; False calls ``power.node_power_w`` each time, the reference)
        self.node_power_planned = True
        self._plan: tuple | None = None     # (keywords, GPU cap, node_power_plan's function or None)
        #: node power, GPU temperature and failure acceleration evaluated once per rack where a
        #: rack's nodes share its phase (issue 19; False evaluates every node, the reference)
        self.node_power_per_rack = True
        self._split: tuple | None = None    # (phase array, its racks' first phases, the nodes that differ)
        self._cnt: tuple | None = None      # (masks, clock version, the counts _write records)
        self._mask: tuple | None = None     # (mask version, up, powered, in-service masks)
        self._full_ver = -1                 # node_clock version at which every clock was 1
        self._net: tuple | None = None      # (rack_on, the racks' network power [W])
        self._stat: tuple | None = None     # what the physics reads from the plant and scenario (static)
        #: the hottest GPU of each rack as the maximum of k columns when every rack holds the
        #: same k <= RACK_MAX_COLUMNS nodes (issue 19; False: ``np.maximum.reduceat``, the reference)
        self.rack_max_columns = True
        #: each rack's power as k column adds into zeros, the additions ``bincount`` does
        #: (issue 19; False: ``np.bincount``, the reference)
        self.rack_sum_columns = True
        self._recorders: tuple | None = None    # the other components, in order (their record)
        #: an evaluation whose inlets move none by more than this [K] keeps the state's
        #: inlets (and so the physics key: no re-evaluation for the move); 0 writes every
        #: move, the reference path
        self.inlet_tolerance_k = INLET_TOLERANCE_K
        self.evaluations = 0                # fresh physics evaluations so far
        self._flush_buf: np.ndarray | None = None   # the window's rack power as float64 (_flush)
        self._rpp_m: int | None = None      # racks per RPP in equal contiguous blocks, else 0 (_rpp_load_w)
        #: (per-node GPU temperatures, their racks' values, the odd nodes) of _gpu_state's per-rack path
        self._lead_t: tuple | None = None

    def processes(self):
        yield self._samples()

    def last_rack_power_w(self) -> np.ndarray:
        """Rack power of the last evaluation [W (R,)], zeros before the first sample."""
        return self._physics.rack_power_w if self._physics is not None else np.zeros(self.plant.n_racks)

    def _samples(self):
        e = self.e
        n = e.n_samples
        step = max(n // 100, 1)
        fail = e.failures if e.failures.enabled else None
        i = 0
        while i < n:
            e.jobs.wake_parked_ahead()      # jobs parked ahead of the sample wake before it
            after = self._draw_before(fail)
            self.next_sample_s = (i + 1) * e.dt_s
            self.sample(i)
            if fail is not None and after:
                fail.draw()
            if e.progress is not None and i % step == 0:
                e.progress(i / n)
            i += 1
            pending = True                  # the parked jobs' wake-ups at this instant (Jobs.wake_parked)
            if self._quiet and self.bulk and i < n and e.jobs.wake_parked(self.env.now + e.dt_s, dry=True):
                e.jobs.wake_parked(self.env.now + e.dt_s)
                i, pending = self._fill(i, n, step)
            self.next_step, self.next_step_s = self.env.timeout(e.dt_s), self.env.now + e.dt_s
            if pending:                     # after this timeout, as their own timeouts came
                e.jobs.wake_parked(self.next_step_s)
            yield self.next_step

    @staticmethod
    def _draw_before(fail) -> bool:
        """Draw the failures of the coming interval now if they come before the sample;
        returns True when they come after it (the caller then draws after the sample).

        Where the failure process used to wake: before the sample until the first interval
        with a failure, after it from then on (``Failures.after_sample``)."""
        if fail is None:
            return False
        if fail.after_sample:
            return True
        fail.draw()
        return False

    def _fill(self, i0: int, n: int, step: int) -> tuple[int, bool]:
        """Samples ``i0, i0 + 1, ...`` of a quiet stretch, without a simpy wake-up each;
        returns the first sample not filled, and True when the parked jobs' wake-ups of the
        last filled one are left to the caller (one of them unparks, or a draw queued a
        failure: both come after the sampler's next timeout).

        Sample ``i0 - 1`` changed nothing (its physics were reused, it wrote nothing to the
        state, no GPU shut down, every breaker is at or below rating), so while no event is
        queued up to the next sample's time, that sample would see the same state, reuse the
        same physics and repeat the same checks. Only the clock moves: the jobs advance to
        each sample's time (their tokens accrue sample by sample, the same sums in the same
        order) and record; the throttled node-seconds add up sample by sample; every other
        component records the stretch at once (:meth:`Component.record_range`). The clock
        steps by ``dt`` as the simpy timeouts would (``t + dt``, not ``i dt``), and a stretch
        ends at the recorder's window, which is then flushed as :meth:`sample` would."""
        e, env, rec = self.e, self.env, self.e.recorder
        dt, end = e.dt_s, min(n, rec.window_end())
        jobs, thr = e.jobs, self._throttled_last
        t, i, pending = env.now, i0, False
        fail = e.failures if e.failures.enabled else None
        while i < end and t + dt < env.peek():
            t = t + dt
            env.skip_to(t)
            jobs.wake_parked_ahead()    # (an unparked job's wake-up ends the stretch after this sample)
            # a quiet sample changes no rate: the draw sees the same state before or after
            # it; a failure within the interval queues an event now, which ends the stretch
            after = self._draw_before(fail)
            self.next_sample_s = (i + 1) * dt
            jobs.fill_sample(i, t)      # advance_all() and record(i), done for the stretch at once
            self.throttled_node_s += thr * dt
            if fail is not None and after:
                fail.draw()
            if e.progress is not None and i % step == 0:
                e.progress(i / n)
            i += 1
            # the draw found a failure in this interval, or a parked job wakes after this sample
            if env.peek() <= t or not jobs.wake_parked(t + dt, dry=True):
                pending = True
                break
            jobs.wake_parked(t + dt)
        jobs.fill_flush()
        if i > i0:
            self.record_range(i0, i, rec)
            for c in e.components:
                if c is not self and c is not jobs:
                    c.record_range(i0, i, rec)
            self._flush(i - 1)
        return i, pending

    def _gpus(self, nodes: np.ndarray) -> int:
        """GPUs on the nodes of the (N,) mask, one of the state's cached masks (a count,
        cached with the mask, times the GPUs per node when every node holds the same number)."""
        gpn = self.plant.node_gpus
        if self._gpn is None:
            self._gpn = int(gpn[0]) if len(gpn) and bool(np.all(gpn == gpn[0])) else 0
        return self.state.count(nodes) * self._gpn if self._gpn else int(gpn[nodes].sum())

    def _throttled(self, up: np.ndarray) -> int:
        """Up nodes running below full clock [-], cached with the up mask and the clocks."""
        key = (up, self.state.version("node_clock"))
        if self._thr is None or self._thr[0] is not up or self._thr[1] != key[1]:
            # every clock full (set from the coupling's full clocks, unwritten since): none
            full = self.full_clock_scalar and key[1] == self._full_ver
            self._thr = (up, key[1], 0 if full else int((self.state.node_clock[up] < 1).sum()))
        return self._thr[2]

    def _clock_fraction(self):
        """GPU clock fraction of every node, thermal clock times the power brake [-]: the
        product kept until either is written; 1.0 (one number) when every product is at or
        above 1, which node power reads as full clock either way."""
        st = self.state
        ver = (st.version("node_clock"), st.version("brake_clock"))
        if self._clk is None or self._clk[0] != ver:
            f = st.node_clock.view(np.ndarray) * st.brake_clock
            self._clk = (ver, 1.0 if self.full_clock_scalar and f.size and f.min() >= 1.0 else f)
        return self._clk[1]

    def _node_kwargs(self) -> dict:
        """``PowerChain.node_kwargs()``, kept until the PSU capacity is written."""
        ver = self.state.version("psu_capacity_w")
        if self._nkw is None or self._nkw[0] != ver:
            self._nkw = (ver, self.e.power.node_kwargs())
        return self._nkw[1]

    def _static(self) -> tuple:
        """What the physics reads from the plant and the scenario, which a run never changes:
        each node's rack, the rack count, the racks' first nodes, the nodes per rack when every
        rack holds the same number (else 0), the coupling's GPU figures, the Arrhenius
        reference temperature [degC] and activation energy [eV], the network power per rack [W]."""
        if self._stat is None:
            p, s = self.plant, self.s
            rn = np.asarray(p.rack_nodes)
            k = int(rn[0]) if len(rn) and bool(np.all(rn == rn[0])) else 0
            if k and not np.array_equal(p.node_rack, np.repeat(np.arange(p.n_racks), k)):
                k = 0                       # not k contiguous nodes per rack, in rack order
            gpu_kw = {"gpu_tdp_w": p.node_param("gpu_tdp_w"), "gpu_idle_w": p.node_param("gpu_idle_w"),
                      "thermal_resistance_k_per_w": p.node_param("gpu_thermal_resistance_k_per_w"),
                      "slowdown_c": p.node_param("gpu_slowdown_c"),
                      "hw_slowdown_c": p.node_param("gpu_hw_slowdown_c"),
                      "shutdown_c": p.node_param("gpu_shutdown_c")}
            self._stat = (p.node_rack, p.n_racks, p.rack_first_node, k, gpu_kw,
                          s.failures.arrhenius_reference_temp_c, s.failures.activation_energy_ev,
                          s.hardware.network_power_per_rack_w)
        return self._stat

    def _rack_max(self, node_values: np.ndarray, first: np.ndarray, k: int) -> np.ndarray:
        """Each rack's largest node value [(R,)], racks holding contiguous nodes from ``first``.

        ``np.maximum.reduceat`` folds each rack's values left to right with ``maximum``;
        with the same ``k`` nodes in every rack (``k`` of :meth:`_static`, at most
        :data:`RACK_MAX_COLUMNS`) the same folds run as ``k - 1`` calls over the columns
        of the (R, k) view, the same comparisons in the same order (speed only, issue 19;
        ``rack_max_columns = False`` is the reference)."""
        if not (self.rack_max_columns and 0 < k <= RACK_MAX_COLUMNS):
            return np.maximum.reduceat(node_values, first)
        lt = getattr(self, "_lead_t", None)
        if lt is not None and lt[0] is node_values:     # the per-rack GPU state's: fold the odd racks only
            return self._rack_max_by_rack(node_values, lt[1], lt[2], k)
        v = node_values.reshape(-1, k)
        if k == 1:
            return v[:, 0]
        m = np.maximum(v[:, 0], v[:, 1])
        for j in range(2, k):
            np.maximum(m, v[:, j], out=m)
        return m

    @staticmethod
    def _rack_max_by_rack(gpu_t: np.ndarray, t_lead: np.ndarray, odd: np.ndarray, k: int) -> np.ndarray:
        """:meth:`_rack_max` of per-node values ``gpu_t`` [(N,)] that repeat each rack's
        ``t_lead`` [(R,)] at its nodes except the ``odd`` ones (:meth:`_gpu_state`'s per-rack
        path): ``maximum`` folded over k equal values is that value (NaN and signed zeros
        included), so only the racks holding an odd node are folded over their nodes, in the
        column order of :meth:`_rack_max` (speed only, issue 19)."""
        out = t_lead.copy()
        if odd.size:
            racks = np.unique(odd // k)
            v = gpu_t.reshape(-1, k)[racks]
            m = v[:, 0].copy()
            for j in range(1, k):
                np.maximum(m, v[:, j], out=m)
            out[racks] = m
        return out

    def _rack_sum(self, node_w: np.ndarray, node_rack: np.ndarray, n_racks: int, k: int) -> np.ndarray:
        """Each rack's sum of its nodes' values [(R,) float64].

        ``np.bincount(node_rack, weights=...)`` adds each weight to its rack's float64 total,
        starting from 0.0, in node order; with the same ``k`` contiguous nodes in every rack
        (``k`` of :meth:`_static`, at most :data:`RACK_MAX_COLUMNS`) the same additions run as
        ``k`` adds of the columns of the (R, k) view into zeros (speed only, issue 19;
        ``rack_sum_columns = False`` is the reference, ``bincount``). From
        :data:`ROW_ACCUMULATE_FROM` columns on, the same additions as one running sum along
        each row of a buffer whose first column is 0.0 (``np.add.accumulate`` adds left to
        right: 0 + v0, then + v1, ...): three numpy calls instead of ``k + 1`` (issue 14)."""
        if not (self.rack_sum_columns and 0 < k <= RACK_MAX_COLUMNS):
            return np.bincount(node_rack, weights=node_w, minlength=n_racks)
        v = np.asarray(node_w, float).reshape(-1, k)
        if k >= self.row_accumulate_from:
            return self._row_sums(v)
        acc = np.zeros(n_racks)
        for j in range(k):
            acc += v[:, j]
        return acc

    def _row_sums(self, v: np.ndarray) -> np.ndarray:
        """The sums ``((0.0 + v[:, 0]) + v[:, 1]) + ...`` of the rows of ``v`` (R, k) [(R,)],
        a new array: the rows copied after a column of zeros into a buffer kept per shape,
        summed along by ``np.add.accumulate``, the last column taken."""
        bufs = self._acc_bufs
        if bufs is None:
            bufs = self._acc_bufs = {}
        b = bufs.get(v.shape)
        if b is None:
            z = np.zeros((v.shape[0], v.shape[1] + 1))
            b = bufs[v.shape] = (z, z[:, 1:], np.empty_like(z))
        np.copyto(b[1], v)
        np.add.accumulate(b[0], axis=1, out=b[2])
        return b[2][:, -1].copy()

    def _node_power_plan(self, kw: dict, cap):
        """``node_power_plan(cap, **kw)``, kept while the keywords (renewed with the PSU
        capacity) and the GPU cap are the same objects; None when switched off or where the
        plan does not apply (figures per node)."""
        pl = self._plan
        if pl is None or pl[0] is not kw or pl[1] is not cap:
            pl = self._plan = (kw, cap, node_power_plan(cap, **kw) if self.node_power_planned else None)
        return pl[2]

    def _rack_split(self, phase: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """With the same ``k > 1`` contiguous nodes in every rack (``k`` of :meth:`_static`)
        and ``node_power_per_rack`` on: the phase of each rack's first node (R,) and the nodes
        whose phase differs from their rack's first [node indices], kept with the (cached,
        read-only) phase array; else None."""
        if not (self.node_power_per_rack and k > 1):
            return None
        sp = self._split
        if sp is None or sp[0] is not phase:
            ph = phase.reshape(-1, k)
            lead = ph[:, 0]
            word = _RACK_WORDS.get(k) if phase.dtype.itemsize == 1 and phase.flags.c_contiguous else None
            if word is not None:
                # one-byte codes, k of them a rack: the rack is one k-byte word, uniform when
                # it equals its first byte repeated (one compare a rack; issue 19)
                rep = lead.view(np.uint8).astype(word[0])
                rep *= word[1]
                mixed = phase.view(word[0]) != rep
            else:
                # the racks with a node unlike the first (a column at a time: a broadcast compare
                # over the strided (R, k) view costs ~10x more), then those racks' nodes
                mixed = ph[:, 1] != lead
                for j in range(2, k):
                    mixed |= ph[:, j] != lead
            racks = np.flatnonzero(mixed)
            sub = ph[racks]
            pos = np.flatnonzero(sub != sub[:, :1])     # (m, k) positions, ascending
            odd = racks[pos // k] * k + pos % k
            sp = self._split = (phase, lead, odd)
        return sp[1], sp[2]

    @staticmethod
    def _by_rack(f, split, phase: np.ndarray, rack_x: np.ndarray, node_rack: np.ndarray, k: int,
                 sums: bool = False):
        """``f(phase, rack_x[node_rack])`` [(N,)] for an elementwise ``f``: evaluated once per
        rack at its first node's phase, repeated to the rack's nodes, and again at the nodes
        whose phase differs (``split`` of :meth:`_rack_split`). The same inputs, so the same
        floats, over ~1/k of the elements (speed only, issue 19).

        ``sums``: each rack's sum of those node values [(R,)] instead, the additions
        :meth:`_rack_sum` makes over the (R, k) columns into zeros: a rack of one phase adds
        its value k times, and only the racks holding a node whose phase differs are summed
        from their nodes' values (no (N,) array)."""
        lead, odd = split
        v = f(lead, rack_x)
        if sums:
            acc = np.zeros(v.shape)
            for _ in range(k):
                acc += v
            if odd.size:
                racks, inv = np.unique(odd // k, return_inverse=True)
                rows = np.repeat(v[racks], k).reshape(-1, k)
                rows[inv, odd % k] = f(phase[odd], rack_x[node_rack[odd]])
                mixed = np.zeros(len(racks))
                for j in range(k):
                    mixed += rows[:, j]
                acc[racks] = mixed
            return acc
        out = np.repeat(v, k)
        if odd.size:
            out[odd] = f(phase[odd], rack_x[node_rack[odd]])
        return out

    def _gpu_state(self, split, inlet_c: np.ndarray, phase: np.ndarray, cap, node_rack: np.ndarray, k: int,
                   gpu_kw: dict, ref_c, ea_ev) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """GPU clock fraction, temperature [degC] and Arrhenius failure acceleration of every
        node [(N,) each] at the racks' inlets ``inlet_c`` [degC (R,)]:
        :func:`coupling.equilibrium_gpu_state` and :func:`thermal.arrhenius_acceleration`.

        When every GPU keeps its full clock (its full-clock temperature below slowdown and
        shutdown, the coupling's own shortcut) both are elementwise in (phase, inlet), so with
        a ``split`` and scalar GPU figures they are evaluated per rack (:meth:`_by_rack`);
        otherwise, or ``split`` None, per node (the reference)."""
        if split is not None and _scalar(cap) and all(_scalar(v) for v in gpu_kw.values()):
            def temp(ph, inlet):
                return coupling.full_clock_gpu_state(
                    inlet, ph, cap, gpu_tdp_w=gpu_kw["gpu_tdp_w"], gpu_idle_w=gpu_kw["gpu_idle_w"],
                    thermal_resistance_k_per_w=gpu_kw["thermal_resistance_k_per_w"])[1]
            lead, odd = split
            t_lead = temp(lead, inlet_c)
            t_odd = temp(phase[odd], inlet_c[node_rack[odd]])
            t_max = max(t_lead.max(), t_odd.max()) if odd.size else t_lead.max()
            if t_lead.size and coupling.keeps_full_clock(t_max, gpu_kw["slowdown_c"], gpu_kw["shutdown_c"]):
                gpu_t = np.repeat(t_lead, k)
                accel = np.repeat(np.asarray(thermal.arrhenius_acceleration(t_lead, ref_c, ea_ev), float), k)
                if odd.size:
                    gpu_t[odd] = t_odd
                    accel[odd] = thermal.arrhenius_acceleration(t_odd, ref_c, ea_ev)
                self._lead_t = (gpu_t, t_lead, odd)     # (for the racks' hottest GPU: _rack_max_by_rack)
                return coupling.full_clock(gpu_t.shape), gpu_t, accel
        if (split is None and self.gpu_rise_per_phase and _scalar(cap) and inlet_c.dtype == np.float64
                and all(_scalar(v) for v in gpu_kw.values())):
            # the coupling's full-clock shortcut with the phase's part (the rise R_th P over
            # the inlet) kept with the phase array: one gather and one add an evaluation
            gpu_t = inlet_c[node_rack]
            np.add(gpu_t, self._rise(phase, cap, gpu_kw), out=gpu_t)
            if gpu_t.size and coupling.keeps_full_clock(np.maximum.reduce(gpu_t), gpu_kw["slowdown_c"],
                                                        gpu_kw["shutdown_c"]):
                arr = self._arrhenius(ref_c, ea_ev)
                accel = (arr(gpu_t) if arr is not None
                         else np.asarray(thermal.arrhenius_acceleration(gpu_t, ref_c, ea_ev), float))
                return coupling.full_clock(gpu_t.shape), gpu_t, accel
        clock, _, gpu_t = coupling.equilibrium_gpu_state(inlet_c[node_rack], phase, cap, **gpu_kw)
        return clock, gpu_t, np.asarray(thermal.arrhenius_acceleration(gpu_t, ref_c, ea_ev), float)

    def _arrhenius(self, ref_c, ea_ev):
        """:func:`coupling.arrhenius_plan` of the figures, kept while they are the same objects
        (the scenario's, for a run; None: per-node figures)."""
        a = self._arr
        if a is None or a[0] is not ref_c or a[1] is not ea_ev:
            a = self._arr = (ref_c, ea_ev, coupling.arrhenius_plan(ref_c, ea_ev))
        return a[2]

    def _rise(self, phase: np.ndarray, cap, gpu_kw: dict) -> np.ndarray:
        """:func:`coupling.full_clock_gpu_temp_rise_k` of the phase array [K (N,)], kept while
        the phase array (the state's: nothing can write it), the GPU cap and the figures are
        the same objects; a phase array that can be written is not kept. Taken from the rise
        of each phase code (the law is elementwise: the same product of the same numbers)."""
        r = self._rise_c
        if r is not None and r[0] is phase and r[1] is cap and r[2] is gpu_kw:
            return r[3]
        t = self._rise_t
        if t is None or t[0] is not cap or t[1] is not gpu_kw:
            # the rise of every phase code (the law elementwise: a node's rise is its code's)
            t = self._rise_t = (cap, gpu_kw, coupling.full_clock_gpu_temp_rise_k(
                np.arange(_N_PHASES), cap, gpu_tdp_w=gpu_kw["gpu_tdp_w"], gpu_idle_w=gpu_kw["gpu_idle_w"],
                thermal_resistance_k_per_w=gpu_kw["thermal_resistance_k_per_w"]))
        rise = t[2].take(phase)
        if type(phase) is np.ndarray and _frozen(phase):
            self._rise_c = (phase, cap, gpu_kw, rise)
        return rise

    def physics(self) -> PhysicsResult:
        """Node power -> rack power -> inlet temperature -> GPU clock, temperature and
        failure acceleration, vectorised over every node and rack."""
        e, st = self.e, self.state
        node_rack, n_racks, first, k, gpu_kw, ref_c, ea_ev, net_w = self._stat or self._static()
        phase = st.node_phase
        split = self._rack_split(phase, k) if len(phase) >= self.per_rack_from_nodes else None
        cap = e.power.gpu_cap_w
        clock_fraction, kw = self._clock_fraction(), self._node_kwargs()
        # (a float: 1.0, every product of clock and brake at or above 1; else per node)
        plan = self._node_power_plan(kw, cap) if type(clock_fraction) is float else None
        # each rack's power summed from its one value where its nodes share its phase (issue
        # 19; needs the column sums, which it makes itself)
        sums = split is not None and self.rack_sum_columns and 0 < k <= RACK_MAX_COLUMNS
        rack_node_w = None
        if plan is not None:            # every clock full: the same law, prepared for these figures
            inlet_rack = st.rack_inlet_c.view(np.ndarray)
            if split is None:
                node_w = plan(phase, inlet_rack[node_rack])
            elif sums:
                rack_node_w = self._by_rack(plan, split, phase, inlet_rack, node_rack, k, True)
            else:
                node_w = self._by_rack(plan, split, phase, inlet_rack, node_rack, k)
        else:
            node_w = power.node_power_w(phase, cap, st.rack_inlet_c.view(np.ndarray)[node_rack],
                                        clock_fraction=clock_fraction, **kw)
        rack_on = st.rack_on
        net = self._net
        if net is None or net[0] is not rack_on:    # the racks' network power, kept with rack_on
            net = self._net = (rack_on, rack_on * net_w)
        if rack_node_w is None:
            rack_node_w = self._rack_sum(node_w, node_rack, n_racks, k)
        rack_w = rack_node_w + net[1]
        inlet_c = e.thermal.inlets_c(rack_w)
        self._lead_t = None
        clock, gpu_t, accel = self._gpu_state(split, inlet_c, phase, cap, node_rack, k, gpu_kw, ref_c, ea_ev)
        rack_gpu_max_c = self._rack_max(gpu_t, first, k)
        if not (rack_gpu_max_c.base is None and rack_gpu_max_c.dtype == np.float64 and self._all_on(rack_on)):
            # (every rack on: the fold's own new array is what np.where would copy)
            rack_gpu_max_c = np.where(rack_on, rack_gpu_max_c, np.nan)
        self._lead_t = None
        # every GPU at full clock (the coupling's shared ones): no shutdown, without a look
        shutdown = clock is not coupling.full_clock(clock.shape) and bool((clock <= 0.0).any())
        return PhysicsResult(rack_w, inlet_c, clock, gpu_t, accel, rack_gpu_max_c, shutdown)

    def sample(self, i: int) -> None:
        e, st = self.e, self.state
        writes = st.write_count()
        e.jobs.advance_all()
        key = st.physics_inputs() + e.thermal.cache_key()
        fresh = key != self._key or self._physics is None
        if fresh:
            self._key = key
            self._physics = self.physics()
            self.evaluations += 1
        ph = self._physics
        assert ph is not None
        # an unchanged key means the inlets hold this evaluation's already; a move within
        # the tolerance keeps the inlets the evaluation read, so the key holds and the
        # round-off steps of the inlet fixed point are not evaluated
        if fresh and not self._inlets_settled(ph.inlet_c):
            st.rack_inlet_c = ph.inlet_c.copy()
        up, powered, in_service = self._masks()
        # servers shut themselves down on a hot inlet: a function of the racks on and their
        # inlets (both in the key), so once clear under this key it stays clear
        if fresh or not self._protect_clear:
            before = st.write_count()
            e.thermal.protect_racks(ph.inlet_c)
            self._protect_clear = st.write_count() == before
        if ph.any_shutdown:
            shut = up & (ph.clock <= 0.0)
            if shut.any():
                e.failures.thermal_shutdown(np.flatnonzero(shut), ph.gpu_temp_c)
        if fresh:       # an unchanged key means the clocks were set from this evaluation already
            changed = self._clocks_changed(ph.clock)
            if changed:     # (equal: the clocks hold these values, none 0, already)
                st.node_clock = np.where(ph.clock > 0, ph.clock, 1.0) if ph.any_shutdown else ph.clock.copy()
            self._full_ver = st.version("node_clock") if ph.clock is coupling.full_clock(ph.clock.shape) else -1
            st.node_accel = ph.accel
            if changed:
                e.jobs.rates_changed()
        if fresh or not e.power.breakers_steady:     # at or below rating the same load repeats the same check
            e.power.check_breakers(self._rpp_load_w(ph.rack_power_w))
        rec = e.recorder
        # the masks as they were before this sample's shutdowns (cached by the state)
        throttled = self._write(i, i + 1, rec, ph, powered, in_service, up)
        self.throttled_node_s += throttled * e.dt_s
        for c in self._recorders or self._others():
            c.record(i, rec)
        self._flush(i)
        self._throttled_last = throttled
        self._quiet = (not fresh and not ph.any_shutdown and e.power.breakers_steady
                       and st.write_count() == writes)

    def _rpp_load_w(self, rack_w: np.ndarray) -> np.ndarray:
        """Each RPP's load [W (P,)] of rack power ``rack_w`` [W (R,)]: ``np.bincount`` of the
        plant's rack -> RPP map; where every RPP takes the same m <= RACK_MAX_COLUMNS racks
        in a contiguous block, in order, the same adds as m column adds (:meth:`_rack_sum`;
        speed only, issue 19)."""
        p = self.plant
        if self._rpp_m is None:
            rr, n_p = np.asarray(p.rack_rpp), len(p.rpp_limit_w)
            m = len(rr) // n_p if n_p else 0
            ok = m > 0 and m * n_p == len(rr) and np.array_equal(rr, np.repeat(np.arange(n_p), m))
            self._rpp_m = m if ok else 0
        if self._rpp_m:
            return self._rack_sum(rack_w, p.rack_rpp, len(p.rpp_limit_w), self._rpp_m)
        return np.bincount(p.rack_rpp, weights=rack_w, minlength=len(p.rpp_limit_w))

    def _others(self) -> tuple:
        """The engine's other components, in order (each records after the sampler)."""
        self._recorders = tuple(c for c in self.e.components if c is not self)
        return self._recorders

    def _all_on(self, rack_on: np.ndarray) -> bool:
        """Every rack of the state's (cached, read-only) ``rack_on`` is on, kept with the array;
        False with ``all_on_kept`` off (the reference: ``np.where`` at every evaluation)."""
        a = self._on_all
        if a is None or a[0] is not rack_on:
            a = self._on_all = (rack_on, self.all_on_kept and bool(np.logical_and.reduce(rack_on, axis=None)))
        return a[1]

    def _inlets_settled(self, inlet_c: np.ndarray) -> bool:
        """True when no inlet of ``inlet_c`` [degC (R,)] is more than ``inlet_tolerance_k``
        from the state's; False with tolerance 0 and on any NaN (the move is written)."""
        tol = self.inlet_tolerance_k
        if tol <= 0.0:
            return False
        d = np.abs(inlet_c - self.state.rack_inlet_c.view(np.ndarray))
        return bool(d.size) and bool(np.maximum.reduce(d, axis=None) <= tol)

    def _clocks_changed(self, clock: np.ndarray) -> bool:
        """True when the evaluation's clocks differ from the state's. Every GPU at full clock
        (the coupling's shared ones) while the state's clocks were all full when last set or
        compared and are unwritten since: equal without a look (speed only, issue 19)."""
        st = self.state
        if clock is coupling.full_clock(clock.shape) and self._full_ver == st.version("node_clock"):
            return False
        return not np.array_equal(clock, st.node_clock.view(np.ndarray))

    def _write(self, i0: int, i1: int, rec, ph: PhysicsResult, powered, in_service, up) -> int:
        """Write the sampler's outputs of samples ``i0 .. i1 - 1`` (one state); returns the
        throttled node count."""
        st = self.state
        busy, c = st.node_busy, self._cnt
        clk = st.version("node_clock")
        if (c is None or c[0] is not powered or c[1] is not in_service or c[2] is not busy or c[3] is not up
                or c[4] != clk):
            # the counts are functions of these (cached, read-only) masks and the clocks alone
            thr = self._throttled(up)
            c = self._cnt = (powered, in_service, busy, up, clk, self._gpus(powered), self._gpus(in_service),
                             self._gpus(busy), thr, thr / max(st.count(up), 1))
        rec["rack_power_w"][i0] = ph.rack_power_w
        rec["rack_inlet_c"][i0] = st.rack_inlet_c
        rec["rack_gpu_temp_max_c"][i0] = ph.rack_gpu_max_c
        rec["rack_state"][i0] = st.rack_state
        rec["gpus_powered"][i0] = c[5]
        rec["gpus_healthy"][i0] = c[6]
        rec["gpus_busy"][i0] = c[7]
        rec["throttle_fraction"][i0] = c[9]
        if i1 - i0 > 1:
            rec.repeat(self.outputs, i0, i1)
        return c[8]

    def _masks(self) -> tuple:
        """The state's up, powered and in-service masks, kept while none of their inputs is
        written (:meth:`ClusterState.mask_version`)."""
        seq = self.state.mask_version()
        m = self._mask
        if m is None or m[0] != seq:
            st = self.state
            m = self._mask = (seq, st.node_up, st.node_powered, st.node_in_service)
        return m[1:]

    def record_range(self, i0: int, i1: int, rec) -> None:
        """The sampler's outputs over a quiet stretch: those of the state and physics in force."""
        assert self._physics is not None
        st = self.state
        self._write(i0, i1, rec, self._physics, st.node_powered, st.node_in_service, st.node_up)

    def _flush(self, i: int) -> None:
        """Fold the recorder's window when sample ``i`` is its last (``outputs.rack_series``
        below full)."""
        rec = self.e.recorder
        if rec.window_full(i):
            # the float32 window as float64 in a buffer kept from flush to flush (a fresh
            # window-sized array costs its page faults at every flush), handed to the tree as
            # its own: the flow lives until the fold is done
            win = rec.window_rack_power_w(i + 1)
            buf = self._flush_buf
            if buf is None or buf.shape[0] < len(win) or buf.shape[1:] != win.shape[1:]:
                buf = self._flush_buf = np.empty((max(rec.window, len(win)), *win.shape[1:]))
            x = buf[:len(win)]
            np.copyto(x, win)
            rec.flush(i + 1, power.evaluate_power_tree(self.e.power.tree, x, copy=False))
