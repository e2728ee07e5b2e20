"""Node power: GPU phase and cap -> DC load -> fans -> PSU loss -> AC power at the wall.

All functions are pure and vectorised over nodes. Powers in watts, temperatures in
degrees Celsius, ratios as fractions.

Model (per node)::

    P_gpu  = gpu_count * min(P_idle + u(phase) * (P_tdp - P_idle) * f**ALPHA, cap)
    P_host = P_host_idle + h(phase) * (P_host_active - P_host_idle)
    s_fan  = clip((P_gpu + P_host) / Q_design * (T_ctl - T_in,max) / (T_ctl - T_in), s_min, 1)
    Q_design = gpu_count * P_tdp + P_host_active
    P_fan  = P_fan_max * s_fan**3                      (fan affinity law)
    P_dc   = P_gpu + P_host + P_fan
    P_ac   = min(P_dc / eta_psu(P_dc / C_psu), P_node_max)

``u`` is the phase's share of the GPU's dynamic power range, ``h`` the host's (CPU,
memory, NICs, NVMe, NVSwitch baseboard) activity, ``f`` the GPU clock fraction (power
brake), ``C_psu`` the output capacity of the working, load-sharing PSUs.

Calibration (see tests/power/test_node.py): an 8x H100 SXM XE9680-class node (host
1.1-1.9 kW, fans 1.6 kW max, 6 x 2800 W PSUs) draws 7.87 / 8.04 / 8.32 kW in TRAINING
at a 20 / 25 / 30 C inlet and 8.57 kW at full load (BURN_IN) at 25 C: inside the
7.8-8.6 kW band of issue 3, within 3 % of the 8.4 kW measured peak of Latif et al., IEEE
Access 13 (2025) (calibration.yaml: power.measured_8x_h100_node_peak_w) and of the 76 %
of 10.2 kW (7.75 kW) that Newkirk et al. (arXiv 2506.14551, 2025) report for
compute-intensive training on the same Brookhaven nodes; the worst case (full load at a
35 C inlet) is 9.52 kW, below the 10.2 kW DGX H100 rating (power.dgx_h100_max_w).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from twin.phases import Phase

__all__ = [
    "GPU_DVFS_POWER_EXPONENT",
    "PHASE_GPU_LOAD_FRACTION",
    "PHASE_HOST_LOAD_FRACTION",
    "PHASE_POWER_ORDER",
    "PSU_TITANIUM_LOAD_FRACTION",
    "PSU_TITANIUM_EFFICIENCY",
    "psu_efficiency",
    "node_fan_speed_fraction",
    "node_fan_power_w",
    "node_airflow_m3_s",
    "node_dc_power_w",
    "node_heat_w",
    "node_power_w",
    "node_power_plan",
    "node_power_breakdown_w",
    "node_worst_case_w",
    "gpu_power_w",
    "gpu_clock_fraction_at_power",
    "gpu_power_cap_for_node_budget_w",
    "parse_psu_redundancy",
    "gpu_power_brake_clock_fraction",
    "psu_capacity_w",
    "psus_without_input",
]

# --- phase tables -----------------------------------------------------------------

_N_PHASES = max(int(p) for p in Phase) + 1

#: Share of the GPU dynamic power range (idle -> cap) drawn in each phase [fraction].
#: TRAINING 0.95: dense LLM training keeps H100 SXM GPUs near their 700 W TDP (the 8.4 kW
#: measured node peak of Latif et al. 2025 leaves ~5.6 kW for eight GPUs); exposed
#: COMMUNICATION runs NCCL kernels on a few SMs with HBM and NVLink busy (~40 % of the
#: range); CHECKPOINT and RESTART leave the GPUs mostly idle while the host writes/reads
#: storage; BURN_IN is a full-load acceptance test (e.g. HPL/stress) at the cap.
PHASE_GPU_LOAD_FRACTION = np.zeros(_N_PHASES)
PHASE_GPU_LOAD_FRACTION[Phase.OFF] = 0.0
PHASE_GPU_LOAD_FRACTION[Phase.IDLE] = 0.0
PHASE_GPU_LOAD_FRACTION[Phase.TRAINING] = 0.95
PHASE_GPU_LOAD_FRACTION[Phase.COMMUNICATION] = 0.40
PHASE_GPU_LOAD_FRACTION[Phase.CHECKPOINT] = 0.10
PHASE_GPU_LOAD_FRACTION[Phase.RESTART] = 0.15
PHASE_GPU_LOAD_FRACTION[Phase.BURN_IN] = 1.0

#: Host activity (CPU, memory, NICs, NVMe, NVSwitch baseboard) between host idle (0) and
#: host active (1) per phase [fraction]. Every job phase keeps the CPUs, NICs and storage
#: path busy (data loading, NCCL proxy threads, checkpoint I/O) at about the same level;
#: BURN_IN stresses the whole node.
PHASE_HOST_LOAD_FRACTION = np.zeros(_N_PHASES)
PHASE_HOST_LOAD_FRACTION[Phase.OFF] = 0.0
PHASE_HOST_LOAD_FRACTION[Phase.IDLE] = 0.0
PHASE_HOST_LOAD_FRACTION[Phase.TRAINING] = 0.8
PHASE_HOST_LOAD_FRACTION[Phase.COMMUNICATION] = 0.8
PHASE_HOST_LOAD_FRACTION[Phase.CHECKPOINT] = 0.8
PHASE_HOST_LOAD_FRACTION[Phase.RESTART] = 0.8
PHASE_HOST_LOAD_FRACTION[Phase.BURN_IN] = 1.0

#: 1 where the node is powered, 0 for OFF.
_PHASE_POWERED = np.ones(_N_PHASES)
_PHASE_POWERED[Phase.OFF] = 0.0

#: Phases ordered by node power (non-decreasing) for the same cap, inlet and hardware.
PHASE_POWER_ORDER = (
    Phase.OFF,
    Phase.IDLE,
    Phase.CHECKPOINT,
    Phase.RESTART,
    Phase.COMMUNICATION,
    Phase.TRAINING,
    Phase.BURN_IN,
)

#: Dynamic power of a GPU versus clock under voltage-frequency scaling, P_dyn ~ C V^2 f
#: with V roughly proportional to f in the DVFS range, so P_dyn ~ f**3 (CMOS dynamic
#: power; e.g. Weste & Harris, CMOS VLSI Design, 4th ed., sec. 5.1).
GPU_DVFS_POWER_EXPONENT = 3.0

# --- PSU --------------------------------------------------------------------------

#: 80 PLUS Titanium, 230 V internal redundant: minimum efficiency at 10/20/50/100 % load
#: (calibration.yaml: power.psu_80plus_titanium_230v_internal_redundant).
PSU_TITANIUM_LOAD_FRACTION = np.array([0.10, 0.20, 0.50, 1.00])
PSU_TITANIUM_EFFICIENCY = np.array([0.90, 0.94, 0.96, 0.91])


def psu_efficiency(
    load_fraction,
    *,
    curve_load_fraction=PSU_TITANIUM_LOAD_FRACTION,
    curve_efficiency=PSU_TITANIUM_EFFICIENCY,
) -> np.ndarray:
    """PSU efficiency [fraction] at a load fraction of its rated output [fraction].

    Piecewise-linear interpolation of the 80 PLUS Titanium 230 V internal-redundant
    points (10 %: 0.90, 20 %: 0.94, 50 %: 0.96, 100 %: 0.91; calibration.yaml). Below the
    first point the loss is held at its value there (a fixed no-load loss
    ``L0 = x0 (1/eta0 - 1)``), so ``eta = x / (x + L0)`` falls to 0 at no load, as a real
    supply does. Above 100 % the 100 % efficiency is kept (overload is the breaker's and
    the redundancy check's business, not this curve's).
    """
    x = np.asarray(load_fraction, dtype=float)
    xs = np.asarray(curve_load_fraction, dtype=float)
    es = np.asarray(curve_efficiency, dtype=float)
    eta = np.interp(x, xs, es)
    below = x < xs[0]
    if x.ndim and not below.any():
        return eta                  # no load below the first point (speed only: the same values)
    loss0 = xs[0] * (1.0 / es[0] - 1.0)
    xc = np.maximum(x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(xc > 0.0, xc / (xc + loss0), 0.0)
    return np.where(below, low, eta)


def psu_capacity_w(psu_count, psu_rating_w, psus_failed=0) -> np.ndarray:
    """Output capacity of the working, load-sharing PSUs of a node [W].

    ``(psu_count - psus_failed) * psu_rating_w``, never below zero.
    """
    working = np.maximum(np.asarray(psu_count) - np.asarray(psus_failed), 0)
    return working * np.asarray(psu_rating_w, dtype=float)


# --- fans -------------------------------------------------------------------------

#: Highest inlet temperature at which the node's fans reach full speed at its maximum
#: heat [C]: ASHRAE A2 allowable upper limit (calibration.yaml: thermal.ashrae_tc99_2021_inlet_c).
FAN_DESIGN_INLET_C = 35.0
#: Effective control temperature of the fan loop [C]: the airflow needed to hold the
#: components at their targets scales with 1/(T_ctl - T_inlet). 68 C makes the fan speed
#: at a 25 C inlet 77 % of that at 35 C, so an XE9680-class node at full load runs its
#: fans at about three quarters speed in a 25 C room (calibrated with the 8.4 kW peak).
FAN_CONTROL_TEMP_C = 68.0
#: Minimum fan speed of a powered node [fraction of full speed].
FAN_MIN_SPEED_FRACTION = 0.3


def node_fan_speed_fraction(
    heat_w,
    inlet_temp_c,
    *,
    design_heat_w,
    fan_min_speed_fraction=FAN_MIN_SPEED_FRACTION,
    fan_control_temp_c=FAN_CONTROL_TEMP_C,
    fan_design_inlet_c=FAN_DESIGN_INLET_C,
) -> np.ndarray:
    """Fan speed [fraction of full] needed to remove ``heat_w`` [W] at ``inlet_temp_c`` [C].

    Energy balance Q = rho cp V dT with the allowed air temperature rise shrinking as the
    inlet warms: ``V / V_max = (Q / Q_max) (T_ctl - T_design) / (T_ctl - T_in)``, clipped to
    [s_min, 1]. Full speed at the design heat ``Q_max = design_heat_w`` (all GPUs at TDP,
    host fully active) and ``T_in = fan_design_inlet_c``: fans are sized to cool the
    full configuration at the hottest allowed inlet.
    Above ``fan_control_temp_c`` the fans are at full speed (the node is over-temperature).
    """
    q = np.asarray(heat_w, dtype=float)
    return _fan_speed(_fan_heat_term(q, design_heat_w, fan_control_temp_c, fan_design_inlet_c),
                      inlet_temp_c, fan_min_speed_fraction, fan_control_temp_c)


def _fan_heat_term(heat_w, design_heat_w, fan_control_temp_c, fan_design_inlet_c):
    """The heat part of :func:`node_fan_speed_fraction`: ``(Q / Q_max) (T_ctl - T_design)``."""
    return (heat_w / design_heat_w) * (fan_control_temp_c - fan_design_inlet_c)


def _fan_speed(heat_term, inlet_temp_c, fan_min_speed_fraction, fan_control_temp_c) -> np.ndarray:
    """The rest of :func:`node_fan_speed_fraction`: the heat term over the inlet's margin
    ``T_ctl - T_in`` (at least 1e-6 K), clipped to [s_min, 1]."""
    t_in = np.asarray(inlet_temp_c, dtype=float)
    margin = np.maximum(fan_control_temp_c - t_in, 1e-6)
    return np.minimum(np.maximum(heat_term / margin, fan_min_speed_fraction), 1.0)    # np.clip's values


def node_fan_power_w(fan_speed_fraction, *, fan_max_w) -> np.ndarray:
    """Fan power [W] at a speed fraction: affinity law ``P = P_max s**3``.

    (Fan laws, e.g. ASHRAE Handbook - HVAC Systems and Equipment, ch. 21.)
    """
    s = np.asarray(fan_speed_fraction, dtype=float)
    return fan_max_w * s**3


def node_airflow_m3_s(fan_speed_fraction, *, airflow_max_m3_s) -> np.ndarray:
    """Node airflow [m^3/s] at a fan speed fraction: affinity law ``V = V_max s``.

    Reference full airflow of an 8-GPU H100 node: DGX H100 1,105 CFM = 0.52 m^3/s (NVIDIA
    DGX H100 user guide). A node that is OFF moves no air (pass speed 0).
    """
    return airflow_max_m3_s * np.asarray(fan_speed_fraction, dtype=float)


# --- GPU --------------------------------------------------------------------------


def gpu_power_w(
    phase, gpu_power_cap_w, *, gpu_tdp_w, gpu_idle_w, clock_fraction=1.0
) -> np.ndarray:
    """Power of one GPU [W] in ``phase`` (Phase codes) under a power cap [W].

    ``P = min(P_idle + u(phase) (P_tdp - P_idle) f**ALPHA, cap)`` with the cap clipped to
    [P_idle, P_tdp] and ALPHA = GPU_DVFS_POWER_EXPONENT; 0 when OFF.
    """
    ph = _phase_codes(phase)
    if (_scalar(gpu_power_cap_w) and _scalar(gpu_tdp_w) and _scalar(gpu_idle_w)
            and _at_full_clock(clock_fraction, ph)):
        # every clock at or above full (clipped to 1): the phase's value at full clock, from
        # a table of this law per phase code (issue 19, speed only: the same values)
        return _gpu_phase_table_w(float(gpu_power_cap_w), float(gpu_tdp_w), float(gpu_idle_w))[ph]
    return _gpu_power_w(ph, gpu_power_cap_w, gpu_tdp_w, gpu_idle_w, np.asarray(clock_fraction, dtype=float))


def _scalar(x) -> bool:
    """True for one number (a Python or numpy scalar, or a 0-d array); ``np.ndim`` costs more."""
    return isinstance(x, (float, int, np.generic)) or (isinstance(x, np.ndarray) and x.ndim == 0)


def _at_full_clock(clock_fraction, ph: np.ndarray) -> bool:
    """Every clock fraction is at or above 1 (full clock after the clip), and it is one
    number or one per phase entry: where the per-phase tables hold (NaN is not full)."""
    if _scalar(clock_fraction):
        return bool(clock_fraction >= 1.0)
    f = np.asarray(clock_fraction, dtype=float)
    return f.shape == ph.shape and (f.size == 0 or bool(f.min() >= 1.0))


def _full_clock_tables(ph, gpu_power_cap_w, clock_fraction, gpu_count, gpu_tdp_w, gpu_idle_w,
                       host_idle_w, host_active_w, fan_control_temp_c, fan_design_inlet_c):
    """Per phase code, ``(gpu + host heat [W], fan heat term, powered)`` as the rows of one
    (3, phases) table (:func:`_node_phase_tables`) when every clock is full (at or above 1,
    clipped to 1) and every hardware figure is one number, else None."""
    if not (_scalar(gpu_power_cap_w) and _scalar(gpu_count) and _scalar(gpu_tdp_w) and _scalar(gpu_idle_w)
            and _scalar(host_idle_w) and _scalar(host_active_w) and _scalar(fan_control_temp_c)
            and _scalar(fan_design_inlet_c)):
        return None
    if not _at_full_clock(clock_fraction, ph):
        return None
    return _node_phase_tables(float(gpu_power_cap_w), gpu_count, float(gpu_tdp_w), float(gpu_idle_w),
                              float(host_idle_w), float(host_active_w), float(fan_control_temp_c),
                              float(fan_design_inlet_c))


@lru_cache(maxsize=256)
def _node_phase_tables(gpu_power_cap_w, gpu_count, gpu_tdp_w, gpu_idle_w, host_idle_w, host_active_w,
                       fan_control_temp_c, fan_design_inlet_c) -> np.ndarray:
    """Per phase code at full clock, the rows of one (3, phases) table, read-only:
    ``gpu_count * gpu_power_w + P_host`` [W], the fan law's heat term
    (:func:`_fan_heat_term`) of that heat, and 1 where the node is powered (0 for OFF)."""
    codes = np.arange(_N_PHASES)
    heat = gpu_count * _gpu_phase_table_w(gpu_power_cap_w, gpu_tdp_w, gpu_idle_w) + _host_power_w(
        codes, host_idle_w, host_active_w)
    term = _fan_heat_term(heat, gpu_count * gpu_tdp_w + host_active_w, fan_control_temp_c, fan_design_inlet_c)
    table = np.stack([heat, term, _PHASE_POWERED])
    table.flags.writeable = False
    return table


def _phase_codes(phase) -> np.ndarray:
    """Phase codes as an integer array fit to index the phase tables (int8 kept as it is)."""
    ph = np.asarray(phase)
    return ph if ph.dtype.kind in "iu" else ph.astype(np.intp)


def _gpu_power_w(ph, gpu_power_cap_w, gpu_tdp_w, gpu_idle_w, f) -> np.ndarray:
    """:func:`gpu_power_w` evaluated element by element (the law itself)."""
    u = PHASE_GPU_LOAD_FRACTION[ph]
    f = np.minimum(np.maximum(f, 0.0), 1.0)         # np.clip(f, 0, 1)'s values
    cap = np.clip(np.asarray(gpu_power_cap_w, dtype=float), gpu_idle_w, gpu_tdp_w)
    demand = gpu_idle_w + u * (gpu_tdp_w - gpu_idle_w) * f**GPU_DVFS_POWER_EXPONENT
    return np.minimum(demand, cap) * _PHASE_POWERED[ph]


@lru_cache(maxsize=256)
def _gpu_phase_table_w(gpu_power_cap_w: float, gpu_tdp_w: float, gpu_idle_w: float) -> np.ndarray:
    """:func:`gpu_power_w` of every phase code at full clock [W (phases,)], read-only: the
    law evaluated once per phase, so indexing it by phase gives each node's value bit for
    bit (the same operations on the same numbers)."""
    table = _gpu_power_w(np.arange(_N_PHASES), gpu_power_cap_w, gpu_tdp_w, gpu_idle_w, np.float64(1.0))
    table.flags.writeable = False
    return table


@lru_cache(maxsize=256)
def _host_phase_table_w(host_idle_w: float, host_active_w: float) -> np.ndarray:
    """Host power of every phase code [W (phases,)], read-only (:func:`node_dc_power_w`'s
    host law, evaluated once per phase)."""
    table = _host_power_w(np.arange(_N_PHASES), host_idle_w, host_active_w)
    table.flags.writeable = False
    return table


def _host_power_w(ph, host_idle_w, host_active_w) -> np.ndarray:
    """``P_host = (P_host_idle + h(phase) (P_host_active - P_host_idle))``, 0 when OFF [W]."""
    return (host_idle_w + PHASE_HOST_LOAD_FRACTION[ph] * (host_active_w - host_idle_w)) * _PHASE_POWERED[ph]


def gpu_clock_fraction_at_power(
    gpu_power_w_, *, gpu_tdp_w, gpu_idle_w, load_fraction=PHASE_GPU_LOAD_FRACTION[Phase.TRAINING]
) -> np.ndarray:
    """Clock fraction [fraction] a GPU runs at when held to ``gpu_power_w_`` [W].

    Inverse of the DVFS law used by :func:`gpu_power_w`:
    ``f = ((P - P_idle) / (u (P_tdp - P_idle)))**(1/ALPHA)``, clipped to [0, 1]. For a
    compute-bound phase the step rate scales with ``f``; the compute model decides how
    much of a step is compute-bound (twin.compute.gpu_clock_fraction_at_power_cap is the
    same law). H100 SXM in training (u = 0.95): a 500 W cap gives f = 0.90, 400 W 0.82.
    """
    p = np.asarray(gpu_power_w_, dtype=float)
    dyn_full = load_fraction * (gpu_tdp_w - gpu_idle_w)
    ratio = np.clip((p - gpu_idle_w) / dyn_full, 0.0, 1.0)
    return ratio ** (1.0 / GPU_DVFS_POWER_EXPONENT)


# --- node -------------------------------------------------------------------------


def node_dc_power_w(
    phase,
    gpu_power_cap_w,
    inlet_temp_c,
    *,
    gpu_count,
    gpu_tdp_w,
    gpu_idle_w,
    host_idle_w,
    host_active_w,
    fan_max_w,
    node_max_w,
    clock_fraction=1.0,
    fan_min_speed_fraction=FAN_MIN_SPEED_FRACTION,
    fan_control_temp_c=FAN_CONTROL_TEMP_C,
    fan_design_inlet_c=FAN_DESIGN_INLET_C,
):
    """DC power of a node by part [W]: returns ``(gpu_w, host_w, fan_w)`` arrays.

    See the module docstring for the equations. OFF nodes draw nothing.
    """
    ph = _phase_codes(phase)
    on = _PHASE_POWERED[ph]
    gpu = gpu_count * gpu_power_w(
        ph, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w,
        clock_fraction=clock_fraction,
    )
    if _scalar(host_idle_w) and _scalar(host_active_w):
        host = _host_phase_table_w(float(host_idle_w), float(host_active_w))[ph]
    else:
        host = _host_power_w(ph, host_idle_w, host_active_w)
    speed = node_fan_speed_fraction(
        gpu + host, inlet_temp_c, design_heat_w=gpu_count * gpu_tdp_w + host_active_w,
        fan_min_speed_fraction=fan_min_speed_fraction,
        fan_control_temp_c=fan_control_temp_c, fan_design_inlet_c=fan_design_inlet_c,
    )
    fan = node_fan_power_w(speed, fan_max_w=fan_max_w) * on
    return gpu, host, fan


def node_heat_w(phase, gpu_power_cap_w, *, gpu_count, gpu_tdp_w, gpu_idle_w, host_idle_w, host_active_w,
                clock_fraction=1.0) -> np.ndarray:
    """DC heat of each node's GPUs and host [W]: ``P_gpu + P_host`` of the module docstring,
    the heat its fan controller answers (:func:`node_fan_speed_fraction` is defined on it,
    with ``Q_design = gpu_count P_tdp + P_host_active``); fans and PSU loss are not in it.
    The same laws as :func:`node_dc_power_w` (``gpu + host``), so a thermal model that sets
    the rack airflow from it turns the fans at the speed the power model bills. 0 when OFF."""
    ph = _phase_codes(phase)
    gpu = gpu_count * gpu_power_w(ph, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w,
                                  clock_fraction=clock_fraction)
    if _scalar(host_idle_w) and _scalar(host_active_w):
        host = _host_phase_table_w(float(host_idle_w), float(host_active_w))[ph]
    else:
        host = _host_power_w(ph, host_idle_w, host_active_w)
    return gpu + host


def node_power_w(
    phase,
    gpu_power_cap_w,
    inlet_temp_c,
    *,
    gpu_count,
    gpu_tdp_w,
    gpu_idle_w,
    host_idle_w,
    host_active_w,
    fan_max_w,
    node_max_w,
    clock_fraction=1.0,
    psu_capacity_w=None,
    fan_min_speed_fraction=FAN_MIN_SPEED_FRACTION,
    fan_control_temp_c=FAN_CONTROL_TEMP_C,
    fan_design_inlet_c=FAN_DESIGN_INLET_C,
) -> np.ndarray:
    """AC input power of each node at the wall [W], PSU losses included.

    Parameters
    ----------
    phase : (N,) int
        :class:`twin.phases.Phase` codes.
    gpu_power_cap_w : float or (N,)
        Per-GPU power cap [W] (clipped to [gpu_idle_w, gpu_tdp_w]).
    inlet_temp_c : float or (N,)
        Node inlet air temperature [C]; sets the fan speed.
    gpu_count, gpu_tdp_w, gpu_idle_w : GPUs per node, per-GPU TDP and idle power [W].
    host_idle_w, host_active_w : everything but GPUs and fans (CPUs, memory, NICs, NVMe,
        NVSwitch baseboard, BMC), idle and fully active [W, DC].
    fan_max_w : all fans at full speed [W, DC].
    node_max_w : the node's maximum AC input [W] (PSU/power-budget limit); the result
        never exceeds it (the node's power manager throttles the GPUs to hold it).
    clock_fraction : float or (N,)
        GPU clock fraction (1 normally, lower under the PSU power brake).
    psu_capacity_w : float or (N,), optional
        Output capacity of the working load-sharing PSUs [W], e.g. 6 x 2800 W; sets the
        PSU load fraction and so its efficiency. Default ``node_max_w``.

    Returns
    -------
    (N,) float: ``min(P_dc / eta_psu(P_dc / C_psu), node_max_w)`` [W]; 0 for OFF nodes.
    Heat released into the hall equals this power.
    """
    ph = _phase_codes(phase)
    tables = _full_clock_tables(ph, gpu_power_cap_w, clock_fraction, gpu_count, gpu_tdp_w, gpu_idle_w,
                                host_idle_w, host_active_w, fan_control_temp_c, fan_design_inlet_c)
    if tables is not None:
        # every clock full and the hardware figures scalars: the heat of GPUs and host, the
        # fan law's heat term and the powered flag per phase code from one table (the same
        # laws evaluated once per phase, so the same numbers; issue 19, speed only)
        heat, term, on = tables.take(ph, axis=1)
        s = np.subtract(fan_control_temp_c, inlet_temp_c, dtype=float)
        if type(s) is np.ndarray and s.shape == term.shape and _scalar(fan_min_speed_fraction) and _scalar(fan_max_w):
            dc = _fan_dc_in_place(heat, term, on, s, fan_min_speed_fraction, fan_max_w)
        else:
            dc = heat + node_fan_power_w(_fan_speed(term, inlet_temp_c, fan_min_speed_fraction, fan_control_temp_c),
                                         fan_max_w=fan_max_w) * on
    else:
        gpu, host, fan = node_dc_power_w(
            ph, gpu_power_cap_w, inlet_temp_c, gpu_count=gpu_count, gpu_tdp_w=gpu_tdp_w,
            gpu_idle_w=gpu_idle_w, host_idle_w=host_idle_w, host_active_w=host_active_w,
            fan_max_w=fan_max_w, node_max_w=node_max_w, clock_fraction=clock_fraction,
            fan_min_speed_fraction=fan_min_speed_fraction,
            fan_control_temp_c=fan_control_temp_c, fan_design_inlet_c=fan_design_inlet_c,
        )
        dc = gpu + host + fan
    cap_psu = node_max_w if psu_capacity_w is None else np.asarray(psu_capacity_w, float)
    if _scalar(cap_psu) and cap_psu > 0.0:
        return _psu_ac_w(dc, cap_psu, node_max_w)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            eta = psu_efficiency(dc / cap_psu)
            ac = np.where(dc > 0.0, dc / np.where(eta > 0.0, eta, 1.0), 0.0)
    return np.minimum(ac, node_max_w)


def _fan_dc_in_place(heat, term, on, s, fan_min_speed_fraction, fan_max_w) -> np.ndarray:
    """``heat + node_fan_power_w(_fan_speed(term, ...)) * on`` [W (N,)], the same operations
    in place on ``s`` = ``T_ctl - T_in`` [K (N,), float, overwritten]. ``on`` None: every
    flag is 1.0, whose product is the fan power itself (``x * 1.0 == x`` for every double)."""
    np.maximum(s, 1e-6, out=s)
    np.divide(term, s, out=s)
    np.maximum(s, fan_min_speed_fraction, out=s)
    np.minimum(s, 1.0, out=s)
    np.power(s, 3, out=s)
    np.multiply(s, fan_max_w, out=s)
    if on is not None:
        np.multiply(s, on, out=s)
    return np.add(heat, s, out=s)


def _titanium_efficiency(x: np.ndarray) -> np.ndarray:
    """The Titanium curve's efficiency [fraction] of load fractions ``x`` [fraction (N,)]
    that are all at or above its first point (none NaN): ``np.interp`` on the curve. (A
    segment-by-segment evaluation with the same bits was built for issue 19 and removed: it
    measured slower, 1.8 against 1.06 ms for 131,072 loads, and within noise in whole runs.)"""
    return np.interp(x, PSU_TITANIUM_LOAD_FRACTION, PSU_TITANIUM_EFFICIENCY)


def _psu_ac_w(dc, cap_psu, node_max_w) -> np.ndarray:
    """AC power [W (N,)] of DC loads ``dc`` [W (N,)] through PSUs of one positive capacity
    ``cap_psu`` [W]: ``min(P_dc / eta_psu(P_dc / C_psu), node_max_w)``, 0 without load."""
    # no division below can warn (speed only: np.errstate costs more than the arithmetic);
    # a node without load draws nothing whatever the efficiency, so its load is read as
    # full load (no pass through the no-load branch for the nodes that are off)
    on = dc > 0.0
    off = ~on if type(on) is np.ndarray and on.ndim else None
    if off is None:
        x = np.where(on, dc / cap_psu, 1.0)
    else:
        # the division with the unloaded entries set after (a np.where with a scalar costs
        # several times a sparse masked copy), at the curve's first point rather than full
        # load: their efficiency is never used and either value passes the test below (issue 19)
        x = np.divide(dc, cap_psu)
        np.copyto(x, PSU_TITANIUM_LOAD_FRACTION[0], where=off)
    if x.size and x.min() >= PSU_TITANIUM_LOAD_FRACTION[0]:
        # no load below the curve's first point: psu_efficiency is the interpolation,
        # at least the curve's lowest efficiency (> 0), so no zero to guard against
        ac = np.divide(dc, _titanium_efficiency(x))
        if off is None:
            ac = np.where(on, ac, 0.0)
        else:
            np.copyto(ac, 0.0, where=off)
    else:
        eta = psu_efficiency(x)
        ac = np.where(on, dc / np.where(eta > 0.0, eta, 1.0), 0.0)
    return np.minimum(ac, node_max_w, out=ac)


def _psu_ac_known_off_w(dc, cap_psu, node_max_w, off) -> np.ndarray:
    """:func:`_psu_ac_w` of DC loads ``dc`` [W (N,)] where the nodes ``off`` [bool (N,), or
    None: none] are known to draw nothing (their load is 0 or NaN, which the reference reads
    as unloaded), without finding the unloaded nodes again (issue 14, speed only).

    When every other load fraction is at or above the curve's first point (no NaN: the
    minimum says so) those loads are > 0, so the unloaded nodes are exactly ``off`` and the
    reference's operations run on the same numbers; otherwise the reference runs."""
    x = np.divide(dc, cap_psu)
    if off is not None:
        np.copyto(x, PSU_TITANIUM_LOAD_FRACTION[0], where=off)
    if x.size and np.minimum.reduce(x) >= PSU_TITANIUM_LOAD_FRACTION[0]:
        ac = np.divide(dc, _titanium_efficiency(x))
        if off is not None:
            np.copyto(ac, 0.0, where=off)
        return np.minimum(ac, node_max_w, out=ac)
    return _psu_ac_w(dc, cap_psu, node_max_w)


