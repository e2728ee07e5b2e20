"""Checks that make ``twin validate`` refuse everything ``twin run`` would crash on, hang on
or mishandle (issue 18, "validation parity", "honest time", "bounded work").

Each function takes a validated :class:`~twin.scenario.schema.Scenario` and returns
``(dotted path, value, expected)`` triples, like
:func:`twin.scenario.loader.semantic_problems`, which calls them:

- :func:`name_problems`: names unique where they identify something (halls, feeds, rows
  and cooling units of a hall);
- :func:`time_problems`: the sample interval divides the horizon, the run ends before
  :data:`LATEST_DATE`, a job can make progress (its token target is at least one step);
- :func:`geometry_problems`: the hall rasterised exactly as the run's thermal model does
  it (rack overlaps, faces against a wall or blocked), racks clear of obstacles and cooling
  units, a grid cell no larger than a rack;
- :func:`work_problems`: an up-front estimate of the memory a run needs and of the events
  it will process, refused above :func:`run_memory_limit` (8 GiB or the machine's memory,
  the smaller) and :data:`MAX_EVENTS` with
  the parameter that drives it named.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections.abc import Iterable

import numpy as np

from twin.scenario.schema import LATEST_DATE, Scenario

Found = list[tuple[str, object, str]]

DAY_S = 86400.0
#: memory a run may need before validation refuses it [B], unless the machine has less
#: (:func:`run_memory_limit`); ``TWIN_MAX_MEMORY_GB`` overrides both
MAX_RUN_MEMORY_BYTES = int(float(os.environ.get("TWIN_MAX_MEMORY_GB", "8")) * 2**30)


def machine_memory_bytes() -> int | None:
    """Physical memory of this machine [B] (``sysconf``: pages x page size), None where the
    platform does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def run_memory_limit() -> tuple[int, str]:
    """(the memory a run may need [B], what sets it): ``TWIN_MAX_MEMORY_GB`` when set, else
    the smaller of :data:`MAX_RUN_MEMORY_BYTES` and this machine's physical memory (a run
    that cannot fit in the machine is refused before it starts, issue 19)."""
    if os.environ.get("TWIN_MAX_MEMORY_GB"):
        return MAX_RUN_MEMORY_BYTES, "TWIN_MAX_MEMORY_GB"
    phys = machine_memory_bytes()
    if phys is not None and phys < MAX_RUN_MEMORY_BYTES:
        return phys, f"this machine's memory ({phys / 2**30:.3g} GiB)"
    return MAX_RUN_MEMORY_BYTES, "the default limit"
#: simulated events a run may be expected to process (a few minutes of engine time) ...
MAX_EVENTS = 2_000_000
#: ... or, on a larger site, this many per node and simulated day (the default failure mix
#: gives ~0.16 at the Arrhenius ceiling; an event storm tens): a gigawatt site's year is
#: millions of events without being a storm
MAX_EVENTS_PER_NODE_DAY = 1.0
#: thermal grid cells (x * y * layers) per hall
MAX_HALL_CELLS = 2_000_000
#: GPU temperature the failure-rate estimate takes as the hottest a running GPU reaches [C]
#: (assumption: data-centre GPUs slow down near 85-90 C and shut down a little above)
GPU_TEMP_CEILING_C = 100.0
#: events one failure sets off (detection, job interruption, repair start and end, restock)
EVENTS_PER_FAILURE = 6
#: bytes per recorded sample per rack (five float64 rack series, kept about three times over:
#: recorder, Dataset, netCDF write) and per RPP, feed and job series
_BYTES_PER_RACK_SAMPLE = 5 * 8 * 3
_BYTES_PER_OTHER_SAMPLE = 3 * 8 * 3
_BYTES_PER_SCALAR_SAMPLE = 25 * 8 * 3
#: below outputs.rack_series: full, the recorder's window of rack series (twin.sim.recorder,
#: kept with its power-tree temporaries about three times over) and the per-rack aggregates
_WINDOW_BYTES = 64 * 2**20
_BYTES_PER_RACK_AGGREGATE = 64 * 3
#: bytes per thermal grid cell (sparse operator rows, solver work arrays) and per rack pair
#: of the recirculation matrix
_BYTES_PER_CELL = 2048
_BYTES_PER_RACK_PAIR = 8 * 4


