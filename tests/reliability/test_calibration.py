"""Default failure rates against the Llama 3 405B pre-training snapshot.

Reference: Meta, "The Llama 3 Herd of Models", arXiv 2407.21783, Table 5 and section
3.3.4 (also ../shared/reference/calibration.yaml failures.llama3_405b_54_days):
16,384 H100 = 2,048 nodes, 54 days, 419 unexpected and 47 planned interruptions.
"""

import numpy as np
import pytest

from twin.reliability import (
    ClusterFailureSampler,
    job_mtbf_s,
    load_failure_catalog,
    load_failure_classes,
    node_failure_rates_per_s,
    planned_maintenance_rate_per_s,
)

NODES, DAYS, UNEXPECTED, PLANNED = 2048, 54, 419, 47
HOURS = DAYS * 24
SECONDS = DAYS * 86400.0

# Printed shares of Table 5 (calibration.yaml share_of_unexpected), by Table 5 category.
PRINTED_SHARE = {
    "Faulty GPU (includes NVLink failures)": 0.301,
    "GPU HBM3 Memory": 0.172,
    "Software Bug": 0.129,
    "Network Switch/Cable": 0.084,
    "Host Maintenance": 0.076,
    "GPU SRAM Memory": 0.045,
    "GPU System Processor": 0.041,
    "NIC": 0.017,
    "NCCL Watchdog Timeouts": 0.017,
    "Silent Data Corruption": 0.014,
    "GPU Thermal Interface + Sensor": 0.014,
    "SSD": 0.007,
    "Power Supply": 0.007,
    "Server Chassis": 0.005,
    "IO Expansion Board": 0.005,
    "Dependency": 0.005,
    "CPU": 0.005,
    "System Memory": 0.005,
}


def _category_counts():
    cat = load_failure_catalog()
    out: dict[str, float] = {}
    for c in cat["classes"]:
        out[c["llama3_category"]] = out.get(c["llama3_category"], 0.0) + float(c["count"])
    return out


def test_expected_unexpected_interruptions_is_419():
    classes = load_failure_classes()
    rates = node_failure_rates_per_s(classes, NODES)
    assert rates.shape == (NODES, len(classes))
    assert rates.sum() * SECONDS == pytest.approx(UNEXPECTED, rel=1e-12)


def test_rate_per_node_hour_matches_hand_value():
    # 419 / (2048 * 54 * 24) = 419 / 2,654,208 = 1.5786e-4 per node-hour = 4.3851e-8 per node-second
    total = node_failure_rates_per_s(load_failure_classes(), 1, per_class=False)[0]
    assert total * 3600.0 == pytest.approx(1.578625e-4, rel=1e-5)
    assert total == pytest.approx(4.385069e-8, rel=1e-5)


def test_job_mtbf_is_about_three_hours():
    # "one failure every three hours" (Meta): 1296 h / 419 = 3.093 h = 11,135 s
    assert job_mtbf_s(load_failure_classes(), NODES) / 3600.0 == pytest.approx(3.0931, abs=1e-4)


def test_class_shares_match_table5_within_rounding():
    counts = _category_counts()
    assert set(counts) == set(PRINTED_SHARE)
    for cat, share in PRINTED_SHARE.items():
        if cat.startswith("Faulty GPU"):
            continue
        # printed to 0.1 %: |count / 419 - share| <= 0.0005
        assert abs(counts[cat] / UNEXPECTED - share) <= 0.0005 + 1e-12, cat


def test_faulty_gpu_count_and_printed_share_inconsistency_is_documented():
    counts = _category_counts()
    gpu = counts["Faulty GPU (includes NVLink failures)"]
    assert gpu == 148  # Table 5 count
    # Table 5 prints 30.1 %, but 148 / 419 = 35.3 %; printed shares add to 94.9 %.
    assert gpu / UNEXPECTED == pytest.approx(0.353, abs=5e-4)
    assert sum(PRINTED_SHARE.values()) == pytest.approx(0.949, abs=1e-9)
    # the other 17 categories plus 148 give exactly 419
    assert sum(counts.values()) == pytest.approx(UNEXPECTED, abs=1e-9)


def test_network_split_keeps_the_table5_total():
    classes = {c.name: c for c in load_failure_classes()}
    both = classes["network_cable"].count + classes["leaf_switch"].count
    assert both == pytest.approx(35.0, abs=1e-9)
    # switch part: Azure 98 % 3-month survival -> -ln(0.98)/2190 h per switch,
    # 8 leaf switches per 32-node SU -> 0.25 per node, over 2,654,208 node-h
    derived = -np.log(0.98) / (3 * 730.0) * 0.25 * NODES * HOURS
    assert classes["leaf_switch"].count == pytest.approx(derived, abs=0.05)
    assert classes["leaf_switch"].scope == "rail_su"


def test_planned_maintenance_rate():
    assert planned_maintenance_rate_per_s() == pytest.approx(PLANNED / SECONDS, rel=1e-12)


def test_simulated_54_day_runs_reproduce_419_within_poisson_bounds():
    classes = load_failure_classes()
    sampler = ClusterFailureSampler(classes, NODES)
    rng = np.random.default_rng(20240723)
    reps = 200
    counts = np.zeros(len(classes))
    totals = []
    for _ in range(reps):
        _, _, k = sampler.sample_until(rng, SECONDS)
        totals.append(k.size)
        counts += np.bincount(k, minlength=len(classes))
    totals = np.asarray(totals)
    # mean of 200 Poisson(419): sd = sqrt(419 / 200) = 1.45
    assert abs(totals.mean() - UNEXPECTED) < 4.5 * np.sqrt(UNEXPECTED / reps)
    # dispersion of a Poisson count: variance = mean (chi-square 199 dof, loose bound)
    assert 0.7 < totals.var(ddof=1) / UNEXPECTED < 1.35
    # per-class counts over all replicas within 5 sigma of count * reps
    for c, n in zip(classes, counts, strict=True):
        mu = c.count * reps
        assert abs(n - mu) <= 5 * np.sqrt(mu) + 1, c.name
