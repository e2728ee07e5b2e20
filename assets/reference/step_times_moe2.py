"""The twin against a second public source of mixture-of-experts step times (issue 16, helper
HU): Megatron-core's Mixtral 8x7B and 8x22B throughputs on DGX H100, every row held out.

    .venv/bin/python assets/reference/step_times_moe2.py
    .venv/bin/python assets/reference/step_times_moe2.py --fit-dropless

Reads ``step_times_moe2.csv`` (sources, recipe settings and assumptions:
``step_times_moe2_sources.md``), converts each row's published TFLOP/s per GPU into a step time
with Megatron's FLOPs formula of the code the run used (:func:`megatron_flops_per_sequence`),
runs :func:`twin.compute.step_estimate` on the row's layout and recipe (no per-row factor)
and prints measured step [s], twin [s] and error, then the mean and worst |error| of the rows
in the goal set against issue 16's step goals (mean <= 3 %, worst <= 8 %).  One constant is
fitted on two of these rows (helper HU2): the busiest-rank load of dropless routing,
``twin.compute.step.MOE_DROPLESS_BUSIEST_LOAD``, on the 8x22B dropless / forced-balance pair
(``--fit-dropless`` reproduces it); every other row is held out from it.
"""

from __future__ import annotations

import csv
import dataclasses
import sys
from pathlib import Path

import numpy as np

from twin.compute import step_estimate
from twin.compute.shapes import MOE_SHAPES
from twin.compute.step import H100_SXM

HERE = Path(__file__).resolve().parent
CSV = HERE / "step_times_moe2.csv"
#: DGX H100: 8 GPUs, HBM3 3.35 TB/s, NVLink 4 450 GB/s one way, 8x 400 Gb/s InfiniBand (both
#: sources name this server; dgxc-benchmarking's rows run on the same).
H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, inter_node_gbps=3200.0)
#: Issue 16's goals for step times.
GOAL_MEAN = 0.03
GOAL_WORST = 0.08


def rows() -> list[dict]:
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def megatron_flops_per_sequence(r: dict) -> float:
    """Model FLOPs of one sequence as Megatron-LM counts them for its throughput log [FLOP].

    ``num_floating_point_operations`` of megatron/training/training.py for a GQA, SwiGLU MoE
    decoder without shared experts (every layer an MoE layer, top-k experts):
    ``s (12 L h^2 (1 + g/a + c s/h) + 18 k L F h + 6 V h)`` with ``c = 1`` before Megatron-LM
    commit 8873b55 (2025-03-06, "Fixes in number of floating-point operation estimates for MoE
    and attention layer") and ``c = 1/2`` (causal: half the score matrix) after; ``V`` the
    padded vocabulary.  ``flops_formula`` of the row: "full" or "causal".
    """
    shape = MOE_SHAPES[r["model"]]
    L, h, F = int(r["layers"]), shape["hidden"], shape["ffn_hidden"]
    s, k, v = int(r["seq_len"]), shape["top_k"], int(r["vocab"])
    c = {"full": 1.0, "causal": 0.5}[r["flops_formula"]]
    attn = 12.0 * L * h * h * (1.0 + shape["kv_heads"] / shape["heads"] + c * s / h)
    return s * (attn + 18.0 * k * L * F * h + 6.0 * v * h)


def measured_step_s(r: dict) -> float:
    """Step time [s] the row's TFLOP/s per GPU stands for: GBS x FLOPs / (GPUs x TFLOP/s)."""
    return (int(r["global_batch"]) * megatron_flops_per_sequence(r)
            / (int(r["gpus"]) * float(r["tflops_per_gpu"]) * 1e12))


#: The row's routing as step_estimate's ``moe_routing``: forced balancing gives every expert
#: exactly its share, as capacity routing at factor 1.0 does.
ROUTING = {"dropless": "dropless", "forced_balance": "capacity", "capacity_padded": "capacity"}
#: The pair that isolates the dropless imbalance (same code, layout and FLOPs; sources file).
FIT_PAIR = ("mixtral_8x22b/dropless", "mixtral_8x22b/forced_balance")


