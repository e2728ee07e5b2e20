"""Facility level: cooling plant power, outdoor temperature, PUE, power ramp rates.

Watts, degrees Celsius, seconds.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "chiller_cop",
    "economizer_fraction",
    "cooling_power_w",
    "cooling_power_breakdown_w",
    "outdoor_temp_c",
    "pue",
    "power_ramp_rate_kw_per_s",
]

#: Defaults of the cooling plant (a chilled-water plant with CRAHs and a water-side
#: economizer, the common legacy enterprise hall).
CHW_SUPPLY_C = 12.0          # chilled water supply [C] (ASHRAE Datacom series, classic 10-13 C)
CHW_RETURN_C = 18.0          # chilled water return [C] (6 K design rise)
EVAPORATOR_APPROACH_K = 2.0  # refrigerant below chilled-water supply [K]
CONDENSER_APPROACH_K = 10.0  # condensing above outdoor dry bulb [K] (air-cooled/dry cooler)
ECONOMIZER_APPROACH_K = 5.0  # dry cooler: water leaves this much above outdoor [K]
COP_MAX = 12.0               # ceiling of the chiller COP at low lift
HEAT_REJECTION_FRACTION = 0.01  # condenser / dry-cooler fans per heat rejected [W/W]


def chiller_cop(
    outdoor_temp_c,
    *,
    chiller_cop_at_25c=4.5,
    chw_supply_c=CHW_SUPPLY_C,
    evaporator_approach_k=EVAPORATOR_APPROACH_K,
    condenser_approach_k=CONDENSER_APPROACH_K,
    cop_max=COP_MAX,
    reference_chw_supply_c=None,
) -> np.ndarray:
    """Chiller coefficient of performance [W heat / W electric] at an outdoor temperature [C].

    Constant fraction of the Carnot COP ``T_evap / (T_cond - T_evap)``; ``T_evap`` is fixed
    by the chilled water, so the ratio to the 25 C value is the inverse ratio of the lifts:
    ``COP(T) = COP25 (25 + a_c - T_ev) / (T + a_c - T_ev)`` with ``T_ev = T_chw - a_e``,
    capped at ``cop_max`` (compressor limits at low lift). (Gordon & Ng, Cool Thermodynamics,
    2000, ch. 3: real chillers track a fixed share of Carnot over the operating range.)
    ``reference_chw_supply_c``: the chilled-water supply at which COP25 was rated (default:
    ``chw_supply_c``); a warmer set point then raises the COP by the Carnot ratio
    ``(T_ev / T_ev,ref) (lift_ref / lift)`` (kelvin), which is how a set point saves energy.
    """
    t = np.asarray(outdoor_temp_c, dtype=float)
    t_ev = chw_supply_c - evaporator_approach_k
    t_ev_ref = t_ev if reference_chw_supply_c is None else reference_chw_supply_c - evaporator_approach_k
    lift25 = 25.0 + condenser_approach_k - t_ev_ref
    cop_ref = chiller_cop_at_25c * (t_ev + 273.15) / (t_ev_ref + 273.15)
    lift = np.maximum(t + condenser_approach_k - t_ev, lift25 / cop_max * chiller_cop_at_25c)
    return np.minimum(cop_ref * lift25 / lift, cop_max)


def economizer_fraction(
    outdoor_temp_c,
    *,
    chw_supply_c=CHW_SUPPLY_C,
    chw_return_c=CHW_RETURN_C,
    economizer_approach_k=ECONOMIZER_APPROACH_K,
) -> np.ndarray:
    """Share of the heat removed by the water-side economizer [fraction].

    The dry cooler can cool the return water down to ``T_out + approach``; the share of
    the design rise it covers is ``(T_ret - T_out - a) / (T_ret - T_sup)``, clipped to
    [0, 1]: all free cooling below ``T_sup - a`` (7 C by default), none above ``T_ret - a``
    (13 C). (ASHRAE 90.4 integrated economizer; linear in the temperature overlap.)
    """
    t = np.asarray(outdoor_temp_c, dtype=float)
    f = (chw_return_c - t - economizer_approach_k) / (chw_return_c - chw_supply_c)
    return np.clip(f, 0.0, 1.0)


def cooling_power_breakdown_w(
    heat_w,
    outdoor_temp_c,
    *,
    chiller_cop_at_25c=4.5,
    fan_pump_fraction=0.05,
    heat_rejection_fraction=HEAT_REJECTION_FRACTION,
    economizer=True,
    **plant_kw,
) -> dict[str, np.ndarray]:
    """Electric power of the cooling plant by part [W] for ``heat_w`` [W] of indoor heat.

    * CRAH fans and chilled-water pumps: ``fan_pump_fraction * Q`` (constant-volume plant;
      the scenario's ``fan_pump_fraction``); their heat joins the load:
      ``Q_load = Q (1 + fan_pump_fraction)``.
    * Chiller: ``(1 - f_econ) Q_load / COP(T_out)``.
    * Heat rejection (condenser / dry-cooler fans): ``heat_rejection_fraction * Q_load``.

    Returns ``{"chiller", "fans_pumps", "heat_rejection", "total"}``.
    """
    q = np.maximum(np.asarray(heat_w, dtype=float), 0.0)
    econ_kw = {k: plant_kw[k] for k in ("chw_supply_c", "chw_return_c", "economizer_approach_k")
               if k in plant_kw}
    cop_kw = {k: plant_kw[k] for k in ("chw_supply_c", "evaporator_approach_k",
                                        "condenser_approach_k", "cop_max") if k in plant_kw}
    unknown = set(plant_kw) - set(econ_kw) - set(cop_kw)
    if unknown:
        raise TypeError(f"unknown cooling plant parameters: {sorted(unknown)}")
    fans = fan_pump_fraction * q
    q_load = q + fans
    f_econ = economizer_fraction(outdoor_temp_c, **econ_kw) if economizer else 0.0
    chiller = (1.0 - f_econ) * q_load / chiller_cop(
        outdoor_temp_c, chiller_cop_at_25c=chiller_cop_at_25c, **cop_kw)
    rejection = heat_rejection_fraction * q_load * np.ones_like(chiller)
    return {"chiller": chiller, "fans_pumps": fans * np.ones_like(chiller),
            "heat_rejection": rejection, "total": chiller + fans + rejection}


def cooling_power_w(heat_w, outdoor_temp_c, **kw) -> np.ndarray:
    """Total electric power of the cooling plant [W]; see :func:`cooling_power_breakdown_w`.

    With the defaults (COP 4.5 at 25 C, 5 % fans and pumps) the cooling overhead is
    0.05 + 1.05/4.5 + 0.0105 = 0.294 W/W at 25 C, 0.39 W/W at 35 C and 0.06 W/W below 7 C,
    so PUE moves with the weather.
    """
    return cooling_power_breakdown_w(heat_w, outdoor_temp_c, **kw)["total"]


def outdoor_temp_c(
    t_s,
    *,
    mean_c,
    seasonal_swing_c=0.0,
    start_day_of_year=1.0,
    warmest_day_of_year=200.0,
    daily_swing_c=0.0,
    warmest_hour=15.0,
) -> np.ndarray:
    """Outdoor dry-bulb temperature [C] at simulation time ``t_s`` [s].

    ``T = mean + A_s cos(2 pi (d - d_max) / 365.25) + A_d cos(2 pi (h - h_max) / 24)``:
    annual and daily cosines (mid-latitude northern climate peaks near day 200, 15:00).
    ``start_day_of_year`` is the day-of-year at ``t_s = 0`` (1 = 1 January, 00:00).
    """
    t = np.asarray(t_s, dtype=float)
    day = start_day_of_year + t / 86400.0
    hour = (t / 3600.0) % 24.0
    return (mean_c
            + seasonal_swing_c * np.cos(2 * np.pi * (day - warmest_day_of_year) / 365.25)
            + daily_swing_c * np.cos(2 * np.pi * (hour - warmest_hour) / 24.0))


def pue(it_w, utility_w, cooling_w, other_w=0.0) -> np.ndarray:
    """Power usage effectiveness [ratio]: ``(utility + cooling + other) / IT``.

    ``utility_w`` is the IT chain's utility draw (IT + distribution and UPS losses),
    ``other_w`` lighting and offices (The Green Grid, PUE: a comprehensive examination,
    WP49, 2012). NaN where IT is 0.
    """
    it = np.asarray(it_w, dtype=float)
    total = np.asarray(utility_w, float) + np.asarray(cooling_w, float) + other_w
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(it > 0, total / np.where(it > 0, it, 1.0), np.nan)


def power_ramp_rate_kw_per_s(facility_w_series, dt_s=None, *, t_s=None, min_dt_s=1.0) -> float:
    """Peak rate of change of facility power [kW/s] (largest synchronous swing).

    ``max |P[k+1] - P[k]| / max(t[k+1] - t[k], min_dt_s) / 1000`` for samples ``P`` [W] at
    a constant step ``dt_s`` [s] or at times ``t_s`` [s] (event-based samples taken at a
    job's phase changes, so a swing is not diluted over a long sampling step).
    ``min_dt_s`` bounds the rate of simultaneous samples (GPU power settles within about
    a second of a phase change). 0 for fewer than two samples.
    """
    p = np.asarray(facility_w_series, dtype=float)
    if p.shape[0] < 2:
        return 0.0
    if t_s is None:
        if dt_s is None:
            raise ValueError("give dt_s or t_s")
        dt = np.full(p.shape[0] - 1, float(dt_s))
    else:
        dt = np.diff(np.asarray(t_s, dtype=float))
    dp = np.abs(np.diff(p, axis=0))
    dt = np.maximum(dt, min_dt_s).reshape((-1,) + (1,) * (dp.ndim - 1))
    return float(np.max(dp / dt) / 1e3)
