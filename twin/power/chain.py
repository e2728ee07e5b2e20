"""From a scenario's ``site.power.chain`` to capacity per dated stage and to swing figures.

The adapter between the scenario models (:mod:`twin.scenario.power_chain`) and the pure
physics (:mod:`twin.power.capacity`, :mod:`~twin.power.branch`,
:mod:`~twin.power.breakers`, :mod:`~twin.power.swing`, :mod:`~twin.power.battery`).
``twin capacity`` prints what :func:`capacity_report` and :func:`swing_report` return.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from twin.phases import Phase
from twin.power.battery import battery_dispatch
from twin.power.branch import branch_load_fraction, branch_rating_fraction
from twin.power.breakers import frame_trip_time_s
from twin.power.capacity import (
    StageCapacity,
    binding_constraints,
    chain_constraints,
    racks_fitting,
    rpp_constraint,
    rpp_groups,
    rpp_unit_w,
    rpp_whole_racks,
    surviving_units,
    utility_constraint,
)
from twin.power.cooling_plant import scenario_cooling_power_w
from twin.power.electrical import breaker_continuous_limit_w
from twin.power.swing import (
    energy_kwh,
    gpu_floor_power_w,
    job_phase_trace,
    mean_per_interval,
    peak_meter_ramp_kw_per_s,
    sync_load_w,
)
from twin.scenario.power_chain import PowerChain, chain_at_stages, stage_in_force

__all__ = ["rack_figures_w", "chain_problems", "stage_capacity", "capacity_report", "capacity_plan_notes",
           "phase_node_power_w", "swing_report", "utility_it_limits_w", "utility_plan_notes",
           "RppStage", "rpp_stage_limits", "rpp_plan_notes"]

#: Inlet temperature at which a rack's idle draw is taken [C] (ASHRAE recommended middle).
IDLE_INLET_C = 22.0
#: Inlet temperature of the swing model's node powers [C].
SWING_INLET_C = 25.0


def rack_positions(scenario) -> int:
    return int(sum(r.racks for h in scenario.site.halls for r in h.rows))


def rack_figures_w(scenario) -> dict[str, Any]:
    """One rack's worst-case draw (what admission reserves) and idle draw [W], and
    ``worst_case_racks_w``: every rack position's worst case (R,) [W] in delivery order with
    racks of several node models or node counts (``worst_case_w`` is then the largest), else
    the one rack's [W] (what :func:`twin.power.capacity.racks_fitting` takes either way)."""
    from twin import power
    from twin.catalog import node_model
    from twin.plant import node_power_kwargs, rack_worst_case_w, rack_worst_cases_w, scenario_racks

    net = scenario.hardware.network_power_per_rack_w
    models, counts = scenario_racks(scenario)

    def idle_node_w(node) -> float:
        kw = node_power_kwargs(node)
        return float(power.node_power_w(np.array([int(Phase.IDLE)]), node.gpu_tdp_w, IDLE_INLET_C, **kw)[0])
    node = node_model(scenario.hardware.node_model)
    npr = scenario.hardware.nodes_per_rack
    if set(models) <= {scenario.hardware.node_model} and bool(np.all(counts == npr)):
        worst_w = float(rack_worst_case_w(scenario, node))
        return {"worst_case_w": worst_w, "worst_case_racks_w": worst_w, "idle_w": idle_node_w(node) * npr + net}
    idle = {m: idle_node_w(node_model(m)) for m in set(models)}
    worst = rack_worst_cases_w(scenario)
    return {"worst_case_w": float(worst.max()), "worst_case_racks_w": worst,
            "idle_w": float(max(idle[m] * c for m, c in zip(models, counts, strict=True)) + net)}


def mechanical_w_fn(scenario, chain: PowerChain):
    """``mech(heat_w)`` [W]: the scenario's cooling plant at the chain's design outdoor temperature,
    the plant the run uses (:func:`twin.power.cooling_plant.scenario_cooling_power_w`: physical,
    ``site.cooling_system.plant`` and the CRAH fans; legacy, ``site.power.cooling``)."""
    t = chain.mechanical.design_outdoor_temp_c

    def mech(heat_w):
        return scenario_cooling_power_w(scenario, heat_w, t)
    return mech


