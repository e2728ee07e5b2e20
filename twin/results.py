"""Results of a run: an xarray Dataset (time x rack x ...), an event table and KPIs.

``Results.save(dir)`` writes ``results.nc``, ``events.csv`` and ``kpis.json`` crash-safely
(:mod:`twin.store_io`); ``Results.load(dir)`` reads them back.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from twin._version import __version__
from twin.scenario.loader import scenario_hash

H = 3600.0

# name: (unit, long name) -- the KPI table and README are generated from this
KPI_UNITS: dict[str, tuple[str, str]] = {
    "tokens_total": ("tokens", "training tokens that survived to the end of the run"),
    "tokens_per_day_mean": ("tokens/day", "tokens_total over the simulated days"),
    "tokens_per_day_full_capacity": ("tokens/day", "token rate while every delivered GPU was powered"),
    "gpu_hours_installed": ("GPU-h", "GPUs delivered x time"),
    "gpu_hours_healthy": ("GPU-h", "GPUs powered, burned in and healthy x time"),
    "gpu_hours_busy": ("GPU-h", "GPUs allocated to jobs x time"),
    "goodput_fraction": ("1", "GPU-time whose work survived / GPU-time allocated to jobs"),
    "interruptions": ("count", "job interruptions (failures, grid drops, feed losses, trips, shutdowns, maintenance)"),
    "lost_gpu_hours": ("GPU-h", "GPU-time of work lost since the last checkpoint"),
    "checkpoint_overhead_fraction": ("1", "wall time writing checkpoints / job wall time"),
    "effective_training_time_fraction": ("1", "job wall time making progress that survived / job wall time"),
    "mtbf_job_h": ("h", "job wall time / job interruptions"),
    "mttr_h": ("h", "mean time from a failure to the node back in service"),
    "failures": ("count", "component failures"),
    "energy_it_mwh": ("MWh", "IT energy at the rack PDUs"),
    "energy_facility_mwh": ("MWh", "utility energy: IT + UPS/distribution losses + cooling"),
    "ups_loss_mwh": ("MWh", "UPS conversion loss"),
    "pue_mean": ("1", "energy_facility_mwh / energy_it_mwh"),
    "peak_facility_power_kw": ("kW", "highest sampled utility power"),
    "peak_power_ramp_kw_per_s": ("kW/s", "largest facility power change between samples / sample step"),
    "peak_sync_swing_kw": ("kW", "largest facility IT step when a job's nodes move together between "
                                 "training and an exposed all-reduce or a checkpoint"),
    "max_rpp_load_fraction": ("1", "highest RPP load / continuous breaker limit"),
    "max_feed_load_fraction": ("1", "highest feed load / feed capacity"),
    "max_rack_inlet_c": ("degC", "hottest sampled inlet of a powered rack"),
    "hours_above_ashrae_recommended": ("rack-h", "rack-hours with inlet above 27 C (ASHRAE TC 9.9)"),
    "hours_outside_ashrae_recommended": ("rack-h", "rack-hours with inlet outside 18-27 C (ASHRAE TC 9.9)"),
    "throttled_node_hours": ("node-h", "node-hours of GPUs running below full clock (thermal)"),
    "rci_hi_percent": ("%", "Rack Cooling Index (high side, Herrlin 2005) of each powered rack's "
                            "hottest inlet; 100 = none above 27 C, < 90 poor"),
    "breaker_trips": ("count", "RPP breaker trips"),
    "grid_drop_events": ("count", "grid disturbances that dropped nodes"),
}


@dataclass
class Results:
    """What a run produced. ``dataset``: xarray; ``events``: DataFrame; ``kpis``: dict."""

    dataset: xr.Dataset
    events: pd.DataFrame
    kpis: dict[str, float]
    fields: dict[str, xr.Dataset] = field(default_factory=dict)   # steady thermal field per hall

    def save(self, out_dir: str | Path, *, force: bool = False) -> Path:
        """Write results.nc, events.csv, kpis.json (and field_<hall>.nc) into ``out_dir``
        crash-safely. ``out_dir`` may replace only a previous twin result or an empty folder
        unless ``force`` (:func:`twin.store_io.save_results`)."""
        from twin.store_io import save_results
        return save_results(self, out_dir, force=force)

    @classmethod
    def load(cls, out_dir: str | Path) -> Results:
        from twin.store_io import load_results
        return load_results(cls, out_dir)

    def kpi_table(self) -> str:
        """Plain-text KPI table with units."""
        lines = [f"{'KPI':34s} {'value':>16s}  unit"]
        for name, (unit, _) in KPI_UNITS.items():
            if name in self.kpis:
                v = self.kpis[name]
                if v is None or (isinstance(v, float) and not math.isfinite(v)):
                    text = f"{'n/a':>16s}"
                else:
                    text = f"{v:16.4g}" if isinstance(v, float) else f"{v:16d}"
                lines.append(f"{name:34s} {text}  {unit}")
        return "\n".join(lines)


def _var(data, dims, units, long_name):
    return xr.DataArray(data, dims=dims, attrs={"units": units, "long_name": long_name})


def build_results(engine) -> Results:
    """Turn an engine's recorder arrays, jobs and events into Results."""
    s, p, rec = engine.s, engine.plant, engine.rec
    dt = engine.dt_s
    T = engine.n_samples
    t_s = np.arange(T) * dt
    start = np.datetime64(s.simulation.start.isoformat(), "s")
    times = start + (t_s * 1e3).astype("timedelta64[ms]")
    jobs = [j.spec.name for j in engine.jobs]
    from twin.thermal import ashrae_class
    ashrae = np.where(rec["rack_state"] >= 1, ashrae_class(rec["rack_inlet_c"]), -1).astype(np.int8)
    v = {
        "rack_power_w": _var(rec["rack_power_w"], ("time", "rack"), "W", "rack IT power at the PDU"),
        "rack_inlet_c": _var(rec["rack_inlet_c"], ("time", "rack"), "degC", "rack inlet air temperature"),
        "rack_gpu_temp_max_c": _var(rec["rack_gpu_temp_max_c"], ("time", "rack"), "degC",
                                    "hottest GPU of the rack (NaN when off)"),
        "rack_state": _var(rec["rack_state"], ("time", "rack"), "1",
                           "-1 not delivered, 0 delivered off, 1 burn-in, 2 in service, 3 breaker tripped or feed lost"),
        "rpp_load_fraction": _var(rec["rpp_load_fraction"], ("time", "rpp"), "1",
                                  "RPP load / continuous breaker limit"),
        "feed_load_fraction": _var(rec["feed_load_fraction"], ("time", "feed"), "1", "feed load / capacity"),
        "facility_it_power_w": _var(rec["facility_it_w"], ("time",), "W", "facility IT power"),
        "facility_total_power_w": _var(rec["facility_total_w"], ("time",), "W",
                                       "utility power: IT + losses + cooling"),
        "ups_loss_w": _var(rec["ups_loss_w"], ("time",), "W", "UPS conversion loss"),
        "distribution_loss_w": _var(rec["distribution_loss_w"], ("time",), "W",
                                    "losses between utility and PDUs other than the UPS"),
        "cooling_power_w": _var(rec["cooling_w"], ("time",), "W", "chiller, CRAH fan and pump power"),
        "power_available_w": _var(rec["power_available_w"], ("time",), "W", "IT power of the staged plan"),
        "outdoor_temp_c": _var(rec["outdoor_temp_c"], ("time",), "degC", "outdoor dry-bulb temperature"),
        "gpus_installed": _var(rec["gpus_installed"], ("time",), "GPU", "GPUs delivered"),
        "gpus_powered": _var(rec["gpus_powered"], ("time",), "GPU", "GPUs with power"),
        "gpus_healthy": _var(rec["gpus_healthy"], ("time",), "GPU", "GPUs powered, burned in, healthy"),
        "gpus_busy": _var(rec["gpus_busy"], ("time",), "GPU", "GPUs allocated to jobs"),
        "nodes_failed": _var(rec["nodes_failed"], ("time",), "node", "delivered nodes failed or in repair"),
        "nodes_in_repair": _var(rec["nodes_in_repair"], ("time",), "node", "nodes whose repair is under way"),
        "spares_in_stock": _var(rec["spares_in_stock"], ("time",), "part", "spare parts on the shelf (all pools)"),
        "job_goodput_fraction": _var(np.array([j.gpu_s_useful_total / j.gpu_s_allocated if j.gpu_s_allocated > 0
                                               else np.nan for j in engine.jobs]), ("job",), "1",
                                     "GPU-time whose work survived / GPU-time allocated"),
        "job_interruptions": _var(np.array([j.interruptions for j in engine.jobs]), ("job",), "count",
                                  "interruptions of the job"),
        "throttle_fraction": _var(rec["throttle_fraction"], ("time",), "1",
                                  "share of powered, healthy nodes running below full GPU clock"),
        "rpp_power_w": _var(rec["rpp_power_w"], ("time", "rpp"), "W", "power out of each RPP breaker"),
        "feed_power_w": _var(rec["feed_power_w"], ("time", "feed"), "W", "power drawn from each utility feed"),
        "ups_output_w": _var(rec["ups_output_w"], ("time", "feed"), "W", "load on the UPS (or its bypass) of each feed path"),
        "ups_load_fraction": _var(rec["ups_load_fraction"], ("time", "feed"), "1", "UPS output / rating"),
        "rpp_loss_w": _var(rec["rpp_loss_w"], ("time",), "W", "RPP and cabling losses"),
        "feed_loss_w": _var(rec["feed_loss_w"], ("time",), "W", "switchboard and transformer losses"),
        "rack_ashrae_class": _var(ashrae, ("time", "rack"), "1",
                                  "ASHRAE TC 9.9 class of the inlet: -1 off, 0 recommended, 1 A1, 2 A2, 3 A3, 4 A4, 5 beyond A4"),
        "rack_hours_outside_recommended": _var((ashrae > 0).sum(axis=0) * dt / H, ("rack",), "h",
                                               "hours the powered rack's inlet was outside ASHRAE recommended"),
        "job_tokens": _var(rec["job_tokens"], ("time", "job"), "tokens", "job progress (incl. not checkpointed)"),
        "job_tokens_per_s": _var(rec["job_tokens_per_s"], ("time", "job"), "tokens/s", "job training rate"),
        "job_gpus": _var(rec["job_gpus"], ("time", "job"), "GPU", "GPUs allocated to the job"),
    }
    coords = {
        "time": times, "rack": p.rack_names,
        "rack_x_m": ("rack", p.rack_xy_m[:, 0], {"units": "m", "long_name": "rack centre x"}),
        "rack_y_m": ("rack", p.rack_xy_m[:, 1], {"units": "m", "long_name": "rack centre y"}),
        "rack_hall": ("rack", p.rack_hall),
        "rack_rpp": ("rack", p.rack_rpp),
        "rpp": np.arange(len(p.rpp_limit_w)),
        "feed": [f.name for f in s.site.power.feeds],
        "job": jobs,
    }
    ds = xr.Dataset(v, coords=coords)
    ev = pd.DataFrame(engine.events, columns=["time_s", "kind", "target", "detail"])
    ev.insert(0, "time", (start + (ev["time_s"].to_numpy() * 1e3).astype("timedelta64[ms]")).astype(str))
    kpis = compute_kpis(engine, ds, ev)
    ds.attrs = {
        "title": f"twin run of scenario {s.name}",
        "scenario_name": s.name,
        "scenario_hash": scenario_hash(s),
        "seed": int(s.simulation.seed),
        "twin_version": __version__,
        "sample_interval_s": float(dt),
        "scenario_json": json.dumps(s.model_dump(mode="json"), sort_keys=True),
    }
    return Results(ds, ev, kpis)


