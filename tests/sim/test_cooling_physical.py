"""The physical cooling model in the engine (issue 12): capacity, event-driven faults with
sub-sample extremes, energy bookkeeping, and the value of Blue Vela's enclosures."""

import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import twin
from twin.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
BV = ROOT / "scenarios" / "blue_vela.yaml"
BASE = ("simulation.duration_days=16", "site.cooling_system.model=physical")
UNITS = ("crah_w1", "crah_w2", "crah_w3", "crah_w4", "crah_e1", "crah_e2", "crah_e3", "crah_e4",
         "crah_n1", "crah_n2", "crah_s1", "crah_s2")


def _all_units_out(at: str, dur_s: float = 1200.0) -> str:
    events = ",".join(f'{{time: "2024-01-15T{at}:00", unit: "{u}", duration_s: {dur_s}}}' for u in UNITS)
    return f"site.cooling_faults.events=[{events}]"


@cache
def run(*extra: str):
    return twin.simulate(load_scenario(BV, list(BASE) + list(extra)))


def test_steady_hall_every_watt_ends_in_a_coil_within_capacity():
    r = run()
    ds = r.dataset
    heat = ds.rack_power_w.sum("rack").values
    load = ds.cooling_unit_load_w.sum("cooling_unit").values
    on = heat > 0
    assert on.sum() > 100
    assert load[on] == pytest.approx(heat[on], rel=1e-6)
    assert list(ds.cooling_unit.values[:2]) == ["hall_1/crah_w1", "hall_1/crah_w2"]
    assert r.kpis["cooling_capacity_margin_kw"] > 0 and r.kpis["hours_cooling_over_capacity"] == 0
    # CRAH fans on the affinity laws: 12 constant-speed units of 15 m3/s at 500 Pa and 60 %
    assert float(ds.cooling_fan_power_w.max()) == pytest.approx(12 * 15 * 500 / 0.6, rel=1e-9)
    assert r.kpis["pue_peak"] >= r.kpis["pue_mean"] > 1.0


def test_a_fault_between_samples_is_recorded_and_bounded():
    # every unit lost 10:10-10:30: the hourly samples at 10:00 and 11:00 see a steady hall,
    # the event-driven state records the excursion between them
    calm = run()
    r = run(_all_units_out("10:10"))
    assert r.kpis["max_rack_inlet_c"] == pytest.approx(calm.kpis["max_rack_inlet_c"], abs=0.01)
    assert r.kpis["max_rack_inlet_peak_c"] > calm.kpis["max_rack_inlet_c"] + 8.0
    # adiabatic bound: no rack's IT can warm faster than Q / C_it (8.4 kW / 0.25 MJ/K) for 20 min
    bound = calm.kpis["max_rack_inlet_c"] + 1200.0 * 10.2e3 / 2.5e5
    assert r.kpis["max_rack_inlet_peak_c"] < bound
    # the same loss straddling a sample (10:50-11:10) is evaluated from the hall's state,
    # never from a fresh steady state: the same peak within 1 K, not a compounding one
    r2 = run(_all_units_out("10:50"))
    assert r2.kpis["max_rack_inlet_peak_c"] == pytest.approx(r.kpis["max_rack_inlet_peak_c"], abs=1.0)
    kinds = set(r.events["kind"])
    assert {"cooling_fault", "cooling_restored"} <= kinds
    # the last trip's look-ahead runs from the hall's state with no unit left, over the
    # fault's 20 minutes: it foresees the peak the run then records
    last = r.events.loc[r.events["kind"] == "cooling_fault", "detail"].iloc[-1]
    assert "0 units running" in last
    foreseen = float(re.search(r"hottest inlet ([0-9.]+) C", last).group(1))
    assert foreseen == pytest.approx(r.kpis["max_rack_inlet_peak_c"], abs=1.0)


@pytest.mark.slow
def test_short_cooling_is_counted_and_heats_the_hall():
    r = run(*(f"site.halls.0.cooling_units.{u}.capacity_kw=15" for u in range(12)))
    assert r.kpis["hours_cooling_over_capacity"] > 24
    assert r.kpis["cooling_capacity_margin_kw"] < 0
    assert "cooling_short" in set(r.events["kind"])
    assert r.kpis["max_rack_inlet_peak_c"] > run().kpis["max_rack_inlet_c"] + 5.0
    # unit loads stay at capacity (the coils are saturated; the room takes the rest), within
    # the few percent the one-step lag of the coil outlet allows while the air warms
    assert float(r.dataset.cooling_unit_load_w.max()) <= 15e3 * 1.03


