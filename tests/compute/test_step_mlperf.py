"""MLPerf Training GPT-3 175B step times on 512 to 11,616 H100, all held out (issue 16):
assets/reference/step_times_mlperf.{csv,py}, sources in step_times_mlperf_sources.md."""

from __future__ import annotations

import re

import numpy as np
import pytest
from reference_scripts import reference_script

ht = reference_script("step_times_mlperf")

PP = 0.005  # 0.5 percentage points

#: twin / measured - 1 per configuration, measured on 1 Dec 2026 with twin/compute/step.py as
#: of commit 6ab82c1 (kernel table fitted on the NeMo dgxc rows only), re-pinned after the
#: H100 table's refit of 1 Dec 2026 (0.7050 / 0.5587 / 0.7020 / 0.0517 -> 0.7020 / 0.5565 /
#: 0.6950 / 0.0496: every row 0.2-0.3 points lower).  Re-pin here when the step model changes.
PINNED: dict[str, float] = {
    "v3.0_nvidia_n64": -0.0325,
    "v3.0_nvidia_n96": -0.0321,
    "v3.0_coreweave_n96": -0.0461,
    "v3.0_coreweave_n192": -0.0523,
    "v3.0_coreweave_n448": -0.0776,
    "v3.1_nvidia_n64": +0.0572,
    "v3.1_nvidia_n96": +0.0598,
    "v3.1_nvidia_n512": +0.0364,
    "v3.1_nvidia_n768": +0.0366,
    "v3.1_nvidia_n1024": +0.0375,
    "v3.1_nvidia_n1280": +0.0209,
    "v3.1_nvidia_n1344": +0.0172,
    "v3.1_azure_n1344": -0.0024,
    "v4.0_nvidia_n64": +0.1609,
    "v4.0_nvidia_n1344": -0.0192,
    "v4.0_nvidia_n1452": -0.0190,
    "v4.0_smc_n64": +0.0528,
    "v4.1_nvidia_n32": +0.2065,
    "v4.1_nvidia_n64": +0.1770,
    "v4.1_oracle_n192": +0.1210,
    "v4.1_oracle_n384": -0.0765,
}


@pytest.fixture(scope="module")
def errors() -> dict[str, float]:
    return {r["config"]: ht.error(r) for r in ht.rows()}


def test_each_rows_error_is_pinned(errors):
    assert set(errors) == set(PINNED)
    for name, e in errors.items():
        assert e == pytest.approx(PINNED[name], abs=PP), name


def test_the_goals_hold_from_4096_gpus_and_not_over_all_rows(errors):
    rows = {r["config"]: r for r in ht.rows()}
    a = np.abs(list(errors.values()))
    # all 21: issue 16's goals (mean <= 3 %, worst <= 8 %) NOT met; measured 6.39 % and
    # 20.7 % (v4.1 NVIDIA on 256 GPUs: the tuned MLPerf runs of 2024 on 256-512 GPUs are
    # 16-21 % faster than the twin, see the sources file); these pin what is measured
    assert a.mean() == pytest.approx(0.0639, abs=PP / 5)
    assert a.max() == pytest.approx(0.2065, abs=PP)
    assert a.mean() > 0.03 and a.max() > 0.08
    # the eight runs on 4,096 to 11,616 GPUs meet both goals: mean 2.37 %, worst 3.75 %
    big = np.abs([e for k, e in errors.items() if int(rows[k]["gpus"]) >= 4096])
    assert len(big) == 8
    assert big.mean() <= 0.03 and big.max() <= 0.08
    assert big.mean() == pytest.approx(0.0237, abs=PP / 5)


