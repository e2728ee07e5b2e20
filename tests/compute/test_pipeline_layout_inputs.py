"""``parallelism.pipeline_layout`` of an estimate file: from the file (and ``--set``) through
:class:`twin.compute.specs.ParallelSpec` into :func:`twin.compute.step_estimate` and
:func:`twin.compute.memory.memory_per_gpu_bytes`, its checks, and ``twin estimate step``.

The job is scenarios/estimates/llama31_70b_bf16_64gpu.yaml (80 layers, tp 4, pp 4, cp 2) at
vpp 1: 20 layers a rank.  ``E,t*21|t*20|t*20|t*19,L`` moves a layer from the last rank, which
also holds the output layer and the loss, to the first, which holds the embedding.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import fields
from pathlib import Path

import pytest

import twin.compute.specs as specs
from twin.cli.estimate import _parser, run_estimate_cli
from twin.compute import step_estimate
from twin.compute.estimate_file import (
    EstimateFile,
    EstimateFileError,
    Parallelism,
    apply_overrides,
    estimate_from_file,
    job_specs,
    load_estimate,
    memory_from_file,
)
from twin.compute.memory import memory_per_gpu_bytes
from twin.scenario.loader import parse_override

ROOT = Path(__file__).resolve().parents[2]
EST = ROOT / "scenarios" / "estimates"
F70 = EST / "llama31_70b_bf16_64gpu.yaml"
F405 = EST / "llama3_405b_bf16_16k_roce.yaml"
FDS3 = EST / "deepseek_v3_fp8_2048gpu.yaml"
VPP1 = ["parallelism.vpp=1"]
MOVED = "E,t*21|t*20|t*20|t*19,L"
META_405B = "E|(t|)*126,L"


def _cli(path: Path, sets: list[str]) -> tuple[int, dict | None, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_estimate_cli(["step", str(path), "--json"] + [a for s in sets for a in ("--set", s)])
    return rc, (json.loads(out.getvalue()) if rc == 0 else None), err.getvalue()


@pytest.fixture
def spy(monkeypatch) -> dict:
    """The keyword arguments the spec builders pass to the step and memory models."""
    seen: dict = {}

    def record(name, fn):
        def wrapped(**kw):
            seen[name] = kw
            return fn(**kw)
        monkeypatch.setattr(specs, name, wrapped)
    record("step_estimate", specs.step_estimate)
    record("memory_per_gpu_bytes", specs.memory_per_gpu_bytes)
    return seen


def test_defaults_are_none_and_reach_the_models_as_none(spy):
    assert {f.name: f.default for f in fields(specs.ParallelSpec)}["pipeline_layout"] is None
    assert Parallelism().pipeline_layout is None
    est = load_estimate(F70)
    assert job_specs(est)[1].pipeline_layout is None
    estimate_from_file(est)
    assert spy["step_estimate"]["pipeline_layout"] is None
    assert spy["memory_per_gpu_bytes"]["pipeline_layout"] is None
    # null written out is the default, bit for bit
    a = estimate_from_file(load_estimate(F70, ["parallelism.pipeline_layout=null"]))
    assert a.as_dict() == estimate_from_file(est).as_dict()


def test_a_moved_layer_changes_the_step_and_memory_by_what_the_models_give(spy):
    estimate_from_file(load_estimate(F70, VPP1))
    step_kw = dict(spy["step_estimate"])
    mem_kw = dict(spy["memory_per_gpu_bytes"])
    even = step_estimate(**step_kw)
    direct = step_estimate(**{**step_kw, "pipeline_layout": MOVED})
    direct_mem = memory_per_gpu_bytes(**{**mem_kw, "pipeline_layout": MOVED})
    est = load_estimate(F70, VPP1 + [f"parallelism.pipeline_layout={MOVED}"])
    got = estimate_from_file(est)
    assert spy["step_estimate"] == {**step_kw, "pipeline_layout": MOVED}
    assert got.step_time_s == direct.step_time_s
    assert got.as_dict() == direct.as_dict()
    # the last rank (output layer + loss) is the critical one: a layer off it is 0.58 % faster
    assert got.step_time_s / even.step_time_s == pytest.approx(0.99419, abs=5e-5)
    mem = memory_from_file(est)
    assert spy["memory_per_gpu_bytes"] == {**mem_kw, "pipeline_layout": MOVED}
    assert mem.as_dict() == direct_mem.as_dict()
    assert mem.total != memory_per_gpu_bytes(**mem_kw).total


def test_mtp_layers_travel_with_the_layout():
    # DeepSeek-V3 (61 layers, mtp_depth 1) under DualPipe on 16 stages: 4 layers a stage,
    # the last holding one layer, the MTP module and the loss; the even split (4 a rank and
    # everything else on the last) is the file's 22.25 s (22.23 until HIR's H100 refit), this
    # layout 16.29 s
    layout = "E,t*4|(t*4|)*14,t,m,L"
    rc, even, _ = _cli(FDS3, [])
    rc2, got, _ = _cli(FDS3, [f"parallelism.pipeline_layout={layout}"])
    assert rc == rc2 == 0
    assert got["pipeline_layout"] == layout and got["pipeline_schedule"] == "dualpipe"
    assert even["step_time_s"] == pytest.approx(22.250, abs=0.01)
    assert got["step_time_s"] == pytest.approx(16.290, abs=0.01)
    rc, _, err = _cli(FDS3, ["parallelism.pipeline_layout=E,t*4|(t*4|)*14,t,L"])
    assert rc == 2
    assert "parallelism.pipeline_layout 'E,t*4|(t*4|)*14,t,L': has 0 MTP layers m, mtp_depth = 1" in err


def test_meta_405b_layout_runs_at_vpp_8():
    # the shipped file carries the paper's layout at vpp 8 (sec. 3.3.2; since HU4, the even
    # split at an assumed vpp 4 before); 126 layers are not a multiple of pp x vpp = 128: with
    # a layout the stages hold 0 or 1
    rc, out, _ = _cli(F405, [])
    assert rc == 0
    assert out["pipeline_layout"] == META_405B and out["pipeline_schedule"] == "interleaved"
    # 0.492 until HIR replayed the interleaved bubble (0.480 -> 0.417 s a step)
    assert out["mfu"] == pytest.approx(0.498, abs=0.001)
    # the file's former even split through --set: 42.2 %; the layout set back on it is the file
    sets = ["parallelism.pipeline_layout=null", "parallelism.vpp=4"]
    rc, even, _ = _cli(F405, sets)
    assert rc == 0
    # 42.2 % until HIR replayed the interleaved bubble
    assert even["pipeline_layout"] is None and even["mfu"] == pytest.approx(0.427, abs=0.001)
    rc, back, _ = _cli(F405, sets + [f"parallelism.pipeline_layout={META_405B}",
                                     "parallelism.vpp=8"])
    assert rc == 0 and back == out
    # vpp 8 without the layout: the even split cannot run it (126 layers < 128 chunks)
    rc, _, err = _cli(F405, ["parallelism.pipeline_layout=null"])
    assert rc == 2 and "layers=126 < pp*vpp=128" in err


@pytest.mark.parametrize("layout", [META_405B, "E,t*21|t*20|t*20|t*19,L", "(t|)*2", "|E",
                                    "E|t*3|(t|t*2|)*4,L", "*3"])
def test_set_keeps_the_layout_characters(layout):
    assert parse_override(f"parallelism.pipeline_layout={layout}") == (
        ["parallelism", "pipeline_layout"], layout)
    data = apply_overrides({"parallelism": {}}, [f"parallelism.pipeline_layout={layout}"])
    assert data["parallelism"]["pipeline_layout"] == layout


@pytest.mark.parametrize("sets, words", [
    (["parallelism.vpp=4"],   # the file's layout at another vpp
     f"llama3_405b_bf16_16k_roce: parallelism.pipeline_layout '{META_405B}': has 128 virtual "
     "stages, pp*vpp = 16*4 = 64 needed"),
    (["parallelism.pipeline_layout=E|(t|)126,L"], "a parenthesised group must be followed by *n"),
    (["parallelism.pipeline_layout=L|(t|)*126,E"], "the embedding E must be the first layer"),
    (["parallelism.pipeline_layout=5"], "parallelism.pipeline_layout = 5: Input should be a valid "
                                        "string"),
])
def test_bad_layouts_exit_2_naming_the_field(sets, words):
    rc, _, err = _cli(F405, sets)
    assert rc == 2
    assert words in err
    assert "parallelism.pipeline_layout" in err and "Traceback" not in err


def test_estimate_functions_raise_the_problem_not_the_model_error():
    data = load_estimate(F70).model_dump()
    data["parallelism"]["pipeline_layout"] = "E,t*20|t*20|t*20|t*20|L"
    est = EstimateFile.model_validate(data)
    for fn in (estimate_from_file, memory_from_file):
        with pytest.raises(EstimateFileError) as exc:
            fn(est)
        assert exc.value.problems == [
            "llama31_70b_bf16_64gpu: parallelism.pipeline_layout 'E,t*20|t*20|t*20|t*20|L': has "
            "5 virtual stages, pp*vpp = 4*5 = 20 needed"]


def test_help_names_the_layout_setting():
    sub = _parser()._subparsers._group_actions[0].choices["step"]
    assert "--set parallelism.pipeline_layout='E|(t|)*126,L'" in sub.format_help().replace("\n", " ")
