"""Mixture of experts, second public source (issue 16, helper HU): Megatron-core's Mixtral 8x7B
and 8x22B throughputs on DGX H100 (assets/reference/step_times_moe2.csv, sources in
step_times_moe2_sources.md), every row held out: the transcription, each row's error, the set's
mean and worst against issue 16's step goals."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "step_times_moe2", ROOT / "assets/reference/step_times_moe2.py")
assert _spec is not None and _spec.loader is not None
moe2 = importlib.util.module_from_spec(_spec)
sys.modules["step_times_moe2"] = moe2
_spec.loader.exec_module(moe2)

#: Twin error of every row [%] (twin / measured - 1), as run at the commit that added this file;
#: pinned to 0.5 points.  The goal rows are scored against issue 16's step goals below; the
#: blockwise-FP8 row is left out of them (a recipe the twin has no term for) and pinned so that
#: a change to it shows.
PINNED = {
    "mixtral_8x7b/mcore_v0.9": -4.7,
    "mixtral_8x7b/mcore_v0.8": -10.8,
    "mixtral_8x22b/dropless": -6.0,
    "mixtral_8x22b/forced_balance": -1.8,
    "mixtral_8x22b/token_drop_cf1": -0.8,
    "mixtral_8x22b/fp8_blockwise": -12.6,
}


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
    # issue 16's step goals (mean <= 3 %, worst <= 8 %) do NOT hold on this set: measured
    # mean 4.8 %, worst 10.8 % (Mixtral 8x7B on MCore v0.8, PyTorch 24.04: older software than
    # the NeMo 24.09-24.11 rows the kernel table is fitted on).  The rows with balanced routing
    # (forced balance, capacity-padded token drop) are within 2 %; the dropless rows are 5-11 %
    # fast: the twin has no term for the routing imbalance of dropless training, which the same
    # source measures at 465 / 445 = 1.045 on 8x22B.
    assert err.mean() == pytest.approx(0.048, abs=0.005)
    assert err.max() == pytest.approx(0.108, abs=0.005)
    assert not (err.mean() <= moe2.GOAL_MEAN and err.max() <= moe2.GOAL_WORST)
    balanced = [abs(e) for k, e in moe2.goal_errors().items()
                if k.endswith(("forced_balance", "token_drop_cf1"))]
    assert max(balanced) <= 0.02


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
