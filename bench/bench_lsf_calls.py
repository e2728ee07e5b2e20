"""The LSF-like scheduler's CPU on Blue Vela's own call sequence, tree against tree.

    python bench/bench_lsf_calls.py capture CALLS.pkl [--set dotted.path=value ...]
    PYTHONPATH=TREE python bench/bench_lsf_calls.py replay CALLS.pkl [--repeats 5]
    python bench/bench_lsf_calls.py            # both, in this tree (a temporary file)

``capture`` runs ``scenarios/blue_vela.yaml`` (nine months, with the overrides) and stores
every call the engine made on its :class:`twin.workload.scheduler.Scheduler` (submit,
finish, set_node_health, set_unit_degraded, requeue, decide) with the answers. ``replay``
feeds the same calls to the scheduler of the tree first on ``sys.path``, asserts that every
answer is the stored one (the same decisions: the file of one tree checks another), and
prints the best CPU time (``time.process_time``) of the whole sequence over the repeats and
the best wall time of its ``decide`` passes alone as one JSON line. Alternate
the trees' runs on a shared machine (issues 19 and 14; bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CALLS = ("submit", "finish", "set_node_health", "set_unit_degraded", "requeue", "decide")
ANSWERED = ("decide", "requeue", "set_node_health")


def capture(out: Path, overrides: list[str]) -> int:
    import twin
    from twin.workload import scheduler as ws

    init: dict = {}
    calls: list = []
    original_init = ws.Scheduler.__init__

    def recording_init(self, cluster, config=None, track_usage=False):
        init.update(cluster=cluster, config=config, track_usage=track_usage)
        original_init(self, cluster, config, track_usage)

    def recording(name: str):
        f = getattr(ws.Scheduler, name)

        def recorded(self, *a):
            r = f(self, *a)
            calls.append((name, a, r if name in ANSWERED else None))
            return r
        return recorded

    ws.Scheduler.__init__ = recording_init
    for name in CALLS:
        setattr(ws.Scheduler, name, recording(name))
    twin.simulate(twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml", overrides))
    out.write_bytes(pickle.dumps((init, calls)))
    return len(calls)


def replay(src: Path, repeats: int) -> dict:
    from twin.workload import scheduler as ws

    init, calls = pickle.loads(src.read_bytes())
    best = best_decide = float("inf")
    for rep in range(2 * repeats):
        # even repeats: CPU of the whole sequence (no timer inside: process_time costs ~2 us
        # a call here); odd repeats: the passes alone, by the cheap wall clock
        timed = rep % 2 == 1
        s = ws.Scheduler(init["cluster"], init["config"], init["track_usage"])
        decide_s = 0.0
        c0 = time.process_time()
        for name, a, r in calls:
            if name == "decide" and timed:
                t = time.perf_counter()
                got = s.decide(*a)
                decide_s += time.perf_counter() - t
            else:
                got = getattr(s, name)(*a)
            if r is not None and got != r:
                raise SystemExit(f"{name}{a}: {got} != stored {r}")
        if timed:
            best_decide = min(best_decide, decide_s)
        else:
            best = min(best, time.process_time() - c0)
    return {"tree": str(Path(ws.__file__).resolve().parents[2]), "calls": len(calls),
            "cpu_s": best, "decide_wall_s": best_decide}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", choices=("capture", "replay"))
    ap.add_argument("calls", nargs="?", type=Path)
    ap.add_argument("--set", action="append", default=[], dest="overrides")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.mode is None or args.calls is None:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "calls.pkl"
            print(json.dumps({"calls": capture(path, args.overrides)}))
            print(json.dumps(replay(path, args.repeats)))
    elif args.mode == "capture":
        print(json.dumps({"calls": capture(args.calls, args.overrides)}))
    else:
        print(json.dumps(replay(args.calls, args.repeats)))


if __name__ == "__main__":
    main()
