"""Issues 19 and 14: a stream job trains in :meth:`Jobs._stream_training`, the loop of
:meth:`Jobs._lifecycle` with its per-wake-up look-ups done once and the closed-form
checkpoint written in place. The runs must be bit for bit those of the reference loop
(``Jobs.stream_fast = False``): KPIs, every results.nc variable and the event table, with
interruptions during training, writes that overlap (slow storage: the event-driven write
is taken too) and samples inside writes; and the comparison fails when the fast path is
broken on purpose."""

from __future__ import annotations

import functools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sim.test_speed_paths import _same_results  # KPIs, every results.nc variable, the event table

import twin
from twin.sim import jobs as jobs_module
from twin.sim.engine import Engine

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
#: Blue Vela's job stream for 30 days on the legacy cooling model (the jobs do not care),
#: failures at 3x the catalog's rates (interruptions of training stream jobs); slow storage
#: makes writes of minutes that overlap each other and the hourly samples
BASE = ["simulation.duration_days=30", "site.cooling_system.model=legacy", "failures.rate_scale=3"]
CASES = {"fast_storage": BASE, "slow_storage": [*BASE, "workload.storage.write_gb_s_per_unit=0.4"]}


def _run(scenario, fast: bool):
    e = Engine(scenario)
    e.jobs.stream_fast = fast
    return e, e.run()


def _spy(monkeypatch) -> list:
    """Record each call of the fast path (a stream job's training stint)."""
    calls: list = []
    real = jobs_module.Jobs._stream_training

    def spy(self, job, next_ckpt):
        calls.append(job.index)
        return (yield from real(self, job, next_ckpt))
    monkeypatch.setattr(jobs_module.Jobs, "_stream_training", spy)
    return calls


@functools.cache
def _runs(case: str):
    """(scenario, the fast path's calls, its engine, its run, the reference run)."""
    s = twin.load_scenario(SCENARIOS / "blue_vela.yaml", CASES[case])
    with pytest.MonkeyPatch.context() as mp:
        calls = _spy(mp)
        fast_engine, fast = _run(s, True)
    _, ref = _run(s, False)
    return s, calls, fast_engine, fast, ref


@pytest.mark.parametrize("case", list(CASES))
def test_stream_training_equals_the_reference_loop(case):
    _, calls, fast_engine, fast, ref = _runs(case)
    kinds = fast.events.kind
    n_ckpt = int((kinds == "checkpoint").sum())
    # the fast path ran for every training stint of a stream job: starts, ends,
    # interruptions during training, closed-form and event-driven writes
    starts = int((kinds == "job_start").sum())
    assert 40 < len(calls) <= starts and len(calls) > 0.8 * starts
    assert (kinds == "job_done").sum() > 30 and (kinds == "job_interrupted").sum() >= 5
    assert n_ckpt > 900
    closed = fast_engine.jobs.checkpoints_closed_form
    assert 0 < closed < n_ckpt
    if case == "slow_storage":
        assert closed < 0.9 * n_ckpt        # many writes overlap something: the event-driven one
    _same_results(fast, ref)


def test_a_broken_stream_path_is_caught(monkeypatch):
    """The equality is sharp: a fast path whose checkpoint interval is a microsecond long,
    or that writes in closed form while another event comes before the write's end (it no
    longer looks at simpy's queue), changes the run (or breaks it)."""
    s, _, _, _, ref = _runs("slow_storage")
    real_interval = jobs_module.Jobs.checkpoint_interval_s

    def long_interval(self, job):
        iv = real_interval(self, job)
        return iv + 1e-6 if sys._getframe(1).f_code.co_name == "_stream_training" else iv
    monkeypatch.setattr(jobs_module.Jobs, "checkpoint_interval_s", long_interval)
    _, late = _run(s, True)
    assert not late.events.equals(ref.events)
    monkeypatch.setattr(jobs_module.Jobs, "checkpoint_interval_s", real_interval)

    class BlindPeek(Engine):
        """An engine whose closed-form checkpoint (the one the stream jobs' fast path calls
        without a sub-generator) sees an empty queue."""

        def __init__(self, scenario):
            super().__init__(scenario)
            real_peek = self.env.peek
            self.env.peek = lambda: (math.inf if sys._getframe(1).f_code.co_name == "_checkpoint_closed_form"
                                     else real_peek())
    try:
        blind = BlindPeek(s).run()
    except Exception:       # noqa: BLE001  (the clock ran past queued events: also caught)
        return
    assert not (blind.events.equals(ref.events)
                and np.array_equal(blind.dataset["facility_it_power_w"].values,
                                   ref.dataset["facility_it_power_w"].values))


def test_the_processes_start_with_the_built_objects_frozen(monkeypatch):
    """Engine.run freezes the objects built before the run (the collector leaves them alone
    while it runs) before it starts the processes: Blue Vela's ~1,500 job generators no
    longer set off a full collection of the plant, catalogs and caches (~0.07 s); and it
    hands them back after."""
    import gc

    seen = []
    real = Engine.start
    monkeypatch.setattr(Engine, "start", lambda self: seen.append(gc.get_freeze_count()) or real(self))
    s = twin.load_scenario(SCENARIOS / "blue_vela.yaml", ["simulation.duration_days=2",
                                                          "site.cooling_system.model=legacy"])
    assert gc.get_freeze_count() == 0
    Engine(s).run()
    assert seen and seen[0] > 1000         # the built objects were frozen when the processes started
    assert gc.get_freeze_count() == 0       # and handed back after the run


_HUGE_PAGE_CHECK = r"""
import sys
from pathlib import Path

import numpy as np

import twin
from twin.sim.engine import Engine


def vm_flags(address):
    # the kernel's VmFlags of the mapping that holds ``address`` (``hg``: marked for
    # transparent huge pages with madvise; numpy marks from the first page boundary on, so
    # look inside the array, not at its first byte)
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith("VmFlags:"):
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


toggle = (getattr(np, "_core", None) or np.core).multiarray._set_madvise_hugepage
toggle(True)                    # numpy marks large arrays (its default where THP exists)
e = Engine(twin.load_scenario(sys.argv[1]))
tokens = e.recorder["job_tokens"]
assert tokens.nbytes > 2 ** 24, tokens.nbytes
assert "hg" not in vm_flags(tokens.ctypes.data + 2 ** 20), "job series marked for huge pages"
assert toggle(True) is True, "numpy's setting was not handed back"
marked = np.zeros(2 ** 23)      # the check is sharp: numpy's own large arrays are marked
assert "hg" in vm_flags(marked.ctypes.data + 2 ** 20), "numpy's own array not marked"
"""


def test_the_recorder_series_are_not_marked_for_huge_pages():
    """The recorder's dense series (written a row per sample) are allocated without numpy's
    madvise(MADV_HUGEPAGE), which made each first touch inside the run a 2 MiB fault that may
    compact memory; numpy's own setting is handed back after. Blue Vela's nine months: the
    job series are 75 MB each, over numpy's 4 MiB threshold. Checked in a fresh interpreter:
    in a test worker that has run other tests, the allocator may serve the series from a heap
    region an earlier array already marked, so the mapping's flags would say nothing."""
    done = subprocess.run([sys.executable, "-c", _HUGE_PAGE_CHECK, str(SCENARIOS / "blue_vela.yaml")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
