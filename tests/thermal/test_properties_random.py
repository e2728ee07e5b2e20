"""Property tests over random halls: conservation and the D cross-check hold everywhere."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.thermal import (
    AIR_CP_J_KG_K,
    AIR_DENSITY_KG_M3,
    HallGeometry,
    inlet_model,
    inlet_temp_c,
    rack_airflow_m3_s,
    steady_field,
)

RHO_CP = AIR_DENSITY_KG_M3 * AIR_CP_J_KG_K


@st.composite
def halls(draw):
    """A 9 x 7.2 m hall with 2-8 racks on a 1.2 x 2.4 m lattice (faces never blocked),
    random orientations, 1-3 cooling units at the walls, random containment, plan view
    or two layers."""
    slots = [(1.5 + 1.2 * i, 1.8 + 2.4 * j) for i in range(6) for j in range(2)]
    idx = draw(st.lists(st.integers(0, len(slots) - 1), min_size=2, max_size=8, unique=True))
    dirs = draw(st.lists(st.sampled_from([(0.0, 1.0), (0.0, -1.0)]), min_size=len(idx), max_size=len(idx)))
    n_c = draw(st.integers(1, 3))
    walls = [(0.5, 3.6), (8.5, 3.6), (4.5, 6.7)][:n_c]
    airflow = draw(st.lists(st.floats(1.0, 4.0), min_size=n_c, max_size=n_c))
    supply = draw(st.lists(st.floats(15.0, 22.0), min_size=n_c, max_size=n_c))
    containment = draw(st.sampled_from(["none", "cold_aisle", "hot_aisle"]))
    leak = draw(st.floats(0.0, 0.5))
    heat = np.array(draw(st.lists(st.floats(1e3, 20e3), min_size=len(idx), max_size=len(idx))))
    n_layers = draw(st.sampled_from([1, 1, 2]))
    g = HallGeometry(
        width_m=9.0, depth_m=7.2, height_m=3.0,
        rack_center_xy_m=np.array([slots[i] for i in idx]), rack_intake_dir=np.array(dirs),
        cooling_xy_m=np.array(walls), cooling_airflow_m3_s=np.array(airflow),
        cooling_supply_temp_c=np.array(supply), cooling_capacity_w=np.full(n_c, 1e6),
        containment=containment, containment_leakage_fraction=leak, n_layers=n_layers,
    )
    return g, heat


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(halls())
def test_random_halls_conserve_energy_and_d_matches(case):
    g, heat = case
    v = rack_airflow_m3_s(heat, 12.0)
    ds = steady_field(g, heat, v)
    removed = ds.cooling_heat_removed.values
    # energy in = energy out; with unequal supply temperatures the units also trade heat,
    # which nets to zero
    assert removed.sum() == pytest.approx(heat.sum(), rel=1e-8, abs=1e-6)
    model = inlet_model(g, v)
    np.testing.assert_allclose(inlet_temp_c(model, heat), ds.rack_inlet_temp.values, atol=1e-7)
    np.testing.assert_allclose(model.cooling_heat_share.sum(axis=0), 1.0, atol=1e-8)
    # supply-temperature mixing weights of each inlet sum to one
    np.testing.assert_allclose(model.supply_mix.sum(axis=1), 1.0, atol=1e-8)
    t_sup = g.cooling_supply_temp_c
    assert np.all(ds.rack_inlet_temp.values > t_sup.min() - 0.05)


def test_well_mixed_limit_matches_the_room_energy_balance():
    # With a very large diffusivity the room air is uniform: rho cp V_units (T - T_s) = sum Q
    slots = np.array([(1.5 + 1.2 * i, 1.8) for i in range(6)])
    g = HallGeometry(
        width_m=9.0, depth_m=7.2, height_m=3.0,
        rack_center_xy_m=slots, rack_intake_dir=np.tile([0.0, 1.0], (6, 1)),
        cooling_xy_m=np.array([(0.5, 3.6), (8.5, 3.6)]), cooling_airflow_m3_s=np.array([2.0, 2.0]),
        cooling_supply_temp_c=np.array([18.0, 18.0]), cooling_capacity_w=np.full(2, 1e6),
        eddy_diffusivity_m2_s=1e4,
    )
    heat = np.full(6, 8e3)
    ds = steady_field(g, heat, rack_airflow_m3_s(heat, 12.0))
    expected = 18.0 + heat.sum() / (RHO_CP * 4.0)
    np.testing.assert_allclose(ds.rack_inlet_temp.values, expected, atol=0.05)
