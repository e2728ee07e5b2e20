"""Cooling-fault transients: lumped thermal capacitances integrated with solve_ivp.

When a cooling unit trips, the airflow pattern changes at once (fans stop), while
temperatures follow the heat stored in the hall. The model couples the recirculation
matrices of the hall before and after the trip (:func:`twin.thermal.inlet_model`) with
four kinds of thermal mass:

- **IT and rack mass** per rack, C_it [J/K] at temperature y_r, cooled by its airflow:
  C_it dy_r/dt = Q_r - q_r,  q_r = rho cp V_r (y_r - z_r)  (heat handed to the air);
  y_r is also the exhaust temperature (steady state: y = z + Q / (rho cp V)).
- **Room air**, split among the running cooling units in proportion to their airflow
  (C_ret,c = rho cp V_air V_c / sum V): the air that unit c will take back, at its return
  temperature T_ret,c, relaxing to the quasi-steady return of the new flow pattern:
  C_ret,c dT_ret,c/dt = rho cp V_c (R0_c s + R_c q - T_ret,c),
  with R0 = return_mix, R = return_k_per_w of the after-trip model.
- **Coil of each running unit**: supply temperature s_c = max(T_set,c, T_w + approach_c,
  T_ret,c - cap_c / (rho cp V_c)); heat removed rho cp V_c (T_ret,c - s_c) <= cap_c.
- **Chilled-water loop** at T_w with heat capacity C_w, cooled by the chiller (capacity
  P_ch; it holds its set point T_w,set while it can): C_w dT_w/dt = sum removed - P_ch.

Rack inlets follow the quasi-steady air pattern z* = S s + D q (after-trip supply mixing S
and recirculation D) with the room's air turnover time tau = V_air / sum V_racks (about
15 s): tau dz/dt = z* - z; q = rho cp V_r (y_r - z_r). With these definitions the stored energy
sum C_it y + sum C_ret T_ret + C_w T_w changes at exactly sum Q - P_ch (the column sums
of the heat shares are 1 and the supply air returns somewhere).
If no unit is left running, the room air is one well-mixed node T_room and z* = T_room:
C_air dT_room/dt = sum q. With small IT mass this gives the textbook estimate
t = C_air (T_limit - T_0) / sum Q (plus tau, the lag of a first-order sensor on a ramp).

Racks protect themselves: given ``rack_shutdown_inlet_c``, a rack whose inlet z_r reaches it
shuts down (Q_r = 0 from then on; an event of the integration, which restarts from the state
at that instant). Its IT mass still hands its stored heat to the air, so the room can never
hold more than the heat produced before the shutdowns plus what the IT mass stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg import lu_factor, lu_solve

from .geometry import HallGeometry
from .inlet import InletModel, inlet_model
from .properties import (
    AIR_VOLUMETRIC_HEAT_J_M3_K,
    ASHRAE_ALLOWABLE_C,
    GPU_SHUTDOWN_C,
    GPU_SLOWDOWN_C,
)
from .solver import PLENUM_HEIGHT_M

IT_HEAT_CAPACITY_J_K = 2.5e5
"""Default thermally active heat capacity of one rack of IT [J/K].

