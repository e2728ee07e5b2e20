"""Job streams: arrival processes and job classes, with default parameters fitted to the
published summary statistics of an LLM-development cluster trace.

A stream is a mixture of job classes (pre-training, fine-tuning, ablation, evaluation,
debug). Each class draws its GPU count from a discrete distribution on powers of two, its
run time from a log-normal clipped at the longest run of the trace, and its final state
(completed, failed, cancelled) from class probabilities. Arrivals are a Poisson process,
optionally modulated by a diurnal cosine and a weekend factor (thinning, Lewis & Shedler
1979).

The default parameters are *fitted once* to the Seren row of the Acme cluster summary
(Hu et al., NSDI '24; ``twin/catalog/acme_cluster_summary.csv``) by
:func:`fit_stream_params`; the Kalos, Helios and Philly rows are kept for validation
(docs/validation.md). What is fitted and what is assumed:

- assumed (the *shape*): which GPU counts each class asks for and how often, the ratio of
  the classes' median run times, the relative shares of debug : evaluation : ablation, and
  which classes are "large" (pre-training, fine-tuning) for the state split;
- fitted on Seren (4 equations, 4 unknowns, solved exactly): a common run-time scale and
  log-normal sigma, and the count shares of pre-training and fine-tuning, so that the
  mixture's median run time, mean run time, mean GPUs per job and mean GPU-seconds per
  job equal the trace's;
- fitted on Seren (two 2x2 linear systems, solved exactly): the failure and cancellation
  probabilities of the large and of the small classes, so that both the count shares and
  the GPU-time shares of failed and of cancelled jobs equal the trace's.

References
----------
Q. Hu et al., "Characterization of Large Language Model Development in the Datacenter",
NSDI '24, https://www.usenix.org/conference/nsdi24/presentation/hu (trace: InternLM/AcmeTrace,
data/cluster_summary.csv, CC BY 4.0).
P. A. W. Lewis and G. S. Shedler, "Simulation of nonhomogeneous Poisson processes by
thinning", Naval Research Logistics Quarterly 26(3), 1979. doi:10.1002/nav.3800260304
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd
from scipy import optimize, special

DAY_S = 86400.0
WEEK_S = 7 * DAY_S
STATES = ("completed", "failed", "cancelled")
SUMMARY_SOURCE = ("Hu et al., NSDI '24, Acme trace (InternLM/AcmeTrace data/cluster_summary.csv, "
                  "CC BY 4.0), row {row}")


# --------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class JobClassParams:
    """One class of jobs of a stream.

    ``gpus``/``gpu_weights``: the GPU counts asked for and their probabilities;
    run time ~ LogNormal(ln duration_median_s, duration_sigma), clipped at the stream's
    ``max_duration_s``; ``fail_prob``/``cancel_prob``: probabilities of the final state;
    ``tokens_per_gpu_s``: training tokens per GPU-second while running (0 for jobs that do
    not train); ``checkpoint_interval_s``: work lost on preemption is the time since the
    last checkpoint (``inf``: nothing is saved).
    """

    name: str
    share: float
    gpus: tuple[int, ...]
    gpu_weights: tuple[float, ...]
    duration_median_s: float
    duration_sigma: float
    fail_prob: float
    cancel_prob: float
    queue: str
    priority: int
    project: str
    users: int
    tokens_per_gpu_s: float
    checkpoint_interval_s: float

    @property
    def mean_gpus(self) -> float:
        return float(np.dot(self.gpus, self.gpu_weights))


@dataclass(frozen=True)
class StreamParams:
    """A job-class mixture and what it was fitted to."""

    classes: tuple[JobClassParams, ...]
    max_duration_s: float
    source: str = ""

    def cls(self, name: str) -> JobClassParams:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)


@dataclass(frozen=True)
class ClassShape:
    """The assumed (not fitted) shape of a class."""

    name: str
    gpus: tuple[int, ...]
    gpu_weights: tuple[float, ...]
    relative_median: float      # median run time relative to the common scale
    small_share: float          # share within the small classes (0 for the fitted large ones)
    large: bool
    queue: str
    priority: int
    project: str
    users: int
    tokens_per_gpu_s: float
    checkpoint_interval_s: float


def training_tokens_per_gpu_s(params: float, peak_flops: float = 989e12, mfu: float = 0.40) -> float:
    """Training tokens per GPU-second of a dense transformer [tokens/(GPU s)].

    ``tokens/s/GPU = MFU * peak / (6 N)`` (6 FLOPs per parameter per token for forward and
    backward; Kaplan et al. 2020, arXiv:2001.08361). Defaults: H100 SXM dense BF16 peak
    (989 TFLOP/s, catalog) and an MFU of 40% (assumption; Llama 3 reports 38-43% on H100,
    arXiv:2407.21783).
    """
    return mfu * peak_flops / (6.0 * params)


# The shape of the default mixture (assumptions, stated once here). GPU counts per class:
# evaluation, debug and ablation jobs are mostly single-GPU and within one node (the Acme
# median job is 1 GPU), fine-tuning spans one to sixteen nodes, pre-training 16 to 128 nodes
# (the Acme maximum is 1,024 GPUs). Median run times relative to the common scale: debug 0.5, evaluation 1,
# ablation 10, fine-tuning 10, pre-training 1,000. Model sizes for the token rate: 34 B
# pre-training, 8 B fine-tuning, 3 B ablation; evaluation and debug train nothing.
DEFAULT_SHAPE: tuple[ClassShape, ...] = (
    ClassShape("debug", (1, 2, 4, 8), (0.70, 0.10, 0.10, 0.10), 0.5, 0.35, False,
               "interactive", 60, "dev", 40, 0.0, math.inf),
    ClassShape("evaluation", (1, 2, 4, 8), (0.80, 0.10, 0.05, 0.05), 1.0, 0.57, False,
               "normal", 30, "eval", 20, 0.0, math.inf),
    ClassShape("ablation", (1, 2, 4, 8), (0.40, 0.20, 0.20, 0.20), 10.0, 0.08, False,
               "low", 10, "data", 15, training_tokens_per_gpu_s(3e9), 1800.0),
    ClassShape("finetune", (8, 16, 32, 64, 128), (0.20, 0.30, 0.20, 0.20, 0.10), 10.0, 0.0, True,
               "normal", 30, "posttrain", 15, training_tokens_per_gpu_s(8e9), 1800.0),
    ClassShape("pretrain", (128, 256, 512, 1024), (0.30, 0.30, 0.25, 0.15), 1000.0, 0.0, True,
               "prod", 50, "pretrain", 6, training_tokens_per_gpu_s(34e9), 3600.0),
)


# --------------------------------------------------------------------------- published statistics
@cache
def trace_summaries() -> dict[str, dict[str, float]]:
    """The per-cluster rows of the Acme summary table, keyed by cluster id (Seren, Kalos,
    Philly, Helios, PAI); empty cells are NaN. Times in seconds."""
    text = resources.files("twin.catalog").joinpath("acme_cluster_summary.csv").read_text()
    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(text.splitlines()):
        out[row["id"]] = {k: (float(v) if v != "" else math.nan) for k, v in row.items() if k != "id"}
    return out


def fit_targets(row: dict[str, float]) -> dict[str, float]:
    """The statistics of a summary row that :func:`fit_stream_params` matches."""
    gpu_time = row["complete_gpu_time"] + row["cancel_gpu_time"] + row["fail_gpu_time"]
    return {
        "median_duration_s": row["med_run_time_gpu"],
        "mean_duration_s": row["avg_run_time_gpu"],
        "mean_gpus": row["avg_gpu_num"],
        "mean_gpu_s": gpu_time / row["gpu_job_num"],
        "fail_share": row["fail_rate_gpu"],
        "cancel_share": row["cancel_rate_gpu"],
        "fail_gpu_time_share": row["fail_rate_gpu_time"],
        "cancel_gpu_time_share": row["cancel_rate_gpu_time"],
        "max_duration_s": row["max_run_time_gpu"],
        "max_gpus": row["max_gpu"],
    }


# --------------------------------------------------------------------------- mixture moments
def clipped_lognormal_mean(median_s, sigma, max_s):
    """E[min(X, M)] for X ~ LogNormal(ln median, sigma) [s].

    ``E = exp(mu + s^2/2) Phi((ln M - mu - s^2)/s) + M (1 - Phi((ln M - mu)/s))``.
    """
    mu = np.log(median_s)
    lm = math.log(max_s)
    return (np.exp(mu + sigma**2 / 2) * special.ndtr((lm - mu - sigma**2) / sigma)
            + max_s * special.ndtr(-(lm - mu) / sigma))


def mixture_duration_cdf(t_s, params: StreamParams):
    """P(run time <= t) of the stream's class mixture (clipping at max_duration_s)."""
    t = np.asarray(t_s, float)
    out = np.zeros_like(t)
    for c in params.classes:
        out = out + c.share * special.ndtr((np.log(t) - math.log(c.duration_median_s)) / c.duration_sigma)
    return np.where(t >= params.max_duration_s, 1.0, out)


