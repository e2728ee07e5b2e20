"""Repair durations and detection delays (distributions from the failure catalog).

The catalog gives its medians and delays in hours, as published; they are converted to
seconds here, where they are read. Every function takes and returns seconds [s].
"""

from __future__ import annotations

import numpy as np

from twin.reliability.classes import HOUR_S, REPAIRS, _catalog


def repair_lognormal_params(repair: str) -> tuple[float, float]:
    """(median_s, log_sigma) of the catalog's lognormal for a repair kind (median in s)."""
    if repair not in REPAIRS:
        raise ValueError(f"repair {repair!r} not in {REPAIRS}")
    r = _catalog()["repair"][repair]
    return float(r["median_h"]) * HOUR_S, float(r["log_sigma"])


def _detection_default_s(key: str) -> float:
    """A detection default of the catalog (``<name>_h``, in hours) in seconds."""
    return float(_catalog()["detection"][f"{key}_h"]["value"]) * HOUR_S


def mean_repair_duration_s(repair: str, median_s: float | None = None, log_sigma: float | None = None) -> float:
    """Mean of the repair lognormal [s]: median * exp(sigma^2 / 2)."""
    m0, s0 = repair_lognormal_params(repair)
    m = m0 if median_s is None else float(median_s)
    s = s0 if log_sigma is None else float(log_sigma)
    return m * float(np.exp(0.5 * s * s))


def sample_repair_duration_s(
    rng: np.random.Generator,
    repair: str,
    *,
    median_s: float | None = None,
    log_sigma: float | None = None,
    size: int | None = None,
) -> float | np.ndarray:
    """Hands-on duration of a repair [s], lognormal (Schroeder & Gibson, DSN 2006).

    D = median_s * exp(log_sigma * Z), Z ~ N(0, 1). Defaults per kind from
    twin/catalog/failures.yaml: ``reimage`` median 10 min (Blue Vela xCAT stateless boot,
    "minutes"), ``hardware`` median 2 h (technician, spare on site), ``warranty``
    median 72 h (vendor part), ``none`` 0.

    For ``hardware`` this is the technician's time only; waiting for a technician
    (crew Resource) and for a spare (stock Container, restock lead time) is the
    engine's queueing, not part of this draw.
    """
    m0, s0 = repair_lognormal_params(repair)
    m = m0 if median_s is None else float(median_s)
    s = s0 if log_sigma is None else float(log_sigma)
    if m < 0 or s < 0:
        raise ValueError("median_s and log_sigma must be >= 0")
    if m == 0.0:
        return 0.0 if size is None else np.zeros(size)
    if size is None:
        return lognormal_duration_s(rng, m, s)
    z = rng.standard_normal(size)
    out = m * np.exp(s * z)
    return float(out) if size is None else out


def lognormal_duration_s(rng: np.random.Generator, median_s: float, log_sigma: float) -> float:
    """One draw of :func:`sample_repair_duration_s` for a law already looked up (see
    :func:`repair_lognormal_params`): ``median_s * exp(log_sigma * Z)`` [s], Z ~ N(0, 1) from
    ``rng``; 0 without a draw when ``median_s`` is 0. For the engine, which draws one per
    repair (~160,000 in the million-GPU year) and looks the law up once per failure class."""
    if median_s == 0.0:
        return 0.0
    return float(median_s * np.exp(log_sigma * rng.standard_normal()))


def sample_detection_delay_s(
    rng: np.random.Generator,
    detection: str,
    *,
    health_check_interval_s: float | None = None,
    watchdog_timeout_s: float | None = None,
    sdc_mean_s: float | None = None,
    size: int | None = None,
) -> float | np.ndarray:
    """Delay [s] from a failure to its detection.

    immediate     0 (the job crashes, the framework reports it)
    health_check  U(0, interval): the fault lands uniformly within a check period
    timeout       the collective watchdog timeout (PyTorch NCCL default 10 min)
    silent        Exp(mean): silent data corruption found later by numerics checks
    Defaults from twin/catalog/failures.yaml ``detection``.
    """
    if detection == "immediate":
        v = np.zeros(size) if size is not None else 0.0
    elif detection == "health_check":
        iv = _detection_default_s("health_check_interval") if health_check_interval_s is None \
            else health_check_interval_s
        v = rng.uniform(0.0, float(iv), size)
    elif detection == "timeout":
        to = _detection_default_s("watchdog_timeout") if watchdog_timeout_s is None else watchdog_timeout_s
        v = np.full(size, float(to)) if size is not None else float(to)
    elif detection == "silent":
        mu = _detection_default_s("sdc_mean") if sdc_mean_s is None else sdc_mean_s
        v = rng.exponential(float(mu), size)
    else:
        raise ValueError(f"unknown detection {detection!r}")
    return float(v) if size is None else np.asarray(v, dtype=float)


def mean_detection_delay_s(
    detection: str,
    *,
    health_check_interval_s: float | None = None,
    watchdog_timeout_s: float | None = None,
    sdc_mean_s: float | None = None,
) -> float:
    """Mean of ``sample_detection_delay_s`` [s]: 0, interval/2, timeout or the SDC mean."""
    if detection == "immediate":
        return 0.0
    if detection == "health_check":
        iv = _detection_default_s("health_check_interval") if health_check_interval_s is None \
            else health_check_interval_s
        return 0.5 * float(iv)
    if detection == "timeout":
        return float(_detection_default_s("watchdog_timeout") if watchdog_timeout_s is None else watchdog_timeout_s)
    if detection == "silent":
        return float(_detection_default_s("sdc_mean") if sdc_mean_s is None else sdc_mean_s)
    raise ValueError(f"unknown detection {detection!r}")
