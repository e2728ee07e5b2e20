"""Cooling-plant energy with set points and weather: chiller COP from the chilled-water set
point and the heat-sink temperature (dry bulb or wet bulb), water-side economizer hours,
CRAH fans on the affinity laws.

Chain of temperatures (each a scenario field):

    supply air set point T_sa  ->  chilled water supply T_chw = T_sa - coil approach
    chilled water return T_chwr = T_chw + design rise
    heat sink T_sink = outdoor dry bulb (dry cooler / air-cooled condenser) or
                       outdoor wet bulb + tower approach (cooling tower)

The chiller follows a constant share of Carnot between the evaporator (T_chw - a_e) and the
condenser (T_sink + a_c) (:func:`twin.power.facility.chiller_cop`), so a warmer chilled-
water set point or a cooler sink raises the COP; the economizer covers the share of the
design rise that the sink can reach (:func:`twin.power.facility.economizer_fraction`).
Raising the supply-air set point therefore saves chiller energy and adds economizer hours,
and costs the same number of kelvin at every rack inlet (the inlets are the supply plus
recirculation, :class:`twin.thermal.InletModel`) and faster server fans
(:func:`twin.power.node.node_fan_speed_fraction`).

References
----------
ASHRAE Standard 90.4-2019, Energy Standard for Data Centers (mechanical load component,
economizer credit). Gordon & Ng, Cool Thermodynamics (2000), ch. 3 (chillers as a fixed
share of Carnot). ASHRAE Handbook - HVAC Systems and Equipment (2020), ch. 40 "Cooling
towers": approach of the leaving water to the entering wet bulb, typically 3-6 K.
"""

from __future__ import annotations

import numpy as np

from .facility import chiller_cop, economizer_fraction

__all__ = [
    "HEAT_REJECTION_KINDS",
    "chilled_water_supply_c",
    "cooling_plant_power_w",
    "economizer_hours",
    "heat_sink_temp_c",
    "design_crah_fan_power_w",
    "scenario_cooling_power_w",
]

HEAT_REJECTION_KINDS = ("dry_cooler", "cooling_tower")

#: condensing temperature above the sink [K]: air-cooled condensers run 10-15 K above
#: the dry bulb; water-cooled chillers condense 2-3 K above the leaving condenser water,
#: which leaves the chiller about 5 K above the tower water (the range): 7 K in all.
CONDENSER_APPROACH_K = {"dry_cooler": 10.0, "cooling_tower": 7.0}
#: water-side economizer: water leaves the free-cooling heat exchanger this far above the
#: sink: a dry cooler's coil approach (5 K) or a plate exchanger behind the tower (2 K).
ECONOMIZER_APPROACH_K = {"dry_cooler": 5.0, "cooling_tower": 2.0}


def chilled_water_supply_c(supply_air_setpoint_c, coil_approach_k=6.0):
    """Chilled-water supply set point [C] that lets a coil deliver the supply-air set
    point: T_chw = T_sa - approach (CRAH coils: 18 C air from 12 C water, 6 K)."""
    return np.asarray(supply_air_setpoint_c, float) - np.asarray(coil_approach_k, float)


def heat_sink_temp_c(dry_bulb_c, wet_bulb_c=None, *, heat_rejection="dry_cooler", tower_approach_k=4.0):
    """Temperature the plant rejects heat to [C]: the dry bulb for a dry cooler or
    air-cooled condenser, wet bulb + tower approach for a cooling tower."""
    if heat_rejection == "dry_cooler":
        return np.asarray(dry_bulb_c, float)
    if heat_rejection == "cooling_tower":
        if wet_bulb_c is None:
            raise ValueError("a cooling tower needs the wet-bulb temperature (a weather file)")
        return np.asarray(wet_bulb_c, float) + tower_approach_k
    raise ValueError(f"heat_rejection must be one of {HEAT_REJECTION_KINDS}, got {heat_rejection!r}")


