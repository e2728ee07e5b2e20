"""GPU clock under a power cap (the engine multiplies it into a job's clock fraction)."""

from __future__ import annotations

import numpy as np

#: Exponent of dynamic GPU power versus clock, ``P_dyn ~ f**3`` (CMOS ``C V^2 f`` with
#: ``V ~ f``); the same law as ``twin.power.node.GPU_DVFS_POWER_EXPONENT``.
GPU_DVFS_POWER_EXPONENT = 3.0
#: Share of the idle->TDP range a GPU draws in dense training [-] (the power model's
#: TRAINING phase load, twin.power.node.PHASE_GPU_LOAD_FRACTION).
TRAINING_LOAD_FRACTION = 0.95
#: GPU idle power over TDP when no idle power is given [-]: H100 SXM idles near 70 W of
#: 700 W, A100 SXM near 50-60 W of 400 W (catalog nodes.yaml; nvidia-smi readings).
DEFAULT_IDLE_FRACTION = 0.10


def gpu_clock_fraction_at_power_cap(cap_w, tdp_w, *, gpu_idle_w=None,
                                    load_fraction=TRAINING_LOAD_FRACTION):
    """SM clock fraction [-] of a GPU in dense training held to a power cap ``cap_w`` [W].

    Inverse of the DVFS power law of :mod:`twin.power.node` (one physics for power and
    speed): ``P = P_idle + u (P_tdp - P_idle) f**3``, so
    ``f = clip(((cap - P_idle) / (u (P_tdp - P_idle)))**(1/3), 0, 1)`` with ``u`` the
    training load share of the dynamic range.  Dynamic CMOS power ``~ C V^2 f`` with
    ``V ~ f`` in the DVFS range (Weste & Harris, CMOS VLSI Design, 4th ed., 5.1).

    The throughput loss is smaller than the clock loss because only compute-bound
    kernels slow with the clock: :func:`twin.compute.step_estimate` applies the returned
    fraction to GEMM and attention time only, so HBM-, NVLink- and network-bound parts
    keep their speed.  This sub-linear throughput-vs-cap behaviour is what the
    power-capping studies of training report (Zhao et al., "Sustainable Supercomputing
    for AI: GPU Power Capping at HPC Scale", SoCC 2023, V100/A100; Patel et al.,
    "Characterizing Power Management Opportunities for LLMs in the Cloud", ASPLOS 2024,
    A100/H100).  Example, H100 SXM (700 W, idle 70 W): cap 600 W -> f = 0.96,
    500 W -> 0.90, 400 W -> 0.81.  ``cap_w=None`` (no cap) gives 1.
    """
    if cap_w is None:  # no cap: the GPU runs at its TDP
        return 1.0
    cap = np.asarray(cap_w, dtype=float)
    tdp = np.asarray(tdp_w, dtype=float)
    idle = DEFAULT_IDLE_FRACTION * tdp if gpu_idle_w is None else np.asarray(gpu_idle_w, float)
    ratio = np.clip((cap - idle) / (load_fraction * (tdp - idle)), 0.0, 1.0)
    f = ratio ** (1.0 / GPU_DVFS_POWER_EXPONENT)
    return float(f) if f.ndim == 0 else f
