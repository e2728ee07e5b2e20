"""Issue 18, output safety: `--out` never deletes a user's data, a killed save leaves the old
or the new result, stale temporaries go away, full disk / read-only / Ctrl-C give one line."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from twin.cli import main
from twin.errors import OutputError
from twin.results import Results
from twin.store_io import MARKER, check_output, clean_stale_temporaries, is_twin_result, recover

from .conftest import ONE_DAY, SMALL, cli


def _set(*over):
    return sum((["--set", o] for o in over), [])


def test_out_with_user_files_is_refused_and_kept(tmp_path, capsys):
    """`twin run base --out mydata` with mydata/thesis.tex used to replace the folder."""
    mydata = tmp_path / "mydata"
    mydata.mkdir()
    (mydata / "thesis.tex").write_text("three years of work")
    rc = main(["run", str(SMALL), "--out", str(mydata), *_set(*ONE_DAY)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "thesis.tex" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert (mydata / "thesis.tex").read_text() == "three years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mydata"]     # nothing else written


def test_out_naming_a_file_is_refused_unless_forced(tmp_path, small_results, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    assert main(["run", str(SMALL), "--out", str(f), *_set(*ONE_DAY)]) == 2
    assert "is a file" in capsys.readouterr().err
    assert f.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]   # no `.notes.txt.old`
    small_results.save(f, force=True)
    assert f.is_dir() and is_twin_result(f)


def test_previous_result_is_replaced_but_not_if_a_user_added_a_file(tmp_path, small_results):
    out = tmp_path / "r"
    small_results.save(out)
    assert is_twin_result(out) and (out / MARKER).exists()
    small_results.save(out)                                  # a twin result: replaced
    (out / "my_plot.png").write_bytes(b"\x89PNG")
    with pytest.raises(OutputError, match="my_plot.png"):
        small_results.save(out)
    assert (out / "my_plot.png").exists()


def test_empty_folder_and_missing_path_are_fine(tmp_path):
    (tmp_path / "empty").mkdir()
    check_output(tmp_path / "empty")
    check_output(tmp_path / "new" / "deeper")


def test_hall_name_cannot_write_outside_the_folder(tmp_path, small_results):
    """A field named after a hall `a/../../x` would be written outside the output folder
    (validation refuses such a name first; the save checks again)."""
    import dataclasses

    import xarray as xr
    field = xr.Dataset({"temperature": ("x", [20.0, 21.0])})
    for name in ("a/../../../victim", "../victim", "a/b"):
        bad = dataclasses.replace(small_results, fields={name: field})
        with pytest.raises(OutputError):
            bad.save(tmp_path / "r")
    assert [p.name for p in tmp_path.iterdir()] == []


_SAVER = """
import sys, twin
from twin.results import Results
res = Results.load(sys.argv[1])
i = 0
while True:
    i += 1
    res.kpis["save_counter"] = i
    res.save(sys.argv[2])
