"""An LSF-like batch scheduler, independent of the engine.

Queues with priorities; within a queue first-come-first-served or fair share by user or
project (dynamic priority = share / decayed GPU-seconds used, LSF's ``FAIRSHARE`` with
``HIST_HOURS``); EASY backfill (the first job that does not fit gets a reservation: the
nodes and the time at which it can start, from the run limits of the running jobs; a later
job may start now only if it ends before that time or keeps off those nodes, so it never
delays the reserved job; Lifka 1995, Mu'alem & Feitelson 2001); preemption of jobs of
preemptable lower-priority queues by jobs of preemptive queues, losing the work since
their last checkpoint; exclusive nodes; topology-aware placement (a multi-node job in one
scalable unit if one has room, best fit; else across the fewest units, fullest first);
health-aware placement (unhealthy nodes are never used; units with a degraded leaf switch
last).

The API is small so that the engine (or the standalone :func:`twin.workload.replay.replay`)
can drive it::

    s = Scheduler(ClusterShape(nodes=256, gpus_per_node=8, su_nodes=32), SchedulerConfig())
    s.submit(JobRequest(id=1, gpus=64, queue="prod", user="alice", project="granite",
                        submit_s=0.0, runlimit_s=86400.0), now_s=0.0)
    for d in s.decide(now_s):          # Start(job, nodes, gpus_per_node) or Preempt(job, lost_s)
        ...
    s.finish(job_id, now_s)            # the job ended: its GPUs are free
    s.set_node_health(node, False, now_s)

Allocation is in GPUs: a job of fewer GPUs than a node shares a node (best fit: the node
with the fewest free GPUs that still fit) unless it asks for ``exclusive``; larger jobs
take whole nodes. The scheduler never reads a clock: every call passes ``now_s``.

References
----------
D. Lifka, "The ANL/IBM SP scheduling system", JSSPP 1995, doi:10.1007/3-540-60153-8_35.
A. W. Mu'alem and D. G. Feitelson, "Utilization, predictability, workloads, and user
runtime estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS 12(6), 2001,
doi:10.1109/71.932708.
IBM Spectrum LSF 10.1 documentation, "Fair share scheduling" and "Preemptive scheduling".
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from collections.abc import Iterator, Mapping

import numpy as np

# the scheduler's public records live in sched_types; re-exported here
from twin.workload.sched_types import DEFAULT_QUEUES as DEFAULT_QUEUES
from twin.workload.sched_types import ClusterShape as ClusterShape
from twin.workload.sched_types import JobRequest as JobRequest
from twin.workload.sched_types import Preempt as Preempt
from twin.workload.sched_types import QueueSpec as QueueSpec
from twin.workload.sched_types import SchedulerConfig as SchedulerConfig
from twin.workload.sched_types import Start as Start

LN2 = math.log(2.0)
_BIG = 1 << 62
#: clusters of at most this many scalable units rank their units in Python lists
#: (:func:`units_in_order_small`); numpy's per-call cost dominates below it (issue 19)
SMALL_UNITS = 32


# --------------------------------------------------------------------------- internal state
class _Job:
    __slots__ = ("req", "id", "gpus", "whole", "n_nodes", "q", "qprio", "key", "submit", "seq",
                 "runlimit", "remaining", "state", "start", "alloc", "end_est", "ckpt", "hold_s")

    def __init__(self, req: JobRequest, q: int, qprio: int, key: int, seq: int, gpn: int):
        self.req = req
        self.id = req.id
        self.gpus = req.gpus
        self.whole = req.exclusive or req.gpus > gpn
        self.n_nodes = -(-req.gpus // gpn)
        self.q, self.qprio, self.key, self.seq = q, qprio, key, seq
        self.submit = req.submit_s
        self.runlimit = req.runlimit_s
        self.remaining = req.runlimit_s       # run limit left (shrinks by checkpointed work)
        self.state = "pending"
        self.start = math.nan
        self.alloc: list[tuple[int, int]] = []
        self.end_est = math.inf
        self.ckpt = req.checkpoint_interval_s
        self.hold_s = -math.inf       # a preempted job does not restart at the same instant


class Scheduler:
    """See the module docstring. ``track_usage``: keep the decayed usage per fair-share key
    under FIFO too (fair share always does), for :meth:`usage_gpu_s`."""

    #: the backfill scan skips a candidate at least as large as one that did not fit since
    #: the last start (same answers; False tries every candidate, for the equivalence test)
    skip_known_misfits = True
    #: the speed paths of issue 19, each with its reference kept (the equivalence tests in
    #: tests/sim/test_scheduler_speed.py switch them off): units ranked in Python lists up
    #: to this many units (0: always numpy); the free units off a reservation kept while the
    #: pool stands; a start's or release's node moves in one loop (else :meth:`_move` each);
    #: the backfill scan's known misfits carried from one pass to the next while the pool
    #: and the reservation stand; no backfill scan when the smallest pending job is larger
    #: than the free GPUs; a whole-node head's reservation found by counting the nodes that
    #: become free (the pool's sets built once, at the shadow time)
    small_units = SMALL_UNITS
    cache_avoided = True
    batched_moves = True
    keep_misfits = True
    cut_scan = True
    fast_reserve = True

    def __init__(self, cluster: ClusterShape, config: SchedulerConfig | None = None,
                 track_usage: bool = False):
        self.cluster = cluster
        self.config = config or SchedulerConfig()
        c = self.config
        gpn = self.gpn = cluster.gpus_per_node
        n = cluster.nodes
        self.node_su = [i // cluster.su_nodes for i in range(n)]
        self.n_su = (n + cluster.su_nodes - 1) // cluster.su_nodes
        self.free = [gpn] * n
        self.healthy = [True] * n
        self.su_degraded = [False] * self.n_su
        self.partial: list[set[int]] = [set() for _ in range(gpn)]    # k free GPUs, 0 < k < gpn
        self.full: list[set[int]] = [set() for _ in range(self.n_su)]  # fully free, per unit
        for i in range(n):
            self.full[self.node_su[i]].add(i)
        self.n_full = n
        self.full_count = np.array([len(x) for x in self.full], np.int64)
        self.su_degraded_arr = np.zeros(self.n_su, np.int64)
        self.free_gpus = n * gpn
        self.spill_su = -1
        self.node_jobs: list[set[int]] = [set() for _ in range(n)]
        #: ``(node, gpus_per_node)`` of every node, made once: a whole-node placement's
        #: allocation lists these (a job holds them while it runs; no tuple per node per start)
        self._whole_alloc = [(i, gpn) for i in range(n)]
        # queues, highest priority first
        self.queues = sorted(c.queues, key=lambda q: -q.priority)
        self.qindex = {q.name: i for i, q in enumerate(self.queues)}
        self.fifo: list[list[tuple[float, int, _Job]]] = [[] for _ in self.queues]
        self.by_key: list[dict[int, list[tuple[float, int, _Job]]]] = [{} for _ in self.queues]
        self.dead = [0] * len(self.queues)
        self.front = [0] * len(self.queues)
        self.key_front: list[dict[int, int]] = [{} for _ in self.queues]
        self.n_pending = [0] * len(self.queues)
        self.jobs: dict[int, _Job] = {}
        self.running_heap: list[tuple[float, int, _Job]] = []
        self.running_set: set[int] = set()
        self.seq = 0
        # fair share: per key (user or project)
        self.key_index: dict[str, int] = {}
        self.key_names: list[str] = []
        self.key_share: list[float] = []
        self.key_usage: list[float] = []     # decayed GPU-s at key_t
        self.key_t: list[float] = []
        self.key_running: list[int] = []     # running GPUs
        self.key_prio: list[float] = []      # cached dynamic priority
        self.prio_time = -math.inf
        self.track_usage = c.order == "fairshare" or track_usage
        # backfill reservation of the current head: (job, shadow time, reserved nodes)
        self.reservation: tuple[_Job, float, frozenset[int]] | None = None
        self.first_shadow: dict[int, float] = {}    # job -> shadow time of its first reservation
        self.last_backfill_s = -math.inf
        self.wake_s = math.inf        # call decide() again then (a backfill scan was deferred)
        # resources only grow when a job gives its GPUs back or a node turns healthy: a head
        # job that did not fit at freed-version v does not fit while the version is v
        self.freed = 0
        self.head_misfit: tuple[_Job, int] | None = None
        self.preempted_gpu_s = 0.0
        #: bumped by every change of the free pool (a start, a release, a node's health):
        #: what is derived from the pool and the reservation is kept while it stands
        self.pool_ver = 0
        self._sizes: list[tuple[int, int, _Job]] = []     # pending jobs' GPUs (a heap)
        self._sizes_limit = 64
        self._misfits: tuple[int, frozenset[int], list[list[int]]] | None = None
        self._avoid_cache: tuple[frozenset[int], int, np.ndarray, dict[int, set[int]], dict[int, set[int]]] | None = None

    # ------------------------------------------------------------------ API
    def submit(self, req: JobRequest, now_s: float) -> None:
        """Queue a job. Raises ``ValueError`` for an unknown queue or a job larger than the
        cluster."""
        if req.queue not in self.qindex:
            raise ValueError(f"job {req.id}: unknown queue {req.queue!r}; queues: {list(self.qindex)}")
        if req.gpus <= 0 or req.gpus > self.cluster.gpus:
            raise ValueError(f"job {req.id}: {req.gpus} GPUs; expected 1 to {self.cluster.gpus}")
        if req.id in self.jobs:
            raise ValueError(f"job {req.id} submitted twice")
        q = self.qindex[req.queue]
        name = req.user if self.config.fairshare_by == "user" else req.project
        key = self._key(name, now_s)
        self.seq += 1
        job = _Job(req, q, self.queues[q].priority, key, self.seq, self.gpn)
        self.jobs[req.id] = job
        self._enqueue(job)

    def finish(self, job_id: int, now_s: float) -> None:
        """The job ended (completed, failed, cancelled or killed at its run limit): free its
        GPUs. A pending job is withdrawn from its queue."""
        job = self.jobs.pop(job_id)
        if job.state == "pending":
            job.state = "done"
            self.dead[job.q] += 1
            self.n_pending[job.q] -= 1
            return
        self._release(job, now_s)
        job.state = "done"

    def set_node_health(self, node: int, healthy: bool, now_s: float) -> list[int]:
        """Mark a node (un)healthy; returns the ids of the jobs running on it (the caller
        decides whether they are interrupted: ``finish`` or ``requeue`` them)."""
        if self.healthy[node] == healthy:
            return sorted(self.node_jobs[node])
        self._unindex(node)
        self.healthy[node] = healthy
        self._index(node)
        self.freed += 1
        self.pool_ver += 1
        self.reservation = None
        return sorted(self.node_jobs[node])

    def set_unit_degraded(self, su: int, degraded: bool) -> None:
        """A scalable unit with a failed leaf switch is used last."""
        self.su_degraded[su] = degraded
        self.su_degraded_arr[su] = int(degraded)
        self.reservation = None

    def requeue(self, job_id: int, now_s: float) -> Preempt:
        """Stop a running job and put it back in its queue (LSF ``brequeue``), keeping the
        work up to its last checkpoint."""
        job = self.jobs[job_id]
        return self._preempt_one(job, now_s)

    def start_now(self, req: JobRequest, now_s: float) -> Start | None:
        """Start a job at once, outside the queue order (a replay honouring a trace's
        recorded start): placed by the same rules, else on whatever GPUs are free across
        nodes (the real cluster placed it somehow); None if fewer GPUs are free than it has."""
        self.submit(req, now_s)
        job = self.jobs[req.id]
        alloc = self._place(job) if self.free_gpus >= job.gpus else None
        if alloc is None and self.free_gpus >= job.gpus:
            alloc = self._scatter(job.gpus)
        if alloc is None:
            self.finish(req.id, now_s)
            return None
        return self._start(job, alloc, now_s)

    def _scatter(self, gpus: int) -> list[tuple[int, int]]:
        alloc, need = [], gpus
        for k in range(self.gpn - 1, 0, -1):
            for node in sorted(self.partial[k]):
                g = min(k, need)
                alloc.append((node, g))
                need -= g
                if need == 0:
                    return alloc
        for u in range(self.n_su):
            for node in sorted(self.full[u]):
                g = min(self.gpn, need)
                alloc.append((node, g))
                need -= g
                if need == 0:
                    return alloc
        raise AssertionError("free_gpus out of step with the node sets")

    @property
    def pending(self) -> int:
        return sum(self.n_pending)

    @property
    def busy_gpus(self) -> int:
        """GPUs held by running jobs (on healthy or unhealthy nodes)."""
        return self.cluster.gpus - self.free_gpus - sum(
            self.free[i] for i in range(self.cluster.nodes) if not self.healthy[i])

    def running(self) -> list[int]:
        return [j.id for j in self.jobs.values() if j.state == "running"]

    def decide(self, now_s: float) -> list[Start | Preempt]:
        """One scheduling pass at ``now_s``: the decisions, already applied to the
        scheduler's state (the caller starts the jobs and stops the preempted ones)."""
        out: list[Start | Preempt] = []
        if not any(self.n_pending):
            return out
        if self.free_gpus == 0 and not self.config.preemption:
            return out
        c = self.config
        if c.order == "fairshare" and now_s - self.prio_time >= c.fairshare_update_s:
            self._update_priorities(now_s)
        head: _Job | None = None
        shadow = math.inf
        reserved: frozenset[int] = frozenset()
        scanned = 0
        # backfill: the smallest size (nodes of a whole-node job, GPUs of a shared-node one)
        # that did not fit, keeping off the reservation [0] or anywhere [1], since the last
        # start. A placement that fails for a size fails for every larger one of the same
        # kind, so the scan skips those without trying (the answers are the same). They
        # depend on the free pool and the reservation alone, so the last pass's carry over
        # while both stand (:attr:`pool_ver`, the same reserved set): a pass after a
        # submission does not try again what failed in the pass before.
        no_fit = [[_BIG, _BIG], [_BIG, _BIG]]       # [whole][avoiding the reservation or not]
        skip = self.skip_known_misfits
        for job in self._order():
            if job.hold_s >= now_s:
                continue
            if head is None:
                if (self.free_gpus < job.gpus or (job.whole and job.n_nodes > self.n_full)
                        or self.head_misfit == (job, self.freed)):
                    alloc = None
                else:
                    alloc = self._place(job)
                    if alloc is None:
                        self.head_misfit = (job, self.freed)
                if alloc is None and c.preemption and self.queues[job.q].preemptive:
                    pre = self._preempt_for(job, now_s)
                    if pre:
                        out.extend(pre)
                        alloc = self._place(job)
                if alloc is not None:
                    out.append(self._start(job, alloc, now_s))
                    continue
                if not c.backfill:
                    break
                if now_s - self.last_backfill_s < c.backfill_interval_s:
                    self.wake_s = self.last_backfill_s + c.backfill_interval_s
                    break
                self.last_backfill_s = now_s
                head = job
                shadow, reserved = self._reserve(job, now_s)
                m = self._misfits
                if m is not None and m[0] == self.pool_ver and m[1] is reserved and self.keep_misfits:
                    no_fit = [m[2][0][:], m[2][1][:]]
                if self.cut_scan and self._smallest_pending_gpus() > self.free_gpus:
                    break           # every candidate fails the size test below: none starts
                continue
            if self.free_gpus == 0:
                break
            scanned += 1
            if scanned > c.backfill_depth:
                break
            if job.gpus > self.free_gpus or (job.whole and job.n_nodes > self.n_full):
                continue
            size = job.n_nodes if job.whole else job.gpus
            failed = no_fit[job.whole]
            alloc = None
            if size < failed[0] or not skip:
                alloc = self._place(job, avoid=reserved) if reserved else self._place(job)
                if alloc is None:
                    failed[0] = size
                    if not reserved:            # the same placement as the one below
                        failed[1] = min(failed[1], size)
            if alloc is None and now_s + job.remaining <= shadow and (size < failed[1] or not skip):
                alloc = self._place(job)
                if alloc is None:
                    failed[1] = size
            if alloc is not None:
                out.append(self._start(job, alloc, now_s))
                no_fit = [[_BIG, _BIG], [_BIG, _BIG]]
        if head is not None:
            self._misfits = (self.pool_ver, reserved, no_fit)
        return out

    # ------------------------------------------------------------------ queue order
    def _enqueue(self, job: _Job) -> None:
        entry = (job.submit, job.seq, job)
        q = job.q
        if self.config.order == "fifo":
            lst = self.fifo[q]
        else:
            lst = self.by_key[q].setdefault(job.key, [])
        if not lst or (lst[-1][0], lst[-1][1]) <= (entry[0], entry[1]):
            lst.append(entry)
        else:
            insort(lst, entry, key=lambda e: (e[0], e[1]))
            if self.config.order == "fifo":
                self.front[q] = 0
            else:
                self.key_front[q][job.key] = 0
        self.n_pending[q] += 1
        job.state = "pending"
        h = self._sizes
        heapq.heappush(h, (job.gpus, job.seq, job))
        if len(h) > self._sizes_limit:
            # drop the entries of jobs no longer pending (they would keep every finished job
            # alive in a long replay); next time at four times the pending ones
            self._sizes = h = [e for e in h if e[2].state == "pending"]
            heapq.heapify(h)
            self._sizes_limit = max(64, 4 * len(h))

    def _smallest_pending_gpus(self) -> int:
        """GPUs of the smallest pending job (``_BIG`` if none): a heap of the sizes, with the
        entries of jobs no longer pending dropped when they come to the top, and all of them
        when they outnumber the pending ones (:meth:`_enqueue`)."""
        h = self._sizes
        while h and h[0][2].state != "pending":
            heapq.heappop(h)
        return h[0][0] if h else _BIG

    def _compact(self, q: int) -> None:
        if self.config.order == "fifo":
            self.fifo[q] = [e for e in self.fifo[q] if e[2].state == "pending"]
            self.front[q] = 0
        else:
            d = self.by_key[q]
            for k in list(d):
                d[k] = [e for e in d[k] if e[2].state == "pending"]
                if not d[k]:
                    del d[k]
            self.key_front[q].clear()
        self.dead[q] = 0

    def _order(self) -> Iterator[_Job]:
        """Pending jobs in dispatch order: queue priority, then FIFO or fair share."""
        for q in range(len(self.queues)):
            if not self.n_pending[q]:
                continue
            # compact once the dead entries outnumber the pending ones, or the ones a backfill
            # scan walks (the scans start jobs near the front, so the dead pile up there)
            if self.dead[q] > 64 and self.dead[q] > min(self.n_pending[q], 4 * self.config.backfill_depth):
                self._compact(q)
            if self.config.order == "fifo":
                lst = self.fifo[q]
                i = self.front[q]
                while i < len(lst) and lst[i][2].state != "pending":
                    i += 1
                self.front[q] = i
                while i < len(lst):
                    job = lst[i][2]
                    i += 1
                    if job.state == "pending":
                        yield job
            else:
                yield from self._fairshare_order(q)

    def _fairshare_order(self, q: int) -> Iterator[_Job]:
        d = self.by_key[q]
        front = self.key_front[q]
        heap = []
        for k, lst in d.items():
            pos = front.get(k, 0)
            while pos < len(lst) and lst[pos][2].state != "pending":
                pos += 1
            front[k] = pos
            if pos < len(lst):
                heap.append((-self.key_prio[k], k, pos))
        heapq.heapify(heap)
        while heap:
            _, k, pos = heapq.heappop(heap)
            lst = d.get(k, [])
            while pos < len(lst) and lst[pos][2].state != "pending":
                pos += 1
            if pos >= len(lst):
                continue
            job = lst[pos]
            yield job[2]
            # a dispatch raised the key's running GPUs: its priority drops (LSF adjusts the
            # dynamic priority after each dispatch)
            heapq.heappush(heap, (-self.key_prio[k], k, pos + 1))

    # ------------------------------------------------------------------ fair share
    def _key(self, name: str, now_s: float) -> int:
        k = self.key_index.get(name)
        if k is None:
            k = len(self.key_names)
            self.key_index[name] = k
            self.key_names.append(name)
            self.key_share.append(float(self.config.shares.get(name, self.config.default_share)))
            self.key_usage.append(0.0)
            self.key_t.append(now_s)
            self.key_running.append(0)
            self.key_prio.append(self._prio_of(k))
        return k

    def _advance_key(self, k: int, now_s: float) -> None:
        """Decayed usage: U(t) = U(t0) 2^(-dt/h) + R h/ln2 (1 - 2^(-dt/h)) (R running GPUs
        accruing GPU-seconds, exponentially forgotten with half-life h)."""
        dt = now_s - self.key_t[k]
        if dt > 0:
            h = self.config.half_life_s
            f = 2.0 ** (-dt / h)
            self.key_usage[k] = self.key_usage[k] * f + self.key_running[k] * h / LN2 * (1 - f)
            self.key_t[k] = now_s

    def _prio_of(self, k: int) -> float:
        """Dynamic priority = share / (decayed GPU-s + running GPUs x one hour + 1)."""
        return self.key_share[k] / (self.key_usage[k] + 3600.0 * self.key_running[k] + 1.0)

    def _update_priorities(self, now_s: float) -> None:
        for k in range(len(self.key_names)):
            self._advance_key(k, now_s)
            self.key_prio[k] = self._prio_of(k)
        self.prio_time = now_s

    def usage_gpu_s(self, now_s: float) -> dict[str, float]:
        """Decayed GPU-seconds per fair-share key at ``now_s``."""
        for k in range(len(self.key_names)):
            self._advance_key(k, now_s)
        return dict(zip(self.key_names, self.key_usage, strict=True))

    # ------------------------------------------------------------------ node bookkeeping
    def _unindex(self, node: int) -> None:
        if not self.healthy[node]:
            return
        f = self.free[node]
        if f == self.gpn:
            self.full[self.node_su[node]].discard(node)
            self.full_count[self.node_su[node]] -= 1
            self.n_full -= 1
        elif f > 0:
            self.partial[f].discard(node)
        self.free_gpus -= f

    def _index(self, node: int) -> None:
        if not self.healthy[node]:
            return
        f = self.free[node]
        if f == self.gpn:
            self.full[self.node_su[node]].add(node)
            self.full_count[self.node_su[node]] += 1
            self.n_full += 1
        elif f > 0:
            self.partial[f].add(node)
        self.free_gpus += f

    def _move(self, node: int, delta: int) -> None:
        """Change a node's free GPUs by ``delta`` and keep the free-node sets in step."""
        free, gpn = self.free, self.gpn
        f = free[node]
        g = f + delta
        free[node] = g
        if not self.healthy[node]:
            return
        if f == gpn:
            su = self.node_su[node]
            self.full[su].discard(node)
            self.full_count[su] -= 1
            self.n_full -= 1
        elif f:
            self.partial[f].discard(node)
        if g == gpn:
            su = self.node_su[node]
            self.full[su].add(node)
            self.full_count[su] += 1
            self.n_full += 1
        elif g:
            self.partial[g].add(node)
        self.free_gpus += delta

    def _take(self, alloc: list[tuple[int, int]], job: _Job) -> None:
        jid, node_jobs = job.id, self.node_jobs
        if len(alloc) < 4 or not self.batched_moves:     # a few nodes: one call each costs less
            self.pool_ver += 1
            for node, g in alloc:
                self._move(node, -g)
                node_jobs[node].add(jid)
            return
        self._shift(alloc, -1)
        for node, _ in alloc:
            node_jobs[node].add(jid)

    def _give(self, job: _Job) -> None:
        self.freed += 1
        jid, node_jobs, alloc = job.id, self.node_jobs, job.alloc
        if len(alloc) < 4 or not self.batched_moves:
            self.pool_ver += 1
            for node, g in alloc:
                self._move(node, g)
                node_jobs[node].discard(jid)
            return
        self._shift(alloc, 1)
        for node, _ in alloc:
            node_jobs[node].discard(jid)

    def _shift(self, alloc: list[tuple[int, int]], sign: int) -> None:
        """:meth:`_move` of ``sign * g`` at each ``(node, g)`` of ``alloc``, in order: the
        loop written out (the same set operations in the same order, so the sets iterate
        alike), the counters summed once (issue 19)."""
        self.pool_ver += 1
        free, healthy, node_su = self.free, self.healthy, self.node_su
        full, partial, full_count, gpn = self.full, self.partial, self.full_count, self.gpn
        moved = d_full = 0
        for node, g in alloc:
            f = free[node]
            free[node] = h = f + sign * g
            if not healthy[node]:
                continue
            if f == gpn:
                su = node_su[node]
                full[su].discard(node)
                full_count[su] -= 1
                d_full -= 1
            elif f:
                partial[f].discard(node)
            if h == gpn:
                su = node_su[node]
                full[su].add(node)
                full_count[su] += 1
                d_full += 1
            elif h:
                partial[h].add(node)
            moved += g
        self.n_full += d_full
        self.free_gpus += sign * moved

    def _give_back(self, alloc: list[tuple[int, int]], free: list[int], full: list[set[int]],
                   partial: list[set[int]]) -> int:
        """Return ``alloc``'s GPUs to hypothetical pools (copies of ``free``, ``full`` and
        ``partial``), as a reservation or a preemption plan does before it tries a
        placement; unhealthy nodes stay out, as in :meth:`_move`. Returns the number of
        nodes that became fully free."""
        gpn = self.gpn
        became_full = 0
        for node, g in alloc:
            if not self.healthy[node]:
                continue
            f = free[node]
            if f == gpn:
                full[self.node_su[node]].discard(node)
            elif f > 0:
                partial[f].discard(node)
            free[node] = f + g
            if free[node] == gpn:
                full[self.node_su[node]].add(node)
                became_full += 1
            else:
                partial[free[node]].add(node)
        return became_full

    # ------------------------------------------------------------------ placement
    def _units_in_order(self, counts: np.ndarray, need: int) -> list[int] | None:
        """Units to take ``need`` whole nodes from: one unit if one has room (best fit,
        healthy units first), else the fullest units first (healthy first)."""
        big = self.cluster.nodes + 1
        if self.n_su <= self.small_units:
            return units_in_order_small(counts.tolist(), self.su_degraded, need, big)
        deg = self.su_degraded_arr
        key = np.where(counts >= need, counts + deg * big, 2 * big + 1)
        u = int(np.argmin(key))
        if key[u] <= 2 * big:
            return [u]
        if counts.sum() < need:
            return None
        order = np.lexsort((-counts, deg))           # healthy first, then fullest (stable by index)
        cum = np.cumsum(counts[order])
        k = int(np.searchsorted(cum, need))
        return order[:k + 1].tolist()

    def _place(self, job: _Job, avoid: frozenset[int] = frozenset(),
               full: list[set[int]] | None = None, partial: list[set[int]] | None = None
               ) -> list[tuple[int, int]] | None:
        """Nodes and GPUs for ``job`` from the free pool (or the given hypothetical one),
        keeping off ``avoid``; None if it does not fit."""
        full = self.full if full is None else full
        partial = self.partial if partial is None else partial
        gpn = self.gpn
        if job.whole:
            need = job.n_nodes
            sets: _Avoiding | list[set[int]]
            if avoid:
                counts, hit = self._avoided(avoid, full)
                sets = _Avoiding(full, hit)
            elif full is self.full:
                sets, counts = full, self.full_count
            else:
                sets = full
                counts = np.fromiter((len(s) for s in full), np.int64, self.n_su)
            units = self._units_in_order(counts, need)
            if units is None:
                return None
            nodes: list[int] = []
            for u in units:
                nodes.extend(sorted(sets[u])[:need - len(nodes)])
            whole = self._whole_alloc               # (n, gpn): whole nodes, every GPU of each held
            return [whole[n] for n in nodes]
        g = job.gpus
        for k in range(g, gpn):
            for cand in partial[k]:             # best fit: the fullest node that holds it
                if cand not in avoid:
                    return [(cand, g)]
        # a fully free node, from the unit small jobs spill into (kept until it has no free
        # node left, then the unit with the fewest free nodes: big units stay whole)
        u = self.spill_su if full is self.full else -1
        # units with a free node off ``avoid`` (``full[v] - avoid`` not empty)
        outside = self._avoided(avoid, full)[0] if avoid else None
        if u < 0 or not full[u] or (outside is not None and not outside[u]):
            u, best = -1, 1 << 30
            for v in range(self.n_su):
                n = len(full[v])
                if n and n < best and not (outside is not None and not outside[v]):
                    u, best = v, n
            if u < 0:
                return None
            if full is self.full:
                self.spill_su = u
        for cand in full[u]:
            if cand not in avoid:
                return [(cand, g)]
        return None

    def _avoided(self, avoid: frozenset[int], full: list[set[int]]) -> tuple[np.ndarray, dict[int, set[int]]]:
        """Fully free nodes per unit off ``avoid`` [int (n_su,)] and the avoided ones per unit
        that holds some: only the units holding avoided nodes change, so no other set is
        copied. For the scheduler's own pool the answer is kept while the pool and the
        reservation stand (:attr:`pool_ver`, the same ``avoid`` object): a backfill scan
        asks it once per candidate."""
        own = full is self.full and self.cache_avoided
        c = self._avoid_cache
        if own and c is not None and c[0] is avoid and c[1] == self.pool_ver:
            return c[2], c[3]           # (before the copy below, which it does not need)
        base = self.full_count if full is self.full else np.fromiter((len(s) for s in full), np.int64, self.n_su)
        counts = base.copy()
        hit: dict[int, set[int]] = {}
        if not own:
            node_su = self.node_su
            for n in avoid:
                u = node_su[n]
                if n in full[u]:
                    counts[u] -= 1
                    hit.setdefault(u, set()).add(n)
            return counts, hit
        if c is not None and c[0] is avoid:
            by_unit = c[4]
        else:           # the avoided nodes of each unit, once per reservation
            by_unit = {}
            for n in avoid:
                by_unit.setdefault(self.node_su[n], set()).add(n)
        for u, a in by_unit.items():
            h = full[u] & a
            if h:
                counts[u] -= len(h)
                hit[u] = h
        self._avoid_cache = (avoid, self.pool_ver, counts, hit, by_unit)
        return counts, hit

    def _start(self, job: _Job, alloc: list[tuple[int, int]], now_s: float) -> Start:
        self._take(alloc, job)
        job.alloc = alloc
        job.state = "running"
        job.start = now_s
        job.end_est = now_s + job.remaining
        self.n_pending[job.q] -= 1
        self.dead[job.q] += 1
        heapq.heappush(self.running_heap, (job.end_est, job.seq, job))
        self.running_set.add(job.id)
        if self.track_usage:
            k = job.key
            self._advance_key(k, now_s)
            self.key_running[k] += sum(g for _, g in alloc)
            self.key_prio[k] = self._prio_of(k)
        if self.reservation is not None and self.reservation[0] is job:
            self.reservation = None
        if len(alloc) == 1:
            return Start(job.id, (alloc[0][0],), (alloc[0][1],))
        return Start(job.id, tuple([n for n, _ in alloc]), tuple([g for _, g in alloc]))

    def _release(self, job: _Job, now_s: float) -> None:
        self._give(job)
        self.running_set.discard(job.id)
        if self.track_usage:
            k = job.key
            self._advance_key(k, now_s)
            self.key_running[k] -= sum(g for _, g in job.alloc)
            self.key_prio[k] = self._prio_of(k)
        job.alloc = []
        job.end_est = math.inf

    # ------------------------------------------------------------------ backfill reservation
    def _running_by_end(self) -> list[tuple[float, int, _Job]]:
        h = self.running_heap
        live = len(self.running_set)
        if len(h) > 64 and len(h) > 2 * live:      # more stale entries than live ones: compact
            self.running_heap = h = [e for e in h if e[2].state == "running" and e[0] == e[2].end_est]
            heapq.heapify(h)
        return h

    def _reserve(self, job: _Job, now_s: float) -> tuple[float, frozenset[int]]:
        """Shadow time and nodes at which the blocked ``job`` can start if every running job
        runs to its limit (EASY backfill). Kept while the job stays at the head."""
        r = self.reservation
        if r is not None and r[0] is job:
            return r[1], r[2]
        free = list(self.free)
        heap = list(self._running_by_end())
        if job.whole and self.fast_reserve:
            return self._reserve_whole(job, free, heap)
        full = [set(s) for s in self.full]
        partial = [set(s) for s in self.partial]
        shadow, alloc = math.inf, None
        n_full = self.n_full          # fully free healthy nodes of the hypothetical pool
        need, gpus, gpn = job.n_nodes, job.gpus, self.gpn
        while heap:
            t, _, other = heapq.heappop(heap)
            if other.state != "running" or t != other.end_est:
                continue
            n_full += self._give_back(other.alloc, free, full, partial)
            if heap and heap[0][0] == t:
                continue
            # place only once it can fit (a whole-node job needs that many fully free nodes,
            # a shared-node one a node with enough free GPUs): _place fails exactly then
            if job.whole:
                if n_full < need:
                    continue
            elif not n_full and not any(partial[k] for k in range(gpus, gpn)):
                continue
            alloc = self._place(job, full=full, partial=partial)
            if alloc is not None:
                shadow = t
                break
        nodes = frozenset(n for n, _ in alloc) if alloc else frozenset()
        self.reservation = (job, shadow, nodes)
        self.first_shadow.setdefault(job.id, shadow)
        return shadow, nodes

    def _reserve_whole(self, job: _Job, free: list[int], heap: list[tuple[float, int, _Job]]
                       ) -> tuple[float, frozenset[int]]:
        """:meth:`_reserve` of a whole-node job: its placement needs only the fully free
        nodes (``partial`` plays no part), so the running jobs' nodes are given back by
        counting those that become fully free (as :meth:`_give_back` does, in the same
        order) and the hypothetical pool's sets are built once, where the job can fit."""
        shadow, alloc = math.inf, None
        need, gpn, healthy = job.n_nodes, self.gpn, self.healthy
        n_full = self.n_full
        became: list[int] = []
        while heap:
            t, _, other = heapq.heappop(heap)
            if other.state != "running" or t != other.end_est:
                continue
            for node, g in other.alloc:
                if healthy[node]:
                    h = free[node] + g
                    free[node] = h
                    if h == gpn:
                        became.append(node)
            if heap and heap[0][0] == t:
                continue
            if n_full + len(became) < need:
                continue
            full = [set(s) for s in self.full]
            node_su = self.node_su
            for node in became:
                full[node_su[node]].add(node)
            alloc = self._place(job, full=full, partial=self.partial)
            if alloc is not None:
                shadow = t
                break
        nodes = frozenset([n for n, _ in alloc]) if alloc else frozenset()
        self.reservation = (job, shadow, nodes)
        self.first_shadow.setdefault(job.id, shadow)
        return shadow, nodes

    # ------------------------------------------------------------------ preemption
    def _preempt_one(self, job: _Job, now_s: float) -> Preempt:
        ran = now_s - job.start
        ck = job.ckpt
        lost = ran if not math.isfinite(ck) else ran % ck
        done = ran - lost
        gpus = sum(g for _, g in job.alloc)
        self._release(job, now_s)
        job.remaining = max(job.remaining - done, 0.0)
        job.start = math.nan
        job.hold_s = now_s
        self.preempted_gpu_s += lost * gpus
        self._enqueue(job)
        self.reservation = None
        return Preempt(job.id, lost, lost * gpus, done)

    def _preempt_for(self, job: _Job, now_s: float) -> list[Preempt]:
        """Preempt running jobs of lower-priority preemptable queues, youngest first (least
        work lost), until ``job`` can be placed; none if it still could not be."""
        victims = [j for j in self.jobs.values()
                   if j.state == "running" and self.queues[j.q].preemptable and j.qprio < job.qprio]
        if not victims:
            return []
        victims.sort(key=lambda j: (j.qprio, -j.start, -j.seq))
        free = list(self.free)
        full = [set(s) for s in self.full]
        partial = [set(s) for s in self.partial]
        chosen = []
        for v in victims:
            chosen.append(v)
            self._give_back(v.alloc, free, full, partial)
            alloc = self._place(job, full=full, partial=partial)
            if alloc is not None:
                used = {n for n, _ in alloc}
                # only the victims on the nodes the job will use
                needed = [w for w in chosen if any(n in used for n, _ in w.alloc)]
                return [self._preempt_one(w, now_s) for w in needed]
        return []


