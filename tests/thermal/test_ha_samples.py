"""The physical cooling model's per-sample paths, written for speed (issue 14), give the
reference results bit for bit: the hall's racks indexed by a slice (views), the state's
inlets read as a plain array and the airflow check written out
(``HallThermal.sample_views``), the server fan law with its imports kept, and the capped
steady state's margin and unit demand written out."""

from pathlib import Path

import numpy as np
import pytest

import twin
from twin.power.node import (
    FAN_CONTROL_TEMP_C,
    FAN_DESIGN_INLET_C,
    FAN_MIN_SPEED_FRACTION,
    node_airflow_m3_s,
    node_fan_speed_fraction,
)
from twin.scenario import load_scenario
from twin.sim.hall_thermal import HallThermal, _crah_fans_w, _rack_index
from twin.thermal import capacity, rack_airflow_m3_s, row_hall
from twin.thermal.airflow import RecirculationFamily
from twin.thermal.fans import fan_design_power_w, rack_airflow_from_fans_m3_s

BV = Path(__file__).resolve().parents[2] / "scenarios" / "blue_vela.yaml"


def _reference_fan_power_w(self, h, hall):
    """The CRAH fan law evaluated at every record (no memo): the reference of the kept figure."""
    fans, v_c = self.cs.crah_fans, hall.geom.cooling_airflow_m3_s
    return _crah_fans_w(fans, hall.airflow, hall.active, v_c, fan_design_power_w(
        v_c, fans.design_pressure_pa, fans.fan_efficiency))


def _run(views: bool, control: str, monkeypatch):
    # the first training jobs load the hall from day 7; a unit trips for an hour on day 9, so
    # the hall carries its state (peaks, _advance) too
    fault = 'site.cooling_faults.events=[{time: "2024-01-10T10:20:00", unit: "crah_w1", duration_s: 3600}]'
    with monkeypatch.context() as mp:
        mp.setattr(HallThermal, "sample_views", views)
        if not views:
            mp.setattr(HallThermal, "_hall_fan_power_w", _reference_fan_power_w)
        # VFD fans with a 0.1 floor: since the racks not yet delivered draw no air (helper HOF)
        # the first days' few racks keep 0.3-floored fans at their floor (2 figures, as
        # constant fans); at 0.1 the fans follow the racks and the airflow memo is exercised
        floor = ["site.cooling_system.crah_fans.min_speed_fraction=0.1"] if control == "vfd" else []
        return twin.simulate(load_scenario(BV, ["simulation.duration_days=11", fault,
                                                f"site.cooling_system.crah_fans.control={control}", *floor]))


@pytest.mark.parametrize("control", ["constant", "vfd"])
def test_views_give_the_reference_run_bit_for_bit(control, monkeypatch):
    """Also the CRAH fan power kept per running-unit set (and airflow state for VFD fans)
    against the fan law evaluated at every record."""
    fast, ref = _run(True, control, monkeypatch), _run(False, control, monkeypatch)
    assert set(fast.dataset.variables) == set(ref.dataset.variables)
    for name in ref.dataset.variables:
        a, b = fast.dataset[name].values, ref.dataset[name].values
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), name
    assert fast.events.to_csv() == ref.events.to_csv()
    assert fast.kpis.keys() == ref.kpis.keys()
    for k, x in ref.kpis.items():
        assert fast.kpis[k] == x or (x != x and fast.kpis[k] != fast.kpis[k]), k     # NaN is NaN
    assert "cooling_fault" in fast.events.to_csv()   # the carried-state path ran too
    power = fast.dataset.rack_power_w.values
    assert power[-1].sum() > 100e3 and np.ptp(power[-1]) > 1e3     # loaded, unevenly across racks
    fans = fast.dataset.cooling_fan_power_w.values
    # constant-speed fans: one figure per running-unit set (all, one tripped); VFD: many
    assert (len(np.unique(fans)) > 3) == (control == "vfd")


def test_rack_index_is_a_slice_over_a_run_only():
    x = np.arange(20.0) * 1.5
    for idx in (np.arange(3, 11), np.arange(0, 20), np.array([4])):
        sel = _rack_index(idx)
        assert isinstance(sel, slice)
        assert np.array_equal(x[sel], x[idx]) and np.shares_memory(x[sel], x)
    for idx in (np.array([0, 1, 3]), np.array([5, 4, 3]), np.array([2, 2, 3]), np.zeros(0, np.int64)):
        assert _rack_index(idx) is idx


