"""Each engine component alone, against a small state (Lenovo's 4-node cluster or a
hand-made ClusterState), plus the component protocol itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import twin
from twin import power
from twin.outputs import KPIS, OUTPUT_BY_NAME, OUTPUTS, label
from twin.phases import Phase
from twin.sim.engine import Engine
from twin.sim.state import ClusterState, RackState

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
VELA = ROOT / "scenarios" / "vela.yaml"


def small_engine(*overrides: str) -> Engine:
    return Engine(twin.load_scenario(SMALL, ["failures.enabled=false", "simulation.duration_days=2",
                                             *overrides]))


def small_state(racks: int = 2, nodes_per_rack: int = 2) -> ClusterState:
    return ClusterState(node_rack=np.repeat(np.arange(racks), nodes_per_rack), n_feeds=2, n_sus=1,
                        psu_capacity_w=1e4)


# ----------------------------------------------------------------------------- state
def test_node_phase_is_derived_from_power_health_readiness_and_jobs():
    st = small_state()
    assert (st.node_phase == Phase.OFF).all()                # nothing powered
    st.rack_powered[:] = True
    assert (st.node_phase == Phase.BURN_IN).all()            # powered, not burned in
    st.rack_ready[0] = True
    assert st.node_phase.tolist() == [Phase.IDLE, Phase.IDLE, Phase.BURN_IN, Phase.BURN_IN]
    st.node_job[0], st.node_job_phase[0] = 0, Phase.TRAINING
    st.node_healthy[1] = False
    assert st.node_phase.tolist() == [Phase.TRAINING, Phase.OFF, Phase.BURN_IN, Phase.BURN_IN]
    st.rack_tripped[0] = True                                # a trip takes the job's node down too
    assert st.node_phase.tolist()[:2] == [Phase.OFF, Phase.OFF]
    assert st.node_schedulable.sum() == 0                    # rack 1 still burning in


def test_a_tripped_rack_is_faulted_not_powered():
    st = small_state()
    st.rack_delivered[:] = True
    st.rack_powered[:] = True
    st.rack_ready[:] = True
    st.rack_tripped[1] = True
    codes = st.rack_state
    assert codes.tolist() == [RackState.IN_SERVICE, RackState.FAULTED]
    assert RackState.powered(codes).tolist() == [True, False]
    assert st.rack_on.tolist() == [True, False]
    # an undelivered rack during a feed loss is absent, not faulted
    st2 = small_state()
    st2.rack_unfed[:] = True
    assert (st2.rack_state == RackState.ABSENT).all()


def test_physics_key_sees_the_psu_capacity():
    st = small_state()
    k0 = st.physics_inputs()
    st.psu_capacity_w = 5e3                                 # a feed loss darkens PSUs
    assert st.physics_inputs() != k0


# ----------------------------------------------------------------------------- components
def test_ramp_admits_racks_by_their_worst_case_within_the_limit():
    eng = small_engine()
    st, ramp = eng.state, eng.ramp
    st.rack_delivered[:] = True
    wc = eng.power.rack_worst_w
    ramp.power_available_w = 1.5 * wc / eng.s.site.power.oversubscription
    ramp.admit()
    assert st.rack_powered.sum() == 1                        # floor(1.5) racks
    ramp.power_available_w = 10 * wc
    ramp.admit()
    assert st.rack_powered.sum() == min(len(st.rack_powered), int(eng.power.chain_capacity_w
                                                                   * eng.s.site.power.oversubscription // wc))
    ramp.power_available_w = 0.0                             # the plan falls: every rack shed
    ramp.admit()
    assert st.rack_powered.sum() == 0


def test_scheduler_packs_the_fullest_healthy_unit_and_avoids_degraded_ones():
    eng = small_engine()
    st, p = eng.state, eng.plant
    st.rack_delivered[:] = st.rack_powered[:] = st.rack_ready[:] = True
    job = eng.jobs[0]
    free = st.node_schedulable
    nodes = eng.scheduler.place(job, free)
    assert nodes is not None and len(nodes) == job.spec.nodes + job.spec.hot_spares
    assert len(np.unique(p.node_su[nodes])) == int(np.ceil(len(nodes) / eng.s.fabric.su_nodes))
    # a job that does not fit and is not elastic waits
    st.node_healthy[:] = False
    assert eng.scheduler.place(job, st.node_schedulable) is None


def test_breaker_trips_at_magnetic_pickup_and_its_racks_go_down():
    eng = small_engine()
    st, p = eng.state, eng.plant
    st.rack_delivered[:] = st.rack_powered[:] = True
    rpp_w = np.zeros(len(p.rpp_limit_w))
    rpp_w[0] = 20 * p.rpp_rating_w[0]                        # far beyond the magnetic pick-up
    eng.power.check_breakers(rpp_w)
    tripped = np.flatnonzero(st.rack_tripped)
    assert len(tripped) and (p.rack_rpp[tripped] == 0).all()
    assert RackState.powered(st.rack_state[tripped]).sum() == 0
    assert [e[1] for e in eng.events] == ["breaker_trip"]


def test_node_failure_marks_the_node_down_and_its_repair_brings_it_back():
    eng = small_engine("failures.enabled=false")
    st = eng.state
    st.rack_delivered[:] = st.rack_powered[:] = st.rack_ready[:] = True
    gpu = [c.name for c in eng.failures.classes].index("gpu")
    eng.failures.fail(0, gpu)
    assert not st.node_healthy[0] and st.node_phase[0] == Phase.OFF
    eng.env.run(until=30 * 86400)
    assert st.node_healthy[0]
    assert len(eng.failures.repair_times_s) == 1 and eng.failures.repair_times_s[0] > 0


def test_feed_loss_holding_darkens_psus_and_engages_the_brake():
    eng = Engine(twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml",
                                    ["failures.enabled=false", "simulation.duration_days=1"]))
    st = eng.state
    full = st.psu_capacity_w
    gen = eng.grid._feed_outage(0, 3600.0)
    next(gen)                                                # the loss, before the repair wait
    assert not st.feed_up[0]
    assert st.psu_capacity_w < full
    assert st.brake_clock <= 1.0
    assert [e[1] for e in eng.events] == ["feed_loss"]


def test_hall_inlets_equal_the_supply_without_heat():
    eng = small_engine()
    inlet = eng.thermal.inlets_c(np.zeros(eng.plant.n_racks))
    supply = min(u.supply_temp_c for h in eng.s.site.halls for u in h.cooling_units)
    np.testing.assert_allclose(inlet, supply, atol=1e-9)


def test_sampler_physics_conserves_node_power_into_racks():
    eng = small_engine()
    st = eng.state
    st.rack_delivered[:] = st.rack_powered[:] = st.rack_ready[:] = True
    ph = eng.sampler.physics()
    node_w = power.node_power_w(st.node_phase, eng.power.gpu_cap_w, st.rack_inlet_c[eng.plant.node_rack],
                                clock_fraction=st.node_clock, **eng.power.node_kwargs())
    net = eng.s.hardware.network_power_per_rack_w * st.rack_on.sum()
    assert ph.rack_power_w.sum() == pytest.approx(node_w.sum() + net, rel=1e-12)


def test_job_progress_is_rate_times_time():
    eng = small_engine()
    job = eng.jobs[0]
    job.status, job.rate_tok_s, job.t_last = "running", 1234.5, 0.0
    job.nodes = np.arange(2)
    eng.env.run(until=100.0)
    eng.jobs.advance(job)
    assert job.tokens == pytest.approx(123450.0)
    assert job.gpu_s_pending == pytest.approx(100.0 * 2 * eng.plant.gpus_per_node)


def test_step_clock_under_a_cap_is_the_power_models_inverse():
    """vela_a100 at 300 W: the clock the step model uses puts a training GPU exactly at
    the cap in the power model (one DVFS law: power forward, clock inverse)."""
    eng = Engine(twin.load_scenario(VELA, ["hardware.gpu_power_cap_w=300", "simulation.duration_days=1"]))
    node, f = eng.plant.node, eng.power.cap_clock_fraction
    assert 0.5 < f < 1.0
    p = power.gpu_power_w(np.array([Phase.TRAINING]), node.gpu_tdp_w, gpu_tdp_w=node.gpu_tdp_w,
                          gpu_idle_w=node.gpu_idle_w, clock_fraction=f)
    assert float(p[0]) == pytest.approx(300.0, rel=1e-9)


# ----------------------------------------------------------------------------- protocol
def test_every_component_output_is_declared_once_and_every_recorded_output_has_a_writer():
    eng = small_engine()
    declared = [o for c in eng.components for o in c.outputs]
    assert len(declared) == len(set(declared)), "an output claimed by two components"
    assert set(declared) <= set(OUTPUT_BY_NAME)
    recorded = {o.name for o in OUTPUTS if o.recorded}
    assert recorded <= set(declared)


def test_component_state_declarations_name_real_state():
    eng = small_engine()
    fields = set(vars(eng.state)) | {n for n in dir(type(eng.state)) if not n.startswith("_")}
    for c in eng.components:
        for name in (*c.reads, *c.writes):
            assert name in fields, f"{c.name} declares unknown state {name}"


def test_labels_come_from_the_table_with_units():
    assert label("gpus_powered") == "GPUs with power [GPU]"
    assert label("pue_mean") == "utility energy / IT energy over the run (energy-weighted PUE)"  # dimensionless
    assert all(k.units for k in KPIS)


def test_recorder_refuses_a_series_of_the_wrong_shape():
    eng = small_engine()
    with pytest.raises(ValueError, match="rpp_power_w"):
        eng.recorder.set("rpp_power_w", np.zeros(3))
    with pytest.raises(KeyError):
        eng.recorder["not_an_output"]


def test_repairs_still_waiting_for_a_spare_are_counted_at_the_end():
    """Issue 18: MTTR averaged only the finished repairs while nodes waited for spares."""
    eng = small_engine("failures.spares=0", "failures.restock_days=1000")
    st = eng.state
    st.rack_delivered[:] = st.rack_powered[:] = st.rack_ready[:] = True
    gpu = [c.name for c in eng.failures.classes].index("gpu")
    eng.env.run(until=3600.0)
    eng.failures.fail(0, gpu)
    res = eng.run()
    k = res.kpis
    assert k["repairs_open_at_end"] == 1
    assert np.isnan(k["mttr_h"])                             # nothing finished
    assert k["mttr_incl_open_h"] == pytest.approx((eng.horizon_s - 3600.0) / 3600.0)
