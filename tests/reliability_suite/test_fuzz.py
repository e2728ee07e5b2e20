"""Issue 18 fuzzer: random mutations of a small scenario (NaN/inf and absurd numbers, names
with path characters, impossible and far dates, sample intervals, durations, wrong types).

Invariant: every input either validates and `twin run` finishes within a time bound, or it
exits 2 with one clear line per problem - never a traceback, a hang, or a file written
outside the output folder. The budget is fixed (``max_examples``, derandomized), so the
suite takes the same time on every CI run.
"""

from __future__ import annotations

import contextlib
import copy
import math
import signal
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from twin.cli import main

from .conftest import SMALL

BASE = yaml.safe_load(SMALL.read_text())
BASE["simulation"].update({"duration_days": 1, "sample_interval_s": 3600})
#: wall-clock bound of one validated run of the fuzzed 4-node scenario [s]
RUN_BOUND_S = 120

NAME_FIELDS = ["name", "site.halls.0.name", "workload.jobs.0.name", "site.halls.0.cooling_units.0.name",
               "site.power.feeds.0.name", "site.halls.0.rows.0.name"]
NUMBER_FIELDS = ["site.power.feeds.0.capacity_kw", "site.halls.0.rows.0.x_m", "site.halls.0.rows.0.y_m",
                 "site.halls.0.cooling_units.0.supply_temp_c", "site.halls.0.cooling_units.0.airflow_m3_s",
                 "site.power.cooling.outdoor_temp_c", "failures.rate_scale", "failures.arrhenius_reference_temp_c",
                 "site.power.rpp.count", "site.halls.0.cell_m", "site.halls.0.width_m", "workload.jobs.0.tokens_target",
                 "failures.spares", "simulation.seed", "workload.jobs.0.tp", "workload.jobs.0.nodes",
                 "site.power.ups.ride_through_s", "workload.jobs.0.checkpoint_interval_s",
                 "site.power.grid.sag_rate_per_year", "site.halls.0.rows.0.racks"]
DATE_FIELDS = ["simulation.start", "site.power.plan.0.date", "ramp.waves.0.date", "workload.jobs.0.submit"]

names = st.one_of(
    st.sampled_from(["../../../victim", "a/b", "a/../../../../elsewhere/victim", "..", ".", "", " ", "\\x",
                     "/abs", "nul\x00byte", "ok_name", "x" * 300, "hall-1.b", "ünïcode", "a:b", "-dash"]),
    st.text(alphabet=st.sampled_from("ab./\\_- \x00:~$*"), min_size=0, max_size=12))
numbers = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0, -1, -273.15, -300, 1e-9, 1e9, 1e12, 2**70, 2.5, True]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(min_value=-10, max_value=10**20),
    st.text(max_size=5))
dates = st.one_of(
    st.sampled_from(["2025-02-30", "2025-13-01", "2025-01-06 25:00:00", "1500-01-01", "2300-01-01",
                     "0001-01-01", "9999-12-31", "yesterday", ""]),
    st.dates().map(lambda d: d.isoformat()))
# intervals below a minute are valid but make a day's run slow on a loaded CI machine
intervals = st.one_of(st.sampled_from([0.5, 60, 600, 3600, 7000, 86400, 1e12, 0, -5, math.nan, math.inf, "x"]),
                      st.floats(min_value=60, max_value=1e6))
durations = st.sampled_from([0.5, 1, 1.5, 2, 1e-6, 0, -1, math.nan, math.inf, 1e9, "1"])


def _set(data: dict, dotted: str, value) -> None:
    node = data
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    if isinstance(node, list):
        node[int(parts[-1])] = value
    else:
        node[parts[-1]] = value


mutation = st.one_of(
    st.tuples(st.sampled_from(NAME_FIELDS), names),
    st.tuples(st.sampled_from(NUMBER_FIELDS), numbers),
    st.tuples(st.sampled_from(DATE_FIELDS), dates),
    st.tuples(st.just("simulation.sample_interval_s"), intervals),
    st.tuples(st.just("simulation.duration_days"), durations),
)


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_bound(seconds: float):
    def fire(signum, frame):
        raise _Hang(f"no answer within {seconds} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(mutation, min_size=1, max_size=4))
def test_any_mutation_runs_or_exits_2_cleanly(capsys, mutations):
    data = copy.deepcopy(BASE)
    for path, value in mutations:
        _set(data, path, value)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "sandbox"
        root.mkdir()
        f = root / "s.yaml"
        f.write_text(yaml.safe_dump(data, allow_unicode=True))
        out = root / "out"
        capsys.readouterr()
        with _time_bound(RUN_BOUND_S):
            rc = main(["run", str(f), "--out", str(out), "--no-field"])
        cap = capsys.readouterr()
        event(f"exit {rc}")                 # --hypothesis-show-statistics: the mix of outcomes
        assert "Traceback" not in cap.err
        written = sorted(p.name for p in Path(d).rglob("*") if p != root)
        if rc == 2:
            lines = cap.err.strip().splitlines()
            assert lines and lines[0].startswith("error:"), cap.err
            assert all("expected" in ln for ln in lines[1:]), cap.err
            assert written == ["s.yaml"], written           # nothing written on refusal
        else:
            assert rc == 0, (rc, cap.err)
            assert (out / "kpis.json").exists()
            inside = {p.relative_to(root).parts[0] for p in root.rglob("*")}
            assert inside == {"s.yaml", "out"}, inside      # nothing outside the output folder
