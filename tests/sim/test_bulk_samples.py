"""The sampler's quiet paths (issue 19) give the numbers of the sample-by-sample path, bit
for bit: quiet stretches filled without a simpy wake-up per sample
(:meth:`Sampler._fill`, :meth:`Component.record_range`), and the checks a quiet sample
skips (the inlet protection once clear under a key, the breakers while at or below
rating, the physics key while nothing was written). Each comparison is shown to fail when
the fast path is deliberately broken."""

from pathlib import Path

import numpy as np
import pytest

import twin
from twin.sim import recorder as recorder_mod
from twin.sim.engine import CountingEnvironment, Engine
from twin.sim.power_chain import PowerChain
from twin.sim.sampler import Sampler

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
BV = ROOT / "scenarios" / "blue_vela_fixed.yaml"
#: racks whose inlets pass a (low) protection limit in steady state: shut, restarted an
#: hour later, shut again
HOT = ["simulation.duration_days=3", "failures.enabled=false", "simulation.sample_interval_s=300",
       "site.cooling_system.server_inlet_shutdown_c=19.5"]
#: no failure redraws and no fixed job re-reading its rate at every sample: between the
#: ramp's and the stream's events the samples are quiet, so stretches are filled
QUIET = [str(ROOT / "scenarios" / "blue_vela.yaml"), "simulation.duration_days=12", "failures.enabled=false",
         "simulation.sample_interval_s=600"]


def _run(path, overrides, bulk=True):
    e = Engine(twin.load_scenario(path, list(overrides)))
    e.sampler.bulk = bulk
    return e.run(), e


def _differences(a, b) -> list[str]:
    """Names of the dataset variables, KPIs and the events table that differ (NaN = NaN)."""
    out = [v for v in a.dataset.data_vars if not np.array_equal(
        a.dataset[v].values, b.dataset[v].values, equal_nan=a.dataset[v].dtype.kind == "f")]
    out += [k for k, v in a.kpis.items() if not (v == b.kpis[k] or (v != v and b.kpis[k] != b.kpis[k]))]
    if not a.events.equals(b.events):
        out.append("events")
    return out


@pytest.fixture(scope="module")
def quiet_pair():
    one, e1 = _run(QUIET[0], QUIET[1:], bulk=False)
    bulk, e2 = _run(QUIET[0], QUIET[1:])
    return one, e1, bulk, e2


def test_filled_stretches_equal_sample_by_sample(quiet_pair):
    one, e1, bulk, e2 = quiet_pair
    n = e1.n_samples
    assert e1.env.event_counts["Sampler._samples"][0] == n
    # the fill took most samples without a wake-up ...
    assert e2.env.event_counts["Sampler._samples"][0] < n / 4
    # ... and every series, KPI and event is the same, bit for bit
    assert _differences(one, bulk) == []
    assert one.dataset.identical(bulk.dataset)
    assert e1.sampler.throttled_node_s == e2.sampler.throttled_node_s
    assert [j.tokens for j in e1.jobs] == [j.tokens for j in e2.jobs]


def test_a_broken_range_record_is_caught(quiet_pair, monkeypatch):
    """The comparison above fails when a component's range record writes one row only."""
    one = quiet_pair[0]
    monkeypatch.setattr(Sampler, "record_range", lambda self, i0, i1, rec: Sampler._write(
        self, i0, i0 + 1, rec, self._physics, self.state.node_powered, self.state.node_in_service,
        self.state.node_up))
    broken, _ = _run(QUIET[0], QUIET[1:])
    assert "rack_power_w" in _differences(one, broken)


def test_a_fill_past_an_event_is_caught(quiet_pair, monkeypatch):
    """... and when the fill ignores the next queued event; the clock guard refuses that."""
    one, e1 = quiet_pair[0], quiet_pair[1]
    with pytest.raises(ValueError, match="skip_to"):
        e1.env.skip_to(e1.env.peek())
    real = Engine.__init__

    def init(self, *a, **k):
        real(self, *a, **k)
        self.env.peek = lambda: float("inf")
    monkeypatch.setattr(Engine, "__init__", init)
    monkeypatch.setattr(CountingEnvironment, "skip_to", lambda self, t: setattr(self, "_now", t))
    broken, _ = _run(QUIET[0], QUIET[1:])
    assert _differences(one, broken) != []


