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
#: of commit 6ab82c1 (kernel table fitted on the NeMo dgxc rows only).  Re-pin here when the
#: step model changes.
PINNED: dict[str, float] = {
    "v3.0_nvidia_n64": -0.0306,
    "v3.0_nvidia_n96": -0.0301,
    "v3.0_coreweave_n96": -0.0441,
    "v3.0_coreweave_n192": -0.0501,
    "v3.0_coreweave_n448": -0.0752,
    "v3.1_nvidia_n64": +0.0593,
    "v3.1_nvidia_n96": +0.0620,
    "v3.1_nvidia_n512": +0.0390,
    "v3.1_nvidia_n768": +0.0394,
    "v3.1_nvidia_n1024": +0.0403,
    "v3.1_nvidia_n1280": +0.0236,
    "v3.1_nvidia_n1344": +0.0198,
    "v3.1_azure_n1344": +0.0003,
    "v4.0_nvidia_n64": +0.1631,
    "v4.0_nvidia_n1344": -0.0165,
    "v4.0_nvidia_n1452": -0.0163,
    "v4.0_smc_n64": +0.0548,
    "v4.1_nvidia_n32": +0.2085,
    "v4.1_nvidia_n64": +0.1792,
    "v4.1_oracle_n192": +0.1234,
    "v4.1_oracle_n384": -0.0746,
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
    # all 21: issue 16's goals (mean <= 3 %, worst <= 8 %) NOT met; measured 6.43 % and
    # 20.9 % (v4.1 NVIDIA on 256 GPUs: the tuned MLPerf runs of 2024 on 256-512 GPUs are
    # 16-21 % faster than the twin, see the sources file); these pin what is measured
    assert a.mean() == pytest.approx(0.0643, abs=PP / 5)
    assert a.max() == pytest.approx(0.2085, abs=PP)
    assert a.mean() > 0.03 and a.max() > 0.08
    # the eight runs on 4,096 to 11,616 GPUs meet both goals: mean 2.44 %, worst 4.03 %
    big = np.abs([e for k, e in errors.items() if int(rows[k]["gpus"]) >= 4096])
    assert len(big) == 8
    assert big.mean() <= 0.03 and big.max() <= 0.08
    assert big.mean() == pytest.approx(0.0244, abs=PP / 5)


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
