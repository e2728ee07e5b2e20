"""The cluster's dynamic state, shared by the engine's components.

One :class:`ClusterState` holds every flag and per-node quantity the components read and
write, as named numpy arrays (index ``r`` for racks, ``n`` for nodes). What can be derived
is a property, never a second copy kept in sync by hand: whether a rack has power, whether
a node is up, free or schedulable, and the phase of a node without a job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from twin.phases import Phase


class RackState(IntEnum):
    """State code of a rack, as written to ``results.nc`` (``rack_state``).

    ABSENT      not delivered yet
    OFF         delivered, not powered (power plan, shed)
    BURN_IN     powered, acceptance tests running
    IN_SERVICE  powered, burned in
    FAULTED     its breaker tripped, its feed was lost, or its servers shut themselves down
                on a hot inlet (no power although admitted)
    """

    ABSENT = -1
    OFF = 0
    BURN_IN = 1
    IN_SERVICE = 2
    FAULTED = 3

    @staticmethod
    def powered(codes: np.ndarray) -> np.ndarray:
        """True where a code means the rack has power (burn-in or in service) [bool]."""
        codes = np.asarray(codes)
        return (codes == RackState.BURN_IN) | (codes == RackState.IN_SERVICE)


@dataclass
class ClusterState:
    """Racks, nodes, feeds and scalable units at the current simulation time.

    Written by: the ramp (delivered, powered, on_since, ready), the power chain (tripped),
    the grid (unfed, feed_up, brake_clock, psu_capacity_w, node_grid_down), failures and
    repair (node_healthy, node_repairing, su_degraded), the scheduler and jobs (node_job,
    node_job_phase), the sampler (rack_inlet_c, node_clock, node_accel).
    """

    node_rack: np.ndarray                      # (N,) rack of each node (static)
    n_feeds: int
    n_sus: int
    psu_capacity_w: float | np.ndarray         # capacity of a node's PSUs with input [W]; (N,) mixed models
    rack_delivered: np.ndarray = field(init=False)
    rack_powered: np.ndarray = field(init=False)     # admitted by the power plan
    rack_tripped: np.ndarray = field(init=False)     # its RPP breaker is open
    rack_unfed: np.ndarray = field(init=False)       # lost its feed(s) and no survivor held
    rack_thermal_off: np.ndarray = field(init=False)  # its servers shut down on a hot inlet
    rack_ready: np.ndarray = field(init=False)       # burn-in passed
    rack_on_since: np.ndarray = field(init=False)    # time it was powered on [s]
    rack_inlet_c: np.ndarray = field(init=False)     # last sampled inlet temperature [degC]
    node_healthy: np.ndarray = field(init=False)
    node_repairing: np.ndarray = field(init=False)   # a repair is under way
    node_grid_down: np.ndarray = field(init=False)   # dropped by a grid event, rebooting
    node_job: np.ndarray = field(init=False)         # job index, -1 when free
    node_job_phase: np.ndarray = field(init=False)   # phase a job set on its nodes
    node_clock: np.ndarray = field(init=False)       # thermal clock fraction [-]
    node_accel: np.ndarray = field(init=False)       # Arrhenius factor on thermal classes [-]
    feed_up: np.ndarray = field(init=False)
    brake_clock: float | np.ndarray = 1.0            # PSU power brake clock fraction [-]; (N,) mixed models
    su_degraded: np.ndarray = field(init=False)      # failed rails per scalable unit

    def __post_init__(self) -> None:
        R = int(self.node_rack.max()) + 1 if len(self.node_rack) else 0
        N = len(self.node_rack)
        self.rack_delivered = np.zeros(R, bool)
        self.rack_powered = np.zeros(R, bool)
        self.rack_tripped = np.zeros(R, bool)
        self.rack_unfed = np.zeros(R, bool)
        self.rack_thermal_off = np.zeros(R, bool)
        self.rack_ready = np.zeros(R, bool)
        self.rack_on_since = np.full(R, np.inf)
        self.rack_inlet_c = np.zeros(R)
        self.node_healthy = np.ones(N, bool)
        self.node_repairing = np.zeros(N, bool)
        self.node_grid_down = np.zeros(N, bool)
        self.node_job = np.full(N, -1, int)
        self.node_job_phase = np.zeros(N, np.int8)
        self.node_clock = np.ones(N)
        self.node_accel = np.ones(N)
        self.feed_up = np.ones(self.n_feeds, bool)
        self.su_degraded = np.zeros(self.n_sus, int)

    # ---------------------------------------------------------------- derived
    @property
    def rack_on(self) -> np.ndarray:
        """Racks with power: admitted, breaker closed, fed, not shut down by their own
        inlet protection [bool (R,)]."""
        return self.rack_powered & ~self.rack_tripped & ~self.rack_unfed & ~self.rack_thermal_off

    @property
    def node_up(self) -> np.ndarray:
        """Nodes that are powered, not dropped by the grid and healthy [bool (N,)]."""
        return self.rack_on[self.node_rack] & ~self.node_grid_down & self.node_healthy

    @property
    def node_busy(self) -> np.ndarray:
        """Nodes held by a job (running it or as a hot spare) [bool (N,)]."""
        return self.node_job >= 0

    @property
    def node_schedulable(self) -> np.ndarray:
        """Up, burned in and free [bool (N,)]."""
        return self.node_up & self.rack_ready[self.node_rack] & (self.node_job < 0)

    @property
    def node_phase(self) -> np.ndarray:
        """Phase of every node [Phase codes, int8 (N,)]: a job's phase on its nodes that are
        up; IDLE or BURN_IN on free nodes that are up; OFF on nodes that are down."""
        up = self.node_up
        free_phase = np.where(self.rack_ready[self.node_rack], Phase.IDLE, Phase.BURN_IN)
        phase = np.where(self.node_job >= 0, self.node_job_phase, free_phase)
        return np.where(up, phase, Phase.OFF).astype(np.int8)

    @property
    def rack_state(self) -> np.ndarray:
        """Rack state codes [RackState, int8 (R,)]."""
        faulted = (self.rack_tripped | self.rack_unfed | self.rack_thermal_off) & self.rack_powered
        code = np.where(self.rack_powered, np.where(self.rack_ready, RackState.IN_SERVICE, RackState.BURN_IN),
                        np.where(self.rack_delivered, RackState.OFF, RackState.ABSENT))
        return np.where(faulted, RackState.FAULTED, code).astype(np.int8)

    def physics_inputs(self) -> tuple:
        """Everything the sampler's physics reads from the state, as one hashable key.

        Between events the plant sits in a steady state: equal inputs give equal outputs,
        so the sampler reuses its last evaluation when this key has not changed.
        """
        return (self.node_phase.tobytes(), self.rack_on.tobytes(), self.rack_inlet_c.tobytes(),
                self.node_clock.tobytes(), _hashable(self.brake_clock), _hashable(self.psu_capacity_w))


def _hashable(value):
    """A float as it is; a per-node array (racks of several node models) as its bytes."""
    return value if np.ndim(value) == 0 else np.asarray(value).tobytes()
