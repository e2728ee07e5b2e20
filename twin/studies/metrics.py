"""Planner's figures derived from a run: capacity hosted, time to full capacity, cost, CO2,
and how close each site constraint (power, cooling, floor) is to binding.

The accounting functions are pure and vectorised (numbers or arrays in, arrays out);
:func:`study_kpis` orchestrates them for one scenario and its Results.
"""

from __future__ import annotations

import math

import numpy as np

from twin.outputs import kpi_units
from twin.thermal.properties import ASHRAE_RECOMMENDED_MAX_C

#: {name: (unit, long name)} of the figures added to every sweep run next to
#: twin.results.KPI_UNITS (declared once in twin.outputs.KPIS, group "study")
STUDY_KPI_UNITS: dict[str, tuple[str, str]] = kpi_units("study")


def energy_cost_usd(energy_mwh, price_usd_per_mwh) -> np.ndarray:
    """Energy cost [USD] = energy [MWh] x price [USD/MWh]."""
    return np.asarray(energy_mwh, float) * np.asarray(price_usd_per_mwh, float)


def co2_t(energy_mwh, carbon_kg_per_mwh) -> np.ndarray:
    """Emissions [t CO2] = energy [MWh] x grid intensity [kg/MWh] / 1000 (scope 2, location based)."""
    return np.asarray(energy_mwh, float) * np.asarray(carbon_kg_per_mwh, float) / 1e3


