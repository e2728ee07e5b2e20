"""Study tables and readings built from a run Dataset or a sweep Dataset (numbers in, pandas
tables and plain sentences out; no plotting, no files)."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable
from typing import Any, cast

import numpy as np
import pandas as pd

from twin.studies.metrics import binding_constraint
from twin.studies.stats import LEVEL, MIN_SEEDS_FOR_INTERVAL, mean_interval, paired_difference
from twin.thermal.properties import ASHRAE_ALLOWABLE_C, ASHRAE_RECOMMENDED_MAX_C

A1_ALLOWABLE_MAX_C = ASHRAE_ALLOWABLE_C["A1"][1]

HEADLINE_KPIS = ("tokens_total", "gpus_hosted", "goodput_fraction", "interruptions", "lost_gpu_hours",
                 "energy_facility_mwh", "pue_mean", "max_rack_inlet_c", "energy_cost_usd", "co2_t")


# --------------------------------------------------------------------------- single run
def monthly_ramp_table(ds) -> pd.DataFrame:
    """Per calendar month of a run: GPUs installed / powered / healthy (mean and at month end),
    tokens trained in the month and cumulative (progress incl. not-yet-checkpointed work)."""
    t = pd.DatetimeIndex(ds["time"].values)
    tok = ds["job_tokens"].sum("job").values if "job" in ds["job_tokens"].dims else ds["job_tokens"].values
    frame = pd.DataFrame({
        "installed": ds["gpus_installed"].values, "powered": ds["gpus_powered"].values,
        "healthy": ds["gpus_healthy"].values, "tokens": tok}, index=t)
    month = t.to_period("M")
    rows = []
    prev_end = 0.0
    for m, g in frame.groupby(month):
        end_tok = float(g["tokens"].iloc[-1])
        rows.append({"month": str(m), "installed_end": int(g["installed"].iloc[-1]),
                     "powered_end": int(g["powered"].iloc[-1]), "healthy_end": int(g["healthy"].iloc[-1]),
                     "healthy_mean": float(g["healthy"].mean()),
                     "tokens_in_month": end_tok - prev_end, "tokens_cumulative": end_tok})
        prev_end = end_tok
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- sweeps
def monthly_sweep_table(ds, dim: str, start: str, var: str = "tokens_cumulative") -> pd.DataFrame:
    """``var`` (mean over seeds) at the end of each calendar month, one column per label of
    ``dim``; ``start`` is the scenarios' common start date (the ``day`` axis origin)."""
    t0 = pd.Timestamp(start)
    day = ds["day"].values
    when = t0 + pd.to_timedelta(day, unit="D")
    month = pd.DatetimeIndex(when).to_period("M")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = ds[var].mean("seed", skipna=True).transpose(dim, "day").values
    rows = []
    for m in pd.unique(month):
        i = np.flatnonzero(month == m)[-1]
        rows.append({"month_end": str(m), **{_label(lab): float(mean[k, i])
                                            for k, lab in enumerate(ds[dim].values)}})
    return pd.DataFrame(rows)


def _paired_difference(ds, kpi: str, dim: str, base, level: float = LEVEL) -> dict:
    """Per label of ``dim``, the seed-paired differences (label - base) of ``kpi``: their mean,
    5-95 % band over seeds (``p05``, ``p95``) and the Student-t interval of the mean at
    ``level`` (``low``, ``high``, ``n``; :func:`twin.studies.stats.paired_difference`)."""
    ref = ds[kpi].sel({dim: base}).values.ravel()
    out = {}
    for lab in ds[dim].values:
        v = ds[kpi].sel({dim: lab}).values.ravel()
        d = (v - ref)[np.isfinite(v - ref)]
        iv = paired_difference(v, ref, level)
        out[lab.item() if hasattr(lab, "item") else lab] = {
            "mean": iv.mean, "low": iv.low, "high": iv.high, "n": iv.n,
            "p05": float(np.quantile(d, 0.05)) if len(d) else math.nan,
            "p95": float(np.quantile(d, 0.95)) if len(d) else math.nan}
    return out


