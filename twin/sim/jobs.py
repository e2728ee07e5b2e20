"""Training jobs: progress in closed form between events, checkpoints, interruptions,
hot spares, silent-corruption roll-back, and the step rate from the compute model."""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy
from simpy.events import NORMAL

from twin import compute, fabric, power, reliability, storage
from twin.compute.step import fabric_traffic_pattern
from twin.phases import Phase
from twin.plant import model_spec, seconds_since, step_estimate_for
from twin.power.node import _frozen as _unwritable  # nothing can write it (the write log's rule)
from twin.power.node import _scalar
from twin.scenario.schema import Job
from twin.sim.component import Component
from twin.workload.engine_jobs import EngineJob, stream_engine_jobs, trace_engine_jobs


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
    gpu_s_allocated: float = 0.0       # GPU-seconds the job held nodes (= useful + lost + overhead + spare)
    gpu_s_spare: float = 0.0           # GPU-seconds of nodes held beyond the job's size (hot spares, idle)
    gpu_s_overhead: float = 0.0        # GPU-seconds of working nodes not training: checkpoint writes,
                                       # (re)starts, the detection window after a failure
    gpu_s_useful: float = 0.0          # GPU-seconds of running whose work survived
    gpu_s_pending: float = 0.0         # GPU-seconds of running since the last checkpoint
    gpu_s_lost: float = 0.0
    wall_s_useful: float = 0.0         # wall time of running whose work survived
    wall_s_pending: float = 0.0        # wall time of running since the last checkpoint
    checkpoint_s: float = 0.0          # wall time spent writing checkpoints
    restart_s: float = 0.0             # wall time spent (re)starting
    # a job whose length is a wall time (stream, trace): wall time inside that length that is
    # not training, its first launch and its committed checkpoint writes (Jobs._lifecycle)
    wall_s_inside: float = 0.0
    wall_s_launch: float = 0.0         # ... of which its first launch
    interruptions: int = 0
    tokens_lost: float = 0.0
    first_start_s: float = math.nan
    end_s: float = math.nan
    step: compute.StepEstimate | None = None
    process: simpy.Process | None = None
    placed: simpy.Event | None = None
    # completed checkpoints: time [s]; tokens, GPU-s, wall-s made safe by then and wall_s_inside,
    # four floats a checkpoint in one flat list (no tuple per checkpoint for the collector to scan)
    ckpt_time_s: list = field(default_factory=list)
    ckpt_state: list = field(default_factory=list)
    # a job of a stream or trace (twin.workload): submit time [s], training time it needs,
    # its class, owner and queue, the state it ends in; None for the scenario's fixed jobs
    stream: EngineJob | None = None
    submit_s: float = math.nan
    end_sample: int = -1               # first sample after the job ended (stream jobs)
    training_ver: int = -1             # write count of node_job_phase when its nodes were last seen TRAINING
    next_ckpt_s: float = math.inf      # time of the next checkpoint [s] (a training fixed job)
    park_event: _Parked | None = None  # what the job waits on while parked (Jobs.wake_parked)

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
            state = self.ckpt_state
            state.append(self.tokens_committed)
            state.append(self.gpu_s_useful)
            state.append(self.wall_s_useful)
            state.append(self.wall_s_inside)

    def roll_back_before(self, corruption_s: float) -> float:
        """Silent data corruption at ``corruption_s``: checkpoints written since then hold
        corrupt state; fall back to the last clean one (``reliability.last_clean_checkpoint_index``).
        Returns the tokens of committed work thrown away."""
        i = reliability.last_clean_checkpoint_index(np.array(self.ckpt_time_s), corruption_s)
        tokens, gpu_s, wall_s, inside = (self.ckpt_state[4 * i:4 * i + 4] if i >= 0
                                         else (0.0, 0.0, 0.0, self.wall_s_launch))
        thrown = self.tokens_committed - tokens
        if thrown > 0:
            self.gpu_s_lost += self.gpu_s_useful - gpu_s
            self.tokens_lost += thrown
            self.tokens -= thrown              # work since the last checkpoint stays pending
            self.tokens_committed, self.gpu_s_useful, self.wall_s_useful = tokens, gpu_s, wall_s
            # the thrown checkpoints' writes are redone: no longer inside the job's length
            self.wall_s_inside = inside
            del self.ckpt_time_s[i + 1:], self.ckpt_state[4 * (i + 1):]
        return max(thrown, 0.0)

    def lose(self) -> float:
        """Roll back to the last checkpoint; return the tokens lost."""
        lost = self.tokens - self.tokens_committed
        self.tokens_lost += lost
        self.tokens = self.tokens_committed
        self.gpu_s_lost += self.gpu_s_pending
        self.gpu_s_pending = self.wall_s_pending = 0.0
        return lost


