"""``workload.jobs[].pipeline_layout`` in a scenario: the loader's checks, the engine's step
against ``twin estimate step``'s, an elastic job shrunk, a DualPipe job falling back to 1F1B,
and a stream class refitted from a job with a layout.

The job is the Llama-3-8B of scenarios/lenovo_large.yaml (32 layers, 16 nodes of 8 H100 NVL)
at tp 2, pp 2: 32 data-parallel ranks, 512 / 32 = 16 micro-batches.  The even split puts 16
layers on each rank and the output layer and loss on the last; ``E,t*17|t*15,L`` moves a
layer to the first rank, which balances the two stages better (a shorter step).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from estimate_json import estimate_step_json

import twin
from twin.catalog import load_catalog
from twin.cli.estimate import run_estimate_cli
from twin.compute.specs import FabricSpec, step_time
from twin.errors import ScenarioError
from twin.plant import (
    elastic_gpus_run,
    gpu_spec,
    model_spec,
    parallel_spec,
    runnable_layout,
    runnable_schedule,
    step_estimate_for,
)
from twin.scenario.loader import check_scenario
from twin.scenario.schema import Job
from twin.sim.engine import Engine
from twin.workload.engine_jobs import fit_parallelism

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "scenarios" / "lenovo_large.yaml"
BV = ROOT / "scenarios" / "blue_vela.yaml"
J = "workload.jobs.0"
FIELD = f"{J}.pipeline_layout"
PP2 = [f"{J}.pp=2"]
QUICK = ["simulation.duration_days=3", "failures.enabled=false"]
MOVED = "E,t*17|t*15,L"
EVEN = "E,t*16|t*16,L"


def _run(extra: list[str]):
    """The job after two days (it starts on day 1, when the racks are delivered)."""
    eng = Engine(twin.load_scenario(BASE, PP2 + QUICK + extra))
    eng.start()
    eng.env.run(until=2 * 86400.0)
    job = eng.jobs.all[0]
    assert job.status == "running" and len(job.nodes) == 16
    return job


def _problems(extra: list[str]) -> list:
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BASE, PP2 + extra)
    return exc.value.problems


def test_schema_field_is_an_optional_string():
    f = Job.model_fields["pipeline_layout"]
    assert f.default is None
    assert "E|(t|)*126,L" in f.description
    # a number is not a layout (strict: no coercion of a YAML 5 to "5")
    (p,) = _problems([f"{FIELD}=5"])
    assert p.path == FIELD


def test_engine_step_equals_twin_estimate_step_bit_for_bit():
    moved = _run([f"{FIELD}={MOVED}"])
    even = _run([])
    cli = estimate_step_json(BASE, PP2 + QUICK, ["--set", f"{FIELD}={MOVED}"])
    assert cli["pipeline_layout"] == MOVED
    assert moved.step.step_time_s == cli["step_time_s"]
    assert moved.step.breakdown == pytest.approx(cli["breakdown"], rel=1e-12)
    # the field reaches the model: 17 layers on rank 0 beside the embedding, 15 beside the
    # output layer, a shorter step than 16 | 16 (5.2 % here)
    assert even.step.step_time_s == estimate_step_json(BASE, PP2 + QUICK)["step_time_s"]
    assert moved.step.step_time_s / even.step.step_time_s == pytest.approx(0.9482, abs=2e-4)
    # same start and checkpoints at a constant clock: tokens scale by the step-time ratio
    assert moved.tokens / even.tokens == pytest.approx(
        even.step.step_time_s / moved.step.step_time_s, rel=1e-12)


def test_the_even_split_written_as_a_layout_is_the_default_step():
    job = twin.load_scenario(BASE, PP2 + [f"{FIELD}={EVEN}"]).workload.jobs[0]
    s = twin.load_scenario(BASE, PP2)
    node = load_catalog().nodes[s.hardware.node_model]
    kw = dict(clock_fraction=1.0, inter_node_gbps=400.0, hops=2.0)
    with_layout = step_estimate_for(s, job, node, 16, **kw)
    without = step_estimate_for(s, s.workload.jobs[0], node, 16, **kw)
    assert with_layout.step_time_s == without.step_time_s
    assert parallel_spec(s.workload.jobs[0]).pipeline_layout is None


@pytest.mark.parametrize("layout, word", [
    ("E,t*16|t*16|L", "has 3 virtual stages, pp*vpp = 2*1 = 2 needed"),
    ("E,t*16|t*17,L", "has 33 decoder layers t, layers = 32"),
    ("E,t*16(|t*16,L", "unbalanced parentheses"),
    ("t*16|E,t*16,L", "the embedding E must be the first layer"),
    ("E,t*16|t*16,m,L", "has 1 MTP layers m, mtp_depth = 0"),
    ("E,t*16|t*16,X", "unknown symbol 'X'"),
])
def test_bad_layouts_name_the_field_with_the_parsers_message(layout, word):
    problems = _problems([f"{FIELD}={layout}"])
    # the layout's problem alone: no memory estimate of the even split beside it
    assert [p.path for p in problems] == [FIELD]
    assert word in problems[0].expected
    assert problems[0].value == layout
    assert "pp x vpp = 2 x 1" in problems[0].expected


def test_bad_layout_is_exit_2_naming_the_path(capsys):
    rc = run_estimate_cli(["step", str(BASE), "--set", f"{J}.pp=2",
                           "--set", f"{FIELD}=E,t*16|t*16|L"])
    assert rc == 2
    err = capsys.readouterr().err
    assert FIELD in err and "has 3 virtual stages" in err


def test_a_layout_places_layers_pp_vpp_does_not_divide():
    # 32 layers over pp 2 x vpp 3 = 6 virtual stages: refused without a layout ...
    extra = [f"{J}.vpp=3"]
    assert [p.path for p in _problems(extra)] == [f"{J}.pp"]
    # ... run with one (5 or 6 layers a stage), and the vpp reaches the step
    layout = "E,t*6|t*5|t*5|t*5|t*5|t*6,L"
    s = twin.load_scenario(BASE, PP2 + extra + [f"{FIELD}={layout}"])
    assert parallel_spec(s.workload.jobs[0]).pipeline_layout == layout
    cli = estimate_step_json(BASE, PP2 + extra, ["--set", f"{FIELD}={layout}"])
    assert cli["pipeline_schedule"] == "interleaved" and cli["pipeline_layout"] == layout


def _node_and_fabric(s):
    node = load_catalog().nodes[s.hardware.node_model]
    return node, FabricSpec(inter_node_gbps=400.0, transport=s.fabric.transport, hops=2.0,
                            nics_per_node=node.compute_nics or s.fabric.rails)


def test_a_shrunk_elastic_job_keeps_its_layout():
    # shrinking takes data-parallel ranks only: 12 of 16 nodes, 24 ranks, 512 / 24 not whole;
    # 8 nodes, 16 ranks, 32 micro-batches
    s = twin.load_scenario(BASE, PP2 + [f"{J}.elastic=true", f"{FIELD}={MOVED}"])
    job = s.workload.jobs[0]
    node, fabric = _node_and_fabric(s)
    assert not elastic_gpus_run(job, 96) and elastic_gpus_run(job, 64)
    shrunk = step_estimate_for(s, job, node, 8, clock_fraction=1.0,
                               inter_node_gbps=fabric.inter_node_gbps, hops=fabric.hops)
    par = parallel_spec(job)
    assert par.pipeline_layout == MOVED
    direct = step_time(model_spec(job), par, gpu_spec(node), fabric, gpus=64,
                       deployment=s.hardware.deployment)
    even = step_time(model_spec(job), replace(par, pipeline_layout=None), gpu_spec(node), fabric,
                     gpus=64, deployment=s.hardware.deployment)
    assert shrunk.step_time_s == direct.step_time_s
    assert shrunk.step_time_s < even.step_time_s * 0.96


def test_a_dualpipe_job_falling_back_to_1f1b_keeps_its_layout():
    # DualPipe at 16 nodes (16 micro-batches); on 12 nodes, 24 ranks: 480 / 24 = 20, even, on
    # 10 nodes 20 ranks 24; at a global batch of 480 on 16 nodes: 15 micro-batches, odd
    s = twin.load_scenario(BASE, PP2 + [f"{J}.pipeline_schedule=dualpipe", f"{FIELD}={MOVED}"])
    job = s.workload.jobs[0]
    par = parallel_spec(job)
    assert runnable_schedule(par, 128) is par
    odd = replace(par, global_batch=480)
    fallback = runnable_schedule(odd, 128)
    assert fallback.pipeline_schedule is None and fallback.pipeline_layout == MOVED
    node, fabric = _node_and_fabric(s)
    job480 = job.model_copy(update={"global_batch": 480})
    got = step_estimate_for(s, job480, node, 16, clock_fraction=1.0,
                            inter_node_gbps=fabric.inter_node_gbps, hops=fabric.hops)
    onef = step_time(model_spec(job), replace(odd, pipeline_schedule="1f1b"), gpu_spec(node),
                     fabric, gpus=128, deployment=s.hardware.deployment)
    assert got.step_time_s == onef.step_time_s
    assert got.step_time_s != step_time(
        model_spec(job), replace(odd, pipeline_schedule="1f1b", pipeline_layout=None),
        gpu_spec(node), fabric, gpus=128, deployment=s.hardware.deployment).step_time_s


# a 20B Granite-like model (the stream's ablation shape) at tp 8, pp 4 on 4 nodes of 8 H100:
# the ablation class asks for 16 to 128 GPUs; on 16 the refit halves pp to 2
G20B = {"name": "g20b",
        "model": {"layers": 52, "hidden": 6144, "ffn_hidden": 24576, "heads": 48, "kv_heads": 8,
                  "vocab": 49152, "gated_mlp": False},
        "seq_len": 4096, "global_batch": 32, "tp": 8, "pp": 4, "nodes": 4,
        "pipeline_layout": "E,t*12|t*13|t*14|t*13,L"}


def _stream_scenario(tmp_path, **job) -> tuple[Path, int]:
    path = tmp_path / "stream.yaml"
    path.write_text(yaml.safe_dump({"extends": str(BV), "name": "layout_stream",
                                    "workload": {"jobs": [dict(G20B, **job)]}}, sort_keys=False))
    classes = yaml.safe_load(BV.read_text())["workload"]["stream"]["classes"]
    return path, [c["name"] for c in classes].index("ablation")


def test_a_stream_class_refitted_to_another_pp_runs_the_even_split(tmp_path):
    path, k = _stream_scenario(tmp_path)
    notes = [(n.path, n.text) for n in check_scenario(
        path, [f"workload.stream.classes.{k}.model_job=g20b"]).notes if "pipeline_layout" in n.text]
    assert notes == [(f"workload.stream.classes.{k}",
                      "job class 'ablation' trains 'g20b', whose pipeline_layout names pp x vpp = "
                      "4 x 1 virtual stages; its jobs of 16 GPUs (pp 2), refitted to their GPUs, "
                      "have another pp: for those the engine splits the layers evenly "
                      "(ceil(layers / pp) a rank) instead")]
    template = Job.model_validate(G20B)
    small, large = fit_parallelism(template, 2, 8), fit_parallelism(template, 16, 8)
    assert (small.pp, large.pp) == (2, 4)
    assert small.pipeline_layout == G20B["pipeline_layout"]    # the refit copies it ...
    assert parallel_spec(small).pipeline_layout is None        # ... the engine drops it
    assert runnable_layout(large) == parallel_spec(large).pipeline_layout == G20B["pipeline_layout"]
    # without the stream the job is not a template: no note
    assert not [n for n in check_scenario(path).notes if "pipeline_layout" in n.text]


def test_a_stream_template_with_a_layout_still_needs_pp_vpp_dividing_the_layers(tmp_path):
    # 52 layers, pp 4 x vpp 2 = 8: a fixed job with a layout runs; a template would be
    # refitted by halving pp while pp vpp does not divide the layers
    layout = "E,t*6|t*7|t*7|t*6|t*6|t*7|t*7|t*6,L"
    path, k = _stream_scenario(tmp_path, vpp=2, pipeline_layout=layout)
    twin.load_scenario(path)
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(path, [f"workload.stream.classes.{k}.model_job=g20b"])
    (p,) = exc.value.problems
    assert p.path == "workload.jobs.0.pp" and "model_job" in p.expected


def test_a_bad_layout_is_not_also_a_memory_estimate_of_the_even_split():
    # Llama-3-70B's shape at tp 2, pp 2 does not fit an H100 NVL with any layout: with a
    # layout that does not parse the one problem is the layout, not the even split's memory
    big = [f"{J}.model={{layers: 80, hidden: 8192, ffn_hidden: 28672, heads: 64, kv_heads: 8, "
           "vocab: 128256}"]
    assert [p.path for p in _problems(big)] == [J]       # the memory problem
    assert [p.path for p in _problems(big + [f"{FIELD}=E,t*40|t*40|L"])] == [FIELD]


def test_the_loaders_memory_checks_estimate_the_layout():
    # job_memory (the loader's memory problem and note, the stream's memory notes) takes the
    # layout: 17 layers and the embedding on rank 0 are the heaviest rank, as the CLI says
    from twin.compute.memory import GIB
    from twin.compute.specs import memory_per_gpu
    from twin.plant import job_memory_gib

    s = twin.load_scenario(BASE, PP2 + [f"{FIELD}={MOVED}"])
    job = s.workload.jobs[0]
    node = load_catalog().nodes[s.hardware.node_model]
    got = job_memory_gib(job, 128, node)
    direct = memory_per_gpu(model_spec(job), parallel_spec(job), gpu_spec(node), gpus=128).total / GIB
    even = job_memory_gib(job.model_copy(update={"pipeline_layout": None}), 128, node)
    assert got == direct
    assert got == estimate_step_json(BASE, PP2, ["--set", f"{FIELD}={MOVED}"])["memory_gib"]["total"]
    assert got != even
