"""Golden numbers: every shipped scenario gives the KPIs recorded in tests/golden/golden.json.

Written before the engine was split into components (issue 11); a refactor must not move
a number. A change that is meant to move one regenerates the file with
``tests/golden/make_golden.py`` and says why in its commit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from golden.make_golden import ROOT, SCENARIOS, fingerprint

import twin

GOLDEN = json.loads((Path(__file__).parent / "golden" / "golden.json").read_text())
#: float tolerance: summation order may change in a refactor, physics may not
REL_TOL = 1e-9


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)
    return a == b


@pytest.mark.parametrize("rel", SCENARIOS)
def test_shipped_scenario_matches_golden(rel):
    want = GOLDEN[rel]
    got = fingerprint(twin.simulate(twin.load_scenario(ROOT / "scenarios" / rel)))
    bad = [f"kpi {k}: {got['kpis'].get(k)!r} != {v!r}" for k, v in want["kpis"].items()
           if not _close(got["kpis"].get(k), v)]
    bad += [f"new kpi {k}" for k in got["kpis"] if k not in want["kpis"]]
    bad += [f"sum of {k}: {got['sums'].get(k)!r} != {v!r}" for k, v in want["sums"].items()
            if not _close(got["sums"].get(k), v)]
    if got["n_events"] != want["n_events"]:
        bad.append(f"events {got['n_events']} != {want['n_events']}")
    assert not bad, "\n".join(bad)
