"""``events.csv`` of a save (issue 19): :func:`twin.store_io.write_events_csv` joins the
rows itself instead of sending them through pandas' csv writer, and must write the very
bytes ``DataFrame.to_csv(path, index=False)`` writes; pandas stays the reference (and the
path for any table the fast one does not take)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import twin.store_io as store_io
from twin.store_io import write_events_csv

COLUMNS = ["time_s", "kind", "target", "detail"]


def _same_as_pandas(events: pd.DataFrame, tmp_path, name="e") -> None:
    ref, fast = tmp_path / f"{name}_pandas.csv", tmp_path / f"{name}_fast.csv"
    events.to_csv(ref, index=False)
    write_events_csv(events, fast)
    assert fast.read_bytes() == ref.read_bytes()


def _table(rows) -> pd.DataFrame:
    """An event table as :func:`twin.results.build_results` makes it: a str ``time`` column
    in front of the recorder's (time_s, kind, target, detail) rows."""
    ev = pd.DataFrame(rows, columns=COLUMNS)
    start = np.datetime64("2024-01-01T00:00:00", "s")
    # clipped to +-1e12 s before the scaling to ms, so huge drawn times do not overflow to inf
    ms = np.nan_to_num(ev["time_s"].to_numpy(float), nan=0.0, posinf=0.0, neginf=0.0).clip(-1e12, 1e12) * 1e3
    ev.insert(0, "time", (start + ms.astype("timedelta64[ms]")).astype(str))
    return ev


def test_a_run_s_events_match_pandas_and_take_the_fast_path(tmp_path, monkeypatch):
    rows = [(0, "power_stage", "facility", "1520 kW IT available"),
            (604800.0, "delivery", "32 racks", "r1-01, r2-16"),
            (604800.0, "power_on", "32 racks", "638 of 1520 kW worst case committed"),
            (610591.357, "failure", "node 17", 'gpu_hbm3 "ECC"'),
            (1e-7, "job_start", "", "tokens 1.5e+12"),
            (2.5e16, "job_end", "llm_70b", "")]
    ev = _table(rows)

    def slow(*_a, **_k):
        raise AssertionError("the event table went through pandas' writer")
    with monkeypatch.context() as m:
        m.setattr(pd.DataFrame, "to_csv", slow)
        write_events_csv(ev, tmp_path / "fast.csv")
    ev.to_csv(tmp_path / "ref.csv", index=False)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()
    text = (tmp_path / "fast.csv").read_text()
    assert '"r1-01, r2-16"' in text and '"gpu_hbm3 ""ECC"""' in text   # quoted, quotes doubled


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"a": ["x\ny", "z"], "b": [1.0, 2.0]}),             # a line break in a field
    pd.DataFrame({"a": ["x\ry", "z"], "b": [1.0, 2.0]}),             # a carriage return
    pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]}),                    # an integer column
    pd.DataFrame({"a": np.array(["x", None], dtype=object), "b": [1.0, 2.0]}),   # object column
    pd.DataFrame({"a": ["x", "y"]}),                                 # one column
    pd.DataFrame({"a": pd.Series([], dtype="str"), "b": pd.Series([], dtype=float)}),  # no rows
    pd.DataFrame({"a": ["x", None, "z"], "b": [np.nan, -0.0, math.inf]}),  # missing values
])
def test_other_tables_still_match_pandas(frame, tmp_path):
    _same_as_pandas(frame, tmp_path)


texts = st.text(alphabet=st.sampled_from(list('ab ,"\';:-_.é\u2028\t0')), max_size=8)
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.integers(-10**18, 10**18).map(float),
                   st.floats(-1e6, 1e6).map(lambda x: round(x, 3)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(floats, texts, texts, texts), max_size=12))
def test_random_event_tables_match_pandas(tmp_path_factory, rows):
    _same_as_pandas(_table(rows), tmp_path_factory.mktemp("csv"))


def test_save_writes_events_through_the_fast_writer(tmp_path, monkeypatch):
    # a save that went back to to_csv would lose the gain silently
    import xarray as xr

    from twin.results import Results

    calls = []
    orig = store_io.write_events_csv

    def counted(events, path):
        calls.append(path)
        orig(events, path)
    monkeypatch.setattr(store_io, "write_events_csv", counted)
    ev = _table([(0.0, "power_stage", "facility", "1520 kW, IT")])
    Results(xr.Dataset({"x": ("time", [1.0])}), ev, {"n": 1.0}).save(tmp_path / "out", warnings=[])
    assert [p.name for p in calls] == ["events.csv"]
    ev.to_csv(tmp_path / "ref.csv", index=False)
    assert (tmp_path / "out" / "events.csv").read_bytes() == (tmp_path / "ref.csv").read_bytes()
