"""How far the run's buoyant inlets sit from the layered field solved at the racks' own heat
and airflow (helper HBZ, 2 Dec 2026).

Under ``recirculation: buoyant`` the engine derives each inlet model (D, S) from the
converged Boussinesq field at the heat the fan law implies for the airflow (design heat x
speed fraction, :meth:`HallThermal._buoyant_deriver`) and applies it linearly to the heat
the racks give off; with every unit running it interpolates models derived at uniform
airflow scales (:class:`twin.thermal.airflow.RecirculationFamily`). The "truth" here is
:func:`twin.thermal.buoyancy.buoyant_inlet_model` at the racks' actual heat and airflow.

Measured in whole runs (blue_vela, vela, lenovo_small and the audit's open hall at 8 m3/s,
sampled at ramp-up, full load and with a unit down): the heat scaling costs at most 0.3 K
anywhere (0.25 K in the open, under-supplied hall; below 0.01 K in the shipped halls), so
the linear use of a model derived at another heat stands. The larger gap of an
under-supplied hall (2.2-3.5 K during ramp-up) comes from the uniform-airflow knots: busy
racks draw more air than their share, which the knots do not see. The shipped halls are
flooded with supply and do not feel it (0.002 K). These tests pin those bounds, the last
one as a known limitation: if it fails because the gap closed, update the report's and the
docs' figures.
"""

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from twin.scenario import load_scenario
from twin.sim.engine import Engine
from twin.thermal.buoyancy import buoyant_inlet_model
from twin.thermal.inlet import inlet_temp_c

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
SHORT_AIR = tuple(f"site.halls.0.cooling_units.{k}.airflow_m3_s=8" for k in range(12))
OPEN_ROWS = tuple(f"site.halls.0.rows.{k}.enclosure=false" for k in range(8))
HALLS = {"shipped": (), "enclosed_8": SHORT_AIR, "open_8": SHORT_AIR + OPEN_ROWS}
# a training rack of the nine-month run at full load: fan speed 0.63 of full, 16.7 kW AC
# (two XE9680 incl. fans, PSU loss and network); during ramp-up the first 32 racks train
# at 0.66 and 17.5 kW while the others idle at the fans' minimum speed (0.30) with no heat
FULL_SCALE, FULL_RACK_W = 0.63, 16.7e3
BUSY, BUSY_SCALE, BUSY_RACK_W, IDLE_SCALE = 32, 0.66, 17.5e3, 0.30


@cache
def hall(name: str):
    """(the engine's hall model, its buoyant geometry, the racks' full-speed airflow [m3/s])."""
    th = Engine(load_scenario(BV, ["simulation.duration_days=1", *HALLS[name]])).thermal
    h = th.halls[0]
    return h, th.buoyant_geometry(h.geom), th.rack_airflow_m3_s[h.idx]


def _full_load(v_full):
    return FULL_SCALE * v_full, np.full(v_full.size, FULL_RACK_W)


def _ramp(v_full):
    busy = np.arange(v_full.size) < BUSY
    return np.where(busy, BUSY_SCALE, IDLE_SCALE) * v_full, np.where(busy, BUSY_RACK_W, 0.0)


def _truth_c(g, heat_w, v):
    return inlet_temp_c(buoyant_inlet_model(g, heat_w, v), heat_w)


@pytest.mark.parametrize(("name", "bound_k"), [("shipped", 0.02), ("enclosed_8", 0.1), ("open_8", 0.4)])
def test_the_heat_a_model_is_derived_at_moves_the_inlets_little(name, bound_k):
    # the engine's own derivation at the airflow (fan-law heat, 0.63 x 15 kW = 9.45 kW a
    # rack, 0.57 of the heat applied) against the field at 16.7 kW: measured 0.000 / 0.000
    # / 0.295 K at full load, 0.000 / 0.052 / 0.110 K on the busy racks of the ramp
    h, g, v_full = hall(name)
    for v, heat in (_full_load(v_full), _ramp(v_full)):
        run_c = inlet_temp_c(h.derive(v), heat)
        on = heat > 0
        assert np.abs(run_c - _truth_c(g, heat, v))[on].max() < bound_k


def test_the_open_under_supplied_hall_feels_the_heat_it_is_derived_at():
    # the bound above is not vacuous: the same hall's model derived at a tenth of the heat
    # (buoyancy nearly off) sits much further from the field (measured 0.98 K; and with the
    # engine's deriver broken to a tenth of the fan-law heat the test above reads 1.03 K)
    h, g, v_full = hall("open_8")
    v, heat = _full_load(v_full)
    weak = buoyant_inlet_model(g, 0.1 * heat, v)
    assert np.abs(inlet_temp_c(weak, heat) - _truth_c(g, heat, v)).max() > 0.6


def test_uniform_airflow_knots_hold_in_the_shipped_hall():
    # ramp-up (32 racks busy, 96 idle): the all-units model the run uses (the family's
    # interpolation between uniform-airflow knots) against the field at the racks' own
    # airflow and heat: measured 0.002 K (18.00 C both)
    h, g, v_full = hall("shipped")
    v, heat = _ramp(v_full)
    on = heat > 0
    err = inlet_temp_c(h.family.model(v), heat) - _truth_c(g, heat, v)
    assert np.abs(err[on]).max() < 0.01


@pytest.mark.parametrize(("name", "mean_k", "max_k"), [("enclosed_8", -2.07, 2.24), ("open_8", -3.16, 3.41)])
def test_uniform_airflow_knots_understate_an_under_supplied_hall(name, mean_k, max_k):
    # known limitation, pinned: with 8 m3/s CRAHs the busy racks draw more than their share
    # of the supply; the uniform knots spread the airflow over all 128 racks and miss it.
    # Measured on the busy racks: mean -2.07 / -3.16 K, worst 2.24 / 3.41 K (18.04 against
    # 20.27 C, 18.93 against 22.30 C hottest); the same figures as the whole runs' samples
    h, g, v_full = hall(name)
    v, heat = _ramp(v_full)
    on = heat > 0
    err = (inlet_temp_c(h.family.model(v), heat) - _truth_c(g, heat, v))[on]
    assert float(err.mean()) == pytest.approx(mean_k, abs=0.3)
    assert float(np.abs(err).max()) == pytest.approx(max_k, abs=0.3)
