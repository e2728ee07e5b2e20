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