def _dupes(names: Iterable[str]) -> list[tuple[int, str]]:
    seen: set[str] = set()
    out = []
    for i, n in enumerate(names):
        if n in seen:
            out.append((i, n))
        seen.add(n)
    return out


def name_problems(s: Scenario) -> Found:
    """Names that identify something are unique (a second hall of the same name would
    overwrite the first one's field file; a second feed's outages would hit the first)."""
    out: Found = []
    for i, n in _dupes(h.name for h in s.site.halls):
        out.append((f"site.halls.{i}.name", n, "a hall name used once"))
    for i, n in _dupes(f.name for f in s.site.power.feeds):
        out.append((f"site.power.feeds.{i}.name", n, "a feed name used once"))
    for h, hall in enumerate(s.site.halls):
        for i, n in _dupes(c.name for c in hall.cooling_units):
            out.append((f"site.halls.{h}.cooling_units.{i}.name", n, "a cooling unit name used once in the hall"))
        for i, n in _dupes(r.name for r in hall.rows):
            out.append((f"site.halls.{h}.rows.{i}.name", n, "a row name used once in the hall"))
    return out


def horizon_s(s: Scenario) -> float:
    return s.simulation.duration_days * DAY_S


def n_samples(s: Scenario) -> int:
    return int(math.ceil(horizon_s(s) / s.simulation.sample_interval_s - 1e-9))


def time_problems(s: Scenario) -> Found:
    """The run ends exactly at the requested end, within the representable dates, and every
    job can make progress."""
    out: Found = []
    sim = s.simulation
    ratio = horizon_s(s) / sim.sample_interval_s
    if abs(ratio - round(ratio)) > 1e-9 * max(1.0, ratio) or round(ratio) < 1:
        out.append(("simulation.sample_interval_s", sim.sample_interval_s,
                    f"an interval that divides the {horizon_s(s):g} s horizon into whole samples "
                    f"(it gives {ratio:.6g}; the last sample would run past the end and every "
                    f"KPI would divide by the wrong time)"))
    try:
        end = sim.start + dt.timedelta(days=sim.duration_days)
    except OverflowError:
        end = dt.date.max
    if end > LATEST_DATE:
        out.append(("simulation.duration_days", sim.duration_days,
                    f"a run that ends by {LATEST_DATE.isoformat()} (this one ends {end.isoformat()})"))
    for j, job in enumerate(s.workload.jobs):
        step_tokens = job.global_batch * job.seq_len
        if job.tokens_target is not None and job.tokens_target < step_tokens:
            out.append((f"workload.jobs.{j}.tokens_target", job.tokens_target,
                        f"at least one step's tokens (global_batch x seq_len = {step_tokens}); "
                        f"a job cannot make a fraction of a step of progress"))
    return out


def _rack_rectangles(hall) -> tuple[np.ndarray, list[str]]:
    """(R, 4) footprints x0, y0, x1, y1 [m] and names of a hall's racks (row geometry as
    :func:`twin.plant.rack_positions` expands it)."""
    from twin.plant import rack_positions
    xy, intake, _, names = rack_positions(hall)
    along_x = np.abs(intake[:, 0]) > np.abs(intake[:, 1])       # depth along x
    hx = np.where(along_x, hall.rack_depth_m, hall.rack_width_m) / 2
    hy = np.where(along_x, hall.rack_width_m, hall.rack_depth_m) / 2
    return np.column_stack([xy[:, 0] - hx, xy[:, 1] - hy, xy[:, 0] + hx, xy[:, 1] + hy]), names


def hall_cells(hall) -> int:
    nx = max(1, int(round(hall.width_m / hall.cell_m)))
    ny = max(1, int(round(hall.depth_m / hall.cell_m)))
    return nx * ny * hall.layers


