"""The sampler's cheaper per-sample work (issues 19/14) gives the numbers of the direct
evaluation, bit for bit:

- node power and GPU power read per-phase tables (the law evaluated once per phase code)
  when every clock is full and the hardware figures are scalars; the reference is the same
  law evaluated node by node (per-node figure arrays of the same values take that path);
- the PSU efficiency skips its no-load branch when no load is below the curve's first point;
- the GPU coupling skips the clock law and its bisection when the hottest GPU is below the
  slowdown threshold; the reference is the law applied to every node (per-node thresholds);
- the failure rate scale finds young racks from the newest on-time; the reference is the
  ``any(now - on_since[rack_on] < burn_in)`` it replaced;
- the sampler's recorded counts and masks, kept while their inputs are the same objects,
  equal a fresh evaluation at every sample.

Each comparison is shown to fail when the fast path is deliberately broken.
"""

from pathlib import Path

import numpy as np
import pytest

import twin
from twin import power, thermal
from twin.power import node as node_mod
from twin.sim import coupling
from twin.sim import sampler as sampler_mod
from twin.sim.engine import Engine
from twin.sim.failures import DAY, Failures
from twin.sim.sampler import Sampler
from twin.sim.state import ClusterState

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
#: an 8 x H100 SXM node (catalog figures of the XE9680 class, issue 3)
NODE = dict(gpu_count=8, gpu_tdp_w=700.0, gpu_idle_w=70.0, host_idle_w=1100.0, host_active_w=1900.0,
            fan_max_w=1600.0, node_max_w=10200.0)
#: GPU figures of the coupling (H100 thresholds, calibration.yaml)
GPU = dict(gpu_tdp_w=700.0, gpu_idle_w=70.0, thermal_resistance_k_per_w=0.075, slowdown_c=87.0,
           hw_slowdown_c=89.0, shutdown_c=92.0)


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _per_node(kw: dict, n: int, names) -> dict:
    """The figures ``names`` as (n,) arrays of the same values: the law node by node."""
    return {k: (np.full(n, float(v)) if k in names else v) for k, v in kw.items()}


def _cases(seed: int = 3, count: int = 200):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 300))
        phase = rng.integers(0, len(node_mod.PHASE_GPU_LOAD_FRACTION), n).astype(np.int8)
        inlet = rng.uniform(10.0, 45.0, n)
        cap = float(rng.choice([700.0, 500.0, 250.0, 60.0, 900.0]))
        clock = [1.0, np.ones(n), np.where(rng.random(n) < 0.3, rng.uniform(0.4, 1.0, n), 1.0)][rng.integers(3)]
        psu = [16800.0, 8400.0, None][rng.integers(3)]
        yield phase, inlet, cap, clock, psu


def test_node_power_tables_equal_the_law_node_by_node():
    fast = 0
    for phase, inlet, cap, clock, psu in _cases():
        kw = dict(NODE, psu_capacity_w=psu)
        got = power.node_power_w(phase, cap, inlet, clock_fraction=clock, **kw)
        # per-node figures (and PSU capacities) of the same values: the law node by node
        ref = power.node_power_w(phase, cap, inlet, clock_fraction=clock, **_per_node(
            kw, len(phase), ("gpu_tdp_w", "host_idle_w") + (("psu_capacity_w",) if psu else ())))
        assert _same(got, ref)
        gpu = power.gpu_power_w(phase, cap, gpu_tdp_w=700.0, gpu_idle_w=70.0, clock_fraction=clock)
        gpu_ref = power.gpu_power_w(phase, cap, gpu_tdp_w=np.full(len(phase), 700.0), gpu_idle_w=70.0,
                                    clock_fraction=clock)
        assert _same(gpu, gpu_ref)
        fast += node_mod._full_clock_tables(
            phase, cap, clock, 8, 700.0, 70.0, 1100.0, 1900.0, node_mod.FAN_CONTROL_TEMP_C,
            node_mod.FAN_DESIGN_INLET_C) is not None
    assert 0 < fast < 200           # both paths ran


