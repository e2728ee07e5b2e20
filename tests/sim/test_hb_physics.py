"""The sampler's physics on a few hundred nodes (issue 14, Blue Vela in a few seconds): the
per-node path below ``Sampler.per_rack_from_nodes``, the full-clock GPU temperature as the
inlet plus a rise kept with the phase array, the Arrhenius law prepared once, and node power
through a plan that keeps what a phase array gives (table rows, powered and unloaded nodes).
Each gives the numbers of the path it replaces bit for bit, and each comparison fails when
the shortcut is broken on purpose."""

from __future__ import annotations

import numpy as np
import pytest

# the per-rack tests' Blue Vela case, GPU figures, phase codes and bit-for-bit comparison
from test_sample_speed_rack import BV, GPU_KW, PHASES, SHORT, _same

from twin import power, thermal
from twin.phases import Phase
from twin.power import node as node_mod
from twin.sim import coupling
from twin.sim import sampler as sampler_mod
from twin.sim.sampler import Sampler

#: an 8 x H100 SXM node (catalog figures of the XE9680 class, issue 3)
NODE = dict(gpu_count=8, gpu_tdp_w=700.0, gpu_idle_w=70.0, host_idle_w=1100.0, host_active_w=1900.0,
            fan_max_w=1600.0, node_max_w=10200.0)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a.flags.writeable = False
    return a


def _phases(rng, n: int, off_share: float) -> np.ndarray:
    ph = rng.choice(PHASES, n)
    ph[rng.random(n) < off_share] = int(Phase.OFF)
    return ph


# ------------------------------------------------------------------ GPU temperature rise
def test_inlet_plus_rise_is_the_full_clock_temperature():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        phase = _phases(rng, n, 0.1)
        inlet = rng.uniform(-20.0, 80.0, n)
        inlet[rng.random(n) < 0.03] = np.nan
        cap = float(rng.choice([700.0, 450.0, 60.0, 900.0]))
        kw = dict(gpu_tdp_w=700.0, gpu_idle_w=float(rng.uniform(30, 120)),
                  thermal_resistance_k_per_w=float(rng.uniform(0.01, 0.2)))
        _, ref = coupling.full_clock_gpu_state(inlet, phase, cap, **kw)
        rise = coupling.full_clock_gpu_temp_rise_k(phase, cap, **kw)
        assert _same(inlet + rise, ref)
        assert not _same(inlet + np.nextafter(rise, np.inf), ref)


def _sampler(**flags) -> Sampler:
    s = Sampler.__new__(Sampler)        # the GPU state reads no engine
    s.node_power_per_rack, s._split, s._lead_t = True, None, None
    for k, v in flags.items():
        setattr(s, k, v)
    return s


def _reference_gpu_state(inlet, phase, cap, node_rack, ref_c=40.0, ea_ev=0.7):
    clock, _, t = coupling.equilibrium_gpu_state(inlet[node_rack], phase, cap, **GPU_KW)
    return clock, t, np.asarray(thermal.arrhenius_acceleration(t, ref_c, ea_ev), float)


@pytest.mark.parametrize("hot", [False, True])
def test_gpu_state_per_node_equals_the_coupling(hot):
    """Cool inlets: inlet plus the kept rise and the prepared Arrhenius law; a hot inlet that
    throttles a GPU: the coupling's bisection. Both the coupling's numbers, bit for bit, for
    one phase array at many inlets (the rise kept) and for a new one."""
    rng = np.random.default_rng(5 + hot)
    s = _sampler()
    racks, k = 128, 2
    node_rack = np.repeat(np.arange(racks), k)
    def phases():
        ph = _phases(rng, racks * k, 0.05)
        ph[17 * k:18 * k] = int(Phase.BURN_IN)      # full load where the inlet may be hot
        return _frozen(ph)
    phase = phases()
    for step in range(6):
        inlet = rng.uniform(15.0, 35.0, racks)
        if hot and step % 2:
            inlet[17] = 75.0
        if step == 3:
            phase = phases()
        ref_c, ea = float(rng.uniform(25, 60)), float(rng.uniform(0.3, 1.0))
        got = s._gpu_state(None, inlet, phase, 700.0, node_rack, k, GPU_KW, ref_c, ea)
        want = _reference_gpu_state(inlet, phase, 700.0, node_rack, ref_c, ea)
        assert all(_same(a, b) for a, b in zip(got, want, strict=True))
        assert (got[0] is coupling.full_clock(got[0].shape)) == (not (hot and step % 2))
        off = _sampler(gpu_rise_per_phase=False)._gpu_state(None, inlet, phase, 700.0, node_rack, k, GPU_KW,
                                                            ref_c, ea)
        assert all(_same(a, b) for a, b in zip(off, want, strict=True))


