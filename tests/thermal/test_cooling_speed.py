"""The cooling model's invariants that its fast paths rely on (issues 19 and 14).

- No room air flows down into the plenum: every source of the plenum is a unit's supply
  and every outlet a conductance to the room, so the plenum pressure is non-negative and
  the heat operator is block lower-triangular in (plenum, room, return node).
  :meth:`HallProblem.solve` and :func:`twin.thermal.inlet.linear_maps` solve by blocks
  only; :func:`build_problem` asserts the invariant.
- The geometry is digested once per :func:`build_problem` and the operator converted to
  CSR once per problem.
"""

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal import solver as solver_mod
from twin.thermal.inlet import linear_maps
from twin.thermal.solver import build_problem


def _halls():
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=6.1, n_layers=3, containment_leakage_fraction=0.05)
    v = rack_airflow_m3_s(np.full(g.n_racks, 10e3), 15.0)
    yield "open, 3 layers", g, v
    # a starved contained cold aisle: the racks draw 1.5x what the units blow
    yield "starved cold aisle", replace(g, containment="cold_aisle"), 1.5 * v
    yield "hot aisle", replace(g, containment="hot_aisle", containment_leakage_fraction=0.2), v
    yield "leaky floor", replace(g, floor_leakage_fraction=0.3), v
    p = row_hall(3, 8, cooling_per_wall=2, cooling_airflow_m3_s=5.0)
    yield "plan view, QUICK", p, rack_airflow_m3_s(np.full(p.n_racks, 10e3), 15.0)


@pytest.mark.parametrize("name,g,v", list(_halls()), ids=[h[0] for h in _halls()])
def test_no_room_air_enters_the_plenum_and_the_block_solve_is_the_whole_solve(name, g, v):
    """Floor flows >= 0 in open, starved-contained, hot-aisle, leaky and plan-view halls,
    and the block substitution equals one factor of the whole operator (to 1e-9 K),
    for the field and for D and S."""
    prob = build_problem(g, v)
    assert np.all(prob.floor_flow_m3_s >= 0)
    assert np.all(prob.plenum_pressure >= 0)
    heat = np.linspace(5e3, 15e3, g.n_racks)
    lu = spla.splu(prob.A.tocsc())
    whole = lu.solve(prob.E @ g.cooling_supply_temp_c + prob.B @ heat)
    np.testing.assert_allclose(prob.solve(heat), whole, rtol=0, atol=1e-9)
    d, s = linear_maps(prob)
    y = lu.solve(sp.vstack([prob.W, prob.M]).T.toarray(), trans="T")
    np.testing.assert_allclose(d, (prob.B.T @ y).T, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(s, (prob.E.T @ y).T, rtol=1e-9, atol=1e-12)


def test_room_air_into_the_plenum_is_refused(monkeypatch):
    """A plenum pressure below the room's (here forced by flipping the plenum solve's sign)
    would make room air flow into the floor, which the block solves cannot carry:
    build_problem stops instead of returning a wrong operator."""
    g, v = next(_halls())[1:]

    class Flipped:
        def __init__(self, lu):
            self.lu = lu

        def solve(self, b, trans="N"):
            return -self.lu.solve(b, trans=trans)

    real = solver_mod.factorised
    n_plan = build_problem(g, v).plenum_pressure.size
    monkeypatch.setattr(solver_mod, "factorised", lambda a, spec=None, memo=True: (
        Flipped(real(a, spec, memo=memo)) if a.shape[0] == n_plan and spec is None else real(a, spec, memo=memo)))
    monkeypatch.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())  # nothing kept
    with pytest.raises(AssertionError, match="plenum"):
        build_problem(g, v)


def test_geometry_digested_once_and_operator_converted_once(monkeypatch):
    g, v = next(_halls())[1:]
    calls = []
    real = solver_mod._geometry_digest
    monkeypatch.setattr(solver_mod, "_geometry_digest", lambda geom: calls.append(1) or real(geom))
    pickles = []
    real_dumps = solver_mod.pickle.dumps
    monkeypatch.setattr(solver_mod.pickle, "dumps", lambda *a, **k: pickles.append(1) or real_dumps(*a, **k))
    prob = build_problem(g, v)
    assert len(calls) == 1 and len(pickles) == 1
    conversions = []
    real_tocsr = sp.csc_matrix.tocsr
    monkeypatch.setattr(type(prob.A), "tocsr", lambda self, *a, **k: conversions.append(1) or real_tocsr(self, *a, **k))
    heat = np.full(g.n_racks, 8e3)
    first = prob.solve(heat)
    assert np.array_equal(prob.solve(heat), first)
    linear_maps(prob)
    assert len(conversions) == 1


def _model_arrays(g, heat, v):
    from twin.thermal.buoyancy import buoyant_inlet_model
    m = buoyant_inlet_model(g, heat, v, memo=False)
    return {k: getattr(m, k) for k in ("recirculation_k_per_w", "supply_mix", "return_mix", "return_k_per_w",
                                       "base_inlet_c")}


def test_little_supernode_relaxation_moves_the_model_by_round_off_only(monkeypatch):
    """The factors with SUPERNODE_RELAX and with SuperLU's default relaxation (two summation
    orders of the same LU, same ordering and pivots) give the same buoyant inlet model (D, S,
    the return maps) to 1e-9 of each map's largest entry (``cooling_base_w``, the heat removed
    at zero rack heat, is round-off about 0 and follows from the return mix); the Picard flow passes through
    both, so a real difference (a wrong factor) would show orders of magnitude above it."""
    g, v = next(_halls())[1:]
    heat = np.linspace(6e3, 14e3, g.n_racks)
    for memo in (solver_mod._LU_MEMO, solver_mod._ROOM_MEMO, solver_mod._FIXED_MEMO):
        memo.clear()
    fast = _model_arrays(g, heat, v)
    with monkeypatch.context() as mp:
        mp.setattr(solver_mod, "SUPERNODE_RELAX", None)          # SuperLU's default
        mp.setattr(solver_mod, "_LU_MEMO", type(solver_mod._LU_MEMO)())
        mp.setattr(solver_mod, "_ROOM_MEMO", type(solver_mod._ROOM_MEMO)())
        mp.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
        ref = _model_arrays(g, heat, v)
    for name, r in ref.items():
        scale = max(float(np.abs(r).max()), 1e-300)
        assert np.abs(fast[name] - r).max() <= 1e-9 * scale, name
    assert any(not np.array_equal(fast[k], ref[k]) for k in ref)  # the relaxation is in force
