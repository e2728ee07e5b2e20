"""The failure component's speed paths (issue 19) give the results of their references, bit
for bit.

A spare part ordered by a repair arrives by a callback of the lead-time timeout
(``Failures.restock_by_callback``); the reference is a process per order, whose resumption is
that same timeout's callback. With an empty stock every GPU swap waits for a restock, so the
order in which arriving parts serve the waiting repairs shows in every repair's end time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import twin
from twin.sim.failures import Failures

BV = Path(__file__).resolve().parents[2] / "scenarios" / "blue_vela.yaml"
#: a stock that runs dry: most GPU and DIMM repairs wait for a part ordered days before
SHORT_STOCK = ["simulation.duration_days=20", "failures.rate_scale=30", "failures.technicians=50",
               "failures.restock_days=5", "failures.spares={gpu: 0, dimm: 5}"]


def _run(monkeypatch, by_callback: bool):
    monkeypatch.setattr(Failures, "restock_by_callback", by_callback)
    return twin.simulate(twin.load_scenario(BV, SHORT_STOCK))


@pytest.mark.slow
def test_spares_by_callback_give_the_process_results_bit_for_bit(monkeypatch):
    fast, ref = _run(monkeypatch, True), _run(monkeypatch, False)
    ev = ref.events
    waited = ev[(ev.kind == "repair_end") & ev.detail.str.startswith("gpu,")]
    assert len(waited) > 20                          # the case exercises the restocks
    assert fast.events.equals(ref.events)
    assert fast.kpis.keys() == ref.kpis.keys()
    for k, v in ref.kpis.items():
        assert fast.kpis[k] == v or (v != v and fast.kpis[k] != fast.kpis[k]), k
    for name, var in ref.dataset.data_vars.items():
        np.testing.assert_array_equal(fast.dataset[name].values, var.values, err_msg=name)
    # every GPU swap waited for a part ordered by an earlier repair, 5 days before
    assert waited.detail.str.extract(r", ([0-9.]+) h")[0].astype(float).min() > 5 * 24 - 1


def test_one_node_up_reads_the_mask_rule_at_that_node():
    """``ClusterState.node_up_at(n)`` (the failure process's thinning test, read from the
    fields) equals ``node_up[n]`` through writes of every field the mask reads."""
    from twin.sim.engine import Engine

    small = BV.parent / "lenovo_small.yaml"
    st = Engine(twin.load_scenario(small, ["simulation.duration_days=1"])).state
    rng = np.random.default_rng(19)
    n_nodes, n_racks = len(st.node_healthy), len(st.rack_powered)
    st.rack_powered[:] = True
    seen = set()
    for _ in range(60):
        field = ("node_healthy", "node_grid_down", "rack_powered", "rack_tripped", "rack_unfed",
                 "rack_thermal_off")[rng.integers(0, 6)]
        arr = getattr(st, field)
        i = rng.integers(0, n_nodes if field.startswith("node") else n_racks, size=rng.integers(1, 4))
        arr[i] = rng.random(len(i)) < 0.5
        up = st.node_up
        got = np.array([st.node_up_at(n) for n in range(n_nodes)])
        np.testing.assert_array_equal(got, up, err_msg=field)
        seen.update(map(bool, up))
    assert seen == {True, False}
