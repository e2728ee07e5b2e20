"""Failure rates and hazards: per-node rate matrices, job MTBF, Weibull infant
mortality, Arrhenius temperature acceleration. Pure, vectorised numpy; rates per second
[1/s], ages and times in seconds [s]."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from twin.reliability.classes import FailureClass


def class_rates_per_node_s(classes: Sequence[FailureClass]) -> np.ndarray:
    """Base rate of every class [1/(node*s)], shape (K,)."""
    return np.array([c.rate_per_node_s for c in classes], dtype=float)


def thermal_mask(classes: Sequence[FailureClass]) -> np.ndarray:
    """Boolean (K,) mask of the classes whose hazard temperature accelerates."""
    return np.array([c.thermal for c in classes], dtype=bool)


def interrupting_mask(classes: Sequence[FailureClass]) -> np.ndarray:
    """Boolean (K,) mask of the classes that interrupt a job on the node."""
    return np.array([c.interrupts_job for c in classes], dtype=bool)


def node_failure_rates_per_s(
    classes: Sequence[FailureClass],
    n_nodes: int,
    *,
    rate_scale: float | np.ndarray = 1.0,
    thermal_acceleration: np.ndarray | None = None,
    per_class: bool = True,
) -> np.ndarray:
    """Failure rate of every node and class [1/s].

    lambda[n, k] = rate_k * s[n] * (a[n] if class k is thermal else 1)

    rate_k [1/(node*s)] from the catalog, s the rate scale (scalar or (N,)), a the
    thermal acceleration factor (N,) [-] (see ``arrhenius_acceleration_factor``).
    Returns (N, K), or the per-node total (N,) when ``per_class`` is False.
    """
    base = class_rates_per_node_s(classes)
    n = int(n_nodes)
    scale = np.broadcast_to(np.asarray(rate_scale, dtype=float), (n,))
    if np.any(scale < 0):
        raise ValueError("rate_scale must be >= 0")
    if thermal_acceleration is None:
        accel = np.ones(n)
    else:
        accel = np.broadcast_to(np.asarray(thermal_acceleration, dtype=float), (n,))
        if np.any(accel < 0):
            raise ValueError("thermal_acceleration must be >= 0")
    therm = thermal_mask(classes)
    if not per_class:
        return scale * (accel * base[therm].sum() + base[~therm].sum())
    factor = np.where(therm[None, :], accel[:, None], 1.0)
    return (scale[:, None] * base[None, :]) * factor


def job_mtbf_s(
    classes: Sequence[FailureClass],
    n_nodes: int,
    rate_scale: float = 1.0,
    thermal_acceleration: float = 1.0,
) -> float:
    """Mean time between interruptions of a job spread over ``n_nodes`` nodes [s].

    MTBF = 1 / (n_nodes * s * sum_k lambda_k a_k), over the classes whose scope
    interrupts the job (all but ``none``). First order: a ``rail_su`` failure is
    counted per node, exact when the job fills whole scalable units.
    Llama 3 basis: 2,048 nodes -> 4,665,600 s / 419 = 11,135 s (3.09 h).
    """
    base = class_rates_per_node_s(classes)
    m = interrupting_mask(classes)
    accel = np.where(thermal_mask(classes), float(thermal_acceleration), 1.0)
    total = float(n_nodes) * float(rate_scale) * float(np.sum(base[m] * accel[m]))
    return np.inf if total <= 0.0 else 1.0 / total


def arrhenius_acceleration_factor(
    temp_c: np.ndarray | float,
    reference_temp_c: float,
    activation_energy_ev: float = 0.7,
) -> np.ndarray:
    """Arrhenius acceleration of a hazard at ``temp_c`` relative to ``reference_temp_c``.

    AF = exp(Ea / k_B * (1 / T_ref - 1 / T)),  T in kelvin   [-]

    Ea [eV] activation energy (0.7 eV default, JEDEC JEP122 / JESD85), k_B Boltzmann
    constant [eV/K]. AF = 1 at the reference temperature, > 1 above it. The one
    implementation lives in the thermal model (``twin.thermal.arrhenius_acceleration``);
    this name keeps the reliability API self-contained.
    """
    from twin.thermal.properties import arrhenius_acceleration

    return np.asarray(arrhenius_acceleration(temp_c, reference_temp_c, activation_energy_ev), dtype=float)


def weibull_infant_hazard_per_s(
    age_s: np.ndarray | float, shape: float, scale_s: float
) -> np.ndarray:
    """Weibull hazard of infant mortality [1/s] at component age ``age_s`` [s].

    h(t) = (k / eta) * (t / eta)^(k - 1),  k = shape, eta = scale_s [s].
    With k < 1 the hazard falls with age (burn-in weeds out weak parts); Schroeder &
    Gibson (DSN 2006) fit k = 0.7-0.8 to times between failures of LANL nodes.
    The hazard is infinite at age 0 for k < 1; it integrates to (t / eta)^k.
    """
    if not shape > 0 or not scale_s > 0:
        raise ValueError("shape and scale_s must be > 0")
    t = np.asarray(age_s, dtype=float)
    if np.any(t < 0):
        raise ValueError("age_s must be >= 0")
    with np.errstate(divide="ignore"):
        return (shape / scale_s) * np.power(t / scale_s, shape - 1.0)


def weibull_cumulative_hazard(age_s: np.ndarray | float, shape: float, scale_s: float) -> np.ndarray:
    """Expected number of Weibull failures by age ``age_s`` (s) [-]: H(t) = (t / eta)^k."""
    return np.power(np.asarray(age_s, dtype=float) / scale_s, shape)


def weibull_scale_s_for_expected_failures(
    expected_failures: float, age_s: float, shape: float
) -> float:
    """Weibull scale eta [s] such that H(age_s) = expected_failures.

    eta = age_s / expected_failures^(1/k). Lets a planner state burn-in as "x infant
    failures per node in the first ``age_s`` seconds".
    """
    if not expected_failures > 0:
        raise ValueError("expected_failures must be > 0")
    return float(age_s) / float(expected_failures) ** (1.0 / float(shape))


def sample_weibull_failure_age_s(
    rng: np.random.Generator,
    current_age_s: np.ndarray | float,
    shape: float,
    scale_s: float,
) -> np.ndarray:
    """Age [s] of the next Weibull (infant) failure of parts that survived to ``current_age_s``.

    Inverse of the conditional cumulative hazard: H(T) - H(a) = E, E ~ Exp(1)
      T = eta * ((a / eta)^k + E)^(1/k)
    Exact for a non-homogeneous hazard, one draw per part (vectorised), so the engine
    can schedule the infant failures of a whole delivered wave at once. After a repair
    with a new part, call again with age 0 for that part.
    """
    a = np.asarray(current_age_s, dtype=float)
    e = rng.exponential(1.0, size=a.shape)
    return scale_s * np.power(np.power(a / scale_s, shape) + e, 1.0 / shape)


def weibull_mean_hazard_per_s(
    age_start_s: np.ndarray | float, age_end_s: np.ndarray | float, shape: float, scale_s: float
) -> np.ndarray:
    """Mean Weibull hazard over the age interval [a0, a1] (ages in s) [1/s].

    h_mean = (H(a1) - H(a0)) / (a1 - a0),  H(t) = (t / eta)^k.
    Holding this constant over a sampling interval keeps the expected number of infant
    failures exact (unlike the hazard at the interval start, infinite at age 0 for k < 1).
    Where a1 == a0 the point hazard is returned.
    """
    a0 = np.asarray(age_start_s, dtype=float)
    a1 = np.asarray(age_end_s, dtype=float)
    if np.any(a1 < a0) or np.any(a0 < 0):
        raise ValueError("need 0 <= age_start_s <= age_end_s")
    span = a1 - a0
    dh = weibull_cumulative_hazard(a1, shape, scale_s) - weibull_cumulative_hazard(a0, shape, scale_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = dh / span
    point = weibull_infant_hazard_per_s(np.maximum(a0, 1e-300), shape, scale_s)
    return np.where(span > 0, mean, point)


def burn_in_rate_multiplier(
    age_s: np.ndarray,
    interval_s: float,
    shape: float,
    scale_s: float,
    base_rate_per_node_s: float,
    burn_in_s: float = np.inf,
) -> np.ndarray:
    """Factor on a node's failure rates for the infant-mortality hazard [-], per node.

    m = 1 + h_mean(age, age + interval) / lambda_node   while age < burn_in_s, else 1,

    with ages and the interval in seconds, h_mean the Weibull mean hazard over the coming
    sampling interval (``weibull_mean_hazard_per_s``) [1/s] and lambda_node the node's
    base total rate [1/s].
    The infant hazard adds to the constant one, so scaling all classes by m keeps the
    class mix and adds the expected infant failures exactly over each interval. Pass
    the result as (part of) ``rate_scale`` to ``ClusterFailureSampler.update``.
    Nodes not yet delivered: pass any age and zero their rate_scale instead.
    """
    age = np.maximum(np.asarray(age_s, dtype=float), 0.0)
    if not base_rate_per_node_s > 0:
        raise ValueError("base_rate_per_node_s must be > 0")
    extra = weibull_mean_hazard_per_s(age, age + float(interval_s), shape, scale_s)
    return np.where(age < burn_in_s, 1.0 + extra / base_rate_per_node_s, 1.0)


def mean_detection_delay_of_interruptions_s(classes: Sequence[FailureClass], **detection_kw) -> float:
    """Rate-weighted mean detection delay [s] over the classes that interrupt a job.

    D = sum_k lambda_k E[D_k] / sum_k lambda_k, E[D_k] by ``mean_detection_delay_s``;
    keyword arguments (health_check_interval_s, watchdog_timeout_s, sdc_mean_s) go there.
    """
    from twin.reliability.repair import mean_detection_delay_s

    base = class_rates_per_node_s(classes)
    m = interrupting_mask(classes)
    d = np.array([mean_detection_delay_s(c.detection, **detection_kw) for c in classes])
    return float(np.sum(base[m] * d[m]) / np.sum(base[m])) if np.any(base[m] > 0) else 0.0
