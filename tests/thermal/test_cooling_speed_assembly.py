"""The hall problem's assembly fast paths give the reference operator bit for bit (issues 19
and 14): the rack terms vectorised over the racks, and the part of the problem that the
room's extra fluxes do not change kept between the passes of a buoyant flow.

The references are the per-rack loop (``solver.VECTORISED_RACKS = False``) and a fresh
assembly with nothing kept (the memo emptied). Equality is of the sparse structure and
every stored value's bytes, so a change of summation order of a duplicate entry fails."""

from dataclasses import replace

import numpy as np
import pytest

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal import solver as solver_mod
from twin.thermal.buoyancy import buoyant_flow, buoyant_inlet_model
from twin.thermal.solver import build_problem


def _halls():
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=6.1, n_layers=3, containment_leakage_fraction=0.05)
    v = rack_airflow_m3_s(np.full(g.n_racks, 10e3), 15.0)
    yield "open, 3 layers", g, v
    yield "starved cold aisle", replace(g, containment="cold_aisle"), 1.5 * v
    yield "cold aisle spilling", replace(g, containment="cold_aisle"), 0.5 * v
    yield "hot aisle", replace(g, containment="hot_aisle", containment_leakage_fraction=0.2), v
    yield "hot aisle, all ducted", replace(g, containment="hot_aisle", containment_leakage_fraction=0.0), 0.3 * v
    every_other = np.arange(g.n_racks) % 2 == 0
    yield "own enclosures on half the racks", replace(g, rack_enclosed=every_other), v
    p = row_hall(3, 8, cooling_per_wall=2, cooling_airflow_m3_s=5.0)
    yield "plan view, QUICK", p, rack_airflow_m3_s(np.full(p.n_racks, 10e3), 15.0)
    j = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=3.0, cooling_supply_temp_c=18.0, n_layers=3)
    throw = np.array([[1.0 if x < 0.5 * j.width_m else -1.0, 0.0] for x, _ in j.cooling_xy_m])
    j = replace(j, cooling_outlet_z_m=np.tile([0.1, 1.8], (j.n_cooling, 1)), cooling_outlet_width_m=np.ones(j.n_cooling),
                cooling_throw_dir=throw)
    yield "wall jets", j, rack_airflow_m3_s(np.full(j.n_racks, 10e3), 15.0)


HALLS = list(_halls())


def _operators(prob):
    """The problem's sparse operators as (shape, indptr, indices, value bytes), CSC."""
    out = {}
    for name in ("A", "E", "B", "W", "M"):
        m = getattr(prob, name).tocsc()
        out[name] = (m.shape, m.indptr.tobytes(), m.indices.tobytes(), m.data.tobytes())
    return out


def _fresh(monkeypatch, *args, **kw):
    """build_problem with nothing kept from earlier calls (the memo emptied)."""
    monkeypatch.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
    return build_problem(*args, **kw)


@pytest.mark.parametrize("name,g,v", HALLS, ids=[h[0] for h in HALLS])
def test_vectorised_rack_terms_equal_the_per_rack_loop(name, g, v, monkeypatch):
    """Open, contained (starved and spilling), hot-aisle (partly and wholly ducted), partly
    enclosed, plan-view and wall-jet halls: the heat operator, E, B, W and M assembled with the
    rack terms vectorised are the per-rack loop's, structure and value bytes."""
    fast = _operators(_fresh(monkeypatch, g, v))
    monkeypatch.setattr(solver_mod, "VECTORISED_RACKS", False)
    slow = _operators(_fresh(monkeypatch, g, v))
    for key in fast:
        assert fast[key] == slow[key], key


def test_the_halls_reach_every_branch_of_the_rack_terms(monkeypatch):
    """The halls above include racks that draw from an enclosed zone and spill its surplus,
    racks that draw from the room only, and exhaust ducted to a hot-aisle return: the
    comparison covers every kind of rack term."""
    seen = []
    real = solver_mod.enclosure_balance_m3_s
    monkeypatch.setattr(solver_mod, "enclosure_balance_m3_s",
                        lambda *a: seen.append(real(*a)) or seen[-1])
    kinds = set()
    for _, g, v in HALLS:
        _fresh(monkeypatch, g, v)
        share, spill = seen[-1]
        for kind, present in (("zone", np.any(share < 1)), ("spill", np.any(spill > 0)),
                              ("room only", np.any(share == 1)), ("hot", g.containment == "hot_aisle")):
            if present:
                kinds.add(kind)
    assert kinds == {"zone", "spill", "room only", "hot"}


