"""Fixtures of the telemetry tests: one short run, and a real Prometheus server on loopback.

The server is Debian's ``prometheus`` package (``.ci/run`` installs it). Each test that
needs it gets its own process on a free loopback port with a temporary storage folder,
stopped (by its own process id) when the test ends.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """lenovo_small over 3 days (30-min samples), saved as a run folder: (path, Results).

    It runs the legacy cooling model, the one ``twin replay`` drives (README, known limits), so
    that a replay of the run's own load can be compared with the run."""
    import twin
    s = twin.load_scenario(ROOT / "scenarios" / "lenovo_small.yaml",
                           ["simulation.duration_days=3", "site.cooling_system.model=legacy"])
    r = twin.simulate(s)
    out = tmp_path_factory.mktemp("run") / "lenovo_small"
    r.save(out)
    return out, twin.Results.load(out)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A Prometheus server this test started: ``query_range`` over its HTTP API."""

    def __init__(self, data_dir: Path, port: int, proc: subprocess.Popen):
        self.data_dir, self.port, self.proc = data_dir, port, proc
        self.url = f"http://127.0.0.1:{port}"

    def query_range(self, query: str, start: float, end: float, step: float) -> dict:
        q = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": step})
        with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{q}", timeout=30) as resp:
            return json.loads(resp.read())


@pytest.fixture
def prometheus_factory(tmp_path):
    """Start Prometheus on a data folder (after backfilling it): ``start(data_dir)``."""
    started: list[subprocess.Popen] = []
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is not installed (Debian package `prometheus`; .ci/run installs it)")

    def start(data_dir: Path) -> Prometheus:
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
        port = free_port()
        log = open(tmp_path / "prometheus.log", "w")
        proc = subprocess.Popen(
            [binary, f"--config.file={cfg}", f"--storage.tsdb.path={data_dir}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
            stdout=log, stderr=subprocess.STDOUT)
        started.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"prometheus exited: {(tmp_path / 'prometheus.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return Prometheus(data_dir, port, proc)
            except OSError:
                time.sleep(0.2)
        pytest.fail("prometheus did not become ready in 60 s")

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
