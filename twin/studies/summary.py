"""The answer a report opens with: what the run delivered, what bound it (with its numbers),
and what went in (hall, power plan, cluster, job mix). Numbers in, sentences out; no
plotting, no files.

- :func:`gpu_hour_budget` splits the installed GPU-hours into unpowered, burn-in/repair,
  idle and busy (the four add up to the installed GPU-hours);
- :func:`power_wait` finds the longest stretch during which delivered GPUs stood
  unpowered, and the IT power, staged limit and worst-case commitment during it;
- :func:`run_answer` the one- or two-sentence answer with the binding constraint;
- :func:`input_summary` one line each for the hall, power plan, cluster and job mix.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from twin.studies.labels import human
from twin.studies.stats import LEVEL

H = 3600.0


def _dt_h(ds) -> np.ndarray:
    """Duration each sample stands for [h] (the step to the next sample; the last repeats)."""
    t = ds["time"].values.astype("datetime64[s]").astype(np.int64).astype(float)
    if t.size < 2:
        return np.ones_like(t) * (float(ds.attrs.get("sample_interval_s", H)) / H)
    d = np.diff(t) / H
    return np.append(d, d[-1])


def gpu_hour_budget(ds) -> dict[str, float]:
    """Installed GPU-hours [GPU-h] split into where they went.

    installed = unpowered + not_healthy + idle + busy, sample by sample:
    unpowered = installed - powered (waiting for power), not_healthy = powered - healthy
    (burn-in, failed, in repair), idle = healthy - busy (no job on them), busy = allocated
    to jobs. Each term is sum(count x step)."""
    w = _dt_h(ds)
    inst = ds["gpus_installed"].values.astype(float)
    powd = np.minimum(ds["gpus_powered"].values.astype(float), inst)
    heal = np.minimum(ds["gpus_healthy"].values.astype(float), powd)
    busy = np.minimum(ds["gpus_busy"].values.astype(float), heal) if "gpus_busy" in ds else heal * 0
    return {"installed": float((inst * w).sum()), "unpowered": float(((inst - powd) * w).sum()),
            "not_healthy": float(((powd - heal) * w).sum()), "idle": float(((heal - busy) * w).sum()),
            "busy": float((busy * w).sum())}


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) index pairs of the True runs of ``mask``."""
    m = np.concatenate([[False], np.asarray(mask, bool), [False]])
    edges = np.flatnonzero(np.diff(m.astype(int)))
    return list(zip(edges[::2], edges[1::2], strict=True))


def power_wait(ds, rack_worst_w: float, gpus_per_rack: float) -> dict | None:
    """The stretch with the most GPU-hours of delivered GPUs waiting unpowered, or None.

    Returns start/end times, the unpowered and installed GPUs (median over the stretch),
    the IT power and the staged IT limit (means [W]), the headroom (limit - IT power [W]),
    the racks powered, the worst-case power they commit (racks x ``rack_worst_w`` [W])
    and their mean actual draw per rack [W]. Admission reserves the worst case, so a
    stretch with large headroom but full commitment is bound by the admission rule, not
    by the power actually drawn."""
    inst = ds["gpus_installed"].values.astype(float)
    powd = ds["gpus_powered"].values.astype(float)
    gap = inst - powd
    w = _dt_h(ds)
    best, best_h = None, 0.0
    for a, b in _runs(gap >= max(1, gpus_per_rack)):
        gh = float((gap[a:b] * w[a:b]).sum())
        if gh > best_h:
            best, best_h = (a, b), gh
    if best is None:
        return None
    a, b = best
    it = ds["facility_it_power_w"].values[a:b].astype(float)
    lim = ds["power_available_w"].values[a:b].astype(float)
    racks = float(np.median(powd[a:b])) / gpus_per_rack
    t = pd.DatetimeIndex(ds["time"].values)
    end = t[b] if b < len(t) else t[-1]
    return {"start": t[a], "end": end, "ongoing": b >= len(t), "gpu_hours": best_h,
            "unpowered_gpus": float(np.median(gap[a:b])), "installed_gpus": float(np.median(inst[a:b])),
            "it_power_w": float(np.nanmean(it)), "limit_w": float(np.nanmean(lim)),
            "headroom_w": float(np.nanmean(lim - it)), "racks_powered": racks,
            "rack_worst_w": float(rack_worst_w), "committed_w": racks * float(rack_worst_w),
            "rack_mean_w": float(np.nanmean(it)) / racks if racks > 0 else math.nan}


