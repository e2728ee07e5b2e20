"""Plots of docs/validation.md (issue 16): multi-node all-reduce curves and step-time parity.

    .venv/bin/python assets/reference/plot_validation.py

Writes assets/reference/validation_nccl_multinode.png and
assets/reference/validation_step_times.png.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.compute.test_moe_fsdp import _estimate, _rows  # noqa: E402
from tests.compute.test_step import _a100_errors, _dgxc_error, _dgxc_rows  # noqa: E402
from twin.compute.collectives import collective_bandwidths_gb_s  # noqa: E402


def nccl_plot(path: Path) -> None:
    with open(HERE / "nccl_allreduce_multinode_h100.csv") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))
                if r["role"] != "tuned"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    colors = {2: "tab:blue", 4: "tab:orange", 8: "tab:green"}
    for (cl, n), mk in ((("A", 2), "o"), (("A", 4), "s"), (("B", 2), "^"), (("B", 4), "v"),
                        (("B", 8), "D")):
        sel = [r for r in rows if r["cluster"] == cl and int(r["nodes"]) == n]
        s = np.array([float(r["bytes"]) for r in sel])
        ax.scatter(s, [float(r["busbw_gb_s"]) for r in sel], marker=mk, s=22,
                   color=colors[n], label=f"cluster {cl}, {n} nodes (measured)")
    s = np.logspace(20, 34, 60, base=2)
    for n in (1, 2, 4, 8):
        bw = collective_bandwidths_gb_s("allreduce", s, n, 8)["busbw_gb_s"]
        ax.plot(s, bw, color=colors.get(n, "black"), lw=1.4,
                ls="-" if n > 1 else "--", label=f"twin, {n} node{'s' if n > 1 else ''}")
    ax.axvline(64 * 2**20, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("all-reduce buffer [B]")
    ax.set_ylabel("bus bandwidth [GB/s]")
    ax.set_title("NCCL all-reduce, DGX/HGX H100, 8x NDR 400 Gb/s (nccl-tests issue 309)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def step_plot(path: Path) -> None:
    h = [(float(r["step_time_s"]), _dgxc_error(r), r["precision"], r["role"])
         for r in _dgxc_rows()]
    moe = [(float(r["step_time_s"]), _estimate(r).step_time_s / float(r["step_time_s"]) - 1,
            r["model"]) for r in _rows()]
    a100 = _a100_errors()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for prec, col in (("bf16", "tab:blue"), ("fp8", "tab:red")):
        for role, mk in (("fit", "o"), ("validate", "x")):
            sel = [x for x in h if x[2] == prec and x[3] == role]
            ax.scatter([x[0] for x in sel], [100 * x[1] for x in sel], marker=mk, color=col,
                       label=f"H100 {prec.upper()} ({role})", s=24)
    ax.scatter([x[0] for x in moe if x[2].startswith("grok")],
               [100 * x[1] for x in moe if x[2].startswith("grok")], marker="D",
               color="tab:green", s=22, label="Grok-1 MoE (held out)")
    ax.scatter([x[0] for x in moe if not x[2].startswith("grok")],
               [100 * x[1] for x in moe if not x[2].startswith("grok")], marker="s",
               color="tab:purple", s=22, label="MaxText FSDP (other framework)")
    ax.scatter(np.full(len(a100), 1.0), [100 * e for e in a100], marker="^", color="grey",
               s=18, label="A100 Megatron (plotted at 1 s)")
    ax.axhspan(-8, 8, color="green", alpha=0.06)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("measured step time [s]")
    ax.set_ylabel("twin error [%]")
    ax.set_title("Step time: twin against public measurements")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    nccl_plot(HERE / "validation_nccl_multinode.png")
    step_plot(HERE / "validation_step_times.png")