def geometry_problems(s: Scenario) -> Found:
    """The hall as the run's thermal model rasterises it, plus what the raster alone lets
    through: racks under an obstacle, a cooling unit standing on a rack, cells coarser than
    a rack."""
    from twin.plant import hall_geometries
    from twin.thermal.geometry import rasterise

    out: Found = []
    ok_halls = []
    for h, hall in enumerate(s.site.halls):
        where = f"site.halls.{h}"
        rack_min = min(hall.rack_width_m, hall.rack_depth_m)
        if hall.cell_m > rack_min:
            out.append((f"{where}.cell_m", hall.cell_m,
                        f"a grid cell no larger than a rack ({rack_min} m), so every rack has cells of its own"))
            continue
        if hall_cells(hall) > MAX_HALL_CELLS:
            continue                     # reported by work_problems
        rects, names = _rack_rectangles(hall)
        if (rects[:, :2].min() < 0 or rects[:, 2].max() > hall.width_m or rects[:, 3].max() > hall.depth_m):
            continue                     # a row outside the hall: reported by semantic_problems
        if any(not (0 <= cu.x_m <= hall.width_m and 0 <= cu.y_m <= hall.depth_m)
               for cu in hall.cooling_units):
            continue                     # a unit outside the hall: reported by semantic_problems
        for o, ob in enumerate(hall.obstacles):
            x0, x1 = sorted((ob.x0_m, ob.x1_m))
            y0, y1 = sorted((ob.y0_m, ob.y1_m))
            hit = (rects[:, 0] < x1) & (rects[:, 2] > x0) & (rects[:, 1] < y1) & (rects[:, 3] > y0)
            if hit.any():
                out.append((f"{where}.obstacles.{o}", ob.name,
                            f"an obstacle clear of the racks (it covers rack {names[int(np.argmax(hit))]}); "
                            f"the plan-view airflow model treats obstacles as floor-to-ceiling"))
        for c, cu in enumerate(hall.cooling_units):
            on = ((rects[:, 0] <= cu.x_m) & (cu.x_m <= rects[:, 2])
                  & (rects[:, 1] <= cu.y_m) & (cu.y_m <= rects[:, 3]))
            if on.any():
                out.append((f"{where}.cooling_units.{c}", {"x_m": cu.x_m, "y_m": cu.y_m},
                            f"a cooling unit clear of the racks (it stands on rack {names[int(np.argmax(on))]})"))
        ok_halls.append(h)
    if out or not ok_halls:
        return out
    try:
        geoms = hall_geometries(s)
    except (ValueError, KeyError, IndexError) as exc:     # e.g. more racks than RPPs: reported elsewhere
        del exc
        return out
    for h, (geom, _) in enumerate(geoms):
        try:
            rasterise(geom)
        except ValueError as exc:
            _, names = _rack_rectangles(s.site.halls[h])

            def rack_name(m: re.Match, names: list[str] = names) -> str:
                return f"rack {names[int(m.group(1))]}"
            text = re.sub(r"rack (\d+)", rack_name, str(exc))
            out.append((f"site.halls.{h}.rows", text, "racks that do not overlap, with intake and exhaust "
                        "faces free of walls, other racks and obstacles (on the hall's grid of cell_m)"))
    return out


def _nodes(s: Scenario) -> int:
    """Nodes in every rack position (rows and racks may override ``hardware.nodes_per_rack``)."""
    from twin.plant import scenario_racks
    return int(scenario_racks(s)[1].sum())


def _racks(s: Scenario) -> int:
    return sum(r.racks for h in s.site.halls for r in h.rows)


def memory_estimate_bytes(s: Scenario) -> dict[str, float]:
    """Bytes a run needs, by what drives them: recorded samples x (racks, RPPs, feeds,
    jobs), the thermal grids and the recirculation matrices. An estimate to refuse absurd
    inputs up front, not a measurement (within a factor of a few)."""
    T = n_samples(s)
    R = _racks(s)
    P = s.site.power.rpp.count
    F = len(s.site.power.feeds)
    J = len(s.workload.jobs)
    per_hall_racks = [sum(r.racks for r in h.rows) for h in s.site.halls]
    out = {
        "simulation.sample_interval_s": float(T) * _BYTES_PER_SCALAR_SAMPLE,
        "workload.jobs": float(T) * (J + F) * _BYTES_PER_OTHER_SAMPLE,
        "site.halls.0.rows": float(_nodes(s)) * 512,
    }
    level = s.outputs.rack_series
    if level == "full":      # every rack and RPP at every sample (twin/sim/recorder.py)
        out["outputs.rack_series"] = float(T) * R * _BYTES_PER_RACK_SAMPLE
        out["site.power.rpp.count"] = float(T) * P * _BYTES_PER_OTHER_SAMPLE + P * 64.0
    else:                    # a window of the rack series, run aggregates, per-hall series
        out["outputs.rack_series"] = (_WINDOW_BYTES * 3 + float(R) * _BYTES_PER_RACK_AGGREGATE
                                      + (float(T) * len(s.site.halls) * 16 * 3 if level == "hall" else 0.0))
        out["site.power.rpp.count"] = P * 64.0
    for h, hall in enumerate(s.site.halls):
        out[f"site.halls.{h}.cell_m"] = float(hall_cells(hall)) * _BYTES_PER_CELL
        out[f"site.halls.{h}.rows"] = out.get(f"site.halls.{h}.rows", 0.0) + float(
            per_hall_racks[h]) ** 2 * _BYTES_PER_RACK_PAIR
    return out


