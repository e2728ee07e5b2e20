"""The cooling model's fast paths give the reference results bit for bit (issue 19).

Fast paths: one SuperLU factor per distinct operator, kept per process by a digest of the
matrix (:func:`twin.thermal.solver.factorised`), the heat operator's block factors shared
by the problem's solve and :func:`twin.thermal.inlet.linear_maps`, and the potential-flow
pins written straight into CSR. The reference is what the code did before: a fresh
factorisation for every solve (``spsolve`` until the factors took
:data:`~twin.thermal.solver.SUPERNODE_RELAX`; now ``splu`` with the same options), a fresh
``splu`` in ``linear_maps`` and the pins written in LIL format."""

from dataclasses import fields

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal import solver as solver_mod
from twin.thermal.buoyancy import buoyant_inlet_model
from twin.thermal.solver import _laplacian, _ordering, _with_unit_rows, build_problem, factorised


@pytest.fixture(scope="module")
def hall():
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=6.1, n_layers=3, containment_leakage_fraction=0.05)
    heat = np.full(g.n_racks, 10e3)
    return g, heat, rack_airflow_m3_s(heat, 15.0)


class _Direct:
    """The reference: a fresh ``splu`` (the options the solver uses) for every solve."""

    def __init__(self, a, permc_spec=None):
        self.a, self.spec = solver_mod._canonical_csc(a), permc_spec

    def solve(self, b, trans="N"):
        return _fresh(self.a, b, self.spec, trans)


def _fresh(a, b, spec, trans="N"):
    """``a`` x = b by a fresh SuperLU factor with the solver's options."""
    return spla.splu(solver_mod._canonical_csc(a), permc_spec=spec,
                     relax=solver_mod.SUPERNODE_RELAX).solve(b, trans=trans)


def _arrays(m):
    return {f.name: getattr(m, f.name) for f in fields(m) if isinstance(getattr(m, f.name), np.ndarray)}


def _direct_solves(mp):
    """Within ``mp``: every solve direct, and no layout operator kept from earlier calls."""
    mp.setattr(solver_mod, "factorised", lambda a, permc_spec=None, memo=True: _Direct(a, permc_spec))
    mp.setattr(solver_mod, "_ROOM_MEMO", type(solver_mod._ROOM_MEMO)())
    mp.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())


def _reference_model(monkeypatch, g, heat, v):
    with monkeypatch.context() as mp:
        _direct_solves(mp)
        return buoyant_inlet_model(g, heat, v, memo=False)


def test_buoyant_models_equal_the_direct_solves_bit_for_bit(hall, monkeypatch):
    """Two airflow knots in a row (the second reuses the first's Laplacian and plenum factors
    from the process memo), then the first again with a warm memo: every array of every
    model equals the reference derivation exactly."""
    g, heat, v = hall
    solver_mod._LU_MEMO.clear()
    cases = [(heat, v), (0.6 * heat, 0.6 * v), (heat, v)]
    fast = [buoyant_inlet_model(g, q, x, memo=False) for q, x in cases]
    assert len(solver_mod._LU_MEMO) >= 2          # Laplacian and plenum operators kept
    for (q, x), m in zip(cases, fast, strict=True):
        ref = _arrays(_reference_model(monkeypatch, g, q, x))
        got = _arrays(m)
        for name, r in ref.items():
            assert np.array_equal(got[name], r), name


def test_factor_memo_reuses_identical_matrices_only(hall):
    g, heat, v = hall
    a = build_problem(g, v).A.tocsc()
    spec = _ordering(g)
    solver_mod._LU_MEMO.clear()
    lu = factorised(a, spec)
    assert factorised(a.copy(), spec) is lu          # same matrix: the kept factor
    assert factorised(a, "COLAMD" if spec != "COLAMD" else "MMD_AT_PLUS_A") is not lu
    b = np.random.default_rng(3).normal(size=a.shape[0])
    assert np.array_equal(lu.solve(b), _fresh(a, b, spec))
    changed = a.copy()
    changed.data[7] *= 1.0 + 1e-12                    # one value moves in its last digits
    lu2 = factorised(changed, spec)
    assert lu2 is not lu
    assert np.array_equal(lu2.solve(b), _fresh(changed, b, spec))
    assert not np.array_equal(lu2.solve(b), lu.solve(b))


