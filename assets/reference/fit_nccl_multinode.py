"""Fit the network parameters of twin/compute/collectives.py on the "fit" rows of
nccl_allreduce_multinode_h100.csv and report every row from 64 MB up.

    .venv/bin/python assets/reference/fit_nccl_multinode.py

Three parameters, fitted once (log least squares on the fit rows from 64 MB: cluster A at
4 nodes, cluster B at 8 nodes): the ring efficiency ``TRANSPORTS["ib_rdma"][0]``, the
NVLSTree gain over it ``NVLS_TREE_NET_GAIN`` and the pipeline fill ``NET_FILL_S0_BYTES``.
Each row is computed with its cluster's ``nvls_tree_tuner_fraction`` (which algorithm NCCL's
tuner runs; an input per system, see the CSV header).  The fit runs with the model's default,
the NIC-share law (``coll.NIC_SHARE_LAW``): every fit row has one 400 Gb/s NIC per GPU
(``b = 50 GB/s``), where the law's share ``min(0.94, eta C_ref / b)`` is the ring efficiency
itself, so the law leaves the fit unchanged (0.827, 1.121, 39.1 MB before and after it); the
script prints the ring channel limit per GPU it implies and the crossover ``b*``.  The printed values are what the
module holds; the held-out rows of both tables (nccl_multinode_h100_10node.csv too) are
reported with them.  Last, every ring curve is written as ``t = a + F S / B`` (a straight
line through the measured times): the fixed cost ``a`` measured, the twin's and NCCL's
own model latency side by side (docs/validation.md, "where the misses come from").
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

import twin.compute.collectives as coll

HERE = Path(__file__).resolve().parent
MIN_BYTES = 64 * 2**20
TABLES = ("nccl_allreduce_multinode_h100.csv", "nccl_multinode_h100_10node.csv")


def rows(name: str = TABLES[0]) -> list[dict]:
    with open(HERE / name) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def predict_gb_s(r: dict) -> float:
    """Bus bandwidth [GB/s] the twin gives for one row (DGX H100, 8x NDR, NVLS)."""
    return float(coll.collective_bandwidths_gb_s(
        r.get("op", "allreduce"), float(r["bytes"]), int(r["nodes"]), 8,
        nvls_tree_tuner_fraction=float(r["nvls_tree_tuner_fraction"]))["busbw_gb_s"])


#: Ring curves of the reference tables, over the sizes where the tuner runs Ring/Simple:
#: (cluster, nodes, collective, run, smallest size [B]).  B's all-reduce switches to Ring at
#: 256 MiB on 4 nodes and at 1 GiB on 8; C's at 4 GiB; C's all-gather and reduce-scatter are
#: rings at every size (from 256 MiB: below it the measured curve is flat, another regime).
RING_CURVES = (("B", 4, "allreduce", "1", 2**28), ("B", 8, "allreduce", "1", 2**30),
               ("C", 10, "all_gather", "1", 2.5e8), ("C", 10, "all_gather", "2", 2.5e8),
               ("C", 10, "reduce_scatter", "1", 2.5e8), ("C", 10, "allreduce", "1", 2**32),
               ("C", 10, "allreduce", "2", 2**32))


def ring_fixed_costs() -> list[dict]:
    """Each ring curve as ``t = a + F S / B``: the fixed cost ``a`` [s] and asymptote ``B``
    [GB/s] of a straight-line fit of the measured times, of the twin's times at the same
    sizes, and NCCL's own model latency (``coll.nccl_ring_latency_us``)."""
    out = []
    for cl, nodes, op, run, lo in RING_CURVES:
        sel = [r for name in TABLES for r in rows(name)
               if r["cluster"] == cl and int(r["nodes"]) == nodes and r.get("op", "allreduce") == op
               and r.get("run", "1") == run and r["role"] != "tuned" and int(r["bytes"]) >= lo]
        s = np.array([float(r["bytes"]) for r in sel])
        n = 8 * nodes
        f = float(coll.bus_factor(op, n))
        twin = np.array([predict_gb_s(r) for r in sel])
        row = dict(cluster=cl, nodes=nodes, op=op, run=run, n=len(sel), ranks=n,
                   steps=2 * (n - 1) if op == "allreduce" else n - 1,
                   nccl_model_s=coll.nccl_ring_latency_us(op, n, nodes) * 1e-6)
        for key, bw in (("meas", np.array([float(r["busbw_gb_s"]) for r in sel])), ("twin", twin)):
            inv_b, a = np.polyfit(f * s, f * s / (bw * 1e9), 1)
            row[f"{key}_a_s"], row[f"{key}_b_gb_s"] = float(a), float(1.0 / inv_b / 1e9)
        out.append(row)
    return out


