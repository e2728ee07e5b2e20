"""The heat operator's kept assembly plan and the plenum factor a fixed part shares give the
reference matrices and factors bit for bit (issue 14).

build_problem assembles the power-law heat operator from a plan kept per layout
(:class:`twin.thermal.solver._AssemblyPlan`): the triplets' values gathered into scipy's
canonical CSC order and their duplicates summed left to right, as
``scipy.sparse.csc_matrix((v, (rows, cols)))`` sums them. The reference is that
constructor (``ASSEMBLY_PLAN = False``)."""

import numpy as np
import pytest
import scipy.sparse as sp

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal import solver as solver_mod
from twin.thermal.buoyancy import buoyant_flow
from twin.thermal.solver import _AssemblyPlan, _canonical_csc, build_problem


def _triplets(rng, n, n_trip, n_distinct):
    """Random triplets over ``n_distinct`` (row, col) pairs, so most pairs repeat several
    times and in scattered order; values of both signs and many magnitudes."""
    pairs = rng.integers(0, n, size=(n_distinct, 2))
    pick = rng.integers(0, n_distinct, size=n_trip)
    vals = rng.normal(size=n_trip) * 10.0 ** rng.integers(-6, 7, size=n_trip)
    return pairs[pick, 0], pairs[pick, 1], vals


@pytest.mark.parametrize("seed", range(6))
def test_plan_sums_duplicates_as_scipy_does(seed):
    """For random triplets with up to dozens of duplicates per entry, the plan's matrix and
    room block equal scipy's, bit for bit, for the values it was made with and for new ones
    (the order of the sums is fixed by the pattern alone)."""
    rng = np.random.default_rng(seed)
    n, n_room = 300, 217
    rows, cols, vals = _triplets(rng, n, 6000, 900)
    plan = _AssemblyPlan.of(rows, cols, n, n_room)
    for v in (vals, rng.normal(size=vals.size) * 10.0 ** rng.integers(-9, 9, size=vals.size)):
        ref = sp.csc_matrix((v, (rows, cols)), shape=(n, n))
        assert np.array_equal(plan.indptr, ref.indptr) and np.array_equal(plan.indices, ref.indices)
        data = plan.data(v)
        assert data.tobytes() == ref.data.tobytes()
        room = _canonical_csc(ref.tocsr()[:n_room, :n_room])
        assert np.array_equal(plan.room_indptr, room.indptr) and np.array_equal(plan.room_indices, room.indices)
        assert data[plan.room].tobytes() == room.data.tobytes()
    assert len(plan.ranks) >= 10                      # runs of many duplicates were summed


def test_plan_sums_in_scipys_order_not_any_order():
    """The test above can fail: summing each run of duplicates in another order (last to
    first) gives other floats for these values."""
    rng = np.random.default_rng(11)
    n = 50
    rows, cols, vals = _triplets(rng, n, 4000, 120)
    plan = _AssemblyPlan.of(rows, cols, n, n)
    ref = sp.csc_matrix((vals, (rows, cols)), shape=(n, n))
    trip_of = np.empty((plan.first.size, len(plan.ranks) + 1), np.int64)
    trip_of[:] = -1
    trip_of[:, 0] = plan.first
    for k, (entries, trip) in enumerate(plan.ranks, start=1):
        trip_of[entries, k] = trip
    backwards = np.zeros(plan.first.size)
    for k in range(trip_of.shape[1] - 1, -1, -1):
        has = trip_of[:, k] >= 0
        backwards[has] += vals[trip_of[has, k]]
    assert plan.data(vals).tobytes() == ref.data.tobytes()
    assert backwards.tobytes() != ref.data.tobytes()


@pytest.fixture(scope="module")
def layered_hall():
    g = row_hall(4, 10, cooling_per_wall=2, cooling_airflow_m3_s=6.1, n_layers=3, containment_leakage_fraction=0.05)
    heat = np.full(g.n_racks, 10e3)
    return g, heat, rack_airflow_m3_s(heat, 15.0)


def _reference_problem(monkeypatch, *args, **kw):
    with monkeypatch.context() as mp:
        mp.setattr(solver_mod, "ASSEMBLY_PLAN", False)
        mp.setattr(solver_mod, "_FIXED_MEMO", type(solver_mod._FIXED_MEMO)())
        return build_problem(*args, **kw)


def test_problems_from_the_plan_equal_the_reference(layered_hall, monkeypatch):
    """Two airflow knots and a Picard pass with buoyant fluxes: the operator built from the
    kept plan, its room block and the temperatures equal the reference assembly's."""
    g, heat, v = layered_hall
    solver_mod._PLAN_MEMO.clear()
    flux = buoyant_flow(g, heat, v).face_flux_m3_s
    cases = [dict(rack_airflow_m3_s=v), dict(rack_airflow_m3_s=0.6 * v),
             dict(rack_airflow_m3_s=v, room_extra_flux_m3_s=flux)]
    for kw in cases * 2:                              # the second round from the kept plan
        got = build_problem(g, **kw)
        ref = _reference_problem(monkeypatch, g, **kw)
        for name in ("indptr", "indices", "data"):
            assert getattr(got.A, name).tobytes() == getattr(ref.A, name).tobytes(), name
        assert got.A.indices.dtype == ref.A.indices.dtype
        room = _canonical_csc(ref.a_csr[:ref.n_room, :ref.n_room])
        if got._room_block is not None:
            for name in ("indptr", "indices", "data"):
                assert getattr(got._room_block, name).tobytes() == getattr(room, name).tobytes(), name
        assert got.solve(heat).tobytes() == ref.solve(heat).tobytes()
    assert len(solver_mod._PLAN_MEMO) == 1            # one plan for the hall: its pattern holds
    assert build_problem(g, v)._room_block is not None


