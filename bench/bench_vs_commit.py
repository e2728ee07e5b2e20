"""Engine speed of this tree against an earlier commit, on the same machine, interleaved.

    python bench/bench_vs_commit.py REF [--new NEWREF] [--repeats 3]

Checks REF (and NEWREF, default: this working tree) out into temporary git worktrees and
times ``twin.simulate`` of the same cases with each tree on ``PYTHONPATH`` (one subprocess
per run, alternating trees, so a change in the machine's load hits both). Reports the
best wall and CPU time of each and their ratio (new / REF): below 1 is faster. CPU time (``time.process_time``) is the
fairer figure on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from machine import machine  # noqa: E402

CASES = {
    "Blue Vela, 273 d": ("scenarios/blue_vela.yaml", []),
    "Blue Vela, 273 d, 15 min samples": ("scenarios/blue_vela.yaml", ["simulation.sample_interval_s=900"]),
    "Vela, default horizon": ("scenarios/vela.yaml", []),
    "existing hall (siting), default horizon": ("scenarios/sites/existing_hall.yaml", []),
}

SNIPPET = """
import json, sys, time
import twin
s = twin.load_scenario(sys.argv[1], json.loads(sys.argv[2]))
t0, c0 = time.perf_counter(), time.process_time()
r = twin.simulate(s)
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                  "tokens": r.kpis["tokens_total"]}))
"""


def time_case(tree: Path, scenario: str, overrides: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", SNIPPET, str(tree / scenario), json.dumps(overrides)],
                         capture_output=True, text=True, env=env, cwd=tree)
    if out.returncode:
        raise SystemExit(f"{tree}: {scenario} {overrides} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref", help="the commit to compare against (e.g. the one before a refactor)")
    ap.add_argument("--new", help="a commit to time instead of this working tree")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp) / "ref", ROOT
        trees = [old]
        if args.new:
            new = Path(tmp) / "new"
            trees.append(new)
        for tree, ref in zip(trees, (args.ref, args.new), strict=False):
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref],
                           check=True, capture_output=True)
        try:
            print(f"| case | {args.ref} wall / CPU [s] | {args.new or 'this tree'} wall / CPU [s] "
                  f"| ratio CPU (new / ref) |")
            print("|---|---|---|---|")
            for name, (scenario, overrides) in CASES.items():
                best = {"ref": [], "new": []}
                for _ in range(args.repeats):
                    for key, tree in (("ref", old), ("new", new)):
                        best[key].append(time_case(tree, scenario, overrides))
                r = {k: (min(x["wall_s"] for x in v), min(x["cpu_s"] for x in v)) for k, v in best.items()}
                same = best["ref"][0]["tokens"] == best["new"][0]["tokens"]
                print(f"| {name} | {r['ref'][0]:.2f} / {r['ref'][1]:.2f} | {r['new'][0]:.2f} / {r['new'][1]:.2f} "
                      f"| {r['new'][1] / r['ref'][1]:.2f}{'' if same else ' (tokens differ!)'} |", flush=True)
        finally:
            for tree in trees:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


if __name__ == "__main__":
    main()
