"""Pure functions that couple two sub-models (used by the engine's sampler)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from twin import power, thermal
from twin.power.node import _scalar
from twin.thermal.properties import arrhenius_factors, arrhenius_from_factors, gpu_temp_rise_k


def equilibrium_gpu_state(inlet_temp_c, phase, gpu_power_cap_w, *, gpu_tdp_w, gpu_idle_w,
                          thermal_resistance_k_per_w, slowdown_c, hw_slowdown_c, shutdown_c,
                          iterations: int = 20):
    """Self-consistent GPU clock, power and temperature of each node's GPUs.

    A hot GPU slows its clock, which lowers its power (DVFS, ``power.gpu_power_w``), which
    lowers its temperature (``T = inlet + R_th P``, ``thermal.gpu_temp_c``). With
    ``g(f) = clock(T(P(f)))`` non-increasing in the clock fraction ``f``, the fixed point
    ``f = g(f)`` is unique and found by bisection on ``g(f) - f`` (vectorised over nodes).
    A node whose GPUs cross the shutdown threshold even at the lowest clock gets clock 0.

    inlet_temp_c [C] (N,), phase (N,) Phase codes, gpu_power_cap_w [W]. Returns
    ``(clock_fraction (N,), gpu_power_w (N,), gpu_temp_c (N,))``; when every GPU keeps its
    full clock, the clock fraction is :func:`full_clock` (a shared read-only array of ones).
    """
    inlet = np.asarray(inlet_temp_c, float)
    phase = np.asarray(phase)

    def state(f):
        p = power.gpu_power_w(phase, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w,
                              clock_fraction=f)
        t = thermal.gpu_temp_c(inlet, p, thermal_resistance_k_per_w)
        g = np.asarray(thermal.gpu_clock_fraction(t, slowdown_c, hw_slowdown_c, shutdown_c), float)
        return p, t, g

    if inlet.size and _scalar(slowdown_c) and _scalar(shutdown_c):
        # when the hottest GPU at full clock is below both thresholds every GPU keeps its
        # full clock and neither the law per node nor the bisection is needed (speed only,
        # issue 19; tests/sim/test_sampler_speed.py checks this against the law)
        p, t = full_clock_gpu_state(inlet, phase, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w,
                                    thermal_resistance_k_per_w=thermal_resistance_k_per_w)
        if keeps_full_clock(t.max(), slowdown_c, shutdown_c):
            return full_clock(inlet.shape), p, t
    ones = np.ones(inlet.shape)
    p, t, g = state(ones)
    hot = g < 1.0
    if not hot.any():
        return full_clock(inlet.shape), p, t
    lo, hi = np.zeros(inlet.shape), ones.copy()
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        _, _, gm = state(mid)
        above = gm >= mid            # the fixed point lies at or above mid
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    f = np.where(hot, lo, 1.0)
    p, t, g = state(f)
    f = np.where(g <= 0.0, 0.0, f)   # too hot even when slowed: shutdown
    return f, p, t


def full_clock_gpu_state(inlet_temp_c, phase, gpu_power_cap_w, *, gpu_tdp_w, gpu_idle_w,
                         thermal_resistance_k_per_w) -> tuple[np.ndarray, np.ndarray]:
    """GPU power [W] and temperature [degC] of each node's GPUs at full clock, elementwise in
    (phase, inlet): ``P = power.gpu_power_w(phase, cap, clock_fraction=1)``,
    ``T = inlet + R_th P`` (:func:`thermal.gpu_temp_c`); ``inlet_temp_c`` [degC] as float."""
    p = power.gpu_power_w(phase, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w, clock_fraction=1.0)
    return p, thermal.gpu_temp_c(np.asarray(inlet_temp_c, float), p, thermal_resistance_k_per_w)


def full_clock_gpu_temp_rise_k(phase, gpu_power_cap_w, *, gpu_tdp_w, gpu_idle_w,
                               thermal_resistance_k_per_w) -> np.ndarray:
    """The GPU temperature rise over the inlet at full clock [K], ``R_th P`` of
    :func:`full_clock_gpu_state` (a function of the phase alone for fixed figures): its
    temperature is ``inlet + rise`` bit for bit (:func:`thermal.gpu_temp_c` adds the same
    :func:`thermal.properties.gpu_temp_rise_k` to the inlet), so a caller with many inlets
    for one phase array computes the rise once (issue 14, speed only; tests/sim/test_hb_physics.py)."""
    p = power.gpu_power_w(phase, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w, clock_fraction=1.0)
    return gpu_temp_rise_k(p, thermal_resistance_k_per_w)


def arrhenius_plan(ref_temp_c, activation_energy_ev):
    """:func:`thermal.arrhenius_acceleration` prepared for one reference temperature [degC]
    and activation energy [eV] (scalars), or None for per-node figures.

    Returns ``f(temp_c)`` giving the law's factor for temperatures [degC]: its scalar parts
    (:func:`thermal.properties.arrhenius_factors`) converted once, then the law itself
    (:func:`thermal.properties.arrhenius_from_factors`), so bit for bit the same (issue 14,
    speed only: the law's conversions of its scalars cost more than its arithmetic on a few
    hundred nodes; tests/sim/test_hb_physics.py)."""
    if not (_scalar(ref_temp_c) and _scalar(activation_energy_ev)):
        return None
    ea_over_k, inv_ref_k = arrhenius_factors(ref_temp_c, activation_energy_ev)

    def acceleration(temp_c: np.ndarray) -> np.ndarray:
        return arrhenius_from_factors(temp_c, ea_over_k, inv_ref_k)
    return acceleration


def keeps_full_clock(gpu_temp_max_c, slowdown_c, shutdown_c) -> bool:
    """True when the hottest GPU at full clock [degC] is below the slowdown and the shutdown
    thresholds [degC, scalars]: below both the clock law gives the full clock to every GPU."""
    return bool(gpu_temp_max_c < slowdown_c and gpu_temp_max_c < shutdown_c)


@lru_cache(maxsize=8)
def full_clock(shape: tuple[int, ...]) -> np.ndarray:
    """The clock fraction of GPUs that all run at full clock: ones of ``shape``, read-only and
    shared (the sampler knows it by identity: no shutdown, and the clocks of a state it has
    already set)."""
    ones = np.ones(shape)
    ones.flags.writeable = False
    return ones
