"""The scheduler: an LSF-like queue that places jobs on healthy, powered, burned-in nodes."""

from __future__ import annotations

import functools

import numpy as np

from twin.phases import Phase
from twin.scenario.schema import Job
from twin.sim.component import Component
from twin.sim.jobs import JobState
from twin.workload.config import scheduler_config_for
from twin.workload.scheduler import ClusterShape
from twin.workload.scheduler import JobRequest as LsfRequest
from twin.workload.scheduler import Preempt as LsfPreempt
from twin.workload.scheduler import Scheduler as LsfScheduler


def place_nodes_reference(free: np.ndarray, node_su: np.ndarray, su_degraded: np.ndarray,
                          want: int) -> np.ndarray | None:
    """The placement rule, node by node: ``want`` free nodes packed into as few scalable
    units as possible, fullest healthy units first, units with a failed rail last, ties by
    unit index, nodes in index order within a unit; None if the units before the first
    one without a free node do not hold ``want``.

    ``free`` [bool (N,)], ``node_su`` [int (N,)] the unit of each node, ``su_degraded``
    [int (U,)] failed rails per unit. The specification :func:`place_nodes_grouped` must
    match (``tests/sim/test_speed_paths.py``)."""
    free_idx = np.flatnonzero(free)
    by_su = free_idx[np.argsort(node_su[free_idx], kind="stable")]
    counts = np.bincount(node_su[free_idx], minlength=len(su_degraded))
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    order = np.lexsort((np.arange(len(counts)), -counts, su_degraded > 0))
    chosen = []
    need = want
    for u in order:
        if need == 0 or counts[u] == 0:
            break
        cand = by_su[first[u]:first[u] + min(need, counts[u])]
        chosen.append(cand)
        need -= len(cand)
    return np.concatenate(chosen) if need == 0 else None


#: 0x0101010101010101: multiplying a 64-bit word by it sums its eight bytes into the top byte
_BYTE_SUM = np.uint64(0x0101010101010101)


#: popcount of each element (numpy >= 2.0; None before: the byte-sum path)
_bitwise_count = getattr(np, "bitwise_count", None)


def free_nodes_per_su(free: np.ndarray, su_nodes: int, n_sus: int) -> np.ndarray:
    """Free nodes of each scalable unit when unit ``u`` holds nodes ``u*su_nodes`` up to
    ``(u+1)*su_nodes`` [int (n_sus,)]: one segmented sum, no index arrays.

    When the units are whole and ``su_nodes`` a multiple of 8, the mask is packed eight
    nodes a byte (``np.packbits``), so that a unit is ``su_nodes / 8`` whole bytes: with
    numpy's popcount, its count is the popcount of one 8/16/32/64-bit word (the bytes read as
    one unsigned word: bit order does not matter to a count), or the sum over its bytes'
    popcounts. Without it, and ``su_nodes`` below 256, the mask's bytes (each 0 or 1) are
    read as 64-bit words: the words of a unit are added (each byte lane then holds at most
    ``su_nodes / 8``, no carry), and the product with ``0x0101010101010101`` carries the sum
    of the eight lanes into the top byte (the count, at most ``su_nodes`` < 256). Equal to
    the segmented sum; the packed count is about twice as fast as the byte sum at 131,072
    nodes in units of 32 (issue 19)."""
    n = len(free)
    whole = n and su_nodes % 8 == 0 and n == n_sus * su_nodes and free.dtype == np.bool_
    if whole and _bitwise_count is not None:
        per = su_nodes // 8
        packed = np.packbits(free)
        if per in (1, 2, 4, 8):
            return _bitwise_count(packed.view(f"u{per}")).astype(np.intp)
        return _bitwise_count(packed).reshape(n_sus, per).sum(axis=1, dtype=np.intp)
    out = np.zeros(n_sus, np.intp)
    if whole and su_nodes < 256:
        words = np.ascontiguousarray(free).view(np.uint64)
        per = su_nodes // 8
        lanes = words[0::per].copy()
        for k in range(1, per):
            lanes += words[k::per]
        lanes *= _BYTE_SUM
        lanes >>= np.uint64(56)
        out[:] = lanes
    elif n:
        c = np.add.reduceat(free, np.arange(0, n, su_nodes), dtype=np.intp)
        out[:len(c)] = c
    return out


