"""The sampler's and the cluster state's per-sample shortcuts of the eighth speed pass
(issues 19/14) give the numbers of the paths they replace, bit for bit:

- each rack's hottest GPU taken as the maximum over the columns of the (racks, k) view when
  every rack holds the same k nodes; the reference is ``np.maximum.reduceat``;
- the throttled-node count taken as 0 while the state's clocks are the coupling's full
  clocks (set from them and unwritten since); the reference counts the clocks below 1;
- a free node's phase (IDLE or BURN_IN by its rack's burn-in) kept per change of a rack;
  the reference evaluates it at every refresh of ``node_phase``;
- node power at full clock through ``node_power_plan`` (the law prepared once for fixed
  figures); the reference is ``node_power_w`` called each time.

Each comparison is shown to fail when the shortcut is deliberately broken.
"""

from pathlib import Path

import numpy as np
import pytest

from twin import power
from twin.power import node as node_mod
from twin.sim import sampler as sampler_mod
from twin.sim import state as state_mod
from twin.sim.sampler import RACK_MAX_COLUMNS, Sampler
from twin.sim.state import ClusterState

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
#: Blue Vela's ramp (racks powered on, burning in) and enough failures to throttle nothing
#: but change the masks often
SHORT = ["simulation.duration_days=12", "failures.rate_scale=30"]


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _sampler(columns: bool) -> Sampler:
    s = Sampler.__new__(Sampler)        # _rack_max reads nothing of the engine
    s.rack_max_columns = columns
    return s


def _values(rng, n: int) -> np.ndarray:
    v = rng.uniform(-40.0, 120.0, n)
    pick = rng.random(n)
    v[pick < 0.05] = np.nan
    v[(pick >= 0.05) & (pick < 0.08)] = np.inf
    v[(pick >= 0.08) & (pick < 0.11)] = -np.inf
    v[(pick >= 0.11) & (pick < 0.14)] = np.round(v[(pick >= 0.11) & (pick < 0.14)])   # ties
    return v


@pytest.mark.parametrize("k", range(1, RACK_MAX_COLUMNS + 1))
def test_rack_max_by_columns_equals_reduceat(k):
    rng = np.random.default_rng(k)
    fast, ref = _sampler(True), _sampler(False)
    for racks in (1, 2, 7, 128, 301):
        v = _values(rng, racks * k)
        first = np.arange(racks) * k
        got = fast._rack_max(v, first, k)
        assert _same(got, ref._rack_max(v, first, k))
        assert _same(got, np.maximum.reduceat(v, first))


def test_rack_max_falls_back_beyond_the_columns_and_for_mixed_racks():
    """More nodes per rack than RACK_MAX_COLUMNS, or k = 0 (racks of different sizes):
    ``reduceat``, which also handles racks of different sizes."""
    rng = np.random.default_rng(3)
    k = RACK_MAX_COLUMNS + 1
    v = _values(rng, 10 * k)
    assert _same(_sampler(True)._rack_max(v, np.arange(10) * k, k), np.maximum.reduceat(v, np.arange(10) * k))
    first = np.array([0, 3, 4, 9])
    assert _same(_sampler(True)._rack_max(v[:12], first, 0), np.maximum.reduceat(v[:12], first))


def test_a_column_left_out_is_caught(monkeypatch):
    v = _values(np.random.default_rng(5), 64 * 4)
    first = np.arange(64) * 4
    monkeypatch.setattr(Sampler, "_rack_max", lambda self, x, f, k: x.reshape(-1, k)[:, :k - 1].max(axis=1))
    assert not _same(_sampler(True)._rack_max(v, first, 4), np.maximum.reduceat(v, first))


def _run(overrides, patch=None):
    from test_sampler_speed import _patched_run
    return _patched_run(BV, overrides, patch)


@pytest.fixture(scope="module")
def reference():
    """Blue Vela's first days with the column maxima off (reduceat) and the throttled count
    taken from the clocks at every change of the masks."""
    def off(mp):
        init = Sampler.__init__

        def init_off(self, engine):
            init(self, engine)
            self.rack_max_columns = False
            self.full_clock_scalar = False      # (also the count's shortcut)
        mp.setattr(Sampler, "__init__", init_off)
    return _run(SHORT, off)


def test_run_with_the_shortcuts_equals_the_reference(reference, monkeypatch):
    from test_sampler_speed import _differ
    ks = []
    static = Sampler._static

    def spy(self):
        st = static(self)
        ks.append(st[3])
        return st
    monkeypatch.setattr(Sampler, "_static", spy)
    res = _run(SHORT)
    assert ks and ks[0] == 2                    # Blue Vela: two nodes a rack, the columns ran
    assert _differ(res, reference) == []


def test_hottest_gpu_of_the_wrong_node_is_caught(reference):
    """Each rack's first node only (a column left out) moves the recorded GPU maxima."""
    from test_sampler_speed import _differ

    def first_only(mp):
        mp.setattr(Sampler, "_rack_max", lambda self, x, first, k: x[first])
    assert "rack_gpu_temp_max_c" in _differ(_run(SHORT, first_only), reference)


def test_throttled_count_zero_under_throttled_clocks_is_caught():
    """The count is 0 only while the clocks are the full clocks the sampler set: taken as 0
    whatever the clocks are, the per-sample check of a throttling hall fails."""
    from test_sampler_speed import test_throttled_counts_equal_a_fresh_evaluation

    mp = pytest.MonkeyPatch()
    throttled = Sampler._throttled

    def always_full(self, up):
        self._full_ver = self.state.version("node_clock")
        return throttled(self, up)
    mp.setattr(Sampler, "_throttled", always_full)
    try:
        with pytest.raises(AssertionError):
            test_throttled_counts_equal_a_fresh_evaluation()
    finally:
        mp.undo()


