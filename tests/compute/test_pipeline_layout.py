"""Pipeline layout (Megatron-core's ``--pipeline-model-parallel-layout``) as an input of the step
and memory models: the parser's errors one by one, round trips of random layouts, the layout
equal to the even split against no layout, and hand-valued cases (helper HL)."""


import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_scripts import reference_script

from twin.compute import step_estimate
from twin.compute.memory import memory_per_gpu_bytes
from twin.compute.pipeline_layout import (
    DECODER,
    EMBED,
    LOSS,
    MTP,
    even_pipeline_layout,
    layout_text,
    parse_pipeline_layout,
)
from twin.compute.step import H100_SXM

# ---- parser ------------------------------------------------------------------------------


def test_megatron_deepseek_example_places_what_its_docs_table_says():
    # the developer guide's table for "Et*3|(tt|)*29,m|L" with PP16 VPP2: rank 0 chunk 0
    # embedding + 3 decoders, chunk 1 two; ranks 1-13 two and two; rank 14 two and the mtp;
    # rank 15 two and the loss
    lay = parse_pipeline_layout("Et*3|(tt|)*29,m|L", pp=16, vpp=2, layers=61, mtp_depth=1)
    c = lay.counts
    assert c.shape == (16, 2, 4)
    assert c[0].tolist() == [[1, 3, 0, 0], [0, 2, 0, 0]]
    assert (c[1:14, :, DECODER] == 2).all() and not c[1:14, :, [EMBED, MTP, LOSS]].any()
    assert c[14].tolist() == [[0, 2, 0, 0], [0, 0, 1, 0]]
    assert c[15].tolist() == [[0, 2, 0, 0], [0, 0, 0, 1]]
    # virtual stage k = v pp + r: the layer order runs chunk 0 of every rank first
    assert lay.decoder_offsets()[:, 0].tolist() == [0, 3] + [3 + 2 * r for r in range(1, 15)]
    assert lay.decoder_offsets()[0, 1] == 33
    # DeepSeek-V3's 3 dense first layers: all in rank 0's chunk 0
    assert lay.dense_layers(3).sum() == 3 and lay.dense_layers(3)[0, 0] == 3
    assert not c.flags.writeable


def test_meta_layout_gives_inner_ranks_eight_layers_and_the_ends_seven():
    lay = parse_pipeline_layout("E|(t|)*126,L", pp=16, vpp=8, layers=126)
    per_rank = lay.counts.sum(axis=1)
    assert per_rank[:, DECODER].tolist() == [7] + [8] * 14 + [7]
    assert lay.counts[0, 0].tolist() == [1, 0, 0, 0]    # the first chunk: the embedding only
    assert lay.counts[15, 7].tolist() == [0, 0, 0, 1]   # the last: output layer and loss only


def test_empty_stages_are_legal():
    lay = parse_pipeline_layout("E||t|L", pp=2, vpp=2, layers=1)
    assert lay.counts[:, :, DECODER].tolist() == [[0, 1], [0, 0]]


