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

sys.path.insert(0, str(HERE))
from fit_nccl_multinode import ring_fixed_costs  # noqa: E402


def nccl_plot(path: Path) -> None:
    def table(name):
        with open(HERE / name) as f:
            return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))
                    if r["role"] != "tuned"]

    ab, c = table("nccl_allreduce_multinode_h100.csv"), table("nccl_multinode_h100_10node.csv")
    fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(17.5, 4.8),
                                     gridspec_kw={"width_ratios": [1, 1, 0.75]})
    colors = {2: "tab:blue", 4: "tab:orange", 8: "tab:green", 10: "tab:red"}
    s = np.logspace(24, 34, 81, base=2)
    # all-reduce: clusters A (tuner keeps NVLSTree) and B (switches to Ring), C on 10 nodes
    for cl, n, mk, frac in (("A", 2, "o", 1.0), ("A", 4, "s", 1.0), ("B", 2, "^", 0.8),
                            ("B", 4, "v", 0.8), ("B", 8, "D", 0.8), ("C", 10, "P", 0.96)):
        sel = [r for r in ab + c if r["cluster"] == cl and int(r["nodes"]) == n
               and r.get("op", "allreduce") == "allreduce" and r.get("run", "1") == "1"]
        ax.scatter([float(r["bytes"]) for r in sel], [float(r["busbw_gb_s"]) for r in sel],
                   marker=mk, s=22, color=colors[n], label=f"{cl}, {n} nodes (measured)")
        if (cl, n) in (("B", 2),):
            continue  # same twin curve as A on 2 nodes
        bw = collective_bandwidths_gb_s("allreduce", s, n, 8,
                                        nvls_tree_tuner_fraction=frac)["busbw_gb_s"]
        ax.plot(s, bw, color=colors[n], lw=1.3, ls="-" if cl != "B" else "--",
                label=f"twin, {n} nodes, tuner as {cl}" if n != 2 else "twin, 2 nodes")
    ax.plot(s, collective_bandwidths_gb_s("allreduce", s, 1, 8)["busbw_gb_s"], color="black",
            lw=1.0, ls=":", label="twin, 1 node (NVLS)")
    ax.set_title("All-reduce, DGX/HGX H100, 8x 400 Gb/s (A, B: nccl-tests #309; C: 10 nodes)",
                 fontsize=9)
    # 10 nodes: all-gather, reduce-scatter, all-to-all (cluster C, both runs)
    for op, mk, col in (("all_gather", "o", "tab:purple"), ("reduce_scatter", "s", "tab:brown"),
                        ("all_to_all", "^", "tab:gray")):
        for run, fill in (("1", col), ("2", "none")):
            sel = [r for r in c if r["op"] == op and r["run"] == run]
            if sel:
                bx.scatter([float(r["bytes"]) for r in sel], [float(r["busbw_gb_s"]) for r in sel],
                           marker=mk, s=22, facecolors=fill, edgecolors=col,
                           label=f"{op}, run {run} (measured)")
        bx.plot(s, collective_bandwidths_gb_s(op, s, 10, 8)["busbw_gb_s"], color=col, lw=1.3,
                label=f"twin, {op}")
    bx.set_title("10 nodes x 8 H100 (cluster C, NCCL 2.29.2, defaults)", fontsize=9)
    # where the misses come from: each ring curve as t = a + F S / B, its fixed cost a
    rc = ring_fixed_costs()
    steps = np.array([r["steps"] for r in rc], float)
    for key, mk, col, lab in (("meas_a_s", "o", None, "measured"), ("twin_a_s", "x", "black",
                                                                    "twin"),
                              ("nccl_model_s", "+", "tab:gray", "NCCL's model (tuning.cc)")):
        for cl, ccol in (("B", "tab:green"), ("C", "tab:red")):
            sel = [i for i, r in enumerate(rc) if r["cluster"] == cl]
            cx.scatter(steps[sel], [1e3 * rc[i][key] for i in sel], marker=mk, s=30,
                       color=col or ccol, label=f"{lab}, cluster {cl}" if col is None
                       else (lab if cl == "B" else None))
    m = np.array([[r["cluster"] == "B", r["cluster"] == "C", r["steps"]] for r in rc], float)
    (c_b, c_c, dt), *_ = np.linalg.lstsq(m, [r["meas_a_s"] for r in rc], rcond=None)
    xs = np.array([50.0, 170.0])
    for c0, col, cl in ((c_b, "tab:green", "B"), (c_c, "tab:red", "C")):
        cx.plot(xs, 1e3 * (c0 + dt * xs), color=col, lw=0.9, ls="--",
                label=f"{1e3 * c0:.2f} ms + {1e6 * dt:.1f} us/step ({cl})")
    cx.set_xlabel("ring steps (2(n-1) all-reduce, n-1 all-gather / reduce-scatter)")
    cx.set_ylabel("fixed cost a [ms] of t = a + F S / B")
    cx.set_title("Rings: fixed cost per collective (B 4, 8 nodes; C 10 nodes)", fontsize=9)
    cx.legend(fontsize=6.5)
    for a in (ax, bx):
        a.axvline(64 * 2**20, color="grey", lw=0.8, ls=":")
        a.set_xscale("log", base=2)
        a.set_xlabel("buffer [B] (nccl-tests size)")
        a.set_ylabel("bus bandwidth [GB/s]")
        a.legend(fontsize=6.5, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _fsdp_points():
    """PyTorch FSDP rows: (measured step [s], error now, error before, group)."""
    from tests.compute.test_fsdp_validation import _err, _fit_rows, _mb_tokens
    from tests.compute.test_fsdp_validation import _rows as _mpt_rows
    from twin.compute.step import A100_SXM_MODERN, H100_SXM_FA2

    out = []
    fit = {(r["gpu"], r["model"], r["gpus"], r["micro_batch"], r["seq_len"]) for r in _fit_rows()}
    for r in _mpt_rows():
        old = H100_SXM_FA2 if r["gpu"] == "h100_80gb" else A100_SXM_MODERN
        if r["gpu"] == "a100_40gb":
            group = "A100 40 GB (held out)"
        elif (r["gpu"], r["model"], r["gpus"], r["micro_batch"], r["seq_len"]) in fit:
            group = "H100 (fit)"
        elif r["recompute"] == "none":
            group = "H100 no checkpointing (held out)"
        elif _mb_tokens(r) < 16384:
            group = "H100 small micro-batch (held out)"
        else:
            group = "H100 4k tokens (held out)"
        out.append((float(r["step_time_s"]), float(_err([r])[0]),
                    float(_err([r], kernels=old)[0]), group))
    return out


def step_plot(path: Path) -> None:
    h = [(float(r["step_time_s"]), _dgxc_error(r), r["precision"], r["role"])
         for r in _dgxc_rows()]
    moe = [(float(r["step_time_s"]), _estimate(r).step_time_s / float(r["step_time_s"]) - 1,
            r["model"]) for r in _rows()]
    a100 = _a100_errors()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13.0, 4.8))
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
    ax.set_title("NeMo / Megatron step times (the 88-point table), MoE, MaxText")
    # right: PyTorch FSDP (llm-foundry MPT), now and before the FSDP entries
    pts = _fsdp_points()
    style = {"H100 (fit)": ("o", "tab:blue"),
             "H100 4k tokens (held out)": ("x", "tab:blue"),
             "H100 no checkpointing (held out)": ("v", "tab:orange"),
             "H100 small micro-batch (held out)": ("s", "tab:red"),
             "A100 40 GB (held out)": ("^", "tab:green")}
    bx.scatter([p[0] for p in pts], [100 * p[2] for p in pts], marker=".", color="lightgrey",
               s=30, label="before (FlashAttention-2 assumed, collectives hidden)")
    for g, (mk, col) in style.items():
        sel = [p for p in pts if p[3] == g]
        bx.scatter([p[0] for p in sel], [100 * p[1] for p in sel], marker=mk, color=col, s=26,
                   label=f"{g}, n={len(sel)}")
    bx.set_title("PyTorch FSDP: llm-foundry MPT 7b-70b (h100/a100_sxm_fsdp entries)")
    bx.set_ylim(-35.0, 30.0)  # room for the legend above the points
    for a in (ax, bx):
        a.axhspan(-8, 8, color="green", alpha=0.06)
        a.axhline(0, color="black", lw=0.8)
        a.set_xscale("log")
        a.set_xlabel("measured step time [s]")
        a.set_ylabel("twin error [%]")
        a.legend(fontsize=7, ncol=1 if a is bx else 2, loc="upper right" if a is bx else "best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    nccl_plot(HERE / "validation_nccl_multinode.png")
    step_plot(HERE / "validation_step_times.png")
