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


def economizer_hours(economizer_fraction_series, sample_interval_s, *, full_only=False) -> float:
    """Hours on economizer [h]: each sample stands for ``sample_interval_s``; a partial
    economizer counts its fraction (``full_only``: only samples with the chiller off)."""
    f = np.asarray(economizer_fraction_series, float)
    if full_only:
        f = (f >= 1.0).astype(float)
    return float(f.sum() * sample_interval_s / 3600.0)