LATE = ("simulation.start=2024-09-01",)   # every rack delivered (the last wave is before)
SHORT_AIR = tuple(f"site.halls.0.cooling_units.{k}.airflow_m3_s=8" for k in range(12))
OPEN_ROWS = tuple(f"site.halls.0.rows.{k}.enclosure=false" for k in range(8))


def _hottest_rack_mean_c(r) -> float:
    ds = r.dataset
    return float(np.nanmax(np.nanmean(np.where(ds.rack_power_w > 0, ds.rack_inlet_c, np.nan), 0)))


@pytest.mark.slow
def test_blue_vela_runs_hotter_without_its_enclosures():
    # IBM built the enclosures so the racks could live on the hall's existing airflow. With
    # the CRAHs at 8 m3/s each (96 m3/s, below what the 256 servers' fans draw in training)
    # the buoyant field the engine uses (scenario: recirculation buoyant) carries hot exhaust
    # over the rack tops and round the row ends of the open rows. Measured (16 days, all 128
    # racks, the job stream): hottest-rack mean inlet 20.7 C enclosed, 24.5 C open (2 Dec 2026, fans on
    # DC heat and stopped racks drawing no air; 24.6 and 26.6 C before; 22.6 and
    # 24.5 C while the layered floor leaked a third of its 10 %, tests/thermal/test_floor_leakage.py).
    enclosed = run(*LATE, *SHORT_AIR)
    open_hall = run(*LATE, *SHORT_AIR, *OPEN_ROWS)
    contained = run(*LATE, *SHORT_AIR, *OPEN_ROWS, "site.halls.0.containment=cold_aisle")
    assert _hottest_rack_mean_c(open_hall) > _hottest_rack_mean_c(enclosed) + 1.5
    assert open_hall.kpis["max_rack_inlet_c"] > enclosed.kpis["max_rack_inlet_c"]
    # containing the cold aisles seals the intakes as the enclosures do, and an aisle pools its
    # tiles' air over its 32 racks (one pressure zone, twin.thermal.containment) where a rack's
    # own enclosure has only its own tile: no hotter, within 1 K (20.5 against 20.7 C on 2 Dec 2026; 24.36 against 24.64 C before;
    # 22.05 against 22.59 C before the floor leak fix)
    assert _hottest_rack_mean_c(contained) <= _hottest_rack_mean_c(enclosed)
    assert _hottest_rack_mean_c(contained) == pytest.approx(_hottest_rack_mean_c(enclosed), abs=1.0)


def test_power_transfer_waits_for_the_chiller_on_stored_chilled_water():
    # utility lost 10:10 for 60 s: CRAH fans stop until the generator picks them up (15 s),
    # the chiller restarts 30 min after that; pumps on UPS keep the stored chilled water moving
    ev = ('site.cooling_system.events=[{time: "2024-01-15T10:10:00", kind: power_transfer, duration_s: 60},'
          '{time: "2024-01-15T14:00:00", kind: unit_trip, unit: crah_n1, duration_s: 900}]')
    r = run(ev)
    kinds = list(r.events["kind"])
    assert "cooling_power_transfer" in kinds and "cooling_fault" in kinds
    detail = r.events.loc[r.events["kind"] == "cooling_power_transfer", "detail"].iloc[0]
    # on the generator after 15 s, the chillers restart 1800 s later: 1815 s
    assert "chiller back after 30 min" in detail
    calm = run()
    # the stored water carries the hall through the restart: inlets warm but stay in class A1
    assert calm.kpis["max_rack_inlet_c"] < r.kpis["max_rack_inlet_peak_c"] < 32.0


@pytest.mark.slow
def test_fan_driven_airflow_and_vfd_fans_save_fan_energy_with_the_weather_file():
    r = run("site.cooling_system.rack_airflow=fan_model", "site.cooling_system.crah_fans.control=vfd",
            "site.cooling_system.weather_file=723170TYA.CSV")
    const = run()
    # VFD fans follow 1.1 x the racks' (fan-law) airflow instead of the design airflow:
    # the affinity laws cut their power by more than half at partial rack airflow
    assert float(r.dataset.cooling_fan_power_w.mean()) < 0.5 * float(const.dataset.cooling_fan_power_w.mean())
    assert r.kpis["pue_mean"] < const.kpis["pue_mean"]
    # the Greensboro year in January: cold, so the economizer carries most hours
    assert r.kpis["economizer_hours"] > 0.5 * 16 * 24
    assert np.all(np.isfinite(r.dataset.outdoor_temp_c.values))
    assert float(r.dataset.outdoor_temp_c.min()) < 0.0 < float(r.dataset.outdoor_temp_c.max())