def slip_table(ds, dim: str = "slip", base="none", level: float = LEVEL) -> pd.DataFrame:
    """Ramp-slip study: tokens per slip case and what the slip costs against the on-time plan,
    paired by seed index (common random numbers: seed k draws the same streams in every case).

    Columns: ``tokens_lost_mean`` (mean over seeds of base - case), ``tokens_lost_low`` /
    ``_high`` (its Student-t interval at ``level``, n = ``n_seeds`` pairs),
    ``tokens_lost_p05`` / ``_p95`` (5-95 % band of the per-seed losses, the spread, not an
    interval), ``tokens_lost_fraction`` (and ``_low`` / ``_high``, over the plan's mean
    tokens), ``healthy_gpu_hours_lost`` and, when the sweep has ``gpu_hours_busy``,
    ``busy_gpu_hours_lost`` with its interval. ``attrs["level"]`` is the interval's level."""
    tok = _paired_difference(ds, "tokens_total", dim, base, level)
    gh = _paired_difference(ds, "gpu_hours_healthy", dim, base, level)
    busy = _paired_difference(ds, "gpu_hours_busy", dim, base, level) if "gpu_hours_busy" in ds else None
    plan = float(np.nanmean(ds["tokens_total"].sel({dim: base})))
    rows = []
    for lab in ds[dim].values:
        lab = lab.item() if hasattr(lab, "item") else lab
        t = {k: 0.0 - v for k, v in tok[lab].items()}      # lost = plan - case (0.0 - keeps zero unsigned)
        row = {dim: lab, "tokens_mean": float(np.nanmean(ds["tokens_total"].sel({dim: lab}).values)),
               "tokens_lost_mean": t["mean"], "tokens_lost_low": t["high"], "tokens_lost_high": t["low"],
               "tokens_lost_p05": t["p95"], "tokens_lost_p95": t["p05"],
               "tokens_lost_fraction": t["mean"] / plan, "tokens_lost_fraction_low": t["high"] / plan,
               "tokens_lost_fraction_high": t["low"] / plan, "healthy_gpu_hours_lost": 0.0 - gh[lab]["mean"]}
        if busy is not None:
            b = {k: 0.0 - v for k, v in busy[lab].items()}
            row.update(busy_gpu_hours_lost=b["mean"], busy_gpu_hours_lost_low=b["high"],
                       busy_gpu_hours_lost_high=b["low"])
        rows.append({**row, "n_seeds": tok[lab]["n"]})
    out = pd.DataFrame(rows)
    out.attrs["level"] = level
    return out


#: siting criteria: (lower is better, default weight). Hosting the cluster is what a site is
#: for, so GPUs hosted weighs most, then first-year tokens; the rest share the remainder.
SITING_CRITERIA: dict[str, tuple[bool, float]] = {
    "gpus_hosted": (False, 3.0), "tokens_total": (False, 2.0), "days_to_full_capacity": (True, 1.0),
    "max_rack_inlet_c": (True, 1.0), "upgrade_cost_usd": (True, 1.0), "energy_cost_usd": (True, 1.0),
    "co2_t": (True, 1.0)}
DEFAULT_SITING_WEIGHTS = {k: w for k, (_, w) in SITING_CRITERIA.items()}


def parse_weights(text: str | dict | None) -> dict[str, float]:
    """Siting weights from ``"gpus_hosted=3,co2_t=0.5"`` (or a mapping); criteria not named
    keep their default weight. Raises ValueError naming a bad criterion or weight."""
    w = dict(DEFAULT_SITING_WEIGHTS)
    if not text:
        return w
    items: Iterable[Any] = (text.items() if isinstance(text, dict) else
             (part.split("=", 1) if "=" in part else (part, None) for part in str(text).split(",") if part.strip()))
    for k, v in items:
        k = str(k).strip()
        if k not in SITING_CRITERIA:
            raise ValueError(f"siting weight {k!r}: expected one of {', '.join(SITING_CRITERIA)}")
        try:
            val = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"siting weight {k}={v!r}: expected a number >= 0") from None
        if not np.isfinite(val) or val < 0:
            raise ValueError(f"siting weight {k}={v!r}: expected a number >= 0")
        w[k] = val
    if sum(w.values()) <= 0:
        raise ValueError("siting weights: at least one must be positive")
    return w


