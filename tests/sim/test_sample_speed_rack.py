"""The sampler's per-rack evaluation (issue 19, million-GPU speed pass): node power at full
clock, the full-clock GPU temperature and the Arrhenius failure acceleration are elementwise
in (phase, inlet), and a rack's nodes share its inlet, so with the same k contiguous nodes in
every rack they are evaluated once per rack at its first node's phase and again at the nodes
whose phase differs. The reference (``Sampler.node_power_per_rack = False``) evaluates every
node; the two must agree bit for bit, and each comparison fails when the per-rack path is
broken on purpose. The racks' power, summed over the columns of the (R, k) view into zeros,
is ``bincount``'s sum (``Sampler.rack_sum_columns = False``), tested the same way.
"""

from pathlib import Path

import numpy as np
import pytest

from twin import thermal
from twin.phases import Phase
from twin.power.node import node_power_plan
from twin.sim import coupling
from twin.sim.sampler import RACK_MAX_COLUMNS, Sampler

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
SHORT = ["simulation.duration_days=12", "failures.rate_scale=30"]

#: an H100-like node (8 GPUs): the figures of the shipped scenarios' node model, rounded
FIGURES = dict(gpu_count=8, gpu_tdp_w=700.0, gpu_idle_w=70.0, host_idle_w=900.0, host_active_w=1800.0,
               fan_max_w=1200.0, node_max_w=10200.0)
GPU_KW = dict(gpu_tdp_w=700.0, gpu_idle_w=70.0, thermal_resistance_k_per_w=0.05, slowdown_c=87.0,
              hw_slowdown_c=90.0, shutdown_c=92.0)
PHASES = np.array([int(p) for p in Phase], np.int8)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _sampler(per_rack: bool = True) -> Sampler:
    s = Sampler.__new__(Sampler)        # the per-rack helpers read no engine
    s.node_power_per_rack, s._split = per_rack, None
    return s


def _case(rng, racks: int, k: int, odd_fraction: float):
    """Phases with racks mostly uniform (a fraction of nodes differing) and rack inlets."""
    lead = rng.choice(PHASES, racks)
    phase = np.repeat(lead, k)
    flip = rng.random(racks * k) < odd_fraction
    phase[flip] = rng.choice(PHASES, int(flip.sum()))
    phase.flags.writeable = False
    inlet = rng.uniform(15.0, 40.0, racks)
    inlet[rng.random(racks) < 0.05] = 27.0          # ties between racks
    return phase, inlet, np.repeat(np.arange(racks), k)


@pytest.mark.parametrize("k", [2, 3, 4, 8])
@pytest.mark.parametrize("odd_fraction", [0.0, 0.03, 0.5, 1.0])
def test_node_power_by_rack_equals_per_node(k, odd_fraction):
    rng = np.random.default_rng(100 * k + int(odd_fraction * 10))
    plan = node_power_plan(650.0, **FIGURES)
    s = _sampler()
    for racks in (1, 5, 257):
        phase, inlet, node_rack = _case(rng, racks, k, odd_fraction)
        split = s._rack_split(phase, k)
        got = s._by_rack(plan, split, phase, inlet, node_rack, k)
        assert _same(got, plan(phase, inlet[node_rack]))
        # the split names exactly the nodes whose phase differs from their rack's first
        want = np.flatnonzero(phase != np.repeat(phase[::k], k))
        assert _same(split[1], want.astype(split[1].dtype))


def test_rack_split_off_or_one_node_a_rack_is_none():
    phase = np.zeros(12, np.int8)
    assert _sampler(False)._rack_split(phase, 4) is None
    assert _sampler(True)._rack_split(phase, 1) is None
    assert _sampler(True)._rack_split(phase, 0) is None


def test_node_power_by_rack_without_the_odd_nodes_is_caught():
    """Repeating each rack's first node to the whole rack (the differing nodes not
    re-evaluated) gives other numbers."""
    rng = np.random.default_rng(7)
    plan = node_power_plan(650.0, **FIGURES)
    s = _sampler()
    phase, inlet, node_rack = _case(rng, 64, 4, 0.1)
    lead, odd = s._rack_split(phase, 4)
    assert odd.size
    broken = s._by_rack(plan, (lead, odd[:0]), phase, inlet, node_rack, 4)
    assert not _same(broken, plan(phase, inlet[node_rack]))


def _reference_gpu_state(inlet, phase, cap, node_rack):
    clock, _, t = coupling.equilibrium_gpu_state(inlet[node_rack], phase, cap, **GPU_KW)
    return clock, t, np.asarray(thermal.arrhenius_acceleration(t, 40.0, 0.7), float)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("hot", [False, True])