def test_a_broken_table_is_caught(monkeypatch):
    phase = np.arange(len(node_mod.PHASE_GPU_LOAD_FRACTION), dtype=np.int8)
    ref = power.node_power_w(phase, 700.0, 25.0, **_per_node(NODE, len(phase), ("gpu_tdp_w",)))
    node_mod._node_phase_tables.cache_clear()
    real = node_mod._node_phase_tables

    def off_by_one_ulp(*a):
        table = real(*a).copy()
        table[0] = np.nextafter(table[0], np.inf)       # the heat row
        return table
    monkeypatch.setattr(node_mod, "_node_phase_tables", off_by_one_ulp)
    assert not _same(power.node_power_w(phase, 700.0, 25.0, **NODE), ref)


def test_psu_efficiency_fast_branch_equals_the_curve():
    x = np.random.default_rng(5).uniform(0.1, 1.4, 500)
    with_low = power.psu_efficiency(np.append(x, 0.05))     # takes the no-load branch
    assert _same(power.psu_efficiency(x), with_low[:-1])
    # the same numbers as the interpolation of the 80 PLUS Titanium points above 10 %
    assert _same(power.psu_efficiency(x), np.interp(x, node_mod.PSU_TITANIUM_LOAD_FRACTION,
                                                      node_mod.PSU_TITANIUM_EFFICIENCY))


@pytest.mark.parametrize("inlet_range", [(15.0, 30.0), (30.0, 50.0), (40.0, 60.0)])
def test_coupling_shortcut_equals_the_law_per_node(inlet_range):
    rng = np.random.default_rng(7)
    hot_runs = 0
    for _ in range(40):
        n = int(rng.integers(1, 200))
        inlet = rng.uniform(*inlet_range, n)
        phase = rng.integers(0, len(node_mod.PHASE_GPU_LOAD_FRACTION), n).astype(np.int8)
        got = coupling.equilibrium_gpu_state(inlet, phase, 700.0, **GPU)
        ref = coupling.equilibrium_gpu_state(inlet, phase, 700.0, **_per_node(GPU, n, ("shutdown_c",)))
        assert all(_same(a, b) for a, b in zip(got, ref, strict=True))
        # the shortcut holds only where the law gives every GPU its full clock
        g = thermal.gpu_clock_fraction(got[2], GPU["slowdown_c"], GPU["hw_slowdown_c"], GPU["shutdown_c"])
        hot_runs += bool((g < 1.0).any())
    assert hot_runs > 0 or inlet_range[1] <= 30.0


def test_shortcut_threshold_is_the_laws():
    """Just below the slowdown threshold the law gives the full clock; at it, too (the ramp
    starts at 1); the shortcut's strict '<' never claims more than the law."""
    s = GPU["slowdown_c"]
    args = (GPU["slowdown_c"], GPU["hw_slowdown_c"], GPU["shutdown_c"])
    assert thermal.gpu_clock_fraction(np.nextafter(s, -np.inf), *args) == 1.0
    assert thermal.gpu_clock_fraction(s, *args) == 1.0
    assert thermal.gpu_clock_fraction(np.nextafter(s, np.inf), *args) < 1.0


def _old_rate_scale(f: Failures) -> np.ndarray:
    """The rate scale as it was computed before the newest on-time (b44c881)."""
    p, fs, st = f.plant, f.s.failures, f.state
    up = st.node_up
    burn_s = f.s.ramp.burn_in_days * DAY
    burning = burn_s > 0 and fs.burn_in_expected_failures_per_node > 0
    if burning and not bool(np.any(f.env.now - st.rack_on_since[st.rack_on] < burn_s)):
        burning = False
    scale = fs.rate_scale * up.astype(float)
    if burning:
        from twin import reliability
        age_s = f.env.now - st.rack_on_since[p.node_rack]
        young = up & (age_s < burn_s)
        if young.any():
            eta_s = reliability.weibull_scale_s_for_expected_failures(
                fs.burn_in_expected_failures_per_node, burn_s, fs.burn_in_weibull_shape)
            scale = scale * reliability.burn_in_rate_multiplier(
                np.where(young, age_s, burn_s), f.e.dt_s, fs.burn_in_weibull_shape, eta_s,
                f.base_rate_per_node_s, burn_s)
    return scale


