"""Blast radius of failures, PSU redundancy, silent data corruption, repair times."""

import numpy as np
import pytest

from twin.reliability import (
    PSU_NODE_DOWN,
    PSU_OK,
    PSU_POWER_BRAKE,
    class_index,
    failure_effect,
    last_clean_checkpoint_index,
    load_failure_classes,
    mean_repair_duration_s,
    psu_failure_effect,
    rail_su_affected_nodes,
    sample_detection_delay_s,
    sample_repair_duration_s,
    sdc_lost_work_s,
)

CLASSES = load_failure_classes()


def test_rail_su_takes_the_whole_scalable_unit():
    np.testing.assert_array_equal(rail_su_affected_nodes(37, nodes_per_su=32), np.arange(32, 64))
    np.testing.assert_array_equal(rail_su_affected_nodes(70, nodes_per_su=32, n_nodes=80), np.arange(64, 80))
    su = np.array([0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(rail_su_affected_nodes(3, su_of_node=su), [2, 3, 4])


def test_failure_effect_by_scope():
    rng = np.random.default_rng(0)
    by = {c.name: c for c in CLASSES}
    e = failure_effect(by["gpu"], 5, rng)
    assert list(e.nodes_down) == [5] and e.nodes_degraded.size == 0 and not e.job_only
    e = failure_effect(by["leaf_switch"], 40, rng, nodes_per_su=32, n_rails=8)
    assert e.nodes_down.size == 0 and list(e.nodes_degraded) == list(range(32, 64))
    assert 0 <= e.rail < 8
    assert list(e.interrupted_nodes) == list(range(32, 64))
    e = failure_effect(by["software_bug"], 5, rng)
    assert e.job_only and e.interrupted_nodes.size == 0
    rails = {failure_effect(by["leaf_switch"], 0, rng).rail for _ in range(400)}
    assert rails == set(range(8))


def test_every_class_has_consistent_semantics():
    for c in CLASSES:
        assert c.source
        if c.repair == "hardware":
            assert c.scope in ("node", "rail_su")
        if c.scope == "job":
            assert c.repair == "none"
    assert CLASSES[class_index(CLASSES, "silent_data_corruption")].detection == "silent"
    assert CLASSES[class_index(CLASSES, "nccl_watchdog")].detection == "timeout"


def test_psu_redundancy():
    # XE9680 3+3: one failed rides through, 2..5 failed -> power brake, 6 -> off
    got = psu_failure_effect(np.arange(7), psu_count=6, failed_tolerated=1)
    np.testing.assert_array_equal(got, [PSU_OK, PSU_OK] + [PSU_POWER_BRAKE] * 4 + [PSU_NODE_DOWN])


def test_sdc_rolls_back_past_tainted_checkpoints():
    ck = np.array([1000.0, 2000.0, 3000.0, 4000.0])
    assert last_clean_checkpoint_index(ck, 2500.0) == 1
    assert last_clean_checkpoint_index(ck, 500.0) == -1
    # corrupted at 2500 s, detected at 4200 s: back to 2000 s -> 2200 s lost, where a
    # fail-stop fault at 4200 s would lose only 200 s
    assert sdc_lost_work_s(ck, 2500.0, 4200.0) == pytest.approx(2200.0)
    assert sdc_lost_work_s(ck, 500.0, 600.0, run_start_s=0.0) == pytest.approx(600.0)


def test_repair_durations_follow_catalog_lognormals():
    rng = np.random.default_rng(12)
    n = 40_000
    # catalog medians in hours (as published), the API in seconds
    for kind, median_h in (("reimage", 0.1667), ("hardware", 2.0), ("warranty", 72.0)):
        x = sample_repair_duration_s(rng, kind, size=n)
        assert np.median(x) == pytest.approx(median_h * 3600.0, rel=0.03)
        assert x.mean() == pytest.approx(mean_repair_duration_s(kind), rel=0.05)
        assert np.all(x > 0)
    assert sample_repair_duration_s(rng, "none") == 0.0
    assert isinstance(sample_repair_duration_s(rng, "reimage"), float)
    # reimage is minutes, warranty days
    assert mean_repair_duration_s("reimage") < 1800.0 < 86400.0 < mean_repair_duration_s("warranty")
    with pytest.raises(ValueError):
        sample_repair_duration_s(rng, "magic")


def test_detection_delays():
    rng = np.random.default_rng(13)
    assert sample_detection_delay_s(rng, "immediate") == 0.0
    hc = sample_detection_delay_s(rng, "health_check", health_check_interval_s=1800.0, size=20_000)
    assert hc.min() >= 0 and hc.max() <= 1800.0 and hc.mean() == pytest.approx(900.0, abs=36.0)
    # the catalog's NCCL watchdog default, 0.1667 h: PyTorch's 10 min
    assert sample_detection_delay_s(rng, "timeout") == pytest.approx(600.0, rel=1e-3)
    sdc = sample_detection_delay_s(rng, "silent", sdc_mean_s=7200.0, size=20_000)
    assert sdc.mean() == pytest.approx(7200.0, rel=0.05)


def test_scale_class_rates_changes_only_the_named_classes():
    from twin.reliability import job_mtbf_s, scale_class_rates

    scaled = scale_class_rates(CLASSES, {"gpu_hbm3": 2.0})
    by = {c.name: c for c in scaled}
    orig = {c.name: c for c in CLASSES}
    assert by["gpu_hbm3"].rate_per_node_s == pytest.approx(2 * orig["gpu_hbm3"].rate_per_node_s)
    assert by["gpu"] is orig["gpu"]
    # 72 more interruptions on the 2,048-node basis: MTBF 1296 h / (419 + 72)
    assert job_mtbf_s(scaled, 2048) == pytest.approx(1296 * 3600.0 / 491)
    with pytest.raises(KeyError):
        scale_class_rates(CLASSES, {"flux_capacitor": 2.0})


def test_catalog_has_a_source_for_every_number():
    from twin.reliability import load_failure_catalog

    cat = load_failure_catalog()
    assert cat["basis"]["source"]
    for c in cat["classes"]:
        assert c["count"] > 0 and c["source"], c["name"]
    for kind in ("reimage", "hardware", "warranty", "none"):
        assert cat["repair"][kind]["source"]
    for v in cat["detection"].values():
        assert v["source"] and v["value"] > 0
    for v in cat["psu_redundancy"].values():
        assert v["source"]
    assert cat["planned_maintenance"]["source"]
    # the returned dict is a copy: mutating it does not change the classes
    cat["classes"][0]["count"] = 1e9
    assert load_failure_classes()[0].count == 148