def _frozen(a: np.ndarray) -> bool:
    """Nothing can write ``a`` short of setting a flag back: it is read-only and so is the
    plain array owning its memory, if it is a view (the cluster state's derived arrays)."""
    if a.flags.writeable:
        return False
    base = a.base
    return base is None or (type(base) is np.ndarray and not base.flags.writeable and base.base is None)


def node_power_plan(
    gpu_power_cap_w,
    *,
    gpu_count,
    gpu_tdp_w,
    gpu_idle_w,
    host_idle_w,
    host_active_w,
    fan_max_w,
    node_max_w,
    psu_capacity_w=None,
    fan_min_speed_fraction=FAN_MIN_SPEED_FRACTION,
    fan_control_temp_c=FAN_CONTROL_TEMP_C,
    fan_design_inlet_c=FAN_DESIGN_INLET_C,
):
    """:func:`node_power_w` at full clock, prepared once for fixed figures (issue 19, speed
    only: a caller evaluating the same node model many times skips the per-call checks).

    Returns a function ``f(phase, inlet_temp_c)`` of integer phase codes (N,) and inlets
    [degC, float (N,)] giving ``node_power_w(phase, gpu_power_cap_w, inlet_temp_c,
    clock_fraction=1.0, **figures)`` [W (N,)] bit for bit (the same table and the same
    operations), or None where :func:`node_power_w` takes another path: a figure per node,
    or a PSU capacity per node or not positive.
    """
    cap_psu = node_max_w if psu_capacity_w is None else np.asarray(psu_capacity_w, float)
    if not (_scalar(gpu_power_cap_w) and _scalar(gpu_count) and _scalar(gpu_tdp_w) and _scalar(gpu_idle_w)
            and _scalar(host_idle_w) and _scalar(host_active_w) and _scalar(fan_control_temp_c)
            and _scalar(fan_design_inlet_c) and _scalar(fan_min_speed_fraction) and _scalar(fan_max_w)
            and _scalar(cap_psu) and cap_psu > 0.0):
        return None
    table = _node_phase_tables(float(gpu_power_cap_w), gpu_count, float(gpu_tdp_w), float(gpu_idle_w),
                               float(host_idle_w), float(host_active_w), float(fan_control_temp_c),
                               float(fan_design_inlet_c))
    # what a phase array gives (its table rows, the powered flags unless all 1, the nodes
    # known to draw nothing or None), kept with the last phase array nothing can write: a
    # caller evaluates one phase array at many inlets (issue 14, speed only)
    memo: list = [None, None]
    # per phase code: a powered flag other than 1.0 (the fan power is multiplied by it), and
    # no heat (0 or less) with no fan (flag 0): a load of 0 or NaN, which the PSU step reads
    # as unloaded
    odd_code = table[2] != 1.0
    off_code = (table[0] <= 0.0) & (table[2] == 0.0)

    def rows(phase: np.ndarray) -> tuple:
        if memo[0] is phase:
            return memo[1]
        heat, term, on = table.take(phase, axis=1)
        if np.count_nonzero(odd_code.take(phase)):
            off = off_code.take(phase)
            got = (heat, term, on, off if np.count_nonzero(off) else None)
        else:                                   # every flag 1.0: no product, no unloaded node
            got = (heat, term, None, None)
        if type(phase) is np.ndarray and _frozen(phase):
            memo[0], memo[1] = phase, got
        return got

    def node_power_at_full_clock_w(phase: np.ndarray, inlet_temp_c: np.ndarray) -> np.ndarray:
        if not node_power_plan_rows:
            heat, term, on = table.take(phase, axis=1)
            s = np.subtract(fan_control_temp_c, inlet_temp_c, dtype=float)
            return _psu_ac_w(_fan_dc_in_place(heat, term, on, s, fan_min_speed_fraction, fan_max_w), cap_psu,
                             node_max_w)
        heat, term, on, off = rows(phase)
        s = np.subtract(fan_control_temp_c, inlet_temp_c, dtype=float)
        return _psu_ac_known_off_w(_fan_dc_in_place(heat, term, on, s, fan_min_speed_fraction, fan_max_w),
                                   cap_psu, node_max_w, off)
    return node_power_at_full_clock_w


