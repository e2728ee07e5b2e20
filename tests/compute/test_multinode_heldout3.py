"""Held-out multi-node NCCL measurements where a GPU does not have one 400G NIC of its own
(issue 16, helper HG): the transcription and the twin's errors.

Tables in assets/reference/nccl_multinode_heldout3.csv (sources and assumptions in
nccl_multinode_heldout3_sources.md; the twin's figure per row from nccl_multinode_heldout3.py).
Each table's rows within 10 %, mean and worst |error| are pinned in ``PINNED`` below (0.5
percentage points), three times: with the NIC-share law of twin.compute.collectives off (the
model before commit 7b12f87), on (``nic_share_law``, commit 38e8f77, the default from 7b12f87),
both with the fill a size, and with the fill-time law on as well (``fill_time_law``, its second
version, the default since HM2); each set is run with both switches given explicitly, so the pins
do not depend on the module's defaults.  A change of the model shows here and is re-pinned in
one place; nothing is fitted on these rows.
"""

from __future__ import annotations

from collections import Counter

import pytest
from reference_scripts import assert_table_summary, reference_script

from twin.compute.collectives import bus_factor

hg = reference_script("nccl_multinode_heldout3")

PP = 0.005  # 0.5 percentage points

#: (rows within 10 %, mean |error|, worst |error|) per table, as measured on 1 Dec 2026 with
#: the collective model of commits 38e8f77 and 7b12f87 (identical numbers): "law_off" the fitted
#: ring share (0.827 of line rate on IB, 0.802 on RoCE, NVLSTree x1.121, fill 39.1 MB), the
#: default before 7b12f87; "law_on" the same with ``nic_share_law=True`` (ring share
#: min(0.94, 41.4 GB/s / NIC share per GPU), classic Tree at NCCL's per-channel ceiling), the
#: default from 7b12f87; both with the fill a size (``fill_time_law=False``, 39.1 MB at every
#: bandwidth).  "fill_time": the NIC-share law and the fill-time law (second version: the fill a
#: time per algorithm, S_0 = 39.1 MB x B_alg / B_alg,ref), the default since HM2; measured the
#: same day.  Re-pin here when the model changes.
PINNED: dict[str, dict[str, tuple[int, float, float]]] = {
    "law_off": {
        "KESTREL_AR": (0, 0.2149, 0.4240),
        "KESTREL_AG": (0, 0.4093, 0.4839),
        "NT100": (1, 0.0960, 0.0960),
        "NT277_4NIC": (1, 0.0576, 0.0576),
        "NT277_2NIC": (1, 0.0833, 0.0833),
        "NT169": (0, 0.4161, 0.9912),
        "NCCL812_RING": (0, 0.3747, 0.3747),
        "NT156_BM": (0, 0.1668, 0.1668),
        "NT156_VM": (1, 0.0525, 0.0525),
        "NCCL949_RING": (0, 0.1407, 0.1407),
        "NT380_BM": (1, 0.0834, 0.0834),
        "NT380_VM": (0, 0.9260, 0.9260),
    },
    "law_on": {
        "KESTREL_AR": (5, 0.1097, 0.3482),
        "KESTREL_AG": (0, 0.3398, 0.4256),
        "NT100": (1, 0.0274, 0.0274),
        "NT277_4NIC": (0, 0.2021, 0.2021),
        "NT277_2NIC": (1, 0.0419, 0.0419),
        "NT169": (1, 0.5547, 1.2625),
        "NCCL812_RING": (0, 0.5625, 0.5625),
        "NT156_BM": (1, 0.0530, 0.0530),
        "NT156_VM": (0, 0.1962, 0.1962),
        "NCCL949_RING": (1, 0.0233, 0.0233),
        "NT380_BM": (1, 0.0985, 0.0985),
        "NT380_VM": (0, 0.9529, 0.9529),
    },
    "fill_time": {
        "KESTREL_AR": (6, 0.0413, 0.1376),
        "KESTREL_AG": (0, 0.1976, 0.2657),
        "NT100": (1, 0.0305, 0.0305),
        "NT277_4NIC": (0, 0.2032, 0.2032),
        "NT277_2NIC": (1, 0.0436, 0.0436),
        "NT169": (1, 0.5582, 1.2693),
        "NCCL812_RING": (0, 0.5648, 0.5648),
        "NT156_BM": (1, 0.0519, 0.0519),
        "NT156_VM": (0, 0.1976, 0.1976),
        "NCCL949_RING": (1, 0.0214, 0.0214),
        "NT380_BM": (1, 0.0992, 0.0992),
        "NT380_VM": (0, 0.9541, 0.9541),
    },
}
#: (nic_share_law, fill_time_law) of each pin set
LAW = {"law_off": (False, False), "law_on": (True, False), "fill_time": (True, True)}


