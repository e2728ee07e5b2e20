"""The twin against MLPerf Training GPT-3 175B step times on 512 to 11,616 H100 (issue 16,
helper HT), every row held out: nothing here is fitted.

    .venv/bin/python assets/reference/step_times_mlperf.py
    .venv/bin/python assets/reference/step_times_mlperf.py --derive ROUND=GITDIR ...
    .venv/bin/python assets/reference/step_times_mlperf.py --per-release

Reads ``step_times_mlperf.csv`` (sources and assumptions: ``step_times_mlperf_sources.md``)
and runs :func:`twin.compute.step_estimate` on each row through the same row reader as the
NeMo table (``_dgxc_kwargs`` of tests/compute/test_step.py: shape from
``twin.compute.shapes``, layout, precision, the recipe's gradient / parameter element sizes,
FP8 forward reduce-scatters, recompute), with the node's NVLS as the run set it
(``NCCL_NVLS_ENABLE``).  Prints measured step [s], run-to-run spread, twin [s] and error.

``--derive v3.1=/path/to/training_results_v3.1 ...`` re-reads the MLPerf result logs from a
clone (or bare git directory) of each round's repository and prints the measured columns
next to the CSV's, so the transcription can be checked: see :func:`derive_step_s`.

``--per-release`` runs a what-if (helper HT2; no twin change): one multiplier per MLPerf
round on the compute kernels' efficiencies of ``H100_SXM`` (:data:`SCALED_FIELDS`), fitted
by log least squares on each round's smallest-GPU rows (:func:`fit_rows`) and checked on the
other 16, beside one multiplier for all rounds fitted on the same rows.  The decision rule
was fixed before the fit: ``step_times_mlperf_sources.md``, "What-if: one kernel-efficiency
multiplier per MLPerf round".
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from scipy.optimize import minimize_scalar

from twin.compute import H100_SXM, KernelEfficiency, step_estimate

HERE = Path(__file__).resolve().parent
CSV = HERE / "step_times_mlperf.csv"
#: MLPerf GPT-3: 2,048-token sequences; an evaluation every ceil(24,576 / GBS) steps
#: (conf/custom.yaml ``val_check_interval``), the first of which the derivation skips.
SEQ_LEN = 2048
EVAL_INTERVAL_SEQUENCES = 24576
#: The kernel-table fields the per-round multiplier scales: the compute-bound kernels (BF16
#: GEMMs -- in these FP8 runs the output layer only --, FP8 GEMMs, flash attention forward
#: and backward).  HBM, launch gaps, jitter and the overlaps stay as fitted.
SCALED_FIELDS = ("gemm", "gemm_fp8", "attention_fwd", "attention_bwd")
#: MLPerf rounds in release order (results published Jun 2023, Nov 2023, Jun 2024, Nov 2024;
#: NeMo 23.04, 23.09, 24.04, 24.09).
ROUNDS = ("v3.0", "v3.1", "v4.0", "v4.1")


def _test_step_module():
    """tests/compute/test_step.py, for its CSV row reader (not copied here)."""
    spec = importlib.util.spec_from_file_location(
        "test_step_rows", HERE.parents[1] / "tests/compute/test_step.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_ROWS_MODULE = _test_step_module()


def rows() -> list[dict]:
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def kwargs(r: dict) -> dict:
    """step_estimate keywords of one row: the NeMo table's reader plus the run's NVLS, the
    fabric's transport and the node's NICs (8x 400G InfiniBand; Oracle 16x 200G RoCE)."""
    kw = _ROWS_MODULE._dgxc_kwargs(r)
    kw.update(nvls=r["nvls"] == "1", transport=r["transport"], nics_per_node=int(r["nics"]))
    return kw


def scaled_table(multiplier: float, base: KernelEfficiency = H100_SXM) -> KernelEfficiency:
    """``base`` with the compute kernels' efficiencies (:data:`SCALED_FIELDS`) times
    ``multiplier`` [-]: the what-if's software-release (or clock) preset."""
    return replace(base, **{f: getattr(base, f) * multiplier for f in SCALED_FIELDS})


def twin_step_s(r: dict, multiplier: float = 1.0) -> float:
    """The twin's step [s] of one row, its compute kernels' efficiencies times
    ``multiplier`` (1: the twin as it is)."""
    return step_estimate(**kwargs(r), kernel_efficiency=scaled_table(multiplier)).step_time_s