class Jobs(Component):
    """One simpy process per training job: queue, (re)start and reload, train in closed
    form, checkpoint, and recover from interruptions (hot spares, detection delay)."""

    name = "jobs"
    reads = ("node_up", "node_clock", "brake_clock", "rack_inlet_c", "su_degraded")
    writes = ("node_job", "node_job_phase")
    emits = ("job_start", "checkpoint", "job_done", "job_interrupted", "job_spare_swap", "job_requeued")
    outputs = ("job_tokens", "job_tokens_per_s", "job_gpus", "job_goodput_fraction", "job_spare_gpu_hours",
               "job_interruptions", "job_class", "job_state", "job_submit_s", "job_start_s", "job_end_s",
               "job_gpus_requested")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.all: list[JobState] = []
        for j, spec in enumerate(self.s.workload.jobs):
            params = model_spec(spec).parameters()      # every expert of a mixture of experts
            ck = spec.checkpoint_bytes or storage.checkpoint_bytes(params)
            self.all.append(JobState(spec=spec, index=j, params=params, checkpoint_bytes=ck))
        self.n_fixed = len(self.all)
        self.stream_stats: dict[str, float] = {}
        self.active: set[int] = set()       # stream jobs placed at least once and not done
        self._live_jobs: list[JobState] | None = None   # fixed then active jobs (_live)
        self._add_stream_jobs()
        st = self.s.workload.storage
        self.storage_write_gb_s, self.storage_read_gb_s = storage.storage_bandwidth_gb_s(
            st.kind, st.units, st.write_gb_s_per_unit, st.read_gb_s_per_unit)
        self.writers = 0
        self._peak_swing_w = {"communication": 0.0, "checkpoint": 0.0}
        self._swings: list[tuple] = []      # job starts whose swing is not yet evaluated
        self._fabric_cache: dict = {}
        #: the fabric faults in force as the fabric library takes them, ``(failed switches,
        #: failed links)``, or None while none is (the fault-free path: figures by spread)
        self._fabric_fails: tuple | None = None
        self._faulted_cache: dict = {}      # (faults, nodes per unit) -> per-node bandwidth [Gb/s]
        self._share_cache: dict = {}
        self._step_cache: dict = {}
        self._interval_cache: dict = {}
        self._spread: dict[int, tuple] = {}   # id(node array) -> (a copy of it, fabric cache key, nodes per unit, units, it)
        self._spread_held, self._spread_max = 0, 8 * self.plant.n_nodes     # nodes the kept spreads hold
        #: node >> shift is its scalable unit, its rack, when those are runs of 2^k nodes in
        #: order (None: read the plant's table); cold tables cost more than the shift
        self._su_shift = _run_shift(self.plant.node_su)
        self._rack_shift = _run_shift(self.plant.node_rack)
        self._degraded_ver = -1     # _worst_degraded: su_degraded's write count, and its non-zero units
        self._degraded: list[tuple[int, int]] = []     # (unit, failed rails) of each unit with any
        self._clock_ver, self._clock_full = -1, False          # _full_clock: node_clock's write count
        #: the last job start's node_power_w keywords as read, and as kept (_record_swing)
        self._swing_kw_last: tuple | None = None
        self._write_s_memo: dict[tuple[float, int], float] = {}    # (bytes, writers) -> write time [s]
        self._read_s_memo: dict[float, float] = {}                 # bytes -> reload time [s]
        # GPUs per node when every node model has the same count (None: look it up per job)
        self._gpn: int | None = self.plant.gpus_per_node if len(self.plant.models) <= 1 else None
        #: a checkpoint that ends before the next queued event is written in closed form (no
        #: simpy wake-up at its end, no phase writes nobody can see); False runs every one as
        #: an event, the reference the fast path is tested against (tests/sim/test_speed_paths.py)
        self.closed_form_checkpoints = True
        self.checkpoints_closed_form = 0    # how many took the fast path (a counter for tests/bench)
        #: a stream job trains in :meth:`_stream_training` (the same steps with fewer look-ups
        #: per wake-up); False runs :meth:`_lifecycle`'s loop, the reference it is tested against
        self.stream_fast = True
        #: a training fixed job whose next checkpoint and end lie several samples ahead is
        #: parked instead of waking at every sample to re-read its step rate: the sampler does
        #: that wake-up's arithmetic after each sample (:meth:`wake_parked`), so quiet stretches
        #: fill in bulk. False wakes it at every sample, the reference the parked path is tested
        #: against (tests/sim/test_job_parking.py). Off with links shared between jobs (a
        #: rate may then jump at any start or end).
        self.park = self.s.fabric.sharing == "none"
        self._parked: list[tuple[JobState, _Parked]] = []   # in the order of their wake-ups
        self._parked_ahead: list[tuple[JobState, _Parked]] = []     # ... ahead of the sampler
        self._ahead_until = -math.inf       # as _parked_until, for the jobs parked ahead
        self._ahead_ver = -1
        self.park_misses = 0                # parked jobs found due at a sample (0: bit for bit)
        self._rates_ver = 0                 # counts update_rate calls (a parked job's rate may move)
        #: every parked job stays parked at a sample before this time [s] while no rate moved
        #: since (``_parked_ver``): on a whole-second sample grid the sample instants are exact
        #: floats, so the wake-up's comparisons need not be redone far from a checkpoint or end
        self._parked_until = -math.inf
        self._parked_ver = -1
        self._grid_exact = float(self.e.dt_s).is_integer() and self.e.horizon_s < 2.0 ** 52
        self._fill_i0 = 0                   # samples of a quiet stretch not yet advanced (fill_sample)
        self._fill_ts: list[float] = []

    def _add_stream_jobs(self) -> None:
        """The jobs of ``workload.stream`` or ``workload.trace`` (twin.workload), drawn from
        their own child of the scenario seed (spawn key 100: the engine's named streams are
        untouched, so a scenario without a stream draws exactly what it drew before)."""
        w, p = self.s.workload, self.plant
        if w.stream is None and w.trace is None:
            return
        gpus = int(p.rack_gpus[:sum(wv.racks for wv in self.s.ramp.waves)].sum())
        if w.stream is not None:
            rng = np.random.default_rng(np.random.SeedSequence(self.s.simulation.seed, spawn_key=(100,)))
            jobs, self.stream_stats = stream_engine_jobs(self.s, rng, gpus, p.gpus_per_node,
                                                         delivered_gpus=self._delivered_gpus)
        else:
            jobs, self.stream_stats = trace_engine_jobs(self.s, ".", gpus, p.gpus_per_node)
        cache: dict[str, tuple[float, float]] = {}
        for ej in jobs:
            spec = ej.spec
            key = spec.model.model_dump_json()
            if key not in cache:
                params = model_spec(spec).parameters()
                cache[key] = (params, spec.checkpoint_bytes or storage.checkpoint_bytes(params))
            params, ck = cache[key]
            self.all.append(JobState(spec=spec, index=len(self.all), params=params, checkpoint_bytes=ck,
                                     stream=ej, submit_s=ej.submit_s))

    def _delivered_gpus(self, t_s):
        """GPUs delivered by time t [s] (the ramp's waves), for arrivals that follow them."""
        from twin.plant import seconds_since
        t = np.asarray(t_s, float)
        out = np.zeros_like(t)
        first = 0
        for wv in self.s.ramp.waves:
            gpus = int(self.plant.rack_gpus[first:first + wv.racks].sum())
            first += wv.racks
            out = out + np.where(t >= seconds_since(self.s.simulation.start, wv.date), gpus, 0)
        return out

    def __iter__(self):
        return iter(self.all)

    def __getitem__(self, j: int) -> JobState:
        return self.all[j]

    def __len__(self) -> int:
        return len(self.all)

    def start(self) -> None:
        for job in self.all:
            job.process = self.env.process(self._lifecycle(job))

    # ------------------------------------------------------------------ step rate
    def traffic_pattern(self, job: JobState) -> str:
        """The traffic pattern the fabric routes for the job (:data:`twin.fabric.routing.PATTERNS`):
        ``"all_to_all"`` for a mixture of experts whose expert-parallel group spans nodes,
        else ``"ring"``, as ``twin estimate fabric-study`` gives its jobs
        (:func:`twin.compute.fabric_study._job`).

        The group spans nodes when a node holds fewer than ``ep`` of its ranks: the step
        model's own rule, :func:`twin.compute.step.fabric_traffic_pattern` (which
        ``twin estimate step`` routes too)."""
        s = job.spec
        if s.ep <= 1:       # dense, or experts on every rank (the schema ties ep > 1 to experts)
            return "ring"
        return fabric_traffic_pattern(
            experts=s.model.experts, ep=s.ep, tp=s.tp, cp=s.cp, moe_expert_tp=s.moe_expert_tp,
            gpus_per_node=self.gpus_per_node_of(job))

    def fabric_figures(self, nodes: np.ndarray, pattern: str = "ring") -> tuple[float, float]:
        """(max switch hops, per-node bottleneck bandwidth [Gb/s]) of a placement whose
        collectives load the fabric in ``pattern`` (:meth:`traffic_pattern`).

        The fabrics are symmetric (every scalable unit wired alike), so the figures depend on
        how the job spreads over the units, not on which units. They are cached by a summary
        of that spread (nodes, units spanned, most nodes in one unit): a ring crosses each
        unit's uplinks once per rail whatever the unit holds, so a job that swaps a node for
        a spare keeps its figures instead of re-routing thousands of flows. A failed
        leaf switch (rail) of a unit the job uses scales the bandwidth by the rails left.

        While spine switches or inter-switch cables are down (``fabric.faults``) the fabric is
        no longer symmetric: the bandwidth is routed around them for the job's nodes per unit
        (:func:`twin.fabric.bottleneck_bandwidth_gbps` with ``failed_switches`` and
        ``failed_links``), cached by the faults in force and those counts.

        An all-to-all is keyed by the nodes per unit instead of the ring's summary: every
        node sends to every other, so a unit's uplinks carry ``n_u (N - n_u)`` node pairs,
        which the largest unit alone does not fix (a unit's nodes hang off the same leaves,
        so which nodes of a unit does not matter).
        """
        spread = self._spread.get(id(nodes))
        if spread is not None and spread[4] is nodes and (
                _unwritable(nodes) if spread[0] is nodes else np.array_equal(spread[0], nodes)):
            key, counts, n_sus = spread[1], spread[2], spread[3]
        else:
            # nodes per unit by counting, not sorting (what np.unique(..., return_counts) gives);
            # each node's unit by a shift when the units are runs of 2^k nodes (reads no table)
            shift = self._su_shift if isinstance(nodes, np.ndarray) else None
            counts = np.bincount(nodes >> shift if shift is not None else self.plant.node_su[nodes])
            n_sus = int(np.count_nonzero(counts))
            key = (len(nodes), n_sus, int(counts.max())) if n_sus else (0, 0, 0)
            if self.s.fabric.site_tier is not None:     # crossing halls climbs the site tier
                key += (int(np.count_nonzero(np.bincount(self.plant.rack_hall[self.plant.node_rack[nodes]]))),)
            # kept per node array (a job's placement), checked against a copy of its nodes (none
            # for an array nobody can write, :func:`_unwritable`: the scheduler's placements);
            # the entry holds the array itself, so its id names no other array while it is kept
            # (a new array at a freed one's address would cost a comparison of the two); all
            # are dropped past 4096 entries or eight times the site's nodes (live placements
            # hold each node at most once), so the copies stay a few MB
            held = self._spread_held + len(nodes)
            if len(self._spread) >= 4096 or held > self._spread_max:
                self._spread.clear()
                held = len(nodes)
            self._spread_held = held
            frozen = isinstance(nodes, np.ndarray) and _unwritable(nodes)
            self._spread[id(nodes)] = (nodes if frozen else nodes.copy(), key, counts, n_sus, nodes)
        if pattern != "ring":
            key = (pattern, counts.tobytes())
        if key not in self._fabric_cache:
            hops = fabric.placement_hops(self.e.graph, nodes)
            bw = fabric.bottleneck_bandwidth_gbps(self.e.graph, nodes, pattern=pattern)
            self._fabric_cache[key] = (float(hops["max_hops"]), float(bw))
        hops, bw = self._fabric_cache[key]
        if self._fabric_fails is not None:
            bw = self._faulted_bandwidth_gbps(nodes, counts, pattern)
        rails = self.s.fabric.rails
        return hops, bw * max(rails - self._worst_degraded(counts, n_sus), 0) / rails

    def _faulted_bandwidth_gbps(self, nodes: np.ndarray, counts: np.ndarray, pattern: str = "ring") -> float:
        """Per-node bottleneck bandwidth [Gb/s] of the job on ``nodes`` (``counts``: its
        nodes per unit) with the fabric faults in force routed around, its collectives in
        ``pattern``. A unit's nodes hang off the same leaves, so the nodes per unit (which
        units, how many in each) fix the leaf-to-leaf traffic of the ring or the
        all-to-all: they, the faults and the pattern are the key."""
        assert self._fabric_fails is not None      # called only while faults are in force
        key: tuple = (self._fabric_fails, counts.tobytes())
        if pattern != "ring":
            key += (pattern,)
        bw = self._faulted_cache.get(key)
        if bw is None:
            if len(self._faulted_cache) > 4096:
                self._faulted_cache.clear()
            switches, links = self._fabric_fails
            bw = self._faulted_cache[key] = float(fabric.bottleneck_bandwidth_gbps(
                self.e.graph, nodes, links, failed_switches=switches, pattern=pattern))
        return bw

    def fabric_faults_changed(self) -> None:
        """The spine switches or inter-switch cables out of service changed
        (:meth:`Failures._fabric_faults <twin.sim.failures.Failures._fabric_faults>`): every
        running job takes the bandwidth of its placement routed around those in force now."""
        f = self.e.failures
        fails = (f.failed_switches, f.failed_links)
        self._fabric_fails = fails if fails[0] or fails[1] else None
        self.rates_changed()

    def _worst_degraded(self, counts: np.ndarray, n_sus: int) -> int:
        """Most failed rails of any scalable unit the job uses (``counts``: its nodes per
        unit, ``n_sus`` of them non-zero), as ``su_degraded[np.flatnonzero(counts)].max()``.

        Few units have a failed rail at a time: they are listed per write count of
        ``su_degraded``, and the job's count is read at those units only (~1 us where listing
        the job's units was ~8 us; issue 19). The units it spans that are not listed hold 0."""
        if not n_sus:
            return 0
        st = self.state
        ver = st.version("su_degraded")
        if ver != self._degraded_ver:
            deg = st.su_degraded.view(np.ndarray)       # plain view: reads only
            units = np.flatnonzero(deg)
            self._degraded_ver, self._degraded = ver, list(zip(units.tolist(), deg[units].tolist(), strict=True))
        if len(self._degraded) > 32:        # many: list the job's units as before
            return int(st.su_degraded.view(np.ndarray)[np.flatnonzero(counts)].max())
        hit = [v for u, v in self._degraded if u < len(counts) and counts[u] > 0]
        if not hit:
            return 0
        worst = max(hit)
        return worst if len(hit) == n_sus else max(worst, 0)    # else some unit it spans holds 0

    def _min_clock(self, nodes: np.ndarray) -> float:
        """Lowest clock fraction [-] of ``nodes`` (1 for none): 1 at once while every node
        runs at full clock (kept per write count of ``node_clock``; issue 19)."""
        if not len(nodes):
            return 1.0
        if self._full_clock():
            return 1.0      # the minimum of ones
        return float(self.state.node_clock.view(np.ndarray)[nodes].min())

    def _full_clock(self) -> bool:
        """Every node's clock fraction is exactly 1, checked once per write count of
        ``node_clock`` (the sampler writes it only when a clock moved)."""
        st = self.state
        ver = st.version("node_clock")
        if ver != self._clock_ver:
            nc = st.node_clock.view(np.ndarray)
            self._clock_ver, self._clock_full = ver, bool(nc.size) and bool((nc == 1.0).all())
        return self._clock_full

    def shared_fraction(self, job: JobState) -> float:
        """Factor [-] on the job's alone, adaptive bandwidth from ``fabric.routing`` and
        ``fabric.sharing``: its rate under static ECMP hashing, and with ``max_min`` its
        max-min fair share of the links it shares with the other jobs on the fabric
        (running or checkpointing, 2+ nodes), over its alone adaptive rate
        (:func:`twin.fabric.fair_share_bandwidths_gbps`), both with the fabric faults in
        force routed around, each job's traffic in its own pattern (:meth:`traffic_pattern`),
        static ECMP hashing ``fabric.queue_pairs`` flows per connection.
        Cached by the set of placements (and the faults, and the patterns when any is not a
        ring); 1 with the defaults (adaptive, no sharing) or on one node."""
        f = self.s.fabric
        if (f.sharing == "none" and f.routing == "adaptive") or len(job.nodes) < 2:
            return 1.0
        group = [job]
        if f.sharing == "max_min":
            group = [j for j in self._live() if j.status in ("running", "checkpointing")
                     and len(j.nodes) >= 2 and j is not job] + [job]
        key: tuple = tuple(sorted(j.nodes.tobytes() for j in group))
        pats = [self.traffic_pattern(j) for j in group]
        if any(p != "ring" for p in pats):      # a placement does not name its job's pattern
            key = (tuple(sorted(zip((j.nodes.tobytes() for j in group), pats, strict=True))),)
        fails = self._fabric_fails
        if fails is not None:
            key = (fails, *key)
        if key not in self._share_cache:
            if len(self._share_cache) > 4096:
                self._share_cache.clear()
            g = self.e.graph
            switches, links = fails if fails is not None else ((), ())
            r = fabric.fair_share_bandwidths_gbps(
                g, [j.nodes for j in group], pattern=pats, seed=self.s.simulation.seed,
                routing="ecmp" if f.routing == "static_ecmp" else "adaptive", qps=f.queue_pairs,
                failed_links=links, failed_switches=switches)
            alone = np.array([fabric.bottleneck_fraction(g, j.nodes, links, failed_switches=switches, pattern=p)
                              for j, p in zip(group, pats, strict=True)])
            ratio = np.divide(r["fraction"], alone, out=np.zeros(len(group)), where=alone > 0)
            self._share_cache[key] = {j.nodes.tobytes(): float(x) for j, x in zip(group, ratio, strict=True)}
        return self._share_cache[key][job.nodes.tobytes()]

    def _fabric_changed(self) -> None:
        """The jobs on the fabric changed (a start, an end, an interruption, a checkpoint
        done): with shared links every running job takes its new bandwidth now."""
        if self.s.fabric.sharing != "none":
            self.rates_changed()

    def step(self, job: JobState) -> compute.StepEstimate:
        """Step estimate of a job on its nodes at their current clock (cached by its inputs)."""
        nodes, st = job.nodes, self.state
        m = self.model_of(job)
        # reads through a plain view of the tracked arrays: the same values, no tracking cost
        brake = float(st.brake_clock) if _one_number(st.brake_clock) else (
            float(np.asarray(st.brake_clock)[nodes].min()) if len(nodes) else 1.0)     # (N,) with mixed models
        clock = self._min_clock(nodes) * brake
        clock *= self.e.power.cap_clock_fraction if m == 0 else float(self.e.power.cap_clock_fraction_by_model[m])
        hops, bw = self.fabric_figures(nodes, self.traffic_pattern(job))
        bw *= self.shared_fraction(job)
        # stream jobs of one class share their model: cache by class and parallelism, not name
        ident = job.spec.name if job.stream is None else (
            job.stream.job_class, job.spec.tp, job.spec.pp, job.spec.global_batch)
        key = (ident, m, len(nodes), round(clock, 3), hops, round(bw, 3))
        if key not in self._step_cache:
            self._step_cache[key] = step_estimate_for(self.s, job.spec, self.plant.models[m], len(nodes),
                                                      clock_fraction=clock, inter_node_gbps=bw, hops=hops)
        return self._step_cache[key]

    def model_of(self, job: JobState) -> int:
        """Index into ``plant.models`` of the node model the job runs on: its nodes' model
        (a job's nodes share one), else the model the scheduler chose or the job names,
        else the default (0)."""
        p = self.plant
        if len(p.models) <= 1:
            return 0
        if len(job.nodes):
            return int(p.node_model_index[job.nodes[0]])
        chosen = getattr(self.e, "scheduler", None)
        if chosen is not None and job.index in chosen.job_model:
            return chosen.job_model[job.index]
        name = job.spec.node_model
        return p.model_names.index(name) if name in p.model_names else 0

    def gpus_per_node_of(self, job: JobState) -> int:
        """GPUs per node of the job's node model."""
        if self._gpn is not None:
            return self._gpn
        return self.plant.models[self.model_of(job)].gpu_count

    def checkpoint_write_s(self, job: JobState, writers: int) -> float:
        """Write time [s] of the job's checkpoint with ``writers`` jobs writing at once
        (:func:`twin.storage.checkpoint_write_s`, memoised per size and writer count: the
        bandwidth is fixed for the run)."""
        key = (job.checkpoint_bytes, writers)
        dur = self._write_s_memo.get(key)
        if dur is None:
            dur = self._write_s_memo[key] = float(storage.checkpoint_write_s(
                job.checkpoint_bytes, self.storage_write_gb_s, writers))
        return dur

    def checkpoint_read_s(self, job: JobState) -> float:
        """Reload time [s] of the job's checkpoint (:func:`twin.storage.checkpoint_read_s`, memoised)."""
        dur = self._read_s_memo.get(job.checkpoint_bytes)
        if dur is None:
            dur = self._read_s_memo[job.checkpoint_bytes] = float(storage.checkpoint_read_s(
                job.checkpoint_bytes, self.storage_read_gb_s))
        return dur

    def update_rate(self, job: JobState) -> None:
        self._rates_ver += 1
        job.step = self.step(job)
        gpus = len(job.nodes) * self.gpus_per_node_of(job)
        factor = storage.step_time_factor(self.s.workload.storage.kind)
        job.rate_tok_s = job.step.tokens_per_s_per_gpu * gpus / factor
        if job.stream is not None and not job.stream.counts_tokens:
            job.rate_tok_s = 0.0            # evaluation and debug jobs hold GPUs, train no tokens

    def rates_changed(self) -> None:
        """A clock factor changed: running jobs take their new step time now."""
        for job in self._live():
            if job.status == "running" and job.nodes.size:
                self.advance(job)
                self.update_rate(job)

    def advance(self, job: JobState) -> None:
        """Integrate the job's progress from its last update to now (closed form)."""
        now = self.env._now         # Environment.now without the property call (hot path)
        dt = now - job.t_last
        if dt > 0:
            per_node = self._gpn if self._gpn is not None else self.gpus_per_node_of(job)
            n = len(job.nodes)
            held = n + len(job.spares)
            job.gpu_s_allocated += held * per_node * dt
            # nodes beyond the job's size are its hot spares (in a detection window every node
            # kept sits in ``spares``: the job's size of them are its working nodes waiting)
            spare = held - job.spec.nodes
            if spare > 0:
                job.gpu_s_spare += spare * per_node * dt
            else:
                spare = 0
            status = job.status
            if status == "running":
                job.tokens += job.rate_tok_s * dt
                job.gpu_s_pending += n * per_node * dt
                job.wall_s_pending += dt
                idle = held - spare - n
            else:
                idle = held - spare
                if status == "checkpointing":
                    job.checkpoint_s += dt
                elif status == "starting":
                    job.restart_s += dt
            if idle > 0:
                job.gpu_s_overhead += idle * per_node * dt
        job.t_last = now

    def advance_all(self) -> None:
        """Bring every job that holds nodes (or is between phases) up to now (:meth:`advance`
        of each; the accrual rule lives in one place)."""
        advance = self.advance
        for job in self._live():
            status = job.status
            if len(job.nodes) or status == "running" or status == "checkpointing" or status == "starting":
                advance(job)

    def _live(self) -> list[JobState]:
        """The fixed jobs, then the stream jobs that have started and are not done (the
        others hold no nodes and accrue nothing), in index order; the list is kept until a
        stream job ends (:meth:`_set_active`) or one is added to :attr:`active` (the
        scheduler adds the jobs it places)."""
        live = self._live_jobs
        if live is None or len(live) != self.n_fixed + len(self.active):
            live = self._live_jobs = self.all[:self.n_fixed] + [self.all[j] for j in sorted(self.active)]
        return live

    def _set_active(self, job: JobState, active: bool) -> None:
        """A stream job starts (again) or ends."""
        if active and job.index not in self.active:
            self.active.add(job.index)
            self._live_jobs = None
        elif not active and job.index in self.active:
            self.active.discard(job.index)
            self._live_jobs = None

    def checkpoint_interval_s(self, job: JobState) -> float:
        iv = job.spec.checkpoint_interval_s
        if iv != "auto":
            return float(iv)
        # Daly's interval depends on the node count and the checkpoint size only (the
        # failure classes, rate scale and storage bandwidth are fixed for the run)
        key = (len(job.nodes), job.checkpoint_bytes)
        if key not in self._interval_cache:
            mtbf_s = reliability.job_mtbf_s(self.e.failures.classes, max(len(job.nodes), 1),
                                            self.s.failures.rate_scale)
            ck = self.checkpoint_write_s(job, 1)
            self._interval_cache[key] = float(reliability.daly_interval_s(ck, mtbf_s))
        return self._interval_cache[key]

    # ------------------------------------------------------------------ life cycle
    def _set_phase(self, job: JobState, phase: Phase) -> None:
        self.state.node_job_phase[job.nodes] = phase

    def _lifecycle(self, job: JobState):
        """A job from its submission to its end: queue, (re)start, train, checkpoint, and the
        recovery from interruptions.

        A fixed job's length is work (a token target, or the run's end): its start-ups and
        checkpoint writes come on top of its training. A stream or trace job's length
        (``EngineJob.run_s``) is a wall time, a recorded duration or one drawn from recorded
        durations, which already holds the job's own start-up and checkpoint writes; so the
        job ends when its training wall time + its first launch (``restart_s``, cut at
        ``run_s``) + its committed checkpoint writes reach ``run_s`` (:func:`_wall_s_done`),
        and a checkpoint that would end at or after that end is not written (the job's last
        seconds train). What the twin's own failures add comes on top, since a recorded
        duration cannot hold them: the relaunch (and reload) after an interruption, the
        detection window, a write cut by the failure, the work lost since the last
        checkpoint (or since the last clean one, for silent corruption) and redone. With no
        failure a job holds its nodes for exactly ``run_s``."""
        spec, e = job.spec, self.e
        if job.stream is not None:
            t_submit = job.submit_s
        else:
            t_submit = seconds_since(self.s.simulation.start, spec.submit) if spec.submit else 0.0
        if t_submit > self.env.now:
            yield self.env.timeout(t_submit - self.env.now)
        job.t_last = self.env.now
        e.scheduler.enqueue(job)
        while job.status != "done":
            try:
                if job.status == "queued":
                    yield job.placed
                    job.t_last = self.env.now
                if job.stream is not None:
                    self._set_active(job, True)
                # (re)start: relaunch, then reload the last checkpoint if there is one
                self._set_phase(job, Phase.RESTART)
                if math.isnan(job.first_start_s):
                    job.first_start_s = self.env.now
                reload = self.checkpoint_read_s(job) if job.tokens_committed > 0 else 0.0
                launch_s = spec.restart_s + reload
                # the first launch of a wall-time job is inside its length (_lifecycle's doc)
                first = job.stream is not None and job.interruptions == 0
                if first:
                    launch_s = min(launch_s, max(_wall_s_left(job), 0.0))
                text = f"{len(job.nodes)} nodes, reload {reload:.0f} s"
                late_s = self.env.now - job.submit_s
                if first and job.stream.start_recorded and late_s > 1.0:    # type: ignore[union-attr]
                    text += f"; {late_s / 3600:.2f} h after its recorded start (nodes not ready then)"
                e.log("job_start", spec.name, text)
                yield self.env.timeout(launch_s)
                self.advance(job)
                if first:
                    job.wall_s_launch = launch_s
                    job.wall_s_inside += launch_s
                    if _wall_s_done(job) >= job.stream.run_s - 1e-6:    # type: ignore[union-attr]
                        self._finish(job)           # shorter than a launch: it ends starting
                        break
                job.status = "running"
                self.update_rate(job)
                self._fabric_changed()
                self._set_phase(job, Phase.TRAINING)
                self._record_swing(job)
                next_ckpt = self.env.now + self.checkpoint_interval_s(job)
                if job.stream is not None and self.stream_fast:
                    yield from self._stream_training(job, next_ckpt)
                    break
                while True:
                    now = self.env.now
                    if job.stream is not None:      # a stream job ends after its training time
                        eta = now + max(_wall_s_left(job), 0.0)
                        wake = min(next_ckpt, eta)  # neither moves with the step rate
                        yield self.env.timeout(max(wake - now, 0.0))
                    else:                           # re-read the rate at every sample
                        job.next_ckpt_s = next_ckpt
                        wake, eta = self._wake_s(job, now)
                        if self.park and self._may_park(job, now, wake, eta, queued=True):
                            # the sampler re-reads the rate (wake_parked, wake_parked_ahead)
                            yield self._park(job, not e.sampler.next_sample_s > now)
                        else:
                            yield self.env.timeout(max(wake - now, 0.0))
                    self.advance(job)
                    if _target_reached(job):
                        self._finish(job)
                        break
                    # absolute tolerance: at t ~ 1e7 s a float step is ~2e-9 s, so a relative
                    # one could leave a sliver no timeout can advance (a zero-length loop)
                    if job.stream is not None and _wall_s_done(job) >= job.stream.run_s - 1e-6:
                        self._finish(job)
                        break
                    if self.env.now >= next_ckpt:
                        if job.stream is not None and (_wall_s_left(job)
                                                       <= self.checkpoint_write_s(job, self.writers + 1)):
                            next_ckpt = math.inf    # its length ends before the write would
                            continue
                        yield from self._checkpoint(job)
                        next_ckpt = self.env.now + self.checkpoint_interval_s(job)
            except simpy.Interrupt as intr:
                job.park_event = None
                yield from self._interrupted(job, intr.cause)

    def _stream_training(self, job: JobState, next_ckpt: float):
        """A stream job's training from its (re)start to its end (then ``job.status`` is
        "done") or an interruption (raised at its wait): what :meth:`_lifecycle`'s loop does
        for a stream job, statement for statement the same arithmetic, events and order of
        wake-ups, with its per-wake-up costs cut (issues 19 and 14): the attributes, the
        checkpoint interval (fixed while the job runs on the same nodes), the token target's
        threshold and the methods are looked up once, and a checkpoint that can be written
        in closed form is written here: the test of :meth:`_checkpoint_closed_form` and the
        steps of :meth:`_checkpoint_done` in line (the write's time alone on the storage kept,
        the queue's head read as ``env.peek()`` does), the accrual and the commit by the same
        :meth:`advance` and :meth:`JobState.commit` they call. ``Jobs.stream_fast = False`` runs the
        loop of :meth:`_lifecycle`, the reference this path is tested against
        (tests/sim/test_stream_speed.py)."""
        env, advance, timeout = self.env, self.advance, self.env.timeout
        run_s = job.stream.run_s                            # type: ignore[union-attr]
        interval = self.checkpoint_interval_s(job)
        tgt = job.spec.tokens_target
        reach = tgt * _DONE_SHARE if tgt is not None and tgt != 0 else None    # _target_reached
        queue, version = env._queue, self.state.version
        shared = self.s.fabric.sharing != "none"            # _fabric_changed
        events, name = self.e.events, job.spec.name          # Engine.log
        alone_s = self.checkpoint_write_s(job, 1)
        dur_text: dict[float, str] = {}                     # write time [s] -> its text in the log
        while True:
            now = env._now
            # max() and min() written as the comparisons they make (the first argument unless
            # the second is strictly larger, smaller)
            left = run_s - job.wall_s_useful - job.wall_s_pending - job.wall_s_inside
            eta = now + (0.0 if 0.0 > left else left)
            wake = eta if eta < next_ckpt else next_ckpt    # neither moves with the step rate
            delay = wake - now
            yield timeout(0.0 if 0.0 > delay else delay)
            now = env._now
            advance(job)
            if ((reach is not None and job.tokens >= reach)
                    or job.wall_s_useful + job.wall_s_pending + job.wall_s_inside >= run_s - 1e-6):
                self._finish(job)
                return
            if now >= next_ckpt:
                writers = self.writers
                dur = alone_s if not writers else self.checkpoint_write_s(job, writers + 1)
                if run_s - job.wall_s_useful - job.wall_s_pending - job.wall_s_inside <= dur:
                    next_ckpt = math.inf            # its length ends before the write would
                    continue
                end = now + dur
                if (self.closed_form_checkpoints and end < (queue[0][0] if queue else math.inf)
                        and (job.training_ver == version("node_job_phase") or self._all_training(job))):
                    # _checkpoint_closed_form, then _checkpoint_done: the write (CHECKPOINT)
                    # accrued by advance() and committed by JobState.commit, as there
                    job.status = "checkpointing"
                    _skip_to(env, end)
                    self.checkpoints_closed_form += 1
                    advance(job)
                    job.wall_s_inside += dur
                    job.commit(end)
                    job.status = "running"
                    if shared:
                        self.rates_changed()
                    text = dur_text.get(dur)
                    if text is None:
                        text = dur_text[dur] = f"{dur:.1f} s"
                    events.append((end, "checkpoint", name, f"{job.tokens_committed:.4g} tokens, {text}"))
                else:
                    yield from self._checkpoint(job)
                next_ckpt = env._now + interval

    # ------------------------------------------------------------------ parked jobs
    def _wake_s(self, job: JobState, now: float) -> tuple[float, float]:
        """(next wake-up, end) [s] of a training fixed job woken at ``now``: its next
        checkpoint, its end at the current rate, or the next sample, whichever comes first
        (the sample after ``now`` when the sampler has not yet sampled ``now``)."""
        spec = job.spec
        eta = (now + (spec.tokens_target - job.tokens) / job.rate_tok_s
               if spec.tokens_target and job.rate_tok_s > 0 else math.inf)
        nxt = self.e.sampler.next_sample_s
        return min(job.next_ckpt_s, eta, nxt if nxt > now else now + self.e.dt_s), eta

    def _may_park(self, job: JobState, now: float, wake: float, eta: float, step_s: float | None = None,
                  queued: bool = False) -> bool:
        """Whether a job woken at ``now`` that would wait until ``wake`` may be parked
        instead, so that the sampler does its next wake-up (at ``step_s``, by default the
        sampler's next step after the one at or after ``now``) and nothing else can tell the
        difference:

        - it would wake exactly at that step of the sampler;
        - its next checkpoint and its end lie more than ``PARK_SAMPLES`` samples ahead (so a
          parked wake-up never has to checkpoint or finish, even if a grid event multiplies
          the rate in between);
        - ``queued`` (a job parking at its own wake-up): its wake-ups keep their place among
          the others at one instant. A job behind the sampler (it sampled ``now``, or
          ``now`` lies between samples) wakes right after the sample, so no other wake-up
          may be queued for that instant behind the sampler's; a job ahead of it (its
          wake-up at this sample instant came before the sample) wakes right before the
          sample, so no other wake-up may still be queued before the sampler's now. The
          sampler then does the parked wake-ups there, in the order the jobs parked."""
        sampler = self.e.sampler
        ahead = not sampler.next_sample_s > now
        if step_s is None:
            step_s = now + self.e.dt_s if ahead else sampler.next_step_s
        if wake != step_s:
            return False
        dt = self.e.dt_s
        h = now + PARK_SAMPLES * dt
        if not (job.next_ckpt_s > h and eta > h):
            return False
        tgt = job.spec.tokens_target
        if tgt and not tgt * _DONE_SHARE - job.tokens > PARK_SAMPLES * job.rate_tok_s * dt:
            return False
        if not queued:
            return True
        if ahead:
            return not self.env.queued_before(sampler.next_step, now)
        return not self.env.queued_after(sampler.next_step, wake)

    def _park(self, job: JobState, ahead: bool = False) -> _Parked:
        """Park the job behind the sampler, or ``ahead`` of it."""
        ev = job.park_event = _Parked(self.env)
        until = self._stays_until(job, self.env.now)
        if ahead:
            # the last wake-up before the sample that is not parked: it comes right before
            # the jobs parked ahead already
            self._parked_ahead.insert(0, (job, ev))
            self._ahead_until = min(self._ahead_until, until)
        else:
            self._parked.append((job, ev))
            self._parked_until = min(self._parked_until, until)
        return ev

    def _stays_until(self, job: JobState, now: float) -> float:
        """A time [s] before which the parked job's wake-up at a sample certainly ends in
        another plain wait, while its rate holds (-inf off a whole-second grid): two samples
        short of where :meth:`_may_park`'s margins end, the checkpoint's exactly, the end's
        at the current rate (its tokens add up as rate x time, to within float rounding far
        below two samples' worth)."""
        if not self._grid_exact:
            return -math.inf
        dt = self.e.dt_s
        until = job.next_ckpt_s - (PARK_SAMPLES + 2) * dt
        tgt = job.spec.tokens_target
        if tgt and job.rate_tok_s > 0:
            until = min(until, now + (tgt * _DONE_SHARE - job.tokens) / job.rate_tok_s - (PARK_SAMPLES + 2) * dt)
        return until

    def _still_parked(self, job: JobState, ev: _Parked) -> bool:
        """The job still waits on ``ev`` (not interrupted since it parked)."""
        return (job.park_event is ev and job.status == "running" and job.process is not None
                and job.process.target is ev)

    def wake_parked(self, step_s: float, dry: bool = False) -> bool:
        """The wake-up of every parked job at this sample instant, after the sample, in the
        order they parked (each one's per-sample timeout came right after the sampler's):
        the same advance, checks and arithmetic as :meth:`_lifecycle`'s. A job whose
        wake-up would not end in another plain wait until the sampler's next step (at
        ``step_s``) is unparked: its event is scheduled for its wake time now, as its
        timeout would have been, and so is every job parked after it (their timeouts came
        after its). The sampler calls this after creating its own next timeout.

        ``dry``: change nothing; return whether every parked job would stay parked."""
        if not self._parked:
            return True
        now = self.env.now
        if now < self._parked_until and self._parked_ver == self._rates_ver:
            return True         # every one stays parked (the checks below hold far from their ends)
        self.fill_flush()
        if dry:
            for job, ev in self._parked:
                if self._still_parked(job, ev):
                    wake, eta = self._wake_s(job, now)
                    if not self._may_park(job, now, wake, eta, step_s):
                        return False
            return True
        keep, woke = [], False
        for job, ev in self._parked:
            if not self._still_parked(job, ev):
                continue
            self.advance(job)       # what the wake-up does first (the sample did it already)
            if _target_reached(job) or now >= job.next_ckpt_s:
                # due now (a rate jump past the margin): wake it at once, later in this
                # instant than its timeout would have (counted; never seen in the tests)
                self.park_misses += 1
                woke = True
                job.park_event = None
                ev.wake_in(0.0)
                continue
            wake, eta = self._wake_s(job, now)
            if not woke and self._may_park(job, now, wake, eta, step_s):
                keep.append((job, ev))
                continue
            woke = True
            job.park_event = None
            ev.wake_in(max(wake - now, 0.0))
        self._parked = keep
        self._parked_until = min((self._stays_until(job, now) for job, _ in keep), default=math.inf)
        self._parked_ver = self._rates_ver
        return not woke

    def wake_parked_ahead(self) -> None:
        """The wake-up of every job parked ahead of the sampler, at this sample instant
        before the sample (where each one's timeout came, before the sampler's), in the
        order they parked: the same advance (to now, at the rate before the sample), checks
        and arithmetic as :meth:`_lifecycle`'s. When one of them would not end in another
        plain wait until the next sample, it and every job parked before it are unparked
        (their timeouts were created before its), each event scheduled for its wake time.
        The sampler calls this first thing at every sample instant, filled ones included."""
        if not self._parked_ahead:
            return
        now = self.env._now
        if now < self._ahead_until and self._ahead_ver == self._rates_ver:
            return              # every one stays parked (the checks hold far from their ends)
        self.fill_flush()
        step_s = now + self.e.dt_s
        alive = [(job, ev) for job, ev in self._parked_ahead if self._still_parked(job, ev)]
        wakes: list[float] = []
        last = -1
        for k, (job, _) in enumerate(alive):
            self.advance(job)
            if _target_reached(job) or now >= job.next_ckpt_s:
                self.park_misses += 1       # due now (see wake_parked)
                wakes.append(now)
                last = k
                continue
            wake, eta = self._wake_s(job, now)
            wakes.append(wake)
            if not self._may_park(job, now, wake, eta, step_s):
                last = k
        keep = []
        for k, (job, ev) in enumerate(alive):
            if k <= last:
                job.park_event = None
                ev.wake_in(max(wakes[k] - now, 0.0))
            else:
                keep.append((job, ev))
        self._parked_ahead = keep
        self._ahead_until = min((self._stays_until(job, now) for job, _ in keep), default=math.inf)
        self._ahead_ver = self._rates_ver

    # ------------------------------------------------------------------ quiet stretches
    def fill_sample(self, i: int, t: float) -> None:
        """Sample ``i`` at time ``t`` [s] of a quiet stretch (the sampler's fill): what
        :meth:`advance_all` and :meth:`record` would do there, kept until :meth:`fill_flush`
        does it for the stretch at once (nothing reads the jobs in between: the fill's
        failure draws read the cluster state only, and :meth:`wake_parked` flushes first)."""
        if not self._fill_ts:
            self._fill_i0 = i
        self._fill_ts.append(t)

    def fill_flush(self) -> None:
        """``advance_all()`` then ``record(i)`` at each sample kept by :meth:`fill_sample`:
        each job's sums over the stretch with ``np.cumsum``, which adds left to right, so
        the same float additions in the same order as sample by sample."""
        ts = self._fill_ts
        if not ts:
            return
        self._fill_ts = []
        rec, i0, m = self.e.recorder, self._fill_i0, len(ts)
        tokens, rate, gpus = rec["job_tokens"], rec["job_tokens_per_s"], rec["job_gpus"]
        t = np.array(ts)
        for job in self._live():
            j = job.index
            per_node = self.gpus_per_node_of(job)
            if job.nodes.size or job.status in ("running", "checkpointing", "starting"):
                # the samples' times are increasing and after the job's last update (advance()
                # adds nothing at dt <= 0; adding 0.0 to these non-negative sums changes none)
                dts = np.diff(t, prepend=job.t_last)
                dts[0] = max(dts[0], 0.0)
                held = len(job.nodes) + len(job.spares)
                job.gpu_s_allocated = float(_added(job.gpu_s_allocated, held * per_node * dts)[-1])
                spare = max(held - job.spec.nodes, 0)     # as in advance()
                if spare:
                    job.gpu_s_spare = float(_added(job.gpu_s_spare, spare * per_node * dts)[-1])
                tok = None
                idle = held - spare
                if job.status == "running":
                    tok = _added(job.tokens, job.rate_tok_s * dts)
                    job.tokens = float(tok[-1])
                    job.gpu_s_pending = float(_added(job.gpu_s_pending, len(job.nodes) * per_node * dts)[-1])
                    job.wall_s_pending = float(_added(job.wall_s_pending, dts)[-1])
                    idle -= len(job.nodes)
                elif job.status == "checkpointing":
                    job.checkpoint_s = float(_added(job.checkpoint_s, dts)[-1])
                elif job.status == "starting":
                    job.restart_s = float(_added(job.restart_s, dts)[-1])
                if idle > 0:
                    job.gpu_s_overhead = float(_added(job.gpu_s_overhead, idle * per_node * dts)[-1])
                job.t_last = ts[-1]
                tokens[i0:i0 + m, j] = job.tokens if tok is None else tok
            else:
                tokens[i0:i0 + m, j] = job.tokens
            rate[i0:i0 + m, j] = job.rate_tok_s if job.status == "running" else 0.0
            gpus[i0:i0 + m, j] = len(job.nodes) * per_node

    def _record_swing(self, job: JobState) -> None:
        """Synchronous swing of a job: all its nodes change phase together, so the facility
        load steps by nodes x (P_train - P_phase) at every exposed all-reduce
        (COMMUNICATION) and every checkpoint (CHECKPOINT). Keeps the inputs of one typical
        node (its inlet and clock, the node model's figures, the PSU capacity) as they are
        now; :attr:`peak_swing_w` evaluates them, all at once.

        The means are ``np.add.reduce(x) / len(x)``, what ``x.mean()`` computes for a
        float64 array (the same pairwise sum, then one division) without its ~3 us of
        wrapping; at full clock the clock's mean is 1 (a sum of n ones is exactly n). The
        keywords are the same objects start after start: when the power chain hands out
        the very objects it handed out last time, the dict kept then is kept again
        (:func:`_swing_phase_w` then groups the starts by that dict; issue 19)."""
        nodes, st, pc = job.nodes, self.state, self.e.power
        # plain views of the tracked arrays (reads only: the same values, no tracking cost)
        shift = self._rack_shift
        x = st.rack_inlet_c.view(np.ndarray)[nodes >> shift if shift is not None else self.plant.node_rack[nodes]]
        inlet = _mean(x)    # one typical node
        brake = st.brake_clock
        if not _one_number(brake):      # (N,): mixed models
            clock = (st.node_clock.view(np.ndarray)[nodes] * np.asarray(brake)[nodes]).mean()
        elif len(nodes) and self._full_clock():
            clock = _ONE * brake
        else:
            x = st.node_clock.view(np.ndarray)[nodes]
            clock = _mean(x) * brake
        raw, cap = pc.node_kwargs(), pc.gpu_cap_w
        last = self._swing_kw_last
        if (last is not None and last[0] is cap and len(raw) == len(last[1])
                and all(map(operator.is_, raw.values(), last[1])) and all(map(operator.eq, raw, last[2]))):
            kw = last[3]        # the same objects as last time, all of them plain numbers
        else:
            one = nodes[0] if len(nodes) else 0      # the job's nodes share one model
            kw = {k: (v if _one_number(v) else np.asarray(v)[one]) for k, v in raw.items()}
            plain = _one_number(cap) and all(v is raw[k] for k, v in kw.items())
            self._swing_kw_last = (cap, tuple(raw.values()), tuple(raw), kw) if plain else None
            cap = cap if _one_number(cap) else np.asarray(cap)[one]
        self._swings.append((len(nodes), inlet, clock, cap, kw))

    @property
    def peak_swing_w(self) -> dict[str, float]:
        """Largest swing of any job start [W] by kind (communication, checkpoint): nodes x
        (P_train - P_phase) of one typical node, the three phases' power from
        :func:`twin.power.node_power_w`. The starts that share the node figures are evaluated
        in one call, shaped (starts, 3 phases) against (starts, 1) inlets and clocks: element
        by element what one call per start, (3,) phases against a (1,) inlet and clock,
        gives (the same broadcast, the same branch of the law), folded in start order."""
        todo, self._swings = self._swings, []
        if todo:
            sw = self._peak_swing_w
            for (n, *_), (tw, cw, kw_w) in zip(todo, _swing_phase_w(todo).tolist(), strict=True):
                train_w, comm_w, ckpt_w = n * tw, n * cw, n * kw_w
                sw["communication"] = max(sw["communication"], train_w - comm_w)
                sw["checkpoint"] = max(sw["checkpoint"], train_w - ckpt_w)
        return self._peak_swing_w

    def _checkpoint(self, job: JobState):
        """Write a checkpoint: the job's nodes in the CHECKPOINT phase for the write time
        (storage bandwidth shared by the jobs writing at its start), then commit.

        Closed form when nothing else happens before the write ends: if the end time is
        before the next event in simpy's queue, no process, sampler or failure can see the
        job between the start and the end, so the clock moves to the end at once
        (:func:`_skip_to`; the same instant simpy would resume at, ``now + dur``) instead of
        a timeout and a wake-up, and the CHECKPOINT phase, which nobody could read, is never
        written (the nodes' phase is TRAINING before and after). Every other number, the
        event table and the order of events are what the event-driven write gives: the
        progress is advanced at the same instants, so the same sums in the same order."""
        if self._checkpoint_closed_form(job):
            return
        env = self.env
        job.status = "checkpointing"
        self.writers += 1
        try:
            dur = self.checkpoint_write_s(job, self.writers)
            self._set_phase(job, Phase.CHECKPOINT)
            yield env.timeout(dur)
        finally:
            self.writers -= 1
        self._checkpoint_done(job, dur)
        self._set_phase(job, Phase.TRAINING)

    def _checkpoint_closed_form(self, job: JobState) -> bool:
        """Write the job's checkpoint at once when its end comes before the next event in
        simpy's queue and every node of the job trains (:meth:`_checkpoint`); False, with
        nothing changed, when the write must run through events."""
        env = self.env
        dur = self.checkpoint_write_s(job, self.writers + 1)
        end = env.now + dur
        if not (self.closed_form_checkpoints and end < env.peek() and self._all_training(job)):
            return False
        job.status = "checkpointing"        # what advance() reads for the write's duration
        _skip_to(env, end)
        self.checkpoints_closed_form += 1
        self._checkpoint_done(job, dur)
        return True

    def _checkpoint_done(self, job: JobState, dur: float) -> None:
        """The end of a checkpoint write of ``dur`` [s]: progress to now, committed, running again
        (a wall-time job's write is inside its length: :meth:`_lifecycle`)."""
        self.advance(job)
        if job.stream is not None:
            job.wall_s_inside += dur
        job.commit(self.env.now)
        job.status = "running"
        self._fabric_changed()
        self.e.log("checkpoint", job.spec.name, f"{job.tokens_committed:.4g} tokens, {dur:.1f} s")

    def _all_training(self, job: JobState) -> bool:
        """Every node of the job is in the TRAINING phase (what a checkpoint returns it to).
        Read from the array itself when the phases were written since the job last found
        them so (the field's write count moved); otherwise that answer still holds."""
        st = self.state
        ver = st.version("node_job_phase")
        if job.training_ver == ver:
            return True
        phases = st.node_job_phase.view(np.ndarray)[job.nodes]
        if phases.itemsize == 1:    # the state's int8 phases: one byte each, compared as bytes
            ok = phases.tobytes() == _TRAINING_BYTE * len(phases)
        else:
            ok = bool((phases == Phase.TRAINING).all())
        job.training_ver = ver if ok else -1
        return ok

    def _finish(self, job: JobState) -> None:
        job.commit()
        job.status = "done"
        job.end_s = self.env.now
        if job.stream is not None:
            self._set_active(job, False)
            job.end_sample = int(math.ceil(self.env.now / self.e.dt_s - 1e-9))
            self.e.log("job_done", job.spec.name, f"{job.stream.final_state}, {job.tokens:.4g} tokens")
        else:
            self.e.log("job_done", job.spec.name, f"{job.tokens:.4g} tokens")
        self.release(job)
        self._fabric_changed()

    def release(self, job: JobState) -> None:
        """Give every node of the job back and look for work for them."""
        held = np.concatenate([job.nodes, job.spares]) if len(job.spares) else job.nodes
        # read through a plain view (the same values, no tracking cost); the write is tracked
        # (and the state keeps its own copy of the indices)
        own = self.state.node_job.view(np.ndarray)[held] == job.index
        if not own.all():
            held = held[own]
        self.state.node_job[held] = -1
        job.nodes = np.empty(0, int)
        job.spares = np.empty(0, int)
        job.rate_tok_s = 0.0
        self.e.scheduler.released(job)
        self.e.scheduler.schedule()

    def release_nodes(self, nodes: np.ndarray) -> None:
        if len(nodes):
            self.state.node_job[nodes] = -1
            self.e.scheduler.schedule()

    def _interrupted(self, job: JobState, cause):
        text, detect_s = cause if isinstance(cause, tuple) else (str(cause), 0.0)
        e, st = self.e, self.state
        self.advance(job)
        lost = job.lose()
        job.interruptions += 1
        e.log("job_interrupted", job.spec.name, f"{text}; lost {lost:.4g} tokens")
        job.status = "waiting"
        self._fabric_changed()
        spare = job.spec.hot_spares > 0
        if spare:
            # keep the healthy nodes (active and hot spares), give back the ones that are down
            held = np.concatenate([job.nodes, job.spares])
            keep = held[st.node_up[held]]
            self.release_nodes(held[~np.isin(held, keep)])
            job.nodes, job.spares = keep[:0], keep
            st.node_job_phase[keep] = Phase.IDLE
        else:
            self.release(job)
        # the failed part must be found and fenced before the relaunch (health checks,
        # watchdog timeout, numerics checks for silent corruption)
        if detect_s > 0:
            yield self.env.timeout(detect_s)
        self.advance(job)
        if spare:
            held = job.spares[st.node_up[job.spares]]
            self.release_nodes(job.spares[~np.isin(job.spares, held)])
            if len(held) >= job.spec.nodes:
                job.nodes, job.spares = held[:job.spec.nodes], held[job.spec.nodes:]
                job.status = "starting"
                e.log("job_spare_swap", job.spec.name,
                      f"after {detect_s:.0f} s detection; {len(job.spares)} hot spares left")
                return
            job.spares = np.empty(0, int)
            self.release_nodes(held)
        e.log("job_requeued", job.spec.name, f"after {detect_s:.0f} s (detection or maintenance window)")
        e.scheduler.enqueue(job)

    def interrupt_nodes(self, nodes: np.ndarray, cause: str, detect_s: float = 0.0) -> None:
        """Interrupt every job running on any of ``nodes``; a job whose hot spare is hit
        just loses that spare. The job relaunches after ``detect_s`` [s]."""
        owner = self.state.node_job.view(np.ndarray)[nodes]     # plain view: reads only
        for j in (owner if len(owner) == 1 else np.unique(owner)):
            if j < 0:
                continue
            job = self.all[j]
            if job.status == "waiting" or job.process is None or not job.process.is_alive:
                continue
            # the nodes a job holds are its active nodes and its hot spares (node_job = j on
            # both): the job is hit unless every node of it among ``nodes`` is a spare
            if len(job.spares) and np.isin(nodes[owner == j], job.spares).all():
                spare_hit = np.isin(job.spares, nodes)
                hit = job.spares[spare_hit]
                job.spares = job.spares[~spare_hit]
                self.release_nodes(hit)
                continue
            self.advance(job)
            job.process.interrupt((cause, detect_s))
            job.status = "waiting"

    # ------------------------------------------------------------------ outputs
    def record(self, i: int, rec) -> None:
        """Tokens, token rate and GPUs of every fixed job and every stream job started and
        not done (a finished stream job's tokens are filled forward in :meth:`finish`)."""
        # row i of each series as a 1-d view: one scalar store per value (a (i, j) store
        # costs about twice as much); the jobs are those of _live(), fixed then active
        tokens, rate, gpus = rec["job_tokens"][i], rec["job_tokens_per_s"][i], rec["job_gpus"][i]
        gpn = self._gpn
        for job in self._live():
            j = job.index
            tokens[j] = job.tokens
            rate[j] = job.rate_tok_s if job.status == "running" else 0.0
            gpus[j] = len(job.nodes) * (gpn if gpn is not None else self.gpus_per_node_of(job))

    def job_records(self) -> list:
        """Per-job totals for :class:`twin.outputs.RunRecord` (one per job, in job order)."""
        from twin.outputs import JobRecord
        gpn = self.plant.gpus_per_node
        out = []
        extra: dict[str, Any]
        for j in self.all:
            gpn = self.gpus_per_node_of(j)
            ej = j.stream
            if ej is not None:
                state = ej.final_state if j.status == "done" else (
                    "pending" if math.isnan(j.first_start_s) else "running")
                # a trace replayed at its recorded starts keeps the trace's submit time: its
                # queue wait is the trace's own, plus any delay of the twin's (nodes not ready)
                sub = ej.trace_submit_s if ej.start_recorded else j.submit_s
                extra = dict(job_class=ej.job_class, submit_s=sub, state=state,
                             gpus=j.spec.nodes * gpn, queue=ej.queue, user=ej.user)
            else:
                sub = seconds_since(self.s.simulation.start, j.spec.submit) if j.spec.submit else 0.0
                state = "completed" if j.status == "done" else (
                    "pending" if math.isnan(j.first_start_s) else "running")
                extra = dict(job_class="fixed", submit_s=sub, state=state,
                             gpus=(j.spec.nodes + j.spec.hot_spares) * gpn, queue="", user="")
            out.append(JobRecord(name=j.spec.name, tokens=j.tokens, gpu_s_allocated=j.gpu_s_allocated,
                                 gpu_s_useful_total=j.gpu_s_useful_total, gpu_s_lost=j.gpu_s_lost,
                                 gpu_s_spare=j.gpu_s_spare, gpu_s_overhead=j.gpu_s_overhead,
                                 wall_s_useful_total=j.wall_s_useful + j.wall_s_pending,
                                 checkpoint_s=j.checkpoint_s, first_start_s=j.first_start_s, end_s=j.end_s,
                                 interruptions=j.interruptions, **extra))
        return out

    def finish(self, rec) -> None:
        """Fill each finished stream job's tokens forward from its end (record() writes only
        running jobs), and write the per-job records (class, state, submit, start, end)."""
        _fill_forward(rec["job_tokens"], [(job.end_sample, job.index, job.tokens)
                                          for job in self.all[self.n_fixed:] if job.end_sample >= 0])
        recs = self.job_records()
        rec.set("job_class", [r.job_class for r in recs])
        rec.set("job_state", [r.state for r in recs])
        rec.set("job_submit_s", [r.submit_s for r in recs])
        rec.set("job_start_s", [r.first_start_s for r in recs])
        rec.set("job_end_s", [r.end_s for r in recs])
        rec.set("job_gpus_requested", [r.gpus for r in recs])


