"""A mixture of experts checkpoints every expert: the parameter count the engine and
``twin capacity`` size a checkpoint with (:meth:`twin.compute.specs.ModelSpec.parameters`)."""

import pytest

import twin
from twin import storage
from twin.compute.shapes import MOE_SHAPES
from twin.compute.specs import ModelSpec
from twin.compute.step import parameter_count
from twin.sim.engine import Engine

from .test_moe_scenario import BASE, _cases


def _spec(name: str) -> ModelSpec:
    return ModelSpec(**{k: v for k, v in MOE_SHAPES[name].items() if k != "seq_len"})


@pytest.mark.parametrize("name, published, rel", [
    ("mixtral_8x7b", 46.7e9, 0.005),    # Mistral AI, "Mixtral of Experts" (arXiv 2401.04088): 47B (46.7B)
    ("mixtral_8x22b", 141e9, 0.005),    # Mistral AI model card: 141B total, 39B active
    ("grok1_314b", 314e9, 0.01),        # xAI, Grok-1 open release: 314B parameters
])
def test_moe_parameters_are_the_published_totals(name, published, rel):
    assert _spec(name).parameters() == pytest.approx(published, rel=rel)


def test_a_dense_model_counts_as_before():
    m = ModelSpec(layers=80, hidden=8192, ffn_hidden=28672, heads=64, kv_heads=8, vocab=128256)
    assert m.parameters() == parameter_count(layers=80, hidden=8192, ffn_hidden=28672, heads=64,
                                             kv_heads=8, vocab=128256)


def test_mtp_modules_are_checkpointed():
    # DeepSeek-V3 (arXiv 2412.19437, sec. 1 / the model card): 685 B parameters, 671 B of the
    # main model and 14 B of the MTP module, whose published checkpoint also repeats the
    # embedding and the output head (2 x 129,280 x 7,168 = 1.85 B) the module shares in training
    import dataclasses
    sh = MOE_SHAPES["deepseek_v3"]
    v3 = ModelSpec(layers=61, hidden=7168, ffn_hidden=18432, heads=128, kv_heads=128,
                   vocab=129280, experts=256, top_k=8, expert_ffn_hidden=sh["moe_ffn_hidden"],
                   shared_experts=1, dense_layers=3, mla_q_lora_rank=1536, mla_kv_lora_rank=512,
                   mla_qk_nope_head_dim=128, mla_qk_rope_head_dim=64, mla_v_head_dim=128)
    assert v3.parameters() == pytest.approx(671.03e9, rel=1e-4)
    with_mtp = dataclasses.replace(v3, mtp_depth=1)
    mtp = with_mtp.parameters() - v3.parameters()
    # one more MoE layer (the count with 62 layers less the count with 61), the 2h x h
    # projection and two RMSNorms
    layer = dataclasses.replace(v3, layers=62).parameters() - v3.parameters()
    assert mtp == pytest.approx(layer + 2 * 7168**2 + 2 * 7168, rel=1e-12)
    assert with_mtp.parameters() + 2 * 129280 * 7168 == pytest.approx(685e9, rel=0.002)
    assert mtp + 2 * 129280 * 7168 == pytest.approx(14e9, rel=0.05)
    dense = ModelSpec(layers=32, hidden=4096, ffn_hidden=14336, heads=32, kv_heads=8, vocab=128256)
    per_layer = dataclasses.replace(dense, layers=33).parameters() - dense.parameters()
    assert dataclasses.replace(dense, mtp_depth=2).parameters() == pytest.approx(
        dense.parameters() + 2 * (per_layer + 2 * 4096**2 + 2 * 4096), rel=1e-12)


def test_the_engine_checkpoints_every_expert():
    label, ov = next((k, v) for k, v in _cases().items() if "ep" in k.lower() or "moe" in k.lower())
    eng = Engine(twin.load_scenario(BASE, ov + ["simulation.duration_days=1", "failures.enabled=false"]))
    job = eng.jobs.all[0]
    m = job.spec.model
    assert m.experts > 0, label
    dense = parameter_count(layers=m.layers, hidden=m.hidden, ffn_hidden=m.ffn_hidden, heads=m.heads,
                            kv_heads=m.kv_heads, vocab=m.vocab, gated_mlp=m.gated_mlp)
    assert job.params > 5 * dense          # eight experts, not one MLP
    assert job.checkpoint_bytes == storage.checkpoint_bytes(job.params)