def print_ring_fixed_costs() -> None:
    """The table of docs/validation.md, and a per-step cost shared by the two clusters with
    a constant per collective for each (least squares on the measured fixed costs)."""
    rc = ring_fixed_costs()
    print("ring curve                     steps  measured a [ms] / B [GB/s]   twin a / B"
          "          NCCL model [ms]")
    for r in rc:
        print(f"{r['cluster']}{r['nodes']:<3d}{r['op']:15s} run {r['run']}  {r['steps']:5d}"
              f"  {1e3 * r['meas_a_s']:6.3f} / {r['meas_b_gb_s']:5.1f}"
              f"             {1e3 * r['twin_a_s']:6.3f} / {r['twin_b_gb_s']:5.1f}"
              f"     {1e3 * r['nccl_model_s']:6.3f}")
    m = np.array([[r["cluster"] == "B", r["cluster"] == "C", r["steps"]] for r in rc], float)
    (c_b, c_c, per_step), *_ = np.linalg.lstsq(m, [r["meas_a_s"] for r in rc], rcond=None)
    print(f"a = c_cluster + steps x {1e6 * per_step:.2f} us: c_B {1e3 * c_b:.3f} ms, "
          f"c_C {1e3 * c_c:.3f} ms")
    # a third full-node cluster (AWS p5, EFA; Ring/Simple rows as AWS's tuner chose them)
    # against the per-step law of B's two rings alone
    b4, b8 = (next(r["meas_a_s"] for r in rc if r["cluster"] == "B" and r["nodes"] == n)
              for n in (4, 8))
    dt = (b8 - b4) / (126 - 62)
    p5 = rows("nccl_multinode_h100_p5_efa.csv")
    for nodes in (4, 8):
        sel = [r for r in p5 if r["op"] == "allreduce" and int(r["nodes"]) == nodes
               and (r["tuner_algo"], r["tuner_proto"]) == ("ring", "Simple")]
        s = np.array([float(r["bytes"]) for r in sel])
        f = float(coll.bus_factor("allreduce", 8 * nodes))
        inv_b, a = np.polyfit(f * s, f * s / (np.array([float(r["busbw_gb_s"]) for r in sel])
                                              * 1e9), 1)
        steps = 2 * (8 * nodes - 1)
        print(f"P5{nodes:<3d}allreduce (EFA) {steps:5d}  {1e3 * a:6.3f} / {1.0 / inv_b / 1e9:5.1f}"
              f"   B's law c_B + steps x dt: {1e3 * (b4 + (steps - 62) * dt):6.3f} ms")


def c_all_to_all_rows() -> list[dict]:
    """Cluster C's all-to-all rows from 64 MB (run 1)."""
    return [r for r in rows(TABLES[1]) if r["op"] == "all_to_all" and r["run"] == "1"
            and int(r["bytes"]) >= MIN_BYTES]


def c_all_to_all_fill_bytes() -> float:
    """The all-to-all fill ``A2A_FILL_S0_BYTES`` [B] that cluster C's own all-to-all curve gives
    (log least squares, everything else as shipped); the module is left as it was."""
    a2a = c_all_to_all_rows()
    keep = coll.A2A_FILL_S0_BYTES

    def resid(x):
        coll.A2A_FILL_S0_BYTES = float(x[0])
        return [np.log(predict_gb_s(r) / float(r["busbw_gb_s"])) for r in a2a]

    try:
        res = least_squares(resid, [20e6], bounds=([0.0], [1e9]), diff_step=1e-3)
    finally:
        coll.A2A_FILL_S0_BYTES = keep
    return float(res.x[0])


def _set(x) -> None:
    eff, gain, s0 = x
    t = coll.TRANSPORTS["ib_rdma"]
    coll.TRANSPORTS["ib_rdma"] = (float(eff), t[1], t[2])
    coll.NVLS_TREE_NET_GAIN = float(gain)
    coll.NET_FILL_S0_BYTES = float(s0)


def main() -> None:
    data = [r for r in rows() if r["role"] != "tuned" and int(r["bytes"]) >= MIN_BYTES]
    fit = [r for r in data if r["role"] == "fit"]
    keep = (coll.TRANSPORTS["ib_rdma"], coll.NVLS_TREE_NET_GAIN, coll.NET_FILL_S0_BYTES)

    def resid(x):
        _set(x)
        return [np.log(predict_gb_s(r) / float(r["busbw_gb_s"])) for r in fit]

    res = least_squares(resid, [0.85, 1.1, 30e6], bounds=([0.5, 0.8, 0.0], [1.0, 1.5, 1e9]),
                        diff_step=1e-3)
    print(f"fitted: ib_rdma ring efficiency {res.x[0]:.3f}, NVLS_TREE_NET_GAIN {res.x[1]:.3f}, "
          f"NET_FILL_S0_BYTES {res.x[2] / 1e6:.1f} MB (NIC-share law "
          f"{'on' if coll.NIC_SHARE_LAW else 'off'})")
    c_gpu = res.x[0] * coll.RING_CHANNEL_REF_NIC_GB_S
    print(f"ring channel limit per GPU C = {c_gpu:.1f} GB/s; the wire bound "
          f"{coll.P2P_NIC_EFFICIENCY_IB:.2f} takes over below b* = "
          f"{c_gpu / coll.P2P_NIC_EFFICIENCY_IB:.1f} GB/s of NIC per GPU")
    _set(res.x)
    # what cluster C's all-to-all curve alone would give for the all-to-all's fill
    a2a = c_all_to_all_rows()
    keep_a2a = coll.A2A_FILL_S0_BYTES
    print(f"all-to-all fill on cluster C's curve: {c_all_to_all_fill_bytes() / 1e6:.1f} MB "
          f"(not adopted: the module keeps {keep_a2a / 1e6:.1f} MB, see A2A_FILL_S0_BYTES)")
    held = [r for r in rows(TABLES[1]) if r["role"] == "validate" and r["op"] != "all_to_all"
            and int(r["bytes"]) >= MIN_BYTES]  # all-reduce, all-gather, reduce-scatter
    for role, sel in (("fit", fit), ("validate", [r for r in data if r["role"] == "validate"]),
                      ("a2a", a2a), ("10-node", held)):
        e = np.array([predict_gb_s(r) / float(r["busbw_gb_s"]) - 1 for r in sel])
        print(f"{role:8s} n={e.size:2d} mean |error| {100 * np.abs(e).mean():.1f} % "
              f"worst {100 * np.abs(e).max():.1f} %")
    coll.TRANSPORTS["ib_rdma"], coll.NVLS_TREE_NET_GAIN, coll.NET_FILL_S0_BYTES = keep
    coll.A2A_FILL_S0_BYTES = keep_a2a
    print_ring_fixed_costs()


if __name__ == "__main__":
    main()
