"""Scenario models of workloads that fill a cluster: ``workload.stream`` (a generated job
stream), ``workload.trace`` (a scheduler trace to replay) and ``workload.scheduler`` (the
LSF-like policy). They sit beside the fixed ``workload.jobs`` list, which stays valid; with
none of them set a scenario runs exactly as before."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]

CLASS_NAMES = ("pretrain", "finetune", "ablation", "evaluation", "debug")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


class Arrivals(_Model):
    """A Poisson arrival process, optionally modulated by a diurnal cosine and a weekend
    factor (``twin.workload.stream.arrival_times_s``). Give the rate as ``jobs_per_hour``
    or as the offered ``load`` (a fraction of the cluster's GPU-hours the stream asks for)."""

    jobs_per_hour: PositiveFloat | None = Field(None, description="mean arrival rate [jobs/h]")
    load: PositiveFloat | None = Field(
        None, description="offered load: the stream asks for this fraction of the delivered GPUs' "
                          "hours (rate = load x GPUs x 3600 / mean GPU-seconds per job)")
    diurnal_amplitude: Annotated[float, Field(ge=0, lt=1)] = Field(
        0.0, description="relative day-night swing of the rate (0 = constant)")
    peak_hour: Annotated[float, Field(ge=0, lt=24)] = Field(14.0, description="hour of the daily peak (UTC)")
    weekend_factor: NonNegFloat = Field(1.0, description="rate on Saturdays and Sundays / weekday rate")
    follow: Literal["delivered", "constant"] = Field(
        "delivered", description="the rate grows with the GPUs the ramp has delivered (demand follows "
                                 "supply; load is then relative to the delivered GPUs), or stays at "
                                 "the full cluster's rate from day one")

    @model_validator(mode="after")
    def _one_rate(self):
        if (self.jobs_per_hour is None) == (self.load is None):
            raise ValueError("exactly one of jobs_per_hour and load")
        return self


class JobClass(_Model):
    """Overrides of one job class of the fitted default mixture (unset = the fitted value;
    ``twin.workload.stream.DEFAULT_SHAPE`` and ``default_stream_params``)."""

    name: Literal["pretrain", "finetune", "ablation", "evaluation", "debug"] = Field(
        description="a class of the fitted mixture")
    share: Fraction | None = Field(None, description="share of the job count (the others are rescaled)")
    gpus: list[PositiveInt] | None = Field(None, description="GPU counts the class asks for")
    gpu_weights: list[PositiveFloat] | None = Field(None, description="their relative frequencies")
    duration_median_s: PositiveFloat | None = Field(None, description="median run time [s]")
    duration_sigma: PositiveFloat | None = Field(None, description="log-normal sigma of the run time")
    fail_prob: Fraction | None = None
    cancel_prob: Fraction | None = None
    queue: str | None = None
    project: str | None = None
    users: PositiveInt | None = None
    checkpoint_interval_s: PositiveFloat | None = None
    model_job: str | None = Field(
        None, description="name of a workload.jobs entry whose model shape and parallelism this "
                          "class trains (its token rate then comes from the step-time model)")


class Stream(_Model):
    """A generated job stream: the mixture fitted to a published trace row, with overrides."""

    fit: Literal["Seren"] = Field(
        "Seren", description="row of the Acme cluster summary the default mixture is fitted to")
    arrivals: Arrivals = Arrivals(load=0.9)
    classes: list[JobClass] = Field([], description="overrides of the fitted classes, by name")

    @model_validator(mode="after")
    def _classes_once(self):
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError(f"each class at most once, got {names}")
        for c in self.classes:
            if (c.gpus is None) != (c.gpu_weights is None) or (c.gpus and len(c.gpus) != len(c.gpu_weights)):
                raise ValueError(f"class {c.name}: gpus and gpu_weights together, of equal length")
        return self
    runlimit_factor: Annotated[float, Field(ge=1)] = Field(
        1.5, description="run limit users ask for / run time (backfill plans with the limit)")
    until_days: PositiveFloat | None = Field(
        None, description="stop submitting after this many days (None = the whole run)")


class Trace(_Model):
    """A scheduler trace to replay instead of the ``jobs`` list."""

    path: str = Field(description="trace file (absolute, or relative to the working directory)")
    format: Literal["acme", "helios", "slurm_sacct", "lsf_bacct"]
    starts: Literal["recorded", "reschedule"] = Field(
        "recorded", description="honour the recorded start times, or let the twin's scheduler "
                                "start the jobs from their submit times")
    align: Literal["scenario_start", "first_submit"] = Field(
        "scenario_start", description="shift the trace so its first submit falls on the scenario "
                                      "start, or keep its dates (the run starts at simulation.start)")
    time_zone: str = Field("UTC", description="time zone of dates printed without an offset")
    year: int | None = Field(None, description="year of the first record (LSF bacct prints none)")
    cpu_jobs: Literal["skip", "error"] = Field(
        "skip", description="zero-GPU rows: count and skip them, or reject the trace")
    class_map: dict[str, str] = Field(
        {}, description="trace job type or queue -> job class (the class gives the model shape "
                        "when the trace has none)")
    default_class: str = Field("finetune", description="class of jobs the map does not name")


class Queue(_Model):
    name: str
    priority: int
    preemptive: StrictBool = False
    preemptable: StrictBool = False


class SchedulerPolicy(_Model):
    """The LSF-like policy for streams and traces (``twin.workload.scheduler``)."""

    order: Literal["fifo", "fairshare"] = "fifo"
    backfill: StrictBool = True
    preemption: StrictBool = False
    fairshare_by: Literal["user", "project"] = "user"
    shares: dict[str, PositiveFloat] = Field({}, description="fair share per user or project (others 1)")
    half_life_h: PositiveFloat = Field(5.0, description="decay of past usage (LSF HIST_HOURS)")
    backfill_depth: PositiveInt = Field(500, description="pending jobs tried for backfill per pass")
    queues: list[Queue] = Field(
        [Queue(name="interactive", priority=60), Queue(name="prod", priority=50, preemptive=True),
         Queue(name="normal", priority=30), Queue(name="low", priority=10, preemptable=True)],
        min_length=1)