def _rci_hi(inlet_c: np.ndarray) -> float:
    """RCI_HI [%] over the racks that were ever powered, each at its hottest sampled inlet."""
    from twin.thermal import rack_cooling_index_hi

    seen = np.isfinite(inlet_c).any(axis=0)
    if not seen.any():
        return math.nan
    return float(rack_cooling_index_hi(np.nanmax(inlet_c[:, seen], axis=0)))


def compute_kpis(engine, ds: xr.Dataset, ev: pd.DataFrame) -> dict[str, float]:
    dt = engine.dt_s
    days = engine.horizon_s / 86400.0
    jobs = engine.jobs
    rec = engine.rec
    it = rec["facility_it_w"]
    tot = rec["facility_total_w"]
    tokens_total = float(sum(j.tokens for j in jobs))
    # rate while every delivered GPU is powered (the plan's full capacity), from the recorded series
    tok = rec["job_tokens"].sum(axis=1)
    full = (rec["gpus_powered"] == rec["gpus_installed"].max()) & (rec["gpus_installed"] > 0)
    full &= rec["gpus_installed"] == rec["gpus_installed"].max()
    if full.sum() >= 2:
        i0, i1 = np.flatnonzero(full)[[0, -1]]
        span_d = (i1 - i0) * dt / 86400.0
        tpd_full = float((tok[i1] - tok[i0]) / span_d) if span_d > 0 else math.nan
    else:
        tpd_full = math.nan
    alloc = sum(j.gpu_s_allocated for j in jobs)
    useful = sum(j.gpu_s_useful_total for j in jobs)
    # wall time of running whose work survived (GPU-seconds / GPUs held)
    useful_wall = sum(j.wall_s_useful + j.wall_s_pending for j in jobs)
    wall = sum(((j.end_s if not math.isnan(j.end_s) else engine.horizon_s) - j.first_start_s)
               for j in jobs if not math.isnan(j.first_start_s))
    inlet = np.where(rec["rack_state"] >= 1, rec["rack_inlet_c"], np.nan)
    e_it = float(it.sum() * dt / H / 1e6)
    e_tot = float(tot.sum() * dt / H / 1e6)
    kinds = ev["kind"].value_counts()
    n_int = int(sum(j.interruptions for j in jobs))
    return {
        "tokens_total": tokens_total,
        "tokens_per_day_mean": tokens_total / days,
        "tokens_per_day_full_capacity": tpd_full,
        "gpu_hours_installed": float(rec["gpus_installed"].sum() * dt / H),
        "gpu_hours_healthy": float(rec["gpus_healthy"].sum() * dt / H),
        "gpu_hours_busy": float(rec["gpus_busy"].sum() * dt / H),
        "goodput_fraction": float(useful / alloc) if alloc > 0 else math.nan,
        "interruptions": int(sum(j.interruptions for j in jobs)),
        "lost_gpu_hours": float(sum(j.gpu_s_lost for j in jobs) / H),
        "checkpoint_overhead_fraction": float(sum(j.checkpoint_s for j in jobs) / wall) if wall > 0 else math.nan,
        "effective_training_time_fraction": float(useful_wall / wall) if wall > 0 else math.nan,
        "mtbf_job_h": float(wall / H / n_int) if n_int else math.nan,
        "mttr_h": float(np.mean(engine.repair_times_h)) if engine.repair_times_h else math.nan,
        "failures": int(kinds.get("failure", 0)),
        "energy_it_mwh": e_it,
        "energy_facility_mwh": e_tot,
        "ups_loss_mwh": float(rec["ups_loss_w"].sum() * dt / H / 1e6),
        "pue_mean": e_tot / e_it if e_it > 0 else math.nan,
        "peak_facility_power_kw": float(tot.max() / 1e3),
        "peak_power_ramp_kw_per_s": float(np.abs(np.diff(tot)).max() / 1e3 / dt) if len(tot) > 1 else 0.0,
        "peak_sync_swing_kw": float(max(engine.peak_swing_w.values()) / 1e3),
        "max_rpp_load_fraction": float(rec["rpp_load_fraction"].max()),
        "max_feed_load_fraction": float(rec["feed_load_fraction"].max()),
        "max_rack_inlet_c": float(np.nanmax(inlet)) if np.isfinite(inlet).any() else math.nan,
        "hours_above_ashrae_recommended": float((inlet > 27.0).sum() * dt / H),
        "hours_outside_ashrae_recommended": float(((inlet > 27.0) | (inlet < 18.0)).sum() * dt / H),
        "throttled_node_hours": float(engine.throttled_node_s / H),
        "rci_hi_percent": _rci_hi(inlet),
        "breaker_trips": int(kinds.get("breaker_trip", 0)),
        "grid_drop_events": int(kinds.get("grid_drop", 0)),
    }
