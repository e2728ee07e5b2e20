"""Cooling capacity: coils that run out of capacity, and the steady state of a hall
whose units and chilled-water plant are finite.

A cooling coil cools the air it draws from the return temperature T_ret down to its
supply set point T_set, as long as the heat this takes, G (T_ret - T_set) with
G = rho cp V the unit's airflow heat rate [W/K], is within its capacity P_cap. Beyond,
the coil removes P_cap and the air leaves warmer (energy balance over the coil):

    T_sup = max(T_set, T_w + a, T_ret - P_cap / G)

with T_w + a the floor the chilled water sets (water temperature plus coil approach).
The hall is linear in the supply temperatures (:class:`twin.thermal.InletModel`:
T_ret = R0 T_sup + R_k Q), so the steady state with saturated coils is a piecewise-linear
fixed point. :func:`capped_steady_state` finds it with an active-set iteration: units
whose heat would exceed their capacity supply warmer air, their neighbours see warmer
returns and pick up the rest, and every watt of rack heat ends in some coil. When the
heat exceeds what the running coils (or the chilled-water plant) can remove, no steady
state exists: the hall heats up at the deficit rate, and the result says so
(``feasible = False``, ``deficit_w``, ``limiting``); use :mod:`twin.thermal.events` to
follow the temperatures in time.

References
----------
ASHRAE Handbook - HVAC Systems and Equipment (2020), ch. 23 "Air-cooling and
dehumidifying coils": sensible coil capacity Q = m cp (T_in - T_out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .inlet import InletModel
from .properties import AIR_VOLUMETRIC_HEAT_J_M3_K

__all__ = [
    "CappedSteadyState",
    "capped_steady_state",
    "coil_heat_removed_w",
    "coil_supply_temp_c",
    "cooling_margin_w",
    "hall_cooling_margin_w",
]


def coil_supply_temp_c(return_temp_c, setpoint_c, airflow_m3_s, capacity_w, floor_c=-np.inf):
    """Supply-air temperature of a cooling coil with finite capacity [C].

    T_sup = max(T_set, T_floor, T_ret - P_cap / (rho cp V)): the coil holds its set point
    while the heat G (T_ret - T_set) is within its capacity; beyond, it removes exactly
    P_cap and the air leaves warmer. ``floor_c`` is the lowest supply the chilled water
    allows (water temperature + coil approach). Units: C, C, m3/s, W, C.
    """
    g = AIR_VOLUMETRIC_HEAT_J_M3_K * np.asarray(airflow_m3_s, float)
    with np.errstate(divide="ignore"):
        limited = np.asarray(return_temp_c, float) - np.asarray(capacity_w, float) / g
    return np.maximum(np.maximum(setpoint_c, floor_c), limited)


def coil_heat_removed_w(return_temp_c, supply_temp_c, airflow_m3_s):
    """Sensible heat a coil removes [W]: rho cp V (T_ret - T_sup)."""
    return AIR_VOLUMETRIC_HEAT_J_M3_K * np.asarray(airflow_m3_s, float) * (
        np.asarray(return_temp_c, float) - np.asarray(supply_temp_c, float))


def hall_cooling_margin_w(unit_capacity_w, unit_active, heat_w, plant_capacity_w=np.inf) -> float:
    """Heat a hall's cooling can still take [W]: what its running units together, or the
    chilled-water plant, can remove, minus the heat to remove.

        margin = min(sum_c running P_cap,c, P_plant) - sum Q

    Negative: no steady state exists (-margin is :attr:`CappedSteadyState.deficit_w`); the
    room heats up at that rate. A single unit beyond its own capacity is not a shortage of
    the hall: it supplies warmer air and its neighbours take the rest
    (:attr:`CappedSteadyState.capacity_margin_w` is that unit-level reading).
    unit_capacity_w (C,) [W], unit_active (C,) bool, heat_w: rack heat (plus unit fan heat
    the coils remove) [W, any shape], plant_capacity_w [W].
    """
    cap = np.asarray(unit_capacity_w, float)[np.asarray(unit_active, bool)]
    return cooling_margin_w(float(cap.sum()), float(np.sum(heat_w)), plant_capacity_w)


def cooling_margin_w(running_capacity_w: float, heat_w: float, plant_capacity_w) -> float:
    """:func:`hall_cooling_margin_w` from sums a caller keeps: the running units' summed
    capacity [W] and the summed heat [W]: min(sum P_cap, P_plant) - sum Q [W]."""
    return float(min(running_capacity_w, float(plant_capacity_w)) - heat_w)


@dataclass(frozen=True)
class CappedSteadyState:
    """Steady state of a hall with finite coil and plant capacity.

    ``feasible`` False: the running coils (``limiting = "units"``) or the chilled-water
    plant (``"plant"``) cannot remove the heat; ``deficit_w`` is the excess [W] and the
    temperatures are those the coils would give at their set points (a lower bound of
    what follows: the hall heats up at ``deficit_w`` over its heat capacity). Arrays over running and stopped units alike (NaN / 0 for stopped ones).
    """

    feasible: bool
    limiting: str  # "" | "units" | "plant"
    deficit_w: float
    supply_temp_c: np.ndarray  # (C,)
    return_temp_c: np.ndarray  # (C,)
    inlet_temp_c: np.ndarray  # (R,)
    unit_load_w: np.ndarray  # (C,) heat removed by each coil [W]
    unit_capacity_w: np.ndarray  # (C,)
    unit_demand_w: np.ndarray  # (C,) heat each coil removes when every coil holds its set point [W]
    saturated: np.ndarray  # (C,) bool: coil at capacity, supply above its set point
    iterations: int

    @property
    def capacity_margin_w(self) -> float:
        """Smallest spare capacity of a running unit [W]: capacity minus the heat it would
        remove if every coil held its set point (negative: the unit is short by that much;
        it supplies warmer air and its neighbours take the rest)."""
        run = np.isfinite(self.return_temp_c)
        if not run.any():
            return -np.inf
        return float(np.min(self.unit_capacity_w[run] - self.unit_demand_w[run]))


@dataclass(frozen=True, eq=False)
class _CoilConstants:
    """What :func:`capped_steady_state` reads of a model's units and its settings besides
    the heat: kept for the default settings while the model's unit arrays are the same
    objects (the interpolated models of one airflow family share them), so a run that
    evaluates many models of a hall computes them once. ``*_free``: with every coil at its
    set point (no coil saturated), the common case."""

    act: np.ndarray
    g: np.ndarray            # rho cp V of each unit [W/K]
    t_set: np.ndarray
    cap: np.ndarray
    fan: np.ndarray
    fan_rise: np.ndarray     # [K] added after the coil
    cap_rise: np.ndarray     # cap / G [K] (G = 1 for stopped units)
    cap_limit: np.ndarray    # load above which a coil saturates [W]
    run_cap: float
    fan_sum: float           # sum of the fans' heat [W]
    all_act: bool            # every unit runs (then where(act, x, y) is x)
    s_free: np.ndarray       # supplies with no coil saturated [C]
    c_out_free: np.ndarray   # s_free - fan_rise
    supply_free: np.ndarray  # where(act, s_free, NaN)


#: unit constants of the default settings, by the identities of the model arrays they come
#: from (the arrays are held, so an identity is not reused while its entry lives); the entry
#: of key None is the last one used, checked first
_COIL_CONSTANTS: dict[tuple | None, tuple] = {}
_COIL_CONSTANTS_SIZE = 32


def _constants(model: InletModel, setpoint_c, capacity_w, unit_fan_heat_w) -> _CoilConstants:
    """The :class:`_CoilConstants` of ``model``'s units (kept for the default settings; a
    model's arrays are not changed once built)."""
    # (a float fan heat is 0-d: np.ndim's dispatch only for other types)
    default = setpoint_c is None and capacity_w is None and (
        type(unit_fan_heat_w) is float or np.ndim(unit_fan_heat_w) == 0) and unit_fan_heat_w == 0
    last = _COIL_CONSTANTS.get(None)    # the last hit: the models of one family share their unit arrays
    if (default and last is not None and last[0][0] is model.cooling_active and last[0][1] is
            model.cooling_airflow_m3_s and last[0][2] is model.cooling_supply_temp_c and last[0][3] is
            model.cooling_capacity_w):
        return last[1]
    src = (model.cooling_active, model.cooling_airflow_m3_s, model.cooling_supply_temp_c, model.cooling_capacity_w)
    key = tuple(map(id, src))
    if default and (hit := _COIL_CONSTANTS.get(key)) is not None and all(
            a is b for a, b in zip(hit[0], src, strict=True)):
        _COIL_CONSTANTS[None] = hit
        return hit[1]
    act = np.asarray(model.cooling_active, bool)
    n_c = act.size
    g = AIR_VOLUMETRIC_HEAT_J_M3_K * model.cooling_airflow_m3_s
    t_set = np.broadcast_to(np.asarray(model.cooling_supply_temp_c if setpoint_c is None else setpoint_c,
                                       float), (n_c,)).copy()
    cap = np.broadcast_to(np.asarray(model.cooling_capacity_w if capacity_w is None else capacity_w,
                                     float), (n_c,)).copy()
    fan = np.broadcast_to(np.asarray(unit_fan_heat_w, float), (n_c,)) * act
    fan_rise = np.where(act, fan / np.where(act, g, 1.0), 0.0)
    s_free = t_set + fan_rise
    if not act.all():
        s_free[~act] = t_set[~act]
    k = _CoilConstants(
        act=act, g=g, t_set=t_set, cap=cap, fan=fan, fan_rise=fan_rise, cap_rise=cap / np.where(act, g, 1.0),
        cap_limit=cap * (1 + 1e-9) + 1e-6, run_cap=float(cap[act].sum()), fan_sum=float(fan.sum()),
        all_act=bool(act.all()), s_free=s_free,
        c_out_free=s_free - fan_rise, supply_free=np.where(act, s_free, np.nan))
    if default:
        if len(_COIL_CONSTANTS) >= _COIL_CONSTANTS_SIZE:
            _COIL_CONSTANTS.pop(next(key_ for key_ in _COIL_CONSTANTS if key_ is not None))
        _COIL_CONSTANTS[key] = _COIL_CONSTANTS[None] = (src, k)
    return k


