"""Every issue-16 goal row the shipped collective model misses, each with a class and its evidence.

    .venv/bin/python assets/reference/nccl_goal_misses.py

Issue 16's goal: multi-node collectives within 10 % of published measurements from 64 MB up. The
goal rows are loaded through the scripts that already own them (no copies): the 107 rows of
``nccl_multinode_alternatives.goal_rows`` (clusters A, B, C, the RoCE cluster, NDm A100 v4 and
``nccl_multinode_heldout2.csv``'s goal rows), HG's 11 goal rows of ``nccl_multinode_heldout3.csv``
(``nccl_multinode_heldout3.rows``, each row's keywords from ``twin_kwargs``) and HP's 18 of
``nccl_multinode_heldout4.csv`` (``nccl_multinode_heldout4.rows``, through heldout3's machinery).  The shipped model
(:mod:`twin.compute.collectives`, its defaults) is run on each; every row beyond 10 % gets one class:

(a) measurement spread: another measurement of the same configuration (GPU, NICs per node and
    their rate, transport, NVLS on or off, nodes, GPUs per node, collective, size, forced
    algorithm: a second run of the same cluster or another cluster) differs so much that no single
    figure is within 10 % of both: the set's minimax error ``(m_max - m_min) / (m_max + m_min)``
    is above 10 %.  Decided from the data, not by hand (:func:`same_configuration`).
(b) an input the source does not state and the result depends on, where the evidence points at
    it (a dip in the curve, a figure elsewhere in the same source, the same system's other rows),
    with the twin's figure under the value it points to.  An unstated input that is merely
    possible is printed as a check, not taken as the class (cluster C's fabric: as RoCE the twin
    is within 10 % of both runs of the 512 MiB all-gather, but not of its 256 MiB neighbour, which
    the same ring's fixed cost explains);
(c) a model deficiency: the measurements of the configuration agree (or there is one) and no
    unstated input was found that brings the twin within 10 %.

(b) and (c) are assigned by hand in ``CLASSES`` (each with the function that prints its evidence);
the test (tests/compute/test_nccl_goal_misses.py) asserts every class and the counts, so a model
change that moves a row has to update this table knowingly.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import twin.compute.collectives as coll

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import fit_nccl_multinode as fit
    import nccl_multinode_alternatives as alt
    import nccl_multinode_heldout2 as hd2
    import nccl_multinode_heldout3 as hd3
    import nccl_multinode_heldout4 as hd4
finally:
    sys.path.remove(str(HERE))

#: the issue-16 goal: within 10 % from 64 MB up
GOAL = 0.10


@dataclass
class Row:
    """One measurement: where it comes from, the CSV row, the model's keywords for its system."""

    table: str
    row: dict
    kw: dict
    goal_set: str  # "107" (the goal set of docs/validation.md), "HG" (heldout3), "HP"
    # (heldout4), "repeat"
    twin_gb_s: float = float("nan")
    config: tuple = field(default_factory=tuple)

    @property
    def measured(self) -> float:
        return float(self.row["busbw_gb_s"])

    @property
    def error(self) -> float:
        return self.twin_gb_s / self.measured - 1.0

    @property
    def label(self) -> str:
        r = self.row
        src = r.get("cluster") or r.get("table") or self.table
        if self.table == "RoCE":
            src = "RoCE NVLS" if r["nvls"] == "1" else "RoCE no-NVLS"
        size = f"{int(r['bytes']) >> 20} MiB" if r.get("bytes") else "peak"
        return f"{src} {r['nodes']}n {r.get('op', 'allreduce')} {size}"


def _config(table: str, r: dict, kw: dict) -> tuple:
    """What makes two measurements "the same configuration" (class (a))."""
    a100 = table.startswith("NDm")
    gpu = r.get("gpu") or ("A100" if a100 else "H100")
    algo = r.get("algo") or ""
    return (gpu, int(r.get("nics") or 8), float(r.get("nic_gbps") or (200 if a100 else 400)),
            r.get("transport") or kw.get("transport", "ib_rdma"), r.get("nvls", "1"),
            int(r["nodes"]), int(r.get("gpus_per_node") or 8), r.get("op", "allreduce"),
            r.get("bytes") or "", "" if algo == "default" else algo)


