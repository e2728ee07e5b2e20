"""The engine's jobs of a stream or a trace: each drawn (or recorded) job becomes a training
job spec (model shape and parallelism from its class) with its submit time, the training
time it needs, its run limit and the state it ends in.

The engine allocates whole nodes, so a job asks for ``ceil(GPUs / GPUs per node)`` nodes.
The model a class trains comes from a fixed job named by ``workload.stream.classes[].model_job``
or else from :data:`CLASS_MODELS` (Granite-like shapes: 34B pre-training, 20B
ablations, 34B fine-tuning, 8B evaluation and debug). Evaluation and debug jobs use GPUs
(and power) but train no tokens.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from twin.scenario.schema import Job, ModelShape, Scenario
from twin.workload.config import load_trace, stream_params_for
from twin.workload.stream import generate_jobs, jobs_per_hour_for_load, stream_moments

DAY = 86400.0

# Granite-like shapes (IBM Granite code models, arXiv:2405.04324; Granite 3.0 8B), the same
# as the fixed jobs of scenarios/blue_vela.yaml.
_G34 = ModelShape(layers=88, hidden=6144, ffn_hidden=24576, heads=48, kv_heads=1, vocab=49152, gated_mlp=False)
_G20 = ModelShape(layers=52, hidden=6144, ffn_hidden=24576, heads=48, kv_heads=1, vocab=49152, gated_mlp=False)
_G8 = ModelShape(layers=40, hidden=4096, ffn_hidden=12800, heads=32, kv_heads=8, vocab=49152)
CLASS_MODELS: dict[str, Job] = {
    "pretrain": Job(name="pretrain", model=_G34, seq_len=8192, global_batch=512, tp=8, pp=4, nodes=128,
                    checkpoint_interval_s=3600),
    # fine-tuning the 34B production model (assumption)
    "finetune": Job(name="finetune", model=_G34, seq_len=4096, global_batch=256, tp=8, pp=4, nodes=16,
                    checkpoint_interval_s=3600),
    # data ablations at the scale of the 20B production model (assumption; IBM's band of
    # 90-321 B tokens/day is for Granite-scale runs, and 8B ablations would out-count it)
    "ablation": Job(name="ablation", model=_G20, seq_len=4096, global_batch=512, tp=4, pp=2, nodes=16,
                    checkpoint_interval_s=1800),
    "evaluation": Job(name="evaluation", model=_G8, seq_len=4096, global_batch=512, tp=1, pp=1, nodes=1,
                      checkpoint_interval_s=3600),
    "debug": Job(name="debug", model=_G8, seq_len=4096, global_batch=512, tp=1, pp=1, nodes=1,
                 checkpoint_interval_s=3600),
}
TRAINING_CLASSES = ("pretrain", "finetune", "ablation")


@dataclass(frozen=True)
class EngineJob:
    """One job of a stream or trace, as the engine runs it."""

    spec: Job
    job_class: str
    user: str
    project: str
    queue: str
    submit_s: float          # when the engine submits it (with recorded starts: the recorded start)
    # the job's wall time, recorded or drawn from recorded ones, from its start to its end (in
    # its final state); its first launch and its checkpoint writes are inside it, what the
    # twin's failures add is not (twin.sim.jobs.Jobs._lifecycle)
    run_s: float
    runlimit_s: float        # what it asked for (the scheduler plans backfill with it)
    final_state: str
    counts_tokens: bool
    start_recorded: bool = False        # a trace replayed at its recorded starts
    trace_submit_s: float = math.nan    # ... the trace's own submit time [s] (the jobs table's)


def fit_parallelism(template: Job, nodes: int, gpus_per_node: int) -> Job:
    """The template on ``nodes`` nodes: tensor and pipeline parallelism halved until the
    GPUs divide into model replicas, and the global batch rounded to a multiple of the
    data-parallel ranks x micro-batch (at least one per rank)."""
    gpus = nodes * gpus_per_node
    tp, pp = template.tp, template.pp
    while gpus % (tp * pp * template.cp) or tp * pp * template.cp > gpus:
        if pp > 1:
            pp //= 2
        elif tp > 1:
            tp //= 2
        else:
            break
    while template.model.layers % (pp * template.vpp):
        pp //= 2
    dp = gpus // (tp * pp * template.cp)
    unit = dp * template.micro_batch
    gb = max(unit, int(round(template.global_batch / unit)) * unit)
    return template.model_copy(update={"nodes": nodes, "tp": tp, "pp": pp, "global_batch": gb,
                                       "hot_spares": 0, "elastic": False, "tokens_target": None,
                                       "submit": None})


def class_templates(s: Scenario) -> dict[str, Job]:
    """The model each class trains: a fixed job named by the stream's ``model_job``, else
    :data:`CLASS_MODELS`."""
    out = dict(CLASS_MODELS)
    fixed = {j.name: j for j in s.workload.jobs}
    if s.workload.stream is not None:
        for c in s.workload.stream.classes:
            if c.model_job is not None:
                out[c.name] = fixed[c.model_job]
    return out


def representative_jobs(s: Scenario) -> list[Job]:
    """The jobs a per-job tool (``twin estimate step``, ``twin capacity``'s meter ramp, the
    report's job mix) looks at: the fixed jobs, or else, for a stream or a trace, the model
    each training class trains (named after the class, on its template's nodes)."""
    if s.workload.jobs or (s.workload.stream is None and s.workload.trace is None):
        return list(s.workload.jobs)
    templates = class_templates(s)
    return [templates[c].model_copy(update={"name": c}) for c in TRAINING_CLASSES]


def stream_engine_jobs(s: Scenario, rng: np.random.Generator, cluster_gpus: int, gpus_per_node: int,
                       delivered_gpus=None) -> tuple[list[EngineJob], dict[str, float]]:
    """Draw the stream's jobs over the run (or ``until_days``). With ``arrivals.follow:
    delivered`` a job drawn at t is kept with probability ``delivered_gpus(t) / cluster_gpus``
    (thinning: the rate grows with the ramp's deliveries). Returns the jobs and the stream's
    analytic statistics (rate, mean GPUs, mean GPU-seconds...)."""
    spec = s.workload.stream
    assert spec is not None, "stream_engine_jobs needs workload.stream"
    p = stream_params_for(spec, max_gpus=cluster_gpus)
    a = spec.arrivals
    rate = (a.jobs_per_hour if a.jobs_per_hour is not None
            else jobs_per_hour_for_load(p, cluster_gpus, cast(float, a.load)))
    horizon = (spec.until_days or s.simulation.duration_days) * DAY
    df = generate_jobs(p, rng, horizon_s=horizon, jobs_per_hour=rate, gpus_per_node=gpus_per_node,
                       diurnal_amplitude=a.diurnal_amplitude, peak_hour=a.peak_hour,
                       weekend_factor=a.weekend_factor, start_weekday=s.simulation.start.weekday(),
                       runlimit_factor=spec.runlimit_factor)
    if a.follow == "delivered" and delivered_gpus is not None and len(df):
        keep = rng.uniform(size=len(df)) * cluster_gpus < delivered_gpus(df["submit_s"].to_numpy())
        df = df[keep].reset_index(drop=True)
    stats = dict(stream_moments(p), jobs_per_hour=rate, jobs=float(len(df)))
    return _engine_jobs(s, df, gpus_per_node), stats


def trace_engine_jobs(s: Scenario, base_dir: str | Path, cluster_gpus: int,
                      gpus_per_node: int) -> tuple[list[EngineJob], dict[str, float]]:
    """The trace's jobs, aligned to the scenario start (or kept at their dates), each of the
    class its type or queue maps to. With recorded starts a job is submitted at its recorded
    start (no queue wait of its own) and keeps the trace's submit time for the jobs table."""
    spec = s.workload.trace
    assert spec is not None, "trace_engine_jobs needs workload.trace"
    tr = load_trace(spec, base_dir, cluster_gpus=cluster_gpus)
    df = tr.jobs.copy()
    shift = 0.0
    if spec.align == "first_submit":
        start = pd.Timestamp(s.simulation.start, tz="UTC")
        shift = (tr.epoch - start).total_seconds()
    recorded = spec.starts == "recorded"
    sub = (df["start_s"] if recorded else df["submit_s"]).to_numpy(float) + shift
    cls = [spec.class_map.get(t) or spec.class_map.get(q) or spec.default_class
           for t, q in zip(df["job_class"], df["queue"], strict=True)]
    run = df["duration_s"].to_numpy(float)
    out = pd.DataFrame({"job_class": cls, "user": df["user"], "project": df["project"],
                        "queue": df["queue"], "gpus": df["gpus"], "nodes": -(-df["gpus"] // gpus_per_node),
                        "submit_s": sub, "duration_s": run, "runlimit_s": run, "state": df["state"]})
    keep = (out.submit_s >= 0) & (out.submit_s < s.simulation.duration_days * DAY)
    out = out[keep]
    stats = {"trace_rows": float(tr.rows_read), "trace_jobs": float(len(tr.jobs)),
             "trace_jobs_in_run": float(len(out)), **{f"skipped {k}": float(v) for k, v in tr.skipped.items()}}
    jobs = _engine_jobs(s, out.reset_index(drop=True), gpus_per_node)
    if recorded:
        submitted = (df["submit_s"].to_numpy(float) + shift)[keep.to_numpy()]
        jobs = [dataclasses.replace(j, start_recorded=True, trace_submit_s=float(t))
                for j, t in zip(jobs, submitted, strict=True)]
    return jobs, stats


def _engine_jobs(s: Scenario, df: pd.DataFrame, gpus_per_node: int) -> list[EngineJob]:
    templates = class_templates(s)
    queues = {q.name for q in s.workload.scheduler.queues}
    fallback = "normal" if "normal" in queues else s.workload.scheduler.queues[0].name
    cache: dict[tuple[str, int], Job] = {}
    jobs = []
    # each column as a list of Python values (what iterating the Series yields, at a
    # fraction of its per-element cost)
    cols = zip(df["job_class"].astype(str).tolist(), df["user"].astype(str).tolist(),
               df["project"].astype(str).tolist(), df["queue"].astype(str).tolist(),
               df["nodes"].astype(int).tolist(), df["submit_s"].astype(float).tolist(),
               df["duration_s"].astype(float).tolist(), df["runlimit_s"].astype(float).tolist(),
               df["state"].astype(str).tolist(), strict=True)
    for i, (c, user, project, queue, nodes, submit, run, limit, state) in enumerate(cols):
        key = (c, nodes)
        if key not in cache:
            cache[key] = fit_parallelism(templates.get(c, templates["ablation"]), nodes, gpus_per_node)
        spec = cache[key].model_copy(update={"name": f"{c}_{i}"})
        jobs.append(EngineJob(spec=spec, job_class=c, user=user, project=project,
                              queue=queue if queue in queues else fallback, submit_s=submit,
                              run_s=max(run, 1.0), runlimit_s=max(limit, run, 1.0),
                              final_state=state, counts_tokens=c in TRAINING_CLASSES))
    return jobs


def offered_gpu_s(jobs: list[EngineJob], gpus_per_node: int) -> float:
    """GPU-seconds the jobs ask for (whole nodes x run time)."""
    return float(sum(j.spec.nodes * gpus_per_node * j.run_s for j in jobs))


def mean_or_nan(x) -> float:
    x = np.asarray(x, float)
    return float(x.mean()) if x.size else math.nan