def mixture_duration_pdf(t_s, params: StreamParams):
    """Density of the mixture run time below max_duration_s [1/s]."""
    from scipy import stats  # imported here: scipy.stats costs ~0.3 s of CPU at start-up

    t = np.asarray(t_s, float)
    return sum(c.share * stats.lognorm.pdf(t, c.duration_sigma, scale=c.duration_median_s)
               for c in params.classes)


def median_duration_s(params: StreamParams) -> float:
    """Median run time of the mixture [s] (root of CDF = 1/2)."""
    x = optimize.brentq(lambda x: mixture_duration_cdf(math.exp(x), params) - 0.5,
                        -10.0, math.log(params.max_duration_s), xtol=1e-13)
    return math.exp(x)


def stream_moments(params: StreamParams) -> dict[str, float]:
    """Analytic statistics of a stream (same keys as :func:`fit_targets`)."""
    w = np.array([c.share for c in params.classes])
    g = np.array([c.mean_gpus for c in params.classes])
    d = np.array([clipped_lognormal_mean(c.duration_median_s, c.duration_sigma, params.max_duration_s)
                  for c in params.classes])
    pf = np.array([c.fail_prob for c in params.classes])
    pc = np.array([c.cancel_prob for c in params.classes])
    gt = w * g * d
    return {
        "median_duration_s": median_duration_s(params),
        "mean_duration_s": float(w @ d),
        "mean_gpus": float(w @ g),
        "mean_gpu_s": float(gt.sum()),
        "fail_share": float(w @ pf),
        "cancel_share": float(w @ pc),
        "fail_gpu_time_share": float(gt @ pf / gt.sum()),
        "cancel_gpu_time_share": float(gt @ pc / gt.sum()),
        "median_gpus": float(_median_gpus(params)),
    }


