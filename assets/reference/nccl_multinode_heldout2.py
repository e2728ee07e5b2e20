"""The twin against more held-out multi-node NCCL measurements (issue 16), row by row.

    .venv/bin/python assets/reference/nccl_multinode_heldout2.py

Reads ``nccl_multinode_heldout2.csv`` (sources and assumptions: ``nccl_multinode_heldout2_sources.md``)
and runs the shipped collective model (:func:`twin.compute.collectives.collective_bandwidths_gb_s`,
defaults: NVLink 4 at 450 GB/s one way with NVLS, NCCL's tuner with the default NVLSTree fraction)
on each row's system: nodes, GPUs per node, the node's NICs (count x rate; the count is also the
classic Tree's channels under the NIC-share law), the transport and the algorithm where the row
forced one (``NCCL_ALGO``).  H200 and H20 have no catalogue entry; they
share the H100's NVLink 4 and NVSwitch baseboard, so they run as H100 (the GPU's compute does not
enter a collective's time in the model); A100 rows take the catalogue A100 node's NVLink 3 and
no NVLS (``GPU_KW``).  A row without a size (a source's summary figure, the
peak of its sweep) is compared with the twin's peak over the nccl-tests sizes 64 MiB-16 GiB.
Nothing is fitted here; the tests pin the errors this prints
(``tests/compute/test_multinode_heldout2.py``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from twin.compute.collectives import (
    TRANSPORTS,
    collective_algorithm,
    collective_bandwidths_gb_s,
)

CSV = Path(__file__).with_name("nccl_multinode_heldout2.csv")
#: sizes over which a summary figure without a size is compared with the twin's peak [B]
PEAK_SIZES_BYTES = 2.0 ** np.arange(26, 35)
#: the issue-16 goal: within 10 % from 64 MB up
GOAL = 0.10


def rows() -> list[dict]:
    """The CSV's data rows (dicts of str)."""
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


#: the node's NVLink for GPUs other than the H100 class (the H100 defaults): A100 as the
#: catalogue's A100 node (twin/catalog/nodes.yaml, vela_a100: NVLink 3 at 300 GB/s one way,
#: NVSwitch, no NVLS); its NICs come from the row
GPU_KW: dict[str, dict] = {"A100": {"nvlink_gb_s": 300.0, "nvls": False}}


def twin_kwargs(r: dict) -> dict:
    """Keywords of ``collective_bandwidths_gb_s`` for a row's system."""
    kw: dict = dict(inter_node_gbps=float(r["nics"]) * float(r["nic_gbps"]),
                    transport=r["transport"], nics_per_node=int(r["nics"]),
                    **GPU_KW.get(r["gpu"], {}))
    if r["algo"]:
        kw["algorithm"] = r["algo"]
        # NCCL_ALGO=Tree is the classic double binary tree (no NVLS in the node)
        kw["nvls"] = r["algo"] != "tree"
    return kw


def twin_gb_s(r: dict) -> tuple[float, str]:
    """(the twin's bus bandwidth [GB/s], its algorithm) for a row; a row without a size gets
    the twin's peak over ``PEAK_SIZES_BYTES``."""
    s = np.asarray(PEAK_SIZES_BYTES if not r["bytes"] else [float(r["bytes"])])
    n, g, kw = int(r["nodes"]), int(r["gpus_per_node"]), twin_kwargs(r)
    bw = np.atleast_1d(collective_bandwidths_gb_s(r["op"], s, n, g, **kw)["busbw_gb_s"])
    i = int(np.argmax(bw))
    if "algorithm" in kw:
        algo = kw["algorithm"]
    else:
        tuner_kw = {k: v for k, v in kw.items() if k != "algorithm"}
        algo = str(collective_algorithm(r["op"], s[i:i + 1], n, g, **tuner_kw)[0])
    return float(bw[i]), algo


def errors() -> list[dict]:
    """Each row with the twin's figure, its algorithm and the relative error (twin / measured - 1)."""
    out = []
    for r in rows():
        bw, algo = twin_gb_s(r)
        out.append({**r, "twin_gb_s": bw, "twin_algo": algo,
                    "error": bw / float(r["busbw_gb_s"]) - 1.0})
    return out


def summary(errs: list[dict]) -> dict[str, dict]:
    """Per table: rows, rows within the goal, mean and worst |error|."""
    out: dict[str, dict] = {}
    for t in dict.fromkeys(e["table"] for e in errs):
        a = np.abs([e["error"] for e in errs if e["table"] == t])
        out[t] = {"rows": int(a.size), "within": int((a <= GOAL).sum()),
                  "mean": float(a.mean()), "worst": float(a.max())}
    return out


def line_rate_share(r: dict) -> float:
    """Measured bus bandwidth over the node's NIC line rate [-] (a ring's share of its NICs)."""
    return float(r["busbw_gb_s"]) / (float(r["nics"]) * float(r["nic_gbps"]) / 8.0)


