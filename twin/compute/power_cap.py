"""GPU clock under a power cap, for the step model: the power model's DVFS law inverted.

The law lives in one place, :func:`twin.power.node.gpu_clock_fraction_at_power`
(``P = P_idle + u (P_tdp - P_idle) f**3``); this module only supplies the defaults the
step-time tools use when a GPU's idle power is not given.
"""

from __future__ import annotations

from twin.phases import Phase
from twin.power.node import PHASE_GPU_LOAD_FRACTION, gpu_clock_fraction_at_power

#: Share of the idle->TDP range a GPU draws in dense training [-] (the power model's
#: TRAINING phase load).
TRAINING_LOAD_FRACTION = float(PHASE_GPU_LOAD_FRACTION[Phase.TRAINING])
#: GPU idle power over TDP when no idle power is given [-]: H100 SXM idles near 70 W of
#: 700 W, A100 SXM near 50-60 W of 400 W (catalog nodes.yaml; nvidia-smi readings).
DEFAULT_IDLE_FRACTION = 0.10


def gpu_clock_fraction_at_power_cap(cap_w, tdp_w, *, gpu_idle_w=None,
                                    load_fraction=TRAINING_LOAD_FRACTION):
    """SM clock fraction [-] of a GPU in dense training held to a power cap ``cap_w`` [W].

    :func:`twin.power.node.gpu_clock_fraction_at_power` at ``gpu_tdp_w=tdp_w`` and
    ``gpu_idle_w`` (default ``DEFAULT_IDLE_FRACTION x tdp_w``). The throughput loss is
    smaller than the clock loss because only compute-bound kernels slow with the clock:
    :func:`twin.compute.step_estimate` applies the fraction to GEMM and attention time
    only (Zhao et al., SoCC 2023; Patel et al., ASPLOS 2024). Example, H100 SXM (700 W,
    idle 70 W): cap 600 W -> f = 0.96, 500 W -> 0.90, 400 W -> 0.81. ``cap_w=None`` (no
    cap) gives 1.
    """
    if cap_w is None:  # no cap: the GPU runs at its TDP
        return 1.0
    idle = DEFAULT_IDLE_FRACTION * tdp_w if gpu_idle_w is None else gpu_idle_w
    f = gpu_clock_fraction_at_power(cap_w, gpu_tdp_w=tdp_w, gpu_idle_w=idle, load_fraction=load_fraction)
    return float(f) if f.ndim == 0 else f