def chain_problems(scenario) -> list[tuple[str, object, str]]:
    """Problems the chain has with the racks it feeds: ``[(dotted path, value, expected)]``.

    A branch circuit (the live cords under its redundancy policy, at the continuous
    rule) that cannot carry one rack's idle draw, at any stage (one problem per distinct
    branch set-up, naming the stages it holds in).
    """
    chain = scenario.site.power.chain
    if chain is None:
        return []
    idle_w = rack_figures_w(scenario)["idle_w"]
    bad: dict[tuple, list[str]] = {}
    for date, _, ch in chain_at_stages(chain):
        br = ch.branch
        if br is None:
            continue
        cord = float(breaker_continuous_limit_w(br.breaker_a, br.voltage_v, br.phases, br.rated_100pct,
                                                br.power_factor))
        live = br.cords_per_rack - (1 if br.redundancy == "2N" else 0)
        if live * cord < idle_w:
            key = (br.breaker_a, br.voltage_v, br.phases, live, live * cord)
            bad.setdefault(key, []).append(date.isoformat() if date else "as built")
    out: list[tuple[str, object, str]] = []
    for (amps, volts, phases, live, carried), dates in bad.items():
        out.append(("site.power.chain.branch", {"breaker_a": amps, "voltage_v": volts, "phases": phases,
                                                 "live_cords": live},
                    f"a branch circuit that carries at least one rack's idle draw ({idle_w / 1e3:.2f} kW); "
                    f"it carries {carried / 1e3:.2f} kW at the continuous rule (stages {', '.join(dates)})"))
    return out


def utility_it_limits_w(scenario) -> list[tuple[Any, float, str]]:
    """The utility service's limit on the IT load at each of the chain's stages:
    ``[(date or None, IT [W], name)]`` in the order of :func:`twin.scenario.power_chain.chain_at_stages`
    (``None``: as built); empty without ``site.power.chain`` or without its ``utility``.

    Each is :func:`twin.power.capacity.utility_constraint` of that stage with the cooling plant
    the run uses at the chain's design outdoor temperature (:func:`mechanical_w_fn`): the one
    definition ``twin capacity`` lists (:func:`capacity_report`) and the engine admits racks
    against (``twin.sim.power_chain.PowerChain``). ``name`` says what the limit is, for the
    ``power_stage`` and ``power_held`` events.
    """
    chain = scenario.site.power.chain
    if chain is None or chain.utility is None:
        return []
    mech = mechanical_w_fn(scenario, chain)
    out: list[tuple[Any, float, str]] = []
    for date, _, ch in chain_at_stages(chain):
        u, m, c = ch.utility, ch.mechanical, utility_constraint(ch, mech)
        if u is None or c is None:
            continue
        less = ["the UPS loss"] if ch.ups is not None and ch.ups.mode != "bypass" else []
        if "utility" in m.carried_by:
            less += [f"the cooling at the {m.design_outdoor_temp_c:g} C design day", f"{m.house_kw:g} kW house loads"]
        less_txt = (" less " + ", ".join(less[:-1]) + (" and " if len(less) > 1 else "") + less[-1]) if less else ""
        name = (f"the utility service ({u.kva:g} kVA x pf {u.power_factor:g} = {c.equipment_limit_kw:.0f} kW"
                f"{less_txt}; site.power.chain.utility)")
        out.append((date, c.it_capacity_kw * 1e3, name))
    return out


def utility_plan_notes(scenario) -> list[tuple[str, str]]:
    """Plan stages above what the utility service carries: ``[(dotted path, text)]`` for
    ``twin validate``'s notes. A typed stage (``site.power.plan``) whose IT power exceeds the
    service's limit at that date (:func:`utility_it_limits_w`, scaled by
    ``site.power.oversubscription`` as the engine admits) powers only the racks the service
    carries; none with ``stages_set_plan`` (the plan is then the chain's own capacity)."""
    pw = scenario.site.power
    limits = utility_it_limits_w(scenario)
    if not limits or pw.chain.stages_set_plan:
        return []
    k = pw.oversubscription
    worst = rack_figures_w(scenario)
    per_rack = worst["worst_case_racks_w"]
    n = rack_positions(scenario)
    out: list[tuple[str, str]] = []
    for i, st in enumerate(pw.plan):
        _, lim_w, name = limits[stage_in_force([d for d, _, _ in limits], st.date)]
        if st.it_power_kw * 1e3 > lim_w * (1 + 1e-9):
            racks = racks_fitting(lim_w * k / 1e3, np.asarray(per_rack) / 1e3, n)
            # whole racks decide, as for the other limits: a plan a few kW over a service that
            # still carries every rack the plan admits is no finding
            if racks >= racks_fitting(st.it_power_kw * k, np.asarray(per_rack) / 1e3, n):
                continue
            out.append((f"site.power.plan.{i}.it_power_kw",
                        f"{st.it_power_kw:g} kW from {st.date} is above the {lim_w / 1e3:.0f} kW of IT {name} "
                        f"carries then (`twin capacity`): a run admits racks against the service, {racks} at "
                        f"worst case"))
    return out


