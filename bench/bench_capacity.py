"""`twin capacity` for 4,096 racks and the sub-second swing model.

Run: .venv/bin/python bench/bench_capacity.py
Targets (issue 13): the capacity of every dated stage of a 4,096-rack chain in under 1 s;
the run time of the 1-s swing model (30 min window on a 10 ms grid, with the battery).
"""

from __future__ import annotations

import copy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def big_scenario_dict(racks: int = 4096) -> dict:
    """Blue Vela with 32 rows of 128 racks (4,096) in one 80 m x 100 m hall and its chain
    scaled: 512 RPPs, 32 transformers/switchboards/UPS systems."""
    d = yaml.safe_load((ROOT / "scenarios" / "blue_vela.yaml").read_text())
    hall = d["site"]["halls"][0]
    hall.update(width_m=80.0, depth_m=100.0, cell_m=0.6)
    rows = racks // 128
    hall["rows"] = [{"name": f"r{i}", "x_m": 1.5, "y_m": 3.0 + 2.4 * i, "racks": 128,
                     "intake": "north" if i % 2 else "south"} for i in range(rows)]
    hall["cooling_units"] = [dict(cu, x_m=79.0, y_m=4.0 + 7.5 * i) for i, cu in enumerate(hall["cooling_units"])]
    p = d["site"]["power"]
    p["rpp"]["count"] = racks // 8
    ch = p["chain"]
    ch["utility"]["kva"] *= 32
    for k in ("transformers", "switchboards"):
        ch[k]["count"] = 64
    ch["generators"]["count"] = 64
    ch["ups"]["systems"] = 64
    ch["rpps"]["count"] = racks // 8
    return d


def main() -> None:
    from twin.power.chain import capacity_report, swing_report
    from twin.scenario.loader import validate_data

    print(machine())
    d = big_scenario_dict()
    s = validate_data(copy.deepcopy(d), "bench")
    best = min(_timed(lambda: capacity_report(s)) for _ in range(5))
    rep = capacity_report(s)
    print(f"capacity_report, {rep['rack_positions']} racks, {len(rep['stages'])} stages: "
          f"best of 5 {best * 1e3:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "big.yaml"
        f.write_text(yaml.safe_dump(d))
        walls = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "twin.cli", "capacity", str(f), "--no-swing", "--json"],
                           check=True, capture_output=True)
            walls.append(time.perf_counter() - t0)
        print(f"`twin capacity --no-swing` end to end (interpreter start and imports included): "
              f"best of 3 {min(walls):.2f} s")
    bv = validate_data(yaml.safe_load((ROOT / "scenarios" / "blue_vela.yaml").read_text()), "bv")
    job = dict(nodes=128, step_s=3.29, exposed_s=1.04, checkpoint_s=1.53, restart_s=600.0)
    t = min(_timed(lambda: swing_report(bv, **job)) for _ in range(5))
    print(f"swing_report (1800 s window, 10 ms grid, GPU phases + 1 MW battery): best of 5 {t * 1e3:.1f} ms")
    t = min(_timed(lambda: swing_report(bv, **job, window_s=86400.0)) for _ in range(2))
    print(f"swing_report (one day window, 8.64 M fine samples): best of 2 {t:.2f} s")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
