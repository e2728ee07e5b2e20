"""Pure functions that couple two sub-models (used by the engine's sampler)."""

from __future__ import annotations

import numpy as np

from twin import power, thermal


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
    ``(clock_fraction (N,), gpu_power_w (N,), gpu_temp_c (N,))``.
    """
    inlet = np.asarray(inlet_temp_c, float)
    phase = np.asarray(phase)

    def state(f):
        p = power.gpu_power_w(phase, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w,
                              clock_fraction=f)
        t = thermal.gpu_temp_c(inlet, p, thermal_resistance_k_per_w)
        g = np.asarray(thermal.gpu_clock_fraction(t, slowdown_c, hw_slowdown_c, shutdown_c), float)
        return p, t, g

    ones = np.ones(inlet.shape)
    if inlet.size and all(np.ndim(x) == 0 for x in (slowdown_c, hw_slowdown_c, shutdown_c)):
        # the clock law is non-increasing in T: when the hottest GPU keeps its full clock at
        # full power, so does every GPU, and the bisection is not needed (speed only, issue
        # 19: the law is evaluated on one number instead of every node)
        p = power.gpu_power_w(phase, gpu_power_cap_w, gpu_tdp_w=gpu_tdp_w, gpu_idle_w=gpu_idle_w,
                              clock_fraction=ones)
        t = thermal.gpu_temp_c(inlet, p, thermal_resistance_k_per_w)
        if thermal.gpu_clock_fraction(t.max(), slowdown_c, hw_slowdown_c, shutdown_c) >= 1.0:
            return ones, p, t
    p, t, g = state(ones)
    hot = g < 1.0
    if not hot.any():
        return ones, p, t
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