def test_gpu_state_rise_not_kept_for_a_writable_phase_array():
    """A phase array that can be written, written between two evaluations: the rise follows."""
    rng = np.random.default_rng(8)
    s = _sampler()
    node_rack = np.repeat(np.arange(64), 2)
    inlet = rng.uniform(15.0, 30.0, 64)
    phase = np.full(128, int(Phase.IDLE), np.int8)
    s._gpu_state(None, inlet, phase, 700.0, node_rack, 2, GPU_KW, 40.0, 0.7)
    phase[:] = int(Phase.TRAINING)
    _, t, _ = s._gpu_state(None, inlet, phase, 700.0, node_rack, 2, GPU_KW, 40.0, 0.7)
    assert _same(t, _reference_gpu_state(inlet, phase, 700.0, node_rack)[1])


def test_gpu_state_follows_the_cap_and_a_stale_code_table_is_caught():
    """One phase array under caps in turn (the rise of each code renewed with the cap): the
    coupling's temperatures; a code table of another cap kept under this one is caught."""
    rng = np.random.default_rng(12)
    s = _sampler()
    node_rack = np.repeat(np.arange(64), 2)
    inlet = rng.uniform(15.0, 30.0, 64)
    phase = _frozen(_phases(rng, 128, 0.05))
    for cap in (700.0, 450.0, 700.0, 300.0):
        _, t, _ = s._gpu_state(None, inlet, phase, cap, node_rack, 2, GPU_KW, 40.0, 0.7)
        assert _same(t, _reference_gpu_state(inlet, phase, cap, node_rack)[1])
    cap = 500.0
    s._rise_t = (cap, GPU_KW, s._rise_t[2])          # broken: the 300 W table under 500 W
    s._rise_c = None
    _, t, _ = s._gpu_state(None, inlet, phase, cap, node_rack, 2, GPU_KW, 40.0, 0.7)
    assert not _same(t, _reference_gpu_state(inlet, phase, cap, node_rack)[1])


def test_gpu_state_with_a_stale_rise_is_caught():
    """A rise kept past a change of the phase array gives other temperatures."""
    rng = np.random.default_rng(9)
    s = _sampler()
    node_rack = np.repeat(np.arange(64), 2)
    inlet = rng.uniform(15.0, 30.0, 64)
    first = _frozen(np.full(128, int(Phase.IDLE), np.int8))
    s._gpu_state(None, inlet, first, 700.0, node_rack, 2, GPU_KW, 40.0, 0.7)
    second = _frozen(np.full(128, int(Phase.TRAINING), np.int8))
    s._rise_c = (second, 700.0, GPU_KW, s._rise_c[3])   # broken: the idle rise under the new array
    _, t, _ = s._gpu_state(None, inlet, second, 700.0, node_rack, 2, GPU_KW, 40.0, 0.7)
    assert not _same(t, _reference_gpu_state(inlet, second, 700.0, node_rack)[1])


# ------------------------------------------------------------------ Arrhenius
def test_arrhenius_plan_equals_the_law():
    rng = np.random.default_rng(2)
    for n in (1, 2, 3, 7, 8, 16, 17, 31, 64, 127, 128, 255, 256, 1000, 4097):
        for _ in range(20):
            ref_c, ea = float(rng.uniform(0, 80)), float(rng.uniform(0.1, 1.5))
            t = rng.uniform(-60.0, 160.0, n + 3)
            pick = rng.random(n + 3)
            t[pick < 0.03] = np.nan
            t[(pick >= 0.03) & (pick < 0.05)] = np.inf
            t[(pick >= 0.05) & (pick < 0.06)] = -273.15
            for v in (t[:n], t[3:]):            # aligned and not
                assert _same(coupling.arrhenius_plan(ref_c, ea)(v), thermal.arrhenius_acceleration(v, ref_c, ea))
    assert coupling.arrhenius_plan(np.full(3, 40.0), 0.7) is None
    assert coupling.arrhenius_plan(40.0, np.full(3, 0.7)) is None


def test_an_arrhenius_plan_off_by_one_ulp_is_caught():
    t = np.linspace(20.0, 90.0, 256)
    broken = coupling.arrhenius_plan(40.0, np.nextafter(0.7, 1.0))
    assert not _same(broken(t), thermal.arrhenius_acceleration(t, 40.0, 0.7))