def cooling_plant_power_w(
    heat_w,
    dry_bulb_c,
    wet_bulb_c=None,
    *,
    supply_air_setpoint_c=18.0,
    coil_approach_k=6.0,
    chilled_water_rise_k=6.0,
    heat_rejection="dry_cooler",
    tower_approach_k=4.0,
    chiller_cop_at_25c=4.5,
    reference_chw_supply_c=12.0,
    crah_fan_w=0.0,
    pump_fraction=0.01,
    heat_rejection_fraction=0.01,
    economizer=True,
) -> dict[str, np.ndarray]:
    """Electric power of the cooling plant by part [W] and its operating point.

    heat_w [W]: IT heat reaching the room; crah_fan_w [W]: CRAH fan power (from
    :func:`twin.thermal.fans.crah_fan_power_w`), whose heat joins the load;
    chiller_cop_at_25c: COP at a 25 C sink and ``reference_chw_supply_c`` chilled water;
    pump_fraction: chilled- and condenser-water pumps per heat [W/W].
    Q_load = Q + P_fans + P_pumps; chiller = (1 - f_econ) Q_load / COP(T_sink, T_chw);
    heat rejection fans = heat_rejection_fraction Q_load.

    Returns ``chiller``, ``crah_fans``, ``pumps``, ``heat_rejection``, ``total`` [W] and
    ``cop`` [-], ``economizer_fraction`` [-], ``chilled_water_supply_c``, ``sink_c`` [C].
    """
    q = np.maximum(np.asarray(heat_w, float), 0.0)
    t_chw = chilled_water_supply_c(supply_air_setpoint_c, coil_approach_k)
    sink = heat_sink_temp_c(dry_bulb_c, wet_bulb_c, heat_rejection=heat_rejection, tower_approach_k=tower_approach_k)
    fans = np.asarray(crah_fan_w, float) * np.ones_like(q)
    pumps = pump_fraction * q
    q_load = q + fans + pumps
    f_econ = economizer_fraction(sink, chw_supply_c=t_chw, chw_return_c=t_chw + chilled_water_rise_k,
                                 economizer_approach_k=ECONOMIZER_APPROACH_K[heat_rejection]) if economizer \
        else np.zeros_like(np.asarray(sink, float))
    cop = chiller_cop(sink, chiller_cop_at_25c=chiller_cop_at_25c, chw_supply_c=t_chw,
                      condenser_approach_k=CONDENSER_APPROACH_K[heat_rejection],
                      reference_chw_supply_c=reference_chw_supply_c)
    chiller = (1.0 - f_econ) * q_load / cop
    rejection = heat_rejection_fraction * q_load
    return {"chiller": chiller, "crah_fans": fans, "pumps": pumps, "heat_rejection": rejection,
            "total": chiller + fans + pumps + rejection, "cop": cop, "economizer_fraction": f_econ,
            "chilled_water_supply_c": np.asarray(t_chw, float) * np.ones_like(np.asarray(sink, float)),
            "sink_c": sink}


def economizer_hours(economizer_fraction_series, sample_interval_s, *, full_only=False, it_power_w=None) -> float:
    """Hours on economizer [h]: each sample stands for ``sample_interval_s`` [s]; a partial
    economizer counts its fraction (``full_only``: only samples with the chiller off).

    h = sum_t f_t [P_IT,t > 0] dt / 3600. With ``it_power_w`` [W (T,)], a sample with no IT
    load counts nothing: the economizer's share of no heat saves no chiller energy (a site
    before its first rack is powered would otherwise log free cooling). A sample at partial
    IT load counts its whole interval: the unit is hours of operation, not full-load hours.
    """
    f = np.asarray(economizer_fraction_series, float)
    if full_only:
        f = (f >= 1.0).astype(float)
    if it_power_w is not None:
        f = np.where(np.asarray(it_power_w, float) > 0.0, f, 0.0)
    return float(f.sum() * sample_interval_s / 3600.0)


#: wet bulb below the dry bulb [K] where the physical model has no weather file to read it
#: from (a cooling tower then rejects to dry bulb - 5 K, as :meth:`twin.sim.hall_thermal.
#: HallThermal.plant_power` does)
WET_BULB_DEPRESSION_K = 5.0