def _fill_forward(series: np.ndarray, ends: list[tuple[int, int, float]]) -> None:
    """``series[first:, column] = value`` for each ``(first, column, value)`` of ``ends``
    (distinct columns), written a block of rows at a time: the rows from one ``first`` to
    the next hold the values of every column whose ``first`` is at or before them, so each
    block is one store into whole rows (row by row in memory) where a column at a time
    strides across every row (a page per element)."""
    if not ends:
        return
    first, cols, vals = (np.array(x) for x in zip(*sorted(ends, key=operator.itemgetter(0)), strict=True))
    bounds = np.append(np.minimum(first, len(series)), len(series))
    for k in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        series[bounds[k]:bounds[k + 1], cols[:k + 1]] = vals[:k + 1]


def _fill_forward_reference(series: np.ndarray, ends: list[tuple[int, int, float]]) -> None:
    """:func:`_fill_forward` a column at a time, the reference it is tested against."""
    for first, col, value in ends:
        series[first:, col] = value


def _swing_phase_w(todo: list[tuple]) -> np.ndarray:
    """AC power [W (starts, 3)] of one typical node of each job start in TRAINING,
    COMMUNICATION and CHECKPOINT, from the starts' ``(nodes, inlet [C], clock [-], GPU cap
    [W], node_power_w keywords)``: one :func:`twin.power.node_power_w` call per group of
    starts with the same cap and keywords, phases (k, 3) against inlets and clocks (k, 1).

    A start whose cap and keyword dict are the very objects of the start before it joins
    that start's group without its key being made again (~15 us a start; issue 19): the key
    of the same objects is the same, unless it holds a NaN (a new one each time it is made,
    equal to none), which :func:`_reusable_key` tells by making the key twice."""
    groups: dict[tuple, list[int]] = {}
    prev_cap = prev_kw = None
    members: list[int] = []
    for k, (_, _, _, cap, kw) in enumerate(todo):
        if kw is prev_kw and cap is prev_cap:
            members.append(k)
            continue
        key = _swing_key(cap, kw)
        members = groups.setdefault(key, [])
        members.append(k)
        prev_cap, prev_kw = (cap, kw) if _reusable_key(key, cap, kw) else (None, None)
    w = np.empty((len(todo), 3))
    for ks in groups.values():
        _, _, _, cap, kw = todo[ks[0]]
        col = np.array([[todo[k][1], todo[k][2]] for k in ks])
        w[ks] = power.node_power_w(np.tile(_SWING_PHASES, (len(ks), 1)), cap, col[:, :1],
                                   clock_fraction=col[:, 1:], **kw)
    return w


