"""The cooling-fault forecast as data (issue 12, audit gap 2): minutes to the ASHRAE A1 limit,
to GPU slowdown and to rack shutdown, per cooling unit in results.nc and the shortest over a
run's faults as KPIs, from the same forecast as the ``cooling_fault`` event's text.

Hand case: one rack, no unit running (the unit of a one-unit hall has tripped). The room
is one mixed air node T of capacity C_a = rho cp V_air, the rack an IT mass y of capacity
C_it with heat Q, exchanging G = rho cp V_r (y - T); the inlet is T. No heat leaves, so

    C_it y + C_a T = E_0 + Q t,
    d = y - T:  dd/dt = Q / C_it - d / tau,  1/tau = G (1/C_it + 1/C_a),
    d(t) = d_inf + (d_0 - d_inf) exp(-t / tau),  d_inf = Q tau / C_it,
    T(t) = T_0 + (Q t - C_it (d(t) - d_0)) / (C_it + C_a).

T rises monotonically (dT/dt = G d / C_a > 0), so the time to a threshold theta is the root
of T(t) = theta (bisection). The GPU sits at T + R_th P_gpu at full clock, so slowdown comes
when T reaches T_slow - R_th P_gpu; rack shutdown when T reaches 43 C.
"""

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import twin
from twin.scenario import load_scenario
from twin.sim.hall_thermal import FaultForecast
from twin.thermal import SERVER_INLET_SHUTDOWN_C
from twin.thermal import events as hall_events
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
UNITS = ("crah_w1", "crah_w2", "crah_w3", "crah_w4", "crah_e1", "crah_e2", "crah_e3", "crah_e4",
         "crah_n1", "crah_n2", "crah_s1", "crah_s2")

Q_W = 20e3            # rack heat
V_R = 1.0             # rack airflow [m3/s]
C_IT = 2.5e5          # IT heat capacity [J/K]
V_AIR = 150.0         # room air volume [m3]
T0_C = 24.0           # room (and inlet) at the trip
SLOW_C, RISE_K = 87.0, 50.0   # GPU slowdown temperature, die rise at full clock


def _hand_minutes(theta_c: float) -> float:
    """Minutes until the room reaches theta_c, from the closed form above."""
    g = AIR_VOLUMETRIC_HEAT_J_M3_K * V_R
    c_a = AIR_VOLUMETRIC_HEAT_J_M3_K * V_AIR
    tau = 1.0 / (g * (1.0 / C_IT + 1.0 / c_a))
    d0 = Q_W / g
    d_inf = Q_W * tau / C_IT

    def room(t):
        d = d_inf + (d0 - d_inf) * np.exp(-t / tau)
        return T0_C + (Q_W * t - C_IT * (d - d0)) / (C_IT + c_a)

    lo, hi = 0.0, 7200.0
    assert room(hi) > theta_c
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if room(mid) < theta_c else (lo, mid)
    return 0.5 * (lo + hi) / 60.0


def _forecast(gpu: bool) -> FaultForecast:
    masses = hall_events.ThermalMasses.of(1, V_AIR, [5.0], it_heat_capacity_j_k=C_IT)
    g = AIR_VOLUMETRIC_HEAT_J_M3_K * V_R
    t0 = 1000.0
    # at the trip: the room at T0, the exhaust Q / G above it (the rack's steady rise)
    st = hall_events.HallThermalState(t0, np.array([T0_C + Q_W / g]), np.array([T0_C]), 12.0, np.ones(1, bool))
    op = hall_events.operator_for(None, masses, np.array([V_R]), step_s=2.0)
    kw: dict[str, Any] = {"gpu_power_w": np.array([RISE_K / 0.1]), "gpu_thermal_resistance_k_per_w": 0.1,
                          "slowdown_c": SLOW_C} if gpu else {}
    seg = hall_events.advance(st, None, 3600.0, np.array([Q_W]), masses, operator=op,
                              inlet_shutdown_c=SERVER_INLET_SHUTDOWN_C, **kw)
    return FaultForecast.of_segment(seg, t0, units_running=0)


