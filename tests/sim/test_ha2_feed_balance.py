"""Audit HA2 finding F1: the utility feeds together carry the facility's utility power, also
during a single-feed loss (the invariant, twin/invariants.py), and the survivor carries the
whole cooling plant and house loads, since the plant keeps cooling the hall whole.

Before the fix, Blue Vela with feed A lost at 2024-02-15 12:00 recorded feed B at 515.7 kW
against a facility of 555.3 kW + 80 kW house loads: (159.4 + 80) / 2 = 119.7 kW carried by
nobody (audit HA2, /tmp/ha2/w_e2)."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from twin.invariants import energy_balance


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
