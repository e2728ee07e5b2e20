"""Checkpoint interval formulas and the analytic goodput of a checkpointing job."""

from __future__ import annotations

import numpy as np


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's optimum compute time between checkpoints [s].

    T = sqrt(2 * delta * M), delta checkpoint write time [s], M job MTBF [s]
    (calibration.yaml failures.checkpoint_interval).

    References
    ----------
    .. [1] J. W. Young, "A first order approximation to the optimum checkpoint interval",
       Communications of the ACM 17(9), 530-531 (1974). doi:10.1145/361147.361115
    """
    if checkpoint_s < 0 or mtbf_s <= 0:
        raise ValueError("checkpoint_s must be >= 0 and mtbf_s > 0")
    return float(np.sqrt(2.0 * checkpoint_s * mtbf_s))


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum compute time between checkpoints [s].

    T = sqrt(2 delta M) * (1 + sqrt(delta / (2M)) / 3 + (delta / (2M)) / 9) - delta
    for delta < 2M, else T = M (calibration.yaml failures.checkpoint_interval).

    References
    ----------
    .. [1] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
       restart dumps", Future Generation Computer Systems 22(3), 303-312 (2006).
       doi:10.1016/j.future.2004.11.016
    """
    if checkpoint_s < 0 or mtbf_s <= 0:
        raise ValueError("checkpoint_s must be >= 0 and mtbf_s > 0")
    d, m = float(checkpoint_s), float(mtbf_s)
    if d >= 2.0 * m:
        return m
    x = d / (2.0 * m)
    return float(np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d)


def expected_goodput_fraction(
    interval_s: np.ndarray | float,
    checkpoint_s: float,
    restart_s: float,
    mtbf_s: float,
    *,
    model: str = "exponential",
) -> np.ndarray:
    """Expected fraction of wall time that turns into kept training progress [-].

    A job computes ``interval_s`` (tau), writes a checkpoint (delta), repeats; a failure
    (exponential, mean M) loses the segment in progress and costs a restart R (reload
    from the last checkpoint; a failure during the restart restarts it).

    model="exponential" (exact for exponential failures, Daly 2006):
        E[wall per segment] = M * exp(R/M) * (exp((tau + delta)/M) - 1)
        goodput = tau / E[wall per segment]
    model="first_order" (Young 1974):
        goodput = tau / (tau + delta) * (1 - (R + (tau + delta) / 2) / M)
    Put detection delay and re-placement time into ``restart_s``.
    """
    tau = np.asarray(interval_s, dtype=float)
    d, r, m = float(checkpoint_s), float(restart_s), float(mtbf_s)
    if m <= 0:
        raise ValueError("mtbf_s must be > 0")
    if model == "exponential":
        return tau / (m * np.exp(r / m) * np.expm1((tau + d) / m))
    if model == "first_order":
        return np.clip(tau / (tau + d) * (1.0 - (r + 0.5 * (tau + d)) / m), 0.0, 1.0)
    raise ValueError(f"unknown model {model!r}")


def optimal_interval_s(checkpoint_s: float, restart_s: float, mtbf_s: float) -> float:
    """Interval [s] that maximises the exact exponential-model goodput (numerical)."""
    d, m = float(checkpoint_s), float(mtbf_s)
    guess = daly_interval_s(d, m)
    from scipy.optimize import minimize_scalar  # lazy: slow import
    res = minimize_scalar(
        lambda lt: -float(expected_goodput_fraction(np.exp(lt), d, restart_s, m)),
        bracket=(np.log(guess) - 1.0, np.log(guess), np.log(guess) + 1.0),
        tol=1e-10,
    )
    return float(np.exp(res.x))


def job_goodput_fraction(
    job_mtbf_s: float,
    interval_s: float,
    checkpoint_s: float,
    restart_s: float,
    *,
    mean_detection_s: float = 0.0,
    planned_rate_per_s: float = 0.0,
    planned_downtime_s: float = 0.0,
) -> float:
    """Expected effective-training-time fraction of a job [-], unplanned and planned.

    Unplanned faults: ``expected_goodput_fraction`` with restart R + D, D the mean
    detection delay (a fail-stop fault found late, or silent corruption found late,
    both waste D more: the job is dead, or computing on corrupted state that the
    roll-back throws away). Planned maintenance (rate p): the job checkpoints at the
    announcement and loses no work, paying delta + downtime + R per event:
        G = G_unplanned * (1 - p * (delta + downtime + R))      (first order in p)
    """
    g = float(expected_goodput_fraction(interval_s, checkpoint_s, restart_s + mean_detection_s, job_mtbf_s))
    planned = planned_rate_per_s * (checkpoint_s + planned_downtime_s + restart_s)
    return max(g * (1.0 - planned), 0.0)