def test_factor_memo_is_bounded(hall, monkeypatch):
    g, _, v = hall
    a = build_problem(g, v).A.tocsc()
    solver_mod._LU_MEMO.clear()
    monkeypatch.setattr(solver_mod, "LU_MEMO_SIZE", 3)
    for k in range(5):
        factorised(a * (1.0 + k), _ordering(g))
    assert len(solver_mod._LU_MEMO) == 3


def test_unit_rows_equal_the_lil_overwrite(hall):
    """The pinned potential-flow operator, written in CSR, equals the LIL overwrite the
    solver used before: same pattern, same values, same order."""
    g, _, v = hall
    prob = build_problem(g, v)
    ri, rj, fax, _ = prob.room_face
    dz = g.height_m / g.n_layers
    h = prob.grid.cell_m
    lap = _laplacian(prob.n_room, ri, rj, np.where(fax == 2, h * h / dz, dz))
    pins = np.array([0, 5, prob.n_room - 1])
    ref = lap.tolil()
    for p in pins:
        ref.rows[p] = [p]
        ref.data[p] = [1.0]
    ref = ref.tocsc()
    got = _with_unit_rows(lap, pins)
    assert np.array_equal(got.indptr, ref.indptr)
    assert np.array_equal(got.indices, ref.indices)
    assert np.array_equal(got.data, ref.data)
    assert not np.array_equal(_with_unit_rows(lap, pins[:2]).data, ref.data)


def test_problem_solve_equals_the_direct_block_solves(hall):
    """HallProblem.solve with its kept block factors equals fresh factors block by block, and a
    second problem at another airflow does not pick up the first one's room factor."""
    g, heat, v = hall
    for scale in (1.0, 0.5):
        prob = build_problem(g, scale * v)
        assert np.all(prob.floor_flow_m3_s >= 0)
        rhs = prob.E @ g.cooling_supply_temp_c + prob.B @ heat
        a = prob.A.tocsr()
        nr, n_p = prob.n_room, prob.plenum_pressure.size
        rr, pp, nn = slice(0, nr), slice(nr, nr + n_p), slice(nr + n_p, prob.n_unknowns)
        spec = _ordering(g)
        t_p = _fresh(a[pp, pp], rhs[pp], spec)
        t_r = _fresh(a[rr, rr], rhs[rr] - a[rr, pp] @ t_p, spec)
        t_n = (rhs[nn] - a[nn, pp] @ t_p - a[nn, rr] @ t_r) / a[nn, nn].diagonal()
        assert np.array_equal(prob.solve(heat), np.concatenate([t_r, t_p, t_n]))


def test_plan_view_quick_model_equals_the_direct_solves(monkeypatch):
    """The one-layer hall (QUICK scheme, COLAMD ordering) through the same paths."""
    from twin.thermal.inlet import inlet_model

    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0)
    assert g.scheme == "quick"
    v = rack_airflow_m3_s(np.full(g.n_racks, 8e3), 15.0)
    fast = _arrays(inlet_model(g, v))
    with monkeypatch.context() as mp:
        _direct_solves(mp)
        ref = _arrays(inlet_model(g, v))
    for name, r in ref.items():
        assert np.array_equal(fast[name], r), name