def _day(ts) -> str:
    return f"{pd.Timestamp(ts):%Y-%m-%d}"


def power_wait_sentence(pw: dict) -> str:
    """Why delivered GPUs stayed dark: the stretch, the headroom and the admission rule."""
    until = "the end of the run" if pw["ongoing"] else _day(pw["end"])
    s = (f"From {_day(pw['start'])} to {until}, {pw['unpowered_gpus']:,.0f} of "
         f"{pw['installed_gpus']:,.0f} delivered GPUs stayed unpowered")
    headroom_frac = pw["headroom_w"] / pw["limit_w"] if pw["limit_w"] > 0 else 0.0
    feed_w = pw.get("feed_limit_w", math.inf)
    if feed_w < pw["limit_w"] * (1 - 1e-9):
        # the engine admits against the smallest feed path limit too (twin.power.chain.feed_it_limits_w)
        share = " and its share of the cooling and house loads" if pw.get("feed_carries_cooling") else ""
        s += (f": racks are admitted at their {human(pw['rack_worst_w'], 'W')} worst case against "
              f"{human(feed_w, 'W')}, the limit of feed {pw['feed_name']} (its share of the IT{share} at "
              f"worst case), below the {human(pw['limit_w'], 'W')} stage; IT power averaged "
              f"{human(pw['it_power_w'], 'W')}, so the feed binds")
    elif headroom_frac > 0.05 and pw["committed_w"] > 0.95 * pw["limit_w"] - pw["rack_worst_w"]:
        s += (f" although IT power averaged {human(pw['it_power_w'], 'W')}, "
              f"{human(pw['headroom_w'], 'W')} under the {human(pw['limit_w'], 'W')} stage: racks are "
              f"admitted at their {human(pw['rack_worst_w'], 'W')} worst case "
              f"({pw['racks_powered']:,.0f} racks commit {human(pw['committed_w'], 'W')}) while they "
              f"drew {human(pw['rack_mean_w'], 'W')} each on average, so the admission rule, not the "
              f"power drawn, binds (a power cap or oversubscription would admit more)")
    else:
        s += (f": IT power averaged {human(pw['it_power_w'], 'W')} of the "
              f"{human(pw['limit_w'], 'W')} stage, so the staged power plan binds")
    return s + "."


