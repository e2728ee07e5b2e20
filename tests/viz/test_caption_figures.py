"""The containment note quotes the caption's inlets, and says which picture the room-air
figure comes from (audit HA2 F11: "every inlet is at most 18.3 °C" from the design-airflow
re-solve beside the run's "max inlet 18.0 °C")."""

import re
from dataclasses import replace

import numpy as np
import pytest

from twin.viz import snapshot as S


def _max_inlet(caption: str) -> str:
    return re.search(r"max inlet (\d+\.\d) °C", caption).group(1)


@pytest.mark.parametrize("color", ["power", "inlet_temp", "rpp_load"])
def test_run_note_quotes_the_runs_max_inlet_and_names_the_design_picture(small_results, color):
    # lenovo_small: physical model, fan-law airflow, buoyant recirculation -> the drawn room
    # air is the design-airflow plan view, not the run's state
    snap = S.snapshot_from_results(small_results, color, -1)
    assert snap.field_is_design and snap.caption.endswith(S.FIELD_DESIGN_NOTE)
    note = S.containment_note(snap)
    run_max = _max_inlet(snap.caption)
    ds = small_results.dataset
    on = ds.rack_state.values[-1] >= 1
    assert run_max == f"{np.nanmax(ds.rack_inlet_c.values[-1][on]):.1f}"
    assert f"every inlet of the run is at most {run_max} °C" in note
    room = max(float(np.nanmax(f["temperature"].values)) for f in snap.fields if f is not None)
    assert f"up to {room:.1f} °C on the slice in the design-airflow picture" in note
    # the field's own inlets (full-speed airflow) are not what the note quotes
    field_max = max(float(np.nanmax(f["rack_inlet_temp"].values)) for f in snap.fields if f is not None)
    assert f"{field_max:.1f}" != run_max


def test_design_point_note_is_one_picture(small_scenario):
    snap = S.snapshot_from_scenario(small_scenario, "power")
    note = S.containment_note(snap)
    assert not snap.field_is_design
    assert f"every inlet is at most {_max_inlet(snap.caption)} °C" in note and "design-airflow" not in note
    # the note follows the snapshot's inlets, whatever the colour
    hotter = replace(snap, rack_inlet_c=snap.rack_inlet_c + 1.0)
    assert f"at most {np.nanmax(snap.rack_inlet_c) + 1.0:.1f} °C" in S.containment_note(hotter)
