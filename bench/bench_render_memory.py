"""Peak memory of `twin render` (issue 17: "each PNG needs about 600 MB"; target < 300 MB).

Runs `twin run` once (Blue Vela, nine months, no field file), then `twin render` of that
run as PNG (with and without the steady thermal field) and as GIF animations of 10 and 60
frames. For each command it reports

- the command's peak RSS: ru_maxrss from wait4 (the process and every child it waited
  for, the largest of them; for a PNG the command hands its process over to the render
  child with exec, so this covers both phases);
- the peak of the whole process tree at one instant (the sum of the RSS of the command and
  its children, sampled every 20 ms): what the machine needs while it runs;
- the render child's own peak (VmHWM of its address space, sampled).

    python bench/bench_render_memory.py [--tree DIR] [--run RUN]
        --tree: another checkout whose `twin render` is measured (before/after)
        --run:  draw this run folder instead of a fresh Blue Vela run (the same run for both trees)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return []
    return kids + [g for k in kids for g in _children(k)]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def measure(cmd: list[str], env: dict, cwd: str) -> dict:
    """Peak RSS figures [MB] and wall time [s] of ``cmd``. Children count once they run
    their own program (the render child, ffmpeg): a child between fork and exec still
    shows its parent's pages."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    tree_kb = 0
    child_hwm_kb: dict[int, int] = {}
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        kids = [k for k in _children(p.pid) if any(w in _cmdline(k) for w in ("vtkdraw", "ffmpeg"))]
        tree_kb = max(tree_kb, _status_kb(p.pid, "VmRSS") + sum(_status_kb(k, "VmRSS") for k in kids))
        for k in kids:
            child_hwm_kb[k] = max(child_hwm_kb.get(k, 0), _status_kb(k, "VmHWM"))
        time.sleep(0.02)
    if status != 0:
        raise RuntimeError(f"{cmd} failed ({status})")
    return {"command_mb": usage.ru_maxrss / 1024, "tree_mb": tree_kb / 1024,
            "child_mb": max(child_hwm_kb.values(), default=0) / 1024, "wall_s": time.perf_counter() - t0,
            "cpu_s": usage.ru_utime + usage.ru_stime}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=str(ROOT), help="checkout whose twin is measured (default this one)")
    ap.add_argument("--run", help="run folder to draw (default: `twin run scenarios/blue_vela.yaml` of the tree)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "bench"))
    from machine import machine  # noqa: E402

    print(machine())
    tree = str(Path(args.tree).resolve())
    env = {**os.environ, "PYTHONPATH": tree}
    twin = [sys.executable, "-m", "twin.cli"]   # run in the tree: python -m puts the working folder first
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(args.run).resolve() if args.run else Path(tmp) / "bv"
        if not args.run:
            subprocess.run(twin + ["run", "scenarios/blue_vela.yaml", "--out", str(run), "--no-field"],
                           check=True, capture_output=True, env=env, cwd=tree)
        cases = [("PNG, thermal field", ["--out", str(Path(tmp) / "h.png")]),
                 ("PNG, --no-field", ["--out", str(Path(tmp) / "h.png"), "--no-field"]),
                 ("GIF, 10 frames", ["--animate", "--out", str(Path(tmp) / "a.gif"), "--frames", "10"]),
                 ("GIF, 60 frames", ["--animate", "--out", str(Path(tmp) / "a.gif"), "--frames", "60"])]
        rows = [(label, measure(twin + ["render", str(run), *extra], env, tree)) for label, extra in cases]
    print(f"tree: {args.tree}, run: {args.run or 'scenarios/blue_vela.yaml of the tree'}")
    print("| `twin render` of the Blue Vela run | command peak RSS | process tree at once | render child | wall | CPU |")
    print("|---|---|---|---|---|---|")
    for label, m in rows:
        child = f"{m['child_mb']:.0f} MB" if m["child_mb"] else "-"
        print(f"| {label} | {m['command_mb']:.0f} MB | {m['tree_mb']:.0f} MB | {child} | {m['wall_s']:.1f} s | "
              f"{m['cpu_s']:.1f} s |")


if __name__ == "__main__":
    main()
