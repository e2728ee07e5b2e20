"""The component protocol of the engine.

A component owns one concern of the twin (the ramp, the power chain, the hall thermal
model, scheduling, training jobs, failures and repair, the grid, the recorder). It

- **builds** what it needs from the scenario and the plant in ``__init__``;
- **starts** its simpy processes: :meth:`Component.processes` returns the generators that
  :meth:`Component.start` registers, in the engine's component order;
- **reads and writes** the shared :class:`twin.sim.state.ClusterState` (declared in
  :attr:`reads` / :attr:`writes`, checked by ``tests/sim/test_components.py``);
- **emits** events into the engine's log (kinds listed in :attr:`emits`);
- **declares outputs** by name (:attr:`outputs`, each declared once in
  :data:`twin.outputs.OUTPUTS`) and writes them in :meth:`record` (at each sample) or
  :meth:`finish` (once, after the run);
- **records a quiet stretch** of samples at once in :meth:`record_range` (issue 19): the
  sampler fills the samples between two events without a simpy wake-up each, when nothing
  in the cluster state changed since the last sample (see :meth:`Sampler._fill
  <twin.sim.sampler.Sampler._fill>`). The default records sample by sample; a component
  whose :meth:`record` reads only the state and its own fields, never the clock, repeats
  its first sample with :func:`repeat_record`.

Components reach each other only through the engine (``self.e.jobs``,
``self.e.scheduler``, ...), never by importing one another's internals.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from twin.sim.engine import Engine
    from twin.sim.recorder import Recorder


class Component:
    """Base class of the engine's components (see the module docstring)."""

    name: ClassVar[str] = ""
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    emits: ClassVar[tuple[str, ...]] = ()
    outputs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self.s = engine.s
        self.plant = engine.plant
        self.state = engine.state
        self.env = engine.env

    def processes(self) -> Iterable[Generator[Any, Any, Any]]:
        """simpy generators to register at the start of the run."""
        return ()

    def start(self) -> None:
        """Register this component's processes with the environment (once per run)."""
        for gen in self.processes():
            self.env.process(gen)

    def record(self, i: int, rec: Recorder) -> None:
        """Write this component's outputs of sample ``i``."""

    def record_range(self, i0: int, i1: int, rec: Recorder) -> None:
        """Write samples ``i0 .. i1 - 1`` of a quiet stretch: no event ran and nothing in the
        cluster state was written since sample ``i0 - 1``, and the sampler's physics are those
        of sample ``i0 - 1`` (the samples lie in one recorder window). The result must equal
        ``record(i)`` for each ``i`` in turn (``tests/sim/test_bulk_samples.py``); this
        default does exactly that."""
        for i in range(i0, i1):
            self.record(i, rec)

    def finish(self, rec: Recorder) -> None:
        """Write outputs evaluated once after the run (whole series)."""


def repeat_record(component: Component, i0: int, i1: int, rec: Recorder) -> None:
    """:meth:`Component.record_range` of a component whose :meth:`Component.record` is a
    function of the unchanged state alone (no clock, no running sum): record sample ``i0``,
    then copy its row of each of the component's time series to ``i0 + 1 .. i1 - 1``."""
    component.record(i0, rec)
    if i1 - i0 > 1:
        rec.repeat(component.outputs, i0, i1)
