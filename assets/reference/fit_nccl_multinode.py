"""Fit the network parameters of twin/compute/collectives.py on the "fit" rows of
nccl_allreduce_multinode_h100.csv and report every row from 64 MB up.

    .venv/bin/python assets/reference/fit_nccl_multinode.py

Two parameters, fitted once (log least squares on the fit rows from 64 MB): the
InfiniBand efficiency ``TRANSPORTS["ib_rdma"][0]`` and the pipeline fill
``NET_FILL_S0_BYTES``.  The printed values are what the module holds.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

import twin.compute.collectives as coll

HERE = Path(__file__).resolve().parent
MIN_BYTES = 64 * 2**20


def rows() -> list[dict]:
    with open(HERE / "nccl_allreduce_multinode_h100.csv") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def predict_gb_s(r: dict) -> float:
    """Bus bandwidth [GB/s] the twin gives for one row (DGX H100, 8x NDR, NVLS)."""
    return float(coll.collective_bandwidths_gb_s("allreduce", float(r["bytes"]),
                                                 int(r["nodes"]), 8)["busbw_gb_s"])


def _set(x) -> None:
    eff, s0 = x
    t = coll.TRANSPORTS["ib_rdma"]
    coll.TRANSPORTS["ib_rdma"] = (float(eff), t[1], t[2])
    coll.NET_FILL_S0_BYTES = float(s0)


def main() -> None:
    data = [r for r in rows() if r["role"] != "tuned" and int(r["bytes"]) >= MIN_BYTES]
    fit = [r for r in data if r["role"] == "fit"]
    keep = (coll.TRANSPORTS["ib_rdma"], coll.NET_FILL_S0_BYTES)

    def resid(x):
        _set(x)
        return [np.log(predict_gb_s(r) / float(r["busbw_gb_s"])) for r in fit]

    res = least_squares(resid, [0.9, 30e6], bounds=([0.5, 0.0], [1.0, 1e9]))
    print(f"fitted: ib_rdma efficiency {res.x[0]:.3f}, NET_FILL_S0_BYTES {res.x[1] / 1e6:.1f} MB")
    _set(res.x)
    for role in ("fit", "validate"):
        e = np.array([predict_gb_s(r) / float(r["busbw_gb_s"]) - 1 for r in data
                      if r["role"] == role])
        print(f"{role:8s} n={e.size:2d} mean |error| {100 * np.abs(e).mean():.1f} % "
              f"worst {100 * np.abs(e).max():.1f} %")
    coll.TRANSPORTS["ib_rdma"], coll.NET_FILL_S0_BYTES = keep


if __name__ == "__main__":
    main()