def _with_twin(x: Row) -> Row:
    if x.goal_set in ("HG", "HP"):
        x.twin_gb_s = hd3.twin_gb_s(x.row)[0]
    else:
        x.twin_gb_s = alt.goal_twin_gb_s(coll, x.row, x.kw)
    x.config = _config(x.table, x.row, x.kw)
    return x


def goal_rows() -> list[Row]:
    """The 136 goal rows (107 + HG's 11 + HP's 18), each with the shipped model's figure."""
    out = [Row(t, r, kw, "107") for t, r, kw in alt.goal_rows()]
    out += [Row("heldout3 " + r["table"], r, hd3.twin_kwargs(r), "HG") for r in hd3.rows()
            if r["role"] == "validate"]
    out += [Row("heldout4 " + r["table"], r, hd3.twin_kwargs(r), "HP") for r in hd4.rows()
            if r["role"] == "validate"]
    return [_with_twin(x) for x in out]


def repeat_rows() -> list[Row]:
    """Measurements that are not goal rows but repeat a goal row's configuration: cluster C's
    second run, heldout2's repeat rows (their twin figure is not needed)."""
    out = [Row("C", r, {}, "repeat") for r in fit.rows(fit.TABLES[1]) if r["run"] != "1"
           and int(r["bytes"]) >= fit.MIN_BYTES]
    out += [Row("heldout2 " + r["table"], r, hd2.twin_kwargs(r), "repeat") for r in hd2.rows()
            if r["role"] == "repeat"]
    out += [Row("heldout4 " + r["table"], r, hd3.twin_kwargs(r), "repeat") for r in hd4.rows()
            if r["role"] == "repeat"]
    for x in out:
        x.config = _config(x.table, x.row, x.kw)
    return out


def minimax_error(values) -> float:
    """``(max - min) / (max + min)`` [-]: the smallest worst relative error one figure can have
    against every value (the figure being ``2 max min / (max + min)``)."""
    v = np.asarray(values, dtype=float)
    return float((v.max() - v.min()) / (v.max() + v.min()))


def same_configuration(x: Row, pool: list[Row]) -> list[Row]:
    """Every measurement in ``pool`` of ``x``'s configuration (``x`` included)."""
    return [y for y in pool if y.config == x.config]


# ------------------------------------------------------------------ evidence, one per cause
def _bw(op: str, s, nodes: int, g: int = 8, **kw) -> float:
    return float(np.atleast_1d(coll.collective_bandwidths_gb_s(op, s, nodes, g, **kw)["busbw_gb_s"])[0])


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


