"""Legacy cooling model: inlet-protection shutdowns at their own time (issue 12, HK's follow-up).

lenovo_small (two racks, two in-row coolers, one training job over both racks) with
``site.cooling_system.model=legacy`` (the schema default) and hourly samples; both coolers
out 2025-01-07 10:10-12:10. The fault transient (``thermal.fault_transient``, made at the
second trip with no unit left) cuts each rack out when its inlet reaches the servers' 43 C
protection (``rack_shutdown_s``, 14.8 min after the trip). The rack must shut down then, not at
the next sample (11:00): its job stops there, and it comes back an hour after its trip.

The engine wakes at the transient's own time, so each shutdown equals ``t0 + rack_shutdown_s``
to the float; the tolerance stated is the transient's output step (``output_step_s``, 10 s,
as :meth:`HallThermal._transient` calls it), the resolution of its inlet trajectories.
Before the fix (parent of this test's commit) both racks shut at 11:00:00, 15 min late, and
came back at 12:00.
"""

from functools import cache
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.invariants import check_results
from twin.scenario import load_scenario
from twin.sim.hall_thermal import HallThermal

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
OUTPUT_STEP_S = 10.0      # HallThermal._transient's output_step_s
FAULT = "2025-01-07T10:10:00"


@cache
def _run():
    """The run and the (time [s], FaultTransient) of every legacy transient made."""
    seen = []
    real = HallThermal._transient

    def spy(self, h, before, dur):
        tr = real(self, h, before, dur)
        seen.append((self.env.now, tr))
        return tr

    ev = ",".join(f'{{time: "{FAULT}", unit: "{u}", duration_s: 7200}}' for u in ("crac_1", "crac_2"))
    mp = pytest.MonkeyPatch()
    mp.setattr(HallThermal, "_transient", spy)
    try:
        r = twin.simulate(load_scenario(SMALL, [
            "simulation.duration_days=2", "failures.enabled=false", "simulation.sample_interval_s=3600",
            "site.cooling_system.model=legacy", f"site.cooling_faults.events=[{ev}]"]))
    finally:
        mp.undo()
    return r, seen


def _of(r, kind):
    ev = r.events
    return ev[ev["kind"] == kind]


def test_each_rack_shuts_down_at_its_transient_shutdown_time():
    r, seen = _run()
    assert len(seen) == 2                           # one transient per trip
    t0, tr = seen[-1]                               # the last: no unit left
    assert t0 == 86400.0 + 10 * 3600 + 600
    assert tr.rack_shutdown_s is not None and np.isfinite(tr.rack_shutdown_s).all()
    # 14.8 min after the trip (the cooling_fault event's forecast), between two hourly samples
    assert tr.rack_shutdown_s == pytest.approx(888.0, abs=1.0)
    sh = _of(r, "rack_thermal_shutdown")
    first = sh[(sh["time_s"] > t0) & (sh["time_s"] < t0 + 3600.0)].groupby("target")["time_s"].min()
    names = list(r.dataset.rack.values)
    assert len(first) == len(names) == 2
    got = np.array([first[n] for n in names])
    np.testing.assert_allclose(got, t0 + tr.rack_shutdown_s, rtol=0, atol=OUTPUT_STEP_S)
    # measured: the same float (the wake is at the solver's event time)
    np.testing.assert_allclose(got, t0 + tr.rack_shutdown_s, rtol=0, atol=1e-6)


def test_no_busy_gpu_without_healthy_gpus():
    r, _ = _run()
    warnings = [w["message"] for w in check_results(r) if w["check"] == "accounting"]
    assert not [m for m in warnings if "gpus_busy" in m], warnings
    ds = r.dataset
    assert (ds.gpus_busy.values <= ds.gpus_healthy.values).all()
    # the 11:00 sample, both racks shut since 10:24:48: no IT power, nothing busy or healthy
    at = list(ds.time.values).index(np.datetime64("2025-01-07T11:00"))
    assert ds.gpus_busy.values[at] == 0 and ds.gpus_healthy.values[at] == 0
    assert float(ds.facility_it_power_w.values[at]) == pytest.approx(0.0, abs=1e-9)


def test_rack_restarts_an_hour_after_its_trip_and_nothing_starts_before():
    r, seen = _run()
    t0, tr = seen[-1]
    ev = r.events
    sh = _of(r, "rack_thermal_shutdown")
    trip = float(sh["time_s"][sh["time_s"] > t0].min())
    assert trip == pytest.approx(t0 + float(tr.rack_shutdown_s.min()), abs=OUTPUT_STEP_S)
    restarts = _of(r, "rack_thermal_restart")
    first = float(restarts["time_s"][restarts["time_s"] > trip].min())
    assert first == pytest.approx(trip + 3600.0, abs=1e-6)
    # the job running at the trip stops there
    stopped = ev[(ev["kind"] == "job_interrupted") & (ev["time_s"] >= trip)]
    assert len(stopped) == 1 and stopped["time_s"].iloc[0] == trip
    assert "rack inlet protection" in stopped["detail"].iloc[0]
    # the room is still hot at the restart (no unit until 12:10): the racks trip again at once
    # (transient inlet 47.0 C) and come back an hour later, after the units are restored
    again = sh[(sh["time_s"] >= first) & (sh["time_s"] < first + 1.0)]
    assert len(again) == 2
    assert again["detail"].str.contains("inlet 47.0 C").all()
    back = float(restarts["time_s"][restarts["time_s"] > first + 1.0].max())
    assert back == pytest.approx(trip + 2 * 3600.0, abs=1.0)
    # no job starts on the racks from the trip until they are back for good
    starts = _of(r, "job_start")
    assert starts[(starts["time_s"] > trip) & (starts["time_s"] < back)].empty
    assert len(starts[starts["time_s"] >= back]) == 1


def test_next_crossing_of_a_transient_trajectory_by_hand():
    # a rack restarted after its cut-out is watched at the transient's next crossing of the
    # limit after now (linear between the output samples, as FaultTransient.inlet_at)
    from twin.sim.hall_thermal import _next_crossing_s

    t = np.array([0.0, 10.0, 20.0, 30.0])
    z = np.array([[40.0, 40.0, 44.0, 44.0],
                  [42.0, 40.0, 44.0, 42.0],
                  [44.0, 40.0, 44.0, 42.0],
                  [45.0, 40.0, 44.0, 42.0]])
    got = _next_crossing_s(t, z, 5.0, 43.0)
    # rising 42 -> 44 C over 10-20 s: 43 C at 15 s; never; already there at 5 s: 5 s;
    # above the limit only before 5 s: never after
    np.testing.assert_array_equal(got, [15.0, np.inf, 5.0, np.inf])
    assert np.isinf(_next_crossing_s(t, z, 30.0, 43.0)).all()     # nothing after the end
