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
  :meth:`finish` (once, after the run).

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

    def finish(self, rec: Recorder) -> None:
        """Write outputs evaluated once after the run (whole series)."""
