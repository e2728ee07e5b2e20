"""Mixture of experts, second public source (issue 16, helper HU): Megatron-core's Mixtral 8x7B
and 8x22B throughputs on DGX H100 (assets/reference/step_times_moe2.csv, sources in
step_times_moe2_sources.md), every row held out: the transcription, each row's error, the set's
mean and worst against issue 16's step goals."""

import numpy as np
import pytest
from reference_scripts import reference_script

from twin.compute.step import MOE_DROPLESS_BUSIEST_LOAD

moe2 = reference_script("step_times_moe2")

#: Twin error of every row [%] (twin / measured - 1) with the dropless-routing term (HU2);
#: pinned to 0.5 points.  The goal rows are scored against issue 16's step goals below; the
#: blockwise-FP8 row is left out of them (a recipe the twin has no term for) and pinned so that
#: a change to it shows.  The 8x22B dropless row is the fit row of the term (its error equals
#: the forced-balance row's by construction); the 8x7B rows are held out.  Re-pinned after the
#: H100 table's refit of 2026-12-01 (every row 0.05-0.09 points lower; were -0.7, -7.1, -1.8,
#: -1.8, -0.8, -12.6 and without the term -4.7, -10.8, -6.0).
PINNED = {
    "mixtral_8x7b/mcore_v0.9": -0.77,
    "mixtral_8x7b/mcore_v0.8": -7.13,
    "mixtral_8x22b/dropless": -1.91,
    "mixtral_8x22b/forced_balance": -1.91,
    "mixtral_8x22b/token_drop_cf1": -0.85,
    "mixtral_8x22b/fp8_blockwise": -12.69,
}
#: The same without the term (every row as balanced routing; HU's figures, e43eda3).
PINNED_WITHOUT_TERM = dict(PINNED, **{"mixtral_8x7b/mcore_v0.9": -4.76,
                                      "mixtral_8x7b/mcore_v0.8": -10.87,
                                      "mixtral_8x22b/dropless": -6.12})


def _rows():
    return {f"{r['model']}/{r['row']}": r for r in moe2.rows()}


def test_transcription():
    rows = _rows()
    assert set(rows) == set(PINNED)
    # the published figures, as the sources print them (TFLOP/s per GPU, rounded)
    assert {k: int(r["tflops_per_gpu"]) for k, r in rows.items()} == {
        "mixtral_8x7b/mcore_v0.9": 468, "mixtral_8x7b/mcore_v0.8": 438,
        "mixtral_8x22b/dropless": 445, "mixtral_8x22b/forced_balance": 465,
        "mixtral_8x22b/token_drop_cf1": 470, "mixtral_8x22b/fp8_blockwise": 560}
    # layouts: Megatron-LM MoE README table (64 GPUs, TP1 EP8 PP4 VP8, MBS 1, GBS 256) and the
    # model zoo's runtime.conf (16 nodes, TP2 PP8 EP8 VPP7, MBS 1, GBS 256) with ETP 1
    for k, r in rows.items():
        lay = tuple(int(r[c]) for c in ("gpus", "tp", "pp", "cp", "vpp", "ep", "micro_batch",
                                        "global_batch", "seq_len", "layers"))
        if k.startswith("mixtral_8x7b"):
            assert lay == (64, 1, 4, 1, 8, 8, 1, 256, 4096, 32) and r["etp"] == ""
            assert r["flops_formula"] == "full" and r["nvls"] == "1"
        else:
            assert lay == (128, 2, 8, 1, 7, 8, 1, 256, 4096, 56) and r["etp"] == "1"
            assert r["flops_formula"] == "causal" and r["nvls"] == "0"
        assert r["source"].split("@")[0] in ("NVIDIA/Megatron-LM", "yanring/Megatron-MoE-ModelZoo")
    # step_time_s is the conversion of the published throughput (4 decimals)
    for r in rows.values():
        assert float(r["step_time_s"]) == pytest.approx(moe2.measured_step_s(r), abs=6e-5)
    # Megatron's FLOPs by hand, Mixtral 8x7B, full attention term: per sequence
    # 4096 (12 32 4096^2 (1 + 8/32 + 1) + 18 2 32 14336 4096 + 6 32000 4096)
    r = rows["mixtral_8x7b/mcore_v0.9"]
    by_hand = 4096 * (12 * 32 * 4096**2 * 2.25 + 18 * 2 * 32 * 14336 * 4096 + 6 * 32000 * 4096)
    assert moe2.megatron_flops_per_sequence(r) == pytest.approx(by_hand, rel=1e-12)
    assert moe2.measured_step_s(r) == pytest.approx(256 * by_hand / (64 * 468e12), rel=1e-12)
    # the causal formula halves only the score term: 3.4 % fewer FLOPs for 8x22B
    r22 = dict(rows["mixtral_8x22b/forced_balance"])
    causal = moe2.megatron_flops_per_sequence(r22)
    full = moe2.megatron_flops_per_sequence(dict(r22, flops_formula="full"))
    assert full - causal == pytest.approx(4096 * 12 * 56 * 6144**2 * 0.5 * 4096 / 6144, rel=1e-12)


def test_each_row_error_pinned():
    got = {k: 100.0 * moe2.error(r) for k, r in _rows().items()}
    for k, want in PINNED.items():
        assert got[k] == pytest.approx(want, abs=0.5), (k, got[k])


