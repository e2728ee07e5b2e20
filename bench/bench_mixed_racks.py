"""Heterogeneous racks at scale (issue 19): does a hall of mixed node models cost more
than a homogeneous one of the same size?

Two scenarios of the same geometry, racks, node count, jobs and horizon, built from
``scenarios/sites/mixed_hall.yaml``: rows of four-node racks in halls of 8 rows x 32
racks; in the *mixed* one every other row holds Lenovo SR675 V3 (H100 NVL) instead of
Dell XE9680 (H100 SXM), so the sampler's node power, GPU equilibrium and rack airflow run
on per-node parameter arrays instead of scalars. One job per row kind (each on one node
model) fills 7/8 of its nodes with 1/64 as hot spares.

Prints CPU time (``time.process_time`` of the child) and peak memory of ``simulate()``
for each, in a subprocess each, and the ratio. Usage::

    python bench/bench_mixed_racks.py [GPUS] [DAYS]       # default 32768 GPUs, 30 days
"""

from __future__ import annotations

import copy
import json
import math
import resource
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from halls import NODES_PER_RACK as NPR  # noqa: E402
from halls import RACKS_PER_ROW as PER_ROW  # noqa: E402
from halls import data_halls  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROWS_PER_HALL = 8


def scenario(gpus: int, days: float, mixed: bool) -> dict:
    s = yaml.safe_load((ROOT / "scenarios" / "sites" / "mixed_hall.yaml").read_text())
    s = copy.deepcopy(s)
    n_racks = gpus // (8 * NPR)
    rows_done = [0]

    def node_model(_k: int) -> dict:        # every other row of the site holds SR675 V3 when mixed
        model = "sr675v3_h100nvl" if mixed and rows_done[0] % 2 else "xe9680_h100"
        rows_done[0] += 1
        return {"node_model": model, "nodes_per_rack": NPR}

    # cooling capacity 45 kW per rack
    halls = data_halls(n_racks, ROWS_PER_HALL * PER_ROW, ROWS_PER_HALL, 45.0, row_extra=node_model)
    kinds = {"xe9680_h100": 0, "sr675v3_h100nvl": 0}
    for row in (row for h in halls for row in h["rows"]):
        kinds[row["node_model"]] += row["racks"] * NPR
    s["name"] = f"{'mixed' if mixed else 'alike'}_{gpus}_gpus"
    s["site"]["halls"] = halls
    it_kw = n_racks * 45.0
    pw = s["site"]["power"]
    pw["plan"] = [{"date": s["simulation"]["start"].isoformat(), "it_power_kw": it_kw}]
    pw["feeds"] = [{"name": "A", "capacity_kw": it_kw}, {"name": "B", "capacity_kw": it_kw}]
    pw["ups"]["capacity_kw"] = 2 * it_kw
    pw["rpp"] = {"count": math.ceil(n_racks / 4), "racks_per_rpp": 4, "breaker_a": 800, "voltage_v": 415,
                 "phases": 3}
    s["simulation"]["duration_days"] = days
    s["failures"]["technicians"] = max(4, gpus // 1024)
    s["failures"]["spares"] = max(16, gpus // 256)
    s["ramp"] = {"burn_in_days": 0, "waves": [{"date": s["simulation"]["start"].isoformat(), "racks": n_racks}]}
    base = s["workload"]["jobs"][0]
    jobs = []
    for model, nodes in kinds.items():
        if not nodes:
            continue
        n = 16 * int(nodes * 7 / 8 / 16)
        jobs.append(dict(base, name=f"job_{model}", node_model=model, nodes=n, hot_spares=nodes // 64,
                         global_batch=n * 8 // 2 * 2, priority=0))
    if not mixed:        # the same two jobs on the one model
        n = 16 * int(kinds["xe9680_h100"] * 7 / 16 / 16)
        jobs = [dict(base, name=f"job_{k}", node_model="xe9680_h100", nodes=n, hot_spares=kinds["xe9680_h100"] // 128,
                     global_batch=n * 8 // 2 * 2, priority=0) for k in range(2)]
    s["workload"]["jobs"] = jobs
    return s


def _child(path: str) -> None:
    import time

    import twin
    s = twin.load_scenario(path)
    t0 = time.process_time()
    res = twin.simulate(s)
    cpu = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"cpu_s": cpu, "peak_mb": peak, "gpus": float(res.dataset["gpus_installed"].values.max()),
                      "tokens": float(res.kpis["tokens_total"])}))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2])
        return
    gpus = int(sys.argv[1]) if len(sys.argv) > 1 else 32768
    days = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    import tempfile
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mixed in (False, True):
            p = Path(tmp) / f"{mixed}.yaml"
            p.write_text(yaml.safe_dump(scenario(gpus, days, mixed), sort_keys=False))
            r = subprocess.run([sys.executable, __file__, "--child", str(p)], capture_output=True, text=True,
                               check=True)
            out["mixed" if mixed else "alike"] = json.loads(r.stdout.strip().splitlines()[-1])
    for k, v in out.items():
        print(f"{k:6s} {gpus:,} GPUs x {days:g} days: simulate() {v['cpu_s']:.2f} s CPU, "
              f"peak {v['peak_mb']:.0f} MB, {v['gpus']:,.0f} GPUs installed, {v['tokens']:.3g} tokens")
    print(f"mixed / alike CPU time: {out['mixed']['cpu_s'] / out['alike']['cpu_s']:.2f}")


if __name__ == "__main__":
    main()
