"""Progress bars for long commands (render, animate, sweeps) in a terminal and in Jupyter.

``tqdm.auto`` draws a text bar in a terminal and a widget in Jupyter. A bar is silent when
its stream is not a terminal (pipes, CI logs, tests), unless ``force`` is set. When tqdm
is not installed, every helper here is a no-op: a progress bar is never a reason to fail.

    from twin.cli.progress import progress
    with progress(total=60, desc="frames", unit="frame") as bar:
        for frame in frames:
            ...
            bar.update(1)

    bar = fraction_progress("render")     # a callback taking a fraction 0..1
    cb = sweep_progress()                 # callback(done, failed, total, elapsed_s) for sweeps
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any


class _Null:
    """Stands in for a tqdm bar when tqdm is missing or the bar is off."""

    n = 0
    total = 0

    def update(self, n=1):
        self.n += n

    def set_postfix_str(self, *a, **k):
        pass

    def set_description_str(self, *a, **k):
        pass

    def close(self):
        pass

    def refresh(self):
        pass


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def make_bar(total: int | float | None, desc: str, unit: str = "it", force: bool = False, file=None):
    """A tqdm.auto bar on stderr (or ``file``); silent off a terminal unless ``force``."""
    tqdm = _tqdm()
    if tqdm is None:
        return _Null()
    stream = file or sys.stderr
    disable = False if force else None   # None: tqdm turns itself off when the stream is no TTY
    return tqdm(total=total, desc=desc, unit=unit, file=stream, disable=disable, leave=True,
                dynamic_ncols=True, mininterval=0.2)


@contextlib.contextmanager
def progress(total, desc: str, unit: str = "it", force: bool = False, file=None):
    """Context manager yielding a bar (closed at the end, also on errors)."""
    bar = make_bar(total, desc, unit, force, file)
    try:
        yield bar
    finally:
        bar.close()


class FractionProgress:
    """Callable taking the fraction done (0..1); draws a bar of ``steps`` steps."""

    def __init__(self, desc: str, steps: int = 100, unit: str = "%", force: bool = False, file=None):
        self.bar = make_bar(steps, desc, unit, force, file)
        self.steps = steps

    def __call__(self, fraction: float) -> None:
        target = int(round(max(0.0, min(1.0, float(fraction))) * self.steps))
        if target > self.bar.n:
            self.bar.update(target - self.bar.n)
        if fraction >= 1.0:
            self.close()

    def close(self) -> None:
        self.bar.close()


def fraction_progress(desc: str, steps: int = 100, force: bool = False, file=None) -> FractionProgress:
    return FractionProgress(desc, steps, force=force, file=file)


class SweepBar:
    """Callback ``(done, failed, total, elapsed_s)`` for a sweep: runs done of total, with the
    failures in the postfix."""

    def __init__(self, desc: str = "sweep", force: bool = False, file=None):
        self.desc, self.force, self.file = desc, force, file
        self.bar: Any = None   # a tqdm bar (or _Null) once the total is known

    def __call__(self, done: int, failed: int, total: int, elapsed_s: float = 0.0) -> None:
        if self.bar is None:
            self.bar = make_bar(total, self.desc, "run", self.force, self.file)
        if done > self.bar.n:
            self.bar.update(done - self.bar.n)
        if failed:
            self.bar.set_postfix_str(f"{failed} failed")
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def sweep_progress(desc: str = "sweep", force: bool = False, file=None) -> SweepBar:
    return SweepBar(desc, force, file)