@dataclass(frozen=True)
class RppStage:
    """The chain's RPPs at one stage, as the run admits racks against them.

    ``group`` (R,) int: each rack position's group (:func:`twin.power.capacity.rpp_groups`): an
    A/B pair under 2N (panels ``g`` and ``g + G``), a panel under N; ``panels``: the RPPs; ``group_limit_w`` (G,) [W]: what each group carries, one
    panel's continuous limit (a pair's surviving panel carries the pair's racks alone on
    failover); ``it_w`` [W]: the stage's RPP limit on the IT load as ``twin capacity`` lists it
    (:func:`twin.power.capacity.rpp_constraint`: the racks the groups carry whole at worst
    case, or the panels' kW); ``what``: "pair" or "panel"; ``name``: for the events."""

    group: np.ndarray
    panels: int
    group_limit_w: np.ndarray
    it_w: float
    what: str
    name: str


def rpp_stage_limits(scenario) -> list[tuple[Any, RppStage]]:
    """The chain's RPPs at each of its stages: ``[(date or None, RppStage)]`` in the order of
    :func:`twin.scenario.power_chain.chain_at_stages`; empty without ``site.power.chain`` or its
    ``rpps``. Each stage's limit is :func:`twin.power.capacity.rpp_constraint` with the racks'
    worst cases of :func:`rack_figures_w`, the figure ``twin capacity`` lists
    (:func:`capacity_report`), and its groups the map :func:`twin.power.capacity.rpp_whole_racks`
    counts on: the run admits each rack only while its group carries it whole
    (``twin.sim.power_chain.PowerChain.racks_admitted``)."""
    chain = scenario.site.power.chain
    if chain is None or chain.rpps is None:
        return []
    n = rack_positions(scenario)
    fig = rack_figures_w(scenario)
    worst = fig["worst_case_racks_w"]
    out: list[tuple[Any, RppStage]] = []
    for date, _, ch in chain_at_stages(chain):
        r = ch.rpps
        if r is None:
            continue
        s = surviving_units(r.count, r.redundancy)
        unit = rpp_unit_w(r)
        c = rpp_constraint(r, n, worst)
        what = "pair" if r.redundancy == "2N" else "panel"
        rule = ("each A/B pair carries its racks on one panel on failover" if what == "pair"
                else "each panel its own racks")
        name = (f"the RPP {what}s ({s} of {r.count} RPPs ({r.redundancy}) x {unit / 1e3:.1f} kW continuous, "
                f"{rule}: {c.it_capacity_kw:.0f} kW{' of whole racks' if 'whole racks' in c.detail else ''}; "
                f"site.power.chain.rpps)")
        out.append((date, RppStage(group=rpp_groups(n, s, r.count), panels=r.count,
                                   group_limit_w=np.full(s, unit), it_w=c.it_capacity_kw * 1e3, what=what,
                                   name=name)))
    return out


