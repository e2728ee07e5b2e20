"""The issue-16 goal rows the collective model misses, each with its class
(assets/reference/nccl_goal_misses.py): a model change that moves a row in or out of the goal, or
from one class to another, fails here and has to update the table knowingly."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference_scripts import reference_script

REF = Path(__file__).resolve().parents[2] / "assets/reference"


@pytest.fixture(scope="module")
def gm():
    return reference_script("nccl_goal_misses")


@pytest.fixture(scope="module")
def result(gm):
    rows = gm.goal_rows()
    misses = gm.classify(rows)
    return rows, misses, {m.row.label: m for m in misses}


#: every miss of the shipped model, by label: (class, error [-])
EXPECTED = {
    "A 4n allreduce 64 MiB": ("c", -0.117),
    "B 8n allreduce 128 MiB": ("c", 0.101),
    "B 8n allreduce 256 MiB": ("c", 0.100),
    "C 10n allreduce 64 MiB": ("a", 0.295),
    "C 10n allreduce 128 MiB": ("c", 0.150),
    "C 10n all_gather 255 MiB": ("c", 0.331),
    "C 10n all_gather 511 MiB": ("c", 0.140),
    "C 10n reduce_scatter 63 MiB": ("c", 0.221),
    "C 10n reduce_scatter 127 MiB": ("c", 0.143),
    "C 10n reduce_scatter 255 MiB": ("c", 0.372),
    "C 10n reduce_scatter 511 MiB": ("c", 0.162),
    "C 10n all_to_all 63 MiB": ("c", -0.124),
    "RoCE NVLS 2n allreduce 8192 MiB": ("b", 0.115),
    "NDMV4 2n all_to_all 1024 MiB": ("c", 0.132),
    "NDMV4 2n all_to_all 4096 MiB": ("c", 0.157),
    "NCCL1244 2n allreduce 128 MiB": ("b", 0.535),
    "NCCL1244 2n allreduce 256 MiB": ("b", 0.653),
    "NCCL1244 2n allreduce 512 MiB": ("b", 0.408),
    # HG's second held-out set (nccl_multinode_heldout3.csv)
    "NT277_4NIC 2n allreduce peak": ("c", 0.203),
    "NT169 3n allreduce peak": ("b", 0.299),
    "NT169 4n allreduce peak": ("b", 0.567),
    "NT169 5n allreduce peak": ("b", 0.566),
    "NT169 6n allreduce peak": ("b", 1.269),
    # HP's third held-out set (nccl_multinode_heldout4.csv): the NCCL 2.19.3 run on OCI A100
    "OCI_A100_2219 2n allreduce 64 MiB": ("c", -0.230),
    "OCI_A100_2219 2n allreduce 128 MiB": ("c", -0.123),
    "OCI_A100_2219 2n allreduce 1024 MiB": ("a", -0.195),
    "OCI_A100_2219 2n allreduce 2048 MiB": ("c", -0.186),
    "OCI_A100_2219 2n allreduce 4096 MiB": ("a", -0.233),
    "OCI_A100_2219 2n allreduce 8192 MiB": ("c", -0.237),
}


def test_goal_counts_and_classes(gm, result):
    rows, misses, by_label = result
    assert gm.counts(rows, misses) == {
        "107": {"rows": 107, "within": 89, "a": 1, "b": 4, "c": 13},
        "118": {"rows": 118, "within": 95, "a": 1, "b": 8, "c": 14},
        "136": {"rows": 136, "within": 107, "a": 3, "b": 8, "c": 18},
    }
    assert {k: m.cls for k, m in by_label.items()} == {k: v[0] for k, v in EXPECTED.items()}
    for k, (_, err) in EXPECTED.items():
        assert by_label[k].row.error == pytest.approx(err, abs=0.002), k
    # the 107 rows are the docs' goal set: 17 fit rows, the rest held out
    assert sum(x.table == "A/B fit" for x in rows) == 17
    assert sum(x.goal_set == "HG" for x in rows) == 11
    assert sum(x.goal_set == "HP" for x in rows) == 18


def test_class_a_minimax_by_hand(gm, result):
    # the one configuration whose measurements are more than 10 % apart: cluster C's all-reduce at
    # 64 MiB, run 1 141.02 and run 2 175.64 GB/s (nccl_multinode_h100_10node.csv)
    _, _, by_label = result
    m = by_label["C 10n allreduce 64 MiB"]
    assert m.figures["values"] == [141.02, 175.64]
    assert m.figures["minimax"] == pytest.approx((175.64 - 141.02) / (175.64 + 141.02))
    assert m.figures["minimax"] == pytest.approx(0.10933, abs=1e-5)
    # OCI A100 on 2 nodes (heldout4): NCCL 2.19.3 against 2.14.3 / 2.25.1 / 2.29.3 on the same
    # nodes (the version is not part of a configuration): 1 GiB 219.12 / 170.99 / 186.83 / 184.57,
    # 4 GiB 235.63 / 190.02 / 188.50 GB/s
    oci = {1024: ([219.12, 170.99, 186.83, 184.57], (219.12 - 170.99) / (219.12 + 170.99)),
           4096: ([235.63, 190.02, 188.50], (235.63 - 188.50) / (235.63 + 188.50))}
    for size, (vals, mm) in oci.items():
        m = by_label[f"OCI_A100_2219 2n allreduce {size} MiB"]
        assert sorted(m.figures["values"]) == sorted(vals) and m.figures["minimax"] == pytest.approx(mm)
    assert by_label["OCI_A100_2219 2n allreduce 1024 MiB"].figures["minimax"] == pytest.approx(
        0.1234, abs=1e-4)
    # the misses whose configuration has a second measurement that agrees (minimax <= 10 %):
    # A and B on 4 nodes at 64 MiB; C's two runs of the all-reduce at 128 MiB and the all-gather
    hand = {"A 4n allreduce 64 MiB": (224.53, 208.34),
            "C 10n allreduce 128 MiB": (211.96, 203.35),
            "C 10n all_gather 255 MiB": (150.13, 143.71),
            "C 10n all_gather 511 MiB": (218.53, 223.81),
            "OCI_A100_2219 2n allreduce 2048 MiB": (220.16, 189.15, 187.28)}
    for k, v in hand.items():
        assert sorted(by_label[k].figures["values"]) == sorted(v), k
        assert by_label[k].figures["minimax"] == pytest.approx((max(v) - min(v))
                                                               / (max(v) + min(v))), k
        assert by_label[k].figures["minimax"] < 0.10
    # every other miss has one measurement of its configuration
    for k, m in by_label.items():
        if k not in hand and m.cls != "a":
            assert m.figures["values"] == [m.row.measured], k
    assert gm.minimax_error([1.0, 1.0]) == 0.0
    assert gm.minimax_error([90.0, 110.0]) == pytest.approx(0.10)


def test_class_b_evidence(result):
    _, _, by_label = result
    # RoCE, 2 nodes with NVLS: with the node's own NVLS at the 430 GB/s the issue reports on one
    # node, the twin's two-node figure is within 1 %
    roce = by_label["RoCE NVLS 2n allreduce 8192 MiB"].figures
    assert roce["one_node"] == pytest.approx(477.9, abs=0.2)
    assert roce["two_node_at_430"] == pytest.approx(431.4, abs=0.3)
    # H20: the twin's Ring and classic Tree are within 10 % at each size after the dip
    for size, ring, tree in ((128, 223.6, 229.6), (256, 266.8, 263.9), (512, 295.4, 285.1)):
        f = by_label[f"NCCL1244 2n allreduce {size} MiB"]
        assert f.figures["ring"] == pytest.approx(ring, abs=0.2)
        assert f.figures["tree"] == pytest.approx(tree, abs=0.2)
        assert abs(f.figures["ring"] / f.row.measured - 1) < 0.10
    # nccl-tests 169: the system's own share of line rate falls with the nodes
    assert by_label["NT169 6n allreduce peak"].figures["share"] == {2: 1.0, 3: 0.7, 4: 0.58,
                                                                    5: 0.58, 6: 0.4}


def test_class_c_evidence(result):
    _, _, by_label = result
    # C's all-to-all at 64 MiB: its own curve's fill (16.5 MB) would meet it; the module keeps
    # 30.4 MB for the MoE step times
    a2a = by_label["C 10n all_to_all 63 MiB"].figures
    assert a2a["fill_bytes"] == pytest.approx(16.5e6, rel=0.01)
    assert a2a["twin_with_fill"] / 39.87 - 1 == pytest.approx(0.019, abs=0.003)
    # C's rings: a fixed cost 0.25 ms above the twin's
    ag = by_label["C 10n all_gather 255 MiB"].figures
    assert ag["meas_a_s"] == pytest.approx(0.775e-3, abs=0.005e-3)
    assert ag["twin_a_s"] == pytest.approx(0.525e-3, abs=0.005e-3)
    # C's fabric is not stated: as RoCE the 512 MiB all-gather would be within 10 % (a check,
    # not the class: nothing points to RoCE), the 256 MiB one not
    assert abs(by_label["C 10n all_gather 511 MiB"].figures["roce_error"]) < 0.10
    assert by_label["C 10n all_gather 255 MiB"].figures["roce_error"] > 0.30
    # NDm A100 v4 all-to-all at 0.81 of one NIC, the twin 0.91-0.93, C's H100 0.91-0.92
    nd = by_label["NDMV4 2n all_to_all 4096 MiB"].figures
    assert nd["share"] == pytest.approx(0.807, abs=0.001)
    assert 0.91 < nd["c_share"][0] < nd["c_share"][1] < 0.93
    # OCI A100, NCCL 2.19.3 from 2 GiB: 1.10-1.19 of the NICs (a classic Tree); the twin's Tree is
    # held to the NICs (-24 / -29 %), a Tree crossing them once would be +7.2 / +0.3 %
    for size, share, tree, what_if in ((2048, 1.10, -0.238, 0.072), (8192, 1.19, -0.285, 0.003)):
        f = by_label[f"OCI_A100_2219 2n allreduce {size} MiB"]
        assert f.figures["share"] == pytest.approx(share, abs=0.005)
        assert f.figures["tree"] / f.row.measured - 1 == pytest.approx(tree, abs=0.002)
        assert f.figures["what_if"] / f.row.measured - 1 == pytest.approx(what_if, abs=0.002)
    # AKS NDm A100 v4 at 64 MiB is no longer a miss since the fill-time law's reference is the
    # fit rows' node (-13.6 -> -9.8 %; FILL_REF_NVLINK_GB_S)
    assert "AZ_NDMV4_AKS 2n allreduce 64 MiB" not in by_label


def test_a_new_miss_needs_a_class(gm, result, monkeypatch):
    rows, _, _ = result
    monkeypatch.delitem(gm.CLASSES, "B 8n allreduce 256 MiB")
    with pytest.raises(KeyError, match="B 8n allreduce 256 MiB"):
        gm.classify(rows)


def test_docs_state_the_counts(gm, result):
    # docs/validation.md's collective summary and README's known limits say what the model gives
    rows, misses, _ = result
    c = gm.counts(rows, misses)
    docs = (Path(__file__).resolve().parents[2] / "docs/validation.md").read_text()
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for text in (docs, readme):
        flat = " ".join(text.split())
        assert f"{c['107']['within']} of 107" in flat
        assert f"{c['136']['within']} of 136" in flat
    assert f"**{c['118']['within']} of 118**" in docs
