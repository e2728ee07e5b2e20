"""Figure and numbers of the POD 2 room benchmark (docs/validation.md, cooling; issue 12).

Run: .venv/bin/python assets/reference/room_benchmark_pod2_figure.py
(writes docs/img/room_benchmark_pod2.png and prints the table of docs/validation.md)
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from twin.studies.room_benchmark import (  # noqa: E402
    pod2_2018_comparison,
    pod2_cases,
    pod2_comparison,
    pod2_layout,
)
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "docs" / "img" / "room_benchmark_pod2.png"


def two_zone_rise_k(case) -> float:
    """Well-mixed two-zone balance: mean inlet rise = Q / (rho cp) (1/V_cool - 1/V_rack),
    zero when the coolers move more air than the racks [K]."""
    v_c, v_r = case.unit_airflow_m3_s.sum(), case.rack_airflow_m3_s.sum()
    return max(case.rack_heat_w.sum() / AIR_VOLUMETRIC_HEAT_J_M3_K * (1 / v_c - 1 / v_r), 0.0)


def main() -> None:
    cmp = {a: pod2_comparison(a) for a in ("fan_law", "strip_balance")}
    jet = {a: pod2_comparison(a, supply="wall_jet") for a in ("fan_law", "strip_balance", "fan_curve")}
    fan_curve_cases = pod2_cases("fan_curve")
    held = {s: pod2_2018_comparison(supply=s) for s in ("floor", "wall_jet")}
    cases = {a: pod2_cases(a) for a in cmp}
    lay = pod2_layout()
    print(f"{'config':11s} {'IT kW':>6s} {'r fan':>5s} {'r strip':>7s}  rise above supply [K]: servers / strips"
          " / two-zone (fan law) / twin racks (fan law) / twin racks (strip balance)")
    for i, case in enumerate(cases["fan_law"]):
        ts = np.average(case.unit_discharge_c, weights=case.unit_airflow_m3_s)
        c0, c1 = cmp["fan_law"], cmp["strip_balance"]
        print(f"{case.name:11s} {case.it_power_w / 1e3:6.1f} {c0.airflow_ratio[i]:5.2f} {c1.airflow_ratio[i]:7.2f}  "
              f"{case.server_inlet_c.mean() - ts:5.2f} / {case.strip_front_c.mean() - ts:5.2f} / "
              f"{two_zone_rise_k(case):5.2f} / {c0.twin_inlet_c[i].mean() - ts:5.2f} / {c1.twin_inlet_c[i].mean() - ts:5.2f}")
    for a, c in [(f"floor, {k}", v) for k, v in cmp.items()] + [(f"wall jet, {k}", v) for k, v in jet.items()] + [
            (f"held out 2018, {k}", v) for k, v in held.items()]:
        print(f"per configuration ({a}): " + ", ".join(
            f"{n} {e:.2f}" for n, e in zip(c.names, np.abs(c.strip_error_k).mean(axis=(1, 2)), strict=True)))
        print(f"{a}: strip MAE {c.strip_mae_k():.2f} K (bottom {c.strip_mae_k(0):.2f}, middle {c.strip_mae_k(1):.2f}, "
              f"top {c.strip_mae_k(2):.2f}), bias {c.strip_error_k.mean():+.2f} K; server-sensor MAE "
              f"{c.server_mae_k():.2f} K, bias {c.server_error_k.mean():+.2f} K; {len(c.names)} solves in {c.cpu_s:.1f} s CPU")

    fig, ax = plt.subplots(1, 4, figsize=(20, 4.6))
    # (a) plan of the pod
    a = ax[0]
    room = lay["room"]
    a.add_patch(plt.Rectangle((0, 0), room["width_m"], room["depth_m"], fill=False, lw=1.5))
    a.add_patch(plt.Rectangle((0, 3.72), room["width_m"], room["depth_m"] - 3.72, color="0.9", lw=0))
    a.text(room["width_m"] / 2, 4.3, "walkway, 2.25 m ceiling", ha="center", fontsize=8)
    w = lay["racks"]["width_m"]
    for row in lay["racks"]["rows"]:
        for k, r in enumerate(row["racks"]):
            strip = r in lay["sensor_strips"]["racks"]
            a.add_patch(plt.Rectangle((row["x_from_m"], k * w), row["x_to_m"] - row["x_from_m"], w,
                                      fc="tab:orange" if strip else "wheat", ec="k", lw=0.5))
            a.text(0.5 * (row["x_from_m"] + row["x_to_m"]), (k + 0.5) * w, str(r), ha="center", va="center", fontsize=7)
        x_in = row["x_to_m"] if row["intake"] == "+x" else row["x_from_m"]
        a.annotate("", (x_in + (0.35 if row["intake"] == "+x" else -0.35), 1.86), (x_in, 1.86),
                   arrowprops=dict(arrowstyle="<-", color="tab:blue"))
    for u in lay["coolers"]:
        a.add_patch(plt.Rectangle((u["x_from_m"], u["y_from_m"]), u["x_to_m"] - u["x_from_m"],
                                  u["y_to_m"] - u["y_from_m"], fc="tab:blue", alpha=0.6))
        a.text(0.5 * (u["x_from_m"] + u["x_to_m"]), 0.5 * (u["y_from_m"] + u["y_to_m"]), f"C{u['unit']}",
               ha="center", va="center", color="w", fontsize=8)
    a.text(3.52, 1.86, "hot\naisle", ha="center", va="center", fontsize=8, color="tab:red")
    a.set_xlim(-0.2, 7.15)
    a.set_ylim(-0.2, 5.1)
    a.set_aspect("equal")
    a.set_xlabel("x [m]")
    a.set_ylabel("y [m]")
    a.set_title("RISE SICS ICE POD 2 (plan; orange: racks\nwith sensor strips, blue: wall coolers)", fontsize=9)
    # (b) mean inlet rise above supply against load
    b = ax[1]
    it = np.array([c.it_power_w for c in cases["fan_law"]]) / 1e3
    ts = np.array([np.average(c.unit_discharge_c, weights=c.unit_airflow_m3_s) for c in cases["fan_law"]])
    o = np.argsort(it)
    b.plot(it[o], (np.array([c.server_inlet_c.mean() for c in cases["fan_law"]]) - ts)[o], "ks-",
           label="measured, server inlet sensors")
    b.plot(it[o], (cmp["fan_law"].strip_front_c.mean(axis=(1, 2)) - ts)[o], "kD--", mfc="w",
           label="measured, front sensor strips")
    b.plot(it[o], (cmp["fan_law"].twin_inlet_c.mean(1) - ts)[o], "o-", color="tab:red",
           label="twin, rack airflow from fan law")
    b.plot(it[o], (cmp["strip_balance"].twin_inlet_c.mean(1) - ts)[o], "o--", color="tab:orange",
           label="twin, rack airflow from strip balance")
    b.plot(it[o], (jet["fan_law"].twin_inlet_c.mean(1) - ts)[o], "^-", color="tab:purple",
           label="twin, wall-jet supply, fan law")
    b.plot(it[o], (jet["strip_balance"].twin_inlet_c.mean(1) - ts)[o], "^--", color="tab:green",
           label="twin, wall-jet supply, strip balance")
    b.plot(it[o], (jet["fan_curve"].twin_inlet_c.mean(1) - ts)[o], "^-", color="tab:blue",
           label="twin, wall-jet supply, fan curve (phi fitted on day 1)")
    b.plot(it[o], np.array([two_zone_rise_k(c) for c in cases["fan_law"]])[o], ":", color="0.4",
           label="well-mixed two-zone (fan law)")
    b.plot(it[o], np.array([two_zone_rise_k(c) for c in fan_curve_cases])[o], "-.", color="0.4",
           label="well-mixed two-zone (fan curve)")
    b.set_xlabel("IT power [kW]")
    b.set_ylabel("mean rack inlet above supply [K]")
    b.set_title("Inlet rise: flat in the pod; the twin's grows with load, its mixing\nabove the two-zone bound growing with the rack rise", fontsize=9)
    b.legend(fontsize=7)
    b.grid(alpha=0.3)
    # (c) vertical profile at the strips, loaded configurations
    c = ax[2]
    heights = lay["sensor_strips"]["heights_m"]
    loaded = [i for i, cs in enumerate(cases["fan_law"]) if cs.it_power_w > 50e3]
    for i in loaded:
        c.plot(cmp["fan_law"].strip_front_c[i].T - ts[i], heights, "k-", alpha=0.25, lw=0.8)
        c.plot(cmp["fan_law"].twin_strip_c[i].T - ts[i], heights, "-", color="tab:red", alpha=0.25, lw=0.8)
    c.plot(cmp["fan_law"].strip_front_c[loaded].mean(axis=(0, 1)) - ts[loaded].mean(), heights, "ks-", lw=2,
           label="measured (mean of 8 loaded cases x 4 strips)")
    c.plot(cmp["fan_law"].twin_strip_c[loaded].mean(axis=(0, 1)) - ts[loaded].mean(), heights, "o-",
           color="tab:red", lw=2, label="twin, floor supply (fan-law airflow)")
    c.plot(jet["strip_balance"].twin_strip_c[loaded].mean(axis=(0, 1)) - ts[loaded].mean(), heights, "^-",
           color="tab:green", lw=2, label="twin, wall jets (strip-balance airflow)")
    c.axhspan(0.3, 1.77, color="tab:green", alpha=0.08, label="servers (0.3-1.77 m)")
    c.set_xlabel("rack-front air above supply [K]")
    c.set_ylabel("height [m]")
    c.set_title("Rack-front profile: cold jets at mid-height in the pod", fontsize=9)
    c.legend(fontsize=7, loc="lower right")
    c.grid(alpha=0.3)
    # (d) held out: January 2018, every strip of every rack
    d = ax[3]
    for (name, h), mk, col in zip(held.items(), ("o", "^"), ("tab:red", "tab:green"), strict=True):
        d.plot(h.strip_front_c.ravel(), h.twin_strip_c.ravel(), mk, color=col, ms=3, alpha=0.6,
               label=f"{name.replace('_', ' ')}: MAE {h.strip_mae_k():.2f} K, bias {h.strip_error_k.mean():+.2f} K")
    lo = min(held["floor"].strip_front_c.min(), held["wall_jet"].twin_strip_c.min()) - 0.5
    hi = max(held["floor"].strip_front_c.max(), held["wall_jet"].twin_strip_c.max()) + 0.5
    d.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    d.fill_between([lo, hi], [lo - 2, hi - 2], [lo + 2, hi + 2], color="0.85", label="+-2 K")
    d.set_xlabel("measured rack-front air [C]")
    d.set_ylabel("twin [C]")
    d.set_title("Held out: POD 2 in January 2018 (10 racks x 3 heights x 6 steps)", fontsize=9)
    d.legend(fontsize=7, loc="upper left")
    d.grid(alpha=0.3)
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
