"""The power tree's (T, R) -> (T, P) RPP sums as column adds where each RPP takes an equal
block of whole racks on one cord at share 1.0 (issue 19, million-GPU speed pass) against
scipy's CSR product (``tree.RPP_BLOCK_SUMS = False``): every part of the flow bit for bit and
in the same memory layout (the sums and the matrix product downstream read it in that
order), over windows whose values span many magnitudes. Each comparison fails when the
column adds are broken on purpose."""

from __future__ import annotations

import numpy as np
import pytest

import twin.power.tree as tree_mod
from twin.power.tree import build_power_tree, evaluate_power_tree

RPP_W = 220e3


def _block_tree(n_rpps: int, m: int, feeds: int = 2):
    rack_rpp = np.repeat(np.arange(n_rpps), m)
    return build_power_tree(rack_rpp, np.full(n_rpps, RPP_W), [50e6] * feeds, "double_conversion", 40e6,
                            rpp_feed=np.arange(n_rpps) % feeds)


def _window(rng, t: int, n_racks: int, dtype) -> np.ndarray:
    x = rng.uniform(0.0, 1.0, (t, n_racks)) * 10.0 ** rng.integers(-2, 6, (t, n_racks))
    x[rng.random((t, n_racks)) < 0.05] = 0.0
    x[rng.random((t, n_racks)) < 0.02] = -0.0
    return x.astype(dtype)


def _flows(tree, x, monkeypatch, blocks: bool):
    monkeypatch.setattr(tree_mod, "RPP_BLOCK_SUMS", blocks)
    return evaluate_power_tree(tree, x)


def _differ(a, b) -> list[str]:
    out = []
    for k in a.__dataclass_fields__:
        va, vb = getattr(a, k), getattr(b, k)
        if isinstance(va, np.ndarray):
            if va.dtype != vb.dtype or va.shape != vb.shape or va.tobytes("A") != vb.tobytes("A") \
                    or (va.ndim == 2 and va.shape[0] > 1 and va.strides != vb.strides):
                out.append(k)
    return out


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("t", [1, 2, 7, 40])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunk", [1, 50, 1 << 16])
def test_block_sums_equal_the_csr_product(m, t, dtype, chunk, monkeypatch):
    monkeypatch.setattr(tree_mod, "_RPP_BLOCK_VALUES", chunk)
    rng = np.random.default_rng(10 * m + t)
    tree = _block_tree(24, m)
    assert tree._route((True, True)).rpp_block == m
    x = _window(rng, t, 24 * m, dtype)
    keep = x.copy()
    fast, ref = _flows(tree, x, monkeypatch, True), _flows(tree, x, monkeypatch, False)
    assert _differ(fast, ref) == []
    assert np.array_equal(x, keep)              # the caller's window is left alone
    if dtype is np.float64:                     # ... and not handed back as the flow's rack power
        assert not np.shares_memory(fast.rack_w, x)


def test_trees_off_the_block_shape_take_the_product(monkeypatch):
    """Two cords a rack, racks out of RPP order, a share other than 1.0, a dead feed
    (racks dropped): no block, and the flow is the product's."""
    rng = np.random.default_rng(3)
    a_b = build_power_tree(np.stack([np.repeat(np.arange(0, 8, 2), 4), np.repeat(np.arange(1, 8, 2), 4)], axis=1),
                           np.full(8, RPP_W), [5e6, 5e6], "double_conversion", 4e6, rpp_feed=np.arange(8) % 2)
    shuffled = build_power_tree(rng.permutation(np.repeat(np.arange(4), 4)), np.full(4, RPP_W), [5e6, 5e6],
                                "double_conversion", 4e6, rpp_feed=np.arange(4) % 2)
    for tree in (a_b, shuffled):
        assert tree._route((True, True)).rpp_block == 0
    x = _window(rng, 5, 16, np.float32)
    for tree in (a_b, shuffled):
        assert _differ(_flows(tree, x, monkeypatch, True), _flows(tree, x, monkeypatch, False)) == []
    tree = _block_tree(4, 4)
    monkeypatch.setattr(tree_mod, "RPP_BLOCK_SUMS", True)
    flow = evaluate_power_tree(tree, x, feed_up=[True, False])
    monkeypatch.setattr(tree_mod, "RPP_BLOCK_SUMS", False)
    assert _differ(flow, evaluate_power_tree(tree, x, feed_up=[True, False])) == []


def test_block_sums_in_another_order_are_caught(monkeypatch):
    """The racks of an RPP added last to first round differently: the comparison sees it."""
    rng = np.random.default_rng(8)
    tree = _block_tree(32, 8)
    x = _window(rng, 30, 256, np.float64)
    ref = _flows(tree, x, monkeypatch, False)

    def reversed_blocks(rack_w, m):
        x3 = rack_w.reshape(rack_w.shape[0], -1, m)
        acc = np.zeros(x3.shape[:2])
        for j in reversed(range(m)):
            acc += x3[:, :, j]
        return np.asfortranarray(acc)
    monkeypatch.setattr(tree_mod, "_rpp_sum_blocks", reversed_blocks)
    assert "rpp_w" in _differ(_flows(tree, x, monkeypatch, True), ref)


def test_block_sums_in_another_layout_are_caught(monkeypatch):
    """The same sums in C order: the layout check sees it (the downstream reads follow it)."""
    rng = np.random.default_rng(9)
    tree = _block_tree(16, 4)
    x = _window(rng, 12, 64, np.float32)
    ref = _flows(tree, x, monkeypatch, False)
    real = tree_mod._rpp_sum_blocks
    monkeypatch.setattr(tree_mod, "_rpp_sum_blocks", lambda w, m: np.ascontiguousarray(real(w, m)))
    assert "rpp_w" in _differ(_flows(tree, x, monkeypatch, True), ref)


def test_copy_false_hands_the_window_over(monkeypatch):
    """``copy=False``: a float64 window becomes the flow's rack power itself, the rest of the
    flow as with a copy; a float32 window is converted either way."""
    rng = np.random.default_rng(12)
    tree = _block_tree(8, 4)
    x = _window(rng, 6, 32, np.float64)
    kept = evaluate_power_tree(tree, x, copy=False)
    ref = evaluate_power_tree(tree, x)
    assert np.shares_memory(kept.rack_w, x) and not np.shares_memory(ref.rack_w, x)
    assert _differ(kept, ref) == []
    x32 = x.astype(np.float32)
    assert _differ(evaluate_power_tree(tree, x32, copy=False), evaluate_power_tree(tree, x32)) == []
