"""Blue Vela's UPS history, as its chain gives it (audit finding 4).

Seed 000 (IBM's Blue Vela report): the original capacity was UPS-backed; IBM bypassed the
UPS and the main redundancy (+~70 %) under a nine-month plan, with no date per step. The
chain puts the bypass at its last stage, 2024-09-01; the run's single UPS mode is the as-built
one (double conversion) and its UPS is the chain's plant (two systems of 4 x 380 kW).
"""

import datetime as dt
from pathlib import Path

import pytest

from twin.power.tree import chain_it_capacity_w
from twin.scenario import load_scenario
from twin.scenario.power_chain import PowerChain, UpsPlant, ups_mode_at, ups_mode_schedule

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bv():
    return load_scenario(ROOT / "scenarios" / "blue_vela.yaml")


def test_chain_gives_double_conversion_until_the_september_bypass(bv):
    chain = bv.site.power.chain
    assert ups_mode_schedule(chain) == [(dt.date(2024, 1, 1), "double_conversion"),
                                        (dt.date(2024, 9, 1), "bypass")]
    assert ups_mode_at(chain, dt.date(2023, 12, 31), "x") == "double_conversion"   # as built
    assert ups_mode_at(chain, dt.date(2024, 8, 31), "x") == "double_conversion"
    assert ups_mode_at(chain, dt.date(2024, 9, 1), "x") == "bypass"
    assert ups_mode_at(PowerChain(), dt.date(2024, 9, 1), "eco") == "eco"            # no UPS plant
    assert ups_mode_schedule(PowerChain()) == []


def test_schedule_lists_changes_only():
    ch = PowerChain(ups=UpsPlant(systems=2, module_kw=100),
                    stages=[{"date": "2024-02-01", "set": {"ups.mode": "eco"}},
                            {"date": "2024-03-01", "set": {"ups.ride_through_s": 60}},
                            {"date": "2024-04-01", "set": {"ups.mode": "double_conversion"}}])
    assert ups_mode_schedule(ch) == [(None, "double_conversion"), (dt.date(2024, 2, 1), "eco"),
                                     (dt.date(2024, 4, 1), "double_conversion")]
    assert ups_mode_at(ch, dt.date(2024, 3, 15), "x") == "eco"


def test_the_run_keeps_the_as_built_ups_in_line_and_it_holds_the_typed_plan(bv):
    pw = bv.site.power
    assert pw.ups.mode == ups_mode_schedule(pw.chain)[0][1] == "double_conversion"
    u = pw.chain.ups
    assert pw.ups.capacity_kw == u.systems * u.modules_per_system * u.module_kw == 3040
    # both UPS systems carry load (redundancy none): 2 x 1,520 kW holds every typed stage in
    # double conversion, so the typed plan, not the UPS, limits admission (the old 1,520 kW
    # total, i.e. two 760 kW paths, would have capped the run at 1,520 kW)
    cap_w = chain_it_capacity_w([f.capacity_kw * 1e3 for f in pw.feeds], pw.ups.capacity_kw * 1e3 / len(pw.feeds),
                                pw.ups.mode, pw.redundancy)
    assert cap_w == pytest.approx(3.04e6)
    assert max(p.it_power_kw for p in pw.plan) * 1e3 < cap_w
    assert chain_it_capacity_w([1.6e6, 1.6e6], 0.76e6, "double_conversion", "none") == pytest.approx(1.52e6)