def _swing_key(cap, kw: dict) -> tuple:
    """The grouping key of a job start's swing figures (:func:`_swing_phase_w`)."""
    return tuple(_same_value_key(v) for v in (cap, *kw.items()))


def _reusable_key(key: tuple, cap, kw: dict) -> bool:
    """Whether the grouping key ``key`` made from ``cap`` and ``kw`` is the key they give
    every time (no NaN in it: each making of a NaN's key gives a new NaN)."""
    return key == _swing_key(cap, kw)


def _mean(x: np.ndarray):
    """``x.mean()``: for a non-empty float64 array ``np.add.reduce(x) / len(x)``, what it
    computes (the same pairwise sum, one division) without its ~3 us of wrapping."""
    return np.add.reduce(x) / len(x) if x.dtype == np.float64 and len(x) else x.mean()


def _run_shift(table: np.ndarray) -> int | None:
    """``k`` when ``table[i] == i >> k`` for every node ``i`` (units of ``2**k`` nodes, in
    node order: a node's unit is a shift of its index), else None."""
    n = len(table)
    if not n or table.dtype.kind not in "iu":
        return None
    first = int(np.count_nonzero(table == 0))
    k = first.bit_length() - 1
    if not first or first != 1 << k or not np.array_equal(table, np.arange(n) >> k):
        return None
    return k