def test_transcription():
    rows = ht.rows()
    assert len(rows) == 21
    assert {r["round"] for r in rows} == {"v3.0", "v3.1", "v4.0", "v4.1"}
    assert all(r["role"] == "validate" for r in rows)
    by = {r["config"]: r for r in rows}
    # spot values, each the mean over the run's result files (see the sources file)
    r = by["v3.1_nvidia_n1344"]
    assert (int(r["gpus"]), int(r["global_batch"]), int(r["grad_accum"])) == (10752, 2688, 8)
    assert float(r["step_time_s"]) == pytest.approx(0.9296, abs=1e-4)
    assert r["measure"] == "train_step_timing" and int(r["runs"]) == 3
    r = by["v4.0_nvidia_n1452"]
    assert (int(r["gpus"]), int(r["global_batch"]), r["pp"], r["vpp"]) == (11616, 2904, "6", "8")
    assert float(r["step_time_s"]) == pytest.approx(0.9218, abs=1e-4)
    assert r["measure"] == "block" and (r["param_bytes"], r["tp_rs_fp8"]) == ("1", "1")
    assert float(by["v3.0_nvidia_n64"]["step_time_s"]) == pytest.approx(12.0766, abs=1e-4)
    r = by["v4.1_oracle_n384"]
    assert (int(r["gpus"]), int(r["global_batch"]), r["micro_batch"], r["vpp"]) == (3072, 3072, "2", "4")
    assert (r["transport"], r["nics"]) == ("roce", "16")
    assert float(r["step_time_s"]) == pytest.approx(3.3408, abs=1e-4)
    assert sum(r["transport"] == "roce" for r in rows) == 2
    for r in rows:
        # the printed batch is the layout's: GBS = accumulation x micro-batch x DP
        dp = int(r["gpus"]) // (int(r["tp"]) * int(r["pp"]) * int(r["cp"]))
        assert int(r["global_batch"]) == int(r["grad_accum"]) * int(r["micro_batch"]) * dp
        assert float(r["run_min_s"]) <= float(r["step_time_s"]) <= float(r["run_max_s"])
        assert float(r["spread_pct"]) < 2.0
        for col in ("log_source", "config_source"):
            assert re.search(r"mlcommons/training_results_v\d\.\d:.+@[0-9a-f]{40}#L\d+",
                             r[col]), (r["config"], col)


def test_derivation_reads_the_per_step_timer_after_the_first_eval_interval():
    def line(key, value=None, t=0, **meta):
        import json
        return ":::MLLOG " + json.dumps(dict(key=key, value=value, time_ms=t, metadata=meta))
    log = [line("global_batch_size", 12288)]  # 2 steps per eval interval of 24,576
    log += [line("tracked_stats", {"train_step_timing": x}) for x in (9.0, 5.0, 1.0, 1.2, 1.1)]
    log += [line("block_start", t=0, epoch_count=2 * 12288 * 2048),
            line("block_stop", t=4000)]
    log += [line("block_start", t=5000, epoch_count=2 * 12288 * 2048),
            line("block_stop", t=7000)] * 2
    out = ht.derive_step_s(log)
    assert out["train_step_timing"] == pytest.approx(1.1)  # median of 1.0, 1.2, 1.1
    assert out["block"] == pytest.approx(1.0)  # first block (2.0 s per step) skipped


#: What-if (helper HT2, no twin change): one multiplier per MLPerf round on H100_SXM's gemm,
#: gemm_fp8, attention_fwd and attention_bwd, fitted by log least squares on each round's
#: smallest-GPU rows; beside it one multiplier for all rounds on the same rows.  Rule fixed
#: before the fit (step_times_mlperf_sources.md); measured 1 Dec 2026 on the twin of commit
#: a015d03, re-pinned after the H100 table's refit of 1 Dec 2026 (multipliers were 0.9651,
#: 1.0685, 1.1208, 1.2360, one 1.1017; held out 4.33 / 23.48 %, one multiplier 7.22 /
#: 15.23 %), and again after HIR's (the interleaved bubble replayed; multipliers were 0.9630,
#: 1.0661, 1.1185, 1.2337, one 1.0993; held out 4.40 / 23.51 %, one multiplier 7.29 / 15.25 %).
#: Errors = twin / measured - 1 on the 16 held-out rows; summaries = (mean, worst)
#: |error| of the held-out rows of each round and of all 16.
PER_RELEASE: dict = {
    "fit": ["v3.0_nvidia_n64", "v3.1_nvidia_n64", "v4.0_nvidia_n64", "v4.0_smc_n64",
            "v4.1_nvidia_n32"],
    "m_round": {"v3.0": 0.9636, "v3.1": 1.0668, "v4.0": 1.1190, "v4.1": 1.2339},
    "m_one": 1.0997,
    "errors_round": {
        "v3.0_nvidia_n96": +0.0005, "v3.0_coreweave_n96": -0.0140,
        "v3.0_coreweave_n192": -0.0210, "v3.0_coreweave_n448": -0.0491,
        "v3.1_nvidia_n96": +0.0025, "v3.1_nvidia_n512": -0.0111, "v3.1_nvidia_n768": -0.0109,
        "v3.1_nvidia_n1024": -0.0100, "v3.1_nvidia_n1280": -0.0183,
        "v3.1_nvidia_n1344": -0.0219, "v3.1_azure_n1344": -0.0407, "v4.0_nvidia_n1344": -0.0836,
        "v4.0_nvidia_n1452": -0.0834, "v4.1_nvidia_n64": -0.0248, "v4.1_oracle_n192": -0.0727,
        "v4.1_oracle_n384": -0.2371,
    },
    "errors_one": {
        "v3.0_nvidia_n96": -0.1078, "v3.0_coreweave_n96": -0.1207,
        "v3.0_coreweave_n192": -0.1246, "v3.0_coreweave_n448": -0.1427,
        "v3.1_nvidia_n96": -0.0230, "v3.1_nvidia_n512": -0.0325, "v3.1_nvidia_n768": -0.0322,
        "v3.1_nvidia_n1024": -0.0314, "v3.1_nvidia_n1280": -0.0360,
        "v3.1_nvidia_n1344": -0.0396, "v3.1_azure_n1344": -0.0580, "v4.0_nvidia_n1344": -0.0739,
        "v4.0_nvidia_n1452": -0.0737, "v4.1_nvidia_n64": +0.0801, "v4.1_oracle_n192": +0.0274,
        "v4.1_oracle_n384": -0.1548,
    },
    "summary_round": {"v3.0": (0.0211, 0.0491), "v3.1": (0.0165, 0.0407),
                      "v4.0": (0.0835, 0.0836), "v4.1": (0.1115, 0.2371),
                      "held-out": (0.0438, 0.2371)},
    "summary_one": {"v3.0": (0.1239, 0.1427), "v3.1": (0.0361, 0.0580),
                    "v4.0": (0.0738, 0.0739), "v4.1": (0.0875, 0.1548),
                    "held-out": (0.0724, 0.1548)},
}


