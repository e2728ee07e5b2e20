"""The PSU's AC power with the unloaded nodes set by a sparse masked copy (issue 19,
million-GPU speed pass) against the expression as first written (``np.where`` and
``np.interp``): bit for bit over random loads, nodes without load, NaN and infinite loads,
and loads below the curve; and the curve read at each call."""

from __future__ import annotations

import numpy as np
import pytest

import twin.power.node as node
from twin.power.node import PSU_TITANIUM_EFFICIENCY, PSU_TITANIUM_LOAD_FRACTION, psu_efficiency

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _bits(a) -> bytes:
    a = np.asarray(a)
    return a.dtype.str.encode() + str(a.shape).encode() + a.tobytes()


def _reference_ac_w(dc, cap_psu, node_max_w):
    """``_psu_ac_w`` as first written (np.where and np.interp)."""
    on = dc > 0.0
    x = np.where(on, dc / cap_psu, 1.0)
    if x.size and x.min() >= PSU_TITANIUM_LOAD_FRACTION[0]:
        ac = np.where(on, dc / np.interp(x, PSU_TITANIUM_LOAD_FRACTION, PSU_TITANIUM_EFFICIENCY), 0.0)
    else:
        eta = psu_efficiency(x)
        ac = np.where(on, dc / np.where(eta > 0.0, eta, 1.0), 0.0)
    return np.minimum(ac, node_max_w, out=ac)


def _loads(rng, n: int) -> np.ndarray:
    x = 0.1 + rng.random(n) * rng.choice([0.05, 0.1, 0.4, 0.9, 1.5, 30.0])
    knots = [0.1, 0.2, 0.5, 1.0, np.inf, np.nextafter(0.2, 0), np.nextafter(0.5, 1), np.nextafter(1.0, 0)]
    x[rng.random(n) < 0.02] = rng.choice(knots)
    return x


@pytest.mark.parametrize("seed", range(8))
def test_psu_ac_equals_the_first_expression(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(40):
        n = int(rng.integers(0, 3000))
        dc = rng.uniform(0, 20000, n) * 10.0 ** rng.integers(-3, 2, n)
        pick = rng.random(n)
        dc[pick < 0.05] = 0.0
        dc[(pick >= 0.05) & (pick < 0.06)] = -0.0
        dc[(pick >= 0.06) & (pick < 0.07)] = np.nan
        dc[(pick >= 0.07) & (pick < 0.08)] = np.inf
        dc[(pick >= 0.08) & (pick < 0.09)] = -5.0
        if rng.random() < 0.5:                  # every loaded node on the curve: the fast branch
            dc = np.where(np.isnan(dc) | (dc < 1700.0), 0.0, dc) if rng.random() < 0.5 else np.abs(
                np.nan_to_num(dc)) + 1700.0
        cap = float(rng.choice([16800.0, 2800.0, 1e-3, 1e9]))
        assert _bits(node._psu_ac_w(dc, cap, 10200.0)) == _bits(_reference_ac_w(dc, cap, 10200.0))
    for dc in (np.float64(5000.0), np.array(5000.0), np.array(0.0), np.array(np.nan)):
        assert _bits(node._psu_ac_w(dc, 16800.0, 10200.0)) == _bits(_reference_ac_w(dc, 16800.0, 10200.0))


def test_another_curve_is_followed(monkeypatch):
    """The module's curve is read at each call (a curve swapped in is the one evaluated)."""
    x = _loads(np.random.default_rng(5), 10_000)
    other = PSU_TITANIUM_EFFICIENCY + 1e-9
    monkeypatch.setattr(node, "PSU_TITANIUM_EFFICIENCY", other)
    assert _bits(node._titanium_efficiency(x)) == _bits(np.interp(x, PSU_TITANIUM_LOAD_FRACTION, other))
