"""Cluster failure sampling: counts against configured rates within Poisson bounds,
two samplers (matrix and factorised) against each other, thermal acceleration,
redraw on rate changes, thinning of unavailable nodes, job MTBF scaling."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from twin.reliability import (
    ClusterFailureSampler,
    class_index,
    job_mtbf_s,
    load_failure_classes,
    node_failure_rates_per_s,
    sample_failure_class,
    sample_next_failure,
)

CLASSES = load_failure_classes()
H = 3600.0


@pytest.mark.slow
def test_large_population_long_time_counts_match_rates():
    # 100,000 GPUs = 12,500 nodes for one year, rate scale 1
    n, horizon = 12_500, 8760.0 * H
    sampler = ClusterFailureSampler(CLASSES, n)
    rng = np.random.default_rng(1)
    t, node, k = sampler.sample_until(rng, horizon)
    expected = np.array([c.rate_per_node_s for c in CLASSES]) * n * horizon
    assert abs(t.size - expected.sum()) < 5 * np.sqrt(expected.sum())
    obs = np.bincount(k, minlength=len(CLASSES))
    for c, o, e in zip(CLASSES, obs, expected, strict=True):
        assert abs(o - e) <= 5 * np.sqrt(e) + 1, c.name
    # failures spread uniformly over nodes: per-node counts are Poisson(mean)
    per_node = np.bincount(node, minlength=n)
    assert per_node.var() / per_node.mean() == pytest.approx(1.0, abs=0.06)
    assert np.all(np.diff(t) >= 0) and t[-1] < horizon


def test_event_loop_counts_match_rates():
    # the engine's path: one draw at a time, rates fixed
    n, horizon, reps = 2048, 1296.0 * H, 10
    sampler = ClusterFailureSampler(CLASSES, n)
    rng = np.random.default_rng(2)
    total = 0
    per_class = np.zeros(len(CLASSES))
    for _ in range(reps):
        t = 0.0
        while (ev := sampler.next(rng, horizon - t)) is not None:
            t += ev[0]
            total += 1
            per_class[ev[2]] += 1
    mu = 419.0 * reps
    assert abs(total - mu) < 4.5 * np.sqrt(mu)
    p = np.array([c.count for c in CLASSES]) / 419.0
    chi2 = stats.chisquare(per_class, p * per_class.sum())
    assert chi2.pvalue > 1e-4


def test_matrix_sampler_picks_node_and_class_by_rate():
    rates = np.array([[1.0, 0.0], [2.0, 3.0], [0.0, 0.0], [0.5, 3.5]])
    rng = np.random.default_rng(3)
    m = 40_000
    hits = np.zeros_like(rates)
    dts = np.empty(m)
    for i in range(m):
        dt, node, k = sample_next_failure(rng, rates, np.inf)
        hits[node, k] += 1
        dts[i] = dt
    p = rates / rates.sum()
    assert hits[rates == 0].sum() == 0
    nz = rates > 0
    assert stats.chisquare(hits[nz], p[nz] * m).pvalue > 1e-4
    # dt ~ Exp(total = 10 / s): mean 0.1 s, standard error 0.1 / sqrt(m)
    assert dts.mean() == pytest.approx(0.1, abs=5 * 0.1 / np.sqrt(m))


def test_horizon_returns_none_with_probability_exp_minus_lambda_t():
    rates = np.full(10, 0.05)  # total 0.5 / s, horizon 2 s
    rng = np.random.default_rng(4)
    m = 20_000
    none = sum(sample_next_failure(rng, rates, 2.0) is None for _ in range(m))
    p = np.exp(-0.5 * 2.0)
    assert none / m == pytest.approx(p, abs=5 * np.sqrt(p * (1 - p) / m))
    assert sample_next_failure(rng, np.zeros(5), 1e9) is None
    ev = sample_next_failure(rng, rates, np.inf)
    assert ev[2] == -1 and 0 <= ev[1] < 10


def test_sample_failure_class_shares():
    rng = np.random.default_rng(5)
    r = np.array([0.2, 0.0, 0.8])
    ks = np.array([sample_failure_class(rng, r) for _ in range(10_000)])
    assert np.sum(ks == 1) == 0
    assert np.mean(ks == 2) == pytest.approx(0.8, abs=0.02)


def test_thermal_acceleration_scales_only_thermal_classes_on_hot_nodes():
    n, horizon = 4000, 20_000.0 * H
    accel = np.where(np.arange(n) < n // 2, 1.0, 3.0)  # second half 3x hotter hazard
    sampler = ClusterFailureSampler(CLASSES, n, thermal_acceleration=accel)
    rng = np.random.default_rng(6)
    _, node, k = sampler.sample_until(rng, horizon)
    thermal = np.array([c.thermal for c in CLASSES])[k]
    hot = node >= n // 2
    ratio_thermal = np.sum(thermal & hot) / np.sum(thermal & ~hot)
    ratio_plain = np.sum(~thermal & hot) / np.sum(~thermal & ~hot)
    assert ratio_thermal == pytest.approx(3.0, rel=0.12)
    assert ratio_plain == pytest.approx(1.0, rel=0.12)
    # the factorised sampler's totals equal the rate matrix's
    mat = node_failure_rates_per_s(CLASSES, n, thermal_acceleration=accel)
    np.testing.assert_allclose(sampler.class_rates_per_s, mat.sum(axis=0), rtol=1e-12)


def test_redraw_on_piecewise_constant_rates_matches_integrated_hazard():
    # acceleration changes every hour (the engine's sampling interval); memoryless redraw
    n, steps, reps = 2048, 1296, 4
    sampler = ClusterFailureSampler(CLASSES, n)
    rng = np.random.default_rng(7)
    accel_series = 1.0 + 1.5 * (np.sin(np.arange(steps) / 24.0 * 2 * np.pi) > 0)
    therm = np.array([c.rate_per_node_s for c in CLASSES if c.thermal]).sum() * n
    plain = np.array([c.rate_per_node_s for c in CLASSES if not c.thermal]).sum() * n
    expected = reps * float(np.sum(therm * accel_series + plain)) * H
    count = 0
    for _ in range(reps):
        for a in accel_series:
            sampler.update(thermal_acceleration=a)
            left = H
            while (ev := sampler.next(rng, left)) is not None:
                left -= ev[0]
                count += 1
    assert abs(count - expected) < 4.5 * np.sqrt(expected)


def test_thinning_ignores_down_nodes_without_bias():
    n, horizon = 1000, 20_000.0 * H
    sampler = ClusterFailureSampler(CLASSES, n)
    rng = np.random.default_rng(8)
    _, node, _ = sampler.sample_until(rng, horizon)
    up = np.arange(n) % 4 != 0  # a quarter of the nodes unavailable
    kept = up[node].sum()
    expected = sampler.total_rate_per_s * horizon * up.mean()
    assert abs(kept - expected) < 5 * np.sqrt(expected)


def test_doubling_nodes_halves_job_mtbf():
    for n in (16, 128, 2048, 12_500):
        assert job_mtbf_s(CLASSES, 2 * n) == pytest.approx(job_mtbf_s(CLASSES, n) / 2, rel=1e-12)
    # and by simulation: mean gap between failures of 1024 vs 2048 nodes
    rng = np.random.default_rng(9)
    means = []
    for n in (1024, 2048):
        t, _, _ = ClusterFailureSampler(CLASSES, n).sample_until(rng, 200_000.0 * H)
        means.append(np.diff(t).mean())
    assert means[0] / means[1] == pytest.approx(2.0, rel=0.05)


def test_job_mtbf_ignores_non_interrupting_scope_and_rate_scale():
    assert job_mtbf_s(CLASSES, 100, rate_scale=2.0) == pytest.approx(job_mtbf_s(CLASSES, 100) / 2)
    assert job_mtbf_s(CLASSES, 100, rate_scale=0.0) == np.inf


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 300),
    scale=st.floats(0.0, 10.0),
    accel=st.lists(st.floats(0.0, 50.0), min_size=1, max_size=300),
)
def test_rate_matrix_total_and_sampler_agree(n, scale, accel):
    a = np.resize(np.asarray(accel), n)
    mat = node_failure_rates_per_s(CLASSES, n, rate_scale=scale, thermal_acceleration=a)
    tot = node_failure_rates_per_s(CLASSES, n, rate_scale=scale, thermal_acceleration=a, per_class=False)
    np.testing.assert_allclose(mat.sum(axis=1), tot, rtol=1e-12, atol=1e-300)
    s = ClusterFailureSampler(CLASSES, n, rate_scale=scale, thermal_acceleration=a)
    assert s.total_rate_per_s == pytest.approx(mat.sum(), rel=1e-9, abs=1e-300)
    assert np.all(mat >= 0)
    # non-thermal columns do not see the acceleration
    k = class_index(CLASSES, "software_bug")
    np.testing.assert_allclose(mat[:, k], scale * CLASSES[k].rate_per_node_s)


@settings(max_examples=30, deadline=None)
@given(weights=st.lists(st.floats(0.0, 1e3), min_size=1, max_size=50), seed=st.integers(0, 2**32 - 1))
def test_sampler_never_picks_a_zero_rate_node(weights, seed):
    w = np.asarray(weights)
    rng = np.random.default_rng(seed)
    s = ClusterFailureSampler(CLASSES, w.size, rate_scale=w)
    for _ in range(20):
        ev = s.next(rng)
        if s.total_rate_per_s == 0:
            assert ev is None
            break
        assert w[ev[1]] > 0


@settings(max_examples=30, deadline=None)
@given(weights=st.lists(st.floats(0.0, 1e3), min_size=1, max_size=50), seed=st.integers(0, 2**32 - 1))
def test_batch_sampler_never_picks_a_zero_rate_node(weights, seed):
    w = np.asarray(weights)
    s = ClusterFailureSampler(CLASSES, w.size, rate_scale=w, thermal_acceleration=np.resize([0.0, 2.0], w.size))
    t, node, k = s.sample_until(np.random.default_rng(seed), 5e4 * H)
    therm = np.array([c.thermal for c in CLASSES])[k]
    acc = np.resize([0.0, 2.0], w.size)[node]
    assert np.all(w[node] > 0)
    assert np.all(acc[therm] > 0)  # thermal classes never land on a zero-acceleration node
    assert t.size == node.size == k.size
