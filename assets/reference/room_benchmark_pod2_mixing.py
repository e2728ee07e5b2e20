"""POD 2 with Richardson-damped vertical mixing (issue 12, point d; twin.thermal.mixing).

Prints, for the floor and wall-jet supplies and every rack-airflow option, the rack-front
strip error (mean absolute / bias, K) on October 2019 (ten configurations) and the held-out
January 2018 pod with the constant eddy diffusivity (shipped) and with the vertical one
damped by the gradient Richardson number (Munk & Anderson 1948; Pacanowski & Philander
1981; Munk & Anderson with the shear at the top edge of the coolers' jets and the rack
exhausts and under the exhaust plumes' ceiling jets added, ``munk_anderson_jets``: Brown &
Roshko 1974's mixing-layer growth, Rouse, Yih & Humphreys 1952's line plume; Chen & Xu 1998's
flow-dependent eddy diffusivity nu_t = 0.03874 |V| l on every face, damped by Munk & Anderson on
vertical ones, ``chen_xu``); then the inlet rise above supply split into the two-zone energy-balance bound and
the mixing excess over it, twin against pod, from light to heavy load.

Nothing is fitted: the laws' constants are the sources', phi (fan curve) stays the value
fitted on day 1 before this study.

Run: .venv/bin/python assets/reference/room_benchmark_pod2_mixing.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

from twin.studies.room_benchmark import (  # noqa: E402
    pod2_2018_cases,
    pod2_2018_comparison,
    pod2_cases,
    pod2_comparison,
)
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K  # noqa: E402

LAWS = ("constant", "munk_anderson", "pacanowski_philander", "munk_anderson_jets", "chen_xu")


def mixing_excess_k(comparison, cases) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(two-zone bound, twin excess over it, pod excess over it) [K] per configuration: the
    mean strip rise above the flow-weighted supply minus Q / (rho cp) (1 / V_cool - 1 / V_rack)."""
    bound, twin, pod = [], [], []
    for i, case in enumerate(cases):
        ts = np.average(case.unit_discharge_c, weights=case.unit_airflow_m3_s)
        q, vc, vr = case.rack_heat_w.sum(), case.unit_airflow_m3_s.sum(), case.rack_airflow_m3_s.sum()
        tz = q / AIR_VOLUMETRIC_HEAT_J_M3_K * (1 / vc - 1 / vr)
        bound.append(tz)
        twin.append(comparison.twin_strip_c[i].mean() - ts - tz)
        pod.append(comparison.strip_front_c[i].mean() - ts - tz)
    return np.array(bound), np.array(twin), np.array(pod)


def main() -> None:
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {os.getloadavg()[0]:.2f}")
    print("rack-front strips, twin - measured: MAE / bias [K]")
    for supply in ("floor", "wall_jet"):
        for law in LAWS:
            row = []
            t0 = time.process_time()
            for ra in ("fan_law", "strip_balance", "fan_curve"):
                c = pod2_comparison(ra, supply=supply, mixing=law)
                e = c.strip_error_k
                row.append(f"{ra} {c.strip_mae_k():.2f} / {e.mean():+.2f}")
                if ra == "fan_curve":
                    row.append(f"(day 1 / 2 {np.abs(e[:5]).mean():.2f} / {np.abs(e[5:]).mean():.2f}, "
                               f"by height {' / '.join(f'{c.strip_mae_k(k):.2f}' for k in range(3))})")
            h = pod2_2018_comparison(supply=supply, mixing=law)
            row.append(f"| Jan 2018 {h.strip_mae_k():.2f} / {h.strip_error_k.mean():+.2f} "
                       f"(by height {' / '.join(f'{h.strip_mae_k(k):.2f}' for k in range(3))})")
            print(f"  {supply:8s} {law:20s} " + "  ".join(row) + f"  [{time.process_time() - t0:.1f} s CPU]")
    print("wall jet, fan curve (Oct 2019) / strip balance (Jan 2018): excess over the two-zone bound [K]")
    for name, cases, run in (("Oct 2019", pod2_cases("fan_curve"),
                              lambda m: pod2_comparison("fan_curve", supply="wall_jet", mixing=m)),
                             ("Jan 2018", pod2_2018_cases(), lambda m: pod2_2018_comparison(supply="wall_jet", mixing=m))):
        kw = np.array([c.rack_heat_w.sum() for c in cases]) / 1e3
        order = np.argsort(kw)
        for law in LAWS:
            bound, twin, pod = mixing_excess_k(run(law), cases)
            lo, hi = order[0], order[-1]
            print(f"  {name} {law:20s} {kw[lo]:.0f} -> {kw[hi]:.0f} kW: bound {bound[lo]:.2f} -> {bound[hi]:.2f}, "
                  f"twin {twin[lo]:.2f} -> {twin[hi]:.2f} (growth {twin[hi] - twin[lo]:+.2f}), "
                  f"pod {pod[lo]:.2f} -> {pod[hi]:.2f} (growth {pod[hi] - pod[lo]:+.2f}); "
                  f"by load: twin {' '.join(f'{twin[i]:.1f}' for i in order)}, pod {' '.join(f'{pod[i]:.1f}' for i in order)}")


if __name__ == "__main__":
    main()