def _checked_run(path, overrides):
    """A run with the sampler's and the failures' cached values checked against a fresh
    evaluation at every sample."""
    checks = {"rate_scale": 0, "young": 0, "write": 0, "masks": 0, "throttled": 0}
    e = Engine(twin.load_scenario(path, overrides))
    f, s, st = e.failures, e.sampler, e.state
    real_rate, real_write, real_masks = Failures.rate_scale, Sampler._write, Sampler._masks

    def rate_scale(self):
        got = real_rate(self)
        assert _same(got, _old_rate_scale(self))
        checks["rate_scale"] += 1
        on = st.rack_on
        checks["young"] += bool(np.any(self.env.now - st.rack_on_since[on] < e.s.ramp.burn_in_days * DAY))
        return got

    def write(self, i0, i1, rec, ph, powered, in_service, up):
        thr = real_write(self, i0, i1, rec, ph, powered, in_service, up)
        gpn = self.plant.node_gpus
        assert rec["gpus_powered"][i0] == gpn[powered].sum()
        assert rec["gpus_healthy"][i0] == gpn[in_service].sum()
        assert rec["gpus_busy"][i0] == gpn[st.node_busy].sum()
        assert thr == int((st.node_clock[up] < 1).sum())
        assert rec["throttle_fraction"][i0] == thr / max(int(up.sum()), 1)
        checks["write"] += 1
        checks["throttled"] += thr > 0
        return thr

    def masks(self):
        m = real_masks(self)
        assert all(_same(a, b) for a, b in zip(m, (st.node_up, st.node_powered, st.node_in_service), strict=True))
        checks["masks"] += 1
        return m

    mp = pytest.MonkeyPatch()
    mp.setattr(Failures, "rate_scale", rate_scale)
    mp.setattr(Sampler, "_write", write)
    mp.setattr(Sampler, "_masks", masks)
    try:
        res = e.run()
    finally:
        mp.undo()
    return res, e, checks, f, s


@pytest.fixture(scope="module")
def ramp_run():
    """Blue Vela's first 40 days (its ramp powers racks on, they burn in), hourly samples."""
    return _checked_run(BV, ["simulation.duration_days=40"])


def test_throttled_counts_equal_a_fresh_evaluation():
    """Starved cooling units and servers without inlet protection: GPUs throttle, so the
    clocks change under the same masks (tests/sim/test_coupling.py's hot hall)."""
    starved = [f"site.halls.0.cooling_units.{u}.{k}" for u in (0, 1) for k in ("supply_temp_c=32", "airflow_m3_s=0.3")]
    _, e, checks, *_ = _checked_run(ROOT / "scenarios" / "lenovo_small.yaml", [
        "simulation.duration_days=2", "site.cooling_system.server_inlet_shutdown_c=1000", *starved])
    assert checks["throttled"] > 0 and checks["write"] > e.n_samples / 2


def test_cached_rate_scale_counts_and_masks_equal_a_fresh_evaluation(ramp_run):
    res, e, checks, *_ = ramp_run
    n = e.n_samples
    assert checks["rate_scale"] == n               # one draw per sample
    assert 0 < checks["young"] < n                 # racks burn in, then none is young
    assert checks["write"] > n / 2 and checks["masks"] > n / 2


def test_a_stale_newest_on_time_is_caught(ramp_run):
    """Keeping the newest on-time past a write to the on-times changes the rate scale."""
    *_, f, s = ramp_run
    st = f.state
    on = st.rack_on
    assert on.any()
    f._newest = None
    f.env._now = float(st.rack_on_since[on].max()) + 1.0       # just after the last power-on
    fresh = f.rate_scale()
    f._newest = (st.rack_on, st.version("rack_on_since"), -np.inf)  # stale: 'none is young'
    f._scale = None
    assert not _same(f.rate_scale(), fresh)


#: failures often enough that many draws hit (and the failure process draws between samples)
FAILING = ["simulation.duration_days=15", "failures.rate_scale=30"]


def _failing_run():
    res = twin.simulate(twin.load_scenario(BV, FAILING))
    return res, None


def _differ(a, b) -> list[str]:
    out = [v for v in a.dataset.data_vars if not np.array_equal(
        a.dataset[v].values, b.dataset[v].values, equal_nan=a.dataset[v].dtype.kind == "f")]
    return out + ([] if a.events.equals(b.events) else ["events"])


