"""The step-time tables of docs/validation.md ("### Training step time"), from the model as
it is in the tree: the summary, the 70 DGX H100 rows and the 18 A100 rows.

    .venv/bin/python assets/reference/step_tables.py

tests/compute/test_docs_tables.py (through assets/reference/docs_tables.py) checks that every line printed here stands in
docs/validation.md, so a model change that moves a figure must rewrite the docs with it.
Errors are the twin's figure over the measured one, minus 1 (H100: step time; A100: speed,
as :func:`tests.compute.test_step._a100_rows` signs them).
"""

from __future__ import annotations

import numpy as np
from fit_step_h100 import ROWS, predict

from twin.compute.shapes import MODEL_SHAPES


def h100_rows() -> list[tuple[dict, float, float]]:
    """(CSV row, twin step [s], relative error) for every DGX H100 row."""
    out = []
    for r in ROWS._dgxc_rows():
        t = predict(r)
        out.append((r, t, t / float(r["step_time_s"]) - 1.0))
    return out


def h100_lines(rows=None) -> list[str]:
    """The H100 table's body, one markdown line per row."""
    lines = []
    for r, t, e in rows or h100_rows():
        name = r["model"]
        if int(r["layers"]) != MODEL_SHAPES[name]["layers"]:
            name += f" ({r['layers']} layers)"
        lines.append(f"| {name} | {r['precision']} | {r['gpus']} | "
                     f"{r['tp']}-{r['pp']}-{r['cp']}-{r['vpp']} | {float(r['step_time_s']):.3f} | "
                     f"{t:.3f} | {100 * e:+.1f} % | {r['role']} |")
    return lines


def a100_lines(rows=None) -> list[str]:
    """The A100 table's body: SC21 shares of peak and Korthikanti's step times."""
    lines = []
    for name, rec, gpus, quantity, ref, twin, e in rows or ROWS._a100_rows():
        fig = f"{twin:.3f}" if quantity == "share of peak" else f"{twin:.3g}"
        lines.append(f"| {name} | {rec} | {gpus} | {quantity} | {ref:g} | {fig} | "
                     f"{100 * e:+.1f} % |")
    return lines


def summary_lines(h100=None, a100=None) -> list[str]:
    """The summary table's body: mean and worst |error| per set."""
    h100 = h100 or h100_rows()
    a100 = np.abs([r[-1] for r in (a100 or ROWS._a100_rows())])
    fit = np.abs([e for r, _, e in h100 if r["role"] == "fit"])
    held = np.abs([e for r, _, e in h100 if r["role"] != "fit"])
    sets = [("H100, fit rows (smallest and largest scale of each table)", fit),
            ("H100, held-out rows", held),
            ("A100 Megatron-LM (SC21 Table 1, Korthikanti 2022)", a100),
            ("all", np.concatenate([fit, held, a100]))]
    return [f"| {name} | {e.size} | {100 * e.mean():.1f} % | {100 * e.max():.1f} % |"
            for name, e in sets]


def main() -> None:
    h100, a100 = h100_rows(), ROWS._a100_rows()
    for block in (summary_lines(h100, a100), h100_lines(h100), a100_lines(a100)):
        print("\n".join(block), end="\n\n")


if __name__ == "__main__":
    main()
