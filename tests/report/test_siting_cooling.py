"""The siting study rejects a hall whose cooling is short and names the constraint."""

import numpy as np
import xarray as xr

from twin.studies.tables import cooling_rejection, siting_table

NAMES = ["gpus_hosted", "gpus_delivered", "days_to_full_capacity", "tokens_total", "max_rack_inlet_c",
         "upgrade_cost_usd", "energy_cost_usd", "co2_t", "power_use_fraction", "cooling_use_fraction",
         "floor_use_fraction", "inlet_margin_c", "days_power_limited", "cooling_capacity_margin_kw",
         "hours_cooling_over_capacity"]


def test_a_hall_with_short_cooling_is_rejected_however_well_it_scores():
    rows = {  # "cheap" wins every criterion but its cooling units are 200 kW short in the run
        "cheap": [2048, 2048, 80, 9e12, 22, 0.1e6, 0.8e6, 1000, 0.8, 0.9, 0.9, 5, 0, -200.0, 310.0],
        "solid": [1536, 2048, 120, 7e12, 25, 2e6, 1e6, 2000, 0.8, 0.7, 0.9, 2, 0, 150.0, 0.0],
        "tight": [1024, 2048, 150, 5e12, 26, 1e6, 1e6, 2000, 0.8, 1.3, 0.9, 1, 0, np.nan, np.nan],
    }
    ds = xr.Dataset({k: (("site", "seed"), np.array([[rows[s][i]] for s in rows], float))
                     for i, k in enumerate(NAMES)}, coords={"site": list(rows), "seed": [0]})
    t = siting_table(ds).set_index("site")
    assert t.loc["solid", "overall_rank"] == 1 and t.loc["solid", "rejected"] == ""
    assert t.loc["cheap", "rejected"].startswith("cooling short: ")
    assert "short by 200 kW" in t.loc["cheap", "rejected"] and "310 h over cooling capacity" in t.loc["cheap", "rejected"]
    assert "130% of the cooling units' capacity" in t.loc["tight", "rejected"]
    assert set(t.loc[["cheap", "tight"], "overall_rank"]) == {2, 3}
    assert "cooling" in t.loc["cheap", "binds"] and "cooling" in t.loc["tight", "binds"]


def test_rejection_text_is_empty_with_headroom():
    assert cooling_rejection(0.9, 50.0, 0.0) == ""
    assert cooling_rejection() == ""
