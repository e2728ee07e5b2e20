"""More held-out multi-node NCCL measurements (issue 16): the transcription and the twin's errors.

Tables in assets/reference/nccl_multinode_heldout2.csv (sources and assumptions in
nccl_multinode_heldout2_sources.md; the twin's figure per row from nccl_multinode_heldout2.py).
Each table's mean and worst |error| are pinned at the measured values (0.5 percentage points),
so a change of the collective model shows here; nothing is fitted on these rows.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from reference_scripts import assert_table_summary, reference_script

from twin.compute.collectives import bus_factor

hd = reference_script("nccl_multinode_heldout2")

PP = 0.005  # 0.5 percentage points


def test_transcription():
    rows = hd.rows()
    count = Counter(r["table"] for r in rows)
    assert count == {"NT290_DEFAULT": 8, "NT290_RING": 8, "NCCL1244": 4, "VOLTAGE_PARK": 2,
                     "NCCL1368": 2, "NT283": 1, "NEBIUS_TORCH_1": 2, "NEBIUS_TORCH_2": 2,
                     "AZ_NDV5_TORCH": 3, "AZ_NDV5_TUNED": 2, "AZ_NDMV4_AKS": 8, "NT322_TUNED": 5}
    assert sum(r["role"] == "validate" for r in rows) == 19
    assert {r["table"] for r in rows if r["role"] == "degraded"} == {"NT290_DEFAULT", "NT290_RING"}
    assert {r["role"] for r in rows} == {"validate", "degraded", "repeat", "tuned", "other"}
    # spot values as printed in the sources
    spot = {("NT290_DEFAULT", 2**33): 155.57, ("NT290_DEFAULT", 2**26): 137.01,
            ("NT290_RING", 2**32): 89.90, ("NT290_RING", 2**27): 99.88,
            ("NCCL1244", 2**27): 227.14, ("NCCL1244", 2**29): 312.75,
            ("NCCL1368", 2**30): 190.0, ("NT283", 2**29): 350.0,
            ("NEBIUS_TORCH_1", 1000 * 2**20): 434.99, ("NEBIUS_TORCH_2", 100 * 2**20): 307.84,
            ("AZ_NDV5_TORCH", 2**29): 136.0, ("AZ_NDMV4_AKS", 2**26): 134.92,
            ("AZ_NDMV4_AKS", 2**33): 189.20, ("NT322_TUNED", 2**34): 367.29,
            ("NT322_TUNED", 2**31): 212.23}
    got = {(r["table"], int(r["bytes"])): float(r["busbw_gb_s"]) for r in rows
           if r["bytes"] and r["algo"] != "tree"}
    for k, v in spot.items():
        assert got[k] == v, k
    vp = {r["op"]: float(r["busbw_gb_s"]) for r in rows if r["table"] == "VOLTAGE_PARK"}
    assert vp == {"allreduce": 330.93, "all_gather": 323.53}
    # nccl-tests' definitions hold on every printed row: busbw = 2(n-1)/n algbw, algbw = S / t
    # (the Nebius and Azure PyTorch rows print no algbw: their busbw is 2(n-1)/n S / t, which
    # fixes their units: MiB and GiB sizes, nccl-tests' bus bandwidth)
    timed = with_algbw = 0
    for r in rows:
        f = float(bus_factor(r["op"], int(r["nodes"]) * int(r["gpus_per_node"])))
        if r["time_us"]:
            s, t = float(r["bytes"]), float(r["time_us"]) * 1e-6
            assert float(r["busbw_gb_s"]) == pytest.approx(f * s / t / 1e9, rel=0.01), r
            timed += 1
        if r["algbw_gb_s"]:
            assert float(r["busbw_gb_s"]) == pytest.approx(f * float(r["algbw_gb_s"]),
                                                           rel=0.005, abs=0.02), r
            with_algbw += 1
    assert timed == 40 and with_algbw == 35


def test_errors_pinned_per_table():
    # (rows within 10 %, mean |error|, worst |error|) per table, as measured on 1 Dec 2026,
    # NCCL1368 and AZ_NDMV4_AKS under the NIC-share law (before it: (1, 0.1067, 0.2096) and
    # (0, 0.1687, 0.3000)) and the fill-time law (before it: (1, 0.0936, 0.1053) and
    # (6, 0.0580, 0.2082): the 4-NIC RoCE ring and the A100 ramp fill in the fit rows' time),
    # AZ_NDMV4_AKS with that time referred to the fit rows' node, NVLink 4 included (1dc85fc;
    # before it (7, 0.0314, 0.1363))
    pinned = {"NCCL1244": (1, 0.4028, 0.6531), "VOLTAGE_PARK": (2, 0.0250, 0.0331),
              "NCCL1368": (2, 0.0788, 0.0920), "NT283": (1, 0.0981, 0.0981),
              "NEBIUS_TORCH_1": (2, 0.0607, 0.0643), "NEBIUS_TORCH_2": (2, 0.0530, 0.0549),
              "NT290_DEFAULT": (0, 1.7472, 2.0824), "NT290_RING": (0, 2.0636, 2.6523),
              "AZ_NDV5_TORCH": (0, 2.0958, 2.4249), "AZ_NDV5_TUNED": (1, 0.0844, 0.1637),
              "AZ_NDMV4_AKS": (8, 0.0196, 0.0982), "NT322_TUNED": (1, 0.2151, 0.3371)}
    got = hd.summary(hd.errors())
    assert_table_summary(got, pinned, PP)


def test_goal_rows_and_named_misses():
    errs = hd.errors()
    goal = [e for e in errs if e["role"] == "validate"]
    miss = {(e["table"], e["algo"], e["bytes"]): e["error"] for e in goal
            if abs(e["error"]) > hd.GOAL}
    # 7 before the NIC-share law, 13 before the fill-time law, 15 before its NVLink 4 reference
    assert len(goal) == 19 and len(goal) - len(miss) == 16
    # the twin high on H20 after the measured dip at 128 MiB (its NVLSTree; that NCCL ran
    # another algorithm there).  The A100 curve's ramp with 200 Gb/s NICs is within the goal
    # since the fill time is referred to the fit rows' node (64 MiB -9.8 %: -13.6 % with the
    # group's own NVLink in the reference, -20.8 % with the fill a size, -30.0 % before the
    # NIC-share law; 128 MiB -1.8 %, was -4.4 % and -10.6 %; from 256 MiB within 1.1 %).  The 4-NIC RoCE ring (0.95
    # of line rate measured, the law's wire 0.94 x RoCE's 0.97 of IB) came in with the
    # fill-time law: -9.2 % (-10.5 % with the fill a size, -21.0 % before the NIC-share law)
    assert miss == pytest.approx({("NCCL1244", "", "134217728"): 0.535,
                                  ("NCCL1244", "", "268435456"): 0.653,
                                  ("NCCL1244", "", "536870912"): 0.408}, abs=PP)
    a100 = [e["error"] for e in goal if e["table"] == "AZ_NDMV4_AKS"]
    assert a100[0] == pytest.approx(-0.098, abs=PP)
    assert a100[1] == pytest.approx(-0.018, abs=PP)
    assert max(abs(x) for x in a100[2:]) == pytest.approx(0.011, abs=PP)
    ring = [e for e in goal if e["table"] == "NCCL1368" and e["algo"] == "ring"][0]
    assert ring["error"] == pytest.approx(-0.092, abs=PP)
    # the forced classic Tree on the same 4-NIC system: NCCL's Hopper ceiling beyond 2 nodes,
    # 4 channels x 36.0 GB/s (-6.6 %; -8.2 % with the fill a size, -0.4 % at the former fixed
    # share)
    tree = [e for e in goal if e["table"] == "NCCL1368" and e["algo"] == "tree"][0]
    assert tree["error"] == pytest.approx(-0.066, abs=PP)
    # the 248-node H200 row is within the goal by 0.2 points, the twin low
    nt283 = [e for e in goal if e["table"] == "NT283"][0]
    assert -0.10 < nt283["error"] < -0.095 and nt283["twin_algo"] == "nvls_tree"


def test_h20_curve_follows_ring_or_tree_after_its_dip():
    # the measured H20 curve falls from 268.9 to 227.1 GB/s between 64 and 128 MiB, as a curve
    # does where NCCL's tuner changes algorithm; the twin's NVLSTree meets 64 MiB (+1.5 %) and
    # either the twin's Ring or its classic Tree meets 128-512 MiB within 10 %
    by = hd.nccl1244_by_algorithm()
    meas = by["measured"]
    assert meas[1] < meas[0]
    assert by["nvls_tree"][0] / meas[0] - 1 == pytest.approx(0.015, abs=PP)
    for algo in ("ring", "tree"):
        assert np.all(np.abs(by[algo][1:] / meas[1:] - 1) < 0.10), algo
    assert np.all(by["nvls_tree"][1:] / meas[1:] - 1 > 0.40)


def test_forced_rings_share_of_line_rate():
    errs = hd.errors()
    ring290 = [e for e in errs if e["table"] == "NT290_RING"]
    ring1368 = [e for e in errs if e["table"] == "NCCL1368" and e["algo"] == "ring"][0]
    # NDR: NVIDIA's 46-48 GB/s per NIC (nccl-tests issue 290) is 0.92-0.96 of line rate; the
    # degraded system's forced ring reaches 0.22 of it, the 4-NIC RoCE ring 0.95
    assert hd.line_rate_share(ring290[-1]) == pytest.approx(0.225, abs=0.002)
    assert hd.line_rate_share(ring1368) == pytest.approx(0.95, abs=0.002)
    assert all(e["error"] > 0.6 for e in ring290)
    # HD's what-if, on the model before the NIC-share law: a network share limited by the
    # ring's channels (41.4 GB/s per GPU, 0.97 of line rate at most) and no Tree ceiling would
    # bring the 4-NIC ring to -7.8 % and move the forced Tree row from -0.4 % to +16.7 %; the
    # A100 rows (25 GB/s of NIC per GPU) to -18.4 % at 64 MiB and within 8 % from 128 MiB
    what_if = {r["algo"]: v / float(r["busbw_gb_s"]) - 1
               for r, v in hd.channel_limited_ring_what_if("NCCL1368")}
    assert what_if == pytest.approx({"ring": -0.078, "tree": 0.167}, abs=PP)
    a100 = [v / float(r["busbw_gb_s"]) - 1
            for r, v in hd.channel_limited_ring_what_if("AZ_NDMV4_AKS")]
    assert a100[0] == pytest.approx(-0.184, abs=PP) and max(abs(x) for x in a100[1:]) < 0.081
    ring_a100 = [e for e in errs if e["table"] == "AZ_NDMV4_AKS"][-1]
    assert hd.line_rate_share(ring_a100) == pytest.approx(0.946, abs=0.002)


def test_same_system_tuned_and_pytorch_rows():
    # Azure ND H100 v5 (8x NDR per node, NCCL 2.28.9), one author: nccl-tests with
    # NCCL_MIN_NCHANNELS=32 and 4 QPs reaches 482 GB/s on 2 nodes (the twin's default NVLSTree
    # -0.5 %) and 392 on 3 nodes, where the twin's default ring gives 328 (-16.4 %: tuned
    # channels lift the ring to 0.98 of the NICs, as cluster B's tuned rows); the same system
    # through a PyTorch loop with defaults reaches 140 GB/s at 8 GiB, 0.29 of its nccl-tests
    # figure, so those rows measure the harness and are not counted
    err = {(e["table"], int(e["nodes"]), int(e["bytes"])): e["error"] for e in hd.errors()
           if e["table"].startswith("AZ_NDV5")}
    assert err[("AZ_NDV5_TUNED", 2, 2**33)] == pytest.approx(-0.005, abs=PP)
    assert err[("AZ_NDV5_TUNED", 3, 2**33)] == pytest.approx(-0.164, abs=PP)
    assert 392.0 / 400.0 == pytest.approx(0.98)
    torch_8g = [r for r in hd.rows() if r["table"] == "AZ_NDV5_TORCH" and r["bytes"] == str(2**33)]
    assert float(torch_8g[0]["busbw_gb_s"]) / 482.0 == pytest.approx(0.29, abs=0.005)


def test_tuned_ring_on_128_nodes():
    # nccl-tests issue 322: 128 nodes x 8 H100 (RoCE assumed from NCCL_IB_GID_INDEX=3), Ring with
    # LL128, 32 channels and 2 QPs forced, NVLS off.  From 8 GiB the ring holds 365-367 GB/s,
    # 0.92 of 8x 400 Gb/s on 128 nodes; the twin's ring (Simple, the default share of the NICs)
    # gives 264-290 (-28 and -21 %).  From 1 to 2 GiB the measured time barely grows (19.4 ->
    # 20.2 ms): a start-up of about 18 ms on 1024 ranks, which a run at 1 GiB and up cannot split
    rows = {int(r["bytes"]): r for r in hd.rows() if r["table"] == "NT322_TUNED"}
    t = {s: float(r["time_us"]) * 1e-3 for s, r in rows.items()}
    assert t[2**31] - t[2**30] < 1.0 and t[2**34] / t[2**33] == pytest.approx(2.0, abs=0.02)
    assert hd.line_rate_share(rows[2**34]) == pytest.approx(0.918, abs=0.002)
    err = {int(e["bytes"]): e["error"] for e in hd.errors() if e["table"] == "NT322_TUNED"}
    assert err[2**33] == pytest.approx(-0.276, abs=PP) and err[2**34] == pytest.approx(-0.212, abs=PP)
