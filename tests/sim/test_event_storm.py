"""Issue 18, bounded work at run time: the engine counts the events of every process and
stops an event storm the up-front estimate (twin.scenario.bounds) did not foresee, with a
ScenarioError naming the process and the parameters that drive it (exit 2 from the CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import simpy

import twin
from twin.errors import ScenarioError
from twin.scenario.bounds import MAX_EVENTS, event_estimate
from twin.sim.engine import MAX_PROCESS_EVENTS_ENV, CountingEnvironment, Engine, EventStormError

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
#: a checkpoint of one byte under an ``auto`` interval: Daly's interval becomes ~0.03 s,
#: two events per interval, ~5 M events per simulated day in one job's process (it starts
#: after the one-day burn-in). The up-front estimate counts checkpoints of fixed intervals
#: only, so validation accepts it.
CHECKPOINT_STORM = ["workload.jobs.0.checkpoint_bytes=1", "workload.jobs.0.checkpoint_interval_s=auto"]


def _no_storm(kind, n, gen):
    raise AssertionError(f"{kind} stormed at {n}")


def _model(env, log):
    """Interrupts, return values, failures and a waiter: everything the wrapper forwards."""
    def worker():
        try:
            yield env.timeout(10)
        except simpy.Interrupt as i:
            log.append(("interrupted", env.now, i.cause))
        yield env.timeout(1)
        return "done"

    def failing():
        yield env.timeout(5)
        raise ValueError("boom")

    def boss(w, f):
        yield env.timeout(3)
        w.interrupt("stop")
        value = yield w
        log.append(("joined", env.now, value))
        try:
            yield f
        except ValueError as e:
            log.append(("caught", env.now, str(e)))

    w = env.process(worker())
    f = env.process(failing())
    env.process(boss(w, f))
    env.run(until=20)
    return log


def test_counting_environment_is_transparent():
    """The same model on a plain simpy Environment and on the counting one: the same
    interrupts, return values, caught exceptions and times."""
    plain = _model(simpy.Environment(), [])
    counted_env = CountingEnvironment(1e9, _no_storm)
    assert _model(counted_env, []) == plain == [("interrupted", 3, "stop"), ("joined", 4, "done"),
                                                 ("caught", 5, "boom")]
    # worker: 2 yields; failing: 1; boss: 3 (timeout, the worker, the failing process)
    c = counted_env.event_counts
    assert c["_model.<locals>.worker"] == [2, 2] and c["_model.<locals>.failing"] == [1, 1]
    assert c["_model.<locals>.boss"] == [3, 3]


def test_a_zero_length_loop_hangs_a_plain_environment_and_is_stopped_by_the_ceiling():
    def spin(env):
        while True:
            yield env.timeout(0)

    plain = simpy.Environment()
    plain.process(spin(plain))
    for _ in range(10_000):
        plain.step()
    assert plain.now == 0.0            # without a guard, run(until=1) never returns

    seen = []

    def storm(kind, n, gen):
        seen.append((kind, n))
        raise RuntimeError("storm")

    env = CountingEnvironment(500, storm)
    env.process(spin(env))
    with pytest.raises(RuntimeError, match="storm"):
        env.run(until=1)
    assert seen == [("test_a_zero_length_loop_hangs_a_plain_environment_and_is_stopped_by_the_ceiling"
                     ".<locals>.spin", 501)]


def test_the_checkpoint_storm_passes_validation_and_storms_without_the_guard(monkeypatch):
    """The case the up-front estimate misses: validation accepts it, and the job's process
    really handles millions of events per simulated day."""
    s = twin.load_scenario(SMALL, CHECKPOINT_STORM)            # validation says ok
    assert sum(event_estimate(s).values()) < MAX_EVENTS / 100
    monkeypatch.setenv(MAX_PROCESS_EVENTS_ENV, "inf")           # no guard
    e = Engine(s)
    e.start()
    e.env.run(until=87000.0)                                   # a day of burn-in, the job starts
    n0 = e.env.event_counts["Jobs._lifecycle"][1]
    e.env.run(until=87000.0 + 600.0)                           # ten minutes of training
    per_day = (e.env.event_counts["Jobs._lifecycle"][1] - n0) * 144
    assert per_day > 1e6
    # the 30-day run would process tens of millions of events: over the default ceiling
    assert per_day * s.simulation.duration_days > 10 * MAX_EVENTS


@pytest.mark.parametrize("overrides, kind, path", [
    (CHECKPOINT_STORM + ["simulation.duration_days=2"], "Jobs._lifecycle", "workload.jobs.0.checkpoint_interval_s"),
    ("rate_scale", "Failures._failures", "failures.rate_scale"),
])
def test_the_engine_stops_an_event_storm_naming_process_and_parameter(monkeypatch, overrides, kind, path):
    """With a small ceiling the storm stops within a fraction of a second. Without the
    guard the two-day checkpoint storm runs to its end (~5 M events, no error) and the
    failure storm (rate_scale 1e9 set in-process, past validation) never ends."""
    monkeypatch.setenv(MAX_PROCESS_EVENTS_ENV, "20000")
    if overrides == "rate_scale":
        s = twin.load_scenario(SMALL)
        s = s.model_copy(update={"failures": s.failures.model_copy(update={"rate_scale": 1e9})})
    else:
        s = twin.load_scenario(SMALL, overrides)
    with pytest.raises(EventStormError) as exc:
        twin.simulate(s)
    err = exc.value
    assert isinstance(err, ScenarioError) and len(err.problems) == 1
    p = err.problems[0]
    assert p.path == path
    assert kind in p.expected and "20,001 events" in p.expected and MAX_PROCESS_EVENTS_ENV in p.expected


def test_shipped_scenario_is_far_below_the_default_ceiling():
    """The default ceiling is validation's budget for the whole run (2 M events); a 30-day
    run of the Lenovo room stays hundreds of times below it in every process."""
    e = Engine(twin.load_scenario(SMALL))
    assert e.process_event_ceiling() == MAX_EVENTS
    e.run()
    busiest = max(n for _, n in e.env.event_counts.values())
    assert 0 < busiest * 100 < e.process_event_ceiling()


def test_cli_turns_a_storm_into_exit_2_with_one_line(tmp_path):
    env = {**os.environ, MAX_PROCESS_EVENTS_ENV: "20000"}
    p = subprocess.run([sys.executable, "-m", "twin.cli", "run", str(SMALL), "--out", str(tmp_path / "out"),
                        *[a for o in CHECKPOINT_STORM for a in ("--set", o)]],
                       capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines[0].startswith("error: the scenario has 1 problem")
    assert len(lines) == 2 and "workload.jobs.0.checkpoint_interval_s" in lines[1] and "event storm" in lines[1]
    assert not (tmp_path / "out").exists()
