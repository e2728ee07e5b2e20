"""Per-GPU memory under the interleaved (virtual-pipeline) schedule: each rank's micro-batches
in flight and where dense first layers sit, by hand against Megatron-core's rules."""

import itertools

import numpy as np
import pytest
from reference_scripts import reference_script

from twin.compute.memory import GIB, interleaved_chunks_in_flight, memory_per_gpu_bytes
from twin.compute.schedules import schedule_microbatch_group


def _schedule_states(pp, vpp, rank, m, group=None):
    """(chunk 0, ..., chunk vpp-1) micro-batches in flight after each forward from the warm-up's
    end, stepping the schedule one pass at a time: forwards by groups of g micro-batches a
    chunk (g = group, default pp: chunk 0 for micro-batches 0..g-1, chunk 1 for the same, ...,
    then the next group; the last group the m mod g left, chunk by chunk, Megatron-core's
    get_schedule_table), backwards in the same order with the chunks reversed; 2 (pp - rank -
    1) + (vpp - 1) g warm-up forwards (all of them if fewer), then one forward and one backward
    a step."""
    g = pp if group is None else group
    order = []
    for first in range(0, m, g):
        order += [c for c in range(vpp) for _ in range(min(g, m - first))]
    warmup = min(2 * (pp - rank - 1) + (vpp - 1) * g, m * vpp)
    held = [0] * vpp
    for c in order[:warmup]:
        held[c] += 1
    if warmup == m * vpp:
        return {tuple(held)}
    states = set()
    for k in range(m * vpp - warmup):
        held[order[warmup + k]] += 1
        states.add(tuple(held))
        held[vpp - 1 - order[k]] -= 1
    return states


def test_chunks_in_flight_pp4_vpp2_by_hand():
    # pp 4, vpp 2: a rank runs chunk 0 for micro-batches 0-3, chunk 1 for 0-3, chunk 0 for 4-7,
    # ...; backwards chunk 1 for 0-3, chunk 0 for 0-3, chunk 1 for 4-7, ...  Warm-up forwards
    # 2 (3 - r) + 4: rank 0 10, rank 1 8, rank 2 6, rank 3 4; the first steady forward makes
    # 11, 9, 7, 5 chunks in flight = 5.5, 4.5, 3.5, 2.5 micro-batches (pp + (pp - 1 - 2r)/vpp).
    # Rank 1 by hand: warm-up c0 0-3, c1 0-3; F c0 4 -> (5, 4); B c1 0, F c0 5 -> (6, 3);
    # B c1 1, F c0 6 -> (7, 2); B c1 2, F c0 7 -> (8, 1); B c1 3, F c1 4 -> (8, 1); B c0 0,
    # F c1 5 -> (7, 2); ... back to (5, 4) after 8 steps, then again.
    # Rank 0: warm-up c0 0-3, c1 0-3, c0 4-5; F c0 6 -> (7, 4); B c1 0, F c0 7 -> (8, 3);
    # B c1 1, F c1 4 -> (8, 3); ... B c0 0, F c1 7 -> (7, 4).
    # Rank 3 (the last): warm-up c0 0-3; F c1 0 -> (4, 1); ... B c1 3, F c0 8 -> (5, 0).
    # Each distinct moment once, ascending (read from twin.compute.schedules' op order).
    got = [interleaved_chunks_in_flight(pp=4, vpp=2, rank=r) for r in range(4)]
    assert [set(g.sum(axis=1)) for g in got] == [{11}, {9}, {7}, {5}]
    assert got[1].tolist() == [[5, 4], [6, 3], [7, 2], [8, 1]]
    assert got[0].tolist() == [[7, 4], [8, 3]]
    assert got[3].tolist() == [[4, 1], [5, 0]]
    # a step of pp micro-batches runs every forward before the first backward on ranks 0, 1
    # (warm-up 10 and 8 >= the step's 8 chunks), not on ranks 2 and 3
    m4 = [interleaved_chunks_in_flight(pp=4, vpp=2, rank=r, microbatches=4) for r in range(4)]
    assert m4[0].tolist() == m4[1].tolist() == [[4, 4]]
    assert [set(g.sum(axis=1)) for g in m4[2:]] == [{7}, {5}]
    # 1F1B: one chunk, pp - rank micro-batches, capped by the step's
    assert interleaved_chunks_in_flight(pp=4, vpp=1, rank=1).tolist() == [[3]]
    assert interleaved_chunks_in_flight(pp=4, vpp=1, rank=0, microbatches=2).tolist() == [[2]]


