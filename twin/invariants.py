"""Run-time invariants: checks of a finished run's Results that a correct model always
satisfies, reported as warnings (``kpis.json`` key ``warnings``, the report, the CLI).

A warning does not stop a run: it says which number cannot be trusted and why.

- **energy balance**: utility power = IT + UPS loss + distribution loss + cooling, sample
  by sample; the distribution loss is the RPP and feed losses; the facility IT power is the
  sum of the rack powers; the utility feeds together carry the utility power (less the
  cooling, unless ``site.power.chain.mechanical`` puts the plant and the house loads on the
  switchboards, when they carry the house loads too), also during a single-feed loss; the
  energy KPIs are the integrals of those series.
- **non-negative energies**: no power, loss or energy below zero.
- **temperature ceilings**: a powered rack's inlet stays within the ASHRAE A4 allowable
  envelope (45 C), beyond which every air-cooled server class is out of specification; a
  GPU stays below :data:`GPU_TEMP_CEILING_C`. The engine's racks shut themselves down at
  :data:`twin.thermal.SERVER_INLET_SHUTDOWN_C` (43 C) and GPUs at their shutdown
  temperature, so a warning here means a protection did not act and the run is outside
  what the model describes.
- **power limits**: no utility feed carries more than its capacity (``feed_load_fraction``,
  its IT path and, where the chain says so, its share of the cooling: nothing in the model
  trips a feed in normal operation, so the run goes on and the warning says so), and no
  rack PDU cord carries more than its branch breaker's continuous limit in normal operation,
  nor a live cord during a feed loss (``branch_load_fraction_max``).
- **accounting**: busy <= healthy <= powered <= installed GPUs; nodes in repair <= nodes
  failed; spares in stock >= 0; every detected failure is repaired or still open at the end.

References
----------
ASHRAE TC 9.9 (2021). *Thermal Guidelines for Data Processing Environments*, 5th ed.,
allowable envelopes A1-A4 (A4: 5-45 C dry bulb).
"""

from __future__ import annotations

import json
import math

import numpy as np

#: relative tolerance of the balances (float32 series summed over thousands of racks)
REL_TOL = 1e-5
#: hottest inlet a powered air-cooled rack can run at [C] (ASHRAE A4 allowable upper bound)
INLET_CEILING_C = 45.0
#: hottest GPU temperature a running GPU reaches [C] (assumption: data-centre GPUs slow down
#: near 85-90 C and their hardware protection shuts them down a little above)
GPU_TEMP_CEILING_C = 100.0
_H = 3600.0


def _warn(out: list, check: str, message: str) -> None:
    out.append({"check": check, "message": message})


def _series(ds, name):
    return np.asarray(ds[name].values, float) if name in ds else None


def _when(ds, i: int) -> str:
    return str(np.datetime_as_string(ds["time"].values[i], unit="m")) if "time" in ds else f"sample {i}"


def _close(a: np.ndarray, b: np.ndarray, scale: float) -> tuple[bool, int, float]:
    err = np.abs(a - b)
    i = int(np.nanargmax(err)) if err.size else 0
    worst = float(err[i]) if err.size else 0.0
    return (worst <= REL_TOL * max(scale, 1.0)), i, worst


def energy_balance(ds, kpis: dict, out: list) -> None:
    tot, it = _series(ds, "facility_total_power_w"), _series(ds, "facility_it_power_w")
    if tot is None or it is None:
        return
    scale = float(np.nanmax(np.abs(tot))) if tot.size else 0.0
    parts = [n for n in ("ups_loss_w", "distribution_loss_w", "cooling_power_w") if n in ds]
    if len(parts) == 3:
        ok, i, worst = _close(tot, it + sum(_series(ds, n) for n in parts), scale)
        if not ok:
            _warn(out, "energy_balance", f"utility power differs from IT + UPS loss + distribution loss + "
                                         f"cooling by {worst / 1e3:.3g} kW at {_when(ds, i)}")
    if all(n in ds for n in ("distribution_loss_w", "rpp_loss_w", "feed_loss_w")):
        ok, i, worst = _close(_series(ds, "distribution_loss_w"),
                              _series(ds, "rpp_loss_w") + _series(ds, "feed_loss_w"), scale)
        if not ok:
            _warn(out, "energy_balance", f"distribution loss differs from RPP + feed losses by "
                                         f"{worst / 1e3:.3g} kW at {_when(ds, i)}")
    _feeds_carry_the_utility_power(ds, tot, scale, out)
    if "rack_power_w" in ds:
        ok, i, worst = _close(it, np.asarray(ds["rack_power_w"].sum("rack").values, float), scale)
        if not ok:
            _warn(out, "energy_balance", f"facility IT power differs from the sum of the racks by "
                                         f"{worst / 1e3:.3g} kW at {_when(ds, i)}")
    dt = float(ds.attrs.get("sample_interval_s", math.nan))
    for kpi, name in (("energy_it_mwh", "facility_it_power_w"), ("energy_facility_mwh", "facility_total_power_w")):
        v = kpis.get(kpi)
        if isinstance(v, (int, float)) and math.isfinite(dt) and name in ds:
            want = float(np.nansum(_series(ds, name))) * dt / _H / 1e6
            if not math.isclose(v, want, rel_tol=REL_TOL, abs_tol=1e-9):
                _warn(out, "energy_balance", f"{kpi} = {v:.6g} MWh but its power series integrates to "
                                             f"{want:.6g} MWh")


