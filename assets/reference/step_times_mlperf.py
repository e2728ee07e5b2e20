"""The twin against MLPerf Training GPT-3 175B step times on 512 to 11,616 H100 (issue 16,
helper HT), every row held out: nothing here is fitted.

    .venv/bin/python assets/reference/step_times_mlperf.py
    .venv/bin/python assets/reference/step_times_mlperf.py --derive ROUND=GITDIR ...

Reads ``step_times_mlperf.csv`` (sources and assumptions: ``step_times_mlperf_sources.md``)
and runs :func:`twin.compute.step_estimate` on each row through the same row reader as the
NeMo table (``_dgxc_kwargs`` of tests/compute/test_step.py: shape from
``twin.compute.shapes``, layout, precision, the recipe's gradient / parameter element sizes,
FP8 forward reduce-scatters, recompute), with the node's NVLS as the run set it
(``NCCL_NVLS_ENABLE``).  Prints measured step [s], run-to-run spread, twin [s] and error.

``--derive v3.1=/path/to/training_results_v3.1 ...`` re-reads the MLPerf result logs from a
clone (or bare git directory) of each round's repository and prints the measured columns
next to the CSV's, so the transcription can be checked: see :func:`derive_step_s`.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

from twin.compute import step_estimate

HERE = Path(__file__).resolve().parent
CSV = HERE / "step_times_mlperf.csv"
#: MLPerf GPT-3: 2,048-token sequences; an evaluation every ceil(24,576 / GBS) steps
#: (conf/custom.yaml ``val_check_interval``), the first of which the derivation skips.
SEQ_LEN = 2048
EVAL_INTERVAL_SEQUENCES = 24576


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


def twin_step_s(r: dict) -> float:
    return step_estimate(**kwargs(r)).step_time_s


def error(r: dict) -> float:
    """Relative error of the twin against the row's measured step [-]."""
    return twin_step_s(r) / float(r["step_time_s"]) - 1.0


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
