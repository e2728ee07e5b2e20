"""The two cooling margins of a run (issue 12): the hall's (what its running units together can
remove minus its heat: negative means the room heats up) and the unit's (one unit beyond its own
capacity, its neighbours taking the rest: information). Both checked by hand against the
scenario's capacities and the recorded rack heat, and read by the siting rejection."""

from functools import cache
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.scenario import load_scenario
from twin.studies.tables import cooling_note, cooling_rejection

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
BASE = ("simulation.duration_days=16", "site.cooling_system.model=physical")


@cache
def run(*extra: str):
    s = load_scenario(BV, list(BASE) + list(extra))
    return s, twin.simulate(s)


def _hand_margin_w(s, ds) -> np.ndarray:
    """min(sum of the running units' capacities, the plant) - rack heat, every sample [W]
    (no unit faults in these runs: all units run)."""
    cap = sum(u.capacity_kw for u in s.site.halls[0].cooling_units) * 1e3
    plant = s.site.cooling_system.plant.capacity_kw
    cap = min(cap, plant * 1e3) if plant is not None else cap
    return cap - ds.rack_power_w.sum("rack").values


def test_one_saturated_unit_is_information_not_a_hall_shortage():
    # one CRAH of Blue Vela's twelve cut to 20 kW: it sees more than that, supplies warmer
    # air and its neighbours take the rest; the hall has over 2 MW to spare
    s, r = run("site.halls.0.cooling_units.0.capacity_kw=20")
    ds, k = r.dataset, r.kpis
    hall = _hand_margin_w(s, ds)
    # results.nc keeps rack power in float32: the hand sum is good to ~0.2 W of 2 MW
    assert ds.cooling_capacity_margin_w.values == pytest.approx(hall, rel=1e-6, abs=1.0)
    assert k["cooling_capacity_margin_kw"] == pytest.approx(hall.min() / 1e3, rel=1e-6)
    assert k["cooling_capacity_margin_kw"] > 2000 and k["hours_cooling_over_capacity"] == 0
    assert k["cooling_unit_margin_kw"] < 0 and k["hours_cooling_unit_saturated"] > 24
    # the unit margin is the lowest of the unit readings: capacity minus demand, so <= the hall's
    assert np.all(ds.cooling_unit_margin_w.values <= ds.cooling_capacity_margin_w.values)
    # the saturated unit never removes more than its capacity (1e-6 relative)
    assert float(ds.cooling_unit_load_w[:, 0].max()) <= 20e3 * (1 + 1e-6)
    assert "cooling_short" not in set(r.events["kind"])
    assert k["max_rack_inlet_c"] < 27.0
    assert cooling_rejection(np.nan, k["cooling_capacity_margin_kw"], k["hours_cooling_over_capacity"],
                             k["max_rack_inlet_c"]) == ""
    assert cooling_note(k["cooling_unit_margin_kw"], k["hours_cooling_unit_saturated"]).startswith(
        "a cooling unit saturates")
    for name in ("cooling_capacity_margin_w", "cooling_unit_margin_w"):
        assert ds[name].attrs["units"] == "W" and ds[name].attrs["long_name"]


@pytest.mark.slow
def test_a_hall_whose_units_together_are_short_counts_the_deficit_and_is_rejected():
    # every unit at 15 kW: 180 kW for up to 630 kW of rack heat. Margin = 180 kW - heat,
    # sample by sample; hours over capacity = samples with heat above 180 kW x 1 h
    s, r = run(*(f"site.halls.0.cooling_units.{u}.capacity_kw=15" for u in range(12)))
    ds, k = r.dataset, r.kpis
    hall = _hand_margin_w(s, ds)
    # results.nc keeps rack power in float32: the hand sum is good to ~0.2 W of 2 MW
    assert ds.cooling_capacity_margin_w.values == pytest.approx(hall, rel=1e-6, abs=1.0)
    dt_h = float(s.simulation.sample_interval_s) / 3600
    assert k["hours_cooling_over_capacity"] == pytest.approx(np.sum(hall < 0) * dt_h)
    assert k["hours_cooling_over_capacity"] > 24
    assert k["cooling_capacity_margin_kw"] == pytest.approx(hall.min() / 1e3, rel=1e-6)
    assert k["cooling_capacity_margin_kw"] < -300
    assert "cooling_short" in set(r.events["kind"])
    why = cooling_rejection(np.nan, k["cooling_capacity_margin_kw"], k["hours_cooling_over_capacity"],
                            k["max_rack_inlet_c"])
    assert f"short by {-k['cooling_capacity_margin_kw']:,.0f} kW at worst" in why
