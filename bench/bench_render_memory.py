"""Peak memory of one `twin render` PNG (issue 17: "each PNG needs about 600 MB").

Runs `twin run` once (Blue Vela, no field file), then `twin render RUN --out hall.png`
with and without the steady thermal field, and a bare pyvista off-screen render of the
same scene (the floor any pyvista PNG pays on this machine: VTK, Mesa and its LLVM JIT).
Peak RSS is ru_maxrss of the child; the split into anonymous and file-backed (shared
libraries) memory is read from /proc at the end of an in-process render.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TWIN = [sys.executable, "-m", "twin.cli"]


def peak_child_mb(cmd: list[str]) -> tuple[float, float]:
    """(peak RSS [MB], wall [s]) of a child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = __import__("os").wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError(f"{cmd} failed ({status})")
    return usage.ru_maxrss / 1024.0, time.perf_counter() - t0


BARE = """
import os, pyvista as pv
pl = pv.Plotter(off_screen=True, window_size=[1280, 800])
mb = pv.read(os.environ["VTM"])
for k in mb.keys():
    if mb[k] is not None and mb[k].n_points:
        pl.add_mesh(mb[k], color="grey")
pl.screenshot(os.environ["PNG"])
"""


def main() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from machine import machine  # noqa: E402

    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "bv"
        subprocess.run(TWIN + ["run", str(ROOT / "scenarios" / "blue_vela.yaml"), "--out", str(run), "--no-field"],
                       check=True, capture_output=True)
        rows = []
        for label, extra in (("twin render PNG, thermal field", []), ("twin render PNG, --no-field", ["--no-field"])):
            mb, s = peak_child_mb(TWIN + ["render", str(run), "--out", str(Path(tmp) / "h.png"), *extra])
            rows.append((label, mb, s))
        vtm = Path(tmp) / "s.vtm"
        subprocess.run(TWIN + ["render", str(run), "--out", str(vtm)], check=True, capture_output=True)
        import os
        os.environ.update(VTM=str(vtm), PNG=str(Path(tmp) / "bare.png"))
        mb, s = peak_child_mb([sys.executable, "-c", BARE])
        rows.append(("bare pyvista off-screen render of the same scene (floor)", mb, s))
    print("| case | peak RSS | wall |")
    print("|---|---|---|")
    for label, mb, s in rows:
        print(f"| {label} | {mb:.0f} MB | {s:.1f} s |")


if __name__ == "__main__":
    main()