def event_estimate(s: Scenario) -> dict[str, float]:
    """Events a run is expected to process, by the parameter that drives them.

    Failures: catalog rate per node-hour x ``rate_scale`` x the largest class scale x the
    Arrhenius factor of a GPU at :data:`GPU_TEMP_CEILING_C` against the reference
    temperature, over every node that can be delivered, for the whole horizon; each
    failure sets off :data:`EVENTS_PER_FAILURE` events. Plus samples, checkpoints,
    maintenance windows, grid and cooling disturbances.
    """
    from twin.reliability import load_failure_classes
    from twin.thermal import arrhenius_acceleration

    f = s.failures
    hours = horizon_s(s) / 3600.0
    years = hours / 8766.0
    nodes = _nodes(s)
    out: dict[str, float] = {"simulation.sample_interval_s": float(n_samples(s)) * 2}
    if f.enabled:
        base = sum(c.rate_per_node_s for c in load_failure_classes()) * 3600.0  # [1/(node*h)]
        cls = max([1.0, *f.class_rate_scale.values()])
        with np.errstate(all="ignore"):
            accel = float(arrhenius_acceleration(GPU_TEMP_CEILING_C, f.arrhenius_reference_temp_c,
                                                 f.activation_energy_ev))
        accel = max(accel, 1.0) if math.isfinite(accel) else math.inf
        n_fail = base * f.rate_scale * cls * nodes * hours
        key = "failures.rate_scale"
        if accel > 10.0 and f.rate_scale * cls <= 100.0:
            key = "failures.arrhenius_reference_temp_c"
        elif cls > max(f.rate_scale, 1.0):
            key = "failures.class_rate_scale"
        out[key] = out.get(key, 0.0) + n_fail * accel * EVENTS_PER_FAILURE
        out["failures.burn_in_expected_failures_per_node"] = (
            f.burn_in_expected_failures_per_node * nodes * EVENTS_PER_FAILURE)
        out["failures.planned_maintenance_per_day"] = f.planned_maintenance_per_day * hours / 24.0 * 4
    g = s.site.power.grid
    out["site.power.grid"] = (g.sag_rate_per_year + g.outage_rate_per_year
                              + g.feed_outage_rate_per_year * len(s.site.power.feeds)) * years * 4
    units = sum(len(h.cooling_units) for h in s.site.halls)
    out["site.cooling_faults.unit_failure_rate_per_year"] = (
        s.site.cooling_faults.unit_failure_rate_per_year * units * years * 4)
    for j, job in enumerate(s.workload.jobs):
        if job.checkpoint_interval_s != "auto":
            out[f"workload.jobs.{j}.checkpoint_interval_s"] = horizon_s(s) / float(job.checkpoint_interval_s) * 3
    return out


def work_problems(s: Scenario) -> Found:
    """Refuse a run whose estimated memory or event count is absurd, naming the driver."""
    out: Found = []
    for h, hall in enumerate(s.site.halls):
        cells = hall_cells(hall)
        if cells > MAX_HALL_CELLS:
            out.append((f"site.halls.{h}.cell_m", hall.cell_m,
                        f"at most {MAX_HALL_CELLS:,} grid cells per hall (width_m/cell_m x depth_m/cell_m x "
                        f"layers = {cells:,}); use a coarser cell_m or a smaller hall"))
    if out:
        return out
    mem = memory_estimate_bytes(s)
    total = sum(mem.values())
    limit, why = run_memory_limit()
    if not total <= limit:
        key = max(mem, key=lambda k: mem[k])
        out.append((key, _value_at(s, key),
                    f"a run that fits in {limit / 2**30:.3g} GiB, set by {why} (estimated {total / 2**30:.3g} GiB, "
                    f"most of it from {key}; TWIN_MAX_MEMORY_GB sets the limit"
                    + ("; outputs.rack_series: none keeps per-rack run aggregates instead of series"
                       if key == "outputs.rack_series" and s.outputs.rack_series == "full" else "") + ")"))
    ev = event_estimate(s)
    total_ev = sum(ev.values())
    ceiling = max(MAX_EVENTS, MAX_EVENTS_PER_NODE_DAY * _nodes(s)
                  * horizon_s(s) / DAY_S)
    if not total_ev <= ceiling:
        key = max(ev, key=lambda k: ev[k])
        out.append((key, _value_at(s, key),
                    f"a rate that gives at most {ceiling:,.0f} simulated events (estimated {total_ev:.3g}, "
                    f"{ev[key]:.3g} of them from {key}): an event storm"))
    return out