@pytest.mark.parametrize("pp, vpp", [(2, 2), (2, 5), (3, 2), (4, 3), (8, 4)])
def test_chunks_in_flight_match_the_schedule_stepped_one_pass_at_a_time(pp, vpp):
    # steps not a multiple of pp too: Megatron-core refuses its default group's short last
    # group, so the step model runs them in the smallest group it accepts, and the memory model
    # counts that schedule (schedule_microbatch_group; until HMS the default group's table)
    for m, rank in itertools.product((pp, 2 * pp, 3 * pp, 8 * pp, pp + 1, 2 * pp + 1, 3 * pp - 1,
                                      5 * pp + pp // 2), range(pp)):
        got = interleaved_chunks_in_flight(pp=pp, vpp=vpp, rank=rank, microbatches=m)
        group = schedule_microbatch_group(pp, vpp, m)
        assert (group is None) == (m % pp == 0)
        assert {tuple(x) for x in got} == _schedule_states(pp, vpp, rank, m, group)
        assert got.tolist() == sorted(got.tolist())  # distinct, ascending


# a dense model, pp 4, vpp 2, 16 layers (4 a rank, 2 a chunk), one micro-batch of 128 tokens;
# per token and layer 2 [4h + (h + 2 h_kv) + h + 2F] = 2 (1024 + 768 + 256 + 2048) = 8192 B
DENSE = dict(layers=16, hidden=256, ffn_hidden=1024, heads=4, kv_heads=4, vocab=1000,
             seq_len=128, micro_batch=1, pp=4, vpp=2, gated_mlp=False, buffer_bytes=0)


def test_every_rank_in_flight_with_interleaving_by_hand():
    # chunks in flight 11, 9, 7, 5 (test above) of 2 layers: 5.5, 4.5, 3.5, 2.5 micro-batches
    # of 4 layers x 128 tokens x 8192 B; the first stage also keeps the embedding output,
    # 2 x 128 x 256 B for each micro-batch chunk 0 holds, 8 at the peak (8, 3) (HU4: was the
    # rank's mean 5.5; the embedding output lives in chunk 0 only).  The last stage: 2.5, not 1
    # as under 1F1B.
    layer_mb = 4 * 128 * 8192
    acts = [memory_per_gpu_bytes(**DENSE, pipeline_rank=r).activations for r in range(4)]
    assert acts == [5.5 * layer_mb + 8 * 2 * 128 * 256, 4.5 * layer_mb, 3.5 * layer_mb,
                    2.5 * layer_mb]
    # with a step of 4 micro-batches ranks 0 and 1 hold all 8 chunks, 4 micro-batches
    m4 = [memory_per_gpu_bytes(**DENSE, microbatches=4, pipeline_rank=r).activations
          for r in range(4)]
    assert m4 == [4 * layer_mb + 4 * 2 * 128 * 256, 4 * layer_mb, 3.5 * layer_mb,
                  2.5 * layer_mb]
    # a step of 6 micro-batches runs in groups of 6 (pp 4 does not divide it; the smallest
    # group Megatron-core accepts, as the step model times it): 12, 11, 9, 7 chunks in flight
    # (the test above), 6, 5.5, 4.5, 3.5 micro-batches, chunk 0 holding 6 on rank 0 (until HMS
    # the default group's 5.5, 4.5, 3.5, 2.5 and an embedding output at 6)
    m6 = [memory_per_gpu_bytes(**DENSE, microbatches=6, pipeline_rank=r).activations
          for r in range(4)]
    assert m6 == [6 * layer_mb + 6 * 2 * 128 * 256, 5.5 * layer_mb, 4.5 * layer_mb,
                  3.5 * layer_mb]
    # 1F1B (vpp 1): 4, 3, 2, 1 micro-batches
    one = [memory_per_gpu_bytes(**dict(DENSE, vpp=1), pipeline_rank=r).activations
           for r in range(4)]
    assert one == [4 * layer_mb + 4 * 2 * 128 * 256, 3 * layer_mb, 2 * layer_mb, layer_mb]
    assert [memory_per_gpu_bytes(**DENSE, pipeline_rank=r).stage for r in range(4)] == \
        ["first", "stage 2", "stage 3", "last"]
    for bad in (-1, 4, 1.5, True):
        with pytest.raises(ValueError, match="pipeline_rank must be an integer in"):
            memory_per_gpu_bytes(**DENSE, pipeline_rank=bad)


def test_mtp_modules_count_at_the_last_chunks_own_peak_by_hand():
    # MTP modules sit in the last rank's last chunk (even split as a layout), so they count at
    # that chunk's own micro-batches in flight, not at the rank's mean 2.5 (HU4).  One module a
    # token: its layer's 8192 B + the projection's 2h input 2 x 2 x 256 = 1024: 9216 B.  Rank 3's
    # moments (4, 1) and (5, 0) (test above): chunk 0 2 layers x 8192 = 16,384 a micro-batch,
    # chunk 1 16,384 + 9216 = 25,600; peak (4, 1): 65,536 + 25,600 = 91,136 B a token, x 128
    # tokens = 11,665,408 B (the mean would give 2.5 x 41,984 x 128 = 13,434,880); two modules
    # (4, 1): 65,536 + 16,384 + 2 x 9216 = 100,352.  Logits (1 + mtp) x 6 x 128 x 1000.
    one = memory_per_gpu_bytes(**DENSE, mtp_depth=1, pipeline_rank=3)
    assert one.stage == "last" and one.activations == 128 * 91_136 == 11_665_408
    assert one.logits == 2 * 6 * 128 * 1000
    two = memory_per_gpu_bytes(**DENSE, mtp_depth=2, pipeline_rank=3)
    assert two.activations == 128 * 100_352 and two.logits == 3 * 6 * 128 * 1000
    # the other ranks hold no MTP module: unchanged by it
    for r in range(3):
        assert memory_per_gpu_bytes(**DENSE, mtp_depth=1, pipeline_rank=r).activations == \
            memory_per_gpu_bytes(**DENSE, pipeline_rank=r).activations


# the same shape with 4 experts of 512 (one routed a token) in place of the MLP and its first
# 3 layers dense (MLP of 1024), no tensor, data or expert parallelism
MOE = dict(DENSE, moe_experts=4, moe_top_k=1, moe_ffn_hidden=512, moe_dense_layers=3)


def test_dense_first_layers_and_their_chunks_in_flight_by_hand():
    # Layers a chunk lpc = 4 / 2 = 2; chunk v of rank r holds layers [(4v + r) 2, (4v + r) 2 + 2)
    # (Megatron-core): rank 0 layers 0, 1 | 8, 9; rank 1 2, 3 | 10, 11; rank 2 4, 5 | 12, 13;
    # rank 3 6, 7 | 14, 15.  Dense layers 0, 1, 2: rank 0 two (chunk 0), rank 1 one (chunk 0:
    # layer 2 dense, layer 3 MoE), ranks 2, 3 none (contiguous at 4 a rank would have put all
    # three on rank 0).
    # Parameters: attention h (h + 2 h_kv) + h^2 + 2h = 262,656 a layer; dense MLP 2 h F =
    # 524,288; MoE 4 x 2 h 512 + router h 4 = 1,049,600; embedding and output layer V h =
    # 256,000 each.  2 B weights, 4 B gradients, 12 B optimizer (one data-parallel rank).
    att, mlp, moe, emb = 262_656, 524_288, 1_049_600, 256_000
    params = [4 * att + 2 * mlp + 2 * moe + emb, 4 * att + mlp + 3 * moe, 4 * att + 4 * moe,
              4 * att + 4 * moe + emb]
    # Activations per token: dense layer 8192 B (above); MoE layer 2 (4h + 768 + 256 + 2 x 512)
    # = 6144 + the dispatched expert input 2 h = 512: 6656 B.  Per chunk and micro-batch:
    # rank 0 chunk 0 2 x 8192 = 16,384, chunk 1 2 x 6656 = 13,312; rank 1 chunk 0 8192 + 6656 =
    # 14,848, chunk 1 13,312.  Peak of chunks in flight (test above): rank 0 (8, 3): 8 x 16,384
    # + 3 x 13,312 = 171,008; rank 1 (8, 1): 8 x 14,848 + 13,312 = 132,096; ranks 2 and 3
    # all-MoE, 3.5 and 2.5 micro-batches x 4 layers x 6656.  x 128 tokens; rank 0 also the
    # embedding output 2 x 256 B a token in chunk 0, 8 x at the same peak (8, 3) (HU4: was the
    # rank's mean 5.5 x); the last stage the logits 6 x 128 x 1000.
    acts = [128 * 171_008 + 8 * 2 * 128 * 256, 128 * 132_096, 3.5 * 4 * 128 * 6656,
            2.5 * 4 * 128 * 6656]
    for r in range(4):
        m = memory_per_gpu_bytes(**MOE, pipeline_rank=r)
        assert (m.weights, m.gradients, m.optimizer) == (2 * params[r], 4 * params[r],
                                                         12 * params[r])
        assert m.activations == acts[r]
        assert m.logits == (768_000 if r == 3 else 0.0)
    # totals 102.59, 101.94, 106.41, 108.38 MB: the last stage is the heaviest (with one
    # micro-batch in flight and the dense layers on rank 0, stage 2 was, at 109.82 MB)
    heaviest = memory_per_gpu_bytes(**MOE)
    assert heaviest.stage == "last" and heaviest.total == 18 * params[3] + acts[3] + 768_000
    assert heaviest.total == 108_378_112


@pytest.mark.parametrize("vpp, nd", [(1, 0), (1, 3), (2, 0), (2, 1), (2, 3), (2, 5), (4, 6),
                                     (4, 15)])
@pytest.mark.parametrize("microbatches", [None, 4, 8])
def test_the_heaviest_rank_is_always_evaluated(vpp, nd, microbatches):
    # the default is the worst of every rank's breakdown, whatever the dense layers' reach;
    # a large vocabulary makes the first and last stages heavy, a small one the inner ones
    for vocab, top_k in ((1000, 1), (1000, 4), (64_000, 4)):
        kw = dict(MOE, layers=32, vpp=vpp, moe_dense_layers=nd, vocab=vocab, moe_top_k=top_k,
                  microbatches=microbatches)
        every = [memory_per_gpu_bytes(**kw, pipeline_rank=r) for r in range(4)]
        assert memory_per_gpu_bytes(**kw) == max(every, key=lambda m: m.total)


def test_without_interleaving_or_dense_layers_nothing_else_moves():
    # the first stage's figure of an interleaved dense model is the default's (its layers at
    # pp + (pp - 1)/vpp micro-batches, its embedding output at chunk 0's peak)
    first = memory_per_gpu_bytes(**DENSE, pipeline_rank=0)
    assert first == memory_per_gpu_bytes(**DENSE)
    # DeepSeek-V3's published layout (PP16, no interleaving) under 1F1B: 119.88 GiB on stage 2
    # at the even share of routed copies, as before; 121.55 GiB routed dropless as the row is
    # (the report's DualPipe: tests/compute/test_memory_dualpipe.py)
    ds = reference_script("step_times_deepseek")
    (row,) = [r for r in ds.rows() if r["model"] == "deepseek_v3" and r["row"] == "pretrain_h800"]
    m = memory_per_gpu_bytes(**dict(ds.memory_kwargs(row, pipeline_schedule="1f1b"),
                                    moe_routing="capacity"))
    assert m.stage == "stage 2" and m.total / GIB == pytest.approx(119.883, abs=1e-3)
    m = memory_per_gpu_bytes(**ds.memory_kwargs(row, pipeline_schedule="1f1b"))
    assert m.stage == "stage 2" and m.total / GIB == pytest.approx(121.546, abs=1e-3)


def test_chunk_counts_sum_to_the_warm_up_plus_one_and_never_pass_the_step():
    # every moment holds min(W + 1, m vpp) chunks, W = 2 (pp - r - 1) + (vpp - 1) pp
    for pp, vpp, m in itertools.product((2, 4, 8, 16), (2, 3, 7), (None, 16, 64)):
        for r in range(pp):
            got = interleaved_chunks_in_flight(pp=pp, vpp=vpp, rank=r, microbatches=m)
            want = 2 * (pp - r - 1) + (vpp - 1) * pp + 1
            if m is not None:
                want = min(want, m * vpp)
            assert np.all(got.sum(axis=1) == want) and np.all(got >= 0)
    # a step not a multiple of pp: Megatron-core refuses the default group's short last group
    # (1 .. pp - 1 micro-batches), so the step and the memory model run the smallest group it
    # accepts, g = 6, 5, 7, 5, 6 for m = 6, 5, 7, 9, 11 (9 mod 5 = 4 >= pp), and the warm-up is
    # W = 2 (pp - r - 1) + (vpp - 1) g: W + 1 chunks a moment, at most the step's m vpp, no chunk
    # above the step's m
    for m, g in ((6, 6), (5, 5), (7, 7), (9, 5), (11, 6)):
        assert schedule_microbatch_group(4, 2, m) == g
        for r in range(4):
            got = interleaved_chunks_in_flight(pp=4, vpp=2, rank=r, microbatches=m)
            want = min(2 * (4 - r - 1) + g + 1, 2 * m)
            assert np.all(got.sum(axis=1) == want) and got.max() <= m
    # m 6, g 6: rank 0's W = 6 + 6 = 12 = m vpp, every forward before the first backward (6, 6)
    # (until HMS the default group: the last group micro-batches 4, 5, W 10, (6, 5)); the last
    # rank's W = 6 is chunk 0 for micro-batches 0-5, then each step's forward runs chunk 1 and
    # its backward frees it: (6, 1) (was (4, 1) and (5, 0))
    got = [interleaved_chunks_in_flight(pp=4, vpp=2, rank=r, microbatches=6).tolist()
           for r in range(4)]
    assert got == [[[6, 6]], [[6, 5]], [[6, 3]], [[6, 1]]]


def test_expert_tensor_parallel_sizes_megatron_core_accepts():
    # Megatron-core takes any expert tensor-parallel size with etp x ep dividing a stage's
    # tp cp dp ranks (parallel_state: the world a multiple of etp ep pp); the memory model
    # follows it (the step model's etp in (1, tp) is a limit of its communication terms).
    # tp 4, dp 4, ep 8, etp 2: 2 x 8 = 16 divides 4 x 4; a rank holds 8/8 experts of 3 h F / 2
    # per layer against 3 h F with etp 1: 7 layers x 3 x 6144 x 16384 / 2 = 150,994,944 fewer
    # a layer, 2 B weights and 4 B gradients each
    from .test_memory import MIXTRAL_8X22B
    kw = dict(MIXTRAL_8X22B, tp=4, dp=4)
    m1 = memory_per_gpu_bytes(**kw, moe_expert_tp=1)
    m2 = memory_per_gpu_bytes(**kw, moe_expert_tp=2)
    assert m1.weights - m2.weights == 7 * 150_994_944 * 2
    assert m1.gradients - m2.gradients == 7 * 150_994_944 * 4
    with pytest.raises(ValueError, match="moe_expert_tp x moe_ep = 64 does not divide the "
                                         "tensor x context x data parallel ranks 16"):
        memory_per_gpu_bytes(**kw, moe_expert_tp=8)
