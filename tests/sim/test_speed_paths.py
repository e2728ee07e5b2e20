"""The speed paths of issue 19 give the same numbers as the slow ones, bit for bit:
the per-process memo of buoyant inlet models, and the engine's fabric built as a layout
without networkx vertices and edges."""

from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.fabric import scenario as fabric_scenario
from twin.thermal import buoyancy, rack_airflow_m3_s, row_hall

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture(scope="module")
def hall():
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=4.0, n_layers=3)
    heat = np.full(g.n_racks, 10e3)
    return g, heat, rack_airflow_m3_s(heat, 15.0)


def _same_model(a, b) -> None:
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


def test_memo_returns_the_fresh_derivation_and_keys_on_every_input(hall, monkeypatch):
    g, heat, v = hall
    monkeypatch.setattr(buoyancy, "_MODEL_MEMO", type(buoyancy._MODEL_MEMO)())
    fresh = buoyancy.buoyant_inlet_model(g, heat, v, memo=False)
    calls = []
    real = buoyancy.buoyant_flow
    monkeypatch.setattr(buoyancy, "buoyant_flow", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = buoyancy.buoyant_inlet_model(g, heat, v)
    again = buoyancy.buoyant_inlet_model(g, heat.copy(), v.copy())
    assert len(calls) == 1                       # the second call is a memo hit
    _same_model(first, fresh)
    _same_model(again, fresh)
    # a hit is a copy: changing it leaves the memo alone
    again.recirculation_k_per_w[:] = 0.0
    _same_model(buoyancy.buoyant_inlet_model(g, heat, v), fresh)
    # every input is part of the key: heat, airflow, running units, geometry, coefficient
    variants = [dict(rack_heat_w=heat * 1.5), dict(rack_airflow_m3_s=v * 0.8),
                dict(cooling_active=np.array([True, False])), dict(geometry=replace(g, eddy_diffusivity_m2_s=0.2)),
                dict(coefficient=0.4)]
    for change in variants:
        args = dict(geometry=g, rack_heat_w=heat, rack_airflow_m3_s=v) | change
        n = len(calls)
        m = buoyancy.buoyant_inlet_model(**args)
        assert len(calls) == n + 1, change
        _same_model(m, buoyancy.buoyant_inlet_model(**args, memo=False))


def test_memo_keeps_its_budget(hall, monkeypatch):
    g, heat, v = hall
    monkeypatch.setattr(buoyancy, "_MODEL_MEMO", type(buoyancy._MODEL_MEMO)())
    monkeypatch.setattr(buoyancy, "MODEL_MEMO_SIZE", 2)
    for s in (1.0, 0.9, 0.8):
        buoyancy.buoyant_inlet_model(g, heat, v * s)
    assert len(buoyancy._MODEL_MEMO) == 2
    monkeypatch.setattr(buoyancy, "MODEL_MEMO_BYTES", 1)
    buoyancy.buoyant_inlet_model(g, heat, v * 0.7)
    assert len(buoyancy._MODEL_MEMO) == 1        # over the byte budget only the newest stays


def _same_results(a, b) -> None:
    assert a.kpis.keys() == b.kpis.keys()
    for k, x in a.kpis.items():
        y = b.kpis[k]
        assert x == y or (x != x and y != y), k
    for v in a.dataset.data_vars:
        x, y = a.dataset[v].values, b.dataset[v].values
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), v
    assert a.events.equals(b.events)


@pytest.mark.slow
def test_a_run_with_memo_hits_equals_a_run_that_derives(monkeypatch):
    """Blue Vela (buoyant recirculation, fan-law airflow) for three weeks: the run whose
    knots come from the memo equals the one that derived them."""
    s = twin.load_scenario(SCENARIOS / "blue_vela.yaml", ["simulation.duration_days=21"])
    monkeypatch.setattr(buoyancy, "_MODEL_MEMO", type(buoyancy._MODEL_MEMO)())
    calls = []
    real = buoyancy.buoyant_flow
    monkeypatch.setattr(buoyancy, "buoyant_flow", lambda *a, **k: calls.append(1) or real(*a, **k))
    cold = twin.simulate(s)
    derived = len(calls)
    warm = twin.simulate(s)
    assert derived >= 2 and len(calls) == derived   # the second run derives nothing
    _same_results(cold, warm)


def test_the_engine_fabric_is_the_layout_and_a_run_equals_the_full_graphs(monkeypatch):
    """The engine builds its fabric aggregated (no networkx vertices); a run with max-min
    link sharing and static ECMP (fair shares re-solved at every start and end) gives the
    same numbers as one on the full graph."""
    s = twin.load_scenario(SCENARIOS / "lenovo_small.yaml", [
        "simulation.duration_days=3", "fabric.sharing=max_min", "fabric.routing=static_ecmp"])
    built = []
    real = fabric_scenario.build_fabric

    def spy(*a, **k):
        g = real(*a, **k)
        built.append(g)
        return g
    monkeypatch.setattr(fabric_scenario, "build_fabric", spy)
    agg = twin.simulate(s)
    assert built[-1].number_of_nodes() == 0 and built[-1].graph["aggregated"]
    monkeypatch.setattr(fabric_scenario, "build_fabric", lambda *a, **k: spy(*a, **(k | {"aggregate": False})))
    full = twin.simulate(s)
    assert built[-1].number_of_nodes() > 0
    _same_results(agg, full)


@pytest.mark.parametrize("capacity_w,saturates", [(400e3, False), (60e3, True)])
def test_capped_steady_state_skips_the_identity_solve_exactly(capacity_w, saturates, monkeypatch):
    """With no coil saturated the active-set system is I s = rhs: the fast path returns
    rhs, which is what LAPACK's solve of the identity gives bit for bit; with saturated
    coils the solve still runs."""
    from twin.thermal import capacity, inlet_model

    g = row_hall(2, 8, cooling_per_wall=2, cooling_airflow_m3_s=8.0, cooling_capacity_w=capacity_w)
    model = inlet_model(g, np.full(g.n_racks, 0.9))
    heat = np.linspace(5e3, 20e3, g.n_racks)
    fan = np.full(g.n_cooling, 2e3)
    solves = []
    real = np.linalg.solve

    def spy(a, b):
        solves.append(np.array_equal(a, np.eye(len(b))))
        return real(a, b)
    monkeypatch.setattr(capacity.np.linalg, "solve", spy)
    fast = capacity.capped_steady_state(model, heat, unit_fan_heat_w=fan)
    assert fast.feasible and bool(fast.saturated.any()) == saturates
    assert bool(solves) == saturates and not any(solves)   # solves only when needed, never the identity
    # the identity solve itself returns its right-hand side bit for bit
    rhs = model.cooling_supply_temp_c + fan / (capacity.AIR_VOLUMETRIC_HEAT_J_M3_K * model.cooling_airflow_m3_s)
    assert np.array_equal(real(np.eye(len(rhs)), rhs), rhs)
    if not saturates:
        assert np.array_equal(fast.supply_temp_c, rhs)
