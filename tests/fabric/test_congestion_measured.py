"""The fabric congestion model against a measurement: effective bisection bandwidth of a
512-node non-blocking Clos with static and with adaptive routing (Geoffray and Hoefler, HOTI'08,
doi:10.1109/HOTI.2008.21: 38 % static, 77 % adaptive, 100 % adaptive on fewer nodes).

Rows in assets/reference/fabric_congestion_measured.csv (sources, reading, assumptions and the
search record in fabric_congestion_measured_sources.md); the twin's figures from
fabric_congestion_measured.py (random bisection patterns, every pair a two-node job, static
routing as ECMP with one flow per direction, max-min sharing).  Each twin figure and its error
are pinned in ``PINNED`` to the source's rounding (two decimals: 0.005); nothing is fitted.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference_scripts import reference_script

from twin.fabric import fabric_counts

hf = reference_script("fabric_congestion_measured")

#: the source prints two decimals
SOURCE_ROUNDING = 0.005

#: (twin figure, relative error) per row, measured on 1 Dec 2026 with the fabric model of
#: commit cd74870 (50 patterns from seed 2008).  Re-pin here when the model changes.
PINNED: dict[str, tuple[float, float]] = {
    "GH08_STATIC_512": (0.4232, 0.114),
    "GH08_ADAPTIVE_512": (1.0, 0.299),
    "GH08_ADAPTIVE_SMALLER": (1.0, 0.0),
}


@pytest.fixture(scope="module")
def errors() -> dict[str, dict]:
    return {e["id"]: e for e in hf.errors()}


def test_transcription():
    rows = {r["id"]: r for r in hf.rows()}
    assert {k: float(r["measured"]) for k, r in rows.items()} == {
        "GH08_STATIC_512": 0.38, "GH08_ADAPTIVE_512": 0.77, "GH08_ADAPTIVE_SMALLER": 1.0}
    assert {r["routing"] for r in rows.values()} == {"static", "adaptive"}
    assert all(r["flows_per_pair_direction"] == "1" and r["switch_ports"] == "32"
               and r["where"] == "abstract" for r in rows.values())


def test_the_twin_builds_the_measured_clos():
    # 512 nodes on 32-port crossbars, non-blocking, 3 crossbar hops: 32 leaves of 16 nodes,
    # 16 spines, one cable from every leaf to every spine
    g = hf.myrinet_clos()
    c = fabric_counts(g)
    assert (c["nodes"], c["leaf"], c["spine"], c["core"]) == (512, 32, 16, 0)
    assert c["leaf-spine"] == 512 == c["node-leaf"]
    pl = g.graph["layout"].planes[0]
    assert (pl.spines_per_pod, pl.m1, pl.tiers) == (16, 1, 2)


def test_patterns_are_perfect_matchings():
    for p in hf.bisection_patterns(np.arange(512), 3):
        assert p.shape == (256, 2)
        assert sorted(p.ravel().tolist()) == list(range(512))


def test_errors_pinned(errors):
    assert set(errors) == set(PINNED)
    for k, (twin, err) in PINNED.items():
        e = errors[k]
        measured = float(e["measured"])
        assert e["twin"] == pytest.approx(twin, abs=SOURCE_ROUNDING), (k, e["twin"])
        assert e["error"] == pytest.approx(err, abs=SOURCE_ROUNDING / measured), (k, e["error"])


def test_static_hashing_collides_and_adaptive_spreads(errors):
    # the measured ordering: static well below adaptive; the twin's static figure sits
    # above the measured one (it has no head-of-line blocking), by less than a fifth
    static, adaptive = errors["GH08_STATIC_512"], errors["GH08_ADAPTIVE_512"]
    assert static["twin"] < 0.5 < adaptive["twin"]
    assert 0.0 < static["error"] < 0.2