def ev_spread(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    vals = [y.measured for y in same]
    mm = minimax_error(vals)
    lines = [f"measurements of this configuration: {', '.join(f'{v:.2f}' for v in vals)} GB/s; "
             f"minimax error {100 * mm:.1f} % (> 10 %: no figure is within 10 % of all); "
             f"the twin {x.twin_gb_s:.1f}: " + ", ".join(_pct(x.twin_gb_s / v - 1) for v in vals)]
    return lines, {"minimax": mm, "values": vals}


def _agreement(x: Row, same: list[Row]) -> tuple[str, dict]:
    vals = [y.measured for y in same]
    if len(vals) == 1:
        return "one measurement of this configuration", {"minimax": 0.0, "values": vals}
    mm = minimax_error(vals)
    lo, hi = max(vals) / (1 + GOAL), min(vals) / (1 - GOAL)
    return (f"measurements of this configuration agree: {', '.join(f'{v:.2f}' for v in vals)} "
            f"GB/s (minimax {100 * mm:.1f} %; any figure in {lo:.1f}-{hi:.1f} is within 10 % of "
            f"all); the twin {x.twin_gb_s:.1f}: "
            + ", ".join(_pct(x.twin_gb_s / v - 1) for v in vals), {"minimax": mm, "values": vals})


def _c_fabric_check(x: Row, same: list[Row]) -> tuple[str, float]:
    """Cluster C does not state its fabric (IB or RoCE): the twin with RoCE instead (a possible
    value, not one the data point to: C's rings reach the IB clusters' 0.82 of line rate)."""
    r = x.row
    bw = _bw(r["op"], float(r["bytes"]), 10, transport="roce",
             nvls_tree_tuner_fraction=float(r["nvls_tree_tuner_fraction"]))
    errs = [bw / y.measured - 1 for y in same]
    worst = max(errs, key=abs)
    verdict = "within 10 % of every run" if abs(worst) <= GOAL else "still a miss"
    return (f"unstated input checked: C's fabric (IB or RoCE; nothing points to RoCE) - as RoCE "
            f"the twin gives {bw:.1f} ({', '.join(_pct(e) for e in errs)}): {verdict}"), worst


def ev_nvls_tree_ramp(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """A/B fit rows and C's all-reduce at 128 MiB: NVLSTree beyond 2 nodes ramps faster than the
    twin on 4 nodes (A, B within 3.7 % of each other) and slower on 8-10 nodes."""
    text, d = _agreement(x, same)
    lines = [text]
    if x.row.get("cluster") == "C":
        t, e = _c_fabric_check(x, same)
        lines.append(t)
        d["roce_error"] = e
    # the twin's NVLSTree error against every default all-reduce row of A, B, C at 64-512 MiB,
    # by node count: low on 4 nodes, high on 8 and 10
    by_n: dict[int, list[float]] = {}
    for y in goal_rows():
        r = y.row
        if (y.table.startswith(("A/B", "C")) and r.get("op", "allreduce") == "allreduce"
                and 2**26 <= int(r["bytes"]) <= 2**29 and int(r["nodes"]) > 2):
            algo = coll.collective_algorithm("allreduce", float(r["bytes"]), int(r["nodes"]),
                                             nvls_tree_tuner_fraction=float(
                                                 r["nvls_tree_tuner_fraction"]))[0]
            if algo == "nvls_tree":
                by_n.setdefault(int(r["nodes"]), []).append(y.error)
    lines.append("the twin's NVLSTree rows at 64-512 MiB by node count (error range): "
                 + "; ".join(f"{n} nodes {_pct(min(v))} to {_pct(max(v))}"
                             for n, v in sorted(by_n.items())))
    d["nvls_tree_by_nodes"] = {n: (min(v), max(v)) for n, v in by_n.items()}
    return lines, d


def ev_c_ring_fixed_cost(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """C's rings: a fixed cost per collective 0.37 ms above cluster B's and p5's per-step law."""
    text, d = _agreement(x, same)
    t, e = _c_fabric_check(x, same)
    rc = {(r["op"], r["run"]): r for r in fit.ring_fixed_costs() if r["cluster"] == "C"}
    ring = rc[(x.row["op"], "1")]
    lines = [text, t,
             f"C's {x.row['op']} ring as t = a + F S / B (256 MiB-16 GiB): measured a = "
             f"{1e3 * ring['meas_a_s']:.3f} ms, the twin {1e3 * ring['twin_a_s']:.3f} ms, NCCL's "
             f"model {1e3 * ring['nccl_model_s']:.3f} ms; cluster B's and p5's rings pay B's per-step "
             f"law (fit_nccl_multinode.py), C 0.37 ms more in both runs: a property of C (CPU, NIC "
             f"firmware, channels?) that no public log of C states and no input of the model carries"]
    d.update(roce_error=e, meas_a_s=ring["meas_a_s"], twin_a_s=ring["twin_a_s"])
    if x.row["op"] == "reduce_scatter" and int(x.row["bytes"]) < 2**28:
        ag = {int(y.row["bytes"]): y.measured for y in goal_rows() if y.table == "C"
              and y.row["op"] == "all_gather"}[int(x.row["bytes"])]
        lines.append(f"the same ring's all-gather at this size measures {ag:.2f} GB/s "
                     f"({_pct(x.measured / ag - 1)} for the reduce-scatter), which the twin meets "
                     f"({_pct(x.twin_gb_s / ag - 1)})")
        d["all_gather_gb_s"] = ag
    return lines, d


def ev_a2a_fill(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """C's all-to-all at 64 MiB: the twin's all-to-all fill, kept for the MoE step times."""
    text, d = _agreement(x, same)
    s0 = fit.c_all_to_all_fill_bytes()
    keep = coll.A2A_FILL_S0_BYTES
    try:
        coll.A2A_FILL_S0_BYTES = s0
        bw = _bw("all_to_all", float(x.row["bytes"]), 10)
    finally:
        coll.A2A_FILL_S0_BYTES = keep
    lines = [text, f"with C's own all-to-all fill ({s0 / 1e6:.1f} MB, fit_nccl_multinode.py) the "
             f"twin gives {bw:.1f} ({_pct(bw / x.measured - 1)}); the module keeps "
             f"{keep / 1e6:.1f} MB, with which the Grok-1 MoE step times hold their 3 % goal "
             f"(A2A_FILL_S0_BYTES)"]
    d.update(fill_bytes=s0, twin_with_fill=bw)
    return lines, d


def _a2a_share(busbw: float, nodes: int, g: int, nic_gb_s: float) -> float:
    """All-to-all bus bandwidth over ``N/(N-1) x one NIC x (n-1)/n`` [-] (nccl-tests issue 130)."""
    n = nodes * g
    return busbw / (nodes / (nodes - 1) * nic_gb_s * (n - 1) / n)


def ev_a2a_share(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """NDm A100 v4 all-to-all: 0.81 of one HDR NIC where the twin (and C's H100) have 0.92."""
    text, d = _agreement(x, same)
    meas = _a2a_share(x.measured, 2, 8, 25.0)
    twin = _a2a_share(x.twin_gb_s, 2, 8, 25.0)
    c = [_a2a_share(y.measured, 10, 8, 50.0) for y in goal_rows() if y.table == "C"
         and y.row["op"] == "all_to_all" and int(y.row["bytes"]) >= 2**30]
    lines = [text, f"share of one NIC (busbw / (N/(N-1) x 25 GB/s x (n-1)/n)): measured "
             f"{meas:.3f}, the twin {twin:.3f} (one NIC's point-to-point 0.94 less its latency); "
             f"cluster C's H100 all-to-all from 1 GiB reaches {min(c):.3f}-{max(c):.3f} (NCCL "
             f"2.29.2; NDm ran 2.17.1, stated): one system, one size pair, no second measurement"]
    d.update(share=meas, twin_share=twin, c_share=(min(c), max(c)))
    return lines, d


def ev_a100_ramp(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """An A100 curve that ramps faster than the twin's at 64-128 MiB (OCI, NCCL 2.19.3)."""
    text, d = _agreement(x, same)
    kw = {k: v for k, v in x.kw.items() if k != "algorithm"}
    s = float(x.row["bytes"])
    ring = _bw("allreduce", s, 2, algorithm="ring", **kw)
    tree = _bw("allreduce", s, 2, algorithm="tree", **dict(kw, nvls=False))
    lines = [text, f"algorithm not stated (two nodes without NVLS: Ring or Tree); the twin forced "
             f"Ring {ring:.1f} ({_pct(ring / x.measured - 1)}), Tree {tree:.1f} "
             f"({_pct(tree / x.measured - 1)}): neither reaches it; the measured ramp is faster "
             f"than the twin's fill (the other OCI runs start at 1 GiB)"]
    d.update(ring=ring, tree=tree)
    return lines, d


def ev_two_node_tree(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """OCI A100, NCCL 2.19.3 from 1 GiB: a classic Tree above the NICs, which the model holds to
    them (nccl_multinode_heldout4.py)."""
    text, d = _agreement(x, same)
    kw = {k: v for k, v in x.kw.items() if k != "algorithm"}
    s = float(x.row["bytes"])
    tree = _bw("allreduce", s, 2, algorithm="tree", **dict(kw, nvls=False))
    share = hd4.line_rate_share(x.row)
    what_if = hd4.tree_once_what_if(x.row)
    lines = [text, f"{share:.2f} of the NICs' line rate: no ring carries that, so NCCL 2.19.3 ran "
             f"its classic Tree (the version is stated, the algorithm is not); the twin's forced "
             f"Tree {tree:.1f} ({_pct(tree / x.measured - 1)}): the model holds a 2-node classic "
             f"Tree to the NICs (as nccl-tests 175's A100 Tree measures), a Tree crossing them "
             f"once would give {what_if:.1f} ({_pct(what_if / x.measured - 1)}; heldout4's "
             f"what-if); the other NCCL versions on the same nodes stay at 0.86-0.96 (rings)"]
    d.update(tree=tree, share=share, what_if=what_if)
    return lines, d


def ev_nt277(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """nccl-tests 277, 4 A100 with 4x HDR per node: 0.78 of line rate, rounded, no size."""
    text, d = _agreement(x, same)
    kw = {k: v for k, v in x.kw.items() if k != "algorithm"}
    s = hd3.sizes_bytes(x.row)
    ring = max(np.atleast_1d(coll.collective_bandwidths_gb_s("allreduce", s, 2, 4, algorithm="ring",
                                                             **kw)["busbw_gb_s"]))
    tree = max(np.atleast_1d(coll.collective_bandwidths_gb_s(
        "allreduce", s, 2, 4, algorithm="tree", **dict(kw, nvls=False))["busbw_gb_s"]))
    lines = [text, f"a rounded figure for a sweep (\"the busbw is 78\"), 0.78 of line rate, below "
             f"every other A100/A800 system with 25 GB/s of NIC per GPU or less (0.90-1.00, "
             f"heldout3; the same comment's 2-NIC run 0.90, {_pct(hd3.twin_gb_s([r for r in hd3.rows() if r['table'] == 'NT277_2NIC'][0])[0] / 45.0 - 1)})",
             f"unstated input checked: the algorithm NCCL ran (no log): the twin's peak forced Ring "
             f"{ring:.1f} ({_pct(ring / x.measured - 1)}, its tuner's choice), classic Tree "
             f"{tree:.1f} ({_pct(tree / x.measured - 1)}): possible, but nothing points at Tree "
             f"(the other default two-node A100 rows are met by the twin's Ring)"]
    d.update(ring=float(ring), tree=float(tree))
    return lines, d


def ev_node_nvls(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """RoCE cluster, 2 nodes with NVLS: the node's own NVLS figure, 430 GB/s on one node."""
    text, d = _agreement(x, same)
    one = _bw("allreduce", float(x.row["bytes"]), 1)
    nv = 450.0 * 430.0 / one
    two = _bw("allreduce", float(x.row["bytes"]), 2, transport="roce", nvlink_gb_s=nv)
    lines = [text, f"input: the node's own NVLS all-reduce (the issue reports the same 430 GB/s on "
             f"ONE node; NCCL 2.19.3); the twin's single node, fitted on DGX H100 with a newer NCCL, "
             f"gives {one:.1f} ({_pct(one / 430 - 1)}); with the node's NVLS at 430 (NVLink "
             f"{nv:.0f} GB/s in the model) the twin's 2-node figure is {two:.1f} "
             f"({_pct(two / x.measured - 1)})"]
    d.update(one_node=one, two_node_at_430=two)
    return lines, d


def ev_algorithm_run(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """H20 (nccl issue 1244): which algorithm NCCL ran (version not stated)."""
    text, d = _agreement(x, same)
    s = float(x.row["bytes"])
    ring = _bw("allreduce", s, 2, algorithm="ring")
    tree = _bw("allreduce", s, 2, algorithm="tree", nvls=False)
    lines = [text, f"input: the algorithm NCCL ran (NCCL version not stated; the curve falls from "
             f"268.9 GB/s at 64 MiB to 227.1 at 128 MiB, a tuner switch as B's and C's dips); the "
             f"twin runs NVLSTree, as NCCL 2.29-2.30's model does on 2 nodes; forced Ring "
             f"{ring:.1f} ({_pct(ring / x.measured - 1)}), classic Tree {tree:.1f} "
             f"({_pct(tree / x.measured - 1)})"]
    d.update(ring=ring, tree=tree)
    return lines, d


def ev_fabric_beyond_two_nodes(x: Row, same: list[Row]) -> tuple[list[str], dict]:
    """nccl-tests 169 (A100, 8x 100G RoCE) on 3-6 nodes: the fabric, not described."""
    text, d = _agreement(x, same)
    mine = [y for y in goal_rows() if y.table == x.table]
    share = {int(y.row["nodes"]): y.measured / 100.0 for y in mine}
    two = [y for y in mine if int(y.row["nodes"]) == 2][0]
    lines = [text, "input: the fabric between the nodes (topology, oversubscription: the thread "
             "does not describe it; the model takes the node's achievable bandwidth, "
             "inter_node_gbps, as the NICs' 800 Gb/s); the same system's share of line rate by "
             "nodes " + ", ".join(f"{n}: {v:.2f}" for n, v in sorted(share.items()))
             + f"; its 2-node row is {_pct(two.error)}; a ring's bytes per NIC do not grow with "
             f"the node count (the twin's share {x.twin_gb_s / 100:.3f} at every count, Kestrel's "
             f"16-node ring 0.914 at the same 12.5 GB/s of NIC per GPU): the fall is the network's"]
    d.update(share=share)
    return lines, d


#: (class, evidence) of every miss, by label; class (a) is not listed: it is decided from the
#: data (a configuration's measurements more than 10 % apart, minimax)
CAUSES: dict[str, tuple[str, Callable]] = {
    "nvls_tree_ramp": ("c", ev_nvls_tree_ramp),
    "c_ring_fixed_cost": ("c", ev_c_ring_fixed_cost),
    "a2a_fill": ("c", ev_a2a_fill),
    "a2a_share_a100": ("c", ev_a2a_share),
    "nt277_share": ("c", ev_nt277),
    "a100_ramp": ("c", ev_a100_ramp),
    "two_node_tree_above_nics": ("c", ev_two_node_tree),
    "node_nvls": ("b", ev_node_nvls),
    "algorithm_run": ("b", ev_algorithm_run),
    "fabric_beyond_two_nodes": ("b", ev_fabric_beyond_two_nodes),
}
CLASSES: dict[str, str] = {
    "A 4n allreduce 64 MiB": "nvls_tree_ramp",
    "B 8n allreduce 128 MiB": "nvls_tree_ramp",
    "B 8n allreduce 256 MiB": "nvls_tree_ramp",
    "C 10n allreduce 128 MiB": "nvls_tree_ramp",
    "C 10n all_gather 255 MiB": "c_ring_fixed_cost",
    "C 10n all_gather 511 MiB": "c_ring_fixed_cost",
    "C 10n reduce_scatter 63 MiB": "c_ring_fixed_cost",
    "C 10n reduce_scatter 127 MiB": "c_ring_fixed_cost",
    "C 10n reduce_scatter 255 MiB": "c_ring_fixed_cost",
    "C 10n reduce_scatter 511 MiB": "c_ring_fixed_cost",
    "C 10n all_to_all 63 MiB": "a2a_fill",
    "NDMV4 2n all_to_all 1024 MiB": "a2a_share_a100",
    "NDMV4 2n all_to_all 4096 MiB": "a2a_share_a100",
    "NT277_4NIC 2n allreduce peak": "nt277_share",
    # HP's third held-out set (nccl_multinode_heldout4.csv): NCCL 2.19.3's run (its 1 and 4 GiB
    # rows are class (a): the other NCCL versions on the same nodes measure 12 and 11 % apart)
    "OCI_A100_2219 2n allreduce 64 MiB": "a100_ramp",
    "OCI_A100_2219 2n allreduce 128 MiB": "a100_ramp",
    "OCI_A100_2219 2n allreduce 2048 MiB": "two_node_tree_above_nics",
    "OCI_A100_2219 2n allreduce 8192 MiB": "two_node_tree_above_nics",
    "RoCE NVLS 2n allreduce 8192 MiB": "node_nvls",
    "NCCL1244 2n allreduce 128 MiB": "algorithm_run",
    "NCCL1244 2n allreduce 256 MiB": "algorithm_run",
    "NCCL1244 2n allreduce 512 MiB": "algorithm_run",
    "NT169 3n allreduce peak": "fabric_beyond_two_nodes",
    "NT169 4n allreduce peak": "fabric_beyond_two_nodes",
    "NT169 5n allreduce peak": "fabric_beyond_two_nodes",
    "NT169 6n allreduce peak": "fabric_beyond_two_nodes",
}


@dataclass
class Miss:
    row: Row
    cls: str  # "a", "b" or "c"
    cause: str
    lines: list[str]
    figures: dict


def classify(rows: list[Row] | None = None) -> list[Miss]:
    """Every goal row beyond 10 %, with its class and evidence.  Raises if a miss has no class
    (a model change moved a row in: CLASSES must be updated knowingly)."""
    rows = goal_rows() if rows is None else rows
    pool = rows + repeat_rows()
    out = []
    for x in rows:
        if abs(x.error) <= GOAL:
            continue
        same = same_configuration(x, pool)
        if len(same) > 1 and minimax_error([y.measured for y in same]) > GOAL:
            lines, d = ev_spread(x, same)
            out.append(Miss(x, "a", "spread", lines, d))
            continue
        if x.label not in CLASSES:
            raise KeyError(f"goal row {x.label!r} misses ({100 * x.error:+.1f} %) and has no class")
        cause = CLASSES[x.label]
        cls, ev = CAUSES[cause]
        lines, d = ev(x, same)
        out.append(Miss(x, cls, cause, lines, d))
    return out


def counts(rows: list[Row], misses: list[Miss]) -> dict:
    """Rows, rows within 10 % and misses by class, for the 107, the 118 (with HG's) and all
    136 (with HP's)."""
    out = {}
    for name, sets in (("107", ("107",)), ("118", ("107", "HG")), ("136", ("107", "HG", "HP"))):
        sel = [x for x in rows if x.goal_set in sets]
        ms = [m for m in misses if m.row.goal_set in sets]
        out[name] = {"rows": len(sel), "within": sum(abs(x.error) <= GOAL for x in sel),
                     **{c: sum(m.cls == c for m in ms) for c in "abc"}}
    return out


def main() -> None:
    rows = goal_rows()
    misses = classify(rows)
    names = {"a": "measurement spread", "b": "an input the source does not state",
             "c": "model deficiency"}
    for m in misses:
        x = m.row
        print(f"\n[{m.cls}] {x.label} ({x.table}; set {x.goal_set}): measured {x.measured:.2f} GB/s, "
              f"twin {x.twin_gb_s:.1f}, error {_pct(x.error)}  - {names[m.cls]} ({m.cause})")
        for line in m.lines:
            print("      " + line)
    print()
    for name, c in counts(rows, misses).items():
        print(f"goal set of {name}: {c['within']} of {c['rows']} within 10 %; misses: "
              f"(a) {c['a']}, (b) {c['b']}, (c) {c['c']}")


if __name__ == "__main__":
    main()
