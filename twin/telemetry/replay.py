"""Replay: measured rack power drives the facility models in place of the workload.

The measured IT load of every rack (node power summed per rack, PDU or IPMI readings) and,
when measured, the outdoor temperature replace the twin's ramp, scheduler, jobs and
failures; the twin then predicts what follows from them with the same models a run uses:

* the power chain (``twin.power.evaluate_power_tree`` on the scenario's tree): RPP, UPS and
  feed loads and losses, utility power; each feed's power is its IT path plus, where the
  chain puts the plant on the switchboards, its share of the cooling and house loads
  (``twin.power.chain.split_mechanical_w``, all feeds live), as a run records it;
* the cooling plant (``twin.power.cooling_power_w`` with the scenario's COP and fan/pump
  fraction) on the building heat, at the measured (or modelled) outdoor temperature;
* the inlet temperatures of every rack (the hall's steady recirculation model,
  ``inlet = supply + D @ rack_heat``, one mat-vec per sample), with the recirculation
  matrix of the cooling units measured running (``cooling_unit_running``, 1/0 per unit):
  the hall's model is switched as a run switches it at a cooling fault, but each sample is
  the steady state of its units (no fault transient between samples).

The result has the shape of a run's ``results.nc`` (``time`` x ``rack``/``rpp``/``feed``), so
``twin compare`` scores it against the measured facility power, losses and inlets.

Not replayed yet: a measured power-cap schedule (it shapes the load of a workload-driven
run; a replay takes the measured load, caps included), fault transients, and the
``physical`` cooling model.
"""

from __future__ import annotations

import numpy as np

from twin.telemetry.series import NS, TelemetryError, iso

#: Variables a replay drives from measurements.
DRIVERS = ("rack_power_w", "outdoor_temp_c", "cooling_unit_running")
#: The measured state of each cooling unit (not an output of a run: a replay input).
UNIT_STATE = ("cooling_unit_running", ("time", "cooling_unit"), "1",
              "cooling unit running (1) or stopped (0), measured; a window mean >= 0.5 counts as running")
#: Variables a replay predicts.
PREDICTED = ("rack_inlet_c", "rpp_power_w", "rpp_load_fraction", "feed_power_w", "feed_load_fraction",
             "ups_output_w", "ups_load_fraction", "ups_loss_w", "rpp_loss_w", "feed_loss_w",
             "distribution_loss_w", "facility_it_power_w", "cooling_power_w", "facility_total_power_w")


def replay_template(engine, t_ns: np.ndarray, dt_s: float):
    """An empty Dataset with the run's dimensions on the grid ``t_ns`` (for the mapping)."""
    import xarray as xr

    from twin.outputs import OUTPUT_BY_NAME
    coords = _coords(engine, t_ns)
    data = {}
    for name in DRIVERS:
        dims, units, long_name = _meta(name, OUTPUT_BY_NAME)
        shape = tuple(len(coords[d]) for d in dims)
        data[name] = (dims, np.full(shape, np.nan), {"units": units, "long_name": long_name})
    return xr.Dataset(data, coords=coords, attrs={"sample_interval_s": float(dt_s)})


def _coords(engine, t_ns):
    p, s = engine.plant, engine.s
    return {"time": t_ns.astype("datetime64[ns]"), "rack": list(p.rack_names),
            "rpp": np.arange(len(p.rpp_limit_w)), "feed": [f.name for f in s.site.power.feeds],
            "cooling_unit": [f"{h.name}/{c.name}" for h in s.site.halls for c in h.cooling_units]}


def _meta(name, table):
    if name == UNIT_STATE[0]:
        return UNIT_STATE[1], UNIT_STATE[2], UNIT_STATE[3]
    o = table[name]
    return o.dims, o.units, o.long_name


