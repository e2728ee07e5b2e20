"""outputs.rack_series (issue 19): bounded memory without moving a KPI.

Below ``full`` the recorder keeps the per-rack series in a window of samples and folds each
window into run aggregates; the KPIs must equal those of the full series, the per-hall and
per-rack aggregates must conserve the facility's energy, and the up-front memory estimate
must follow the level."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import twin
import twin.sim.recorder as recorder
from twin.scenario import bounds

ROOT = Path(__file__).resolve().parents[2]


def _at(scenario, level: str):
    return scenario.model_copy(update={"outputs": scenario.outputs.model_copy(update={"rack_series": level})})


@pytest.fixture(scope="module")
def runs():
    """Blue Vela for 20 days with 27 C supply air (a hot hall: inlets above 27 C) at every
    level, with a window of a few samples so that many windows are folded."""
    hot = [f"site.halls.0.cooling_units.{u}.supply_temp_c=27" for u in range(12)]
    s = twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml", ["simulation.duration_days=20", *hot])
    mp = pytest.MonkeyPatch()
    mp.setattr(recorder, "WINDOW_BYTES", 128 * 21 * 7)       # 7 samples of 128 racks
    try:
        out = {lvl: twin.simulate(_at(s, lvl)) for lvl in ("full", "hall", "none")}
    finally:
        mp.undo()
    return out


@pytest.mark.parametrize("level", ["hall", "none"])
def test_kpis_equal_full_series(runs, level):
    full, low = runs["full"].kpis, runs[level].kpis
    assert full.keys() == low.keys()
    for k, v in full.items():
        w = low[k]
        if isinstance(v, float) and math.isnan(v):
            assert isinstance(w, float) and math.isnan(w), k
        else:
            assert w == pytest.approx(v, rel=1e-12, abs=1e-9), k
    # the case exercises the ASHRAE and inlet KPIs (not a vacuous equality of NaNs)
    assert full["hours_above_ashrae_recommended"] > 0 and math.isfinite(full["rci_hi_percent"])


@pytest.mark.filterwarnings("ignore:All-NaN slice")   # racks never powered: NaN by design
def test_series_dropped_and_aggregates_kept(runs):
    full, none, hall = (runs[k].dataset for k in ("full", "none", "hall"))
    for name in ("rack_power_w", "rack_inlet_c", "rack_state", "rpp_load_fraction"):
        assert name in full and name not in none and name not in hall
    assert "hall_power_w" in hall and "hall_power_w" not in none
    # the aggregates are the reductions of the full series
    on = full.rack_state.values >= 1
    inlet = np.where((full.rack_state.values == 1) | (full.rack_state.values == 2), full.rack_inlet_c.values, np.nan)
    assert on.any()
    np.testing.assert_array_equal(none.rack_inlet_max_c.values, np.nanmax(inlet, axis=0))
    np.testing.assert_array_equal(none.rack_power_max_w.values, full.rack_power_w.values.max(axis=0))
    np.testing.assert_array_equal(none.rpp_load_fraction_max.values, full.rpp_load_fraction.values.max(axis=0))
    np.testing.assert_array_equal(none.rack_hours_outside_recommended.values,
                                  full.rack_hours_outside_recommended.values)
    i = int(np.argmax(full.facility_it_power_w.values))
    np.testing.assert_array_equal(none.rack_power_at_peak_w.values, full.rack_power_w.values[i])


@pytest.mark.filterwarnings("ignore:All-NaN slice")   # racks never powered: NaN by design
def test_energy_conserved_by_halls_and_racks(runs):
    """Sum over halls of hall power = facility IT power at every sample; sum over racks of
    rack energy = the IT energy KPI (sample-and-hold integral)."""
    r = runs["hall"]
    ds = r.dataset
    np.testing.assert_allclose(ds.hall_power_w.values.sum(axis=1), ds.facility_it_power_w.values, rtol=1e-6)
    assert float(ds.rack_energy_mwh.sum()) == pytest.approx(r.kpis["energy_it_mwh"], rel=1e-6)
    # the hall's hottest inlet is the hottest powered rack of the hall (one hall here)
    full = runs["full"].dataset
    st = full.rack_state.values
    inlet = np.where((st == 1) | (st == 2), full.rack_inlet_c.values, np.nan)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ds.hall_inlet_max_c.values[:, 0], np.nanmax(inlet, axis=1))


def test_median_inlet_from_histogram():
    """The swing model's typical inlet (median of powered rack-samples) from the histogram
    within one 0.01 K bin of numpy's median."""
    rng = np.random.default_rng(3)
    agg = recorder.RackAggregates.empty(50, 40, 5, 1, False)
    inlet = rng.normal(24.0, 3.0, (50, 40)).astype(np.float32)
    state = np.where(rng.random((50, 40)) < 0.8, 2, 0).astype(np.int8)
    w = {"rack_state": state, "rack_inlet_c": inlet, "rack_inlet_peak_c": inlet, "rack_power_w": inlet * 0 + 1}

    class Flow:
        it_w = np.ones(50)
        rpp_load_fraction = np.zeros((50, 5))
    agg.fold(0, w, Flow, None)
    assert abs(agg.median_powered_inlet_c() - float(np.median(inlet[state == 2]))) <= 0.01
    assert math.isnan(recorder.RackAggregates.empty(1, 1, 1, 1, False).median_powered_inlet_c())