"""


def test_sigkill_during_saves_always_leaves_a_whole_result(tmp_path, small_results):
    """SIGKILL a process that saves over and over: after each kill the folder holds a whole
    result (the old or the new one) once :func:`recover` has run, and no temporary is left
    after the next save."""
    src = tmp_path / "src"
    small_results.save(src)
    out = tmp_path / "out"
    small_results.save(out)
    delays = [0.05, 0.17, 0.29, 0.41, 0.63]
    for d in delays:
        p = subprocess.Popen([sys.executable, "-c", _SAVER, str(src), str(out)])
        time.sleep(1.5 + d)               # import time, then somewhere inside a save
        p.send_signal(signal.SIGKILL)
        p.wait()
        recover(out)
        assert is_twin_result(out), sorted(os.listdir(tmp_path))
        again = Results.load(out)
        assert again.kpis["tokens_total"] == small_results.kpis["tokens_total"]
    small_results.save(out)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == [], leftovers


def test_fallback_swap_killed_between_renames_is_recovered(tmp_path, small_results, monkeypatch):
    """Without an atomic exchange the swap is two renames; a kill between them used to leave
    the result only in `.out.old`. The next load (or save) puts it back."""
    import twin.store_io as sio
    out = tmp_path / "out"
    small_results.save(out)
    monkeypatch.setattr(sio, "_exchange", lambda a, b: False)
    real = os.replace
    calls = []

    def dying_replace(a, b):
        calls.append((a, b))
        if len(calls) == 2:
            raise SystemExit("killed")   # stands for SIGKILL between the two renames
        return real(a, b)
    monkeypatch.setattr(sio.os, "replace", dying_replace)
    with pytest.raises(SystemExit):
        small_results.save(out)
    monkeypatch.setattr(sio.os, "replace", real)
    assert not out.exists()
    again = Results.load(out)        # recovers first
    stored = json.loads((out / "kpis.json").read_text())
    assert stored.pop("warnings") == [] and again.kpis == stored
    assert is_twin_result(out)


def test_stale_temporaries_of_dead_processes_are_cleaned(tmp_path, small_results):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f".r.twin-tmp-{dead}-abcd"
    stale.mkdir()
    (stale / "results.nc").write_bytes(b"half")
    legacy = tmp_path / ".r.k3j_x9a2"           # mkdtemp folder of the old save
    legacy.mkdir()
    (legacy / "kpis.json").write_text("{}")
    alive = tmp_path / f".r.twin-tmp-{os.getppid()}-live"   # a running process's save
    alive.mkdir()
    user = tmp_path / ".r.notmine1"               # same shape, but user files: kept
    user.mkdir()
    (user / "thesis.tex").write_text("x")
    small_results.save(tmp_path / "r")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["r", alive.name, user.name])
    assert clean_stale_temporaries(tmp_path / "r") == []


def test_full_disk_gives_one_line_exit_1_and_keeps_the_previous_result(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r"
    assert main(["run", str(SMALL), "--out", str(out), "--no-field", *_set(*ONE_DAY)]) == 0
    before = (out / "kpis.json").read_text()
    capsys.readouterr()
    import collections

    import twin.store_io as sio
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(sio.shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 1000, 1000))
    rc = main(["run", str(SMALL), "--out", str(out), "--no-field", *_set(*ONE_DAY, "simulation.seed=3")])
    err = capsys.readouterr().err
    assert rc == 1
    assert "no space left" in err and "intact" in err and len(err.strip().splitlines()) == 1
    assert (out / "kpis.json").read_text() == before


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "No space left"), (errno.EROFS, "Read-only")])
def test_write_error_mid_save_gives_one_line(tmp_path, monkeypatch, capsys, code, words):
    """The disk fills (or turns read-only) inside the HDF5 write: one line, exit 1, old result kept."""
    out = tmp_path / "r"
    assert main(["run", str(SMALL), "--out", str(out), "--no-field", *_set(*ONE_DAY)]) == 0
    before = (out / "kpis.json").read_text()
    capsys.readouterr()
    import xarray as xr

    def full(*a, **k):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(xr.Dataset, "to_netcdf", full)
    monkeypatch.setattr(xr.Dataset, "dump_to_store", full)    # twin.store_io.write_netcdf's path
    rc = main(["run", str(SMALL), "--out", str(out), "--no-field", *_set(*ONE_DAY, "simulation.seed=3")])
    err = capsys.readouterr().err
    assert rc == 1 and words in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert (out / "kpis.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_ctrl_c_during_a_run_exits_130_with_one_line(tmp_path):
    """Ctrl-C used to print a KeyboardInterrupt traceback."""
    out = tmp_path / "r"
    assert cli("run", SMALL, "--out", out, "--no-field", *_set(*ONE_DAY)).returncode == 0
    before = (out / "kpis.json").read_text()
    p = subprocess.Popen([sys.executable, "-m", "twin.cli", "run", str(SMALL), "--out", str(out),
                          *_set("simulation.duration_days=3000", "simulation.sample_interval_s=600")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    assert (out / "kpis.json").read_text() == before


def test_python_api_save_refuses_user_folder(tmp_path, small_results):
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(OutputError):
        small_results.save(tmp_path)
    assert (tmp_path / "a.txt").exists()
