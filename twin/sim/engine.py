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
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import simpy

from twin import fabric
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
        self.env = simpy.Environment()
        self.events: list[tuple[float, str, str, str]] = []
        p, node = self.plant, self.plant.node
        self.state = ClusterState(node_rack=p.node_rack, n_feeds=len(scenario.site.power.feeds),
                                  n_sus=int(p.node_su.max()) + 1,
                                  psu_capacity_w=float(node.psu_count * node.psu_rating_w))
        f = scenario.fabric
        hall_nodes = np.bincount(p.rack_hall[p.node_rack], minlength=len(scenario.site.halls))
        self.graph = fabric.build_scenario_fabric(f, hall_nodes, p.gpus_per_node)
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

        self.start()
        self.env.run(until=self.n_samples * self.dt_s)
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
