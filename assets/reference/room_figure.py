"""How the room-benchmark scripts finish a figure (Module 1's rack fronts, Module 2's capture
index): one place for the title's size, the layout and the resolution, so the two figures stay
alike. Imported by ``room_benchmark_module1_run.py`` and ``room_benchmark_contained_run.py``
from this folder; matplotlib is imported only when a figure is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_figure(fig: Figure, title: str, out: Path) -> Path:
    """Title ``fig`` (10 pt), lay it out tight, write it to ``out`` at 110 dpi, close it and
    return ``out``."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
