"""Every fitted constant of twin/compute/step.py is what its fit script gives today (issue 16).

The project's rule: each parameter is fitted once, on a stated subset, by a script in
assets/reference; when the model under a fit changes, the fit is re-run with the same script
and subset and the constant takes the new value.  These tests run each fit (the scripts' own
functions, a few seconds in all) and require the constant to equal the fit's result at the
precision the scripts print, 4 decimals.  A model change that moves an optimum fails here
until the fits are re-run in dependency order: fit_step_h100.py (H100 table, then A100),
fit_fsdp_llm_foundry.py (inherits the H100 table), step_times_moe2.py --fit-dropless (runs on
the H100 table).
"""

from __future__ import annotations

import pytest
from reference_scripts import reference_script

from twin.compute import step

fit_h100 = reference_script("fit_step_h100")
fit_fsdp = reference_script("fit_fsdp_llm_foundry")
moe2 = reference_script("step_times_moe2")

#: The printed precision of the fit scripts [decimals].
DECIMALS = 4


def _printed(x: float) -> float:
    return round(float(x), DECIMALS)


def test_h100_table_is_its_fit():
    # 4 parameters, log least squares on the 20 dgxc "fit" rows
    x = fit_h100.fit_h100()
    ke = step.H100_SXM
    held = {name: getattr(ke, name) for name in fit_h100.H100_PARAMETERS}
    assert held == dict(zip(fit_h100.H100_PARAMETERS, map(_printed, x), strict=True))
    # the backward attention is tied to the forward, not fitted
    assert ke.attention_bwd == pytest.approx(0.82 * ke.attention_fwd, rel=1e-12)
    # inside the fit's bounds, not on them
    lo, hi = [0.3, 0.3, 0.2, 0.0], [1.0, 1.0, 1.0, 0.1]
    assert all(a < v < b for a, v, b in zip(lo, x, hi, strict=True)), x


def test_a100_gemm_is_its_fit():
    # 1 parameter on the 18 Megatron-LM A100 rows; the modern-software A100 entry runs the
    # same kernels
    g = fit_h100.fit_a100_gemm()
    assert step.A100_SXM.gemm == step.A100_SXM.gemm_fp8 == _printed(g)
    assert step.A100_SXM_MODERN.gemm == step.A100_SXM_MODERN.gemm_fp8 == step.A100_SXM.gemm
    assert 0.5 < g < 0.95


def test_fsdp_constants_are_their_fit():
    # 2 parameters on the 19 llm-foundry H100 rows, on the H100 table as it stands
    slowdown, gemm = fit_fsdp.fit_constants()
    assert (step.TRITON_FLASH_ATTENTION_SLOWDOWN, step.FSDP_WHOLE_GEMM_EFFICIENCY) == (
        _printed(slowdown), _printed(gemm))


def test_dropless_load_is_its_fit():
    # the 8x22B dropless / forced-balance pair (465 / 445), by bisection on [1, 2]
    f = moe2.fit_dropless_load()
    assert step.MOE_DROPLESS_BUSIEST_LOAD == _printed(f)
    assert 1.0 < f < 2.0