def run_answer(ds, kpis: dict, scenario=None) -> tuple[str, dict]:
    """(answer, facts): the opening sentences of a run report and the numbers behind them.

    Sentence one: tokens trained, rate, GPUs and goodput. Sentence two: the binding
    constraint, i.e. the largest share of installed GPU-hours that did not train, with
    its numbers (for power, :func:`power_wait_sentence`)."""
    budget = gpu_hour_budget(ds)
    days = float((ds["time"].values[-1] - ds["time"].values[0]) / np.timedelta64(1, "D")) if ds.sizes["time"] else 0.0
    peak_gpus = float(ds["gpus_installed"].values.max()) if ds.sizes["time"] else 0.0
    first = (f"In {days:,.0f} days the cluster trained {human(kpis.get('tokens_total'), 'tokens')} "
             f"({human(kpis.get('tokens_per_day_mean'), 'tokens')}/day) on up to {peak_gpus:,.0f} GPUs, "
             f"with {human(kpis.get('goodput_fraction'), '1', 'goodput_fraction')} goodput and "
             f"{int(kpis.get('interruptions') or 0):,} job interruptions.")
    pw = None
    gpus_per_rack: float = 0
    if scenario is not None:
        from twin.plant import typical_rack
        rack_worst_w, rack_gpus = typical_rack(scenario)     # the mean rack when racks differ
        gpus_per_rack = rack_gpus
        pw = power_wait(ds, rack_worst_w, gpus_per_rack)
        if pw is not None:
            from twin.power.chain import feed_it_limits_w, mechanical_on_feeds
            feeds = feed_it_limits_w(scenario)
            f = int(np.argmin(feeds))
            pw.update(feed_limit_w=float(feeds[f]), feed_name=scenario.site.power.feeds[f].name,
                      feed_carries_cooling=mechanical_on_feeds(scenario))
    losses = {"power": budget["unpowered"], "health": budget["not_healthy"], "idle": budget["idle"],
              "lost_work": float(kpis.get("lost_gpu_hours") or 0.0)}
    thermal = float(kpis.get("hours_above_ashrae_recommended") or 0.0) > 0 or \
        float(kpis.get("throttled_node_hours") or 0.0) > 0
    facts: dict[str, Any] = {"budget": budget, "power_wait": pw, "losses": losses, "thermal": thermal}
    inst = budget["installed"]
    if inst <= 0:
        return first + " No GPU was delivered during the run.", facts
    binding = max(losses, key=losses.__getitem__)
    facts["binding"] = binding
    share = losses[binding] / inst
    if binding == "power" and pw is not None:
        second = (f"The binding constraint is power: {share:.1%} of the installed GPU-hours waited "
                  f"unpowered. " + power_wait_sentence(pw))
    elif binding == "idle" and scenario is not None and not scenario.workload.jobs:
        # a stream or a trace: what idles the healthy GPUs is the queue, not the job list
        second = (f"The binding constraint is scheduling: {share:.1%} of the installed GPU-hours were "
                  f"healthy but ran no job although {human(kpis.get('jobs_queued_mean'), 'count')} jobs "
                  f"were queued on average (p95 wait {human(kpis.get('queue_wait_p95_h'), 'h')}; "
                  f"utilization {human(kpis.get('utilization'), '1')}, "
                  f"{human(kpis.get('utilization_last_90_days'), '1')} in the last 90 days): a large job "
                  f"at the head of the queue waits until enough nodes are free (or delivered) and holds "
                  f"the free ones, and backfill fills that gap only with jobs short enough to end before "
                  f"it starts.")
        if pw is not None:
            second += " " + power_wait_sentence(pw)
    elif binding == "idle":
        asked = sum(j.nodes + j.hot_spares for j in scenario.workload.jobs) if scenario is not None else None
        total_nodes = peak_gpus / (gpus_per_rack / scenario.hardware.nodes_per_rack) if scenario is not None \
            and gpus_per_rack else None
        why = (f" (the jobs ask for {asked:,} of {total_nodes:,.0f} nodes)"
               if asked is not None and total_nodes else "")
        second = (f"The binding constraint is the job mix: {share:.1%} of the installed GPU-hours were "
                  f"healthy but ran no job{why}.")
        if pw is not None:
            second += " " + power_wait_sentence(pw)
    elif binding == "health":
        second = (f"The binding constraint is availability: {share:.1%} of the installed GPU-hours were "
                  f"in burn-in, failed or in repair (MTTR {human(kpis.get('mttr_h'), 'h')}).")
    else:
        second = (f"The binding constraint is failures: {human(losses['lost_work'], 'GPU-h')} of work was "
                  f"lost to {int(kpis.get('interruptions') or 0):,} interruptions.")
    if thermal:
        second += (f" Cooling also limits: the hottest inlet reached "
                   f"{human(kpis.get('max_rack_inlet_c'), 'degC')}, "
                   f"{human(kpis.get('hours_above_ashrae_recommended'), 'rack-h')} above 27 °C.")
    return first + " " + second, facts


def budget_sentence(budget: dict, lost_gpu_hours: float) -> str:
    """Where the installed GPU-hours went, in one sentence."""
    inst = budget["installed"]
    if inst <= 0:
        return ""

    def part(v):
        return f"{human(v, 'GPU-h')} ({v / inst:.1%})"
    return (f"Of {human(inst, 'GPU-h')} installed, {part(budget['unpowered'])} waited unpowered, "
            f"{part(budget['not_healthy'])} were in burn-in or repair, {part(budget['idle'])} were healthy "
            f"but idle and {part(budget['busy'])} ran jobs, of which {human(lost_gpu_hours, 'GPU-h')} of work "
            f"was lost to interruptions.")


