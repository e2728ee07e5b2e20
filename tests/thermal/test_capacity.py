"""Finite coil and plant capacity: hand-computed coil balances and the hall energy balance."""

import numpy as np
import pytest

from twin.thermal import inlet_model, row_hall
from twin.thermal.capacity import capped_steady_state, coil_heat_removed_w, coil_supply_temp_c
from twin.thermal.inlet import InletModel
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K

G5 = AIR_VOLUMETRIC_HEAT_J_M3_K * 5.0  # 6030 W/K for 5 m3/s


def test_coil_supply_rises_past_capacity_by_the_energy_balance():
    # 35 C return, 5 m3/s: holding 18 C would take 6030 * 17 = 102.5 kW; a 60 kW coil
    # leaves the air at 35 - 60000 / 6030 = 25.05 C and removes exactly 60 kW.
    s = coil_supply_temp_c(35.0, 18.0, 5.0, 60e3)
    assert s == pytest.approx(35.0 - 60e3 / G5, abs=1e-9)
    assert coil_heat_removed_w(35.0, s, 5.0) == pytest.approx(60e3, rel=1e-12)
    assert coil_supply_temp_c(35.0, 18.0, 5.0, 150e3) == 18.0
    # the chilled water sets a floor: 16 C water + 6 K approach = 22 C
    assert coil_supply_temp_c(35.0, 18.0, 5.0, 150e3, floor_c=22.0) == 22.0


def _two_unit_model(cap_w):
    """Two racks, two units of 5 m3/s; both supplies mix in the plenum (each inlet is
    their mean) and unit c takes back rack c's exhaust: T_ret,c = mean(s) + Q_c / G."""
    half = np.full((2, 2), 0.5)
    return InletModel(
        base_inlet_c=np.full(2, 18.0), recirculation_k_per_w=np.zeros((2, 2)), supply_mix=half,
        cooling_supply_temp_c=np.full(2, 18.0), cooling_airflow_m3_s=np.full(2, 5.0),
        cooling_capacity_w=np.asarray(cap_w, float), cooling_active=np.ones(2, bool), return_mix=half,
        return_k_per_w=np.eye(2) / G5, cooling_base_w=np.zeros(2), cooling_heat_share=np.eye(2),
        rack_airflow_m3_s=np.full(2, 5.0))


def test_saturated_unit_hands_its_excess_to_its_neighbour():
    # Unit 0 (50 kW) sees rack 0's 80 kW. Saturated: s0 = mean(s) + (Q0 - cap0) / G, so
    # s0 - s1 = 2 (Q0 - cap0) / G = 9.95 K; unit 1 removes Q1 + (Q0 - cap0) = 70 kW.
    st = capped_steady_state(_two_unit_model([50e3, 100e3]), [80e3, 40e3])
    assert st.feasible and st.saturated.tolist() == [True, False]
    assert st.supply_temp_c[0] == pytest.approx(18.0 + 2 * 30e3 / G5, abs=1e-9)
    assert st.unit_load_w == pytest.approx([50e3, 70e3], rel=1e-9)
    assert st.inlet_temp_c == pytest.approx(np.full(2, 18.0 + 30e3 / G5), abs=1e-9)
    # margin: capacity minus what the unit would remove holding its set point, 50 - 80 kW
    assert st.unit_demand_w == pytest.approx([80e3, 40e3], rel=1e-12)
    assert st.capacity_margin_w == pytest.approx(-30e3, rel=1e-12)


def test_heat_beyond_the_units_or_the_plant_has_no_steady_state():
    st = capped_steady_state(_two_unit_model([50e3, 100e3]), [80e3, 80e3])
    assert not st.feasible and st.limiting == "units" and st.deficit_w == pytest.approx(10e3)
    st = capped_steady_state(_two_unit_model([100e3, 100e3]), [80e3, 40e3], plant_capacity_w=100e3)
    assert not st.feasible and st.limiting == "plant" and st.deficit_w == pytest.approx(20e3)


def test_fan_heat_is_removed_by_the_coils_too():
    st = capped_steady_state(_two_unit_model([100e3, 100e3]), [30e3, 30e3], unit_fan_heat_w=[5e3, 5e3])
    assert st.unit_load_w.sum() == pytest.approx(70e3, rel=1e-12)
    assert st.supply_temp_c == pytest.approx(np.full(2, 18.0 + 5e3 / G5))


@pytest.fixture(scope="module")
def hall():
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=10.0, cooling_capacity_w=150e3)
    return g, inlet_model(g, np.full(g.n_racks, 0.9))


def test_real_hall_energy_balance_and_capacity_respected(hall):
    g, m = hall
    heat = np.linspace(6e3, 16e3, g.n_racks)  # 440 kW on 4 units: 110 kW each on average
    free = capped_steady_state(m, heat)
    cap = np.array([150e3, 100e3, 150e3, 150e3])
    st = capped_steady_state(m, heat, capacity_w=cap)
    assert st.feasible
    assert st.unit_load_w.sum() == pytest.approx(heat.sum(), rel=1e-9)  # every watt ends in a coil
    assert np.all(st.unit_load_w <= cap * (1 + 1e-9))
    assert st.saturated[1] and st.supply_temp_c[1] > 18.0
    assert np.all(st.supply_temp_c[~st.saturated] == 18.0)
    # warmer supply only ever warms the inlets (all mixing fractions are non-negative)
    assert np.all(st.inlet_temp_c >= free.inlet_temp_c - 1e-9)
    assert st.inlet_temp_c.max() > free.inlet_temp_c.max() + 0.1
