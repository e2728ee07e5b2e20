"""``fabric.queue_pairs``: the flows static ECMP hashes per node-to-node connection, a
scenario input (issue 16, HF's check: the static figure of a measured Clos moves most with
it, 0.42 of the bisection with one flow per direction, 0.56 with four).

The engine's per-job bandwidth under ``routing: static_ecmp`` with ``sharing: max_min`` is
the fabric API's max-min fair share (:func:`twin.fabric.fair_share_bandwidths_gbps`) with
``qps`` = the field, for the jobs the engine placed, in the order it passed them.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

import twin
import twin.sim.jobs as sim_jobs
from twin.errors import ScenarioError
from twin.fabric import build_fabric
from twin.fabric.flows import fair_share_bandwidths_gbps
from twin.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
VELA = ROOT / "scenarios" / "vela.yaml"
# a CLOS of 6-node TORs (one rail of 25 Gb/s) with one uplink to each of two
# spines; two 9-node jobs on 3 TORs both cross the middle TOR's two uplinks, where their
# hashed flows collide by chance
CLOS = dict(kind="clos", su_nodes=6, rails=1, spines=2, tor_uplinks_per_spine=1,
            link_gbps=25.0, routing="static_ecmp", sharing="max_min")


def _scenario(tmp_path, queue_pairs: int | None):
    d = copy.deepcopy(yaml.safe_load(VELA.read_text()))
    d["simulation"]["duration_days"] = 1
    d["fabric"].update(CLOS)
    if queue_pairs is not None:
        d["fabric"]["queue_pairs"] = queue_pairs
    d["site"]["power"]["grid"] = {"sag_rate_per_year": 0, "outage_rate_per_year": 0}
    d["failures"] = {"rate_scale": 0.0}
    d["ramp"] = {"burn_in_days": 0, "waves": [dict(d["ramp"]["waves"][0], racks=9)]}
    job = dict(d["workload"]["jobs"][0], nodes=9, global_batch=1440)
    d["workload"]["jobs"] = [dict(job, name=f"job{i}") for i in range(2)]
    path = tmp_path / f"qp{queue_pairs}.yaml"
    path.write_text(yaml.safe_dump(d))
    return load_scenario(path)


def _engine_shares(tmp_path, monkeypatch, queue_pairs: int | None):
    """(bandwidth [Gb/s] each job's step was last estimated with, the engine's last
    two-job fair-share call: its placements and keyword arguments)."""
    s = _scenario(tmp_path, queue_pairs)
    calls: list = []
    last_bw: dict[str, float] = {}
    real_share, real_step = sim_jobs.fabric.fair_share_bandwidths_gbps, sim_jobs.step_estimate_for

    def share(graph, jobs, **kw):
        calls.append(([np.array(j) for j in jobs], kw))
        return real_share(graph, jobs, **kw)

    def step(scenario, spec, model, n_nodes, **kw):
        last_bw[spec.name] = kw["inter_node_gbps"]
        return real_step(scenario, spec, model, n_nodes, **kw)

    monkeypatch.setattr(sim_jobs.fabric, "fair_share_bandwidths_gbps", share)
    monkeypatch.setattr(sim_jobs, "step_estimate_for", step)
    twin.simulate(s)
    pair = [c for c in calls if len(c[0]) == 2]
    assert pair, "the two jobs never shared the fabric"
    return s, last_bw, pair[-1]


def _api(s, placements, queue_pairs: int) -> np.ndarray:
    g = build_fabric("clos", 18, su_nodes=6, rails=1, spines=2, tor_uplinks_per_spine=1,
                     link_gbps=25.0)
    return fair_share_bandwidths_gbps(g, placements, routing="ecmp", seed=s.simulation.seed,
                                      qps=queue_pairs)["bandwidth_gbps"]


@pytest.mark.parametrize("queue_pairs,want_gbps", [(1, 12.5), (8, 200.0 / 11.0)])
def test_the_engine_hashes_the_scenarios_queue_pairs(tmp_path, monkeypatch, queue_pairs, want_gbps):
    s, last_bw, (placements, kw) = _engine_shares(tmp_path, monkeypatch, queue_pairs)
    assert kw["qps"] == queue_pairs and kw["routing"] == "ecmp"
    api = _api(s, placements, queue_pairs)
    # both jobs cross the middle TOR's uplinks: with 1 flow per connection their two flows
    # land on one of the two cables (this seed) and halve it; with 8 the busier cable
    # carries 11 of 16 flows of 25/8 Gb/s, so each job runs at 25 x 8/11
    assert api == pytest.approx([want_gbps, want_gbps], rel=1e-12)
    got = [last_bw[f"job{i}"] for i in range(2)]
    assert got == pytest.approx(api.tolist(), rel=1e-9)


def test_the_default_is_four_flows_as_before(tmp_path, monkeypatch):
    s, last_bw, (placements, kw) = _engine_shares(tmp_path, monkeypatch, None)
    assert s.fabric.queue_pairs == 4 and kw["qps"] == 4
    api = _api(s, placements, 4)
    assert api == pytest.approx([20.0, 20.0], rel=1e-12)       # 25 x 4/5: 5 of 8 flows collide
    assert [last_bw["job0"], last_bw["job1"]] == pytest.approx(api.tolist(), rel=1e-9)
    # one flow per connection and eight give other figures for the same placements
    assert _api(s, placements, 1) == pytest.approx([12.5, 12.5], rel=1e-12)


@pytest.mark.parametrize("value,expected", [
    ("0", "greater than 0"), ("-2", "greater than 0"), ("2.5", "valid integer"),
    ("true", "valid integer"), ("'4'", "valid integer"), ("4.0", "valid integer")])
def test_a_bad_queue_pair_count_is_a_problem_naming_the_field(value, expected):
    with pytest.raises(ScenarioError) as exc:
        load_scenario(VELA, [f"fabric.queue_pairs={value}"])
    (prob,) = exc.value.problems
    assert prob.path == "fabric.queue_pairs" and expected in prob.expected


def test_a_positive_integer_is_taken():
    assert load_scenario(VELA, ["fabric.queue_pairs=1"]).fabric.queue_pairs == 1
    assert load_scenario(VELA).fabric.queue_pairs == 4