def rpp_plan_notes(scenario) -> list[tuple[str, str]]:
    """The chain's RPPs against the plan and the panels the run models: ``[(dotted path, text)]``
    for ``twin validate``'s notes.

    * A typed plan stage (``site.power.plan``) whose IT power exceeds what the chain's RPPs
      carry at that date (:func:`rpp_stage_limits`) and would take more racks at worst case
      (:func:`twin.power.capacity.racks_fitting`) than their groups carry whole
      (:func:`twin.power.capacity.rpp_whole_racks`), both scaled by
      ``site.power.oversubscription`` as the engine admits: the run powers only those racks. None with ``stages_set_plan`` (the plan is then the chain's own
      capacity).
    * The chain's RPPs laid over different panels than ``site.power.rpp`` (another count, or
      ``racks_per_rpp`` not the chain's ``ceil(positions / count)`` consecutive racks): ``twin
      capacity`` and the run's admission by stage group the racks by the chain's count, the
      run's breakers and RPP series by ``site.power.rpp``; the run admits against both, so
      it stays within each, but the two describe different panels. A note, not a problem: the
      run is conservative, and the chain's figure holds for its own panels.
    """
    pw = scenario.site.power
    stages = rpp_stage_limits(scenario)
    if not stages:
        return []
    out: list[tuple[str, str]] = []
    n = rack_positions(scenario)
    site_map = np.arange(n) // pw.rpp.racks_per_rpp
    counts = sorted({ch.rpps.count for _, _, ch in chain_at_stages(pw.chain) if ch.rpps is not None})
    for c in counts:
        if c != pw.rpp.count or not np.array_equal(rpp_groups(n, c), site_map):
            out.append(("site.power.chain.rpps.count",
                        f"the chain's {c} RPPs hold {-(-n // c)} consecutive racks each (`twin capacity`, and the "
                        f"run's admission by stage), site.power.rpp's {pw.rpp.count} panels {pw.rpp.racks_per_rpp} "
                        f"each (the run's breakers and RPP series): a run admits against both"))
    if pw.chain.stages_set_plan:
        return out
    k = pw.oversubscription
    fig = rack_figures_w(scenario)
    worst_kw = np.asarray(fig["worst_case_racks_w"], float) / 1e3
    for i, st in enumerate(pw.plan):
        rs = stages[stage_in_force([d for d, _ in stages], st.date)][1]
        racks, _ = rpp_whole_racks(float(rs.group_limit_w[0]) * k / 1e3, len(rs.group_limit_w), worst_kw, n,
                                   rs.panels)
        # above the RPPs' kW but every rack the plan takes still fits its group: no note
        if st.it_power_kw * 1e3 > rs.it_w * (1 + 1e-9) and racks_fitting(st.it_power_kw * k, worst_kw, n) > racks:
            out.append((f"site.power.plan.{i}.it_power_kw",
                        f"{st.it_power_kw:g} kW from {st.date} is above the {rs.it_w / 1e3:.0f} kW of IT {rs.name} "
                        f"carry then (`twin capacity`): a run admits each rack only while its {rs.what} carries it, "
                        f"{racks} at worst case when every position is delivered"))
    return out


#: equipment the run does not admit racks against by date (twin.sim.power_chain admits against
#: the typed plan, the feeds, the UPS, the branch circuits, the utility service and the RPPs)
_NOT_ADMITTED = ("transformers", "generators")


def capacity_plan_notes(scenario) -> list[tuple[str, str]]:
    """Plan stages above the chain's usable IT capacity at their dates, whatever equipment
    binds: ``[(dotted path, text)]`` for ``twin validate``'s notes.

    The limit is ``twin capacity``'s (:func:`capacity_report`, the stage in force on the plan's
    date). Whole racks at worst case decide: a typed stage (``site.power.plan``) is a finding
    only when it takes more racks (:func:`twin.power.capacity.racks_fitting`) than the limit
    holds, both scaled by ``site.power.oversubscription`` as the engine admits. A stage bound
    by the utility service or the RPPs is left to :func:`utility_plan_notes` and
    :func:`rpp_plan_notes` (which say how the run admits against them). None with
    ``stages_set_plan`` (the plan is then the chain's own capacity)."""
    pw = scenario.site.power
    if pw.chain is None or pw.chain.stages_set_plan or not pw.plan:
        return []
    rep = capacity_report(scenario)
    fig = rack_figures_w(scenario)
    worst_kw = np.asarray(fig["worst_case_racks_w"], float) / 1e3
    n, k = rep["rack_positions"], pw.oversubscription
    stages = [(None if st["date"] is None else dt.date.fromisoformat(st["date"]), st) for st in rep["stages"]]
    out: list[tuple[str, str]] = []
    for i, p in enumerate(pw.plan):
        st = stages[stage_in_force([d for d, _ in stages], p.date)][1]
        b = st["binding"]
        if b["equipment"] in ("utility", "rpps"):
            continue
        cap_kw = st["it_capacity_kw"]
        holds = racks_fitting(cap_kw * k, worst_kw, n)
        takes = racks_fitting(p.it_power_kw * k, worst_kw, n)
        if p.it_power_kw > cap_kw * (1 + 1e-9) and takes > holds:
            run = (f"a run does not admit against the {b['equipment']} and powers up to {takes}"
                   if b["equipment"] in _NOT_ADMITTED else f"a run admits {holds}")
            if b["equipment"] == "branch" and "failover" in b["rule"]:
                run = ("a run admits racks on both cords (the 2N failover rule is not applied) and logs "
                       "branch_failover_overload")
            # a limit within a kW of the plan reads as the plan at whole kW: give its tenth
            cap_txt = f"{cap_kw:.1f}" if round(cap_kw) == round(p.it_power_kw) else f"{cap_kw:.0f}"
            out.append((f"site.power.plan.{i}.it_power_kw",
                        f"{p.it_power_kw:g} kW from {p.date} is above the {cap_txt} kW of IT the power chain "
                        f"carries then, bound by the {b['equipment']} ({b['detail']}; `twin capacity`): "
                        f"{holds} racks at worst case where the plan takes {takes}; {run}"))
    return out


