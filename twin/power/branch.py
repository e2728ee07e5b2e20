"""Branch circuits and rack PDUs: each cord's load in normal operation and on A/B failover.

A rack PDU cord hangs on its own branch breaker in an RPP. With ``k`` cords sharing the
rack's load (PSU load sharing across A and B), each cord carries ``P / k``; when ``f``
cords lose their source, the ``k - f`` others carry ``P / (k - f)``. The load fraction is
the cord's real power over its breaker's continuous limit
(:func:`twin.power.electrical.breaker_continuous_limit_w`, NEC 80 % unless 100 %-rated);
above 1 the branch is overloaded and, held long enough, trips
(:func:`twin.power.breakers.frame_trip_time_s` of its frame, current per unit of the
rating = ``load_fraction x 0.8`` for a standard-rated breaker).

Example (tested): a 17.5 kW rack on two 208 V three-phase 60 A cords at pf 0.95 loads each
cord 8.75 kW = 0.53 of its 16.4 kW continuous limit (sqrt(3) x 208 V x 60 A x 0.8 x 0.95);
on failover one cord carries 17.5 kW = 1.07: overloaded. The same rack on 415 V 60 A cords
(32.8 kW continuous) sits at 0.27 and 0.53.
"""

from __future__ import annotations

import numpy as np

from twin.power.electrical import NEC_CONTINUOUS_DERATING, breaker_continuous_limit_w

__all__ = [
    "cord_load_w",
    "branch_load_fraction",
    "branch_rating_fraction",
    "failover_overloaded",
]


def cord_load_w(rack_w, cords: int = 2, failed_cords: int = 0) -> np.ndarray:
    """Real power on each live cord of a rack PDU [W]: ``P / (cords - failed)``.

    ``inf`` where no cord is left (the rack drops). ``rack_w`` [W], scalar or array.
    """
    live = int(cords) - int(failed_cords)
    p = np.asarray(rack_w, dtype=float)
    if live <= 0:
        return np.where(p > 0, np.inf, 0.0)
    return p / live


def branch_load_fraction(rack_w, *, breaker_a, voltage_v, phases, rated_100pct=False,
                         power_factor=0.95, cords: int = 2, failed_cords: int = 0) -> np.ndarray:
    """Cord load over its branch breaker's continuous limit [fraction] (> 1: overloaded).

    ``cord_load_w / breaker_continuous_limit_w(breaker_a, voltage_v, phases, rated_100pct,
    power_factor)``.
    """
    lim = breaker_continuous_limit_w(breaker_a, voltage_v, phases, rated_100pct, power_factor)
    return cord_load_w(rack_w, cords, failed_cords) / lim


def branch_rating_fraction(load_fraction, rated_100pct=False) -> np.ndarray:
    """Current per unit of the breaker's rating from a continuous-limit load fraction:
    ``x = load_fraction * k``, ``k`` = 0.8 (standard) or 1.0 (100 %-rated); the trip-curve input."""
    k = np.where(np.asarray(rated_100pct, dtype=bool), 1.0, NEC_CONTINUOUS_DERATING)
    return np.asarray(load_fraction, dtype=float) * k


def failover_overloaded(rack_w, **kw) -> np.ndarray:
    """True where losing one cord overloads the remaining one(s) at the continuous rule."""
    return branch_load_fraction(rack_w, failed_cords=1, **kw) > 1.0 + 1e-12
