"""The siting study rejects a hall whose cooling is short and names the constraint: heat the
hall's running units together (or the plant) cannot remove, or inlets above the ASHRAE
recommended limit (27 C). A unit that saturates while its neighbours take the rest is only
noted."""

import numpy as np
import pytest
import xarray as xr
from thermal.test_capacity import _two_unit_model  # two racks, two 5 m3/s units (its docstring)

from twin.studies.tables import INLET_REJECT_C, cooling_note, cooling_rejection, siting_table
from twin.thermal.capacity import capped_steady_state, hall_cooling_margin_w
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K

NAMES = ["gpus_hosted", "gpus_delivered", "days_to_full_capacity", "tokens_total", "max_rack_inlet_c",
         "upgrade_cost_usd", "energy_cost_usd", "co2_t", "power_use_fraction", "cooling_use_fraction",
         "floor_use_fraction", "inlet_margin_c", "days_power_limited", "cooling_capacity_margin_kw",
         "hours_cooling_over_capacity", "cooling_unit_margin_kw", "hours_cooling_unit_saturated"]

G5 = AIR_VOLUMETRIC_HEAT_J_M3_K * 5.0  # rho cp V of a 5 m3/s unit: 6030 W/K


def _table(rows):
    ds = xr.Dataset({k: (("site", "seed"), np.array([[rows[s][i]] for s in rows], float))
                     for i, k in enumerate(NAMES)}, coords={"site": list(rows), "seed": [0]})
    return siting_table(ds).set_index("site")


def test_a_hall_with_short_cooling_is_rejected_however_well_it_scores():
    rows = {  # "cheap" wins every criterion but its hall is 200 kW short in the run
        "cheap": [2048, 2048, 80, 9e12, 22, 0.1e6, 0.8e6, 1000, 0.8, 0.9, 0.9, 5, 0, -200.0, 310.0, -250.0, 400.0],
        "solid": [1536, 2048, 120, 7e12, 25, 2e6, 1e6, 2000, 0.8, 0.7, 0.9, 2, 0, 150.0, 0.0, 20.0, 0.0],
        "tight": [1024, 2048, 150, 5e12, 26, 1e6, 1e6, 2000, 0.8, 1.3, 0.9, 1, 0, np.nan, np.nan, np.nan, np.nan],
    }
    t = _table(rows)
    assert t.loc["solid", "overall_rank"] == 1 and t.loc["solid", "rejected"] == ""
    assert t.loc["cheap", "rejected"].startswith("cooling short: the running cooling units (or the plant) cannot "
                                                 "remove the hall's heat")
    assert "short by 200 kW at worst, 310 h over cooling capacity" in t.loc["cheap", "rejected"]
    assert "130% of the cooling units' capacity" in t.loc["tight", "rejected"]
    assert set(t.loc[["cheap", "tight"], "overall_rank"]) == {2, 3}
    assert "cooling" in t.loc["cheap", "binds"] and "cooling" in t.loc["tight", "binds"]
    # its units saturate, but the hall is short as a whole: no neighbour takes the rest
    assert t.loc["cheap", "cooling_note"] == "a cooling unit saturates (by 250.0 kW for 400 h)"


def test_the_note_of_a_short_hall_names_no_neighbours_and_skips_an_overload_below_its_resolution():
    from twin.studies.tables import UNIT_SATURATION_RESOLUTION_KW

    assert UNIT_SATURATION_RESOLUTION_KW == 0.1
    # the audit's table: a hall rejected for short cooling whose worst unit read -0.03 kW
    # printed "a cooling unit saturates (by 0.0 kW ...); its neighbours take the rest"
    assert cooling_note(-0.03, 2.0, -1081.0, 66.0) == ""
    assert cooling_note(-0.03, 2.0) == ""                  # at capacity, not beyond, either way
    assert cooling_note(-0.1, 2.0) == "a cooling unit saturates (by 0.1 kW for 2 h); its neighbours take the rest"
    # the hall short by its margin or by its hours: the note keeps the saturation, not the neighbours
    assert cooling_note(-12.0, 5.0, -50.0, np.nan) == "a cooling unit saturates (by 12.0 kW for 5 h)"
    assert cooling_note(-12.0, 5.0, np.nan, 3.0) == "a cooling unit saturates (by 12.0 kW for 5 h)"
    assert cooling_note(-12.0, 5.0, 40.0, 0.0) == ("a cooling unit saturates (by 12.0 kW for 5 h); its neighbours "
                                                   "take the rest")
    # in the table: rejected, and the note does not contradict the rejection
    rows = {"short": [2048, 2048, 80, 9e12, 30, 0.1e6, 0.8e6, 1000, 0.8, 0.9, 0.9, 5, 0, -1081.0, 66.0, -0.03, 2.0]}
    t = _table(rows)
    assert t.loc["short", "rejected"].startswith("cooling short") and t.loc["short", "cooling_note"] == ""