# the UPS carries IT to the generator: in line in September too (the chain's stage of
# 2024-09-01 bypasses it, and a run follows the chain's UPS mode since audit finding 4)
OUTAGE = ('site.power.grid.events=[{time: "2024-09-15T10:10:00", kind: outage, duration_s: 600}]',
          "site.power.ups.mode=double_conversion", "site.power.chain.stages.2.set={ups.mode: double_conversion}")


@pytest.mark.slow
def test_a_utility_outage_stops_the_chillers_for_their_restart_delay():
    # The grid component's outage is a power transfer of the cooling plant: fans on the
    # generator after 15 s, chillers 1800 s later (Rackspace DFW, 2009: the transfer "triggered
    # the chillers to stop cycling and then to begin cycling back up again, a process that
    # would take on average 30 minutes"). IT rides through on the UPS, so its heat keeps
    # flowing into the chilled water. Hand estimate of the loop's rise over 1815 s at Q of
    # about 1.2 MW: dT_w <= Q t / (rho cp V): 20 m3 -> 1.2e6 * 1815 / 8.4e7 = 26 K (the supply
    # air follows the water: past the A1 limit); a 400 m3 tank -> 1.3 K (rides through).
    calm = run(*LATE)
    peaks = {}
    for storage in (20.0, 400.0):
        r = run(*LATE, *OUTAGE, f"site.cooling_system.plant.storage_m3={storage}")
        ev = r.events
        pt = ev[ev["kind"] == "cooling_power_transfer"]
        assert len(pt) == 1 and pt["time"].iloc[0].startswith("2024-09-15T10:10")
        assert "utility outage" in pt["detail"].iloc[0] and "chiller back after 30 min" in pt["detail"].iloc[0]
        assert "grid_ride_through" in set(ev["kind"])
        peaks[storage] = r.dataset.rack_inlet_peak_c.sel(time="2024-09-15T11:00").max().item()
        # the chillers are back at 10:40: by 13:00 the hall is at its steady inlets again
        for t in ("2024-09-15T13:00", "2024-09-15T14:00"):
            assert r.dataset.rack_inlet_c.sel(time=t).max().item() == pytest.approx(
                calm.dataset.rack_inlet_c.sel(time=t).max().item(), abs=0.3)
        assert not any(w["check"] == "temperature_ceiling" for w in r.kpis.get("warnings") or [])
    assert peaks[20.0] > 32.0 > peaks[400.0]
    assert peaks[400.0] > calm.kpis["max_rack_inlet_c"]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["physical", "legacy"])
def test_total_cooling_loss_shuts_racks_down_before_the_ceiling(model):
    # every CRAH lost for two hours at full load: the servers' own protection (43 C inlet)
    # shuts racks down, one event each, with their power and heat; no powered rack records an
    # inlet above the 45 C ceiling and the invariant stays quiet, in both cooling models
    from twin.invariants import INLET_CEILING_C
    from twin.sim.state import RackState
    from twin.thermal import SERVER_INLET_SHUTDOWN_C

    events = ",".join(f'{{time: "2024-09-15T10:10:00", unit: "{u}", duration_s: 7200}}' for u in UNITS)
    r = run(*LATE, f"site.cooling_system.model={model}", f"site.cooling_faults.events=[{events}]")
    ds = r.dataset
    shut = r.events[r.events["kind"] == "rack_thermal_shutdown"]
    assert len(shut) >= 64
    assert all(f"{SERVER_INLET_SHUTDOWN_C:g} C protection" in d for d in shut["detail"])
    powered = np.asarray(RackState.powered(ds.rack_state.values))
    assert np.nanmax(np.where(powered, ds.rack_inlet_c.values, np.nan)) < INLET_CEILING_C
    assert not any(w["check"] == "temperature_ceiling" for w in r.kpis.get("warnings") or [])
    # a shut-down rack draws nothing at the next sample
    t = np.datetime64(shut["time"].iloc[0][:13]) + np.timedelta64(1, "h")
    racks = list(shut["target"].iloc[:8])
    assert float(ds.rack_power_w.sel(time=t, rack=racks).max()) == 0.0
