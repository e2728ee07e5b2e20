"""Heterogeneous racks: node models and node counts per row and per rack, explicit rack
positions, jobs on one node model (issue 17, "racks that differ from each other"; issue 19,
"heterogeneous racks at that scale").

The numbers checked: GPUs installed = the sum over racks of nodes x GPUs per node of each
rack's catalog model; the vectorised node power of a mixed plant = each model's power
evaluated on its own nodes (two methods); facility IT power = the sum of the rack powers;
a homogeneous scenario written through overrides gives the same KPIs bit for bit.
"""

import copy
import datetime as dt
from pathlib import Path

import numpy as np
import pytest
import yaml

import twin
from twin import power
from twin.catalog import load_catalog
from twin.errors import ScenarioError
from twin.plant import build_plant, node_power_kwargs, rack_gpus, rack_positions, rack_worst_case_w
from twin.power.capacity import racks_fitting
from twin.scenario import validate_data
from twin.scenario.racks import rack_units_available

ROOT = Path(__file__).resolve().parents[2]
MIXED = ROOT / "scenarios" / "sites" / "mixed_hall.yaml"
SMALL = yaml.safe_load((ROOT / "scenarios" / "lenovo_small.yaml").read_text())
NODES = load_catalog().nodes


def scenario_of(data):
    return validate_data(copy.deepcopy(data), "x.yaml")


def problems_of(data):
    with pytest.raises(ScenarioError) as exc:
        validate_data(copy.deepcopy(data), "x.yaml")
    return exc.value.problems


def mixed_data() -> dict:
    return yaml.safe_load(MIXED.read_text())


# --------------------------------------------------------------------------- plant
def test_mixed_plant_counts_every_rack_from_its_own_model():
    s = twin.load_scenario(MIXED)
    p = build_plant(s)
    h100, nvl, l40s = NODES["xe9680_h100"], NODES["sr675v3_h100nvl"], NODES["sr675v3_l40s"]
    assert p.model_names == ("xe9680_h100", "sr675v3_h100nvl", "sr675v3_l40s")
    assert list(p.rack_node_model[[0, 15, 16, 21, 22]]) == ["xe9680_h100"] * 2 + ["sr675v3_h100nvl"] * 2 + [
        "sr675v3_l40s"]
    # 16 racks x 2 XE9680 + 6 racks x 4 SR675 V3 + 1 rack x 2 SR675 V3 L40S
    assert p.n_nodes == 16 * 2 + 6 * 4 + 2
    want_gpus = 16 * 2 * h100.gpu_count + 6 * 4 * nvl.gpu_count + 2 * l40s.gpu_count
    assert p.node_gpus.sum() == p.rack_gpus.sum() == rack_gpus(s).sum() == want_gpus
    # nodes of a rack are contiguous and of the rack's model
    assert np.array_equal(p.node_model_index, np.repeat(p.rack_model, p.rack_nodes))
    # worst case per rack = the single-model formula of the rack's model and node count
    wc = p.rack_worst_case_w()
    assert wc[0] == pytest.approx(rack_worst_case_w(s, h100))
    assert wc[16] == pytest.approx(rack_worst_case_w(s, nvl, nodes_per_rack=4))
    assert wc[22] == pytest.approx(rack_worst_case_w(s, l40s, nodes_per_rack=2))
    # the L40S rack stands where its override puts it, the others on their row's line
    xy, _, _, names = rack_positions(s.site.halls[0])
    assert tuple(xy[22]) == (12.5, 7.8) and names[22] == "l1-07"
    assert xy[21] == pytest.approx((4.3 + 5 * 0.6, 7.8))


