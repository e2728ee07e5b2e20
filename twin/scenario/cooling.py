"""Scenario fields of the cooling system: plant capacity and set points, CRAH fans, weather,
fault events (trips, power transfers), and the checks that need more than one field.

``site.cooling_system`` (a :class:`CoolingSystem`). Every default keeps the behaviour of
the twin before these fields existed (``model: legacy``): no plant limit, 5 % fan-and-pump
power, the sine outdoor temperature, fixed rack airflow. ``model: physical`` turns on
coil and plant capacity, the fan laws, set-point-aware chillers, the weather file,
fan-driven rack airflow and event-driven faults (:mod:`twin.thermal.capacity`,
:mod:`twin.thermal.fans`, :mod:`twin.power.cooling_plant`, :mod:`twin.thermal.events`);
every shipped scenario sets it, with ``rack_airflow: fan_model`` and ``recirculation: buoyant``.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from twin.thermal.properties import SERVER_INLET_SHUTDOWN_C

__all__ = ["ChilledWaterPlant", "CoolingSystem", "CrahFans", "CoolingSystemEvent", "cooling_problems"]

_Pos = Annotated[float, Field(gt=0)]
_NonNeg = Annotated[float, Field(ge=0)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, allow_inf_nan=False)


class CrahFans(_Model):
    """Fans of the cooling units (affinity laws, :mod:`twin.thermal.fans`)."""

    control: Literal["constant", "vfd"] = Field(
        "constant", description="constant speed (design airflow always) or variable speed (follows the racks)")
    design_pressure_pa: _Pos = Field(
        500.0, description="total pressure at design airflow [Pa] (coil, filter, floor and tiles: 400-600 Pa)")
    fan_efficiency: Annotated[float, Field(gt=0, le=1)] = Field(
        0.6, description="fan, motor and drive efficiency at the design point [-] (EC plug fans 0.55-0.7)")
    min_speed_fraction: Annotated[float, Field(gt=0, le=1)] = Field(0.3, description="VFD minimum speed [-]")
    static_pressure_fraction: Annotated[float, Field(ge=0, lt=1)] = Field(
        0.0, description="share of the design pressure held at any flow (underfloor pressure control) [-]")
    airflow_per_rack_airflow: Annotated[float, Field(ge=1, le=3)] = Field(
        1.1, description="VFD: cooling airflow per unit of rack airflow (over-provisioning) [-]")


class ChilledWaterPlant(_Model):
    """Chillers, economizer, pumps and chilled-water storage (:mod:`twin.power.cooling_plant`)."""

    capacity_kw: _Pos | None = Field(
        None, description="heat the plant can remove, chillers plus economizer [kW]; None = unlimited")
    heat_rejection: Literal["dry_cooler", "cooling_tower"] = Field(
        "dry_cooler", description="sink: outdoor dry bulb (dry cooler) or wet bulb (cooling tower)")
    tower_approach_k: _Pos = Field(4.0, description="tower water above the wet bulb [K]")
    coil_approach_k: _Pos = Field(6.0, description="supply air above the chilled water [K]")
    chilled_water_rise_k: _Pos = Field(6.0, description="design chilled-water rise [K]")
    chiller_cop_at_25c: _Pos = Field(4.5, description="chiller COP at a 25 C sink with 12 C water")
    pump_fraction: _NonNeg = Field(0.01, description="pumps per heat removed [W/W]")
    storage_m3: _NonNeg = Field(20.0, description="chilled water in the loop and any storage tank [m3]")
    restart_delay_s: _NonNeg = Field(
        1800.0, description="chiller restart after a power transfer [s] (reported outages: about 30 min)")
    pumps_on_ups: StrictBool = Field(True, description="chilled-water pumps ride through a power transfer")
    fans_on_ups: StrictBool = Field(False, description="CRAH fans ride through a power transfer (else they "
                                                 "stop until the generator picks them up)")


class CoolingSystemEvent(_Model):
    """A planned or historical cooling event: a unit trip (restored after ``duration_s``)
    or a power transfer of the whole plant (utility to generator and back)."""

    time: dt.datetime
    kind: Literal["unit_trip", "power_transfer"]
    hall: int = Field(0, ge=0, description="index of the hall")
    unit: str | None = Field(None, description="cooling unit (unit_trip only)")
    duration_s: _Pos = Field(description="how long the unit is out / the transfer takes [s]")


class CoolingSystem(_Model):
    model: Literal["legacy", "physical"] = Field(
        "legacy", description="legacy: the twin before capacity, fan laws and weather (golden numbers); "
                              "physical: capacity, fan laws, set points, weather, event-driven faults")
    weather_file: str | None = Field(
        None, description="typical-year weather (TMY3 .csv or EnergyPlus .epw): a file shipped in "
                          "twin/catalog/weather (e.g. 723170TYA.CSV) or a path; None = the sine of "
                          "site.power.cooling")
    supply_setpoint_c: Annotated[float, Field(ge=5, le=35)] | None = Field(
        None, description="supply-air set point of every unit [C]; None = each unit's supply_temp_c")
    crah_fans: CrahFans = CrahFans()
    plant: ChilledWaterPlant = ChilledWaterPlant()
    rack_airflow: Literal["fixed", "fan_model"] = Field(
        "fixed", description="fixed: every rack at its nodes' full airflow; fan_model: from load and inlet")
    recirculation: Literal["plan_view", "buoyant"] = Field(
        "plan_view", description="physical model: plan_view derives D from the hall's own grid; buoyant "
                                 "derives it at each airflow state from the layered Boussinesq field "
                                 "(hot exhaust rising over rack tops and round row ends) on a grid of "
                                 "buoyant_layers layers and cells of at least buoyant_cell_m")
    buoyant_layers: Annotated[int, Field(ge=2, le=8)] = Field(3, description="air layers of the buoyant field")
    buoyant_cell_m: _Pos = Field(
        0.6, description="coarsest cell of the buoyant field [m] (the hall's cell_m if larger); 0.6 m is "
                         "within 0.5 K of 0.3 m on Blue Vela's open hall")
    server_inlet_shutdown_c: Annotated[float, Field(gt=0, le=1000)] = Field(
        SERVER_INLET_SHUTDOWN_C, description="inlet at which a rack's servers shut themselves down [C] (Dell PowerEdge "
                          "enclosure firmware: 43 C); a value above any reachable inlet models servers "
                          "without that protection")
    events: list[CoolingSystemEvent] = []


def _windows_overlap(windows):
    """Pairs (i, j) of [start, end) windows that overlap, in start order."""
    out = []
    order = sorted(range(len(windows)), key=lambda k: windows[k][0])
    for a, b in zip(order, order[1:], strict=False):
        if windows[b][0] < windows[a][1]:
            out.append((a, b))
    return out


def cooling_problems(s, base_dir=None) -> list[tuple[str, object, str]]:
    """Cross-field checks of the cooling system: (dotted path, value, expected).

    - fault events for units that do not exist (in ``site.cooling_system.events``);
    - overlapping fault windows on one unit (``site.cooling_faults.events`` and
      ``site.cooling_system.events``), and overlapping power transfers;
    - a weather file that is missing or malformed (the message names its line).
    """
    out: list[tuple[str, object, str]] = []
    halls = s.site.halls
    cs = getattr(s.site, "cooling_system", None)
    windows: dict[tuple[int, str], list] = {}
    for e, ev in enumerate(s.site.cooling_faults.events):
        t0 = ev.time.timestamp()
        windows.setdefault((ev.hall, ev.unit), []).append((t0, t0 + ev.duration_s, f"site.cooling_faults.events.{e}"))
    transfers = []
    if cs is not None:
        for e, ev in enumerate(cs.events):
            path = f"site.cooling_system.events.{e}"
            t0 = ev.time.timestamp()
            if ev.hall >= len(halls):
                out.append((f"{path}.hall", ev.hall, f"a hall index below {len(halls)}"))
                continue
            if ev.kind == "power_transfer":
                if ev.unit is not None:
                    out.append((f"{path}.unit", ev.unit, "no unit: a power transfer affects the whole plant"))
                transfers.append((t0, t0 + ev.duration_s, path))
                continue
            names = [c.name for c in halls[ev.hall].cooling_units]
            if ev.unit not in names:
                out.append((f"{path}.unit", ev.unit, f"a cooling unit of hall {ev.hall}: {names}"))
                continue
            windows.setdefault((ev.hall, ev.unit), []).append((t0, t0 + ev.duration_s, path))
    for (h, unit), win in sorted(windows.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        for a, b in _windows_overlap(win):
            first, second = sorted((win[a], win[b]))
            out.append((second[2], unit, f"a fault window on unit {unit!r} of hall {h} that starts after the "
                                         f"one of {first[2]} ends (they overlap)"))
    for a, b in _windows_overlap(transfers):
        first, second = sorted((transfers[a], transfers[b]))
        out.append((second[2], "power_transfer", f"a power transfer after the one of {first[2]} ends"))
    if cs is not None and cs.weather_file is not None:
        from twin.thermal.weather import WeatherFileError, read_weather

        try:
            read_weather(cs.weather_file, base_dir)
        except WeatherFileError as exc:
            out.append(("site.cooling_system.weather_file", cs.weather_file,
                        f"a readable TMY3 or EPW typical year ({exc})"))
    return out


def cooling_capacity_notes(s) -> list[tuple[str, str]]:
    """Notes (dotted path, text) on cooling units that cannot carry the racks' worst-case heat;
    not problems: such a run is valid, its halls run hot.

    - A hall: the worst-case heat of the racks the plan can power there (each delivered rack
      at :func:`twin.plant.rack_worst_cases_w`, the draw admission reserves, all of which ends
      as heat in the hall; at most the largest plan stage times ``oversubscription``) against
      what its cooling units remove together (and the hall's share of a chilled-water plant
      with a capacity, as the run shares it): the siting study's ``cooling_use_fraction``,
      :func:`twin.studies.metrics.use_fraction`, hall by hall. Above 1 the hall has no steady
      state at that heat (:func:`twin.thermal.capacity.hall_cooling_margin_w`). The scenario
      names no cooling redundancy (no spare unit), so every unit counts.
    - A unit, in a hall that is not short: one whose coil, at the hall's worst-case heat,
      would supply air above the ASHRAE recommended inlet maximum (27 C) by the coil's own
      law (:func:`twin.thermal.capacity.coil_supply_temp_c`, T_sup = T_ret - P_cap / (rho cp V))
      with the hall's mixed return (every unit at its set point and design airflow, the heat
      carried back in proportion to airflow: T_ret = T_set + Q / sum rho cp V). The threshold
      is where the unit's own air, before any recirculation, puts the racks in front of it
      outside the recommended envelope; a unit a little below its share only warms its air by
      a fraction of a kelvin and is not noted.
    """
    import numpy as np

    from twin.catalog import load_catalog
    from twin.plant import rack_worst_cases_w, scenario_racks
    from twin.studies.metrics import use_fraction
    from twin.thermal.capacity import coil_supply_temp_c
    from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K, ASHRAE_RECOMMENDED_MAX_C

    if not set(scenario_racks(s)[0]) <= set(load_catalog().nodes):
        return []                      # an unknown node model: a problem elsewhere
    worst_w = rack_worst_cases_w(s)
    # the racks delivered within the run, as the siting study counts them (first racks first)
    delivered = sum(w.racks for w in s.ramp.waves
                    if (w.date - s.simulation.start).days < s.simulation.duration_days)
    pw = s.site.power
    plan_w = (np.inf if pw.chain is not None and pw.chain.stages_set_plan
              else max(st.it_power_kw for st in pw.plan) * 1e3 * pw.oversubscription)
    cs = s.site.cooling_system
    physical = cs.model == "physical"
    halls = s.site.halls
    plant_w = (cs.plant.capacity_kw * 1e3 / len(halls)
               if physical and cs.plant.capacity_kw is not None else np.inf)   # each hall's share, as the run
    out: list[tuple[str, str]] = []
    first = 0
    for h, hall in enumerate(halls):
        n = sum(r.racks for r in hall.rows)
        k = int(min(max(delivered - first, 0), n))
        racks_w = worst_w[first:first + k]
        first += n
        if not k:
            continue
        heat_w = min(float(racks_w.sum()), plan_w)
        units_w = np.array([u.capacity_kw * 1e3 for u in hall.cooling_units])
        cap_w = min(float(units_w.sum()), plant_w)
        use = float(use_fraction(heat_w, cap_w))
        by = "the plan's largest stage" if heat_w < float(racks_w.sum()) else f"{k} racks"
        if use > 1.0:
            what = (f"its {len(units_w)} cooling units' {units_w.sum() / 1e3:,.0f} kW" if cap_w == units_w.sum()
                    else f"its share of the chilled-water plant, {cap_w / 1e3:,.0f} kW")
            then = ("the run's hall heats up when the racks run near full load (cooling_short events, racks "
                    f"shut down above a {cs.server_inlet_shutdown_c:g} C inlet)" if physical else
                    "the legacy cooling model does not limit the coils, so only the cooling margin KPIs "
                    "show it; model: physical runs the shortfall")
            out.append((f"site.halls.{h}.cooling_units",
                        f"hall {hall.name!r}: the worst-case heat of the racks the plan can power there "
                        f"({heat_w / 1e3:,.0f} kW, {by} at full load and a 35 C inlet) is {use:.0%} of "
                        f"{what} (no spare unit counted): {then}"))
            continue
        if not physical:
            continue                    # the legacy coils hold their set point at any load
        airflow = np.array([u.airflow_m3_s for u in hall.cooling_units])
        g = AIR_VOLUMETRIC_HEAT_J_M3_K * airflow                            # [W/K]
        setp = np.array([cs.supply_setpoint_c if cs.supply_setpoint_c is not None else u.supply_temp_c
                         for u in hall.cooling_units])
        ret_c = float((g * setp).sum() / g.sum() + heat_w / g.sum())         # mixed return [C]
        sup_c = coil_supply_temp_c(ret_c, setp, airflow, units_w)
        for c in np.flatnonzero(sup_c > ASHRAE_RECOMMENDED_MAX_C):
            u = hall.cooling_units[c]
            share_w = heat_w * g[c] / g.sum()
            out.append((f"site.halls.{h}.cooling_units.{c}.capacity_kw",
                        f"cooling unit {u.name!r} of hall {hall.name!r} removes {u.capacity_kw:,.4g} kW, against "
                        f"its airflow's share ({u.airflow_m3_s:g} of {airflow.sum():g} m3/s) of the hall's "
                        f"worst-case heat, {share_w / 1e3:,.0f} of {heat_w / 1e3:,.0f} kW: its coil saturates and "
                        f"supplies air at {float(sup_c[c]):.1f} C (return {ret_c:.1f} C less P_cap / rho cp V), above "
                        f"the {ASHRAE_RECOMMENDED_MAX_C:g} C ASHRAE recommended inlet; the racks it feeds run hot "
                        f"or shut down"))
    return out
