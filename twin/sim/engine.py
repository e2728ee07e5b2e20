"""The coupled discrete-event engine: one simpy Environment, processes for the ramp, failures
and repairs, grid and cooling events, the scheduler, training jobs and the sampler.

Continuous quantities (power, temperature, job progress) are never ticked: job progress is
integrated in closed form between events (tokens = rate x time), and the sampler evaluates
node -> rack -> RPP -> facility power and rack heat -> inlet temperature for all racks at
once, vectorised, every ``simulation.sample_interval_s``.

Feedback loops (DESIGN.md):
  power plan and breaker limits gate which racks are powered (``_admit``); an overloaded
  breaker trips its racks (``_check_breakers``);
  a grid disturbance passes through a bypassed UPS and drops every powered node
  (``_grid_process``), the UPS rides through it instead, paying its losses in the sampler;
  rack heat raises inlet temperatures; hot GPUs lose clock (job steps slow down) and fail
  more often (Arrhenius factor on the thermal failure classes);
  failures shrink the healthy pool; the scheduler re-places jobs, maybe across more
  scalable units, and the step time follows the fabric of the new placement;
  a job's phase sets its nodes' power, so a synchronous job swings the facility load.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import simpy

from twin import compute, fabric, power, reliability, storage, thermal
from twin.phases import Phase
from twin.power.electrical import BREAKER_MAGNETIC_TRIP_S
from twin.scenario.schema import Job, Scenario
from twin.sim import coupling
from twin.plant import (
    Plant,
    available_it_w,
    build_plant,
    hall_geometries,
    node_power_kwargs,
    rack_worst_case_w,
    seconds_since,
)

H = 3600.0
DAY = 86400.0
NODE_REBOOT_S = 600.0   # stateless xCAT boot of a node after a power loss (seed 000: "minutes")


@dataclass
class JobState:
    """Mutable state of one training job inside the engine."""

    spec: Job
    index: int
    params: float
    checkpoint_bytes: float
    status: str = "waiting"            # waiting|queued|starting|running|checkpointing|done
    nodes: np.ndarray = field(default_factory=lambda: np.empty(0, int))     # running the job
    spares: np.ndarray = field(default_factory=lambda: np.empty(0, int))    # hot spares held idle
    tokens: float = 0.0                # progress, including work not yet checkpointed
    tokens_committed: float = 0.0      # progress safe in the last checkpoint
    rate_tok_s: float = 0.0
    t_last: float = 0.0
    gpu_s_allocated: float = 0.0       # GPU-seconds the job held nodes
    gpu_s_useful: float = 0.0          # GPU-seconds of running whose work survived
    gpu_s_pending: float = 0.0         # GPU-seconds of running since the last checkpoint
    gpu_s_lost: float = 0.0
    wall_s_useful: float = 0.0         # wall time of running whose work survived
    wall_s_pending: float = 0.0        # wall time of running since the last checkpoint
    checkpoint_s: float = 0.0          # wall time spent writing checkpoints
    restart_s: float = 0.0             # wall time spent (re)starting
    interruptions: int = 0
    tokens_lost: float = 0.0
    first_start_s: float = math.nan
    end_s: float = math.nan
    step: compute.StepEstimate | None = None
    process: simpy.Process | None = None
    placed: simpy.Event | None = None
    # completed checkpoints: time [s], tokens, GPU-s and wall-s made safe by then
    ckpt_time_s: list = field(default_factory=list)
    ckpt_state: list = field(default_factory=list)

    @property
    def gpu_s_useful_total(self) -> float:
        """GPU-seconds whose work survived, counting work done since the last checkpoint
        (the end of a run is not an interruption)."""
        return self.gpu_s_useful + self.gpu_s_pending

    def commit(self, now_s: float | None = None) -> None:
        """The work since the last checkpoint is now safe (a checkpoint completed at now_s)."""
        self.tokens_committed = self.tokens
        self.gpu_s_useful += self.gpu_s_pending
        self.wall_s_useful += self.wall_s_pending
        self.gpu_s_pending = self.wall_s_pending = 0.0
        if now_s is not None:
            self.ckpt_time_s.append(now_s)
            self.ckpt_state.append((self.tokens_committed, self.gpu_s_useful, self.wall_s_useful))

    def roll_back_before(self, corruption_s: float) -> float:
        """Silent data corruption at ``corruption_s``: checkpoints written since then hold
        corrupt state; fall back to the last clean one (``reliability.last_clean_checkpoint_index``).
        Returns the tokens of committed work thrown away."""
        from twin.reliability import last_clean_checkpoint_index

        i = last_clean_checkpoint_index(np.array(self.ckpt_time_s), corruption_s)
        tokens, gpu_s, wall_s = self.ckpt_state[i] if i >= 0 else (0.0, 0.0, 0.0)
        thrown = self.tokens_committed - tokens
        if thrown > 0:
            self.gpu_s_lost += self.gpu_s_useful - gpu_s
            self.tokens_lost += thrown
            self.tokens -= thrown              # work since the last checkpoint stays pending
            self.tokens_committed, self.gpu_s_useful, self.wall_s_useful = tokens, gpu_s, wall_s
            del self.ckpt_time_s[i + 1:], self.ckpt_state[i + 1:]
        return max(thrown, 0.0)

    def lose(self) -> float:
        """Roll back to the last checkpoint; return the tokens lost."""
        lost = self.tokens - self.tokens_committed
        self.tokens_lost += lost
        self.tokens = self.tokens_committed
        self.gpu_s_lost += self.gpu_s_pending
        self.gpu_s_pending = self.wall_s_pending = 0.0
        return lost


class Engine:
    """Builds the plant from a scenario, wires the processes, runs, and hands back Results."""

    def __init__(self, scenario: Scenario, progress: Callable[[float], None] | None = None):
        self.s = scenario
        self.plant: Plant = build_plant(scenario)
        self.progress = progress
        sim = scenario.simulation
        self.horizon_s = sim.duration_days * DAY
        self.dt_s = sim.sample_interval_s
        self.n_samples = int(math.ceil(self.horizon_s / self.dt_s))
        streams = np.random.SeedSequence(sim.seed).spawn(6)
        self.rng_fail, self.rng_repair, self.rng_grid, self.rng_cool, self.rng_detect, self.rng_misc = (
            np.random.default_rng(s) for s in streams)
        self.env = simpy.Environment()
        self.events: list[tuple[float, str, str, str]] = []
        self._init_state()
        self._init_power()
        self._init_thermal()
        self._init_fabric()
        self._init_failures()
        self._init_jobs()
        self._init_recorder()

    # ------------------------------------------------------------------ set-up
    def _init_state(self) -> None:
        p = self.plant
        R, N = p.n_racks, p.n_nodes
        self.rack_delivered = np.zeros(R, bool)
        self.rack_powered = np.zeros(R, bool)
        self.rack_tripped = np.zeros(R, bool)
        self.rack_unfed = np.zeros(R, bool)            # lost its feed(s) and no survivor held
        self.feed_up = np.ones(len(self.s.site.power.feeds), bool)
        self.brake_clock = 1.0                         # PSU power brake (feed loss) clock fraction
        self.rack_on_since = np.full(R, np.inf)
        self.rack_ready = np.zeros(R, bool)           # burn-in passed
        self.node_healthy = np.ones(N, bool)
        self.node_repairing = np.zeros(N, bool)       # a repair (re-image, technician) is under way
        self.repair_times_h: list[float] = []         # failure -> back in service [h]
        self.throttled_node_s = 0.0
        self.peak_swing_w = {"communication": 0.0, "checkpoint": 0.0}
        self.breaker_theta = np.zeros(len(self.plant.rpp_limit_w))   # thermal state [pu^2]
        self.node_grid_down = np.zeros(N, bool)
        self.node_job = np.full(N, -1, int)
        self.node_phase = np.zeros(N, np.int8)
        self.node_clock = np.ones(N)                  # thermal clock fraction
        self.node_accel = np.ones(N)                  # Arrhenius factor on thermal classes
        self.su_degraded = np.zeros(int(p.node_su.max()) + 1, int)   # failed rails per SU
        self.rack_inlet_c = np.zeros(R)
        self.next_sample_s = 0.0
        self._physics_key = None
        self._physics = None

    def _init_power(self) -> None:
        s, p, n = self.s, self.plant, self.plant.node
        pw = s.site.power
        self.node_kw = node_power_kwargs(n)
        self.gpu_cap_w = float(s.hardware.gpu_power_cap_w or n.gpu_tdp_w)
        self.rack_worst_w = rack_worst_case_w(s, n)
        self.tree = power.build_power_tree(
            rack_rpp=p.rack_rpp, rpp_limit_w=p.rpp_limit_w,
            feed_capacity_w=np.array([f.capacity_kw * 1e3 for f in pw.feeds]),
            ups_mode=pw.ups.mode, ups_capacity_w=pw.ups.capacity_kw * 1e3 / len(pw.feeds),
            rpp_rating_w=p.rpp_rating_w, ups_ride_through_s=pw.ups.ride_through_s)
        self.power_available_w = 0.0

    def _init_thermal(self) -> None:
        s, p = self.s, self.plant
        self.rack_airflow_m3_s = np.full(p.n_racks, p.node.airflow_m3_s_at_max * s.hardware.nodes_per_rack)
        self.halls = []
        for (geom, idx), hall in zip(hall_geometries(s, p), s.site.halls, strict=True):
            active = np.ones(len(hall.cooling_units), bool)
            model = thermal.inlet_model(geom, self.rack_airflow_m3_s[idx], active)
            self.halls.append({"idx": idx, "geom": geom, "active": active,
                               "models": {tuple(active): model}, "model": model,
                               "units": [c.name for c in hall.cooling_units]})
            self.rack_inlet_c[idx] = model.base_inlet_c

    def _init_fabric(self) -> None:
        s, p = self.s, self.plant
        f = s.fabric
        self.graph = fabric.build_fabric(
            f.kind, p.n_nodes, gpus_per_node=p.gpus_per_node, su_nodes=f.su_nodes, rails=f.rails,
            link_gbps=f.link_gbps, switch_ports=f.switch_ports, oversubscription=f.oversubscription,
            tor_uplinks_per_spine=f.tor_uplinks_per_spine, spines=f.spines, ports_per_nic=f.ports_per_nic)
        p.fabric = self.graph
        self._fabric_cache: dict = {}
        self._step_cache: dict = {}

    def _init_failures(self) -> None:
        f = self.s.failures
        classes = reliability.load_failure_classes()
        self.classes = (reliability.scale_class_rates(classes, f.class_rate_scale)
                        if f.class_rate_scale else classes)
        self.base_rate_per_node_h = float(sum(c.rate_per_node_h for c in self.classes))
        self.crew = simpy.Resource(self.env, capacity=f.technicians)
        # spare stock: one shared pool, or one per part (parts not listed come without a wait)
        stock = f.spares if isinstance(f.spares, dict) else {"*": f.spares}
        self.spare_stock = {part: simpy.Container(self.env, init=n, capacity=1e12) for part, n in stock.items()}

    def _init_jobs(self) -> None:
        self.jobs: list[JobState] = []
        for j, spec in enumerate(self.s.workload.jobs):
            m = spec.model
            params = compute.parameter_count(layers=m.layers, hidden=m.hidden, ffn_hidden=m.ffn_hidden,
                                             heads=m.heads, kv_heads=m.kv_heads, vocab=m.vocab,
                                             gated_mlp=m.gated_mlp)
            ck = spec.checkpoint_bytes or storage.checkpoint_bytes(params)
            self.jobs.append(JobState(spec=spec, index=j, params=params, checkpoint_bytes=ck))
        st = self.s.workload.storage
        self.storage_write_gb_s, self.storage_read_gb_s = storage.storage_bandwidth_gb_s(
            st.kind, st.units, st.write_gb_s_per_unit, st.read_gb_s_per_unit)
        self.queue: list[JobState] = []
        self.writers = 0

    def _init_recorder(self) -> None:
        T, R, J = self.n_samples, self.plant.n_racks, len(self.jobs)
        z = np.zeros
        self.rec = {
            "rack_power_w": z((T, R), np.float32), "rack_inlet_c": z((T, R), np.float32),
            "rack_gpu_temp_max_c": z((T, R), np.float32),
            "rack_state": z((T, R), np.int8), "power_available_w": z(T),
            "gpus_installed": z(T, np.int32), "gpus_powered": z(T, np.int32),
            "gpus_healthy": z(T, np.int32), "gpus_busy": z(T, np.int32),
            "nodes_failed": z(T, np.int32), "nodes_in_repair": z(T, np.int32), "throttle_fraction": z(T),
            "spares_in_stock": z(T),
            "job_tokens": z((T, J)), "job_tokens_per_s": z((T, J)), "job_gpus": z((T, J), np.int32),
        }

    # ------------------------------------------------------------------ helpers
    @property
    def now(self) -> float:
        return self.env.now

    def log(self, kind: str, target: str, detail: str = "") -> None:
        self.events.append((self.env.now, kind, target, detail))

    def node_name(self, n: int) -> str:
        return f"{self.plant.rack_names[self.plant.node_rack[n]]}/n{n % self.s.hardware.nodes_per_rack}"

    def node_up(self) -> np.ndarray:
        """Nodes that are powered, not dropped by the grid and healthy."""
        p = self.plant
        return self.rack_on()[p.node_rack] & ~self.node_grid_down & self.node_healthy

    def rack_on(self) -> np.ndarray:
        """Racks with power: admitted, breaker closed, fed."""
        return self.rack_powered & ~self.rack_tripped & ~self.rack_unfed

    def node_schedulable(self) -> np.ndarray:
        return self.node_up() & self.rack_ready[self.plant.node_rack] & (self.node_job < 0)

    # ------------------------------------------------------------------ ramp and power plan
    def _ramp_process(self):
        p = self.plant
        times = sorted(set(p.plan_s.tolist()) | set(p.rack_delivery_s[np.isfinite(p.rack_delivery_s)].tolist()))
        for t in times:
            if t > self.now:
                yield self.env.timeout(t - self.now)
            new = (p.rack_delivery_s <= self.now) & ~self.rack_delivered
            if new.any():
                self.rack_delivered |= new
                self.log("delivery", f"{int(new.sum())} racks", ", ".join(
                    p.rack_names[i] for i in np.flatnonzero(new)[[0, -1]]))
            level = available_it_w(p, self.now)
            if level != self.power_available_w:
                self.power_available_w = level
                self.log("power_stage", "facility", f"{level / 1e3:.0f} kW IT available")
            self._admit()

    def facility_limit_w(self) -> float:
        """IT power the racks may be admitted against [W]: the staged plan, and what the
        chain carries under its redundancy policy (``power.facility_it_capacity_w``: each
        feed path limited by its feed and, unless bypassed, its UPS; 2N = one path alone)."""
        cap = power.facility_it_capacity_w(self.tree, self.s.site.power.redundancy)
        return min(self.power_available_w, cap)

    def _admit(self) -> None:
        """Power on delivered racks, in order, while their worst-case draw fits every limit
        (scaled by ``power.oversubscription``); shed the last racks if a limit fell."""
        p, pw = self.plant, self.s.site.power
        k = pw.oversubscription
        limit = self.facility_limit_w() * k
        wc = self.rack_worst_w
        committed = self.rack_powered.sum() * wc
        for r in np.flatnonzero(self.rack_powered)[::-1]:
            if committed <= limit + 1e-6:
                break
            self._power_off_rack(r, "power plan below committed load")
            committed -= wc
        admitted = power.racks_admitted(wc, limit, p.rack_rpp, p.rpp_limit_w * k,
                                        candidate=self.rack_delivered, powered=self.rack_powered,
                                        policy="stop")
        turned_on = np.flatnonzero(admitted & ~self.rack_powered)
        self.rack_powered[turned_on] = True
        self.rack_on_since[turned_on] = self.now
        committed = self.rack_powered.sum() * wc
        if len(turned_on):
            self.log("power_on", f"{len(turned_on)} racks",
                     f"{committed / 1e3:.0f} of {limit / 1e3:.0f} kW worst case committed")
            self.env.process(self._burn_in(turned_on))
        self._set_idle_phases()

    def _power_off_rack(self, r: int, why: str) -> None:
        self.rack_powered[r] = False
        self.log("power_off", self.plant.rack_names[r], why)
        self._interrupt_nodes(np.flatnonzero(self.plant.node_rack == r), f"rack power off: {why}")

    def _burn_in(self, racks: np.ndarray):
        days = self.s.ramp.burn_in_days
        todo = racks[~self.rack_ready[racks]]
        if len(todo) == 0:
            return
        self._set_idle_phases()
        if days > 0:
            yield self.env.timeout(days * DAY)
        self.rack_ready[todo] = True
        self.log("burn_in_done", f"{len(todo)} racks", f"after {days:g} days")
        self._set_idle_phases()
        self._schedule()

    def _set_idle_phases(self) -> None:
        """Phase of every node without a job: OFF, BURN_IN or IDLE."""
        p = self.plant
        free = self.node_job < 0
        up = self.node_up()
        burning = up & ~self.rack_ready[p.node_rack]
        self.node_phase[free & ~up] = Phase.OFF
        self.node_phase[free & up] = Phase.IDLE
        self.node_phase[free & burning] = Phase.BURN_IN
        self.node_phase[(self.node_job >= 0) & ~up] = Phase.OFF

    # ------------------------------------------------------------------ scheduler
    def _schedule(self) -> None:
        """LSF-like: highest priority first; pack each job into as few scalable units as
        possible, using only healthy, powered, burned-in, free nodes."""
        if not self.queue:
            return
        self.queue.sort(key=lambda j: (-j.spec.priority, j.index))
        for job in list(self.queue):
            free = self.node_schedulable()
            nodes = self._place(job, free)
            if nodes is None:
                continue
            self.queue.remove(job)
            self._advance(job)            # nothing accrues while queued; start the clock now
            job.nodes, job.spares = nodes[:job.spec.nodes], nodes[job.spec.nodes:]
            self.node_job[nodes] = job.index
            self.node_phase[job.spares] = Phase.IDLE
            job.status = "starting"
            job.placed.succeed(nodes)

    def _place(self, job: JobState, free: np.ndarray) -> np.ndarray | None:
        p, spec = self.plant, job.spec
        want = spec.nodes + spec.hot_spares
        if free.sum() < want:
            if not spec.elastic:
                return None
            want = self._elastic_size(spec, int(free.sum()))
            if want == 0:
                return None
        su = p.node_su
        counts = np.bincount(su[free], minlength=len(self.su_degraded))
        # fullest healthy SUs first; degraded SUs last; ties by SU index (deterministic)
        order = np.lexsort((np.arange(len(counts)), -counts, self.su_degraded > 0))
        chosen = []
        need = want
        for u in order:
            if need == 0 or counts[u] == 0:
                break
            cand = np.flatnonzero(free & (su == u))[:need]
            chosen.append(cand)
            need -= len(cand)
        return np.concatenate(chosen) if need == 0 else None

    def _elastic_size(self, spec: Job, free: int) -> int:
        gpn = self.plant.gpus_per_node
        for n in range(min(free, spec.nodes), 0, -1):
            gpus = n * gpn
            mp = spec.tp * spec.pp * spec.cp
            if gpus % mp == 0 and spec.global_batch % ((gpus // mp) * spec.micro_batch) == 0:
                return n
        return 0

    # ------------------------------------------------------------------ job rate (compute model)
    def _fabric_figures(self, nodes: np.ndarray) -> tuple[float, float]:
        """(max switch hops, per-node bottleneck bandwidth [Gb/s]) of a placement.

        The fabrics are symmetric (every scalable unit wired alike), so the figures depend on
        how the job spreads over the units, not on which units. They are cached by a summary
        of that spread (nodes, units spanned, most nodes in one unit): a ring crosses each
        unit's uplinks once per rail whatever the unit holds, so a job that swaps a node for
        a spare keeps its figures instead of re-routing thousands of flows. A failed
        leaf switch (rail) of a unit the job uses scales the bandwidth by the rails left.
        """
        sus, counts = np.unique(self.plant.node_su[nodes], return_counts=True)
        key = (len(nodes), len(sus), int(counts.max())) if len(sus) else (0, 0, 0)
        if key not in self._fabric_cache:
            hops = fabric.placement_hops(self.graph, nodes)
            bw = fabric.bottleneck_bandwidth_gbps(self.graph, nodes)
            self._fabric_cache[key] = (float(hops["max_hops"]), float(bw))
        hops, bw = self._fabric_cache[key]
        worst = int(self.su_degraded[sus].max()) if len(sus) else 0
        rails = self.s.fabric.rails
        return hops, bw * max(rails - worst, 0) / rails

    def _job_step(self, job: JobState) -> compute.StepEstimate:
        spec, node = job.spec, self.plant.node
        nodes = job.nodes
        clock = (float(self.node_clock[nodes].min()) if len(nodes) else 1.0) * self.brake_clock
        clock *= float(compute.gpu_clock_fraction_at_power_cap(self.gpu_cap_w, node.gpu_tdp_w))
        hops, bw = self._fabric_figures(nodes)
        key = (spec.name, len(nodes), round(clock, 3), hops, round(bw, 3))
        if key not in self._step_cache:
            m = spec.model
            gpus = len(nodes) * self.plant.gpus_per_node
            mp = spec.tp * spec.pp * spec.cp
            peak = node.gpu_peak_fp8_tflops if spec.precision == "fp8" else node.gpu_peak_bf16_tflops
            est = compute.step_estimate(
                layers=m.layers, hidden=m.hidden, ffn_hidden=m.ffn_hidden, heads=m.heads,
                kv_heads=m.kv_heads, vocab=m.vocab, seq_len=spec.seq_len,
                global_batch=spec.global_batch, micro_batch=spec.micro_batch, tp=spec.tp,
                pp=spec.pp, cp=spec.cp, vpp=spec.vpp, gpus=gpus - gpus % mp,
                gpus_per_node=self.plant.gpus_per_node, peak_tflops=peak, precision=spec.precision,
                hbm_bw_tb_s=node.gpu_hbm_bw_tb_s, nvlink_gb_s=node.nvlink_gb_s, nvls=node.nvls,
                inter_node_gbps=bw, transport=self.s.fabric.transport, hops=hops,
                activation_recompute=spec.activation_recompute, clock_fraction=clock,
                deployment=self.s.hardware.deployment, gated_mlp=m.gated_mlp, nvswitch=node.nvswitch)
            self._step_cache[key] = est
        return self._step_cache[key]

    def _update_rate(self, job: JobState) -> None:
        job.step = self._job_step(job)
        gpus = len(job.nodes) * self.plant.gpus_per_node
        factor = storage.step_time_factor(self.s.workload.storage.kind)
        job.rate_tok_s = job.step.tokens_per_s_per_gpu * gpus / factor

    def _advance(self, job: JobState) -> None:
        """Integrate the job's progress from its last update to now (closed form)."""
        dt = self.now - job.t_last
        if dt > 0:
            gpus = len(job.nodes) * self.plant.gpus_per_node
            job.gpu_s_allocated += (len(job.nodes) + len(job.spares)) * self.plant.gpus_per_node * dt
            if job.status == "running":
                job.tokens += job.rate_tok_s * dt
                job.gpu_s_pending += gpus * dt
                job.wall_s_pending += dt
            elif job.status == "checkpointing":
                job.checkpoint_s += dt
            elif job.status == "starting":
                job.restart_s += dt
        job.t_last = self.now

    # ------------------------------------------------------------------ training job
    def _checkpoint_interval_s(self, job: JobState) -> float:
        iv = job.spec.checkpoint_interval_s
        if iv != "auto":
            return float(iv)
        mtbf_s = reliability.job_mtbf_h(self.classes, max(len(job.nodes), 1),
                                        self.s.failures.rate_scale) * H
        ck = float(storage.checkpoint_write_s(job.checkpoint_bytes, self.storage_write_gb_s, 1))
        return float(reliability.daly_interval_s(ck, mtbf_s))

    def _job_process(self, job: JobState):
        spec = job.spec
        t_submit = seconds_since(self.s.simulation.start, spec.submit) if spec.submit else 0.0
        if t_submit > self.now:
            yield self.env.timeout(t_submit - self.now)
        job.t_last = self.now
        self._enqueue(job)
        while job.status != "done":
            try:
                if job.status == "queued":
                    yield job.placed
                    job.t_last = self.now
                # (re)start: relaunch, then reload the last checkpoint if there is one
                self.node_phase[job.nodes] = Phase.RESTART
                if math.isnan(job.first_start_s):
                    job.first_start_s = self.now
                reload = (float(storage.checkpoint_read_s(job.checkpoint_bytes, self.storage_read_gb_s))
                          if job.tokens_committed > 0 else 0.0)
                self.log("job_start", spec.name, f"{len(job.nodes)} nodes, reload {reload:.0f} s")
                yield self.env.timeout(spec.restart_s + reload)
                self._advance(job)
                job.status = "running"
                self._update_rate(job)
                self.node_phase[job.nodes] = Phase.TRAINING
                self._record_swing(job)
                interval = self._checkpoint_interval_s(job)
                next_ckpt = self.now + interval
                while True:
                    eta = (self.now + (spec.tokens_target - job.tokens) / job.rate_tok_s
                           if spec.tokens_target and job.rate_tok_s > 0 else math.inf)
                    wake = min(next_ckpt, eta, self.next_sample_s if self.next_sample_s > self.now
                               else self.now + self.dt_s)
                    yield self.env.timeout(max(wake - self.now, 0.0))
                    self._advance(job)
                    if spec.tokens_target and job.tokens >= spec.tokens_target * (1 - 1e-12):
                        self._finish(job)
                        break
                    if self.now >= next_ckpt:
                        yield from self._checkpoint(job)
                        interval = self._checkpoint_interval_s(job)
                        next_ckpt = self.now + interval
            except simpy.Interrupt as intr:
                yield from self._interrupted(job, intr.cause)

    def _record_swing(self, job: JobState) -> None:
        """Synchronous swing of a job: all its nodes change phase together, so the facility
        load steps by nodes x (P_train - P_phase) at every exposed all-reduce
        (COMMUNICATION) and every checkpoint (CHECKPOINT). Keeps the largest step [W]."""
        nodes = job.nodes
        inlet = np.array([self.rack_inlet_c[self.plant.node_rack[nodes]].mean()])   # one typical node
        clock = np.array([self.node_clock[nodes].mean() * self.brake_clock])
        p = {ph: len(nodes) * float(power.node_power_w(np.array([int(ph)]), self.gpu_cap_w, inlet,
                                                       clock_fraction=clock, **self.node_kw)[0])
             for ph in (Phase.TRAINING, Phase.COMMUNICATION, Phase.CHECKPOINT)}
        self.peak_swing_w["communication"] = max(self.peak_swing_w["communication"],
                                                 p[Phase.TRAINING] - p[Phase.COMMUNICATION])
        self.peak_swing_w["checkpoint"] = max(self.peak_swing_w["checkpoint"],
                                              p[Phase.TRAINING] - p[Phase.CHECKPOINT])

    def _enqueue(self, job: JobState) -> None:
        job.status = "queued"
        job.placed = self.env.event()
        self.queue.append(job)
        self._schedule()

    def _checkpoint(self, job: JobState):
        job.status = "checkpointing"
        self.node_phase[job.nodes] = Phase.CHECKPOINT
        self.writers += 1
        try:
            dur = float(storage.checkpoint_write_s(job.checkpoint_bytes, self.storage_write_gb_s,
                                                   self.writers))
            yield self.env.timeout(dur)
        finally:
            self.writers -= 1
        self._advance(job)
        job.commit(self.now)
        job.status = "running"
        self.node_phase[job.nodes] = Phase.TRAINING
        self.log("checkpoint", job.spec.name, f"{job.tokens_committed:.4g} tokens, {dur:.1f} s")

    def _finish(self, job: JobState) -> None:
        job.commit()
        job.status = "done"
        job.end_s = self.now
        self.log("job_done", job.spec.name, f"{job.tokens:.4g} tokens")
        self._release(job)

    def _release(self, job: JobState) -> None:
        self.node_job[job.nodes] = -1
        self.node_job[job.spares] = -1
        job.nodes = np.empty(0, int)
        job.spares = np.empty(0, int)
        job.rate_tok_s = 0.0
        self._set_idle_phases()
        self._schedule()

    def _interrupted(self, job: JobState, cause):
        text, detect_s = cause if isinstance(cause, tuple) else (str(cause), 0.0)
        self._advance(job)
        lost = job.lose()
        job.interruptions += 1
        self.log("job_interrupted", job.spec.name, f"{text}; lost {lost:.4g} tokens")
        job.status = "waiting"
        spare = job.spec.hot_spares > 0
        if spare:
            # keep the healthy nodes (active and hot spares), give back the ones that are down
            held = np.concatenate([job.nodes, job.spares])
            keep = held[self.node_up()[held]]
            self._release_nodes(held[~np.isin(held, keep)])
            job.nodes, job.spares = keep[:0], keep
            self.node_phase[keep] = Phase.IDLE
        else:
            self._release(job)
        # the failed part must be found and fenced before the relaunch (health checks,
        # watchdog timeout, numerics checks for silent corruption)
        if detect_s > 0:
            yield self.env.timeout(detect_s)
        self._advance(job)
        if spare:
            held = job.spares[self.node_up()[job.spares]]
            self._release_nodes(job.spares[~np.isin(job.spares, held)])
            if len(held) >= job.spec.nodes:
                job.nodes, job.spares = held[:job.spec.nodes], held[job.spec.nodes:]
                job.status = "starting"
                self.log("job_spare_swap", job.spec.name,
                         f"after {detect_s:.0f} s detection; {len(job.spares)} hot spares left")
                return
            job.spares = np.empty(0, int)
            self._release_nodes(held)
        self.log("job_requeued", job.spec.name, f"after {detect_s:.0f} s (detection or maintenance window)")
        self._enqueue(job)

    def _release_nodes(self, nodes: np.ndarray) -> None:
        if len(nodes):
            self.node_job[nodes] = -1
            self._set_idle_phases()
            self._schedule()

    def _interrupt_nodes(self, nodes: np.ndarray, cause: str, detect_s: float = 0.0) -> None:
        """Interrupt every job running on any of ``nodes``; a job whose hot spare is hit
        just loses that spare. The job relaunches after ``detect_s`` [s]."""
        for j in np.unique(self.node_job[nodes]):
            if j < 0:
                continue
            job = self.jobs[j]
            if job.status == "waiting" or job.process is None or not job.process.is_alive:
                continue
            if not np.isin(nodes, job.nodes).any():
                hit = job.spares[np.isin(job.spares, nodes)]
                job.spares = job.spares[~np.isin(job.spares, nodes)]
                self._release_nodes(hit)
                continue
            self._advance(job)
            job.process.interrupt((cause, detect_s))
            job.status = "waiting"

    # ------------------------------------------------------------------ failures and repair
    def _failure_scale(self) -> np.ndarray:
        """Per-node multiplier on the class rates: scenario scale x node up x burn-in."""
        p, f = self.plant, self.s.failures
        up = self.node_up()
        scale = f.rate_scale * up.astype(float)
        burn_h = self.s.ramp.burn_in_days * 24.0
        if burn_h > 0 and f.burn_in_expected_failures_per_node > 0:
            age_h = (self.now - self.rack_on_since[p.node_rack]) / H
            young = up & (age_h < burn_h)
            if young.any():
                eta_h = reliability.weibull_scale_h_for_expected_failures(
                    f.burn_in_expected_failures_per_node, burn_h, f.burn_in_weibull_shape)
                scale = scale * reliability.burn_in_rate_multiplier(
                    np.where(young, age_h, burn_h), self.dt_s / H, f.burn_in_weibull_shape, eta_h,
                    self.base_rate_per_node_h, burn_h)
        return scale

    def _failure_process(self):
        """Superposed exponential failures of every node and class, redrawn each sampling
        interval with that interval's rates (memoryless, so exact for piecewise-constant
        rates); a node that went down within the interval is thinned out."""
        if not self.s.failures.enabled:
            return
        sampler = reliability.ClusterFailureSampler(self.classes, self.plant.n_nodes, rate_scale=0.0)
        while True:
            boundary = self.next_sample_s if self.next_sample_s > self.now else self.now + self.dt_s
            sampler.update(rate_scale=self._failure_scale(), thermal_acceleration=self.node_accel)
            left_h = (boundary - self.now) / H
            while (hit := sampler.next(self.rng_fail, left_h)) is not None:
                dt_h, n, k = hit
                yield self.env.timeout(dt_h * H)
                left_h -= dt_h
                if self.node_up()[n]:
                    self._fail(int(n), int(k))
            yield self.env.timeout(max(boundary - self.now, 0.0))

    def _maintenance_process(self):
        """Announced maintenance windows: every running job checkpoints at the announcement
        (no work lost), stops for the window, and relaunches."""
        f = self.s.failures
        if f.planned_maintenance_per_day <= 0:
            return
        times_h = reliability.sample_planned_maintenance_times_h(
            self.rng_misc, self.horizon_s / H, f.planned_maintenance_per_day / 24.0)
        for t_h in np.asarray(times_h, float):
            if t_h * H > self.now:
                yield self.env.timeout(t_h * H - self.now)
            self.log("maintenance", "cluster", f"{f.planned_maintenance_downtime_s:.0f} s window")
            for job in self.jobs:
                if job.status in ("running", "checkpointing") and job.nodes.size:
                    self._advance(job)
                    job.commit(self.now)
                    self._interrupt_nodes(job.nodes, "planned maintenance", f.planned_maintenance_downtime_s)

    def _detection_delay_s(self, c) -> float:
        f = self.s.failures
        return float(reliability.sample_detection_delay_h(
            self.rng_detect, c.detection, health_check_interval_h=f.health_check_interval_s / H,
            watchdog_timeout_h=f.watchdog_timeout_s / H, sdc_mean_h=f.sdc_detection_mean_s / H)) * H

    def _fail(self, n: int, k: int) -> None:
        c = self.classes[k]
        p = self.plant
        detect_s = self._detection_delay_s(c)
        self.log("failure", self.node_name(n), c.name)
        why = f"{c.name} on {self.node_name(n)}"
        if c.detection == "silent" and c.scope in ("node", "job"):
            self.env.process(self._silent_corruption(n, c, detect_s))
            return
        if c.scope == "node":
            self.node_healthy[n] = False
            self._interrupt_nodes(np.array([n]), why, detect_s)
            self._set_idle_phases()
        elif c.scope == "job":
            self._interrupt_nodes(np.array([n]), why, detect_s)
        elif c.scope == "rail_su":
            u = p.node_su[n]
            self.su_degraded[u] += 1
            self._interrupt_nodes(np.flatnonzero(p.node_su == u), f"{c.name} in SU {u}", detect_s)
        if c.repair != "none":
            self.env.process(self._repair(n, c, detect_s))

    def _silent_corruption(self, n: int, c, detect_s: float):
        """Silent data corruption: the job keeps training on corrupt state until the numerics
        checks notice, then rolls back past every checkpoint written since the corruption."""
        t0 = self.now
        j = int(self.node_job[n])
        yield self.env.timeout(detect_s)
        self.log("detected", self.node_name(n), f"{c.name} after {detect_s / H:.2f} h")
        if j >= 0:
            job = self.jobs[j]
            self._advance(job)
            thrown = job.roll_back_before(t0)
            self.log("rollback", job.spec.name, f"{c.name}: {thrown:.4g} checkpointed tokens discarded")
            if job.nodes.size and job.status != "waiting":
                self._interrupt_nodes(job.nodes, f"{c.name} on {self.node_name(n)}", 0.0)
        if c.scope == "node" and self.node_up()[n]:
            self.node_healthy[n] = False
            self._interrupt_nodes(np.array([n]), f"{c.name} on {self.node_name(n)}", 0.0)
            self._set_idle_phases()
        if c.repair != "none":
            self.env.process(self._repair(n, c, 0.0, detected=True))

    def _repair(self, n: int, c, detect_s: float, detected: bool = False):
        yield self.env.timeout(detect_s)
        if not detected:
            self.log("detected", self.node_name(n), c.name)
        t0 = self.now - detect_s
        pool = self.spare_stock.get(c.part, self.spare_stock.get("*")) if c.part else None
        if c.repair == "hardware" and pool is not None:
            # one-for-one replenishment: every demand orders a replacement at once (Palm's
            # model, as reliability.spares_fill_rate assumes); the part is taken before a
            # technician is called, so no technician waits idle
            self.env.process(self._restock(pool))
            yield pool.get(1)
        if c.repair == "hardware":
            with self.crew.request() as req:
                yield req
                self.log("repair_start", self.node_name(n), c.name)
                self.node_repairing[n] = True
                yield self.env.timeout(reliability.sample_repair_duration_h(self.rng_repair, c.repair) * H)
        else:
            self.log("repair_start", self.node_name(n), c.name)
            self.node_repairing[n] = True
            yield self.env.timeout(reliability.sample_repair_duration_h(self.rng_repair, c.repair) * H)
        self.node_repairing[n] = False
        self.repair_times_h.append((self.now - t0) / H)
        if c.scope == "rail_su":
            self.su_degraded[self.plant.node_su[n]] -= 1
        self.node_healthy[n] = True
        self.log("repair_end", self.node_name(n), f"{c.name}, {(self.now - t0) / H:.2f} h")
        self._set_idle_phases()
        self._schedule()

    def _restock(self, pool: simpy.Container):
        yield self.env.timeout(self.s.failures.restock_days * DAY)
        yield pool.put(1)

    # ------------------------------------------------------------------ grid events
    def _grid_times(self) -> list[tuple[float, float, str, float, int | None]]:
        """(start [s], duration [s], kind, residual voltage [pu], lost feed index or None) of
        every grid disturbance: the scenario's dated events, Poisson sags and outages of the
        utility, and Poisson losses of single feeds."""
        g, start = self.s.site.power.grid, self.s.simulation.start
        names = [f.name for f in self.s.site.power.feeds]
        out = [(seconds_since(start, e.time), e.duration_s, e.kind, 0.0,
                names.index(e.feed) if e.feed is not None else None) for e in g.events]
        ev = power.sample_grid_events(
            self.rng_grid, self.horizon_s, sag_rate_per_year=g.sag_rate_per_year,
            outage_rate_per_year=g.outage_rate_per_year, sag_mean_duration_s=g.sag_duration_s,
            outage_mean_duration_s=g.outage_duration_s)
        kinds = np.where(np.asarray(ev["kind"]) == power.GRID_OUTAGE, "outage", "sag")
        out += list(zip(np.asarray(ev["start_s"], float).tolist(), np.asarray(ev["duration_s"], float).tolist(),
                        kinds.tolist(), np.asarray(ev["residual_voltage_pu"], float).tolist(),
                        [None] * len(kinds), strict=True))
        if g.feed_outage_rate_per_year > 0 and len(names) > 1:
            for f in range(len(names)):
                t = 0.0
                while True:
                    t += self.rng_grid.exponential(365.25 * DAY / g.feed_outage_rate_per_year)
                    if t >= self.horizon_s:
                        break
                    out.append((t, float(self.rng_grid.exponential(g.feed_outage_duration_s)), "outage", 0.0, f))
        return sorted((e for e in out if 0 <= e[0] < self.horizon_s), key=lambda e: (e[0], e[2], e[4] or 0))

    def _feed_outage(self, f: int, dur: float):
        """One feed is lost: its load moves to the other feeds (A/B cords). If a survivor is
        overloaded it trips too and every rack drops; otherwise the racks keep running, but
        the PSUs cabled to the lost feed go dark and, past the PSU redundancy, the GPU power
        brake cuts the clocks (Dell XE9680: 3 of 6 PSUs per feed)."""
        if not self.feed_up[f]:
            return
        node, name = self.plant.node, self.s.site.power.feeds[f].name
        self.feed_up[f] = False
        rack_w = self._physics[0] if self._physics is not None else np.zeros(self.plant.n_racks)
        flow = power.evaluate_power_tree(self.tree, rack_w, self.feed_up)
        held = bool(np.all(flow.feed_ok)) and self.feed_up.any()
        failed_psus = power.psus_without_input(node.psu_count, self.feed_up)
        self.brake_clock = float(power.gpu_power_brake_clock_fraction(failed_psus, node.psu_count,
                                                                      node.psus_required))
        self.node_kw["psu_capacity_w"] = float(power.psu_capacity_w(node.psu_count, node.psu_rating_w,
                                                                    failed_psus))
        if held:
            self.log("feed_loss", name, f"survivor holds at {float(np.max(flow.feed_load_fraction)):.2f} of "
                     f"capacity; {failed_psus} PSUs per node dark, GPU clock x{self.brake_clock:g}")
        else:
            self.rack_unfed[:] = True
            self.log("feed_loss", name, "survivor overloaded and tripped: every rack dropped")
            self._interrupt_nodes(np.arange(self.plant.n_nodes), f"feed {name} lost")
            self._set_idle_phases()
        self._rates_changed()
        yield self.env.timeout(dur)
        self.feed_up[f] = True
        self.rack_unfed[:] = False
        self.brake_clock = 1.0
        self.node_kw["psu_capacity_w"] = float(node.psu_count * node.psu_rating_w)
        self.log("feed_restored", name, f"after {dur / H:.2f} h")
        self._rates_changed()
        self._set_idle_phases()
        self._schedule()

    def _rates_changed(self) -> None:
        """A clock factor changed: running jobs take their new step time now."""
        for job in self.jobs:
            if job.status == "running" and job.nodes.size:
                self._advance(job)
                self._update_rate(job)

    def _grid_process(self):
        pw = self.s.site.power
        for t, dur, kind, residual, feed in self._grid_times():
            if t > self.now:
                yield self.env.timeout(t - self.now)
            if feed is not None:
                self.env.process(self._feed_outage(feed, dur))
                continue
            drops = bool(power.ride_through_outcome(
                dur, pw.ups.mode, psu_holdup_s=pw.psu_holdup_s, ups_ride_through_s=pw.ups.ride_through_s,
                generator_start_s=pw.generator_start_s, residual_voltage_pu=residual))
            if not drops:
                self.log("grid_ride_through", "facility", f"{kind} {dur:.3g} s, UPS {pw.ups.mode}")
                continue
            victims = np.flatnonzero(self.node_up())
            self.log("grid_drop", "facility", f"{kind} {dur:.3g} s dropped {len(victims)} nodes")
            if len(victims) == 0:
                continue
            self.node_grid_down[victims] = True
            self._interrupt_nodes(victims, f"grid {kind}")
            self._set_idle_phases()
            back = min(dur, pw.generator_start_s) if kind == "outage" else dur
            self.env.process(self._grid_restore(victims, back + NODE_REBOOT_S))

    def _grid_restore(self, nodes: np.ndarray, after_s: float):
        yield self.env.timeout(after_s)
        self.node_grid_down[nodes] = False
        self.log("grid_restored", f"{len(nodes)} nodes", f"after {after_s:.0f} s")
        self._set_idle_phases()
        self._schedule()

    # ------------------------------------------------------------------ cooling events
    def _cooling_times(self) -> list[tuple[float, int, int, float]]:
        cf, start = self.s.site.cooling_faults, self.s.simulation.start
        out = []
        for e in cf.events:
            out.append((seconds_since(start, e.time), e.hall, self.halls[e.hall]["units"].index(e.unit),
                        e.duration_s))
        if cf.unit_failure_rate_per_year > 0:
            for h, hall in enumerate(self.halls):
                for u in range(len(hall["units"])):
                    t = 0.0
                    while True:
                        t += self.rng_cool.exponential(365.25 * DAY / cf.unit_failure_rate_per_year)
                        if t >= self.horizon_s:
                            break
                        out.append((t, h, u, float(self.rng_cool.exponential(cf.repair_h * H))))
        return sorted(out)

    def _cooling_process(self):
        for t, h, u, dur in self._cooling_times():
            if t > self.now:
                yield self.env.timeout(t - self.now)
            self.env.process(self._cooling_fault(h, u, dur))

    def _set_cooling(self, h: int, u: int, active: bool) -> None:
        """Switch a cooling unit; re-derive (or reuse) the hall's recirculation matrix.
        With no unit left running the hall has no steady state: its model is None and the
        fault transient carries the inlet temperatures."""
        hall = self.halls[h]
        hall["active"] = hall["active"].copy()
        hall["active"][u] = active
        key = tuple(hall["active"])
        if key not in hall["models"]:
            try:
                hall["models"][key] = thermal.inlet_model(hall["geom"], self.rack_airflow_m3_s[hall["idx"]],
                                                          hall["active"])
            except thermal.NoSteadyStateError:
                hall["models"][key] = None
        hall["model"] = hall["models"][key]

    def _cooling_fault(self, h: int, u: int, dur: float):
        hall = self.halls[h]
        name = hall["units"][u]
        before = hall["model"]
        self._set_cooling(h, u, False)
        tr = self._fault_transient(h, before, dur) if before is not None else None
        if tr is not None:
            # the lumped-capacitance transient sets the inlets until the hall settles
            hall["transient"] = (self.now, tr)
        self.log("cooling_fault", name, f"for {dur / H:.2f} h; {self._fault_outlook(tr)}")
        yield self.env.timeout(dur)
        self._set_cooling(h, u, True)
        if hall.get("transient") is not None and hall["transient"][1] is tr:
            hall["transient"] = None
        self.log("cooling_restored", name, "")

    def _fault_transient(self, h: int, before, dur: float):
        """Lumped-capacitance transient of the hall after a cooling fault
        (``thermal.fault_transient``) from the current rack heat and GPU power."""
        hall, p, node = self.halls[h], self.plant, self.plant.node
        idx = hall["idx"]
        heat = self._physics[0][idx] if self._physics is not None else np.zeros(len(idx))
        if heat.sum() <= 0:
            return None
        gpu_w = power.gpu_power_w(self.node_phase, self.gpu_cap_w, gpu_tdp_w=node.gpu_tdp_w,
                                  gpu_idle_w=node.gpu_idle_w, clock_fraction=self.node_clock)
        rack_gpu_w = gpu_w.reshape(p.n_racks, -1).max(axis=1)[idx]
        return thermal.fault_transient(
            before, hall["model"], heat, air_volume_m3=thermal.hall_air_volume_m3(hall["geom"]),
            duration_s=min(dur, 2 * H), gpu_power_w=rack_gpu_w,
            gpu_thermal_resistance_k_per_w=node.gpu_thermal_resistance_k_per_w,
            gpu_slowdown_c=node.gpu_slowdown_c, gpu_shutdown_c=node.gpu_shutdown_c, output_step_s=10.0)

    @staticmethod
    def _fault_outlook(tr) -> str:
        """Minutes until the first rack inlet crosses the ASHRAE A1 allowable limit and the
        first GPU reaches its slowdown and shutdown temperatures."""
        if tr is None:
            return "no IT load in the hall"

        def first(x):
            x = np.asarray(x, float)
            return f"{x.min():.1f} min ({int(np.isfinite(x).sum())} racks)" if np.isfinite(x).any() else "never"
        return (f"inlet above {tr.limit_c:g} C: {first(tr.minutes_to_limit)}; GPU slowdown: "
                f"{first(tr.minutes_to_gpu_slowdown)}; GPU shutdown: {first(tr.minutes_to_gpu_shutdown)}")

    def _hall_inlets_c(self, hall: dict, rack_w: np.ndarray) -> np.ndarray:
        """Inlet temperatures of a hall's racks [C]: the fault transient while one runs (or
        while no cooling is left), else the steady recirculation model, one mat-vec."""
        tr = hall.get("transient")
        if tr is not None:
            t0, res = tr
            if hall["model"] is None or self.now - t0 <= res.time_s[-1]:
                return res.inlet_at(self.now - t0)
        if hall["model"] is None:           # no cooling and no transient (no load at the fault)
            return np.full(len(hall["idx"]), np.inf)
        return thermal.inlet_temp_c(hall["model"], rack_w[hall["idx"]])

    # ------------------------------------------------------------------ sampler
    def outdoor_temp_c(self, t_s):
        """Outdoor dry-bulb [C] at simulation time(s) ``t_s`` (``power.outdoor_temp_c``:
        annual mean with seasonal and daily cosines)."""
        c = self.s.site.power.cooling
        return power.outdoor_temp_c(t_s, mean_c=c.outdoor_temp_c, seasonal_swing_c=c.outdoor_temp_swing_c,
                                    start_day_of_year=self.s.simulation.start.timetuple().tm_yday,
                                    daily_swing_c=c.outdoor_daily_swing_c)

    def _sample(self, i: int) -> None:
        p = self.plant
        for job in self.jobs:
            if job.nodes.size or job.status in ("running", "checkpointing", "starting"):
                self._advance(job)
        phase = self.node_phase
        rack_on = self.rack_on()
        # Between events the plant sits in a steady state: when the inputs of the physics
        # (phases, powered racks, inlet temperatures, clocks, cooling state) equal those of
        # the last sample, so do the outputs, and the vectorised evaluation is skipped.
        key = (phase.tobytes(), rack_on.tobytes(), self.rack_inlet_c.tobytes(),
               self.node_clock.tobytes(), tuple(id(h["model"]) for h in self.halls),
               tuple(self.now if h.get("transient") else None for h in self.halls), self.brake_clock)
        if key != self._physics_key:
            self._physics_key = key
            self._physics = self._physics_step(phase, rack_on)
        rack_w, inlet_c, clock, gpu_t, accel, rack_gpu_max_c = self._physics
        self.rack_inlet_c = inlet_c.copy()
        up = self.node_up()
        shut = up & (clock <= 0.0)
        if shut.any():
            for n in np.flatnonzero(shut):
                self.log("thermal_shutdown", self.node_name(n), f"GPU {gpu_t[n]:.1f} C")
            self.node_healthy[shut] = False
            self._interrupt_nodes(np.flatnonzero(shut), "GPU thermal shutdown")
            self.env.process(self._thermal_recover(np.flatnonzero(shut)))
        changed = not np.array_equal(clock, self.node_clock)
        self.node_clock = np.where(clock > 0, clock, 1.0)
        self.node_accel = accel
        if changed:
            self._rates_changed()
        rpp_w = np.bincount(p.rack_rpp, weights=rack_w, minlength=len(p.rpp_limit_w))
        self._check_breakers(rpp_w)
        r = self.rec
        r["rack_power_w"][i] = rack_w
        r["rack_inlet_c"][i] = self.rack_inlet_c
        r["rack_gpu_temp_max_c"][i] = rack_gpu_max_c
        r["rack_state"][i] = np.where(self.rack_tripped | self.rack_unfed, 3, np.where(
            self.rack_powered, np.where(self.rack_ready, 2, 1), np.where(self.rack_delivered, 0, -1)))
        r["power_available_w"][i] = self.power_available_w
        gpn = p.gpus_per_node
        r["gpus_installed"][i] = self.rack_delivered[p.node_rack].sum() * gpn
        r["gpus_powered"][i] = (rack_on[p.node_rack] & ~self.node_grid_down).sum() * gpn
        r["gpus_healthy"][i] = (up & self.rack_ready[p.node_rack]).sum() * gpn
        r["gpus_busy"][i] = (self.node_job >= 0).sum() * gpn
        r["nodes_failed"][i] = (~self.node_healthy & self.rack_delivered[p.node_rack]).sum()
        r["nodes_in_repair"][i] = self.node_repairing.sum()
        r["spares_in_stock"][i] = sum(pool.level for pool in self.spare_stock.values())
        throttled = int((self.node_clock[up] < 1).sum())
        r["throttle_fraction"][i] = throttled / max(int(up.sum()), 1)
        self.throttled_node_s += throttled * self.dt_s
        for j, job in enumerate(self.jobs):
            r["job_tokens"][i, j] = job.tokens
            r["job_tokens_per_s"][i, j] = job.rate_tok_s if job.status == "running" else 0.0
            r["job_gpus"][i, j] = len(job.nodes) * gpn

    def _physics_step(self, phase: np.ndarray, rack_on: np.ndarray):
        """Node power -> rack power -> inlet temperature -> GPU clock, temperature and
        failure acceleration, vectorised over every node and rack."""
        p, s, node = self.plant, self.s, self.plant.node
        inlet_node = self.rack_inlet_c[p.node_rack]
        node_w = power.node_power_w(phase, self.gpu_cap_w, inlet_node,
                                    clock_fraction=self.node_clock * self.brake_clock, **self.node_kw)
        rack_w = (np.bincount(p.node_rack, weights=node_w, minlength=p.n_racks)
                  + rack_on * s.hardware.network_power_per_rack_w)
        inlet_c = np.empty(p.n_racks)
        for hall in self.halls:          # rack heat -> inlet temperature, one mat-vec per hall
            inlet_c[hall["idx"]] = self._hall_inlets_c(hall, rack_w)
        clock, _, gpu_t = coupling.equilibrium_gpu_state(
            inlet_c[p.node_rack], phase, self.gpu_cap_w, gpu_tdp_w=node.gpu_tdp_w,
            gpu_idle_w=node.gpu_idle_w, thermal_resistance_k_per_w=node.gpu_thermal_resistance_k_per_w,
            slowdown_c=node.gpu_slowdown_c, hw_slowdown_c=node.gpu_hw_slowdown_c,
            shutdown_c=node.gpu_shutdown_c)
        accel = np.asarray(thermal.arrhenius_acceleration(gpu_t, s.failures.arrhenius_reference_temp_c,
                                                          s.failures.activation_energy_ev), float)
        rack_gpu_max_c = np.where(rack_on, gpu_t.reshape(p.n_racks, -1).max(axis=1), np.nan)
        return rack_w, inlet_c, clock, gpu_t, accel, rack_gpu_max_c

    def _thermal_recover(self, nodes: np.ndarray):
        yield self.env.timeout(H)      # operators let the node cool, then reboot it
        self.node_healthy[nodes] = True
        self.log("thermal_recovered", f"{len(nodes)} nodes", "")
        self._set_idle_phases()
        self._schedule()

    def _check_breakers(self, rpp_w: np.ndarray) -> None:
        """Advance each RPP breaker's thermal state over the coming sample at this load
        (``power.breaker_thermal_state_step``, exact for a constant current) and trip the
        breakers that reach their trip state, or their magnetic pick-up. The state carries
        over from sample to sample, so a breaker warmed by one overload trips sooner on the
        next; from cold it trips exactly when ``power.breaker_trip_time_s`` < the step."""
        p = self.plant
        frac = rpp_w / p.rpp_rating_w
        if frac.max() <= 1.0 and self.breaker_theta.max() <= 1.0:
            self.breaker_theta = frac ** 2          # at or below rating: steady, never trips
            return
        self.breaker_theta = np.asarray(power.breaker_thermal_state_step(self.breaker_theta, frac, self.dt_s))
        magnetic = np.asarray(power.breaker_trip_time_s(frac)) <= BREAKER_MAGNETIC_TRIP_S
        for q in np.flatnonzero((self.breaker_theta >= power.breaker_thermal_trip_state()) | magnetic):
            racks = np.flatnonzero((p.rack_rpp == q) & self.rack_powered & ~self.rack_tripped)
            if len(racks) == 0:
                continue
            self.breaker_theta[q] = 0.0              # reset cold
            self.rack_tripped[racks] = True
            self.log("breaker_trip", f"rpp{q}", f"{frac[q]:.2f} x rating, {len(racks)} racks down")
            self._interrupt_nodes(np.flatnonzero(np.isin(p.node_rack, racks)), f"RPP {q} breaker trip")
            self._set_idle_phases()
            self.env.process(self._breaker_reset(racks))

    def _breaker_reset(self, racks: np.ndarray):
        yield self.env.timeout(self.s.site.power.breaker_reset_s)
        self.rack_tripped[racks] = False
        self.log("breaker_reset", f"{len(racks)} racks", "")
        self._set_idle_phases()
        self._schedule()

    def _sampler(self):
        step = max(self.n_samples // 100, 1)
        for i in range(self.n_samples):
            self.next_sample_s = (i + 1) * self.dt_s
            self._sample(i)
            if self.progress is not None and i % step == 0:
                self.progress(i / self.n_samples)
            yield self.env.timeout(self.dt_s)

    # ------------------------------------------------------------------ run
    def run(self):
        """Run to the horizon and return :class:`twin.results.Results`."""
        from twin.results import build_results

        self.start()
        self.env.run(until=self.n_samples * self.dt_s)
        for job in self.jobs:
            self._advance(job)
        self._facility_series()
        if self.progress is not None:
            self.progress(1.0)
        return build_results(self)

    def hall_geometry(self, h: int = 0):
        """The thermal model's geometry of hall ``h`` (for steady fields and placement)."""
        return self.halls[h]["geom"]

    def start(self) -> None:
        """Register the processes (once); ``env.run(until=...)`` can then step the twin."""
        if getattr(self, "_started", False):
            return
        self._started = True
        env = self.env
        env.process(self._ramp_process())
        env.process(self._failure_process())
        env.process(self._grid_process())
        env.process(self._cooling_process())
        env.process(self._maintenance_process())
        for job in self.jobs:
            job.process = env.process(self._job_process(job))
        env.process(self._sampler())

    def _facility_series(self) -> None:
        """Power chain and cooling for every sample at once, (T, R) -> (T,), vectorised.

        Nothing in the feedback loops needs the UPS, feed or cooling figures within the run
        (RPP loads for the breakers are summed in the sampler), so they are evaluated once.
        """
        r, s = self.rec, self.s
        flow = power.evaluate_power_tree(self.tree, r["rack_power_w"].astype(float))
        t_s = np.arange(self.n_samples) * self.dt_s
        out_c = self.outdoor_temp_c(t_s)
        c = s.site.power.cooling
        cool = np.asarray(power.cooling_power_w(flow.building_heat_w, out_c, chiller_cop_at_25c=c.chiller_cop_at_25c,
                                                fan_pump_fraction=c.fan_pump_fraction), float)
        ups_loss = np.asarray(flow.ups_loss_w, float).sum(axis=-1)
        r["rpp_load_fraction"] = np.asarray(flow.rpp_load_fraction, np.float32)
        r["rpp_power_w"] = np.asarray(flow.rpp_w, float)
        r["feed_load_fraction"] = np.asarray(flow.feed_load_fraction, np.float32)
        r["feed_power_w"] = np.asarray(flow.feed_w, float)
        r["ups_output_w"] = np.asarray(flow.ups_output_w, float)
        r["ups_load_fraction"] = np.asarray(flow.ups_load_fraction, float)
        r["rpp_loss_w"] = np.asarray(flow.rpp_loss_w, float).sum(axis=-1)
        r["feed_loss_w"] = np.asarray(flow.feed_loss_w, float).sum(axis=-1)
        r["facility_it_w"] = np.asarray(flow.it_w, float)
        r["ups_loss_w"] = ups_loss
        r["distribution_loss_w"] = np.asarray(flow.utility_w) - np.asarray(flow.it_w) - ups_loss
        r["cooling_w"] = cool
        r["facility_total_w"] = np.asarray(flow.utility_w) + cool
        r["outdoor_temp_c"] = np.asarray(out_c, float)
