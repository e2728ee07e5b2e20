"""The engine: one simpy Environment and the components that share a cluster state.

The engine builds the plant, the typed :class:`twin.sim.state.ClusterState`, the random
streams and the components, registers their processes, runs to the horizon and hands the
recorder's :class:`twin.outputs.RunRecord` to :mod:`twin.results`. It computes nothing
itself: each concern lives in one component (``docs/ARCHITECTURE.md``):

==============  =======================================================================
ramp            deliveries, the staged power plan, admission, burn-in
power           the power tree, its capacity, RPP breakers, facility series after the run
thermal         hall recirculation models, cooling faults and their transients
scheduler       the LSF-like queue and placement
jobs            training jobs: progress, checkpoints, interruptions, step rate
failures        failures, detection, silent corruption, repair and spares
grid            utility disturbances and single-feed losses
maintenance     announced maintenance windows
sampler         the vectorised physics at each sample; asks every component to record
==============  =======================================================================

Feedback loops (DESIGN.md): the power plan and breakers gate which racks are powered; a
grid disturbance passes through a bypassed UPS and drops nodes; rack heat raises inlet
temperatures, hot GPUs lose clock and fail more often; failures shrink the healthy pool
and the scheduler re-places jobs; a job's phase sets its nodes' power.

Bounded work (issue 18): validation estimates a run's events up front
(:func:`twin.scenario.bounds.event_estimate`); what the estimate cannot foresee (a job whose
``auto`` checkpoint interval comes out at milliseconds because its checkpoint is tiny, a
scenario changed in-process after validation) could still set off an event storm. The engine's environment
(:class:`CountingEnvironment`) therefore counts the events every process handles and stops
the run with an :class:`EventStormError` naming the process and the scenario parameters
that drive it once one process passes :meth:`Engine.process_event_ceiling`.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
from collections import Counter
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from twin import fabric
from twin.errors import Problem, ScenarioError
from twin.outputs import RunRecord
from twin.plant import Plant, build_plant
from twin.scenario.schema import Scenario
from twin.sim.component import Component
from twin.sim.failures import Failures, Maintenance
from twin.sim.grid import Grid
from twin.sim.hall_thermal import HallThermal
from twin.sim.jobs import Jobs
from twin.sim.power_chain import PowerChain
from twin.sim.ramp import Ramp
from twin.sim.recorder import Recorder
from twin.sim.sampler import Sampler
from twin.sim.scheduler import Scheduler
from twin.sim.state import ClusterState
from twin.sim.swing import Swing

DAY = 86400.0
#: named random streams, children of the scenario seed in this order (never reorder:
#: the same seed must give the same run)
RNG_STREAMS = ("fail", "repair", "grid", "cool", "detect", "misc")
#: environment variable that sets the events one kind of process may handle in a run
MAX_PROCESS_EVENTS_ENV = "TWIN_MAX_PROCESS_EVENTS"
#: the scenario parameters that set how many events each component's processes handle
#: (named in an event-storm error), by component class
STORM_DRIVERS: dict[str, tuple[str, ...]] = {
    "Failures": ("failures.rate_scale", "failures.class_rate_scale", "failures.arrhenius_reference_temp_c",
                 "failures.activation_energy_ev", "failures.burn_in_expected_failures_per_node"),
    "Maintenance": ("failures.planned_maintenance_per_day",),
    "Grid": ("site.power.grid.sag_rate_per_year", "site.power.grid.outage_rate_per_year",
             "site.power.grid.feed_outage_rate_per_year"),
    "HallThermal": ("site.cooling_faults.unit_failure_rate_per_year", "site.cooling_faults.events"),
    "Jobs": ("workload.jobs", "failures.rate_scale"),          # refined per job when it storms
    "Sampler": ("simulation.sample_interval_s",),
    "Ramp": ("ramp",),
    "PowerChain": ("site.power",),
}


@contextlib.contextmanager
def _small_pages():
    """Arrays allocated inside are not marked for transparent huge pages (numpy marks every
    allocation of 4 MiB or more with ``madvise(MADV_HUGEPAGE)``; the marking is restored
    after). The recorder's dense series are written a row per sample, so each huge page is
    first touched inside the run, and with the kernel's ``defrag`` setting at ``madvise``
    (a common default) each such fault may compact memory to find 2 MiB: Blue Vela's
    recorder (187 MB of job series) spent 0.35-0.47 s CPU in those faults, 0.22-0.27 s with
    small pages (issue 19). The values stored are the same either way."""
    core = getattr(np, "_core", None) or np.core        # numpy 2 / numpy 1.26
    toggle = getattr(core.multiarray, "_set_madvise_hugepage", None)
    before = toggle(False) if toggle is not None else None
    try:
        yield
    finally:
        if toggle is not None:
            toggle(before)


class EventStormError(ScenarioError):
    """A run stopped because one kind of process handled more events than the ceiling.

    Re-creatable from its ``args`` (simpy re-raises a failed process's exception as
    ``type(e)(*e.args)``), so it reaches the caller of ``env.run`` intact."""

    def __init__(self, problems: list[Problem]):
        super().__init__(problems)
        self.args = (self.problems,)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


class CountingEnvironment(simpy.Environment):
    """A simpy Environment that counts the events each process handles.

    Every generator registered with :meth:`process` (a component's processes, each job's
    life cycle, every repair) runs inside a thin wrapper that counts the events it yields
    and calls ``on_storm(kind, count, generator)`` (which raises) once that process's count passes
    ``ceiling``; ``kind`` is the generator's ``__qualname__`` (``Failures._failures``).
    ``event_counts[kind]`` keeps ``[events of all processes of that kind, most events of
    one process]``. The wrapper forwards sends, thrown exceptions (simpy interrupts) and
    the return value unchanged, so the run is event for event the same as without it.
    """

    def __init__(self, ceiling: float, on_storm: Callable[[str, int, Generator[Any, Any, Any]], None]):
        super().__init__()
        self.ceiling = ceiling
        self.event_counts: dict[str, list[int]] = {}
        self._on_storm = on_storm

    def process(self, generator):
        kind = getattr(generator, "__qualname__", type(generator).__name__)
        cell = self.event_counts.setdefault(kind, [0, 0])
        return super().process(self._counted(generator, kind, cell))

    def skip_to(self, t: float) -> None:
        """Move the clock forward to ``t`` with no event in between: the sampler's quiet
        stretches (issue 19), where a wake-up per sample would only advance the clock. The
        queue's next event must lie after ``t``, so no event is skipped and the order of
        every event (ties at one instant included) is what it would have been."""
        if not self.now <= t < self.peek():
            raise ValueError(f"skip_to({t!r}): the clock is at {self.now!r} and the next event at {self.peek()!r}")
        self._now = t

    def _queue_key(self, event: simpy.Event | None) -> tuple | None:
        """``(priority, event id)`` of ``event`` in the queue, the order simpy processes
        events of one instant by; None when it is not queued (or None). A scan of the
        queue: for the rare moment a job parks (issue 19)."""
        if event is None:
            return None
        return next((entry[1:3] for entry in self._queue if entry[3] is event), None)

    def queued_after(self, event: simpy.Event | None, t: float) -> bool:
        """Whether an event is queued for time ``t`` that will be processed after ``event``
        (scheduled after it at the same priority, or at a later one); True when ``event``
        is not queued (or None)."""
        key = self._queue_key(event)
        return key is None or any(entry[0] == t and entry[1:3] > key for entry in self._queue)

    def queued_before(self, event: simpy.Event | None, t: float) -> bool:
        """Whether an event is queued for time ``t`` that will be processed before ``event``
        (scheduled before it at the same priority, or at an earlier one); True when
        ``event`` is not queued (or None)."""
        key = self._queue_key(event)
        return key is None or any(entry[0] == t and entry[1:3] < key for entry in self._queue)

    def _counted(self, gen: Generator[Any, Any, Any], kind: str, cell: list[int]):
        ceiling, send, throw = self.ceiling, gen.send, gen.throw
        n = 0
        try:
            event = next(gen)
        except StopIteration as stop:
            return stop.value
        while True:
            n += 1
            cell[0] += 1
            if n > cell[1]:
                cell[1] = n
                if n > ceiling:
                    self._on_storm(kind, n, gen)
            error: BaseException | None = None
            try:
                value = yield event
            except GeneratorExit:
                gen.close()
                raise
            except BaseException as exc:    # a simpy Interrupt or a failed event: forward it
                error = exc
            try:
                event = send(value) if error is None else throw(error)
            except StopIteration as stop:
                return stop.value


class Engine:
    """Builds the plant and the components from a scenario, runs, hands back Results."""

    def __init__(self, scenario: Scenario, progress: Callable[[float], None] | None = None):
        self.s = scenario
        self.plant: Plant = build_plant(scenario)
        self.progress = progress
        sim = scenario.simulation
        self.horizon_s = sim.duration_days * DAY
        self.dt_s = sim.sample_interval_s
        self.n_samples = int(math.ceil(self.horizon_s / self.dt_s))
        streams = np.random.SeedSequence(sim.seed).spawn(len(RNG_STREAMS))
        self.rng = {name: np.random.default_rng(ss) for name, ss in zip(RNG_STREAMS, streams, strict=True)}
        self.env = CountingEnvironment(self.process_event_ceiling(), self._event_storm)
        self.events: list[tuple[float, str, str, str]] = []
        p, node = self.plant, self.plant.node
        self.state = ClusterState(node_rack=p.node_rack, n_feeds=len(scenario.site.power.feeds),
                                  n_sus=int(p.node_su.max()) + 1,
                                  psu_capacity_w=float(node.psu_count * node.psu_rating_w))
        f = scenario.fabric
        hall_nodes = np.bincount(p.rack_hall[p.node_rack], minlength=len(scenario.site.halls))
        self.graph = fabric.build_scenario_fabric(f, hall_nodes.tolist(), p.gpus_per_node)
        p.fabric = self.graph
        # components, in the order their processes start (never reorder: event ties at the
        # same instant resolve in registration order)
        self.power = PowerChain(self)
        self.swing = Swing(self)
        self.thermal = HallThermal(self)
        self.failures = Failures(self)
        self.jobs = Jobs(self)
        self.scheduler = Scheduler(self)
        self.ramp = Ramp(self)
        self.grid = Grid(self)
        self.maintenance = Maintenance(self)
        self.sampler = Sampler(self)
        self.components: list[Component] = [self.ramp, self.failures, self.grid, self.thermal,
                                            self.maintenance, self.jobs, self.power, self.swing,
                                            self.scheduler, self.sampler]
        # the dense series, written a row per sample, on small pages (see _small_pages)
        with _small_pages():
            self.recorder = Recorder(self.n_samples, {"rack": p.n_racks, "rpp": len(p.rpp_limit_w),
                                                      "feed": len(scenario.site.power.feeds), "job": len(self.jobs),
                                                      "cooling_unit": self.thermal.n_units,
                                                      "hall": len(scenario.site.halls)},
                                     rack_series=scenario.outputs.rack_series, rack_hall=p.rack_hall)
        self._started = False

    # ------------------------------------------------------------------ shared services
    def log(self, kind: str, target: str, detail: str = "") -> None:
        """Append an event to the run's event table (time [s], kind, target, detail)."""
        self.events.append((self.env.now, kind, target, detail))

    def process_event_ceiling(self) -> float:
        """Events one process may handle in this run [-].

        ``TWIN_MAX_PROCESS_EVENTS`` if set; otherwise the whole run's event budget of
        validation (:data:`twin.scenario.bounds.MAX_EVENTS` events, or
        :data:`~twin.scenario.bounds.MAX_EVENTS_PER_NODE_DAY` per node and simulated day
        on a larger site): no single process may do more work than validation grants the
        whole run, so the guard only fires where the up-front estimate was wrong.
        """
        from twin.scenario.bounds import MAX_EVENTS, MAX_EVENTS_PER_NODE_DAY

        env = os.environ.get(MAX_PROCESS_EVENTS_ENV)
        if env:
            return float(env)
        return max(float(MAX_EVENTS), MAX_EVENTS_PER_NODE_DAY * self.plant.n_nodes * self.horizon_s / DAY)

    def _event_storm(self, kind: str, count: int, gen: Generator[Any, Any, Any]) -> None:
        """Stop the run: the process ``gen`` of ``kind`` (``Class._method``) passed the
        ceiling. Raises :class:`EventStormError` naming the scenario parameters that drive
        that process (for a job's life cycle, that job's checkpoint settings)."""
        from twin.scenario.bounds import _value_at

        drivers = STORM_DRIVERS.get(kind.split(".")[0], ())
        note = ""
        frame = getattr(gen, "gi_frame", None)
        job = frame.f_locals.get("job") if frame is not None and kind == "Jobs._lifecycle" else None
        if job is not None:
            j = job.index
            prefix = f"workload.jobs.{j}" if j < self.jobs.n_fixed else "workload.stream"
            drivers = (f"{prefix}.checkpoint_interval_s", f"{prefix}.checkpoint_bytes", f"{prefix}.tokens_target",
                       "failures.rate_scale") if j < self.jobs.n_fixed else (prefix, "failures.rate_scale")
            note = f"; job {job.spec.name} checkpoints every {self.jobs.checkpoint_interval_s(job):.3g} s"
        path = drivers[0] if drivers else ""
        shown = ", ".join(f"{d} = {_value_at(self.s, d)!r}" for d in drivers[1:] if d != "workload.jobs")
        raise EventStormError([Problem(
            f"scenario {self.s.name}", path, _value_at(self.s, path) if path else kind,
            f"an event rate the run can process: process {kind} handled {count:,} events by day "
            f"{self.env.now / DAY:.3g} of {self.horizon_s / DAY:g}, over the ceiling of "
            f"{self.env.ceiling:,.0f} events per process (an event storm the up-front estimate missed){note}"
            + (f"; driven by {path}" + (f" and {shown}" if shown else "") if drivers else "")
            + f"; {MAX_PROCESS_EVENTS_ENV} sets the ceiling")])

    def node_name(self, n: int) -> str:
        r = self.plant.node_rack[n]
        return f"{self.plant.rack_names[r]}/n{n - self.plant.rack_first_node[r]}"

    # ------------------------------------------------------------------ run
    def start(self) -> None:
        """Register every component's processes (once); ``env.run(until=...)`` can then
        step the twin."""
        if self._started:
            return
        self._started = True
        for c in self.components:
            c.start()

    def run(self):
        """Run to the horizon and return :class:`twin.results.Results`."""
        from twin.results import build_results

        # the objects built so far (plant, catalogs, scenario, caches) live through the run:
        # kept out of the collector's scans while it runs (a full collection of them cost
        # ~0.3 s of Blue Vela's nine months), handed back after (unless someone froze first);
        # frozen before the processes start, whose ~1,500 job generators would otherwise set
        # off one more full collection (~0.07 s)
        freeze = gc.get_freeze_count() == 0
        if freeze:
            gc.freeze()
        try:
            self.start()
            self.env.run(until=self.n_samples * self.dt_s)
        finally:
            if freeze:
                gc.unfreeze()
        for job in self.jobs:
            self.jobs.advance(job)
        for c in self.components:
            c.finish(self.recorder)
        if self.progress is not None:
            self.progress(1.0)
        return build_results(self.s, self.plant, self.record())

    def record(self) -> RunRecord:
        """What the run produced, through the recorder's API (no engine internals)."""
        jobs = self.jobs.job_records()
        return RunRecord(dt_s=self.dt_s, horizon_s=self.horizon_s, series=self.recorder.series, jobs=jobs,
                         events=self.events, repair_times_s=self.failures.repair_times_s,
                         open_repair_ages_s=[self.env.now - t0 for t0 in self.failures.open_repairs.values()],
                         throttled_node_s=self.sampler.throttled_node_s,
                         peak_swing_w=dict(self.jobs.peak_swing_w),
                         event_counts=dict(Counter(kind for _, kind, _, _ in self.events)),
                         rack_agg=self.recorder.agg)