def criterion_score(values, low_is_good: bool) -> np.ndarray:
    """Score [0, 1] of each candidate on one criterion: 1 for the best, 0 for the worst,
    linear in between (min-max); NaN (e.g. never reaching full capacity) scores 0; all
    equal scores 1."""
    v = np.asarray(values, float)
    ok = np.isfinite(v)
    if not ok.any():
        return np.zeros_like(v)
    lo, hi = np.min(v[ok]), np.max(v[ok])
    if hi == lo:
        return np.where(ok, 1.0, 0.0)
    s = (v - lo) / (hi - lo)
    s = 1.0 - s if low_is_good else s
    return np.where(ok, s, 0.0)


#: the inlet limit a siting study rejects a hall on [degC]: the top of ASHRAE TC 9.9's
#: recommended envelope (27 C, the same for classes A1-A4), the range a hall is designed to
#: hold in continuous operation; the A1 allowable range (to 32 C) is for excursions
INLET_REJECT_C = ASHRAE_RECOMMENDED_MAX_C


def _hall_cooling_short(cooling_capacity_margin_kw, hours_cooling_over_capacity) -> tuple[bool, bool]:
    """(short in kW, short in hours): a run found heat the hall cannot remove, by its lowest
    hall margin (< 0) or by its hours over capacity (> 0); NaN counts as not short."""
    return (bool(np.isfinite(cooling_capacity_margin_kw) and cooling_capacity_margin_kw < 0),
            bool(np.isfinite(hours_cooling_over_capacity) and hours_cooling_over_capacity > 0))


def cooling_rejection(cooling_use_fraction=math.nan, cooling_capacity_margin_kw=math.nan,
                      hours_cooling_over_capacity=math.nan, max_rack_inlet_c=math.nan) -> str:
    """Why a candidate hall's cooling cannot host its racks ('' when it can).

    Rejected when

    - the racks' worst-case heat exceeds the installed cooling units (``cooling_use_fraction``
      > 1, the design point);
    - a run found heat the hall cannot remove: its running units together, or the
      chilled-water plant, short (``cooling_capacity_margin_kw`` < 0, the hall-level margin
      of :func:`twin.thermal.capacity.hall_cooling_margin_w`, or ``hours_cooling_over_capacity``
      > 0): the room heats up;
    - a sampled inlet of a powered rack is above the ASHRAE recommended limit
      :data:`INLET_REJECT_C` (27 C): the units together may have capacity to spare, but the
      hall does not deliver cool enough air to its racks (e.g. saturated units supplying
      warmer air to the racks they serve).

    A single unit beyond its own capacity whose neighbours take the rest is not a rejection
    (:func:`cooling_note` mentions it). The text names the constraint and its numbers."""
    why = []
    if np.isfinite(cooling_use_fraction) and cooling_use_fraction > 1.0:
        why.append(f"worst-case rack heat is {cooling_use_fraction:.0%} of the cooling units' capacity")
    short_kw, short_h = _hall_cooling_short(cooling_capacity_margin_kw, hours_cooling_over_capacity)
    if short_kw or short_h:
        text = "the running cooling units (or the plant) cannot remove the hall's heat"
        if short_kw:
            text += f": short by {-cooling_capacity_margin_kw:,.0f} kW at worst"
        if short_h:
            text += f"{',' if short_kw else ':'} {hours_cooling_over_capacity:,.0f} h over cooling capacity"
        why.append(text)
    if np.isfinite(max_rack_inlet_c) and max_rack_inlet_c > INLET_REJECT_C:
        why.append(f"hottest inlet {max_rack_inlet_c:.1f} C, above the ASHRAE recommended {INLET_REJECT_C:g} C"
                   + (f" and the A1 allowable {A1_ALLOWABLE_MAX_C:g} C" if max_rack_inlet_c > A1_ALLOWABLE_MAX_C
                      else ""))
    return ("cooling short: " + "; ".join(why)) if why else ""


#: smallest unit overload the siting note reports [kW]. The note prints one decimal, so a smaller
#: overload reads "by 0.0 kW"; and a coil held at its capacity (a hall whose units are all
#: saturated) reads its demand from the event-driven state, whose coil outlet lags a step, so
#: its margin sits tens of watts either side of zero (-0.03 kW in a siting table of a short
#: hall): below this resolution the unit is at its capacity, not beyond it
UNIT_SATURATION_RESOLUTION_KW = 0.1