@pytest.mark.parametrize("text, kw, match", [
    ("E|t|t", {}, "3 virtual stages, pp\\*vpp = 2\\*2 = 4"),
    ("E|t|t|t|L", {}, "5 virtual stages"),
    ("E|t|t|tL", {}, "3 decoder layers t, layers = 2"),
    ("E|t|m|L", {}, "1 decoder layers t"),
    ("E|t|t|mL", {}, "1 MTP layers m, mtp_depth = 0"),
    ("E|t|t|L", dict(mtp_depth=1), "0 MTP layers m, mtp_depth = 1"),
    ("|Et|t|L", {}, "embedding E must be the first layer, in virtual stage 0"),
    ("tE|t||L", {}, "embedding E must be the first layer"),
    ("EE|t|t|L", {}, "embedding E exactly once, got 2"),
    ("t|t||L", {}, "embedding E exactly once, got 0"),
    ("E|t|tL|", {}, "loss L must be the last layer, in the last virtual stage"),
    ("E|t|t|Lt", {}, "2 decoder layers|loss L must be the last layer"),
    ("E|t|t|", {}, "loss L exactly once, got 0"),
    ("EL|t|t|L", {}, "loss L exactly once, got 2"),
    ("E|t|x|L", {}, "unknown symbol 'x'"),
    ("E|t|t |L", {}, "unknown symbol ' '"),
    ("E|(t|t|L", {}, "unbalanced parentheses: '\\(' at 2 is never closed"),
    ("E|t)|t|L", {}, "unbalanced parentheses: '\\)' without '\\('"),
    ("E|(t)|t|L", {}, "group must be followed by \\*n"),
    ("E|()*2|t|t|L", {}, "empty parentheses"),
    ("E|t*0|t|L", {}, "repeat count must be >= 1, got 0"),
    ("E|t*|t|L", {}, "repeat count after '\\*' must be a whole number"),
    ("E|t*-1|t|L", {}, "repeat count after '\\*' must be a whole number"),
    ("*2E|t|t|L", {}, "'\\*' with nothing to repeat"),
    ("E|*t|t|L", {}, "repeat count after '\\*' must be a whole number"),
    ("E|t*99999999|t|L", {}, "expands to more than"),
])
def test_each_bad_layout_names_pipeline_layout_and_what_is_wrong(text, kw, match):
    with pytest.raises(ValueError, match=match) as info:
        parse_pipeline_layout(text, pp=2, vpp=2, layers=2, **kw)
    assert str(info.value).startswith("pipeline_layout")


def test_megatron_mtp_rules():
    # MTP after every decoder layer in layer order, and in its rank's last chunk
    # (PipelineParallelLayerLayout.validate_layer_layout)
    with pytest.raises(ValueError, match="pipeline_layout .*before the MTP layers"):
        parse_pipeline_layout("Et|m|t|L", pp=2, vpp=2, layers=2, mtp_depth=1)
    with pytest.raises(ValueError, match="pipeline_layout .*MTP layer m must sit in its rank's"):
        parse_pipeline_layout("Et|t|m|L", pp=1, vpp=4, layers=2, mtp_depth=1)  # chunk 2 of 4
    lay = parse_pipeline_layout("Et|t|m|L", pp=2, vpp=2, layers=2, mtp_depth=1)
    assert lay.counts[0, 1, MTP] == 1


def test_bad_inputs_around_the_layout():
    with pytest.raises(ValueError, match="pipeline_layout must be a string"):
        parse_pipeline_layout(3, pp=1, vpp=1, layers=1)
    with pytest.raises(ValueError, match="pipeline_layout needs pp a positive integer"):
        parse_pipeline_layout("EtL", pp=0, vpp=1, layers=1)


def test_the_even_split_of_today():
    lay = even_pipeline_layout(pp=16, vpp=4, layers=126, mtp_depth=1)
    assert (lay.counts[:, :, DECODER] == 2.0).all()  # ceil(126 / 16) = 8 a rank, 2 a chunk
    assert lay.counts[0, 0, EMBED] == 1 and lay.counts[15, 3, LOSS] == 1
    assert lay.counts[15, 3, MTP] == 1 and lay.counts.sum(axis=(0, 1))[MTP] == 1
    frac = even_pipeline_layout(pp=4, vpp=3, layers=16)
    assert frac.counts[0, 0, DECODER] == pytest.approx(4 / 3)
    with pytest.raises(ValueError, match="fractional"):
        layout_text(frac)
    # where it is a layout, its string reads back to the same counts
    whole = even_pipeline_layout(pp=4, vpp=2, layers=16, mtp_depth=1)
    assert layout_text(whole) == "E,t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2,m,L"
    back = parse_pipeline_layout(layout_text(whole), pp=4, vpp=2, layers=16, mtp_depth=1)
    assert np.array_equal(back.counts, whole.counts)