def error(r: dict, multiplier: float = 1.0) -> float:
    """Relative error of the twin against the row's measured step [-]."""
    return twin_step_s(r, multiplier) / float(r["step_time_s"]) - 1.0


def fit_rows(data: list[dict]) -> list[dict]:
    """The what-if's fit subset, by GPU count only: every row at its round's smallest GPU
    count (v4.0 has two at 512 GPUs)."""
    least = {rd: min(int(r["gpus"]) for r in data if r["round"] == rd)
             for rd in {r["round"] for r in data}}
    return [r for r in data if int(r["gpus"]) == least[r["round"]]]


def fit_multiplier(fit: list[dict]) -> float:
    """Multiplier [-] minimising ``sum ln(twin / measured)^2`` over ``fit`` (log least
    squares; bounded scalar search on [0.5, 2])."""
    def cost(m: float) -> float:
        return sum(math.log(twin_step_s(r, m) / float(r["step_time_s"])) ** 2 for r in fit)
    res = minimize_scalar(cost, bounds=(0.5, 2.0), method="bounded",
                          options={"xatol": 1e-6})
    return float(res.x)


def per_release(data: list[dict] | None = None) -> dict:
    """The what-if: per-round multipliers and one for all rounds, each fitted on
    :func:`fit_rows`, with every row's error under each (``errors_round``,
    ``errors_one``, by config), the held-out configs and the summaries (mean and worst
    |error| [-] per round and over the held-out rows)."""
    data = rows() if data is None else data
    fit = fit_rows(data)
    fit_names = {r["config"] for r in fit}
    m_round = {rd: fit_multiplier([r for r in fit if r["round"] == rd]) for rd in ROUNDS}
    m_one = fit_multiplier(fit)
    e_round = {r["config"]: error(r, m_round[r["round"]]) for r in data}
    e_one = {r["config"]: error(r, m_one) for r in data}
    held = [r["config"] for r in data if r["config"] not in fit_names]

    def summary(errs: dict[str, float]) -> dict[str, tuple[float, float]]:
        out = {}
        groups = {rd: [r["config"] for r in data if r["round"] == rd and r["config"] in held]
                  for rd in ROUNDS}
        groups["held-out"] = held
        groups["all"] = [r["config"] for r in data]
        for k, names in groups.items():
            a = [abs(errs[n]) for n in names]
            out[k] = (statistics.mean(a), max(a))
        return out

    return dict(m_round=m_round, m_one=m_one, fit=sorted(fit_names), held_out=held,
                errors_round=e_round, errors_one=e_one,
                summary_round=summary(e_round), summary_one=summary(e_one))


def _print_per_release() -> None:
    data = rows()
    w = per_release(data)
    base = {r["config"]: error(r) for r in data}
    print("multipliers on H100_SXM " + ", ".join(SCALED_FIELDS) + " (fit: "
          + ", ".join(w["fit"]) + ")")
    for rd in ROUNDS:
        print(f"  {rd}: {w['m_round'][rd]:.4f}")
    print(f"  one for all rounds: {w['m_one']:.4f}")
    print(f"\n{'config':20s} {'GPUs':>6s} {'role':>8s} {'measured':>9s} {'twin':>7s} "
          f"{'per-round':>9s} {'one':>7s}")
    for r in data:
        c = r["config"]
        role = "held-out" if c in w["held_out"] else "fit"
        print(f"{c:20s} {int(r['gpus']):6d} {role:>8s} {float(r['step_time_s']):9.4f} "
              f"{100 * base[c]:+6.1f}% {100 * w['errors_round'][c]:+8.1f}% "
              f"{100 * w['errors_one'][c]:+6.1f}%")
    print(f"\n{'mean / worst |error|':22s} {'per-round':>15s} {'one multiplier':>15s}")
    for k in (*ROUNDS, "held-out", "all"):
        a, b = w["summary_round"][k], w["summary_one"][k]
        label = f"{k} held-out" if k in ROUNDS else k
        print(f"{label:22s} {100 * a[0]:6.2f} / {100 * a[1]:5.2f} % "
              f"{100 * b[0]:6.2f} / {100 * b[1]:5.2f} %")


