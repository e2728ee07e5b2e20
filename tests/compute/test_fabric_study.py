"""The fabric study: where the fabric choice matters (dense vs MoE, alone vs sharing)."""

import json
from pathlib import Path

import pytest

from twin.cli.estimate import run_estimate_cli
from twin.compute.fabric_study import fabric_study


@pytest.fixture(scope="module")
def rows():
    return fabric_study(128)


def _get(rows, fabric, workload, routing="adaptive", kind=None):
    return [r for r in rows if r["fabric"] == fabric and r["workload"] == workload
            and r["routing"] == routing and (kind is None or r["kind"] == kind)]


def test_dense_job_alone_does_not_care_about_the_400g_fabric(rows):
    # the observation, kept: rail-optimised, fat tree and 2:1 RoCE CLOS give the
    # same tokens for a dense job alone on 8x400G (data parallel traffic hides)
    for fab in ("ib_fat_tree_400g", "roce_clos_400g_2to1"):
        (r,) = _get(rows, fab, "dense_alone")
        assert r["vs_ib_rail"] == pytest.approx(1.0, abs=0.01)


def test_vela_like_100g_costs_dense_some_and_moe_half(rows):
    (dense,) = _get(rows, "vela_roce_clos_100g", "dense_alone")
    (moe,) = _get(rows, "vela_roce_clos_100g", "moe_alone")
    assert 0.80 < dense["vs_ib_rail"] < 0.95
    assert moe["vs_ib_rail"] < 0.65
    assert moe["vs_ib_rail"] < dense["vs_ib_rail"] - 0.2


def test_moe_all_to_all_feels_the_oversubscribed_clos(rows):
    (moe,) = _get(rows, "roce_clos_400g_2to1", "moe_alone")
    assert moe["vs_ib_rail"] < 0.9
    # the bandwidth it gets is what the 2:1 uplinks leave for an all-to-all
    assert moe["bandwidth_gbps"] < 0.6 * 3200


def test_sharing_spines_with_static_ecmp_costs_more_than_with_adaptive_routing(rows):
    for fab in ("ib_fat_tree_400g", "roce_clos_400g_2to1", "vela_roce_clos_100g"):
        ad = _get(rows, fab, "shared_3dense_1moe", "adaptive")
        ec = _get(rows, fab, "shared_3dense_1moe", "ecmp")
        assert all(e["tokens_per_s_per_gpu"] <= a["tokens_per_s_per_gpu"] * (1 + 1e-9)
                   for a, e in zip(ad, ec, strict=True))
    # the MoE job loses most when it shares
    ec = _get(rows, "vela_roce_clos_100g", "shared_3dense_1moe", "ecmp")
    assert min(ec, key=lambda r: r["vs_ib_rail"])["kind"] == "moe"


def test_cli_json_and_bad_node_count(capsys):
    assert run_estimate_cli(["fabric-study", "--nodes", "32", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"fabric", "workload", "routing", "vs_ib_rail"} <= set(out["rows"][0])
    assert run_estimate_cli(["fabric-study", "--nodes", "12"]) == 2
    assert "--nodes 12" in capsys.readouterr().err


FABRIC_NAMES = {"ib_fat_tree_400g": "fat tree, IB 400G", "roce_clos_400g_2to1": "CLOS 2:1, RoCE 400G",
                "vela_roce_clos_100g": "Vela-like CLOS, RoCE 100G"}


def docs_table_lines(rows) -> list[str]:
    """docs/validation.md's fabric-study table body: tokens per GPU against rail-optimised
    IB, each job kind's lowest (the shared dense jobs coincide)."""
    def vs(fab, workload, routing="adaptive", kind=None):
        return min(r["vs_ib_rail"] for r in _get(rows, fab, workload, routing, kind))
    lines = []
    for fab, name in FABRIC_NAMES.items():
        shared = [f"{vs(fab, 'shared_3dense_1moe', 'adaptive', k):.2f} / "
                  f"{vs(fab, 'shared_3dense_1moe', 'ecmp', k):.2f}" for k in ("dense", "moe")]
        lines.append(f"| {name} | {vs(fab, 'dense_alone'):.2f} | {vs(fab, 'moe_alone'):.2f} | "
                     f"{shared[0]} | {shared[1]} |")
    return lines


def test_the_docs_table_is_the_studys(rows):
    docs = set((Path(__file__).resolve().parents[2] / "docs/validation.md").read_text().splitlines())
    stale = [line for line in docs_table_lines(rows) if line not in docs]
    assert not stale, "re-print the fabric-study table in docs/validation.md:\n" + "\n".join(stale)