def test_quick_scheme_takes_the_reference(monkeypatch):
    """QUICK's pattern follows the flux's signs: no plan is kept for it."""
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0, n_layers=2, advection_scheme="quick")
    v = rack_airflow_m3_s(np.full(g.n_racks, 8e3), 15.0)
    solver_mod._PLAN_MEMO.clear()
    got = build_problem(g, v)
    ref = _reference_problem(monkeypatch, g, v)
    assert got._room_block is None and len(solver_mod._PLAN_MEMO) == 0
    assert got.A.data.tobytes() == ref.A.data.tobytes()


def test_problems_of_one_fixed_part_share_its_plenum_factor(layered_hall):
    """The plenum block is built from the fixed part's terms alone: the Picard passes of a
    hall at one airflow share its factor, which solves as the block sliced from each
    problem's own operator."""
    g, heat, v = layered_hall
    first = build_problem(g, v)
    second = build_problem(g, v, room_extra_flux_m3_s=np.full(first.room_face[0].size, 0.0))
    other = build_problem(g, 0.7 * v)
    assert second.block_lu("plenum") is first.block_lu("plenum")
    nr, n_p = second.n_room, second.plenum_pressure.size
    b = np.random.default_rng(5).normal(size=n_p)
    for prob in (first, second, other):
        own = solver_mod.factorised(prob.a_csr[nr:nr + n_p, nr:nr + n_p], solver_mod._ordering(g), memo=False)
        assert prob.block_lu("plenum").solve(b).tobytes() == own.solve(b).tobytes()


def test_linear_maps_read_the_exhaust_rows_as_the_whole_product(layered_hall):
    """D = (B^T Y)^T from the rows of B and Y at the exhaust cells equals the product over
    every room cell, bit for bit (and is not all zeros: the racks' exhaust reaches inlets)."""
    from twin.thermal.inlet import linear_maps

    g, heat, v = layered_hall
    prob = buoyant_flow(g, heat, v).problem
    d_all, _ = linear_maps(prob)
    nr = prob.n_room
    rows = sp.vstack([prob.W, prob.M]).tocsr()
    y = prob.block_lu("room").solve(rows[:, :nr].T.toarray(), trans="T")
    ref = (prob.B.tocsr()[:nr].T @ y).T
    assert d_all.tobytes() == ref.tobytes()
    assert np.count_nonzero(d_all) > d_all.size // 2


@pytest.mark.parametrize("kw", [dict(n_layers=3), dict(containment="cold_aisle"), dict(containment="hot_aisle"),
                                dict(supply="overhead")])
def test_kept_plenum_layout_and_room_faces_equal_a_fresh_build(kw, monkeypatch):
    """The plenum's layout and the room's faces kept per geometry are what _fixed_part built
    each time: a problem from the kept layout equals one built with the memos emptied (every
    array, the operator and the temperatures), and the kept arrays cannot be written."""
    g = row_hall(4, 6, cooling_per_wall=2, cooling_airflow_m3_s=6.1, containment_leakage_fraction=0.05, **kw)
    heat = np.full(g.n_racks, 9e3)
    v = rack_airflow_m3_s(heat, 15.0)
    build_problem(g, 0.8 * v)                      # fills the layout memos
    got = build_problem(g, v)
    with monkeypatch.context() as mp:
        for name in ("_PLENUM_MEMO", "_FACE_MEMO", "_FIXED_MEMO", "_ROOM_MEMO", "_PLAN_MEMO"):
            mp.setattr(solver_mod, name, type(getattr(solver_mod, name))())
        ref = build_problem(g, v)
    for name in ("plenum_pressure", "floor_flow_m3_s", "plenum_source_m3_s", "enclosure_supply_m3_s",
                 "room_share", "room_source_m3_s"):
        assert getattr(got, name).tobytes() == getattr(ref, name).tobytes(), name
    for a, b in zip(got.room_face + got.plenum_face, ref.room_face + ref.plenum_face, strict=True):
        assert a.tobytes() == b.tobytes()
    assert got.A.data.tobytes() == ref.A.data.tobytes() and got.A.indices.tobytes() == ref.A.indices.tobytes()
    assert got.solve(heat).tobytes() == ref.solve(heat).tobytes()
    key = solver_mod._geometry_digest(g)
    kept = solver_mod._PLENUM_MEMO[key][0]
    with pytest.raises(ValueError):
        kept[0] = 1.0