def replay_dataset(engine, rack_power_w: np.ndarray, t_ns: np.ndarray, dt_s: float,
                   outdoor_temp_c: np.ndarray | None = None, unit_running: np.ndarray | None = None):
    """Predict the facility from measured rack power.

    ``rack_power_w``: (T, R) [W] on the grid ``t_ns`` [epoch ns, UTC] (NaN where not measured:
    those samples stay NaN); ``outdoor_temp_c``: (T,) [degC] or None for the scenario's model;
    ``unit_running``: (T, U) in [0, 1] per cooling unit (NaN: as before) or None (all running).
    Returns an xarray Dataset shaped like a run's results.
    """
    import xarray as xr

    from twin import power
    from twin.outputs import OUTPUT_BY_NAME
    s, th = engine.s, engine.thermal
    if th.physical:
        raise TelemetryError("", "", "replay supports the legacy cooling model only: "
                                     "site.cooling_system.model: physical is not replayed yet; "
                                     "replay with --set site.cooling_system.model=legacy")
    rack_w = np.asarray(rack_power_w, float)
    ok = np.isfinite(rack_w).all(axis=1)
    w = np.where(ok[:, None], rack_w, 0.0)
    flow = power.evaluate_power_tree(engine.power.tree, w)
    start_ns = np.datetime64(s.simulation.start, "ns").astype(np.int64)
    t_s = (t_ns - start_ns) / NS
    # a chain that changes the UPS mode by date (Blue Vela's September bypass): each sample
    # above the RPPs in the mode of its date, as the run records it
    flow = engine.power.flow_by_ups_mode(flow, t_s)
    out_c = (np.asarray(outdoor_temp_c, float) if outdoor_temp_c is not None
             else np.asarray(engine.power.outdoor_temp_c(t_s), float) * np.ones(len(t_ns)))
    c = s.site.power.cooling
    heat = np.asarray(flow.building_heat_w, float)
    cool = np.asarray(power.cooling_power_w(heat, out_c, chiller_cop_at_25c=c.chiller_cop_at_25c,
                                            fan_pump_fraction=c.fan_pump_fraction), float)
    units = [(h, u) for h, hall in enumerate(th.halls) for u in range(len(hall.units))]
    running = np.ones((len(t_ns), len(units)), bool)
    inlet = np.empty((len(t_ns), w.shape[1]))
    for k in range(len(t_ns)):
        if unit_running is not None:
            for j, (h, u) in enumerate(units):
                x = unit_running[k, j]
                want = bool(x >= 0.5) if np.isfinite(x) else bool(th.halls[h].active[u])
                if want != bool(th.halls[h].active[u]):
                    th.set_unit(h, u, want)   # the hall's recirculation model for this set of units
                running[k, j] = want
        inlet[k] = th.inlets_c(w[k])
    ups_loss = np.asarray(flow.ups_loss_w, float).sum(axis=-1)
    # a feed's load as the run defines it (PowerChain.finish): its IT path and its share of the
    # cooling plant and house loads where the chain carries them on the switchboards
    from twin.power.chain import split_mechanical_w
    tree = engine.power.tree
    feed_w = np.asarray(flow.feed_w, float) + split_mechanical_w(
        s, cool, np.ones((len(t_ns), len(tree.feed_capacity_w)), bool))
    series = {
        "rack_power_w": rack_w, "outdoor_temp_c": out_c, "rack_inlet_c": inlet,
        "rpp_power_w": flow.rpp_w, "rpp_load_fraction": flow.rpp_load_fraction,
        "feed_power_w": feed_w, "feed_load_fraction": feed_w / tree.feed_capacity_w,
        "ups_output_w": flow.ups_output_w, "ups_load_fraction": flow.ups_load_fraction,
        "ups_loss_w": ups_loss, "rpp_loss_w": np.asarray(flow.rpp_loss_w, float).sum(axis=-1),
        "feed_loss_w": np.asarray(flow.feed_loss_w, float).sum(axis=-1),
        "distribution_loss_w": np.asarray(flow.utility_w) - np.asarray(flow.it_w) - ups_loss,
        "facility_it_power_w": flow.it_w, "cooling_power_w": cool,
        "facility_total_power_w": np.asarray(flow.utility_w) + cool,
        "cooling_unit_running": running.astype(float),
    }
    coords = _coords(engine, t_ns)
    data = {}
    for name, arr in series.items():
        dims, units_, long_name = _meta(name, OUTPUT_BY_NAME)
        a = np.asarray(arr, float)
        if name not in DRIVERS:   # no prediction where the driving load was not measured
            a = np.where(ok.reshape((-1,) + (1,) * (a.ndim - 1)), a, np.nan)
        data[name] = (dims, a, {"units": units_, "long_name": long_name})
    from twin.scenario.loader import scenario_hash
    return xr.Dataset(data, coords=coords, attrs={
        "title": f"twin replay of measured load, scenario {s.name}", "scenario_name": s.name,
        "scenario_hash": scenario_hash(s), "sample_interval_s": float(dt_s),
        "replay_drivers": "rack_power_w" + (", outdoor_temp_c" if outdoor_temp_c is not None else "")
                          + (", cooling_unit_running" if unit_running is not None else "")})


def measured_grid(groups, dt_s: float) -> np.ndarray:
    """The grid a replay runs on: every ``dt_s`` over the span all rack-power series cover."""
    rack = [g for g in groups if g.variable == "rack_power_w"]
    if not rack:
        raise TelemetryError("", "rack_power_w", "a replay needs measured rack power (map node or PDU "
                                                 "power to rack_power_w, per rack)")
    t0 = max(int(s.t_ns[0]) for g in rack for s in g.members)
    t1 = min(int(s.t_ns[-1]) for g in rack for s in g.members)
    if t1 <= t0:
        raise TelemetryError("", "rack_power_w", f"the racks' measurements share no time span "
                                                 f"(latest start {iso(t0)}, earliest end {iso(t1)})")
    step = int(round(dt_s * NS))
    first = -(-t0 // step) * step          # first multiple of the step inside the span
    return np.arange(first, t1 + 1, step, dtype=np.int64)
