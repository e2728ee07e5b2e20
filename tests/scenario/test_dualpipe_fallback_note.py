"""A validation note for a DualPipe job that may run another schedule at run time.

DualPipe needs an even pp and, per data-parallel rank, an even number of micro-batches >=
2 pp (deepseek-ai/DualPipe, DualPipe.step's assertions).  The loader refuses a job that
breaks them at its own size; the engine (:func:`twin.plant.runnable_schedule`) runs the
schedule vpp implies where they fail later: an elastic job shrunk to fewer data-parallel
ranks, or a stream class refitted from a DualPipe job.  The note says so.

The elastic job: Llama-3-8B on the Lenovo "large" cluster (H100 NVL, 8 per node), tp 2,
pp 2, 12 nodes = 24 data-parallel ranks, global batch 144 = 6 micro-batches per rank.  The
scheduler shrinks it to node counts whose ranks divide 144: 9, 8, 6, 4, 3, 2, 1 nodes, i.e.
18, 16, 12, ... ranks and 8, 9, 12, 18, 24, 36, 72 micro-batches; only 8 nodes gives an odd
count (9).  With a global batch of 192 (8 per rank at 12 nodes) every size gives an even
count >= 4.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import twin
from twin.cli.main import main
from twin.scenario.loader import check_scenario
from twin.scenario.schema import Job
from twin.sim.engine import Engine
from twin.sim.scheduler import Scheduler

ROOT = Path(__file__).resolve().parents[2]
LARGE = ROOT / "scenarios" / "lenovo_large.yaml"
BV = ROOT / "scenarios" / "blue_vela.yaml"
J = "workload.jobs.0"
DUALPIPE = [f"{J}.pp=2", f"{J}.nodes=12", f"{J}.pipeline_schedule=dualpipe"]

ELASTIC_NOTE = (
    "the job is elastic and may shrink to 8 (9 micro-batches per rank) of its 12 nodes, where "
    "DualPipe does not run (it needs an even pp and, per data-parallel rank, an even number of "
    "micro-batches >= 2 pp = 4): there the engine runs the schedule vpp = 1 implies (1f1b) "
    "instead, at that schedule's step time")


def _dualpipe_notes(path, overrides=()) -> list[tuple[str, str]]:
    return [(n.path, n.text) for n in check_scenario(path, list(overrides)).notes
            if "DualPipe" in n.text]


def test_an_elastic_dualpipe_job_that_may_shrink_out_of_it_gets_the_note():
    notes = _dualpipe_notes(LARGE, DUALPIPE + [f"{J}.global_batch=144", f"{J}.elastic=true"])
    assert notes == [(f"{J}.pipeline_schedule", ELASTIC_NOTE)]


@pytest.mark.parametrize("extra", [
    [f"{J}.global_batch=192", f"{J}.elastic=true"],    # every size it shrinks to keeps DualPipe
    [f"{J}.global_batch=144"],                          # not elastic: it runs on 12 nodes only
])
def test_a_dualpipe_job_that_cannot_fall_back_gets_none(extra):
    c = check_scenario(LARGE, DUALPIPE + extra)
    assert c.notes == ()


def test_an_elastic_job_on_another_schedule_gets_none():
    c = check_scenario(LARGE, [f"{J}.pp=2", f"{J}.nodes=12", f"{J}.global_batch=144",
                               f"{J}.elastic=true"])
    assert c.notes == ()


def test_the_noted_sizes_are_the_schedulers():
    spec = twin.load_scenario(LARGE, DUALPIPE + [f"{J}.global_batch=144",
                                                 f"{J}.elastic=true"]).workload.jobs[0]
    stub = SimpleNamespace(plant=None)              # elastic_size reads the plant only without gpus_per_node
    sizes = [n for n in range(1, 13) if Scheduler.elastic_size(stub, spec, n, 8) == n]
    assert sizes == [1, 2, 3, 4, 6, 8, 9, 12]
    assert [144 // (2 * n) for n in sizes] == [72, 36, 24, 18, 12, 9, 8, 6]    # micro-batches per rank


def _run_second_job(tmp_path, **dp) -> tuple[int, float]:
    """Nodes and step time [s] of the elastic job after two days, with an 8-node job of
    higher priority holding half the cluster (so it starts shrunk to 8 nodes)."""
    job = yaml.safe_load(LARGE.read_text())["workload"]["jobs"][0]
    blocker = dict(job, name="blocker", nodes=8, priority=10)
    elastic = dict(job, **{"name": "dp", "pp": 2, "nodes": 12, "global_batch": 144, "elastic": True, **dp})
    path = tmp_path / "elastic.yaml"
    path.write_text(yaml.safe_dump({"extends": str(LARGE), "workload": {"jobs": [blocker, elastic]},
                                    "simulation": {"duration_days": 3}, "failures": {"enabled": False}}))
    eng = Engine(twin.load_scenario(path))
    eng.start()
    eng.env.run(until=2 * 86400.0)
    run = eng.jobs.all[1]
    assert run.status == "running" and run.step is not None
    return len(run.nodes), run.step.step_time_s


def test_the_engine_does_what_the_note_says(tmp_path):
    # shrunk to 8 nodes (9 micro-batches) the DualPipe job steps exactly as the 1F1B one
    dual = _run_second_job(tmp_path, pipeline_schedule="dualpipe")
    onef = _run_second_job(tmp_path)
    assert dual[0] == onef[0] == 8
    assert dual[1] == onef[1]
    # at a batch that keeps DualPipe's conditions on 8 nodes (12 micro-batches) it does not
    dual = _run_second_job(tmp_path, pipeline_schedule="dualpipe", global_batch=192)
    onef = _run_second_job(tmp_path, global_batch=192)
    assert dual[0] == 8 and dual[1] != pytest.approx(onef[1], rel=1e-3)


# a 20B Granite-like model (the stream's ablation shape) at tp 4, pp 2 under DualPipe, on
# 4 nodes of 8 H100: 4 data-parallel ranks, 32 / 4 = 8 micro-batches
DP20B = {"name": "dp20b",
         "model": {"layers": 52, "hidden": 6144, "ffn_hidden": 24576, "heads": 48, "kv_heads": 1,
                   "vocab": 49152, "gated_mlp": False},
         "seq_len": 4096, "global_batch": 32, "tp": 4, "pp": 2, "nodes": 4}


def _stream_scenario(tmp_path, **job) -> tuple[Path, int]:
    """blue_vela.yaml (its job stream) with DP20B beside it, trained by the ablation class."""
    path = tmp_path / "stream.yaml"
    path.write_text(yaml.safe_dump({"extends": str(BV), "name": "dp_stream",
                                    "workload": {"jobs": [dict(DP20B, **job)]}}, sort_keys=False))
    classes = yaml.safe_load(BV.read_text())["workload"]["stream"]["classes"]
    return path, [c["name"] for c in classes].index("ablation")


def test_a_stream_class_refitted_from_a_dualpipe_job_gets_the_note(tmp_path):
    path, k = _stream_scenario(tmp_path, pipeline_schedule="dualpipe")
    # the class asks for 16, 32, 64 and 128 GPUs: refitted at tp 4, pp 2 they have 2, 4, 8,
    # 16 ranks and a batch of 32 (rounded to the ranks), 16, 8, 4, 2 micro-batches each;
    # on 128 GPUs 2 < 2 pp = 4
    notes = _dualpipe_notes(path, [f"workload.stream.classes.{k}.model_job=dp20b"])
    assert notes == [(f"workload.stream.classes.{k}",
                      "job class 'ablation' trains 'dp20b', a DualPipe job; its jobs of 128 GPUs "
                      "(2 micro-batches per rank), refitted to their GPUs, do not run DualPipe (it "
                      "needs an even pp and, per data-parallel rank, an even number of "
                      "micro-batches >= 2 pp): for those the engine runs the schedule vpp = 1 "
                      "implies (1f1b) instead, at that schedule's step time")]
    # the class's jobs as the engine builds them, on 128 GPUs: 2 micro-batches, 1F1B
    from twin.plant import parallel_spec, runnable_schedule
    from twin.workload.engine_jobs import fit_parallelism
    fitted = fit_parallelism(Job.model_validate(dict(DP20B, pipeline_schedule="dualpipe")), 16, 8)
    assert (fitted.tp, fitted.pp, fitted.global_batch) == (4, 2, 32)
    assert runnable_schedule(parallel_spec(fitted), 128).pipeline_schedule is None


def test_a_stream_class_of_another_schedule_gets_none(tmp_path):
    path, k = _stream_scenario(tmp_path)
    assert _dualpipe_notes(path, [f"workload.stream.classes.{k}.model_job=dp20b"]) == []
    assert _dualpipe_notes(BV) == []


def test_twin_validate_prints_the_note(tmp_path, capsys):
    over = DUALPIPE + [f"{J}.global_batch=144", f"{J}.elastic=true"]
    assert main(["validate", str(LARGE)] + [a for o in over for a in ("--set", o)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ok: ")
    assert lines[1:] == [f"note: --set {J}.pipeline_schedule=dualpipe: {J}.pipeline_schedule: "
                         f"{ELASTIC_NOTE}"]