def test_goal_set_mean_and_worst():
    err = np.abs(np.array(list(moe2.goal_errors().values())))
    assert err.size == 5
    # issue 16's step goals (mean <= 3 %, worst <= 8 %) hold on this set with the dropless
    # term: mean 2.5 %, worst 7.1 % (Mixtral 8x7B on MCore v0.8, PyTorch 24.04: older software
    # than the NeMo 24.09-24.11 rows the kernel table is fitted on; the same layout ran 6.8 %
    # faster on v0.9)
    assert err.mean() == pytest.approx(0.025, abs=0.005)
    assert err.max() == pytest.approx(0.071, abs=0.005)
    assert err.mean() <= moe2.GOAL_MEAN and err.max() <= moe2.GOAL_WORST
    # the decision rule's held-out rows (all but the fit row): mean 2.7 %, worst 7.1 %
    held = np.abs([e for k, e in moe2.goal_errors().items() if k != moe2.FIT_PAIR[0]])
    assert held.size == 4
    assert held.mean() == pytest.approx(0.027, abs=0.005) and held.max() <= moe2.GOAL_WORST
    balanced = [abs(e) for k, e in moe2.goal_errors().items()
                if k.endswith(("forced_balance", "token_drop_cf1"))]
    assert max(balanced) <= 0.02


def test_dropless_term_fit_and_what_it_moves():
    # fitted once on the 8x22B dropless / forced-balance pair: the twin's step ratio equals
    # the measured 465 / 445; the constant in the twin is that fit (to its 4 digits), inside
    # the decision rule's plausible range [1.0, 1.5]
    f = moe2.fit_dropless_load()
    assert f == pytest.approx(MOE_DROPLESS_BUSIEST_LOAD, abs=5e-4)
    assert MOE_DROPLESS_BUSIEST_LOAD == pytest.approx(1.0341, abs=5e-5)
    assert 1.0 <= f <= 1.5
    rows = _rows()
    drop, bal = (rows[k] for k in moe2.FIT_PAIR)
    assert moe2.twin_step_s(drop) / moe2.twin_step_s(bal) == pytest.approx(465 / 445, rel=1e-3)
    # routing as the recipes run it: only the dropless rows get the term
    assert {k: moe2.kwargs(r)["moe_routing"] for k, r in rows.items()} == {
        "mixtral_8x7b/mcore_v0.9": "dropless", "mixtral_8x7b/mcore_v0.8": "dropless",
        "mixtral_8x22b/dropless": "dropless", "mixtral_8x22b/forced_balance": "capacity",
        "mixtral_8x22b/token_drop_cf1": "capacity", "mixtral_8x22b/fp8_blockwise": "capacity"}
    # with the term off (busiest rank at its even share) every row is HU's figure again and
    # the goals fail (4.8 % / 10.8 %)
    off = {k: 100.0 * (moe2.step_estimate(**moe2.kwargs(r, dropless_load=1.0)).step_time_s
                       / moe2.measured_step_s(r) - 1.0) for k, r in rows.items()}
    for k, want in PINNED_WITHOUT_TERM.items():
        assert off[k] == pytest.approx(want, abs=0.5), (k, off[k])
    err_off = np.abs([off[k] / 100.0 for k, r in rows.items() if r["role"] == "goal"])
    assert err_off.max() > moe2.GOAL_WORST


def test_dropless_fit_sits_on_a_wave_quantisation_step():
    # the twin's 8x22B dropless / balanced ratio is a sawtooth in f: the busiest rank's expert
    # GEMMs of N = h = 6,144 (24 tile columns) and M = 4,096 f go from 6 to 7 waves of 132 SMs
    # once M passes 33 x 128 (f = 33/32); 8x7B's (N = 4,096, M = 8,192 f) step at the same f.
    # The fit lands 0.3 % above that step (ratio 1.043 .. 1.067 on the segment after it); an
    # earlier figure pair of the same file (31942f0, same day: 455 / 445 = 1.022) falls in the
    # jump and has no solution: the held-out verdict rests on the twin's wave quantisation
    rows = _rows()
    drop, bal = (rows[k] for k in moe2.FIT_PAIR)
    t_bal = moe2.twin_step_s(bal)

    def ratio(r, f):
        return moe2.step_estimate(**moe2.kwargs(r, dropless_load=f)).step_time_s

    below, above = 33 / 32 - 1e-6, 33 / 32 + 1e-6
    assert ratio(drop, below) / t_bal == pytest.approx(1.0093, abs=5e-4)
    assert ratio(drop, above) / t_bal == pytest.approx(1.0427, abs=5e-4)
    assert ratio(drop, below) / t_bal < 455 / 445 < ratio(drop, above) / t_bal
    assert 33 / 32 < MOE_DROPLESS_BUSIEST_LOAD < 1.0625
    r7 = rows["mixtral_8x7b/mcore_v0.9"]
    base7 = ratio(r7, 1.0)
    assert ratio(r7, above) / base7 - ratio(r7, below) / base7 > 0.025


def test_expert_tensor_parallelism_is_what_places_8x22b():
    # the 8x22B runs set --expert-tensor-parallel-size 1: EP8 is 8 adjacent ranks, one node.
    # Without the term the twin strides the EP ranks by TP = 2 (two nodes), its all-to-alls
    # cross the NICs and the step comes out ~16 % slow instead of ~2 % fast
    r = _rows()["mixtral_8x22b/forced_balance"]
    kw = moe2.kwargs(r)
    with_etp = moe2.step_estimate(**kw)
    without = moe2.step_estimate(**dict(kw, moe_expert_tp=None))
    assert without.breakdown["moe_a2a_exposed"] > 4.0 * with_etp.breakdown["moe_a2a_exposed"]
    assert without.step_time_s / moe2.measured_step_s(r) - 1.0 > 0.12
