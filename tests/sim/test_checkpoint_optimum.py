"""The engine's goodput-optimal checkpoint interval, found by a sweep, lands on Daly's formula."""

from pathlib import Path

import numpy as np
import pytest

import twin
from twin import reliability, storage

SMALL = Path(__file__).resolve().parents[2] / "scenarios" / "lenovo_small.yaml"
# One node, a software-bug-dominated failure mix (scope "job": the node stays healthy, so
# the job relaunches at once), a 120 s checkpoint (1.2 TB to a 10 GB/s NFS filer).
BASE = ["simulation.duration_days=40", "failures.class_rate_scale={software_bug: 20000}",
        "workload.jobs.0.nodes=1", "workload.jobs.0.checkpoint_bytes=1.2e12",
        "workload.jobs.0.restart_s=300", "site.power.grid.sag_rate_per_year=0",
        "site.power.grid.outage_rate_per_year=0", "failures.burn_in_expected_failures_per_node=0"]


@pytest.mark.slow
def test_simulated_optimum_is_within_10_percent_of_daly():
    s = twin.load_scenario(SMALL, BASE)
    classes = reliability.scale_class_rates(reliability.load_failure_classes(), s.failures.class_rate_scale)
    mtbf_s = reliability.job_mtbf_s(classes, 1)
    delta_s = float(storage.checkpoint_write_s(1.2e12, storage.NFS_WRITE_GB_S))
    daly = reliability.daly_interval_s(delta_s, mtbf_s)
    intervals = daly * np.array([0.4, 0.65, 1.0, 1.5, 2.4])
    tokens = []
    for t in intervals:     # same seed: common random numbers, the failures land at the same times
        res = twin.simulate(twin.load_scenario(SMALL, BASE + [f"workload.jobs.0.checkpoint_interval_s={t}"]))
        tokens.append(res.kpis["tokens_total"])
    tokens = np.array(tokens)
    assert tokens.argmax() == 2                      # Daly's interval beats 0.65x and 1.5x of it
    a, b, _ = np.polyfit(np.log(intervals), tokens, 2)
    best = np.exp(-b / (2 * a))                      # vertex of the parabola in log(interval)
    assert a < 0
    assert abs(best / daly - 1) < 0.10, (best, daly)


def test_measured_job_mtbf_matches_the_catalog_rate():
    s = twin.load_scenario(SMALL, BASE + ["workload.jobs.0.checkpoint_interval_s=1400"])
    res = twin.simulate(s)
    classes = reliability.scale_class_rates(reliability.load_failure_classes(), s.failures.class_rate_scale)
    expected_h = reliability.job_mtbf_s(classes, 1) / 3600.0  # the KPI is in hours
    n = res.kpis["interruptions"]
    assert n > 200
    # Poisson count: 3 sigma = 3/sqrt(n) relative; the job is also exposed while restarting
    assert abs(res.kpis["mtbf_job_h"] / expected_h - 1) < 3 / np.sqrt(n) + 0.02
