"""The recorder: arrays for every recorded output of :data:`twin.outputs.OUTPUTS`, sized
from the plant, filled sample by sample (or whole, after the run) by the components."""

from __future__ import annotations

import numpy as np

from twin.outputs import OUTPUTS, Output


class Recorder:
    """Time series of a run, allocated from the output table.

    ``rec[name][i] = value`` writes sample ``i``; :meth:`set` writes a whole series
    evaluated after the run, cast to the declared dtype and checked against the declared
    shape. Only declared outputs exist: a typo is a KeyError, not a new variable.
    """

    def __init__(self, n_samples: int, sizes: dict[str, int]):
        self.n_samples = n_samples
        self.sizes = {"time": n_samples, **sizes}
        self.declared: dict[str, Output] = {o.name: o for o in OUTPUTS if o.recorded}
        self.series: dict[str, np.ndarray] = {}
        for o in self.declared.values():
            self.series[o.name] = np.zeros(self.shape(o), o.dtype)

    def shape(self, o: Output) -> tuple[int, ...]:
        return tuple(self.sizes[d] for d in o.dims)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.series[name]

    def set(self, name: str, values) -> None:
        """Store a whole series (evaluated after the run) with its declared dtype."""
        o = self.declared[name]
        arr = np.asarray(values, dtype=o.dtype)
        if arr.shape != self.shape(o):
            raise ValueError(f"output {name}: shape {arr.shape}, declared {o.dims} = {self.shape(o)}")
        self.series[name] = arr
