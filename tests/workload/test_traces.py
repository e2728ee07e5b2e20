"""Trace parsers: fixtures written in each scheduler's format round-trip exactly; bad input
is an exit-2 error naming file, line and column; unusable rows are counted, never dropped
silently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twin.cli.main import _report_problems
from twin.workload.traces import TraceError, read_acme_csv, read_bacct, read_sacct, read_trace

from .trace_fixtures import sample_jobs, write_acme, write_bacct, write_sacct

TZ = "Asia/Shanghai"


@pytest.fixture(scope="module")
def jobs() -> pd.DataFrame:
    return sample_jobs(1.0)


def _read(fmt, path, **kw):
    extra = {"acme": {}, "slurm_sacct": {"tz": TZ}, "lsf_bacct": {"tz": TZ, "year": 2023}}[fmt]
    return read_trace(path, fmt, **extra, **kw)


WRITERS = {"acme": write_acme, "slurm_sacct": write_sacct, "lsf_bacct": write_bacct}


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_round_trip(fmt, jobs, tmp_path):
    """Every GPU job comes back with its GPUs, state, submit, start and end (to the second);
    the zero-GPU rows are counted as skipped, and kept + skipped = rows."""
    tr = _read(fmt, WRITERS[fmt](jobs, tmp_path / "t"))
    g = jobs[jobs.gpus > 0].reset_index(drop=True)
    t0 = g.submit.min()
    assert len(tr.jobs) == len(g)
    assert np.array_equal(tr.jobs.gpus, g.gpus)
    assert np.array_equal(tr.jobs.state, g.state.str.lower())
    np.testing.assert_array_equal(tr.jobs.submit_s, g.submit - t0)
    np.testing.assert_array_equal(tr.jobs.start_s, g.start - t0)
    np.testing.assert_array_equal(tr.jobs.end_s, g.end - t0)
    assert tr.skipped["CPU-only (zero GPUs)"] == (jobs.gpus == 0).sum() > 0
    assert "CPU-only" in tr.report()
    steps = tr.skipped.get("job steps (sacct rows of steps, not jobs)", 0)
    assert tr.rows_read == len(tr.jobs) + sum(tr.skipped.values())
    assert steps == (2 * len(jobs) if fmt == "slurm_sacct" else 0)
    assert tr.epoch == pd.Timestamp("2023-03-01", tz=TZ) + pd.Timedelta(seconds=t0)


def test_bacct_year_rollover_and_year_in_dates(jobs, tmp_path):
    """Dates printed with LSB_DISPLAY_YEAR=Y need no year; without it a missing year is an error."""
    small = jobs.head(30)
    a = read_bacct(write_bacct(small, tmp_path / "y", with_year=True), tz=TZ)
    b = read_bacct(write_bacct(small, tmp_path / "n"), tz=TZ, year=2023)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    with pytest.raises(TraceError, match=r"line \d+, column 1 \(submit\).*year"):
        read_bacct(tmp_path / "n", tz=TZ)


def _corrupt(path, line_no: int, col_name: str, value: str, sep=","):
    lines = path.read_text().splitlines()
    header = lines[0].split(sep)
    cells = lines[line_no - 1].split(sep)
    col = header.index(col_name)
    cells[col] = value
    lines[line_no - 1] = sep.join(cells)
    path.write_text("\n".join(lines) + "\n")
    return col + 1


@pytest.mark.parametrize("column,value,expected", [
    ("submit_time", "2023-13-45T99:00:00+08:00", "a date and time"),
    ("end_time", "2023-02-01T00:00:00+08:00", "negative duration"),
    ("duration", "-5", "a duration >= 0"),
    ("gpu_num", "4096", "at most the cluster's 2048 GPUs"),
    ("state", "EXPLODED", "one of"),
    ("gpu_num", "eight", "a whole number"),
])
def test_acme_bad_input_names_file_line_and_column(jobs, tmp_path, column, value, expected):
    path = write_acme(jobs.head(50), tmp_path / "bad.csv")
    # line 7 holds a GPU job (the fixture's sixth row); make sure of it
    col = _corrupt(path, 7, column, value)
    with pytest.raises(TraceError) as err:
        read_acme_csv(path, cluster_gpus=2048)
    text = str(err.value)
    assert f"{path}: line 7, column {col} (" in text and expected in text
    assert _report_problems(err.value) == 2


def test_missing_column_is_an_error(jobs, tmp_path):
    path = write_acme(jobs.head(5), tmp_path / "m.csv")
    df = pd.read_csv(path).drop(columns=["start_time"])
    df.to_csv(path, index=False)
    with pytest.raises(TraceError, match=r"line 1 \(header\).*start_time"):
        read_acme_csv(path)
    p2 = write_sacct(jobs.head(5), tmp_path / "s.txt")
    p2.write_text(p2.read_text().replace("|AllocTRES|", "|Comment|"))
    with pytest.raises(TraceError, match="AllocTRES or AllocGRES"):
        read_sacct(p2)


def test_sacct_bad_date_and_unknown_state(jobs, tmp_path):
    path = write_sacct(jobs.head(20), tmp_path / "s.txt")
    col = _corrupt(path, 2, "Start", "yesterday", sep="|")
    _corrupt(path, 5, "State", "VANISHED", sep="|")
    with pytest.raises(TraceError) as err:
        read_sacct(path, tz=TZ)
    msgs = [str(p) for p in err.value.problems]
    assert any(f"line 2, column {col} (start): got 'yesterday'" in m for m in msgs)
    assert any("line 5, column 7 (state): got 'VANISHED'" in m for m in msgs)


def test_bacct_negative_duration_points_at_the_completion_line(jobs, tmp_path):
    small = jobs.head(3).copy()
    small.loc[small.index[1], "end"] = small.start.iloc[1] - 60
    path = write_bacct(small, tmp_path / "b.txt")
    done_lines = [i for i, ln in enumerate(path.read_text().splitlines(), 1) if ": Completed <" in ln]
    with pytest.raises(TraceError, match=rf"line {done_lines[1]}, column 1 \(end\).*negative duration"):
        read_bacct(path, tz=TZ, year=2023)


def test_cpu_jobs_error_mode_and_never_started_rows(jobs, tmp_path):
    path = write_acme(jobs.head(200), tmp_path / "c.csv")
    with pytest.raises(TraceError, match=r"a GPU job \(cpu_jobs: error\)"):
        read_acme_csv(path, cpu_jobs="error")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[3, ["start_time", "end_time"]] = ""
    df.loc[3, "state"] = "CANCELLED"
    df.loc[4, ["end_time"]] = ""
    df.loc[4, "state"] = "RUNNING"
    df.to_csv(path, index=False)
    tr = read_acme_csv(path)
    assert tr.skipped["never started (cancelled in the queue)"] == 1
    assert tr.skipped["unfinished (still running or pending)"] == 1
    assert tr.rows_read == len(tr.jobs) + sum(tr.skipped.values())
