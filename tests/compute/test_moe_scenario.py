"""Mixture of experts and FSDP in a scenario: schema, validation, and the engine's step time.

The study scenarios/studies/moe.yaml runs the Lenovo "large" cluster (16 SR675 V3, 128
H100 NVL) with a Mixtral-8x7B-shaped job, expert parallel or FSDP.  The engine's step
time goes through ``twin.plant.step_estimate_for``; ``twin estimate step`` on the same
scenario goes through the estimate file: the two adapters must agree bit for bit.
"""

from pathlib import Path

import pytest
import yaml
from estimate_json import estimate_step_json

import twin
from twin.errors import ScenarioError
from twin.sim.engine import Engine
from twin.sweep.spec import spec_from_mapping

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "scenarios" / "studies" / "moe.yaml"
BASE = ROOT / "scenarios" / "lenovo_large.yaml"
QUICK = ["simulation.duration_days=6", "failures.enabled=false"]


def _cases() -> dict[str, list[str]]:
    spec = spec_from_mapping(yaml.safe_load(STUDY.read_text()), STUDY)
    (axis,) = spec.axes
    return {label: list(spec.overrides) + list(ov) for label, ov in zip(axis.labels, axis.overrides,
                                                                          strict=True)}


def _cli_step(overrides: list[str]) -> dict:
    return estimate_step_json(BASE, overrides)


@pytest.fixture(scope="module")
def engine_steps() -> dict:
    """Step estimate of the running job in the engine, per study case, after 5 days."""
    out = {}
    for label, ov in _cases().items():
        eng = Engine(twin.load_scenario(BASE, ov + QUICK))
        eng.start()
        eng.env.run(until=5 * 86400.0)
        job = eng.jobs.all[0]
        assert job.status == "running" and len(job.nodes) == 16
        out[label] = (job.step, ov)
    return out


def test_engine_and_estimate_adapters_agree_for_moe_and_fsdp(engine_steps):
    for label, (step, ov) in engine_steps.items():
        cli = _cli_step(ov + QUICK)
        assert step.step_time_s == cli["step_time_s"], label
        assert step.breakdown == pytest.approx(cli["breakdown"], rel=1e-12)


def test_adapters_agree_for_a_dualpipe_job():
    """The job's own ``pipeline_schedule`` (no --pipeline-schedule flag) reaches the estimate
    file: the engine and ``twin estimate step`` both run DualPipe, bit for bit (before HK2 the
    CLI dropped the field and reported 1F1B: 4.629 s against the engine's 3.282 s)."""
    ov = _cases()["moe_ep8"] + ["workload.jobs.0.pp=2",
                                "workload.jobs.0.pipeline_schedule=dualpipe"]
    eng = Engine(twin.load_scenario(BASE, ov + QUICK))
    eng.start()
    eng.env.run(until=5 * 86400.0)
    job = eng.jobs.all[0]
    assert job.status == "running"
    cli = _cli_step(ov + QUICK)
    assert job.step.step_time_s == cli["step_time_s"]
    assert job.step.breakdown == pytest.approx(cli["breakdown"], rel=1e-12)
    assert "comm_sm_reserved" in cli["breakdown"]  # DualPipe's term
    f1 = _cli_step(ov[:-1] + QUICK)
    assert cli["step_time_s"] < f1["step_time_s"]


def test_moe_costs_its_routed_flops_and_its_communication(engine_steps):
    dense, ep8, fsdp = (engine_steps[k][0] for k in ("dense_8b", "moe_ep8", "moe_fsdp"))
    # transformer-layer GEMMs scale with the FLOPs per token: attention projections plus
    # top-2 of the experts' three h x F matrices against one dense MLP (same h, F, layers)
    h, hkv, F = 4096, 1024, 14336
    attn = h * (h + 2 * hkv) + h * h
    ratio = (attn + 2 * 3 * h * F) / (attn + 3 * h * F)
    # expert parallel: every rank computes its tokens' routed copies; FSDP the same work
    assert ep8.breakdown["gemm"] / dense.breakdown["gemm"] == pytest.approx(ratio, rel=0.03)
    assert fsdp.breakdown["gemm"] / dense.breakdown["gemm"] == pytest.approx(ratio, rel=0.03)
    # each pays its own communication: all-to-alls across PCIe and the network, or the
    # per-layer weight gathers of ZeRO-3 that the layer's compute does not hide
    assert ep8.breakdown["moe_a2a_exposed"] > 0 and fsdp.breakdown["moe_a2a_exposed"] == 0
    assert fsdp.breakdown["dp_comm_exposed"] > ep8.breakdown["dp_comm_exposed"]
    # without expert parallelism FSDP gathers all eight experts of every layer for every
    # micro-batch (1.4 GB a layer at TP2) over PCIe and 400 Gb/s: it cannot hide them
    assert fsdp.step_time_s > 3 * ep8.step_time_s
    # same tokens per step: the MoE steps are slower than the dense one
    assert min(ep8.step_time_s, fsdp.step_time_s) > dense.step_time_s * ratio * 0.97


def test_moe_without_expert_parallel_or_fsdp_does_not_fit():
    moe = _cases()["moe_ep8"]
    ep1 = [o for o in moe if not o.startswith("workload.jobs.0.ep=")]
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BASE, ep1)
    (p,) = [p for p in exc.value.problems if p.path == "workload.jobs.0"]
    assert "GPU memory" in p.expected and "94 GiB" in p.expected


MOE = ("workload.jobs.0.model={layers: 32, hidden: 4096, ffn_hidden: 14336, heads: 32, "
       "kv_heads: 8, vocab: 32000, experts: %d, top_k: %d}")


@pytest.mark.parametrize("overrides, path, word", [
    ([MOE % (8, 9), "workload.jobs.0.ep=8"], "workload.jobs.0.model", "top_k = 9"),
    ([MOE % (8, 2), "workload.jobs.0.ep=3"], "workload.jobs.0", "not a multiple of ep = 3"),
    (["workload.jobs.0.ep=2"], "workload.jobs.0", "needs a mixture of experts"),
    (["workload.jobs.0.fsdp_shard=8"], "workload.jobs.0", "zero_stage = 3"),
    ([MOE % (32, 2), "workload.jobs.0.tp=8", "workload.jobs.0.ep=32"], "workload.jobs.0.ep",
     "data x context parallel ranks (16)"),
    (["workload.jobs.0.zero_stage=3", "workload.jobs.0.fsdp_shard=48"],
     "workload.jobs.0.fsdp_shard", "data x context parallel ranks (64)"),
    (["workload.jobs.0.zero_stage=4"], "workload.jobs.0.zero_stage", ""),
])
def test_bad_moe_and_sharding_fields_name_the_field(overrides, path, word):
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(BASE, overrides)
    hits = [p for p in exc.value.problems if p.path == path]
    assert hits, [(p.path, p.expected) for p in exc.value.problems]
    assert word in hits[0].expected or word in str(hits[0])