def stage_capacity(chain: PowerChain, *, rack_positions: int, rack_worst_case_w,
                   mechanical_w) -> StageCapacity:
    """Usable IT capacity, binding and next constraint, and the figures around them.
    ``rack_worst_case_w`` [W]: one figure for alike racks, or (R,) per rack position in
    delivery order (the branch circuits are checked at the largest)."""
    cons, ctx = chain_constraints(chain, rack_positions=rack_positions, mechanical_w=mechanical_w,
                                  rack_worst_case_w=rack_worst_case_w)
    first, nxt = binding_constraints(cons)
    it_kw = first.it_capacity_kw
    it_w = it_kw * 1e3
    extras: dict = {"ups_loss_kw": ctx["ups_loss_w"](it_w) / 1e3,
                    "mechanical_kw": ctx["mechanical_at_it_w"](it_w) / 1e3,
                    "ups_curve": ctx["ups_curve"]}
    rack_limit_kw = np.inf
    br = chain.branch
    if br is not None:
        kw: dict[str, Any] = dict(breaker_a=br.breaker_a, voltage_v=br.voltage_v, phases=br.phases,
                                  rated_100pct=br.rated_100pct, power_factor=br.power_factor,
                                  cords=br.cords_per_rack)
        normal = float(branch_load_fraction(np.max(rack_worst_case_w), **kw))
        fail = float(branch_load_fraction(np.max(rack_worst_case_w), failed_cords=1, **kw))
        x = float(branch_rating_fraction(fail, br.rated_100pct))
        extras["max_branch_load_fraction"] = normal
        extras["max_failover_branch_load_fraction"] = fail
        extras["failover_overload"] = fail > 1.0
        extras["failover_trip_time_s"] = float(frame_trip_time_s(x, br.frame))
        live = br.cords_per_rack - (1 if br.redundancy == "2N" else 0)
        rack_limit_kw = live * float(breaker_continuous_limit_w(
            br.breaker_a, br.voltage_v, br.phases, br.rated_100pct, br.power_factor)) / 1e3
    sb = chain.switchboards
    if sb is not None and sb.count >= 2:
        # one switchboard (feed path) lost with the IT at this stage's capacity
        unit = float(breaker_continuous_limit_w(sb.main_breaker_a, sb.voltage_v, sb.phases,
                                                sb.rated_100pct, sb.power_factor))
        # the survivors carry the whole plant and house loads (split_mechanical_w)
        carries = "switchboards" in chain.mechanical.carried_by
        load = it_w + ctx["ups_loss_w"](it_w) + (ctx["mechanical_at_it_w"](it_w) if carries else 0)
        extras["feed_loss_survivor_load_fraction"] = load / ((sb.count - 1) * unit)
        extras["feed_loss_holds"] = load <= (sb.count - 1) * unit * (1 + 1e-9)
        extras["feed_redundancy"] = sb.redundancy
        extras["feed_survivors"] = surviving_units(sb.count, sb.redundancy)
    extras["racks_at_worst_case"] = racks_fitting(it_kw, np.asarray(rack_worst_case_w) / 1e3, rack_positions,
                                                  rack_limit_kw)
    return StageCapacity(it_capacity_kw=it_kw, binding=first, next=nxt, constraints=cons, extras=extras)