def kwargs(r: dict, dropless_load: float | None = None) -> dict:
    """step_estimate keywords of one row: the shape of twin.compute.shapes (layers and vocab
    as the run set them), the layout, and the recipe: NVLS as the run's NCCL_NVLS_ENABLE,
    tensor-parallel overlap as ``--tp-comm-overlap`` (a kernel entry with it off when the run
    did not set it), fp32 gradient reduction (Megatron's default with bf16), FP8 parameter
    gathers where set, the routing (:data:`ROUTING`; capacity rows at their capacity factor,
    dropless rows at ``dropless_load``, None: the twin's fitted constant), expert tensor
    parallelism where the run set it."""
    shape = dict(MOE_SHAPES[r["model"]])
    experts, top_k = shape.pop("experts"), shape.pop("top_k")
    shape.update(layers=int(r["layers"]), seq_len=int(r["seq_len"]), vocab=int(r["vocab"]))
    prec = r["precision"]
    kw = dict(**shape, gpus=int(r["gpus"]), global_batch=int(r["global_batch"]),
              micro_batch=int(r["micro_batch"]), tp=int(r["tp"]), pp=int(r["pp"]),
              cp=int(r["cp"]), vpp=int(r["vpp"]), precision=prec,
              peak_tflops=989.0 if prec == "bf16" else 1979.0, nvls=r["nvls"] == "1",
              grad_bytes=float(r["grad_bytes"]), param_gather_bytes=float(r["param_bytes"]),
              moe_experts=experts, moe_top_k=top_k, moe_ep=int(r["ep"]),
              moe_expert_tp=int(r["etp"]) if r["etp"] else None,
              moe_routing=ROUTING[r["routing"]], **H100)
    if kw["moe_routing"] == "capacity":
        kw["moe_capacity_factor"] = float(r["capacity_factor"])
    elif dropless_load is not None:
        kw["moe_dropless_load"] = dropless_load
    if r["tp_overlap"] != "1":
        kw["kernel_efficiency"] = dataclasses.replace(H100_SXM, tp_comm_overlap=False)
    return kw


def twin_step_s(r: dict) -> float:
    return step_estimate(**kwargs(r)).step_time_s


def error(r: dict) -> float:
    """Relative error of the twin against the row's measured step [-]."""
    return twin_step_s(r) / measured_step_s(r) - 1.0


def goal_errors() -> dict[str, float]:
    """Error of every goal row, keyed ``model/row``."""
    return {f"{r['model']}/{r['row']}": error(r) for r in rows() if r["role"] == "goal"}


def fit_dropless_load(tol: float = 1e-12) -> float:
    """The busiest-rank load of dropless routing, fitted on :data:`FIT_PAIR` [-].

    Solves ``twin(dropless, f) / twin(forced balance) = measured(dropless) / measured(forced
    balance)`` (= 465 / 445: the rows share code, layout and FLOPs per step) for ``f`` by
    bisection on [1, 2]; the twin's dropless step rises with ``f``."""
    by = {f"{r['model']}/{r['row']}": r for r in rows()}
    drop, bal = (by[k] for k in FIT_PAIR)
    target = measured_step_s(drop) / measured_step_s(bal)
    t_bal = twin_step_s(bal)

    def ratio(f: float) -> float:
        return step_estimate(**kwargs(drop, dropless_load=f)).step_time_s / t_bal

    lo, hi = 1.0, 2.0
    if not ratio(lo) <= target <= ratio(hi):
        raise ValueError(f"target ratio {target} outside [{ratio(lo)}, {ratio(hi)}]")
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratio(mid) < target else (lo, mid)
    return 0.5 * (lo + hi)


def main() -> None:
    print(f"{'model':14s} {'row':15s} {'prec':4s} {'GPUs':>4s} {'TP-PP-VP-EP-ETP':>15s} "
          f"{'TFLOP/s':>7s} {'measured':>8s} {'twin':>7s} {'error':>7s} {'a2a':>6s}  role")
    for r in rows():
        e = step_estimate(**kwargs(r))
        meas = measured_step_s(r)
        lay = f"{r['tp']}-{r['pp']}-{r['vpp']}-{r['ep']}-{r['etp'] or r['tp']}"
        print(f"{r['model']:14s} {r['row']:15s} {r['precision']:4s} {r['gpus']:>4s} {lay:>15s} "
              f"{r['tflops_per_gpu']:>7s} {meas:8.3f} {e.step_time_s:7.3f} "
              f"{100 * (e.step_time_s / meas - 1):+6.1f}% "
              f"{100 * e.breakdown['moe_a2a_exposed'] / e.step_time_s:5.1f}%  {r['role']}")
    err = np.abs(np.array(list(goal_errors().values())))
    print(f"goal rows: {err.size}, mean |error| {100 * err.mean():.1f} % (goal <= "
          f"{100 * GOAL_MEAN:.0f} %), worst {100 * err.max():.1f} % (goal <= "
          f"{100 * GOAL_WORST:.0f} %): goals {'hold' if err.mean() <= GOAL_MEAN and err.max() <= GOAL_WORST else 'do not hold'}")
    held = np.abs([e for k, e in goal_errors().items() if k != FIT_PAIR[0]])
    print(f"held out from the dropless fit (goal rows but {FIT_PAIR[0]}): {held.size}, mean "
          f"|error| {100 * held.mean():.1f} %, worst {100 * held.max():.1f} %")
    print("a2a: the exposed expert all-to-alls' share of the twin's step")


if __name__ == "__main__":
    if sys.argv[1:] == ["--fit-dropless"]:
        print(f"dropless busiest-rank load fitted on {FIT_PAIR}: {fit_dropless_load():.6f}")
    else:
        main()
