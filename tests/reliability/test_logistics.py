"""Spares and repair-crew formulas against independent pure-numpy simulations."""

import numpy as np
import pytest

from twin.reliability import (
    erlang_c_wait_probability,
    expected_backorders,
    load_failure_classes,
    mean_repair_wait_s,
    part_demand_rates_per_s,
    spares_fill_rate,
    stock_for_fill_rate,
)

CLASSES = load_failure_classes()
H = 3600.0


def test_gpu_part_demand_of_the_llama3_cluster():
    d = part_demand_rates_per_s(CLASSES, 2048)
    # gpu, HBM3, SRAM, system processor, SDC -> a GPU: 148 + 72 + 19 + 17 + 6 = 262 in 1296 h
    assert d["gpu"] == pytest.approx(262 / (1296.0 * H), rel=1e-12)
    assert d["leaf_switch"] == pytest.approx(6.1 / (1296.0 * H), rel=1e-12)
    assert "cpu" not in d  # warranty parts come from the vendor


def test_fill_rate_matches_simulation_of_one_for_one_restocking():
    rng = np.random.default_rng(21)
    demand, lead, stock = 0.2 / H, 7 * 86400.0, 40  # 0.2 parts/h, one-week restock: d L = 33.6
    t = np.cumsum(rng.exponential(1 / demand, size=400_000))
    # every request triggers a re-order arriving L later: on order at a request =
    # earlier requests within the last L seconds
    on_order = np.arange(t.size) - np.searchsorted(t, t - lead, side="right")
    sim = np.mean(on_order[t > 2 * lead] < stock)
    assert sim == pytest.approx(spares_fill_rate(stock, demand, lead), abs=0.01)
    assert spares_fill_rate(0, demand, lead) == 0.0
    # backorders: E[(X - S)^+] by simulation of the on-order count at random times
    probe = np.sort(rng.uniform(2 * lead, t[-1], 50_000))
    x = np.searchsorted(t, probe) - np.searchsorted(t, probe - lead)
    assert np.mean(np.maximum(x - stock, 0)) == pytest.approx(
        expected_backorders(stock, demand, lead), abs=0.05)


def test_stock_for_fill_rate_is_smallest_sufficient():
    d, lead = 0.2 / H, 168.0 * H  # 0.2 parts/h, one week
    s = stock_for_fill_rate(0.95, d, lead)
    assert spares_fill_rate(s, d, lead) >= 0.95 > spares_fill_rate(s - 1, d, lead)


def test_erlang_c_by_hand():
    assert erlang_c_wait_probability(0.5, 1.0, 1) == pytest.approx(0.5)  # M/M/1: rho
    # a = 2, c = 3: (8/6)/(1/3) = 4; 1 + 2 + 2 = 5 -> 4 / 9
    assert erlang_c_wait_probability(2.0, 1.0, 3) == pytest.approx(4 / 9)
    assert erlang_c_wait_probability(5.0, 1.0, 3) == 1.0
    assert erlang_c_wait_probability(0.0, 1.0, 3) == 0.0
    assert 0 < erlang_c_wait_probability(900.0, 1.0, 1000) < 1  # large crews stay finite


def _fcfs_waits(arrivals, services, servers):
    """Multi-server FCFS queue (Kiefer-Wolfowitz workload recursion), pure numpy."""
    free_at = np.zeros(servers)
    waits = np.empty(arrivals.size)
    for i, (a, s) in enumerate(zip(arrivals, services, strict=True)):
        j = int(np.argmin(free_at))
        start = max(a, free_at[j])
        waits[i] = start - a
        free_at[j] = start + s
    return waits


@pytest.mark.parametrize("servers,lam_per_h,sigma", [(1, 0.3, 1.0), (3, 1.2, 0.0)])
def test_mean_wait_matches_queue_simulation(servers, lam_per_h, sigma):
    # c = 1 with lognormal repairs (Pollaczek-Khinchine, exact); c = 3 exponential (M/M/c)
    rng = np.random.default_rng(22)
    n = 120_000
    lam = lam_per_h / H  # [1/s]
    arrivals = np.cumsum(rng.exponential(1 / lam, n))
    if sigma > 0:
        med = 2.0 * H
        services = med * np.exp(sigma * rng.standard_normal(n))
        mean_s, cv2 = med * np.exp(sigma**2 / 2), np.expm1(sigma**2)
    else:
        mean_s, cv2 = 2.0 * H, 1.0
        services = rng.exponential(mean_s, n)
    w = _fcfs_waits(arrivals, services, servers)[n // 10 :]
    expected = mean_repair_wait_s(lam, mean_s, servers, cv2)
    assert w.mean() == pytest.approx(expected, rel=0.12)
    # a crew of one queues more than a crew of four at the same load
    assert mean_repair_wait_s(lam / 3, mean_s, 1, cv2) > mean_repair_wait_s(lam / 3, mean_s, 4, cv2)
    assert mean_repair_wait_s(10.0 / H, H, 2) == np.inf
