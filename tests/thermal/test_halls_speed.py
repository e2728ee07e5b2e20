"""The legacy halls evaluated together give the per-hall loop's floats (issue 19): with
``HallThermal.halls_stacked`` the inlets and the record of halls that tile the racks in order
(a campus of equal data halls, the million-GPU benchmark's 128) take one batched product per
model in force instead of a Python pass per hall. ``halls_stacked = False`` is the loop, the
reference. Each test compares the two bit for bit, and the last ones show that the comparison
catches a fast path broken on purpose (a wrong grouping of the halls, a transient ignored, a
product or a sum taken in another order)."""

import sys
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.scenario import validate_data
from twin.sim import hall_thermal as ht
from twin.sim.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gigawatt import site_scenario  # noqa: E402

RECORDED = ("cooling_unit_load_w", "cooling_capacity_margin_w", "cooling_unit_margin_w", "cooling_fan_power_w",
            "rack_inlet_peak_c", "rack_gpu_temp_peak_c")


def _campus(days=2.0, rate=120.0):
    """512 XE9680 nodes in 4 equal halls of 32 racks (legacy cooling model), cooling units
    tripping ``rate`` times a year each for ~3 h: halls leave and rejoin the shared model."""
    s = site_scenario(512, days, 600.0, job_nodes=64, racks_per_hall=32, name="halls_stacked")
    s["site"]["cooling_faults"] = {"unit_failure_rate_per_year": rate, "repair_h": 3.0}
    return validate_data(s)


def _record(th, heat, i):
    """The record's rows of sample ``i`` for rack heat ``heat`` [W (R,)], evaluated afresh."""
    rec = th.e.recorder
    th.e.sampler.last_rack_power_w = lambda: heat
    th._record_memo.clear()
    th.record(i, rec)
    return {k: np.array(rec[k][i]) for k in RECORDED}


def _engine_with_distinct_halls():
    """A campus engine before its run, hall 1 with a unit stopped (its own model), hall 2
    inside a legacy fault transient, hall 3 on the shared model."""
    e = Engine(_campus())
    th = e.thermal
    assert th._tiles == (4, 32, len(th.halls[0].units))
    heat = np.random.default_rng(5).uniform(5e3, 45e3, e.plant.n_racks)
    e.sampler.last_rack_power_w = lambda: heat
    th.set_unit(1, 0, False)
    before = th.halls[2].model
    th.set_unit(2, 1, False)
    th.halls[2].transient = (e.env.now, th._transient(2, before, 3600.0))
    assert th.halls[2].transient[1] is not None
    assert len({id(h.model) for h in th.halls}) == 3
    return e, th


def _differs(th, heats) -> list[str]:
    """What of the inlets and the record differs between the stacked path and the loop."""
    out = []
    for i, heat in enumerate(heats):
        got = {}
        for stacked in (True, False):
            th.halls_stacked = stacked
            got[stacked] = {"inlets": th.inlets_c(heat), **_record(th, heat, i)}
        del th.halls_stacked
        out += [f"{k}@{i}" for k in got[True] if not np.array_equal(got[True][k], got[False][k], equal_nan=True)]
    return out


def _heats(n_racks, k=6):
    rng = np.random.default_rng(11)
    return [rng.uniform(0.0, 50e3, n_racks) * (rng.random(n_racks) > 0.1) for _ in range(k)]


def test_stacked_inlets_and_record_equal_the_per_hall_loop():
    """Random rack heats (some racks off) on halls with three models in force (shared,
    one unit down, a running transient): inlets, unit loads, both margins and the peak rows
    are the loop's, bit for bit."""
    e, th = _engine_with_distinct_halls()
    assert _differs(th, _heats(e.plant.n_racks)) == []


@pytest.mark.parametrize("n_racks_per_hall, halls", [(1, 3), (2, 2), (7, 3), (32, 4), (256, 2)])
def test_batched_products_and_sums_are_the_per_hall_ones(n_racks_per_hall, halls):
    """The numpy facts the stacked path rests on, for hall sizes from 1 to 256 racks: ``np.matmul``
    of a matrix with (halls, n, 1) vectors equals ``matrix @ vector`` per hall, and the row sums
    of the (halls, n) heat equal ``np.sum`` of each hall's slice, bit for bit."""
    rng = np.random.default_rng(n_racks_per_hall)
    d = rng.normal(0.0, 1e-4, (n_racks_per_hall, n_racks_per_hall))
    share = rng.random((8, n_racks_per_hall))
    x = rng.uniform(0.0, 5e4, (halls, n_racks_per_hall))
    flat = x.reshape(-1)
    for m in (d, share):
        batched = np.matmul(m, x[:, :, None])[:, :, 0]
        for h in range(halls):
            assert np.array_equal(batched[h], m @ flat[h * n_racks_per_hall:(h + 1) * n_racks_per_hall])
    sums = x.sum(axis=1)
    for h in range(halls):
        assert sums[h] == np.sum(flat[h * n_racks_per_hall:(h + 1) * n_racks_per_hall])


