"""Figures and numbers of the cooling section of docs/validation.md (issue 12).

Run: .venv/bin/python assets/cooling/make_figures.py   (writes assets/cooling/*.png, prints the numbers)
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from twin.power.cooling_plant import cooling_plant_power_w, economizer_hours  # noqa: E402
from twin.thermal import hall_air_volume_m3, inlet_model, rack_airflow_m3_s, row_hall  # noqa: E402
from twin.thermal.buoyancy import buoyant_flow  # noqa: E402
from twin.thermal.capacity import capped_steady_state  # noqa: E402
from twin.thermal.events import (  # noqa: E402
    ThermalMasses,
    adiabatic_temperature_bound_c,
    advance,
    hall_steady_state,
    operator_for,
)
from twin.thermal.fans import crah_fan_power_w  # noqa: E402
from twin.thermal.weather import read_weather  # noqa: E402

OUT = Path(__file__).resolve().parent


def fig_faults():
    """All units of a 40-rack hall out for 20 min, once between two samples (10:10) and
    once straddling one (10:50): the event-driven trajectory and what hourly samples see."""
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=8.0)
    v = np.full(g.n_racks, 0.8)
    heat = np.full(g.n_racks, 10e3)
    full = inlet_model(g, v)
    m = ThermalMasses.of(g.n_racks, hall_air_volume_m3(g), g.cooling_airflow_m3_s)
    gpu = {"gpu_power_w": np.full(g.n_racks, 700.0), "gpu_thermal_resistance_k_per_w": np.full(g.n_racks, 0.075)}
    fig, ax = plt.subplots(figsize=(7, 3.6))
    out = {}
    for start_min, colour in ((10, "C0"), (50, "C1")):
        st = hall_steady_state(full, heat, chilled_water_temp_c=12.0, time_s=10 * 3600.0)  # 10:00
        t_fault = 3600.0 * 10 + 60.0 * start_min
        times, peaks = [], []
        seq = [(full, t_fault - st.time_s), (None, 1200.0), (full, 2 * 3600.0 - (t_fault + 1200.0 - 10 * 3600.0))]
        st0 = st
        for model, dur in seq:
            op = operator_for(model, m, v, step_s=5.0)
            seg = advance(st, model, dur, heat, m, operator=op, **gpu)
            times.append(seg.time_s)
            peaks.append(seg.max_inlet_series_c)
            st = seg.state
        t = np.concatenate(times) / 3600.0
        p = np.concatenate(peaks)
        ax.plot(t, p, color=colour, label=f"all units out 10:{start_min:02d}-{(start_min + 20) // 60 + 10}:"
                                          f"{(start_min + 20) % 60:02d} (event-driven)")
        hours = np.array([10.0, 11.0, 12.0])
        ax.plot(hours, np.interp(hours, t, p), "o", color=colour, ms=6)
        bound = adiabatic_temperature_bound_c(st0, heat, m, 1200.0)
        out[start_min] = (float(p.max()), float(np.interp(hours, t, p).max()), bound)
    ax.axhline(32.0, color="k", ls=":", lw=1)
    ax.text(10.02, 32.3, "ASHRAE A1 allowable 32 C", fontsize=8)
    ax.set_xlabel("time of day [h]")
    ax.set_ylabel("hottest rack inlet [C]")
    ax.set_title("Cooling loss between samples: dots = what hourly samples see")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(OUT / "fault_subsample.png", dpi=110)
    plt.close(fig)
    for k, (peak, sampled, bound) in out.items():
        print(f"fault at 10:{k:02d}: peak {peak:.2f} C, hourly samples {sampled:.2f} C, adiabatic bound {bound:.1f} C")


def fig_buoyancy():
    """Hottest and mean inlet of a balanced open hall, with enclosures and with cold-aisle
    containment, potential flow (c_b = 0) against the buoyant exchange (c_b = 0.3, 0.6)."""
    g0 = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=6.1, n_layers=4, containment_leakage_fraction=0.05)
    heat = np.full(g0.n_racks, 10e3)
    v = rack_airflow_m3_s(heat, 15.0)
    cases = {"open": g0, "no blanking (10 %)": replace(g0, rack_bypass_fraction=0.1),
             "enclosures": replace(g0, rack_enclosed=np.ones(g0.n_racks, bool)),
             "cold-aisle contained": replace(g0, containment="cold_aisle")}
    res = {}
    for c in (0.0, 0.3, 0.6):
        for name, g in cases.items():
            bf = buoyant_flow(g, heat, v, coefficient=c)
            t = bf.problem.inlet_temp_c(bf.temp_c, heat)
            res[(name, c)] = (float(t.max()), float(t.mean()))
    fig, ax = plt.subplots(figsize=(7, 3.4))
    x = np.arange(len(cases))
    for k, c in enumerate((0.0, 0.3, 0.6)):
        ax.bar(x + (k - 1) * 0.27, [res[(n, c)][0] - 18.0 for n in cases], 0.27,
               label="potential flow" if c == 0 else f"buoyant, c_b = {c}")
    ax.set_xticks(x, list(cases), fontsize=8)
    ax.set_ylabel("hottest inlet above supply [K]")
    ax.set_title("40 racks at 10 kW, 4 layers, cooling air 1.1 x rack air")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "buoyancy_containment.png", dpi=110)
    plt.close(fig)
    for (name, c), (mx, mean) in res.items():
        print(f"{name:22s} c_b={c:.1f}: hottest {mx:.2f} C, mean {mean:.2f} C")


def fig_setpoint():
    """A year of Greensboro weather (TMY3): cooling energy and economizer hours against the
    supply-air set point, dry cooler and cooling tower."""
    w = read_weather("723170TYA.CSV")
    heat = np.full(8760, 1.5e6)
    fan = 12 * crah_fan_power_w(10.0, 10.0, 500.0, 0.6)
    sps = np.arange(16.0, 28.1, 1.0)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
    for kind in ("dry_cooler", "cooling_tower"):
        e, h = [], []
        for sp in sps:
            r = cooling_plant_power_w(heat, w.dry_bulb_c, w.wet_bulb_c, supply_air_setpoint_c=sp, heat_rejection=kind,
                                      crah_fan_w=fan)
            e.append(r["total"].sum() / 1e6)
            h.append(economizer_hours(r["economizer_fraction"], 3600.0))
        a1.plot(sps, e, "o-", ms=3, label=kind.replace("_", " "))
        a2.plot(sps, h, "o-", ms=3, label=kind.replace("_", " "))
        print(f"{kind}: 18 C {e[2]:.0f} MWh / {h[2]:.0f} h econ; 24 C {e[8]:.0f} MWh / {h[8]:.0f} h "
              f"({1 - e[8] / e[2]:.1%} less energy)")
    a1.set_xlabel("supply-air set point [C]")
    a1.set_ylabel("cooling energy [MWh/yr]")
    a2.set_xlabel("supply-air set point [C]")
    a2.set_ylabel("economizer hours [h/yr]")
    a1.legend(fontsize=8)
    fig.suptitle("1.5 MW of IT in Greensboro NC (TMY3); every inlet rises 1 K per K of set point", fontsize=9)
    fig.tight_layout()
    fig.savefig(OUT / "setpoint_tradeoff.png", dpi=110)
    plt.close(fig)


def fig_capacity():
    """One unit of a 40-rack hall loses capacity: its supply warms, neighbours take the rest."""
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=10.0, cooling_capacity_w=150e3)
    m = inlet_model(g, np.full(g.n_racks, 0.9))
    heat = np.full(g.n_racks, 11e3)
    caps = np.linspace(20e3, 150e3, 27)
    hot, sup, marg = [], [], []
    for c in caps:
        cs = capped_steady_state(m, heat, capacity_w=np.array([c, 150e3, 150e3, 150e3]))
        hot.append(cs.inlet_temp_c.max() if cs.feasible else np.nan)
        sup.append(cs.supply_temp_c[0] if cs.feasible else np.nan)
        marg.append(cs.capacity_margin_w / 1e3)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(caps / 1e3, hot, label="hottest inlet")
    ax.plot(caps / 1e3, sup, label="supply of the weak unit")
    ax.set_xlabel("capacity of unit 0 [kW] (others 150 kW; 440 kW of racks)")
    ax.set_ylabel("[C]")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "capacity_one_unit.png", dpi=110)
    plt.close(fig)
    print(f"unit 0 at 60 kW: hottest inlet {np.interp(60e3, caps, hot):.2f} C, its supply "
          f"{np.interp(60e3, caps, sup):.2f} C, margin {np.interp(60e3, caps, marg):.1f} kW")


if __name__ == "__main__":
    fig_capacity()
    fig_setpoint()
    fig_faults()
    fig_buoyancy()