@pytest.fixture(scope="module")
def one_at_a_time():
    """The per-sample waiting times drawn one call at a time, as before the blocks."""
    mp = pytest.MonkeyPatch()
    mp.setattr(Failures, "_waiting_s", lambda self, rng, scale_s: float(rng.exponential(scale_s)))
    mp.setattr(Failures, "_rewind", lambda self, rng: None)
    try:
        return _failing_run()[0]
    finally:
        mp.undo()


def test_block_draws_equal_one_at_a_time(one_at_a_time):
    res, _ = _failing_run()
    assert (res.events.kind == "failure").sum() > 20
    assert _differ(res, one_at_a_time) == []


def test_a_block_not_put_back_is_caught(one_at_a_time, monkeypatch):
    def drop(self, rng):        # forgets to put the stream back: later draws move
        self._exp_block, self._exp_next, self._exp_state = np.empty(0), 0, None
    monkeypatch.setattr(Failures, "_rewind", drop)
    assert "events" in _differ(_failing_run()[0], one_at_a_time)


def test_standard_exponential_blocks_are_the_single_draws():
    """What the blocks rely on: numpy's block of standard exponentials times s gives the
    numbers of one ``exponential(s)`` call each, and leaves the stream where they would."""
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    scales = np.random.default_rng(1).uniform(1e-3, 1e6, 5000)
    single = [float(a.exponential(s)) for s in scales]
    block = b.standard_exponential(5000)
    assert single == [float(s * x) for s, x in zip(scales, block, strict=True)]
    assert np.array_equal(a.random(3), b.random(3))


# --- shortcuts of the fourth speed pass (issue 19): each against the path it replaces --------

LENOVO = ROOT / "scenarios" / "lenovo_small.yaml"
#: starved cooling units and servers without inlet protection: GPUs throttle and recover
HOT = ["simulation.duration_days=2", "site.cooling_system.server_inlet_shutdown_c=1000",
       *[f"site.halls.0.cooling_units.{u}.{k}" for u in (0, 1) for k in ("supply_temp_c=32", "airflow_m3_s=0.3")]]


def _patched_run(path, overrides, patch=None):
    mp = pytest.MonkeyPatch()
    try:
        if patch is not None:
            patch(mp)
        return twin.simulate(twin.load_scenario(path, overrides))
    finally:
        mp.undo()


def _shortcuts_off(mp) -> None:
    """The reference: node power gets the per-node clock array; the coupling's full clocks are
    a new array each time (no identity, so the clocks are compared whole and searched for a
    shutdown); the racks' network power is evaluated at every evaluation."""
    mp.setattr(coupling, "full_clock", lambda shape: np.ones(shape))
    init, physics = Sampler.__init__, Sampler.physics

    def init_off(self, engine):
        init(self, engine)
        self.full_clock_scalar = False

    def physics_off(self):
        self._net = None
        return physics(self)
    mp.setattr(Sampler, "__init__", init_off)
    mp.setattr(Sampler, "physics", physics_off)


@pytest.fixture(scope="module")
def hot_reference():
    return _patched_run(LENOVO, HOT, _shortcuts_off)


@pytest.mark.parametrize("hot", [True, False])
def test_shortcuts_equal_the_reference(hot, hot_reference, monkeypatch):
    """In the throttling hall (clocks throttled, then full once: the comparison is made) and
    in the same hall with its cooling (full clocks throughout: the comparison is skipped)."""
    clocks, skipped = [], []
    node_power, changed = power.node_power_w, Sampler._clocks_changed

    def counting_power(*a, clock_fraction=1.0, **kw):
        clocks.append(np.ndim(clock_fraction))
        return node_power(*a, clock_fraction=clock_fraction, **kw)

    def counting_plan(*a, **kw):        # the prepared law at full clock: one clock for all
        plan = node_mod.node_power_plan(*a, **kw)

        def counted(*b):
            clocks.append(0)
            return plan(*b)
        return None if plan is None else counted

    def counting_changed(self, clock):
        skipped.append(clock is coupling.full_clock(clock.shape) and self._full_ver == self.state.version("node_clock"))
        return changed(self, clock)
    monkeypatch.setattr(power, "node_power_w", counting_power)
    monkeypatch.setattr(sampler_mod, "node_power_plan", counting_plan)
    monkeypatch.setattr(Sampler, "_clocks_changed", counting_changed)
    res = _patched_run(LENOVO, HOT if hot else HOT[:1])
    thr = res.dataset["throttle_fraction"].values
    if hot:
        assert (thr > 0).any() and (thr == 0).any()     # GPUs throttle, and run at full clock
        assert 0 in clocks and 1 in clocks              # one clock for all, and per node
        assert _differ(res, hot_reference) == []
    else:
        assert (thr == 0).all() and any(skipped)
        assert _differ(res, _patched_run(LENOVO, HOT[:1], _shortcuts_off)) == []