def capacity_report(scenario) -> dict:
    """``{"stages": [{date, note, it_capacity_kw, binding, next, ...}], ...}`` for ``twin capacity``."""
    chain = scenario.site.power.chain
    if chain is None:
        raise ValueError("the scenario has no site.power.chain (equipment description)")
    n = rack_positions(scenario)
    rack = rack_figures_w(scenario)
    mech = mechanical_w_fn(scenario, chain)
    plan = scenario.site.power.plan
    stages = []
    for date, note, ch in chain_at_stages(chain):
        sc = stage_capacity(ch, rack_positions=n, rack_worst_case_w=rack["worst_case_racks_w"],
                            mechanical_w=mech)
        typed = None
        if date is not None:
            earlier = [p for p in plan if p.date <= date]
            typed = earlier[-1].it_power_kw if earlier else None
        stages.append({
            "date": date.isoformat() if date else None, "note": note,
            "it_capacity_kw": sc.it_capacity_kw,
            "binding": sc.binding.as_dict(), "next": sc.next.as_dict() if sc.next else None,
            "plan_it_power_kw": typed,
            "constraints": [c.as_dict() for c in sorted(sc.constraints, key=lambda c: c.it_capacity_kw)],
            **sc.extras,
        })
    base = stages[0]["it_capacity_kw"]
    for st in stages:
        st["ratio_to_first"] = st["it_capacity_kw"] / base if base > 0 else float("nan")
    per_rack_kw = np.asarray(rack["worst_case_racks_w"], float) / 1e3
    return {"scenario": scenario.name, "rack_positions": n,
            "rack_worst_case_kw": rack["worst_case_w"] / 1e3,
            "rack_worst_case_range_kw": (float(per_rack_kw.min()), float(per_rack_kw.max())),
            "rack_idle_kw": rack["idle_w"] / 1e3,
            "stages": stages}


def phase_node_power_w(scenario, inlet_c: float = SWING_INLET_C, node_model: str | None = None) -> dict[str, Any]:
    """Node AC power [W] and per-GPU power [W] in every phase, and the PSU's AC per DC watt,
    of ``node_model`` (default ``hardware.node_model``)."""
    from twin import power
    from twin.catalog import node_model as catalog_node
    from twin.plant import node_power_kwargs

    node = catalog_node(node_model or scenario.hardware.node_model)
    kw = node_power_kwargs(node)
    cap = min(scenario.hardware.gpu_power_cap_w or node.gpu_tdp_w, node.gpu_tdp_w)
    phases = np.arange(max(int(p) for p in Phase) + 1)
    b = power.node_power_breakdown_w(phases, cap, inlet_c, **kw)
    dc = b["gpu_w"] + b["host_w"] + b["fan_w"]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(dc > 0, b["ac_w"] / np.where(dc > 0, dc, 1.0), 1.0)
    return {"node_w": b["ac_w"], "gpu_w": b["gpu_w"] / node.gpu_count, "dc_to_ac": ratio,
            "gpu_count": node.gpu_count, "gpu_tdp_w": node.gpu_tdp_w}


