"""Room benchmark of the buoyant air model (issue 12): what a published measurement could
tell the plume coefficient c_b.

No published table of measured rack-inlet temperatures with its room layout was reachable
(what was searched and found: docs/validation.md, cooling section), so nothing is fitted
here. This prints, for the 40-rack row hall of twin.studies.room_benchmark, the hottest and
mean inlet rise above supply over cooling-air / rack-air ratio x c_b, open and with
contained cold aisles: the resolution a benchmark needs to fit c_b, and what it must report.

Run: .venv/bin/python bench/validate_room.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small factorisations: see bench_cooling

import time  # noqa: E402

from machine import machine  # noqa: E402

from twin.studies.room_benchmark import plume_coefficient_sensitivity  # noqa: E402


def main() -> None:
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; machine {machine()}")
    t0 = time.process_time()
    s = plume_coefficient_sensitivity()
    cpu = time.process_time() - t0
    head = "  ".join(f"{'c_b=' + format(c, 'g'):^13s}" for c in s.coefficients)
    print(f"inlet rise above supply [K]; 40 racks x 10 kW, 15 K rise, 4 layers\n"
          f"{'layout':11s} {'ratio':>5s}  {head}   span\n{'':18s}"
          + "  ".join(["  hot / mean "] * s.coefficients.size) + "   hot / mean")
    for i, layout in enumerate(s.layouts):
        for j, r in enumerate(s.airflow_ratios):
            cells = "  ".join(f"{s.hottest_inlet_rise_k[i, j, k]:5.2f} / {s.mean_inlet_rise_k[i, j, k]:5.2f}"
                              for k in range(s.coefficients.size))
            print(f"{layout:11s} {r:5.2f}  {cells}   {s.span_k('hottest')[i, j]:4.2f} / "
                  f"{s.span_k('mean')[i, j]:4.2f}")
    n = len(s.layouts) * s.airflow_ratios.size * s.coefficients.size
    print(f"{n} buoyant solves in {cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
