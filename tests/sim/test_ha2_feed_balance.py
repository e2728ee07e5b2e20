"""Audit HA2 finding F1: the utility feeds together carry the facility's utility power, also
during a single-feed loss (the invariant, twin/invariants.py), and the survivor carries the
whole cooling plant and house loads, since the plant keeps cooling the hall whole.

Before the fix, Blue Vela with feed A lost at 2024-02-15 12:00 recorded feed B at 515.7 kW
against a facility of 555.3 kW + 80 kW house loads: (159.4 + 80) / 2 = 119.7 kW carried by
nobody (audit HA2, /tmp/ha2/w_e2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import twin
from twin.invariants import check_results, energy_balance
from twin.power.chain import capacity_report, feed_mechanical_w
from twin.power.cooling_plant import scenario_cooling_power_w
from twin.power.electrical import breaker_continuous_limit_w


def _ds(feeds_kw, total_kw, cool_kw, chain) -> xr.Dataset:
    n = len(total_kw)
    tot = np.asarray(total_kw, float) * 1e3
    cool = np.asarray(cool_kw, float) * 1e3
    scen = {"site": {"power": {"chain": chain}}}
    return xr.Dataset(
        {"facility_total_power_w": ("time", tot), "cooling_power_w": ("time", cool),
         "facility_it_power_w": ("time", tot - cool), "feed_power_w": (("time", "feed"), np.asarray(feeds_kw) * 1e3)},
        coords={"time": np.arange(n).astype("datetime64[h]").astype("datetime64[ns]"), "feed": ["A", "B"]},
        attrs={"sample_interval_s": 3600.0, "scenario_json": json.dumps(scen)})


ON_FEEDS = {"mechanical": {"carried_by": ["utility", "switchboards"], "house_kw": 80.0}}


def _messages(ds) -> list[str]:
    out: list = []
    energy_balance(ds, {}, out)
    return [w["message"] for w in out if "feeds together" in w["message"]]


def test_feeds_sum_to_the_utility_power_and_the_house_loads():
    # Blue Vela's hour before the loss (2 x 488.4 = 896.8 + 80) and the audit's hour in it
    ok = _ds([[488.4, 488.4], [0.0, 635.3]], [896.8, 555.3], [159.4, 159.4], ON_FEEDS)
    assert _messages(ok) == []
    lost = _ds([[488.4, 488.4], [0.0, 515.7]], [896.8, 555.3], [159.4, 159.4], ON_FEEDS)
    msg = _messages(lost)
    assert len(msg) == 1
    assert msg[0].startswith("the utility feeds together differ from the utility power and the house loads "
                             "by 120 kW at ")


def test_feeds_without_the_plant_carry_the_utility_power_less_the_cooling():
    off = {"mechanical": {"carried_by": ["utility"], "house_kw": 80.0}}
    assert _messages(_ds([[368.7, 368.7]], [896.8], [159.4], off)) == []
    assert _messages(_ds([[368.7, 368.7]], [896.8], [159.4], None)) == []
    assert len(_messages(_ds([[448.4, 448.4]], [896.8], [159.4], None))) == 1


# ----------------------------------------------------------------------------- the run
ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
QUIET = ["site.power.grid.sag_rate_per_year=0", "site.power.grid.outage_rate_per_year=0",
         "site.power.grid.feed_outage_rate_per_year=0"]
LOSS = 'site.power.grid.events=[{time: "2024-01-31T12:00:00", kind: outage, duration_s: 7200, feed: A}]'
#: the plant on the switchboards (the feeds), which F1 is about; shipped Blue Vela has it on its
#: own boards off the transformers since 2 Dec 2026 (helper HMP)
ON_SWB = "site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]"


def _with_transfer(s, transfers: bool):
    mech = s.site.power.chain.mechanical.model_copy(update={"transfers_on_feed_loss": transfers})
    chain = s.site.power.chain.model_copy(update={"mechanical": mech})
    return s.model_copy(update={"site": s.site.model_copy(update={"power": s.site.power.model_copy(
        update={"chain": chain})})})


@pytest.mark.parametrize("transfers", [False, True])
def test_survivor_carries_the_whole_plant_and_house_loads(transfers):
    s = _with_transfer(twin.load_scenario(BV, [ON_SWB]), transfers)
    whole = float(scenario_cooling_power_w(s, 1e6, 30.0)) + 80e3          # Blue Vela's 80 kW house loads
    lost = feed_mechanical_w(s, 1e6, 30.0, np.array([False, True]))
    assert lost[0] == 0.0 and lost[1] == pytest.approx(whole, rel=1e-12)
    both = feed_mechanical_w(s, 1e6, 30.0, np.array([True, True]))
    np.testing.assert_allclose(both, [whole / 2, whole / 2], rtol=1e-12)


def test_recorded_feeds_sum_to_the_facility_during_a_feed_loss():
    res = twin.simulate(twin.load_scenario(BV, [*QUIET, "simulation.duration_days=35", LOSS, ON_SWB]))
    ds = res.dataset
    out = ds.sel(time=["2024-01-31T12:00", "2024-01-31T13:00"])
    a, b = out.feed_power_w.sel(feed="A").values, out.feed_power_w.sel(feed="B").values
    tot, cool = out.facility_total_power_w.values, out.cooling_power_w.values
    assert np.all(a == 0.0)
    # B: the whole IT path, the whole plant and the 80 kW house loads (it was half of the last two)
    np.testing.assert_allclose(b, tot + 80e3, rtol=1e-6)
    np.testing.assert_allclose(b - (tot - cool), cool + 80e3, rtol=1e-5)
    np.testing.assert_allclose(ds.feed_power_w.values.sum(axis=1), ds.facility_total_power_w.values + 80e3,
                               rtol=1e-6)
    assert not [w for w in check_results(res) if w["check"] == "energy_balance"]
    # the survivor check at the loss counts the whole plant too
    d = res.events[res.events.kind == "feed_loss"].detail.iloc[0]
    assert "survivor holds at" in d


def test_capacity_survivor_fraction_counts_the_whole_plant():
    # re-pinned 2 Dec 2026 (helper HMP): the 2N switchboard constraint counts the whole plant too,
    # so with the plant on the switchboards they bind the as-built stage at 1,185 kW, where the
    # survivor is at exactly 1.00 (it was 1.20 at the 1,465 kW the half-plant constraint gave)
    s = twin.load_scenario(BV, [ON_SWB])
    st = capacity_report(s)["stages"][0]                     # as built: 2N A/B, 1,185 kW
    sb = s.site.power.chain.switchboards
    unit_kw = float(breaker_continuous_limit_w(sb.main_breaker_a, sb.voltage_v, sb.phases, sb.rated_100pct,
                                               sb.power_factor)) / 1e3
    load_kw = st["it_capacity_kw"] + st["ups_loss_kw"] + st["mechanical_kw"]   # mechanical_kw incl. house
    assert st["feed_loss_survivor_load_fraction"] == pytest.approx(load_kw / unit_kw, rel=1e-9)
    assert st["feed_loss_survivor_load_fraction"] == pytest.approx(1.00, abs=1e-9)
    assert st["it_capacity_kw"] == pytest.approx(1185.0, abs=1.0)
    assert st["feed_loss_holds"]


def test_branch_warning_says_it_covers_a_feed_loss():
    # branch_load_fraction_max holds the live cords during a feed loss (audit HA2 F3): the
    # warning does not call an hour of a feed loss normal operation
    from twin.invariants import power_limits
    ds = xr.Dataset({"branch_load_fraction_max": ("time", np.array([0.5, 1.3]))},
                    coords={"time": np.array(["2024-01-01T00", "2024-01-01T01"], dtype="datetime64[ns]")},
                    attrs={"sample_interval_s": 3600.0})
    out: list = []
    power_limits(ds, {}, out)
    assert [w["message"] for w in out] == [
        "rack PDU cords above their branch breaker's continuous limit (in normal operation, or the live cords "
        "during a feed loss) for 1 h, at most 1.3 x at 2024-01-01T01:00 (branch_load_fraction_max)"]
