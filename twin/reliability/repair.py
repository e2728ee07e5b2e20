"""Repair durations and detection delays (distributions from the failure catalog)."""

from __future__ import annotations

import numpy as np

from twin.reliability.classes import REPAIRS, _catalog


def repair_lognormal_params(repair: str) -> tuple[float, float]:
    """(median_h, log_sigma) of the catalog's lognormal for a repair kind."""
    if repair not in REPAIRS:
        raise ValueError(f"repair {repair!r} not in {REPAIRS}")
    r = _catalog()["repair"][repair]
    return float(r["median_h"]), float(r["log_sigma"])


def mean_repair_duration_h(repair: str, median_h: float | None = None, log_sigma: float | None = None) -> float:
    """Mean of the repair lognormal [h]: median * exp(sigma^2 / 2)."""
    m0, s0 = repair_lognormal_params(repair)
    m = m0 if median_h is None else float(median_h)
    s = s0 if log_sigma is None else float(log_sigma)
    return m * float(np.exp(0.5 * s * s))


def sample_repair_duration_h(
    rng: np.random.Generator,
    repair: str,
    *,
    median_h: float | None = None,
    log_sigma: float | None = None,
    size: int | None = None,
) -> float | np.ndarray:
    """Hands-on duration of a repair [h], lognormal (Schroeder & Gibson, DSN 2006).

    D = median_h * exp(log_sigma * Z), Z ~ N(0, 1). Defaults per kind from
    twin/catalog/failures.yaml: ``reimage`` median 10 min (Blue Vela xCAT stateless boot,
    "minutes"), ``hardware`` median 2 h (technician, spare on site), ``warranty``
    median 72 h (vendor part), ``none`` 0.

    For ``hardware`` this is the technician's time only; waiting for a technician
    (crew Resource) and for a spare (stock Container, restock lead time) is the
    engine's queueing, not part of this draw.
    """
    m0, s0 = repair_lognormal_params(repair)
    m = m0 if median_h is None else float(median_h)
    s = s0 if log_sigma is None else float(log_sigma)
    if m < 0 or s < 0:
        raise ValueError("median_h and log_sigma must be >= 0")
    if m == 0.0:
        return 0.0 if size is None else np.zeros(size)
    z = rng.standard_normal(size)
    out = m * np.exp(s * z)
    return float(out) if size is None else out


def sample_detection_delay_h(
    rng: np.random.Generator,
    detection: str,
    *,
    health_check_interval_h: float | None = None,
    watchdog_timeout_h: float | None = None,
    sdc_mean_h: float | None = None,
    size: int | None = None,
) -> float | np.ndarray:
    """Delay [h] from a failure to its detection.

    immediate     0 (the job crashes, the framework reports it)
    health_check  U(0, interval): the fault lands uniformly within a check period
    timeout       the collective watchdog timeout (PyTorch NCCL default 10 min)
    silent        Exp(mean): silent data corruption found later by numerics checks
    Defaults from twin/catalog/failures.yaml ``detection``.
    """
    d = _catalog()["detection"]
    if detection == "immediate":
        v = np.zeros(size) if size is not None else 0.0
    elif detection == "health_check":
        iv = d["health_check_interval_h"]["value"] if health_check_interval_h is None else health_check_interval_h
        v = rng.uniform(0.0, float(iv), size)
    elif detection == "timeout":
        to = d["watchdog_timeout_h"]["value"] if watchdog_timeout_h is None else watchdog_timeout_h
        v = np.full(size, float(to)) if size is not None else float(to)
    elif detection == "silent":
        mu = d["sdc_mean_h"]["value"] if sdc_mean_h is None else sdc_mean_h
        v = rng.exponential(float(mu), size)
    else:
        raise ValueError(f"unknown detection {detection!r}")
    return float(v) if size is None else np.asarray(v, dtype=float)


def mean_detection_delay_h(
    detection: str,
    *,
    health_check_interval_h: float | None = None,
    watchdog_timeout_h: float | None = None,
    sdc_mean_h: float | None = None,
) -> float:
    """Mean of ``sample_detection_delay_h`` [h]: 0, interval/2, timeout or the SDC mean."""
    d = _catalog()["detection"]
    if detection == "immediate":
        return 0.0
    if detection == "health_check":
        iv = d["health_check_interval_h"]["value"] if health_check_interval_h is None else health_check_interval_h
        return 0.5 * float(iv)
    if detection == "timeout":
        return float(d["watchdog_timeout_h"]["value"] if watchdog_timeout_h is None else watchdog_timeout_h)
    if detection == "silent":
        return float(d["sdc_mean_h"]["value"] if sdc_mean_h is None else sdc_mean_h)
    raise ValueError(f"unknown detection {detection!r}")
