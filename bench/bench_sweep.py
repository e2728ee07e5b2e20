"""Benchmark of `twin sweep`: 200 runs of a small scenario (lenovo_small, 2 days, hourly
samples; 10 failure-rate values x 20 seeds) in this process (1 worker), on a local
process pool of 2 workers, and on a Dask LocalCluster of 2 workers; the speed-up from 1 to
2 workers; and the cost of re-running a finished sweep (everything reused, only assembly).

    .venv/bin/python bench/bench_sweep.py [--runs 200] [--no-dask]
    .venv/bin/python bench/bench_sweep.py --scaling [--runs 40] [--repeat 5]

``--scaling`` measures issue 19's benchmark 5 (1 -> 2 workers, >= 1.8x) repeatedly on the 40
runs of ``bench_gigawatt.py sweep``, 1 and 2 workers alternated, and says for each sweep how
much CPU other processes took meanwhile (the machine's busy time in /proc/stat minus this
process's and its workers'): on a shared 2-core machine a wall-clock speed-up means something
only when that is near zero.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import cpu_model

from twin.sweep import Axis, SweepSpec, execute_run, kpi_names, resolve_tasks, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def spec_for(runs: int) -> SweepSpec:
    seeds = max(1, runs // 10)
    return SweepSpec(scenario=str(ROOT / "scenarios" / "lenovo_small.yaml"),
                     overrides=("simulation.duration_days=2", "simulation.sample_interval_s=3600"),
                     axes=(Axis.grid("failures.rate_scale", [1, 2, 4, 8, 12, 16, 20, 30, 40, 50][:min(10, runs)]),),
                     seeds=tuple(range(seeds)), name="bench")




def own_session_pool(spec: SweepSpec, workers: int) -> float:
    """Diagnostic: the sweep's runs through a fork pool whose workers each start their own
    session (setsid). With the kernel's autogroup scheduling (sched_autogroup_enabled=1) a
    session, not a process, gets a fair share of the CPUs, so on a machine shared with other
    sessions the workers of one `twin sweep` split one share; in their own sessions they get
    one share each, which shows how the runs themselves scale. Returns the wall time [s]."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    tasks = resolve_tasks(spec)
    ctx = multiprocessing.get_context("fork")
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=os.setsid) as pool:
        recs = list(pool.map(execute_run, [t.scenario for t in tasks], [spec.series] * len(tasks),
                             chunksize=1))
    wall = time.perf_counter() - t0
    assert all(r["status"] == "ok" for r in recs)
    return wall


def autogroup() -> str:
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        return "n/a"


def timed(label, fn):
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    return label, wall, out


def busy_cpu_s() -> float:
    """CPU time the whole machine has been busy since boot [s] (/proc/stat, all cores)."""
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def workers_reaped(within_s: float = 10.0) -> None:
    """Wait until this process has no child left (the sweep's workers exit and are reaped in
    the background after run_sweep returns): their CPU is in RUSAGE_CHILDREN only then."""
    me = str(os.getpid())
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        kids = []
        for p in Path("/proc").iterdir():
            if p.name.isdigit():
                try:
                    if (p / "stat").read_text().rsplit(")", 1)[1].split()[1] == me:
                        kids.append(p.name)
                except OSError:
                    continue
        if not kids:
            return
        time.sleep(0.01)


def one_sweep(spec: SweepSpec, out: Path, workers: int) -> dict:
    """One timed sweep: wall [s], CPU of this process and of its workers [s], the runs' own
    CPU [s] (inside the engine), and the CPU other processes took meanwhile [s]."""
    import resource
    s0, c0, b0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN), busy_cpu_s()
    t0 = time.perf_counter()
    outcome = run_sweep(spec, out, workers=workers)
    wall = time.perf_counter() - t0
    workers_reaped()
    s1, c1, b1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN), busy_cpu_s()
    own = (s1.ru_utime - s0.ru_utime) + (s1.ru_stime - s0.ru_stime)
    kids = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    runs = sum(json.loads(p.read_text()).get("cpu_s", 0.0) for p in (out / "runs").glob("*.json"))
    return {"workers": workers, "wall_s": wall, "sweep_cpu_s": own, "workers_cpu_s": kids, "runs_cpu_s": runs,
            "foreign_cpu_s": max(0.0, b1 - b0 - own - kids), "load": os.getloadavg()[0], "outcome": outcome}