@pytest.mark.slow
def test_stacked_run_equals_the_per_hall_run(monkeypatch):
    """Two days of a 4-hall campus with cooling units tripping and coming back (transients,
    halls on their own models and back on the shared one): every recorded series, KPI and
    event is the same with the halls stacked and one by one."""
    s = _campus()
    groups = []
    orig = ht.HallThermal._model_groups

    def counting(self):
        g = orig(self)
        groups.append(len(g))
        return g

    monkeypatch.setattr(ht.HallThermal, "_model_groups", counting)
    fast = twin.simulate(s)
    assert max(groups) >= 2 and min(groups) == 1        # halls left the shared model and came back
    assert (fast.events["kind"] == "cooling_fault").sum() >= 3
    monkeypatch.setattr(ht.HallThermal, "halls_stacked", False)
    groups.clear()
    ref = twin.simulate(s)
    assert groups == []                                 # the reference never took the stacked path
    assert fast.events.equals(ref.events)
    assert fast.kpis == pytest.approx(ref.kpis, rel=0, abs=0, nan_ok=True)
    for name, var in ref.dataset.data_vars.items():
        assert np.array_equal(fast.dataset[name].values, var.values,
                              equal_nan=var.dtype.kind == "f"), name


def test_single_hall_and_untiled_plants():
    """One legacy hall is a tiling of one; the physical model and halls of unequal size are
    not tiled (the loop runs)."""
    small = Path(__file__).resolve().parents[2] / "scenarios" / "lenovo_small.yaml"
    e = Engine(twin.load_scenario(small, ["site.cooling_system.model=legacy"]))
    assert e.thermal._tiles == (1, e.plant.n_racks, len(e.thermal.halls[0].units))
    e = Engine(twin.load_scenario(Path(small).with_name("blue_vela.yaml")))
    assert e.thermal._tiles is None
    s = site_scenario(480, 1.0, 600.0, job_nodes=64, racks_per_hall=32, name="unequal")   # 120 racks: 32+32+32+24
    e = Engine(validate_data(s))
    assert [len(h.idx) for h in e.thermal.halls] == [32, 32, 32, 24] and e.thermal._tiles is None


def _broken_groups(self):
    """Every hall under the first hall's model."""
    return [(self.halls[0].model, slice(None))]


_STACKED_INLETS = ht.HallThermal._stacked_inlets_c


def _transients_ignored(self, rack_w):
    """The stacked inlets as if no hall ran a transient."""
    saved = [h.transient for h in self.halls]
    for h in self.halls:
        h.transient = None
    try:
        return _STACKED_INLETS(self, rack_w)
    finally:
        for h, t in zip(self.halls, saved, strict=True):
            h.transient = t


@pytest.mark.parametrize("broken, caught", [
    ("groups", ("inlets", "cooling_unit_load_w")),
    ("transient", ("inlets",)),
    ("gemm", ("cooling_unit_load_w",)),     # (32 x 32 D happens to sum alike both ways)
    ("sequential sum", ("cooling_capacity_margin_w",)),
])
def test_a_broken_stacked_path_is_caught(monkeypatch, broken, caught):
    """The comparison above fails when the stacked path groups every hall under one model,
    ignores a running transient, takes the batched product as one matrix-matrix product, or
    sums a hall's heat left to right rather than pairwise."""
    e, th = _engine_with_distinct_halls()
    if broken == "groups":
        monkeypatch.setattr(ht.HallThermal, "_model_groups", _broken_groups)
    elif broken == "transient":
        monkeypatch.setattr(ht.HallThermal, "_stacked_inlets_c", _transients_ignored)
    elif broken == "gemm":
        monkeypatch.setattr(ht, "_matvec_rows", lambda m, x: x @ m.T)
    else:
        monkeypatch.setattr(ht, "_row_sums", lambda x: np.cumsum(x, axis=1)[:, -1])   # left to right
    bad = _differs(th, _heats(e.plant.n_racks))
    assert {k.split("@")[0] for k in bad} >= set(caught), bad
