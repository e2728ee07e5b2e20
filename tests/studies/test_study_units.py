"""Every figure the siting study adds to a run is declared with its unit (twin.outputs, group
"study"), so sweeps and reports label it (HT2's power-event figures, audit finding 9)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from twin.studies.metrics import STUDY_KPI_UNITS, power_event_figures

UNITS = {"chiller_restarts": "count", "power_event_peak_inlet_c": "degC", "power_event_racks_shut": "count",
         "max_rack_inlet_steady_c": "degC",
         "cooling_capacity_margin_steady_kw": "kW", "hours_cooling_over_capacity_steady": "h"}


def _results():
    t = np.array(["2024-01-01T00", "2024-01-01T01", "2024-01-01T02"], dtype="datetime64[ns]")
    ds = xr.Dataset({"cooling_capacity_margin_w": ("time", np.array([5e3, -2e3, 1e3]))}, coords={"time": t})
    ev = pd.DataFrame({"time_s": np.zeros(0), "kind": np.array([], dtype=object)})
    return SimpleNamespace(dataset=ds, events=ev)


def test_power_event_figures_are_declared_with_their_units():
    figs = power_event_figures(_results(), np.datetime64("2024-01-01T00"), 3600.0, 3 * 3600.0)
    assert set(figs) == set(UNITS)
    assert {k: STUDY_KPI_UNITS[k][0] for k in figs} == UNITS
    assert figs["cooling_capacity_margin_steady_kw"] == -2.0 and figs["hours_cooling_over_capacity_steady"] == 1.0


def test_facility_limit_takes_the_smallest_feed_path_limit():
    from twin.studies.metrics import facility_it_limit_w
    feeds = [1_600e3, 1_600e3]
    # plan 2,585 kW, UPS 2 x 1,520 kW in line, feeds adding: 2,585 kW without the per-feed limits
    assert facility_it_limit_w(2_585e3, 3_040e3, True, feeds, False) == 2_585e3
    assert facility_it_limit_w(2_585e3, 3_040e3, True, feeds, False, [2_400e3, 2_221.6e3]) == 2_221.6e3
    assert facility_it_limit_w(2_000e3, 3_040e3, True, feeds, False, [2_400e3, 2_221.6e3]) == 2_000e3


def test_a_binding_feed_is_named_in_the_study_figures_and_the_answer():
    import twin
    from twin.studies.metrics import study_kpis
    from twin.studies.summary import power_wait_sentence, run_answer

    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    # feed A at 600 kW: (600 - (80 + 195.5) / 2) / (0.5 + 0.316367 / 2) = 702.3 kW of IT (the
    # physical plant at the 33 C design day, tests/power/test_feed_limits.py), 35 racks of the
    # 64 delivered by February; the plan (1,520 kW) and the feeds' sum would admit all 64
    s = twin.load_scenario(root / "scenarios" / "blue_vela.yaml",
                           ["simulation.duration_days=40", "site.power.feeds.0.capacity_kw=600",
                            "site.power.grid.sag_rate_per_year=0", "site.power.grid.outage_rate_per_year=0",
                            "site.power.grid.feed_outage_rate_per_year=0",
                            # the plant on the switchboards, as Blue Vela had it until 2 Dec 2026
                            # (HMP moved it to its own boards): the feed then carries its share
                            "site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]"])
    res = twin.simulate(s)
    limit_w = (600e3 - (80e3 + 195.5e3) / 2) / (0.5 + (0.01 + 1.01 * (33 / 112.5 + 0.01)) / 2)
    k = study_kpis(s, res)
    from twin.plant import rack_worst_cases_w
    demand_w = float(rack_worst_cases_w(s)[:64].sum())
    assert k["power_use_fraction"] == pytest.approx(demand_w / limit_w, rel=1e-9)   # 1.82, not 0.84 of the plan
    # the stretch of dark racks names the feed (power binds the answer only once jobs fill the racks)
    _, facts = run_answer(res.dataset, res.kpis, s)
    pw = facts["power_wait"]
    assert pw["feed_name"] == "A" and pw["feed_limit_w"] == pytest.approx(limit_w, rel=1e-9)
    text = power_wait_sentence(pw)
    assert "against 702 kW, the limit of feed A (its share of the IT and its share of the cooling and house " \
           "loads at worst case), below the 1.52 MW stage" in text
    assert "so the feed binds" in text and "staged power plan binds" not in text