# ------------------------------------------------------------------ node power rows
def _node_case(rng, n: int):
    phase = _phases(rng, n, float(rng.choice([0.0, 0.0, 0.1, 1.0])))
    inlet = rng.uniform(5.0, 70.0, n)
    if rng.random() < 0.2:
        inlet[rng.integers(n)] = np.nan
    cap = float(rng.choice([700.0, 500.0, 250.0, 60.0, 900.0]))
    kw = dict(NODE, psu_capacity_w=[16800.0, 8400.0, 60000.0, None][rng.integers(4)])
    if rng.random() < 0.3:
        kw.update(fan_min_speed_fraction=float(rng.uniform(0.1, 0.6)), fan_control_temp_c=float(rng.uniform(50, 80)))
    if rng.random() < 0.1:
        kw.update(host_idle_w=0.0)                  # idle nodes of no heat: loaded by their fans only
    return phase, inlet, cap, kw


def test_plan_rows_equal_node_power_w(monkeypatch):
    """Random phases (OFF nodes often), inlets (NaN sometimes), caps and figures, PSU
    capacities (60 kW: idle nodes below the curve's first point): one read-only phase array at
    several inlets (its rows kept), a writable one (not kept); bit for bit the law, and the
    plan as first written."""
    rng = np.random.default_rng(23)
    for _ in range(300):
        n = int(rng.integers(1, 400))
        phase, inlet, cap, kw = _node_case(rng, n)
        frozen = _frozen(phase)
        plan = node_mod.node_power_plan(cap, **kw)
        for ph in (frozen, phase, frozen):
            for _ in range(2):
                x = inlet + rng.uniform(-2.0, 2.0, n)
                ref = power.node_power_w(ph, cap, x, clock_fraction=1.0, **kw)
                assert _same(plan(ph, x), ref)
                monkeypatch.setattr(node_mod, "node_power_plan_rows", False)
                assert _same(plan(ph, x), ref)
                monkeypatch.setattr(node_mod, "node_power_plan_rows", True)
        phase[:] = rng.choice(PHASES, n)            # written in place: not kept, re-read
        assert _same(plan(phase, inlet), power.node_power_w(phase, cap, inlet, clock_fraction=1.0, **kw))


def test_plan_rows_kept_for_a_writable_array_are_caught(monkeypatch):
    """Rows kept with an array that is then written give the old phases' power: the plan
    keeps them only for arrays nothing can write."""
    monkeypatch.setattr(node_mod, "_frozen", lambda a: True)
    plan = node_mod.node_power_plan(700.0, **NODE)
    phase = np.full(64, int(Phase.IDLE), np.int8)
    inlet = np.linspace(15.0, 35.0, 64)
    plan(phase, inlet)
    phase[:] = int(Phase.TRAINING)
    assert not _same(plan(phase, inlet), power.node_power_w(phase, 700.0, inlet, **NODE))


def test_a_wrong_unloaded_mask_is_caught():
    """The known-off step trusts its mask: a loaded node named unloaded draws nothing, and an
    unloaded NaN load left out of it takes the reference's branch (the same numbers)."""
    dc = np.linspace(2000.0, 9000.0, 64)
    dc[::5] = 0.0
    off = dc == 0.0
    ref = node_mod._psu_ac_w(dc, 16800.0, 10200.0)
    assert _same(node_mod._psu_ac_known_off_w(dc, 16800.0, 10200.0, off), ref)
    wrong = off.copy()
    wrong[1] = True                                 # broken: a loaded node named unloaded
    assert not _same(node_mod._psu_ac_known_off_w(dc, 16800.0, 10200.0, wrong), ref)
    dc[3] = np.nan
    assert _same(node_mod._psu_ac_known_off_w(dc, 16800.0, 10200.0, off), node_mod._psu_ac_w(dc, 16800.0, 10200.0))


def test_psu_known_off_equals_the_reference():
    """The known-off PSU step against ``_psu_ac_w`` on loads with zeros, NaN, negatives, loads
    below the curve's first point and above the node's maximum."""
    rng = np.random.default_rng(4)
    for _ in range(500):
        n = int(rng.integers(1, 200))
        dc = rng.uniform(0.0, 12000.0, n)
        off = rng.random(n) < 0.2
        dc[off] = rng.choice([0.0, -0.0, np.nan, -5.0], int(off.sum()))
        pick = np.where(off, 1.0, rng.random(n))     # (the unloaded nodes stay so)
        dc[pick < 0.02] = np.nan                    # a NaN load not known to be off
        dc[(pick >= 0.02) & (pick < 0.04)] = 500.0  # below the curve's first point at 16.8 kW
        cap = float(rng.choice([16800.0, 8400.0, 60000.0]))
        ref = node_mod._psu_ac_w(dc.copy(), cap, 10200.0)
        got = node_mod._psu_ac_known_off_w(dc.copy(), cap, 10200.0, off if off.any() else None)
        assert _same(got, ref)


# ------------------------------------------------------------------ in a run
def _run(patch=None):
    from test_sampler_speed import _patched_run
    return _patched_run(BV, SHORT, patch)