def design_crah_fan_power_w(scenario) -> float:
    """CRAH fan power of every hall's units at the racks' full airflow [W], the physical
    model's fan law (:class:`twin.sim.hall_thermal._HallFans`): constant-speed fans draw their
    design power P_d = V_d dp_d / eta; VFD fans blow ``airflow_per_rack_airflow`` x the racks'
    full-speed airflow (catalog ``airflow_m3_s_at_max`` x nodes), shared by design airflow and
    clipped to [min speed, design]. Every rack position counts: the worst case a capacity check
    plans for."""
    from twin.catalog import node_model
    from twin.plant import scenario_racks
    from twin.thermal.fans import crah_airflow_m3_s, crah_fan_power_w

    fans = scenario.site.cooling_system.crah_fans
    models, counts = scenario_racks(scenario)
    total, first = 0.0, 0
    for hall in scenario.site.halls:
        v_c = np.array([u.airflow_m3_s for u in hall.cooling_units], float)
        n = sum(r.racks for r in hall.rows)
        rack_v = sum(node_model(m).airflow_m3_s_at_max * c for m, c in zip(models[first:first + n],
                                                                           counts[first:first + n], strict=True))
        first += n
        need = fans.airflow_per_rack_airflow * rack_v * v_c / v_c.sum()
        flow = crah_airflow_m3_s(need, v_c, control=fans.control, min_speed_fraction=fans.min_speed_fraction)
        total += float(np.sum(crah_fan_power_w(flow, v_c, fans.design_pressure_pa, fans.fan_efficiency,
                                               control=fans.control,
                                               static_pressure_fraction=fans.static_pressure_fraction)))
    return total


def scenario_cooling_power_w(scenario, heat_w, outdoor_c):
    """Electric power of a scenario's cooling plant [W] for building heat ``heat_w`` [W] at an
    outdoor dry bulb ``outdoor_c`` [C], from the cooling model the run uses, so a capacity
    check and the run give one answer for the same hall:

    - ``site.cooling_system.model: legacy``: :func:`twin.power.facility.cooling_power_w` with
      ``site.power.cooling`` (chiller COP at 25 C, fans and pumps as a share of heat);
    - ``physical``: :func:`cooling_plant_power_w` with ``site.cooling_system.plant`` (COP from
      the chilled-water set point and the sink, economizer, pumps, heat rejection), the supply
      set point (``supply_setpoint_c``, else the coldest unit's ``supply_temp_c``) and the CRAH
      fans at the racks' full airflow (:func:`design_crah_fan_power_w`; constant-speed fans
      draw that at any load); a cooling tower's wet bulb is the dry bulb - 5 K
      (:data:`WET_BULB_DEPRESSION_K`). ``site.power.cooling``'s COP and fan/pump share are
      not used by this model.

    Affine in the heat (the physical model's fans are a constant term), elementwise in both."""
    cs = scenario.site.cooling_system
    if cs.model != "physical":
        from .facility import cooling_power_w

        c = scenario.site.power.cooling
        return cooling_power_w(heat_w, outdoor_c, chiller_cop_at_25c=c.chiller_cop_at_25c,
                               fan_pump_fraction=c.fan_pump_fraction)
    pl = cs.plant
    setpoint = (cs.supply_setpoint_c if cs.supply_setpoint_c is not None
                else min(u.supply_temp_c for h in scenario.site.halls for u in h.cooling_units))
    out = np.asarray(outdoor_c, float)
    wet = out - WET_BULB_DEPRESSION_K if pl.heat_rejection == "cooling_tower" else None
    r = cooling_plant_power_w(heat_w, out, wet, supply_air_setpoint_c=setpoint,
                              coil_approach_k=pl.coil_approach_k, chilled_water_rise_k=pl.chilled_water_rise_k,
                              heat_rejection=pl.heat_rejection, tower_approach_k=pl.tower_approach_k,
                              chiller_cop_at_25c=pl.chiller_cop_at_25c,
                              crah_fan_w=design_crah_fan_power_w(scenario), pump_fraction=pl.pump_fraction)
    return r["total"]
