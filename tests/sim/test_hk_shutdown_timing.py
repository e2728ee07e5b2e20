"""Inlet-protection shutdowns at their own time (issue 12, audit gap 1).

Blue Vela from 2024-09-01, every CRAH out 10:10-12:10 on 2024-09-15 (the audit's
reproduction). The physical hall carries its thermal state through the fault; a rack whose
inlet reaches the servers' 43 C protection must shut down when its inlet gets there, not at
the next hourly sample: its jobs stop, its power and heat go and no job starts on it, and it
comes back an hour after its trip.

The reference crossing time of each rack is the physics' own (``hall_events.advance`` from the
hall's carried state at the fault, with the heat and GPU power of that moment, integrated
uninterrupted with ``limit_c`` at the protection limit; the same linear interpolation
within a step). The engine wakes the hall at its forecast of that time, on another step grid
(its segments end at its wakes), so the two agree within the solver's step: 10 s
(``hall_events.advance``'s ``step_s``).
"""

from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.invariants import check_results
from twin.scenario import load_scenario
from twin.sim.hall_thermal import HallThermal
from twin.thermal import SERVER_INLET_SHUTDOWN_C
from twin.thermal import events as hall_events

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
UNITS = ("crah_w1", "crah_w2", "crah_w3", "crah_w4", "crah_e1", "crah_e2", "crah_e3", "crah_e4",
         "crah_n1", "crah_n2", "crah_s1", "crah_s2")
FAULT = "2024-09-15T10:10:00"
STEP_S = 10.0        # hall_events.advance's largest step: the solver's output step


@cache
def _run():
    """The run and, from the last of the twelve trips (no unit left), what the hall's
    forecast starts from: (time [s], state, heat, model, operator, plant and GPU arguments,
    masses)."""
    seen = []
    forecast = HallThermal._forecast

    def spy(self, hall, dur):
        self._resolve(hall)                         # the running units' model, as _forecast takes it
        seen.append((self.env.now, hall.hstate, self._heat(hall).copy(), hall.model, self._operator(hall),
                     self._plant_kwargs(hall), self._gpu_kwargs(hall), hall.masses))
        return forecast(self, hall, dur)

    events = ",".join(f'{{time: "{FAULT}", unit: "{u}", duration_s: 7200}}' for u in UNITS)
    mp = pytest.MonkeyPatch()
    mp.setattr(HallThermal, "_forecast", spy)
    try:
        r = twin.simulate(load_scenario(BV, ["simulation.start=2024-09-01", "simulation.duration_days=16",
                                             f"site.cooling_faults.events=[{events}]"]))
    finally:
        mp.undo()
    return r, seen[-1]


def _shutdowns(r):
    ev = r.events
    return ev[ev["kind"] == "rack_thermal_shutdown"]


@cache
def _reference_crossing_s() -> np.ndarray:
    """The physics' own crossing of the protection limit [s, absolute] per rack, from the
    hall's state at the fault, integrated uninterrupted until the next sample (11:00)."""
    _, (t0, state, heat, model, op, plant_kw, gpu_kw, masses) = _run()
    seg = hall_events.advance(replace(state, rack_on=np.ones(heat.size, bool)), model, 3000.0, heat, masses,
                              operator=op, **{**plant_kw, **gpu_kw, "limit_c": SERVER_INLET_SHUTDOWN_C})
    return seg.time_to_inlet_limit_s


def test_each_rack_shuts_down_at_its_own_crossing_time():
    r, (t0, *_) = _run()
    ref = _reference_crossing_s()
    assert np.isfinite(ref).all()                   # every rack crosses without a unit running
    assert 2.0 * 60 < ref.min() - t0 < 10.0 * 60    # 4.6 min after the trip
    sh = _shutdowns(r)
    first = sh[sh["time_s"] < t0 + 3600.0].groupby("target")["time_s"].min()
    names = list(r.dataset.rack.values)
    assert len(first) == len(names) == 128
    got = np.array([first[n] for n in names])
    # inside the fault window, each at its own crossing within the solver's step
    assert (got > t0).all() and (got < t0 + 2 * 3600.0).all()
    np.testing.assert_allclose(got, ref, rtol=0, atol=STEP_S)


def test_no_busy_gpu_or_it_power_without_healthy_gpus():
    r, _ = _run()
    warnings = [w["message"] for w in check_results(r) if w["check"] == "accounting"]
    assert not [m for m in warnings if "gpus_busy" in m], warnings
    ds = r.dataset
    busy, healthy = ds.gpus_busy.values, ds.gpus_healthy.values
    assert (busy <= healthy).all()
    it_kw = ds.facility_it_power_w.values / 1e3
    # the 11:00 sample, with every rack shut since 10:14: no IT power, nothing busy
    at = list(ds.time.values).index(np.datetime64("2024-09-15T11:00"))
    assert healthy[at] == 0 and busy[at] == 0
    assert it_kw[at] == pytest.approx(0.0, abs=1e-9)
    # through the fault and the racks' restarts (burn-in before delivery draws power with no
    # healthy GPU: outside this window)
    win = (ds.time.values >= np.datetime64("2024-09-15T10:00")) & (ds.time.values <= np.datetime64("2024-09-15T14:00"))
    assert np.all(it_kw[win & (healthy == 0)] < 1e-6)


