"""Job goodput with class-specific detection delays, and hot spares, against
independent pure-numpy Monte Carlo."""

import numpy as np
import pytest

from twin.reliability import (
    daly_interval_s,
    expected_goodput_fraction,
    hot_spare_shortfall_probability,
    job_goodput_fraction,
    job_mtbf_s,
    load_failure_classes,
    mean_detection_delay_of_interruptions_s,
    planned_maintenance_rate_per_s,
    sample_detection_delay_s,
)

CLASSES = load_failure_classes()


def test_mean_detection_delay_by_hand():
    # SDC 6/419 * 60 min + NCCL watchdog 7/419 * 10 min + health check 6/419 * 2.5 min
    # (thermal interface/sensor, 5-min checks) = (360 + 70 + 15) / 419 = 1.0621 min
    assert mean_detection_delay_of_interruptions_s(CLASSES) / 60 == pytest.approx(445 / 419, rel=1e-3)


def test_goodput_with_detection_delays_matches_monte_carlo():
    rng = np.random.default_rng(41)
    m = job_mtbf_s(CLASSES, 2048)
    delta, restart = 60.0, 300.0
    n = 400_000
    rates = np.array([c.rate_per_node_s for c in CLASSES if c.interrupts_job])
    det = [c.detection for c in CLASSES if c.interrupts_job]
    k = rng.choice(rates.size, size=n, p=rates / rates.sum())
    d = np.zeros(n)
    for j, kind in enumerate(det):
        sel = k == j
        d[sel] = np.asarray(sample_detection_delay_s(rng, kind, size=int(sel.sum())))
    gaps = rng.exponential(m, n)
    tau = daly_interval_s(delta, m)
    # the gap after failure i starts with its detection delay and the restart
    usable = np.maximum(gaps[1:] - d[:-1] - restart, 0.0)
    mc = tau * np.floor(usable / (tau + delta)).sum() / gaps[1:].sum()
    analytic = job_goodput_fraction(m, tau, delta, restart,
                                    mean_detection_s=mean_detection_delay_of_interruptions_s(CLASSES))
    assert mc == pytest.approx(analytic, abs=3e-3)
    assert analytic < float(expected_goodput_fraction(tau, delta, restart, m))


def test_planned_maintenance_term():
    m, tau, delta, r = 11_000.0, 1000.0, 60.0, 300.0
    g0 = job_goodput_fraction(m, tau, delta, r)
    assert g0 == pytest.approx(float(expected_goodput_fraction(tau, delta, r, m)))
    p = planned_maintenance_rate_per_s()  # 47 per 54 days
    g1 = job_goodput_fraction(m, tau, delta, r, planned_rate_per_s=p, planned_downtime_s=1800.0)
    # 47 events * (60 + 1800 + 300) s over 54 days = 2.18 % of the time
    assert 1 - g1 / g0 == pytest.approx(47 * 2160 / (54 * 86400), rel=1e-9)


def test_hot_spare_shortfall_matches_m_g_infinity_simulation():
    rng = np.random.default_rng(42)
    n_nodes, lam, spares = 2048, 419 / (2048 * 1296.0 * 3600.0), 4  # lam [1/(node*s)]
    mean_out = 8.0 * 3600.0  # s out of service per failure (detection, queue, repair)
    rate = n_nodes * lam
    t = np.cumsum(rng.exponential(1 / rate, 200_000))
    out_for = rng.lognormal(np.log(mean_out) - 0.5, 1.0, t.size)  # mean 8 h, lognormal
    ends = np.sort(t + out_for)
    already_out = np.arange(t.size) - np.searchsorted(ends, t, side="right")
    sim = np.mean(already_out[t > 500 * 3600.0] >= spares)
    assert sim == pytest.approx(hot_spare_shortfall_probability(n_nodes, spares, lam, mean_out), abs=0.01)
    assert hot_spare_shortfall_probability(n_nodes, 0, lam, mean_out) == 1.0
    # more spares, fewer shortfalls
    p = [hot_spare_shortfall_probability(n_nodes, h, lam, mean_out) for h in range(1, 8)]
    assert np.all(np.diff(p) < 0)