def _median_gpus(params: StreamParams) -> int:
    values: dict[int, float] = {}
    for c in params.classes:
        for n, p in zip(c.gpus, c.gpu_weights, strict=True):
            values[n] = values.get(n, 0.0) + c.share * p
    ks = sorted(values)
    cum = np.cumsum([values[k] for k in ks])
    return ks[int(np.searchsorted(cum, 0.5))]


# --------------------------------------------------------------------------- the fit
def _build(shape: tuple[ClassShape, ...], scale_s: float, sigma: float, large_shares: dict[str, float],
           max_s: float, source: str) -> StreamParams:
    small_total = 1.0 - sum(large_shares.values())
    small_norm = sum(s.small_share for s in shape if not s.large)
    classes = []
    for s in shape:
        share = large_shares[s.name] if s.large else small_total * s.small_share / small_norm
        classes.append(JobClassParams(
            name=s.name, share=share, gpus=s.gpus, gpu_weights=s.gpu_weights,
            duration_median_s=scale_s * s.relative_median, duration_sigma=sigma,
            fail_prob=0.0, cancel_prob=0.0, queue=s.queue, priority=s.priority,
            project=s.project, users=s.users, tokens_per_gpu_s=s.tokens_per_gpu_s,
            checkpoint_interval_s=s.checkpoint_interval_s))
    return StreamParams(tuple(classes), max_s, source)


