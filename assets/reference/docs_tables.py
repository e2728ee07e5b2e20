"""Every model-printed table of docs/validation.md's "### Training step time" and "### Mixture
of experts and FSDP" sections, from the model as it is in the tree.

    .venv/bin/python assets/reference/docs_tables.py            # print every table
    .venv/bin/python assets/reference/docs_tables.py --write    # rewrite them in the docs
    .venv/bin/python assets/reference/docs_tables.py --prose    # figures the prose quotes

Each printer takes its rows from the script or test that owns them (``step_tables``,
``step_times_mlperf``, ``step_times_moe2``, ``fit_fsdp_llm_foundry`` and the test modules
they read) and only formats them. ``--write`` finds each table by the first header line
after its anchor (a line of prose above it) and replaces the table's body, so after a
model change one command re-prints the docs; the prose next to the tables is not printed
and has to be checked by hand. tests/compute/test_docs_tables.py checks that every line
printed here stands in docs/validation.md.

Errors are the twin's figure over the measured one, minus 1 (as each owning script signs
them).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import fit_fsdp_llm_foundry  # noqa: F401  (puts the repository root on sys.path)
import numpy as np
import step_tables
import step_times_mlperf as mlperf
import step_times_moe2 as moe2

from tests.compute import test_fsdp_validation as fsdp
from tests.compute import test_moe_fsdp as moe_fsdp
from twin.compute.step import A100_SXM

DOCS = Path(__file__).resolve().parents[2] / "docs" / "validation.md"


def _pct(e: float) -> str:
    """A signed relative error [-] as the docs print it: ``+1.2 %``."""
    return f"{100 * e:+.1f} %"


def _mean_worst(e) -> tuple[float, float]:
    a = np.abs(np.asarray(e, dtype=float))
    return float(a.mean()), float(a.max())


def _span(e) -> str:
    """Signed range of errors: ``-3.2 .. +4.0 %`` (one value: ``-21.9 %``)."""
    lo, hi = min(e), max(e)
    return _pct(lo) if len(e) == 1 else f"{100 * lo:+.1f} .. {100 * hi:+.1f} %"


# --- Training step time: summary, 70 H100 rows, 18 A100 rows (step_tables.py) ---------------

def step_summary_lines() -> list[str]:
    return step_tables.summary_lines()


def step_h100_lines() -> list[str]:
    return step_tables.h100_lines()


def step_a100_lines() -> list[str]:
    return step_tables.a100_lines()


def a100_summary_line() -> list[str]:
    """The line under the A100 table: its set's mean and worst |error| and the GEMM
    efficiency the rows ran with."""
    mean, worst = _mean_worst([r[-1] for r in step_tables.ROWS._a100_rows()])
    return [f"A100: n=18 MAE {100 * mean:.2f} % worst {100 * worst:.2f} % (GEMM efficiency "
            f"{A100_SXM.gemm:.4f}, refitted once: the row's own tensor-parallel scheme, the "
            f"22B's micro-batch, the unfused attention's corrected score count)"]


# --- MLPerf GPT-3 175B (step_times_mlperf.py) ------------------------------------------------

def _mlperf_errors() -> list[tuple[dict, float]]:
    return [(r, mlperf.error(r)) for r in mlperf.rows()]


#: NeMo release of each MLPerf round (step_times_mlperf_sources.md).
NEMO = {"v3.0": "23.04", "v3.1": "23.09", "v4.0": "24.04", "v4.1": "24.09"}


def _gpu_span(rows: list[dict]) -> str:
    g = [int(r["gpus"]) for r in rows]
    return f"{min(g):,} to {max(g):,} GPUs"


def mlperf_summary_lines() -> list[str]:
    """The MLPerf summary: the >= 4,096-GPU set, each round, all 21, and all 109 with the
    88 NeMo / Megatron rows."""
    rows = _mlperf_errors()
    big = [(r, e) for r, e in rows if int(r["gpus"]) >= 4096]
    rounds = sorted({r["round"] for r, _ in big})
    sets = [(f"{_gpu_span([r for r, _ in big])} ({', '.join(rounds)}; InfiniBand)",
             [e for _, e in big])]
    per_round = []
    for rd in mlperf.ROUNDS:
        sel = [(r, e) for r, e in rows if r["round"] == rd]
        per_round.append((f"{rd} (NeMo {NEMO[rd]}), {_gpu_span([r for r, _ in sel])}",
                          [e for _, e in sel]))
    # the docs order the rounds by their mean error
    sets += sorted(per_round, key=lambda s: _mean_worst(s[1])[0])
    h100 = [e for _, _, e in step_tables.h100_rows()]
    a100 = [r[-1] for r in step_tables.ROWS._a100_rows()]
    every = [e for _, e in rows]
    sets += [("all MLPerf rows", every),
             ("the 88 NeMo / Megatron rows above and these 21", h100 + a100 + every)]
    out = []
    for name, e in sets:
        mean, worst = _mean_worst(e)
        out.append(f"| {name} | {len(e)} | {100 * mean:.1f} % | {100 * worst:.1f} % |")
    return out


def mlperf_row_lines() -> list[str]:
    out = []
    for r, e in _mlperf_errors():
        who = r["submitter"] + (" (RoCE)" if r["transport"] == "roce" else "")
        measure = "timer" if r["measure"] == "train_step_timing" else r["measure"]
        out.append(f"| {r['round']} | {who} | {int(r['gpus']):,} | {int(r['global_batch']):,} | "
                   f"{r['pp']}-{r['vpp']}-{r['micro_batch']} | {measure} | "
                   f"{float(r['step_time_s']):.4f} | {float(r['spread_pct']):.2f} % | "
                   f"{mlperf.twin_step_s(r):.4f} | {_pct(e)} |")
    return out


def mlperf_per_release_lines() -> list[str]:
    """HT2's what-if: held-out rows' mean / worst |error| with the twin as is, one
    multiplier per round and one for all rounds (step_times_mlperf.per_release)."""
    data = mlperf.rows()
    w = mlperf.per_release(data)
    held = [r for r in data if r["config"] in w["held_out"]]
    base = {r["config"]: mlperf.error(r) for r in held}

    def cell(errs: dict[str, float], names: list[str]) -> str:
        mean, worst = _mean_worst([errs[n] for n in names])
        return f"{100 * mean:.1f} / {100 * worst:.1f} %"

    groups = [(rd, [r["config"] for r in held if r["round"] == rd]) for rd in mlperf.ROUNDS]
    groups.append((f"all {len(held)}", [r["config"] for r in held]))
    return [f"| {name} | {len(names)} | {cell(base, names)} | "
            f"{cell(w['errors_round'], names)} | {cell(w['errors_one'], names)} |"
            for name, names in groups]


# --- Megatron-core Mixtral (step_times_moe2.py) ----------------------------------------------

#: Row labels of the docs, keyed ``model/row`` as step_times_moe2 keys them.
MOE2_LABELS = {
    "mixtral_8x7b/mcore_v0.9": "Mixtral 8x7B, MCore v0.9",
    "mixtral_8x7b/mcore_v0.8": "Mixtral 8x7B, MCore v0.8",
    "mixtral_8x22b/dropless": "Mixtral 8x22B, dropless",
    "mixtral_8x22b/forced_balance": "Mixtral 8x22B, forced balance",
    "mixtral_8x22b/token_drop_cf1": "Mixtral 8x22B, token drop",
    "mixtral_8x22b/fp8_blockwise": "Mixtral 8x22B, blockwise FP8",
}


def _moe2_step_s(r: dict, term: bool) -> float:
    """The twin's step [s]; without the dropless term the busiest rank carries its even
    share (``dropless_load=1``: HU's model before HU2, bit for bit)."""
    return moe2.step_estimate(**moe2.kwargs(r, dropless_load=None if term else 1.0)).step_time_s


def moe2_lines() -> list[str]:
    """HU's table (every row held out, the twin without the dropless-routing term)."""
    out = []
    for r in moe2.rows():
        key = f"{r['model']}/{r['row']}"
        label = MOE2_LABELS[key]
        if r["routing"] == "dropless" and r["model"] == "mixtral_8x7b":
            label += ", dropless"
        elif r["routing"] == "capacity_padded":
            label += f", capacity {float(r['capacity_factor']):.1f}"
        if r["role"] != "goal":
            label = "*left out:* " + label
        meas, twin = moe2.measured_step_s(r), _moe2_step_s(r, term=False)
        out.append(f"| {label} | {r['gpus']} | {r['tp']}-{r['pp']}-{r['vpp']}-{r['ep']}-"
                   f"{r['etp'] or r['tp']} | {r['tflops_per_gpu']} | {meas:.3f} | {twin:.3f} | "
                   f"{_pct(twin / meas - 1)} |")
    return out


def moe2_dropless_lines() -> list[str]:
    """HU2's before / after table of the goal rows: without and with the dropless term."""
    fit = moe2.FIT_PAIR[0]
    out = []
    for r in moe2.rows():
        key = f"{r['model']}/{r['row']}"
        if r["role"] != "goal":
            continue
        if r["routing"] == "dropless":
            routing = "dropless, fit row" if key == fit else "dropless, held out"
        else:
            routing = f"capacity {float(r['capacity_factor']):.1f}"
        label = MOE2_LABELS[key]
        if r["routing"] == "capacity_padded":
            label += f" CF {float(r['capacity_factor']):.1f}"
        meas = moe2.measured_step_s(r)
        out.append(f"| {label} | {routing} | {_pct(_moe2_step_s(r, False) / meas - 1)} | "
                   f"{_pct(_moe2_step_s(r, True) / meas - 1)} |")
    return out


# --- llm-foundry PyTorch FSDP (tests/compute/test_fsdp_validation.py) ------------------------

#: The 57-row table's last column: each row's error before the PyTorch-FSDP kernel entries
#: (FlashAttention-2 assumed, collectives hidden; docs of 2026-11-30). A record, not the
#: model's: it stays as written.
FSDP_BEFORE = (
    "-0.4", "+1.5", "+2.8", "-2.4", "-1.7", "-0.3", "+1.9", "+1.8", "+2.7", "-18.9", "-15.8",
    "-13.6", "-0.0", "-15.2", "-31.3", "-17.3", "+1.7", "-1.7", "-11.7", "-10.3", "-24.9",
    "-16.3", "-3.0", "-25.7", "-26.0", "-27.0", "-26.4", "+2.8", "-31.4", "-26.0", "-11.8",
    "-4.2", "-15.2", "+1.3", "-4.1", "-29.8", "+3.2", "+2.1", "-16.1", "-12.6", "+3.7", "+3.5",
    "+4.2", "+4.1", "-13.4", "-12.6", "-11.9", "-12.4", "-6.6", "-2.2", "+1.3", "+2.1", "+3.3",
    "+0.5", "+0.9", "+2.5", "+2.0")


def _fsdp_rows() -> list[tuple[dict, float, float]]:
    """(CSV row, twin step [s], error) of the 57 llm-foundry rows."""
    out = []
    for r in fsdp._rows():
        t = fsdp._estimate(r).step_time_s
        out.append((r, t, t / float(r["step_time_s"]) - 1.0))
    return out


def fsdp_row_lines(rows=None) -> list[str]:
    rows = rows or _fsdp_rows()
    fit_keys = {tuple(r.values()) for r in fsdp._fit_rows()}
    out = []
    for (r, t, e), before in zip(rows, FSDP_BEFORE, strict=True):
        gpu = "H100" if r["gpu"] == "h100_80gb" else "A100 40GB"
        role = "fit" if tuple(r.values()) in fit_keys else "held out"
        out.append(f"| {gpu} | {r['model']} | {r['gpus']} | {r['micro_batch']} x "
                   f"{r['grad_accum']} | {r['seq_len']} | "
                   f"{'yes' if r['recompute'] == 'full' else 'no'} | "
                   f"{'FA2' if r['attn_impl'] == 'flash2' else 'Triton'} | {role} | "
                   f"{float(r['step_time_s']):.3f} | {t:.3f} | {_pct(e)} | {before} % |")
    return out


#: The summary's rows: label, role, how "error now" is printed ("mean": mean and worst
#: |error|; "list": each error; "span": signed range, with "+mean" the mean |error|), the
#: earlier figures (a record, as written), and the row selector on a CSV row.
FSDP_SETS: tuple[tuple[str, str, str, str, Callable[[dict], bool]], ...] = (
    ("H100, checkpointing, micro-batch >= 16 k tokens, sequence <= 2,048 or >= 8,192", "fit",
     "mean", "mean 7.0 %, 2,048-token rows 1.65 % / 2.84 %, long rows -11.8 .. -31.4 %",
     lambda r: False),  # the fit rows: fsdp._fit_rows()
    ("H100, the same at 4,096 tokens", "held out", "list", "-3.0, -4.2 %",
     lambda r: r["gpu"] == "h100_80gb" and r["recompute"] == "full"
     and r["seq_len"] == "4096" and fsdp._mb_tokens(r) >= 16384),
    ("H100, no activation checkpointing (7b, 13b; 8..512 GPUs)", "held out", "span+mean",
     "-13.6 .. -27.0 %, mean 21.1 %",
     lambda r: r["gpu"] == "h100_80gb" and r["recompute"] == "none"),
    ("H100, micro-batches of 2-6 sequences (70b on 32, 30b on 8 GPUs)", "held out", "span",
     "-10.3 .. -17.3 %",
     lambda r: r["gpu"] == "h100_80gb" and r["recompute"] == "full"
     and fsdp._mb_tokens(r) < 16384 and not (r["seq_len"] == "8192" and r["micro_batch"] == "1")),
    ("H100, 30b on 8 GPUs, one 8,192-token sequence (memory edge)", "held out", "span",
     "-31.3 %",
     lambda r: r["gpu"] == "h100_80gb" and r["recompute"] == "full"
     and r["seq_len"] == "8192" and r["micro_batch"] == "1"),
    ("A100 40 GB, micro-batch >= 16 k tokens (7b, 13b; 8..128 GPUs; 512..16,384 tokens)",
     "held out", "mean", "in-scope 11: 2.56 % / 4.17 %, long 3: -2.2 .. -12.4 %",
     lambda r: r["gpu"] == "a100_40gb" and fsdp._mb_tokens(r) >= 16384),
    ("A100 40 GB, 30b / 70b on 32-128 GPUs, 4-6 sequences", "held out", "span",
     "-4.1 .. +3.2 %",
     lambda r: r["gpu"] == "a100_40gb" and fsdp._mb_tokens(r) < 16384
     and r["model"] in ("mpt_30b", "mpt_70b") and not (r["model"] == "mpt_70b"
                                                        and r["gpus"] == "64")),
    ("A100 40 GB, 13b on 8 GPUs, 16 micro-batches of 8,192 tokens (memory edge)", "held out",
     "span", "-16.1 .. -11.9 %",
     lambda r: r["gpu"] == "a100_40gb" and fsdp._mb_tokens(r) < 16384
     and r["model"] == "mpt_13b" and r["gpus"] == "8"),
    ("A100 40 GB, 70b on 64 GPUs, two sequences", "held out", "span", "-29.8 %",
     lambda r: r["gpu"] == "a100_40gb" and r["model"] == "mpt_70b" and r["gpus"] == "64"),
)


def fsdp_summary_lines(rows=None) -> list[str]:
    rows = rows or _fsdp_rows()
    fit_keys = {tuple(r.values()) for r in fsdp._fit_rows()}
    out = []
    for i, (label, role, how, before, select) in enumerate(FSDP_SETS):
        e = [e for r, _, e in rows
             if (tuple(r.values()) in fit_keys if i == 0 else select(r))]
        if how == "mean":
            mean, worst = _mean_worst(e)
            now = f"mean {100 * mean:.1f} %, worst {100 * worst:.1f} %"
        elif how == "list":
            now = ", ".join(f"{100 * x:+.1f}" for x in e) + " %"
        else:
            now = _span(e)
            if how == "span+mean":
                now += f", mean {100 * _mean_worst(e)[0]:.1f} %"
        out.append(f"| {label} | {len(e)} | {role} | {now} | {before} |")
    return out


# --- Grok-1 and MaxText (tests/compute/test_moe_fsdp.py) -----------------------------------

def moe_fsdp_lines() -> list[str]:
    out = []
    for r in moe_fsdp._rows():
        est = moe_fsdp._estimate(r)
        meas = float(r["step_time_s"])
        out.append(f"| {r['model']} | {r['framework']} | {r['precision']} | {r['gpus']} | "
                   f"{r['layers']} | {meas:.3f} | {est.step_time_s:.3f} | "
                   f"{_pct(est.step_time_s / meas - 1)} | "
                   f"{est.breakdown.get('moe_a2a_exposed', 0.0):.2f} |")
    return out


# --- where each table stands in the docs ----------------------------------------------------

@dataclass(frozen=True)
class Block:
    """A printed block of the docs: a table found by the first ``header`` line after the
    first line that contains ``anchor`` (its body: the lines after the separator that
    start with ``|``), or, with ``header`` empty, the one line that starts with ``anchor``."""

    name: str
    anchor: str
    header: str
    lines: Callable[[], list[str]]


BLOCKS = (
    Block("step summary", "**Summary.** 88 public step times",
          "| set | points | mean abs. error | worst |", step_summary_lines),
    Block("step H100 rows", "Source of the H100 rows:",
          "| model | precision | GPUs | TP-PP-CP-VPP | measured [s] | twin [s] | error | role |",
          step_h100_lines),
    Block("step A100 rows", "A100 rows (A100 80 GB, Selene",
          "| model | recompute | GPUs | quantity | measured | twin | error |", step_a100_lines),
    Block("A100 summary line", "A100: n=18 MAE", "", a100_summary_line),
    Block("MLPerf summary", "#### MLPerf Training GPT-3 175B",
          "| set | points | mean abs. error | worst |", mlperf_summary_lines),
    Block("MLPerf rows", "#### MLPerf Training GPT-3 175B",
          "| round | submitter | GPUs | GBS | PP-VP-mb | measure | measured [s] | spread | "
          "twin [s] | error |", mlperf_row_lines),
    Block("MLPerf per-release what-if", "**What-if, not shipped: one kernel efficiency",
          "| held-out rows | n | twin as is | per round | one multiplier |",
          mlperf_per_release_lines),
    Block("Megatron-core Mixtral", "**Mixture of experts, second source",
          "| row | GPUs | TP-PP-VP-EP-ETP | TFLOP/s | measured [s] | twin [s] | error |",
          moe2_lines),
    Block("dropless before / after", "**Dropless routing: one constant",
          "| row | routing | before | after |", moe2_dropless_lines),
    Block("llm-foundry summary", "**FSDP in PyTorch, 57 points",
          "| rows | n | role | error now | before (FA2 assumed, collectives hidden) |",
          fsdp_summary_lines),
    Block("llm-foundry 57 rows", "<summary>All 57 rows</summary>",
          "| GPU | model | GPUs | micro-batch x accumulation | sequence | checkpointing | "
          "attention | role | measured [s] | twin [s] | error | before |", fsdp_row_lines),
    Block("Grok-1 and MaxText", "**In a scenario**",
          "| model | framework | precision | GPUs | layers | measured [s] | twin [s] | error | "
          "expert all-to-all [s] |", moe_fsdp_lines),
)


def locate(doc: list[str], block: Block) -> tuple[int, int]:
    """[start, end) of ``block``'s printed lines in ``doc`` (lines without newlines)."""
    i = next((k for k, line in enumerate(doc)
              if (line.startswith(block.anchor) if not block.header else block.anchor in line)),
             None)
    if i is None:
        raise ValueError(f"{block.name}: anchor {block.anchor!r} not in the docs")
    if not block.header:
        return i, i + 1
    h = next((k for k in range(i, len(doc)) if doc[k] == block.header), None)
    if h is None or not doc[h + 1].startswith("|--"):
        raise ValueError(f"{block.name}: header not found after its anchor")
    end = h + 2
    while end < len(doc) and doc[end].startswith("|"):
        end += 1
    return h + 2, end


def printed() -> dict[str, list[str]]:
    """Every block's lines, by name."""
    return {b.name: b.lines() for b in BLOCKS}


def write(path: Path = DOCS) -> int:
    """Rewrite every block in ``path``; returns the number of lines that changed."""
    doc = path.read_text().splitlines()
    changed = 0
    for b in BLOCKS:
        start, end = locate(doc, b)
        new = b.lines()
        changed += sum(a != c for a, c in zip(doc[start:end], new, strict=False)) + abs(
            (end - start) - len(new))
        doc[start:end] = new
    path.write_text("\n".join(doc) + "\n")
    return changed


def prose_figures() -> dict[str, str]:
    """Figures the prose next to the tables quotes that no table prints (``--prose``), to
    set by hand after a re-print: constants, set summaries, shares of the step."""
    import twin.compute.step as step

    out: dict[str, str] = {}
    h = step.H100_SXM
    out["H100 gemm / gemm_fp8 / attention_fwd / rank jitter"] = (
        f"{h.gemm:.4f} / {h.gemm_fp8:.4f} / {h.attention_fwd:.4f} / "
        f"{100 * h.rank_jitter_fraction:.2f} %")
    out["A100 gemm; Triton slowdown; FSDP whole GEMM [of 989 TFLOP/s]; dropless f"] = (
        f"{step.A100_SXM.gemm:.4f}; 1/{step.TRITON_FLASH_ATTENTION_SLOWDOWN:.4f}; "
        f"{step.FSDP_WHOLE_GEMM_EFFICIENCY:.4f} ({989 * step.FSDP_WHOLE_GEMM_EFFICIENCY:.0f}); "
        f"{step.MOE_DROPLESS_BUSIEST_LOAD:.4f}")
    h100 = step_tables.h100_rows()
    fp8_405 = [e for r, _, e in h100 if r["model"] == "llama31_405b" and r["precision"] == "fp8"]
    out["405B FP8 rows"] = ", ".join(_pct(e) for e in fp8_405)
    rest = max(((r, e) for r, _, e in h100
                if not (r["model"] == "llama31_405b" and r["precision"] == "fp8")),
               key=lambda x: abs(x[1]))
    out["worst other H100 row"] = (f"{rest[0]['model']} {rest[0]['precision']} "
                                   f"{rest[0]['gpus']} {_pct(rest[1])}")
    est = step_tables.ROWS.est
    for label, kw in (("the paper's pipeline, V 8, E|(t|)*126,L",
                       dict(vpp=8, pipeline_layout="E|(t|)*126,L")),
                      ("even split, V 4 (assumed until 1 Dec 2026)", dict(vpp=4))):
        mfu = [est("405b", g, 2048, tp=8, pp=16, cp=1, transport="roce", **kw).mfu
               for g in (8192, 16384)]
        out[f"Llama 3 405B MFU 8,192 / 16,384 (reported 43 / 41 %), {label}"] = (
            f"{100 * mfu[0]:.1f} / {100 * mfu[1]:.1f} % ({_pct(mfu[0] / 0.43 - 1)} / "
            f"{_pct(mfu[1] / 0.41 - 1)})")
    w = mlperf.per_release()
    out["MLPerf per-round multipliers (one for all)"] = ", ".join(
        f"{k} {v:.4f}" for k, v in w["m_round"].items()) + f" ({w['m_one']:.4f})"
    grok = [(r, moe_fsdp._estimate(r)) for r in moe_fsdp._rows() if r["model"] == "grok1_314b"]
    mean, worst = _mean_worst([e.step_time_s / float(r["step_time_s"]) - 1 for r, e in grok])
    r5, e5 = grok[4]
    out["Grok-1 mean / worst; a2a share and error without it (BF16 512)"] = (
        f"{100 * mean:.1f} / {100 * worst:.1f} %; "
        f"{100 * e5.breakdown['moe_a2a_exposed'] / e5.step_time_s:.0f} %, "
        f"{_pct((e5.step_time_s - e5.breakdown['moe_a2a_exposed']) / float(r5['step_time_s']) - 1)}")
    goal = [r for r in moe2.rows() if r["role"] == "goal"]
    for term in (False, True):
        e = {f"{r['model']}/{r['row']}": _moe2_step_s(r, term) / moe2.measured_step_s(r) - 1
             for r in goal}
        held = [v for k, v in e.items() if k != moe2.FIT_PAIR[0]]
        a, b = _mean_worst(list(e.values())), _mean_worst(held)
        out[f"Megatron-core goal rows, dropless term {'on' if term else 'off'}: all / held out"] = (
            f"{100 * a[0]:.1f} / {100 * a[1]:.1f} %; {100 * b[0]:.1f} / {100 * b[1]:.1f} %")
    steps: dict[str, tuple[float, float]] = {}
    for prec in ("bf16", "fp8"):
        sel = [r for r in moe_fsdp._rows()
               if r["model"] == "llama3_70b" and r["precision"] == prec]
        est = [moe_fsdp._estimate(r) for r in sel]
        t = [e.step_time_s for e in est]
        ref = [float(r["step_time_s"]) for r in sel]
        err = [x / m - 1 for x, m in zip(t, ref, strict=True)]
        # the stragglers' term is additive in the step: the rows without it
        nj = [(e.step_time_s - e.breakdown["stragglers"]) / m - 1
              for e, m in zip(est, ref, strict=True)]
        mean, worst = _mean_worst(err)
        out[f"MaxText {prec}: errors (mean / worst); 128 -> 2,048 scaling; stragglers at 128 "
            "GPUs; errors without them"] = (
            f"{_span(err)} ({100 * mean:.1f} / {100 * worst:.1f} %); {_pct(t[-1] / t[0] - 1)}; "
            f"{est[0].breakdown['stragglers']:.2f} s "
            f"({100 * est[0].breakdown['stragglers'] / t[0]:.0f} %); {_span(nj)}")
        steps[prec] = (t[0], ref[0])
    out["MaxText FP8 speed-up at 128 GPUs: measured / twin"] = (
        f"{steps['bf16'][1] / steps['fp8'][1]:.2f}x / {steps['bf16'][0] / steps['fp8'][0]:.2f}x")
    return out


def main(argv: list[str]) -> None:
    if argv == ["--write"]:
        print(f"{write()} lines changed in {DOCS}")
        return
    if argv == ["--prose"]:
        for k, v in prose_figures().items():
            print(f"{k}: {v}")
        return
    for name, lines in printed().items():
        print(f"{name}:\n" + "\n".join(lines), end="\n\n")


if __name__ == "__main__":
    main(sys.argv[1:])
