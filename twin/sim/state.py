"""The cluster's dynamic state, shared by the engine's components.

One :class:`ClusterState` holds every flag and per-node quantity the components read and
write, as named numpy arrays (index ``r`` for racks, ``n`` for nodes). What can be derived
is a property, never a second copy kept in sync by hand: whether a rack has power, whether
a node is up, free or schedulable, and the phase of a node without a job.

The derived masks are maintained incrementally (issue 19): every state array is a
:class:`TrackedArray`, a numpy array that logs each write (the field and the indices
written) to its state. A derived mask is cached with the position in that log at which it
was computed; on the next read, if only node-level inputs were written at a few indices
since, only those nodes are re-evaluated (on a copy: an array handed out never changes
under its holder); a write to a rack-level input, or to many nodes, re-evaluates it whole.
Between events nothing is written, so a sample reads every mask from the cache. The
result is element for element the one the formula gives on the whole array
(``tests/sim/test_state_cache.py`` checks it against a fresh evaluation after random
writes). Derived arrays are handed out read-only.

Arrays that read rack-level fields only (``rack_on``, ``rack_state``, and each node's copy of
its rack's state, which the node masks read elementwise instead of gathering it again) are
cached by the count of writes to those fields, which never ages out of a log: at a million
GPUs the racks change a few times a run while the nodes are written ~5,000 times a day.
``node_schedulable`` is evaluated from the fields, not through ``node_in_service``, so the
scheduler's read after every release patches one array, not three (issue 19;
``tests/sim/test_state_speed.py``); it is patched write by write, and a write of one integer
to ``node_job`` is logged with what it says (held, or free where in service), so that the
nodes a job takes are set without reading a field (``tests/sim/test_h2_schedulable.py``).

Writes to the fields the derived arrays read are also counted apart (:meth:`mask_version`):
a read after writes of other fields only (the sampler writes inlets, clocks and acceleration
at every evaluation) returns the cached array without reading the log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from operator import itemgetter
from typing import ClassVar

import numpy as np

from twin.phases import Phase
from twin.power.node import _frozen  # nothing can write the array (the write log's rule)


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


#: phase and rack-state codes as plain ints for the derived arrays (an enum member costs
#: an attribute lookup and a conversion in every np.where; the values are the same)
_IDLE, _BURN_IN, _OFF = int(Phase.IDLE), int(Phase.BURN_IN), int(Phase.OFF)
#: ... and as int8 scalars, so that np.where builds the int8 result directly (no int64 pass)
_IDLE8, _BURN_IN8, _OFF8 = np.int8(_IDLE), np.int8(_BURN_IN), np.int8(_OFF)
_RS = {k: np.int8(int(v)) for k, v in RackState.__members__.items()}
#: rack-level fields the derived masks read (a write to one re-evaluates a mask whole)
_RACK_ON_DEPS = ("rack_powered", "rack_tripped", "rack_unfed", "rack_thermal_off")
_RACK_STATE_DEPS = _RACK_ON_DEPS + ("rack_ready", "rack_delivered")
#: every field a write to which is logged (whole assignments and in-place writes)
TRACKED_FIELDS = ("rack_delivered", "rack_powered", "rack_tripped", "rack_unfed", "rack_thermal_off",
                  "rack_ready", "rack_on_since", "rack_inlet_c", "node_healthy", "node_repairing",
                  "node_grid_down", "node_job", "node_job_phase", "node_clock", "node_accel", "feed_up",
                  "brake_clock", "psu_capacity_w", "su_degraded")
_TRACKED = frozenset(TRACKED_FIELDS)
#: the rack-level fields a derived array reads (their writes move ``_rack_ver``)
_RACK_DEP_SET = frozenset(_RACK_STATE_DEPS)
#: every field any derived array reads (their writes move ``_mask_ver``): the sampler's own
#: writes (inlets, clocks, acceleration) and the power and grid figures are not among them
_MASK_DEP_SET = _RACK_DEP_SET | frozenset(("node_grid_down", "node_healthy", "node_job", "node_job_phase"))
#: the fields the sampler's physics key reads directly (besides ``node_phase`` and ``rack_on``)
_PHYSICS_FIELDS = ("rack_inlet_c", "node_clock", "brake_clock", "psu_capacity_w")
#: log entries kept before the oldest half is dropped (a cache older than the log re-evaluates
#: whole); the indices the log holds are also bounded, to half the node count (a mask that many
#: writes behind is re-evaluated whole anyway), so the log never holds more than ~N indices
_LOG_MAX = 8192
#: above this fraction of the nodes written, a mask is re-evaluated whole
_PARTIAL_MAX = 0.25
#: "no node written since": one shared read-only empty index (no allocation per read)
_NO_NODES = np.empty(0, np.intp)
_NO_NODES.flags.writeable = False
#: field names -> the getter of their write counts (:meth:`ClusterState.versions`)
_GETTERS: dict[tuple[str, ...], Callable] = {}


def _pick_int8(cond: np.ndarray, a, b) -> np.ndarray:
    """``np.where(cond, a, b)`` for int8 codes (arrays or ``np.int8`` scalars) as
    ``b + (a - b) * cond`` [int8]: exact (an intermediate may wrap modulo 256, the result is
    ``a`` or ``b``) and several times faster than ``np.where`` on a mixed condition."""
    return b + (a - b) * cond


class TrackedArray(np.ndarray):
    """A state array that reports every write to its :class:`ClusterState`.

    ``a[key] = v`` logs ``(field, indices)``; an in-place operator (``a |= m``), or a write
    through a view of the array, logs ``(field, None)`` (everything may have changed).
    Arrays computed from it (``~a``, ``a & b``) are plain numpy arrays; a copy or a fancy
    index result is a TrackedArray that belongs to no state.
    """

    _owner: ClusterState | None = None
    _field: str = ""
    _view: bool = False

    def __array_finalize__(self, obj) -> None:
        owner = getattr(obj, "_owner", None)
        if owner is not None and self.base is not None and (self.base is obj or self.base is obj.base):
            self._owner, self._field, self._view = owner, obj._field, True
        else:
            self._owner = None

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        if arr is self:
            return self
        out = arr.view(np.ndarray)
        return out[()] if return_scalar else out

    def __setitem__(self, key, value) -> None:
        np.ndarray.__setitem__(self, key, value)
        owner = self._owner
        if owner is not None:
            owner._wrote(self._field, None if self._view else key, value)


def _inplace(name: str):
    op = getattr(np.ndarray, name)

    def method(self, other):
        out = op(self, other)
        if self._owner is not None:
            self._owner._wrote(self._field, None)
        return out
    method.__name__ = name
    return method


for _name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
              "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__"):
    setattr(TrackedArray, _name, _inplace(_name))


def _node_indices(key) -> np.ndarray | None:
    """The indices a 1-D write ``a[key] = v`` with an index array, a boolean mask or a list
    touched, or None when they are not known cheaply (a slice, a tuple, a boolean scalar): the
    write then counts as a write of everything. (One integer is logged as such by the caller.)"""
    if type(key) is not np.ndarray:
        if not isinstance(key, list):
            return None
        key = np.asarray(key)
    if key.ndim == 1:
        kind = key.dtype.kind               # (np.issubdtype costs more than the write)
        if kind == "b":
            return np.flatnonzero(key)
        if kind in "iu":
            return key.astype(np.intp)      # a copy: the caller may reuse its index array
    return None


def _size(key: np.ndarray | int | None) -> int:
    """Nodes a log entry's key names: an index array's length, 1 for an int, 0 for None."""
    return 0 if key is None else 1 if isinstance(key, int) else key.size


#: what a log entry's write says about ``node_schedulable`` at its nodes: held by a job (one
#: job index >= 0 written to ``node_job``), freed (one value < 0), nothing (evaluate the rule),
#: or a write to their health or grid state (their in-service flags change)
_HELD, _FREED, _RULE, _SERVICE = 1, -1, 0, 2


def _job_hint(value) -> int:
    """What a write of ``value`` to ``node_job`` says about the nodes written, whatever the
    other fields hold: ``_HELD`` one job index >= 0 (not schedulable), ``_FREED`` one value
    < 0 (schedulable where in service), ``_RULE`` anything else (an array of values: evaluate
    the rule). Only integer scalars count (a float scalar would be truncated on its way in)."""
    if type(value) is int or isinstance(value, np.integer):
        return _HELD if value >= 0 else _FREED
    return _RULE


#: fields whose writes ``node_schedulable`` patches at the nodes written, and the rack-level
#: ones a write to which re-evaluates it whole
_SCHED_NODE_DEPS = frozenset(("node_grid_down", "node_healthy", "node_job"))
_SCHED_RACK_DEPS = frozenset(_RACK_ON_DEPS + ("rack_ready",))


@dataclass(eq=False)
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
    # the write log and caches, per instance (set in __post_init__ past the tracking; declared
    # ClassVar so that they are no dataclass fields)
    _log: ClassVar[list[tuple[str, np.ndarray | int | None, int]]]
    _log_base: ClassVar[int]
    _held: ClassVar[list[int]]
    _held_max: ClassVar[float]
    _rack_ver: ClassVar[list[int]]
    _mask_ver: ClassVar[list[int]]
    # name -> (array, log position, mask version) for node masks, (array, rack version) for rack ones
    _cache: ClassVar[dict[str, tuple]]
    _ver: ClassVar[dict[str, int]]
    _bytes: ClassVar[dict]
    _plain: ClassVar[dict[str, np.ndarray]]
    _in_svc: ClassVar[np.ndarray]        # up and burned in, as of node_schedulable's last read

    def __post_init__(self) -> None:
        # plain ndarray views of the tracked fields, for the derived masks only (numpy ops on
        # a TrackedArray pay its subclass hooks; a view shares the memory, so every write is
        # seen, and it is never handed out)
        object.__setattr__(self, "_plain", {})
        object.__setattr__(self, "_log", [])
        object.__setattr__(self, "_log_base", 0)
        object.__setattr__(self, "_held", [0])            # indices the log holds
        object.__setattr__(self, "_held_max", _PARTIAL_MAX * 2 * len(self.node_rack) + 64)
        object.__setattr__(self, "_rack_ver", [0])        # writes to the fields of _RACK_DEP_SET
        object.__setattr__(self, "_mask_ver", [0])        # writes to the fields of _MASK_DEP_SET
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_ver", dict.fromkeys(TRACKED_FIELDS, 0))
        object.__setattr__(self, "_bytes", {})
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
        self.psu_capacity_w = self.psu_capacity_w
        self.brake_clock = self.brake_clock

    # ---------------------------------------------------------------- write log
    def __setattr__(self, name: str, value) -> None:
        if name in _TRACKED and "_log" in self.__dict__:
            if isinstance(value, np.ndarray):
                value = np.array(value) if isinstance(value, TrackedArray) else value
                value = value.view(TrackedArray)
                value._owner, value._field, value._view = self, name, False
                self._plain[name] = value.view(np.ndarray)
            else:
                self._plain.pop(name, None)
            object.__setattr__(self, name, value)
            self._wrote(name, None)
        else:
            object.__setattr__(self, name, value)

    def _wrote(self, name: str, key, value=None) -> None:
        """Log a write of ``value`` at ``key`` (None: the whole field) to the field ``name``
        (with what a write to ``node_job`` says about its nodes, :func:`_job_hint`).

        A log entry holds the nodes written as an index array, or as an ``int`` for one node
        (no array built: failures and repairs write one node at a time); a field no derived
        array reads is logged without its nodes (the entry only counts the write: nothing asks
        which nodes it touched). Speed only (issue 19): ~1.9 million writes a year at a million
        GPUs."""
        self._ver[name] += 1
        log = self._log
        if name not in _MASK_DEP_SET:
            log.append((name, None, 0))
            if len(log) > _LOG_MAX:
                self._trim()
            return
        self._mask_ver[0] += 1
        if name in _RACK_DEP_SET:
            self._rack_ver[0] += 1
        idx: np.ndarray | int | None
        if type(key) is np.ndarray and key.ndim == 1 and key.dtype.kind in "iu":
            # (the commonest write, a job's nodes, inline) a copy, the caller may reuse its
            # index array; not when nobody can write it (:func:`_frozen`: the scheduler hands
            # out each placement read-only, and a job's phases are written at those nodes)
            idx = key if key.dtype == np.intp and _frozen(key) else key.astype(np.intp)
            n = idx.size
        elif key is None:
            idx, n = None, 0
        elif type(key) is int or isinstance(key, np.integer):
            idx, n = int(key), 1
        else:
            idx = _node_indices(key)
            n = _size(idx)
        log.append((name, idx, _job_hint(value) if name == "node_job" and idx is not None else 0))
        held = self._held
        held[0] += n
        if len(log) > _LOG_MAX or held[0] > self._held_max:
            self._trim()

    def _trim(self) -> None:
        """Drop the oldest half of the write log (a cache older than what is left re-evaluates
        whole), and their indices from the count the log holds."""
        log = self._log
        drop = len(log) // 2
        self._held[0] -= sum(_size(k) for _, k, _ in log[:drop])
        del log[:drop]
        object.__setattr__(self, "_log_base", self._log_base + drop)

    def write_count(self) -> int:
        """Writes to any field so far (equal counts: nothing was written in between)."""
        return self._log_base + len(self._log)

    def version(self, name: str) -> int:
        """How many writes the field ``name`` has had (changes whenever it may have changed)."""
        return self._ver[name]

    def versions(self, names: tuple[str, ...]) -> tuple[int, ...]:
        """:meth:`version` of each field of ``names`` [tuple], in one look-up (a caller keying a
        cache on several fields at every sample; issue 14)."""
        get = _GETTERS.get(names)
        if get is None:
            get = _GETTERS[names] = (lambda ver: (ver[names[0]],)) if len(names) == 1 else itemgetter(*names)
        return get(self._ver)

    def mask_version(self) -> int:
        """Writes so far to the fields the derived arrays read (equal counts: every derived
        array, ``node_phase`` and ``rack_on`` included, is the same object as before)."""
        return self._mask_ver[0]

    def _derived(self, name: str, rack_deps: tuple[str, ...], node_deps: tuple[str, ...],
                 compute: Callable[[np.ndarray | None], np.ndarray]) -> np.ndarray:
        """The derived array ``name``: cached; re-evaluated at the written nodes only when the
        writes since were to ``node_deps`` at known indices; whole otherwise.
        ``compute(idx)`` evaluates it at the nodes ``idx`` (None: every node)."""
        seq = self._log_base + len(self._log)
        ent = self._cache.get(name)
        if ent is not None and ent[1] == seq:
            return ent[0]
        mver = self._mask_ver[0]
        if ent is not None and ent[2] == mver:
            # written since, but none of the fields a derived array reads: the same array,
            # without reading the log (speed only, issue 19; the sampler's own writes of
            # inlets, clocks and acceleration come between most reads)
            self._cache[name] = (ent[0], seq, mver)
            return ent[0]
        idx = self._written(ent[1], rack_deps, node_deps) if ent is not None else None
        if ent is None or idx is None:
            val = np.asarray(compute(None))
        elif idx.size == 0:
            # none of its inputs written since: the same (already read-only) array, moved up
            # to this log position (speed only, issue 19: no flag write)
            self._cache[name] = (ent[0], seq, mver)
            return ent[0]
        else:
            val = ent[0].copy()
            val[idx] = compute(idx)
        val.flags.writeable = False
        self._cache[name] = (val, seq, mver)
        return val

    def _written(self, since: int, rack_deps: tuple[str, ...], node_deps: tuple[str, ...]) -> np.ndarray | None:
        """Nodes of ``node_deps`` written since log position ``since`` (empty: none), or
        None when a mask must be re-evaluated whole."""
        if since < self._log_base:
            return None
        parts: list = []
        for name, key, _ in self._log[since - self._log_base:]:
            if name in node_deps:
                if key is None:
                    return None
                parts.append((key,) if type(key) is int else key)
            elif name in rack_deps:
                return None
        if not parts:
            return _NO_NODES
        idx = np.concatenate(parts) if len(parts) > 1 else np.asarray(parts[0], np.intp)
        return None if idx.size > _PARTIAL_MAX * len(self.node_rack) else idx

    # ---------------------------------------------------------------- derived
    def _rack_derived(self, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """A derived array that reads rack-level fields only (of ``_RACK_STATE_DEPS``):
        cached with the count of writes to those fields, re-evaluated whole when one of them
        was written (racks change rarely: the ramp, breakers, feeds). Unlike the log, the
        count never ages out, so a cold cache is not re-evaluated for nothing."""
        key = self._rack_ver[0]
        ent = self._cache.get(name)
        if ent is not None and ent[1] == key:
            return ent[0]
        val = np.asarray(compute())
        val.flags.writeable = False
        self._cache[name] = (val, key)
        return val

    @property
    def rack_on(self) -> np.ndarray:
        """Racks with power: admitted, breaker closed, fed, not shut down by their own
        inlet protection [bool (R,)]."""
        f = self._plain
        return self._rack_derived("rack_on", lambda: (
            f["rack_powered"] & ~f["rack_tripped"] & ~f["rack_unfed"] & ~f["rack_thermal_off"]))

    @property
    def _node_rack_on(self) -> np.ndarray:
        """``rack_on`` of each node's rack [bool (N,)]: one gather per change of a rack,
        shared by the node masks (which are then elementwise)."""
        return self._rack_derived("_node_rack_on", lambda: self.rack_on[self.node_rack])

    @property
    def _node_rack_ok(self) -> np.ndarray:
        """Each node's rack is on and burned in [bool (N,)]."""
        return self._rack_derived("_node_rack_ok", lambda: (self.rack_on & self._plain["rack_ready"])[self.node_rack])

    @property
    def _node_free_phase(self) -> np.ndarray:
        """The phase of each node when it is up and free: IDLE where its rack is burned in,
        BURN_IN elsewhere [int8 (N,)] (one evaluation per change of a rack, read by
        ``node_phase`` at the nodes it refreshes)."""
        return self._rack_derived("_node_free_phase", lambda: _pick_int8(self._node_rack_ok, _IDLE8, _BURN_IN8))

    @property
    def node_up(self) -> np.ndarray:
        """Nodes that are powered, not dropped by the grid and healthy [bool (N,)]."""
        return self._derived("node_up", _RACK_ON_DEPS, ("node_grid_down", "node_healthy"),
                             lambda ix: self._up_at(slice(None) if ix is None else ix))

    def _up_at(self, ix):
        """``node_up`` at the nodes ``ix`` (an index, indices or a slice), from the fields."""
        f = self._plain
        return self._node_rack_on[ix] & ~f["node_grid_down"][ix] & f["node_healthy"][ix]

    def node_up_at(self, n: int) -> bool:
        """``node_up[n]`` of one node, without bringing the mask up to date: the failure
        process asks after each failure it draws, when the last one has just written
        ``node_healthy`` (at a million GPUs a copy of 131,072 flags each time; issue 19)."""
        return bool(self._up_at(n))

    @property
    def node_powered(self) -> np.ndarray:
        """Nodes with power, healthy or not: their rack is on and the grid did not drop them
        [bool (N,)]."""
        f = self._plain

        def powered(ix):
            on = self._node_rack_on
            if ix is None:
                return on & ~f["node_grid_down"]
            return on[ix] & ~f["node_grid_down"][ix]
        return self._derived("node_powered", _RACK_ON_DEPS, ("node_grid_down",), powered)

    @property
    def node_busy(self) -> np.ndarray:
        """Nodes held by a job (running it or as a hot spare) [bool (N,)]."""
        return self._derived("node_busy", (), ("node_job",),
                             lambda ix: self._plain["node_job"] >= 0 if ix is None else self._plain["node_job"][ix] >= 0)

    @property
    def node_in_service(self) -> np.ndarray:
        """Up and burned in, free or not [bool (N,)]."""
        f = self._plain

        def ready(ix):
            ok = self._node_rack_ok
            if ix is None:
                return ok & ~f["node_grid_down"] & f["node_healthy"]
            return ok[ix] & ~f["node_grid_down"][ix] & f["node_healthy"][ix]
        return self._derived("node_in_service", _RACK_ON_DEPS + ("rack_ready",),
                             ("node_grid_down", "node_healthy"), ready)

    @property
    def node_schedulable(self) -> np.ndarray:
        """Up, burned in and free [bool (N,)].

        The scheduler reads this mask at every placement (at a million GPUs each restart of a
        2,048-node job after a failure, ~170,000 a year), between its own write of the last
        job's nodes and the release of this job's: it is patched at the nodes written since,
        entry by entry in the order of the writes, each entry's nodes given the value the rule
        has on the fields as they are now. A node's last entry decides it, and every entry's
        value is right when no later write to ``node_job`` touches its nodes: a write of one
        job index >= 0 makes them not free (no field read), a write of one value < 0 makes
        them free where in service (the job term is known); any other write evaluates the rule
        (issue 19; ``tests/sim/test_h2_schedulable.py``). "In service" (up and burned in) is
        kept as private flags patched alongside, so that freed nodes cost one gather, not
        three. Evaluated from the fields, not through ``node_in_service``: each derived layer
        between would copy its own array."""
        seq = self._log_base + len(self._log)
        ent = self._cache.get("node_schedulable")
        if ent is not None and ent[1] == seq:
            return ent[0]
        mver = self._mask_ver[0]
        if ent is not None and ent[2] == mver:      # none of its inputs written (see _derived)
            self._cache["node_schedulable"] = (ent[0], seq, mver)
            return ent[0]
        writes = self._schedulable_writes(ent[1]) if ent is not None else None
        if ent is None or writes is None:
            val = self._schedulable_whole()
        elif not writes:
            self._cache["node_schedulable"] = (ent[0], seq, mver)
            return ent[0]
        else:
            val = ent[0].copy()
            self._patch_schedulable(val, writes)
        val.flags.writeable = False
        self._cache["node_schedulable"] = (val, seq, mver)
        return val

    def _schedulable_whole(self) -> np.ndarray:
        """``node_schedulable`` evaluated whole, from the fields; keeps the in-service flags
        it is built on (``_in_svc``: private, patched with the mask, never handed out)."""
        f = self._plain
        ins = self._node_rack_ok & ~f["node_grid_down"] & f["node_healthy"]
        object.__setattr__(self, "_in_svc", ins)
        return ins & (f["node_job"] < 0)

    def _schedulable_writes(self, since: int) -> list[tuple[np.ndarray | int, int]] | None:
        """The writes to ``node_schedulable``'s node inputs since log position ``since``, in
        order, as (nodes, kind): a write to ``node_job`` with its hint (:func:`_job_hint`), or
        ``_SERVICE`` for one to ``node_healthy`` or ``node_grid_down``; None when it must be
        re-evaluated whole (a rack input or a whole field written, the log aged out, or many
        nodes written)."""
        if since < self._log_base:
            return None
        out = []
        total = 0
        for name, key, hint in self._log[since - self._log_base:]:
            if name in _SCHED_NODE_DEPS:
                if key is None:
                    return None
                out.append((key, hint if name == "node_job" else _SERVICE))
                total += _size(key)
            elif name in _SCHED_RACK_DEPS:
                return None
        return None if total > _PARTIAL_MAX * len(self.node_rack) else out

    def _patch_schedulable(self, val: np.ndarray, writes: list[tuple[np.ndarray | int, int]]) -> None:
        """Bring ``val`` (the last mask's copy) and the in-service flags up to date with
        ``writes``, entry by entry in order. A node's flag changes only through an entry of
        its health or grid state, which sets it from the fields as they are now: so at any
        entry the flag is the current one unless a later such entry re-evaluates the node."""
        f = self._plain
        ok, down, healthy, job = self._node_rack_ok, f["node_grid_down"], f["node_healthy"], f["node_job"]
        ins = self._in_svc
        hints = job.dtype.kind == "i"              # a job index >= 0 is stored as such
        for key, kind in writes:
            if type(key) is int:                   # one node: scalars (no 1-element arrays)
                if kind == _SERVICE:
                    ins[key] = ok[key] and not down[key] and healthy[key]
                val[key] = ins[key] and job[key] < 0
            elif kind == _SERVICE:
                now = ok[key] & ~down[key] & healthy[key]
                ins[key] = now
                val[key] = now & (job[key] < 0)
            elif kind == _HELD and hints:
                val[key] = False
            elif kind == _FREED and hints:
                val[key] = ins[key]
            else:
                val[key] = ins[key] & (job[key] < 0)

    @property
    def node_phase(self) -> np.ndarray:
        """Phase of every node [Phase codes, int8 (N,)]: a job's phase on its nodes that are
        up; IDLE or BURN_IN on free nodes that are up; OFF on nodes that are down."""
        f = self._plain

        def phase(ix):
            # a node that is up has its rack on, so there "rack on and burned in" is "burned in"
            sel = slice(None) if ix is None else ix
            busy = self.node_busy[sel]
            free_phase = self._node_free_phase[sel]
            ph = _pick_int8(busy, f["node_job_phase"][sel].astype(np.int8, copy=False), free_phase)
            return _pick_int8(self.node_up[sel], ph, _OFF8)
        return self._derived("node_phase", _RACK_ON_DEPS + ("rack_ready",),
                             ("node_grid_down", "node_healthy", "node_job", "node_job_phase"), phase)

    @property
    def rack_state(self) -> np.ndarray:
        """Rack state codes [RackState, int8 (R,)]."""
        f = self._plain

        def state():
            powered = f["rack_powered"]
            faulted = (f["rack_tripped"] | f["rack_unfed"] | f["rack_thermal_off"]) & powered
            code = _pick_int8(powered, _pick_int8(f["rack_ready"], _RS["IN_SERVICE"], _RS["BURN_IN"]),
                              _pick_int8(f["rack_delivered"], _RS["OFF"], _RS["ABSENT"]))
            return _pick_int8(faulted, _RS["FAULTED"], code)
        return self._rack_derived("rack_state", state)

    def count(self, mask: np.ndarray) -> int:
        """``count_nonzero`` of a derived mask, cached with the mask (masks are cached arrays)."""
        hit = self._bytes.get(("count", id(mask)))
        if hit is not None and hit[0] is mask:
            return hit[1]
        n = int(np.count_nonzero(mask))
        self._bytes[("count", id(mask))] = (mask, n)
        if len(self._bytes) > 64:
            self._bytes.clear()
        return n

    def _key_of(self, name: str, value) -> bytes | float:
        """``value`` (a field or derived array of this state) as bytes, cached with it."""
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            return value
        hit = self._bytes.get(name)
        if hit is not None and hit[0] is value:
            return hit[1]
        b = np.asarray(value).tobytes()
        self._bytes[name] = (value, b)
        return b

    def physics_inputs(self) -> tuple:
        """Everything the sampler's physics reads from the state, as one hashable key.

        Between events the plant sits in a steady state: equal inputs give equal outputs,
        so the sampler reuses its last evaluation when this key has not changed. The bytes
        of an array are cached with the array and its write count, so an unchanged input
        costs no copy.
        """
        seq = self.write_count()
        hit = self._bytes.get("physics_inputs")
        if hit is not None and hit[0] == seq:       # nothing written since: the same key
            return hit[2]
        ver, fields = self._ver, _PHYSICS_FIELDS
        # the write counts of what the key reads (the derived arrays' inputs, and the fields):
        # equal counts, the same key (speed only, issue 19: the sampler's own writes of the
        # acceleration come between most samples)
        vkey = (self._mask_ver[0], *[ver[f] for f in fields])
        if hit is not None and hit[1] == vkey:
            self._bytes["physics_inputs"] = (seq, vkey, hit[2])
            return hit[2]
        key = (self._key_of("node_phase", self.node_phase), self._key_of("rack_on", self.rack_on),
               *[self._field_key(f) for f in fields])
        self._bytes["physics_inputs"] = (seq, vkey, key)
        return key

    def _field_key(self, name: str):
        """A field's value as a hashable key, cached with its write count."""
        value = getattr(self, name)
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            return value
        ver = self._ver[name]
        hit = self._bytes.get(name)
        if hit is not None and hit[0] == ver:
            return hit[1]
        b = np.asarray(value).tobytes()
        self._bytes[name] = (ver, b)
        return b