def test_rack_restarts_an_hour_after_its_trip():
    r, (t0, *_) = _run()
    ev = r.events
    sh = _shutdowns(r)
    trip = float(sh["time_s"].min())
    restarts = ev[ev["kind"] == "rack_thermal_restart"]
    first = restarts[restarts["time_s"] > trip]["time_s"].min()
    assert first == pytest.approx(trip + 3600.0, abs=1e-6)
    # an hour after the physics' crossing (within the solver's step), not after a sample
    assert first == pytest.approx(_reference_crossing_s().min() + 3600.0, abs=STEP_S)


def test_no_job_starts_on_a_tripped_rack():
    r, (t0, *_) = _run()
    ev = r.events
    sh = _shutdowns(r)
    crossed = float(_reference_crossing_s().min())  # every rack of the hall crosses here
    trip = float(sh["time_s"].min())
    assert (sh["time_s"] == trip).sum() == 128
    restart = float(ev[(ev["kind"] == "rack_thermal_restart") & (ev["time_s"] > trip)]["time_s"].min())
    # nothing may start on the hall's racks from their crossing until they are back
    starts = ev[(ev["kind"] == "job_start") & (ev["time_s"] > crossed) & (ev["time_s"] < restart)]
    assert starts.empty, starts[["time", "target"]].to_string()
    # the jobs running at the trip stop there, with their checkpoints: none is written after it
    stopped = ev[(ev["kind"] == "job_interrupted") & (ev["time_s"] == trip)]
    assert len(stopped) >= 3 and all("rack inlet protection" in d for d in stopped["detail"])
    assert ev[(ev["kind"] == "checkpoint") & (ev["time_s"] > crossed + STEP_S) & (ev["time_s"] < restart)].empty


def test_the_physics_reports_each_racks_protection_crossing_and_can_stop_at_the_first():
    # two of four units left on a row hall with uneven heat: racks cross 43 C at different
    # times. time_to_inlet_shutdown_s is the first crossing of the protection limit, the same
    # interpolation as the A1 time with limit_c at 43 C; stop_on_trip ends the segment at the
    # end of the step of the first watched crossing with the same numbers up to there
    from twin.thermal import hall_air_volume_m3, inlet_model, row_hall

    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=8.0)
    v = np.full(g.n_racks, 0.8)
    heat = np.linspace(8e3, 16e3, g.n_racks)
    full = inlet_model(g, v, np.ones(4, bool))
    half = inlet_model(g, v, np.array([True, False, True, False]))
    m = hall_events.ThermalMasses.of(g.n_racks, hall_air_volume_m3(g), g.cooling_airflow_m3_s)
    st = hall_events.hall_steady_state(full, heat, chilled_water_temp_c=12.0)
    op = hall_events.operator_for(half, m, v)
    kw = {"operator": op, "capacity_w": np.full(4, 60e3), "inlet_shutdown_c": SERVER_INLET_SHUTDOWN_C}
    seg = hall_events.advance(st, half, 3600.0, heat, m, **kw)
    ref = hall_events.advance(st, half, 3600.0, heat, m, limit_c=SERVER_INLET_SHUTDOWN_C, **kw)
    t = seg.time_to_inlet_shutdown_s
    assert t is not None
    np.testing.assert_array_equal(t, ref.time_to_inlet_limit_s)
    crossed = np.isfinite(t)
    assert 3 <= crossed.sum() < g.n_racks and np.unique(t[crossed]).size >= 3
    # every rack that crossed is off at the end, and none that did not
    assert np.array_equal(~seg.state.rack_on, crossed)
    first = float(t[crossed].min())
    stop = hall_events.advance(st, half, 3600.0, heat, m, stop_on_trip=np.ones(g.n_racks, bool), **kw)
    assert stop.time_s[-1] - STEP_S < first <= stop.time_s[-1]
    assert float(np.nanmin(stop.time_to_inlet_shutdown_s)) == first
    np.testing.assert_array_equal(stop.max_inlet_series_c, seg.max_inlet_series_c[:stop.time_s.size])
    # watching only racks that never cross runs the whole segment
    late = hall_events.advance(st, half, 3600.0, heat, m, stop_on_trip=~crossed, **kw)
    assert late.time_s[-1] == seg.time_s[-1]
    np.testing.assert_array_equal(late.state.it_temp_c, seg.state.it_temp_c)
