"""Sub-second facility swings of synchronous training and what smooths them.

A data-parallel job's nodes change phase together: every step has a compute part and an
exposed part (the exposed all-reduce, pipeline flush and straggler wait, where the GPUs
mostly wait), and every checkpoint or restart drops them to near idle for seconds to
minutes. The facility load therefore steps by ``nodes x (P_train - P_phase)`` within the
GPUs' power response (milliseconds), and the utility meter sees it within a second.
Utilities and generator governors care about exactly this ramp (Choukse et al., "Power
stabilization for AI training datacenters", arXiv 2508.14318, 2025: production traces
of DGX-H100 racks swinging with each iteration; NVIDIA, "How new GB300 NVL72 features
provide steady power for AI", 2025: GPU power smoothing floor and rack energy storage).

The model (pure, vectorised):

1. :func:`job_phase_trace` - one node's phase on a fine grid ``dt_s`` (10 ms): steps of
   ``step_s`` with the exposed time ``exposed_s`` lumped at the end of each step (the
   all-reduce and pipeline flush; the worst case for the swing), a checkpoint of
   ``checkpoint_s`` at ``checkpoint_at_s`` and a restart of ``restart_s`` at
   ``restart_at_s`` (after which training resumes).
2. :func:`sync_load_w` - the job's power: node power of each phase times the number of
   nodes, box-filtered over ``skew_s`` (nodes whose phase changes are spread uniformly
   over ``skew_s``; 0 = all together).
3. :func:`mean_per_interval` - the 1-s means a revenue meter or a generator governor sees.
4. :func:`peak_meter_ramp_kw_per_s` - ``max |P[k+1] - P[k]| / 1 s`` of the 1-s meter power.

The GPU power-smoothing floor (:func:`gpu_floor_power_w`) keeps every GPU at or above
``floor x TDP`` in any job phase; the swing shrinks and the energy burnt in the floor is
the cost (:func:`energy_kwh`).
"""

from __future__ import annotations

import numpy as np

from twin.phases import Phase

__all__ = [
    "job_phase_trace",
    "sync_load_w",
    "mean_per_interval",
    "peak_meter_ramp_kw_per_s",
    "gpu_floor_power_w",
    "energy_kwh",
]


def job_phase_trace(duration_s: float, step_s: float, exposed_s: float, *,
                    checkpoint_at_s: float | None = None, checkpoint_s: float = 0.0,
                    restart_at_s: float | None = None, restart_s: float = 0.0,
                    dt_s: float = 0.01) -> np.ndarray:
    """Phase of one node of a synchronous job on a grid of ``dt_s`` [int8 (ceil(duration/dt),)].

    Training steps of ``step_s`` [s]: ``Phase.TRAINING`` for ``step_s - exposed_s``, then
    ``Phase.COMMUNICATION`` for ``exposed_s``; ``Phase.CHECKPOINT`` during
    ``[checkpoint_at_s, +checkpoint_s)`` and ``Phase.RESTART`` during
    ``[restart_at_s, +restart_s)``. Steps restart their clock after each of these.
    """
    if not 0 <= exposed_s < step_s:
        raise ValueError(f"exposed_s must be in [0, step_s); got {exposed_s} and {step_s}")
    n = int(np.ceil(duration_s / dt_s - 1e-9))
    t = (np.arange(n) + 0.5) * dt_s
    events = []
    if checkpoint_at_s is not None and checkpoint_s > 0:
        events.append((checkpoint_at_s, checkpoint_s, Phase.CHECKPOINT))
    if restart_at_s is not None and restart_s > 0:
        events.append((restart_at_s, restart_s, Phase.RESTART))
    events.sort()
    # clock of the step since the last resume
    origin = np.zeros(n)
    phase = np.full(n, int(Phase.TRAINING), dtype=np.int8)
    blocked = np.zeros(n, dtype=bool)
    for start, dur, ph in events:
        inside = (t >= start) & (t < start + dur)
        phase[inside] = int(ph)
        blocked |= inside
        origin[t >= start + dur] = start + dur
    in_step = np.mod(t - origin, step_s)
    comm = (in_step >= step_s - exposed_s) & ~blocked
    phase[comm] = int(Phase.COMMUNICATION)
    return phase


def sync_load_w(phase, phase_power_w, nodes: int, *, skew_s: float = 0.0, dt_s: float = 0.01) -> np.ndarray:
    """Power of a job's ``nodes`` [W] on the grid of ``phase``.

    ``phase_power_w`` is indexed by phase code (node AC power [W] in each phase). With
    ``skew_s > 0`` the nodes' phase changes are spread uniformly over ``skew_s``, so the
    sum is the single-node trace convolved with a box of that width (moving average,
    edge values held).
    """
    p = np.asarray(phase_power_w, dtype=float)[np.asarray(phase)] * nodes
    k = int(round(skew_s / dt_s))
    if k > 1:
        pad = np.concatenate([np.full(k - 1, p[0]), p])
        c = np.cumsum(np.concatenate([[0.0], pad]))
        p = (c[k:] - c[:-k]) / k
    return p


def mean_per_interval(series, dt_s: float, interval_s: float = 1.0) -> np.ndarray:
    """Means of ``series`` (sampled every ``dt_s``) over consecutive ``interval_s`` windows;
    a trailing partial window is dropped."""
    m = int(round(interval_s / dt_s))
    x = np.asarray(series, dtype=float)
    n = (x.shape[0] // m) * m
    return x[:n].reshape(-1, m).mean(axis=1)


def peak_meter_ramp_kw_per_s(meter_w, interval_s: float = 1.0) -> float:
    """Largest change of the meter power between consecutive intervals [kW/s]:
    ``max |P[k+1] - P[k]| / interval_s / 1000``; 0 for fewer than two intervals."""
    p = np.asarray(meter_w, dtype=float)
    if p.shape[0] < 2:
        return 0.0
    return float(np.max(np.abs(np.diff(p))) / interval_s / 1e3)


def gpu_floor_power_w(phase_power_w, phase_gpu_w, *, gpu_count: int, gpu_tdp_w: float,
                      floor_fraction: float, dc_to_ac: np.ndarray | float = 1.0) -> np.ndarray:
    """Node power per phase [W] with a GPU power-smoothing floor.

    Each GPU draws at least ``floor_fraction x gpu_tdp_w`` while a job holds it (training,
    communication, checkpoint, restart; OFF, IDLE and BURN_IN are left alone): the node's
    DC draw rises by ``gpu_count x max(0, floor x TDP - P_gpu)``, times ``dc_to_ac`` (the
    PSU's AC per DC watt at that phase) at the wall. ``phase_gpu_w`` is the per-GPU power
    of each phase [W].
    """
    p = np.asarray(phase_power_w, dtype=float).copy()
    g = np.asarray(phase_gpu_w, dtype=float)
    extra = gpu_count * np.maximum(0.0, floor_fraction * gpu_tdp_w - g) * np.asarray(dc_to_ac, float)
    held = np.zeros_like(p, dtype=bool)
    for ph in (Phase.TRAINING, Phase.COMMUNICATION, Phase.CHECKPOINT, Phase.RESTART):
        held[int(ph)] = True
    return np.where(held, p + extra, p)


def energy_kwh(power_w, dt_s: float) -> float:
    """Energy of a power series [kWh]: ``sum(P) dt / 3.6e6``."""
    return float(np.sum(np.asarray(power_w, dtype=float)) * dt_s / 3.6e6)
