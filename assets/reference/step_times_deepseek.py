"""The twin against DeepSeek-V3's published pre-training cost (issue 16, helper HDS): one held-out
step-time point of a DeepSeek-style MoE (fine-grained and shared experts, dense first layers,
multi-head latent attention) on 2,048 H800 GPUs.

    .venv/bin/python assets/reference/step_times_deepseek.py

Reads ``step_times_deepseek.csv`` (sources and what the twin cannot express:
``step_times_deepseek_sources.md``), turns the report's 180K H800 GPU hours per trillion tokens
into a step time at the stated batch, runs :func:`twin.compute.step_estimate` on the layout as the
report states it (PP16 with DualPipe, EP64 over 8 nodes, ZeRO-1 data parallel over the other
ranks, no TP, FP8 GEMMs) with the shape of :data:`twin.compute.shapes.MOE_SHAPES`
``deepseek_v3`` and the report's routing, dispatch and MTP (:data:`DEEPSEEK_REPORT_TERMS`, helper
HNL: node-limited routing to 4 nodes with IB-to-NVLink forwarding, FP8 dispatch, one MTP module),
and prints measured, twin, error and the twin's breakdown.  Nothing is fitted on the point.  The
lines below the result are diagnostics of where the error sits, not corrections: the figure
without those three terms (the twin before HNL) and with each alone, the same layout under
Megatron's 1F1B (every all-to-all exposed; the figure before the step model had DualPipe, helper
HK), and DualPipe with the remaining exposed all-to-alls gone.  Then the
memory model on the same layout (helper HM2): 1F1B as a diagnostic, DualPipe, DualPipe with each
of the report's memory savings and with all of them (:data:`DEEPSEEK_SAVINGS`), heaviest rank
and accepted / refused on an 80 GiB GPU, and the savings with the MTP module.
"""

from __future__ import annotations

import csv
from pathlib import Path

from twin.compute import step_estimate
from twin.compute.memory import GIB, memory_fit_problem, memory_limit_gib, memory_per_gpu_bytes
from twin.compute.shapes import MOE_SHAPES

HERE = Path(__file__).resolve().parent
CSV = HERE / "step_times_deepseek.csv"
#: H800 SXM: H100 SXM compute (989 dense BF16, 1,979 dense FP8 TFLOP/s) and HBM3 (3.35 TB/s) with
#: NVLink cut to 400 GB/s (both directions; 200 GB/s one way, the twin's unit); the report's
#: nodes: 8 GPUs on NVLink/NVSwitch, one 400 Gb/s InfiniBand NIC per GPU (50 GB/s).
H800 = dict(hbm_bw_tb_s=3.35, nvls=True)
PEAK = {"bf16": 989.0, "fp8": 1979.0}
#: H800 HBM3 capacity [GiB] (80 GB, quoted as GiB as for the H100: twin.compute.memory)
GPU_GIB = 80.0


def rows() -> list[dict]:
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def measured_step_s(r: dict) -> float:
    """Step time [s] the report's GPU hours per trillion tokens stand for at the row's batch."""
    tokens_per_gpu_s = 1e12 / (float(r["gpu_hours_per_trillion_tokens"]) * 3600.0)
    return int(r["global_batch"]) * int(r["seq_len"]) / (int(r["gpus"]) * tokens_per_gpu_s)


#: DeepSeek-V3's routing, dispatch and MTP as the report and its config.json state them, the
#: step model's inputs (helper HNL): node-limited routing, each token to at most 4 nodes (sec.
#: 3.2.2; config ``topk_group`` 4 of ``n_group`` 8 = the 8 nodes of EP64), the IB leg once per
#: node and NVLink forwarding; the dispatch in FP8 with an fp32 scale per 1x128 tile (sec. 3.3.4
#: and 3.3.2), the combine in BF16; one MTP module (sec. 2.2, ``num_nextn_predict_layers`` 1).
DEEPSEEK_REPORT_TERMS = dict(moe_node_limit=4, moe_dispatch_bytes=1.0 + 4.0 / 128.0, mtp_depth=1)