def test_capped_steady_state_with_kept_constants_equals_the_direct_maps(hall):
    """Coils at their set points (the common case, served from unit constants kept by the
    identity of the model's unit arrays):
    supplies, returns, loads and inlets equal the model's linear maps evaluated directly, bit
    for bit, for two models used in turn; a caller changing a result's arrays changes
    nothing kept."""
    from dataclasses import replace

    from twin.thermal import inlet_model
    from twin.thermal.capacity import capped_steady_state
    from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K

    g, heat, v = hall
    m1 = inlet_model(g, v)
    off = np.ones(g.n_cooling, bool)
    off[1] = False
    m2 = inlet_model(g, 0.7 * v, off)
    for _ in range(2):
        for m, q in ((m1, heat), (m2, 0.7 * heat), (m1, 0.5 * heat)):
            st = capped_steady_state(m, q)
            act = m.cooling_active
            t = m.cooling_supply_temp_c
            ret = m.return_mix @ t + m.return_k_per_w @ q
            assert st.feasible and not st.saturated.any() and st.iterations == 1
            assert np.array_equal(st.inlet_temp_c, m.supply_mix @ t + m.recirculation_k_per_w @ q)
            assert np.array_equal(st.return_temp_c, np.where(act, ret, np.nan), equal_nan=True)
            assert np.array_equal(st.supply_temp_c, np.where(act, t, np.nan), equal_nan=True)
            g_c = AIR_VOLUMETRIC_HEAT_J_M3_K * m.cooling_airflow_m3_s
            assert np.array_equal(st.unit_load_w, np.where(act, g_c * (ret - t), 0.0))
            assert np.array_equal(st.unit_demand_w, np.where(act, m.cooling_load_w(q), 0.0))
            st.supply_temp_c[:] = 99.0
            st.unit_capacity_w[:] = 0.0
    # saturated coils (capacity cut below the load): the kept constants serve the
    # active-set iteration too, and give what a fresh evaluation with the same settings does
    factor = np.full(g.n_cooling, 1.5)
    factor[0] = 0.8                                  # unit 0 short by 20 %, the others to spare
    low = replace(m1, cooling_capacity_w=factor * m1.cooling_load_w(heat))
    a = capped_steady_state(low, heat)
    b = capped_steady_state(low, heat, setpoint_c=low.cooling_supply_temp_c.copy())
    assert a.saturated.any() and a.iterations > 1
    for f in ("supply_temp_c", "return_temp_c", "inlet_temp_c", "unit_load_w", "unit_demand_w"):
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f
    assert a.unit_load_w[a.saturated] == pytest.approx(low.cooling_capacity_w[a.saturated], rel=1e-9)


def test_kept_fan_power_and_margins_equal_a_fresh_evaluation_every_sample(monkeypatch):
    """Blue Vela (physical model, fan-law airflow) for 30 days: the CRAH fan power and the
    margins HallThermal.record keeps between changes of airflow, running units and loads
    (and the units' design fan power and running capacity, kept per hall) equal those
    evaluated afresh at every sample, bit for bit."""
    from pathlib import Path

    import twin
    from twin.sim import hall_thermal as ht

    s = twin.load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "blue_vela.yaml",
                           ["simulation.duration_days=30", "site.cooling_system.crah_fans.control=vfd",
                            "site.cooling_system.crah_fans.min_speed_fraction=0.05"])
    kept = twin.simulate(s).dataset

    class _Forget(dict):
        def __setitem__(self, key, value):
            pass

    init = ht.HallThermal.__init__

    def fresh_init(self, engine):
        init(self, engine)
        self._record_memo = _Forget()
        self._run_cap = _Forget()                   # the running units' capacity summed afresh too

    monkeypatch.setattr(ht.HallThermal, "__init__", fresh_init)
    monkeypatch.setattr(ht.HallThermal, "_hall_fan_power_w", lambda self, h, hall: ht._crah_fans_w(
        self.cs.crah_fans, hall.airflow, hall.active, hall.geom.cooling_airflow_m3_s))
    fresh = twin.simulate(s).dataset
    fan = fresh["cooling_fan_power_w"].values
    assert np.unique(fan).size > 3                    # the airflow moves within the month
    for name in ("cooling_fan_power_w", "cooling_unit_margin_w", "cooling_capacity_margin_w",
                 "cooling_unit_load_w"):
        assert np.array_equal(kept[name].values, fresh[name].values, equal_nan=True), name