@pytest.mark.parametrize("name,g,v", [HALLS[0], HALLS[2], HALLS[4]], ids=[HALLS[k][0] for k in (0, 2, 4)])
def test_kept_fixed_part_equals_a_fresh_assembly(name, g, v, monkeypatch):
    """A buoyant pass builds the hall again at the same airflow with room fluxes and
    per-face diffusivities of its own: with the fixed part kept from the first build, the
    problem is bit for bit a fresh assembly (operators, flows, sources), and the fixed part
    was assembled once for both."""
    heat = np.full(g.n_racks, 9e3)
    monkeypatch.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
    built = []
    real = solver_mod._fixed_part
    monkeypatch.setattr(solver_mod, "_fixed_part", lambda *a: built.append(1) or real(*a))
    first = build_problem(g, v)
    flux = np.linspace(-0.01, 0.01, first.room_face[0].size) * (first.room_face[2] == 2)
    diff = np.linspace(0.05, 0.15, first.room_face[0].size)
    # a problem's arrays are its own: changing them does not reach the kept part
    for arr in (first.room_source_m3_s, first.E.data, first.W.data, first.B.data, first.M.data,
                first.plenum_pressure, first.room_face[0]):
        arr[:] = -1
    kept = build_problem(g, v, room_extra_flux_m3_s=flux, room_face_diffusivity_m2_s=diff)
    assert len(built) == 1
    fresh = _fresh(monkeypatch, g, v, room_extra_flux_m3_s=flux, room_face_diffusivity_m2_s=diff)
    assert _operators(kept) == _operators(fresh)
    for name_ in ("rack_airflow_m3_s", "cooling_airflow_m3_s", "room_id", "plenum_pressure", "floor_flow_m3_s",
                  "plenum_source_m3_s", "enclosure_supply_m3_s", "room_share", "room_source_m3_s", "duct_m3_s"):
        assert getattr(kept, name_).tobytes() == getattr(fresh, name_).tobytes(), name_
    for a, b in zip(kept.room_face + kept.plenum_face, fresh.room_face + fresh.plenum_face, strict=True):
        assert a.tobytes() == b.tobytes()
    assert np.array_equal(kept.solve(heat), fresh.solve(heat))
    # and a pass with fluxes leaves the kept part as it was: the plain hall again is fresh
    again = build_problem(g, v)
    plain = _fresh(monkeypatch, g, v)
    assert _operators(again) == _operators(plain)
    assert again.room_source_m3_s.tobytes() == plain.room_source_m3_s.tobytes()


def test_other_airflow_or_units_get_their_own_fixed_part(monkeypatch):
    """The kept part belongs to one airflow and one set of running units: another airflow,
    another running set or another layout is assembled afresh (a stale part would carry the
    old rack and unit terms)."""
    _, g, v = HALLS[0]
    monkeypatch.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
    base = build_problem(g, v)
    off = np.ones(g.n_cooling, bool)
    off[0] = False
    for args in ((g, 1.1 * v), (g, v, off), (replace(g, eddy_diffusivity_m2_s=0.2), v)):
        kept = build_problem(*args)
        fresh = _fresh(monkeypatch, *args)
        assert _operators(kept) == _operators(fresh)
        assert _operators(kept)["A"] != _operators(base)["A"]
        build_problem(g, v)          # the base hall back in the memo


def test_buoyant_model_equals_the_reference_assembly(monkeypatch):
    """End to end: the buoyant inlet model (two Picard passes and D) with both fast paths
    equals, array for array, the one assembled by the per-rack loop with nothing kept."""
    _, g, v = HALLS[2]
    heat = np.linspace(6e3, 12e3, g.n_racks)
    monkeypatch.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
    fast = buoyant_inlet_model(g, heat, v, memo=False)
    with monkeypatch.context() as mp:
        mp.setattr(solver_mod, "VECTORISED_RACKS", False)
        mp.setattr(solver_mod, "FIXED_MEMO_SIZE", 0)
        mp.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
        ref = buoyant_inlet_model(g, heat, v, memo=False)
        assert len(solver_mod._FIXED_MEMO) == 0
    assert buoyant_flow(g, heat, v).iterations >= 1
    for name in ("recirculation_k_per_w", "supply_mix", "return_mix", "return_k_per_w", "base_inlet_c",
                 "cooling_heat_share", "cooling_base_w"):
        assert np.array_equal(getattr(fast, name), getattr(ref, name)), name


def test_kept_parts_are_bounded_in_number_and_bytes(monkeypatch):
    """At most FIXED_MEMO_SIZE parts and FIXED_MEMO_BYTES of arrays are kept, the oldest
    going first; the part just built always stays (a byte budget below one part keeps one)."""
    _, g, v = HALLS[0]
    monkeypatch.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
    for k in range(6):
        build_problem(g, v * (1 + 0.01 * k))
    assert len(solver_mod._FIXED_MEMO) == solver_mod.FIXED_MEMO_SIZE
    one = next(iter(solver_mod._FIXED_MEMO.values())).nbytes
    assert one > 0
    monkeypatch.setattr(solver_mod, "FIXED_MEMO_BYTES", int(2.5 * one))
    build_problem(g, v * 1.5)
    assert len(solver_mod._FIXED_MEMO) == 2
    newest = build_problem(g, v * 1.6)
    monkeypatch.setattr(solver_mod, "FIXED_MEMO_BYTES", 1)
    again = build_problem(g, v * 1.6)
    assert len(solver_mod._FIXED_MEMO) == 1
    assert _operators(again) == _operators(newest)
