"""Electrical distribution physics: breaker limits and trip curves, UPS efficiency and
autonomy, resistive and transformer losses. Pure, vectorised; watts, amps, volts, seconds.
"""

from __future__ import annotations

import numpy as np

from twin.power.ups_curves import UPS_CURVES, ups_loss_coeffs

__all__ = [
    "NEC_CONTINUOUS_DERATING",
    "breaker_apparent_power_va",
    "breaker_continuous_limit_w",
    "breaker_trip_time_s",
    "phase_imbalance_limit_w",
    "breaker_thermal_state_step",
    "breaker_thermal_trip_state",
    "UPS_MODES",
    "ups_efficiency",
    "ups_loss_w",
    "ups_autonomy_s",
    "ups_recharge",
    "resistive_loss_w",
    "transformer_loss_w",
]

#: Continuous load on a standard-rated breaker is limited to 80 % of its rating
#: (NEC 210.20(A), 215.3; calibration.yaml power.breaker_continuous_derating).
NEC_CONTINUOUS_DERATING = 0.8


def breaker_apparent_power_va(breaker_a, voltage_v, phases) -> np.ndarray:
    """Apparent power at a breaker's rated current [VA].

    Three-phase: ``S = sqrt(3) V_LL I``; single-phase: ``S = V I``. ``voltage_v`` is the
    line-to-line voltage for three-phase circuits (IEC 60038 / IEEE 141 conventions).
    """
    i = np.asarray(breaker_a, dtype=float)
    v = np.asarray(voltage_v, dtype=float)
    ph = np.asarray(phases)
    if np.any((ph != 1) & (ph != 3)):
        raise ValueError("phases must be 1 or 3")
    return np.where(ph == 3, np.sqrt(3.0), 1.0) * v * i


def breaker_continuous_limit_w(
    breaker_a, voltage_v, phases, rated_100pct=False, power_factor=1.0
) -> np.ndarray:
    """Highest continuous real power through a breaker [W].

    ``P = k * S * pf`` with ``S`` from :func:`breaker_apparent_power_va`, ``k = 0.8`` for a
    standard-rated breaker and ``1.0`` for a 100 %-rated one (NEC 210.20(A), 215.3),
    ``pf`` the load power factor. Example: 415 V three-phase 60 A -> 43.1 kVA, 34.5 kW
    continuous at pf 1. Passing ``rated_100pct=True`` gives the breaker's rating itself,
    the reference for the trip curve.
    """
    k = np.where(np.asarray(rated_100pct, dtype=bool), 1.0, NEC_CONTINUOUS_DERATING)
    s = breaker_apparent_power_va(breaker_a, voltage_v, phases)
    return k * s * np.asarray(power_factor, dtype=float)


def phase_imbalance_limit_w(limit_w, imbalance_fraction) -> np.ndarray:
    """Usable three-phase limit [W] when single-phase loads leave the phases unbalanced.

    With the most loaded phase carrying ``(1 + u)/3`` of the total (``u`` = its excess
    over the mean, NEMA MG-1 style definition ``u = I_max / I_mean - 1``), that phase's
    conductor and pole reach the breaker limit first: ``P_usable = P_limit / (1 + u)``.
    A 10 % imbalance on a 34.5 kW continuous circuit leaves 31.4 kW.
    """
    return np.asarray(limit_w, dtype=float) / (1.0 + np.asarray(imbalance_fraction, dtype=float))


# --- trip curve --------------------------------------------------------------------
#
# A thermal-magnetic breaker's thermal element heats as I^2 with first-order dynamics:
#     d theta / dt = (x^2 - theta) / tau,      x = I / I_n,
# and trips when theta reaches r^2, r the ultimate tripping current (per unit). From
# cold, t_trip = -tau ln(1 - (r/x)^2) for x > r (inverse-time). The magnetic element trips
# instantaneously above the magnetic pick-up. Defaults meet IEC 60898-1 Table 7 (no trip
# at 1.13 I_n within 1 h; trip at 1.45 I_n within 1 h; 2.55 I_n trips in 1-60 s; curve C
# instantaneous between 5 and 10 I_n) and UL 489 (trip at 135 % within 1 h and 200 %
# within 2 min for small frames).

#: Ultimate tripping current [per unit of rating], between 1.13 and 1.45 (IEC 60898-1).
BREAKER_ULTIMATE_TRIP_PU = 1.3
#: Thermal time constant of the bimetal [s]; 2.55 I_n trips after 0.301 tau = 18 s.
BREAKER_THERMAL_TAU_S = 60.0
#: Magnetic instantaneous pick-up [per unit]: the top of IEC 60898-1 curve C (10 I_n).
BREAKER_MAGNETIC_PICKUP_PU = 10.0
#: Opening time of the magnetic trip [s] (half a cycle at 50 Hz).
BREAKER_MAGNETIC_TRIP_S = 0.01