def _value_at(s: Scenario, dotted: str) -> object:
    node: object = s
    for part in dotted.split("."):
        if isinstance(node, list):
            if not part.isdigit():
                return None
            node = node[int(part)]
        else:
            node = getattr(node, part, None)
        if node is None:
            return None
    if isinstance(node, list):
        return f"{len(node)} entries"
    return node if isinstance(node, (int, float, str, dict)) else str(node)


#: how many times the worst-case draw of every rack position a power rating may be before
#: validation takes it for a unit slip [-]. A rating in W typed into a kW field is 1,000x too
#: large; a real feed, UPS, generator or plan stage is sized for the racks it serves with room
#: to grow (a campus service built for halls still to come is a few times the first one), not
#: a hundred times them. 100 leaves that headroom and still catches the slip of any rating
#: above a tenth of the racks' draw.
UNIT_SLIP_FACTOR = 100.0
#: hours of the whole site's worst-case draw a battery's energy may hold before validation
#: takes it for Wh typed into a kWh field [h]: grid batteries are built for 1-8 h of their
#: rating (lithium-ion BESS), a UPS battery for minutes; a day of the whole site is not a battery
UNIT_SLIP_BATTERY_H = 24.0

#: the power ratings of the schema bounded by :data:`UNIT_SLIP_FACTOR`, as their paths inside
#: ``site.power.chain`` (a chain stage may set them too)
_CHAIN_RATINGS = ("utility.kva", "transformers.kva", "generators.kw", "ups.module_kw",
                  "ups.bypass_kw_per_system", "mechanical.house_kw", "battery.power_kw",
                  "battery.peak_shave_kw")


def _chain_value(chain, dotted: str) -> object:
    node = chain
    for part in dotted.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def unit_slip_problems(s: Scenario) -> Found:
    """Power ratings that look like W typed into a kW field (or Wh into kWh): above
    :data:`UNIT_SLIP_FACTOR` times the worst-case draw of every rack position of the site
    (:func:`twin.plant.rack_worst_cases_w`, what admission reserves per rack), a battery above
    :data:`UNIT_SLIP_BATTERY_H` hours of it. The bounded fields: ``site.power.feeds.*.capacity_kw``,
    ``site.power.ups.capacity_kw``, ``site.power.plan.*.it_power_kw``, the chain's
    :data:`_CHAIN_RATINGS` (as built and in each stage's ``set``), ``battery.energy_kwh`` and
    ``site.economics.upgrades.*.it_power_kw_added``."""
    from twin.catalog import load_catalog
    from twin.plant import rack_worst_cases_w, scenario_racks

    if not set(scenario_racks(s)[0]) <= set(load_catalog().nodes):
        return []                      # an unknown node model: reported by semantic_problems
    site_kw = float(rack_worst_cases_w(s).sum()) / 1e3
    if not site_kw > 0:
        return []
    limit_kw = UNIT_SLIP_FACTOR * site_kw
    out: Found = []

    racks = len(rack_worst_cases_w(s))
    basis = f"the worst-case draw of all {racks:,} rack positions, {site_kw:,.1f} kW"

    def check(path: str, value: object, limit: float = limit_kw, unit: str = "kW", small: str = "W",
              times: str = f"{UNIT_SLIP_FACTOR:g}x") -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > limit:
            v = f"{value:,.0f}"
            out.append((path, value, f"a rating of at most {limit:,.0f} {unit} ({times} {basis}): {v} {unit} "
                                     f"looks like {small} typed into a {unit} field ({v} {small} = "
                                     f"{value / 1e3:,.4g} {unit})"))

    pw = s.site.power
    for i, f in enumerate(pw.feeds):
        check(f"site.power.feeds.{i}.capacity_kw", f.capacity_kw)
    check("site.power.ups.capacity_kw", pw.ups.capacity_kw)
    for i, st in enumerate(pw.plan):
        check(f"site.power.plan.{i}.it_power_kw", st.it_power_kw)
    for i, up in enumerate(s.site.economics.upgrades):
        check(f"site.economics.upgrades.{i}.it_power_kw_added", up.it_power_kw_added)
    ch = pw.chain
    if ch is not None:
        for field in _CHAIN_RATINGS:
            unit = "kVA" if field.endswith("kva") else "kW"
            check(f"site.power.chain.{field}", _chain_value(ch, field), unit=unit, small=unit[1:])
        energy_limit = UNIT_SLIP_BATTERY_H * site_kw
        if ch.battery is not None:
            check("site.power.chain.battery.energy_kwh", ch.battery.energy_kwh, energy_limit, "kWh", "Wh",
                  f"{UNIT_SLIP_BATTERY_H:g} h of")
        for k, change in enumerate(ch.stages):
            for key, value in change.set.items():
                if key in _CHAIN_RATINGS:
                    unit = "kVA" if str(key).endswith("kva") else "kW"
                    check(f"site.power.chain.stages.{k}.set.{key}", value, unit=unit, small=unit[1:])
                elif key == "battery.energy_kwh":
                    check(f"site.power.chain.stages.{k}.set.{key}", value, energy_limit, "kWh", "Wh",
                          f"{UNIT_SLIP_BATTERY_H:g} h of")
    return out


