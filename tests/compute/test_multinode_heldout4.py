"""Held-out tables of helper HP's search (issue 16): OCI bare-metal A100 nodes on 2 nodes over
16 x 100 Gb/s RoCE, NCCL 2.14.3 to 2.29.3 with NCCL's own tuner and with Ring forced; the
transcription and the twin's errors.

Rows in assets/reference/nccl_multinode_heldout4.csv (sources, assumptions and the search record
in nccl_multinode_heldout4_sources.md; the twin's figure per row from
nccl_multinode_heldout4.py).  Each table's rows within 10 %, mean and worst |error| are pinned
in ``PINNED`` below (0.5 percentage points) with the model's defaults, so a change of the model
shows here and is re-pinned in one place; nothing is fitted on these rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reference_scripts import reference_script

from twin.compute.collectives import bus_factor

REF = Path(__file__).resolve().parents[2] / "assets/reference"
hp = reference_script("nccl_multinode_heldout4")

PP = 0.005  # 0.5 percentage points

#: (rows within 10 %, mean |error|, worst |error|) per table, measured on 1 Dec 2026 with the
#: collective model of commit 1dc85fc and its defaults (NIC-share law and fill-time law on, the
#: fill time referred to the fit rows' node with NVLink 4; 3ae0c86 pinned 2219 at (2, 0.1727,
#: 0.2573), its 64 / 128 MiB misses at -25.7 / -14.2 %:
#: ring at min(0.94, 41.4 GB/s / 12.5 GB/s of NIC per GPU) x RoCE's 0.97 of line rate; a
#: classic Tree held to the NICs on 2 nodes).  Re-pin here when the model changes.
PINNED: dict[str, tuple[int, float, float]] = {
    "OCI_A100_2219": (2, 0.1657, 0.2370),
    "OCI_A100_2214": (2, 0.0181, 0.0275),
    "OCI_A100_2225": (3, 0.0544, 0.0596),
    "OCI_A100_2229": (3, 0.0448, 0.0481),
    "OCI_A100_RING_1": (2, 0.0545, 0.0588),
    "OCI_A100_RING_2": (2, 0.0410, 0.0470),
    "OCI_A100_RING_3": (4, 0.0445, 0.0499),
}


def test_transcription():
    rows = hp.rows()
    count: dict[str, int] = {}
    for r in rows:
        count[r["table"]] = count.get(r["table"], 0) + 1
    assert count == {"OCI_A100_2219": 8, "OCI_A100_2214": 2, "OCI_A100_2225": 3,
                     "OCI_A100_2229": 3, "OCI_A100_RING_1": 2, "OCI_A100_RING_2": 2,
                     "OCI_A100_RING_3": 4}
    assert sum(r["role"] == "validate" for r in rows) == 18
    assert {r["table"] for r in rows if r["role"] == "repeat"} == {
        "OCI_A100_RING_2", "OCI_A100_RING_3"}
    # every row from 64 MiB up, printed (no figure from prose), with its time
    assert all(int(r["bytes"]) >= 2**26 and r["figure"] == "table" and r["time_us"]
               for r in rows)
    assert {(r["nodes"], r["gpus_per_node"], r["gpu"], r["nics"], r["nic_gbps"],
             r["transport"]) for r in rows} == {("2", "8", "A100", "16", "100", "roce")}
    assert {r["table"]: r["nccl"] for r in rows} == {
        "OCI_A100_2219": "2.19.3", "OCI_A100_2214": "2.14.3", "OCI_A100_2225": "2.25.1",
        "OCI_A100_2229": "2.29.3", "OCI_A100_RING_1": "2.29.3", "OCI_A100_RING_2": "2.29.3",
        "OCI_A100_RING_3": "2.29.3"}
    assert {r["table"] for r in rows if r["algo"] == "ring"} == {
        "OCI_A100_RING_1", "OCI_A100_RING_2", "OCI_A100_RING_3"}
    # spot values as printed in the sources (out-of-place busbw; in-place where marked)
    got = {(r["table"], int(r["bytes"])): r for r in rows}
    spot = {("OCI_A100_2219", 2**26): 153.13, ("OCI_A100_2219", 2**29): 156.41,
            ("OCI_A100_2219", 2**30): 219.12, ("OCI_A100_2219", 2**33): 237.94,
            ("OCI_A100_2214", 10 * 2**30): 180.06, ("OCI_A100_2225", 2**32): 190.02,
            ("OCI_A100_2229", 2**30): 184.57, ("OCI_A100_RING_1", 10 * 2**30): 191.22,
            ("OCI_A100_RING_2", 2**30): 184.36, ("OCI_A100_RING_3", 2**33): 189.60}
    for k, v in spot.items():
        assert float(got[k]["busbw_gb_s"]) == v, k
    assert float(got[("OCI_A100_2219", 2**29)]["busbw_ip_gb_s"]) == 165.82
    assert float(got[("OCI_A100_2229", 2**30)]["busbw_ip_gb_s"]) == 179.43
    # nccl-tests' definitions hold on every row, out-of-place and in-place:
    # busbw = 2(n-1)/n x S / t with n = 16 ranks, algbw = S / t
    f = float(bus_factor("allreduce", 16))
    assert f == pytest.approx(1.875)
    for r in rows:
        s = float(r["bytes"])
        t, t_ip = float(r["time_us"]) * 1e-6, float(r["time_ip_us"]) * 1e-6
        assert float(r["busbw_gb_s"]) == pytest.approx(f * s / t / 1e9, rel=0.005), r
        assert float(r["algbw_gb_s"]) == pytest.approx(s / t / 1e9, rel=0.005), r
        assert float(r["busbw_ip_gb_s"]) == pytest.approx(f * s / t_ip / 1e9, rel=0.005), r


def test_errors_pinned_per_table():
    got = hp.summary(hp.errors())
    assert set(got) == set(PINNED)
    for t, (within, mean, worst) in PINNED.items():
        assert got[t]["within"] == within, t
        assert got[t]["mean"] == pytest.approx(mean, abs=PP), t
        assert got[t]["worst"] == pytest.approx(worst, abs=PP), t
    errs = hp.errors()
    goal = [e for e in errs if e["role"] == "validate"]
    assert sum(abs(e["error"]) <= hp.GOAL for e in goal) == 12
    # the twin's tuner runs Ring on every row (2 A100 nodes, no NVLS)
    assert {e["twin_algo"] for e in errs} == {"ring"}


def test_named_misses():
    # the six goal rows that miss are all NCCL 2.19.3's: its ring ramps faster than the twin's
    # at 64 and 128 MiB, and from 1 GiB it runs a Tree above the NICs (next test)
    miss = {int(e["bytes"]): e["error"] for e in hp.errors()
            if e["role"] == "validate" and abs(e["error"]) > hp.GOAL}
    assert miss == pytest.approx({2**26: -0.230, 2**27: -0.123, 2**30: -0.195,
                                  2**31: -0.186, 2**32: -0.233, 2**33: -0.237}, abs=PP)


def test_two_node_tree_above_the_nics():
    # NCCL 2.19.3 from 1 GiB: 1.10-1.19 of the NICs' 200 GB/s, which no ring carries; the other
    # versions stay at 0.86-0.96 (a ring's share)
    above = [(e["table"], int(e["bytes"])) for e in hp.errors() if hp.above_the_nics(e)]
    assert above == [("OCI_A100_2219", 2**30), ("OCI_A100_2219", 2**31),
                     ("OCI_A100_2219", 2**32), ("OCI_A100_2219", 2**33)]
    shares = [e["share"] for e in hp.errors() if e["table"] != "OCI_A100_2219"]
    assert min(shares) == pytest.approx(0.855, abs=0.001)
    assert max(shares) == pytest.approx(0.956, abs=0.001)
    # the what-if (not the model): a classic Tree crossing the NICs once on 2 nodes is held
    # by NVLink (the twin's one-node A100 all-reduce) and lands within 7.2 % of those rows
    rows = {int(r["bytes"]): r for r in hp.rows() if r["table"] == "OCI_A100_2219"}
    what_if = {s: hp.tree_once_what_if(rows[s]) / float(rows[s]["busbw_gb_s"]) - 1.0
               for s in (2**30, 2**31, 2**32, 2**33)}
    assert what_if == pytest.approx({2**30: 0.064, 2**31: 0.072, 2**32: 0.008, 2**33: 0.003},
                                    abs=PP)


def test_ring_run_to_run_spread():
    spread = hp.ring_spread()
    assert set(spread) == {2**30, 10 * 2**30}
    n, lo, hi, rel = spread[2**30]
    assert (n, lo, hi) == (3, 184.36, 186.67) and rel == pytest.approx(0.0124, abs=0.0005)
    n, lo, hi, rel = spread[10 * 2**30]
    assert (n, lo, hi) == (2, 188.21, 191.22) and rel == pytest.approx(0.0159, abs=0.0005)