def kwargs(r: dict, report_terms: bool = True) -> dict:
    """step_estimate keywords of the row: the deepseek_v3 shape, the stated layout, dropless
    routing at the twin's busiest-rank load (the report drops no tokens), no recompute option
    (the report recomputes only RMSNorm and the MLA up-projections), fp32 gradient reduction,
    the DualPipe schedule (sec. 3.2.1; 120 micro-batches >= 2 x 16, PP 16 even) and, with
    ``report_terms``, :data:`DEEPSEEK_REPORT_TERMS` (False: the twin's figure before HNL)."""
    shape = dict(MOE_SHAPES[r["model"]])
    experts, top_k = shape.pop("experts"), shape.pop("top_k")
    shape["seq_len"] = int(r["seq_len"])
    prec = r["precision"]
    return dict(**shape, gpus=int(r["gpus"]), gpus_per_node=int(r["gpus_per_node"]),
                global_batch=int(r["global_batch"]), micro_batch=int(r["micro_batch"]),
                tp=int(r["tp"]), pp=int(r["pp"]), cp=int(r["cp"]), vpp=int(r["vpp"]),
                precision=prec, peak_tflops=PEAK[prec], nvlink_gb_s=float(r["nvlink_gb_s"]),
                inter_node_gbps=float(r["inter_node_gbps"]), zero_stage=int(r["zero_stage"]),
                moe_experts=experts, moe_top_k=top_k, moe_ep=int(r["ep"]),
                moe_routing="dropless", pipeline_schedule="dualpipe", **H800,
                **(DEEPSEEK_REPORT_TERMS if report_terms else {}))


#: DeepSeek-V3's memory savings as the report states them (arXiv 2412.19437), the memory model's
#: options: RMSNorm and MLA up-projection outputs recomputed (sec. 3.2.3), Linear inputs cached
#: in FP8 with the report's exceptions and FP8 dispatch (sec. 3.3.3), BF16 AdamW moments (sec.
#: 3.3.3; master weights and gradients fp32).  The EMA in CPU memory saves nothing the twin counts
#: (it has no EMA); MTP's shared embedding and head add no copy (``memory_kwargs(mtp=True)``).
DEEPSEEK_SAVINGS = dict(recompute_norms_mla_up=True, fp8_cached_linear_inputs=True,
                        adam_moment_bytes=2.0)


def memory_kwargs(r: dict, pipeline_schedule: str = "dualpipe", savings: bool = False,
                  mtp: bool = False) -> dict:
    """memory_per_gpu_bytes keywords of the row (the same shape, layout and dropless routing, so
    the busiest expert-parallel rank's routed copies, as the estimate file and the engine count
    them): DualPipe (two
    stages a rank, PP + 1 micro-batches) or, as a diagnostic, ``pipeline_schedule="1f1b"``;
    ``savings``: with :data:`DEEPSEEK_SAVINGS`; ``mtp``: with the report's MTP module."""
    kw = kwargs(r, report_terms=False)
    keep = ("layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len",
            "micro_batch", "tp", "pp", "cp", "vpp", "precision", "zero_stage", "moe_ffn_hidden",
            "moe_shared_experts", "moe_dense_layers", "mla_q_lora_rank", "mla_kv_lora_rank",
            "mla_qk_nope_head_dim", "mla_qk_rope_head_dim", "mla_v_head_dim")
    dp = kw["gpus"] // (kw["tp"] * kw["pp"] * kw["cp"])
    return dict({k: kw[k] for k in keep}, dp=dp,
                microbatches=kw["global_batch"] // (dp * kw["micro_batch"]),
                moe_experts=kw["moe_experts"], moe_ep=kw["moe_ep"], moe_top_k=kw["moe_top_k"],
                moe_routing=kw["moe_routing"], pipeline_schedule=pipeline_schedule, **(DEEPSEEK_SAVINGS if savings else {}),
                **(dict(mtp_depth=DEEPSEEK_REPORT_TERMS["mtp_depth"]) if mtp else {}))


def error(r: dict, schedule: str = "dualpipe", report_terms: bool = True) -> float:
    """Relative error of the twin against the row's measured step [-] (``schedule``:
    the pipeline schedule, DualPipe as the report ran it, or ``1f1b`` as a diagnostic;
    ``report_terms``: :data:`DEEPSEEK_REPORT_TERMS`, False the figure before HNL)."""
    e = step_estimate(**dict(kwargs(r, report_terms), pipeline_schedule=schedule))
    return e.step_time_s / measured_step_s(r) - 1.0