def test_server_fan_law_equals_the_node_law():
    """The rack airflow is node_airflow_m3_s of node_fan_speed_fraction times the nodes,
    with the node module's defaults or the caller's settings, at the clips and between."""
    rng = np.random.default_rng(7)
    heat = rng.uniform(-500.0, 14e3, 400)
    inlet = rng.uniform(15.0, 50.0, 400)
    for kw in ({}, {"fan_min_speed_fraction": 0.2, "fan_control_temp_c": 40.0, "fan_design_inlet_c": 30.0}):
        got = rack_airflow_from_fans_m3_s(heat, inlet, nodes_per_rack=8, design_heat_w=10.2e3,
                                          airflow_max_m3_s=0.52, **kw)
        law = {"fan_min_speed_fraction": FAN_MIN_SPEED_FRACTION, "fan_control_temp_c": FAN_CONTROL_TEMP_C,
               "fan_design_inlet_c": FAN_DESIGN_INLET_C, **kw}
        want = 8 * node_airflow_m3_s(node_fan_speed_fraction(heat, inlet, design_heat_w=10.2e3, **law),
                                     airflow_max_m3_s=0.52)
        assert got.tobytes() == want.tobytes()
        assert got.min() < got.max()                # clipped and unclipped racks both


@pytest.fixture(scope="module")
def family():
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0, cooling_capacity_w=70e3)
    v0 = rack_airflow_m3_s(np.linspace(8e3, 12e3, g.n_racks), 12.0)
    return RecirculationFamily(g, v0, scales=(0.3, 0.5, 0.75, 1.0)), v0


@pytest.mark.parametrize("fan_heat", [0.0, 0, np.float64(0.0), np.zeros(2), 500.0])
def test_capped_steady_state_equals_the_iteration(family, fan_heat, monkeypatch):
    """Heats from light to beyond the plant, a plant just above and just below the heat:
    the written-out margin and demand give the active-set iteration's state exactly."""
    fam, v0 = family
    rng = np.random.default_rng(3)
    for scale in (0.4, 0.7, 1.0):
        m = fam.model(scale * v0)
        for total in (20e3, 90e3, 139e3, 200e3):
            q = rng.uniform(0.5, 1.5, v0.size)
            q *= total / q.sum()
            for plant in (np.inf, float(q.sum()) + 1.0, float(q.sum()) - 1.0):
                kw = dict(plant_capacity_w=plant, unit_fan_heat_w=fan_heat)
                fast = capacity.capped_steady_state(m, q, **kw)
                with monkeypatch.context() as mp:
                    mp.setattr(capacity, "UNSATURATED_FAST", False)
                    ref = capacity.capped_steady_state(m, q, **kw)
                assert (fast.feasible, fast.limiting, fast.deficit_w) == (ref.feasible, ref.limiting, ref.deficit_w)
                for name in ("supply_temp_c", "return_temp_c", "inlet_temp_c", "unit_load_w", "unit_demand_w"):
                    assert getattr(fast, name).tobytes() == getattr(ref, name).tobytes(), name


def test_interpolation_follows_a_replaced_knot(family):
    """The flattened knot maps are kept per knot model and its arrays: a knot whose model is
    replaced (other arrays) is read anew, so the interpolation equals the formula on the new
    maps, bit for bit; the returned maps are views of one array per pair."""
    from dataclasses import replace

    fam, v0 = family
    m = fam.model(0.6 * v0)                              # between the 0.5 and 0.75 knots
    assert m.recirculation_k_per_w.base is m.return_k_per_w.base is not None
    k = fam.scales.index(0.75)
    old = fam.exact(k)
    fam._models[k] = replace(old, recirculation_k_per_w=1.5 * old.recirculation_k_per_w,
                             supply_mix=0.5 * old.supply_mix)
    try:
        got = fam.model(0.6 * v0)
        a, b = fam.exact(k - 1), fam.exact(k)
        s = float((0.6 * v0).sum() / v0.sum())
        w = (s - 0.5) / (0.75 - 0.5)
        want_d = np.multiply(a.recirculation_k_per_w, (1 - w) * 0.5)
        want_d += np.multiply(b.recirculation_k_per_w, w * 0.75)
        want_d /= s
        assert got.recirculation_k_per_w.tobytes() == want_d.tobytes()
        assert got.supply_mix.tobytes() == ((1 - w) * a.supply_mix + w * b.supply_mix).tobytes()
        assert got.recirculation_k_per_w.tobytes() != m.recirculation_k_per_w.tobytes()
    finally:
        fam._models[k] = old
