"""Collectives cost model, training step time, and the GPU clock under a power cap.

* :func:`collective_time_s` / :func:`group_collective_time_s` /
  :func:`collective_bandwidths_gb_s`: NCCL-style collectives (protocol regimes, NVLS,
  rings and trees across rails, transports, SHARP);
* :func:`step_estimate` -> :class:`StepEstimate`: training step time, MFU, tokens and the
  breakdown, from per-kernel efficiencies (:class:`KernelEfficiency` tables ``H100_SXM``,
  ``A100_SXM``, ``A100_SXM_MODERN``);
* :func:`gpu_clock_fraction_at_power_cap`: clock under a power cap;
* estimate files and ``twin estimate``: :mod:`twin.compute.estimate_file`,
  :mod:`twin.cli.estimate`.
"""

from twin.compute.collectives import (
    OPS,
    TRANSPORTS,
    bus_factor,
    collective_bandwidths_gb_s,
    collective_time_s,
    group_collective_time_s,
    transport_efficiency,
)
from twin.compute.power_cap import gpu_clock_fraction_at_power_cap
from twin.compute.step import (
    A100_SXM,
    A100_SXM_MODERN,
    DEPLOYMENT_STEP_FACTOR,
    H100_SXM,
    KERNEL_EFFICIENCY,
    KernelEfficiency,
    StepEstimate,
    model_flops_per_sequence,
    parameter_count,
    step_estimate,
)

__all__ = [
    "A100_SXM",
    "A100_SXM_MODERN",
    "DEPLOYMENT_STEP_FACTOR",
    "H100_SXM",
    "KERNEL_EFFICIENCY",
    "OPS",
    "TRANSPORTS",
    "KernelEfficiency",
    "StepEstimate",
    "bus_factor",
    "collective_bandwidths_gb_s",
    "collective_time_s",
    "gpu_clock_fraction_at_power_cap",
    "group_collective_time_s",
    "model_flops_per_sequence",
    "parameter_count",
    "step_estimate",
    "transport_efficiency",
]
