"""The machine line every benchmark prints (and RESULTS.md records)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (or the platform's guess)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> str:
    """Architecture, core count, CPU model, Python and numpy versions, load average."""
    import numpy as np

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.machine()}, {os.cpu_count()} cores, {cpu_model()}, Python "
            f"{platform.python_version()}, numpy {np.__version__}, load average {load:.2f}")
