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
from twin.outputs import OUTPUTS, RunRecord, compute_kpis, goodput_fraction, kpi_units
from twin.scenario.loader import scenario_hash

H = 3600.0

#: {KPI: (unit, long name)} of a run, from the output table (twin.outputs.KPIS)
KPI_UNITS: dict[str, tuple[str, str]] = kpi_units("run")


@dataclass
class Results:
    """What a run produced. ``dataset``: xarray; ``events``: DataFrame; ``kpis``: dict."""

    dataset: xr.Dataset
    events: pd.DataFrame
    kpis: dict[str, float]
    fields: dict[str, xr.Dataset] = field(default_factory=dict)   # steady thermal field per hall

    def save(self, out_dir: str | Path, *, force: bool = False, warnings: list | None = None) -> Path:
        """Write results.nc, events.csv, kpis.json (and field_<hall>.nc) into ``out_dir``
        crash-safely. ``out_dir`` may replace only a previous twin result or an empty folder
        unless ``force`` (:func:`twin.store_io.save_results`). ``warnings``: the run-time
        invariant warnings (:func:`twin.invariants.check_results`) if already computed."""
        from twin.store_io import save_results
        return save_results(self, out_dir, force=force, warnings=warnings)

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


def build_results(scenario, plant, run: RunRecord) -> Results:
    """Turn a run's record (the recorder's API: series, jobs, events, counters) into
    Results: a Dataset with units and long names from the output table, the event table,
    and the KPIs of :data:`twin.outputs.KPIS`."""
    from twin.sim.state import RackState
    from twin.thermal import ashrae_class

    s, p, rec, dt = scenario, plant, run.series, run.dt_s
    level = s.outputs.rack_series
    T = len(rec["facility_it_power_w"])
    t_s = np.arange(T) * dt
    start = np.datetime64(s.simulation.start.isoformat(), "s")
    times = start + (t_s * 1e3).astype("timedelta64[ms]")
    derived = {
        "job_goodput_fraction": np.array([goodput_fraction(j.gpu_s_useful_total, j.gpu_s_allocated, j.gpu_s_spare)
                                          for j in run.jobs]),
        "job_spare_gpu_hours": np.array([j.gpu_s_spare / H for j in run.jobs]),
        "job_interruptions": np.array([j.interruptions for j in run.jobs]),
    }
    agg = run.rack_agg
    if agg is None:
        ashrae = np.where(RackState.powered(rec["rack_state"]), ashrae_class(rec["rack_inlet_c"]), -1)
        derived["rack_ashrae_class"] = ashrae
        derived["rack_hours_outside_recommended"] = (ashrae > 0).sum(axis=0) * dt / H
    else:                                 # outputs.rack_series below full: run aggregates
        derived.update({
            "rack_hours_outside_recommended": agg.n_ashrae_out * dt / H,
            "rack_inlet_max_c": agg.inlet_max_c, "rack_power_max_w": agg.power_max_w,
            "rack_energy_mwh": agg.power_sum_w * dt / H / 1e6, "rack_power_at_peak_w": agg.power_at_peak_w,
            "rpp_load_fraction_max": agg.rpp_lf_max,
            "hall_power_w": agg.hall_power_w, "hall_inlet_max_c": agg.hall_inlet_max_c})
    v = {}
    for o in OUTPUTS:
        if not o.kept(level):
            continue
        data = rec[o.name] if o.recorded else derived[o.name]
        v[o.name] = xr.DataArray(np.asarray(data, dtype=o.dtype), dims=o.dims,
                                 attrs={"units": o.units, "long_name": o.long_name})
    coords = {
        "time": times, "rack": p.rack_names,
        "rack_x_m": ("rack", p.rack_xy_m[:, 0], {"units": "m", "long_name": "rack centre x"}),
        "rack_y_m": ("rack", p.rack_xy_m[:, 1], {"units": "m", "long_name": "rack centre y"}),
        "rack_hall": ("rack", p.rack_hall),
        "rack_rpp": ("rack", p.rack_rpp),
        "rpp": np.arange(len(p.rpp_limit_w)),
        "feed": [f.name for f in s.site.power.feeds],
        "cooling_unit": [f"{h.name}/{c.name}" for h in s.site.halls for c in h.cooling_units],
        "job": [j.name for j in run.jobs],
    }
    if level == "hall":
        coords["hall"] = [h.name for h in s.site.halls]
    ds = xr.Dataset(v, coords=coords)
    ev = pd.DataFrame(run.events, columns=["time_s", "kind", "target", "detail"])
    ev.insert(0, "time", (start + (ev["time_s"].to_numpy() * 1e3).astype("timedelta64[ms]")).astype(str))
    kpis = compute_kpis(run)
    ds.attrs = {
        "title": f"twin run of scenario {s.name}",
        "scenario_name": s.name,
        "scenario_hash": scenario_hash(s),
        "seed": int(s.simulation.seed),
        "twin_version": __version__,
        "sample_interval_s": float(dt),
        "rack_series": level,
        "scenario_json": json.dumps(s.model_dump(mode="json"), sort_keys=True),
    }
    return Results(ds, ev, kpis)
