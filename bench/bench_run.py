"""Time `twin run scenarios/blue_vela.yaml` (nine months) end to end, as a user runs it.

Prints wall time (best of N), the simulated span and the speed-up over real time, plus the
in-process simulate() time without interpreter start-up and file writing.
Target (issue 2): under 10 s on 2 cores, i.e. over 2,000,000x real time.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import machine

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = ROOT / "scenarios" / "blue_vela.yaml"
REPEATS = 3


def main() -> None:
    import twin

    scenario = twin.load_scenario(SCENARIO)
    days = scenario.simulation.duration_days
    cli = []
    for _ in range(REPEATS):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "twin.cli", "run", str(SCENARIO), "--out", f"{tmp}/out"],
                           check=True, capture_output=True)
            cli.append(time.perf_counter() - t0)
    sim = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        twin.simulate(scenario)
        sim.append(time.perf_counter() - t0)
    best_cli, best_sim = min(cli), min(sim)
    print(f"machine: {machine()}")
    print(f"twin run blue_vela ({days:g} days): best {best_cli:.2f} s of {REPEATS} "
          f"(all: {', '.join(f'{t:.2f}' for t in cli)}) -> {days * 86400 / best_cli:,.0f}x real time")
    print(f"simulate() only: best {best_sim:.2f} s -> {days * 86400 / best_sim:,.0f}x real time")


if __name__ == "__main__":
    main()
