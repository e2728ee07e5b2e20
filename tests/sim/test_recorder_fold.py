"""The recorder's window fold with shared passes (issue 19, million-GPU speed pass) against
the fold as first written (``RackAggregates.shared = False``): every aggregate bit for bit,
over random windows holding every rack state, NaN and infinite inlets, inlets exactly on the
ASHRAE recommended bounds, and racks in and out of hall order. Each comparison fails when
the shared fold is broken on purpose."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

import twin
import twin.sim.recorder as recorder
from twin.sim.recorder import RackAggregates

ROOT = Path(__file__).resolve().parents[2]
#: NaN and infinite inlets of powered racks: the histogram's cast warns (both folds, by design)
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
R, P, H, T = 96, 12, 5, 40


def _window(rng, t: int) -> tuple[dict, types.SimpleNamespace]:
    inlet = rng.uniform(12.0, 34.0, (t, R)).astype(np.float32)
    pick = rng.random((t, R))
    inlet[pick < 0.03] = np.nan
    inlet[(pick >= 0.03) & (pick < 0.06)] = 18.0        # on the recommended bounds
    inlet[(pick >= 0.06) & (pick < 0.09)] = 27.0
    inlet[(pick >= 0.09) & (pick < 0.10)] = np.inf
    peak = inlet + rng.uniform(0.0, 2.0, (t, R)).astype(np.float32)
    power = rng.uniform(0.0, 40e3, (t, R)).astype(np.float32)
    w = {"rack_state": rng.integers(-1, 4, (t, R)).astype(np.int8), "rack_inlet_c": inlet,
         "rack_inlet_peak_c": peak, "rack_power_w": power}
    flow = types.SimpleNamespace(it_w=power.sum(axis=1, dtype=float) * rng.uniform(0.9, 1.1, t),
                                 rpp_load_fraction=rng.uniform(0.0, 1.0, (t, P)))
    return w, flow


def _fold_all(shared: bool, rack_hall, seed: int) -> RackAggregates:
    rng = np.random.default_rng(seed)
    agg = RackAggregates.empty(T, R, P, H, halls=True)
    agg.shared = shared                         # (the instance's own switch shadows the class's)
    i = 0
    for t in (7, 1, 13, 19):
        w, flow = _window(rng, t)
        agg.fold(i, w, flow, rack_hall)
        i += t
    return agg


def _same(a: RackAggregates, b: RackAggregates) -> list[str]:
    out = []
    for f in ("inlet_max_c", "n_above", "n_outside", "n_ashrae_out", "power_max_w", "power_sum_w",
              "power_at_peak_w", "rpp_lf_max", "inlet_hist", "hall_power_w", "hall_inlet_max_c",
              "inlet_peak_max_c", "it_peak_w"):
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            out.append(f)
    return out


HALLS = {"in order": np.repeat(np.arange(H), [30, 10, 20, 16, 20]),
         "shuffled": np.random.default_rng(9).integers(0, H, R),
         "a hall empty": np.repeat(np.array([0, 1, 3, 4]), 24)}


@pytest.mark.parametrize("halls", list(HALLS))
@pytest.mark.parametrize("seed", range(3))
def test_shared_fold_equals_the_reference(halls, seed):
    fast, ref = _fold_all(True, HALLS[halls], seed), _fold_all(False, HALLS[halls], seed)
    assert _same(fast, ref) == []
    # the case is not vacuous: racks above, outside and beyond recommended, NaN inlets counted
    assert fast.n_above.sum() > 0 and (fast.n_ashrae_out > fast.n_outside).any()


def test_fold_with_the_hall_order_assumed_is_caught(monkeypatch):
    """Racks taken as in hall order when they are not move the per-hall series."""
    real = RackAggregates._hall_runs

    def in_order(self, rack_hall):
        _, halls, starts = real(self, np.sort(rack_hall))
        return None, halls, starts
    monkeypatch.setattr(RackAggregates, "_hall_runs", in_order)
    ref = _fold_all(False, HALLS["shuffled"], 0)
    assert {"hall_power_w", "hall_inlet_max_c"} <= set(_same(_fold_all(True, HALLS["shuffled"], 0), ref))


def test_fold_without_the_nan_inlets_is_caught(monkeypatch):
    """NaN inlets of powered racks are beyond every ASHRAE class: leaving them out moves the
    count (np.isnan is read by the shared fold only)."""
    ref = _fold_all(False, HALLS["in order"], 1)
    monkeypatch.setattr(np, "isnan", lambda x: np.zeros(np.shape(x), bool))
    assert _same(_fold_all(True, HALLS["in order"], 1), ref) == ["n_ashrae_out"]


def test_run_at_hall_level_equals_the_reference(monkeypatch):
    """Blue Vela with a hot hall, windows of 7 samples, both folds: the same results."""
    hot = [f"site.halls.0.cooling_units.{u}.supply_temp_c=27" for u in range(12)]
    s = twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml",
                           ["simulation.duration_days=8", "outputs.rack_series=hall", *hot])
    monkeypatch.setattr(recorder, "WINDOW_BYTES", 128 * 21 * 7)
    calls = []
    real = RackAggregates.fold

    def counted(self, *a):
        calls.append(self.shared)
        return real(self, *a)
    monkeypatch.setattr(RackAggregates, "fold", counted)
    fast = twin.simulate(s)
    monkeypatch.setattr(RackAggregates, "shared", False)
    ref = twin.simulate(s)
    assert calls.count(True) > 20 and calls.count(False) == calls.count(True)
    assert fast.kpis.keys() == ref.kpis.keys()
    for k, v in fast.kpis.items():
        assert v == ref.kpis[k] or (v != v and ref.kpis[k] != ref.kpis[k]), k
    for v in fast.dataset.data_vars:
        assert np.array_equal(fast.dataset[v].values, ref.dataset[v].values,
                              equal_nan=fast.dataset[v].dtype.kind == "f"), v
