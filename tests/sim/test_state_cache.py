"""The state's incrementally maintained masks (issue 19) against the formulas evaluated
whole: after any sequence of writes (single nodes, index arrays, boolean masks, slices,
in-place operators, whole assignments, writes through views), every derived array equals
the one computed from scratch, element for element, and an array handed out earlier
keeps the values it had."""

from __future__ import annotations

import numpy as np
import pytest

from twin.phases import Phase
from twin.sim.state import ClusterState, RackState


def fresh(st: ClusterState) -> dict[str, np.ndarray]:
    """Every derived array by its defining formula on plain copies of the fields."""
    rack = np.asarray(st.node_rack)
    on = (np.asarray(st.rack_powered) & ~np.asarray(st.rack_tripped) & ~np.asarray(st.rack_unfed)
          & ~np.asarray(st.rack_thermal_off))
    ready = np.asarray(st.rack_ready)
    job = np.asarray(st.node_job)
    up = on[rack] & ~np.asarray(st.node_grid_down) & np.asarray(st.node_healthy)
    free_phase = np.where(ready[rack], Phase.IDLE, Phase.BURN_IN)
    phase = np.where(up, np.where(job >= 0, np.asarray(st.node_job_phase), free_phase), Phase.OFF).astype(np.int8)
    faulted = (np.asarray(st.rack_tripped) | np.asarray(st.rack_unfed) | np.asarray(st.rack_thermal_off)) \
        & np.asarray(st.rack_powered)
    code = np.where(st.rack_powered, np.where(ready, RackState.IN_SERVICE, RackState.BURN_IN),
                    np.where(st.rack_delivered, RackState.OFF, RackState.ABSENT))
    return {"rack_on": on, "node_up": up, "node_powered": on[rack] & ~np.asarray(st.node_grid_down),
            "node_busy": job >= 0, "node_in_service": up & ready[rack],
            "node_schedulable": up & ready[rack] & (job < 0), "node_phase": phase,
            "rack_state": np.where(faulted, RackState.FAULTED, code).astype(np.int8)}


NODE_BOOL = ("node_healthy", "node_grid_down", "node_repairing")
RACK_BOOL = ("rack_delivered", "rack_powered", "rack_tripped", "rack_unfed", "rack_thermal_off", "rack_ready")


def random_write(st: ClusterState, rng: np.random.Generator) -> None:
    """One write to a random field in one of the ways the components write."""
    n, r = len(st.node_rack), len(st.rack_powered)
    kind = rng.integers(9)
    name = str(rng.choice(NODE_BOOL + ("node_job", "node_job_phase"))) if kind < 6 else str(rng.choice(RACK_BOOL))
    arr = getattr(st, name)
    size = len(arr)

    def value(k):
        if name == "node_job":
            return rng.integers(-1, 5, k)
        if name == "node_job_phase":
            return rng.integers(0, 5, k).astype(np.int8)
        return rng.random(k) < 0.5

    if kind == 0:                                          # one node
        i = int(rng.integers(size))
        arr[i] = value(1)[0]
    elif kind == 1:                                        # an index array (with repeats)
        idx = rng.integers(0, size, int(rng.integers(1, 6)))
        arr[idx] = value(len(idx))
    elif kind == 2:                                        # a boolean mask
        m = rng.random(size) < 0.05
        arr[m] = value(int(m.sum()))
    elif kind == 3:                                        # a slice
        a = int(rng.integers(size))
        arr[a:a + 3] = value(len(arr[a:a + 3]))
    elif kind == 4:                                        # through a view
        v = arr[1:]
        if len(v):
            v[int(rng.integers(len(v)))] = value(1)[0]
    elif kind == 5:                                        # a whole assignment
        setattr(st, name, value(size))
    elif kind == 6:                                        # in-place operators on racks
        if arr.dtype == bool:
            arr |= rng.random(r) < 0.1
            arr &= rng.random(r) < 0.9
    elif kind == 7:
        arr[int(rng.integers(r))] = bool(rng.integers(2))
    else:
        arr[rng.random(r) < 0.2] = bool(rng.integers(2))
    del n


