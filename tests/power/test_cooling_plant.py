"""Cooling-plant energy with set points and weather: hand-checked COP and economizer, and
the two sides of raising the supply set point (energy saved, inlet and server-fan cost)."""

import numpy as np
import pytest

from twin.power.cooling_plant import (
    chilled_water_supply_c,
    cooling_plant_power_w,
    economizer_hours,
    heat_sink_temp_c,
)
from twin.power.facility import chiller_cop
from twin.power.node import FAN_CONTROL_TEMP_C, node_fan_power_w, node_fan_speed_fraction
from twin.thermal import inlet_model, row_hall
from twin.thermal.weather import read_weather


def test_cop_rises_with_the_chilled_water_set_point_by_the_carnot_ratio():
    # rated 4.5 at a 25 C sink with 12 C water (evaporator 10 C, condenser 35 C, lift 25 K);
    # 18 C water: evaporator 16 C, lift 19 K: 4.5 * (289.15 / 283.15) * 25 / 19 = 6.047
    assert chiller_cop(25.0, chw_supply_c=12.0, reference_chw_supply_c=12.0) == pytest.approx(4.5)
    assert chiller_cop(25.0, chw_supply_c=18.0, reference_chw_supply_c=12.0) == pytest.approx(
        4.5 * 289.15 / 283.15 * 25 / 19, rel=1e-12)
    # default (no reference): unchanged behaviour, COP25 at whatever the water is
    assert chiller_cop(25.0, chw_supply_c=18.0) == pytest.approx(4.5)
    assert chilled_water_supply_c(24.0, 6.0) == 18.0


def test_sinks_and_economizer_share():
    assert heat_sink_temp_c(30.0, 20.0, heat_rejection="cooling_tower", tower_approach_k=4.0) == 24.0
    assert heat_sink_temp_c(30.0, 20.0) == 30.0
    with pytest.raises(ValueError, match="wet-bulb"):
        heat_sink_temp_c(30.0, None, heat_rejection="cooling_tower")
    # dry cooler, 12/18 C water, 5 K approach: all free below 7 C, none above 13 C, half at 10 C
    r = cooling_plant_power_w(np.full(3, 1e6), np.array([5.0, 10.0, 14.0]))
    assert r["economizer_fraction"].tolist() == [1.0, 0.5, 0.0]
    assert r["chiller"][0] == 0.0
    # a 1 MW load with 50 kW of fans and 1 % pumps: Q_load = 1.06 MW; at 14 C the chiller
    # takes 1.06e6 / COP(14 C)
    r = cooling_plant_power_w(1e6, 14.0, crah_fan_w=50e3)
    assert r["chiller"] == pytest.approx(1.06e6 / chiller_cop(14.0, reference_chw_supply_c=12.0))
    assert r["total"] == pytest.approx(r["chiller"] + 50e3 + 10e3 + 0.01 * 1.06e6)
    assert economizer_hours([1.0, 0.5, 0.0], 3600.0) == 1.5
    assert economizer_hours([1.0, 0.5, 0.0], 3600.0, full_only=True) == 1.0


def test_economizer_hours_count_only_samples_with_it_load():
    # 30-min samples; economizer shares 1, 0.5, 0.25, 1, 0.75 at IT loads 0, 0, 2 kW, 800 kW, 1 MW:
    # the two empty samples count nothing, a partial load counts whole: (0.25 + 1 + 0.75) x 0.5 h
    f, it = [1.0, 0.5, 0.25, 1.0, 0.75], [0.0, 0.0, 2e3, 8e5, 1e6]
    assert economizer_hours(f, 1800.0, it_power_w=it) == 1.0
    assert economizer_hours(f, 1800.0) == 1.75                     # every sample: the old count
    assert economizer_hours(f, 1800.0, full_only=True, it_power_w=it) == 0.5


def test_raising_the_supply_set_point_saves_energy_and_costs_inlet_and_fans():
    w = read_weather("723170TYA.CSV")
    heat = np.full(8760, 1.5e6)
    year = {sa: cooling_plant_power_w(heat, w.dry_bulb_c, w.wet_bulb_c, supply_air_setpoint_c=sa)
            for sa in (18.0, 21.0, 24.0, 27.0)}
    energy = [year[sa]["total"].sum() for sa in sorted(year)]
    econ = [economizer_hours(year[sa]["economizer_fraction"], 3600.0) for sa in sorted(year)]
    assert np.all(np.diff(energy) < 0) and np.all(np.diff(econ) > 0)
    # each 3 K of set point saves several percent of the cooling energy (Greensboro)
    assert 0.08 < 1 - energy[1] / energy[0] < 0.25
    # the peak (design-day) overhead falls too: warmer water lifts the COP when it is hot
    assert year[24.0]["total"].max() < year[18.0]["total"].max()
    # ... and the cost: every inlet rises by the same 6 K (supply mixing rows sum to 1)
    g = row_hall(2, 8, cooling_per_wall=1, cooling_airflow_m3_s=8.0)
    m = inlet_model(g, np.full(g.n_racks, 0.8))
    assert m.supply_mix.sum(axis=1) == pytest.approx(np.ones(g.n_racks), abs=1e-9)
    q = np.full(g.n_racks, 8e3)
    t18 = m.supply_mix @ np.full(2, 18.0) + m.recirculation_k_per_w @ q
    t24 = m.supply_mix @ np.full(2, 24.0) + m.recirculation_k_per_w @ q
    assert t24 - t18 == pytest.approx(np.full(g.n_racks, 6.0), abs=1e-9)
    # ... and the servers' fans speed up: s ~ 1 / (T_ctl - T_in); at a 21 -> 27 C inlet the
    # speed rises by (68 - 21) / (68 - 27) = 1.146 and the fan power by its cube, 1.506
    s21 = node_fan_speed_fraction(5000.0, 21.0, design_heat_w=8000.0)
    s27 = node_fan_speed_fraction(5000.0, 27.0, design_heat_w=8000.0)
    assert s27 / s21 == pytest.approx((FAN_CONTROL_TEMP_C - 21) / (FAN_CONTROL_TEMP_C - 27), rel=1e-12)
    assert node_fan_power_w(s27, fan_max_w=1600) / node_fan_power_w(s21, fan_max_w=1600) == pytest.approx(
        (47 / 41) ** 3, rel=1e-12)