def main() -> None:
    for r in rows():
        e = step_estimate(**kwargs(r))
        meas = measured_step_s(r)
        print(f"{r['model']} {r['row']}: {r['gpus']} GPUs, TP{r['tp']} PP{r['pp']} EP{r['ep']} "
              f"VPP{r['vpp']}, GBS {r['global_batch']} x {r['seq_len']}, {r['precision']}")
        print(f"  measured {meas:.3f} s, twin {e.step_time_s:.3f} s, error "
              f"{100 * (e.step_time_s / meas - 1):+.1f} %  (twin MFU {100 * e.mfu:.1f} %)")
        for k, v in e.breakdown.items():
            if v:
                print(f"    {k:20s} {v:8.3f} s  {100 * v / e.step_time_s:5.1f} %")
        print("  diagnostic: without and with each of the report's terms (DEEPSEEK_REPORT_TERMS)")
        bare = kwargs(r, report_terms=False)
        for label, extra in (("none (before HNL)", {}),
                             ("node limit 4 only", dict(moe_node_limit=4)),
                             ("FP8 dispatch only",
                              dict(moe_dispatch_bytes=DEEPSEEK_REPORT_TERMS["moe_dispatch_bytes"])),
                             ("MTP 1 only", dict(mtp_depth=1)),
                             ("node limit 4 + FP8 dispatch, no MTP",
                              dict(DEEPSEEK_REPORT_TERMS, mtp_depth=0))):
            x = step_estimate(**bare, **extra)
            print(f"    {label}: {x.step_time_s:.3f} s ({100 * (x.step_time_s / meas - 1):+.1f} %;"
                  f" all-to-alls exposed {x.breakdown['moe_a2a_exposed']:.3f} s)")
        f1 = step_estimate(**dict(kwargs(r), pipeline_schedule="1f1b"))
        print(f"  diagnostic: the same layout under 1F1B {f1.step_time_s:.3f} s "
              f"({100 * (f1.step_time_s / meas - 1):+.1f} %; all-to-alls exposed "
              f"{f1.breakdown['moe_a2a_exposed']:.3f} s, bubble "
              f"{f1.breakdown['pipeline_bubble']:.3f} s)")
        hidden = e.step_time_s - e.breakdown["moe_a2a_exposed"]
        print(f"  what-if, not a model: DualPipe with no all-to-all exposed {hidden:.3f} s "
              f"({100 * (hidden / meas - 1):+.1f} %)")
        print(f"  memory model on {GPU_GIB:g} GiB (accepted up to {memory_limit_gib(GPU_GIB):.1f}"
              f" GiB), heaviest rank; then by rank (ranks j and {int(r['pp']) - 1}-j alike):")
        for label, mk in (("1F1B (diagnostic)", memory_kwargs(r, "1f1b")),
                          ("DualPipe", memory_kwargs(r)),
                          ("DualPipe + (a) RMSNorm/MLA-up recompute",
                           dict(memory_kwargs(r), recompute_norms_mla_up=True)),
                          ("DualPipe + (b) FP8-cached Linear inputs",
                           dict(memory_kwargs(r), fp8_cached_linear_inputs=True)),
                          ("DualPipe + (c) BF16 AdamW moments",
                           dict(memory_kwargs(r), adam_moment_bytes=2.0)),
                          ("DualPipe + (a)-(c), the report's savings",
                           memory_kwargs(r, savings=True)),
                          ("DualPipe + (a)-(c) + the MTP module",
                           memory_kwargs(r, savings=True, mtp=True))):
            m = memory_per_gpu_bytes(**mk)
            verdict = "refused" if memory_fit_problem(m, GPU_GIB) else "accepted"
            print(f"    {label}: {m.describe_gib()}, {verdict}")
            if mk.get("pipeline_schedule") == "dualpipe":
                ranks = [memory_per_gpu_bytes(**mk, pipeline_rank=j)
                         for j in (0, 1, int(r["pp"]) // 2 - 1)]
                print("      " + ", ".join(f"{x.stage} {x.total / GIB:.1f}" for x in ranks)
                      + " GiB")


if __name__ == "__main__":
    main()
