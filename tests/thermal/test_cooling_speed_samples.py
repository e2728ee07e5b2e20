"""The per-sample cooling fast paths give the reference results bit for bit (issues 19 and
14): :meth:`RecirculationFamily.model` builds the interpolated model without
``dataclasses.replace`` and keeps each knot's unit constants and the nominal airflow's sum.
The reference is the interpolation written out with ``dataclasses.replace``, as the
method was before."""

from dataclasses import fields, replace

import numpy as np
import pytest

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal.airflow import RecirculationFamily
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K


def _reference(fam: RecirculationFamily, v):
    """The interpolated model as the family built it with ``dataclasses.replace``."""
    v = np.broadcast_to(np.asarray(v, float), fam.nominal_rack_airflow_m3_s.shape).copy()
    s = float(v.sum() / fam.nominal_rack_airflow_m3_s.sum())
    sc = np.asarray(fam.scales)
    s_c = float(np.clip(s, sc[0], sc[-1]))
    k = int(np.clip(np.searchsorted(sc, s_c) - 1, 0, len(sc) - 2))
    sa, sb = sc[k], sc[k + 1]
    w = (s_c - sa) / (sb - sa)
    a, b = (fam.exact(k), fam.exact(k)) if w <= 0 else (fam.exact(k + 1),) * 2 if w >= 1 else (
        fam.exact(k), fam.exact(k + 1))

    def scaled(xa, xb):
        out = np.multiply(xa, (1 - w) * sa)
        out += np.multiply(xb, w * sb)
        # divided by the clipped scale (helper HOF): beyond the knots the end knot's maps as
        # they are, so the unit heat shares still sum to 1 (before: / s, the same inside them)
        out /= s_c
        return out

    s_mix = (1 - w) * a.supply_mix + w * b.supply_mix
    r0 = (1 - w) * a.return_mix + w * b.return_mix
    rk = scaled(a.return_k_per_w, b.return_k_per_w)
    vol = AIR_VOLUMETRIC_HEAT_J_M3_K * np.where(a.cooling_active, a.cooling_airflow_m3_s, 0.0)
    t_sup = a.cooling_supply_temp_c
    return replace(a, base_inlet_c=s_mix @ t_sup, recirculation_k_per_w=scaled(a.recirculation_k_per_w,
                                                                                b.recirculation_k_per_w),
                   supply_mix=s_mix, return_mix=r0, return_k_per_w=rk,
                   cooling_base_w=np.where(a.cooling_active, vol * (r0 @ t_sup - t_sup), 0.0),
                   cooling_heat_share=vol[:, None] * rk, rack_airflow_m3_s=v, recirculation_csr=None,
                   truncation_k_per_w=0.0)


@pytest.fixture(scope="module")
def family():
    g = row_hall(2, 6, cooling_per_wall=1, cooling_airflow_m3_s=5.0)
    v0 = rack_airflow_m3_s(np.linspace(8e3, 12e3, g.n_racks), 12.0)
    return RecirculationFamily(g, v0, scales=(0.3, 0.5, 0.75, 1.0)), v0


@pytest.mark.parametrize("s_req", [0.2, 0.3, 0.41, 0.5, 0.6180339887, 0.75, 0.9, 1.0, 1.3])
def test_interpolated_model_equals_the_replace_reference(family, s_req):
    """Every field of the model (the interpolated maps, the unit base loads and heat shares
    from the kept knot constants, the airflow) equals the reference's, between knots, on
    knots and beyond both ends, for an array, a list and racks moving unevenly."""
    fam, v0 = family
    for v in (s_req * v0, list(s_req * v0), s_req * v0 * np.linspace(0.9, 1.1, v0.size)):
        m, ref = fam.model(v), _reference(fam, v)
        assert type(m) is type(ref)
        for f in fields(ref):
            x, y = getattr(m, f.name), getattr(ref, f.name)
            if isinstance(y, np.ndarray):
                assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f.name
            else:
                assert x == y or x is y, f.name
        assert m.rack_airflow_m3_s is not v                  # the model holds its own copy
        assert fam.scale_of(v) == float(np.sum(v) / v0.sum())


def test_a_scalar_airflow_is_every_rack_s(family):
    fam, v0 = family
    m = fam.model(float(v0.mean()))
    assert np.array_equal(m.rack_airflow_m3_s, np.full(v0.size, float(v0.mean())))
    assert np.array_equal(m.recirculation_k_per_w, _reference(fam, float(v0.mean())).recirculation_k_per_w)


