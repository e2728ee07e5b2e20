"""The scheduler: an LSF-like queue that places jobs on healthy, powered, burned-in nodes."""

from __future__ import annotations

import numpy as np

from twin.phases import Phase
from twin.scenario.schema import Job
from twin.sim.component import Component
from twin.sim.jobs import JobState


class Scheduler(Component):
    """Highest priority first; each job packed into as few scalable units as possible,
    fullest healthy units first, units with a failed rail last. Elastic jobs shrink to the
    largest size their parallelism and batch allow."""

    name = "scheduler"
    reads = ("node_schedulable", "su_degraded")
    writes = ("node_job", "node_job_phase")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.queue: list[JobState] = []

    def enqueue(self, job: JobState) -> None:
        job.status = "queued"
        job.placed = self.env.event()
        self.queue.append(job)
        self.schedule()

    def schedule(self) -> None:
        """Start every queued job that fits now, in priority order."""
        if not self.queue:
            return
        st = self.state
        self.queue.sort(key=lambda j: (-j.spec.priority, j.index))
        for job in list(self.queue):
            nodes = self.place(job, st.node_schedulable)
            if nodes is None:
                continue
            self.queue.remove(job)
            self.e.jobs.advance(job)            # nothing accrues while queued; start the clock now
            job.nodes, job.spares = nodes[:job.spec.nodes], nodes[job.spec.nodes:]
            st.node_job[nodes] = job.index
            st.node_job_phase[nodes] = Phase.IDLE
            job.status = "starting"
            assert job.placed is not None
            job.placed.succeed(nodes)

    def place(self, job: JobState, free: np.ndarray) -> np.ndarray | None:
        """Nodes for the job (its size plus hot spares), or None if it does not fit."""
        spec = job.spec
        want = spec.nodes + spec.hot_spares
        if free.sum() < want:
            if not spec.elastic:
                return None
            want = self.elastic_size(spec, int(free.sum()))
            if want == 0:
                return None
        su = self.plant.node_su
        degraded = self.state.su_degraded
        counts = np.bincount(su[free], minlength=len(degraded))
        # fullest healthy SUs first; degraded SUs last; ties by SU index (deterministic)
        order = np.lexsort((np.arange(len(counts)), -counts, degraded > 0))
        chosen = []
        need = want
        for u in order:
            if need == 0 or counts[u] == 0:
                break
            cand = np.flatnonzero(free & (su == u))[:need]
            chosen.append(cand)
            need -= len(cand)
        return np.concatenate(chosen) if need == 0 else None

    def elastic_size(self, spec: Job, free: int) -> int:
        """Largest node count <= the job's size that its parallelism and batch divide."""
        gpn = self.plant.gpus_per_node
        for n in range(min(free, spec.nodes), 0, -1):
            gpus = n * gpn
            mp = spec.tp * spec.pp * spec.cp
            if gpus % mp == 0 and spec.global_batch % ((gpus // mp) * spec.micro_batch) == 0:
                return n
        return 0
