"""The scripts of assets/reference as modules, for the tests that pin what they compute, and
the check the held-out NCCL tests share.

The scripts are not a package: each is run by path and finds its sibling scripts through its
own folder on ``sys.path``. The tests load one with :func:`reference_script`, which puts that
folder on the path only while the import runs.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

REFERENCE = Path(__file__).resolve().parents[1] / "assets" / "reference"


def reference_script(name: str) -> ModuleType:
    """``assets/reference/<name>.py`` imported as the module ``name`` (once per process, as
    any import), with its folder first on ``sys.path`` while it loads and removed after."""
    sys.path.insert(0, str(REFERENCE))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REFERENCE))


def assert_table_summary(got: dict[str, dict], pinned: dict[str, tuple[int, float, float]],
                         abs_tol: float) -> None:
    """Assert a held-out NCCL script's ``summary`` (per table: rows within the goal, mean and
    worst |error| [-]) against its pins, the same tables, the count exactly and the errors
    within ``abs_tol``. The messages carry the values: pytest does not rewrite the asserts of
    a helper module."""
    assert set(got) == set(pinned), (sorted(got), sorted(pinned))
    for t, (within, mean, worst) in pinned.items():
        assert got[t]["within"] == within, (t, got[t], pinned[t])
        assert got[t]["mean"] == pytest.approx(mean, abs=abs_tol), (t, got[t], pinned[t])
        assert got[t]["worst"] == pytest.approx(worst, abs=abs_tol), (t, got[t], pinned[t])
