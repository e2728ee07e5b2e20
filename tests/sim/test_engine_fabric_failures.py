"""Spine switch and inter-switch cable faults as engine events (issue 16): while one is in
force every job's bandwidth, alone and shared, is routed around it by the fabric library;
it comes back at the repair, and the step time the engine uses follows. Hand values from
the topology; scenarios without fabric faults take the fault-free path (tests/golden)."""

import copy
import datetime as dt
from pathlib import Path

import pytest
import yaml

from twin.errors import ScenarioError
from twin.plant import step_estimate_for
from twin.scenario.loader import validate_data
from twin.sim.engine import Engine

VELA = Path(__file__).resolve().parents[2] / "scenarios" / "vela.yaml"
H = 3600.0
# fault window: from hour 6 to hour 12 of the run (the run starts 2023-03-01 00:00)
T0, T1 = 6 * H, 12 * H

# Two tiers of 10 leaves (20 nodes), 4 spines, one cable from each leaf to each spine (10 x
# 2 cables would pass 16 spine ports): a 16-port leaf with 12 down
# ports (2 nodes of 6 NICs) and 4 up (3:1). A ring crosses a leaf's uplinks with one node's
# 6 x 100 = 600 Gb/s: 4 x 100 up gives 400 / 600 of the NIC rate, 400 Gb/s per node; with
# one of the 4 spines down 3 x 100 = 300 Gb/s, (k-1)/k = 3/4 of it. Two nodes on one leaf
# never leave it: 600 Gb/s, failure or not.
FAT = dict(kind="fat_tree", rails=6, switch_ports=16, oversubscription=3.0, link_gbps=100.0,
           spines=None, tor_uplinks_per_spine=2)
SPINE = "spine:p0:0:1"
# 4:1-ish CLOS of test_engine_congestion with two spines: 6 nodes per TOR, one 25 Gb/s rail,
# one 25 Gb/s cable from each TOR to each of 2 spines. Two 9-node jobs on 3 TORs each send
# 25 Gb/s up the middle TOR (one ring crossing each): 2 x 25 fits; with a spine down its one
# 25 Gb/s uplink is split max-min, 12.5 Gb/s each. Alone, each job fits in 25 Gb/s either way.
CLOS = dict(kind="clos", su_nodes=6, rails=1, spines=2, tor_uplinks_per_spine=1, link_gbps=25.0,
            routing="adaptive", sharing="max_min")


def _data(fabric: dict, racks: int, jobs: list[dict], faults: list[dict], nodes_per_rack: int = 2) -> dict:
    d = copy.deepcopy(yaml.safe_load(VELA.read_text()))
    d["simulation"]["duration_days"] = 1
    d["site"]["halls"][0]["rows"] = [dict(d["site"]["halls"][0]["rows"][0], racks=racks)]
    d["site"]["cooling_system"] = {"model": "legacy"}
    d["site"]["power"]["grid"] = {"sag_rate_per_year": 0, "outage_rate_per_year": 0}
    d["hardware"]["nodes_per_rack"] = nodes_per_rack
    d["fabric"].update(fabric)
    d["fabric"]["faults"] = faults
    d["failures"] = {"rate_scale": 0.0}
    d["ramp"] = {"burn_in_days": 0, "waves": [dict(d["ramp"]["waves"][0], racks=racks)]}
    base = dict(d["workload"]["jobs"][0], checkpoint_interval_s=1e6, restart_s=60)
    d["workload"]["jobs"] = [dict(base, **j) for j in jobs]
    return d


def _fault(part: str | list, start_s: float = T0, end_s: float = T1, **kw) -> dict:
    when = dt.datetime(2023, 3, 1) + dt.timedelta(seconds=start_s)
    key = "switch" if isinstance(part, str) else "link"
    kind = "spine_switch" if key == "switch" else "fabric_link"
    return dict(kind=kind, **{key: part}, time=when.isoformat(), duration_s=end_s - start_s, **kw)


def _engine(d: dict) -> Engine:
    e = Engine(validate_data(d))
    e.start()
    return e


