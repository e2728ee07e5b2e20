"""A replay's feed load is the run's: the IT path and, where the chain carries the plant on the
switchboards (Blue Vela), each feed's share of the cooling and of the 80 kW house loads
(twin.power.chain.split_mechanical_w, audit finding 3)."""

from __future__ import annotations

import numpy as np

import twin
from twin.cli.compare import load_run_dataset
from twin.cli.replay import run_replay_cli
from twin.telemetry.export import write_openmetrics

from .conftest import ROOT

SCENARIO = str(ROOT / "scenarios" / "blue_vela.yaml")
# racks arrive 2024-01-08; replay drives the legacy cooling model only; no grid events
SETS = ["simulation.duration_days=12", "site.cooling_system.model=legacy", "site.power.grid.sag_rate_per_year=0",
        "site.power.grid.outage_rate_per_year=0", "site.power.grid.feed_outage_rate_per_year=0",
        "site.power.chain.mechanical.carried_by=[utility,transformers,switchboards,generators]"]


def test_replay_feed_power_carries_the_cooling_share_as_the_run(tmp_path):
    ds = twin.simulate(twin.load_scenario(SCENARIO, SETS)).dataset
    measured = tmp_path / "load.om"
    write_openmetrics(ds[["rack_power_w", "outdoor_temp_c"]].assign_attrs(ds.attrs), measured)
    out = tmp_path / "replay"
    sets = [x for s in SETS for x in ("--set", s)]
    assert run_replay_cli([SCENARIO, str(measured), "--out", str(out), *sets]) == 0
    rp = load_run_dataset(out)
    on = ds.facility_it_power_w.values > 0
    assert on.sum() > 24
    for var in ("feed_power_w", "feed_load_fraction"):
        np.testing.assert_allclose(rp[var].values, ds[var].values, rtol=1e-5, atol=1e-3, err_msg=var)
    # both feeds: the whole facility and the chain's house loads
    np.testing.assert_allclose(rp.feed_power_w.values.sum(axis=1), rp.facility_total_power_w.values + 80e3, rtol=1e-9)


def test_replay_follows_the_chains_dated_ups_mode_as_the_run(tmp_path):
    # Blue Vela's chain bypasses the UPS on 2024-09-01: a replay across that date carries a
    # UPS loss before it and none after, sample for sample as the run (before the run's tree
    # switch was shared, a replay kept the starting mode's loss all through September)
    sets = SETS[1:] + ["simulation.start=2024-08-25", "simulation.duration_days=12"]
    ds = twin.simulate(twin.load_scenario(SCENARIO, sets)).dataset
    measured = tmp_path / "load.om"
    write_openmetrics(ds[["rack_power_w", "outdoor_temp_c"]].assign_attrs(ds.attrs), measured)
    out = tmp_path / "replay"
    assert run_replay_cli([SCENARIO, str(measured), "--out", str(out),
                           *[x for s in sets for x in ("--set", s)]]) == 0
    rp = load_run_dataset(out)
    after = ds.time.values >= np.datetime64("2024-09-01")
    on = ds.facility_it_power_w.values > 0
    assert (on & after).sum() > 24 and (on & ~after).sum() > 24
    assert (rp.ups_loss_w.values[after] == 0).all()
    assert (rp.ups_loss_w.values[on & ~after] > 0).all()
    np.testing.assert_allclose(rp.ups_loss_w.values, ds.ups_loss_w.values, rtol=1e-6, atol=1e-3)