@pytest.fixture(scope="module")
def reference():
    """Blue Vela's first days with the per-rack path (as before issue 14's pass), the
    coupling's GPU state and the Arrhenius law each time, and the plan as first written."""
    def off(mp):
        mp.setattr(Sampler, "per_rack_from_nodes", 0)
        mp.setattr(Sampler, "gpu_rise_per_phase", False)
        mp.setattr(node_mod, "node_power_plan_rows", False)
        mp.setattr(Sampler, "row_accumulate_from", sampler_mod.RACK_MAX_COLUMNS + 1)
        mp.setattr(Sampler, "all_on_kept", False)
    return _run(off)


def test_run_per_node_equals_the_reference(reference, monkeypatch):
    from test_sampler_speed import _differ
    calls = []
    real = Sampler._rise

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(Sampler, "_rise", counted)
    assert sampler_mod.PER_RACK_FROM_NODES > 256            # Blue Vela's 256 nodes per node
    res = _run()
    assert len(calls) > 50                                  # the per-node shortcut ran
    assert _differ(res, reference) == []


def test_a_broken_arrhenius_plan_in_a_run_is_caught(reference):
    from test_sampler_speed import _differ
    real = coupling.arrhenius_plan

    def high(ref_c, ea_ev):             # broken: the reference 10 K lower (failures move)
        return real(ref_c - 10.0, ea_ev)

    def patch(mp):
        mp.setattr(coupling, "arrhenius_plan", high)
    assert _differ(_run(patch), reference) != []


def test_a_broken_rack_split_in_a_per_rack_run_is_caught(reference):
    """The per-rack path (every size, ``per_rack_from_nodes = 0``) still runs in the reference
    above; racks taken as uniform there (the nodes whose phase differs not re-evaluated) move
    the run away from the per-node one."""
    from test_sampler_speed import _differ
    real = Sampler._rack_split

    def uniform(self, phase, k):
        sp = real(self, phase, k)
        return None if sp is None else (sp[0], sp[1][:0])

    def patch(mp):
        mp.setattr(Sampler, "per_rack_from_nodes", 0)
        mp.setattr(Sampler, "_rack_split", uniform)
    assert _differ(_run(patch), _run()) != []


def test_a_stale_all_racks_on_in_a_run_is_caught(reference):
    """Racks taken as all on during the ramp (some are off): their hottest GPU is not NaN."""
    from test_sampler_speed import _differ

    def patch(mp):
        mp.setattr(Sampler, "_all_on", lambda self, rack_on: True)
    assert _differ(_run(patch), reference) != []


# ------------------------------------------------------------------ row sums
def _rows(rng, racks: int, k: int) -> np.ndarray:
    v = rng.uniform(0.0, 1.0, racks * k) * 10.0 ** rng.integers(-3, 12, racks * k)
    pick = rng.random(racks * k)
    v[pick < 0.04] = -0.0
    v[(pick >= 0.04) & (pick < 0.06)] = np.nan
    v[(pick >= 0.06) & (pick < 0.08)] = np.inf
    v[(pick >= 0.08) & (pick < 0.10)] = -np.inf
    v[(pick >= 0.10) & (pick < 0.30)] *= -1.0
    return v


@pytest.mark.parametrize("k", range(1, sampler_mod.RACK_MAX_COLUMNS + 1))
def test_row_sums_equal_bincount(k):
    """Racks of k nodes (RPPs of k racks) summed by one running sum along each row: the
    additions of bincount in its order, bit for bit (NaN, infinities, signed zeros), for
    several shapes in turn (the buffers kept per shape)."""
    rng = np.random.default_rng(40 + k)
    s = _sampler(rack_sum_columns=True, row_accumulate_from=1)
    for racks in (1, 2, 16, 128, 301, 16, 1):
        for _ in range(10):
            v = _rows(rng, racks, k)
            node_rack = np.repeat(np.arange(racks), k)
            got = s._rack_sum(v, node_rack, racks, k)
            assert _same(got, np.bincount(node_rack, weights=v, minlength=racks))
            assert got.flags.c_contiguous and got.base is None


def test_row_sums_without_the_zero_column_are_caught():
    """Summing from the first value (no 0.0 first: -0.0 stays -0.0) differs from bincount."""
    v = np.array([-0.0, -0.0, -0.0, -0.0, 1.0, 2.0, 3.0, 4.0])
    node_rack = np.repeat(np.arange(2), 4)
    broken = np.add.accumulate(v.reshape(2, 4), axis=1)[:, -1].copy()
    ref = np.bincount(node_rack, weights=v, minlength=2)
    assert _same(_sampler(rack_sum_columns=True, row_accumulate_from=1)._rack_sum(v, node_rack, 2, 4), ref)
    assert not _same(broken, ref)