def _one_number(v) -> bool:
    """``np.ndim(v) == 0``, answered without ``np.ndim`` (~2 us a call) for a Python or numpy
    scalar or a 0-d array (:func:`twin.power.node._scalar`)."""
    return _scalar(v) or np.ndim(v) == 0


def _same_value_key(v) -> tuple:
    """A hashable key equal for two scalars (or ``(name, scalar)`` pairs) only when they are
    the same value of the same type and dtype (0-d arrays included)."""
    if isinstance(v, tuple):
        return (v[0], *_same_value_key(v[1]))
    kind = type(v)
    dtype = _PY_SCALAR_DTYPE.get(kind)
    # a plain Python float (not NaN: a.item() gives a new NaN, equal to none), int (in the
    # default integer's range) or bool: what the general form gives, without the array
    # (~17 -> ~3 us per job start, issue 19)
    if dtype is not None and v == v and (kind is not int or _INT_MIN <= v <= _INT_MAX):
        return kind.__name__, dtype, v
    a = np.asarray(v)
    return kind.__name__, a.dtype.str, a.item()


#: the dtype numpy gives a plain Python float, int and bool (:func:`_same_value_key`)
_PY_SCALAR_DTYPE = {t: np.asarray(t(0)).dtype.str for t in (float, int, bool)}
_INT_MIN, _INT_MAX = (int(x) for x in (np.iinfo(np.asarray(0).dtype).min, np.iinfo(np.asarray(0).dtype).max))


