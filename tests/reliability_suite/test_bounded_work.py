"""Issue 18, bounded work: absurd sizes are refused up front with a message naming the
input, not after minutes of work and gigabytes of memory."""

from __future__ import annotations

import time

import pytest

from twin.cli.estimate import MAX_ESTIMATE_GPUS, run_estimate_cli
from twin.scenario import load_scenario
from twin.scenario.bounds import MAX_EVENTS, event_estimate, memory_estimate_bytes

from .conftest import ROOT, SMALL

EST = ROOT / "scenarios" / "estimates" / "llama31_8b_bf16_8gpu.yaml"


@pytest.mark.parametrize("argv, needle", [
    (["step", str(EST), "--set", "cluster.gpus=1000000000", "--set", "training.global_batch=64000000000"],
     "cluster.gpus"),
    (["collective", "--op", "allreduce", "--bytes", "1e9", "--nodes", "1000000000"], "--nodes"),
    (["fabric-study", "--nodes", "1000000000"], "--nodes"),
])
def test_estimates_bound_their_inputs(argv, needle, capsys):
    """A 10^9-GPU estimate used to take two minutes and 12 GB before failing (or hang)."""
    t0 = time.monotonic()
    assert run_estimate_cli(argv) == 2
    assert time.monotonic() - t0 < 10
    err = capsys.readouterr().err
    assert needle in err and f"{MAX_ESTIMATE_GPUS:,}" in err


def test_event_estimate_scales_with_the_rate_and_names_the_storm():
    base = event_estimate(load_scenario(SMALL))
    x10 = event_estimate(load_scenario(SMALL, ["failures.rate_scale=10"]))
    assert x10["failures.rate_scale"] == pytest.approx(10 * base["failures.rate_scale"], rel=1e-12)
    assert sum(base.values()) < MAX_EVENTS / 100      # the shipped scenario is far from the ceiling


def test_a_cold_arrhenius_reference_is_named_as_the_storm():
    """A reference temperature far below the GPUs' makes the Arrhenius factor explode (0 C
    against a 100 C GPU at 3 eV is ~10^15x); the estimate names the reference as the cause."""
    from twin.errors import ScenarioError
    with pytest.raises(ScenarioError) as exc:
        load_scenario(SMALL, ["failures.arrhenius_reference_temp_c=0", "failures.activation_energy_ev=3"])
    assert exc.value.problems[0].path == "failures.arrhenius_reference_temp_c"
    assert "event storm" in exc.value.problems[0].expected


def test_memory_estimate_grows_with_samples_and_racks():
    a = sum(memory_estimate_bytes(load_scenario(SMALL)).values())
    b = sum(memory_estimate_bytes(load_scenario(SMALL, ["simulation.sample_interval_s=900"])).values())
    assert b > a
