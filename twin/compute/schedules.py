"""Pipeline schedules as op orders, and their makespan by replay.

Megatron's 1F1B and interleaved 1F1B schedules (Narayanan et al., "Efficient Large-Scale
Language Model Training on GPU Clusters Using Megatron-LM", SC21, sec. 2.2, Fig. 3-4; the
definition followed is Megatron-core's ``forward_backward_pipelining_without_interleaving`` and
``forward_backward_pipelining_with_interleaving`` with ``get_pp_rank_microbatches`` and
``get_schedule_table``, megatron/core/pipeline_parallel/schedules.py).  Written from those rules;
no code taken from them.

Each of the ``pp`` ranks holds ``vpp`` model chunks; rank ``r``'s chunk ``v`` is virtual stage
``v pp + r`` (layer order is chunk-major).  A rank runs ``m vpp`` forwards and as many backwards
in this order (:func:`interleaved_rank_ops`, :func:`interleaved_rank_order`):

* the forward table: micro-batches in groups of ``group`` (Megatron-core's
  ``microbatch_group_size_per_vp_stage``, default ``pp``): chunk 0 for the group's
  micro-batches, then chunk 1, ..., chunk ``vpp - 1``, then the next group; the last group is
  the ``m mod group`` micro-batches left when ``group`` does not divide ``m``.  Backward ``k``
  runs forward ``k``'s micro-batch on chunk ``vpp - 1 -`` its chunk;
* warm-up: ``W = 2 (pp - r - 1) + (vpp - 1) group`` forwards (interleaved) or ``pp - r - 1``
  (1F1B, ``vpp = 1``), at most ``m vpp``; then forward ``W + k`` and backward ``k`` for each
  steady step ``k``; then the remaining backwards (cool-down).

The replay (:func:`interleaved_schedule_s`) runs that order with a duration per (rank, chunk,
direction) and free sends: an op starts when its rank's previous op has ended and its input
has arrived.  The forward of virtual stage ``k`` for micro-batch ``i`` needs the forward of
stage ``k - 1`` for ``i``; the backward of stage ``k`` needs the backward of stage ``k + 1``
(the last stage's, its own forward).  The makespan is the longest path through that graph.

Megatron-core refuses a last group of 1 .. ``pp - 1`` micro-batches ("dependency bubbles")
and ``m`` below ``group``; with the default group such an order can deadlock under these
dependencies (pp 8, vpp 4, m 12: rank 0's warm-up needs a forward that the last rank runs
only after a backward that waits for rank 0).  :func:`interleaved_program` raises
:class:`ScheduleDeadlock` for those; the twin runs such a step in the smallest group
Megatron-core accepts (:func:`schedule_microbatch_group`, :func:`megatron_microbatch_group`).

The memory model counts each chunk's micro-batches in flight on this order with that group
(:func:`interleaved_in_flight`, read by :func:`twin.compute.memory.interleaved_chunks_in_flight`),
so the step and the memory model run one schedule.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np


class ScheduleDeadlock(RuntimeError):
    """The op order cannot run: some rank waits for an input that is computed only after
    an op it has not reached yet."""


def megatron_microbatch_group(pp: int, vpp: int, microbatches: int) -> int | None:
    """The smallest ``microbatch_group_size_per_vp_stage`` Megatron-core accepts for ``m``
    micro-batches on ``pp`` ranks [-]: at least ``pp``, at most ``m``, and a last group that is
    empty or at least ``pp`` (``forward_backward_pipelining_with_interleaving``'s checks).
    ``pp`` when it divides ``m`` (the default); None when no group qualifies (``m < pp``) or
    without interleaving (``vpp = 1`` has no groups)."""
    if vpp == 1:
        return None
    for n in range(pp, microbatches + 1):
        rest = microbatches % n
        if rest == 0 or rest >= pp:
            return n
    return None


def interleaved_rank_ops(pp: int, vpp: int, microbatches: int, rank: int,
                         group: int | None = None) -> np.ndarray:
    """The ops of pipeline rank ``rank`` in the order it runs them [-], shape ``(2 m vpp, 3)``:
    columns backward (0 or 1), chunk, micro-batch (module doc; the one definition of the order,
    :func:`interleaved_rank_order` as a list).  ``vpp = 1`` is 1F1B (warm-up ``pp - rank -
    1``); ``group`` None is ``pp``."""
    m = microbatches
    total = m * vpp
    n = np.arange(total)
    if vpp == 1:
        chunk, mb = np.zeros(total, dtype=np.int64), n
        warm = min(pp - rank - 1, total)
    else:
        # the forward table: groups of g micro-batches, chunk 0 for the group, then chunk 1, ...;
        # the last group the m mod g left (Megatron-core's get_schedule_table)
        g = pp if group is None else group
        full = m // g
        size = np.where(n < full * g * vpp, g, m - full * g)
        grp = n // (g * vpp)
        within = n - grp * g * vpp
        chunk, mb = within // size, grp * g + within % size
        warm = min(2 * (pp - rank - 1) + (vpp - 1) * g, total)
    # forward n runs at n in the warm-up and at 2 n - warm after it (a backward between two
    # steady forwards); backward k right after forward warm + k, at warm + 1 + 2 k, then the
    # cool-down's at total + k; it runs forward k's micro-batch on chunk vpp - 1 - its chunk
    fwd_at = np.maximum(n, 2 * n - warm)
    bwd_at = np.minimum(warm + 1 + 2 * n, total + n)
    ops = np.empty((2 * total, 3), dtype=np.int64)
    ops[fwd_at, 0] = 0
    ops[fwd_at, 1] = chunk
    ops[fwd_at, 2] = mb
    ops[bwd_at, 0] = 1
    ops[bwd_at, 1] = vpp - 1 - chunk
    ops[bwd_at, 2] = mb
    return ops


def interleaved_rank_order(pp: int, vpp: int, microbatches: int, rank: int,
                           group: int | None = None) -> list[tuple[int, int, int]]:
    """The ops of pipeline rank ``rank`` in the order it runs them, as ``(backward, chunk,
    micro-batch)`` (backward 0 or 1) (module doc; :func:`interleaved_rank_ops` as tuples).
    ``vpp = 1`` is 1F1B (warm-up ``pp - rank - 1``); ``group`` None is ``pp``."""
    return list(map(tuple, interleaved_rank_ops(pp, vpp, microbatches, rank, group).tolist()))


def schedule_microbatch_group(pp: int, vpp: int, microbatches: int) -> int | None:
    """The ``group`` the twin runs ``m`` micro-batches in [-] (:func:`interleaved_rank_order`'s
    argument; None is the default, ``pp``): the default when ``pp`` divides ``m``, else the
    smallest group Megatron-core accepts (:func:`megatron_microbatch_group`: the default's
    short last group of 1 .. ``pp - 1`` is refused, and its order can deadlock); ``m < pp``
    (none accepted): the default, one group of all ``m``.  One rule for the step model's bubble
    (:func:`twin.compute.step.interleaved_bubble_s`) and the memory model's micro-batches in
    flight (:func:`twin.compute.memory.interleaved_chunks_in_flight`)."""
    return megatron_microbatch_group(pp, vpp, microbatches) if microbatches % pp else None


def interleaved_in_flight(pp: int, vpp: int, microbatches: int, rank: int,
                          group: int | None = None) -> np.ndarray:
    """Micro-batches each chunk of rank ``rank`` holds after each forward of its order from the
    last before the first backward on [-], shape ``(moments, vpp)``: chunk ``v``'s forwards so
    far in :func:`interleaved_rank_order` minus its backwards (a forward keeps its activations
    until the backward of the same chunk and micro-batch frees them).  Those are the moments a
    rank's holdings can peak: the warm-up only adds, the cool-down only frees, and each steady
    step's forward comes before its backward.  Every moment of the order, in its order, repeats
    included; the order of every forward before any backward gives one row, ``m`` each."""
    ops = interleaved_rank_ops(pp, vpp, microbatches, rank, group)
    sign = np.zeros((len(ops), vpp), dtype=np.int64)
    sign[np.arange(len(ops)), ops[:, 1]] = 1 - 2 * ops[:, 0]
    held = np.cumsum(sign, axis=0)
    start = int(np.argmax(ops[:, 0])) - 1  # the forward before the first backward (m >= 1)
    fwd = np.flatnonzero(ops[start:, 0] == 0) + start
    return held[fwd]


@functools.lru_cache(maxsize=64)
def interleaved_program(pp: int, vpp: int, microbatches: int,
                        group: int | None = None) -> tuple[Any, ...]:
    """The op graph of the schedule (:func:`interleaved_rank_order` on every rank); it does
    not depend on durations (cached per ``(pp, vpp, m, group)``).

    Returns ``(prog, n, last)``: ``prog`` the ``n = 2 m vpp pp`` ops in a topological order,
    each as ``(position, predecessor on its rank, input, key)`` with positions in that order
    (``n``, a slot that stays 0, for a rank's first op or an op without input) and ``key = (d
    pp + r) vpp + v`` (direction ``d``, 0 forward, 1 backward; rank ``r``; chunk ``v``);
    ``last`` each rank's last op.  Raises :class:`ScheduleDeadlock` when the order cannot run.
    """
    m = microbatches
    n = 2 * pp * vpp * m

    def oid(d: int, r: int, v: int, i: int) -> int:
        return ((d * pp + r) * vpp + v) * m + i

    seqs = [[oid(d, rank, v, i) for d, v, i in interleaved_rank_order(pp, vpp, m, rank, group)]
            for rank in range(pp)]
    # the input of every op (-1: none): forward from the previous virtual stage, backward from
    # the next one, the last stage's backward from its own forward
    dep = np.full((2, pp, vpp, m), -1, dtype=np.int64)
    ids = np.arange(n, dtype=np.int64).reshape(2, pp, vpp, m)
    dep[0, 1:] = ids[0, :-1]
    dep[0, 0, 1:] = ids[0, -1, :-1]
    dep[1, :-1] = ids[1, 1:]
    dep[1, -1, :-1] = ids[1, 0, 1:]
    dep[1, -1, -1] = ids[0, -1, -1]
    inp = dep.ravel().tolist()
    pos = [-1] * n
    heads = [0] * pp
    prog: list[tuple[int, int, int, int]] = []
    done = 0
    while done < n:
        moved = False
        for r in range(pp):
            s = seqs[r]
            h = heads[r]
            prev = pos[s[h - 1]] if h else n
            while h < len(s):
                o = s[h]
                x = inp[o]
                if x >= 0 and pos[x] < 0:
                    break
                pos[o] = done
                prog.append((done, prev, pos[x] if x >= 0 else n, o // m))
                prev = done
                done += 1
                h += 1
                moved = True
            heads[r] = h
        if not moved:
            raise ScheduleDeadlock(
                f"interleaved schedule pp={pp}, vpp={vpp}, m={m}, group={group or pp} deadlocks")
    return tuple(prog), n, tuple(pos[s[-1]] for s in seqs)


def interleaved_schedule_s(pp: int, vpp: int, microbatches: int, *, fwd_s: Any, bwd_s: Any,
                           group: int | None = None) -> dict[str, Any]:
    """Makespan [s] of the (interleaved) 1F1B op order with per-chunk durations, free sends.

    fwd_s, bwd_s: ``(pp, vpp)`` forward and backward time of rank ``r``'s chunk ``v`` for one
    micro-batch [s].  The replay of :func:`interleaved_program`::

        end(op) = max(end(previous op on its rank), end(its input)) + duration(op)

    Returns ``step`` (the latest rank's finish), per rank ``finish`` and ``busy`` (``m`` times
    its chunks' forward + backward) [s].  Cost: the graph once per ``(pp, vpp, m, group)``, then
    one pass over its ``2 m vpp pp`` ops (pp 16, vpp 8, m 16: 4,096 ops, about 0.3 ms on a
    shared core).  Equal chunks (``f``, ``b``) and ``group`` dividing ``m``: ``step = m vpp (f +
    b) + (pp - 1)(f + b)``, the bubble ``(pp - 1)/vpp`` of a stage's time per micro-batch (SC21
    sec. 2.2.2).
    """
    prog, n, last = interleaved_program(int(pp), int(vpp), int(microbatches), group)
    f = np.asarray(fwd_s, dtype=float).reshape(pp, vpp)
    b = np.asarray(bwd_s, dtype=float).reshape(pp, vpp)
    dur = np.concatenate([f.ravel(), b.ravel()]).tolist()
    end = [0.0] * (n + 1)
    for i, p, x, k in prog:  # inline compare: faster than max()
        t = end[p]
        a = end[x]
        end[i] = (t if t > a else a) + dur[k]
    finish = np.array([end[j] for j in last])
    return {"step": float(finish.max()), "finish": finish,
            "busy": microbatches * (f.sum(axis=1) + b.sum(axis=1))}