@st.composite
def _layouts(draw):
    """(pp, vpp, counts (pp vpp, 4) in layer order, mtp) of a valid layout."""
    pp = draw(st.integers(1, 6))
    vpp = draw(st.integers(1, 4))
    n = pp * vpp
    t = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    if sum(t) == 0:
        t[draw(st.integers(0, n - 1))] = 1
    mtp = draw(st.integers(0, 3))
    stages = np.zeros((n, 4), dtype=int)
    stages[:, DECODER] = t
    stages[0, EMBED] = 1
    stages[-1, LOSS] = 1
    stages[-1, MTP] = mtp  # after every decoder layer, in the last rank's last chunk
    return pp, vpp, stages, mtp


def _write(stages, draw_groups) -> str:
    """A layout string of ``stages`` in one of the grammar's spellings: ``t*n`` or ``tt..``,
    cosmetic commas, runs of alike stages as ``(...|)*k``."""
    def one(row, style):
        e, t, m, loss = (int(x) for x in row)
        body = ["E"] * e
        body += [f"t*{t}"] if (style and t > 1) else ["t"] * t
        body += ["m"] * m + ["L"] * loss
        return ("," if style else "").join(body)
    out, i = [], 0
    while i < len(stages):
        j = i
        while j + 1 < len(stages) and np.array_equal(stages[j + 1], stages[i]):
            j += 1
        k = j - i + 1
        if draw_groups and k > 1 and i + k < len(stages):  # (x|)*k, a separator follows
            out.append(f"({one(stages[i], k % 2)}|)*{k}")
        else:
            out.extend(one(stages[x], (x + k) % 2) + ("|" if x < len(stages) - 1 else "")
                       for x in range(i, j + 1))
        i = j + 1
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(_layouts(), st.booleans())
def test_random_layouts_round_trip(case, groups):
    pp, vpp, stages, mtp = case
    layers = int(stages[:, DECODER].sum())
    text = _write(stages, groups)
    lay = parse_pipeline_layout(text, pp=pp, vpp=vpp, layers=layers, mtp_depth=mtp)
    assert np.array_equal(lay.stages(), stages)
    # rank r's chunk v is virtual stage v pp + r
    for r in range(pp):
        for v in range(vpp):
            assert np.array_equal(lay.counts[r, v], stages[v * pp + r])
    assert lay.counts.sum(axis=(0, 1)).tolist() == [1, layers, mtp, 1]
    back = parse_pipeline_layout(layout_text(lay), pp=pp, vpp=vpp, layers=layers,
                                 mtp_depth=mtp)
    assert np.array_equal(back.counts, lay.counts)
    # the first nd decoder layers in layer order are the dense ones
    nd = layers // 2
    dense = lay.dense_layers(nd)
    assert dense.sum() == nd and (dense <= lay.counts[:, :, DECODER]).all()
    # a wrong count of anything is refused
    with pytest.raises(ValueError, match="pipeline_layout"):
        parse_pipeline_layout(text, pp=pp, vpp=vpp, layers=layers + 1, mtp_depth=mtp)
    with pytest.raises(ValueError, match="pipeline_layout"):
        parse_pipeline_layout(text + "|", pp=pp, vpp=vpp, layers=layers, mtp_depth=mtp)


# ---- step and memory models ----------------------------------------------------------------

H100 = dict(gpus_per_node=8, hbm_bw_tb_s=3.35, nvlink_gb_s=450.0, inter_node_gbps=3200.0,
            peak_tflops=989.0, nvls=True)
SHAPE = dict(hidden=4096, ffn_hidden=14336, heads=32, kv_heads=8, vocab=128256, seq_len=4096)
MOE = dict(moe_experts=8, moe_top_k=2, moe_ep=4)


