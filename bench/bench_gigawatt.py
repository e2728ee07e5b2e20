"""Gigawatt-scale benchmarks (issue 19), each against its target, each in a fresh process.

1. ``million``: ``scenarios/scale/million_gpu.yaml`` (1,048,576 GPUs, 365 days, hourly):
   ``twin.simulate`` in <= 120 s and <= 4 GB peak RSS on 2 cores.
2. ``blue_vela``: ``scenarios/blue_vela.yaml`` (nine months): ``simulate()`` <= 1 s and
   ``twin run`` end to end <= 3 s.
3. ``frontier``: a Frontier-size site (9,216 nodes) for six hours at 15 s samples: <= 0.7 s.
4. ``fine``: 512 nodes for one day at 1 s samples: <= 3 s.
5. ``sweep``: ``twin sweep`` of 40 short lenovo_small runs with 1 and 2 workers: >= 1.8x.

Every case prints wall time, CPU time (user + sys of the process that ran it: the fairer
figure on a shared, loaded machine) and peak RSS against its target; a case that falls
short is run again under pyinstrument (the million-GPU case over ``--profile-days``) and
the top entries of the profile (self time per function) are printed.

    .venv/bin/python bench/bench_gigawatt.py [CASE ...] [--days D] [--profile-days D] [--no-profile]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gigawatt import ROOT, site_scenario  # noqa: E402
from machine import machine  # noqa: E402

MILLION = ROOT / "scenarios" / "scale" / "million_gpu.yaml"
BLUE_VELA = ROOT / "scenarios" / "blue_vela.yaml"
#: case -> (what, target [s], target peak RSS [MB] or None)
TARGETS = {
    "million": ("1,048,576 GPUs x 365 days, hourly: simulate()", 120.0, 4096.0),
    "blue_vela": ("Blue Vela nine months: simulate()", 1.0, None),
    "blue_vela_cli": ("Blue Vela nine months: twin run end to end", 3.0, None),
    "frontier": ("Frontier-size, 9,216 nodes x 6 h at 15 s: simulate()", 0.7, None),
    "fine": ("512 nodes x 1 day at 1 s: simulate()", 3.0, None),
}
SWEEP_TARGET = 1.8
TOP = 25


def scenario_for(case: str, days: float | None):
    """The validated scenario of a case (``days`` shortens the million-GPU horizon)."""
    import twin
    from twin.scenario import validate_data

    if case == "million":
        over = [f"simulation.duration_days={days:g}"] if days else []
        return twin.load_scenario(MILLION, over)
    if case == "blue_vela":
        return twin.load_scenario(BLUE_VELA)
    if case == "frontier":
        return validate_data(site_scenario(9216, 0.25, 15.0, job_nodes=1024, name="frontier_size"))
    if case == "fine":
        return validate_data(site_scenario(512, 1.0, 1.0, job_nodes=128, name="fine_512"))
    raise ValueError(case)


def child(case: str, days: float | None, profile: bool) -> None:
    """Run one case in this (fresh) process and print one JSON line."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import twin

    # warm the imports (the engine loads scipy.stats, dask and the workload lazily): the
    # figure is simulate() in a running process; `twin run` end to end includes them
    twin.simulate(twin.load_scenario(ROOT / "scenarios" / "lenovo_small.yaml", ["simulation.duration_days=1"]))
    t0, c0 = time.perf_counter(), time.process_time()
    scenario = scenario_for(case, days)
    load = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
    prof = None
    if profile:
        from pyinstrument import Profiler
        prof = Profiler(interval=0.01)
        prof.start()
    t0, c0 = time.perf_counter(), time.process_time()
    res = twin.simulate(scenario)
    out = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "load": load,
           "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "samples": int(res.dataset.sizes["time"]), "racks": int(res.dataset.sizes.get("rack", 0)),
           "failures": res.kpis.get("failures"), "interruptions": res.kpis.get("interruptions"),
           "events": len(res.events), "tokens_total": res.kpis.get("tokens_total")}
    if prof is not None:
        prof.stop()
        from pyinstrument.renderers import ConsoleRenderer
        text = prof.output(ConsoleRenderer(flat=True, unicode=False, color=False))
        out["profile"] = "\n".join(line for line in text.splitlines() if line.strip())
    print(json.dumps(out))


def run_child(case: str, days: float | None = None, profile: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--child", case] + (["--days", str(days)] if days else [])
    cmd += ["--profile"] if profile else []
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1], "returncode": p.returncode}
    return json.loads(p.stdout.strip().splitlines()[-1])


