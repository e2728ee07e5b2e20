"""The (interleaved) 1F1B op order and its replay (twin/compute/schedules.py): the bubble of
equal chunks is the SC21 closed form, 1F1B's ``(pp - 1)`` stage times, the memory model's
micro-batches in flight are read from the order the step runs (its group too), and the makespan
behaves as a longest path does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.compute.memory import interleaved_chunks_in_flight
from twin.compute.schedules import (
    ScheduleDeadlock,
    interleaved_program,
    interleaved_rank_order,
    interleaved_schedule_s,
    megatron_microbatch_group,
    schedule_microbatch_group,
)


def _equal(pp: int, vpp: int, m: int, f: float, b: float) -> dict:
    return interleaved_schedule_s(pp, vpp, m, fwd_s=np.full((pp, vpp), f),
                                  bwd_s=np.full((pp, vpp), b))


@pytest.mark.parametrize("f, b", [(1.0, 2.0), (0.3, 0.6), (1.0, 1.0), (0.7, 2.1), (2.0, 5.0)])
@pytest.mark.parametrize("pp, vpp, m", [(2, 2, 4), (4, 2, 8), (4, 5, 64), (8, 4, 24),
                                        (16, 8, 16), (16, 8, 32), (9, 7, 63), (8, 12, 16)])
def test_equal_chunks_give_the_closed_form_bubble(pp, vpp, m, f, b):
    # SC21 sec. 2.2.2: the interleaved bubble is (pp - 1)/vpp of a stage's time per
    # micro-batch; a stage is vpp chunks of f + b, so (pp - 1)(f + b)
    r = _equal(pp, vpp, m, f, b)
    stage = vpp * (f + b)
    assert r["busy"] == pytest.approx(np.full(pp, m * stage), rel=1e-14)
    # to float precision: the makespan is a sum of ~2 m vpp durations (rounding ~1e-16 each)
    assert r["step"] - m * stage == pytest.approx((pp - 1) / vpp * stage, abs=1e-13 * r["step"])


@pytest.mark.parametrize("pp, m", [(2, 1), (2, 5), (4, 3), (4, 8), (8, 8), (8, 31)])
def test_vpp_1_is_1f1b(pp, m):
    # 1F1B (warm-up pp - r - 1): (m + pp - 1)(f + b) with equal stages, any m
    r = _equal(pp, 1, m, 1.0, 2.0)
    assert r["step"] == pytest.approx((m + pp - 1) * 3.0, rel=1e-14)
    assert [op for op in interleaved_rank_order(pp, 1, m, 0)][: min(pp - 1, m)] == [
        (0, 0, i) for i in range(min(pp - 1, m))]


def test_order_follows_megatron_cores_table():
    # Megatron-core's get_schedule_table docstring example, PP2, 5 micro-batches, group 3, VP2:
    # micro-batch 0 1 2 0 1 2 3 4 3 4, chunk 0 0 0 1 1 1 0 0 1 1
    table = [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (3, 0), (4, 0), (3, 1), (4, 1)]
    for rank, warm in ((0, 2 + 3), (1, 3)):  # 2 (pp - r - 1) + (vpp - 1) group
        ops = interleaved_rank_order(2, 2, 5, rank, group=3)
        assert [(v, i) for d, v, i in ops if d == 0] == [(v, i) for i, v in table]
        assert [(v, i) for d, v, i in ops if d == 1] == [(1 - v, i) for i, v in table]
        assert all(d == 0 for d, _, _ in ops[:warm])
        steady = ops[warm:warm + 2 * (10 - warm)]
        assert [d for d, _, _ in steady] == [0, 1] * (10 - warm)


def _closed_form_in_flight(pp: int, vpp: int, m: int, rank: int) -> set:
    """SC21 / Megatron-core's interleaved schedule with pp dividing m, written independently
    of the op order (the memory model's own encoding until HMS): after n forwards and t
    backwards chunk v holds F_v(n) - B_v(t), F_v(n) = pp floor(n / pp vpp) + clip(n mod pp vpp
    - v pp, 0, pp), B_v(t) = F_{vpp-1-v}(t); warm-up W = 2 (pp - rank - 1) + (vpp - 1) pp."""
    w = min(2 * (pp - rank - 1) + (vpp - 1) * pp, m * vpp)
    if w == m * vpp:
        return {(float(m),) * vpp}
    v = np.arange(vpp)

    def f(n: int) -> np.ndarray:
        return pp * (n // (pp * vpp)) + np.clip(n % (pp * vpp) - v * pp, 0, pp)
    return {tuple(map(float, f(w + 1 + k) - f(k)[::-1])) for k in range(m * vpp - w)}


@pytest.mark.parametrize("pp, vpp, m", [(4, 2, 8), (4, 2, 16), (8, 4, 16), (8, 4, 24),
                                        (3, 5, 9), (16, 8, 32), (2, 3, 6), (6, 2, 30)])
def test_the_memory_models_in_flight_table_is_the_closed_form(pp, vpp, m):
    # pp divides m: the moments read from the op order (twin.compute.memory's table) are the
    # closed form's, every rank, and with m None (the pipeline full) one period of them
    for rank in range(pp):
        table = interleaved_chunks_in_flight(pp=pp, vpp=vpp, rank=rank, microbatches=m)
        assert {tuple(x) for x in table} == _closed_form_in_flight(pp, vpp, m, rank)
        full = interleaved_chunks_in_flight(pp=pp, vpp=vpp, rank=rank)
        assert {tuple(x) for x in full} == _closed_form_in_flight(pp, vpp, 8 * pp, rank)


@pytest.mark.parametrize("pp, vpp, m", [(4, 2, 6), (4, 3, 5), (2, 3, 3), (8, 4, 12),
                                        (8, 4, 15), (4, 2, 9), (6, 3, 4)])
def test_the_memory_model_counts_the_order_the_step_runs(pp, vpp, m):
    # pp not dividing m: the step runs the smallest group Megatron-core accepts
    # (schedule_microbatch_group; m < pp: the default, one group), and the memory model counts
    # that order's chunks in flight, not the default group's
    group = schedule_microbatch_group(pp, vpp, m)
    assert group == (megatron_microbatch_group(pp, vpp, m) if m >= pp else None)
    moved = False
    for rank in range(pp):
        rows = {}
        for g in (group, None):
            ops = interleaved_rank_order(pp, vpp, m, rank, g)
            first_b = next(j for j, op in enumerate(ops) if op[0] == 1)
            held = np.zeros(vpp)
            rows[g] = set()
            for j, (d, v, _) in enumerate(ops):
                held[v] += -1 if d else 1
                if d == 0 and j >= first_b - 1:
                    rows[g].add(tuple(held))
        table = interleaved_chunks_in_flight(pp=pp, vpp=vpp, rank=rank, microbatches=m)
        assert {tuple(x) for x in table} == rows[group]
        moved |= rows[group] != rows[None]
    assert moved == (m >= pp)  # m < pp: the same single group


def test_schedule_microbatch_group():
    # the default when pp divides m or m < pp, else Megatron-core's smallest accepted group
    assert schedule_microbatch_group(8, 4, 16) is None
    assert schedule_microbatch_group(8, 4, 5) is None
    assert schedule_microbatch_group(8, 4, 12) == 12
    assert schedule_microbatch_group(16, 2, 72) == 18
    assert schedule_microbatch_group(4, 2, 9) == 5  # 9 mod 5 = 4 >= pp
    assert schedule_microbatch_group(4, 1, 9) is None  # no groups without interleaving


def test_a_short_last_group_can_deadlock_and_megatrons_group_runs():
    # pp 8, vpp 4, m 12: rank 0's warm-up (38 forwards) needs micro-batch 9's chunk-1 input,
    # which the last rank computes after a backward that waits for rank 0's first backward
    with pytest.raises(ScheduleDeadlock):
        interleaved_program(8, 4, 12)
    assert megatron_microbatch_group(8, 4, 12) == 12
    assert megatron_microbatch_group(16, 2, 72) == 18
    assert megatron_microbatch_group(8, 4, 16) == 8
    assert megatron_microbatch_group(8, 4, 5) is None
    r = interleaved_schedule_s(8, 4, 12, fwd_s=np.ones((8, 4)), bwd_s=np.full((8, 4), 2.0),
                               group=12)
    assert r["step"] == pytest.approx(12 * 4 * 3.0 + 7 * 3.0, rel=1e-12)


def test_uneven_last_chunk_by_hand():
    # pp 2, vpp 2, m 2, forward 1 and backward 2 everywhere but rank 1's last chunk (the
    # output layer): 3 and 6.  Rank 0: F00 F01 F10 F11 (warm-up 2 + 2 = 4 = all), then its
    # backwards B1(0) B1(1) B0(0) B0(1); rank 1: F00 F01 then F10 B1(0) F11 B1(1) B0(0) B0(1).
    f = np.array([[1.0, 1.0], [1.0, 3.0]])
    b = 2.0 * f
    r = interleaved_schedule_s(2, 2, 2, fwd_s=f, bwd_s=b)
    # (rank, chunk, micro-batch) start-end: F(0,0,0) 0-1, F(0,0,1) 1-2; F(1,0,0) 1-2, F(1,0,1)
    # 2-3; F(0,1,0) 2-3 (input at 2), F(0,1,1) 3-4; F(1,1,0) 3-6, B(1,1,0) 6-12, F(1,1,1)
    # 12-15, B(1,1,1) 15-21; B(0,1,0) 12-14, B(0,1,1) 21-23; B(1,0,0) 21-23, B(1,0,1) 23-25;
    # B(0,0,0) 23-25, B(0,0,1) 25-27
    assert r["finish"].tolist() == [27.0, 25.0]
    assert r["step"] == 27.0
    assert r["busy"].tolist() == [12.0, 24.0]


durations = st.floats(min_value=0.01, max_value=10.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(pp=st.integers(2, 6), vpp=st.integers(1, 4), m=st.integers(1, 14), data=st.data())
def test_replay_is_a_longest_path(pp, vpp, m, data):
    f = np.array(data.draw(st.lists(durations, min_size=pp * vpp, max_size=pp * vpp)))
    b = np.array(data.draw(st.lists(durations, min_size=pp * vpp, max_size=pp * vpp)))
    try:
        interleaved_program(pp, vpp, m)
        group = None
    except ScheduleDeadlock:
        group = megatron_microbatch_group(pp, vpp, m)
    r = interleaved_schedule_s(pp, vpp, m, fwd_s=f, bwd_s=b, group=group)
    # bubble >= 0 and the makespan covers every rank's busy time
    assert np.all(r["finish"] >= r["busy"] * (1 - 1e-12))
    assert r["step"] >= r["busy"].max() * (1 - 1e-12)
    # non-decreasing in any chunk's forward or backward
    k = data.draw(st.integers(0, 2 * pp * vpp - 1))
    extra = data.draw(st.floats(min_value=0.0, max_value=5.0))
    f2, b2 = f.copy(), b.copy()
    (f2 if k < pp * vpp else b2)[k % (pp * vpp)] += extra
    r2 = interleaved_schedule_s(pp, vpp, m, fwd_s=f2, bwd_s=b2, group=group)
    assert r2["step"] >= r["step"] * (1 - 1e-12)