def breaker_problems(s: Scenario) -> Found:
    """Breaker ratings no breaker is made in: a chain circuit above the largest rating of its
    frame (:attr:`twin.power.breakers.BreakerFrame.max_rating_a`: miniature 125 A, molded case
    1,200 A, ..., air 6,300 A), the RPP feeder (``site.power.rpp``, no frame) above the largest
    of any frame. Amps typed as mA, or a switchboard's kVA in its amps field."""
    from twin.power.breakers import BREAKER_FRAMES

    out: Found = []
    largest = max(BREAKER_FRAMES.values(), key=lambda f: f.max_rating_a)
    if s.site.power.rpp.breaker_a > largest.max_rating_a:
        out.append(("site.power.rpp.breaker_a", s.site.power.rpp.breaker_a,
                    f"a breaker rating of at most {largest.max_rating_a:,.0f} A (the largest {largest.name} "
                    f"frame; no breaker is made larger)"))
    ch = s.site.power.chain
    if ch is None:
        return out
    for part, field in (("switchboards", "main_breaker_a"), ("rpps", "breaker_a"), ("branch", "breaker_a")):
        circuit = getattr(ch, part)
        if circuit is None or circuit.frame not in BREAKER_FRAMES:
            continue
        top = BREAKER_FRAMES[circuit.frame].max_rating_a
        amps = getattr(circuit, field)
        if amps > top:
            out.append((f"site.power.chain.{part}.{field}", amps,
                        f"a rating the {circuit.frame} frame is made in (at most {top:,.0f} A; "
                        f"twin.power.breakers.BREAKER_FRAMES)"))
    return out


def redundancy_problems(s: Scenario) -> Found:
    """``site.power.redundancy: 2N`` (every rack load must fit one feed alone, the other
    carrying it when one is lost) needs a second feed to be redundant with."""
    pw = s.site.power
    if pw.redundancy == "2N" and len(pw.feeds) < 2:
        names = ", ".join(f.name for f in pw.feeds)
        return [("site.power.redundancy", pw.redundancy,
                 f"'none' with {len(pw.feeds)} feed ({names}): 2N needs two feeds, each able to carry the "
                 f"whole load when the other is lost; add a second feed to site.power.feeds or set "
                 f"redundancy: none")]
    return []


def all_problems(s: Scenario) -> Found:
    """Every check of this module, cheapest first; the geometry check runs only on halls
    whose grid is bounded."""
    out = name_problems(s) + time_problems(s) + redundancy_problems(s) + breaker_problems(s)
    out += unit_slip_problems(s)
    work = work_problems(s)
    out += work
    if not work:              # the geometry check expands the racks: only when bounded
        out += geometry_problems(s)
    return out