# ---------------------------------------------------------------- per-sample capped state
def _same_state(a, b):
    """Two CappedSteadyState results equal field by field, arrays by their bytes."""
    for f in fields(b):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(y, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("s_req", [0.35, 0.62, 1.0])
def test_unsaturated_fast_path_equals_the_active_set_iteration(family, s_req, monkeypatch):
    """capped_steady_state's first-pass result (every unit running, none beyond capacity)
    equals the active-set iteration's bit for bit (UNSATURATED_FAST = False, the reference),
    on interpolated models, for light to heavy heat: where units saturate or the hall is
    short it hands over to the iteration, so those cases agree too."""
    from twin.thermal import capacity

    fam, v0 = family
    m = fam.model(s_req * v0)
    rng = np.random.default_rng(7)
    cap_w = float(m.cooling_capacity_w.sum())
    cases = [rng.uniform(0.0, 2.0, v0.size) * f * cap_w / v0.size for f in (0.05, 0.3, 0.7, 0.95, 1.2)]
    one_end = np.where(np.arange(v0.size) < v0.size // 4, 1.0, 0.0)  # heat at one end: its unit saturates
    cases += [np.zeros(v0.size), 0.9 * cap_w * one_end / one_end.sum()]
    kinds = set()
    for heat in cases:
        for kw in ({}, {"plant_capacity_w": 0.8 * cap_w}, {"unit_fan_heat_w": 2e3}):
            fast = capacity.capped_steady_state(m, heat, **kw)
            monkeypatch.setattr(capacity, "UNSATURATED_FAST", False)
            ref = capacity.capped_steady_state(m, heat, **kw)
            monkeypatch.setattr(capacity, "UNSATURATED_FAST", True)
            _same_state(fast, ref)
            kinds.add((ref.feasible, bool(ref.saturated.any())))
    assert kinds >= {(True, False), (True, True), (False, False)}    # each branch was met


def test_unsaturated_fast_path_leaves_stopped_units_to_the_iteration(family, monkeypatch):
    """With a unit stopped the fast path is not taken (the iteration masks stopped units):
    the result is the reference's, NaN supplies and zero loads included."""
    from twin.thermal import capacity, inlet_model

    fam, v0 = family
    act = np.ones(fam.geometry.n_cooling, bool)
    act[0] = False
    m = inlet_model(fam.geometry, 0.6 * v0, act)
    heat = np.full(v0.size, 3e3)
    fast = capacity.capped_steady_state(m, heat)
    monkeypatch.setattr(capacity, "UNSATURATED_FAST", False)
    _same_state(fast, capacity.capped_steady_state(m, heat))
    assert np.isnan(fast.supply_temp_c[0]) and fast.unit_load_w[0] == 0.0


# ---------------------------------------------------------------- CRAH fan law per hall
@pytest.mark.parametrize("control", ["vfd", "constant"])
@pytest.mark.parametrize("static", [0.0, 0.3])
def test_kept_fan_law_equals_the_crah_fan_function(control, static):
    """The hall's fan law with its constants kept (_HallFans) gives _crah_fans_w's power bit
    for bit: VFD and constant speed, with and without a static-pressure share, every unit
    or some running, airflows from below the minimum speed to beyond design."""
    from types import SimpleNamespace

    from twin.sim.hall_thermal import _crah_fans_w, _HallFans
    from twin.thermal.fans import fan_design_power_w

    fans = SimpleNamespace(airflow_per_rack_airflow=1.2, design_pressure_pa=450.0, fan_efficiency=0.62,
                           control=control, min_speed_fraction=0.25, static_pressure_fraction=static)
    v_c = np.array([9.0, 11.5, 10.2, 8.7, 12.3])
    law = _HallFans.of(fans, v_c)
    rng = np.random.default_rng(3)
    seen = set()
    for scale in (0.01, 0.2, 0.5, 0.9, 1.5):
        airflow = rng.uniform(0.5, 1.5, 40) * scale * v_c.sum() / 40
        for active in (np.ones(5, bool), np.array([True, False, True, True, False])):
            got = law.power_w(airflow, active)
            ref = _crah_fans_w(fans, airflow, active, v_c, fan_design_power_w(v_c, 450.0, 0.62))
            assert got == ref and type(got) is float
            seen.add(got)
    assert len(seen) > (1 if control == "constant" else 6)     # the power moves with the airflow (VFD)


# ---------------------------------------------------------------- fan-law airflow per sample
def test_kept_airflow_threshold_gives_the_same_answer():
    """airflow_changed with the threshold kept for the old airflow answers as without it and
    as the rule written out, for moves below, at and beyond the tolerance and zero airflows."""
    from twin.thermal.airflow import airflow_change_threshold_m3_s, airflow_changed

    rng = np.random.default_rng(11)
    answers = set()
    for _ in range(300):
        old = rng.uniform(0.0, 2.0, 16) * (rng.random(16) > 0.1)
        new = old * (1 + rng.choice([-0.2, -0.05, 0.0, 0.03, 0.05, 0.06], 16) * (rng.random(16) < 0.2))
        tol = float(rng.choice([0.01, 0.05, 0.1]))
        kept = airflow_changed(old, new, tol, threshold_m3_s=airflow_change_threshold_m3_s(old, tol))
        rule = bool(np.any(np.abs(new - old) > tol * np.maximum(np.abs(old), 1e-12)))
        assert kept is airflow_changed(old, new, tol) is rule
        answers.add(kept)
    assert answers == {True, False}


def test_a_month_of_blue_vela_with_the_per_sample_paths_off_is_the_same(monkeypatch):
    """Blue Vela for 30 days (fan-law airflow, buoyant knots) with VFD fans down to 5 %: the
    run with the CRAH fan law's constants, the airflow thresholds and the unsaturated steady
    state kept equals the run with each evaluated afresh by the reference path at every
    sample, every cooling output and the inlets bit for bit."""
    from pathlib import Path

    import twin
    from twin.sim import hall_thermal as ht
    from twin.thermal import capacity

    overrides = ["simulation.duration_days=30", "site.cooling_system.crah_fans.control=vfd",
                 "site.cooling_system.crah_fans.min_speed_fraction=0.05"]
    s = twin.load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "blue_vela.yaml", overrides)
    kept = twin.simulate(s).dataset
    # a fresh dict at every read: no threshold is kept from one evaluation to the next
    monkeypatch.setattr(ht.HallThermal, "_airflow_thr", property(lambda self: {}, lambda self, value: None),
                        raising=False)
    monkeypatch.setattr(ht.HallThermal, "fan_law_kept", False)
    monkeypatch.setattr(capacity, "UNSATURATED_FAST", False)
    fresh = twin.simulate(s).dataset
    assert np.unique(fresh["cooling_fan_power_w"].values).size > 3     # the airflow moves within the month
    for name in ("cooling_fan_power_w", "cooling_unit_margin_w", "cooling_capacity_margin_w",
                 "cooling_unit_load_w", "rack_inlet_c", "rack_inlet_peak_c"):
        assert np.array_equal(kept[name].values, fresh[name].values, equal_nan=True), name


def test_last_unit_constants_are_not_reused_for_other_unit_arrays(family):
    """capped_steady_state checks the last unit constants it used first: models that differ
    from the last one in a single unit array (running flags, airflow, set point, capacity),
    taken in turns with the original, each get the result of a fresh evaluation with no
    constants kept."""
    from dataclasses import replace

    from twin.thermal import capacity

    fam, v0 = family
    m = fam.model(0.6 * v0)
    one_off = m.cooling_active.copy()
    one_off[0] = False
    others = [m, replace(m, cooling_capacity_w=0.2 * m.cooling_capacity_w),
              replace(m, cooling_supply_temp_c=m.cooling_supply_temp_c + 3.0),
              replace(m, cooling_airflow_m3_s=0.7 * m.cooling_airflow_m3_s), replace(m, cooling_active=one_off)]
    heat = np.full(v0.size, 0.5 * float(m.cooling_capacity_w.sum()) / v0.size)
    turns = [x for other in others[1:] for x in (m, other, m)]     # each turn changes one array
    kept = [capacity.capped_steady_state(x, heat) for x in turns]
    fresh = []
    for x in turns:
        capacity._COIL_CONSTANTS.clear()
        fresh.append(capacity.capped_steady_state(x, heat))
    for a, b in zip(kept, fresh, strict=True):
        _same_state(a, b)
    # each array changes the result
    assert len({(r.unit_load_w.tobytes(), r.unit_capacity_w.tobytes(), r.supply_temp_c.tobytes(), r.feasible)
                for r in fresh}) == len(others)