def test_transcription():
    rows = hg.rows()
    count = Counter(r["table"] for r in rows)
    assert count == {"KESTREL_AR": 7, "KESTREL_AG": 2, "NT100": 1, "NT277_4NIC": 1,
                     "NT277_2NIC": 1, "NT169": 5, "NCCL812_RING": 1, "NT156_BM": 1,
                     "NT156_VM": 1, "NCCL949_RING": 1, "NT380_BM": 1, "NT380_VM": 1}
    assert {r["role"] for r in rows} == {"validate", "other", "degraded"}
    assert sum(r["role"] == "validate" for r in rows) == 11
    assert {r["table"] for r in rows if r["role"] == "degraded"} == {
        "NCCL812_RING", "NT156_VM", "NT380_VM"}
    # every row from 64 MiB up, or a figure for a sweep that starts there or above
    assert all(float(r["bytes"] or r["min_bytes"]) >= 2**26 for r in rows)
    # spot values as printed in the sources
    got = {(r["table"], r["nodes"], r["bytes"]): float(r["busbw_gb_s"]) for r in rows}
    spot = {("KESTREL_AR", "16", str(2**26)): 41.91, ("KESTREL_AR", "16", str(2**29)): 45.26,
            ("KESTREL_AR", "16", str(2**32)): 45.72, ("KESTREL_AG", "16", str(2**27)): 41.92,
            ("NT100", "2", ""): 91.0, ("NT277_4NIC", "2", ""): 78.0,
            ("NT277_2NIC", "2", ""): 45.0, ("NT169", "3", ""): 70.0, ("NT169", "6", ""): 40.0,
            ("NCCL812_RING", "2", ""): 60.0, ("NT156_BM", "2", ""): 96.0,
            ("NT156_VM", "2", ""): 76.0, ("NCCL949_RING", "2", ""): 48.0,
            ("NT380_BM", "2", ""): 320.0, ("NT380_VM", "2", ""): 180.0}
    for k, v in spot.items():
        assert got[k] == v, k
    kestrel = [r for r in rows if r["table"].startswith("KESTREL")]
    assert {(r["nics"], r["nic_gbps"], r["gpus_per_node"], r["nccl"]) for r in kestrel} == {
        ("2", "200", "4", "2.21.5")}
    # nccl-tests' definitions hold on every printed row: busbw = F(n) S / t and F(n) algbw,
    # F = 2(n-1)/n for all-reduce, (n-1)/n for all-gather (n = 64 ranks)
    timed = 0
    for r in rows:
        if not r["time_us"]:
            continue
        f = float(bus_factor(r["op"], int(r["nodes"]) * int(r["gpus_per_node"])))
        s, t = float(r["bytes"]), float(r["time_us"]) * 1e-6
        assert float(r["busbw_gb_s"]) == pytest.approx(f * s / t / 1e9, rel=0.005), r
        assert float(r["algbw_gb_s"]) == pytest.approx(s / t / 1e9, rel=0.005), r
        assert float(r["busbw_gb_s"]) == pytest.approx(f * float(r["algbw_gb_s"]), abs=0.02), r
        timed += 1
    assert timed == 9


@pytest.mark.parametrize("state", sorted(PINNED))
def test_errors_pinned_per_table(state):
    law, fill_time = LAW[state]
    if law and not hg.law_available():
        pytest.skip("the model in the tree has no nic_share_law switch")
    got = hg.summary(hg.errors(law=law, fill_time=fill_time))
    pinned = PINNED[state]
    assert_table_summary(got, pinned, PP)


def test_sweep_rows_take_the_twins_peak_over_their_sweep():
    r = [x for x in hg.rows() if x["table"] == "NT100"][0]
    s = hg.sizes_bytes(r)
    assert s[0] == 2**30 and s[-1] == 2**33 and len(s) == 4
    r2 = [x for x in hg.rows() if x["table"] == "NT277_4NIC"][0]
    assert hg.sizes_bytes(r2)[-1] == 2**34
    bw, _, size = hg.twin_gb_s(r)
    assert size in s and bw > 0


def test_shares_of_line_rate():
    errs = {(e["table"], e["nodes"], e["bytes"]): e
            for e in hg.errors(law=False, fill_time=False)}
    # Kestrel: 2 GPUs per 200G NIC (12.5 GB/s per GPU), 16 nodes, the ring at 4 GiB carries
    # 0.914 of the NICs' line rate, where the twin's ring (RoCE share 0.802) gives 0.79
    k = errs[("KESTREL_AR", "16", str(2**32))]
    assert k["share"] == pytest.approx(0.914, abs=0.002)
    assert k["twin_algo"] == "ring" and k["twin_share"] < 0.80
    # the 2-node A100 figures with fewer NICs than GPUs reach 0.90-0.91 of line rate, with one
    # NIC per GPU 0.78 (nccl-tests issue 277: same author, same nodes, 2 against 4 NICs)
    assert errs[("NT100", "2", "")]["share"] == pytest.approx(0.91)
    assert errs[("NT277_2NIC", "2", "")]["share"] == pytest.approx(0.90)
    assert errs[("NT277_4NIC", "2", "")]["share"] == pytest.approx(0.78)
    # 8x 100G RoCE A100: the share falls with the node count (0.70 on 3 nodes, 0.40 on 6),
    # which no fixed or per-GPU-bandwidth share reproduces
    nt169 = [errs[("NT169", str(n), "")]["share"] for n in (3, 4, 5, 6)]
    assert nt169 == pytest.approx([0.70, 0.58, 0.58, 0.40])
    sh = {(t, n, kind): share for t, _, _, n, share, kind, _ in hg.shares()}
    assert sh[("B", 8, "ring")] == pytest.approx(0.802, abs=0.002)
    assert sh[("NCCL1368", 5, "ring")] == pytest.approx(0.95, abs=0.002)