def test_kept_layout_is_the_fresh_rasterisation_of_that_geometry(hall):
    """The grid build_problem reuses is rasterise() of the very geometry asked for: an equal
    geometry built anew hits it, a geometry with one rack moved gets its own."""
    from dataclasses import replace

    from twin.thermal.geometry import rasterise

    g, _, _ = hall
    solver_mod._GRID_MEMO.clear()
    first = solver_mod._rasterised(g)
    assert solver_mod._rasterised(replace(g)) is first
    moved_xy = g.rack_center_xy_m.copy()
    moved_xy[0] += [-1.2, 0.0]                      # rack 0 two cells towards the wall
    moved = replace(g, rack_center_xy_m=moved_xy)
    for geom in (g, moved):
        kept, fresh = solver_mod._rasterised(geom), rasterise(geom)
        for name in ("solid", "rack_mask", "obstacle_mask"):
            assert np.array_equal(getattr(kept, name), getattr(fresh, name)), name
        for name in ("rack_cells", "intake_cells", "exhaust_cells", "cooling_cells", "tile_cells"):
            assert all(np.array_equal(a, b) for a, b in zip(getattr(kept, name), getattr(fresh, name),
                                                            strict=True)), name
    assert not np.array_equal(solver_mod._rasterised(moved).solid, first.solid)


def test_interpolated_model_equals_the_interpolation_formula_bit_for_bit():
    """RecirculationFamily.model (clip and search on the sorted scales, in-place mixing)
    gives X(s) = ((1 - w) s_a X_a + w s_b X_b) / s_c and (1 - w) X_a + w X_b exactly, at
    scales between knots, on knots and beyond both ends."""
    from twin.thermal.airflow import RecirculationFamily

    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0)
    v0 = rack_airflow_m3_s(np.full(g.n_racks, 10e3), 12.0)
    fam = RecirculationFamily(g, v0, scales=(0.3, 0.5, 0.75, 1.0))
    sc = np.asarray(fam.scales)
    for s_req in (0.2, 0.3, 0.41, 0.5, 0.6180339887, 0.75, 0.9, 1.0, 1.3):
        m = fam.model(s_req * v0)
        s = float((s_req * v0).sum() / v0.sum())
        s_c = float(np.clip(s, sc[0], sc[-1]))
        k = int(np.clip(np.searchsorted(sc, s_c) - 1, 0, len(sc) - 2))
        sa, sb = sc[k], sc[k + 1]
        w = (s_c - sa) / (sb - sa)
        a, b = fam.exact(k), fam.exact(k + 1)
        # / s_c (helper HOF): beyond both ends the end knot's maps as they are (the unit heat
        # shares keep summing to 1); within the knots s_c is s
        d = ((1 - w) * sa * a.recirculation_k_per_w + w * sb * b.recirculation_k_per_w) / s_c
        rk = ((1 - w) * sa * a.return_k_per_w + w * sb * b.return_k_per_w) / s_c
        assert np.array_equal(m.recirculation_k_per_w, d), s_req
        assert np.array_equal(m.return_k_per_w, rk), s_req
        assert np.array_equal(m.supply_mix, (1 - w) * a.supply_mix + w * b.supply_mix), s_req
        assert np.array_equal(m.rack_airflow_m3_s, s_req * v0)


def test_kept_potential_operator_belongs_to_its_layout(hall, monkeypatch):
    """The room's pinned potential-flow factor is kept per layout: a hall with one rack moved,
    built after the first, gets the flow of its own direct solve, bit for bit."""
    from dataclasses import replace

    g, _, v = hall
    moved_xy = g.rack_center_xy_m.copy()
    moved_xy[0] += [-1.2, 0.0]
    moved = replace(g, rack_center_xy_m=moved_xy)
    solver_mod._ROOM_MEMO.clear()
    fast = [build_problem(geom, v).room_face[3] for geom in (g, moved, g)]
    assert len(solver_mod._ROOM_MEMO) == 2
    with monkeypatch.context() as mp:
        _direct_solves(mp)
        ref = [build_problem(geom, v).room_face[3] for geom in (g, moved)]
    for got, want in zip(fast, ref + ref[:1], strict=True):
        assert np.array_equal(got, want)
