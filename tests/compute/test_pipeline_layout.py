"""Pipeline layout (Megatron-core's ``--pipeline-model-parallel-layout``) as an input of the step
and memory models: the parser's errors one by one, round trips of random layouts, the layout
equal to the even split against no layout, and hand-valued cases (helper HL)."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.compute.pipeline_layout import (
    DECODER,
    EMBED,
    LOSS,
    MTP,
    even_pipeline_layout,
    layout_text,
    parse_pipeline_layout,
)

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
