"""Every figure the siting study adds to a run is declared with its unit (twin.outputs, group
"study"), so sweeps and reports label it (HT2's power-event figures, audit finding 9)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import xarray as xr

from twin.studies.metrics import STUDY_KPI_UNITS, power_event_figures

UNITS = {"chiller_restarts": "count", "power_event_peak_inlet_c": "degC", "max_rack_inlet_steady_c": "degC",
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
