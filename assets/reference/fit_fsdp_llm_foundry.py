"""Fit of the PyTorch FSDP kernel entries of twin/compute/step.py (issue 16).

    .venv/bin/python assets/reference/fit_fsdp_llm_foundry.py

Two parameters, fitted once by log least squares on a stated subset of MosaicML's MPT
step times (assets/reference/fsdp_step_times_llm_foundry.csv): the 19 H100 runs with
activation checkpointing and micro-batches of at least 16,384 tokens whose sequences are
at most 2,048 or at least 8,192 tokens.  The other 38 rows (sequences of 4,096, runs
without checkpointing, smaller micro-batches, every A100 row) and the torchtitan rows are
validation only (tests/compute/test_fsdp_validation.py).

* ``TRITON_FLASH_ATTENTION_SLOWDOWN``: FlashAttention-2's speed over the Triton
  FlashAttention kernel most runs used (``attn_impl: triton``); the FlashAttention-2 rows
  (7b / 70b at >= 128 GPUs) take 335 TFLOP/s (Dao 2023) unchanged;
* ``FSDP_WHOLE_GEMM_EFFICIENCY``: BF16 efficiency of whole (not tensor-parallel-split)
  GEMMs on H100.

The PyTorch FSDP backward is modelled with its all-gather and reduce-scatter serialised
with each layer's compute (``fsdp_backward_overlap=False``), not fitted.  Prints the fitted
values and the errors per row.  The fit runs on the H100 table of twin/compute/step.py (its rank
jitter, overlap and collectives), so it is re-run after fit_step_h100.py; :func:`fit_constants`
is what tests/compute/test_fits_reproduce_constants.py compares the constants with.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.compute.test_fsdp_validation import _estimate, _fit_rows  # noqa: E402
from twin.compute.step import H100_SXM_FA2  # noqa: E402


def kernels(r: dict, slowdown: float, gemm: float):
    """The H100 PyTorch-FSDP entry of a row for trial parameter values."""
    ke = replace(H100_SXM_FA2, gemm=gemm, fsdp_backward_overlap=False)
    if r["attn_impl"] == "triton":
        ke = replace(ke, attention_fwd=ke.attention_fwd / slowdown,
                     attention_bwd=ke.attention_bwd / slowdown)
    return ke


def log_errors(x, rows) -> np.ndarray:
    """ln(twin / measured) of each row [-] at (slowdown, gemm) = x."""
    return np.array([np.log(_estimate(r, kernels=kernels(r, *x)).step_time_s
                            / float(r["step_time_s"])) for r in rows])


def fit(rows) -> np.ndarray:
    """(slowdown, gemm) minimising the sum of squared log errors on ``rows``."""
    res = minimize(lambda x: float(np.sum(log_errors(x, rows) ** 2)), [1.6, 0.75],
                   method="Nelder-Mead", options=dict(xatol=1e-5, fatol=1e-12, maxiter=600))
    return res.x


def fit_constants() -> tuple[float, float]:
    """(TRITON_FLASH_ATTENTION_SLOWDOWN, FSDP_WHOLE_GEMM_EFFICIENCY) fitted on the 19 rows."""
    slowdown, gemm = fit(_fit_rows())
    return float(slowdown), float(gemm)


if __name__ == "__main__":
    rows = _fit_rows()
    x = fit(rows)
    print(f"{len(rows)} fit rows: TRITON_FLASH_ATTENTION_SLOWDOWN = {x[0]:.4f}, "
          f"FSDP_WHOLE_GEMM_EFFICIENCY = {x[1]:.4f}")
    for r, e in zip(rows, log_errors(x, rows), strict=True):
        print(f"  {r['model']:8s} {r['gpus']:>4s} GPUs  mb {r['micro_batch']:>3s} x "
              f"{r['grad_accum']:>2s}  seq {r['seq_len']:>6s}  {r['attn_impl']:6s} "
              f"{100 * np.expm1(e):+5.1f} %")
