"""The output table: every recorded variable and every KPI of a run, declared once.

Each :class:`Output` names a variable of ``results.nc`` with its dims, dtype, unit and
long name, and the recorder key it comes from; each :class:`Kpi` names a figure of
``kpis.json`` with its unit, long name and the reducer that computes it from a
:class:`RunRecord` (what the recorder hands over at the end of a run). The recorder
allocates its arrays from this table, :mod:`twin.results` builds the Dataset and the KPIs
from it, and reports, sweeps and plots take their labels from :func:`label`.

Adding an output: declare it here (and, for a time series, write it from a component's
``record`` or ``finish``). Nothing else needs to know its unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twin.power.cooling_plant import economizer_hours
from twin.thermal.properties import ASHRAE_RECOMMENDED_MAX_C, ASHRAE_RECOMMENDED_MIN_C
from twin.workload.run_kpis import workload_kpi_specs

H = 3600.0
DAY = 86400.0


@dataclass(frozen=True)
class Output:
    """One variable of ``results.nc``: ``dims`` among time, rack, rpp, feed, job."""

    name: str
    dims: tuple[str, ...]
    dtype: str
    units: str
    long_name: str
    recorded: bool = True          # written by the sampler or a component (else derived)
    #: which ``outputs.rack_series`` levels keep it in results.nc: "always"; "full" (a series
    #: per rack or RPP at every sample); "reduced" (the run aggregates that replace them
    #: below "full"); "hall" (per-hall series, level "hall" only)
    keep: str = "always"

    def kept(self, level: str) -> bool:
        """True if results.nc holds this output at ``outputs.rack_series == level``."""
        if self.keep == "always":
            return True
        if self.keep == "full":
            return level == "full"
        if self.keep == "reduced":
            return level != "full"
        return level == "hall"


@dataclass(frozen=True)
class Kpi:
    """One figure of ``kpis.json``. ``reducer(run) -> float``; None for figures another
    module computes (``group="study"``: :func:`twin.studies.metrics.study_metrics`)."""

    name: str
    units: str
    long_name: str
    reducer: Callable[[RunRecord], float] | None = None
    group: str = "run"


@dataclass
class JobRecord:
    """Per-job totals at the end of a run (seconds and tokens)."""

    name: str
    tokens: float
    gpu_s_allocated: float
    gpu_s_useful_total: float
    gpu_s_lost: float
    wall_s_useful_total: float
    checkpoint_s: float
    first_start_s: float
    end_s: float
    interruptions: int
    # the workload's view (twin.workload): class ("fixed" for workload.jobs), submit time [s],
    # final state (completed/failed/cancelled; running or pending at the end), GPUs held
    job_class: str = ""
    submit_s: float = 0.0
    state: str = ""
    gpus: int = 0
    queue: str = ""
    user: str = ""
    # GPU-seconds of the nodes held beyond the job's size (hot spares, idle), and of its working
    # nodes not training (checkpoint writes, (re)starts, detection windows): gpu_s_allocated =
    # gpu_s_useful_total + gpu_s_lost + gpu_s_overhead + gpu_s_spare
    gpu_s_spare: float = 0.0
    gpu_s_overhead: float = 0.0


@dataclass
class RunRecord:
    """What the recorder hands to :mod:`twin.results`: series, jobs, events, counters.

    Below ``outputs.rack_series: full`` the per-rack and per-RPP series are gone and
    ``rack_agg`` holds their run aggregates (:class:`twin.sim.recorder.RackAggregates`); the
    KPI reducers read whichever is there and give the same figures.
    """

    dt_s: float
    horizon_s: float
    series: dict[str, np.ndarray]
    jobs: list[JobRecord]
    events: list[tuple[float, str, str, str]]
    repair_times_s: list[float] = field(default_factory=list)
    open_repair_ages_s: list[float] = field(default_factory=list)   # repairs unfinished at the end
    throttled_node_s: float = 0.0
    peak_swing_w: dict[str, float] = field(default_factory=dict)
    event_counts: dict[str, int] = field(default_factory=dict)
    rack_agg: Any = None

    def energy_mwh(self, name: str) -> float:
        """Time integral of a power series [W] as MWh (sample-and-hold)."""
        return float(self.series[name].sum() * self.dt_s / H / 1e6)

    def powered_inlet_c(self) -> np.ndarray:
        """Inlet temperatures of powered racks, NaN elsewhere [degC (T, R)]."""
        from twin.sim.state import RackState
        return np.where(RackState.powered(self.series["rack_state"]), self.series["rack_inlet_c"], np.nan)



_T, _R = ("time",), ("time", "rack")
OUTPUTS: tuple[Output, ...] = (
    Output("rack_power_w", _R, "float32", "W", "rack IT power at the PDU", keep="full"),
    Output("rack_inlet_c", _R, "float32", "degC", "rack inlet air temperature", keep="full"),
    Output("rack_gpu_temp_max_c", _R, "float32", "degC", "hottest GPU of the rack (NaN when off)", keep="full"),
    Output("rack_state", _R, "int8", "1", "-1 not delivered, 0 delivered off, 1 burn-in, 2 in service, "
                                          "3 faulted (breaker tripped, feed lost or shut down on a hot inlet)", keep="full"),
    Output("rack_ashrae_class", _R, "int8", "1", "ASHRAE TC 9.9 class of the inlet: -1 off, 0 recommended, "
                                                 "1 A1, 2 A2, 3 A3, 4 A4, 5 beyond A4", recorded=False, keep="full"),
    Output("rack_hours_outside_recommended", ("rack",), "float64", "h",
           "hours the powered rack's inlet was outside ASHRAE recommended", recorded=False),
    Output("rpp_load_fraction", ("time", "rpp"), "float32", "1", "RPP load / continuous breaker limit",
           keep="full"),
    Output("rpp_power_w", ("time", "rpp"), "float64", "W", "power out of each RPP breaker", keep="full"),
    Output("feed_load_fraction", ("time", "feed"), "float32", "1", "feed load (feed_power_w) / feed capacity"),
    Output("feed_power_w", ("time", "feed"), "float64", "W", "power drawn from each utility feed with the feeds "
           "live at the sample: its IT path (IT + RPP, UPS, transformer losses) and, where "
           "site.power.chain.mechanical puts the plant on the switchboards, its share of cooling and house loads"),
    Output("ups_output_w", ("time", "feed"), "float64", "W", "load on the UPS (or its bypass) of each feed path"),
    Output("ups_load_fraction", ("time", "feed"), "float64", "1", "UPS output / rating"),
    Output("facility_it_power_w", _T, "float64", "W", "facility IT power"),
    Output("facility_total_power_w", _T, "float64", "W", "utility power: IT + losses + cooling"),
    Output("ups_loss_w", _T, "float64", "W", "UPS conversion loss"),
    Output("distribution_loss_w", _T, "float64", "W", "losses between utility and PDUs other than the UPS"),
    Output("rpp_loss_w", _T, "float64", "W", "RPP and cabling losses"),
    Output("feed_loss_w", _T, "float64", "W", "switchboard and transformer losses"),
    Output("cooling_power_w", _T, "float64", "W", "chiller, CRAH fan and pump power"),
    Output("cooling_unit_load_w", ("time", "cooling_unit"), "float64", "W",
           "heat removed by each cooling unit (halls in order)"),
    Output("cooling_capacity_margin_w", _T, "float64", "W", "lowest over the halls of what the hall's running "
           "cooling units together (and its share of the chilled-water plant) can remove minus its rack heat "
           "(negative: heat the hall cannot remove; the room heats up)"),
    Output("cooling_unit_margin_w", _T, "float64", "W", "lowest spare capacity of a running cooling unit at its "
           "set point (negative: that unit saturates and supplies warmer air; its neighbours take the rest)"),
    Output("cooling_fan_power_w", _T, "float64", "W", "CRAH fan power on the affinity laws (physical cooling "
           "model; 0 in the legacy model, whose fans are a share of the heat)"),
    Output("economizer_fraction", _T, "float64", "1", "share of the heat the water-side economizer removes"),
    # the forecast made at each cooling-unit fault (twin.sim.hall_thermal.FaultForecast, the
    # same numbers as the cooling_fault event's text); units that fail at one instant share
    # the forecast made with all of them off
    Output("cooling_fault_minutes_to_a1", ("cooling_unit",), "float64", "min",
           "shortest forecast at the unit's faults: minutes until the first rack inlet reaches the ASHRAE "
           "A1 allowable limit (32 C); NaN: not within the fault (at most 2 h) or no fault"),
    Output("cooling_fault_minutes_to_gpu_slowdown", ("cooling_unit",), "float64", "min",
           "shortest forecast at the unit's faults: minutes until the first GPU reaches its slowdown "
           "temperature; NaN: not within the fault (at most 2 h) or no fault"),
    Output("cooling_fault_minutes_to_rack_shutdown", ("cooling_unit",), "float64", "min",
           "shortest forecast at the unit's faults: minutes until the first rack inlet reaches the servers' "
           "protection (server_inlet_shutdown_c) and the rack shuts down; NaN: not within the fault or no fault"),
    Output("rack_inlet_peak_c", _R, "float32", "degC", "hottest inlet since the previous sample "
           "(event-driven between samples in the physical cooling model)", keep="full"),
    Output("rack_gpu_temp_peak_c", _R, "float32", "degC", "hottest GPU since the previous sample (NaN when off)",
           keep="full"),
    Output("power_available_w", _T, "float64", "W", "IT power of the staged plan"),
    Output("outdoor_temp_c", _T, "float64", "degC", "outdoor dry-bulb temperature"),
    Output("gpus_installed", _T, "int32", "GPU", "GPUs delivered"),
    Output("gpus_powered", _T, "int32", "GPU", "GPUs with power"),
    Output("gpus_healthy", _T, "int32", "GPU", "GPUs powered, burned in, healthy"),
    Output("gpus_busy", _T, "int32", "GPU", "GPUs allocated to jobs"),
    Output("nodes_failed", _T, "int32", "node", "delivered nodes failed or in repair"),
    Output("nodes_in_repair", _T, "int32", "node", "nodes whose repair is under way"),
    Output("spares_in_stock", _T, "float64", "part", "spare parts on the shelf (all pools)"),
    Output("throttle_fraction", _T, "float64", "1", "share of powered, healthy nodes running below full GPU clock"),
    Output("job_tokens", ("time", "job"), "float64", "tokens", "job progress (incl. not checkpointed)"),
    Output("job_tokens_per_s", ("time", "job"), "float64", "tokens/s", "job training rate"),
    Output("job_gpus", ("time", "job"), "int32", "GPU", "GPUs allocated to the job"),
    Output("job_goodput_fraction", ("job",), "float64", "1", "GPU-time whose work survived / GPU-time of the "
           "job's working nodes (its hot spares apart: job_spare_gpu_hours)", recorded=False),
    Output("job_spare_gpu_hours", ("job",), "float64", "GPU-h", "GPU-time of the job's hot spare nodes, held "
           "idle beyond its size", recorded=False),
    Output("job_interruptions", ("job",), "int64", "count", "interruptions of the job", recorded=False),
    Output("jobs_queued", _T, "int32", "count", "jobs waiting in the scheduler's queue"),
    Output("job_class", ("job",), "<U12", "1", "job class (pretrain, finetune, ablation, evaluation, "
                                             "debug; fixed for workload.jobs)"),
    Output("job_state", ("job",), "<U10", "1", "state at the end: completed, failed, cancelled, running, pending"),
    Output("job_submit_s", ("job",), "float64", "s", "submit time since the start"),
    Output("job_start_s", ("job",), "float64", "s", "first start since the start (NaN: never started)"),
    Output("job_end_s", ("job",), "float64", "s", "end since the start (NaN: not ended)"),
    Output("job_gpus_requested", ("job",), "int32", "GPU", "GPUs the job asks for (whole nodes)"),
    Output("branch_load_fraction_max", _T, "float64", "1", "highest rack-PDU cord load / branch breaker "
           "continuous limit (NaN without site.power.chain.branch)"),
    Output("failover_branch_load_fraction_max", _T, "float64", "1",
           "highest cord load / continuous limit if each rack lost one cord (A/B failover; "
           "during a feed loss, from the cords still live)"),
    Output("job_meter_ramp_kw_per_s", ("job",), "float64", "kW/s",
           "largest 1-s change of utility power when the job's nodes move together, with the site's "
           "battery and GPU power floor (NaN: never trained)"),
    Output("job_meter_ramp_unmitigated_kw_per_s", ("job",), "float64", "kW/s",
           "the same without battery or GPU power floor"),
    Output("job_swing_mitigation_kwh_per_h", ("job",), "float64", "kWh/h",
           "energy the battery loses and the GPU power floor burns per hour of the job's training"),
    # below outputs.rack_series: full, run aggregates replace the per-rack and per-RPP series
    # (twin.sim.recorder.RackAggregates), and level "hall" keeps one series per hall
    Output("rack_inlet_max_c", ("rack",), "float32", "degC", "hottest sampled inlet of the rack while powered "
           "(NaN: never powered)", recorded=False, keep="reduced"),
    Output("rack_power_max_w", ("rack",), "float32", "W", "highest sampled rack IT power", recorded=False,
           keep="reduced"),
    Output("rack_energy_mwh", ("rack",), "float64", "MWh", "rack IT energy over the run", recorded=False,
           keep="reduced"),
    Output("rack_power_at_peak_w", ("rack",), "float32", "W", "rack IT power at the sample of peak facility "
           "IT power (the thermal field's input)", recorded=False, keep="reduced"),
    Output("rpp_load_fraction_max", ("rpp",), "float32", "1", "highest RPP load / continuous breaker limit",
           recorded=False, keep="reduced"),
    Output("hall_power_w", ("time", "hall"), "float64", "W", "IT power of each hall's racks", recorded=False,
           keep="hall"),
    Output("hall_inlet_max_c", ("time", "hall"), "float32", "degC", "hottest inlet of a powered rack of the hall",
           recorded=False, keep="hall"),
)

#: series a sweep can keep per run besides the recorded time series (twin.sweep)
DERIVED_SERIES: tuple[Output, ...] = (
    Output("tokens_cumulative", _T, "float64", "tokens",
           "training tokens done by all jobs (incl. not yet checkpointed)", recorded=False),
    Output("inlet_max_c", _T, "float64", "degC", "hottest inlet of a powered rack", recorded=False),
    Output("inlet_mean_c", _T, "float64", "degC", "mean inlet of powered racks", recorded=False),
)


# ------------------------------------------------------------------------- KPI reducers
def _tokens_total(r: RunRecord) -> float:
    return float(sum(j.tokens for j in r.jobs))


def _tokens_per_day_full_capacity(r: RunRecord) -> float:
    """Token rate while every delivered GPU was powered (the plan's full capacity)."""
    s = r.series
    tok = s["job_tokens"].sum(axis=1)
    inst = s["gpus_installed"]
    full = (s["gpus_powered"] == inst.max()) & (inst > 0) & (inst == inst.max())
    if full.sum() < 2:
        return math.nan
    i0, i1 = np.flatnonzero(full)[[0, -1]]
    span_d = (i1 - i0) * r.dt_s / DAY
    return float((tok[i1] - tok[i0]) / span_d) if span_d > 0 else math.nan


def _job_wall_s(r: RunRecord) -> float:
    return sum(((j.end_s if not math.isnan(j.end_s) else r.horizon_s) - j.first_start_s)
               for j in r.jobs if not math.isnan(j.first_start_s))


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else math.nan


def _gpu_hours(name: str) -> Callable[[RunRecord], float]:
    return lambda r: float(r.series[name].sum() * r.dt_s / H)


def goodput_fraction(useful_gpu_s: float, allocated_gpu_s: float, spare_gpu_s: float) -> float:
    """Goodput [-]: GPU-time whose work survived / GPU-time of the working nodes, i.e.
    useful / (allocated - hot spares). The GPU-time held as idle hot spares is a separate
    figure (``spare_gpu_hours``): a spare does no work, so none of it can be lost. NaN when
    no working-node time was allocated. All arguments in GPU-s."""
    return _ratio(useful_gpu_s, allocated_gpu_s - spare_gpu_s)


def _goodput(r: RunRecord) -> float:
    return goodput_fraction(sum(j.gpu_s_useful_total for j in r.jobs), sum(j.gpu_s_allocated for j in r.jobs),
                            sum(j.gpu_s_spare for j in r.jobs))


def _interruptions(r: RunRecord) -> int:
    return int(sum(j.interruptions for j in r.jobs))


def _mtbf_job_h(r: RunRecord) -> float:
    n = _interruptions(r)
    return float(_job_wall_s(r) / H / n) if n else math.nan


def _mttr_incl_open_h(r: RunRecord) -> float:
    times = list(r.repair_times_s) + list(r.open_repair_ages_s)
    return float(np.mean(times) / H) if times else math.nan


def _pue(r: RunRecord) -> float:
    e_it = r.energy_mwh("facility_it_power_w")
    return r.energy_mwh("facility_total_power_w") / e_it if e_it > 0 else math.nan


def _peak_ramp(r: RunRecord) -> float:
    tot = r.series["facility_total_power_w"]
    return float(np.abs(np.diff(tot)).max() / 1e3 / r.dt_s) if len(tot) > 1 else 0.0


def _nanmax(name: str) -> Callable[[RunRecord], float]:
    def red(r: RunRecord) -> float:
        x = np.asarray(r.series[name], dtype=float)
        return float(np.nanmax(x)) if np.isfinite(x).any() else math.nan
    return red


def _swing_cost(r: RunRecord) -> float:
    ramp = np.asarray(r.series["job_meter_ramp_unmitigated_kw_per_s"], dtype=float)
    if not np.isfinite(ramp).any():
        return math.nan
    return float(r.series["job_swing_mitigation_kwh_per_h"][int(np.nanargmax(ramp))])


def _max_inlet(r: RunRecord) -> float:
    inlet = r.powered_inlet_c() if r.rack_agg is None else r.rack_agg.inlet_max_c
    return float(np.nanmax(inlet)) if np.isfinite(inlet).any() else math.nan


def _rack_hours_where(cond: Callable[[np.ndarray], np.ndarray], counted: str) -> Callable[[RunRecord], float]:
    """Rack-hours of powered racks whose inlet meets ``cond``; below full rack series, the
    count the recorder kept under ``counted`` (:class:`twin.sim.recorder.RackAggregates`)."""
    def red(r: RunRecord) -> float:
        n = cond(r.powered_inlet_c()).sum() if r.rack_agg is None else getattr(r.rack_agg, counted).sum()
        return float(n * r.dt_s / H)
    return red


def _rci_hi(r: RunRecord) -> float:
    """RCI_HI [%] over the racks that were ever powered, each at its hottest sampled inlet."""
    from twin.thermal import rack_cooling_index_hi

    if r.rack_agg is not None:
        hottest = np.asarray(r.rack_agg.inlet_max_c, float)
        hottest = hottest[np.isfinite(hottest)]
        return float(rack_cooling_index_hi(hottest)) if hottest.size else math.nan
    inlet = r.powered_inlet_c()
    seen = np.isfinite(inlet).any(axis=0)
    if not seen.any():
        return math.nan
    return float(rack_cooling_index_hi(np.nanmax(inlet[:, seen], axis=0)))


def _count(kind: str) -> Callable[[RunRecord], int]:
    return lambda r: int(r.event_counts.get(kind, 0))


_HOT = f"{ASHRAE_RECOMMENDED_MAX_C:g} C"
#: Share of the run's peak IT power above which a sample counts as "at load" for
#: ``pue_peak_at_load`` [-]: a design-day PUE is read at the design IT load, not in the low-load
#: hours of a ramp, where fixed overheads (CRAH fans, losses) divide a small IT power.
PUE_AT_LOAD_FRACTION = 0.9


def pue_peak(it_w, total_w, at_load_fraction: float = 0.0) -> float:
    """Highest sampled PUE [-], facility power / IT power, over the samples whose IT power is
    positive and at least ``at_load_fraction`` of the run's peak IT power (0: every sample with
    IT above zero); NaN without such a sample. it_w, total_w [W (T,)]."""
    it = np.asarray(it_w, float)
    tot = np.asarray(total_w, float)
    ok = (it > 0) & (it >= at_load_fraction * (np.max(it) if it.size else 0.0))
    return float(np.max(tot[ok] / it[ok])) if ok.any() else math.nan


def _pue_peak(r: RunRecord) -> float:
    return pue_peak(r.series["facility_it_power_w"], r.series["facility_total_power_w"])


def _pue_peak_at_load(r: RunRecord) -> float:
    return pue_peak(r.series["facility_it_power_w"], r.series["facility_total_power_w"], PUE_AT_LOAD_FRACTION)


def _lowest_kw(name: str):
    def reduce(r: RunRecord) -> float:
        m = np.asarray(r.series[name], float)
        return float(np.nanmin(m) / 1e3) if np.isfinite(m).any() else math.nan
    return reduce


def _hours_negative(name: str):
    def reduce(r: RunRecord) -> float:
        return float(np.sum(np.asarray(r.series[name], float) < 0) * r.dt_s / H)
    return reduce


def _shortest(name: str) -> Callable[[RunRecord], float]:
    """The smallest finite value of a per-unit forecast output, NaN when there is none."""
    def reduce(r: RunRecord) -> float:
        x = np.asarray(r.series[name], float)
        x = x[np.isfinite(x)]
        return float(x.min()) if x.size else math.nan
    return reduce


def _max_inlet_peak(r: RunRecord) -> float:
    if r.rack_agg is not None:
        return r.rack_agg.inlet_peak_max_c
    x = np.asarray(r.series["rack_inlet_peak_c"], float)
    x = x[np.isfinite(x)]
    return float(x.max()) if x.size else math.nan


KPIS: tuple[Kpi, ...] = (
    Kpi("tokens_total", "tokens", "training tokens that survived to the end of the run", _tokens_total),
    Kpi("tokens_per_day_mean", "tokens/day", "surviving training tokens per simulated day (tokens_total / run length)",
        lambda r: _tokens_total(r) / (r.horizon_s / DAY)),
    Kpi("tokens_per_day_full_capacity", "tokens/day", "token rate while every delivered GPU was powered",
        _tokens_per_day_full_capacity),
    Kpi("gpu_hours_installed", "GPU-h", "GPUs delivered x time", _gpu_hours("gpus_installed")),
    Kpi("gpu_hours_healthy", "GPU-h", "GPUs powered, burned in and healthy x time", _gpu_hours("gpus_healthy")),
    Kpi("gpu_hours_busy", "GPU-h", "GPUs allocated to jobs x time", _gpu_hours("gpus_busy")),
    Kpi("goodput_fraction", "1", "GPU-time whose work survived / GPU-time of the jobs' working nodes (allocated "
        "minus hot spares); the rest is lost_gpu_hours and checkpoint writes, restarts and detection", _goodput),
    Kpi("spare_gpu_hours", "GPU-h", "GPU-time of the jobs' hot spare nodes, held idle beyond each job's size "
        "(apart from goodput_fraction)", lambda r: float(sum(j.gpu_s_spare for j in r.jobs) / H)),
    Kpi("interruptions", "count", "job interruptions (failures, grid drops, feed losses, trips, shutdowns, "
                                  "maintenance)", _interruptions),
    Kpi("lost_gpu_hours", "GPU-h", "GPU-time of work lost since the last checkpoint",
        lambda r: float(sum(j.gpu_s_lost for j in r.jobs) / H)),
    Kpi("checkpoint_overhead_fraction", "1", "wall time writing checkpoints / job wall time",
        lambda r: _ratio(sum(j.checkpoint_s for j in r.jobs), _job_wall_s(r))),
    Kpi("effective_training_time_fraction", "1", "job wall time making progress that survived / job wall time",
        lambda r: _ratio(sum(j.wall_s_useful_total for j in r.jobs), _job_wall_s(r))),
    Kpi("mtbf_job_h", "h", "job wall time / job interruptions", _mtbf_job_h),
    Kpi("mttr_h", "h", "mean time from a failure to the node back in service (completed repairs)",
        lambda r: float(np.mean(r.repair_times_s) / H) if r.repair_times_s else math.nan),
    Kpi("repairs_open_at_end", "count", "repairs not finished at the end of the run (waiting for a spare, "
                                        "a technician, or under way)", lambda r: len(r.open_repair_ages_s)),
    Kpi("mttr_incl_open_h", "h", "mean time to repair counting unfinished repairs at their age at the end "
                                 "(a lower bound when repairs are still open)", _mttr_incl_open_h),
    Kpi("failures", "count", "component failures", _count("failure")),
    *(Kpi(*spec) for spec in workload_kpi_specs()),
    Kpi("energy_it_mwh", "MWh", "IT energy at the rack PDUs", lambda r: r.energy_mwh("facility_it_power_w")),
    Kpi("energy_facility_mwh", "MWh", "utility energy: IT + UPS/distribution losses + cooling",
        lambda r: r.energy_mwh("facility_total_power_w")),
    Kpi("ups_loss_mwh", "MWh", "UPS conversion loss", lambda r: r.energy_mwh("ups_loss_w")),
    Kpi("pue_mean", "1", "utility energy / IT energy over the run (energy-weighted PUE)", _pue),
    Kpi("pue_peak", "1", "highest sampled PUE, facility / IT power, at any IT load above zero (in a ramp "
                         "the low-load hours read high)", _pue_peak),
    Kpi("pue_peak_at_load", "1", "highest sampled PUE over the samples at 90 % or more of the run's peak IT "
                                 "power (the design-day reading at design load)", _pue_peak_at_load),
    Kpi("economizer_hours", "h", "hours of free cooling with heat to remove: each sample with IT power above "
        "zero counts its interval x the economizer's share of the heat (a partial economizer counts by its share, "
        "at any IT load); samples with no IT load count nothing",
        lambda r: economizer_hours(r.series["economizer_fraction"], r.dt_s, it_power_w=r.series["facility_it_power_w"])),
    Kpi("cooling_capacity_margin_kw", "kW", "lowest hall margin over the run: what a hall's running cooling "
        "units together (and the chilled-water plant) can remove minus its heat (negative: the hall cannot "
        "remove its heat)", _lowest_kw("cooling_capacity_margin_w")),
    Kpi("hours_cooling_over_capacity", "h", "hours with heat beyond what a hall's running units together or "
        "the plant can remove (the room heats up)", _hours_negative("cooling_capacity_margin_w")),
    Kpi("cooling_unit_margin_kw", "kW", "lowest spare capacity of a running cooling unit over the run "
        "(negative: a unit saturated; information, its neighbours may take the rest)",
        _lowest_kw("cooling_unit_margin_w")),
    Kpi("hours_cooling_unit_saturated", "h", "hours with a running cooling unit beyond its capacity",
        _hours_negative("cooling_unit_margin_w")),
    Kpi("max_rack_inlet_peak_c", "degC", "hottest inlet between samples (event-driven in the physical "
        "cooling model), of any rack: one its inlet protection has shut down counts too, unlike "
        "max_rack_inlet_c", _max_inlet_peak),
    Kpi("cooling_fault_min_minutes_to_a1", "min", "shortest forecast over the run's cooling faults of the "
        "minutes until a rack inlet passes the ASHRAE A1 allowable limit (NaN: never)",
        _shortest("cooling_fault_minutes_to_a1")),
    Kpi("cooling_fault_min_minutes_to_gpu_slowdown", "min", "shortest forecast over the run's cooling faults of "
        "the minutes until a GPU reaches its slowdown temperature (NaN: never)",
        _shortest("cooling_fault_minutes_to_gpu_slowdown")),
    Kpi("cooling_fault_min_minutes_to_rack_shutdown", "min", "shortest forecast over the run's cooling faults of "
        "the minutes until a rack's inlet protection shuts it down (NaN: never)",
        _shortest("cooling_fault_minutes_to_rack_shutdown")),
    Kpi("peak_facility_power_kw", "kW", "highest sampled utility power",
        lambda r: float(r.series["facility_total_power_w"].max() / 1e3)),
    Kpi("peak_sample_ramp_kw_per_s", "kW/s", "largest facility power change between samples / sample step "
                                             "(diluted by the step; the meter sees peak_meter_ramp_kw_per_s)",
        _peak_ramp),
    Kpi("peak_meter_ramp_kw_per_s", "kW/s", "largest 1-s change of utility power of a job's synchronous "
                                            "swing, with the site's battery and GPU power floor",
        _nanmax("job_meter_ramp_kw_per_s")),
    Kpi("peak_meter_ramp_unmitigated_kw_per_s", "kW/s", "the same without battery or GPU power floor",
        _nanmax("job_meter_ramp_unmitigated_kw_per_s")),
    Kpi("swing_mitigation_kwh_per_h", "kWh/h", "battery loss and GPU-floor energy per hour of training of "
        "the job with the largest swing", _swing_cost),
    Kpi("peak_sync_swing_kw", "kW", "largest facility IT step when a job's nodes move together between "
                                    "training and an exposed all-reduce or a checkpoint",
        lambda r: float(max(r.peak_swing_w.values(), default=0.0) / 1e3)),
    Kpi("max_rpp_load_fraction", "1", "highest RPP load / continuous breaker limit",
        lambda r: float(r.series["rpp_load_fraction"].max() if r.rack_agg is None else r.rack_agg.rpp_lf_max.max())),
    Kpi("max_feed_load_fraction", "1", "highest feed load (IT path and its share of the cooling where the chain "
        "carries it on the feeds) / feed capacity",
        lambda r: float(r.series["feed_load_fraction"].max())),
    Kpi("max_branch_load_fraction", "1", "highest rack-PDU cord load / branch breaker continuous limit",
        _nanmax("branch_load_fraction_max")),
    Kpi("max_failover_branch_load_fraction", "1", "highest cord load / continuous limit with one cord of "
                                                  "each rack lost (> 1: A/B failover overloads)",
        _nanmax("failover_branch_load_fraction_max")),
    Kpi("max_rack_inlet_c", "degC", "hottest sampled inlet of a powered rack", _max_inlet),
    Kpi("hours_above_ashrae_recommended", "rack-h", f"rack-hours with inlet above {_HOT} (ASHRAE TC 9.9)",
        _rack_hours_where(lambda t: t > ASHRAE_RECOMMENDED_MAX_C, "n_above")),
    Kpi("hours_outside_ashrae_recommended", "rack-h",
        f"rack-hours with inlet outside {ASHRAE_RECOMMENDED_MIN_C:g}-{_HOT} (ASHRAE TC 9.9)",
        _rack_hours_where(lambda t: (t > ASHRAE_RECOMMENDED_MAX_C) | (t < ASHRAE_RECOMMENDED_MIN_C), "n_outside")),
    Kpi("throttled_node_hours", "node-h", "node-hours of GPUs running below full clock (thermal)",
        lambda r: float(r.throttled_node_s / H)),
    Kpi("rci_hi_percent", "%", f"Rack Cooling Index (high side, Herrlin 2005) of each powered rack's "
                               f"hottest inlet; 100 = none above {_HOT}, < 90 poor", _rci_hi),
    Kpi("breaker_trips", "count", "RPP and rack branch breaker trips", _count("breaker_trip")),
    Kpi("grid_drop_events", "count", "grid disturbances that dropped nodes", _count("grid_drop")),
    # figures added to every sweep run (twin.studies.metrics.study_metrics)
    Kpi("gpus_delivered", "GPU", "GPUs delivered by the end of the run", group="study"),
    Kpi("gpus_hosted", "GPU", "most GPUs powered at once", group="study"),
    Kpi("days_to_full_capacity", "days", "days from start until every delivered GPU was powered (NaN: never)",
        group="study"),
    Kpi("days_to_max_hosted", "days", "days from start until the most GPUs were first powered", group="study"),
    Kpi("days_power_limited", "days", "time during which delivered GPUs waited unpowered (power plan or limits)",
        group="study"),
    Kpi("upgrade_cost_usd", "USD", "sum of the site's upgrade options (site.economics.upgrades)", group="study"),
    Kpi("upgrade_lead_time_days", "days", "longest lead time of the site's upgrade options", group="study"),
    Kpi("energy_cost_usd", "USD", "utility energy x electricity price", group="study"),
    Kpi("co2_t", "t CO2", "utility energy x grid carbon intensity", group="study"),
    Kpi("energy_cost_usd_per_btok", "USD/1e9 tokens", "energy cost per billion surviving tokens", group="study"),
    Kpi("power_use_fraction", "1", "worst-case draw of all delivered racks / tightest power limit "
                                   "(facility or RPP)", group="study"),
    Kpi("cooling_use_fraction", "1", "worst-case heat of all delivered racks / installed cooling capacity",
        group="study"),
    Kpi("floor_use_fraction", "1", "racks delivered / rack positions on the floor", group="study"),
    Kpi("inlet_margin_c", "degC", f"{_HOT} (ASHRAE TC 9.9 recommended) minus the worst inlet of a powered rack",
        group="study"),
    # the cooling figures split at power events (twin.studies.metrics.power_event_figures): a
    # chiller restart after a power transfer is a transient of the plant, not a steady shortfall
    Kpi("chiller_restarts", "count", "power transfers or outages that stopped the chillers for their restart",
        group="study"),
    Kpi("power_event_peak_inlet_c", "degC", "hottest rack inlet within a chiller restart's transient "
                                            "(sub-sample peak, any rack; NaN without one)", group="study"),
    Kpi("power_event_racks_shut", "count", "racks shut down on their inlet protection within a chiller "
                                           "restart's transient (rack_thermal_shutdown events)", group="study"),
    Kpi("max_rack_inlet_steady_c", "degC", "hottest sampled inlet of a powered rack outside the chiller restarts",
        group="study"),
    Kpi("cooling_capacity_margin_steady_kw", "kW", "lowest hall cooling margin outside the chiller restarts",
        group="study"),
    Kpi("hours_cooling_over_capacity_steady", "h", "hours with a negative hall cooling margin outside the "
                                                   "chiller restarts", group="study"),
)

OUTPUT_BY_NAME: dict[str, Output] = {o.name: o for o in OUTPUTS + DERIVED_SERIES}
KPI_BY_NAME: dict[str, Kpi] = {k.name: k for k in KPIS}


def kpi_units(group: str = "run") -> dict[str, tuple[str, str]]:
    """``{name: (unit, long name)}`` of the KPIs of one group ("run" or "study")."""
    return {k.name: (k.units, k.long_name) for k in KPIS if k.group == group}


def compute_kpis(run: RunRecord) -> dict[str, Any]:
    """Every run KPI of :data:`KPIS` from a finished run's record."""
    return {k.name: k.reducer(run) for k in KPIS if k.reducer is not None}


def units(name: str) -> str:
    """Unit of an output variable or KPI ('' if unknown; '1' means dimensionless)."""
    if name in OUTPUT_BY_NAME:
        return OUTPUT_BY_NAME[name].units
    return KPI_BY_NAME[name].units if name in KPI_BY_NAME else ""


def long_name(name: str) -> str:
    """Long name of an output variable or KPI (the name itself if unknown)."""
    if name in OUTPUT_BY_NAME:
        return OUTPUT_BY_NAME[name].long_name
    return KPI_BY_NAME[name].long_name if name in KPI_BY_NAME else name


def label(name: str) -> str:
    """Axis or table label: ``long name [unit]``; no brackets for dimensionless or unknown
    units, e.g. ``GPUs with power [GPU]``, ``utility power: IT + losses + cooling [W]``."""
    u = units(name)
    text = long_name(name)
    return f"{text} [{u}]" if u not in ("", "1") else text