def _step_kw(layers, pp, vpp, sched=None, m=None, dp=4, moe=False, **kw):
    m = m or 4 * pp
    out = dict(H100, **SHAPE, layers=layers, global_batch=dp * m, micro_batch=1, tp=4, pp=pp,
               cp=1, vpp=vpp, gpus=4 * pp * dp, pipeline_schedule=sched, **(MOE if moe else {}))
    return dict(out, **kw)


def _mem_kw(layers, pp, vpp, sched=None, m=None, dp=4, moe=False, **kw):
    return dict(**SHAPE, layers=layers, micro_batch=1, tp=4, pp=pp, vpp=vpp, dp=dp,
                microbatches=m or 4 * pp, pipeline_schedule=sched, **(MOE if moe else {}), **kw)


def _even_text(layers, pp, vpp, mtp=0):
    return layout_text(even_pipeline_layout(pp=pp, vpp=vpp, layers=layers, mtp_depth=mtp))


@pytest.mark.parametrize("pp, vpp, sched, moe, mtp", [
    (4, 1, None, False, 0), (4, 2, None, False, 0), (4, 4, None, False, 0),
    (2, 1, "dualpipe", False, 0), (4, 1, "dualpipe", False, 0), (8, 1, "dualpipe", True, 0),
    (4, 1, None, True, 0), (4, 2, None, True, 1), (4, 1, None, True, 1)])
def test_the_even_split_written_as_a_layout_gives_the_same_step(pp, vpp, sched, moe, mtp):
    # where the even split is a layout (pp vpp divides the layers) the layout's code path adds
    # the same terms in the same order: the same step time, bit for bit
    kw = _step_kw(32, pp, vpp, sched, moe=moe, **({"mtp_depth": mtp} if mtp else {}))
    a = step_estimate(**kw)
    b = step_estimate(**kw, pipeline_layout=_even_text(32, pp, vpp, mtp))
    assert b.step_time_s == a.step_time_s and b.mfu == a.mfu
    mk = _mem_kw(32, pp, vpp, sched, moe=moe, **({"mtp_depth": mtp} if mtp else {}))
    ma = memory_per_gpu_bytes(**mk)
    mb = memory_per_gpu_bytes(**mk, pipeline_layout=_even_text(32, pp, vpp, mtp))
    # the same bytes for every schedule: one memory code path (HU4; the interleaved even split
    # took the embedding output at the rank's mean pp + (pp - 1)/vpp in flight until then, the
    # layout chunk 0's own peak, so they differed by up to 2 tokens h / tp x pp)
    assert mb.stage == ma.stage
    assert mb.total == pytest.approx(ma.total, rel=1e-12)
    for k in ("weights", "gradients", "optimizer", "activations", "logits"):
        assert getattr(mb, k) == pytest.approx(getattr(ma, k), rel=1e-12)


@pytest.mark.parametrize("layers, pp, vpp, sched, extra", [
    (32, 1, 1, None, {}), (32, 4, 1, "dualpipe", dict(moe=True, mtp_depth=1)),
    (32, 4, 1, "dualpipe", dict(moe=True, moe_dense_layers=9)),
    (32, 4, 1, None, dict(moe=True, moe_dense_layers=9)),
    (32, 4, 2, None, dict(moe=True, moe_dense_layers=6)),
    (32, 4, 1, None, dict(moe=True, mtp_depth=1, zero_stage=3))])
def test_without_a_layout_the_step_runs_the_even_layout(layers, pp, vpp, sched, extra):
    # one code path (HU3): no layout is the even split written as a layout, bit for bit, in the
    # cases where the former even-split code differed from the layout's (pp = 1's two vocabulary
    # matrices, DualPipe's rank pairs and its dense layers beyond stage 0, dense first layers
    # on several ranks, interleaved dense layers in layer order, FSDP with MTP)
    kw = _step_kw(layers, pp, vpp, sched, **extra)
    a = step_estimate(**kw)
    b = step_estimate(**kw, pipeline_layout=_even_text(layers, pp, vpp, extra.get("mtp_depth", 0)))
    assert (a.step_time_s, a.mfu, a.breakdown) == (b.step_time_s, b.mfu, b.breakdown)