def cost_per_billion_tokens_usd(cost_usd, tokens) -> np.ndarray:
    """Cost per 1e9 tokens [USD/1e9 tokens]; NaN when no token survived."""
    cost = np.asarray(cost_usd, float)
    tok = np.asarray(tokens, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(tok > 0, cost / (tok / 1e9), np.nan)


def first_time_reached_days(series, t_days, target) -> float:
    """First time [days] at which ``series`` >= ``target``; NaN if never (or target <= 0)."""
    s = np.asarray(series, float)
    if not np.isfinite(target) or target <= 0:
        return math.nan
    hit = np.flatnonzero(s >= target)
    return float(np.asarray(t_days, float)[hit[0]]) if len(hit) else math.nan


def duration_below_days(series, reference, dt_s) -> float:
    """Time [days] during which ``series`` < ``reference`` (sampled every ``dt_s`` [s])."""
    below = np.asarray(series, float) < np.asarray(reference, float)
    return float(below.sum() * float(dt_s) / 86400.0)


def facility_it_limit_w(plan_max_w, ups_capacity_w, ups_in_line, feed_capacity_w, redundancy_2n,
                        feed_it_limits_w=None) -> float:
    """Tightest facility IT limit [W]: the final power stage, the UPS when it is in line
    (double conversion), the feeds (one feed alone under 2N, their sum otherwise) and, as the
    engine admits racks, the smallest of ``feed_it_limits_w`` [W (F,)] (each feed path's IT
    limit with its share of the cooling and house loads,
    :func:`twin.power.chain.feed_it_limits_w`)."""
    from twin import power

    feeds = np.asarray(feed_capacity_w, float)
    # the engine's rule (power.chain_it_capacity_w): the UPS total split over the feed paths
    cap = power.chain_it_capacity_w(feeds, float(ups_capacity_w) / len(feeds),
                                    "double_conversion" if ups_in_line else "bypass",
                                    "2N" if redundancy_2n else "none")
    if feed_it_limits_w is not None and np.size(feed_it_limits_w):
        cap = min(cap, float(np.min(feed_it_limits_w)))
    return min(float(plan_max_w), cap)


def use_fraction(demand, capacity) -> np.ndarray:
    """Demand / capacity [1]; > 1 means the constraint cannot host the demand."""
    d = np.asarray(demand, float)
    c = np.asarray(capacity, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c > 0, d / c, np.inf)


def binding_constraint(power_use, cooling_use, floor_use, inlet_margin_c, threshold=0.95) -> str:
    """Name the constraints that bind: those whose use fraction is at or above ``threshold``,
    most used first, joined by ' + '; cooling also binds when the worst inlet exceeds the
    ASHRAE recommended limit (negative margin). 'none' when every constraint has headroom."""
    fr = {"power": float(power_use), "cooling": float(cooling_use), "floor": float(floor_use)}
    hit = sorted((k for k, v in fr.items() if np.isfinite(v) and v >= threshold), key=lambda k: -fr[k])
    if np.isfinite(inlet_margin_c) and inlet_margin_c < 0 and "cooling" not in hit:
        hit.append("cooling")
    return " + ".join(hit) if hit else "none"


#: the events that open and close a power event's cooling transient (twin.sim.hall_thermal:
#: a power transfer stops the chillers; the hall logs its excursion once it is steady again)
POWER_EVENT_OPEN, POWER_EVENT_CLOSE = "cooling_power_transfer", "cooling_restart_excursion"


def power_event_samples(t_s, dt_s, opens_s, closes_s, horizon_s) -> np.ndarray:
    """Samples [bool (T,)] that fall in a power event's cooling transient: from each power
    transfer ``opens_s`` [s] to the first excursion close at or after it (``closes_s`` [s];
    none: the run's end ``horizon_s``). Sample i at ``t_s[i]`` [s] records the interval
    (t_i - dt, t_i] for its sub-sample peaks, so it is in when t_i >= open and
    t_i - dt < close."""
    t = np.asarray(t_s, float)
    closes = np.sort(np.asarray(closes_s, float))
    out = np.zeros(t.shape, bool)
    for t0 in np.asarray(opens_s, float):
        later = closes[closes >= t0]
        t1 = float(later[0]) if later.size else float(horizon_s)
        out |= (t >= t0) & (t - float(dt_s) < t1)
    return out


def power_event_figures(results, start, dt_s, horizon_s) -> dict[str, float]:
    """Cooling figures of a run split at its power events (a utility outage or a dated power
    transfer stops the chillers for their restart: a transient of the plant, not a steady
    shortfall of the hall's cooling):

    - ``chiller_restarts``: power transfers of the cooling plant [count];
    - ``power_event_peak_inlet_c``: hottest inlet within their transients (sub-sample peak,
      any rack) [degC], NaN without one;
    - ``power_event_racks_shut``: racks shut down on their inlet protection within them
      (``rack_thermal_shutdown`` events between a transfer and its excursion's end) [count];
    - ``max_rack_inlet_steady_c``: hottest sampled inlet of a powered rack outside them [degC];
    - ``cooling_capacity_margin_steady_kw``: lowest hall margin outside them [kW];
    - ``hours_cooling_over_capacity_steady``: hours with a negative margin outside them [h].

    The inlet figures are NaN when the run kept no per-rack series (``outputs.rack_series``)."""
    from twin.sim.state import RackState

    ds, ev = results.dataset, results.events
    t_s = (ds["time"].values - np.datetime64(start)) / np.timedelta64(1, "s")
    kinds = ev["kind"].values if len(ev) else np.array([])
    opens = ev["time_s"].values[kinds == POWER_EVENT_OPEN] if len(ev) else []
    closes = ev["time_s"].values[kinds == POWER_EVENT_CLOSE] if len(ev) else []
    tr = power_event_samples(t_s, dt_s, opens, closes, horizon_s)
    out = {"chiller_restarts": float(len(opens)), "power_event_peak_inlet_c": math.nan,
           "power_event_racks_shut": 0.0, "max_rack_inlet_steady_c": math.nan}
    if len(opens):
        shut_t = ev["time_s"].values[kinds == "rack_thermal_shutdown"]
        ends = [min((c for c in closes if c >= o), default=horizon_s) for o in opens]
        out["power_event_racks_shut"] = float(sum(int(np.sum((shut_t >= o) & (shut_t <= c)))
                                                  for o, c in zip(opens, ends, strict=True)))
    if "rack_inlet_c" in ds and "rack_state" in ds:
        inlet = np.where(RackState.powered(ds["rack_state"].values), ds["rack_inlet_c"].values, np.nan)[~tr]
        out["max_rack_inlet_steady_c"] = float(np.nanmax(inlet)) if np.isfinite(inlet).any() else math.nan
        if tr.any():
            peak = ds["rack_inlet_peak_c"].values[tr] if "rack_inlet_peak_c" in ds else ds["rack_inlet_c"].values[tr]
            out["power_event_peak_inlet_c"] = float(np.nanmax(peak)) if np.isfinite(peak).any() else math.nan
    margin = np.asarray(ds["cooling_capacity_margin_w"].values, float)[~tr] if "cooling_capacity_margin_w" in ds \
        else np.zeros(0)
    fin = margin[np.isfinite(margin)]
    out["cooling_capacity_margin_steady_kw"] = float(fin.min() / 1e3) if fin.size else math.nan
    out["hours_cooling_over_capacity_steady"] = float(np.sum(fin < 0) * float(dt_s) / 3600.0)
    return out


def study_kpis(scenario, results) -> dict[str, float]:
    """The :data:`STUDY_KPI_UNITS` figures for one run (scenario + its Results)."""
    from twin import power
    from twin.plant import rack_worst_cases_w
    from twin.power.chain import feed_it_limits_w

    s = scenario
    ds = results.dataset
    k = results.kpis
    pw = s.site.power
    t_days = (ds["time"].values - ds["time"].values[0]) / np.timedelta64(1, "D")
    installed = ds["gpus_installed"].values
    powered = ds["gpus_powered"].values
    delivered_gpus = float(installed.max()) if len(installed) else 0.0
    hosted = float(powered.max()) if len(powered) else 0.0

    racks_delivered = sum(w.racks for w in s.ramp.waves
                          if (w.date - s.simulation.start).days < s.simulation.duration_days)
    positions = sum(r.racks for h in s.site.halls for r in h.rows)
    worst = rack_worst_cases_w(s)[:racks_delivered]        # each rack's own node model and count
    alike = bool(len(worst)) and bool(np.all(worst == worst[0]))
    demand_w = racks_delivered * float(worst[0]) if alike else float(worst.sum())
    facility_w = facility_it_limit_w(max(st.it_power_kw for st in pw.plan) * 1e3, pw.ups.capacity_kw * 1e3,
                                     pw.ups.mode == "double_conversion",
                                     [f.capacity_kw * 1e3 for f in pw.feeds], pw.redundancy == "2N",
                                     feed_it_limits_w(s))
    rpp_limit_w = float(power.breaker_continuous_limit_w(pw.rpp.breaker_a, pw.rpp.voltage_v, pw.rpp.phases,
                                                         pw.rpp.rated_100pct, pw.rpp.power_factor))
    if alike or not racks_delivered:
        rpp_racks = np.bincount(np.arange(racks_delivered) // pw.rpp.racks_per_rpp) if racks_delivered else [0]
        rpp_w = np.asarray(rpp_racks, float) * (float(worst[0]) if racks_delivered else 0.0)
    else:
        rpp_w = np.asarray(np.bincount(np.arange(racks_delivered) // pw.rpp.racks_per_rpp, weights=worst), float)
    rpp_use = float(np.max(use_fraction(rpp_w, rpp_limit_w)))
    cooling_w = sum(u.capacity_kw for h in s.site.halls for u in h.cooling_units) * 1e3
    econ = s.site.economics
    e_mwh = k.get("energy_facility_mwh", math.nan)
    cost = float(energy_cost_usd(e_mwh, econ.electricity_usd_per_mwh))
    inlet = k.get("max_rack_inlet_c", math.nan)
    return {
        "gpus_delivered": delivered_gpus,
        "gpus_hosted": hosted,
        "days_to_full_capacity": first_time_reached_days(powered, t_days, delivered_gpus),
        "days_to_max_hosted": first_time_reached_days(powered, t_days, hosted),
        "days_power_limited": duration_below_days(powered, installed, s.simulation.sample_interval_s),
        "upgrade_cost_usd": float(sum(u.cost_usd for u in econ.upgrades)),
        "upgrade_lead_time_days": float(max((u.lead_time_days for u in econ.upgrades), default=0.0)),
        "energy_cost_usd": cost,
        "co2_t": float(co2_t(e_mwh, econ.carbon_kg_per_mwh)),
        "energy_cost_usd_per_btok": float(cost_per_billion_tokens_usd(cost, k.get("tokens_total", 0.0))),
        "power_use_fraction": max(float(use_fraction(demand_w, facility_w)), rpp_use),
        "cooling_use_fraction": float(use_fraction(demand_w, cooling_w)),
        "floor_use_fraction": float(use_fraction(racks_delivered, positions)),
        "inlet_margin_c": ASHRAE_RECOMMENDED_MAX_C - inlet,
        **power_event_figures(results, s.simulation.start, s.simulation.sample_interval_s,
                              s.simulation.duration_days * 86400.0),
    }