def fit_stream_params(row: str | dict[str, float] = "Seren",
                      shape: tuple[ClassShape, ...] = DEFAULT_SHAPE) -> StreamParams:
    """Fit a stream to one row of the Acme summary (default: Seren).

    Solves, exactly, mixture median run time, mean run time (clipped at the longest run),
    mean GPUs and mean GPU-seconds per job = the trace's, for a common run-time scale,
    a common log-normal sigma and the count shares of the two large classes; then the
    failure and cancellation probabilities of the large and the small classes from the
    count and GPU-time shares of failed and cancelled jobs (two 2x2 linear systems).
    Raises ``ValueError`` if the shape cannot match the row.
    """
    name = row if isinstance(row, str) else "custom"
    data = trace_summaries()[row] if isinstance(row, str) else row
    tg = fit_targets(data)
    large = [s.name for s in shape if s.large]
    if len(large) != 2:
        raise ValueError("the fit needs exactly two large classes (4 equations, 4 unknowns)")
    max_s = tg["max_duration_s"]
    source = SUMMARY_SOURCE.format(row=name)

    def make(x):
        scale, sigma, a, b = np.exp(x)
        return _build(shape, scale, sigma, {large[0]: a, large[1]: b}, max_s, source)

    keys = ("median_duration_s", "mean_duration_s", "mean_gpus", "mean_gpu_s")

    def residual(x):
        m = stream_moments(make(x))
        return [math.log(m[k] / tg[k]) for k in keys]

    x0 = np.log([tg["median_duration_s"], 1.5, 0.01, 0.005])
    sol = optimize.least_squares(residual, x0, bounds=(np.log([1e-3, 0.05, 1e-7, 1e-7]),
                                                       np.log([1e6, 6.0, 0.3, 0.3])),
                                 xtol=1e-14, ftol=1e-14, gtol=1e-14)
    if np.max(np.abs(sol.fun)) > 1e-6:
        raise ValueError(f"the class shape cannot match {name}: residuals {sol.fun}")
    p = make(sol.x)
    # state probabilities of the large (L) and small (S) groups
    m = stream_moments(p)
    w = np.array([c.share for c in p.classes])
    gt = w * np.array([c.mean_gpus for c in p.classes]) * np.array(
        [clipped_lognormal_mean(c.duration_median_s, c.duration_sigma, max_s) for c in p.classes])
    is_l = np.array([c.name in large for c in p.classes])
    a = np.array([[w[is_l].sum(), w[~is_l].sum()], [gt[is_l].sum() / m["mean_gpu_s"],
                                                    gt[~is_l].sum() / m["mean_gpu_s"]]])
    pf = np.linalg.solve(a, [tg["fail_share"], tg["fail_gpu_time_share"]])
    pc = np.linalg.solve(a, [tg["cancel_share"], tg["cancel_gpu_time_share"]])
    if np.any(pf < 0) or np.any(pc < 0) or np.any(pf + pc > 1):
        raise ValueError(f"no state probabilities in [0, 1] match {name}: fail {pf}, cancel {pc}")
    classes = tuple(replace(c, fail_prob=float(pf[0] if lg else pf[1]),
                            cancel_prob=float(pc[0] if lg else pc[1]))
                    for c, lg in zip(p.classes, is_l, strict=True))
    return StreamParams(classes, max_s, source)