def swing_report(scenario, *, nodes: int, step_s: float, exposed_s: float, checkpoint_s: float,
                 restart_s: float, rest_w: float = 0.0, dt_s: float = 0.01,
                 battery=None, floor_fraction: float | None = None, skew_s: float | None = None,
                 window_s: float | None = None, inlet_c: float = SWING_INLET_C,
                 node_model: str | None = None) -> dict:
    """Meter power of one synchronous job at 1-s resolution and its swing KPIs.

    The window holds training steps, one checkpoint (at a third of the window) and one
    restart (at two thirds, cut to a quarter of the window). ``rest_w`` is the rest of
    the facility [W], constant over the window. Returns the peak meter ramp without
    mitigation, with the GPU power floor alone, with the battery alone, and with both
    (``mitigated``: the floor first, the battery on the floored load), with their energy
    costs over the window [kWh]. ``node_model``: the job's nodes' catalog model (default
    ``hardware.node_model``).
    """
    chain = scenario.site.power.chain
    sw = chain.swing if chain is not None else None
    floor = floor_fraction if floor_fraction is not None else (sw.gpu_power_floor_fraction if sw else 0.0)
    skew = skew_s if skew_s is not None else (sw.node_skew_s if sw else 0.0)
    w = window_s if window_s is not None else (sw.window_s if sw else 1800.0)
    ph = job_phase_trace(w, step_s, exposed_s, checkpoint_at_s=w / 3, checkpoint_s=checkpoint_s,
                         restart_at_s=2 * w / 3, restart_s=min(restart_s, w / 4), dt_s=dt_s)
    pw = phase_node_power_w(scenario, inlet_c, node_model)
    meter = mean_per_interval(sync_load_w(ph, pw["node_w"], nodes, skew_s=skew, dt_s=dt_s), dt_s) + rest_w
    ramp0 = peak_meter_ramp_kw_per_s(meter)
    out = {"nodes": nodes, "step_s": step_s, "exposed_s": exposed_s, "checkpoint_s": checkpoint_s,
           "restart_s": min(restart_s, w / 4), "window_s": w,
           "train_minus_comm_kw": nodes * (pw["node_w"][Phase.TRAINING] - pw["node_w"][Phase.COMMUNICATION]) / 1e3,
           "train_minus_checkpoint_kw": nodes * (pw["node_w"][Phase.TRAINING]
                                                 - pw["node_w"][Phase.CHECKPOINT]) / 1e3,
           "peak_meter_ramp_kw_per_s": ramp0,
           "energy_kwh": energy_kwh(meter, 1.0)}
    mitigated, cost = meter, 0.0
    if floor > 0:
        fl = gpu_floor_power_w(pw["node_w"], pw["gpu_w"], gpu_count=pw["gpu_count"], gpu_tdp_w=pw["gpu_tdp_w"],
                               floor_fraction=floor, dc_to_ac=pw["dc_to_ac"])
        mitigated = mean_per_interval(sync_load_w(ph, fl, nodes, skew_s=skew, dt_s=dt_s), dt_s) + rest_w
        cost = energy_kwh(mitigated, 1.0) - out["energy_kwh"]
        out["gpu_floor"] = {"floor_fraction": floor, "peak_meter_ramp_kw_per_s": peak_meter_ramp_kw_per_s(mitigated),
                            "extra_energy_kwh": cost}
    bat = battery if battery is not None else (chain.battery if chain is not None else None)
    if bat is not None and bat.power_kw > 0:
        kw = dict(power_w=bat.power_kw * 1e3, energy_j=bat.energy_kwh * 3.6e6,
                  round_trip_efficiency=bat.round_trip_efficiency, initial_soc=bat.initial_soc,
                  soc_min=bat.soc_min, soc_max=bat.soc_max, policy=bat.policy,
                  ramp_limit_w_per_s=(bat.max_meter_ramp_kw_per_s * 1e3 if bat.max_meter_ramp_kw_per_s else None),
                  shave_w=bat.peak_shave_kw * 1e3 if bat.peak_shave_kw else None,
                  soc_restore_s=bat.soc_restore_s)
        d = battery_dispatch(meter, 1.0, **kw)
        out["battery"] = {"power_kw": bat.power_kw, "energy_kwh": bat.energy_kwh, "policy": bat.policy,
                          "peak_meter_ramp_kw_per_s": peak_meter_ramp_kw_per_s(d["grid_w"]),
                          "loss_kwh": d["loss_j"] / 3.6e6,
                          "stored_change_kwh": (d["energy_end_j"] - d["energy_start_j"]) / 3.6e6,
                          "soc_min_seen": float(np.asarray(d["soc"]).min()),
                          "soc_max_seen": float(np.asarray(d["soc"]).max())}
        if mitigated is not meter:
            d = battery_dispatch(mitigated, 1.0, **kw)
        mitigated = np.asarray(d["grid_w"])
        cost += cast(float, d["loss_j"]) / 3.6e6
    out["mitigated"] = {"peak_meter_ramp_kw_per_s": peak_meter_ramp_kw_per_s(mitigated),
                        "energy_cost_kwh": cost}
    out["meter_kw"] = meter / 1e3
    return out


def mechanical_on_feeds(scenario) -> bool:
    """True when ``site.power.chain.mechanical`` puts the cooling plant and house loads on the
    switchboards, i.e. on the utility feed paths whose capacity ``site.power.feeds`` types."""
    chain = scenario.site.power.chain
    return chain is not None and "switchboards" in chain.mechanical.carried_by


