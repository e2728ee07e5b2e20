"""CLI without rough edges: --version, a closed pipe ends quietly, progress bars."""

import io
import subprocess
import sys
from pathlib import Path

from twin._version import __version__
from twin.cli.progress import fraction_progress, progress, sweep_progress

ROOT = Path(__file__).resolve().parents[1]


def test_version_prints_the_package_version():
    r = subprocess.run([sys.executable, "-m", "twin.cli", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"twin {__version__}"


def test_closed_pipe_ends_quietly():
    """`twin schema | head -1`: the reader goes away after one line; no traceback."""
    p = subprocess.Popen([sys.executable, "-m", "twin.cli", "schema"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()                        # what `head -1` does after its line
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    assert first.strip() == b"{"
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_progress_bars_draw_when_forced_and_stay_silent_off_a_terminal():
    out = io.StringIO()
    bar = fraction_progress("render", steps=10, force=True, file=out)
    for f in (0.3, 0.6, 1.0):
        bar(f)
    assert "render" in out.getvalue() and "10/10" in out.getvalue()
    quiet = io.StringIO()                   # a StringIO is no TTY: tqdm turns itself off
    with progress(5, "frames", file=quiet) as b:
        b.update(5)
    assert quiet.getvalue() == ""
    s = io.StringIO()
    cb = sweep_progress("sweep", force=True, file=s)
    cb(0, 0, 4, 0.0)
    cb(2, 1, 4, 1.0)
    cb(4, 1, 4, 2.0)
    assert "4/4" in s.getvalue() and "1 failed" in s.getvalue()