@pytest.fixture(scope="module")
def what_if() -> dict:
    return ht.per_release()


def test_per_release_what_if_is_pinned(what_if):
    w, p = what_if, PER_RELEASE
    assert w["fit"] == p["fit"] and len(w["held_out"]) == 16
    assert set(w["held_out"]) == set(p["errors_round"]) == set(p["errors_one"])
    for rd, m in p["m_round"].items():
        assert w["m_round"][rd] == pytest.approx(m, abs=0.002), rd
    assert w["m_one"] == pytest.approx(p["m_one"], abs=0.002)
    for key in ("errors_round", "errors_one"):
        for name, e in p[key].items():
            assert w[key][name] == pytest.approx(e, abs=PP), (key, name)
    for key in ("summary_round", "summary_one"):
        for group, (mean, worst) in p[key].items():
            assert w[key][group][0] == pytest.approx(mean, abs=PP / 5), (key, group)
            assert w[key][group][1] == pytest.approx(worst, abs=PP), (key, group)


def test_per_release_what_if_fails_its_rule(what_if):
    w = what_if
    m = [w["m_round"][rd] for rd in ht.ROUNDS]
    # the multipliers order with the release dates (rule 2a holds) ...
    assert all(b >= a - 0.01 for a, b in zip(m[:-1], m[1:], strict=True))
    # ... but v4.1's 1.234 is above the 1.15 that cuBLAS FP8 GEMMs reach (rule 2b fails),
    # and the held-out goals fail: worst 23.5 % (Oracle RoCE, 3,072 GPUs), mean 4.4 %
    assert not all(0.85 <= x <= 1.15 for x in m)
    mean, worst = w["summary_round"]["held-out"]
    assert mean > 0.03 and worst > 0.08
    # one multiplier for all rounds (1.10, plausible) fails further: 7.3 % / 15.3 %
    mean, worst = w["summary_one"]["held-out"]
    assert 0.85 <= w["m_one"] <= 1.15 and mean > 0.03 and worst > 0.08


def test_a_kernel_multiplier_is_a_clock():
    # the twin's clock_fraction scales the same compute-bound kernels as the multiplier:
    # a per-round clock (vboost) and a per-round kernel efficiency are one parameter
    from twin.compute import H100_SXM, step_estimate
    for r in ht.rows()[::5]:
        clocked = step_estimate(**ht.kwargs(r), kernel_efficiency=H100_SXM,
                                clock_fraction=0.93).step_time_s
        assert ht.twin_step_s(r, 0.93) == pytest.approx(clocked, rel=1e-12), r["config"]
        assert ht.twin_step_s(r, 0.93) > ht.twin_step_s(r) * 1.01


def test_scaled_table_touches_only_the_compute_kernels():
    from dataclasses import asdict

    from twin.compute import H100_SXM
    scaled, base = asdict(ht.scaled_table(1.2)), asdict(H100_SXM)
    changed = {k for k in base if scaled[k] != base[k]}
    assert changed == set(ht.SCALED_FIELDS) == {"gemm", "gemm_fp8", "attention_fwd",
                                               "attention_bwd"}
    assert scaled["gemm_fp8"] == pytest.approx(1.2 * base["gemm_fp8"])