# --------------------------------------------------------------------------- inputs
def input_summary(scenario) -> list[tuple[str, str]]:
    """(what, description) for the hall(s), power plan, cluster and job mix of a scenario."""
    from twin.catalog import node_model

    s = scenario
    rows = []
    for h in s.site.halls:
        racks = sum(r.racks for r in h.rows)
        cool = sum(u.capacity_kw for u in h.cooling_units)
        enc = sum(1 for r in h.rows if r.enclosure)
        rows.append((f"hall {h.name}",
                     f"{h.width_m:g} m x {h.depth_m:g} m, {racks} rack positions in {len(h.rows)} rows"
                     f"{f' ({enc} with airflow enclosures)' if enc else ''}; {len(h.cooling_units)} cooling "
                     f"units, {human(cool, 'kW')} sensible, supply {h.cooling_units[0].supply_temp_c:g} °C; "
                     f"containment {h.containment.replace('_', ' ')}"))
    pw = s.site.power
    plan = " → ".join(f"{human(st.it_power_kw, 'kW')} from {st.date}" for st in pw.plan)
    feeds = ", ".join(f"{f.name} {human(f.capacity_kw, 'kW')}" for f in pw.feeds)
    rows.append(("power plan",
                 f"IT power {plan}; UPS {pw.ups.mode.replace('_', ' ')} ({human(pw.ups.capacity_kw, 'kW')}), "
                 f"redundancy {pw.redundancy}, feeds {feeds}; {pw.rpp.count} RPPs of {pw.rpp.racks_per_rpp} "
                 f"racks, {pw.rpp.breaker_a:g} A at {pw.rpp.voltage_v:g} V"
                 f"{'; power cap policy on' if pw.power_cap_policy else ''}"))
    from collections import Counter

    from twin.plant import rack_gpus, scenario_racks
    racks = sum(w.racks for w in s.ramp.waves)
    gpus = int(rack_gpus(s)[:racks].sum())
    models, counts = scenario_racks(s)
    kinds = Counter(zip(models[:racks], counts[:racks].tolist(), strict=True))
    hw = " + ".join(f"{n} racks x {c} {m} nodes x {node_model(m).gpu_count} GPUs" for (m, c), n in kinds.items())
    waves = ", ".join(f"{w.racks} on {w.date}" for w in s.ramp.waves)
    cap = f", GPU cap {s.hardware.gpu_power_cap_w:g} W" if s.hardware.gpu_power_cap_w else ""
    rows.append(("cluster",
                 f"{hw} = {gpus:,} GPUs{cap}; delivered {waves}, burn-in "
                 f"{s.ramp.burn_in_days:g} days; fabric {s.fabric.kind.replace('_', ' ')}, "
                 f"{s.fabric.link_gbps:g} Gb/s {s.fabric.transport}"))
    from twin.compute.step import parameter_count
    jobs = []
    for j in s.workload.jobs:
        m = j.model
        p = parameter_count(layers=m.layers, hidden=m.hidden, ffn_hidden=m.ffn_hidden, heads=m.heads,
                            kv_heads=m.kv_heads, vocab=m.vocab, gated_mlp=m.gated_mlp)
        ck = j.checkpoint_interval_s if j.checkpoint_interval_s == "auto" else human(j.checkpoint_interval_s, "s")
        on = f" of {j.node_model}" if j.node_model else ""       # the job names its node model
        jobs.append(f"{j.name} ({human(p, '')} parameters, {j.nodes} nodes{on}, TP{j.tp} PP{j.pp}, "
                    f"{j.precision}, checkpoint {ck})")
    if s.workload.stream is not None or s.workload.trace is not None:
        from twin.workload.config import describe_workload
        jobs.append(describe_workload(s, gpus))
    rows.append(("job mix", "; ".join(jobs)))
    rows.append(("horizon", f"{s.simulation.start} + {s.simulation.duration_days:g} days, sampled every "
                            f"{human(s.simulation.sample_interval_s, 's')}, seed {s.simulation.seed}"))
    return rows


