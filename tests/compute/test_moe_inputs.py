"""The MoE routing, DeepSeek-style shape and expert tensor parallel inputs reach the step and
memory models from an estimate file (``twin estimate step FILE``, ``--set``) and from a
scenario job, and bad values exit 2 naming the field.

Each field is checked against :func:`twin.compute.step_estimate` and
:func:`twin.compute.memory.memory_per_gpu_bytes` called by hand with the physics' own names
(``moe_*``, ``mla_*``), so a field the adapters drop or misname moves no figure and fails.
"""

import json
from pathlib import Path

import pytest

import twin
from twin.catalog import node_model
from twin.cli.estimate import estimate_from_scenario, run_estimate_cli
from twin.compute.estimate_file import (
    estimate_from_file,
    fabric_figures,
    load_estimate,
    memory_from_file,
)
from twin.compute.memory import memory_per_gpu_bytes
from twin.compute.shapes import MOE_SHAPES
from twin.compute.step import KERNEL_EFFICIENCY, step_estimate
from twin.errors import ScenarioError
from twin.plant import model_spec, parallel_spec, step_estimate_for

ROOT = Path(__file__).resolve().parents[2]
LITE = ROOT / "scenarios/estimates/deepseek_v2_lite_bf16_16gpu.yaml"
MIXTRAL = ROOT / "scenarios/estimates/mixtral_8x22b_bf16_128gpu.yaml"
DENSE = ROOT / "scenarios/estimates/llama31_70b_bf16_64gpu.yaml"
SCEN = ROOT / "scenarios/lenovo_large.yaml"


