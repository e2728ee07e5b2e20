"""The recorder's shared fold with every rack powered read without the mask, the histogram
binned in chunks through buffers kept from fold to fold and the peak inlet as a plain maximum
when finite (issue 19, million-GPU speed pass), against the fold as first written
(``RackAggregates.shared = False``): every aggregate bit for bit. Each comparison fails when
the fast path is broken on purpose."""

from __future__ import annotations

import types

import numpy as np
import pytest

import twin.sim.recorder as recorder
from twin.sim.recorder import RackAggregates
from twin.sim.state import RackState

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
R, P, H = 64, 8, 4
HALL = np.repeat(np.arange(H), R // H)


def _window(rng, t: int, all_on: bool, specials: bool):
    inlet = rng.uniform(12.0, 34.0, (t, R)).astype(np.float32)
    peak = inlet + rng.uniform(0.0, 2.0, (t, R)).astype(np.float32)
    if specials:
        pick = rng.random((t, R))
        inlet[pick < 0.03] = np.nan
        inlet[(pick >= 0.03) & (pick < 0.05)] = np.inf
        inlet[(pick >= 0.05) & (pick < 0.07)] = -np.inf
        inlet[(pick >= 0.07) & (pick < 0.09)] = 18.0
        inlet[(pick >= 0.09) & (pick < 0.11)] = 27.0
        inlet[(pick >= 0.11) & (pick < 0.13)] = 400.0
        inlet[(pick >= 0.13) & (pick < 0.15)] = -80.0
        kind = rng.integers(0, 4)
        if kind == 1:
            peak[0, 0] = np.nan
        elif kind == 2:
            peak[-1, -1] = np.inf
        elif kind == 3:
            peak[:] = -np.inf
    state = np.full((t, R), RackState.IN_SERVICE, np.int8)
    state[:, ::7] = RackState.BURN_IN
    if not all_on:
        state[rng.random((t, R)) < 0.1] = rng.choice([RackState.ABSENT, RackState.OFF, RackState.FAULTED])
    power = rng.uniform(0.0, 40e3, (t, R)).astype(np.float32)
    w = {"rack_state": state, "rack_inlet_c": inlet, "rack_inlet_peak_c": peak, "rack_power_w": power}
    flow = types.SimpleNamespace(it_w=power.sum(axis=1, dtype=float), rpp_load_fraction=rng.uniform(0, 1, (t, P)))
    return w, flow


def _fold_all(shared: bool, seed: int, all_on: bool, specials: bool, halls: bool) -> RackAggregates:
    rng = np.random.default_rng(seed)
    agg = RackAggregates.empty(60, R, P, H, halls=halls)
    agg.shared = shared
    i = 0
    for t in (9, 1, 17, 30, 3):
        w, flow = _window(rng, t, all_on, specials)
        agg.fold(i, w, flow, HALL)
        i += t
    return agg


def _differ(a: RackAggregates, b: RackAggregates) -> list[str]:
    out = []
    for f in ("inlet_max_c", "n_above", "n_outside", "n_ashrae_out", "power_max_w", "power_sum_w",
              "power_at_peak_w", "rpp_lf_max", "inlet_hist", "hall_power_w", "hall_inlet_max_c",
              "inlet_peak_max_c", "it_peak_w"):
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            out.append(f)
    return out


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 18])
@pytest.mark.parametrize("all_on", [True, False])
@pytest.mark.parametrize("specials", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_fast_fold_equals_the_reference(chunk, all_on, specials, seed, monkeypatch):
    monkeypatch.setattr(recorder, "_HIST_CHUNK", chunk)
    for halls in (True, False):
        fast = _fold_all(True, seed, all_on, specials, halls)
        ref = _fold_all(False, seed, all_on, specials, halls)
        assert _differ(fast, ref) == []
        assert fast.inlet_hist.sum() > 0


def test_powered_codes_equal_the_rack_state_law():
    codes = np.arange(-128, 128, dtype=np.int8)
    assert np.array_equal(recorder._powered(codes), RackState.powered(codes))
    wide = codes.astype(np.int64)
    assert np.array_equal(recorder._powered(wide), RackState.powered(wide))


def test_a_histogram_missing_its_last_chunk_is_caught(monkeypatch):
    monkeypatch.setattr(recorder, "_HIST_CHUNK", 50)
    ref = _fold_all(False, 1, True, False, False)
    real = RackAggregates._hist_add

    def short(self, vals):
        flat = vals.reshape(-1)
        real(self, flat[:flat.size - flat.size % 50] if flat.size > 50 else flat)
    monkeypatch.setattr(RackAggregates, "_hist_add", short)
    assert _differ(_fold_all(True, 1, True, False, False), ref) == ["inlet_hist"]


def test_racks_taken_as_all_powered_are_caught(monkeypatch):
    ref = _fold_all(False, 2, False, True, True)
    monkeypatch.setattr(recorder, "_powered", lambda codes: np.ones(codes.shape, bool))
    assert "inlet_hist" in _differ(_fold_all(True, 2, False, True, True), ref)


def test_buffers_are_kept_between_folds():
    agg = _fold_all(True, 0, True, False, False)
    buf = agg._buf["f64"]
    w, flow = _window(np.random.default_rng(5), 4, True, False)
    agg.fold(60 - 4, w, flow, HALL)
    assert agg._buf["f64"] is buf


@pytest.mark.parametrize("t", [1, 2, 97, 255, 256, 300, 65535, 65536, 70000])
def test_column_counts_equal_the_sum(t):
    rng = np.random.default_rng(t)
    r = 3 if t > 1000 else 40
    for p in (0.0, 0.3, 1.0):
        mask = rng.random((t, r)) < p
        got = recorder._column_counts(mask)
        assert np.array_equal(got, mask.sum(axis=0)) and got.dtype.kind == "u" or t >= 1 << 16
        agg = np.zeros(r, np.int64)
        agg += got
        assert agg.dtype == np.int64 and np.array_equal(agg, mask.sum(axis=0))


def test_column_counts_in_bytes_that_wrap_are_caught(monkeypatch):
    """Counts past 255 in one byte wrap: a window of 300 samples sees it."""
    mask = np.ones((300, 4), bool)
    assert not np.array_equal(mask.view(np.uint8).sum(axis=0, dtype=np.uint8), mask.sum(axis=0))
