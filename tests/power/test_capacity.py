"""Capacity of a power chain from its equipment: each Blue Vela stage hand-checked."""

from pathlib import Path

import numpy as np
import pytest
from blue_vela_chains import OLD_CHAIN
from pydantic import ValidationError

from twin.power.capacity import (
    binding_constraints,
    chain_constraints,
    it_capacity_behind_w,
    surviving_units,
    ups_usable_kw,
)
from twin.power.chain import capacity_report, chain_problems, stage_capacity
from twin.scenario import load_scenario
from twin.scenario.power_chain import (
    Battery,
    BranchCircuits,
    Generators,
    PowerChain,
    Rpps,
    Switchboards,
    Transformers,
    UpsPlant,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def blue_vela():
    return load_scenario(ROOT / "scenarios" / "blue_vela.yaml")


@pytest.fixture(scope="module")
def report(blue_vela):
    return capacity_report(blue_vela)




@pytest.fixture(scope="module")
def report_rpp_pairs():
    return capacity_report(load_scenario(ROOT / "scenarios" / "blue_vela.yaml", [OLD_CHAIN]))


# --- hand calculation of the Blue Vela chain ----------------------------------------
# Modern transformerless UPS loss (3040 kW installed: 2 systems x 4 x 380 kW), three-term
# fit of 95.5/96.5/96.8/96.8 % (twin.power.ups_curves); cooling at the 33 C design day with
# the plant the run uses (site.cooling_system: physical, audit finding 5; re-pinned from the
# legacy law's 0.3685 W per W of heat, which read ~12 % less): a dry cooler at 33 C and 12 C
# chilled water, chiller COP(33) = 4.5 x 25/33 (the plant's COP 4.5 at 25 C); 12 constant-speed
# CRAH fans at design, 15 m3/s x 500 Pa / 0.6 = 12.5 kW each; pumps 1 % of the heat; the
# chiller and 1 % heat rejection on the coil load (heat + pumps + fans)
# (twin.power.cooling_plant.cooling_plant_power_w).
COP_33 = 4.5 * 25 / 33
CRAH_FANS_W = 12 * 15 * 500 / 0.6                     # 150 kW
HOUSE_W = 80e3


def mech_w(heat_w):
    coil = 1.01 * heat_w + CRAH_FANS_W
    return CRAH_FANS_W + 0.01 * heat_w + coil * (1 / COP_33 + 0.01)


MECH_PER_HEAT = mech_w(1.0) - mech_w(0.0)              # 0.3164 W/W
MECH_0_W = mech_w(0.0)                                 # 195.5 kW: the fans and their cooling


def ups_loss_w(it_w):
    from twin.power.ups_curves import ups_loss_coeffs
    a, b, c = ups_loss_coeffs((0.955, 0.965, 0.968, 0.968))
    x = it_w / 3.04e6
    return 3.04e6 * (a + b * x + c * x * x)


def solve(f, lo=0.0, hi=1e7):
    for _ in range(200):               # plain bisection: an independent root finder
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


#: the plant and house loads on the 3000 A UPS switchboards, as shipped Blue Vela had them until
#: 2 Dec 2026 (helper HMP moved them to their own mechanical boards off the transformers)
ON_SWB = "site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]"
SWB_W = 0.8 * np.sqrt(3) * 480 * 3000 * 0.95          # one 3000 A 480 V main, 80 % x pf 0.95


def test_stage_0_as_built_2n_generators_bind_then_ups(report):
    # re-pinned 2 Dec 2026 (helper HMP): the plant sits on its own mechanical boards off the
    # transformers, so a 2N switchboard carries IT + UPS loss only; the switchboards bound the
    # as-built stage at 1,464.6 kW with half the plant on them (1,185 kW with all of it, the
    # share a 2N survivor carries: test_2n_switchboard_limit_is_where_the_survivor_reaches_1)
    st = report["stages"][0]
    assert SWB_W == pytest.approx(1_895_556, abs=1)
    # one 2,500 kW genset (N+1) carrying IT + UPS loss + all the mechanical plant + house
    # + the UPS recharge (10 % of 1,520 kW): 1,519.9 kW, just under UPS A alone, 4 x 380 kW =
    # 1,520 kW (2N), which is next
    gen = solve(lambda it: it + ups_loss_w(it) + mech_w(it + ups_loss_w(it)) + HOUSE_W + 152e3 - 2500e3)
    assert st["binding"]["equipment"] == "generators"
    assert st["it_capacity_kw"] == pytest.approx(gen / 1e3, abs=0.01)
    assert st["it_capacity_kw"] == pytest.approx(1519.9, abs=0.1)
    assert st["next"]["equipment"] == "ups"
    assert st["next"]["it_capacity_kw"] == pytest.approx(1520.0)
    swb = next(c for c in st["constraints"] if c["equipment"] == "switchboards")
    it_swb = solve(lambda it: it + ups_loss_w(it) - SWB_W)
    assert swb["it_capacity_kw"] == pytest.approx(it_swb / 1e3, abs=0.01)
    # a feed loss leaves the surviving board IT + UPS loss: 0.83 of its 1,895.6 kW (1.20 with the
    # plant on it, audit HA2 F1), so the as-built stage holds a feed loss
    it = gen
    assert st["feed_loss_survivor_load_fraction"] == pytest.approx((it + ups_loss_w(it)) / SWB_W, rel=1e-3)
    assert st["feed_loss_survivor_load_fraction"] == pytest.approx(0.83, abs=0.01)
    assert st["feed_loss_holds"]


def test_2n_switchboard_limit_is_where_the_survivor_reaches_1(blue_vela):
    # helper HMP, 2 Dec 2026: with the plant on the 2N switchboards, the switchboard constraint
    # and the one-feed-lost survivor check count the same load (IT + UPS loss + the whole plant
    # and house loads: the plant keeps cooling the hall whole on the survivor), so the binding
    # limit is exactly the IT at which the survivor reaches 1.0 of its continuous limit. Before,
    # the constraint counted half the plant: 1,464.6 kW with the survivor at 1.20 there.
    st = capacity_report(load_scenario(ROOT / "scenarios" / "blue_vela.yaml", [ON_SWB]))["stages"][0]
    it = solve(lambda it: it + ups_loss_w(it) + mech_w(it + ups_loss_w(it)) + HOUSE_W - SWB_W)
    assert it == pytest.approx(1_185_000, abs=1_000)
    assert st["binding"]["equipment"] == "switchboards"
    assert st["binding"]["detail"].endswith("carries IT + UPS loss + mechanical (all)")
    assert st["it_capacity_kw"] == pytest.approx(it / 1e3, abs=0.01)
    assert st["feed_loss_survivor_load_fraction"] == pytest.approx(1.0, abs=1e-9)
    assert st["feed_loss_holds"]


def test_rpp_pairs_bind_with_main_redundancy_removed_alone(report_rpp_pairs):
    # the old chain's 2024-03-15 stage (OLD_CHAIN): main redundancy removed, RPP pairs still 2N
    report = report_rpp_pairs
    st = report["stages"][1]
    # 8 A/B RPP pairs of 400 A 415 V at 80 % and pf 0.95: 8 x 218.5 kW, but a rack's cord sits
    # on one pair: floor(218.5 / 19.94) = 10 whole racks per pair, 80 racks (re-pinned from
    # 1,748 kW / 87 racks by audit finding 15: racks are not divisible across panels)
    rpp = 0.8 * np.sqrt(3) * 415 * 400 * 0.95
    assert st["binding"]["equipment_limit_kw"] == pytest.approx(8 * rpp / 1e3, rel=1e-12)
    assert st["it_capacity_kw"] == pytest.approx(80 * report["rack_worst_case_kw"], rel=1e-12)
    assert st["it_capacity_kw"] == pytest.approx(1595.3, abs=0.1)
    assert st["racks_at_worst_case"] == 80
    assert st["binding"]["equipment"] == "rpps"
    assert st["next"]["equipment"] == "utility"
    # re-pinned 2 Dec 2026 (helper HMP): with the plant off the switchboards, losing a feed path
    # leaves the survivor IT + UPS loss at 1,595.3 kW: 0.87 of its 1,895.6 kW, it holds (it was
    # overloaded with the plant on the board); with the plant on it, it is still overloaded
    it = 1e3 * st["it_capacity_kw"]
    assert st["feed_loss_survivor_load_fraction"] == pytest.approx((it + ups_loss_w(it)) / SWB_W, rel=1e-3)
    assert st["feed_loss_holds"]
    on = capacity_report(load_scenario(ROOT / "scenarios" / "blue_vela.yaml", [OLD_CHAIN, ON_SWB]))["stages"][1]
    assert not on["feed_loss_holds"]


def test_stage_1_and_2_utility_service_binds(report, report_rpp_pairs):
    service = 3900e3 * 0.95
    # double conversion, N: IT + UPS loss + all mechanical + house on the 3.9 MVA service (3.75
    # MVA until 2 Dec 2026, which carried 2,497.0 kW on bypass, 125 of the plan's 128 racks;
    # seed 000's plan fully met the need, so the assumed service now carries its last stage)
    it2 = solve(lambda it: it + ups_loss_w(it) + mech_w(it + ups_loss_w(it)) + HOUSE_W - service)
    # UPS bypassed: no UPS loss. 2,605.3 kW
    it3 = (service - HOUSE_W - MECH_0_W) / (1 + MECH_PER_HEAT)
    assert it3 == pytest.approx(2_605_300, abs=500)
    # re-pinned 2 Dec 2026: the chain's 2024-03-15 stage removes the main redundancy and re-feeds
    # the RPPs (it2, 2,521.9 kW, was the 2024-06-01 stage's), the UPS bypass is stage 2 (was 3)
    assert [st["date"] for st in report["stages"]] == ["2024-01-01", "2024-03-15", "2024-09-01"]
    s2, s3 = report["stages"][1], report["stages"][2]
    assert it2 == pytest.approx(2_521_900, abs=500)
    assert s2["it_capacity_kw"] == pytest.approx(it2 / 1e3, abs=0.01)
    assert s3["it_capacity_kw"] == pytest.approx(it3 / 1e3, abs=0.01)
    assert s2["binding"]["equipment"] == s3["binding"]["equipment"] == "utility"
    assert s2["racks_at_worst_case"] == 126 and s3["racks_at_worst_case"] == 128
    # the re-fed RPPs (N: 16 panels of 8 positions) carry every rack: not what binds
    rpps = next(c for c in s2["constraints"] if c["equipment"] == "rpps")
    assert rpps["it_capacity_kw"] > it2 / 1e3
    # the old chain's re-fed stage (2024-06-01) is the same equipment as the shipped March stage
    assert report_rpp_pairs["stages"][2]["it_capacity_kw"] == pytest.approx(s2["it_capacity_kw"], rel=1e-12)
    # re-pinned 2 Dec 2026 (helper HMP): the plant is off the switchboards (was next at 2,671 kW),
    # so the transformers are next on bypass: 2 x 2,500 kVA x pf 0.95 carry IT + all mechanical +
    # house, 3,399.1 kW
    assert s3["next"]["equipment"] == "transformers"
    tx2 = 2 * 2500e3 * 0.95
    assert s3["next"]["it_capacity_kw"] == pytest.approx((tx2 - HOUSE_W - MECH_0_W) / (1 + MECH_PER_HEAT) / 1e3,
                                                        abs=0.01)
    assert s3["next"]["it_capacity_kw"] == pytest.approx(3399.1, abs=0.1)


def test_blue_vela_plus_70_percent_comes_out_of_the_derivation(report):
    caps = [s["it_capacity_kw"] for s in report["stages"]]
    assert all(np.diff(caps) >= 0)                           # each change adds capacity
    ratio = caps[-1] / caps[0]
    assert 1.6 <= ratio <= 1.8, ratio
    # and lands within 4 % of the typed plan's first and last stages (1,520 -> 2,585 kW): 0.01 %
    # below and 0.8 % above, x1.71 (x1.78 from 1,464.6 kW until 2 Dec 2026, helper HMP: the
    # as-built generators bind, not the switchboards) (the 3.9 MVA service is bounded by these two statements of seed 000:
    # the ratio is a consistency check of that input, not a validation)
    assert caps[0] == pytest.approx(1520, rel=0.04)
    assert caps[-1] == pytest.approx(2585, rel=0.04)
    # whole racks at worst case, at most the 128 positions (130 would fit on bypass)
    assert report["stages"][-1]["racks_at_worst_case"] == min(128, int(caps[-1] // report["rack_worst_case_kw"]))
    assert int(caps[-1] // report["rack_worst_case_kw"]) == 130


def test_surviving_units_and_ups_rules():
    assert [surviving_units(4, r) for r in ("N", "N+1", "2N")] == [4, 3, 2]
    assert surviving_units(3, "distributed_redundant") == 2
    with pytest.raises(ValueError):
        surviving_units(3, "2N")
    assert ups_usable_kw(2, 4, 380, "2N", "double_conversion")[0] == 1520
    assert ups_usable_kw(1, 5, 400, "N+1", "double_conversion")[0] == 1600
    assert ups_usable_kw(3, 2, 500, "distributed_redundant", "eco")[0] == 2000
    # in bypass the modules no longer limit: the bypass path does
    assert ups_usable_kw(2, 2, 380, "N", "bypass")[0] == 1520
    assert ups_usable_kw(2, 2, 380, "N", "bypass", 2000)[0] == 4000


def test_it_capacity_behind_a_linear_load_is_exact():
    # load = 1.25 IT + 100 kW on a 1 MW stage -> IT = 720 kW
    assert it_capacity_behind_w(1e6, lambda it: 1.25 * it + 1e5) == pytest.approx(720e3, abs=1e-2)
    assert it_capacity_behind_w(1e6, lambda it: it + 2e6) == 0.0


def test_2n_survivor_carries_the_whole_plant_whatever_the_transfer_flag():
    # re-pinned 2 Dec 2026 (helper HMP): the plant keeps cooling the hall whole through the loss
    # of a path, so a 2N survivor carries all of it with or without a transfer switch (the flag
    # changes the transient, not the power; twin.power.chain.split_mechanical_w). Was
    # unit / 1.2 (half the plant) without the transfer.
    mech = lambda heat: 0.4 * heat  # noqa: E731
    base = dict(switchboards=Switchboards(count=2, main_breaker_a=3000, redundancy="2N"))
    no_xfer = PowerChain(**base, mechanical={"carried_by": ["switchboards"], "transfers_on_feed_loss": False})
    xfer = PowerChain(**base, mechanical={"carried_by": ["switchboards"], "transfers_on_feed_loss": True})
    unit = 0.8 * np.sqrt(3) * 480 * 3000 * 0.95
    c1 = chain_constraints(no_xfer, rack_positions=1, mechanical_w=mech)[0][0].it_capacity_kw
    c2 = chain_constraints(xfer, rack_positions=1, mechanical_w=mech)[0][0].it_capacity_kw
    assert c1 == pytest.approx(unit / 1.4 / 1e3, rel=1e-9)
    assert c2 == pytest.approx(unit / 1.4 / 1e3, rel=1e-9)


def test_generators_carry_the_ups_recharge():
    ch = PowerChain(generators=Generators(count=2, kw=2000, redundancy="N+1"),
                    ups=UpsPlant(systems=2, modules_per_system=4, module_kw=250, topology="2N"),
                    mechanical={"carried_by": []})
    cons, _ = chain_constraints(ch, rack_positions=1, mechanical_w=lambda h: 0.0)
    gen = next(c for c in cons if c.equipment == "generators")
    # 2000 kW - 10 % of the 1000 kW usable UPS for recharge = 1900 kW of IT + UPS loss
    assert "UPS recharge 100 kW" in gen.detail
    from twin.power.ups_curves import ups_loss_coeffs
    a, b, c = ups_loss_coeffs((0.955, 0.965, 0.968, 0.968))
    it = solve(lambda it: it + 2e6 * (a + b * it / 2e6 + c * (it / 2e6) ** 2) + 1e5 - 2e6)
    assert gen.it_capacity_kw == pytest.approx(it / 1e3, abs=0.01)
    assert gen.it_capacity_kw == pytest.approx(1839.4, abs=0.1)


def test_binding_and_next_are_different_equipment():
    ch = PowerChain(rpps=Rpps(count=4, breaker_a=225, redundancy="N"),
                    branch=BranchCircuits(breaker_a=30, voltage_v=208, redundancy="2N"),
                    transformers=Transformers(count=1, kva=50, redundancy="N"))
    cons, _ = chain_constraints(ch, rack_positions=10, mechanical_w=lambda h: 0.0)
    first, nxt = binding_constraints(cons)
    assert first.equipment == "transformers"
    assert nxt.equipment != first.equipment


@pytest.mark.parametrize("make, match", [
    (lambda: UpsPlant(systems=3, module_kw=500, topology="2N"), "topology 2N needs an even number of UPS systems; got systems=3"),
    (lambda: UpsPlant(systems=2, module_kw=500, topology="distributed_redundant"), "at least 3 UPS systems"),
    (lambda: Generators(count=1, kw=2000, redundancy="N+1"), "generators: redundancy N\\+1 needs at least 2 generator sets.*count=1"),
    (lambda: Transformers(count=3, kva=2500, redundancy="2N"), "transformers: redundancy 2N.*count=3"),
    (lambda: BranchCircuits(breaker_a=30, cords_per_rack=1, redundancy="2N"), "cords_per_rack=1"),
    (lambda: Rpps(count=4, breaker_a=400, frame="vacuum"), "unknown breaker frame 'vacuum'"),
    (lambda: Battery(power_kw=1000, energy_kwh=0), "power_kw=1000 with energy_kwh=0"),
])
def test_bad_equipment_is_refused_naming_part_and_numbers(make, match):
    with pytest.raises(ValidationError, match=match):
        make()


def test_a_stage_change_must_name_existing_equipment():
    with pytest.raises(ValidationError, match="stages.0 .*no field 'ups.colour'"):
        PowerChain(ups=UpsPlant(systems=2, module_kw=1), stages=[{"date": "2024-01-01", "set": {"ups.colour": 1}}])
    with pytest.raises(ValidationError, match="stages.0 .*ups.topology"):
        PowerChain(ups=UpsPlant(systems=2, module_kw=1), stages=[{"date": "2024-01-01", "set": {"ups.topology": "3N"}}])


def test_branch_smaller_than_a_rack_idle_draw_is_a_problem(blue_vela):
    ch = blue_vela.site.power.chain.model_copy(update={"branch": BranchCircuits(breaker_a=5, voltage_v=415)})
    s = blue_vela.model_copy(update={"site": blue_vela.site.model_copy(update={
        "power": blue_vela.site.power.model_copy(update={"chain": ch})})})
    probs = chain_problems(s)
    assert probs and "idle draw (4.68 kW)" in probs[0][2] and "2.73 kW" in probs[0][2]
    assert chain_problems(blue_vela) == []


def test_stage_capacity_counts_racks_that_fit(blue_vela):
    ch = PowerChain(branch=BranchCircuits(breaker_a=30, voltage_v=208, redundancy="2N"))
    sc = stage_capacity(ch, rack_positions=128, rack_worst_case_w=19_940.0, mechanical_w=lambda h: 0.0)
    # 208 V 30 A: 8.2 kW per cord at the continuous rule; a 19.9 kW rack never fits on failover
    assert sc.extras["failover_overload"] and sc.extras["racks_at_worst_case"] == 0