def test_forecast_minutes_follow_the_energy_balance_of_one_rack_and_its_room():
    with_gpu = _forecast(gpu=True)
    a1, slow, _ = with_gpu.shortest_minutes()
    # A1 (32 C) and GPU slowdown (87 - 50 = 37 C of room) come before any throttling, at
    # the full heat of the closed form; 2 s steps, linear interpolation of the crossing
    assert a1 == pytest.approx(_hand_minutes(32.0), abs=2.0 / 60)
    assert slow == pytest.approx(_hand_minutes(SLOW_C - RISE_K), abs=2.0 / 60)
    assert 1.0 < a1 < slow
    # without GPU data the rack keeps its full heat up to its protection (43 C)
    bare = _forecast(gpu=False)
    a1_b, slow_b, shut_b = bare.shortest_minutes()
    assert a1_b == a1 and np.isnan(slow_b)
    assert shut_b == pytest.approx(_hand_minutes(SERVER_INLET_SHUTDOWN_C), abs=2.0 / 60)
    # the event text carries the same numbers
    text = bare.text()
    assert f"inlet above 32 C: {a1_b:.1f} min (1 racks)" in text
    assert f"rack shutdown ({SERVER_INLET_SHUTDOWN_C:g} C inlet): {shut_b:.1f} min (1 racks)" in text


@cache
def _run():
    events = ",".join(f'{{time: "2024-09-01T10:10:00", unit: "{u}", duration_s: 7200}}' for u in UNITS)
    return twin.simulate(load_scenario(BV, ["simulation.start=2024-09-01", "simulation.duration_days=1",
                                            f"site.cooling_faults.events=[{events}]"]))


def test_kpis_are_the_forecast_of_the_last_trip_of_an_instant_and_match_its_text():
    import re

    r = _run()
    k = r.kpis
    ev = r.events
    last = ev[ev["kind"] == "cooling_fault"]["detail"].iloc[-1]     # 0 units running: the forecast in force

    def minutes(label):
        return float(re.search(label + r": ([0-9.]+) min", last).group(1))
    assert k["cooling_fault_min_minutes_to_a1"] == pytest.approx(minutes("inlet above 32 C"), abs=0.05)
    assert k["cooling_fault_min_minutes_to_gpu_slowdown"] == pytest.approx(minutes("GPU slowdown"), abs=0.05)
    assert k["cooling_fault_min_minutes_to_rack_shutdown"] == pytest.approx(
        minutes(rf"rack shutdown \({SERVER_INLET_SHUTDOWN_C:g} C inlet\)"), abs=0.05)
    # the intermediate forecasts (one unit left: 0.0 min to 32 C here) describe states that
    # last no time: not counted
    every = [float(m) for m in ev[ev["kind"] == "cooling_fault"]["detail"].str.extract(
        r"inlet above 32 C: ([0-9.]+) min")[0].dropna()]
    assert len(every) >= 8 and min(every) < k["cooling_fault_min_minutes_to_a1"] - 0.2
    # every unit tripped at that instant carries it in results.nc
    ds = r.dataset
    per_unit = ds["cooling_fault_minutes_to_a1"].values
    assert per_unit.shape == (12,) and np.all(per_unit == k["cooling_fault_min_minutes_to_a1"])
    assert ds["cooling_fault_minutes_to_rack_shutdown"].attrs["units"] == "min"
    # the forecast trip is when the racks shut down (within the solver's 10 s step)
    fault_s = float(ev[ev["kind"] == "cooling_fault"]["time_s"].iloc[-1])
    trip_min = (float(ev[ev["kind"] == "rack_thermal_shutdown"]["time_s"].min()) - fault_s) / 60
    assert trip_min == pytest.approx(k["cooling_fault_min_minutes_to_rack_shutdown"], abs=10.0 / 60)


def test_a_run_without_a_fault_has_nan_forecasts():
    r = twin.simulate(load_scenario(BV, ["simulation.duration_days=2"]))
    for name in ("a1", "gpu_slowdown", "rack_shutdown"):
        assert np.isnan(r.kpis[f"cooling_fault_min_minutes_to_{name}"])
        assert np.isnan(r.dataset[f"cooling_fault_minutes_to_{name}"].values).all()