def cooling_note(cooling_unit_margin_kw=math.nan, hours_cooling_unit_saturated=math.nan,
                 cooling_capacity_margin_kw=math.nan, hours_cooling_over_capacity=math.nan) -> str:
    """What a siting table notes about a hall's cooling without rejecting it ('' if nothing):
    a unit beyond its own capacity by at least :data:`UNIT_SATURATION_RESOLUTION_KW`
    (``cooling_unit_margin_kw`` <= -0.1): it supplies warmer air and, while the hall's running
    units together have capacity to spare, its neighbours take the rest; the inlets say
    whether that costs the racks anything. When the hall itself is short
    (``cooling_capacity_margin_kw`` < 0 or ``hours_cooling_over_capacity`` > 0, the case
    :func:`cooling_rejection` rejects) no neighbour can take the rest, and the note says only
    that a unit saturates."""
    if not (np.isfinite(cooling_unit_margin_kw) and cooling_unit_margin_kw <= -UNIT_SATURATION_RESOLUTION_KW):
        return ""
    hours = (f" for {hours_cooling_unit_saturated:,.0f} h" if np.isfinite(hours_cooling_unit_saturated)
             and hours_cooling_unit_saturated > 0 else "")
    text = f"a cooling unit saturates (by {-cooling_unit_margin_kw:,.1f} kW{hours})"
    hall_short = any(_hall_cooling_short(cooling_capacity_margin_kw, hours_cooling_over_capacity))
    return text if hall_short else text + "; its neighbours take the rest"


def power_event_note(peak_inlet_c=math.nan, seeds_with_restart=0, seeds=0, steady_inlet_c=math.nan,
                     racks_shut=0.0) -> str:
    """What a siting table says about a hall's power events ('' without one): a utility outage
    (or a dated power transfer) stops the chillers for their restart and the hall runs on its
    stored chilled water; the hottest inlet of those transients (``peak_inlet_c``, the worst
    seed) is a power-event transient, drawn in ``seeds_with_restart`` of ``seeds`` seeds, and
    not a steady cooling shortfall (``steady_inlet_c``, outside the transients); when it shut
    racks down on their inlet protection (``racks_shut``, the worst seed) the note says so: a
    transient, but one that cost work."""
    if not seeds_with_restart:
        return ""
    text = f"a chiller restart after a utility outage or power transfer in {seeds_with_restart:.0f} of {seeds:.0f} seeds"
    if np.isfinite(peak_inlet_c):
        text += f" took the hottest inlet to {peak_inlet_c:.1f} C"
        if peak_inlet_c > A1_ALLOWABLE_MAX_C:
            text += f" (above the A1 allowable {A1_ALLOWABLE_MAX_C:g} C: more stored chilled water, or chillers " \
                    "that restart faster, would ride it through)"
    if racks_shut > 0:
        text += (f"; it shut {racks_shut:.0f} racks down on their inlet protection (worst seed): a power-event "
                 "transient, not a steady cooling shortfall, but one that cost work")
    else:
        text += ": a power-event transient, not a steady cooling shortfall"
    if np.isfinite(steady_inlet_c):
        text += f" (hottest inlet outside it {steady_inlet_c:.1f} C)"
    return text


