"""Event-driven cooling transients: a hall that carries its thermal state from event to event.

A cooling-unit trip, a restart or a power transfer is evaluated at its own time, from
the state the hall is in then (never from a fresh steady state), and the state at the
end of the segment is the start of the next one. Overlapping and straddling faults are
consecutive segments of one trajectory, so they can never do more than the heat that was
produced (see :func:`adiabatic_temperature_bound_c`).

Model (the lumped capacitances of :mod:`twin.thermal.transient`, with feedback):

- **IT mass** of each rack, C_it [J/K] at y_r (= the exhaust temperature):
  C_it dy_r/dt = Q_r(t) - q_r,  q_r = G_r (y_r - z_r),  G_r = rho cp V_r.
- **Rack inlets** follow the quasi-steady air pattern of the running units (the room's
  air turnover, ~15 s, is far below the step): z = S s + D q, i.e.
  z = (I + D G)^-1 (S s + D G y).
- **Room air**, C_air = rho cp V_air, split among the running units by design airflow:
  node c (the air unit c will draw back, at its return temperature a_c):
  C_c da_c/dt = G_c (R0 s + R_k q - a_c)_c.
  With no unit running the room is one mixed node: C_air dT/dt = sum q, z = T.
- **Coils**: s_c = max(T_set,c, T_w + approach_c, a_c - P_cap,c / G_c) (finite capacity,
  :func:`twin.thermal.capacity.coil_supply_temp_c`); they remove G_c (a_c - s_c).
- **Chilled water** (loop plus storage tank), C_w dT_w/dt = sum removed - P_ch, with the
  chiller holding its set point while it can, off until ``chiller_available_s`` (restart
  delay after a power transfer), then at its capacity.
- **Throttling and shutdown feed back**: a rack's GPUs sit at T_gpu = z + R_th P_gpu f
  (f = clock fraction from :func:`twin.thermal.properties.gpu_clock_fraction` at the
  previous step); the GPU share of the rack heat scales with f, and a rack whose GPUs
  reach the shutdown temperature drops its heat to zero for the rest of the segment
  (nodes power off; they come back only by an engine decision).

Integration: the linear part (IT mass and air nodes, with z eliminated) by the trapezoidal
rule (Crank-Nicolson) with one LU factorisation per running-unit set; coil supply,
chiller and throttling lagged by one step (steps at most half the fastest air time
constant). Extremes between samples (highest inlet and GPU temperature) and the first
times at which the ASHRAE A1 inlet limit, GPU slowdown and GPU shutdown are reached are
taken on every step, with linear interpolation of the crossing.

References
----------
ASHRAE TC 9.9 (2021), Thermal Guidelines for Data Processing Environments, 5th ed.: A1
allowable inlet 15-32 C. Zhang & VanGilder, "Real-time data center transient analysis",
ASME InterPACK 2011, IPACK2011-52003 (lumped air, IT and chilled-water capacitances after a
power failure). Crank & Nicolson, Proc. Camb. Phil. Soc. 43 (1947) 50.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
from scipy.linalg import lu_factor, lu_solve

from .inlet import InletModel
from .properties import (
    AIR_VOLUMETRIC_HEAT_J_M3_K,
    ASHRAE_ALLOWABLE_C,
    GPU_HW_SLOWDOWN_C,
    GPU_SHUTDOWN_C,
    GPU_SLOWDOWN_C,
    HW_SLOWDOWN_CLOCK_FRACTION,
)
from .transient import IT_HEAT_CAPACITY_J_K, WATER_VOLUMETRIC_HEAT_J_M3_K

__all__ = [
    "FaultSegment",
    "HallThermalState",
    "ThermalMasses",
    "adiabatic_temperature_bound_c",
    "advance",
    "hall_steady_state",
    "throttled_clock_fraction",
]


@dataclass(frozen=True)
class ThermalMasses:
    """Heat capacities of a hall [J/K] and how its room air is shared among units.

    it_heat_capacity_j_k (R,); air_heat_capacity_j_k = rho cp x air volume;
    air_share (C,) fractions of the room air each unit draws back (design airflow shares,
    sum 1); chilled_water_heat_capacity_j_k = rho_w cp_w x (loop + storage) volume.
    """

    it_heat_capacity_j_k: np.ndarray
    air_heat_capacity_j_k: float
    air_share: np.ndarray
    chilled_water_heat_capacity_j_k: float

    @classmethod
    def of(cls, n_racks: int, air_volume_m3: float, design_airflow_m3_s, *,
           it_heat_capacity_j_k=IT_HEAT_CAPACITY_J_K, chilled_water_volume_m3: float = 20.0):
        """Masses from an air volume [m3], unit design airflows [m3/s], IT capacity per
        rack [J/K] and a chilled-water volume (loop plus storage) [m3]."""
        v = np.asarray(design_airflow_m3_s, float)
        return cls(
            it_heat_capacity_j_k=np.broadcast_to(np.asarray(it_heat_capacity_j_k, float), (n_racks,)).copy(),
            air_heat_capacity_j_k=AIR_VOLUMETRIC_HEAT_J_M3_K * float(air_volume_m3),
            air_share=v / v.sum(),
            chilled_water_heat_capacity_j_k=WATER_VOLUMETRIC_HEAT_J_M3_K * float(chilled_water_volume_m3),
        )


@dataclass(frozen=True)
class HallThermalState:
    """Thermal state of a hall at ``time_s`` [s].

    it_temp_c (R,) IT mass / exhaust temperature; air_temp_c (C,) room-air node of each
    unit (stopped units hold the mixed room temperature); chilled_water_temp_c;
    rack_on (R,) False for racks whose nodes shut down on temperature.
    """

    time_s: float
    it_temp_c: np.ndarray
    air_temp_c: np.ndarray
    chilled_water_temp_c: float
    rack_on: np.ndarray

    def stored_energy_j(self, masses: ThermalMasses, reference_c: float = 0.0) -> float:
        """Heat stored above ``reference_c`` in IT, air and chilled water [J]."""
        return float(masses.it_heat_capacity_j_k @ (self.it_temp_c - reference_c)
                     + masses.air_heat_capacity_j_k * (masses.air_share @ (self.air_temp_c - reference_c))
                     + masses.chilled_water_heat_capacity_j_k * (self.chilled_water_temp_c - reference_c))


def hall_steady_state(model: InletModel, rack_heat_w, *, chilled_water_temp_c: float, supply_temp_c=None,
                      time_s: float = 0.0) -> HallThermalState:
    """Steady state of a hall under ``model`` (use it once, at the start of a run).

    supply_temp_c (C,) [C]: the coil supply temperatures (default the set points; pass
    :func:`twin.thermal.capacity.capped_steady_state` ``.supply_temp_c`` when coils are
    saturated). Stopped units' air nodes hold the flow-weighted return temperature.
    """
    q = np.asarray(rack_heat_w, float)
    s = model.cooling_supply_temp_c if supply_temp_c is None else np.nan_to_num(np.asarray(supply_temp_c, float))
    z = model.supply_mix @ s + model.recirculation_k_per_w @ q
    # a rack that draws no air (servers off) gives off no heat: its exhaust is its inlet
    g_r = AIR_VOLUMETRIC_HEAT_J_M3_K * np.asarray(model.rack_airflow_m3_s, float)
    y = z + np.divide(q, g_r, out=np.zeros_like(z), where=g_r > 0.0)
    act = np.asarray(model.cooling_active, bool)
    ret = model.return_mix @ s + model.return_k_per_w @ q
    v = model.cooling_airflow_m3_s
    mean = float(np.sum(v[act] * ret[act]) / v[act].sum())
    return HallThermalState(time_s, y, np.where(act, ret, mean), float(chilled_water_temp_c),
                            np.ones(q.size, bool))


def adiabatic_temperature_bound_c(state: HallThermalState, rack_heat_w, masses: ThermalMasses,
                                  duration_s: float) -> float:
    """Highest temperature any node can reach within ``duration_s`` if no heat is removed [C].

    Maximum principle: the hottest node exchanges heat only with cooler ones, so it warms
    at most at its own source rate; heat enters only the IT masses, so
    T_max(t) <= T_max(0) + t max_r(Q_r / C_it,r). Inlets are mixtures of node temperatures
    and cannot exceed it. Holds for any sequence of faults (overlapping or not).
    """
    q = np.asarray(rack_heat_w, float)
    t0 = max(float(np.max(state.it_temp_c)), float(np.max(state.air_temp_c)), state.chilled_water_temp_c)
    return t0 + duration_s * float(np.max(q / masses.it_heat_capacity_j_k))


@dataclass(frozen=True)
class FaultSegment:
    """What happened in one segment [t0, t1] between two events."""

    state: HallThermalState  # at the end
    time_s: np.ndarray  # (K,) step times [s]
    max_inlet_series_c: np.ndarray  # (K,) hottest inlet at each step [C]
    max_inlet_temp_c: np.ndarray  # (R,) highest inlet within the segment [C]
    max_gpu_temp_c: np.ndarray  # (R,) highest GPU temperature within the segment [C]
    time_to_inlet_limit_s: np.ndarray  # (R,) absolute time the inlet first reached limit_c (inf)
    time_to_gpu_slowdown_s: np.ndarray  # (R,)
    time_to_gpu_shutdown_s: np.ndarray  # (R,)
    inlet_temp_c: np.ndarray  # (R,) at the end
    rack_heat_w: np.ndarray  # (R,) at the end (after throttling / shutdown)
    unit_load_w: np.ndarray  # (C,) heat removed by each coil at the end
    max_unit_load_w: np.ndarray  # (C,) highest coil load within the segment
    heat_produced_j: float  # rack heat released in the segment
    chiller_heat_j: float  # heat the chiller took out of the water
    clock_fraction: np.ndarray  # (R,) GPU clock fraction at the end
    #: (R,) absolute time the inlet first reached ``inlet_shutdown_c`` [s] (inf: not reached,
    #: or no inlet protection): the rack's own trip, its heat gone from the next step on
    time_to_inlet_shutdown_s: np.ndarray | None = None


@dataclass(eq=False)
class _Operator:
    """Matrices of one running-unit set, step and airflow (cached by the caller)."""

    running: bool
    act: np.ndarray
    g_r: np.ndarray
    g_c: np.ndarray
    c_node: np.ndarray  # capacities of the air nodes (active units, or one room node)
    m_zy: np.ndarray | None
    m_zs: np.ndarray | None
    a: np.ndarray  # x' = a x + b_s s + (Q / C_it, 0)
    b_s: np.ndarray | None  # d(x')/d(s)
    step_s: float  # largest stable-and-accurate step [s]
    cache: dict = field(default_factory=dict)

    def factors(self, h: float):
        """Crank-Nicolson step x+ = P x + K_q (h Q / C_it) + K_s (h s) for step h [s]:
        P = (I - h/2 A)^-1 (I + h/2 A), K = (I - h/2 A)^-1 (dense, precomputed)."""
        key = round(h, 9)
        if key not in self.cache:
            eye = np.eye(self.a.shape[0])
            lu = lu_factor(eye - 0.5 * h * self.a)
            p = lu_solve(lu, eye + 0.5 * h * self.a)
            n_r = self.g_r.size
            k_q = lu_solve(lu, eye[:, :n_r])
            k_s = lu_solve(lu, self.b_s) if self.b_s is not None else None
            self.cache[key] = (p, k_q, k_s)
        return self.cache[key]


def _operator(model: InletModel | None, masses: ThermalMasses, rack_airflow_m3_s, step_s: float) -> _Operator:
    g_r = AIR_VOLUMETRIC_HEAT_J_M3_K * np.asarray(rack_airflow_m3_s, float)
    n_r = g_r.size
    c_it = masses.it_heat_capacity_j_k
    running = model is not None and bool(np.any(model.cooling_active))
    if running:
        assert model is not None  # running implies a model
        act = np.asarray(model.cooling_active, bool)
        g_c = AIR_VOLUMETRIC_HEAT_J_M3_K * model.cooling_airflow_m3_s[act]
        w = masses.air_share[act]
        c_node = masses.air_heat_capacity_j_k * w / w.sum()
        d = model.recirculation_k_per_w
        lhs = lu_factor(np.eye(n_r) + d * g_r[None, :])
        m_zy = lu_solve(lhs, d * g_r[None, :])
        m_zs = lu_solve(lhs, model.supply_mix[:, act] if act.size else model.supply_mix)
        # q = G (y - z) = G (I - Mzy) y - G Mzs s
        qy = g_r[:, None] * (np.eye(n_r) - m_zy)
        qs = -g_r[:, None] * m_zs
        rk = model.return_k_per_w[act]
        r0 = model.return_mix[np.ix_(act, act)]
        n_a = int(act.sum())
        a = np.zeros((n_r + n_a, n_r + n_a))
        a[:n_r, :n_r] = -qy / c_it[:, None]
        a[n_r:, :n_r] = (g_c / c_node)[:, None] * (rk @ qy)
        a[n_r:, n_r:] = -np.diag(g_c / c_node)
        b_s = np.zeros((n_r + n_a, n_a))
        b_s[:n_r] = -qs / c_it[:, None]
        b_s[n_r:] = (g_c / c_node)[:, None] * (r0 + rk @ qs)
    else:
        act = np.zeros(masses.air_share.size, bool)
        g_c = np.zeros(0)
        c_node = np.array([masses.air_heat_capacity_j_k])
        m_zy = m_zs = None
        a = np.zeros((n_r + 1, n_r + 1))
        a[:n_r, :n_r] = -np.diag(g_r / c_it)
        a[:n_r, n_r] = g_r / c_it
        a[n_r, :n_r] = g_r / c_node[0]
        a[n_r, n_r] = -g_r.sum() / c_node[0]
        b_s = None
    # a rack that draws no air (servers off) is not coupled to the air: no time constant
    draws = g_r > 0.0
    tau = np.min(np.concatenate([c_node / np.maximum(g_c, 1e-9) if running else [np.inf],
                                 c_it[draws] / g_r[draws],
                                 [c_node[0] / g_r.sum() if draws.any() else np.inf] if not running else [np.inf]]))
    return _Operator(running, act, g_r, g_c, c_node, m_zy, m_zs, a, b_s, min(step_s, 0.5 * tau))


def throttled_clock_fraction(inlet_temp_c, gpu_rise_at_full_clock_k, *, slowdown_c=GPU_SLOWDOWN_C,
                             hw_slowdown_c=GPU_HW_SLOWDOWN_C, shutdown_c=GPU_SHUTDOWN_C,
                             hw_clock_fraction=HW_SLOWDOWN_CLOCK_FRACTION):
    """Clock fraction f of a GPU whose own power follows its clocks [-] (0 = shut down).

    Solves f = F(T_in + dT f) with F the clock law of :func:`twin.thermal.properties.
    gpu_clock_fraction` (1 below slowdown, a linear ramp to ``hw_clock_fraction`` up to the
    hardware slowdown, then ``hw_clock_fraction``, 0 at shutdown) and dT = R_th P_gpu the
    die rise at full clocks: the die settles in seconds, so within a thermal step the GPU
    sits at this fixed point (unique: F falls with T, T rises with f). In the ramp,
    f = (1 - k (T_in - T_s)) / (1 + k dT), k = (1 - f_hw) / (T_hw - T_s).
    """
    z = np.asarray(inlet_temp_c, float)
    d = np.asarray(gpu_rise_at_full_clock_k, float)
    lo = hw_clock_fraction
    k = (1.0 - lo) / max(hw_slowdown_c - slowdown_c, 1e-9)
    ramp = (1.0 - k * (z - slowdown_c)) / (1.0 + k * d)
    f = np.where(z + d < slowdown_c, 1.0, np.clip(ramp, lo, 1.0))
    return np.where(z + d * lo >= shutdown_c, 0.0, f)


def _first_crossing(t_prev, t_now, v_prev, v_now, threshold, found):
    """Update ``found`` (absolute times, inf = not yet) where v crosses threshold in the step."""
    hit = np.isinf(found) & (v_now >= threshold)
    if hit.any():
        dv = v_now[hit] - v_prev[hit]
        frac = np.where(v_prev[hit] >= threshold, 0.0,
                        np.clip((threshold - v_prev[hit]) / np.where(dv > 0, dv, 1.0), 0.0, 1.0))
        found[hit] = t_prev + frac * (t_now - t_prev)


def advance(
    state: HallThermalState,
    model: InletModel | None,
    duration_s: float,
    rack_heat_w,
    masses: ThermalMasses,
    *,
    setpoint_c=None,
    capacity_w=None,
    coil_approach_k=6.0,
    chilled_water_setpoint_c: float = 12.0,
    chiller_capacity_w: float = np.inf,
    chiller_available_s: float = -np.inf,
    gpu_power_w=None,
    gpu_thermal_resistance_k_per_w=None,
    gpu_heat_fraction=0.75,
    slowdown_c: float = GPU_SLOWDOWN_C,
    shutdown_c: float = GPU_SHUTDOWN_C,
    limit_c: float = ASHRAE_ALLOWABLE_C["A1"][1],
    inlet_shutdown_c: float = np.inf,
    step_s: float = 10.0,
    operator: _Operator | None = None,
    stop_on_trip=None,
) -> FaultSegment:
    """Carry a hall's thermal state through one segment between two events.

    state: where the hall is at the segment start (from :func:`hall_steady_state` at the
    start of a run, else the end of the previous segment). model: the inlet model of the
    units running in this segment (None: no unit runs). rack_heat_w (R,) [W]: the heat the
    racks would release at full clocks; the GPU share ``gpu_heat_fraction`` of it follows
    the clock fraction, and a rack that reaches ``shutdown_c`` drops to zero.
    setpoint_c, capacity_w (C,): coil set points [C] and capacities [W] (default from the
    model); coil_approach_k: supply air above the chilled water [K];
    chilled_water_setpoint_c: the chiller's leaving-water set point [C];
    chiller_capacity_w [W]; chiller_available_s: absolute time [s] from which the chiller
    runs (a restart delay after a power transfer: set it to transfer time + delay).
    gpu_power_w (R,) [W] and gpu_thermal_resistance_k_per_w (R,) [K/W]: one typical GPU
    per rack at full clocks (omit: no throttling, GPU times inf). limit_c: inlet limit
    (ASHRAE A1 allowable, 32 C). inlet_shutdown_c: a rack whose inlet reaches it shuts
    down for the rest of the segment (the servers' own protection,
    :data:`twin.thermal.properties.SERVER_INLET_SHUTDOWN_C`; inf = none). step_s: largest step [s]. operator: a cached
    ``_operator(model, masses, airflow, step_s)`` for speed. stop_on_trip (R,) bool: end
    the segment early, at the end of the first step in which the inlet of one of these racks
    reaches ``inlet_shutdown_c`` (a forecast of the next trip needs no more).
    """
    q_full = np.asarray(rack_heat_w, float)
    n_r = q_full.size
    v_r = model.rack_airflow_m3_s if model is not None else None
    if operator is None:
        if v_r is None:
            raise ValueError("with no unit running, pass an operator built with the rack airflow")
        operator = _operator(model, masses, v_r, step_s)
    op = operator
    n_steps = max(1, int(np.ceil(duration_s / op.step_s - 1e-9)))
    h = duration_s / n_steps
    p_mat, k_q, k_s = op.factors(h)
    c_it = masses.it_heat_capacity_j_k
    c_w = masses.chilled_water_heat_capacity_j_k
    n_c = masses.air_share.size
    act = op.act
    throttle = gpu_power_w is not None and gpu_thermal_resistance_k_per_w is not None
    p_gpu = np.broadcast_to(np.asarray(gpu_power_w if throttle else 0.0, float), (n_r,))
    r_th = np.broadcast_to(np.asarray(gpu_thermal_resistance_k_per_w if throttle else 0.0, float), (n_r,))
    a_gpu = np.broadcast_to(np.asarray(gpu_heat_fraction, float), (n_r,))

    # air energy -> nodes of this segment's running set (energy-conserving remap)
    e_air = masses.air_heat_capacity_j_k * float(masses.air_share @ state.air_temp_c)
    if op.running:
        run_model = cast(InletModel, model)  # op.running: the operator of this segment's units
        t_set = np.broadcast_to(np.asarray(run_model.cooling_supply_temp_c if setpoint_c is None else setpoint_c,
                                           float), (n_c,))[act]
        cap = np.broadcast_to(np.asarray(run_model.cooling_capacity_w if capacity_w is None else capacity_w,
                                         float), (n_c,))[act]
        approach = np.broadcast_to(np.asarray(coil_approach_k, float), (n_c,))[act]
        a_nodes = state.air_temp_c[act].astype(float)
        a_nodes = a_nodes + (e_air - op.c_node @ a_nodes) / op.c_node.sum()
    else:
        a_nodes = np.array([e_air / masses.air_heat_capacity_j_k])
    x = np.concatenate([state.it_temp_c.astype(float), a_nodes])
    tw = float(state.chilled_water_temp_c)
    on = state.rack_on.copy()
    f = np.ones(n_r)

    def supply(a_c, tw_):
        lim = a_c - cap / op.g_c
        return np.maximum(np.maximum(t_set, tw_ + approach), lim)

    def inlet(y, s, room):
        if op.running:
            return op.m_zs @ s + op.m_zy @ y
        return np.full(n_r, room)

    t = float(state.time_s)
    s = supply(x[n_r:], tw) if op.running else None
    z = inlet(x[:n_r], s, x[n_r] if not op.running else None)
    if throttle:
        f = throttled_clock_fraction(z, r_th * p_gpu, slowdown_c=slowdown_c, shutdown_c=shutdown_c)
        on &= f > 0
    on &= z < inlet_shutdown_c
    gpu = z + r_th * p_gpu * np.where(on, np.maximum(f, HW_SLOWDOWN_CLOCK_FRACTION), 0.0)
    max_in, max_gpu = z.copy(), gpu.copy()
    t_lim = np.full(n_r, np.inf)
    t_slow = np.full(n_r, np.inf)
    t_shut = np.full(n_r, np.inf)
    t_trip = np.full(n_r, np.inf)
    protect = bool(np.isfinite(inlet_shutdown_c))
    for arr, thr, v in ((t_lim, limit_c, z), (t_slow, slowdown_c, gpu), (t_shut, shutdown_c, gpu),
                        (t_trip, inlet_shutdown_c, z)):
        arr[v >= thr] = t
    watch = None if stop_on_trip is None or not protect else np.asarray(stop_on_trip, bool)
    times = np.empty(n_steps + 1)
    series = np.empty(n_steps + 1)
    times[0], series[0] = t, z.max()
    heat_j = chiller_j = 0.0
    removed = np.zeros(int(act.sum()))
    max_load = np.zeros(n_c)
    for k in range(1, n_steps + 1):
        if throttle:
            f = throttled_clock_fraction(z, r_th * p_gpu, slowdown_c=slowdown_c, shutdown_c=shutdown_c)
            on &= f > 0
        on &= z < inlet_shutdown_c
        q = q_full * ((1.0 - a_gpu) + a_gpu * f) * on
        x_prev = x
        x = p_mat @ x + k_q @ (h * q / c_it)
        if op.running:
            assert s is not None  # supply air is set whenever units run
            x += k_s @ (h * s)
        heat_j += float(q.sum()) * h
        t_prev, t = t, float(state.time_s) + k * h
        if op.running:
            # what the coils took over the step, consistent with the trapezoidal air update
            removed = op.g_c * (0.5 * (x_prev[n_r:] + x[n_r:]) - s)
            total = float(removed.sum())
            s_new = supply(x[n_r:], tw)
            if t >= chiller_available_s:
                p_ch = min(chiller_capacity_w, max(0.0, total + c_w * (tw - chilled_water_setpoint_c) / h))
            else:
                p_ch = 0.0
            tw += h * (total - p_ch) / c_w
            chiller_j += p_ch * h
            s = s_new
            max_load[act] = np.maximum(max_load[act], removed)
        z_prev, gpu_prev = z, gpu
        z = inlet(x[:n_r], s, x[n_r] if not op.running else None)
        # die temperature at the clock the GPU settles to (at shutdown: the hw-slowdown die
        # temperature that tripped it, the highest it reached); 0 rise once off
        f_now = throttled_clock_fraction(z, r_th * p_gpu, slowdown_c=slowdown_c, shutdown_c=shutdown_c) \
            if throttle else f
        gpu = z + r_th * p_gpu * np.where(on, np.where(f_now > 0, f_now, HW_SLOWDOWN_CLOCK_FRACTION), 0.0)
        np.maximum(max_in, z, out=max_in)
        np.maximum(max_gpu, gpu, out=max_gpu)
        _first_crossing(t_prev, t, z_prev, z, limit_c, t_lim)
        _first_crossing(t_prev, t, gpu_prev, gpu, slowdown_c, t_slow)
        _first_crossing(t_prev, t, gpu_prev, gpu, shutdown_c, t_shut)
        if protect:
            _first_crossing(t_prev, t, z_prev, z, inlet_shutdown_c, t_trip)
        times[k], series[k] = t, z.max()
        if watch is not None and np.isfinite(t_trip[watch]).any():
            times, series = times[:k + 1], series[:k + 1]
            break
    air = np.empty(n_c)
    if op.running:
        air[act] = x[n_r:]
        air[~act] = float(op.c_node @ x[n_r:] / op.c_node.sum())
    else:
        air[:] = x[n_r]
    end = HallThermalState(t, x[:n_r].copy(), air, tw, on)
    load = np.zeros(n_c)
    load[act] = removed
    return FaultSegment(
        state=end, time_s=times, max_inlet_series_c=series, max_inlet_temp_c=max_in, max_gpu_temp_c=max_gpu,
        time_to_inlet_limit_s=t_lim, time_to_gpu_slowdown_s=t_slow, time_to_gpu_shutdown_s=t_shut,
        inlet_temp_c=z, rack_heat_w=q_full * ((1.0 - a_gpu) + a_gpu * f) * on, unit_load_w=load,
        max_unit_load_w=max_load, heat_produced_j=heat_j, chiller_heat_j=chiller_j, clock_fraction=f * on,
        time_to_inlet_shutdown_s=t_trip,
    )


def operator_for(model: InletModel | None, masses: ThermalMasses, rack_airflow_m3_s, step_s: float = 10.0):
    """Precompute the matrices of one running-unit set (reuse across segments for speed)."""
    return _operator(model, masses, rack_airflow_m3_s, step_s)