def test_a_saturated_unit_with_neighbours_compensating_is_noted_not_rejected():
    # the existing hall's case: one unit 5 kW beyond its capacity for 75 h, the hall 400 kW
    # within what its running units remove together, inlets below 20 C
    rows = {"existing": [2048, 2048, 80, 9e12, 19.5, 1e6, 1e6, 2000, 0.8, 0.7, 0.9, 5, 0, 400.0, 0.0, -4.8, 75.0],
            "new": [2048, 2048, 90, 8e12, 20.0, 2e6, 1e6, 2000, 0.8, 0.7, 0.9, 5, 0, 300.0, 0.0, 30.0, 0.0]}
    t = _table(rows)
    assert t.loc["existing", "rejected"] == "" and t.loc["existing", "overall_rank"] == 1
    assert t.loc["existing", "cooling_note"] == "a cooling unit saturates (by 4.8 kW for 75 h); its neighbours " \
                                                "take the rest"
    assert t.loc["new", "cooling_note"] == ""


def test_inlets_above_the_recommended_limit_reject_even_with_capacity_to_spare():
    assert INLET_REJECT_C == 27.0          # ASHRAE TC 9.9 (2021), recommended 18-27 C
    # the colocation hall's case: 396 kW to spare in total, units saturated, inlets 29.7 C
    assert cooling_rejection(0.8, 396.0, 0.0, 29.68) == ("cooling short: hottest inlet 29.7 C, above the "
                                                         "ASHRAE recommended 27 C")
    assert cooling_rejection(0.8, 396.0, 0.0, 33.04) == ("cooling short: hottest inlet 33.0 C, above the "
                                                         "ASHRAE recommended 27 C and the A1 allowable 32 C")
    assert cooling_rejection(0.9, 50.0, 0.0, 27.0) == ""


def test_rejection_text_is_empty_with_headroom():
    assert cooling_rejection(0.9, 50.0, 0.0, 22.0) == ""
    assert cooling_rejection() == "" and cooling_note() == ""


def test_small_hall_one_unit_saturates_but_the_total_suffices_is_not_rejected():
    # units of 50 and 100 kW, racks of 80 and 40 kW. By hand:
    #   unit margin  = 50 - 80 = -30 kW (unit 0 would have to remove rack 0's 80 kW);
    #   hall margin  = (50 + 100) - (80 + 40) = +30 kW;
    #   unit 0 saturates: T_sup,0 = T_ret,0 - 50 kW / G with T_ret,0 = mean(T_sup) + 80 kW / G
    #   and T_sup,1 = 18 C, so T_sup,0 = 18 + 2 x 30 kW / G = 27.95 C and each inlet is
    #   the mean, 18 + 30 kW / G = 22.975 C (tolerance 1e-9 K, the solver is exact here)
    model, heat = _two_unit_model([50e3, 100e3]), np.array([80e3, 40e3])
    st = capped_steady_state(model, heat)
    unit_margin_kw = st.capacity_margin_w / 1e3
    hall_margin_kw = hall_cooling_margin_w(model.cooling_capacity_w, model.cooling_active, heat) / 1e3
    assert unit_margin_kw == pytest.approx(-30.0, abs=1e-9)
    assert hall_margin_kw == pytest.approx(30.0, abs=1e-9)
    assert st.feasible and st.deficit_w == 0.0
    assert st.inlet_temp_c == pytest.approx(np.full(2, 18.0 + 30e3 / G5), abs=1e-9)
    assert 18.0 + 30e3 / G5 == pytest.approx(22.975, abs=1e-3)
    inlet = float(st.inlet_temp_c.max())
    assert cooling_rejection(heat.sum() / 150e3, hall_margin_kw, 0.0, inlet) == ""
    assert cooling_note(unit_margin_kw, 1.0) == "a cooling unit saturates (by 30.0 kW for 1 h); its " \
                                                       "neighbours take the rest"


def test_small_hall_whose_total_is_short_is_rejected_with_the_deficit():
    # racks of 80 and 80 kW on units of 50 and 100 kW: deficit = 160 - 150 = 10 kW by hand,
    # and with a 140 kW chilled-water plant the plant binds: 160 - 140 = 20 kW
    model, heat = _two_unit_model([50e3, 100e3]), np.array([80e3, 80e3])
    st = capped_steady_state(model, heat)
    hall_margin_kw = hall_cooling_margin_w(model.cooling_capacity_w, model.cooling_active, heat) / 1e3
    assert not st.feasible and st.limiting == "units"
    assert st.deficit_w == pytest.approx(10e3, abs=1e-6) and hall_margin_kw == pytest.approx(-10.0, abs=1e-9)
    assert hall_cooling_margin_w(model.cooling_capacity_w, model.cooling_active, heat, 140e3) == \
        pytest.approx(-20e3, abs=1e-6)
    # a stopped unit takes its capacity with it: only unit 1's 100 kW is left for 160 kW
    assert hall_cooling_margin_w(model.cooling_capacity_w, [False, True], heat) == pytest.approx(-60e3, abs=1e-6)
    why = cooling_rejection(heat.sum() / 150e3, hall_margin_kw, 6.0, np.nan)
    assert why == ("cooling short: worst-case rack heat is 107% of the cooling units' capacity; the running "
                   "cooling units (or the plant) cannot remove the hall's heat: short by 10 kW at worst, 6 h over "
                   "cooling capacity")