def test_full_clock_for_throttled_nodes_is_caught(hot_reference):
    def always_full(mp):
        mp.setattr(Sampler, "_clock_fraction", lambda self: 1.0)
    assert "rack_power_w" in _differ(_patched_run(LENOVO, HOT, always_full), hot_reference)


def test_a_clock_comparison_skipped_after_throttling_is_caught(hot_reference):
    """Skipping the comparison whenever the evaluation gives full clocks (the state's clocks
    may still hold the throttled values) leaves them throttled: the run differs."""
    def skip(mp):
        changed = Sampler._clocks_changed
        mp.setattr(Sampler, "_clocks_changed", lambda self, clock: (
            clock is not coupling.full_clock(clock.shape) and changed(self, clock)))
    assert _differ(_patched_run(LENOVO, HOT, skip), hot_reference) != []


def test_stale_network_power_is_caught(ramp_run):
    """The racks' network power kept past a change of the racks on (Blue Vela's ramp powers
    racks on) moves the rack power."""
    def stale(mp):
        physics = Sampler.physics

        def physics_stale(self):
            if self._net is not None:
                self._net = (self.state.rack_on, self._net[1])
            return physics(self)
        mp.setattr(Sampler, "physics", physics_stale)
    res = _patched_run(BV, ["simulation.duration_days=40"], stale)
    assert "rack_power_w" in _differ(res, ramp_run[0])


def test_masks_kept_past_a_mask_input_write_are_caught(monkeypatch):
    """The sampler keeps its masks while the count of writes to their inputs stands; a count
    that never moves keeps them past failures and repairs: the per-sample check fails."""
    monkeypatch.setattr(ClusterState, "mask_version", lambda self: 0)
    with pytest.raises(AssertionError):
        _checked_run(BV, FAILING)


@pytest.mark.parametrize("psu", [60000.0, 16800.0])
def test_node_power_psu_stage_equals_the_law_node_by_node(psu):
    """Light PSU loads (60 kW of capacity: idle nodes below the curve's 10 % point, the
    no-load branch) and ordinary ones, with one inlet for all and one per node."""
    rng = np.random.default_rng(17)
    for _ in range(50):
        n = int(rng.integers(1, 300))
        phase = rng.integers(0, len(node_mod.PHASE_GPU_LOAD_FRACTION), n).astype(np.int8)
        for inlet in (rng.uniform(10.0, 45.0, n), 27.0):
            kw = dict(NODE, psu_capacity_w=psu)
            got = power.node_power_w(phase, 700.0, inlet, **kw)
            ref = power.node_power_w(phase, 700.0, inlet, **_per_node(kw, n, ("gpu_tdp_w", "psu_capacity_w")))
            assert _same(got, ref)


def test_a_psu_shortcut_off_the_curve_is_caught(monkeypatch):
    phase = np.full(50, 2, np.int8)
    inlet = np.linspace(15.0, 35.0, 50)
    ref = power.node_power_w(phase, 700.0, inlet, **NODE, psu_capacity_w=16800.0)
    monkeypatch.setattr(node_mod, "PSU_TITANIUM_EFFICIENCY", node_mod.PSU_TITANIUM_EFFICIENCY + 1e-9)
    assert not _same(power.node_power_w(phase, 700.0, inlet, **NODE, psu_capacity_w=16800.0), ref)