def test_pp1_counts_the_embedding_and_the_output_layer():
    # pp = 1: the one rank holds the input embedding (E) and the untied output layer (L), both
    # V x h over tp in its parameters: Adam streams 34 B each over the 4 distributed-optimizer
    # shards (the even-split code before HU3 counted one of the two matrices)
    kw = _step_kw(32, 1, 1)
    e = step_estimate(**kw)
    h, hkv, F, tp, V = 4096, 1024, 14336, 4, 128256
    layer = (h * (h + 2 * hkv) + h * h + 3 * h * F) / tp + 2 * h
    p_local = 32 * layer + 2 * V * h / tp
    assert e.breakdown["optimizer"] == pytest.approx(
        p_local / 4 * 34.0 / (3.35e12 * H100_SXM.hbm), rel=1e-12)


def test_each_mtp_layer_of_a_layout_is_one_module():
    # the last rank with two MTP modules (m*2): each m one module's saved activations, as the
    # even split counts mtp_depth modules (until HU3 the layout path counted mtp_depth per m)
    mk = _mem_kw(32, 4, 1, moe=True, mtp_depth=2, pipeline_rank=3)
    a = memory_per_gpu_bytes(**mk)
    b = memory_per_gpu_bytes(**mk, pipeline_layout=_even_text(32, 4, 1, 2))
    one = memory_per_gpu_bytes(**dict(mk, mtp_depth=1),
                               pipeline_layout=_even_text(32, 4, 1, 1))
    none = memory_per_gpu_bytes(**dict(mk, mtp_depth=0), pipeline_layout=_even_text(32, 4, 1))
    assert b.activations == pytest.approx(a.activations, rel=1e-12)
    assert b.activations - none.activations == pytest.approx(
        2.0 * (one.activations - none.activations), rel=1e-12)


def test_moving_a_layer_off_the_last_stage_by_hand():
    # 4 stages of a dense model whose output layer takes less than a layer (32k vocabulary):
    # A = 4 layers a stage, the last rank critical (4 layers + output layer);
    # B = one layer moved from the last rank to rank 1, now critical with 5 layers.
    # The step moves by (m + pp - 1) (l - L) (the micro-batches and the bubble), the
    # stragglers' share of the compute-bound part, sigma sqrt(2 ln gpus) m (l_noisy - L), and
    # the optimizer of the rank with the most parameters
    kw = _step_kw(16, 4, 1, dp=1, m=8, **dict(SHAPE, vocab=32000))
    a = step_estimate(**kw, pipeline_layout="Et*4|t*4|t*4|t*4,L")
    b = step_estimate(**kw, pipeline_layout="Et*4|t*5|t*4|t*3,L")
    m, pp = 8, 4
    keys = ("gemm", "attention", "elementwise", "recompute", "tp_comm_exposed", "cp_comm_exposed")
    layer = {k: b.breakdown[k] / (5 * m) for k in keys}   # B's critical rank: 5 layers
    out = a.breakdown["output_layer"] / m                 # A's critical rank: the output layer
    assert b.breakdown["output_layer"] == 0.0
    for k in keys:  # A's critical rank: 4 of the same layers
        assert a.breakdown[k] == pytest.approx(4 * m * layer[k], rel=1e-12)
    lt = sum(layer.values())
    assert out < lt
    ke = H100_SXM
    noisy = layer["gemm"] + layer["attention"] + layer["recompute"] - out
    # Adam (34 B a parameter over the HBM) of the rank with the most parameters: A's last
    # (4 layers + the 32k x 4096 output layer over tp 4), B's rank 1 (5 layers)
    h, hkv, F, tp = 4096, 4096 * 8 / 32, 14336, 4
    p_layer = (h * (h + 2 * hkv) + h * h + 3 * h * F) / tp + 2 * h
    d_opt = (p_layer - 32000 * h / tp) * 34.0 / (3.35e12 * ke.hbm)
    want = (m + pp - 1) * (lt - out) + ke.rank_jitter_fraction * math.sqrt(
        2.0 * math.log(16)) * m * noisy + d_opt
    assert b.step_time_s - a.step_time_s == pytest.approx(want, rel=1e-9)
    assert b.breakdown["dp_comm_exposed"] == a.breakdown["dp_comm_exposed"] == 0.0


