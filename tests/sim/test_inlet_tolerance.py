"""The inlet tolerance of the sampler (issues 14/19): the coupled loop inlets -> GPU clock and
temperature -> node power -> rack heat -> inlets converges across samples, and an evaluation
that moves no inlet by more than ``Sampler.inlet_tolerance_k`` keeps the inlets it read, so
the physics key holds and the round-off steps of the fixed point are not evaluated.

- tolerance 0 is the path before the tolerance, bit for bit (series, KPIs, events and the
  evaluation count), the reference;
- with the default, the state's inlets stay within the tolerance of the reference run's at
  every sample, the KPIs within 1e-9 relative and the events are the same, with fewer
  evaluations;
- a move above the tolerance is written and re-evaluated, one within it is not (a hand case);
- any other change of the physics' inputs is evaluated whatever the inlets do: a check that
  reads those inputs itself, shown to fail when the key drops them.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from twin.scenario import validate_data
from twin.sim import sampler as sampler_mod
from twin.sim.engine import Engine
from twin.sim.sampler import Sampler
from twin.sim.state import ClusterState

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gigawatt import site_scenario  # noqa: E402
from sim.test_bulk_samples import _differences  # noqa: E402  (series, KPIs and events that differ)


def _scenario():
    """128 nodes for 2.4 h at 1-s samples, jobs of 16 nodes: 73 evaluations at tolerance 0,
    of which ~30 are round-off steps of the inlet fixed point."""
    return validate_data(site_scenario(128, 0.1, 1.0, job_nodes=16, name="inlet_tolerance"))


def _non_inlet_inputs(e) -> tuple:
    """What the physics reads besides the inlets, read from the state directly (not through
    :meth:`ClusterState.physics_inputs`)."""
    st = e.state
    return (st.node_phase.tobytes(), np.asarray(st.rack_on).tobytes(), np.asarray(st.node_clock).tobytes(),
            np.asarray(st.brake_clock).tobytes(), np.asarray(st.psu_capacity_w).tobytes(),
            e.thermal.cache_key())


def _run(tol=None, trace=False, monkeypatch=None):
    """Run the scenario sample by sample (every sample through ``Sampler.sample``); with
    ``trace``, the state's inlets after each sample [degC (R,)] and, per sample, whether the
    non-inlet inputs changed and whether the sample evaluated."""
    e = Engine(_scenario())
    e.sampler.bulk = False
    if tol is not None:
        e.sampler.inlet_tolerance_k = tol
    inlets, changes = [], []
    if trace:
        sample = e.sampler.sample
        last = [None]

        def traced(i):
            before, inputs = e.sampler.evaluations, _non_inlet_inputs(e)
            sample(i)
            changes.append((inputs != last[0], e.sampler.evaluations > before))
            last[0] = _non_inlet_inputs(e)     # after the sample's own writes (clocks)
            inlets.append(e.state.rack_inlet_c.view(np.ndarray).copy())
        e.sampler.sample = traced
    return e.run(), e, np.array(inlets), changes


@pytest.fixture(scope="module")
def runs():
    return _run(0.0, trace=True), _run(trace=True)


def test_tolerance_zero_is_the_path_before_it(runs, monkeypatch):
    (ref, e0, _, _), _ = runs
    # the path before the tolerance: every fresh evaluation writes its inlets
    monkeypatch.setattr(Sampler, "_inlets_settled", lambda self, inlet_c: False)
    old, e1, _, _ = _run()
    assert _differences(ref, old) == []
    assert e0.sampler.evaluations == e1.sampler.evaluations


def test_default_stays_within_the_tolerance(runs):
    (ref, e0, in0, _), (res, e1, in1, _) = runs
    tol = sampler_mod.INLET_TOLERANCE_K
    assert e1.sampler.inlet_tolerance_k == tol and 0 < tol <= 1e-3
    # the round-off steps are gone ...
    assert e1.sampler.evaluations < 0.7 * e0.sampler.evaluations
    # ... and every inlet at every sample is within the tolerance of the reference's
    assert in0.shape == in1.shape and in0.shape[0] == e0.n_samples
    assert np.abs(in1 - in0).max() <= tol
    assert np.abs(in1 - in0).max() > 0          # (the tolerance was used)
    # the same events; the KPIs within 1e-9 relative (Blue Vela nine months: 3.5e-9 at most,
    # bench/RESULTS.md)
    assert len(res.events) == len(ref.events)
    assert res.events[["time_s", "kind"]].equals(ref.events[["time_s", "kind"]])
    for k, v in ref.kpis.items():
        if isinstance(v, float) and v == v:
            assert res.kpis[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k


def test_every_other_change_is_evaluated(runs):
    for _, _, _, changes in runs:
        assert sum(c for c, _ in changes) > 5           # phases, clocks and racks changed ...
        assert all(ev for c, ev in changes if c)        # ... and each change was evaluated


def test_a_key_without_the_other_inputs_is_caught(monkeypatch):
    """The check above fails when a non-inlet change is not evaluated (here: a key that drops
    the node phases, as a tolerance applied to them would)."""
    inputs = ClusterState.physics_inputs
    monkeypatch.setattr(ClusterState, "physics_inputs", lambda self: inputs(self)[1:])
    _, _, _, changes = _run(trace=True)
    assert not all(ev for c, ev in changes if c)


def test_a_move_above_the_tolerance_is_evaluated(runs):
    """Hand case on the finished run: an evaluation whose inlets move by twice the tolerance
    writes them, and the next sample evaluates again; half the tolerance keeps the inlets
    and the key, and the next sample reuses the evaluation."""
    _, (_, e, _, _) = runs
    s, st = e.sampler, e.state
    tol = s.inlet_tolerance_k
    i = e.n_samples - 1
    inlets_c = e.thermal.inlets_c
    for shift, again in ((2 * tol, True), (0.5 * tol, False)):
        s.sample(i)                                 # settled: nothing to evaluate
        n, held = s.evaluations, st.rack_inlet_c.view(np.ndarray).copy()
        s.sample(i)
        assert s.evaluations == n
        e.thermal.inlets_c = lambda rack_w, d=shift: inlets_c(rack_w) + d
        s._key = None                               # something else changed: evaluate
        s.sample(i)
        e.thermal.inlets_c = inlets_c
        assert s.evaluations == n + 1
        moved = np.abs(st.rack_inlet_c.view(np.ndarray) - held).max()
        assert moved == (pytest.approx(shift, abs=1e-9) if again else 0.0)
        s.sample(i)                                 # the move re-evaluates; the kept inlets do not
        assert s.evaluations == n + 1 + again
        s.sample(i)


def test_the_settled_check():
    """The comparison itself: the largest move decides, NaN writes, tolerance 0 always writes."""
    held = np.array([20.0, 25.0, 30.0])
    s = type("S", (), {"inlet_tolerance_k": 1e-6, "state": type("St", (), {"rack_inlet_c": held})()})()
    settled = Sampler._inlets_settled
    assert settled(s, held + 0.5e-6)
    assert settled(s, held - 0.99e-6)
    assert not settled(s, held + np.array([0.0, 0.0, 2e-6]))
    assert not settled(s, np.array([20.0, np.nan, 30.0]))
    s.inlet_tolerance_k = 0.0
    assert not settled(s, held)                     # tolerance 0: every evaluation writes
