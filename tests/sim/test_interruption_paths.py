"""Issue 19: the interruption paths of the jobs and failures components do no pass over
every node, or over a job's nodes with a set test, per failure. Each fast path is checked
against the plain rule it replaces: a hit on a hot spare only drops that spare, a hit on
an active node interrupts the job; a scalable unit's nodes are ``flatnonzero(node_su ==
u)``; a placement's spread over the units is the one ``np.unique`` gives, and a node
array written in place is seen as a new placement."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import twin
from twin.sim.engine import Engine

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
#: Vela's 96-node job with four hot spares, failures off so that the test decides who fails
SPARES = ["simulation.duration_days=4", "workload.jobs.0.hot_spares=4", "failures.enabled=false"]


def _running_engine(until_s: float):
    e = Engine(twin.load_scenario(SCENARIOS / "vela.yaml", SPARES))
    e.start()
    e.env.run(until=until_s)
    return e


def test_a_hit_on_a_hot_spare_drops_the_spare_and_a_hit_on_an_active_node_interrupts():
    e = _running_engine(3 * 86400.0)
    job = e.jobs[0]
    assert job.status in ("running", "checkpointing") and len(job.spares) == 4
    nodes, spare = job.nodes.copy(), int(job.spares[1])
    # a spare and a node of no job: the job keeps running on the same nodes, one spare less
    free = int(np.flatnonzero(e.state.node_job < 0)[0])
    e.jobs.interrupt_nodes(np.array([free, spare]), "test")
    assert job.status in ("running", "checkpointing") and np.array_equal(job.nodes, nodes)
    assert spare not in job.spares and len(job.spares) == 3 and e.state.node_job[spare] == -1
    # a spare and an active node together: the job is interrupted
    e.jobs.interrupt_nodes(np.array([int(job.spares[0]), int(nodes[5])]), "test")
    assert job.status == "waiting"
    e.env.run(until=e.env.now + 1.0)          # the interruption is handled
    assert job.interruptions == 1


def test_scalable_unit_nodes_equal_the_full_scan():
    e = Engine(twin.load_scenario(SCENARIOS / "vela.yaml", ["simulation.duration_days=1"]))
    su = e.plant.node_su
    assert su.max() > 2
    for u in range(int(su.max()) + 1):
        assert np.array_equal(e.failures.su_nodes(u), np.flatnonzero(su == u))


def test_placement_spread_is_cached_by_array_and_checked_by_content():
    e = Engine(twin.load_scenario(SCENARIOS / "vela.yaml", ["simulation.duration_days=1"]))
    jobs, su = e.jobs, e.plant.node_su

    def fresh(nodes):
        jobs._spread.clear()
        return jobs.fabric_figures(nodes)
    per_su = np.flatnonzero(su == 0)
    nodes = np.concatenate([per_su, np.flatnonzero(su == 1)[:4]])
    ref = fresh(nodes.copy())
    first = fresh(nodes)
    assert first == ref
    assert jobs.fabric_figures(nodes) == first and len(jobs._spread) == 1    # a hit
    # the same array written in place to span four units: a new spread, not the cached one
    nodes[:] = np.concatenate([np.flatnonzero(su == u)[:len(nodes) // 4 + 1] for u in range(4)])[:len(nodes)]
    moved = jobs.fabric_figures(nodes)
    _, counts = np.unique(su[nodes], return_counts=True)
    assert jobs._spread[id(nodes)][1] == (len(nodes), 4, int(counts.max()))
    assert moved == fresh(nodes.copy())