def test_meta_405b_layout_accepted_and_an_inner_rank_is_critical():
    # Llama 3 405B (arXiv 2407.21783 sec. 3.3.2, Table 4): 126 layers, TP8 PP16, one layer
    # less on the first and the last stage, the embedding and the loss alone in a chunk
    from .test_step import est
    with pytest.raises(ValueError, match="layers=126 < pp\\*vpp=128"):
        est("405b", 8192, 2048, tp=8, pp=16, cp=1, vpp=8, transport="roce")
    meta = est("405b", 8192, 2048, tp=8, pp=16, cp=1, vpp=8, transport="roce",
               pipeline_layout="E|(t|)*126,L")
    today = est("405b", 8192, 2048, tp=8, pp=16, cp=1, vpp=4, transport="roce")
    # the critical rank is an inner one: 8 decoder layers, no output layer (the last rank's
    # 7 layers + output layer and the first's 7 + embedding are lighter)
    assert meta.breakdown["output_layer"] == 0.0
    for k in ("gemm", "attention", "elementwise", "tp_comm_exposed"):
        assert meta.breakdown[k] == pytest.approx(today.breakdown[k], rel=1e-12)  # 8 layers
    # the bubble: the replay of the interleaved order (HIR), 0.867 of the closed form (pp -
    # 1)/vpp of the critical rank's stage (its value until HIR): the fill and the drain cross
    # the one-slot chunks at the ends (the embedding alone, the loss alone) and the 7-layer
    # end ranks, lighter than the critical rank's 8 one-layer chunks
    t_stage = sum(meta.breakdown[k] for k in ("gemm", "attention", "elementwise",
                                              "tp_comm_exposed")) / (2048 // 64)
    assert meta.breakdown["pipeline_bubble"] == pytest.approx(0.8673 * 15 / 8 * t_stage,
                                                              rel=1e-4)
    assert meta.step_time_s < today.step_time_s
    with pytest.raises(ValueError, match="pipeline_layout 'E\\|\\(t\\|\\)\\*125,L': has 127"):
        est("405b", 8192, 2048, tp=8, pp=16, cp=1, vpp=8, pipeline_layout="E|(t|)*125,L")


def test_moe_dense_first_layers_follow_the_layout_order():
    # 4 dense first layers, 2 a chunk: with vpp 2 they fill chunk 0 of ranks 0 and 1; the
    # step's rank times count them where the layout puts them: moving them onto the last
    # rank's chunk is impossible (layer order), but a layout with rank 0 holding 4 of them
    # leaves rank 0 lighter than the MoE ranks
    kw = _step_kw(16, 2, 2, moe=True, moe_dense_layers=4)
    lay = parse_pipeline_layout("Et*4|t*4|t*4|t*4,L", pp=2, vpp=2, layers=16)
    assert lay.dense_layers(4).tolist() == [[4, 0], [0, 0]]
    e = step_estimate(**kw, pipeline_layout="Et*4|t*4|t*4|t*4,L")
    e_moe = step_estimate(**dict(kw, moe_dense_layers=0), pipeline_layout="Et*4|t*4|t*4|t*4,L")
    # the critical rank (rank 1: 8 MoE layers + output layer) is the same in both
    assert e.breakdown["gemm"] == e_moe.breakdown["gemm"]
    mk = _mem_kw(16, 2, 2, moe=True, moe_dense_layers=4)
    r0 = memory_per_gpu_bytes(**mk, pipeline_rank=0, pipeline_layout="Et*4|t*4|t*4|t*4,L")
    r0_moe = memory_per_gpu_bytes(**dict(mk, moe_dense_layers=0), pipeline_rank=0,
                                  pipeline_layout="Et*4|t*4|t*4|t*4,L")
    assert r0.weights < r0_moe.weights  # 4 dense MLPs instead of 4 MoE layers' experts
    assert r0.activations < r0_moe.activations  # one MLP a token instead of 2 routed copies
    r1 = memory_per_gpu_bytes(**mk, pipeline_rank=1, pipeline_layout="Et*4|t*4|t*4|t*4,L")
    r1_moe = memory_per_gpu_bytes(**dict(mk, moe_dense_layers=0), pipeline_rank=1,
                                  pipeline_layout="Et*4|t*4|t*4|t*4,L")
    assert r1.as_dict() == r1_moe.as_dict()  # no dense layer on rank 1


def test_deepseek_v3_megatron_example_layout_in_the_memory_model():
    ds = reference_script("step_times_deepseek")
    r = ds.rows()[0]
    kw = dict(ds.memory_kwargs(r, pipeline_schedule="interleaved", mtp=True), vpp=2)
    lay = "Et*3|(tt|)*29,m|L"
    mem = memory_per_gpu_bytes(**kw, pipeline_layout=lay)
    assert math.isfinite(mem.total) and mem.total > 0
    tokens = kw["micro_batch"] * kw["seq_len"] / kw["cp"]
    one_head = 6.0 * tokens * kw["vocab"] / kw["tp"]
    by_rank = {j: memory_per_gpu_bytes(**kw, pipeline_layout=lay, pipeline_rank=j)
               for j in (0, 1, 14, 15)}
    assert by_rank[14].logits == by_rank[15].logits == one_head  # the MTP's head, the loss
    assert by_rank[0].logits == by_rank[1].logits == 0.0
    assert mem.total == max(m.total for m in
                            (memory_per_gpu_bytes(**kw, pipeline_layout=lay, pipeline_rank=j)
                             for j in range(16)))
    with pytest.raises(ValueError, match="pipeline_layout .*0 MTP layers m, mtp_depth = 1"):
        memory_per_gpu_bytes(**kw, pipeline_layout="Et*3|(tt|)*29,|L")
    # the same layout under the step model
    skw = dict(ds.kwargs(r), pipeline_schedule=None, vpp=2)
    assert step_estimate(**skw, pipeline_layout=lay).step_time_s > 0


def test_dualpipe_layout_stages_are_the_schedules():
    # DualPipe (vpp 1): rank j runs stages j and pp-1-j from the layout; the busiest pair
    # with one layer moved from rank 1's stage to rank 2's stays the same pair sums, so the
    # pipeline time is the same; a layout with the wrong stage count is refused
    kw = _step_kw(16, 4, 1, "dualpipe", moe=True)
    a = step_estimate(**kw, pipeline_layout="Et*4|t*4|t*4|t*4,L")
    with pytest.raises(ValueError, match="pipeline_layout .*8 virtual stages, pp\\*vpp = 4\\*1"):
        step_estimate(**kw, pipeline_layout="Et*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2,L")
    # all layers on the first two stages: ranks 0 and 1 (and their mirrors) do more
    b = step_estimate(**kw, pipeline_layout="Et*8|t*8||L")
    assert b.step_time_s > a.step_time_s
    mem = memory_per_gpu_bytes(**_mem_kw(16, 4, 1, "dualpipe", moe=True),
                               pipeline_layout="Et*8|t*8||L")
    assert mem.stage in ("stages 1+4", "stages 2+3")