class FreeCounter:
    """Free nodes per contiguous unit of ``su_nodes`` nodes, kept across calls: the count of
    a read-only mask (the state's cached ``node_schedulable``, replaced whenever a node
    changes) is remembered with the mask, so the same mask is counted once. A new mask is
    counted afresh (:func:`free_nodes_per_su`) when the word-wise count applies; otherwise as
    the last count corrected at the nodes that differ from the last mask (one comparison, no
    per-unit sum). A writeable mask (a per-model mask built for one placement) is counted
    afresh and not remembered."""

    def __init__(self, su_nodes: int, n_sus: int) -> None:
        self.su_nodes, self.n_sus = su_nodes, n_sus
        self._mask: np.ndarray | None = None       # the last read-only mask counted (a copy)
        self._last: np.ndarray | None = None       # ... that mask itself (identity check)
        self._counts = np.zeros(n_sus, np.intp)
        self._words = su_nodes % 8 == 0 and (su_nodes < 256 or _bitwise_count is not None)   # its fast path

    def __call__(self, free: np.ndarray) -> np.ndarray:
        """Free nodes per unit of ``free`` [int (n_sus,)]; do not modify the result."""
        if free.flags.writeable:
            return free_nodes_per_su(free, self.su_nodes, self.n_sus)
        if free is self._last:
            return self._counts
        if self._words and len(free) == self.n_sus * self.su_nodes:
            self._counts = free_nodes_per_su(free, self.su_nodes, self.n_sus)
        elif self._mask is None or len(self._mask) != len(free):
            self._mask = np.array(free)
            self._counts = free_nodes_per_su(free, self.su_nodes, self.n_sus)
        else:
            d = np.flatnonzero(free != self._mask)
            if d.size:
                counts = self._counts.copy()
                np.add.at(counts, d // self.su_nodes, np.where(free[d], 1, -1))
                self._counts = counts
                self._mask[d] = free[d]
        self._last = free
        return self._counts


@functools.cache
def _free_per_level(su_nodes: int) -> np.ndarray:
    """Free nodes of a unit at each rank key of :func:`place_nodes_grouped` [int (2 su_nodes + 2,)]."""
    levels = np.arange(2 * su_nodes + 2)
    out = np.where(levels <= su_nodes, su_nodes - levels, 2 * su_nodes + 1 - levels)
    out.flags.writeable = False
    return out


@functools.cache
def _unit_nodes(su_nodes: int) -> np.ndarray:
    """``np.arange(su_nodes)``, read-only: the node offsets within a unit."""
    out = np.arange(su_nodes)
    out.flags.writeable = False
    return out


#: the last read-only failed-rails array :func:`_healthy_units` saw, and its answer
_healthy_memo: list = [None, None]


def _healthy_units(su_degraded: np.ndarray) -> np.ndarray | None:
    """Units without a failed rail [bool (U,)], or None when every unit is healthy. Kept for
    the last array seen when it is read-only and owns its data (the scheduler's copy,
    replaced at each write of ``su_degraded``): each placement asks, the rails rarely change
    (speed only, issue 19)."""
    fixed = not su_degraded.flags.writeable and su_degraded.base is None
    if fixed and _healthy_memo[0] is su_degraded:
        return _healthy_memo[1]
    healthy = su_degraded == 0 if su_degraded.any() else None
    if healthy is not None:
        healthy.flags.writeable = False
    if fixed:
        _healthy_memo[:] = [su_degraded, healthy]
    return healthy


#: :func:`place_nodes_grouped` takes whole free healthy units without ranking the other units
#: when they hold the job (False: the reference, every placement through the histogram)
whole_units_first = True


def place_nodes_grouped(free: np.ndarray, su_nodes: int, su_degraded: np.ndarray, want: int,
                        counts: np.ndarray | None = None) -> np.ndarray | None:
    """:func:`place_nodes_reference` for contiguous units of ``su_nodes`` nodes, by whole
    units, without sorting the units: the free count per unit (:func:`free_nodes_per_su`, or
    ``counts`` given) gives each unit its rank ``key`` (healthy units first, then most free
    nodes; ties by index). Every unit of one key holds the same number of free nodes, so a
    histogram of the keys says how many whole levels of keys the job takes and how many units
    of the next; only those units are picked (in the rule's order) and their free nodes read
    as rows of the (units x su_nodes) mask. The rule's stop at the first unit without a free
    node is the first non-empty level whose units hold none."""
    n_sus = len(su_degraded)
    if counts is None:
        counts = free_nodes_per_su(free, su_nodes, n_sus)
    if whole_units_first:
        # the rule's first level, healthy units with every node free, holds the job: it takes
        # the first of them by index, whole, and no other level or the mask is read (at a
        # million GPUs nearly every placement: a 2,048-node job restarted after a failure)
        full = counts == su_nodes
        healthy = _healthy_units(su_degraded)
        if healthy is not None:
            full &= healthy
        take = -(-want // su_nodes)
        sel = np.flatnonzero(full)[:take]
        if len(sel) == take:
            return (sel[:, None] * su_nodes + _unit_nodes(su_nodes)).ravel()[:want]
    # key 0..su_nodes: a healthy unit with su_nodes - key free nodes; su_nodes + 1 ..
    # 2 su_nodes + 1: a unit with a failed rail and 2 su_nodes + 1 - key free nodes
    key = su_nodes - counts
    degraded = su_degraded > 0
    if degraded.any():
        key[degraded] += su_nodes + 1
    per_unit = _free_per_level(su_nodes)
    hist = np.bincount(key, minlength=len(per_unit))
    stop = np.flatnonzero((hist > 0) & (per_unit == 0))
    usable = int(stop[0]) if stop.size else len(per_unit)   # levels before the first empty unit
    cum = np.cumsum(hist[:usable] * per_unit[:usable])
    if not usable or cum[-1] < want:
        return None
    last = int(np.searchsorted(cum, want))                   # the level the job ends in
    before = int(cum[last - 1]) if last else 0
    take = -(-(want - before) // int(per_unit[last]))       # units of that level it needs
    n_whole = int(hist[:last].sum())                         # units of the levels before
    if n_whole == 0:
        sel = np.flatnonzero(key == last)[:take]
        if last == 0:                                        # whole free units: no mask to read
            return (sel[:, None] * su_nodes + np.arange(su_nodes)).ravel()[:want]
    else:
        sub = np.flatnonzero(key <= last)
        sel = sub[np.argsort(key[sub], kind="stable")][:n_whole + take]
    n = len(free)
    grid: np.ndarray
    if n == n_sus * su_nodes:
        grid = free.reshape(n_sus, su_nodes)
    else:
        grid = np.zeros(n_sus * su_nodes, bool)
        grid[:n] = free
        grid = grid.reshape(n_sus, su_nodes)
    row, col = np.nonzero(grid[sel])
    return (sel[row] * su_nodes + col)[:want]


def _frozen_copy(nodes: np.ndarray | tuple[int, ...]) -> np.ndarray:
    """``nodes`` as a read-only array of its own (intp): a job's nodes are never written in
    place, and the state logs writes at a read-only index array without copying it (each
    phase change of the job writes its nodes; speed only, issue 19)."""
    out = np.array(nodes, np.intp)
    out.flags.writeable = False
    return out


class Scheduler(Component):
    """Highest priority first; each job packed into as few scalable units as possible,
    fullest healthy units first, units with a failed rail last. Elastic jobs shrink to the
    largest size their parallelism and batch allow."""

    name = "scheduler"
    reads = ("node_schedulable", "su_degraded", "node_up", "rack_ready")
    writes = ("node_job", "node_job_phase")
    outputs = ("jobs_queued",)

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.queue: list[JobState] = []
        self.lsf: LsfScheduler | None = None
        #: node model (index into plant.models) each fixed job was first placed on; it stays there
        self.job_model: dict[int, int] = {}
        # units are contiguous blocks of su_nodes nodes (the plant numbers them so): placement
        # then works on free counts per unit (place_nodes_grouped); else node by node
        p, su_nodes = self.plant, self.s.fabric.su_nodes
        self._su_nodes = su_nodes if np.array_equal(p.node_su, np.arange(p.n_nodes) // su_nodes) \
            and len(self.state.su_degraded) == -(-p.n_nodes // su_nodes) else None
        self._free_counts = FreeCounter(su_nodes, len(self.state.su_degraded)) if self._su_nodes else None
        # failed rails per unit as a plain array, copied once per write of su_degraded: each
        # placement reads it, and a test on the state's tracked array costs its subclass hooks
        self._deg: np.ndarray = np.array(self.state.su_degraded)
        self._deg.flags.writeable = False
        self._deg_ver = self.state.version("su_degraded")
        w = self.s.workload
        if w.stream is not None or w.trace is not None:
            # streams and traces: the LSF-like policy of twin.workload (queues, FIFO or fair
            # share, EASY backfill, preemption) on whole nodes (one "GPU" of its cluster = a node)
            p = self.plant
            self.lsf = LsfScheduler(ClusterShape(nodes=p.n_nodes, gpus_per_node=1, su_nodes=self.s.fabric.su_nodes),
                                    scheduler_config_for(w.scheduler))
            self._lsf_ok = np.ones(p.n_nodes, bool)
            self._lsf_deg = np.zeros(len(self.state.su_degraded), bool)
            self._lsf_deg_ver = -1

    def enqueue(self, job: JobState) -> None:
        job.status = "queued"
        job.placed = self.env.event()
        if self.lsf is not None:
            lj = self.lsf.jobs.get(job.index)
            if lj is None:              # (a preempted job is already back in the LSF queue)
                ej = job.stream
                spec = job.spec
                queue = ej.queue if ej is not None else self.lsf.queues[0].name
                self.lsf.submit(LsfRequest(
                    id=job.index, gpus=spec.nodes + spec.hot_spares, queue=queue,
                    submit_s=job.submit_s if ej is not None else self.env.now,
                    runlimit_s=max(ej.runlimit_s - job.wall_s_useful - job.wall_s_inside, 1.0) if ej is not None else 1e12,
                    user=ej.user if ej is not None else spec.name,
                    project=ej.project if ej is not None else spec.name,
                    checkpoint_interval_s=float(spec.checkpoint_interval_s)
                    if spec.checkpoint_interval_s != "auto" else 3600.0), self.env.now)
        else:
            self.queue.append(job)
        self.schedule()

    def released(self, job: JobState) -> None:
        """The job gave its nodes back (done or interrupted): the LSF view frees them."""
        if self.lsf is not None:
            lj = self.lsf.jobs.get(job.index)
            if lj is not None and lj.state == "running":
                self.lsf.finish(job.index, self.env.now)

    def _lsf_schedule(self) -> None:
        st, lsf = self.state, self.lsf
        assert lsf is not None, "_lsf_schedule runs only with a stream or trace"
        # mirror node health (up and burned in) and failed rails into the LSF view; the state
        # hands out the same cached mask while no node changed, and su_degraded has a version
        ok = st.node_in_service
        if ok is not self._lsf_ok:
            for n in np.flatnonzero(ok != self._lsf_ok):
                lsf.set_node_health(int(n), bool(ok[n]), self.env.now)
            self._lsf_ok = ok
        ver = st.version("su_degraded")
        if ver != self._lsf_deg_ver:
            deg = st.su_degraded > 0
            for u in np.flatnonzero(deg != self._lsf_deg):
                lsf.set_unit_degraded(int(u), bool(deg[u]))
            self._lsf_deg, self._lsf_deg_ver = deg, ver
        jobs = self.e.jobs
        for d in lsf.decide(self.env.now):
            job = jobs[d.job]
            if isinstance(d, LsfPreempt):
                if job.process is not None and job.process.is_alive and job.status != "waiting":
                    jobs.advance(job)
                    job.process.interrupt(("preempted", 0.0))
                    job.status = "waiting"
                continue
            nodes = _frozen_copy(d.nodes)
            jobs.advance(job)
            job.nodes, job.spares = nodes[:job.spec.nodes], nodes[job.spec.nodes:]
            st.node_job[nodes] = job.index
            st.node_job_phase[nodes] = Phase.IDLE
            job.status = "starting"
            if job.stream is not None:
                jobs.active.add(job.index)   # recorded from this instant on
            assert job.placed is not None
            job.placed.succeed(nodes)

    def schedule(self) -> None:
        """Start every queued job that fits now, in priority order."""
        if self.lsf is not None:
            self._lsf_schedule()
            return
        if not self.queue:
            return
        st = self.state
        self.queue.sort(key=lambda j: (-j.spec.priority, j.index))
        for job in list(self.queue):
            nodes = self.place_on_model(job)    # the state's schedulable nodes, as they are now
            if nodes is None:
                continue
            self.queue.remove(job)
            self.e.jobs.advance(job)            # nothing accrues while queued; start the clock now
            nodes = _frozen_copy(nodes)
            job.nodes, job.spares = nodes[:job.spec.nodes], nodes[job.spec.nodes:]
            st.node_job[nodes] = job.index
            st.node_job_phase[nodes] = Phase.IDLE
            job.status = "starting"
            assert job.placed is not None
            job.placed.succeed(nodes)

    def model_choices(self, job: JobState) -> list[int]:
        """Node models (indices into ``plant.models``) a job may run on, in order of
        preference: the one it was placed on before; else the one it names; else every
        model whose GPUs per node its parallelism and batch divide, default model first."""
        p, spec = self.plant, job.spec
        if job.index in self.job_model:
            return [self.job_model[job.index]]
        if spec.node_model is not None:
            return [p.model_names.index(spec.node_model)] if spec.node_model in p.model_names else []
        mp = spec.tp * spec.pp * spec.cp
        out = []
        for m, node in enumerate(p.models):
            gpus = spec.nodes * node.gpu_count
            if spec.tp <= node.gpu_count and gpus % mp == 0 and \
                    spec.global_batch % ((gpus // mp) * spec.micro_batch) == 0:
                out.append(m)
        return out or [0]

    def place_on_model(self, job: JobState, free: np.ndarray | None = None) -> np.ndarray | None:
        """:meth:`place` on the free nodes of one node model: the first of
        :meth:`model_choices` that holds the job (a job never spans node models). ``free``
        None: the state's schedulable nodes."""
        p = self.plant
        if len(p.models) <= 1:
            return self.place(job, free)
        if free is None:
            free = self.state.node_schedulable
        for m in self.model_choices(job):
            nodes = self.place(job, free & (p.node_model_index == m), p.models[m].gpu_count)
            if nodes is not None:
                self.job_model[job.index] = m
                return nodes
        return None

    def place(self, job: JobState, free: np.ndarray | None = None,
              gpus_per_node: int | None = None) -> np.ndarray | None:
        """Nodes for the job (its size plus hot spares), or None if it does not fit
        (:func:`place_nodes_reference`'s rule; :func:`place_nodes_grouped` computes it
        when the units are contiguous blocks). ``free`` None: the state's schedulable nodes."""
        spec, st = job.spec, self.state
        want = spec.nodes + spec.hot_spares
        counts = None
        if free is None:
            free = st.node_schedulable
        if self._free_counts is not None:
            counts = self._free_counts(free)
            n_free = int(counts.sum())
        else:
            n_free = int(np.count_nonzero(free))
        if n_free < want:
            if not spec.elastic:
                return None
            want = self.elastic_size(spec, n_free, gpus_per_node)
            if want == 0:
                return None
        ver = st.version("su_degraded")
        if ver != self._deg_ver:
            deg = np.array(st.su_degraded)
            deg.flags.writeable = False         # (so that the healthy units are kept with it)
            self._deg, self._deg_ver = deg, ver
        if self._su_nodes is None:
            return place_nodes_reference(free, self.plant.node_su, self._deg, want)
        return place_nodes_grouped(free, self._su_nodes, self._deg, want, counts)

    def record(self, i: int, rec) -> None:
        rec["jobs_queued"][i] = self.lsf.pending if self.lsf is not None else len(self.queue)

    def elastic_size(self, spec: Job, free: int, gpus_per_node: int | None = None) -> int:
        """Largest node count <= the job's size that its parallelism, expert-parallel layout
        and batch allow (:func:`twin.plant.elastic_gpus_run`; ``gpus_per_node`` of its node
        model, default the plant's default model), 0 if none."""
        from twin.plant import elastic_gpus_run

        gpn = gpus_per_node or self.plant.gpus_per_node
        for n in range(min(free, spec.nodes), 0, -1):
            if elastic_gpus_run(spec, n * gpn):
                return n
        return 0