def test_free_phase_follows_the_racks():
    """``node_phase`` after any mix of writes (racks burned in, powered, tripped; nodes
    failed, taken by jobs) equals its formula (``tests/sim/test_state_speed.py``)."""
    from test_state_speed import _masks_follow
    for seed in range(3):
        _masks_follow(seed)


def test_a_stale_free_phase_is_caught(monkeypatch):
    """A free node's phase kept past a rack's burn-in (the first value held for good) leaves
    the burned-in racks' free nodes in BURN_IN: the comparison with the formula fails."""
    from test_state_speed import _masks_follow
    real = ClusterState._node_free_phase.fget
    held = {}

    def stale(self):
        return held.setdefault(id(self), (self, real(self)))[1]
    monkeypatch.setattr(ClusterState, "_node_free_phase", property(stale))
    with pytest.raises(AssertionError):
        for seed in range(3):
            _masks_follow(seed)


def test_no_write_index_is_shared_and_read_only():
    """The "nothing written since" answer of the write log is one read-only empty index."""
    st = ClusterState(node_rack=np.repeat(np.arange(4), 2), n_feeds=1, n_sus=1, psu_capacity_w=6000.0)
    since = st.write_count()
    st.rack_inlet_c = np.full(4, 25.0)
    idx = st._written(since, state_mod._RACK_ON_DEPS, ("node_job",))
    assert idx is state_mod._NO_NODES and idx.size == 0 and not idx.flags.writeable


#: an 8 x H100 SXM node (catalog figures of the XE9680 class, issue 3)
NODE = dict(gpu_count=8, gpu_tdp_w=700.0, gpu_idle_w=70.0, host_idle_w=1100.0, host_active_w=1900.0,
            fan_max_w=1600.0, node_max_w=10200.0)


def test_node_power_plan_equals_node_power_w():
    """Random phases and inlets, caps, PSU capacities (60 kW: idle nodes below the PSU
    curve's first point, its no-load branch) and fan settings: bit for bit."""
    rng = np.random.default_rng(23)
    for _ in range(300):
        n = int(rng.integers(1, 400))
        phase = rng.integers(0, len(node_mod.PHASE_GPU_LOAD_FRACTION), n).astype(np.int8)
        inlet = rng.uniform(5.0, 70.0, n)
        cap = float(rng.choice([700.0, 500.0, 250.0, 60.0, 900.0]))
        kw = dict(NODE, psu_capacity_w=[16800.0, 8400.0, 60000.0, None][rng.integers(4)])
        if rng.random() < 0.3:
            kw.update(fan_min_speed_fraction=float(rng.uniform(0.1, 0.6)), fan_control_temp_c=float(rng.uniform(50, 80)))
        plan = node_mod.node_power_plan(cap, **kw)
        assert _same(plan(phase, inlet), power.node_power_w(phase, cap, inlet, clock_fraction=1.0, **kw))


def test_node_power_plan_declines_per_node_figures():
    assert node_mod.node_power_plan(700.0, **dict(NODE, gpu_tdp_w=np.full(4, 700.0))) is None
    assert node_mod.node_power_plan(700.0, **NODE, psu_capacity_w=np.full(4, 16800.0)) is None
    assert node_mod.node_power_plan(700.0, **NODE, psu_capacity_w=0.0) is None
    assert node_mod.node_power_plan(np.full(4, 700.0), **NODE) is None


def test_a_plan_off_by_one_ulp_is_caught():
    phase = np.full(50, 2, np.int8)
    inlet = np.linspace(15.0, 35.0, 50)
    plan = node_mod.node_power_plan(700.0, **NODE)
    ref = power.node_power_w(phase, 700.0, inlet, **NODE)
    assert _same(plan(phase, inlet), ref)
    assert not _same(np.nextafter(plan(phase, inlet), np.inf), ref)


@pytest.fixture(scope="module")
def unplanned():
    """Blue Vela's first days with node power called through node_power_w each time."""
    def off(mp):
        init = Sampler.__init__

        def init_off(self, engine):
            init(self, engine)
            self.node_power_planned = False
        mp.setattr(Sampler, "__init__", init_off)
    return _run(SHORT, off)


def test_planned_node_power_in_a_run_equals_node_power_w(unplanned, reference, monkeypatch):
    """The plan ran (Blue Vela at full clock) and the run is the reference's and the
    unplanned one's, bit for bit."""
    from test_sampler_speed import _differ
    calls = []
    real = sampler_mod.node_power_plan

    def counting(*a, **kw):
        plan = real(*a, **kw)

        def counted(*b):
            calls.append(1)
            return plan(*b)
        return counted
    monkeypatch.setattr(sampler_mod, "node_power_plan", counting)
    res = _run(SHORT)
    assert len(calls) > 50
    assert _differ(res, unplanned) == [] and _differ(res, reference) == []


def test_a_broken_plan_in_a_run_is_caught(unplanned):
    """A plan one ulp high moves the run (the rack power, recorded as float32, may hide one
    ulp of a float64; the cooling units' loads do not)."""
    from test_sampler_speed import _differ
    real = sampler_mod.node_power_plan

    def high(*a, **kw):
        plan = real(*a, **kw)
        return lambda *b: np.nextafter(plan(*b), np.inf)

    def patch(mp):
        mp.setattr(sampler_mod, "node_power_plan", high)
    assert _differ(_run(SHORT, patch), unplanned) != []
