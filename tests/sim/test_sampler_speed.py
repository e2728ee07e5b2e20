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
from twin.sim.engine import Engine
from twin.sim.failures import DAY, Failures
from twin.sim.sampler import Sampler

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
        heat, term = real(*a)
        return np.nextafter(heat, np.inf), term
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