def _mechanical_on_feeds(ds) -> tuple[bool, float]:
    """(the chain puts the cooling plant and house loads on the switchboards, house loads [W])
    from the run's scenario (``scenario_json``), as :func:`twin.power.chain.mechanical_on_feeds`."""
    try:
        chain = json.loads(ds.attrs["scenario_json"])["site"]["power"]["chain"]
    except (KeyError, TypeError, ValueError):
        return False, 0.0
    if not chain or "switchboards" not in chain["mechanical"]["carried_by"]:
        return False, 0.0
    return True, float(chain["mechanical"]["house_kw"]) * 1e3


def _feeds_carry_the_utility_power(ds, tot: np.ndarray, scale: float, out: list) -> None:
    """Sum of ``feed_power_w`` = the utility power less the cooling, or plus the house loads
    where the feeds carry the mechanical plant; samples with no feed carrying anything (every
    feed lost) are skipped."""
    feed, cool = _series(ds, "feed_power_w"), _series(ds, "cooling_power_w")
    if feed is None or cool is None or "scenario_json" not in ds.attrs:
        return
    on_feeds, house_w = _mechanical_on_feeds(ds)
    want = tot + house_w if on_feeds else tot - cool
    got = feed.reshape(feed.shape[0], -1).sum(axis=1)
    live = got > 0
    ok, i, worst = _close(got[live], want[live], scale)
    if not ok:
        what = "the utility power and the house loads" if on_feeds else "the utility power less the cooling"
        _warn(out, "energy_balance", f"the utility feeds together differ from {what} by {worst / 1e3:.3g} kW "
                                     f"at {_when(ds, int(np.flatnonzero(live)[i]))} (feed_power_w)")


def non_negative(ds, kpis: dict, out: list) -> None:
    for name in ds.data_vars:
        if not (name.endswith("_power_w") or name.endswith("_loss_w")) or ds[name].dtype.kind not in "fiu":
            continue
        v = np.asarray(ds[name].values, float)
        if v.size and np.nanmin(v) < -1e-6 * max(1.0, float(np.nanmax(np.abs(v)))):
            i = np.unravel_index(int(np.nanargmin(v)), v.shape)[0]
            _warn(out, "non_negative", f"{name} is negative ({np.nanmin(v):.4g} W) at {_when(ds, int(i))}")
        if v.size and np.isnan(v).all():
            _warn(out, "non_negative", f"{name} has no value at any sample")
    for k, v in kpis.items():
        if (k.startswith("energy_") or k.endswith("_mwh")) and isinstance(v, (int, float)) and v < 0:
            _warn(out, "non_negative", f"{k} = {v:.4g} MWh is negative")


def temperature_ceilings(ds, kpis: dict, out: list) -> None:
    if "rack_state" not in ds:
        return
    from twin.sim.state import RackState
    on = np.asarray(RackState.powered(ds["rack_state"].values))
    racks = [str(r) for r in ds["rack"].values] if "rack" in ds.coords else None
    for name, ceiling, what in (("rack_inlet_c", INLET_CEILING_C, "inlet (ASHRAE A4 allowable ends at 45 C; "
                                 "servers shut down before this)"),
                                ("rack_gpu_temp_max_c", GPU_TEMP_CEILING_C, "GPU temperature (hardware "
                                 "protection shuts a GPU down before this)")):
        if name not in ds:
            continue
        t = np.where(on, np.asarray(ds[name].values, float), np.nan)
        if not np.isfinite(t).any():
            continue
        hot = t > ceiling
        if hot.any():
            i, r = np.unravel_index(int(np.nanargmax(t)), t.shape)
            rack = racks[r] if racks else str(r)
            _warn(out, "temperature_ceiling",
                  f"{int(hot.any(axis=0).sum())} powered racks exceed a {ceiling:g} C {what}; hottest "
                  f"{float(t[i, r]):.4g} C at rack {rack}, {_when(ds, int(i))}")
        if np.nanmin(t) <= -273.15:
            _warn(out, "temperature_ceiling", f"{name} at or below absolute zero")