def top_entries(profile: str, n: int = TOP) -> str:
    """The first ``n`` lines of a flat (self-time) pyinstrument profile, header dropped."""
    lines = [ln for ln in profile.splitlines() if ln[:1].isdigit() or ln.lstrip()[:1].isdigit()]
    return "\n".join("    " + ln.strip() for ln in lines[:n])


def report(case: str, r: dict, args) -> None:
    what, target, rss_target = TARGETS[case]
    if "error" in r:
        print(f"[{case}] {what}: FAILED ({r['error']})")
        return
    ok = r["wall_s"] <= target and (rss_target is None or r["maxrss_mb"] <= rss_target)
    partial = case == "million" and args.days is not None
    rss = f", peak RSS {r['maxrss_mb']:,.0f} MB" + (f" (target {rss_target:,.0f} MB)" if rss_target else "")
    run = ("" if case == "blue_vela_cli" else
           f"{r['samples']:,} samples x {r['racks']:,} racks, {r['failures']} failures, {r['events']:,} events; "
           f"scenario load {r['load']['wall_s']:.2f} s ")
    print(f"[{case}] {what}: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s (target {target:g} s){rss}; "
          f"{run}-> "
          + (f"a {args.days:g}-day horizon, not the target's" if partial else "met" if ok else "NOT MET"))
    if (partial or not ok) and not args.no_profile and case != "blue_vela_cli":
        days = args.profile_days if case == "million" else None
        pr = run_child(case, days, profile=True)
        if "profile" in pr:
            span = f" over {days:g} days" if days else ""
            print(f"    profile{span} (wall {pr['wall_s']:.1f} s, CPU {pr['cpu_s']:.1f} s), self time per function:")
            print(top_entries(pr["profile"]))


def cli_case(repeats: int = 3) -> dict:
    """``twin run scenarios/blue_vela.yaml`` end to end: best wall of ``repeats`` and its CPU."""
    best = None
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "twin.cli", "run", str(BLUE_VELA), "--out", f"{tmp}/out"],
                           check=True, capture_output=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            if best is None or wall < best[0]:
                best = (wall, cpu, r1.ru_maxrss / 1024)
    assert best is not None
    return {"wall_s": best[0], "cpu_s": best[1], "maxrss_mb": best[2], "samples": 0, "racks": 0,
            "failures": "-", "events": 0, "load": {"wall_s": 0.0}}


def sweep_case(runs: int = 40) -> None:
    """``twin.sweep.run_sweep`` of ``runs`` lenovo_small runs (2 days, hourly) with 1 and 2
    workers; same KPIs asserted; speed-up in wall time, CPU time of the runs quoted."""
    import shutil

    import numpy as np
    from bench_sweep import spec_for

    from twin.sweep import kpi_names, run_sweep

    spec = spec_for(runs)
    base = Path(tempfile.mkdtemp(prefix="bench_gw_sweep."))
    try:
        run_sweep(spec_for(1), base / "warm", workers=1)
        walls, cpus, outs = {}, {}, {}
        for w in (1, 2):
            t0 = time.perf_counter()
            outs[w] = run_sweep(spec, base / f"w{w}", workers=w)
            walls[w] = time.perf_counter() - t0
            cpus[w] = sum(json.loads(p.read_text()).get("cpu_s", 0.0) for p in (base / f"w{w}" / "runs").glob("*.json"))
        for k in kpi_names(outs[1].dataset):
            np.testing.assert_array_equal(outs[1].dataset[k].values, outs[2].dataset[k].values)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    speed = walls[1] / walls[2]
    print(f"[sweep] {runs} lenovo_small runs: 1 worker {walls[1]:.1f} s (runs' CPU {cpus[1]:.1f} s), 2 workers "
          f"{walls[2]:.1f} s (runs' CPU {cpus[2]:.1f} s): speed-up {speed:.2f}x (target {SWEEP_TARGET}x) -> "
          f"{'met' if speed >= SWEEP_TARGET else 'NOT MET'}; load average {os.getloadavg()[0]:.1f} "
          f"(other sessions share the cores; see RESULTS.md on autogroup scheduling)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*", default=["blue_vela", "frontier", "fine", "sweep", "million"])
    ap.add_argument("--days", type=float, default=None, help="shorter horizon for the million-GPU case")
    ap.add_argument("--profile-days", type=float, default=30.0)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--child", default=None)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.days, args.profile)
        return
    print(f"machine: {machine()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for case in args.cases:
        if case == "sweep":
            sweep_case()
            continue
        if case == "blue_vela_cli":     # named alone; blue_vela runs it after itself
            if "blue_vela" not in args.cases:
                report(case, cli_case(), args)
            continue
        r = run_child(case, args.days if case == "million" else None)
        report(case, r, args)
        if case == "blue_vela":
            report("blue_vela_cli", cli_case(), args)
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