#: :func:`capped_steady_state` takes :func:`_unsaturated` first when every unit runs
#: (False: the active-set iteration alone, the reference; the same numbers either way)
UNSATURATED_FAST = True


def _unsaturated(model: InletModel, q: np.ndarray, k: _CoilConstants, plant_capacity_w) -> CappedSteadyState | None:
    """:func:`capped_steady_state` of the common case, every unit running and none beyond its
    capacity with every coil at its set point: the iteration's first pass and its result,
    the same operations on the same numbers without the iteration's bookkeeping (a per-sample
    call of a run, issue 19). None when a unit saturates or the hall is short: the caller
    iterates."""
    rq = model.return_k_per_w @ q
    if cooling_margin_w(k.run_cap, float(q.sum()) + k.fan_sum, plant_capacity_w) < 0:
        return None
    ret = model.return_mix @ k.s_free + rq
    load = k.g * (ret - k.c_out_free)   # c_out_free is s_free - fan_rise, the iteration's s - fan_rise
    if (load > k.cap_limit).any():
        return None
    out = object.__new__(CappedSteadyState)     # the frozen dataclass's fields, set at once
    out.__dict__.update(
        feasible=True, limiting="", deficit_w=0.0, supply_temp_c=k.supply_free.copy(), return_temp_c=ret,
        inlet_temp_c=model.supply_mix @ k.s_free + model.recirculation_k_per_w @ q, unit_load_w=load,
        unit_capacity_w=k.cap.copy(), unit_demand_w=model.cooling_load_w(q) + k.fan,
        saturated=np.zeros(k.act.size, bool), iterations=1)
    return out


