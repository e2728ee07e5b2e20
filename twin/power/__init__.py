"""Power physics of the twin: pure, vectorised functions (node, PSU, UPS, breakers, PUE)."""

from twin.power.node import (
    gpu_clock_fraction_at_power,
    gpu_power_brake_clock_fraction,
    gpu_power_cap_for_node_budget_w,
    gpu_power_w,
    node_airflow_m3_s,
    node_dc_power_w,
    node_fan_power_w,
    node_fan_speed_fraction,
    node_power_w,
    node_worst_case_w,
    parse_psu_redundancy,
    psu_capacity_w,
    psu_efficiency,
)

__all__ = [
    "gpu_clock_fraction_at_power",
    "gpu_power_brake_clock_fraction",
    "gpu_power_cap_for_node_budget_w",
    "gpu_power_w",
    "node_airflow_m3_s",
    "node_dc_power_w",
    "node_fan_power_w",
    "node_fan_speed_fraction",
    "node_power_w",
    "node_worst_case_w",
    "parse_psu_redundancy",
    "psu_capacity_w",
    "psu_efficiency",
]
