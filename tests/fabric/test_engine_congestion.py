"""Congestion between jobs in the engine (issue 16): with ``fabric.sharing: max_min`` the
jobs that share links get their bandwidth, hence their exposed communication and their
tokens, from the max-min fair shares; a non-blocking rail-optimised fabric and the
default (each job alone) leave the tokens as they were."""

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

import twin
from twin.fabric import build_fabric
from twin.fabric.flows import fair_share_bandwidths_gbps

VELA = Path(__file__).resolve().parents[2] / "scenarios" / "vela.yaml"
# 4:1 oversubscribed CLOS: 6 nodes per TOR (one rail of 25 Gb/s), one 25 Gb/s uplink to
# one spine; two 9-node jobs on 3 TORs share the middle TOR's uplink
CLOS = dict(kind="clos", su_nodes=6, rails=1, spines=1, tor_uplinks_per_spine=1,
            link_gbps=25.0, routing="static_ecmp", sharing="max_min")
RAIL = dict(kind="rail_optimized", su_nodes=6, rails=1, spines=None, link_gbps=25.0,
            routing="static_ecmp", sharing="max_min")


def _tokens(tmp_path, fabric: dict, n_jobs: int) -> np.ndarray:
    d = yaml.safe_load(VELA.read_text())
    d = copy.deepcopy(d)
    d["simulation"]["duration_days"] = 2
    d["fabric"].update(fabric)
    d["site"]["power"]["grid"] = {"sag_rate_per_year": 0, "outage_rate_per_year": 0}
    d["failures"] = {"rate_scale": 0.0}
    d["ramp"] = {"burn_in_days": 0, "waves": [dict(d["ramp"]["waves"][0], racks=9)]}
    job = dict(d["workload"]["jobs"][0], nodes=9, global_batch=1440)
    d["workload"]["jobs"] = [dict(job, name=f"job{i}") for i in range(n_jobs)]
    path = tmp_path / f"s{n_jobs}.yaml"
    path.write_text(yaml.safe_dump(d))
    res = twin.simulate(twin.load_scenario(path, []))
    return res.dataset["job_tokens"].isel(time=-1).values


def test_the_placements_share_one_uplink_and_split_it():
    # the scheduler's placement (fullest scalable units first): job 0 on TOR 0 and half of
    # TOR 1, job 1 on TOR 2 and the other half; each ring crosses TOR 1's one uplink once
    g = build_fabric("clos", 18, su_nodes=6, rails=1, spines=1, tor_uplinks_per_spine=1,
                     link_gbps=25.0)
    jobs = [np.arange(0, 9), np.r_[9:12, 12:18]]
    r = fair_share_bandwidths_gbps(g, jobs, routing="ecmp")
    assert r["alone_gbps"] == pytest.approx([25.0, 25.0])
    assert r["bandwidth_gbps"] == pytest.approx([12.5, 12.5])


@pytest.mark.slow
def test_jobs_sharing_an_oversubscribed_clos_train_fewer_tokens(tmp_path):
    alone = _tokens(tmp_path, CLOS, 1)[0]
    pair = _tokens(tmp_path, CLOS, 2)
    assert alone > 0
    # each job gets half of the shared uplink: its data-parallel all-reduce takes longer
    # and is exposed, so each trains well below what it trains alone
    assert np.all(pair < 0.8 * alone) and np.all(pair > 0.3 * alone)
    # the default (every job sees the fabric alone) does not see the other job
    none = _tokens(tmp_path, dict(CLOS, sharing="none", routing="adaptive"), 2)
    assert none == pytest.approx([alone, alone], rel=1e-3)


@pytest.mark.slow
def test_a_non_blocking_rail_optimised_fabric_shows_no_congestion(tmp_path):
    alone = _tokens(tmp_path, RAIL, 1)[0]
    pair = _tokens(tmp_path, RAIL, 2)
    assert pair == pytest.approx([alone, alone], rel=1e-3)


def _two_halls(tmp_path, site_tier) -> float:
    d = yaml.safe_load(VELA.read_text())
    hall = copy.deepcopy(d["site"]["halls"][0])
    hall["name"] = "cloud_hall_2"
    d["site"]["halls"].append(hall)
    d["site"]["power"]["rpp"]["count"] = 16
    d["simulation"]["duration_days"] = 2
    d["ramp"] = {"burn_in_days": 0, "waves": [dict(d["ramp"]["waves"][0], racks=128)]}
    d["failures"] = {"rate_scale": 0.0}
    d["site"]["power"]["grid"] = {"sag_rate_per_year": 0, "outage_rate_per_year": 0}
    d["fabric"]["site_tier"] = site_tier
    d["workload"]["jobs"] = [dict(d["workload"]["jobs"][0], nodes=192)]  # spans both halls
    path = tmp_path / "halls.yaml"
    path.write_text(yaml.safe_dump(d))
    s = twin.load_scenario(path, [])
    return twin.simulate(s).kpis["tokens_total"]


@pytest.mark.slow
def test_a_job_across_two_halls_runs_over_the_site_tier(tmp_path):
    # two Vela halls of 128 nodes, one fabric each joined by a 4:1 site tier: the job's
    # rings cross between the halls twice per rail (one NIC's rate on an uplink of
    # 128 x 100 / 4 Gb/s), so only the two extra hops (latency) cost it anything
    one = _two_halls(tmp_path, None)
    site = _two_halls(tmp_path, {"oversubscription": 4.0})
    assert 0 < site <= one and site == pytest.approx(one, rel=0.01)
