"""Multi-node collectives against published nccl-tests tables (issue 16).

Tables in assets/reference/ (sources in their headers): two DGX/HGX H100 clusters A and B on
2-8 nodes (all-reduce, nccl-tests issue 309), a 10-node H100 cluster C with all-reduce,
all-gather, reduce-scatter and all-to-all (github.com/xxrjun/nccl-tests-cluster, two runs),
and an H100 RoCE cluster (nccl issue 1221).  Goal: within 10 % from 64 MB up.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from reference_scripts import reference_script

from twin.compute.collectives import (
    NVLS_TREE_TUNER_FRACTION,
    bus_factor,
    collective_algorithm,
    collective_bandwidths_gb_s,
    collective_time_s,
    nccl_ring_latency_us,
    nccl_tuner_prefers_ring,
)

REF = Path(__file__).resolve().parents[2] / "assets/reference"
MIN_BYTES = 64e6  # the 64 MiB rows (all-gather etc. round the size down to a multiple of 80 ranks)


def _table(name: str) -> list[dict]:
    with open(REF / name) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _twin_gb_s(r: dict, **kw) -> float:
    return float(collective_bandwidths_gb_s(
        r.get("op", "allreduce"), float(r["bytes"]), int(r["nodes"]), 8,
        nvls_tree_tuner_fraction=float(r["nvls_tree_tuner_fraction"]), **kw)["busbw_gb_s"])


def _errors(rows: list[dict]) -> dict[tuple, float]:
    return {(r["op"], int(r["bytes"])): _twin_gb_s(r) / float(r["busbw_gb_s"]) - 1 for r in rows}


def test_ten_node_cluster_all_four_collectives():
    # cluster C: 10 nodes x 8 H100, NCCL 2.29.2 defaults; nothing fitted on these rows except
    # the cluster's tuner fraction (read off its own all-reduce switch)
    rows = [r for r in _table("nccl_multinode_h100_10node.csv")
            if r["run"] == "1" and int(r["bytes"]) >= MIN_BYTES]
    err = _errors(rows)
    assert {op for op, _ in err} == {"allreduce", "all_gather", "reduce_scatter", "all_to_all"}
    assert len(err) == 36
    over = {k for k, v in err.items() if abs(v) > 0.10}
    # Named misses, each at its measured error (docs/validation.md, "where the misses come
    # from"; test_ring_fixed_cost_is_a_constant_per_cluster):
    # - all-gather / reduce-scatter 256-512 MiB, reduce-scatter 64-128 MiB: C's rings carry
    #   0.70-0.78 ms of fixed cost (both runs), about 0.37 ms more per collective than
    #   cluster B's rings at the same per-step cost; the twin has 0.53 ms, fitted on B;
    # - all-reduce 64 and 128 MiB (NVLSTree): the same cluster is slower at mid sizes; its
    #   two runs differ by 25 % at 64 MiB (141 and 176 GB/s, the twin 183);
    # - all-to-all 64 MiB: this curve's own fill is 16.5 MB, the twin keeps 30.4 MB
    #   (A2A_FILL_S0_BYTES: the measured value would put the Grok-1 MoE step times above
    #   the 3 % goal).
    known = {("allreduce", 2**26): 0.295, ("allreduce", 2**27): 0.150,
             ("all_gather", 268435200): 0.331, ("all_gather", 536870400): 0.140,
             ("reduce_scatter", 67107840): 0.221, ("reduce_scatter", 134216960): 0.143,
             ("reduce_scatter", 268435200): 0.372, ("reduce_scatter", 536870400): 0.162,
             ("all_to_all", 67107840): -0.124}
    assert over == set(known), over ^ set(known)  # 27 of 36 rows within 10 %
    for k, v in known.items():
        assert err[k] == pytest.approx(v, abs=0.01), k
    # from 1 GiB every collective is within 8 %, the all-to-all within 10 % from 128 MiB
    assert all(abs(v) < 0.08 for (op, s), v in err.items() if s >= 1e9), err
    assert all(abs(v) < 0.10 for (op, s), v in err.items() if op == "all_to_all" and s > 1e8)
    # the asymptotes: rings at the fitted ring efficiency (8 x 400 Gb/s x 0.827 = 331 GB/s
    # of which (n-1)/n), all-to-all at one NIC's point-to-point rate
    for op in ("all_gather", "reduce_scatter", "allreduce"):
        assert err[(op, max(s for o, s in err if o == op))] == pytest.approx(0.0, abs=0.04)


def test_ring_fixed_cost_is_a_constant_per_cluster():
    # Every measured ring curve, over the sizes where it runs Ring/Simple, is a straight line
    # t = a + F S / B.  The asymptotes agree across clusters (the twin's ring: 8 x 400 Gb/s x
    # 0.827 = 331 GB/s); the fixed costs do not follow the ring's length: C's all-gather (79
    # steps: 70 NVLink, 9 network) lies between B's 4-node (62 steps: 56, 6) and 8-node
    # (126: 112, 14) all-reduce rings in both counts, yet costs more than either.  No law in
    # steps or ranks fitted on B predicts C: the difference is a constant per collective.
    ab = _table("nccl_allreduce_multinode_h100.csv")
    c = _table("nccl_multinode_h100_10node.csv")
    curves = {("B", 4, "allreduce", "1"): 2**28, ("B", 8, "allreduce", "1"): 2**30,
              ("C", 10, "all_gather", "1"): 2.5e8, ("C", 10, "all_gather", "2"): 2.5e8,
              ("C", 10, "reduce_scatter", "1"): 2.5e8, ("C", 10, "allreduce", "1"): 2**32,
              ("C", 10, "allreduce", "2"): 2**32}
    fit = {}
    for (cl, nodes, op, run), lo in curves.items():
        sel = [r for r in ab + c if r["cluster"] == cl and int(r["nodes"]) == nodes
               and r.get("op", "allreduce") == op and r.get("run", "1") == run
               and r["role"] != "tuned" and int(r["bytes"]) >= lo]
        s = np.array([float(r["bytes"]) for r in sel])
        f = float(bus_factor(op, 8 * nodes))
        t = f * s / (np.array([float(r["busbw_gb_s"]) for r in sel]) * 1e9)
        inv_b, a = np.polyfit(f * s, t, 1)
        # a line: within 0.4 ms or 1 % of the time
        assert (np.abs(t - (a + inv_b * f * s)) < np.maximum(0.4e-3, 0.01 * t)).all()
        steps = 2 * (8 * nodes - 1) if op == "allreduce" else 8 * nodes - 1
        fit[(cl, nodes, op, run)] = (a, 1.0 / inv_b / 1e9, steps)
    ring_gb_s = float(collective_bandwidths_gb_s("all_gather", 2**40, 10, 8)["busbw_gb_s"])
    for _a, b, _ in fit.values():
        assert 322.0 < b < 330.0 and b == pytest.approx(ring_gb_s, rel=0.03)
    a_b4, a_b8 = fit[("B", 4, "allreduce", "1")][0], fit[("B", 8, "allreduce", "1")][0]
    for run in ("1", "2"):  # reproducible: 0.775 and 0.779 ms
        assert fit[("C", 10, "all_gather", run)][0] == pytest.approx(0.777e-3, abs=0.01e-3)
        assert fit[("C", 10, "all_gather", run)][0] > a_b8 > a_b4
    # a = c_cluster + steps x dt: one per-step cost for both clusters, close to NCCL's
    # NVLink step (3.4 us, src/graph/tuning.cc), and C's constant 0.37 ms above B's
    m = np.array([[k[0] == "B", k[0] == "C", v[2]] for k, v in fit.items()], float)
    (c_b, c_c, dt), *_ = np.linalg.lstsq(m, [v[0] for v in fit.values()], rcond=None)
    assert 2.5e-6 < dt < 3.5e-6 and c_c - c_b == pytest.approx(0.37e-3, abs=0.03e-3)
    # what the twin and NCCL's own model give the 80-rank all-gather ring (fixed part)
    s = np.array([2**28, 2**30, 2**32, 2**34], float)
    f = float(bus_factor("all_gather", 80))
    inv_b, a_twin = np.polyfit(f * s, collective_time_s("all_gather", s, 10, 8), 1)
    assert a_twin == pytest.approx(0.525e-3, abs=0.02e-3)
    # by hand: 8.4 + 70 x 3.4 + 9 x 14 = 372.4 us; 1.4 (8.4 + 140 x 3.4 + 18 x 14) = 1030.96
    assert nccl_ring_latency_us("all_gather", 80, 10) == pytest.approx(372.4)
    assert nccl_ring_latency_us("allreduce", 80, 10) == pytest.approx(1030.96)
    assert nccl_ring_latency_us("allreduce", 8, 1) == pytest.approx(8.4 + 14 * 3.4)


def test_ring_fixed_cost_comes_with_full_nodes():
    # The same 10 nodes of cluster C with 1, 2 or 4 GPUs per node in the communicator (rings
    # of 10, 20, 40 ranks; the same 9 network steps) carry 0.10-0.19 ms of fixed cost; with
    # all 8 GPUs (80 ranks) 0.83-0.86 ms.  From 40 to 80 ranks the fixed cost grows by
    # ~0.7 ms for 40 more NVLink steps, from 20 to 40 by < 0.1 ms for 20 more: not a cost
    # per step or per rank, but one that comes with full nodes (straight lines t = a + F S / B
    # over 256 MiB-4 GiB, where the time is not dominated by noise of the largest sizes)
    groups = _table("nccl_multinode_h100_10node_groups.csv")
    full = [r for r in _table("nccl_multinode_h100_10node.csv") if r["run"] == "1"]

    def fixed_cost_s(rows, op, n):
        sel = [r for r in rows if r["op"] == op and 2.5e8 <= int(r["bytes"]) <= 4.3e9]
        s = np.array([float(r["bytes"]) for r in sel])
        f = float(bus_factor(op, n))
        t = f * s / (np.array([float(r["busbw_gb_s"]) for r in sel]) * 1e9)
        return np.polyfit(f * s, t, 1)[1]

    for op in ("all_gather", "reduce_scatter"):
        part = [fixed_cost_s([r for r in groups if r["gpus_per_node"] == str(g)], op, 10 * g)
                for g in (1, 2, 4)]
        eight = fixed_cost_s(full, op, 80)
        assert max(part) < 0.2e-3 and 0.8e-3 < eight < 0.9e-3, (op, part, eight)
    # the time column agrees with the bus bandwidth column (nccl-tests' definitions)
    for r in groups:
        f = float(bus_factor(r["op"], 10 * int(r["gpus_per_node"])))
        t = f * float(r["bytes"]) / (float(r["busbw_gb_s"]) * 1e9)
        assert t == pytest.approx(float(r["time_us"]) * 1e-6, rel=0.01)


def test_no_alternative_law_brings_more_held_out_rows_within_the_goal():
    # assets/reference/nccl_multinode_alternatives.py: seven alternative laws, each refitted
    # on the fit rows (A 4 nodes, B 8 nodes) as the shipped model is; none puts more of the
    # 65 held-out rows within 10 % than the shipped model (55), so none is shipped
    # (docs/validation.md).  The patches must still apply to the module as it is.
    alt = reference_script("nccl_multinode_alternatives")
    within = {}
    for name in alt.ALTERNATIVES:
        h = alt.held_out_errors(alt.evaluate(name))
        assert h.size == 65
        within[name] = int((h <= 0.10).sum())
    assert within.pop("as shipped") == 55
    assert len(within) == 7 and max(within.values()) <= 55, within


def test_tuner_switch_from_nvls_tree_to_ring_explains_the_dips():
    # NCCL's tuner leaves NVLSTree for Ring above a size that grows with the ring's latency
    # (its own cost model, src/graph/tuning.cc); Ring then runs at the ring's lower
    # efficiency, so the measured curve drops once: B on 4 nodes at 256 MiB, B on 8 nodes
    # at 1 GiB, C on 10 nodes at 4 GiB (both runs), A never (its tuner keeps NVLSTree)
    ab = _table("nccl_allreduce_multinode_h100.csv")
    c = _table("nccl_multinode_h100_10node.csv")
    cases = [("B", 4, 2**27, 2**28, ab), ("B", 8, 2**29, 2**30, ab),
             ("C", 10, 2**31, 2**32, c)]
    for cluster, nodes, before, after, table in cases:
        sel = [r for r in table if r["cluster"] == cluster and int(r["nodes"]) == nodes
               and r.get("op", "allreduce") == "allreduce" and r["role"] != "tuned"]
        frac = float(sel[0]["nvls_tree_tuner_fraction"])
        algo = collective_algorithm("allreduce", [before, after], nodes,
                                    nvls_tree_tuner_fraction=frac)
        assert list(algo) == ["nvls_tree", "ring"], (cluster, nodes, algo)
        for run in {r.get("run", "1") for r in sel}:
            meas = {int(r["bytes"]): float(r["busbw_gb_s"]) for r in sel
                    if r.get("run", "1") == run}
            assert meas[after] < meas[before]  # the measured dip (C: in both runs)
        twin = collective_bandwidths_gb_s("allreduce", np.array([before, after], float), nodes,
                                          8, nvls_tree_tuner_fraction=frac)["busbw_gb_s"]
        assert twin[1] < twin[0]  # the twin has it too, with no per-point factor
    # cluster A's tuner keeps NVLSTree at every size: no switch, no dip
    s = np.logspace(20, 34, 15, base=2)
    assert set(collective_algorithm("allreduce", s[s >= 2**24], 4,
                                    nvls_tree_tuner_fraction=1.0)) == {"nvls_tree"}
    # on 2 nodes NCCL doubles NVLSTree's network bandwidth: Ring never wins
    assert not nccl_tuner_prefers_ring(s, 2, 16, 400.0, 0.5).any()
    # the switch size grows with the node count (the ring's latency grows with it)
    first = [s[nccl_tuner_prefers_ring(s, n, 8 * n, 400.0, 0.8)][0] for n in (4, 8, 32)]
    assert first[0] < first[1] < first[2]
    assert NVLS_TREE_TUNER_FRACTION == pytest.approx(0.96)
    for bad in (0.0, -0.5, float("nan")):
        with pytest.raises(ValueError, match="nvls_tree_tuner_fraction"):
            collective_time_s("allreduce", 2**30, 8, 8, nvls_tree_tuner_fraction=bad)


def test_forcing_an_algorithm_skips_the_tuner():
    # NCCL_ALGO=NVLSTree on B's 8 nodes at 1 GiB: the twin's NVLSTree, above the measured
    # default (which ran Ring); NCCL_ALGO=Ring gives the measured default
    kw = dict(nvls_tree_tuner_fraction=0.8)
    tree = collective_bandwidths_gb_s("allreduce", 2**30, 8, 8, algorithm="nvls_tree", **kw)
    ring = collective_bandwidths_gb_s("allreduce", 2**30, 8, 8, algorithm="ring", **kw)
    default = collective_bandwidths_gb_s("allreduce", 2**30, 8, 8, **kw)
    assert float(tree["busbw_gb_s"]) > float(default["busbw_gb_s"]) == \
        pytest.approx(float(ring["busbw_gb_s"]))
    assert float(default["busbw_gb_s"]) == pytest.approx(286.81, rel=0.03)  # B, 8 nodes


def test_roce_cluster_allreduce():
    # H100 with 8x 400 Gb/s RoCE, NCCL 2.19.3 (nccl issue 1221), rounded figures at 4-8 GiB
    err = {}
    for r in _table("nccl_allreduce_multinode_roce_h100.csv"):
        bw = collective_bandwidths_gb_s("allreduce", float(r["bytes"]), int(r["nodes"]), 8,
                                        transport="roce", nvls=r["nvls"] == "1")["busbw_gb_s"]
        err[(int(r["nodes"]), r["nvls"])] = float(bw) / float(r["busbw_gb_s"]) - 1
    # named miss: 2 nodes with NVLS, 430 GB/s measured where the twin keeps the NVSwitch
    # limit (479); the NDR clusters A and B (NCCL 2.26) reach 466-469 on 2 nodes.  The
    # issue reports the same 430 on ONE node ("on single nodes or 2 nodes ... from 330GB to
    # 430GB"): the shortfall is inside the node (NVLS with NCCL 2.19.3 on that system), not
    # the RoCE network; the twin's single-node NVLS (fitted on DGX H100, newer NCCL) is as
    # far above it
    assert {k for k, v in err.items() if abs(v) > 0.10} == {(2, "1")}
    assert err[(2, "1")] == pytest.approx(0.115, abs=0.01)
    one = float(collective_bandwidths_gb_s("allreduce", 2**33, 1, 8)["busbw_gb_s"])
    assert one / 430.0 - 1 == pytest.approx(err[(2, "1")], abs=0.01)
    # 4 nodes: NVLS on or off, the same 320 GB/s (the tuner runs Ring at these sizes)
    assert abs(err[(4, "1")]) < 0.03 and err[(4, "1")] == pytest.approx(err[(4, "0")])


def test_b200_cluster_to_46_nodes_with_sharp():
    # DGX B200, 8x NDR, NCCL 2.29.7, forced algorithms at 16 GiB on 2-46 nodes (together-nccl-tests,
    # use3a-ss); not in the H100/A100 goal set, nothing fitted on it
    err = {}
    for r in _table("nccl_multinode_b200.csv"):
        kw = dict(nvlink_gb_s=900.0, algorithm=r["algo"], nvls=r["algo"] != "tree",
                  in_network_reduction=r["algo"] == "collnet")
        bw = collective_bandwidths_gb_s(r["op"], float(r["bytes"]), int(r["nodes"]), 8, **kw)
        err[(r["op"], r["algo"], int(r["nodes"]))] = \
            float(bw["busbw_gb_s"]) / float(r["busbw_gb_s"]) - 1
    # rings (all-reduce and all-gather) within 10 % from 2 to 46 nodes; the measured ring
    # loses 15 % from 2 to 46 nodes, the twin 3 % (fabric effects, docs/validation.md)
    rings = [v for (op, a, n), v in err.items() if a == "ring"]
    assert len(rings) == 12 and max(abs(v) for v in rings) < 0.10
    assert err[("allreduce", "ring", 46)] > err[("allreduce", "ring", 2)] + 0.10
    # NVLSTree on 2 nodes (in the NVSwitch) within 5 %
    assert abs(err[("allreduce", "nvls_tree", 2)]) < 0.05
    # the classic Tree (SM-bound, NCCL issue 1649) held to NCCL's per-channel Tree ceiling
    # for Blackwell beyond 2 nodes, 24.0 GB/s x 8 channels (one per NIC) = 192 GB/s
    # (src/graph/tuning.cc, NCCL 2.29.2+; the NIC-share law): -1.1 to +0.4 % on 4-46 nodes
    # (+68 to +70 % at the NICs' share before it)
    tree = {n: v for (op, a, n), v in err.items() if a == "tree"}
    assert len(tree) == 5 and all(abs(v) < 0.015 for v in tree.values()), tree
    assert tree[4] == pytest.approx(0.004, abs=0.003) and tree[46] == pytest.approx(-0.010,
                                                                                    abs=0.003)
    # named misses, the twin high: NVLSTree beyond 2 nodes (+24..34 %: the NVLSTree gain is
    # fitted on H100; on B200 NVLSTree runs below the ring, NCCL's NVLS efficiency 0.74
    # against Hopper's 0.85) and CollNet with SHARP (+16..21 %: SHARP's share of the NICs,
    # 544 GB/s flat from 4 to 46 nodes, is not modelled; on H100 the twin's CollNet is capped
    # by the NVSwitch at 482)
    for algo, lo, hi in (("nvls_tree", 0.20, 0.38), ("collnet", 0.12, 0.25)):
        vals = [v for (op, a, n), v in err.items() if a == algo and not (a == "nvls_tree" and n == 2)]
        assert all(lo < v < hi for v in vals), (algo, vals)
    sharp_h100 = collective_bandwidths_gb_s("allreduce", 16 * 2**30, 46, 8, algorithm="collnet",
                                            in_network_reduction=True)["busbw_gb_s"]
    assert float(sharp_h100) < 544.0


def _p5_rows() -> list[dict]:
    return [r for r in _table("nccl_multinode_h100_p5_efa.csv") if int(r["bytes"]) >= MIN_BYTES]


def _p5_twin_gb_s(r: dict) -> float:
    # the twin as it is (8x 400 Gb/s equivalent, ib_rdma: EFA is not modelled), with the
    # algorithm AWS's tuner plugin ran (Ring or NVLSTree; its protocol is not modelled)
    algo = r["tuner_algo"] if r["op"] == "allreduce" else None
    return float(collective_bandwidths_gb_s(r["op"], float(r["bytes"]), int(r["nodes"]), 8,
                                            algorithm=algo)["busbw_gb_s"])


def test_p5_efa_cluster_2_to_32_nodes():
    # AWS p5.48xlarge, 32 EFA x 100 Gb/s per node, NCCL 2.27.7 with AWS's tuner plugin, 2-32
    # nodes (github.com/crazyguitar/aws-gpu-communication-benchmark); not in the goal set
    # (EFA, another tuner), nothing fitted on it
    p5_allreduce_choice = reference_script("nccl_p5_tuner_regions").p5_allreduce_choice
    table = _table("nccl_multinode_h100_p5_efa.csv")
    assert len(table) == 80
    for r in table:  # the transcription: busbw = F(n) algbw, and the plugin's choice
        n = 8 * int(r["nodes"])
        assert float(r["busbw_gb_s"]) == pytest.approx(
            float(bus_factor(r["op"], n)) * float(r["algbw_gb_s"]), rel=0.01, abs=0.02)
        if r["op"] == "allreduce":
            assert p5_allreduce_choice(float(r["bytes"]), n) == (r["tuner_algo"], r["tuner_proto"])
    # the LL128 rows (Ring/LL128 and Tree/LL128 at mid sizes) are a protocol the twin does
    # not run across nodes: recorded, not scored
    assert sum(r["tuner_proto"] == "LL128" for r in _p5_rows()) == 21
    err = {(r["op"], int(r["nodes"]), int(r["bytes"]) >> 20, r["tuner_algo"], r["tuner_proto"]):
           _p5_twin_gb_s(r) / float(r["busbw_gb_s"]) - 1 for r in _p5_rows()
           if r["tuner_proto"] != "LL128"}
    # Ring/Simple (4 nodes from 2 GiB, 8 nodes from 4 GiB, 16 nodes at 8 GiB): within 10 %,
    # all low: EFA's ring reaches 356-357 GB/s (0.89 of 3200 Gb/s) where the default rings
    # of the InfiniBand clusters B and C reach 0.82 (the twin's 0.827)
    ring = {k: v for k, v in err.items() if k[0] == "allreduce" and k[3:] == ("ring", "Simple")}
    assert len(ring) == 6 and all(-0.10 < v < -0.08 for v in ring.values()), ring
    # NVLSTree on 2 nodes (in the NVSwitch): within 6 % from 1 GiB; its ramp is slower on
    # EFA (+11 to +32 % at 64-512 MiB)
    two = {k[2]: v for k, v in err.items() if k[0] == "allreduce" and k[1] == 2}
    assert max(abs(v) for s, v in two.items() if s >= 1024) < 0.06
    assert all(0.10 < v < 0.33 for s, v in two.items() if s < 1024)
    # named miss: NVLSTree beyond 2 nodes, the twin high (+14 to +107 %), as on B200
    # (test_b200_cluster_to_46_nodes_with_sharp): the NVLSTree gain is fitted on InfiniBand
    # H100 (cluster A on 4 nodes, C on 10 nodes to 2 GiB)
    tree = [v for k, v in err.items() if k[0] == "allreduce" and k[1] > 2 and k[3] == "nvls_tree"]
    assert len(tree) == 5 and all(0.13 < v < 1.10 for v in tree)
    # all-to-all: 2-8 nodes within 10 % but two rows (+10.6, +17.9 %); on 16-32
    # nodes the measured all-to-all falls with the node count (49.6 -> 44.2 -> 40.8 GB/s
    # at 2 GiB), the twin does not (+11 to +45 %): the fabric's share at scale, which
    # collective_time_s does not model (as the B200 rings beyond 8 nodes)
    a2a = {k[1:3]: v for k, v in err.items() if k[0] == "all_to_all"}
    small = {k: v for k, v in a2a.items() if k[0] <= 8}
    assert {k for k, v in small.items() if abs(v) > 0.10} == {(4, 2048), (8, 128)}
    assert small[(8, 128)] == pytest.approx(0.179, abs=0.01)
    assert all(0.10 < v < 0.46 for k, v in a2a.items() if k[0] >= 16)


def test_ring_fixed_cost_of_a_third_full_node_cluster():
    # The p5 rings (Ring/Simple by AWS's tuner, 8 GPUs per node) are straight lines
    # t = a + F S / B too: a = 0.40 ms on 4 nodes (62 ring steps), 0.55 ms on 8 nodes (126;
    # two sizes only).  Cluster B's two rings fix a per-step law a = c + steps x dt (3.0 us
    # per step, c = 0.145 ms); it predicts p5 within 0.07 ms on another fabric and NCCL
    # version, and C's all-gather (79 steps, 0.78 ms) 0.40 ms low: two of three full-node
    # clusters pay B's cost, so full nodes alone do not bring C's extra ~0.4 ms
    ab = _table("nccl_allreduce_multinode_h100.csv")
    p5 = _table("nccl_multinode_h100_p5_efa.csv")
    c = _table("nccl_multinode_h100_10node.csv")

    def line(sel, op, n):
        s = np.array([float(r["bytes"]) for r in sel])
        f = float(bus_factor(op, n))
        t = f * s / (np.array([float(r["busbw_gb_s"]) for r in sel]) * 1e9)
        inv_b, a = np.polyfit(f * s, t, 1)
        return a, 1.0 / inv_b / 1e9

    a_b = {n: line([r for r in ab if r["cluster"] == "B" and int(r["nodes"]) == n
                    and r["role"] != "tuned" and int(r["bytes"]) >= lo], "allreduce", 8 * n)[0]
           for n, lo in ((4, 2**28), (8, 2**30))}
    dt = (a_b[8] - a_b[4]) / (126 - 62)
    c_b = a_b[4] - 62 * dt
    assert dt == pytest.approx(3.0e-6, abs=0.2e-6) and c_b == pytest.approx(0.145e-3, abs=0.02e-3)
    for nodes, steps, a_meas in ((4, 62, 0.40e-3), (8, 126, 0.55e-3)):
        sel = [r for r in p5 if r["op"] == "allreduce" and int(r["nodes"]) == nodes
               and (r["tuner_algo"], r["tuner_proto"]) == ("ring", "Simple")]
        a, b = line(sel, "allreduce", 8 * nodes)
        assert a == pytest.approx(a_meas, abs=0.01e-3) and 359.0 < b < 361.0
        assert abs(a - (c_b + steps * dt)) < 0.07e-3
    c_ag = line([r for r in c if r["op"] == "all_gather" and r["run"] == "1"
                 and int(r["bytes"]) >= 2.5e8], "all_gather", 80)[0]
    assert c_ag - (c_b + 79 * dt) == pytest.approx(0.40e-3, abs=0.02e-3)


def test_a100_ndmv4_two_nodes():
    # Azure NDm A100 v4 (8x HDR 200 Gb/s, NCCL 2.17.1), 2 nodes x 8 GPUs, 1 and 4 GiB
    # (github.com/microsoft/mscclpp docs/performance-ndmv4.md); held out, in the goal set.
    # The rings run at 0.93 of the NICs (186 of 200 GB/s at 4 GiB; NVIDIA quotes 192 GB/s
    # all-reduce on DGX A100 with 8x 200 Gb/s, nccl issue 812).  A GPU has 25 GB/s of NIC,
    # below the NIC-share law's crossover (44 GB/s): the twin's ring runs at the wire's 0.94,
    # and the four ring rows are within 3 % (-11 to -14 % at the former fixed share 0.827,
    # fitted on H100 with 400 Gb/s NICs).  Named misses: the all-to-all runs at 37.8 GB/s,
    # 0.81 of one NIC x N/(N-1) x (n-1)/n, where the twin has 0.92 (+13 to +16 %; cluster
    # C's H100 all-to-all is within 3 % from 1 GiB)
    kw = dict(nvlink_gb_s=300.0, nvls=False, inter_node_gbps=1600.0)
    err = {}
    for r in _table("nccl_multinode_a100_ndmv4.csv"):
        bw = collective_bandwidths_gb_s(r["op"], float(r["bytes"]), 2, 8, **kw)["busbw_gb_s"]
        err[(r["op"], int(r["bytes"]) >> 30)] = float(bw) / float(r["busbw_gb_s"]) - 1
    assert len(err) == 6
    assert {k for k, v in err.items() if abs(v) > 0.10} == {("all_to_all", 1), ("all_to_all", 4)}
    # (with the fill a size, before the fill-time law: +1.0, -0.2, -2.6, -1.3 %; with the
    # fill-time law's reference at the group's own NVLink, before HR's fit-node reference:
    # +2.1, +0.1, -1.5, -1.0 %)
    measured = {("all_gather", 1): 0.026, ("all_gather", 4): 0.002,
                ("allreduce", 1): -0.011, ("allreduce", 4): -0.009,
                ("all_to_all", 1): 0.132, ("all_to_all", 4): 0.157}
    for k, v in measured.items():
        assert err[k] == pytest.approx(v, abs=0.003), k
    ring = float(collective_bandwidths_gb_s("all_gather", 2**40, 2, 8, **kw)["busbw_gb_s"]) / 200.0
    assert ring == pytest.approx(0.94, abs=0.001)


def test_more_channels_do_not_raise_the_ring_fixed_cost():
    # The one public run that changes NCCL's channel count on a full-node H100 cluster:
    # cluster B with NCCL_MIN_CTAS=24 (24 channels instead of 16) and 2 QPs per connection
    # (nccl-tests issue 309, the "tuned" rows).  Its forced 2-node ring (30 steps) is a
    # straight line with a = 0.10 ms, below what B's default per-step law gives 30 steps
    # (0.235 ms), and its 8-node run (the tuner's choice, 126 steps) 0.29 ms against the
    # default ring's 0.52 ms; asymptote 394 GB/s (0.98 of the NICs) in both.  A fixed cost
    # of per-channel proxy or launch work times the channel count would rise by half: the
    # data contradict it, so it is not the law behind C's extra cost either
    ab = _table("nccl_allreduce_multinode_h100.csv")

    def line(nodes, role, lo):
        sel = [r for r in ab if r["cluster"] == "B" and int(r["nodes"]) == nodes
               and r["role"] == role and int(r["bytes"]) >= lo]
        s = np.array([float(r["bytes"]) for r in sel])
        f = float(bus_factor("allreduce", 8 * nodes))
        inv_b, a = np.polyfit(f * s, f * s / (np.array([float(r["busbw_gb_s"]) for r in sel])
                                              * 1e9), 1)
        return a, 1.0 / inv_b / 1e9

    a4, _ = line(4, "validate", 2**28)
    a8, _ = line(8, "fit", 2**30)
    dt = (a8 - a4) / (126 - 62)
    a2_tuned, b2_tuned = line(2, "tuned", 2**28)
    a8_tuned, b8_tuned = line(8, "tuned", 2**30)
    assert a2_tuned == pytest.approx(0.10e-3, abs=0.01e-3)
    assert a2_tuned < 0.5 * (a4 - 32 * dt)  # B's default law at 30 steps: 0.235 ms
    assert a8_tuned == pytest.approx(0.29e-3, abs=0.01e-3) and a8_tuned < 0.6 * a8
    assert 392.0 < b2_tuned < 395.0 and 392.0 < b8_tuned < 395.0


def test_nic_share_law_decision_rule_rows():
    # docs/validation.md, "A ring share that follows the NIC bandwidth per GPU": the law met its
    # decision rule, written before it was run on the held-out rows.  (a) goal rows within 10 %
    # 76 -> 86 of 107 (fit rows 14 of 17 both; held out 62 -> 72 of 90); (c) the 4x HDR A100 row
    # of nccl-tests issue 175 -4.8 -> +8.1 %, the forced classic Tree of nccl issue 1368 -0.4 ->
    # -8.2 %.  The wire at the header efficiency alone (0.994 IB) would give 88 of 107 but
    # issue 175 at +14.3 %, failing (c).  (Step times, (b): tests/compute/test_step.py,
    # test_moe_fsdp.py.)
    alt = reference_script("nccl_multinode_alternatives")
    got = {}
    for name in alt.NIC_SHARE_VARIANTS:
        sc = alt.nic_share_law_scores(name)
        e = {t: np.abs(v) for t, v in sc["errors"].items()}
        assert sum(v.size for v in e.values()) == 107 and e["A/B fit"].size == 17
        got[name] = (int((e["A/B fit"] <= 0.10).sum()),
                     sum(int((v <= 0.10).sum()) for v in e.values()),
                     round(sc["checks"]["nccl-tests 175: 2 x 8 A100, 4x HDR, 4 GiB"][1], 3),
                     round(sc["errors"]["heldout2 NCCL1368"][1], 3))
    off, law, header = alt.NIC_SHARE_VARIANTS
    assert got[off] == (14, 76, -0.048, -0.004)
    assert got[law] == (14, 86, 0.081, -0.082)
    assert got[header] == (14, 88, 0.143, -0.082)
    # the Vela-like sanity check: 100 GbE RoCE per GPU is far below the crossover, the ring
    # runs at 0.94 x 0.97 of line rate instead of 0.802 (1 GiB all-reduce, 2 nodes)
    vela = alt.nic_share_law_scores(law)["checks"]["Vela-like: 2 x 8 A100, 8x 100G RoCE, 1 GiB"][0]
    assert vela == pytest.approx(87.4, abs=0.1)


def test_fill_time_law_decision_rule_rows():
    # docs/validation.md, "A fill time per algorithm": the second version of the fill-time law
    # met its rule (revised after the first version, written before this one was run on any
    # held-out row): (a) the 107 goal rows within 10 % rise 86 -> 88 (fit 14 of 17 both; held
    # out 72 -> 74: nccl issue 1368's 4-NIC RoCE Ring -10.5 -> -9.2 % and the AKS NDm A100 v4
    # ramp at 128 MiB -10.6 -> -4.4 %) and HG's 11 do not fall (6 -> 6; the H200 NVLSTree row
    # +9.85 -> +9.92 %); (c) no goal row moves out; (d) the refit on A/B's fit rows is unchanged
    # (fit_nccl_multinode.py prints 0.827, 1.121, 39.1 MB with it on); (b) step times in
    # test_step.py / test_moe_fsdp.py; (e) test_collectives.py's property test.  So it is the
    # default.
    import twin.compute.collectives as coll
    assert coll.FILL_TIME_LAW is True
    alt = reference_script("nccl_multinode_alternatives")
    scores = {on: alt.fill_time_law_scores(on) for on in alt.FILL_TIME_VARIANTS.values()}
    got = {}
    for on, sc in scores.items():
        e = {t: np.abs(v) for t, v in sc["errors"].items()}
        assert sum(v.size for v in e.values()) == 107 and e["A/B fit"].size == 17
        goal3 = np.abs([x for t, v in sc["heldout3"].items()
                        for x, role in zip(v, sc["roles"][t], strict=True) if role == "validate"])
        assert goal3.size == 11
        h3 = sc["heldout3"]
        got[on] = (int((e["A/B fit"] <= 0.10).sum()),
                   sum(int((v <= 0.10).sum()) for v in e.values()),
                   int((goal3 <= 0.10).sum()),
                   int((e["heldout2 AZ_NDMV4_AKS"] <= 0.10).sum()),
                   int((e["heldout2 NCCL1368"] <= 0.10).sum()),
                   round(h3["NT380_BM"][0], 4),
                   int((np.abs(h3["KESTREL_AR"]) <= 0.10).sum()))
    # the 82 H100 rows with one NDR NIC per GPU (the reference NICs): bit for bit
    for t in ("A/B fit", "A/B validate", "C", "RoCE"):
        assert np.array_equal(scores[True]["errors"][t], scores[False]["errors"][t])
    assert got[False] == (14, 86, 6, 6, 1, 0.0985, 5)
    assert got[True] == (14, 88, 6, 7, 2, 0.0992, 6)
    # (c): every goal row within 10 % with the fill a size stays within it
    for t, v in scores[False]["errors"].items():
        was = np.abs(v) <= 0.10
        assert np.all(np.abs(scores[True]["errors"][t])[was] <= 0.10), t
    for t, v in scores[False]["heldout3"].items():
        goal = np.array([role == "validate" for role in scores[False]["roles"][t]])
        was = goal & (np.abs(v) <= 0.10)
        assert np.all(np.abs(scores[True]["heldout3"][t])[was] <= 0.10), t
    # AKS at 64 MiB (2 x 8 A100, 8x HDR, the ring): -20.8 -> -13.6 % (the A100 ring's reference
    # bandwidth is NVLink-bound, 0.8 x 300 x 8/7 = 274 GB/s, so its fill time is longer than an
    # H100 ring's 330.8); Kestrel's all-reduce at 64 MiB (not a
    # goal row): -34.8 -> -13.8 %
    law = scores[True]
    assert law["errors"]["heldout2 AZ_NDMV4_AKS"][0] == pytest.approx(-0.136, abs=0.002)
    assert law["heldout3"]["KESTREL_AR"][0] == pytest.approx(-0.138, abs=0.002)


def test_fill_ref_node_decision_rule_rows():
    # HR: the fill-time law's reference is the fit rows' node (NVLink 4 too, FILL_REF_NVLINK_GB_S)
    # and met its decision rule, committed before it was run on the goal rows
    # (nccl_multinode_alternatives.py, a6dad89): (1) the 107 goal rows within 10 % rise 88 -> 89
    # (fit 14 of 17 both; AKS NDm A100 v4 at 64 MiB -13.6 -> -9.8 %), HG's 11 stay at 6; (2) no goal
    # row within 10 % moves out; (3) nccl 1368's forced Tree (-6.6 %, unchanged) and nccl-tests
    # 175 (+8.78 -> +8.84 %) within 10 %; (5) the 82 H100 rows bit for bit; (4) step times:
    # test_step.py, test_moe_fsdp.py, test_fsdp_validation.py unchanged; (6) the property test
    # test_collectives.py::test_fill_time_law_slower_nics_never_faster; (7) no refit
    import twin.compute.collectives as coll
    assert coll.FILL_REF_NVLINK_GB_S == 450.0
    alt = reference_script("nccl_multinode_alternatives")
    sc = {on: alt.fill_ref_node_scores(on) for on in (False, True)}
    got = {}
    for on, x in sc.items():
        e = {t: np.abs(v) for t, v in x["errors"].items()}
        goal3 = np.abs([v for t, vs in x["heldout3"].items()
                        for v, role in zip(vs, x["roles"][t], strict=True) if role == "validate"])
        got[on] = (int((e["A/B fit"] <= 0.10).sum()), sum(int((v <= 0.10).sum()) for v in e.values()),
                   int((goal3 <= 0.10).sum()),
                   round(x["checks"]["nccl-tests 175: 2 x 8 A100, 4x HDR, 4 GiB"][1], 4),
                   round(x["errors"]["heldout2 NCCL1368"][1], 4),
                   round(x["errors"]["heldout2 AZ_NDMV4_AKS"][0], 4))
    assert got[False] == (14, 88, 6, 0.0878, -0.0657, -0.1363)
    assert got[True] == (14, 89, 6, 0.0884, -0.0657, -0.0982)
    for t in ("A/B fit", "A/B validate", "C", "RoCE"):
        assert np.array_equal(sc[True]["errors"][t], sc[False]["errors"][t]), t
    for key in ("errors", "heldout3"):
        for t, v in sc[False][key].items():
            goal = (np.array([r == "validate" for r in sc[False]["roles"][t]]) if key == "heldout3"
                    else np.ones(len(v), bool))
            was = goal & (np.abs(v) <= 0.10)
            assert np.all(np.abs(sc[True][key][t])[was] <= 0.10), t
