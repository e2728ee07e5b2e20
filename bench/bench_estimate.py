"""Step estimate speed (issue 16): `twin estimate step` must stay under 10 ms for dense
models.  CPU time (user + system of this process), best of 5 repeats of many calls.

    .venv/bin/python bench/bench_estimate.py

Cases: ``step_estimate`` for Llama 3.1 70B BF16 on 64 GPUs and Llama 3.1 405B FP8 on
2,304 GPUs (the paired tensor-parallel overlap and the FP8 collectives), and
``twin estimate step`` in process on the shipped 70B file (YAML read, validation, fabric
build, step, memory; the CLI's Python start-up is not the estimate's).  And DeepSeek-V3 under
DualPipe (the shipped file's layout: 16 stages, 120 micro-batches): the first call in a
process, which builds the schedule's op graph, and repeated calls (the graph cached per
``(pp, m)``).
"""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

from machine import machine

from twin.cli.estimate import run_estimate_cli
from twin.compute.shapes import MODEL_SHAPES
from twin.compute.step import step_estimate

ROOT = Path(__file__).resolve().parents[1]
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, nvls=True,
            inter_node_gbps=3200.0)


def cpu_ms_per_call(fn, calls: int, repeat: int = 5) -> float:
    """Least CPU time per call [ms] over ``repeat`` runs of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - c0) / calls)
    return best * 1e3


def main() -> None:
    print(f"machine: {machine()}")
    dense = dict(MODEL_SHAPES["llama31_70b"], gpus=64, global_batch=128, micro_batch=1, tp=4,
                 pp=4, cp=2, vpp=5, peak_tflops=989.0, precision="bf16", **H100)
    big = dict(MODEL_SHAPES["llama31_405b"], gpus=2304, global_batch=1008, micro_batch=1, tp=8,
               pp=9, cp=2, vpp=7, peak_tflops=1979.0, precision="fp8", grad_bytes=2.0,
               param_gather_bytes=1.0, tp_fp8_reduce_scatter=True, **H100)
    for name, kw in (("Llama 3.1 70B BF16, 64 GPUs", dense),
                     ("Llama 3.1 405B FP8, 2,304 GPUs", big)):
        t = cpu_ms_per_call(lambda kw=kw: step_estimate(**kw), 500)
        print(f"step_estimate, {name}: {t:.3f} ms CPU  (target < 10 ms)")
    path = str(ROOT / "scenarios/estimates/llama31_70b_bf16_64gpu.yaml")

    def cli() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            assert run_estimate_cli(["step", path, "--json"]) == 0
    cli()  # warm the imports
    print(f"twin estimate step in process, 70B file: {cpu_ms_per_call(cli, 20):.2f} ms CPU "
          "(target < 10 ms)")
    import sys
    sys.path.insert(0, str(ROOT / "assets" / "reference"))
    import step_times_deepseek as ds
    (row,) = [r for r in ds.rows() if r["model"] == "deepseek_v3"]
    kw = ds.kwargs(row)
    c0 = time.process_time()
    step_estimate(**kw)
    first = (time.process_time() - c0) * 1e3
    print(f"step_estimate, DeepSeek-V3 DualPipe (pp 16, 120 micro-batches): first call "
          f"{first:.2f} ms CPU (builds the op graph), then "
          f"{cpu_ms_per_call(lambda: step_estimate(**kw), 50):.2f} ms CPU per call")


if __name__ == "__main__":
    main()