def derive_step_s(log_lines: list[str]) -> dict:
    """Measured step time [s] of one MLPerf result log (``:::MLLOG`` JSON lines).

    ``train_step_timing``: the median of NeMo's per-step timer (``tracked_stats`` lines, one
    per optimizer step) after the first evaluation interval (warm-up and the first, slow
    steps).  ``block``: the median over the second and later ``block_start`` /
    ``block_stop`` pairs of their ``time_ms`` difference over the steps the block holds
    (``epoch_count`` tokens / (GBS x 2,048)); wall clock, so it includes what runs between
    steps (logging, the data loader's hand-off), not the evaluation (outside the block).
    """
    steps: list[float] = []
    blocks: list[float] = []
    gbs = None
    start = None
    for line in log_lines:
        if ":::MLLOG" not in line:
            continue
        d = json.loads(line.split(":::MLLOG", 1)[1])
        key = d["key"]
        if key == "global_batch_size":
            gbs = int(d["value"])
        elif key == "tracked_stats" and "train_step_timing" in d["value"]:
            steps.append(float(d["value"]["train_step_timing"]))
        elif key == "block_start":
            start = d
        elif key == "block_stop" and start is not None and gbs:
            n = start["metadata"]["epoch_count"] / (gbs * SEQ_LEN)
            blocks.append((d["time_ms"] - start["time_ms"]) / 1000.0 / n)
            start = None
    if gbs is None:
        raise ValueError("no global_batch_size line in the log")
    out: dict = {"global_batch": gbs}
    used = steps[math.ceil(EVAL_INTERVAL_SEQUENCES / gbs):]
    if used:
        out["train_step_timing"] = statistics.median(used)
    if len(blocks) >= 3:
        out["block"] = statistics.median(blocks[1:])
    return out


def _derive(repos: dict[str, str]) -> None:
    print(f"{'config':20s} {'CSV [s]':>9s} {'logs [s]':>9s} {'runs':>4s}")
    for r in rows():
        repo = repos.get(r["round"])
        if repo is None:
            continue
        path = r["log_source"].split(":", 1)[1].split("@", 1)[0]
        folder = path.rsplit("/", 1)[0] + "/"
        names = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", "HEAD", folder],
                               capture_output=True, text=True, check=True).stdout.split()
        per = []
        for name in sorted(n for n in names if "/result_" in n):
            text = subprocess.run(["git", "-C", repo, "show", "HEAD:" + name],
                                  capture_output=True, text=True, check=True).stdout
            per.append(derive_step_s(text.splitlines())[r["measure"]])
        print(f"{r['config']:20s} {float(r['step_time_s']):9.4f} {statistics.mean(per):9.4f} "
              f"{len(per):4d}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--derive"]:
        _derive(dict(a.split("=", 1) for a in argv[1:]))
        return
    if argv[:1] == ["--per-release"]:
        _print_per_release()
        return
    data = rows()
    print(f"{'config':20s} {'GPUs':>6s} {'GBS':>5s} {'PP-VP-mb':>8s} {'measure':>8s} "
          f"{'measured':>9s} {'spread':>7s} {'twin':>8s} {'error':>7s}")
    errs = []
    for r in data:
        e = error(r)
        errs.append(e)
        layout = f"{r['pp']}-{r['vpp']}-{r['micro_batch']}"
        print(f"{r['config']:20s} {int(r['gpus']):6d} {int(r['global_batch']):5d} {layout:>8s} "
              f"{r['measure'][:8]:>8s} {float(r['step_time_s']):9.4f} "
              f"{float(r['spread_pct']):6.2f}% {twin_step_s(r):8.4f} {100 * e:+6.1f}%")
    a = [abs(x) for x in errs]
    big = [abs(e) for r, e in zip(data, errs, strict=True) if int(r["gpus"]) >= 4096]
    print(f"\nall {len(a)} rows: mean |error| {100 * statistics.mean(a):.2f} %, "
          f"worst {100 * max(a):.2f} %")
    print(f"{len(big)} rows on 4,096 GPUs or more: mean |error| "
          f"{100 * statistics.mean(big):.2f} %, worst {100 * max(big):.2f} %")


if __name__ == "__main__":
    main(sys.argv[1:])