@pytest.mark.parametrize("seed", range(6))
def test_cached_masks_equal_formulas_after_random_writes(seed):
    rng = np.random.default_rng(seed)
    st = ClusterState(node_rack=np.repeat(np.arange(24), 4), n_feeds=2, n_sus=3, psu_capacity_w=6000.0)
    st.rack_delivered[:] = True
    st.rack_powered[:20] = True
    st.rack_ready[:16] = True
    held = []
    for step in range(400):
        for _ in range(int(rng.integers(1, 4))):
            random_write(st, rng)
        if rng.random() < 0.7:                             # read some masks (or none) in between
            want = fresh(st)
            for name in rng.permutation(list(want))[: int(rng.integers(1, len(want) + 1))]:
                got = getattr(st, name)
                np.testing.assert_array_equal(got, want[name], err_msg=f"{name} after step {step}")
                assert got.dtype == want[name].dtype
                held.append((got, got.copy()))
    for got, snapshot in held:                              # nothing handed out changed later
        np.testing.assert_array_equal(got, snapshot)
    assert st._log_base > 0                                 # the write log was trimmed on the way


def test_derived_arrays_are_read_only_and_cached():
    st = ClusterState(node_rack=np.repeat(np.arange(3), 2), n_feeds=1, n_sus=1, psu_capacity_w=1.0)
    st.rack_powered[:] = True
    up = st.node_up
    assert st.node_up is up                      # no write: the same array
    with pytest.raises(ValueError):
        up[0] = False
    st.node_job[2] = 1                           # not an input of node_up
    assert st.node_up is up
    st.node_healthy[3] = False
    assert not st.node_up[3] and up[3]           # a new array; the old one kept its values


def test_physics_key_follows_writes():
    st = ClusterState(node_rack=np.repeat(np.arange(3), 2), n_feeds=1, n_sus=1, psu_capacity_w=1.0)
    k0 = st.physics_inputs()
    assert st.physics_inputs() == k0
    st.node_clock[1] = 0.5
    k1 = st.physics_inputs()
    assert k1 != k0
    st.node_clock[1] = 1.0                      # written back: the same inputs, the same key
    assert st.physics_inputs() == k0
    st.brake_clock = 0.9
    assert st.physics_inputs() != k0


def test_hall_record_reuse_equals_fresh_evaluation(monkeypatch):
    """The legacy hall record reuses a hall's unit loads and margins while the same heat,
    model and running units come back; with cooling-unit faults on and off during the run
    the recorded series equal those evaluated afresh at every sample."""
    from pathlib import Path

    import twin
    from twin.sim.engine import Engine
    from twin.sim.hall_thermal import HallThermal

    small = Path(__file__).resolve().parents[2] / "scenarios" / "lenovo_small.yaml"
    s = twin.load_scenario(small, ["simulation.duration_days=3", "simulation.sample_interval_s=600",
                                   "site.cooling_system.model=legacy",
                                   "site.cooling_faults.unit_failure_rate_per_year=150"])
    eng = Engine(s)
    reused = eng.run()
    assert eng.thermal._record_memo                         # the reuse path ran
    assert (reused.events["kind"] == "cooling_fault").sum() >= 2     # units went down and came back

    class NoMemo(dict):
        def __setitem__(self, key, value) -> None:          # never stores: every sample afresh
            pass

    init = HallThermal.__init__

    def fresh_init(self, engine):
        init(self, engine)
        self._record_memo = NoMemo()

    monkeypatch.setattr(HallThermal, "__init__", fresh_init)
    fresh = twin.simulate(s)
    for name in ("cooling_unit_load_w", "cooling_capacity_margin_w", "cooling_unit_margin_w",
                 "rack_inlet_peak_c", "cooling_fan_power_w"):
        np.testing.assert_array_equal(reused.dataset[name].values, fresh.dataset[name].values, err_msg=name)


def test_hall_record_whole_rows_equal_per_hall_peaks(monkeypatch):
    """Without sub-sample extremes the record writes the peak rows whole; forcing the
    per-hall path (an all-NaN GPU extreme on every hall, what that path uses when there is
    none) gives the same peak series, on the physical model whose halls carry state."""
    from pathlib import Path

    import twin
    from twin.sim.hall_thermal import HallThermal

    small = Path(__file__).resolve().parents[2] / "scenarios" / "lenovo_small.yaml"
    s = twin.load_scenario(small, ["simulation.duration_days=2", "simulation.sample_interval_s=900"])
    whole = twin.simulate(s)
    record = HallThermal.record

    def per_hall(self, i, rec):
        for hall in self.halls:
            if hall.peak_gpu_c is None:
                hall.peak_gpu_c = np.full(len(hall.idx), np.nan)
        record(self, i, rec)

    monkeypatch.setattr(HallThermal, "record", per_hall)
    halls = twin.simulate(s)
    for name in ("rack_inlet_peak_c", "rack_gpu_temp_peak_c"):
        assert np.isfinite(whole.dataset[name].values).any()
        np.testing.assert_array_equal(whole.dataset[name].values, halls.dataset[name].values, err_msg=name)