#: a node power plan keeps what a phase array gives (table rows, powered and unloaded nodes)
#: with the last phase array nothing can write, and finds the unloaded nodes from it rather
#: than from the loads (issue 14); False: each call as first written, the reference
node_power_plan_rows = True


def node_power_breakdown_w(
    phase,
    gpu_power_cap_w,
    inlet_temp_c,
    *,
    gpu_count,
    gpu_tdp_w,
    gpu_idle_w,
    host_idle_w,
    host_active_w,
    fan_max_w,
    node_max_w,
    clock_fraction=1.0,
    psu_capacity_w=None,
    **fan_kw,
) -> dict[str, np.ndarray]:
    """Node power by part [W]: ``gpu_w``, ``host_w``, ``fan_w`` (DC), ``psu_loss_w``,
    ``ac_w`` (= :func:`node_power_w`) and ``limited`` (bool: held at ``node_max_w``).

    ``ac_w = gpu_w + host_w + fan_w + psu_loss_w`` exactly. Where the node is held at
    ``node_max_w``, the GPUs give up the excess (the node power manager caps them), at the
    PSU efficiency of the unconstrained load.
    """
    gpu, host, fan = node_dc_power_w(
        phase, gpu_power_cap_w, inlet_temp_c, gpu_count=gpu_count, gpu_tdp_w=gpu_tdp_w,
        gpu_idle_w=gpu_idle_w, host_idle_w=host_idle_w, host_active_w=host_active_w,
        fan_max_w=fan_max_w, node_max_w=node_max_w, clock_fraction=clock_fraction, **fan_kw,
    )
    dc = gpu + host + fan
    cap_psu = node_max_w if psu_capacity_w is None else np.asarray(psu_capacity_w, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        eta = psu_efficiency(dc / cap_psu)
        eta = np.where(eta > 0.0, eta, 1.0)
        ac_free = np.where(dc > 0.0, dc / eta, 0.0)
    limited = ac_free > node_max_w
    ac = np.minimum(ac_free, node_max_w)
    dc_held = np.where(limited, ac * eta, dc)
    gpu = np.maximum(gpu - (dc - dc_held), 0.0)
    return {"gpu_w": gpu, "host_w": host, "fan_w": fan, "psu_loss_w": ac - (gpu + host + fan),
            "ac_w": ac, "limited": limited}


def node_worst_case_w(
    gpu_power_cap_w,
    *,
    gpu_count,
    gpu_tdp_w,
    gpu_idle_w,
    host_idle_w,
    host_active_w,
    fan_max_w,
    node_max_w,
    inlet_temp_c=FAN_DESIGN_INLET_C,
    psu_capacity_w=None,
    **fan_kw,
) -> float | np.ndarray:
    """Worst-case AC draw of a node [W] for admission checks.

    Full load (``Phase.BURN_IN``) at the per-GPU cap ``gpu_power_cap_w`` [W] and the
    hottest allowed inlet ``inlet_temp_c`` [C] (default 35 C, ASHRAE A2 upper allowable),
    never above ``node_max_w``. Scalar in, scalar out.
    """
    cap = np.asarray(gpu_power_cap_w, dtype=float)
    out = node_power_w(
        np.full(cap.shape, int(Phase.BURN_IN)), cap, inlet_temp_c, gpu_count=gpu_count,
        gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w, host_idle_w=host_idle_w,
        host_active_w=host_active_w, fan_max_w=fan_max_w, node_max_w=node_max_w,
        psu_capacity_w=psu_capacity_w, **fan_kw,
    )
    return float(out) if out.ndim == 0 else out


def gpu_power_cap_for_node_budget_w(
    node_budget_w,
    *,
    gpu_count,
    gpu_tdp_w,
    gpu_idle_w,
    host_idle_w,
    host_active_w,
    fan_max_w,
    node_max_w,
    gpu_cap_min_w=None,
    inlet_temp_c=FAN_DESIGN_INLET_C,
    psu_capacity_w=None,
    iterations=40,
) -> np.ndarray:
    """Highest per-GPU cap [W] whose worst-case node draw fits ``node_budget_w`` [W].

    Bisection on the monotone :func:`node_worst_case_w` (vectorised over budgets). Result
    in [gpu_cap_min_w, gpu_tdp_w]; NaN where even the minimum cap does not fit. Default
    minimum cap is the GPU idle power (H100 SXM's configurable floor is 200 W; pass it).
    """
    budget = np.asarray(node_budget_w, dtype=float)
    lo_cap = gpu_idle_w if gpu_cap_min_w is None else gpu_cap_min_w
    kw = dict(
        gpu_count=gpu_count, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w,
        host_idle_w=host_idle_w, host_active_w=host_active_w, fan_max_w=fan_max_w,
        node_max_w=node_max_w, inlet_temp_c=inlet_temp_c, psu_capacity_w=psu_capacity_w,
    )
    lo = np.full(budget.shape, float(lo_cap))
    hi = np.full(budget.shape, float(gpu_tdp_w))
    fits_hi = node_worst_case_w(hi, **kw) <= budget
    fits_lo = node_worst_case_w(lo, **kw) <= budget
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        ok = node_worst_case_w(mid, **kw) <= budget
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    out = np.where(fits_hi, float(gpu_tdp_w), lo)
    return np.where(fits_lo, out, np.nan)


# --- PSU redundancy and the GPU power brake ---------------------------------------


def psus_without_input(psu_count: int, feed_up) -> int:
    """PSUs of a node left without input when some feeds are down [count].

    The node's PSUs are cabled alternately to the rack's A/B (... F) PDUs, PSU ``i`` on
    feed ``i mod F`` (Dell XE9680 3+3 FTR: PSUs 1-3 on grid A, 4-6 on grid B), so a
    lost feed takes ``ceil`` or ``floor`` of ``psu_count / F`` PSUs with it. Add the
    result to the failed PSUs before :func:`gpu_power_brake_clock_fraction` and
    :func:`psu_capacity_w`: losing a feed in 3+3 leaves 3 PSUs and engages the brake.
    """
    up = np.asarray(feed_up, dtype=bool).ravel()
    per_feed = np.bincount(np.arange(psu_count) % up.size, minlength=up.size)
    return int(per_feed[~up].sum())


_RED_RE = re.compile(r"^\s*(\d+)\s*\+\s*(\d+)\s*$")


def parse_psu_redundancy(redundancy: str) -> tuple[int, int]:
    """``"5+1"`` -> (5, 1): PSUs needed (N) and redundant (M). Accepts ``"3+3 FTR"``."""
    m = _RED_RE.match(redundancy.replace("FTR", "").replace("ftr", ""))
    if not m:
        raise ValueError(f"PSU redundancy must look like 'N+M', got {redundancy!r}")
    return int(m.group(1)), int(m.group(2))


#: Clock fraction under the HGX power brake [fraction]. The XE9680 asserts the GPU
#: baseboard's power-brake signal, which drops the GPUs to a low-power state; the exact
#: clock is not published. 0.5 is an assumption (gives ~1/8 of the dynamic power by the
#: f**3 law), override per catalog entry.
POWER_BRAKE_CLOCK_FRACTION = 0.5


def gpu_power_brake_clock_fraction(
    psus_failed,
    psu_count: int,
    redundancy: str | int,
    *,
    brake_clock_fraction: float = POWER_BRAKE_CLOCK_FRACTION,
) -> np.ndarray:
    """GPU clock fraction [fraction] of a node with ``psus_failed`` failed PSUs.

    XE9680 (6 x 2800 W; Dell PowerEdge XE9680 technical guide, via the reference
    README): in 5+1 the node runs at full clocks while one PSU is out (redundancy lost,
    capacity kept) and brakes when a second fails (fewer than N=5 left); in 3+3
    fault-tolerant redundancy (two grids of three) the brake engages with 2 or more PSUs
    failed. General rule: brake when the failures exceed the tolerated count, where the
    tolerated count is M for N+M with M < N and 1 for grid-redundant N+N (FTR) sets.
    ``redundancy`` is ``"N+M"`` (``"3+3 FTR"`` accepted) or the number N of PSUs required
    (the catalog's ``psus_required``; M = psu_count - N).
    Returns 1.0 (no brake), ``brake_clock_fraction``, or 0.0 when no PSU is left (the
    node is off).
    """
    if isinstance(redundancy, str):
        n, m = parse_psu_redundancy(redundancy)
    else:
        n, m = int(redundancy), int(psu_count) - int(redundancy)
        if n <= 0 or m < 0:
            raise ValueError(f"psus_required must be in 1..{psu_count}, got {redundancy}")
    if n + m != psu_count:
        raise ValueError(f"redundancy {redundancy!r} does not add up to {psu_count} PSUs")
    tolerated = 1 if (m >= n and m > 0) else m
    failed = np.asarray(psus_failed)
    out = np.where(failed > tolerated, brake_clock_fraction, 1.0)
    return np.where(failed >= psu_count, 0.0, out)