def test_window_refuses_samples_outside():
    rec = recorder.Recorder(100, {"rack": 4, "rpp": 1, "feed": 1, "job": 0, "cooling_unit": 1, "hall": 1},
                            rack_series="none", rack_hall=np.zeros(4, int))
    assert 1 <= rec.window <= 100 and rec.series["rack_power_w"].shape == (rec.window, 4)
    rec["rack_power_w"][0] = 1.0
    with pytest.raises(IndexError):
        rec["rack_power_w"][rec.window] = 1.0
    with pytest.raises(ValueError):
        recorder.Recorder(1, {}, rack_series="some")


def test_memory_estimate_follows_the_level():
    """The million-GPU site: refused at full rack series (naming outputs.rack_series), a few
    GiB at none; the estimate drops by the (T x R) series."""
    import yaml

    from twin.scenario import validate_data
    data = yaml.safe_load((ROOT / "scenarios" / "scale" / "million_gpu.yaml").read_text())
    s_none = validate_data(data)
    mem_none = sum(bounds.memory_estimate_bytes(s_none).values())
    assert mem_none < 4 * 2**30
    data["outputs"]["rack_series"] = "full"
    with pytest.raises(twin.ScenarioError, match="outputs.rack_series") as exc:
        validate_data(data)
    assert "rack_series: none" in str(exc.value)


def test_a_run_larger_than_the_machine_is_refused_naming_its_memory(monkeypatch):
    """Without TWIN_MAX_MEMORY_GB the limit is the smaller of 8 GiB and the machine's physical
    memory (issue 19: refused before the run, with the estimate): the million-GPU year at
    `none` (~1 GiB estimated) passes on this machine and is refused on a 0.5 GiB one, the
    message naming that machine's memory; TWIN_MAX_MEMORY_GB still overrides."""
    import yaml

    from twin.scenario import validate_data
    data = yaml.safe_load((ROOT / "scenarios" / "scale" / "million_gpu.yaml").read_text())
    monkeypatch.delenv("TWIN_MAX_MEMORY_GB", raising=False)
    est = sum(bounds.memory_estimate_bytes(validate_data(data)).values())
    assert 0.5 * 2**30 < est < bounds.MAX_RUN_MEMORY_BYTES
    phys = bounds.machine_memory_bytes()
    assert phys is not None and phys > 2**30          # sysconf answers on Linux
    monkeypatch.setattr(bounds, "machine_memory_bytes", lambda: 2**29)
    assert bounds.run_memory_limit() == (2**29, "this machine's memory (0.5 GiB)")
    with pytest.raises(twin.ScenarioError, match=r"fits in 0\.5 GiB, set by this machine's memory") as exc:
        validate_data(data)
    assert f"estimated {est / 2**30:.3g} GiB" in str(exc.value)
    monkeypatch.setenv("TWIN_MAX_MEMORY_GB", "8")
    assert bounds.run_memory_limit()[1] == "TWIN_MAX_MEMORY_GB"
    validate_data(data)                                # the override wins over the machine