#: a job has reached its token target at this share of it (float rounding of the sums)
_DONE_SHARE = 1 - 1e-12


def _wall_s_done(job: JobState) -> float:
    """Wall time [s] of a stream or trace job's length used so far: training whose work
    survived or is pending, its first launch and its committed checkpoint writes
    (:meth:`Jobs._lifecycle`)."""
    return job.wall_s_useful + job.wall_s_pending + job.wall_s_inside


def _wall_s_left(job: JobState) -> float:
    """Wall time [s] left of a stream or trace job's length (:func:`_wall_s_done`), subtracted
    term by term as :meth:`Jobs._stream_training` does (the same float sums)."""
    return job.stream.run_s - job.wall_s_useful - job.wall_s_pending - job.wall_s_inside  # type: ignore[union-attr]


def _target_reached(job: JobState) -> bool:
    """The job has a token target and its tokens reached it (to within :data:`_DONE_SHARE`)."""
    tgt = job.spec.tokens_target
    return tgt is not None and tgt != 0 and job.tokens >= tgt * _DONE_SHARE


def _added(x0: float, increments: np.ndarray) -> np.ndarray:
    """``x0`` plus each increment in turn, every partial sum [same units]: ``x += inc`` in a
    loop, the same float additions in the same order (``np.cumsum`` adds left to right)."""
    return np.cumsum(np.concatenate(([x0], increments)))[1:]


