"""An elastic mixture-of-experts job shrinks only to sizes its expert-parallel layout holds.

Found by helper HQP (1 Dec 2026): the scheduler's elastic sizes checked tp x pp x cp and the
batch but not the expert-parallel unit, so an elastic MoE job (ep 8, tp 2, pp 2 on 8-GPU
nodes) could be shrunk to 1-3 nodes, where the engine's usable GPUs
(:func:`twin.plant.usable_gpus`: whole replica groups the expert layout holds) are 0 and the
run stopped with ``ValueError: gpus must be a positive integer, got 0``.  One rule now
(:func:`twin.plant.elastic_gpus_run`) serves the scheduler and the loader's DualPipe note.

By hand: tp 2 x pp 2 = 4 GPUs a replica, 2 replicas a node; ep 8 needs the data x context
ranks in multiples of 8 (Megatron's expert groups from the data-parallel ranks), i.e. 32 GPUs,
4 nodes.  With a global batch of 512 and micro-batch 1 every multiple of 4 nodes divides it
(2 n replicas on n nodes: 512 % (2 n) == 0 for n = 4, 8); 5-7 nodes would hold 8-24 GPUs idle.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import yaml

import twin
from twin.plant import elastic_gpus_run, parallel_spec, usable_gpus
from twin.sim.engine import Engine
from twin.sim.scheduler import Scheduler

ROOT = Path(__file__).resolve().parents[2]
LARGE = ROOT / "scenarios" / "lenovo_large.yaml"
J = "workload.jobs.0"
MOE = [f"{J}.model={{layers: 32, hidden: 4096, ffn_hidden: 14336, heads: 32, kv_heads: 8, "
       "vocab: 32000, experts: 8, top_k: 2}", f"{J}.ep=8", f"{J}.tp=2", f"{J}.pp=2",
       f"{J}.nodes=8", f"{J}.global_batch=512", f"{J}.elastic=true"]


def _job():
    return twin.load_scenario(LARGE, MOE).workload.jobs[0]


def test_elastic_sizes_hold_the_expert_parallel_unit():
    spec = _job()
    stub = SimpleNamespace(plant=None)
    sizes = [n for n in range(1, 9) if Scheduler.elastic_size(stub, spec, n, 8) == n]
    assert sizes == [4, 8]
    # below 4 nodes the scheduler offers nothing (it used to offer 1, 2 and 3 nodes)
    assert [Scheduler.elastic_size(stub, spec, n, 8) for n in (1, 2, 3, 5, 7)] == [0, 0, 0, 4, 4]
    par = parallel_spec(spec)
    for n in range(1, 9):
        assert elastic_gpus_run(spec, 8 * n) == (n in (4, 8))
        if elastic_gpus_run(spec, 8 * n):
            assert usable_gpus(par, 8 * n) == 8 * n


def test_a_dense_job_keeps_its_elastic_sizes():
    # ep 1: the unit is tp x pp x cp, as before the rule took the experts into account
    spec = twin.load_scenario(LARGE, [f"{J}.nodes=12", f"{J}.global_batch=144",
                                      f"{J}.elastic=true"]).workload.jobs[0]
    stub = SimpleNamespace(plant=None)
    mp = spec.tp * spec.pp * spec.cp
    old = [n for n in range(1, 13) if (8 * n) % mp == 0
           and spec.global_batch % ((8 * n // mp) * spec.micro_batch) == 0]
    assert [n for n in range(1, 13) if Scheduler.elastic_size(stub, spec, n, 8) == n] == old


def test_an_elastic_moe_job_squeezed_by_a_blocker_runs(tmp_path):
    # a 13-node job placed first leaves 3 of the 16 nodes: the MoE job cannot run on 3 (it
    # was started there and stopped the run: "gpus must be a positive integer, got 0"); it waits
    job = yaml.safe_load(LARGE.read_text())["workload"]["jobs"][0]
    moe = twin.load_scenario(LARGE, MOE).workload.jobs[0].model_dump(mode="json")
    blocker = dict(job, name="blocker", nodes=13, global_batch=104)
    path = tmp_path / "elastic_moe.yaml"
    path.write_text(yaml.safe_dump({"extends": str(LARGE),
                                    "workload": {"jobs": [blocker, dict(moe, name="moe")]},
                                    "simulation": {"duration_days": 2},
                                    "failures": {"enabled": False}}))
    eng = Engine(twin.load_scenario(path))
    eng.start()
    eng.env.run(until=1.5 * 86400.0)
    first, run = eng.jobs.all
    assert first.status == "running" and len(first.nodes) == 13
    assert run.status == "queued" and run.step is None


def test_the_schedule_and_memory_count_the_gpus_the_step_runs_on():
    # found by HAUD2: tp 1, pp 2, ep 8, batch 96 under DualPipe. On 40 GPUs the job uses 32
    # (usable_gpus: 2-GPU replicas in multiples of the 8-rank expert unit, 16 GPUs), 16
    # data-parallel ranks, 96 / 16 = 6 micro-batches: DualPipe runs (even, >= 2 pp = 4).
    # Counting all 40 GPUs (20 ranks, 96 % 20 != 0) the memory path took 1F1B.
    from twin.catalog import load_catalog
    from twin.plant import job_memory_gib, runnable_schedule
    job = twin.load_scenario(LARGE, [f"{J}.model={{layers: 32, hidden: 4096, ffn_hidden: 14336, "
                                     "heads: 32, kv_heads: 8, vocab: 32000, experts: 8, top_k: 2}",
                                     f"{J}.ep=8", f"{J}.tp=1", f"{J}.pp=2", f"{J}.nodes=4",
                                     f"{J}.global_batch=96",
                                     f"{J}.pipeline_schedule=dualpipe"]).workload.jobs[0]
    par = parallel_spec(job)
    assert usable_gpus(par, 40) == 32
    assert runnable_schedule(par, 40).pipeline_schedule == "dualpipe"
    assert runnable_schedule(par, 40) == runnable_schedule(par, 32)
    node = load_catalog().nodes[twin.load_scenario(LARGE).hardware.node_model]
    assert job_memory_gib(job, 40, node) == job_memory_gib(job, 32, node)