def power_limits(ds, kpis: dict, out: list) -> None:
    lf = _series(ds, "feed_load_fraction")
    if lf is not None and lf.size and np.nanmax(lf) > 1.0:
        lf = lf.reshape(lf.shape[0], -1)
        names = [str(f) for f in ds["feed"].values] if "feed" in ds.coords else [str(f) for f in range(lf.shape[1])]
        for f in range(lf.shape[1]):
            over = lf[:, f] > 1.0
            if over.any():
                i = int(np.nanargmax(lf[:, f]))
                h = float(ds.attrs.get("sample_interval_s", _H)) / _H
                _warn(out, "power_limits", f"feed {names[f]} above its capacity for {over.sum() * h:.4g} h, at "
                                           f"most {lf[i, f]:.3g} x at {_when(ds, i)} (feed_load_fraction; no "
                                           f"protection trips it in the model)")
    br = _series(ds, "branch_load_fraction_max")
    if br is not None and np.isfinite(br).any() and np.nanmax(br) > 1.0:
        over = br > 1.0
        i = int(np.nanargmax(br))
        h = float(ds.attrs.get("sample_interval_s", _H)) / _H
        _warn(out, "power_limits", f"rack PDU cords above their branch breaker's continuous limit (in normal "
                                   f"operation, or the live cords during a feed loss) for {over.sum() * h:.4g} h, "
                                   f"at most {br[i]:.3g} x at {_when(ds, i)} (branch_load_fraction_max)")


def accounting(ds, kpis: dict, out: list, events=None) -> None:
    chain = [n for n in ("gpus_busy", "gpus_healthy", "gpus_powered", "gpus_installed") if n in ds]
    for lo, hi in zip(chain, chain[1:], strict=False):
        a, b = _series(ds, lo), _series(ds, hi)
        bad = a > b + 1e-9
        if bad.any():
            i = int(np.argmax(bad))
            _warn(out, "accounting", f"{lo} ({a[i]:.0f}) exceeds {hi} ({b[i]:.0f}) at {_when(ds, i)}")
    if "nodes_in_repair" in ds and "nodes_failed" in ds:
        bad = _series(ds, "nodes_in_repair") > _series(ds, "nodes_failed") + 1e-9
        if bad.any():
            _warn(out, "accounting", f"more nodes in repair than failed at {_when(ds, int(np.argmax(bad)))}")
    if "spares_in_stock" in ds:
        s = _series(ds, "spares_in_stock")
        if s.size and np.nanmin(s) < 0:
            _warn(out, "accounting", f"spares in stock negative ({np.nanmin(s):.3g}) at "
                                     f"{_when(ds, int(np.nanargmin(s)))}")
    if events is not None and len(events) and "repairs_open_at_end" in kpis:
        kinds = events["kind"].value_counts()
        detected, done = int(kinds.get("detected", 0)), int(kinds.get("repair_end", 0))
        open_ = kpis["repairs_open_at_end"]
        if isinstance(open_, (int, float)) and math.isfinite(open_) and detected != done + int(open_):
            _warn(out, "accounting", f"{detected} detected failures but {done} repairs finished and "
                                     f"{int(open_)} open at the end")


CHECKS = (energy_balance, non_negative, temperature_ceilings, power_limits, accounting)


def check_results(results) -> list[dict]:
    """Every invariant of a finished run: a list of ``{"check", "message"}`` (empty = all hold)."""
    out: list[dict] = []
    ds, kpis = results.dataset, results.kpis
    for check in CHECKS:
        try:
            if check is accounting:
                check(ds, kpis, out, results.events)
            else:
                check(ds, kpis, out)
        except (KeyError, ValueError, TypeError, IndexError) as exc:   # a check that cannot run says so
            _warn(out, check.__name__, f"check could not run: {type(exc).__name__}: {exc}")
    return out


def warnings_json(warnings: list[dict]) -> str:
    return json.dumps(warnings)