def siting_table(ds, dim: str = "site", weights: dict[str, float] | str | None = None) -> pd.DataFrame:
    """Siting study: per candidate (mean over seeds) the planner's figures, the binding
    constraint, a rank per criterion (1 = best), a score per criterion (1 best, 0 worst,
    min-max) and the overall weighted score (``weights``, default
    :data:`DEFAULT_SITING_WEIGHTS`) that sets the overall rank (ties: more tokens first).

    Power events (a utility outage or a power transfer that stops the chillers for their
    restart, :func:`twin.studies.metrics.power_event_figures`) are kept apart: when the runs
    carry the split figures, the inlet criterion, the rejection and the binding constraint read
    the steady ones (outside the transients: a random outage drawn in one seed must not decide
    a hall's rank), and ``power_event_note`` says what the transients did (worst seed)."""
    w = parse_weights(weights)
    m = ds.mean("seed", skipna=True)
    rows = []
    for lab in ds[dim].values:
        r = m.sel({dim: lab})
        per_seed = ds.sel({dim: lab})
        g: dict[str, Any] = {k: float(r[k]) for k in ("gpus_hosted", "gpus_delivered", "days_to_full_capacity",
                                      "days_power_limited", "tokens_total", "max_rack_inlet_c",
                                      "upgrade_cost_usd", "upgrade_lead_time_days", "energy_cost_usd",
                                      "co2_t", "pue_mean", "power_use_fraction", "cooling_use_fraction",
                                      "floor_use_fraction", "inlet_margin_c", "energy_facility_mwh",
                                      "cooling_capacity_margin_kw", "hours_cooling_over_capacity",
                                      "cooling_unit_margin_kw", "hours_cooling_unit_saturated")
             if k in r}
        g["power_event_note"] = ""
        if "max_rack_inlet_steady_c" in r and np.isfinite(float(r["max_rack_inlet_steady_c"])):
            restarts = np.asarray(per_seed["chiller_restarts"].values, float) if "chiller_restarts" in r \
                else np.zeros(0)
            peaks = np.asarray(per_seed["power_event_peak_inlet_c"].values, float) \
                if "power_event_peak_inlet_c" in r else np.zeros(0)
            g["max_rack_inlet_all_c"] = g.get("max_rack_inlet_c", math.nan)
            g["max_rack_inlet_c"] = float(r["max_rack_inlet_steady_c"])
            g["inlet_margin_c"] = ASHRAE_RECOMMENDED_MAX_C - g["max_rack_inlet_c"]
            for k in ("cooling_capacity_margin_kw", "hours_cooling_over_capacity"):
                steady = k.replace("_kw", "_steady_kw") if k.endswith("_kw") else k + "_steady"
                if steady in r:
                    g[k] = float(r[steady])
            shut = np.asarray(per_seed["power_event_racks_shut"].values, float) \
                if "power_event_racks_shut" in r else np.zeros(0)
            g["power_event_note"] = power_event_note(
                float(np.nanmax(peaks)) if np.isfinite(peaks).any() else math.nan,
                int(np.sum(restarts > 0)), int(restarts.size), g["max_rack_inlet_c"],
                float(np.nanmax(shut)) if np.isfinite(shut).any() else 0.0)
        g["binds"] = binding_constraint(g.get("power_use_fraction", math.nan),
                                        g.get("cooling_use_fraction", math.nan),
                                        g.get("floor_use_fraction", math.nan), g.get("inlet_margin_c", math.nan))
        if g["binds"] == "none" and g.get("days_power_limited", 0) > 1:
            g["binds"] = "power (during the ramp)"
        g["rejected"] = cooling_rejection(g.get("cooling_use_fraction", math.nan),
                                          g.get("cooling_capacity_margin_kw", math.nan),
                                          g.get("hours_cooling_over_capacity", math.nan),
                                          g.get("max_rack_inlet_c", math.nan))
        g["cooling_note"] = cooling_note(g.get("cooling_unit_margin_kw", math.nan),
                                         g.get("hours_cooling_unit_saturated", math.nan),
                                         g.get("cooling_capacity_margin_kw", math.nan),
                                         g.get("hours_cooling_over_capacity", math.nan))
        if g["rejected"] and "cooling" not in g["binds"]:
            g["binds"] = "cooling" if g["binds"] == "none" else g["binds"] + " + cooling"
        rows.append({dim: str(lab), **g})
    t = pd.DataFrame(rows)
    ranks, total, wsum = [], np.zeros(len(t)), 0.0
    for k, (low_is_good, _) in SITING_CRITERIA.items():
        if k in t:
            col = t[k].fillna(np.inf if low_is_good else -np.inf)
            ranks.append(col.rank(ascending=low_is_good, method="min").rename(f"rank_{k}"))
            sc = criterion_score(t[k].values, low_is_good)
            t[f"score_{k}"] = sc
            total += w[k] * sc
            wsum += w[k]
    if ranks:
        t = pd.concat([t, pd.concat(ranks, axis=1)], axis=1)
        t["score"] = total / wsum if wsum > 0 else 0.0
        # a hall whose cooling is short is rejected: ranked after every candidate that can host
        t["_ok"] = t["rejected"] == ""
        keys = ["_ok", "score"] + (["tokens_total"] if "tokens_total" in t else [])
        t = t.sort_values(keys, ascending=[False] * len(keys)).drop(columns="_ok").reset_index(drop=True)
        t.insert(1, "overall_rank", np.arange(1, len(t) + 1))
    t.attrs["weights"] = {k: v for k, v in w.items() if f"score_{k}" in t}
    return t


