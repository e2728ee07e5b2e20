"""What the hall view shows: values, states, colour scales and times taken from runs and
scenarios (no rendering)."""

import numpy as np
import pandas as pd
import pytest

from twin.viz import snapshot as S


def test_parse_time_forms():
    times = np.arange("2024-01-01T00", "2024-01-11T00", dtype="datetime64[h]")  # hourly, 10 days
    assert S.parse_time(None, times) == len(times) - 1
    assert S.parse_time("end", times) == len(times) - 1
    assert S.parse_time("start", times) == 0
    assert S.parse_time("2024-01-03", times) == 48
    assert S.parse_time("2024-01-03T05:20", times) == 53          # nearest sample
    assert S.parse_time("2d", times) == 48
    assert S.parse_time("36h", times) == 36
    with pytest.raises(ValueError, match="outside the run"):
        S.parse_time("2025-01-01", times)
    with pytest.raises(ValueError, match="expected an ISO date"):
        S.parse_time("next tuesday", times)


def test_color_scales():
    inlet = S.color_scale("inlet_temp", np.array([20.2, 26.7, np.nan]))
    assert inlet.clim == (20.0, 27.0) and inlet.categories is None
    narrow = S.color_scale("inlet_temp", np.array([21.0, 21.5]))
    assert narrow.clim[1] - narrow.clim[0] == pytest.approx(4.0)   # minimum span, centred
    rpp = S.color_scale("rpp_load", np.array([0.2, 0.5]))
    assert rpp.clim == (0.0, 1.0)          # the breaker limit stays on the scale
    assert S.color_scale("rpp_load", np.array([1.3])).clim == (0.0, 1.3)
    health = S.color_scale("health", np.array([0, 2]))
    assert health.categories == S.HEALTH_NAMES and len(health.cmap) == 4
    ashrae = S.color_scale("ashrae", np.array([0]))
    assert ashrae.categories[0] == "recommended" and ashrae.categories[5] == "beyond_A4"
    with pytest.raises(ValueError, match="unknown colour"):
        S.color_scale("humidity", np.array([1.0]))


def test_rack_quantities_hide_undelivered_racks():
    state = np.array([-1, 0, 2, 3])
    inlet = np.array([20.0, 21.0, 28.0, 33.0])
    v = S._rack_quantity("ashrae", inlet, np.zeros(4), np.zeros(4), state)
    assert np.isnan(v[0])
    # ASHRAE TC 9.9 (2021): 21 C recommended, 28 C A1 (15-32), 33 C A2 (10-35)
    assert v[1:].tolist() == [0.0, 1.0, 2.0]
    h = S._rack_quantity("health", inlet, np.zeros(4), np.zeros(4), state)
    assert np.isnan(h[0]) and h[1:].tolist() == [0.0, 2.0, 3.0]


def test_cooling_active_follows_fault_events(small_scenario):
    ev = pd.DataFrame({"time_s": [100.0, 200.0, 300.0], "kind": ["cooling_fault", "cooling_restored", "cooling_fault"],
                       "target": ["crac_1", "crac_1", "crac_2"], "detail": ["", "", ""]})
    assert S.cooling_active_at(small_scenario, ev, 50.0)[0].tolist() == [True, True]
    assert S.cooling_active_at(small_scenario, ev, 150.0)[0].tolist() == [False, True]
    assert S.cooling_active_at(small_scenario, ev, 250.0)[0].tolist() == [True, True]
    assert S.cooling_active_at(small_scenario, ev, 350.0)[0].tolist() == [True, False]


def test_design_point_snapshot(small_scenario):
    from twin.plant import build_plant

    p = build_plant(small_scenario)
    snap = S.snapshot_from_scenario(small_scenario, "rpp_load")
    per_rack = S.rack_design_power_w(small_scenario, p)
    # RPP load = its racks x rack worst case / continuous breaker limit, shown on each rack
    racks_on = np.bincount(p.rack_rpp, minlength=len(p.rpp_limit_w))
    assert snap.rack_value == pytest.approx(racks_on[p.rack_rpp] * per_rack / p.rpp_limit_w[p.rack_rpp])
    assert (snap.rack_state == 2).all()
    f = snap.fields[0]
    # the field's inlets are the ones the snapshot reports, and never below the supply air
    inlet = S.snapshot_from_scenario(small_scenario, "inlet_temp").rack_value
    assert inlet == pytest.approx(f["rack_inlet_temp"].values)
    assert inlet.min() >= 20.0 - 1e-9
    # energy balance of the field: heat removed by the units = rack heat
    assert f["cooling_heat_removed"].sum() == pytest.approx(snap.rack_heat_w.sum(), rel=1e-6)


def test_run_snapshot_matches_dataset(small_results):
    ds = small_results.dataset
    snap = S.snapshot_from_results(small_results, "power", time_index=10, field=False)
    assert snap.rack_value == pytest.approx(ds["rack_power_w"].values[10] / 1e3)
    assert snap.rack_state.tolist() == ds["rack_state"].values[10].tolist()
    assert snap.label.startswith(str(ds["time"].values[10])[:10])
    # one colour scale for the whole run: the run's highest rack power is on it
    assert snap.scale.clim[1] == pytest.approx(float(np.nanmax(ds["rack_power_w"].values)) / 1e3)
    assert "GPUs" in snap.caption and snap.fields == []
    withfield = S.snapshot_from_results(small_results, "inlet_temp", time_index=10, field=True)
    f = withfield.fields[0]
    assert f["rack_heat"].values == pytest.approx(np.nan_to_num(ds["rack_power_w"].values[10]))


def test_scenario_of_a_run_saved_by_another_version(small_results):
    import json

    ds = small_results.dataset.copy()
    data = json.loads(ds.attrs["scenario_json"])
    data["failures"]["retired_option"] = 1.0          # a field this schema does not know
    ds.attrs["scenario_json"] = json.dumps(data)

    class Old:
        dataset = ds

    s = S.scenario_of(Old())
    assert s.name == "lenovo_small" and not hasattr(s.failures, "retired_option")
    del data["simulation"]
    ds.attrs["scenario_json"] = json.dumps(data)
    with pytest.raises(ValueError, match="does not fit this twin version"):
        S.scenario_of(Old())


def test_view_reads_a_run_without_its_per_job_tables(small_run_dir, small_results):
    # the 3-D view reads the series a picture shows; the (time, job) tables of a job-stream
    # run (about 200 MB for nine months of Blue Vela) are summed to tokens per sample
    view = S.load_view(small_run_dir, block=7)          # blocks that do not divide the samples
    ds, full = view.dataset, small_results.dataset
    assert not [k for k, v in ds.data_vars.items() if "job" in v.dims]
    assert ds["tokens_total"].values == pytest.approx(full["job_tokens"].values.sum(axis=1))
    for i in (0, 20, -1):
        a = S.snapshot_from_results(small_results, "inlet_temp", i, field=False)
        b = S.snapshot_from_results(view, "inlet_temp", i, field=False)
        assert b.caption == a.caption and np.array_equal(b.rack_value, a.rack_value, equal_nan=True)
    assert len(view.events) == len(small_results.events) and view.kpis == small_results.kpis