def units_in_order_small(counts: list[int], degraded: list[bool], need: int, big: int) -> list[int] | None:
    """:meth:`Scheduler._units_in_order` in Python lists, for a few units: the unit with the
    fewest fully free nodes that holds ``need`` (healthy first: a degraded unit's key is
    ``count + big``; ties by index, as ``np.argmin``), else the units by (degraded, most
    free, index) up to the first whose running sum reaches ``need`` (``np.lexsort``, then
    ``np.searchsorted`` on the cumulative sum); None if all together hold fewer. The same
    answers as the numpy form (``tests/sim/test_scheduler_speed.py``)."""
    best, best_key = -1, 2 * big + 1
    for u, c in enumerate(counts):
        if c >= need:
            k = c + big if degraded[u] else c
            if k < best_key:
                best, best_key = u, k
    if best >= 0:
        return [best]
    total = 0
    for c in counts:
        total += c
    if total < need:
        return None
    order = sorted(range(len(counts)), key=lambda u: (degraded[u], -counts[u]))
    cum = 0
    for i, u in enumerate(order):
        cum += counts[u]
        if cum >= need:
            return order[:i + 1]
    return order        # not reached: the total holds need


class _Avoiding:
    """The free-node sets of each unit minus the avoided nodes, built only for the units
    asked for (the few a placement takes), not for every unit."""

    def __init__(self, full: list[set[int]], hit: dict[int, set[int]]):
        self.full, self.hit = full, hit

    def __getitem__(self, u: int) -> set[int]:
        return self.full[u] - self.hit[u] if u in self.hit else self.full[u]


def shares_of(usage_gpu_s: Mapping[str, float]) -> dict[str, float]:
    """Normalised shares of GPU usage."""
    total = sum(usage_gpu_s.values())
    return {k: v / total for k, v in usage_gpu_s.items()} if total > 0 else dict(usage_gpu_s)


def as_array(x) -> np.ndarray:
    return np.asarray(x)
