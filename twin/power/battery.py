"""A battery behind the meter (BESS or UPS energy storage) that smooths training swings.

State: stored energy ``E`` [J] between ``soc_min`` and ``soc_max`` of the capacity.
Battery power ``b`` [W] at its AC terminals, positive when discharging into the load;
the meter sees ``grid = load - b``. The round-trip efficiency is split evenly over charge
and discharge, ``eta_c = eta_d = sqrt(eta_rt)``:

    discharging b > 0:  dE = -b dt / eta_d,   loss = b dt (1/eta_d - 1)
    charging    b < 0:  dE = -b dt  eta_c,    loss = -b dt (1 - eta_c)

so the energy balance ``sum(grid) dt = sum(load) dt + losses + (E_end - E_start)`` holds
exactly (tested). Policies (:func:`battery_dispatch`):

``smoothing``
    The meter follows the load at no more than ``ramp_limit_w_per_s``: the target moves
    toward ``load + P_restore`` by at most ``r dt`` per step and the battery covers the
    difference. ``P_restore = (SoC_mid - SoC) E_cap / t_restore`` slowly returns the
    charge to mid-range so the battery can absorb the next swing either way.
``peak_shaving``
    The meter is held at or below ``shave_w``; the battery discharges above it and
    recharges (``P_restore``, no more than the headroom below ``shave_w``) below it.

Power and energy limits bind where they must; the meter then takes the rest (and the
smoothing target restarts from the meter value). References: the ramp-rate smoothing
controller of battery-backed PV plants (e.g. Marcos et al., "Storage requirements for
PV power ramp-rate control", Solar Energy 99 (2014) 28-35, doi:10.1016/j.solener.2013.10.037)
applied to a load instead of a generator.
"""

from __future__ import annotations

import numpy as np

__all__ = ["battery_dispatch"]


def battery_dispatch(load_w, dt_s: float, *, power_w: float, energy_j: float,
                     round_trip_efficiency: float = 0.9, initial_soc: float = 0.5,
                     soc_min: float = 0.1, soc_max: float = 0.9, policy: str = "smoothing",
                     ramp_limit_w_per_s: float | None = None, shave_w: float | None = None,
                     soc_restore_s: float = 600.0) -> dict[str, np.ndarray | float]:
    """Dispatch a battery against a load series [W] sampled every ``dt_s`` [s].

    Returns ``grid_w`` (meter), ``battery_w`` (+ discharge), ``soc`` (after each step),
    ``loss_j`` (total conversion loss), ``energy_start_j``, ``energy_end_j``.
    """
    load = np.asarray(load_w, dtype=float)
    n = load.shape[0]
    grid = np.empty(n)
    batt = np.zeros(n)
    soc = np.empty(n)
    if power_w <= 0 or energy_j <= 0:
        grid[:] = load
        soc[:] = initial_soc
        return dict(grid_w=grid, battery_w=batt, soc=soc, loss_j=0.0,
                    energy_start_j=initial_soc * energy_j, energy_end_j=initial_soc * energy_j)
    if policy not in ("smoothing", "peak_shaving"):
        raise ValueError(f"policy must be 'smoothing' or 'peak_shaving', got {policy!r}")
    eta = float(np.sqrt(round_trip_efficiency))
    e_min, e_max = soc_min * energy_j, soc_max * energy_j
    e_mid = 0.5 * (e_min + e_max)
    e = initial_soc * energy_j
    e0 = e
    r = (0.1 * power_w if ramp_limit_w_per_s is None else ramp_limit_w_per_s) * dt_s
    shave = float(np.mean(load)) if shave_w is None else shave_w
    target = load[0]
    loss = 0.0
    for k in range(n):
        restore = (e_mid - e) / soc_restore_s          # W: + charge when below mid
        if policy == "smoothing":
            want = load[k] + restore
            target = target + min(max(want - target, -r), r)
            b = load[k] - target
        else:
            b = load[k] - shave if load[k] > shave else -min(max(restore, 0.0), shave - load[k])
        # power and energy limits
        b = min(max(b, -power_w), power_w)
        b = min(b, (e - e_min) * eta / dt_s)           # discharge no deeper than e_min
        b = max(b, -(e_max - e) / (eta * dt_s))        # charge no higher than e_max
        if b >= 0:
            e -= b * dt_s / eta
            loss += b * dt_s * (1.0 / eta - 1.0)
        else:
            e += -b * dt_s * eta
            loss += -b * dt_s * (1.0 - eta)
        batt[k] = b
        grid[k] = load[k] - b
        if policy == "smoothing":
            target = grid[k]
        soc[k] = e / energy_j
    return dict(grid_w=grid, battery_w=batt, soc=soc, loss_j=loss, energy_start_j=e0, energy_end_j=e)
