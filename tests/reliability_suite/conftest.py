"""Shared pieces of the reliability suite (issue 18): a small finished run, a CLI runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
ONE_DAY = ["simulation.duration_days=1"]


def cli(*args, cwd=ROOT, timeout=300, **kw):
    """``python -m twin.cli ARGS`` in a subprocess: (returncode, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-m", "twin.cli", *map(str, args)], capture_output=True,
                       text=True, cwd=cwd, timeout=timeout, **kw)
    return p


@pytest.fixture(scope="session")
def small_results():
    """One simulated day of the 4-node Lenovo room (about a second)."""
    import twin
    return twin.simulate(twin.load_scenario(SMALL, ONE_DAY))
