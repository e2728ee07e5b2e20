"""Fit the H100 kernel table of twin/compute/step.py on the "fit" rows of
step_times_h100_dgxc.csv (log least squares) and report the "validate" rows.

    .venv/bin/python assets/reference/fit_step_h100.py

Five parameters: gemm, gemm_fp8, attention_fwd (attention_bwd tied at 0.82 x forward),
tp_overlap, rank_jitter_fraction.  Each row runs with its own gradient-reduction width
(the CSV's grad_bytes column: NeMo's performance scripts reduce FP8 runs' gradients in
bf16).  The printed values are what
``twin.compute.step.H100_SXM`` holds.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from twin.compute.shapes import MODEL_SHAPES
from twin.compute.step import H100_SXM, step_estimate

HERE = Path(__file__).resolve().parent
#: DGX H100: NVLink4 450 GB/s one way, NVLS, 8x NDR 400 Gb/s
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
            inter_node_gbps=3200.0)
def rows() -> list[dict]:
    with open(HERE / "step_times_h100_dgxc.csv") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def predict(r: dict, ke=H100_SXM) -> float:
    shape = dict(MODEL_SHAPES[r["model"]], layers=int(r["layers"]))
    prec = r["precision"]
    return step_estimate(
        **shape, gpus=int(r["gpus"]), global_batch=int(r["global_batch"]),
        micro_batch=int(r["micro_batch"]), tp=int(r["tp"]), pp=int(r["pp"]), cp=int(r["cp"]),
        vpp=int(r["vpp"]), peak_tflops=989.0 if prec == "bf16" else 1979.0, precision=prec,
        grad_bytes=float(r["grad_bytes"]), kernel_efficiency=ke, **H100).step_time_s


def table(x) -> object:
    gemm, gemm_fp8, att, tpo, jit = x
    return dataclasses.replace(H100_SXM, gemm=gemm, gemm_fp8=gemm_fp8,
                               attention_fwd=att, attention_bwd=0.82 * att, tp_overlap=tpo,
                               rank_jitter_fraction=jit)


def main() -> None:
    data = rows()
    fit = [r for r in data if r["role"] == "fit"]

    def resid(x):
        ke = table(x)
        return [np.log(predict(r, ke) / float(r["step_time_s"])) for r in fit]

    bounds = ([0.3, 0.3, 0.2, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 0.1])
    # the cost is piecewise smooth (wave quantisation, overlap limits): several starts,
    # the best on the fit rows wins
    starts = [[0.685, 0.567, 0.512, 0.818, 0.0213], [0.8, 0.7, 0.45, 0.5, 0.022],
              [0.75, 0.6, 0.5, 0.7, 0.02]]
    scale = [0.1, 0.1, 0.1, 0.1, 0.01]
    res = min((least_squares(resid, x, bounds=bounds, x_scale=scale) for x in starts),
              key=lambda r: r.cost)
    print("fitted:", dict(zip(("gemm", "gemm_fp8", "attention_fwd", "tp_overlap",
                               "rank_jitter_fraction"), np.round(res.x, 4).tolist(), strict=True)))
    ke = table(res.x)
    for role in ("fit", "validate"):
        e = np.array([predict(r, ke) / float(r["step_time_s"]) - 1 for r in data
                      if r["role"] == role])
        print(f"{role:8s} n={e.size:2d} MAE {100 * np.abs(e).mean():.2f} % "
              f"worst {100 * np.abs(e).max():.2f} %")


if __name__ == "__main__":
    main()
