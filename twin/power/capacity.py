"""Usable IT capacity of a power chain, derived from its equipment and redundancy.

Each stage of the chain gives one limit on the IT load, in kW of IT:

* **Counted equipment with redundancy** (transformers, switchboards, generators, UPS
  modules or systems). After the design contingency the survivors carry everything:
  ``survivors = count`` (N), ``count - 1`` (N+1, distributed redundant), ``count / 2``
  (2N) (:func:`surviving_units`). The survivors' usable rating must cover the IT chain's
  load *as seen at that stage* plus the mechanical load that sits on it
  (:func:`it_capacity_behind_w`).
* **The continuous-load rule.** A standard-rated breaker carries 80 % of its rating
  continuously (NEC 210.20(A), 215.3, 230.42; 100 %-rated breakers carry 100 %), applied
  to switchboard mains, RPP feeders and branch circuits
  (:func:`twin.power.electrical.breaker_continuous_limit_w`, the one implementation).
  Transformers and generators carry their nameplate (times a planned loading fraction).
* **Load seen upstream of the UPS** is the IT load plus the UPS loss at that load (the
  efficiency curve of :mod:`twin.power.ups_curves`), plus the battery recharge on the
  generators (IEEE 446: the rectifier's recharge draw, ``UPS_RECHARGE_FRACTION`` of the
  UPS rating). Distribution losses below the UPS (about 1 %) are not counted.
* **Mechanical load** (chillers, CRAH fans, pumps) is ``mech(heat)`` from the cooling
  plant model at the design outdoor temperature, with ``heat = IT + UPS loss``, plus the
  house loads (lighting, offices, BMS). It sits on the stages the scenario names, and the
  survivors after the design contingency carry all of it: the plant keeps cooling the hall
  whole through the loss of a 2N path (its power moves to the surviving path whatever
  ``transfers_on_feed_loss`` says, :func:`twin.power.chain.split_mechanical_w`), and N and
  N+1 units on a common bus (e.g. paralleled generator sets) carry all of it anyway.

The binding constraint is the smallest limit; the next constraint is the smallest limit
of a different piece of equipment. All limits are solved exactly (monotone root find).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.optimize import brentq

from twin.power.electrical import UPS_RECHARGE_FRACTION, breaker_continuous_limit_w
from twin.power.ups_curves import UPS_MODE_DEFAULT_CURVE, ups_curve_loss_w

__all__ = [
    "Constraint",
    "StageCapacity",
    "surviving_units",
    "it_capacity_behind_w",
    "ups_usable_kw",
    "utility_constraint",
    "chain_constraints",
    "binding_constraints",
    "rpp_groups",
    "racks_on_groups",
    "rpp_whole_racks",
    "rpp_unit_w",
    "rpp_constraint",
    "racks_fitting",
]


@dataclass(frozen=True)
class Constraint:
    """One limit on the IT load: which equipment, which rule, the numbers."""

    equipment: str
    rule: str
    it_capacity_kw: float
    equipment_limit_kw: float
    detail: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class StageCapacity:
    it_capacity_kw: float
    binding: Constraint
    next: Constraint | None
    constraints: list[Constraint] = field(default_factory=list)
    extras: dict = field(default_factory=dict)


def surviving_units(count: int, redundancy: str) -> int:
    """Units left carrying the load after the design contingency of a redundancy scheme.

    ``N`` -> count; ``N+1`` and ``distributed_redundant`` -> count - 1; ``2N`` -> count / 2.
    """
    if redundancy == "N":
        return int(count)
    if redundancy in ("N+1", "distributed_redundant"):
        if count < 2:
            raise ValueError(f"redundancy {redundancy} needs at least 2 units; got {count}")
        return int(count) - 1
    if redundancy == "2N":
        if count < 2 or count % 2:
            raise ValueError(f"redundancy 2N needs an even number of units; got {count}")
        return int(count) // 2
    raise ValueError(f"unknown redundancy {redundancy!r}")


def it_capacity_behind_w(capacity_w: float, load_at_it_w: Callable[[float], float],
                         it_max_w: float = 1e10) -> float:
    """Largest IT load [W] whose load on a stage, ``load_at_it_w(IT)`` [W], fits ``capacity_w``.

    ``load_at_it_w`` must be non-decreasing (losses and cooling grow with the IT load);
    the root of ``load(IT) = capacity`` is found by Brent's method to 1 mW. 0 when even
    no IT load fits (the stage is overloaded by what else it carries).
    """
    f = lambda it: load_at_it_w(it) - capacity_w  # noqa: E731
    if f(0.0) >= 0.0:
        return 0.0
    if f(it_max_w) <= 0.0:
        return float(it_max_w)
    return float(brentq(f, 0.0, it_max_w, xtol=1e-3))


def ups_usable_kw(systems: int, modules_per_system: int, module_kw: float, topology: str,
                  mode: str, bypass_kw_per_system: float | None = None) -> tuple[float, str]:
    """Output the UPS plant can carry after its design contingency [kW] and the rule used.

    In bypass the modules are out of the path and each system's bypass path (default the
    fully populated frame) is the limit; otherwise the modules: N all, N+1 all but one,
    2N half the systems, distributed redundant all systems but one.
    """
    if mode == "bypass":
        per = bypass_kw_per_system if bypass_kw_per_system is not None else modules_per_system * module_kw
        topo = "N" if topology == "N+1" else topology
        s = surviving_units(systems, topo)
        return s * per, f"bypass path {per:g} kW x {s} of {systems} systems ({topology})"
    if topology == "N+1":
        n = systems * modules_per_system - 1
        return n * module_kw, f"{n} of {systems * modules_per_system} modules x {module_kw:g} kW (N+1)"
    s = surviving_units(systems, topology)
    return (s * modules_per_system * module_kw,
            f"{s} of {systems} systems x {modules_per_system} modules x {module_kw:g} kW ({topology})")


def rpp_groups(rack_positions: int, groups: int, panels: int | None = None) -> np.ndarray:
    """The RPP group (panel, or 2N A/B pair) of each rack position [int (R,)].

    The ``panels`` RPPs (default ``groups``) each feed ``ceil(positions / panels)``
    consecutive positions in delivery order, as ``site.power.rpp`` lays racks on its panels
    (``racks_per_rpp`` consecutive racks each); panel ``q`` is in group ``q mod groups``: under
    N (``groups = panels``) each panel is its own group, under 2N (``groups = panels / 2``) the
    A side is panels ``0 .. G-1`` and the B side ``G .. 2G-1``, pair ``g`` panels ``g`` and
    ``g + G``. So a hall filled in delivery order fills the pairs evenly (its first half puts
    one panel's racks on each pair). The one map :func:`rpp_whole_racks` (``twin capacity``)
    and the run's admission (``twin.sim.power_chain.PowerChain``) share.
    """
    n, g = int(rack_positions), int(groups)
    p = g if panels is None else int(panels)
    if n <= 0 or g <= 0 or p <= 0:
        return np.zeros(max(n, 0), int)
    return (np.arange(n) // (-(-n // p))) % g


def racks_on_groups(rack_w, group, group_limit_w, *, candidate=None, powered=None) -> np.ndarray:
    """Which racks their RPP groups carry whole [bool (R,)]: the rule of :func:`rpp_whole_racks`.

    A rack's cord sits on one panel (on 2N, on one A/B pair whose surviving panel carries the
    pair's racks alone), so a group cannot take a fraction of a rack. ``rack_w`` (R,) or scalar
    [any power unit]; ``group`` (R,) int, each rack's group; ``group_limit_w`` (G,) each group's
    limit [same unit]. The ``powered`` racks (default none) are committed to their groups first
    and stay; then each group takes the longest prefix, in index order, of its ``candidate``
    racks (default all) whose sum fits: ``base_g + sum(w[:k]) <= limit_g`` (admission's order;
    a rack that does not fit its group keeps the group's later racks out, not other groups')."""
    grp = np.asarray(group, dtype=np.intp)
    n = grp.shape[0]
    w = np.broadcast_to(np.asarray(rack_w, dtype=float), (n,))
    lim = np.asarray(group_limit_w, dtype=float)
    on = np.zeros(n, bool) if powered is None else np.asarray(powered, bool)
    cand = (np.ones(n, bool) if candidate is None else np.asarray(candidate, bool)) & ~on
    base = np.bincount(grp, weights=np.where(on, w, 0.0), minlength=lim.shape[0])
    order = np.argsort(grp, kind="stable")              # index order within each group
    g_sorted = grp[order]
    cs = np.cumsum(np.where(cand, w, 0.0)[order])
    start = np.searchsorted(g_sorted, g_sorted, side="left")
    cum = np.empty(n)
    cum[order] = cs - np.concatenate(([0.0], cs))[start]
    # a group's running sum never falls (w >= 0): once over, it stays over, so the racks that
    # fit are the longest prefix
    return on | (cand & (base[grp] + cum <= lim[grp] * (1 + 1e-12)))


def rpp_whole_racks(unit_kw: float, groups: int, rack_worst_case_kw, rack_positions: int,
                    panels: int | None = None) -> tuple[int, float]:
    """Racks the RPPs power at their worst case when racks are whole: (count, their kW).

    A panel cannot take a fraction of a rack (:func:`racks_on_groups`): group ``g`` of the
    ``groups`` panels (pairs) holds at most ``floor(unit / worst)`` racks, and the RPPs
    together ``sum_g floor(unit / worst_g)`` racks, not ``floor(groups x unit / worst)``
    (Blue Vela's 2N stage: 8 pairs x floor(218.5 / 19.94) = 80 racks, not 87). The rack
    positions lie on the ``panels`` RPPs (default ``groups``) and their groups as
    :func:`rpp_groups` maps them; with (R,) worst cases [kW] each group takes the longest
    prefix of its racks whose sum fits (admission's order). ``unit_kw``: one panel's
    continuous limit [kW].
    """
    groups = int(groups)
    if groups <= 0 or rack_positions <= 0:
        return 0, 0.0
    w = np.asarray(rack_worst_case_kw, float)
    if w.ndim == 0:
        w = np.full(int(rack_positions), float(w))
    w = w[:rack_positions]
    grp = rpp_groups(len(w), groups, panels)
    ok = racks_on_groups(w, grp, np.full(groups, float(unit_kw)))
    kw = 0.0
    for g in range(groups):
        kw += float(w[ok & (grp == g)].sum())
    return int(ok.sum()), kw


def rpp_unit_w(rpps) -> float:
    """One RPP's continuous limit [W] (``site.power.chain.rpps``: its feeder breaker at the
    continuous rule, :func:`twin.power.electrical.breaker_continuous_limit_w`)."""
    return float(breaker_continuous_limit_w(rpps.breaker_a, rpps.voltage_v, rpps.phases, rpps.rated_100pct,
                                            rpps.power_factor))


def rpp_constraint(rpps, rack_positions: int, rack_worst_case_w=None) -> Constraint:
    """The RPPs' limit on the IT load of one stage [:class:`Constraint`, kW of IT].

    The surviving panels (:func:`surviving_units`: all under N, one per A/B pair under 2N) at
    their continuous limit (:func:`rpp_unit_w`); with ``rack_worst_case_w`` [W] (one figure or
    (R,) in delivery order) the racks they carry whole (:func:`rpp_whole_racks`) when fewer
    than the positions fit. What ``twin capacity`` lists and the run admits against
    (:func:`twin.power.chain.rpp_stage_limits`).
    """
    r = rpps
    unit = rpp_unit_w(r)
    s = surviving_units(r.count, r.redundancy)
    rule = "100%-rated feeder breaker" if r.rated_100pct else "NEC 80% continuous on the RPP feeder breaker"
    it_kw, whole = s * unit / 1e3, ""
    if rack_worst_case_w is not None:
        worst_kw = np.asarray(rack_worst_case_w, float) / 1e3
        n_racks, racks_kw = rpp_whole_racks(unit / 1e3, s, worst_kw, rack_positions, r.count)
        # every position fits its panel: the panels never turn a rack away, the kW stand
        if n_racks < rack_positions and racks_kw < it_kw * (1 - 1e-12):
            it_kw = racks_kw
            what = "pair" if r.redundancy == "2N" else "panel"
            whole = (f"; whole racks: {n_racks} at worst case on {s} {what}s "
                     f"({n_racks / s:.3g} per {what})")
    return Constraint("rpps", rule, it_kw, s * unit / 1e3,
                      f"{s} of {r.count} RPPs ({r.redundancy}) x {r.breaker_a:g} A {r.voltage_v:g} V "
                      f"= {unit / 1e3:.1f} kW continuous each{whole}")


def _it_chain_loads(chain, mechanical_w: Callable[[float], float]) -> dict:
    """What the IT chain puts on the stages above the UPS, as functions of the IT load [W].

    ``ups_loss(it)``: the UPS loss on its curve at that load (0 without a UPS or in bypass);
    ``upstream_it(it) = it + ups_loss(it)``; ``mech(it) = mechanical_w(upstream_it(it)) +
    house``: the cooling plant at the design outdoor temperature for the heat the IT and the
    UPS loss make, plus the house loads; ``recharge_w`` the battery recharge the generators
    carry; ``curve`` the UPS curve's name; ``ups`` the UPS's own :class:`Constraint` (None
    without a UPS). The one definition :func:`chain_constraints` and
    :func:`utility_constraint` share.
    """
    ups = chain.ups
    out: dict = {"ups": None, "curve": None, "recharge_w": 0.0}
    ups_loss: Callable[[float], float] = lambda it: 0.0  # noqa: E731
    if ups is not None:
        curve = ups.curve or UPS_MODE_DEFAULT_CURVE[ups.mode]
        if ups.mode == "bypass":
            curve = "bypass"
        installed_w = ups.systems * ups.modules_per_system * ups.module_kw * 1e3
        usable_kw, ups_rule = ups_usable_kw(ups.systems, ups.modules_per_system, ups.module_kw,
                                            ups.topology, ups.mode, ups.bypass_kw_per_system)
        # load shared equally by the modules in service (all installed modules run)
        ups_loss = lambda it: float(ups_curve_loss_w(it, installed_w, curve))  # noqa: E731
        out["curve"] = curve
        out["recharge_w"] = 0.0 if ups.mode == "bypass" else UPS_RECHARGE_FRACTION * usable_kw * 1e3
        out["ups"] = Constraint("ups", "module rating after the design contingency" if ups.mode != "bypass"
                                else "bypass path rating", usable_kw, usable_kw, ups_rule)

    def upstream_it(it):                      # what the IT chain draws above the UPS [W]
        return it + ups_loss(it)

    house_w = chain.mechanical.house_kw * 1e3

    def mech(it):                             # cooling plant + house loads [W]
        return float(mechanical_w(upstream_it(it))) + house_w

    out.update(ups_loss=ups_loss, upstream_it=upstream_it, mech=mech)
    return out


def _utility_constraint(chain, upstream_it, mech) -> Constraint | None:
    """The utility service's limit (None without ``chain.utility``): the largest IT load whose
    draw at the service, ``upstream_it(IT)`` plus ``mech(IT)`` where the chain puts the
    mechanical plant on the utility, fits ``kva x power factor``."""
    u = chain.utility
    if u is None:
        return None
    cap_w = u.kva * 1e3 * u.power_factor
    carries = "utility" in chain.mechanical.carried_by
    it_cap = it_capacity_behind_w(cap_w, lambda it: upstream_it(it) + (mech(it) if carries else 0.0))
    return Constraint("utility", "service capacity x power factor", it_cap / 1e3, cap_w / 1e3,
                      f"{u.kva:g} kVA x pf {u.power_factor:g} = {cap_w / 1e3:.0f} kW carries IT + "
                      f"UPS loss{' + mechanical' if carries else ''}")


def utility_constraint(chain, mechanical_w: Callable[[float], float]) -> Constraint | None:
    """The utility service's limit on the IT load of one stage of the chain [:class:`Constraint`,
    kW of IT], None when the chain types no ``utility``.

    ``kva x power_factor`` [kW] must carry the IT load, the UPS loss on its curve at that load
    and, where ``chain.mechanical.carried_by`` names the utility, the cooling plant at the
    design outdoor temperature for that heat plus the house loads
    (``mechanical_w(heat_w)`` [W]): ``IT + loss(IT) + mech(IT + loss(IT)) + house <= kVA x pf``,
    solved for IT by :func:`it_capacity_behind_w`. The same constraint
    :func:`chain_constraints` lists for ``twin capacity``; the engine admits racks against it
    (:func:`twin.power.chain.utility_it_limits_w`).
    """
    loads = _it_chain_loads(chain, mechanical_w)
    return _utility_constraint(chain, loads["upstream_it"], loads["mech"])


def chain_constraints(chain, *, rack_positions: int, mechanical_w: Callable[[float], float],
                      rack_worst_case_w=None):
    """Every limit of one stage of the chain [list of :class:`Constraint`] and a context dict.

    ``chain`` is a :class:`twin.scenario.power_chain.PowerChain` (one stage);
    ``rack_positions`` the racks the hall holds; ``mechanical_w(heat_w)`` the cooling
    plant's electric power [W] for a heat load [W] at the design outdoor temperature.
    ``rack_worst_case_w`` [W] (one figure, or (R,) per rack position in delivery order):
    when given, the RPP limit counts whole racks per panel / 2N pair
    (:func:`rpp_whole_racks`), since a rack cannot be split over panels.
    """
    out: list[Constraint] = []
    mech_on = set(chain.mechanical.carried_by)
    loads = _it_chain_loads(chain, mechanical_w)
    ups_loss, upstream_it, mech = loads["ups_loss"], loads["upstream_it"], loads["mech"]
    curve, recharge_w = loads["curve"], loads["recharge_w"]
    if loads["ups"] is not None:
        out.append(loads["ups"])

    def group(name, count, redundancy, unit_w, rule, detail_unit, extra_w=0.0, carries_mech=False):
        s = surviving_units(count, redundancy)
        cap_w = s * unit_w
        # The surviving units carry the whole plant: the plant keeps cooling the hall whole
        # through the loss of a path (twin.power.chain.split_mechanical_w), so a 2N survivor
        # carries all of it, as feed_loss_survivor_load_fraction counts it

        def load(it):
            return upstream_it(it) + extra_w + (mech(it) if carries_mech else 0.0)
        it_cap = it_capacity_behind_w(cap_w, load)
        mech_txt = " + mechanical (all)" if carries_mech else ""
        rech_txt = f" + UPS recharge {extra_w / 1e3:.0f} kW" if extra_w else ""
        out.append(Constraint(name, rule, it_cap / 1e3, cap_w / 1e3,
                              f"{s} of {count} x {detail_unit} ({redundancy}) = {cap_w / 1e3:.0f} kW "
                              f"carries IT + UPS loss{mech_txt}{rech_txt}"))

    utility = _utility_constraint(chain, upstream_it, mech)
    if utility is not None:
        out.append(utility)
    if chain.transformers is not None:
        t = chain.transformers
        unit = t.kva * 1e3 * t.power_factor * t.loading_fraction
        group("transformers", t.count, t.redundancy, unit, "nameplate x power factor x planned loading",
              f"{t.kva:g} kVA", carries_mech="transformers" in mech_on)
    if chain.switchboards is not None:
        b = chain.switchboards
        unit = float(breaker_continuous_limit_w(b.main_breaker_a, b.voltage_v, b.phases,
                                                b.rated_100pct, b.power_factor))
        rule = "100%-rated main breaker" if b.rated_100pct else "NEC 80% continuous on the main breaker"
        group("switchboards", b.count, b.redundancy, unit, rule,
              f"{b.main_breaker_a:g} A {b.voltage_v:g} V main ({unit / 1e3:.0f} kW continuous)",
              carries_mech="switchboards" in mech_on)
    if chain.generators is not None:
        g = chain.generators
        group("generators", g.count, g.redundancy, g.kw * 1e3 * g.loading_fraction,
              f"{g.rating} rating x planned loading", f"{g.kw:g} kW", extra_w=recharge_w,
              carries_mech="generators" in mech_on)
    if chain.rpps is not None:
        out.append(rpp_constraint(chain.rpps, rack_positions, rack_worst_case_w))
    if chain.branch is not None:
        br = chain.branch
        cord = float(breaker_continuous_limit_w(br.breaker_a, br.voltage_v, br.phases, br.rated_100pct,
                                                br.power_factor))
        live = br.cords_per_rack - (1 if br.redundancy == "2N" else 0)
        per_rack = live * cord
        rule = ("100%-rated branch breaker" if br.rated_100pct else "NEC 80% continuous on the branch breaker") + (
            ", one cord carries the rack on failover" if br.redundancy == "2N" else "")
        it_cap_w = rack_positions * per_rack
        short = ""
        if rack_worst_case_w is not None:
            # only racks the circuits carry count: cords no rack can use are no capacity (the
            # racks in delivery order up to the first that does not fit, as racks_fitting counts)
            w = np.broadcast_to(np.asarray(rack_worst_case_w, float), (rack_positions,))
            over = np.flatnonzero(w > per_rack * (1 + 1e-12))
            if len(over):
                it_cap_w = min(it_cap_w, float(np.sum(w[:over[0]])))
                short = (f"; rack {over[0] + 1}'s worst case {w[over[0]] / 1e3:.1f} kW is above the "
                         f"{per_rack / 1e3:.1f} kW its circuits carry, {over[0]} racks before it fit")
        out.append(Constraint("branch", rule, it_cap_w / 1e3, per_rack / 1e3,
                              f"{rack_positions} racks x {live} of {br.cords_per_rack} cords x {br.breaker_a:g} A "
                              f"{br.voltage_v:g} V ({cord / 1e3:.1f} kW continuous per cord){short}"))
    ctx = dict(ups_loss_w=ups_loss, mechanical_at_it_w=mech, ups_curve=curve)
    return out, ctx


def binding_constraints(constraints: list[Constraint]) -> tuple[Constraint, Constraint | None]:
    """The smallest limit and the smallest limit of another piece of equipment."""
    if not constraints:
        raise ValueError("the chain describes no equipment")
    order = sorted(constraints, key=lambda c: c.it_capacity_kw)
    first = order[0]
    nxt = next((c for c in order[1:] if c.equipment != first.equipment), None)
    return first, nxt


def racks_fitting(it_capacity_kw: float, rack_worst_case_kw, rack_positions: int,
                  rack_limit_kw: float = np.inf) -> int:
    """Racks that can run at their worst case [count]: ``floor(capacity / worst)``, no more
    than the positions, and none when one rack exceeds what its circuits carry. With (R,)
    worst cases [kW] (racks of several node models, in delivery order): the longest prefix
    whose sum fits, ``max k: sum(w[:k]) <= capacity``, stopping at a rack its circuits
    cannot carry (admission's order)."""
    w = np.asarray(rack_worst_case_kw, float)
    if w.ndim == 0:
        one = float(w)
        if one > rack_limit_kw * (1 + 1e-12):
            return 0
        return int(min(rack_positions, np.floor(it_capacity_kw / one + 1e-9)))
    w = w[:rack_positions]
    over = np.flatnonzero(w > rack_limit_kw * (1 + 1e-12))
    w = w[:over[0]] if len(over) else w
    return int(np.searchsorted(np.cumsum(w), it_capacity_kw * (1 + 1e-12), side="right"))
