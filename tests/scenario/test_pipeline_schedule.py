"""``workload.jobs[].pipeline_schedule`` in a scenario: the loader's checks, the engine's
step time and tokens under DualPipe, and step_estimate's expert-TP check through
``twin.compute.step.expert_dp_unit``.

The job is the Mixtral-8x7B-shaped mixture of experts of scenarios/studies/moe.yaml on the
Lenovo "large" cluster (16 SR675 V3, 128 H100 NVL), at pp 2 so that DualPipe can run it
(tp 2, pp 2: 32 data-parallel ranks, 512 / 32 = 16 micro-batches of one sequence).
"""

from dataclasses import replace
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
from estimate_json import estimate_step_json

import twin
from twin.catalog import load_catalog
from twin.compute import step_estimate
from twin.compute.specs import ParallelSpec
from twin.compute.step import PIPELINE_SCHEDULES
from twin.errors import ScenarioError
from twin.plant import job_memory_gib, parallel_spec, runnable_schedule, step_estimate_for
from twin.scenario.schema import Job
from twin.sim.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "scenarios" / "lenovo_large.yaml"
MOE = ["workload.jobs.0.model={layers: 32, hidden: 4096, ffn_hidden: 14336, heads: 32, "
       "kv_heads: 8, vocab: 32000, experts: 8, top_k: 2}", "workload.jobs.0.ep=8",
       "workload.jobs.0.pp=2"]
QUICK = ["simulation.duration_days=3", "failures.enabled=false"]
FIELD = "workload.jobs.0.pipeline_schedule"


def _run(extra: list[str]):
    """The job after two days (it starts on day 1, when the racks are delivered)."""
    eng = Engine(twin.load_scenario(BASE, MOE + QUICK + extra))
    eng.start()
    eng.env.run(until=2 * 86400.0)
    job = eng.jobs.all[0]
    assert job.status == "running" and len(job.nodes) == 16
    return eng, job


@pytest.fixture(scope="module")
def runs() -> dict:
    return {k: _run([] if k is None else [f"{FIELD}={k}"]) for k in (None, "1f1b", "dualpipe")}


def _cli_step(extra: list[str]) -> dict:
    return estimate_step_json(BASE, MOE + QUICK, extra)


def test_schema_offers_the_step_models_schedules():
    (lit, _none) = get_args(Job.model_fields["pipeline_schedule"].annotation)
    assert get_args(lit) == PIPELINE_SCHEDULES
    assert Job.model_fields["pipeline_schedule"].default is None


def test_dualpipe_job_trains_at_the_step_models_rate(runs):
    _, base = runs["1f1b"]
    _, dual = runs["dualpipe"]
    # the estimate file's adapter (twin estimate step --pipeline-schedule) gives the same
    # step, bit for bit, through its own translation of the job
    cli = _cli_step(["--pipeline-schedule", "dualpipe"])
    assert dual.step.step_time_s == cli["step_time_s"]
    assert dual.step.breakdown == pytest.approx(cli["breakdown"], rel=1e-12)
    assert base.step.step_time_s == _cli_step([])["step_time_s"]
    # same start, same checkpoints, a constant clock: tokens scale by the step-time ratio
    ratio = base.step.step_time_s / dual.step.step_time_s
    assert dual.tokens / base.tokens == pytest.approx(ratio, rel=1e-12)
    # DualPipe hides the expert all-to-alls 1F1B exposes (1.43 s) behind the paired chunks,
    # paying 20/132 of the SMs while they run. DualPipe.step pairs m - 3pp/2 + 1 chunks on a
    # rank, one fewer on the two middle ranks (at pp 2 both are): 16 - 3 = 13 of the 16; the
    # other 3 forwards and 3 backwards run alone with their all-to-alls exposed, 3/16 of 1F1B's
    # (the pairs hide theirs wholly here); at pp 2 no rank waits
    assert base.step.breakdown["moe_a2a_exposed"] == pytest.approx(1.425, abs=0.01)
    assert dual.step.breakdown["moe_a2a_exposed"] == pytest.approx(
        base.step.breakdown["moe_a2a_exposed"] * 3 / 16, rel=1e-9)
    assert dual.step.breakdown["pipeline_bubble"] == 0.0
    assert dual.step.breakdown["comm_sm_reserved"] > 0.1
    assert ratio == pytest.approx(1.3193, rel=1e-3)


def test_no_schedule_is_the_one_vpp_implies_bit_for_bit(runs):
    eng, none = runs[None]
    _, base = runs["1f1b"]
    assert parallel_spec(eng.s.workload.jobs[0]).pipeline_schedule is None
    assert none.step.step_time_s == base.step.step_time_s
    assert none.step.breakdown == base.step.breakdown
    assert none.tokens == base.tokens


@pytest.mark.parametrize("overrides, word", [
    (["workload.jobs.0.pp=1"], "an even pp for dualpipe"),
    (["workload.jobs.0.vpp=2"], "vpp = 1 for dualpipe"),
    (["workload.jobs.0.global_batch=160"], "got 5"),    # 160 / 32 ranks: odd
    (["workload.jobs.0.global_batch=64"], ">= 2 pp = 4 for dualpipe, got 2"),
    (["workload.jobs.0.zero_stage=3"], "zero_stage 0-2 for dualpipe"),
])
def test_bad_dualpipe_layouts_name_the_field(overrides, word):
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BASE, MOE + [f"{FIELD}=dualpipe"] + overrides)
    hits = [p for p in exc.value.problems if p.path == FIELD]
    assert len(hits) == 1, [(p.path, p.expected) for p in exc.value.problems]
    assert word in hits[0].expected