def _by_hand(est):
    """(step, memory) of an estimate file by a direct call of the physics, every argument
    spelt out with the physics' names."""
    c, m, t, p = est.cluster, est.model, est.training, est.parallelism
    ds = dict(moe_ffn_hidden=m.expert_ffn_hidden, moe_shared_experts=m.shared_experts,
              moe_shared_ffn_hidden=m.shared_expert_ffn_hidden, moe_dense_layers=m.dense_layers,
              mla_q_lora_rank=m.mla_q_lora_rank, mla_kv_lora_rank=m.mla_kv_lora_rank,
              mla_qk_nope_head_dim=m.mla_qk_nope_head_dim,
              mla_qk_rope_head_dim=m.mla_qk_rope_head_dim, mla_v_head_dim=m.mla_v_head_dim)
    shape = dict(layers=m.layers, hidden=m.hidden, ffn_hidden=m.ffn_hidden, heads=m.heads,
                 kv_heads=m.kv_heads, vocab=m.vocab, gated_mlp=m.gated_mlp, seq_len=t.seq_len,
                 micro_batch=t.micro_batch, tp=p.tp, pp=p.pp, cp=p.cp, vpp=p.vpp,
                 precision=t.precision, activation_recompute=t.activation_recompute,
                 moe_experts=m.experts, moe_top_k=m.top_k, moe_ep=p.ep,
                 moe_capacity_factor=m.capacity_factor, moe_expert_tp=p.moe_expert_tp, **ds)
    bw, hops = fabric_figures(c)
    ke = KERNEL_EFFICIENCY[c.gpu.kernel_efficiency]
    step = step_estimate(**shape, global_batch=t.global_batch, gpus=c.gpus,
                         gpus_per_node=c.gpus_per_node, peak_tflops=c.gpu.peak_bf16_tflops,
                         hbm_bw_tb_s=c.gpu.hbm_bw_tb_s, nvlink_gb_s=c.gpu.nvlink_gb_s,
                         nvls=c.gpu.nvls, kernel_efficiency=ke, inter_node_gbps=bw, hops=hops,
                         transport=c.fabric.transport, moe_routing=m.routing,
                         nics_per_node=c.fabric.nics())
    dp = c.gpus // (p.tp * p.pp * p.cp)
    mem = memory_per_gpu_bytes(**shape, dp=dp, moe_routing=m.routing if m.experts else "capacity",
                               microbatches=t.global_batch // (dp * t.micro_batch))
    return step, mem


def test_the_v2_lite_file_is_its_config_and_fits():
    est = load_estimate(LITE)
    m, ref = est.model, MOE_SHAPES["deepseek_v2_lite"]
    assert (m.layers, m.hidden, m.ffn_hidden, m.experts, m.top_k, m.expert_ffn_hidden,
            m.shared_experts, m.dense_layers, m.mla_q_lora_rank, m.mla_kv_lora_rank,
            m.mla_qk_nope_head_dim, m.mla_qk_rope_head_dim, m.mla_v_head_dim) == tuple(
        ref[k] for k in ("layers", "hidden", "ffn_hidden", "experts", "top_k", "moe_ffn_hidden",
                         "moe_shared_experts", "moe_dense_layers", "mla_q_lora_rank",
                         "mla_kv_lora_rank", "mla_qk_nope_head_dim", "mla_qk_rope_head_dim",
                         "mla_v_head_dim"))
    r, mem = estimate_from_file(est), memory_from_file(est)
    step, mem_hand = _by_hand(est)
    assert r.step_time_s == step.step_time_s and r.breakdown == step.breakdown
    assert mem.total == mem_hand.total
    assert r.step_time_s == pytest.approx(3.164, abs=0.001)    # twin figure at e3c0bcf+dd9091b
    # fits an 80 GiB H100 (43.60 GiB before the dispatched expert inputs, HMEM)
    assert mem.total / 2**30 == pytest.approx(46.29, abs=0.01)   # dropless: 1.0341 x the routed copies


FIELDS = [  # (--set, the memory moves too)
    ("model.routing=capacity", True),     # dropless raises the busiest rank's routed copies (memory too)
    ("model.expert_ffn_hidden=2048", True),
    ("model.shared_experts=1", True),
    ("model.shared_expert_ffn_hidden=2816", True),
    ("model.dense_layers=3", True),
    ("model.mla_q_lora_rank=1536", True),
    ("model.mla_kv_lora_rank=256", True),
    ("model.mla_qk_nope_head_dim=64", True),
    ("model.mla_qk_rope_head_dim=32", True),
    ("model.mla_v_head_dim=64", True),
]


@pytest.mark.parametrize("override, moves_memory", FIELDS, ids=[f for f, _ in FIELDS])
def test_each_field_reaches_the_step_and_memory_models(override, moves_memory):
    base = load_estimate(LITE)
    est = load_estimate(LITE, [override])
    r, mem = estimate_from_file(est), memory_from_file(est)
    step, mem_hand = _by_hand(est)
    assert r.step_time_s == step.step_time_s and r.breakdown == step.breakdown
    assert mem.total == mem_hand.total
    assert r.step_time_s != estimate_from_file(base).step_time_s
    assert (mem.total != memory_from_file(base).total) == moves_memory


def test_expert_tensor_parallel_reaches_the_models_by_hand():
    for sets in ([], ["parallelism.moe_expert_tp=2"]):
        est = load_estimate(MIXTRAL, sets)
        step, mem = _by_hand(est)
        assert estimate_from_file(est).step_time_s == step.step_time_s
        assert memory_from_file(est).total == mem.total


def test_defaults_written_out_change_nothing(capsys):
    defaults = ["model.routing=capacity", "model.expert_ffn_hidden=null",
                "model.shared_experts=0", "model.shared_expert_ffn_hidden=null",
                "model.dense_layers=0"] + [f"model.mla_{k}=0" for k in (
                    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                    "v_head_dim")]
    for path in (MIXTRAL, DENSE):
        outs = []
        for sets in ([], defaults):
            argv = ["step", str(path), "--json"]
            for s in sets:
                argv += ["--set", s]
            assert run_estimate_cli(argv) == 0
            outs.append(json.loads(capsys.readouterr().out))
        assert outs[0] == outs[1]


@pytest.mark.parametrize("path, sets, message", [
    (LITE, ["model.dense_layers=27"],
     "deepseek_v2_lite_bf16_16gpu: model.dense_layers = 27 must be below model.layers = 27"),
    (LITE, ["model.mla_v_head_dim=0"],
     "deepseek_v2_lite_bf16_16gpu: model.mla_v_head_dim = 0 must be >= 1 with multi-head "
     "latent attention (model.mla_kv_lora_rank > 0)"),
    (LITE, ["model.mla_qk_rope_head_dim=0"], "model.mla_qk_rope_head_dim = 0 must be >= 1"),
    (LITE, ["model.mla_kv_lora_rank=0"], "model.mla_qk_nope_head_dim = 128 needs multi-head "
                                         "latent attention (model.mla_kv_lora_rank > 0)"),
    (LITE, ["model.shared_experts=-1"],
     "model.shared_experts = -1: Input should be greater than or equal to 0"),
    (LITE, ["model.shared_experts=0"],
     "model.shared_expert_ffn_hidden = 2816 needs model.shared_experts > 0"),
    (LITE, ["model.routing=topk"], "model.routing = 'topk': Input should be 'capacity' or "
                                   "'dropless'"),
    (LITE, ["model.expert_ffn_hidden=0"], "model.expert_ffn_hidden = 0: Input should be "
                                          "greater than or equal to 1"),
    (LITE, ["model.dense_layers=true"], "model.dense_layers = True: Input should be a valid "
                                        "integer"),
    (DENSE, ["model.routing=dropless"],
     "model.routing = 'dropless' needs a mixture of experts (model.experts > 0)"),
    (DENSE, ["model.expert_ffn_hidden=1024"],
     "model.expert_ffn_hidden = 1024 needs a mixture of experts (model.experts > 0)"),
    (DENSE, ["model.shared_experts=1"],
     "model.shared_experts = 1 needs a mixture of experts (model.experts > 0)"),
    (DENSE, ["model.dense_layers=1"],
     "model.dense_layers = 1 needs a mixture of experts (model.experts > 0)"),
    (DENSE, ["model.mla_q_lora_rank=64"],
     "model.mla_q_lora_rank = 64 needs multi-head latent attention"),
])
def test_bad_values_exit_2_naming_the_field(path, sets, message, capsys):
    if "shared_expert_ffn_hidden" in message:
        sets = sets + ["model.shared_expert_ffn_hidden=2816"]
    argv = ["step", str(path)]
    for s in sets:
        argv += ["--set", s]
    assert run_estimate_cli(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err


# ---------------------------------------------------------------- scenario jobs
LITE_JOB = ("workload.jobs.0.model={layers: 27, hidden: 2048, ffn_hidden: 10944, heads: 16, "
            "kv_heads: 16, vocab: 102400, experts: 64, top_k: 6, routing: dropless, "
            "expert_ffn_hidden: 1408, shared_experts: 2, dense_layers: 1, mla_kv_lora_rank: 512, "
            "mla_qk_nope_head_dim: 128, mla_qk_rope_head_dim: 64, mla_v_head_dim: 128}")
JOB = [LITE_JOB, "workload.jobs.0.ep=8", "workload.jobs.0.tp=2", "workload.jobs.0.pp=1"]


def _scenario_step(overrides):
    s = twin.load_scenario(SCEN, overrides)
    job = s.workload.jobs[0]
    node = node_model(s.hardware.node_model)
    return s, job, step_estimate_for(s, job, node, job.nodes, clock_fraction=1.0,
                                     inter_node_gbps=400.0, hops=3.0)


def test_a_scenario_job_carries_every_field_to_the_step_model():
    s, job, step = _scenario_step(JOB + ["workload.jobs.0.moe_expert_tp=1"])
    m, p = model_spec(job), parallel_spec(job)
    assert (m.routing, m.expert_ffn_hidden, m.shared_experts, m.dense_layers, m.mla_q_lora_rank,
            m.mla_kv_lora_rank, m.mla_qk_nope_head_dim, m.mla_qk_rope_head_dim,
            m.mla_v_head_dim, p.moe_expert_tp) == ("dropless", 1408, 2, 1, 0, 512, 128, 64, 128, 1)
    # each field moves the engine's step time, and the scenario path of `twin estimate step`
    # gives the engine's figure (the two adapters agree)
    base = step.step_time_s
    for extra in (["workload.jobs.0.model.routing=capacity"],
                  ["workload.jobs.0.model.expert_ffn_hidden=2048"],
                  ["workload.jobs.0.model.shared_experts=1"],
                  ["workload.jobs.0.model.shared_expert_ffn_hidden=2816"],
                  ["workload.jobs.0.model.dense_layers=3"],
                  ["workload.jobs.0.model.mla_q_lora_rank=1536"],
                  ["workload.jobs.0.model.mla_kv_lora_rank=256"],
                  ["workload.jobs.0.model.mla_qk_nope_head_dim=64"],
                  ["workload.jobs.0.model.mla_qk_rope_head_dim=32"],
                  ["workload.jobs.0.model.mla_v_head_dim=64"],
                  ["workload.jobs.0.moe_expert_tp=2"]):
        _, _, other = _scenario_step(JOB + ["workload.jobs.0.moe_expert_tp=1"] + extra)
        assert other.step_time_s != base, extra


def test_scenario_and_estimate_paths_agree(capsys):
    sets = JOB + ["workload.jobs.0.moe_expert_tp=1"]
    argv = ["step", str(SCEN), "--json"]
    for s in sets:
        argv += ["--set", s]
    assert run_estimate_cli(argv) == 0
    cli = json.loads(capsys.readouterr().out)
    s = twin.load_scenario(SCEN, sets)
    est = estimate_from_scenario(str(SCEN), sets)   # what the CLI ran
    assert est.model.dense_layers == 1 and est.parallelism.moe_expert_tp == 1
    # the engine's adapter (twin.plant) at the CLI's fabric figures: the same step
    bw, hops = fabric_figures(est.cluster)
    job = s.workload.jobs[0]
    engine = step_estimate_for(s, job, node_model(s.hardware.node_model), job.nodes,
                               clock_fraction=est.cluster.clock_fraction, inter_node_gbps=bw,
                               hops=hops)
    assert cli["step_time_s"] == engine.step_time_s
    assert cli["breakdown"] == pytest.approx(engine.breakdown, rel=1e-12)


def test_scenario_defaults_are_the_former_specs():
    s = twin.load_scenario(SCEN)
    m, p = model_spec(s.workload.jobs[0]), parallel_spec(s.workload.jobs[0])
    assert (m.routing, m.expert_ffn_hidden, m.shared_experts, m.shared_expert_ffn_hidden,
            m.dense_layers, m.mla_kv_lora_rank, p.moe_expert_tp) == ("capacity", None, 0, None,
                                                                     0, 0, None)


@pytest.mark.parametrize("extra, path, word", [
    (["workload.jobs.0.model.dense_layers=27"], "workload.jobs.0.model",
     "dense_layers = 27 must be below layers = 27"),
    (["workload.jobs.0.model.mla_v_head_dim=0"], "workload.jobs.0.model",
     "mla_v_head_dim = 0 must be >= 1"),
    (["workload.jobs.0.model.shared_experts=-1"], "workload.jobs.0.model.shared_experts", ""),
    (["workload.jobs.0.model.routing=topk"], "workload.jobs.0.model.routing", ""),
    (["workload.jobs.0.model.expert_ffn_hidden=2.5"], "workload.jobs.0.model.expert_ffn_hidden",
     ""),
    (["workload.jobs.0.moe_expert_tp=4"], "workload.jobs.0", "moe_expert_tp = 4 must be 1 or tp = 2"),
    (["workload.jobs.0.moe_expert_tp=true"], "workload.jobs.0.moe_expert_tp", ""),
])
def test_bad_scenario_values_name_the_field(extra, path, word):
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(SCEN, JOB + extra)
    hits = [p for p in exc.value.problems if p.path == path]
    assert hits, [(p.path, p.expected) for p in exc.value.problems]
    assert word in hits[0].expected or word in str(hits[0])


@pytest.mark.parametrize("extra, word", [
    (["workload.jobs.0.model.routing=dropless"], "routing = 'dropless' needs a mixture of experts"),
    (["workload.jobs.0.model.dense_layers=1"], "dense_layers = 1 needs a mixture of experts"),
    (["workload.jobs.0.moe_expert_tp=1"], "moe_expert_tp = 1 needs a mixture of experts"),
])
def test_moe_fields_on_a_dense_scenario_job_are_refused(extra, word):
    with pytest.raises(ScenarioError) as exc:
        twin.load_scenario(SCEN, extra)
    assert any(word in p.expected or word in str(p) for p in exc.value.problems), \
        [str(p) for p in exc.value.problems]


def test_a_stream_refit_of_tp_takes_the_expert_tp_down_with_it():
    # fit_parallelism halves tp on a copy without re-validating: etp = the old tp follows it
    job = twin.load_scenario(SCEN, JOB + ["workload.jobs.0.moe_expert_tp=2"]).workload.jobs[0]
    assert parallel_spec(job).moe_expert_tp == 2
    assert parallel_spec(job.model_copy(update={"tp": 1})).moe_expert_tp == 1
    one = twin.load_scenario(SCEN, JOB + ["workload.jobs.0.moe_expert_tp=1"]).workload.jobs[0]
    assert parallel_spec(one.model_copy(update={"tp": 1})).moe_expert_tp == 1


# ------------------------------------- the folded expert-parallel rule in scenarios (HEP)
# TP2 EP8 on one 8-GPU node: a stage of tp x cp x dp = 2 x 1 x 4 ranks.  Unfolded (no
# moe_expert_tp) ep 8 does not divide dp x cp = 4; folded with moe_expert_tp 1 (Megatron-core
# draws the expert groups over the stage's tp x cp x dp ranks) etp x ep = 8 divides 8.
FOLD = JOB + ["workload.jobs.0.nodes=1"]


def _validate(sets, capsys):
    from twin.cli.main import main
    argv = ["validate", str(SCEN)]
    for s in sets:
        argv += ["--set", s]
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_folded_layout_validates_and_runs_on_the_gpus_it_asks_for(capsys):
    from twin.plant import usable_gpus
    sets = FOLD + ["workload.jobs.0.moe_expert_tp=1"]
    code, text = _validate(sets, capsys)
    assert code == 0, text
    assert "ok:" in text
    s, job, step = _scenario_step(sets)
    par = parallel_spec(job)
    assert (par.tp, par.cp, par.ep, par.moe_expert_tp, job.nodes) == (2, 1, 8, 1, 1)
    assert usable_gpus(par, 8) == 8
    assert usable_gpus(par, 15) == 8 and usable_gpus(par, 7) == 0
    # the step model ran on all 8 GPUs: tokens per day = per-GPU throughput x 8 GPUs x 1 day
    assert step.tokens_per_day == pytest.approx(step.tokens_per_s_per_gpu * 8 * 86400.0,
                                                rel=1e-12)
    # and the engine keeps the 8 GPUs busy from the day the node is healthy (day 1 of 3)
    res = twin.simulate(twin.load_scenario(SCEN, sets + ["simulation.duration_days=3",
                                                         "failures.enabled=false"]))
    assert res.kpis["gpu_hours_busy"] == pytest.approx(8 * 48.0)
    assert res.kpis["tokens_total"] > 0


@pytest.mark.parametrize("sets, field, word", [
    # folded: etp = tp = 2 makes etp x ep = 16, more than the stage's 8 ranks
    (FOLD + ["workload.jobs.0.moe_expert_tp=2"], "workload.jobs.0.ep",
     "moe_expert_tp x ep = 16 dividing the tensor x context x data parallel ranks (8)"),
    # unfolded (None): the former rule and message, bit for bit
    (FOLD, "workload.jobs.0.ep", "a divisor of the data x context parallel ranks (4)"),
])
def test_a_layout_the_rule_refuses_exits_2_naming_the_field(sets, field, word, capsys):
    code, text = _validate(sets, capsys)
    assert code == 2
    assert f"{field}: got 8; expected {word}" in text, text


def test_usable_gpus_without_expert_tp_is_the_former_rule():
    # the former unit, model replicas x ep / gcd(cp, ep), over a grid of layouts and GPU counts
    import math

    from twin.compute.specs import ParallelSpec
    from twin.compute.step import expert_dp_unit
    from twin.plant import usable_gpus
    for tp in (1, 2, 4, 8):
        for cp in (1, 2, 4):
            for ep in (1, 2, 4, 8, 16, 64):
                par = ParallelSpec(tp=tp, pp=2, cp=cp, vpp=1, ep=ep, seq_len=4096, global_batch=1024)
                unit = par.model_parallel * ep // math.gcd(cp, ep)
                for gpus in (8, 24, 64, 96, 128, 1000):
                    assert usable_gpus(par, gpus) == gpus - gpus % unit
                # folded: the smallest dp with etp x ep dividing tp x cp x dp
                for etp in (1, tp):
                    dp = expert_dp_unit(tp=tp, cp=cp, ep=ep, moe_expert_tp=etp)
                    assert (tp * cp * dp) % (etp * ep) == 0
                    assert all((tp * cp * d) % (etp * ep) for d in range(1, dp))
                    # etp = tp folds to the former rule
                    if etp == tp:
                        assert dp == ep // math.gcd(cp, ep)


def test_twin_estimate_step_routes_a_spanning_expert_group_as_the_engine_does():
    # Grok-1's EP8 is strided by tp x cp = 8: every EP rank on another node, so its traffic is
    # an all-to-all (twin.compute.step.fabric_traffic_pattern, the engine's rule too); on a 2:1
    # CLOS the all-to-all gets 1,575 Gb/s per node where a ring would get 3,200
    from twin.compute import specs
    from twin.compute.estimate_file import estimate_from_file, fabric_figures, job_specs
    from twin.compute.step import fabric_traffic_pattern

    grok = ROOT / "scenarios/estimates/grok1_314b_bf16_512gpu.yaml"
    est = load_estimate(grok, ["cluster.fabric.kind=clos", "cluster.fabric.oversubscription=2"])
    c, p = est.cluster, est.parallelism
    assert fabric_traffic_pattern(experts=est.model.experts, ep=p.ep, tp=p.tp, cp=p.cp,
                                  moe_expert_tp=p.moe_expert_tp,
                                  gpus_per_node=c.gpus_per_node) == "all_to_all"
    a2a, hops = fabric_figures(c, "all_to_all")
    assert (a2a, fabric_figures(c)[0]) == (1575.0, 3200.0)
    model, par, gpu = job_specs(est)
    by_hand = specs.step_time(model, par, gpu, specs.FabricSpec(
        inter_node_gbps=a2a, transport=c.fabric.transport, hops=hops, nics_per_node=c.fabric.nics()),
        gpus=c.gpus, clock_fraction=c.clock_fraction)
    assert estimate_from_file(est).step_time_s == by_hand.step_time_s
    # a dense job keeps the ring
    assert fabric_traffic_pattern(experts=0, ep=1, tp=4, cp=2, moe_expert_tp=None,
                                  gpus_per_node=8) == "ring"
