"""What ``twin run`` pays outside ``simulate()`` (issue 19): imports, the garbage collector.

Each import check runs in a fresh interpreter, so a module-level import of a heavy
library added back in the wrong place (xarray in the thermal solver, scipy.integrate in
the fault transient) fails here. The collector checks run ``twin run`` in-process on a
short scenario and watch the collector's state at the points the CLI pauses it.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from twin.cli.main import collector_paused, main

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"


HEAVY = ("numpy", "scipy", "pandas", "xarray", "networkx", "pydantic", "dask", "h5py")
STAGES = ("import twin, twin.cli", "import twin.scenario.loader", "import twin.sim.engine")


@pytest.fixture(scope="module")
def loaded() -> dict[str, list[str]]:
    """{stage: the HEAVY or scipy.integrate modules loaded after it}, the stages run one
    after the other in one new interpreter."""
    watch = HEAVY + ("scipy.integrate",)
    code = "import json, sys\nout = {}\n" + "".join(
        f"{stage}\nout[{stage!r}] = sorted(m for m in {watch!r} if m in sys.modules)\n" for stage in STAGES)
    code += "print(json.dumps(out))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_import_twin_and_its_cli_load_no_heavy_library(loaded):
    # `twin --help`, `twin schema` and the delegated commands start from here
    assert loaded["import twin, twin.cli"] == []


def test_scenario_loading_needs_no_xarray_pandas_or_scipy_integrate(loaded):
    # `twin validate` and the first step of `twin run`: xarray and pandas come with the
    # results, scipy.integrate only with a cooling-fault transient
    assert not {"xarray", "pandas", "scipy.integrate", "dask"} & set(loaded["import twin.scenario.loader"])


def test_the_engine_needs_no_scipy_integrate(loaded):
    assert "scipy.integrate" not in loaded["import twin.sim.engine"]
    assert "scipy" in loaded["import twin.sim.engine"]          # the probe sees what is loaded


def test_collector_paused_restores_the_previous_state():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()            # the inner pause does not switch it back on
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError
    assert gc.isenabled()


@pytest.fixture(scope="module")
def watched_run(tmp_path_factory):
    """One short `twin run` in-process, with the collector's state recorded where the CLI
    loads the scenario, builds the engine, runs it and saves, and the invariant checks
    counted."""
    import twin.invariants
    import twin.scenario.loader
    import twin.sim.engine
    import twin.store_io

    seen: dict[str, list] = {}
    mp = pytest.MonkeyPatch()

    def watch(module, name, key, extra=None):
        orig = getattr(module, name)

        def wrapped(*a, **k):
            seen.setdefault(key, []).append((gc.isenabled(), gc.get_freeze_count() > 0))
            return orig(*a, **k)
        mp.setattr(module, name, wrapped)

    watch(twin.scenario.loader, "check_scenario", "load")   # the CLI's loader (scenario + notes)
    watch(twin.sim.engine.Engine, "__init__", "engine")
    watch(twin.sim.engine.Engine, "run", "run")
    watch(twin.store_io, "save_results", "save")
    watch(twin.invariants, "check_results", "check")
    out = tmp_path_factory.mktemp("cli_gc") / "out"
    try:
        assert gc.get_freeze_count() == 0
        code = main(["run", str(SMALL), "--out", str(out), "--set", "simulation.duration_days=0.5",
                     "--no-field"])
        after = (gc.isenabled(), gc.get_freeze_count())
    finally:
        mp.undo()
        gc.unfreeze()
    return code, seen, after, out


def test_run_pauses_the_collector_while_it_builds_and_saves(watched_run):
    code, seen, _, _ = watched_run
    assert code == 0
    assert seen["load"] == [(False, False)]          # imports and the scenario: paused
    assert seen["engine"] == [(False, False)]        # the model: paused, not yet frozen
    assert seen["run"] == [(True, True)]             # the run: collector on, what was built frozen
    assert seen["save"] == [(False, True)]           # fields and save: paused


def test_in_process_run_hands_frozen_objects_back(watched_run):
    # a caller that goes on (tests, notebooks) gets the collector on and nothing left frozen
    _, _, after, _ = watched_run
    assert after == (True, 0)


def test_invariants_are_checked_once_and_saved(watched_run):
    _, seen, _, out = watched_run
    assert len(seen["check"]) == 1
    assert "warnings" in json.loads((out / "kpis.json").read_text())