def weights_text(weights: dict[str, float]) -> str:
    """"GPUs hosted 3, tokens 2, ..." for readings."""
    return ", ".join(f"{k} {v:g}" for k, v in weights.items())


def _fmt(v: float, unit: str = "") -> str:
    if v is None or not np.isfinite(v):
        return "n/a"
    a = abs(v)
    if unit == "tokens" or a >= 1e6:
        s = (f"{v / 1e12:.3g} T" if a >= 1e12 else f"{v / 1e9:.3g} B" if a >= 1e9 else
             f"{v / 1e6:.3g} M" if a >= 1e6 else f"{v:.3g}")
        return s + (" tokens" if unit == "tokens" else f" {unit}" if unit not in ("", "1", "count") else "")
    s = f"{v:,.0f}" if a >= 1000 else f"{v:.3g}"
    return f"{s} {unit}".strip() if unit not in ("1", "count") else s


def _label(v) -> str:
    return str(v.item() if hasattr(v, "item") else v)


def axis_effects(ds, dim: str, kpis=None) -> pd.DataFrame:
    """Per KPI: mean over seeds (and the other axes) for the first and last value of ``dim``,
    the best/worst label, the relative spread of the means and the seed band width."""
    kpis = kpis or [k for k in ds.data_vars if "day" not in ds[k].dims and ds[k].dtype.kind in "fiu"
                    and k != "wall_s"]
    other = [d for d in ds[kpis[0]].dims if d != dim]
    rows = []
    for k in kpis:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = ds[k].mean(other, skipna=True).values
            vals = ds[k].transpose(dim, *other).values.reshape(ds.sizes[dim], -1)
            iv = [mean_interval(row) for row in vals]
            lo = np.array([i.low for i in iv])
            hi = np.array([i.high for i in iv])
        if not np.isfinite(mean).any():
            continue
        i_max, i_min = int(np.nanargmax(mean)), int(np.nanargmin(mean))
        scale = np.nanmax(np.abs(mean))
        spread = float((mean[i_max] - mean[i_min]) / scale) if scale > 0 else 0.0
        # intervals of the means overlap (no interval with one seed: not established either)
        overlap = bool(not (lo[i_max] > hi[i_min])) if i_max != i_min else True
        rows.append({"kpi": k, "spread_fraction": spread, "max_label": _label(ds[dim].values[i_max]),
                     "max_mean": float(mean[i_max]), "min_label": _label(ds[dim].values[i_min]),
                     "min_mean": float(mean[i_min]), "bands_overlap": overlap,
                     "units": ds[k].attrs.get("units", "")})
    return pd.DataFrame(rows).sort_values("spread_fraction", ascending=False).reset_index(drop=True)


