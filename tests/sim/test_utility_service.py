"""The run admits racks against the utility service (``site.power.chain.utility``), the limit
``twin capacity`` computes from it (HUS, audit follow-up).

Figures by hand, on Blue Vela with the 3,750 kVA service it carried until 2 Dec 2026 (``OLD``; the
shipped 3,900 kVA carries the plan's last stage, as seed 000 says the plan did, and
``test_the_shipped_service_carries_the_plan`` checks it): that service is 3,750 kVA x pf 0.95 = 3,562.5 kW, and its chain puts
the mechanical plant and 80 kW of house loads on it. The plant is the one the run uses (the
physical plant at the 33 C design day, tests/power/test_feed_limits.py by hand): ``f(P) = F0 +
M P`` with ``M = 0.01 + 1.01 (33/112.5 + 0.01) = 0.316367`` and ``F0 = 150 kW x (1 + 33/112.5
+ 0.01) = 195.5 kW``. On bypass (from 2024-09-01) there is no UPS loss, so the service carries
``P (1 + M) + F0 + 80 kW = 3,562.5 kW``: ``P = 3,287.0 / 1.316367 = 2,497.0 kW`` of IT, i.e.
125 racks of 19.94 kW (2,492.6 kW; 126 would be 2,512.5 kW), where the typed plan (2,585 kW)
would admit all 128 delivered.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.power.capacity import utility_constraint
from twin.power.chain import (
    capacity_report,
    mechanical_w_fn,
    rack_figures_w,
    utility_it_limits_w,
    utility_plan_notes,
)
from twin.scenario.power_chain import chain_at_stages
from twin.sim.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
NEW_BUILD = ROOT / "scenarios" / "sites" / "new_build_hall.yaml"
#: Blue Vela with a service that binds: the 3,750 kVA it carried until 2 Dec 2026
OLD = ["site.power.chain.utility.kva=3750"]
QUIET = ["site.power.grid.sag_rate_per_year=0", "site.power.grid.outage_rate_per_year=0",
         "site.power.grid.feed_outage_rate_per_year=0"]
#: the physical plant at the 33 C design day, by hand (module docstring)
M = 0.01 + 1.01 * (33 / 112.5 + 0.01)
F0_KW = 150 * (1 + 33 / 112.5 + 0.01)
BYPASS_KW = (3750 * 0.95 - 80 - F0_KW) / (1 + M)
BYPASS_NAME = ("the utility service (3750 kVA x pf 0.95 = 3562 kW less the cooling at the 33 C design day "
               "and 80 kW house loads; site.power.chain.utility)")


def events(res, kind):
    return res.events[res.events.kind == kind]


def test_the_service_limit_by_hand():
    lim = utility_it_limits_w(twin.load_scenario(BV, OLD))
    # re-pinned 2 Dec 2026: no 2024-06-01 stage (the RPP re-feed is read into the March stage)
    assert [d for d, _, _ in lim] == [dt.date(2024, 1, 1), dt.date(2024, 3, 15), dt.date(2024, 9, 1)]
    assert BYPASS_KW == pytest.approx(2_497.02, abs=0.01)
    assert lim[-1][1] == pytest.approx(BYPASS_KW * 1e3, abs=1e-2)       # Brent's method to 1 mW
    assert lim[-1][2] == BYPASS_NAME
    # in line, the UPS loss at that load comes off too (and heats the hall): 2,416.9 kW
    assert lim[0][1] == pytest.approx(2_416.89e3, abs=10.0) and "less the UPS loss" in lim[0][2]
    assert int(np.floor(BYPASS_KW / (rack_figures_w(twin.load_scenario(BV, OLD))["worst_case_w"] / 1e3))) == 125


def test_twin_capacity_lists_the_same_limit():
    s = twin.load_scenario(BV, OLD)
    rep = capacity_report(s)
    lim = utility_it_limits_w(s)
    mech = mechanical_w_fn(s, s.site.power.chain)
    for st, (_, w, _), (_, _, ch) in zip(rep["stages"], lim, chain_at_stages(s.site.power.chain), strict=True):
        listed = next(c for c in st["constraints"] if c["equipment"] == "utility")
        assert listed["it_capacity_kw"] * 1e3 == w == utility_constraint(ch, mech).it_capacity_kw * 1e3
    assert rep["stages"][-1]["binding"]["equipment"] == "utility"
    assert rep["stages"][-1]["racks_at_worst_case"] == 125


@pytest.fixture(scope="module")
def september():
    # the last week of August and the first days of September: every rack delivered
    return twin.simulate(twin.load_scenario(BV, [*OLD, "simulation.start=2024-08-25",
                                                 "simulation.duration_days=10", *QUIET]))


def test_september_admits_the_racks_capacity_says(september):
    res = september
    t = res.dataset.time.values
    powered = res.dataset.gpus_powered.values
    switch = np.datetime64("2024-09-01T00:00:00")
    assert powered[t < switch].max() == 110 * 16            # the plan's 2,200 kW binds in August
    racks = capacity_report(twin.load_scenario(BV, OLD))["stages"][-1]["racks_at_worst_case"]
    assert powered[t >= switch].min() == powered[t >= switch].max() == racks * 16 == 125 * 16
    stage = events(res, "power_stage")
    assert stage.time.tolist()[-1] == "2024-09-01T00:00:00.000"
    assert stage.detail.tolist()[-1] == f"2585 kW IT available; racks admitted against {BYPASS_KW:.0f} kW, " \
                                        f"the limit of {BYPASS_NAME}"
    held = events(res, "power_held")
    assert held.target.tolist()[-1] == "3 racks"
    assert held.detail.tolist()[-1].endswith(f"over the {BYPASS_KW:.0f} kW limit of {BYPASS_NAME}")
    # one admission at the stage's instant, against the limits then (not the UPS mode's before)
    on = events(res, "power_on")
    assert on[on.time == "2024-09-01T00:00:00.000"].target.tolist() == ["15 racks"]


def test_a_service_that_binds_from_the_start():
    # 2,000 kVA: 1,900 kW at the service carries 1,188 kW of IT with the UPS loss, the cooling
    # and the house loads, below the plan (1,520 kW) and every other limit of the run. The RPPs
    # re-fed (N) from the start: as built their A/B pairs carry 10 of each pair's 16 positions,
    # 20 racks of the first wave's 32 (tests/sim/test_rpp_stages.py), below the service's 59
    s = twin.load_scenario(BV, ["simulation.duration_days=40", "site.power.chain.utility.kva=2000",
                                "site.power.chain.rpps.redundancy=N", *QUIET])
    st = capacity_report(s)["stages"][0]
    assert st["binding"]["equipment"] == "utility" and st["racks_at_worst_case"] == 59
    res = twin.simulate(s)
    assert int(res.dataset.gpus_powered.values.max()) == st["racks_at_worst_case"] * 16
    assert events(res, "power_stage").detail.iloc[0] == (
        f"1520 kW IT available; racks admitted against {st['it_capacity_kw']:.0f} kW, the limit of the utility "
        "service (2000 kVA x pf 0.95 = 1900 kW less the UPS loss, the cooling at the 33 C design day and 80 kW "
        "house loads; site.power.chain.utility)")
    assert "the utility service (2000 kVA" in events(res, "power_held").detail.iloc[-1]


def test_a_dated_service_upgrade_lifts_the_limit_mid_run():
    # new_build_hall with its hand-over plan at 2,200 kW (as shipped until 2 Dec 2026; now 2,170 kW,
    # what the service carries): 3,500 kVA at hand-over (2,171 kW of IT below the plan: 108
    # racks), 7,000 kVA from 2024-07-15 (the plan's 3,000 kW binds again: all 128)
    s = twin.load_scenario(NEW_BUILD, ["simulation.start=2024-07-01", "simulation.duration_days=20",
                                       "site.power.plan.0.it_power_kw=2200", *QUIET])
    e = Engine(s)
    lim = utility_it_limits_w(s)
    assert [(t, w) for t, w, _ in e.power.utility_changes_s] == [(0.0, lim[0][1]), (14 * 86400.0, lim[1][1])]
    res = e.run()
    t = res.dataset.time.values
    powered = res.dataset.gpus_powered.values
    upgrade = np.datetime64("2024-07-15T00:00:00")
    assert powered[t < upgrade].max() == 108 * 16
    assert powered[t >= upgrade].min() == 128 * 16


def test_validate_notes_a_plan_above_the_service():
    notes = utility_plan_notes(twin.load_scenario(BV, OLD))
    assert notes == [("site.power.plan.3.it_power_kw",
                      f"2585 kW from 2024-09-01 is above the {BYPASS_KW:.0f} kW of IT {BYPASS_NAME} carries then "
                      "(`twin capacity`): a run admits racks against the service, 125 at worst case")]
    assert utility_plan_notes(twin.load_scenario(BV, ["site.power.chain.utility.kva=4000"])) == []
    assert utility_plan_notes(twin.load_scenario(BV, [*OLD, "site.power.chain.stages_set_plan=true"])) == []
    assert utility_plan_notes(twin.load_scenario(BV)) == []
    assert utility_plan_notes(twin.load_scenario(NEW_BUILD)) == []
    assert [k for k, _ in utility_plan_notes(twin.load_scenario(NEW_BUILD, ["site.power.plan.0.it_power_kw=2200"]))] \
        == ["site.power.plan.0.it_power_kw"]


def test_the_shipped_service_carries_the_plan():
    # seed 000: the nine-month plan was made to fully meet Blue Vela's need. The shipped 3,900 kVA
    # service carries the plan's last stage at worst case (all 128 racks) and keeps the bypass's
    # gain over the as-built stage at "about 70 %" (x1.6-1.8): (3,900 x 0.95 - 80 - F0) / (1 + M)
    s = twin.load_scenario(BV)
    lim = utility_it_limits_w(s)
    by_hand = (3900 * 0.95 - 80 - F0_KW) / (1 + M)
    assert lim[-1][1] == pytest.approx(by_hand * 1e3, abs=1e-2) and by_hand == pytest.approx(2_605.28, abs=0.01)
    rep = capacity_report(s)["stages"]
    assert rep[-1]["racks_at_worst_case"] == 128
    assert 1.6 <= rep[-1]["it_capacity_kw"] / rep[0]["it_capacity_kw"] <= 1.8


def test_without_a_typed_service_the_limits_are_the_others():
    for name in ("vela.yaml", "sites/colo_hydro_hall.yaml"):
        s = twin.load_scenario(ROOT / "scenarios" / name)
        assert utility_it_limits_w(s) == []
        e = Engine(s)
        assert e.power.utility_changes_s == []
        assert not [k for k in e.power.limits_w if "utility" in k]


def test_a_hold_under_stages_set_plan_names_the_chains_stage():
    # the second audit's F12b: with stages_set_plan the plan is the chain's derived stage, and a
    # hold at it names that stage, not the typed plan the scenario no longer uses
    s = twin.load_scenario(BV, ["simulation.duration_days=170", "site.power.chain.stages_set_plan=true", *OLD])
    held = events(twin.simulate(s), "power_held").detail
    assert len(held) and held.iloc[0].endswith(
        "over the 2417 kW limit of the power chain's derived stage (site.power.chain.stages)")
    assert not held.str.contains("site.power.plan").any()
