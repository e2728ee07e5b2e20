"""Audit HA2 findings F3 and F6: what a single-feed loss does to the branch cords and to
admission.

F3 by hand: Blue Vela's racks hang on two 415 V three-phase cords (cord i on feed i mod 2);
with 20 A branch breakers a cord carries 20 x 415 x sqrt(3) x 0.8 x 0.95 = 10.92 kW
continuous. With feed A lost the B cord carries the whole rack, so the hottest rack's
7.09 kW (braked) loads it 0.649, not the 0.325 of two cords sharing it.

F6: the ramp powers no rack on while a feed is lost (the limits hold with every feed live;
the survivor was judged on the load of the loss); the racks wait for the feed, and
``power_held`` names it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import twin

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
QUIET = ["site.power.grid.sag_rate_per_year=0", "site.power.grid.outage_rate_per_year=0",
         "site.power.grid.feed_outage_rate_per_year=0"]
CORD_W = 20 * 415 * math.sqrt(3) * 0.8 * 0.95


def run(*sets):
    return twin.simulate(twin.load_scenario(BV, [*QUIET, *sets]))


def outage(time: str, hours: float, feed: str = "A") -> str:
    return f'site.power.grid.events=[{{time: "{time}", kind: outage, duration_s: {hours * 3600:g}, feed: {feed}}}]'


@pytest.fixture(scope="module")
def cords():
    return run("simulation.duration_days=35", "site.power.chain.branch.breaker_a=20",
               outage("2024-01-31T12:00:00", 2))


def test_live_cord_carries_the_whole_rack_during_a_feed_loss(cords):
    ds = cords.dataset
    top = ds.rack_power_w.max("rack")
    frac = ds.branch_load_fraction_max
    fail = ds.failover_branch_load_fraction_max
    lost = ds.time.isin(np.array(["2024-01-31T12:00", "2024-01-31T13:00"], dtype="datetime64[ns]"))
    assert int(lost.sum()) == 2
    on = lost & (top > 0)
    # one live cord (B) carries the rack; losing a further cord is not a figure: the same
    np.testing.assert_allclose(frac[on], top[on] / CORD_W, rtol=1e-6)
    np.testing.assert_allclose(fail[on], top[on] / CORD_W, rtol=1e-6)
    assert float(frac.sel(time="2024-01-31T13:00")) == pytest.approx(0.649, abs=0.01)
    # with both feeds live the two cords share it, and failover is the one cord
    both = ~lost & (top > 0)
    np.testing.assert_allclose(frac[both], top[both] / 2 / CORD_W, rtol=1e-6)
    np.testing.assert_allclose(fail[both], top[both] / CORD_W, rtol=1e-6)


@pytest.fixture(scope="module")
def held():
    # 32 racks delivered on 2024-02-01 00:00 while feed A is down 2024-01-31 22:00 - 02-01 02:00
    return run("simulation.duration_days=35", outage("2024-01-31T22:00:00", 4))


def test_no_rack_is_powered_on_during_a_feed_loss(held):
    ev = held.events
    on = ev[ev.kind == "power_on"]
    assert on.time.tolist() == ["2024-01-08T00:00:00.000", "2024-02-01T02:00:00.000"]
    assert on.target.tolist() == ["32 racks", "32 racks"]
    h = ev[(ev.kind == "power_held") & (ev.time == "2024-02-01T00:00:00.000")]
    assert len(h) == 1
    assert h.detail.iloc[0] == ("delivered, not powered: feed A lost: 32 racks that fit every limit wait until it "
                                "is restored (the limits hold with every feed live; no new load on the surviving "
                                "feed)")
    restored = ev[ev.kind == "feed_restored"]
    assert restored.time.tolist() == ["2024-02-01T02:00:00.000"]
    g = held.dataset.gpus_powered
    assert int(g.sel(time="2024-02-01T01:00")) == 32 * 16          # the first 32 racks only
    assert int(g.sel(time="2024-02-01T03:00")) == 64 * 16


def test_same_racks_as_without_the_loss_once_the_feed_is_back(held):
    ref = run("simulation.duration_days=35")
    a, b = held.dataset.gpus_powered, ref.dataset.gpus_powered
    late = a.time >= np.datetime64("2024-02-01T03:00")
    np.testing.assert_array_equal(a[late].values, b[late].values)
    assert int(b.sel(time="2024-02-01T01:00")) == 64 * 16          # without the loss: at delivery


def test_branch_trip_check_sees_the_live_cord_during_a_feed_loss():
    """A 20 kW rack on two 20 A cords (100 % rating 20 x 415 x sqrt(3) x 0.95 = 13.66 kW each):
    0.73 x the two cords' rating, but 1.46 x its one live cord's with feed A lost, past the
    1.3 x ultimate trip: the branch breaker trips within the hour."""
    from twin import power
    from twin.sim.engine import Engine

    eng = Engine(twin.load_scenario(BV, [*QUIET, "simulation.duration_days=2",
                                         "site.power.chain.branch.breaker_a=20"]))
    st, pc = eng.state, eng.power
    st.rack_delivered[:2] = st.rack_powered[:2] = st.rack_ready[:2] = True
    rack_w = np.zeros(len(st.rack_powered))
    rack_w[0] = 20e3
    eng.sampler.last_rack_power_w = lambda: rack_w
    cord_w = 20 * 415 * math.sqrt(3) * 0.95
    assert pc._check_branches() is True and not st.rack_tripped.any()     # both feeds: 0.73 x
    assert pc.branch_theta[0] == pytest.approx((20e3 / 2 / cord_w) ** 2, rel=1e-12)
    assert float(power.breaker_trip_time_s(20e3 / cord_w)) < eng.dt_s
    st.feed_up[0] = False
    assert pc._check_branches() is False
    assert st.rack_tripped.tolist()[:2] == [True, False]
    ev = [e for e in eng.events if e[1] == "breaker_trip"]
    assert len(ev) == 1 and ev[0][2] == eng.plant.rack_names[0]
    assert ev[0][3] == f"branch circuit at {20e3 / cord_w:.2f} x its live cords' rating with feed A lost, rack down"