@pytest.mark.parametrize("overrides, word", [
    ([f"{FIELD}=interleaved"], "vpp > 1 for the interleaved schedule"),
    ([f"{FIELD}=1f1b", "workload.jobs.0.vpp=2"], "vpp = 1 for 1f1b"),
])
def test_schedule_and_vpp_disagreeing_name_the_field(overrides, word):
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BASE, MOE + overrides)
    (hit,) = [p for p in exc.value.problems if p.path == FIELD]
    assert word in hit.expected


def test_unknown_schedule_names_the_field():
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BASE, MOE + [f"{FIELD}=zb1p"])
    assert [p.path for p in exc.value.problems] == [FIELD]


def test_valid_schedules_pass():
    for extra in ([f"{FIELD}=dualpipe"], [f"{FIELD}=dualpipe", "workload.jobs.0.global_batch=128"],
                  [f"{FIELD}=interleaved", "workload.jobs.0.vpp=2"], [f"{FIELD}=1f1b"]):
        twin.load_scenario(BASE, MOE + extra)


def test_a_refitted_or_shrunk_dualpipe_job_runs_the_schedule_vpp_implies():
    par = ParallelSpec(tp=2, pp=2, cp=1, vpp=1, seq_len=4096, global_batch=240, micro_batch=1,
                       pipeline_schedule="dualpipe")
    # (GPUs, kept): 24 ranks 10 micro-batches; 20 ranks 12; 60 ranks 4 = 2 pp; 16 ranks 15
    # (odd); 48 ranks 5 (odd); 120 ranks 2 (< 2 pp); 7 ranks (240 / 7 not whole)
    for gpus, kept in ((96, True), (80, True), (240, True), (64, False), (192, False),
                       (480, False), (28, False)):
        out = runnable_schedule(par, gpus)
        assert (out is par) if kept else (out == replace(par, pipeline_schedule=None)), gpus
    assert runnable_schedule(ParallelSpec(tp=2, pp=1, cp=1, vpp=1, seq_len=4096, global_batch=240,
                                          pipeline_schedule="dualpipe"), 48).pipeline_schedule is None
    onef = ParallelSpec(tp=2, pp=2, cp=1, vpp=1, seq_len=4096, global_batch=240)
    assert runnable_schedule(onef, 192) is onef
    # the engine's adapter: a stream class refitted to pp 1 runs 1F1B instead of stopping
    s = twin.load_scenario(BASE, MOE + [f"{FIELD}=dualpipe"])
    job = s.workload.jobs[0]
    node = load_catalog().nodes[s.hardware.node_model]
    kw = dict(clock_fraction=1.0, inter_node_gbps=400.0, hops=2.0)
    refit = job.model_copy(update={"pp": 1})
    plain = refit.model_copy(update={"pipeline_schedule": None})
    assert step_estimate_for(s, refit, node, 16, **kw) == step_estimate_for(s, plain, node, 16, **kw)
    assert job_memory_gib(refit, 128, node) == job_memory_gib(plain, 128, node) is not None
    assert step_estimate_for(s, job, node, 16, **kw) != step_estimate_for(
        s, job.model_copy(update={"pipeline_schedule": None}), node, 16, **kw)


def _expert_args(rng: np.random.Generator) -> tuple[dict, bool]:
    """A random MoE layout for step_estimate and whether the former inline arithmetic held."""
    tp = int(rng.choice([1, 2, 4, 8]))
    cp = int(rng.choice([1, 2, 3, 4]))
    experts = int(rng.choice([8, 16, 24, 64]))
    ep = int(rng.choice([e for e in range(1, 33) if experts % e == 0]))
    etp = [None, 1, tp][int(rng.integers(3))]
    dp = int(rng.integers(1, 25))
    held = (dp * cp) % ep == 0 if etp is None else (tp * cp * dp) % (etp * ep) == 0
    kw = dict(layers=8, hidden=1024, ffn_hidden=2816, heads=16, kv_heads=8, vocab=32000,
              seq_len=2048 * cp, global_batch=dp * 8, micro_batch=1, tp=tp, pp=1, cp=cp, vpp=1,
              gpus=tp * cp * dp, gpus_per_node=8, peak_tflops=989.0, hbm_bw_tb_s=3.35,
              nvlink_gb_s=450.0, nvls=True, inter_node_gbps=3200.0, moe_experts=experts,
              moe_top_k=2, moe_ep=ep, moe_expert_tp=etp)
    return kw, held


def test_expert_tp_check_is_the_former_arithmetic_on_random_layouts():
    rng = np.random.default_rng(7)
    refused = 0
    for _ in range(400):
        kw, held = _expert_args(rng)
        try:
            step_estimate(**kw)
            ok = True
        except ValueError as err:
            ok = False
            etp, ep = kw["moe_expert_tp"], kw["moe_ep"]
            tp, cp, dp = kw["tp"], kw["cp"], kw["gpus"] // (kw["tp"] * kw["cp"])
            assert str(err) == (
                f"moe_ep={ep} does not divide the data x context parallel ranks {dp * cp}"
                if etp is None else
                f"moe_expert_tp x moe_ep = {etp * ep} does not divide the tensor x context x "
                f"data parallel ranks {tp * cp * dp}")
        assert ok == held, kw
        refused += not ok
    assert 100 < refused < 300      # both outcomes well sampled


def test_expert_tp_outside_one_or_tp_is_still_refused():
    kw, _ = _expert_args(np.random.default_rng(0))
    kw.update(tp=4, gpus=4 * kw["cp"] * (kw["gpus"] // (kw["tp"] * kw["cp"])), moe_expert_tp=2,
              heads=16)
    with pytest.raises(ValueError, match=r"moe_expert_tp=2 must be 1 or tp=4"):
        step_estimate(**kw)