def _at(e: Engine, t_s: float) -> list[tuple[float, float]]:
    """(per-node bandwidth [Gb/s] the step model got, step time [s]) of every job at t."""
    e.env.run(until=t_s)
    out = []
    for job in e.jobs:
        assert job.status == "running"
        _, bw = e.jobs.fabric_figures(job.nodes)
        out.append((bw * e.jobs.shared_fraction(job), job.step.step_time_s))
    return out


def _fat(faults, **fabric) -> Engine:
    # a 10-node job over 5 leaves, a 2-node job inside one leaf
    return _engine(_data(dict(FAT, **fabric), 10, [dict(name="wide", nodes=10, global_batch=160),
                                  dict(name="inside", nodes=2, global_batch=32)], faults))


@pytest.mark.parametrize("sharing", ["none", "max_min"])
def test_one_of_four_spines_down_leaves_three_quarters_and_comes_back(sharing):
    # with max_min the two jobs share no switch link: the shared solve gives each its alone
    # rate with the spine down (its fraction over the alone rate is 1, both with the fault)
    e = _fat([_fault(SPINE)], sharing=sharing)
    wide, inside = e.jobs[0], e.jobs[1]
    before = _at(e, T0 - H)
    assert [bw for bw, _ in before] == pytest.approx([400.0, 600.0])   # 4/6 of 600; one leaf
    during = _at(e, T0 + H)
    assert during[0][0] == pytest.approx(300.0)          # 3/4 of 400: (k-1)/k, k = 4 spines
    assert during[1] == before[1]                        # inside one leaf: untouched
    assert e.failures.failed_switches == (SPINE,)
    after = _at(e, T1 + H)
    assert after == before                               # repaired: the same figures
    assert e.failures.failed_switches == ()
    # the step time the engine uses is compute's at the hand bandwidth (the fabric figures
    # feed it unchanged), and it is longer while the spine is down
    s = e.s
    node = e.plant.models[0]
    hops, _ = e.jobs.fabric_figures(wide.nodes)
    ref = {bw: step_estimate_for(s, wide.spec, node, 10, clock_fraction=1.0, inter_node_gbps=bw,
                                 hops=hops).step_time_s for bw in (400.0, 300.0)}
    assert before[0][1] == pytest.approx(ref[400.0], rel=1e-12)
    assert during[0][1] == pytest.approx(ref[300.0], rel=1e-12)
    assert during[0][1] > before[0][1]
    assert inside.step.step_time_s == before[1][1]
    kinds = [(k, t) for _, k, t, _ in e.events if k.startswith("fabric_")]
    assert kinds == [("fabric_fault", SPINE), ("fabric_restored", SPINE)]


def test_tokens_follow_the_step_time_through_the_window():
    """The wide job trains 6 h at the fault's rate: the rates are in the inverse ratio of
    the two step times, and the tokens it misses are the window times their difference."""
    free, hit, mid = _fat([]), _fat([_fault(SPINE)]), _fat([_fault(SPINE)])
    (_, step_full), _ = _at(free, T0 - H)
    (_, step_down), _ = _at(mid, T0 + H)
    rate_full, rate_down = free.jobs[0].rate_tok_s, mid.jobs[0].rate_tok_s
    assert rate_down / rate_full == pytest.approx(step_full / step_down, rel=1e-12)
    for e in (free, hit):
        e.env.run(until=T1 + 2 * H)
        e.jobs.advance(e.jobs[0])
    lost = free.jobs[0].tokens - hit.jobs[0].tokens
    assert lost == pytest.approx((T1 - T0) * (rate_full - rate_down), rel=1e-9)
    assert lost > 0


def test_failed_cables_of_one_leaf_bound_the_job_that_crosses_it():
    # two of the leaf's four uplinks cut (to spines 0 and 1): 2 x 100 up for 600, 200 Gb/s
    faults = [_fault(["leaf:p0:2", "spine:p0:0:0"]), _fault(["leaf:p0:2", "spine:p0:0:1"])]
    e = _fat(faults)
    during = _at(e, T0 + H)
    assert during[0][0] == pytest.approx(200.0)
    assert during[1][0] == pytest.approx(600.0)
    assert len(e.failures.failed_links) == 2
    assert _at(e, T1 + H)[0][0] == pytest.approx(400.0)