def scaling(runs: int, repeat: int) -> None:
    """Benchmark 5 of issue 19, repeated: 1 and 2 workers alternated ``repeat`` times."""
    spec = spec_for(runs)
    base = Path(tempfile.mkdtemp(prefix="bench_sweep_scaling."))
    print(f"machine: {platform.machine()}, nproc {os.cpu_count()}, CPU {cpu_model()!r}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {int(np.prod(spec.shape))} lenovo_small runs "
          f"(2 days, hourly)")
    rows = []
    try:
        run_sweep(spec_for(1), base / "warm", workers=1)      # imports and the hall model, as the bench does
        for i in range(repeat):
            for w in (1, 2):
                rows.append(one_sweep(spec, base / f"r{i}w{w}", w))
            a, b = rows[-2]["outcome"].dataset, rows[-1]["outcome"].dataset
            for k in kpi_names(a):
                np.testing.assert_array_equal(a[k].values, b[k].values)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{'workers':>7s} {'wall':>7s} {'sweep CPU':>10s} {'workers CPU':>12s} {'runs CPU':>9s} "
          f"{'others CPU':>11s} {'load':>5s}")
    for r in rows:
        print(f"{r['workers']:7d} {r['wall_s']:6.3f}s {r['sweep_cpu_s']:9.3f}s {r['workers_cpu_s']:11.3f}s "
              f"{r['runs_cpu_s']:8.3f}s {r['foreign_cpu_s']:10.2f}s {r['load']:5.2f}")
    speed = [rows[i]["wall_s"] / rows[i + 1]["wall_s"] for i in range(0, len(rows), 2)]
    quiet = [sp for sp, i in zip(speed, range(0, len(rows), 2), strict=True)
             if max(rows[i]["foreign_cpu_s"], rows[i + 1]["foreign_cpu_s"]) < 0.05 * rows[i + 1]["wall_s"]]
    print(f"speed-up 1 -> 2 workers, each pair: {', '.join(f'{x:.2f}x' for x in speed)}; median "
          f"{np.median(speed):.2f}x (target 1.8x)")
    print(f"pairs with other processes under 5 % of a core: {len(quiet)}"
          + (f", speed-up {min(quiet):.2f}-{max(quiet):.2f}x, median {np.median(quiet):.2f}x" if quiet else ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=None, help="runs in the sweep (200; 40 with --scaling)")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--scaling", action="store_true", help="only 1 vs 2 workers, repeated (issue 19, benchmark 5)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.scaling:
        scaling(args.runs or 40, args.repeat)
        return
    args.runs = args.runs or 200
    spec = spec_for(args.runs)
    n = int(np.prod(spec.shape))
    base = Path(tempfile.mkdtemp(prefix="bench_sweep."))
    print(f"machine: {platform.machine()}, nproc {os.cpu_count()}, CPU {cpu_model()!r}, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    print(f"sweep: {n} runs of lenovo_small (2 days, hourly samples)")
    # warm the imports and caches once so the first mode does not pay them alone
    run_sweep(spec_for(1), base / "warm", workers=1)
    rows = []
    try:
        label, w1, o1 = timed("1 worker (in process)", lambda: run_sweep(spec, base / "w1", workers=1))
        rows.append((label, w1))
        label, w2, o2 = timed("2 workers (process pool)", lambda: run_sweep(spec, base / "w2", workers=2))
        rows.append((label, w2))
        for k in kpi_names(o1.dataset):
            np.testing.assert_array_equal(o1.dataset[k].values, o2.dataset[k].values)
        if not args.no_dask:
            import distributed
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                          dashboard_address=None) as cl, distributed.Client(cl) as client:
                label, wd, od = timed("2 workers (Dask LocalCluster, incl. worker start-up)",
                                      lambda: run_sweep(spec, base / "wd", client=client))
            rows.append((label, wd))
            for k in kpi_names(o1.dataset):
                np.testing.assert_array_equal(o1.dataset[k].values, od.dataset[k].values)
        s1 = own_session_pool(spec, 1)
        rows.append(("diagnostic: fork pool, 1 worker in its own session", s1))
        s2 = own_session_pool(spec, 2)
        rows.append(("diagnostic: fork pool, 2 workers, each in its own session", s2))
        label, wr, orr = timed("re-run of the finished sweep (all reused)", lambda: run_sweep(spec, base / "w2",
                                                                                              workers=2))
        assert not orr.ran and len(orr.reused) == n
        rows.append((label, wr))
        per_run = np.nanmean(o1.dataset.wall_s.values)
        cpu_1 = sum(json.loads(p.read_text()).get("cpu_s", 0.0) for p in (base / "w1" / "runs").glob("*.json"))
        cpu_2 = sum(json.loads(p.read_text()).get("cpu_s", 0.0) for p in (base / "w2" / "runs").glob("*.json"))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{'mode':55s} {'wall':>8s} {'runs/s':>8s}")
    for label, w in rows:
        print(f"{label:55s} {w:7.1f}s {n / w:8.2f}")
    print(f"speed-up 1 -> 2 workers (twin sweep, process pool): {w1 / w2:.2f}x; CPU time of the runs "
          f"{cpu_1:.1f} s (1 worker) and {cpu_2:.1f} s (2 workers), i.e. {cpu_1 / w1:.2f} and {cpu_2 / w2:.2f} "
          f"CPUs used on average")
    print(f"speed-up 1 -> 2 workers with one session per worker (diagnostic): {s1 / s2:.2f}x "
          f"(kernel.sched_autogroup_enabled={autogroup()})")
    print(f"mean simulate() time per run in the serial sweep: {per_run:.3f} s; "
          f"sweep overhead per run (serial): {(w1 / n - per_run) * 1e3:.0f} ms")
    print(f"load average {os.getloadavg()[0]:.2f} at end (other processes share these cores)")


if __name__ == "__main__":
    main()
