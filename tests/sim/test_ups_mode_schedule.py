"""The UPS mode follows the chain's dated stages in a run (audit finding 4, engine part).

Blue Vela's chain has the UPS in double conversion as built and on maintenance bypass from
2024-09-01 (``site.power.chain.stages``). From that instant the run's UPS has no loss and
grid sags reach the PSUs: a 0.1 s sag (to 0 pu, beyond the PSUs' 12 ms hold-up) drops every
node that is up in September and is ridden through on the battery in August. Scenarios whose chain keeps one mode, or that have no chain, run as
before (the worktree comparison of the commit: byte-identical kpis.json and events.csv
for vela, lenovo_small and lenovo_large).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

import twin
from twin import power
from twin.power.tree import evaluate_ups_stage
from twin.scenario.power_chain import ups_mode_changes
from twin.sim.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
QUIET = ["site.power.grid.sag_rate_per_year=0", "site.power.grid.outage_rate_per_year=0",
         "site.power.grid.feed_outage_rate_per_year=0"]
SAGS = ('site.power.grid.events=[{time: "2024-08-15T12:00:00", kind: sag, duration_s: 0.1},'
        ' {time: "2024-09-15T12:00:00", kind: sag, duration_s: 0.1}]')
SWITCH = np.datetime64("2024-09-01T00:00:00")


def events(res, kind):
    return res.events[res.events.kind == kind]


@pytest.fixture(scope="module")
def bv():
    return twin.simulate(twin.load_scenario(BV, [*QUIET, SAGS]))


def test_blue_vela_schedule_is_the_chains():
    s = twin.load_scenario(BV)
    assert s.site.power.ups.mode == "double_conversion"
    assert ups_mode_changes(s.site.power.chain, s.simulation.start, s.site.power.ups.mode) == (
        "double_conversion", [(dt.date(2024, 9, 1), "bypass")])


def test_a_september_sag_drops_nodes_an_august_one_does_not(bv):
    drop, ride = events(bv, "grid_drop"), events(bv, "grid_ride_through")
    assert drop.time.tolist() == ["2024-09-15T12:00:00.000"]
    assert "dropped" in drop.detail.iloc[0] and int(drop.detail.iloc[0].split()[-2]) > 0
    assert ride.time.tolist() == ["2024-08-15T12:00:00.000"]
    assert ride.detail.iloc[0] == "sag 0.1 s, UPS double_conversion"
    assert bv.kpis["grid_drop_events"] == 1


def test_the_switch_is_logged_once_at_its_date(bv):
    ev = events(bv, "ups_mode")
    assert ev.time.tolist() == ["2024-09-01T00:00:00.000"]
    assert ev.detail.iloc[0].startswith("double_conversion -> bypass from 2024-09-01")


def test_no_ups_loss_from_the_switch_on(bv):
    ds = bv.dataset
    t = ds["time"].values
    loss = ds["ups_loss_w"].values
    after = t >= SWITCH
    assert after.any() and (~after).any()
    assert np.all(loss[after] == 0.0)
    # in line before: the loss of a modern transformerless unit on two 1,520 kW paths, 3.5 %
    # of the IT power at Blue Vela's usual load and up to 6.1 % at 500 kW (its no-load loss
    # weighs more at a light load): measured 3.46-6.07 % wherever 500 kW or more is drawn
    it = ds["facility_it_power_w"].values
    busy = (~after) & (it > 5e5)
    assert busy.sum() > 1000
    assert np.all((loss[busy] > 0.03 * it[busy]) & (loss[busy] < 0.065 * it[busy]))
    # the energy balance holds on both sides of the switch
    np.testing.assert_allclose(ds["facility_total_power_w"].values - ds["cooling_power_w"].values,
                               it + ds["distribution_loss_w"].values + loss, rtol=1e-6)
    dt_h = float((t[1] - t[0]) / np.timedelta64(1, "h"))
    assert bv.kpis["ups_loss_mwh"] == pytest.approx(loss.sum() * dt_h / 1e6, rel=1e-6)


def test_one_mode_runs_as_before():
    # no chain (vela) or no dated change: no switch, the site's mode, the one tree
    for name in ("vela.yaml", "lenovo_small.yaml"):
        e = Engine(twin.load_scenario(ROOT / "scenarios" / name))
        assert e.power.ups_changes_s == [] and list(e.power._trees) == [e.s.site.power.ups.mode]
        assert e.power.ups_mode_at_s(1e9) == e.s.site.power.ups.mode
    # Blue Vela ending before the bypass: the as-built mode all run, no process, no event
    e = Engine(twin.load_scenario(BV, ["simulation.duration_days=200"]))
    assert e.power.ups_changes_s == [] and e.power.tree.ups_mode == "double_conversion"


def test_ups_stage_again_equals_the_whole_tree():
    rng = np.random.default_rng(4)
    kw = dict(rack_rpp=np.repeat(np.arange(4), 3), rpp_limit_w=np.full(4, 80e3),
              feed_capacity_w=np.array([300e3, 300e3]), ups_capacity_w=200e3, rpp_feed=np.array([0, 0, 1, 1]))
    dc = power.build_power_tree(ups_mode="double_conversion", **kw)
    by = power.build_power_tree(ups_mode="bypass", **kw)
    x = rng.uniform(5e3, 20e3, (50, 12))
    up = np.ones((50, 2), bool)
    up[10:20, 1] = False
    rows = np.zeros(50, bool)
    rows[25:] = True
    mixed = evaluate_ups_stage(by, power.evaluate_power_tree(dc, x, up), up, rows)
    ref_dc, ref_by = power.evaluate_power_tree(dc, x, up), power.evaluate_power_tree(by, x, up)
    for name in ("ups_loss_w", "ups_load_fraction", "feed_w", "feed_loss_w", "feed_load_fraction", "utility_w",
                 "loss_w", "feed_ok", "ups_ok", "holds"):
        np.testing.assert_array_equal(getattr(mixed, name)[rows], getattr(ref_by, name)[rows], err_msg=name)
        np.testing.assert_array_equal(getattr(mixed, name)[~rows], getattr(ref_dc, name)[~rows], err_msg=name)
    assert np.all(mixed.ups_loss_w[rows] == 0.0) and np.all(mixed.ups_loss_w[:25].sum(axis=-1) > 0)


def test_switch_series_same_at_every_rack_series_level(bv):
    # the windows the sampler folds (rack_series none) and the whole (T, R) series the power
    # chain routes at the end (full) are re-evaluated from the switch on alike
    full = twin.simulate(twin.load_scenario(BV, [*QUIET, SAGS, "outputs.rack_series=full"])).dataset
    none = twin.simulate(twin.load_scenario(BV, [*QUIET, SAGS, "outputs.rack_series=none"])).dataset
    for name in ("ups_loss_w", "ups_load_fraction", "feed_power_w", "feed_loss_w", "facility_total_power_w"):
        np.testing.assert_allclose(none[name].values, full[name].values, rtol=1e-9, err_msg=name)
    assert np.all(full["ups_loss_w"].values[full["time"].values >= SWITCH] == 0.0)