def test_homogeneous_plant_keeps_scalar_parameters():
    p = build_plant(twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml"))
    assert p.homogeneous
    assert isinstance(p.node_param("gpu_tdp_w"), float) and isinstance(p.rack_worst_case_w(), float)
    assert p.node_power_kwargs() == node_power_kwargs(p.node)


def test_mixed_node_power_equals_each_model_on_its_own_nodes():
    """Two methods: the sampler's one vectorised call over a mixed plant (per-node arrays)
    against ``power.node_power_w`` of each catalog model on its own nodes (scalars)."""
    s = twin.load_scenario(MIXED)
    p = build_plant(s)
    rng = np.random.default_rng(4)
    phase = rng.integers(0, 7, p.n_nodes)
    inlet = rng.uniform(18, 32, p.n_nodes)
    clock = rng.uniform(0.6, 1.0, p.n_nodes)
    vec = power.node_power_w(phase, p.gpu_cap_w(), inlet, clock_fraction=clock, **p.node_power_kwargs())
    loop = np.zeros(p.n_nodes)
    for m, node in enumerate(p.models):
        idx = p.node_model_index == m
        loop[idx] = power.node_power_w(phase[idx], node.gpu_tdp_w, inlet[idx], clock_fraction=clock[idx],
                                       **node_power_kwargs(node))
    np.testing.assert_array_equal(vec, loop)


# --------------------------------------------------------------------------- runs
def test_homogeneous_scenario_through_overrides_gives_identical_kpis():
    """Lenovo small written plainly, and written with another default model that no rack
    uses: the row names the SR675 V3 and its node count, rack 2 is overridden to the same
    model, count and its own position. Same plant, same numbers, bit for bit."""
    plain = copy.deepcopy(SMALL)
    plain["simulation"]["duration_days"] = 7
    over = copy.deepcopy(plain)
    over["hardware"].update(node_model="xe9680_h100", nodes_per_rack=1)
    row = over["site"]["halls"][0]["rows"][0]
    row.update(node_model="sr675v3_h100nvl", nodes_per_rack=2,
               rack_overrides=[{"rack": 2, "node_model": "sr675v3_h100nvl", "nodes_per_rack": 2,
                                "x_m": row["x_m"] + 0.6, "y_m": row["y_m"]}])
    a, b = twin.simulate(scenario_of(plain)), twin.simulate(scenario_of(over))
    np.testing.assert_equal(a.kpis, b.kpis)          # NaN == NaN here; every other KPI bit for bit
    np.testing.assert_array_equal(a.dataset["rack_power_w"].values, b.dataset["rack_power_w"].values)


@pytest.fixture(scope="module")
def mixed_run():
    data = mixed_data()
    data["simulation"]["duration_days"] = 5
    s = scenario_of(data)
    return s, twin.simulate(s)


def test_mixed_run_installs_the_sum_of_the_parts(mixed_run):
    s, r = mixed_run
    ds = r.dataset
    assert ds["gpus_installed"].values.max() == int(rack_gpus(s).sum()) == 16 * 2 * 8 + 6 * 4 * 8 + 2 * 8
    # facility IT power is the sum of the racks' power (rack heat of every model counted
    # once); the series are stored as float32 (7 significant digits)
    np.testing.assert_allclose(ds["facility_it_power_w"].values, ds["rack_power_w"].values.astype(float).sum(axis=1),
                               rtol=1e-6)
    # admission committed each rack's own worst case: the logged sum equals the per-rack sum
    committed = [d for k, d in zip(r.events["kind"], r.events["detail"], strict=True) if k == "power_on"][0]
    want_kw = build_plant(s).rack_worst_case_w().sum() / 1e3
    assert committed.startswith(f"{want_kw:.0f} of ")
    # a powered NVL rack of four 8x400 W nodes draws more than an XE9680 pair at idle but
    # less than its own worst case
    wc = build_plant(s).rack_worst_case_w()
    assert (ds["rack_power_w"].values <= wc[None, :] + 1e-6).all()


def test_mixed_run_places_each_job_on_one_model(mixed_run):
    s, r = mixed_run
    from twin.sim.engine import Engine
    e = Engine(s)
    e.start()
    e.env.run(until=3 * 86400)
    p = e.plant
    by_name = {j.spec.name: j for j in e.jobs}
    for j in by_name.values():
        if len(j.nodes):
            assert len(set(p.node_model_index[np.concatenate([j.nodes, j.spares])])) == 1
    nvl = p.model_names.index("sr675v3_h100nvl")
    assert (p.node_model_index[by_name["h100_pretrain"].nodes] == 0).all()
    # names no model; every XE9680 is taken by the pre-training job and its spares, so the
    # scheduler picks the H100 NVL nodes
    assert (p.node_model_index[by_name["nvl_finetune"].nodes] == nvl).all()
    # its step time is the H100 NVL's: slower per GPU than the same job on H100 SXM
    h = by_name["h100_pretrain"].step.tokens_per_s_per_gpu
    n = by_name["nvl_finetune"].step.tokens_per_s_per_gpu
    assert n < h
    assert r.kpis["tokens_total"] > 0


# --------------------------------------------------------------------------- validation
def test_rack_units_of_a_42u_rack():
    assert rack_units_available(2.0) == 42       # EIA-310 1U = 44.45 mm; 42U racks are ~2.0 m tall


@pytest.mark.parametrize("edit, path, expect", [
    (lambda d: d["site"]["halls"][0]["rows"][2].update(node_model="dgx_b300"),
     "site.halls.0.rows.2.node_model", "a node model in the catalog"),
    (lambda d: d["site"]["halls"][0]["rows"][2]["rack_overrides"].append({"rack": 9, "nodes_per_rack": 1}),
     "site.halls.0.rows.2.rack_overrides.1.rack", "a rack of the row (1..7)"),
    (lambda d: d["site"]["halls"][0]["rows"][2]["rack_overrides"].append({"rack": 7, "nodes_per_rack": 1}),
     "site.halls.0.rows.2.rack_overrides.1.rack", "overridden once"),
    (lambda d: d["site"]["halls"][0]["rows"][2]["rack_overrides"][0].pop("y_m"),
     "site.halls.0.rows.2.rack_overrides.0", "both x_m and y_m"),
    # 15 SR675 V3 of 3U = 45U in a 2.0 m (42U) rack
    (lambda d: d["site"]["halls"][0]["rows"][2].update(nodes_per_rack=15),
     "site.halls.0.rows.2", "fit in a 2 m rack (42U)"),
    (lambda d: d["workload"]["jobs"][2].update(node_model="vela_a100"),
     "workload.jobs.2.node_model", "a node model of the delivered racks"),
    (lambda d: d["workload"]["jobs"][2].update(nodes=30),
     "workload.jobs.2.nodes", "24 delivered nodes of sr675v3_h100nvl"),
    (lambda d: d["hardware"].update(gpu_power_cap_w=150.0), "hardware.gpu_power_cap_w", "at least"),
    (lambda d: d["workload"].update(jobs=[], stream={"classes": [{"name": "pretrain", "share": 1.0, "gpus": [8],
                                                                  "gpu_weights": [1.0], "duration_median_s": 3600}]}),
     "workload.stream", "racks of one node model with a stream or trace"),
])
def test_bad_heterogeneous_input_is_one_clear_problem(edit, path, expect):
    data = mixed_data()
    edit(data)
    probs = problems_of(data)
    match = [p for p in probs if p.path == path]
    assert match, [str(p) for p in probs]
    assert any(expect in p.expected for p in match), [str(p) for p in match]


def test_shipped_mixed_hall_validates():
    s = twin.load_scenario(MIXED)
    assert s.simulation.start == dt.date(2025, 3, 3)


# --------------------------------------------------------------------------- capacity
def test_racks_fitting_takes_the_longest_prefix_of_per_rack_worst_cases():
    w = np.array([20.0, 20.0, 10.0, 20.0, 10.0])
    assert racks_fitting(50.0, w, 5) == 3                      # 20 + 20 + 10 = 50 fits, +20 does not
    assert racks_fitting(50.0, w, 2) == 2                      # no more than the positions
    assert racks_fitting(1e3, w, 5, rack_limit_kw=15.0) == 0   # the first rack exceeds its circuits
    # alike racks: the prefix rule is floor(capacity / worst)
    assert racks_fitting(70.0, np.full(5, 20.0), 5) == racks_fitting(70.0, 20.0, 5) == 3


def test_single_feed_loss_darkens_each_models_own_psus():
    """Feed A lost on a 2N hall: each node loses the PSUs cabled to A, by its own model
    (XE9680: 3 of 6 x 2800 W; SR675 V3: 2 of 4 x 2400 W, psus_without_input), and its PSU
    capacity and power brake follow its own redundancy."""
    data = mixed_data()
    data["simulation"]["duration_days"] = 3
    data["site"]["power"]["grid"] = {"events": [{"time": "2025-03-04T12:00:00", "kind": "outage",
                                                 "duration_s": 7200, "feed": "A"}]}
    s = scenario_of(data)
    from twin.sim.engine import Engine
    e = Engine(s)
    e.start()
    e.env.run(until=(24 + 12.5) * 3600)
    st, p = e.state, e.plant
    assert not st.feed_up[0]
    for m, node in enumerate(p.models):
        lost = power.psus_without_input(node.psu_count, st.feed_up)
        want_w = (node.psu_count - lost) * node.psu_rating_w
        got = np.asarray(st.psu_capacity_w)[p.node_model_index == m]
        assert (got == want_w).all(), (node.description, got[:2], want_w)
        brake = power.gpu_power_brake_clock_fraction(lost, node.psu_count, node.psus_required)
        assert (np.broadcast_to(st.brake_clock, (p.n_nodes,))[p.node_model_index == m] == brake).all()
    e.env.run(until=(24 + 15) * 3600)                 # the feed is back: full PSUs, no brake
    assert st.feed_up.all() and np.all(np.asarray(st.brake_clock) == 1.0)