def nccl1244_by_algorithm() -> dict[str, np.ndarray]:
    """The H20 rows (nccl issue 1244) against the twin with each algorithm forced [GB/s]:
    which algorithm the measured curve follows after its dip at 128 MiB."""
    sel = [r for r in rows() if r["table"] == "NCCL1244"]
    s = np.array([float(r["bytes"]) for r in sel])
    out = {"measured": np.array([float(r["busbw_gb_s"]) for r in sel])}
    for algo, kw in (("nvls_tree", {}), ("ring", {}), ("tree", {"nvls": False})):
        out[algo] = np.asarray(collective_bandwidths_gb_s("allreduce", s, 2, 8, algorithm=algo,
                                                          **kw)["busbw_gb_s"])
    return out


def channel_limited_ring_what_if(table: str) -> list[tuple[dict, float]]:
    """Not the shipped model (HD's what-if, run on the model before the NIC-share law, which
    replaced it): a table's rows under the ring law named in docs/validation.md for
    the A100 rows, a network share limited by the ring's channels rather than a fixed share of
    the NIC, ``eta = min(0.97, 41.4 GB/s / NIC share per GPU)`` (41.4 = 0.827 x 50 GB/s, the
    H100 fit; 0.97 perftest's line rate), times the transport's share of InfiniBand (RoCE 0.97).
    Returns (row, the twin's bus bandwidth [GB/s]) for each row of ``table``."""
    ib = TRANSPORTS["ib_rdma"][0]
    out = []
    for r in (e for e in rows() if e["table"] == table):
        per_gpu_gb_s = float(r["nics"]) * float(r["nic_gbps"]) / 8.0 / int(r["gpus_per_node"])
        shipped = TRANSPORTS[r["transport"]][0]
        eta = min(0.97, ib * 50.0 / per_gpu_gb_s) * shipped / ib
        kw = twin_kwargs(r)
        kw["inter_node_gbps"] *= eta / shipped
        kw["nic_share_law"] = False  # HD's what-if on the model before the NIC-share law
        kw["fill_time_law"] = False  # and before the fill-time law (its fill a size)
        out.append((r, float(collective_bandwidths_gb_s(
            r["op"], float(r["bytes"]), int(r["nodes"]), int(r["gpus_per_node"]),
            **kw)["busbw_gb_s"])))
    return out


def print_summary(errs: list[dict], table_width: int = 14, pct_width: int = 5,
                  role_note: str = "") -> None:
    """Print :func:`summary`'s table (a table's name in ``table_width`` columns, its mean and
    worst |error| [%] in ``pct_width``) and the rows within the goal per role; heldout3's
    printout calls it with its own widths."""
    print("\nper table: rows, within 10 %, mean / worst |error|")
    for t, s in summary(errs).items():
        print(f"  {t:{table_width}} {s['rows']:3d} {s['within']:3d}  "
              f"{100 * s['mean']:{pct_width}.1f} % / {100 * s['worst']:{pct_width}.1f} %")
    print(f"within 10 % by role{role_note}:")
    for role in dict.fromkeys(e["role"] for e in errs):
        sel = [e for e in errs if e["role"] == role]
        print(f"  {role:9} {sum(abs(e['error']) <= GOAL for e in sel):3d} of {len(sel)}")


def main() -> None:
    errs = errors()
    print(f"{'table':14} {'N':>4} {'op':10} {'algo':5} {'size':>10} {'meas':>8} {'twin':>8} "
          f"{'error':>8}  twin's algorithm  role")
    for e in errs:
        size = f"{int(e['bytes']) >> 20} MiB" if e["bytes"] else "peak"
        print(f"{e['table']:14} {e['nodes']:>4} {e['op']:10} {e['algo'] or '-':5} {size:>10} "
              f"{float(e['busbw_gb_s']):8.2f} {e['twin_gb_s']:8.1f} {100 * e['error']:+7.1f}%  "
              f"{e['twin_algo']:16} {e['role']}")
    print_summary(errs, role_note=" (validate: the issue-16 goal rows; the others are not counted)")
    print("\nforced rings at their largest size, share of the NICs' line rate (the twin's ring, "
          "NIC-share law: min(0.94, 41.4 GB/s / NIC per GPU) x the transport's ratio to IB):")
    for t in ("NT290_RING", "NCCL1368"):
        r = [e for e in errs if e["table"] == t and e["algo"] == "ring"][-1]
        print(f"  {t:14} {line_rate_share(r):.3f}")
    print("\nNCCL1244 (H20, 2 nodes, 64-512 MiB) with each algorithm forced [GB/s]:")
    for k, v in nccl1244_by_algorithm().items():
        print(f"  {k:10} " + " ".join(f"{x:6.1f}" for x in v))
    print("\nHD's what-if on the model before the NIC-share law (a channel-limited ring share, "
          "no Tree ceiling; not shipped): measured / twin [GB/s]")
    for t in ("NCCL1368", "AZ_NDMV4_AKS"):
        for r, gb_s in channel_limited_ring_what_if(t):
            size = f"{int(r['bytes']) >> 20} MiB"
            print(f"  {t:14} {r['algo'] or '-':5} {size:>10} {float(r['busbw_gb_s']):8.2f} "
                  f"{gb_s:8.1f} {100 * (gb_s / float(r['busbw_gb_s']) - 1):+7.1f}%")


if __name__ == "__main__":
    main()
