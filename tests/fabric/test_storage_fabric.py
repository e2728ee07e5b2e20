"""Storage fabric: counts and the streaming limit by hand (Blue Vela: 2 storage HCAs/node)."""

import numpy as np
import pytest

from twin.fabric import build_storage_fabric, storage_bandwidth_gb_s


def test_counts_and_ports():
    g = build_storage_fabric(128, storage_units=2, unit_ports=8)
    kinds = {}
    for _, k in g.nodes(data="kind"):
        kinds[k] = kinds.get(k, 0) + 1
    # 4 SU x 2 storage leaves + one unit-side leaf (2 units x 8 ports); 8 x 32 + 16 = 272
    # uplinks over 64-port spines -> 5 spines
    assert kinds == {"node": 128, "storage_unit": 2, "leaf": 9, "spine": 5}
    for v, k in g.nodes(data="kind"):
        if k in ("leaf", "spine"):
            assert sum(d["links"] for _, _, d in g.edges(v, data=True)) <= 64
    assert all(sum(d["links"] for _, _, d in g.edges(f"n{i}", data=True)) == 2
               for i in range(128))


def test_streaming_limit_by_hand():
    g = build_storage_fabric(128, storage_units=2, unit_ports=8)
    # 4 nodes x 2 x 400 Gb/s = 400 GB/s, below the two units' 16 x 400 Gb/s = 800 GB/s
    assert storage_bandwidth_gb_s(g, np.arange(4)) == pytest.approx(400.0)
    # the whole pod is limited by the units' media rate: 2 x 310 GB/s (SSS 6000 read)
    assert storage_bandwidth_gb_s(g, np.arange(128)) == pytest.approx(620.0)
    assert storage_bandwidth_gb_s(g, np.arange(128), unit_media_gb_s=155.0) == pytest.approx(310.0)
    # with 7 units the NICs of the pod (128 x 800 Gb/s = 12.8 TB/s) are not the limit
    g7 = build_storage_fabric(128, storage_units=7, unit_ports=8)
    assert storage_bandwidth_gb_s(g7, np.arange(128)) == pytest.approx(7 * 310.0)


def test_oversubscribed_leaf_limits_a_dense_job():
    g = build_storage_fabric(64, storage_units=8, oversubscription=4.0)
    # one SU, 2 leaves x 8 uplinks x 400 Gb/s = 800 GB/s for 32 nodes' 3.2 TB/s of NICs
    assert storage_bandwidth_gb_s(g, np.arange(32)) == pytest.approx(800.0)