def test_named_misses():
    # the goal rows that miss, law off: the 8x 100G RoCE A100 cluster on 2-6 nodes (its
    # measured share falls from 1.00 on 2 nodes to 0.40 on 6; the twin's stays at 0.80), the
    # A800 with 4x 200G RoCE on bare metal and the A100 VMs' forced Ring over 2x HDR, both at
    # 0.96 of line rate where the twin's ring takes 0.80-0.83
    miss = {(e["table"], e["nodes"]): e["error"] for e in hg.errors(law=False, fill_time=False)
            if e["role"] == "validate" and abs(e["error"]) > hg.GOAL}
    assert miss == pytest.approx({("NT169", "2"): -0.202, ("NT169", "3"): 0.139,
                                  ("NT169", "4"): 0.374, ("NT169", "5"): 0.374,
                                  ("NT169", "6"): 0.991, ("NT156_BM", "2"): -0.167,
                                  ("NCCL949_RING", "2"): -0.141}, abs=PP)
    goal = [e for e in hg.errors(law=False, fill_time=False) if e["role"] == "validate"]
    assert len(goal) == 11 and sum(abs(e["error"]) <= hg.GOAL for e in goal) == 4
    if not hg.law_available():
        return
    # law on: 6 of 11 goal rows within 10 %; NT169 on 2 nodes, the A800 and the forced Ring
    # over 2x HDR come in, NT169 from 3 nodes moves further out and the 4-NIC run of nccl-tests
    # issue 277 (0.78 of line rate measured) leaves the goal (+20.2 %); Kestrel's ring from
    # 1 GiB comes to -1.7 to -2.9 % (from -11.7 to -14.5 %)
    errs_on = hg.errors(law=True, fill_time=False)
    goal_on = [e for e in errs_on if e["role"] == "validate"]
    assert sum(abs(e["error"]) <= hg.GOAL for e in goal_on) == 6
    law = {(e["table"], e["nodes"], e["bytes"]): e["error"] for e in errs_on}
    assert law[("NT156_BM", "2", "")] == pytest.approx(-0.053, abs=PP)
    assert law[("NCCL949_RING", "2", "")] == pytest.approx(-0.023, abs=PP)
    assert law[("NT169", "2", "")] == pytest.approx(-0.093, abs=PP)
    assert law[("NT169", "6", "")] == pytest.approx(1.262, abs=PP)
    assert law[("NT277_4NIC", "2", "")] == pytest.approx(0.202, abs=PP)
    assert law[("KESTREL_AR", "16", str(2**32))] == pytest.approx(-0.017, abs=PP)
    off = {(e["table"], e["nodes"], e["bytes"]): e["error"]
           for e in hg.errors(law=False, fill_time=False)}
    assert off[("KESTREL_AR", "16", str(2**32))] == pytest.approx(-0.135, abs=PP)
    # fill-time law on as well (the default since HM2): still 6 of 11 goal rows (the rule asked
    # that they not fall: they are sweep peaks at 8-16 GiB where the fill is < 0.5 % of the
    # time); the H200 NVLSTree row stays in by 0.1 point (+9.85 -> +9.92 %); Kestrel's ring
    # all-reduce (not a goal row) at 64 / 128 MiB -34.8 / -19.8 % -> -13.8 / -5.5 %
    errs_ft = hg.errors(law=True, fill_time=True)
    assert sum(abs(e["error"]) <= hg.GOAL for e in errs_ft if e["role"] == "validate") == 6
    ft = {(e["table"], e["nodes"], e["bytes"]): e["error"] for e in errs_ft}
    assert ft[("NT380_BM", "2", "")] == pytest.approx(0.0992, abs=0.0005)
    assert ft[("NT169", "2", "")] == pytest.approx(-0.091, abs=PP)
    assert ft[("KESTREL_AR", "16", str(2**26))] == pytest.approx(-0.138, abs=PP)
    assert ft[("KESTREL_AR", "16", str(2**27))] == pytest.approx(-0.055, abs=PP)
    assert law[("KESTREL_AR", "16", str(2**26))] == pytest.approx(-0.348, abs=PP)