@cache
def default_stream_params() -> StreamParams:
    """The shipped default: :data:`DEFAULT_SHAPE` fitted to Acme's Seren cluster."""
    return fit_stream_params("Seren")


# --------------------------------------------------------------------------- arrivals
def arrival_rate_factor(t_s, *, diurnal_amplitude: float = 0.0, peak_hour: float = 14.0,
                        weekend_factor: float = 1.0, start_weekday: int = 0):
    """Modulation of the arrival rate at time t [s since a midnight] (dimensionless).

    ``f(t) = (1 + A cos(2 pi (h - h_peak)/24)) * (W if the day is Saturday or Sunday else 1)
    / mean``, normalised so that its average over a week is 1 (the mean rate is kept).
    ``start_weekday``: 0 = Monday (``datetime.date.weekday()`` of t = 0).
    """
    t = np.asarray(t_s, float)
    hour = (t % DAY_S) / 3600.0
    day = (np.floor(t / DAY_S).astype(np.int64) + start_weekday) % 7
    diurnal = 1.0 + diurnal_amplitude * np.cos(2 * np.pi * (hour - peak_hour) / 24.0)
    weekly = np.where(day >= 5, weekend_factor, 1.0)
    return diurnal * weekly / ((5 + 2 * weekend_factor) / 7)


def arrival_times_s(rng: np.random.Generator, jobs_per_hour: float, horizon_s: float, *,
                    diurnal_amplitude: float = 0.0, peak_hour: float = 14.0,
                    weekend_factor: float = 1.0, start_weekday: int = 0) -> np.ndarray:
    """Arrival times [s] of a (modulated) Poisson process on [0, horizon_s), sorted.

    Homogeneous at the peak rate ``lambda_max``, each candidate kept with probability
    ``lambda(t)/lambda_max`` (thinning; Lewis & Shedler 1979).
    """
    if not 0 <= diurnal_amplitude < 1:
        raise ValueError("diurnal_amplitude must be in [0, 1)")
    mean_rate = jobs_per_hour / 3600.0
    fmax = (1 + diurnal_amplitude) * max(weekend_factor, 1.0) / ((5 + 2 * weekend_factor) / 7)
    lam_max = mean_rate * fmax
    n = rng.poisson(lam_max * horizon_s)
    t = np.sort(rng.uniform(0.0, horizon_s, n))
    if diurnal_amplitude == 0 and weekend_factor == 1.0:
        return t
    keep = rng.uniform(0.0, 1.0, n) * fmax < arrival_rate_factor(
        t, diurnal_amplitude=diurnal_amplitude, peak_hour=peak_hour,
        weekend_factor=weekend_factor, start_weekday=start_weekday)
    return t[keep]


def jobs_per_hour_for_load(params: StreamParams, cluster_gpus: int, load: float) -> float:
    """Arrival rate [jobs/h] that offers ``load`` x the cluster's GPU-hours.

    ``rate = load * G * 3600 / E[GPU-seconds per job]`` (offered load of a queue, rho =
    lambda E[S] / c).
    """
    return load * cluster_gpus * 3600.0 / stream_moments(params)["mean_gpu_s"]


def restrict_to_cluster(params: StreamParams, max_gpus: int) -> StreamParams:
    """Drop GPU counts a cluster of ``max_gpus`` cannot host (renormalising each class's
    weights; a class left with none is dropped and the shares renormalised). This changes
    the fitted statistics; :func:`stream_moments` gives the new ones."""
    classes = []
    for c in params.classes:
        keep = [i for i, n in enumerate(c.gpus) if n <= max_gpus]
        if not keep:
            continue
        w = np.array([c.gpu_weights[i] for i in keep])
        classes.append(replace(c, gpus=tuple(c.gpus[i] for i in keep),
                               gpu_weights=tuple((w / w.sum()).tolist())))
    total = sum(c.share for c in classes)
    return replace(params, classes=tuple(replace(c, share=c.share / total) for c in classes))


