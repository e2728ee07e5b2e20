"""Failure accounting: every node under repair is counted as failed.

A rail/NIC failure (catalog scope ``rail_su``) leaves its node healthy, since the scalable
unit runs degraded, but sends a technician to it; ``nodes_failed`` ("delivered nodes failed
or in repair") must count it, or ``nodes_in_repair`` exceeds ``nodes_failed`` and the run's
accounting invariant fires (it did on Blue Vela's job stream).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import twin
from twin.reliability import load_failure_classes

ROOT = Path(__file__).resolve().parents[2]


def test_nodes_under_repair_are_counted_as_failed():
    s = twin.load_scenario(ROOT / "scenarios" / "blue_vela_fixed.yaml",
                           ["simulation.duration_days=60", "failures.rate_scale=8", "simulation.seed=3"])
    r = twin.simulate(s)
    ds, ev = r.dataset, r.events
    rail = {c.name for c in load_failure_classes() if c.scope == "rail_su" and c.repair != "none"}
    starts = ev[ev.kind == "repair_start"]
    assert starts.detail.isin(rail).any(), "the case must repair a rail/NIC failure"
    in_repair, failed = ds.nodes_in_repair.values, ds.nodes_failed.values
    assert in_repair.max() > 0
    assert np.all(in_repair <= failed), "a node under repair is not counted as failed"
