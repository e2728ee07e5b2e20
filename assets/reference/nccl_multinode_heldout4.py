"""The twin against the held-out tables of helper HP's search (issue 16): OCI bare-metal A100
nodes on 2 nodes over 16 x 100 Gb/s RoCE, four NCCL versions, NCCL's own tuner and a forced
Ring, row by row.

    .venv/bin/python assets/reference/nccl_multinode_heldout4.py

Reads ``nccl_multinode_heldout4.csv`` (sources, assumptions and the search record:
``nccl_multinode_heldout4_sources.md``) and runs the collective model as it is in the tree,
through the row machinery of ``nccl_multinode_heldout3.py`` (the same node keywords: the A100
node of ``nccl_multinode_heldout2.GPU_KW``, NVLink 3 at 300 GB/s one way, no NVLS; the node's
NICs as count x rate; ``nics_per_node`` and ``compute_capability`` where the model has them), so
a change to how those scripts describe an A100 reaches these rows too.  Nothing is fitted here;
``tests/compute/test_multinode_heldout4.py`` pins what this prints.

Besides the error per row it prints what the rows say without the model:

- the share of the NICs' line rate, ``busbw / (NICs x rate / 8)`` [-]: a ring's bus bandwidth
  crosses every NIC once, so a share above 1 cannot be a ring (on 2 nodes of A100, with no
  NVLS and no SHARP, it is NCCL's classic Tree, whose bus bandwidth on 2 nodes is not held to
  the NICs);
- the run-to-run spread of the repeated Ring runs at the sizes they share.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from twin.compute.collectives import (
    bus_factor,
    collective_bandwidths_gb_s,
    nccl_tree_ceiling_gb_s,
)

HERE = Path(__file__).resolve().parent
CSV = HERE / "nccl_multinode_heldout4.csv"

sys.path.insert(0, str(HERE))
try:
    import nccl_multinode_heldout3 as _hg
finally:
    sys.path.remove(str(HERE))

#: the issue-16 goal: within 10 % from 64 MB up
GOAL = _hg.GOAL
#: Per table: rows, rows within the goal, mean and worst |error| (heldout2's definition).
summary = _hg.summary


def rows() -> list[dict]:
    """The CSV's data rows (dicts of str)."""
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def line_rate_gb_s(r: dict) -> float:
    """The node's NIC line rate [GB/s]."""
    return _hg.line_rate_gb_s(r)


def line_rate_share(r: dict) -> float:
    """Measured out-of-place bus bandwidth over the node's NIC line rate [-]."""
    return float(r["busbw_gb_s"]) / line_rate_gb_s(r)


def above_the_nics(r: dict) -> bool:
    """Whether the row's bus bandwidth exceeds the NICs' line rate, which a ring cannot."""
    return line_rate_share(r) > 1.0


def errors() -> list[dict]:
    """Each row with the twin's bus bandwidth [GB/s], algorithm, share of line rate and the
    relative error (twin / measured - 1), with the model's defaults."""
    out = []
    for r in rows():
        bw, algo, size = _hg.twin_gb_s(r)
        out.append({**r, "twin_gb_s": bw, "twin_algo": algo, "twin_bytes": size,
                    "error": bw / float(r["busbw_gb_s"]) - 1.0,
                    "share": line_rate_share(r), "twin_share": bw / line_rate_gb_s(r)})
    return out


def ring_spread() -> dict[int, tuple[int, float, float, float]]:
    """The forced-Ring runs of NCCL 2.29.3 (one validate table and its repeats) at each size
    they share: {bytes: (runs, min, max [GB/s], (max - min) / mean [-])}."""
    by_size: dict[int, list[float]] = {}
    for r in rows():
        if r["table"].startswith("OCI_A100_RING"):
            by_size.setdefault(int(r["bytes"]), []).append(float(r["busbw_gb_s"]))
    return {s: (len(v), min(v), max(v), (max(v) - min(v)) / float(np.mean(v)))
            for s, v in sorted(by_size.items()) if len(v) > 1}