def axis_reading(ds, dim: str) -> str:
    """One paragraph on what ``dim`` does to the numbers (generated, not written by hand)."""
    eff = axis_effects(ds, dim)
    if eff.empty:
        return f"No run of this sweep finished, so nothing can be said about {dim}."
    n_seeds = ds.sizes.get("seed", 1)
    parts = []
    tok = eff[eff.kpi == "tokens_total"]
    if len(tok):
        r = tok.iloc[0]
        if r.spread_fraction < 1e-3:
            parts.append(f"Across {dim} ({', '.join(_label(v) for v in ds[dim].values)}), training tokens "
                         f"change by less than 0.1 % ({_fmt(r.max_mean, 'tokens')}).")
        else:
            sig = (f"not established: n = {n_seeds} seed{'s are' if n_seeds != 1 else ' is'} too few for an "
                   f"interval" if n_seeds < MIN_SEEDS_FOR_INTERVAL else
                   f"within the overlapping {100 * LEVEL:.0f} % t-intervals of the means, so the difference is "
                   f"not established with n = {n_seeds} seeds" if r.bands_overlap else
                   f"outside the {100 * LEVEL:.0f} % t-intervals of the means (n = {n_seeds} seeds)")
            parts.append(
                f"Across {dim}, training tokens are highest with {r.max_label} ({_fmt(r.max_mean, 'tokens')}) "
                f"and lowest with {r.min_label} ({_fmt(r.min_mean, 'tokens')}), "
                f"{r.spread_fraction:.1%} less; the gap is {sig}.")
    moving = eff[(eff.kpi != "tokens_total") & (eff.spread_fraction > 0.02)]
    head = moving[moving.kpi.isin(HEADLINE_KPIS)].head(3)
    movers = pd.concat([head, moving[~moving.kpi.isin(HEADLINE_KPIS)].head(5 - len(head))])
    if len(movers):
        bits = [f"{r.kpi} ({_fmt(cast(float, r.min_mean), cast(str, r.units))} with {r.min_label} to "
                f"{_fmt(cast(float, r.max_mean), cast(str, r.units))} "
                f"with {r.max_label})" for r in movers.itertuples()]
        parts.append("What moves with it (headline figures first, then the largest relative changes): "
                     + "; ".join(bits) + ".")
    flat = eff[eff.spread_fraction <= 0.02].kpi.tolist()
    if flat:
        shown = [k for k in HEADLINE_KPIS if k in flat][:4]
        if shown:
            parts.append(f"Nearly unchanged (within 2 %): {', '.join(shown)}.")
    failed = int((ds["status"] == "failed").sum()) if "status" in ds else 0
    if failed:
        parts.append(f"{failed} run(s) failed and are left out of these means.")
    return " ".join(parts)


def slip_reading(table: pd.DataFrame, dim: str = "slip", base="none", slip_days: float = 30) -> str:
    """What the slips cost, from :func:`slip_table`: the costliest and cheapest slip, every
    stage's seed-paired loss with its t-interval, and which losses the seeds do not separate
    from zero (interval reaching zero, or a loss below 0.1 % of the plan)."""
    rows = table[table[dim] != base]
    if rows.empty:
        return "No slip case in this sweep."
    level = table.attrs.get("level", LEVEL)
    n = int(rows.n_seeds.min())
    worst = rows.loc[rows.tokens_lost_mean.idxmax()]
    least = rows.loc[rows.tokens_lost_mean.idxmin()]
    base_tok = float(table[table[dim] == base].tokens_mean.iloc[0])
    # a loss is measured when its seed-paired interval lies above zero and it is not negligible
    shown = n >= MIN_SEEDS_FOR_INTERVAL      # below it an interval is not meaningful: means only
    measured = (rows.tokens_lost_low > 0) & (rows.tokens_lost_mean.abs() > 1e-3 * abs(base_tok)) & shown
    parts = [f"The costliest {slip_days:g}-day slip of a power stage is {worst[dim]}: "
             f"{_fmt(worst.tokens_lost_mean, 'tokens')} lost, {worst.tokens_lost_fraction:.1%} of the on-time "
             f"plan's {_fmt(base_tok, 'tokens')}."]
    if measured[least.name] and least.name != worst.name:
        parts.append(f"The cheapest is {least[dim]} ({_fmt(least.tokens_lost_mean, 'tokens')}).")
    busy = "busy_gpu_hours_lost" in rows
    what = f"{100 * level:.0f} % t-interval, n = {n}" if shown else f"n = {n}, too few seeds for an interval"
    parts.append(f"Per stage (mean over seeds of the seed-paired loss, {what}): "
                 + "; ".join(
                     f"{r[dim]} {_fmt(r.tokens_lost_mean, 'tokens')}"
                     + (f" [{_fmt(r.tokens_lost_low)}, {_fmt(r.tokens_lost_high)}]" if shown else "")
                     + f" ({100 * r.tokens_lost_fraction:.2f} %"
                     + (f" [{100 * r.tokens_lost_fraction_low:.2f}, {100 * r.tokens_lost_fraction_high:.2f}]"
                        if shown else "") + ")"
                     + (f", {_fmt(r.busy_gpu_hours_lost, 'GPU-h')} busy" if busy else "")
                     + f", {_fmt(r.healthy_gpu_hours_lost, 'GPU-h')} of healthy GPU time withheld"
                     for _, r in rows.iterrows()) + ".")
    if measured.all():
        parts.append(f"Every slip costs tokens: each interval lies above zero with n = {n} seeds.")
    else:
        idle = rows[~measured]
        names = [str(v) for v in idle[dim]]
        one = len(names) == 1
        which = names[0] if one else ", ".join(names[:-1]) + " and " + names[-1]
        withheld = _fmt(float(idle.healthy_gpu_hours_lost.sum()), "GPU-h")
        why = (("its interval reaches zero or the loss is below 0.1 % of the plan" if one else
                "their intervals reach zero or the losses are below 0.1 % of the plan") if shown
               else "too few seeds for an interval")
        parts.append(
            (f"The token cost of the slip of {which} is not separated from zero with n = {n} seeds ({why}), "
             f"though it withholds {withheld}"
             if one else
             f"The token costs of the slips of {which} are not separated from zero with n = {n} seeds ({why}), "
             f"though they withhold {withheld}")
            + " of healthy GPU time: "
            "either that capacity would have idled (jobs already placed, no queue waiting for it) or the "
            "loss is below the run-to-run spread; more seeds narrow the interval.")
    return " ".join(parts)