def capped_steady_state(
    model: InletModel,
    rack_heat_w,
    *,
    setpoint_c=None,
    capacity_w=None,
    plant_capacity_w: float = np.inf,
    unit_fan_heat_w=0.0,
    max_iter: int = 100,
) -> CappedSteadyState:
    """Steady supply, return and inlet temperatures with finite coil capacity.

    Solves T_sup,c = max(T_set,c, T_ret,c - P_cap,c / G_c) with T_ret = R0 T_sup + R_k Q
    (``model.return_mix``, ``model.return_k_per_w``) by an active-set iteration: the
    saturated set U gives the linear system (I - diag(u) R0) T_sup = where(u, R_k Q -
    P_cap / G, T_set); units are added to U while their load exceeds capacity and dropped
    when their supply would fall below set point. Then T_in = S T_sup + D Q.

    setpoint_c (C,) [C]: default ``model.cooling_supply_temp_c``. capacity_w (C,) [W]:
    default ``model.cooling_capacity_w``. plant_capacity_w [W]: the chilled-water plant
    (chillers plus economizer) rating. unit_fan_heat_w (C,) [W]: heat of each unit's fan,
    added to the air after the coil (the coil removes it too). Energy balance (feasible):
    sum of unit loads = sum Q + sum fan heat, to solver precision.
    """
    q = np.asarray(rack_heat_w, float)
    k = _constants(model, setpoint_c, capacity_w, unit_fan_heat_w)
    if UNSATURATED_FAST and k.all_act:
        done = _unsaturated(model, q, k, plant_capacity_w)
        if done is not None:
            return done
    act, g, t_set, cap, fan, fan_rise = k.act, k.g, k.t_set, k.cap, k.fan, k.fan_rise
    n_c = act.size
    r0, rk = model.return_mix, model.return_k_per_w
    rq = rk @ q
    limiting, deficit = "", 0.0
    margin = cooling_margin_w(k.run_cap, float(q.sum()) + k.fan_sum, plant_capacity_w)  # hall_cooling_margin_w
    if margin < 0:
        limiting = "units" if k.run_cap <= plant_capacity_w else "plant"
        deficit = -margin
    # coil outlet c_out; supply s = c_out + fan rise; returns T_ret = R0 s + R_k Q
    sat = np.zeros(n_c, bool)
    it = 0
    s = k.s_free
    while not limiting and it < max_iter:
        it += 1
        u = sat & act
        if not u.any():                 # no coil saturated: the system is I s = rhs (exactly)
            s = k.s_free
            ret = r0 @ s + rq
        else:
            # coil outlet: T_set (unsaturated) or T_ret - cap / G (saturated); the fan adds its rise
            rhs = np.where(u, rq - k.cap_rise + fan_rise, t_set + fan_rise)
            if not act.all():
                rhs[~act] = t_set[~act]
            eye = np.eye(n_c)
            a = eye - (u[:, None] * r0)
            if not act.all():
                a[~act] = eye[~act]
            try:
                s = np.linalg.solve(a, rhs)
            except np.linalg.LinAlgError:
                break
            ret = r0 @ s + rq
        load = g * (ret - (s - fan_rise))
        if not sat.any():               # none saturated yet: none to drop
            sat = act & (load > k.cap_limit)
            if not sat.any():
                break
            continue
        add = act & ~sat & (load > k.cap_limit)
        drop = act & sat & (s - fan_rise < t_set - 1e-9)
        if not add.any() and not drop.any():
            break
        sat = (sat | add) & ~drop
    free = s is k.s_free                # the supplies of the unsaturated coils: kept arrays
    if not (free and it):               # (the loop's last returns are the final ones)
        ret = r0 @ s + rq
    load = g * (ret - (k.c_out_free if free else s - fan_rise))
    demand = model.cooling_load_w(q) + fan
    if not k.all_act:
        load, demand = np.where(act, load, 0.0), np.where(act, demand, 0.0)
    inlet = model.supply_mix @ s + model.recirculation_k_per_w @ q
    return CappedSteadyState(
        feasible=not limiting,
        limiting=limiting,
        deficit_w=deficit,
        supply_temp_c=k.supply_free.copy() if free else np.where(act, s, np.nan),
        return_temp_c=ret if k.all_act else np.where(act, ret, np.nan),
        inlet_temp_c=inlet,
        unit_load_w=load,
        unit_capacity_w=cap.copy(),
        unit_demand_w=demand,
        saturated=sat & act,
        iterations=it,
    )
