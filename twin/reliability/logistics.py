"""Spares and repair-crew logistics in closed form, to size stocks and crews and to
cross-check the engine's simpy Container (spares) and Resource (technicians).
Rates per second [1/s], times in seconds [s]."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from twin.reliability.classes import FailureClass


def part_demand_rates_per_s(
    classes: Sequence[FailureClass], n_nodes: int, rate_scale: float = 1.0
) -> dict[str, float]:
    """Spare-part demand of a cluster by part type [parts/s].

    d_p = n_nodes * s * sum of rate_k over hardware classes k that consume part p.
    """
    out: dict[str, float] = {}
    for c in classes:
        if c.repair == "hardware" and c.part:
            out[c.part] = out.get(c.part, 0.0) + float(n_nodes) * float(rate_scale) * c.rate_per_node_s
    return out


def spares_fill_rate(stock: int, demand_per_s: float, lead_time_s: float) -> float:
    """Fraction of part requests served from stock at once [-], one-for-one restocking.

    With an (S-1, S) base-stock policy (every part used is re-ordered, lead time L) and
    Poisson demand d [1/s], the parts on order are Poisson(d L) in steady state, whatever the
    lead-time distribution (Palm's theorem; Sherbrooke, "Optimal Inventory Modeling of
    Systems", 2004). A request finds a spare iff fewer than S are on order:
        fill = P(Poisson(d L) <= S - 1)

    References
    ----------
    .. [1] C. Palm, "Analysis of the Erlang traffic formula for busy-signal arrangements",
       Ericsson Technics 5, 39-58 (1938).
    .. [2] C. C. Sherbrooke, "METRIC: A multi-echelon technique for recoverable item
       control", Operations Research 16(1), 122-141 (1968). doi:10.1287/opre.16.1.122
    """
    if stock <= 0:
        return 0.0
    from scipy import stats  # imported here: scipy.stats costs ~1 s at start-up
    return float(stats.poisson.cdf(stock - 1, demand_per_s * lead_time_s))


def expected_backorders(stock: int, demand_per_s: float, lead_time_s: float) -> float:
    """Mean number of repairs waiting for a part [-]: E[(X - S)^+], X ~ Poisson(d L)."""
    mu = demand_per_s * lead_time_s
    s = max(int(stock), 0)
    # E[(X - S)^+] = mu - S + sum_{x < S} (S - x) P(X = x)
    x = np.arange(s)
    from scipy import stats  # imported here: scipy.stats costs ~1 s at start-up
    return float(mu - s + np.sum((s - x) * stats.poisson.pmf(x, mu)))


def stock_for_fill_rate(target_fill: float, demand_per_s: float, lead_time_s: float) -> int:
    """Smallest stock S whose fill rate reaches ``target_fill``: S = Poisson quantile + 1."""
    if not 0 < target_fill < 1:
        raise ValueError("target_fill must be in (0, 1)")
    from scipy import stats  # imported here: scipy.stats costs ~1 s at start-up
    return int(stats.poisson.ppf(target_fill, demand_per_s * lead_time_s)) + 1


def erlang_c_wait_probability(arrival_per_s: float, mean_service_s: float, servers: int) -> float:
    """Probability that a repair waits for a technician, M/M/c queue (Erlang C) [-].

    a = lambda * E[S] (offered load), rho = a / c < 1:
    C = (a^c / c!) / (1 - rho) / (sum_{k<c} a^k / k! + (a^c / c!) / (1 - rho))
    Returns 1 for rho >= 1 (the queue grows without bound).
    """
    a = arrival_per_s * mean_service_s
    c = int(servers)
    if c < 1:
        raise ValueError("servers must be >= 1")
    if a >= c:
        return 1.0
    if a == 0:
        return 0.0
    # terms a^k / k! in log space, finite for large crews
    k = np.arange(c)
    log_terms = k * math.log(a) - np.array([math.lgamma(i + 1) for i in k])
    log_last = c * math.log(a) - math.lgamma(c + 1) - math.log(1.0 - a / c)
    m = max(float(np.max(log_terms)), log_last)
    num = math.exp(log_last - m)
    return float(num / (np.sum(np.exp(log_terms - m)) + num))


def mean_repair_wait_s(
    arrival_per_s: float, mean_service_s: float, servers: int, service_cv2: float = 1.0
) -> float:
    """Mean wait for a technician [s], M/G/c by the Allen-Cunneen approximation.

    Wq = C(c, a) / (c mu - lambda) * (1 + cv_s^2) / 2,  mu = 1 / E[S],
    cv_s^2 the squared coefficient of variation of the repair time (exp(sigma^2) - 1
    for a lognormal). Exact for M/M/c (cv^2 = 1) and for M/G/1 (Pollaczek-Khinchine).
    Infinite when the crew is overloaded (lambda E[S] >= c).
    """
    c = int(servers)
    mu = 1.0 / mean_service_s
    if arrival_per_s >= c * mu:
        return math.inf
    pw = erlang_c_wait_probability(arrival_per_s, mean_service_s, c)
    return pw / (c * mu - arrival_per_s) * (1.0 + service_cv2) / 2.0


def hot_spare_shortfall_probability(
    job_nodes: int, hot_spares: int, rate_per_node_s: float, mean_out_of_service_s: float
) -> float:
    """Probability that a failure of a job finds none of its hot spare nodes free [-].

    Failed nodes of the job's pool are out of service for detection + wait + repair
    (mean T [s]). With Poisson failures (rate lambda per node [1/s]) the number out is Poisson(a), a = n * lambda * T,
    whatever the repair-time distribution (M/G/infinity); a failure sees the time
    average (PASTA), so it finds no free spare iff at least ``hot_spares`` are out:
        P = P(Poisson(a) >= h) = 1 - F(h - 1; a)
    Then the job waits for a repair or shrinks (elastic), instead of restarting at once.
    """
    a = float(job_nodes) * float(rate_per_node_s) * float(mean_out_of_service_s)
    h = int(hot_spares)
    if h <= 0:
        return 1.0
    from scipy import stats  # imported here: scipy.stats costs ~1 s at start-up
    return float(stats.poisson.sf(h - 1, a))