def breaker_trip_time_s(
    load_fraction_of_rating,
    *,
    ultimate_trip_pu=BREAKER_ULTIMATE_TRIP_PU,
    thermal_tau_s=BREAKER_THERMAL_TAU_S,
    magnetic_pickup_pu=BREAKER_MAGNETIC_PICKUP_PU,
    magnetic_trip_s=BREAKER_MAGNETIC_TRIP_S,
) -> np.ndarray:
    """Time to trip from cold at a constant current [s]; ``inf`` if it never trips.

    ``load_fraction_of_rating`` is I / I_n (the rating, not the 80 % continuous limit).
    Thermal: ``t = -tau ln(1 - (r/x)^2)`` for ``x > r``; magnetic: ``magnetic_trip_s`` for
    ``x >= magnetic_pickup_pu``. Defaults follow IEC 60898-1 / UL 489 (see module notes):
    1.13 -> inf, 1.45 -> 98 s, 2.0 -> 33 s, 2.55 -> 18 s, 10 -> 0.01 s.
    """
    x = np.abs(np.asarray(load_fraction_of_rating, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        arg = 1.0 - (ultimate_trip_pu / np.where(x > 0, x, 1.0)) ** 2
        t = np.where(x > ultimate_trip_pu, -thermal_tau_s * np.log(np.where(arg > 0, arg, 1.0)), np.inf)
    return np.where(x >= magnetic_pickup_pu, magnetic_trip_s, t)


def breaker_thermal_state_step(
    theta, load_fraction_of_rating, dt_s, *, thermal_tau_s=BREAKER_THERMAL_TAU_S
) -> np.ndarray:
    """Advance the breaker thermal state ``theta`` [pu^2] by ``dt_s`` [s] at constant current.

    Exact solution of ``d theta/dt = (x^2 - theta)/tau``:
    ``theta' = x^2 + (theta - x^2) exp(-dt/tau)``. Start from 0 (cold) or from the
    steady state ``x^2`` of the previous load. The breaker trips when ``theta >=
    ultimate_trip_pu**2`` (see :func:`breaker_thermal_trip_state`); from cold at constant
    ``x`` this happens exactly at :func:`breaker_trip_time_s`.
    """
    x2 = np.asarray(load_fraction_of_rating, dtype=float) ** 2
    decay = np.exp(-np.asarray(dt_s, dtype=float) / thermal_tau_s)
    return x2 + (np.asarray(theta, dtype=float) - x2) * decay


def breaker_thermal_trip_state(ultimate_trip_pu=BREAKER_ULTIMATE_TRIP_PU) -> float:
    """Thermal state at which the breaker trips [pu^2]: ``ultimate_trip_pu**2``."""
    return float(ultimate_trip_pu) ** 2


# --- UPS ---------------------------------------------------------------------------

UPS_MODES = ("double_conversion", "eco", "bypass")

#: Loss model of a UPS [per unit of rating]: ``loss = a + b x + c x^2`` (no-load, linear,
#: resistive), the usual three-term model (IEC 62040-3 efficiency test points), by mode,
#: fitted to the published curves of :mod:`twin.power.ups_curves` (one place for the
#: data): double conversion is a modern transformerless unit (95.5 % at 25 % load,
#: 96.8 % at full load); the legacy transformer-based curve (86 % at 25 %, 94 % at full
#: load; LBNL/EPRI 2005, Schneider WP 108) is ``ups_curves`` "legacy_transformer". Eco:
#: load on the static bypass, inverter idling (about 99 %); bypass: the UPS out of the path.
UPS_LOSS_COEFFS = {
    "double_conversion": ups_loss_coeffs(UPS_CURVES["modern_transformerless"].efficiency),
    "eco": ups_loss_coeffs(UPS_CURVES["eco"].efficiency),
    "bypass": (0.0, 0.0, 0.0),
}


def _ups_coeffs(mode):
    try:
        return UPS_LOSS_COEFFS[mode]
    except KeyError:
        raise ValueError(f"UPS mode must be one of {UPS_MODES}, got {mode!r}") from None


def ups_loss_w(output_w, capacity_w, mode: str, *, loss_coeffs=None) -> np.ndarray:
    """UPS loss [W] delivering ``output_w`` [W] from a unit rated ``capacity_w`` [W].

    ``loss = S (a + b x + c x^2)`` with ``x = output/S`` for ``output > 0`` (a UPS carrying
    nothing is taken as switched off: zero loss). Coefficients by ``mode``
    (:data:`UPS_LOSS_COEFFS`) or ``loss_coeffs=(a, b, c)``.
    """
    a, b, c = _ups_coeffs(mode) if loss_coeffs is None else loss_coeffs
    p = np.asarray(output_w, dtype=float)
    s = np.asarray(capacity_w, dtype=float)
    x = p / s
    return np.where(p > 0.0, s * (a + b * x + c * x * x), 0.0)


def ups_efficiency(load_fraction, mode: str, *, loss_coeffs=None) -> np.ndarray:
    """UPS efficiency [fraction] at ``load_fraction`` of its rating [fraction].

    ``eta = x / (x + a + b x + c x^2)`` (see :data:`UPS_LOSS_COEFFS`); 0 at no load for a
    mode with a no-load loss, 1 for ``"bypass"``. Double conversion (modern): 0.955 at
    25 %, 0.968 at 90 %, 0.968 at 100 %; eco: 0.985 at 25 %, 0.991 at 90 %.
    """
    a, b, c = _ups_coeffs(mode) if loss_coeffs is None else loss_coeffs
    x = np.asarray(load_fraction, dtype=float)
    loss = a + b * x + c * x * x
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(x > 0.0, x / (x + loss), 0.0 if a > 0 else 1.0)
    return eta


#: Peukert exponent of a VRLA battery string (typ. 1.1-1.3; IEEE 1184 sizing practice).
UPS_PEUKERT_EXPONENT = 1.2


def ups_autonomy_s(
    load_fraction, ride_through_at_full_load_s, *, peukert_exponent=UPS_PEUKERT_EXPONENT
) -> np.ndarray:
    """Battery autonomy [s] at ``load_fraction`` of the UPS rating.

    Peukert's law: ``t = t_full * x**(-k)``; ``inf`` at no load. A UPS rated 5 min at full
    load carries a half load for 5 * 0.5**-1.2 = 11.5 min.
    """
    x = np.asarray(load_fraction, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(x > 0.0, ride_through_at_full_load_s * np.abs(x) ** (-peukert_exponent), np.inf)


#: Battery recharge power of a UPS rectifier [fraction of the UPS rating] (typ. 10-20 %;
#: generator sizing must cover it, e.g. Schneider Electric WP 2 / IEEE 446).
UPS_RECHARGE_FRACTION = 0.10
#: Battery charge efficiency (VRLA, ~85 %; IEEE 1184).
UPS_CHARGE_EFFICIENCY = 0.85


def ups_recharge(
    discharged_energy_j,
    capacity_w,
    *,
    recharge_fraction=UPS_RECHARGE_FRACTION,
    charge_efficiency=UPS_CHARGE_EFFICIENCY,
):
    """Extra input power [W] and duration [s] of recharging a UPS battery after a ride-through.

    The rectifier draws ``P = recharge_fraction * capacity`` on top of the load until it
    has put back ``E / charge_efficiency``: ``t = E / (charge_efficiency * P)``. Returns
    ``(power_w, duration_s)``; (0, 0) for nothing discharged. A 1.65 MW UPS that carried
    800 kW for 15 s (a generator start) recharges 12 MJ at 165 kW for 86 s.
    """
    e = np.asarray(discharged_energy_j, dtype=float)
    p = recharge_fraction * np.asarray(capacity_w, dtype=float)
    dur = np.where(e > 0.0, e / (charge_efficiency * p), 0.0)
    return np.where(e > 0.0, p, 0.0), dur


# --- cables, busways, transformers -------------------------------------------------


def resistive_loss_w(power_w, rating_w, loss_fraction_at_rating) -> np.ndarray:
    """I^2 R loss of a conductor path [W] carrying ``power_w`` [W].

    At constant voltage I is proportional to P, so ``loss = f_r * P^2 / P_rated`` with
    ``f_r`` the loss fraction at rated power (e.g. 0.01 for a 1 % voltage-drop design;
    NEC 210.19 informational note recommends <= 3 % on branch circuits).
    """
    p = np.asarray(power_w, dtype=float)
    return loss_fraction_at_rating * p * p / np.asarray(rating_w, dtype=float)


def transformer_loss_w(
    power_w, rating_w, *, no_load_loss_fraction, load_loss_fraction
) -> np.ndarray:
    """Transformer loss [W]: core (no-load) loss plus copper loss ``~ (P/S)^2``.

    ``loss = S (p0 + pk (P/S)^2)`` when energised (``P > 0``), the standard two-term model
    (IEEE C57.12.91; DOE 10 CFR 431 efficiency levels give p0 ~ 0.2 %, pk ~ 0.8 % for
    MV/LV units of 1-2.5 MVA).
    """
    p = np.asarray(power_w, dtype=float)
    s = np.asarray(rating_w, dtype=float)
    x = p / s
    return np.where(p > 0.0, s * (no_load_loss_fraction + load_loss_fraction * x * x), 0.0)