def test_fill_across_recorder_windows(monkeypatch):
    """Below ``rack_series: full`` a stretch ends at the window and the window is folded
    as sample by sample (windows of a few samples here)."""
    monkeypatch.setattr(recorder_mod, "WINDOW_BYTES", 7 * 128 * 8)
    over = QUIET[1:] + ["outputs.rack_series=none"]
    one, _ = _run(QUIET[0], over, bulk=False)
    bulk, e = _run(QUIET[0], over)
    assert 1 < e.recorder.window < 20
    assert e.env.event_counts["Sampler._samples"][0] < 0.6 * e.n_samples     # a wake-up per window at most
    assert _differences(one, bulk) == []


def _always(value):
    """A class attribute that reads ``value`` whatever is assigned (disables a skip)."""
    return property(lambda self: value, lambda self, v: None)


@pytest.mark.parametrize("case", ["protection", "breakers"])
def test_skipped_checks_equal_checking_at_every_sample(case, monkeypatch):
    """Racks shut by their inlet protection, and breakers tripping on overload: the same
    events and series whether a quiet sample skips the check or runs it."""
    if case == "protection":
        path, over, kind = SMALL, HOT, "rack_thermal_shutdown"
    else:
        path, over = BV, ["simulation.duration_days=40", "failures.enabled=false",
                          "site.power.oversubscription=2.5", "site.power.rpp.breaker_a=100"]
        kind = "breaker_trip"
    fast, _ = _run(path, over)
    assert (fast.events.kind == kind).any()
    calls = {"protect": 0, "breakers": 0}
    real_protect, real_check = twin.sim.hall_thermal.HallThermal.protect_racks, PowerChain.check_breakers

    def protect(self, inlet_c):
        calls["protect"] += 1
        return real_protect(self, inlet_c)

    def check(self, rpp_w):
        calls["breakers"] += 1
        return real_check(self, rpp_w)
    monkeypatch.setattr(twin.sim.hall_thermal.HallThermal, "protect_racks", protect)
    monkeypatch.setattr(PowerChain, "check_breakers", check)
    fast_again, e_fast = _run(path, over)
    n_fast = dict(calls)
    monkeypatch.setattr(Sampler, "_protect_clear", _always(False), raising=False)
    monkeypatch.setattr(PowerChain, "breakers_steady", _always(False), raising=False)
    slow, e = _run(path, over, bulk=False)
    n_slow = {k: v - n_fast[k] for k, v in calls.items()}
    assert n_slow == {"protect": e.n_samples, "breakers": e.n_samples}      # checked at every sample
    assert n_fast["protect"] < e.n_samples and n_fast["breakers"] < e.n_samples
    assert _differences(fast, slow) == [] and _differences(fast_again, slow) == []


def test_a_skipped_check_that_should_have_run_is_caught(monkeypatch):
    """The protection case exercises the check: a sampler that skips it even after a fresh
    evaluation loses shutdowns, and the comparison above would fail. (A skip on a sample
    that is not fresh cannot lose one: the check reads only the racks on and their inlets,
    both in the physics key.)"""
    ref, _ = _run(SMALL, HOT)
    monkeypatch.setattr(twin.sim.hall_thermal.HallThermal, "protect_racks", lambda self, inlet_c: None)
    broken, _ = _run(SMALL, HOT)
    assert "events" in _differences(ref, broken)


def test_physics_key_is_reused_only_while_nothing_is_written():
    e = Engine(twin.load_scenario(SMALL, ["simulation.duration_days=1"]))
    st = e.state
    k1 = st.physics_inputs()
    assert st.physics_inputs() is k1                # nothing written: the same key object
    st.node_clock[3] = 0.5
    k2 = st.physics_inputs()
    assert k2 is not k1 and k2 != k1
    st.node_clock[3] = 1.0                           # written back: a new key, equal in value
    k3 = st.physics_inputs()
    assert k3 is not k2 and k3 == k1
