"""Reliability: failure classes and rates, cluster failure sampling, repair and
detection times, blast radius of failures, checkpoint intervals and goodput, spares and
repair-crew logistics.

Pure functions and small samplers; the simpy engine (twin.sim) calls them.
Times in hours (``_h``) for failures and repairs, seconds (``_s``) for checkpointing.

Semantics the engine follows
- Rates: ``twin/catalog/failures.yaml``, per node-hour, from Llama 3 Table 5 (419
  unexpected interruptions on 2,048 nodes in 54 days). They count while a node is
  installed and up; events landing on a down node are ignored (thinning).
- Scope: ``node`` takes the node down; ``rail_su`` (leaf switch) degrades every node of
  the scalable unit (one rail lost, ``rail_su_affected_nodes``) until the switch is
  replaced; ``job`` crashes the job on the node only; ``none`` stops nothing.
- Repair: ``reimage`` (xCAT stateless boot, minutes, no crew), ``hardware`` (a
  technician and, if ``part`` is set, a spare), ``warranty`` (vendor, days), ``none``.
- Detection: ``immediate``, ``health_check`` (uniform in the check interval),
  ``timeout`` (collective watchdog), ``silent`` (silent data corruption: the job rolls
  back to the last checkpoint completed before the corruption,
  ``last_clean_checkpoint_index``).
- Planned maintenance (announced; ``sample_planned_maintenance_times_h``): the job
  checkpoints at the announcement and loses no work; the ``host_maintenance`` class is
  the unplanned kind and loses the work since the last checkpoint.
- Thermal: classes with ``thermal`` set scale with the node's Arrhenius factor.
- Burn-in: Weibull infant hazard (shape < 1) added through ``burn_in_rate_multiplier``.
"""

from twin.reliability.checkpoint import (
    daly_interval_s,
    expected_goodput_fraction,
    job_goodput_fraction,
    optimal_interval_s,
    young_interval_s,
)
from twin.reliability.classes import (
    FailureClass,
    basis_node_hours,
    class_index,
    load_failure_catalog,
    load_failure_classes,
    planned_maintenance_rate_per_h,
    scale_class_rates,
)
from twin.reliability.effects import (
    PSU_NODE_DOWN,
    PSU_OK,
    PSU_POWER_BRAKE,
    FailureEffect,
    failure_effect,
    last_clean_checkpoint_index,
    psu_failure_effect,
    rail_su_affected_nodes,
    sdc_lost_work_s,
)
from twin.reliability.hazard import (
    arrhenius_acceleration_factor,
    burn_in_rate_multiplier,
    class_rates_per_node_h,
    interrupting_mask,
    job_mtbf_h,
    mean_detection_delay_of_interruptions_h,
    node_failure_rates_per_h,
    sample_weibull_failure_age_h,
    thermal_mask,
    weibull_cumulative_hazard,
    weibull_infant_hazard_per_h,
    weibull_mean_hazard_per_h,
    weibull_scale_h_for_expected_failures,
)
from twin.reliability.logistics import (
    erlang_c_wait_probability,
    expected_backorders,
    hot_spare_shortfall_probability,
    mean_repair_wait_h,
    part_demand_rates_per_h,
    spares_fill_rate,
    stock_for_fill_rate,
)
from twin.reliability.maintenance import (
    interruption_lost_work_s,
    sample_planned_maintenance_times_h,
)
from twin.reliability.repair import (
    mean_detection_delay_h,
    mean_repair_duration_h,
    sample_detection_delay_h,
    sample_repair_duration_h,
)
from twin.reliability.sampling import (
    ClusterFailureSampler,
    sample_failure_class,
    sample_next_failure,
    sample_unit_outages,
)

__all__ = [
    "sample_unit_outages",
    "PSU_NODE_DOWN",
    "PSU_OK",
    "PSU_POWER_BRAKE",
    "ClusterFailureSampler",
    "FailureClass",
    "FailureEffect",
    "arrhenius_acceleration_factor",
    "basis_node_hours",
    "burn_in_rate_multiplier",
    "class_index",
    "class_rates_per_node_h",
    "daly_interval_s",
    "erlang_c_wait_probability",
    "expected_backorders",
    "expected_goodput_fraction",
    "failure_effect",
    "hot_spare_shortfall_probability",
    "interrupting_mask",
    "interruption_lost_work_s",
    "job_goodput_fraction",
    "job_mtbf_h",
    "last_clean_checkpoint_index",
    "load_failure_catalog",
    "load_failure_classes",
    "mean_detection_delay_h",
    "mean_detection_delay_of_interruptions_h",
    "mean_repair_duration_h",
    "mean_repair_wait_h",
    "node_failure_rates_per_h",
    "optimal_interval_s",
    "part_demand_rates_per_h",
    "planned_maintenance_rate_per_h",
    "psu_failure_effect",
    "rail_su_affected_nodes",
    "sample_detection_delay_h",
    "sample_failure_class",
    "sample_next_failure",
    "sample_planned_maintenance_times_h",
    "sample_repair_duration_h",
    "sample_weibull_failure_age_h",
    "scale_class_rates",
    "sdc_lost_work_s",
    "spares_fill_rate",
    "stock_for_fill_rate",
    "thermal_mask",
    "weibull_cumulative_hazard",
    "weibull_infant_hazard_per_h",
    "weibull_mean_hazard_per_h",
    "weibull_scale_h_for_expected_failures",
    "young_interval_s",
]