About 500 kg of servers, rails and PDUs (a DGX H100 is 130 kg per node, NVIDIA DGX H100
user guide; four to a rack) at about 500 J/(kg K) (steel 490, aluminium 900, copper 385,
FR-4 about 1100 J/(kg K)); with a rack airflow of 0.56 m3/s its time constant
C / (rho cp V) is about 6 minutes.
"""

WATER_VOLUMETRIC_HEAT_J_M3_K = 4.18e6
"""rho * cp of water near 10 C [J/(m3 K)]."""


def hall_air_volume_m3(geometry: HallGeometry) -> float:
    """Air volume of the hall and its raised-floor plenum [m3] (rack bodies, of height
    min(rack_height_m, height_m), excluded)."""
    g = geometry
    rack_volume = g.n_racks * g.rack_width_m * g.rack_depth_m * min(g.rack_height_m, g.height_m)
    return g.width_m * g.depth_m * (g.height_m + PLENUM_HEIGHT_M) - rack_volume


@dataclass(frozen=True, eq=False)
class FaultTransient:
    """Trajectories after a cooling fault and the times at which limits are crossed."""

    time_s: np.ndarray  # (K,)
    inlet_temp_c: np.ndarray  # (K, R)
    exhaust_temp_c: np.ndarray  # (K, R)
    supply_temp_c: np.ndarray  # (K, C) NaN for units not running
    heat_removed_w: np.ndarray  # (K, C)
    chilled_water_temp_c: np.ndarray  # (K,)
    limit_c: float
    minutes_to_limit: np.ndarray  # (R,) inf when the inlet stays below limit_c
    minutes_to_gpu_slowdown: np.ndarray  # (R,) inf if no GPU data or never reached
    minutes_to_gpu_shutdown: np.ndarray  # (R,)
    rack_shutdown_s: np.ndarray | None = None  # (R,) when the rack's inlet protection shut it, inf if never [s]

    def inlet_at(self, t_s: float) -> np.ndarray:
        """Rack inlet temperatures [C] at t_s seconds after the fault (linear
        interpolation between samples; the last sample beyond the horizon)."""
        t = float(np.clip(t_s, self.time_s[0], self.time_s[-1]))
        k = int(np.searchsorted(self.time_s, t, side="right")) - 1
        k = min(max(k, 0), len(self.time_s) - 2) if len(self.time_s) > 1 else 0
        if len(self.time_s) == 1:
            return self.inlet_temp_c[0].copy()
        w = (t - self.time_s[k]) / (self.time_s[k + 1] - self.time_s[k])
        return (1 - w) * self.inlet_temp_c[k] + w * self.inlet_temp_c[k + 1]


def first_crossing_s(time_s, values, threshold, start: int = 0) -> np.ndarray:
    """First time [s] each column of ``values`` [(K, R)], sampled at ``time_s`` [s (K,)],
    reaches ``threshold`` at or after sample ``start``, linear between samples: from the
    sample before the first one at or above it when that one is below (so a crossing just
    before sample ``start`` is found at its interpolated time), else that sample's time;
    inf if never."""
    time_s = np.asarray(time_s, float)
    z = np.asarray(values, float)
    out = np.full(z.shape[1], np.inf)
    if start >= len(time_s):
        return out
    hot = z[start:] >= threshold
    has = hot.any(axis=0)
    i = start + np.argmax(hot, axis=0)
    prev = np.maximum(i - 1, 0)
    cols = np.arange(z.shape[1])
    z0, z1 = z[prev, cols], z[i, cols]
    rising = has & (i > 0) & (z0 < threshold)      # then z1 >= threshold > z0
    frac = np.where(rising, (threshold - z0) / np.where(rising, z1 - z0, 1.0), 0.0)
    t = time_s[prev] + frac * (time_s[i] - time_s[prev])
    out[has] = t[has]
    return out


def _first_crossing_min(time_s, values, threshold):
    """First time [min] each column of values (K, R) reaches threshold (linear interp.)."""
    return first_crossing_s(time_s, values, threshold) / 60.0


def fault_transient(
    before: InletModel,
    after: InletModel | None,
    rack_heat_w,
    *,
    air_volume_m3: float,
    duration_s: float = 3600.0,
    limit_c: float = ASHRAE_ALLOWABLE_C["A1"][1],
    it_heat_capacity_j_k=IT_HEAT_CAPACITY_J_K,
    chilled_water_volume_m3: float = 20.0,
    chilled_water_supply_c: float = 12.0,
    chiller_capacity_w: float = np.inf,
    gpu_power_w=None,
    gpu_thermal_resistance_k_per_w=None,
    gpu_slowdown_c: float = GPU_SLOWDOWN_C,
    gpu_shutdown_c: float = GPU_SHUTDOWN_C,
    output_step_s: float = 2.0,
    inlet_mixing_time_s: float | None = None,
    rack_shutdown_inlet_c: float = np.inf,
) -> FaultTransient:
    """Integrate the hall after a cooling fault (see the module docstring for the model).

    before / after: inlet models of the hall with the units running before and after the
    fault (after = None when no unit is left). rack_heat_w (R,) [W] stays constant (open
    loop: throttling is reported, not fed back). The hall starts in the steady state of
    ``before``. limit_c defaults to the ASHRAE A1 allowable maximum, 32 C (TC 9.9, 2021).
    chiller_capacity_w = 0 models a chiller (plant) trip: the loop's water volume
    ``chilled_water_volume_m3`` then absorbs the heat the coils remove, and the supply
    temperature follows the water (approach = supply set point - chilled_water_supply_c).
    inlet_mixing_time_s: lag of the rack inlets behind the quasi-steady air pattern
    (default: the room's air turnover time, air volume / total rack airflow, ~15 s).
    rack_shutdown_inlet_c [C]: a rack whose inlet reaches it stops producing heat (the
    servers' inlet protection, :data:`twin.thermal.SERVER_INLET_SHUTDOWN_C`; default never).
    Returns trajectories sampled every ``output_step_s`` and minutes to limit_c per rack,
    and, given GPU power and inlet-to-die resistance, minutes to GPU slowdown / shutdown.
    """
    heat = np.asarray(rack_heat_w, float)
    n_r = heat.size
    v_r = before.rack_airflow_m3_s
    g_r = AIR_VOLUMETRIC_HEAT_J_M3_K * v_r  # W/K
    c_it = np.broadcast_to(np.asarray(it_heat_capacity_j_k, float), (n_r,))
    c_w = WATER_VOLUMETRIC_HEAT_J_M3_K * chilled_water_volume_m3
    t_set = before.cooling_supply_temp_c
    approach = t_set - chilled_water_supply_c
    c_air = AIR_VOLUMETRIC_HEAT_J_M3_K * air_volume_m3

    z0 = before.base_inlet_c + before.recirculation_k_per_w @ heat
    y0 = z0 + heat / g_r
    ret_before = before.return_temp_c(heat)
    running = after is not None and after.cooling_airflow_m3_s.sum() > 0
    if running:
        assert after is not None  # running implies an after model
        v_c = after.cooling_airflow_m3_s
        act = v_c > 0
        g_c = AIR_VOLUMETRIC_HEAT_J_M3_K * v_c
        c_ret = np.where(act, c_air * v_c / v_c.sum(), 1.0)
        cap = after.cooling_capacity_w
        s_mix, d_mat = after.supply_mix, after.recirculation_k_per_w
        r0, r_k = after.return_mix, after.return_k_per_w
        ret0 = np.where(act & np.isfinite(ret_before), ret_before, np.nanmean(ret_before))
    else:
        act = np.zeros(before.cooling_airflow_m3_s.size, bool)
        v_b = before.cooling_airflow_m3_s
        ret0 = np.array([np.nansum(v_b * np.nan_to_num(ret_before)) / v_b.sum()])
    n_c = ret0.size

    def supply(ret, tw):
        floor = np.maximum(t_set, tw + approach)
        return np.maximum(floor, ret - cap / np.where(act, g_c, 1.0))

    # Quasi-steady inlet: z = S s + D q with q = G (y - z)  ->  (I + D G) z = S s + D G y.
    # Large halls carry a truncated sparse D: use it (and a sparse LU) there.
    if running:
        assert after is not None  # running implies an after model
        if after.recirculation_csr is not None:
            d_mat = after.recirculation_csr
            lhs_lu = spla.splu((sp.identity(n_r, format="csc") + d_mat @ sp.diags(g_r)).tocsc())
            solve_lhs = lhs_lu.solve
        else:
            lhs_lu = lu_factor(np.eye(n_r) + d_mat * g_r[None, :])

            def solve_lhs(b):
                return lu_solve(lhs_lu, b)

    def inlet_qs(y, s, room):
        if running:
            return solve_lhs(s_mix @ s + d_mat @ (g_r * y))
        return np.full(n_r, room)

    tau = inlet_mixing_time_s if inlet_mixing_time_s is not None else air_volume_m3 / v_r.sum()

    on = np.ones(n_r, bool)                   # racks still producing heat

    def rhs(_t, x):
        y = x[:n_r]
        ret = x[n_r : n_r + n_c]
        tw = x[n_r + n_c]
        z = x[n_r + n_c + 1 :]
        q = g_r * (y - z)
        dy = (np.where(on, heat, 0.0) - q) / c_it
        if running:
            s = supply(ret, tw)
            dret = np.where(act, g_c * (r0 @ s + r_k @ q - ret) / c_ret, 0.0)
            removed = np.where(act, g_c * (ret - s), 0.0).sum()
            net = removed - chiller_capacity_w
            dtw = net / c_w if (tw > chilled_water_supply_c or net > 0) else 0.0
        else:
            s = None
            dret = np.array([q.sum() / c_air])
            dtw = 0.0
        dz = (inlet_qs(y, s, ret[0]) - z) / tau if tau > 0 else np.zeros(n_r)
        return np.concatenate([dy, dret, [dtw], dz])

    x0 = np.concatenate([y0, ret0, [chilled_water_supply_c], z0])
    t_eval = np.arange(0.0, duration_s + 0.5 * output_step_s, output_step_s)
    t_eval[-1] = min(t_eval[-1], duration_s)
    shut_s = np.full(n_r, np.inf)
    shut_c = float(rack_shutdown_inlet_c)
    on &= z0 < shut_c                         # already at the limit: off from the start
    shut_s[~on] = 0.0

    def first_shutdown(_t, x):                # the hottest running rack's inlet reaches the limit
        return float(np.max(x[n_r + n_c + 1 :][on])) - shut_c if on.any() else -1.0
    first_shutdown.terminal = True            # type: ignore[attr-defined]
    first_shutdown.direction = 1              # type: ignore[attr-defined]
    # imported here, not at module level: a run without a cooling fault never needs it
    from scipy.integrate import solve_ivp

    t0, x, ts, xs = 0.0, x0, [], []
    while True:                               # one integration per set of racks still running
        te = t_eval[t_eval > t0] if t0 > 0 else t_eval
        sol = solve_ivp(rhs, (t0, duration_s), x, method="LSODA", t_eval=te, rtol=1e-6, atol=1e-6,
                        max_step=60.0, events=first_shutdown if np.isfinite(shut_c) else None)
        if not sol.success:
            raise RuntimeError(f"fault transient integration failed: {sol.message}")
        if np.size(sol.t):                    # no output time inside a short last segment
            ts.append(np.asarray(sol.t, float))
            xs.append(np.asarray(sol.y, float).reshape(x0.size, -1))
        if sol.status != 1:                   # reached duration_s
            break
        t0, x = float(sol.t_events[0][0]), sol.y_events[0][0]
        hot = on & (x[n_r + n_c + 1 :] >= shut_c - 1e-6)
        shut_s[hot] = t0
        on &= ~hot
        if t0 >= duration_s:
            break
    sol_t, sol_y = np.concatenate(ts), np.concatenate(xs, axis=1)
    ys = sol_y[:n_r].T
    rets = sol_y[n_r : n_r + n_c].T
    tws = sol_y[n_r + n_c]
    inl = sol_y[n_r + n_c + 1 :].T
    if running:
        sup = np.array([supply(rets[k], tws[k]) for k in range(len(sol_t))])
        removed = np.where(act, g_c * (rets - sup), 0.0)
        sup = np.where(act, sup, np.nan)
    else:
        sup = np.full((len(sol_t), before.cooling_airflow_m3_s.size), np.nan)
        removed = np.zeros_like(sup)
    slow = np.full(n_r, np.inf)
    shut = np.full(n_r, np.inf)
    if gpu_power_w is not None and gpu_thermal_resistance_k_per_w is not None:
        rise = np.broadcast_to(np.asarray(gpu_thermal_resistance_k_per_w, float) * np.asarray(gpu_power_w, float), (n_r,))
        gpu = inl + rise[None, :]
        slow = _first_crossing_min(sol_t, gpu, gpu_slowdown_c)
        shut = _first_crossing_min(sol_t, gpu, gpu_shutdown_c)
    return FaultTransient(
        time_s=sol_t,
        inlet_temp_c=inl,
        exhaust_temp_c=ys,
        supply_temp_c=sup,
        heat_removed_w=removed,
        chilled_water_temp_c=tws,
        limit_c=limit_c,
        minutes_to_limit=_first_crossing_min(sol_t, inl, limit_c),
        minutes_to_gpu_slowdown=slow,
        minutes_to_gpu_shutdown=shut,
        rack_shutdown_s=shut_s,
    )


def minutes_to_inlet_limit(
    geometry: HallGeometry,
    rack_heat_w,
    rack_airflow_m3_s,
    tripped,
    *,
    cooling_active=None,
    limit_c: float = ASHRAE_ALLOWABLE_C["A1"][1],
    **transient_kwargs,
) -> np.ndarray:
    """Minutes until each rack's inlet crosses ``limit_c`` after cooling units trip.

    tripped: index or (C,) bool of the units that stop (fans off). cooling_active: the
    units running before the fault (default all). Derives the recirculation matrices
    before and after and integrates :func:`fault_transient`; inf = never within
    ``duration_s`` (default one hour). limit_c defaults to the ASHRAE TC 9.9 (2021) A1
    allowable maximum, 32 C.
    """
    n_c = geometry.n_cooling
    before_act = np.ones(n_c, bool) if cooling_active is None else np.asarray(cooling_active, bool)
    trip = np.zeros(n_c, bool)
    trip[np.asarray(tripped)] = True
    after_act = before_act & ~trip
    before = inlet_model(geometry, rack_airflow_m3_s, before_act)
    after = inlet_model(geometry, rack_airflow_m3_s, after_act) if after_act.any() else None
    res = fault_transient(
        before, after, rack_heat_w, air_volume_m3=hall_air_volume_m3(geometry), limit_c=limit_c, **transient_kwargs
    )
    return res.minutes_to_limit
