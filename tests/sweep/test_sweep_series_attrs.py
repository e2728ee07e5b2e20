"""Audit HA2 F15: the sweep's selected series keep the units and long names the run's
results.nc gives them, and the ``day`` coordinate says it is time in days at the runs' sample
interval (hourly values, not daily ones)."""

from __future__ import annotations

import numpy as np

import twin
from twin.sweep import SweepSpec, load_sweep, run_sweep

from .conftest import SCENARIOS, SMALL

SERIES = ("facility_it_power_w", "gpus_busy", "tokens_cumulative", "inlet_max_c", "cooling_power_w")

#: series derived from per-rack/job data (not variables of results.nc): twin.outputs' own words
DERIVED = {"tokens_cumulative": {"units": "tokens",
                                 "long_name": "training tokens done by all jobs (incl. not yet checkpointed)"},
           "inlet_max_c": {"units": "degC", "long_name": "hottest inlet of a powered rack"}}


def test_sweep_series_carry_the_runs_units_and_long_names(tmp_path):
    spec = SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"), overrides=SMALL, seeds=(0,), series=SERIES)
    ds = run_sweep(spec, tmp_path / "sw", workers=1).dataset
    run = twin.simulate(twin.load_scenario(spec.scenario, [*SMALL, "simulation.seed=0"])).dataset
    disk, _ = load_sweep(tmp_path / "sw")
    for n in SERIES:
        want = ({k: run[n].attrs[k] for k in ("units", "long_name")} if n in run else DERIVED[n])
        assert want["units"] and want["long_name"] != n
        for got in (ds, disk):
            assert {k: got[n].attrs[k] for k in ("units", "long_name")} == want, n
    assert ds.facility_it_power_w.attrs == {"units": "W", "long_name": "facility IT power"}
    # the day coordinate holds the hourly samples of one day, in days
    day = disk["day"]
    assert day.size == 24 and np.allclose(np.diff(day.values), 1 / 24)
    assert day.attrs["units"] == "days" and day.attrs["long_name"] == "time since the scenario start [days]"
    assert "one value per sample" in day.attrs["comment"]