# --------------------------------------------------------------------------- sweeps
def _per_seed(da, dim: str, label) -> np.ndarray:
    """Values of ``da`` at ``dim=label``, averaged over every other axis, one per seed."""
    import warnings
    sub = da.sel({dim: label})
    others = [d for d in sub.dims if d != "seed"]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(sub.mean(others, skipna=True).values if others else sub.values, float).ravel()


def axis_contrast(ds, dim: str, kpi: str, level: float = LEVEL, method: str = "t") -> dict | None:
    """Highest and lowest label of ``dim`` for ``kpi`` (mean over seeds and other axes) and
    the seed-paired difference between them with its interval (:mod:`twin.studies.stats`)."""
    from twin.studies.stats import mean_interval, paired_difference
    labels = list(ds[dim].values)
    per = {i: _per_seed(ds[kpi], dim, lab) for i, lab in enumerate(labels)}
    means = np.array([np.nanmean(v) if np.isfinite(v).any() else np.nan for v in per.values()])
    if not np.isfinite(means).any():
        return None
    hi, lo = int(np.nanargmax(means)), int(np.nanargmin(means))
    return {"kpi": kpi, "dim": dim, "high_label": _lab(labels[hi]), "low_label": _lab(labels[lo]),
            "high": mean_interval(per[hi], level, method), "low": mean_interval(per[lo], level, method),
            "difference": paired_difference(per[hi], per[lo], level, method),
            "n_seeds": int(ds.sizes.get("seed", 1))}


def _lab(v) -> str:
    return str(v.item() if hasattr(v, "item") else v)


def contrast_sentence(c: dict, ds=None) -> str:
    """"Across X, KPI is highest with A (...) and lowest with B (...); the seed-paired
    difference is d [lo, hi] (90 % t-interval, n = 5), so ..."."""
    from twin.studies.labels import describe
    long_name, units = describe(c["kpi"], ds)
    d = c["difference"]
    if c["high_label"] == c["low_label"] or d.mean == 0:
        return f"Across {c['dim']}, {long_name} does not change ({human(c['high'].mean, units, c['kpi'])})."
    text = (f"Across {c['dim']}, {long_name} is highest with {c['high_label']} "
            f"({human(c['high'].mean, units, c['kpi'])}) and lowest with {c['low_label']} "
            f"({human(c['low'].mean, units, c['kpi'])}); the seed-paired difference is "
            f"{human(d.mean, units, c['kpi'])}")
    if d.method == "none":
        return text + f" ({d.describe()}: one seed gives no interval)."
    if not d.meaningful:
        return text + (f" (n = {d.n} seeds: too few for a meaningful interval, so the difference is not "
                       f"established).")
    text += (f" [{human(d.low, units, c['kpi'])}, {human(d.high, units, c['kpi'])}] ({d.describe()}), ")
    return text + ("so the difference is established." if d.excludes(0.0) else
                   "an interval that includes zero: the difference is not established.")


def sweep_answer(ds, dims: list[str], kpis: list[str], preface: str = "") -> str:
    """The opening of a sweep report: a study's own answer (``preface``) and, per axis, the
    contrast of the first KPI in ``kpis`` that moves across it."""
    parts = [preface] if preface else []
    for d in dims:
        for k in kpis:
            if k not in ds:
                continue
            c = axis_contrast(ds, d, k)
            if c is None:
                continue
            if c["high_label"] != c["low_label"] and abs(c["difference"].mean) > 1e-9 * max(abs(c["high"].mean), 1):
                parts.append(contrast_sentence(c, ds))
                break
        else:
            parts.append(f"Across {d}, none of {', '.join(kpis[:3])} changes.")
    return " ".join(parts)


def invariant_notes(ds) -> list[str]:
    """One line per run-time invariant the run broke (``twin.invariants``, kept in the
    Dataset attrs as ``invariant_warnings``): which number cannot be trusted and why."""
    raw = ds.attrs.get("invariant_warnings")
    try:
        found = json.loads(raw) if isinstance(raw, str) else list(raw or [])
    except ValueError:
        return []
    return [f"Warning, run-time check {w.get('check', '?')}: {w.get('message', '')}" if isinstance(w, dict)
            else f"Warning: {w}" for w in found]