def tree_once_what_if(r: dict) -> float:
    """A what-if, not the model [GB/s]: the bus bandwidth of a classic Tree on 2 nodes if, like
    NVLSTree, it crossed the NICs once, ``min(intra, F x ring, ceiling)``: ``intra`` the twin's
    one-node all-reduce of the row's size (the NVLink bound), ``F x ring`` the twin's 2-node
    ring bus bandwidth times the all-reduce bus factor ``F = 2(n-1)/n`` of the ``n`` ranks
    (each node's reduced buffer crosses the network once, where a ring moves ``F S`` per
    node), ``ceiling`` NCCL's Tree cap with one channel per NIC
    (:func:`twin.compute.collectives.nccl_tree_ceiling_gb_s`).  The model in the tree holds a
    classic Tree to the NICs (``F x ring / 2``)."""
    kw = _hg.twin_kwargs({**r, "algo": ""})
    s, n, g = float(r["bytes"]), int(r["nodes"]), int(r["gpus_per_node"])
    intra = float(collective_bandwidths_gb_s("allreduce", s, 1, g, **{
        k: v for k, v in kw.items() if k in ("nvlink_gb_s", "nvls")})["busbw_gb_s"])
    ring = float(collective_bandwidths_gb_s("allreduce", s, n, g,
                                            **{**kw, "algorithm": "ring"})["busbw_gb_s"])
    ceiling = nccl_tree_ceiling_gb_s(int(kw["compute_capability"]), n, int(r["nics"]))
    f = float(bus_factor("allreduce", n * g))
    return min(intra, f * ring, ceiling)


def _size(b: int) -> str:
    return f"{b >> 30} GiB" if b >= 2**30 and b % 2**30 == 0 else f"{b >> 20} MiB"


def main() -> None:
    errs = errors()
    print(f"{'table':16} {'NCCL':6} {'algo':4} {'size':>7} {'meas':>7} {'in-pl':>7} {'twin':>7} "
          f"{'error':>7}  {'share':>5} {'twin':>5}  twin's algo  role")
    for e in errs:
        print(f"{e['table']:16} {e['nccl']:6} {e['algo'] or '-':4} {_size(int(e['bytes'])):>7} "
              f"{float(e['busbw_gb_s']):7.2f} {float(e['busbw_ip_gb_s']):7.2f} "
              f"{e['twin_gb_s']:7.1f} {100 * e['error']:+6.1f}%  {e['share']:5.3f} "
              f"{e['twin_share']:5.3f}  {e['twin_algo']:11} {e['role']}")
    print("\nper table: rows, within 10 %, mean / worst |error|")
    for t, s in summary(errs).items():
        print(f"  {t:16} {s['rows']:3d} {s['within']:3d}  {100 * s['mean']:6.1f} % / "
              f"{100 * s['worst']:6.1f} %")
    for role in dict.fromkeys(e["role"] for e in errs):
        sel = [e for e in errs if e["role"] == role]
        print(f"within 10 %, {role}: {sum(abs(e['error']) <= GOAL for e in sel)} of {len(sel)}")
    above = [e for e in errs if above_the_nics(e)]
    print(f"\nrows above the NICs' line rate ({line_rate_gb_s(errs[0]):.0f} GB/s), so not a ring: "
          + ", ".join(f"{e['table']} {_size(int(e['bytes']))} ({e['share']:.3f})" for e in above))
    print("what-if for those rows, a classic Tree crossing the NICs once on 2 nodes (not the "
          "model):")
    for e in above:
        w = tree_once_what_if(e)
        print(f"  {e['table']} {_size(int(e['bytes'])):>7}: {w:6.1f} GB/s, "
              f"{100 * (w / float(e['busbw_gb_s']) - 1):+5.1f} %")
    print("forced Ring, NCCL 2.29.3, run-to-run spread at the sizes the runs share:")
    for size, (n, lo, hi, spread) in ring_spread().items():
        print(f"  {_size(size):>7}: {n} runs, {lo:.2f}-{hi:.2f} GB/s, spread {100 * spread:.1f} %")


if __name__ == "__main__":
    main()