def split_mechanical_w(scenario, mechanical_w, feed_up) -> np.ndarray:
    """Mechanical and house load on each utility feed path [W (..., F)].

    ``mechanical_w`` [W] scalar or (T,): the cooling plant's electric power; ``feed_up`` (F,)
    or (T, F) bool: the live feeds. Zero unless :func:`mechanical_on_feeds`. The plant's power
    plus ``chain.mechanical.house_kw`` is split equally over the live feeds: during a feed
    loss the survivors carry all of it, whatever ``transfers_on_feed_loss`` says. The run
    keeps the whole plant cooling the hall through a single-feed loss (the hall thermal model
    has one plant), so its power must come from somewhere: with ``transfers_on_feed_loss:
    false`` the N+1 chillers (and pumps) on the surviving path carry the heat and draw its
    power, with ``true`` a transfer switch moves the lost path's units to the survivor; the
    two differ in the transient (a restart), not in the power the survivor then carries.
    This is the one definition of a feed's mechanical share, used by the recorded
    ``feed_power_w`` (the feeds sum to the utility power and the house loads, a run-time
    invariant), the feed-loss survivor check, ``twin capacity``'s survivor figure and the
    per-feed admission limit (:func:`feed_it_limits_w`).
    """
    up = np.asarray(feed_up, dtype=bool)
    if not mechanical_on_feeds(scenario):
        return np.zeros(np.broadcast_shapes(np.shape(mechanical_w) + (up.shape[-1],), up.shape))
    chain = scenario.site.power.chain
    total = np.asarray(mechanical_w, dtype=float) + chain.mechanical.house_kw * 1e3
    live = up.sum(axis=-1, keepdims=True)
    share = np.where(up, 1.0 / np.maximum(live, 1), 0.0)
    return total[..., None] * share


def feed_mechanical_w(scenario, it_w: float, outdoor_c: float, feed_up) -> np.ndarray:
    """Mechanical and house load on each utility feed path [W (F,)] for ``it_w`` of heat at
    ``outdoor_c``: the cooling plant's power, the plant the run uses
    (:func:`twin.power.cooling_plant.scenario_cooling_power_w`), split by
    :func:`split_mechanical_w`.
    """
    up = np.asarray(feed_up, dtype=bool)
    if not mechanical_on_feeds(scenario) or not up.any():
        return np.zeros(up.shape[0])
    cool = float(scenario_cooling_power_w(scenario, it_w, outdoor_c))
    return np.asarray(split_mechanical_w(scenario, cool, up), float)


def feed_it_limits_w(scenario) -> np.ndarray:
    """IT power at which each utility feed path reaches a limit at worst case [W (F,)].

    The engine splits every RPP equally over the feeds, so with ``redundancy: none`` a feed
    path carries ``a = 1/F`` of the IT power ``P``, and under ``2N`` it must carry all of it
    alone (``a = 1``). Its UPS (``site.power.ups.capacity_kw / F``, no limit in bypass)
    carries the IT side only: ``a P <= UPS_f``. The feed (``site.power.feeds``: utility feed /
    switchboard) also carries, where the chain puts the mechanical plant on the switchboards
    (:func:`mechanical_on_feeds`), its share ``s`` of the cooling plant at the chain's design
    outdoor temperature, ``f(P) = f(0) + m P`` (``f`` the plant the run uses,
    :func:`twin.power.cooling_plant.scenario_cooling_power_w`, affine in the heat: the physical
    plant's CRAH fans at the racks' full airflow are ``f(0)``; ``m = (f(1 MW) - f(0)) / 1 MW``),
    and of the house loads, ``H`` = ``house_kw`` + ``f(0)``: ``s = 1/F``, or 1 for a 2N survivor
    (it carries the whole plant on a feed loss: :func:`split_mechanical_w`), so
    ``a P + s (m P + H) <= feed_f``. The limit is the smaller ``P`` of the two (0 when the
    house loads alone exceed the feed). Losses are ignored, as in
    :func:`twin.power.tree.chain_it_capacity_w`. The engine admits racks against it, beside
    the plan and the sum of the paths.
    """
    pw = scenario.site.power
    n_f = len(pw.feeds)
    feed = np.array([f.capacity_kw * 1e3 for f in pw.feeds], float)
    alone = pw.redundancy == "2N"
    a = 1.0 if alone else 1.0 / n_f
    m, house, s = 0.0, 0.0, 0.0
    if mechanical_on_feeds(scenario):
        mech = pw.chain.mechanical
        f = scenario_cooling_power_w(scenario, np.array([0.0, 1e6]), mech.design_outdoor_temp_c)
        f0, f1 = float(f[0]), float(f[1])
        m = (f1 - f0) / 1e6
        house = mech.house_kw * 1e3 + f0
        s = 1.0 if alone else 1.0 / n_f
    out = np.maximum(feed - s * house, 0.0) / (a + s * m)
    if pw.ups.mode != "bypass":
        out = np.minimum(out, pw.ups.capacity_kw * 1e3 / n_f / a)
    return out