def test_gpu_state_by_rack_equals_the_coupling(k, hot):
    """Full clocks (cool inlets): per rack; a hot inlet that throttles a GPU: the coupling's
    bisection per node. Both give the coupling's numbers bit for bit."""
    rng = np.random.default_rng(k + 10 * hot)
    s = _sampler()
    phase, inlet, node_rack = _case(rng, 300, k, 0.05)
    if hot:                                         # a rack burning in at 60 C: 95 C > slowdown
        inlet[17] = 60.0
        phase = phase.copy()
        phase[17 * k:18 * k] = int(Phase.BURN_IN)
    cap = 700.0
    split = s._rack_split(phase, k)
    clock, t, accel = s._gpu_state(split, inlet, phase, cap, node_rack, k, GPU_KW, 40.0, 0.7)
    rclock, rt, raccel = _reference_gpu_state(inlet, phase, cap, node_rack)
    assert _same(clock, rclock) and _same(t, rt) and _same(accel, raccel)
    assert (clock is coupling.full_clock(clock.shape)) == (not hot)
    # the reference path of the same method (no split) gives them too
    clock0, t0, accel0 = s._gpu_state(None, inlet, phase, cap, node_rack, k, GPU_KW, 40.0, 0.7)
    assert _same(t0, rt) and _same(accel0, raccel) and _same(clock0, rclock)


def test_gpu_state_by_rack_without_the_odd_nodes_is_caught():
    rng = np.random.default_rng(11)
    s = _sampler()
    phase, inlet, node_rack = _case(rng, 200, 4, 0.1)
    lead, odd = s._rack_split(phase, 4)
    _, t, accel = s._gpu_state((lead, odd[:0]), inlet, phase, 700.0, node_rack, 4, GPU_KW, 40.0, 0.7)
    _, rt, raccel = _reference_gpu_state(inlet, phase, 700.0, node_rack)
    assert not _same(t, rt) and not _same(accel, raccel)


def _run(patch=None):
    """Blue Vela's first days with the per-rack path on: its 256 nodes are below
    ``Sampler.per_rack_from_nodes``, where a run evaluates per node, so the threshold is set
    to 0 here (the per-node shortcut is compared with this path in ``test_hb_physics.py``)."""
    from test_sampler_speed import _patched_run

    def both(mp):
        mp.setattr(Sampler, "per_rack_from_nodes", 0)
        if patch is not None:
            patch(mp)
    return _patched_run(BV, SHORT, both)


@pytest.fixture(scope="module")
def per_node():
    """Blue Vela's first days (two nodes a rack) with every node evaluated and the racks'
    power by ``bincount``."""
    def off(mp):
        init = Sampler.__init__

        def init_off(self, engine):
            init(self, engine)
            self.node_power_per_rack = False
            self.rack_sum_columns = False
        mp.setattr(Sampler, "__init__", init_off)
    return _run(off)


def test_run_by_rack_equals_per_node(per_node, monkeypatch):
    from test_sampler_speed import _differ
    calls = []
    real = Sampler._by_rack

    def counted(*a):
        calls.append(1)
        return real(*a)
    monkeypatch.setattr(Sampler, "_by_rack", staticmethod(counted))
    res = _run()
    assert len(calls) > 50                      # the per-rack path ran
    assert _differ(res, per_node) == []


def test_a_broken_rack_split_in_a_run_is_caught(per_node):
    """Racks taken as uniform (the nodes whose phase differs not re-evaluated) move the run."""
    from test_sampler_speed import _differ
    real = Sampler._rack_split

    def uniform(self, phase, k):
        sp = real(self, phase, k)
        return None if sp is None else (sp[0], sp[1][:0])

    def patch(mp):
        mp.setattr(Sampler, "_rack_split", uniform)
    assert _differ(_run(patch), per_node) != []


def _sum_sampler(columns: bool) -> Sampler:
    s = Sampler.__new__(Sampler)
    s.rack_sum_columns = columns
    return s


@pytest.mark.parametrize("k", range(1, RACK_MAX_COLUMNS + 1))
def test_rack_sum_by_columns_equals_bincount(k):
    """Column adds into zeros are bincount's additions: values spanning many magnitudes
    (where the order of additions shows), signed zeros, NaN and infinities."""
    rng = np.random.default_rng(40 + k)
    for racks in (1, 3, 300):
        v = rng.uniform(0.0, 1.0, racks * k) * 10.0 ** rng.integers(-3, 12, racks * k)
        pick = rng.random(racks * k)
        v[pick < 0.03] = -0.0
        v[(pick >= 0.03) & (pick < 0.05)] = np.nan
        v[(pick >= 0.05) & (pick < 0.06)] = np.inf
        node_rack = np.repeat(np.arange(racks), k)
        got = _sum_sampler(True)._rack_sum(v, node_rack, racks, k)
        assert _same(got, np.bincount(node_rack, weights=v, minlength=racks))
        assert _same(got, _sum_sampler(False)._rack_sum(v, node_rack, racks, k))


def test_rack_sum_in_another_order_is_caught(monkeypatch):
    """Columns added last to first round differently: the comparison sees it."""
    rng = np.random.default_rng(5)
    k, racks = 4, 500
    v = rng.uniform(0.0, 1.0, racks * k) * 10.0 ** rng.integers(-3, 12, racks * k)
    node_rack = np.repeat(np.arange(racks), k)

    def reversed_columns(self, w, nr, n, kk):
        acc = np.zeros(n)
        for j in reversed(range(kk)):
            acc += w.reshape(-1, kk)[:, j]
        return acc
    monkeypatch.setattr(Sampler, "_rack_sum", reversed_columns)
    assert not _same(_sum_sampler(True)._rack_sum(v, node_rack, racks, k),
                     np.bincount(node_rack, weights=v, minlength=racks))