#: a training fixed job is parked while its next checkpoint and end lie more than this many
#: samples ahead (:meth:`Jobs._may_park`)
PARK_SAMPLES = 4


class _Parked(simpy.Event):
    """What a parked job waits on. :meth:`wake_in` schedules it as a ``Timeout`` created at
    that moment would be (``now + delay``, normal priority, the next event id), so the job
    resumes exactly where its own timeout would have resumed it."""

    def wake_in(self, delay: float) -> None:
        self._ok = True
        self._value = None
        self.env.schedule(self, NORMAL, delay)


#: a node's TRAINING phase as the one byte of an int8 phase array (:meth:`Jobs._all_training`:
#: comparing bytes is ~0.3 us where ``== Phase.TRAINING``, an IntEnum numpy must convert, was ~4.5 us)
_TRAINING_BYTE = np.array([int(Phase.TRAINING)], np.int8).tobytes()

#: a clock fraction of one as a numpy float, as the mean of clocks that are all ones gives it
_ONE = np.float64(1.0)

#: the phases of a synchronous job's swing (:meth:`Jobs._record_swing`)
_SWING_PHASES = np.array([int(Phase.TRAINING), int(Phase.COMMUNICATION), int(Phase.CHECKPOINT)])


def _skip_to(env: simpy.Environment, t: float) -> None:
    """Move the clock to ``t`` [s] with no event in between (the next queued event lies
    after ``t``, checked by the caller), as simpy would on a timeout that ends at ``t``."""
    env._now = t        # simpy keeps the clock in Environment._now (simpy 4)
