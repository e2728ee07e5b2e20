"""Reliability: failure classes and rates, cluster failure sampling, repair and
detection times, blast radius of failures, checkpoint intervals and goodput, spares and
repair-crew logistics.

Pure functions and small samplers; the simpy engine (twin.sim) calls them.
SI seconds throughout: every time, age, delay and duration is in seconds (``_s``) and
every rate is per second (``_per_s``, or ``_per_node_s`` per node). The catalog keeps
its published units (interruption counts over days, repair medians and detection delays
in hours); they are converted once, where ``classes`` and ``repair`` read them.

Semantics the engine follows
- Rates: ``twin/catalog/failures.yaml``, per node-second, from Llama 3 Table 5 (419
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
- Planned maintenance (announced; ``sample_planned_maintenance_times_s``): the job
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
    DAY_S,
    HOUR_S,
    FailureClass,
    basis_node_s,
    class_index,
    load_failure_catalog,
    load_failure_classes,
    planned_maintenance_rate_per_s,
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
    class_rates_per_node_s,
    interrupting_mask,
    job_mtbf_s,
    mean_detection_delay_of_interruptions_s,
    node_failure_rates_per_s,
    sample_weibull_failure_age_s,
    thermal_mask,
    weibull_cumulative_hazard,
    weibull_infant_hazard_per_s,
    weibull_mean_hazard_per_s,
    weibull_scale_s_for_expected_failures,
)
from twin.reliability.logistics import (
    erlang_c_wait_probability,
    expected_backorders,
    hot_spare_shortfall_probability,
    mean_repair_wait_s,
    part_demand_rates_per_s,
    spares_fill_rate,
    stock_for_fill_rate,
)
from twin.reliability.maintenance import (
    interruption_lost_work_s,
    sample_planned_maintenance_times_s,
)
from twin.reliability.repair import (
    mean_detection_delay_s,
    mean_repair_duration_s,
    sample_detection_delay_s,
    sample_repair_duration_s,
)
from twin.reliability.sampling import (
    ClusterFailureSampler,
    sample_failure_class,
    sample_next_failure,
    sample_unit_outages,
)

__all__ = [
    "DAY_S",
    "HOUR_S",
    "sample_unit_outages",
    "PSU_NODE_DOWN",
    "PSU_OK",
    "PSU_POWER_BRAKE",
    "ClusterFailureSampler",
    "FailureClass",
    "FailureEffect",
    "arrhenius_acceleration_factor",
    "basis_node_s",
    "burn_in_rate_multiplier",
    "class_index",
    "class_rates_per_node_s",
    "daly_interval_s",
    "erlang_c_wait_probability",
    "expected_backorders",
    "expected_goodput_fraction",
    "failure_effect",
    "hot_spare_shortfall_probability",
    "interrupting_mask",
    "interruption_lost_work_s",
    "job_goodput_fraction",
    "job_mtbf_s",
    "last_clean_checkpoint_index",
    "load_failure_catalog",
    "load_failure_classes",
    "mean_detection_delay_s",
    "mean_detection_delay_of_interruptions_s",
    "mean_repair_duration_s",
    "mean_repair_wait_s",
    "node_failure_rates_per_s",
    "optimal_interval_s",
    "part_demand_rates_per_s",
    "planned_maintenance_rate_per_s",
    "psu_failure_effect",
    "rail_su_affected_nodes",
    "sample_detection_delay_s",
    "sample_failure_class",
    "sample_next_failure",
    "sample_planned_maintenance_times_s",
    "sample_repair_duration_s",
    "sample_weibull_failure_age_s",
    "scale_class_rates",
    "sdc_lost_work_s",
    "spares_fill_rate",
    "stock_for_fill_rate",
    "thermal_mask",
    "weibull_cumulative_hazard",
    "weibull_infant_hazard_per_s",
    "weibull_mean_hazard_per_s",
    "weibull_scale_s_for_expected_failures",
    "young_interval_s",
]