def gpus_asked(table: pd.DataFrame) -> float:
    """GPUs the siting study asks every candidate to host [GPU]: the most any candidate had
    delivered (or hosted). A candidate whose floor takes fewer racks is delivered fewer, so
    its own ``gpus_delivered`` is not what was asked of it."""
    cols = [c for c in ("gpus_delivered", "gpus_hosted") if c in table]
    if table.empty or not cols:
        return math.nan
    return float(np.nanmax(table[cols].to_numpy(float)))


def siting_reading(table: pd.DataFrame, dim: str = "site") -> str:
    if table.empty:
        return "No candidate finished."
    best = table.iloc[0]
    w = table.attrs.get("weights") or DEFAULT_SITING_WEIGHTS
    parts = [f"{best[dim]} ranks first overall with a weighted score of {best.get('score', math.nan):.2f} "
             f"(each criterion scored 1 for the best candidate and 0 for the worst; weights "
             f"{weights_text(w)}; set them with --weights or the sweep file's weights)."]
    asked = gpus_asked(table)
    short = table[table["gpus_hosted"] < asked] if np.isfinite(asked) else table.iloc[0:0]
    if len(short):
        parts.append("Cannot host the whole cluster: " + "; ".join(
            f"{r[dim]} ({r.gpus_hosted:,.0f} of {asked:,.0f} GPUs)" for _, r in short.iterrows()) + ".")
    for _, r in table.iterrows():
        full = ("never reaches full capacity" if not np.isfinite(r.get("days_to_full_capacity", np.nan))
                else f"reaches full capacity after {r.days_to_full_capacity:.0f} days")
        parts.append(
            f"{r[dim]}: hosts {r.gpus_hosted:,.0f} of the {asked:,.0f} GPUs asked"
            + (f" ({r.gpus_delivered:,.0f} delivered)" if r.gpus_delivered < asked else "")
            + f" and {full}; "
            f"{_fmt(r.tokens_total, 'tokens')} in the year, worst inlet {r.max_rack_inlet_c:.1f} C, "
            f"upgrades {_fmt(r.upgrade_cost_usd, 'USD')}, energy {_fmt(r.energy_cost_usd, 'USD')} and "
            f"{r.co2_t:,.0f} t CO2; binding: {r.binds} (power {r.power_use_fraction:.0%}, cooling "
            f"{r.cooling_use_fraction:.0%}, floor {r.floor_use_fraction:.0%} used)"
            + (f"; rejected, {r.rejected}" if r.get("rejected") else "")
            + (f"; note: {r.cooling_note}" if r.get("cooling_note") else "")
            + (f"; {r.power_event_note}" if r.get("power_event_note") else "") + ".")
    return " ".join(parts)


def grid_points(ds, dims):
    """Every combination of labels of ``dims`` as dicts (for plotting lines)."""
    for combo in itertools.product(*(ds[d].values for d in dims)):
        yield dict(zip(dims, combo, strict=True))