def test_shared_spines_a_fault_halves_two_jobs_that_share_an_uplink():
    jobs = [dict(name="a", nodes=9, global_batch=144), dict(name="b", nodes=9, global_batch=144)]
    e = _engine(_data(CLOS, 9, jobs, [_fault("spine:p0:0:0")], nodes_per_rack=2))
    before = _at(e, T0 - H)
    assert [bw for bw, _ in before] == pytest.approx([25.0, 25.0])
    during = _at(e, T0 + H)
    assert [bw for bw, _ in during] == pytest.approx([12.5, 12.5])   # one 25 Gb/s uplink, max-min
    # alone, each still fits in the one uplink left: the loss comes from the shared solve
    assert [e.jobs.fabric_figures(j.nodes)[1] for j in e.jobs] == pytest.approx([25.0, 25.0])
    assert during[0][1] > before[0][1]
    assert _at(e, T1 + H) == before


def test_no_fabric_fault_no_process_and_no_change():
    e = _fat([])
    assert [g.__qualname__ for g in e.failures.processes()] == ["Failures._failures"]
    assert e.jobs._fabric_fails is None


def _problems(d: dict) -> list:
    with pytest.raises(ScenarioError) as err:
        validate_data(d)
    return [(p.path, p.value) for p in err.value.problems]


@pytest.mark.parametrize("fault, path", [
    (_fault("spine:p0:0:9"), "fabric.faults.0.switch"),
    (_fault("leaf:p0:0"), "fabric.faults.0.switch"),
    (_fault(["leaf:p0:0", "leaf:p0:1"]), "fabric.faults.0.link"),
    (_fault(["leaf:p0:0", "spine:p0:0:0"], cables=2), "fabric.faults.0.cables"),
])
def test_an_unknown_switch_or_link_is_refused_naming_the_field(fault, path):
    assert [p for p, _ in _problems(_data(FAT, 10, [dict(name="j", nodes=2)], [fault]))] == [path]


def test_overlapping_windows_of_one_part_are_refused():
    d = _data(FAT, 10, [dict(name="j", nodes=2)], [_fault(SPINE), _fault(SPINE, T1 - 1, T1 + H)])
    assert [p for p, _ in _problems(d)] == ["fabric.faults.1.time"]
    # one after the other, or on different parts: accepted
    validate_data(_data(FAT, 10, [dict(name="j", nodes=2)], [_fault(SPINE), _fault(SPINE, T1, T1 + H)]))
    validate_data(_data(FAT, 10, [dict(name="j", nodes=2)], [_fault(SPINE), _fault("spine:p0:0:2")]))


def test_spine_fault_kinds_name_their_part():
    f = _fault(SPINE)
    f["link"] = ["leaf:p0:0", SPINE]
    assert [p for p, _ in _problems(_data(FAT, 10, [dict(name="j", nodes=2)], [f]))] == ["fabric.faults.0"]


def test_a_leaf_cut_off_from_every_spine_stalls_the_job_that_crosses_it_until_the_repair():
    # all four uplinks of leaf 2 cut: the wide job's ring is partitioned (0 Gb/s, no step
    # completes, no tokens), the job inside leaf 5 trains on; at the repair it resumes
    faults = [_fault(["leaf:p0:2", f"spine:p0:0:{j}"]) for j in range(4)]
    e = _fat(faults)
    before = _at(e, T0 - H)
    during = _at(e, T0 + H)
    assert during[0][0] == 0.0 and during[0][1] == float("inf") and e.jobs[0].rate_tok_s == 0.0
    assert during[1] == before[1]
    stalled = e.jobs[0].tokens
    _at(e, T1 - 60.0)
    assert e.jobs[0].tokens == stalled
    assert _at(e, T1 + H) == before and e.jobs[0].rate_tok_s > 0