# --------------------------------------------------------------------------- the generator
JOB_COLUMNS = ("job_id", "job_class", "user", "project", "queue", "priority", "gpus", "nodes",
               "submit_s", "duration_s", "runlimit_s", "state", "checkpoint_interval_s",
               "tokens_per_gpu_s")


def generate_jobs(params: StreamParams, rng: np.random.Generator, *, horizon_s: float,
                  jobs_per_hour: float, gpus_per_node: int = 8, diurnal_amplitude: float = 0.0,
                  peak_hour: float = 14.0, weekend_factor: float = 1.0, start_weekday: int = 0,
                  runlimit_factor: float = 1.5) -> pd.DataFrame:
    """Draw the jobs submitted on [0, horizon_s) (vectorised; one seeded Generator).

    Columns :data:`JOB_COLUMNS`: ``duration_s`` is the run time the job will have once
    started (its final state decides how it ends), ``runlimit_s`` the wall-clock limit the
    user asks for (``runlimit_factor`` x the run time, at least the run time; used by
    backfill as the estimate), ``nodes = ceil(gpus / gpus_per_node)``.
    """
    submit = arrival_times_s(rng, jobs_per_hour, horizon_s, diurnal_amplitude=diurnal_amplitude,
                             peak_hour=peak_hour, weekend_factor=weekend_factor,
                             start_weekday=start_weekday)
    n = len(submit)
    k = len(params.classes)
    shares = np.array([c.share for c in params.classes])
    cls = rng.choice(k, size=n, p=shares / shares.sum())
    gpus = np.empty(n, np.int64)
    median = np.empty(n)
    sigma = np.empty(n)
    pf = np.empty(n)
    pc = np.empty(n)
    user = np.empty(n, object)
    for i, c in enumerate(params.classes):
        m = cls == i
        cnt = int(m.sum())
        w = np.asarray(c.gpu_weights)
        gpus[m] = rng.choice(np.asarray(c.gpus), size=cnt, p=w / w.sum())
        median[m], sigma[m], pf[m], pc[m] = c.duration_median_s, c.duration_sigma, c.fail_prob, c.cancel_prob
        # users within the class's project: Zipf-like activity (weight 1/rank)
        uw = 1.0 / np.arange(1, c.users + 1)
        ids = rng.choice(c.users, size=cnt, p=uw / uw.sum())
        user[m] = np.char.add(f"{c.project}_u", ids.astype(str)).astype(object)
    duration = np.minimum(median * np.exp(sigma * rng.standard_normal(n)), params.max_duration_s)
    u = rng.uniform(size=n)
    state = np.where(u < pf, 1, np.where(u < pf + pc, 2, 0))
    names = np.array([c.name for c in params.classes], object)
    col = lambda attr: np.array([getattr(c, attr) for c in params.classes])[cls]  # noqa: E731
    return pd.DataFrame({
        "job_id": np.arange(n, dtype=np.int64),
        "job_class": pd.Categorical(names[cls], categories=list(names)),
        "user": user,
        "project": col("project").astype(object),
        "queue": col("queue").astype(object),
        "priority": col("priority").astype(np.int64),
        "gpus": gpus,
        "nodes": -(-gpus // gpus_per_node),
        "submit_s": submit,
        "duration_s": duration,
        "runlimit_s": np.maximum(duration, np.minimum(runlimit_factor * duration, params.max_duration_s)),
        "state": pd.Categorical(np.array(STATES, object)[state], categories=list(STATES)),
        "checkpoint_interval_s": col("checkpoint_interval_s").astype(float),
        "tokens_per_gpu_s": col("tokens_per_gpu_s").astype(float),
    })
