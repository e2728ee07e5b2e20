"""The failure draw's rate scale kept while none of the fields it reads is written (issue 14):
node_up's fields (its rack's power, breaker, feed and inlet protection; the node's grid drop
and health) and the racks' on-times. The jobs' writes of their nodes and phases and the
sampler's of inlets, clocks and acceleration come between most draws and leave it. The run
equals one whose scale is worked out at every draw, and a field left out of the key is
caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.sim import failures as failures_mod
from twin.sim.failures import Failures

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
#: Blue Vela's ramp (racks burning in, young) and many failures (node health written often)
SHORT = ["simulation.duration_days=12", "failures.rate_scale=30"]


def _run(patch=None):
    from test_sampler_speed import _patched_run
    return _patched_run(BV, SHORT, patch)


@pytest.fixture(scope="module")
def every_draw():
    """The scale worked out at every draw (nothing kept across draws)."""
    real = Failures.rate_scale

    def fresh(self):
        self._still = None
        return real(self)

    def patch(mp):
        mp.setattr(Failures, "rate_scale", fresh)
    return _run(patch)


def test_kept_rate_scale_equals_every_draw(every_draw, monkeypatch):
    from test_sampler_speed import _differ
    kept = []
    real = Failures.rate_scale

    def counted(self):
        hit = self._still is not None and self._still[0] == tuple(
            self.state.version(n) for n in failures_mod._SCALE_READS)
        kept.append(hit)
        return real(self)
    monkeypatch.setattr(Failures, "rate_scale", counted)
    res = _run()
    assert sum(kept) > len(kept) / 2                # kept across most draws
    assert (res.events.kind == "failure").sum() > 20
    assert _differ(res, every_draw) == []


def test_a_field_left_out_of_the_key_is_caught(every_draw):
    """Node health left out: a failed node keeps its rate (the scale of the last draw)."""
    from test_sampler_speed import _differ

    def patch(mp):
        mp.setattr(failures_mod, "_SCALE_READS", tuple(n for n in failures_mod._SCALE_READS if n != "node_healthy"))
    assert _differ(_run(patch), every_draw) != []


def test_versions_are_the_fields_write_counts():
    """``ClusterState.versions`` gives each field's :meth:`version`, in order, one name or many,
    and follows later writes."""
    import numpy as np

    from twin.sim.state import TRACKED_FIELDS, ClusterState

    st = ClusterState(node_rack=np.repeat(np.arange(4), 2), n_feeds=2, n_sus=1, psu_capacity_w=6000.0)
    rng = np.random.default_rng(3)
    for _ in range(50):
        name = str(rng.choice(["node_healthy", "rack_powered", "rack_on_since", "node_grid_down", "node_job"]))
        arr = getattr(st, name)
        arr[int(rng.integers(len(arr)))] = arr[0]
        for names in (failures_mod._SCALE_READS, ("node_job",), tuple(rng.permutation(TRACKED_FIELDS)[:3])):
            assert st.versions(names) == tuple(st.version(n) for n in names)
