"""The facility power tree: rack PDU -> RPP -> (UPS or bypass) -> switchboard -> utility feed.

:func:`build_power_tree` turns plain arrays into a frozen :class:`PowerTree` once;
:func:`evaluate_power_tree` pushes rack IT power (one sample ``(R,)`` or a series
``(T, R)``) up the tree, vectorised (no per-rack Python loop), and returns a
:class:`PowerFlow` with every stage's power, load fraction and loss.

Topology
--------
* Rack ``r`` draws through ``S`` cords (1 or 2: A/B PDUs). Cord ``s`` hangs on RPP
  ``rack_rpp[r, s]`` and carries ``rack_share[r, s]`` of the rack when everything is up.
  When an RPP loses all its feeds, its cords carry nothing and the rack's load moves to
  its live cords (PSU load sharing); a rack with no live cord is dropped.
* RPP ``p`` is fed by the feeds in ``rpp_feed_share[p, :]`` (one-hot for a classic 2N
  A/B design, or split across both feeds). A failed feed's share moves to the
  surviving feeds of that RPP.
* Each feed path ``f`` has its own UPS (capacity ``ups_capacity_w[f]``, in ``ups_mode``),
  and a switchboard/transformer rated at the feed capacity ``feed_capacity_w[f]``.

Losses by stage (all in the conditioned building): RPP and branch cabling
(I^2 R, :func:`resistive_loss_w`), UPS (:func:`ups_loss_w`, zero in bypass), and the
feed transformer/switchboard (:func:`transformer_loss_w`). Energy balance:
``utility_w = it_w + rpp_loss_w + ups_loss_w + feed_loss_w`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from twin.power.electrical import (
    NEC_CONTINUOUS_DERATING,
    UPS_LOSS_COEFFS,
    UPS_MODES,
    resistive_loss_w,
    transformer_loss_w,
    ups_loss_w,
)
from twin.power.ups_curves import ups_curve as ups_curve_named
from twin.power.ups_curves import ups_loss_coeffs

__all__ = [
    "PowerTree",
    "PowerFlow",
    "build_power_tree",
    "evaluate_power_tree",
    "evaluate_ups_stage",
    "facility_it_capacity_w",
    "racks_admitted",
    "staged_admission",
]

#: Default RPP + branch-circuit + feeder resistive loss at rated current [fraction]
#: (a ~1 % voltage-drop design; NEC 210.19(A) informational note allows 3 % + 2 %).
RPP_LOSS_FRACTION_AT_RATING = 0.01
#: Default MV/LV transformer no-load and full-load copper loss [fraction of rating]
#: (IEEE C57.12.91 two-term model; DOE 2016 efficiency levels, ~99 % at 50 % load).
FEED_NO_LOAD_LOSS_FRACTION = 0.002
FEED_LOAD_LOSS_FRACTION = 0.008


@dataclass(frozen=True, eq=False)
class PowerTree:
    """Static description of the power chain as arrays (build with :func:`build_power_tree`).

    Attributes (R racks, S cords per rack, P RPPs, F feeds)
    ----------
    rack_rpp : (R, S) int          RPP of each cord
    rack_share : (R, S) float      share of the rack on each cord, rows sum to 1
    rpp_limit_w : (P,)             continuous limit of the RPP breaker [W]
    rpp_rating_w : (P,)            breaker rating (trip-curve reference) [W]
    rpp_feed_share : (P, F)        share of each RPP on each feed, rows sum to 1
    feed_capacity_w : (F,)         feed / switchboard rating [W]
    ups_mode : str                 "double_conversion", "eco" or "bypass"
    ups_capacity_w : (F,)          UPS output rating on each feed path [W]
    ups_ride_through_s : float     battery autonomy at full load [s]
    rpp_loss_fraction : float      RPP + cabling I^2R loss at rating [fraction]
    feed_no_load_loss_fraction, feed_load_loss_fraction : transformer loss [fraction]
    """

    rack_rpp: np.ndarray
    rack_share: np.ndarray
    rpp_limit_w: np.ndarray
    rpp_rating_w: np.ndarray
    rpp_feed_share: np.ndarray
    feed_capacity_w: np.ndarray
    ups_mode: str
    ups_capacity_w: np.ndarray
    ups_ride_through_s: float
    rpp_loss_fraction: float
    feed_no_load_loss_fraction: float
    feed_load_loss_fraction: float
    _rpp_ups_loss_coeffs: tuple
    # routing (cord shares, RPP feed shares, dropped racks) per feed-up pattern, built on
    # first use: at most 2**F entries
    _routes: dict = field(default_factory=dict, repr=False)

    def _route(self, up: tuple) -> _Route:
        r = self._routes.get(up)
        if r is None:
            r = _build_route(self, np.array(up, dtype=bool))
            self._routes[up] = r
        return r

    @property
    def n_racks(self) -> int:
        return self.rack_rpp.shape[0]

    @property
    def n_rpps(self) -> int:
        return self.rpp_limit_w.shape[0]

    @property
    def n_feeds(self) -> int:
        return self.feed_capacity_w.shape[0]


@dataclass(frozen=True, eq=False)
class PowerFlow:
    """Result of :func:`evaluate_power_tree`. Shapes: leading ``(T,)`` if the input was ``(T, R)``.

    rack_w (…, R)             IT power actually delivered to each rack [W] (0 if dropped)
    rack_dropped (R,)         rack lost all its cords (bool)
    rpp_w (…, P)              power out of each RPP breaker to the racks [W]
    rpp_load_fraction (…, P)  rpp_w / continuous limit (> 1 breaks the NEC 80 % rule)
    rpp_rating_fraction (…, P) rpp_w / breaker rating (input of the trip curve)
    rpp_loss_w (…, P)         RPP + cabling loss [W]
    ups_output_w (…, F)       load on each UPS (or passing through the bypass) [W]
    ups_load_fraction (…, F)  ups_output_w / UPS rating
    ups_loss_w (…, F)         UPS loss [W] (0 in bypass)
    feed_w (…, F)             power each utility feed draws for the IT chain [W] (the run adds its
                              share of the cooling: twin.power.chain.split_mechanical_w)
    feed_load_fraction (…, F) feed_w / feed capacity
    feed_loss_w (…, F)        switchboard / transformer loss [W]
    it_w (…)                  total delivered IT power [W]
    utility_w (…)             total utility power for the IT chain, before cooling [W]
    loss_w (…)                total loss = utility_w - it_w [W]
    rpp_ok, feed_ok, ups_ok (…) every RPP within its continuous limit / every feed within
                              capacity / every UPS within rating (always True in bypass)
    holds (…)                 all of the above and no rack dropped
    """

    rack_w: np.ndarray
    rack_dropped: np.ndarray
    rpp_w: np.ndarray
    rpp_load_fraction: np.ndarray
    rpp_rating_fraction: np.ndarray
    rpp_loss_w: np.ndarray
    ups_output_w: np.ndarray
    ups_load_fraction: np.ndarray
    ups_loss_w: np.ndarray
    feed_w: np.ndarray
    feed_load_fraction: np.ndarray
    feed_loss_w: np.ndarray
    it_w: np.ndarray
    utility_w: np.ndarray
    loss_w: np.ndarray
    rpp_ok: np.ndarray
    feed_ok: np.ndarray
    ups_ok: np.ndarray
    holds: np.ndarray

    @property
    def building_heat_w(self) -> np.ndarray:
        """Heat the cooling plant must remove from the IT chain [W]: IT + RPP + UPS losses.

        The feed transformer/switchboard is taken to stand outdoors or in a separately
        ventilated electrical room.
        """
        return self.it_w + self.rpp_loss_w.sum(axis=-1) + self.ups_loss_w.sum(axis=-1)

    @property
    def loss_by_stage_w(self) -> dict[str, np.ndarray]:
        """Total loss per stage [W]: ``{"rpp": …, "ups": …, "feed": …}``."""
        return {
            "rpp": self.rpp_loss_w.sum(axis=-1),
            "ups": self.ups_loss_w.sum(axis=-1),
            "feed": self.feed_loss_w.sum(axis=-1),
        }


def _as_2d_int(a, name):
    a = np.asarray(a)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be an (R,) or (R, S) integer array")
    return a.astype(np.intp)


def build_power_tree(
    rack_rpp,
    rpp_limit_w,
    feed_capacity_w,
    ups_mode: str,
    ups_capacity_w,
    *,
    rpp_rating_w=None,
    rack_share=None,
    rpp_feed=None,
    rpp_feed_share=None,
    ups_ride_through_s: float = 300.0,
    rpp_loss_fraction: float = RPP_LOSS_FRACTION_AT_RATING,
    feed_no_load_loss_fraction: float = FEED_NO_LOAD_LOSS_FRACTION,
    feed_load_loss_fraction: float = FEED_LOAD_LOSS_FRACTION,
    ups_curve: str | None = None,
) -> PowerTree:
    """Build the power tree from arrays (once per layout).

    Parameters
    ----------
    rack_rpp : (R,) or (R, S) int
        RPP index of each rack, or of each of its S cords (A/B).
    rpp_limit_w : (P,) float
        Continuous limit of each RPP breaker [W] (:func:`breaker_continuous_limit_w`).
    feed_capacity_w : (F,) float
        Rating of each utility feed / switchboard [W].
    ups_mode : "double_conversion", "eco" or "bypass".
    ups_capacity_w : float or (F,)
        UPS output rating on each feed path [W] (a scalar is each path's UPS).
    rpp_rating_w : (P,), optional
        Breaker rating [W]; default ``rpp_limit_w / 0.8`` (standard-rated breaker).
    rack_share : (R, S), optional
        Share of each cord when all are up; default equal split.
    rpp_feed : (P,) int, optional
        Feed of each RPP (one-hot ``rpp_feed_share``); exclusive with ``rpp_feed_share``.
    rpp_feed_share : (P, F), optional
        Share of each RPP on each feed; default equal split over all feeds.
    ups_ride_through_s : battery autonomy at full load [s].
    rpp_loss_fraction, feed_no_load_loss_fraction, feed_load_loss_fraction : losses
        [fraction of rating] of the RPP/cabling and feed-transformer stages.
    ups_curve : str, optional
        Efficiency curve of the UPS (:data:`twin.power.ups_curves.UPS_CURVES`, e.g.
        ``"legacy_transformer"``); default the mode's modern curve
        (:data:`twin.power.electrical.UPS_LOSS_COEFFS`). Ignored in bypass.
    """
    if ups_mode not in UPS_MODES:
        raise ValueError(f"ups_mode must be one of {UPS_MODES}, got {ups_mode!r}")
    coeffs = UPS_LOSS_COEFFS[ups_mode]
    if ups_curve is not None and ups_mode != "bypass":
        coeffs = ups_loss_coeffs(ups_curve_named(ups_curve).efficiency)
    rr = _as_2d_int(rack_rpp, "rack_rpp")
    n_r, n_s = rr.shape
    lim = np.asarray(rpp_limit_w, dtype=float).ravel()
    n_p = lim.shape[0]
    if rr.size and (rr.min() < 0 or rr.max() >= n_p):
        raise ValueError("rack_rpp refers to an RPP that does not exist")
    rating = lim / NEC_CONTINUOUS_DERATING if rpp_rating_w is None else np.broadcast_to(
        np.asarray(rpp_rating_w, dtype=float), lim.shape).copy()
    feed_cap = np.atleast_1d(np.asarray(feed_capacity_w, dtype=float))
    n_f = feed_cap.shape[0]
    ups_cap = np.broadcast_to(np.asarray(ups_capacity_w, dtype=float), (n_f,)).copy()

    if rack_share is None:
        share = np.full((n_r, n_s), 1.0 / n_s)
    else:
        share = np.asarray(rack_share, dtype=float).reshape(n_r, n_s)
        if np.any(share < 0) or not np.allclose(share.sum(axis=1), 1.0):
            raise ValueError("rack_share rows must be non-negative and sum to 1")
    if rpp_feed is not None and rpp_feed_share is not None:
        raise ValueError("give rpp_feed or rpp_feed_share, not both")
    if rpp_feed is not None:
        pf = np.asarray(rpp_feed, dtype=np.intp)
        if pf.shape != (n_p,) or pf.min() < 0 or pf.max() >= n_f:
            raise ValueError("rpp_feed must be (P,) feed indices")
        fshare = np.zeros((n_p, n_f))
        fshare[np.arange(n_p), pf] = 1.0
    elif rpp_feed_share is None:
        fshare = np.full((n_p, n_f), 1.0 / n_f)
    else:
        fshare = np.asarray(rpp_feed_share, dtype=float).reshape(n_p, n_f)
        if np.any(fshare < 0) or not np.allclose(fshare.sum(axis=1), 1.0):
            raise ValueError("rpp_feed_share rows must be non-negative and sum to 1")

    for a in (rr, share, lim, rating, fshare, feed_cap, ups_cap):
        a.setflags(write=False)
    return PowerTree(
        rack_rpp=rr, rack_share=share, rpp_limit_w=lim, rpp_rating_w=rating,
        rpp_feed_share=fshare, feed_capacity_w=feed_cap, ups_mode=ups_mode,
        ups_capacity_w=ups_cap, ups_ride_through_s=float(ups_ride_through_s),
        rpp_loss_fraction=float(rpp_loss_fraction),
        feed_no_load_loss_fraction=float(feed_no_load_loss_fraction),
        feed_load_loss_fraction=float(feed_load_loss_fraction),
        _rpp_ups_loss_coeffs=coeffs,
    )


class _Route:
    """How power routes through the tree for one pattern of live feeds.

    up (F,) bool; cord_w (R, S) share of each rack on each cord (0 on dead cords);
    rpp_feed (P, F) share of each RPP on each live feed; dropped (R,) rack has no live
    cord; rpp_from_rack (P, R) sparse cord shares, built on first (T, R) use.
    """

    __slots__ = ("up", "cord_w", "rpp_feed", "dropped", "any_dropped", "_m", "_rack_rpp", "_n_p", "_block")

    def __init__(self, up, cord_w, rpp_feed, dropped, rack_rpp, n_p):
        self.up, self.cord_w, self.rpp_feed, self.dropped = up, cord_w, rpp_feed, dropped
        self.any_dropped = bool(dropped.any())
        self._m, self._rack_rpp, self._n_p = None, rack_rpp, n_p
        self._block: int | None = None

    @property
    def rpp_block(self) -> int:
        """Racks per RPP when RPP ``p`` takes whole racks ``p m .. (p + 1) m - 1`` on one cord
        each at share 1.0 (an equal block of racks per RPP, in plant order), else 0: the
        (T, R) -> (T, P) sum is then ``m`` column adds (:func:`_rpp_sum_blocks`)."""
        if self._block is None:
            rr, w, n_p = self._rack_rpp, self.cord_w, self._n_p
            n_r = rr.shape[0]
            m = n_r // n_p if n_p else 0
            ok = (m > 0 and m * n_p == n_r and rr.shape[1] == 1 and bool(np.all(w == 1.0))
                  and np.array_equal(rr[:, 0], np.repeat(np.arange(n_p), m)))
            self._block = m if ok else 0
        return self._block

    @property
    def rpp_from_rack(self) -> sp.csr_matrix:
        """(P, R) CSR matrix: ``rpp_w.T = M @ rack_w.T``."""
        if self._m is None:
            self._m = _rack_to_rpp_matrix(self._rack_rpp, self.cord_w, self._n_p).T.tocsr()
        return self._m


def _build_route(tree: PowerTree, up: np.ndarray) -> _Route:
    # row sums by mat-vec: much faster than .sum(axis=1) over a short last axis
    vw = tree.rpp_feed_share * up
    vsum = vw @ np.ones(up.size)
    rpp_live = vsum > 0
    vshare = vw / np.where(rpp_live, vsum, 1.0)[:, None]      # dead RPP rows stay 0
    w = tree.rack_share * rpp_live[tree.rack_rpp]
    wsum = w @ np.ones(w.shape[1])
    dropped = wsum <= 0
    w = w / np.where(dropped, 1.0, wsum)[:, None]               # dropped rows stay 0
    for a in (up, w, vshare, dropped):
        a.setflags(write=False)
    return _Route(up, w, vshare, dropped, tree.rack_rpp, tree.n_rpps)


def _rack_to_rpp_matrix(rack_rpp, share, n_p) -> sp.csr_matrix:
    n_r, n_s = rack_rpp.shape
    rows = np.repeat(np.arange(n_r), n_s)
    return sp.csr_matrix((share.ravel(), (rows, rack_rpp.ravel())), shape=(n_r, n_p))


def _rpp_sum_blocks(rack_w: np.ndarray, m: int) -> np.ndarray:
    """RPP power [W (T, P)] of rack power ``rack_w`` [W (T, R)] whose RPP ``p`` takes racks
    ``p m .. (p + 1) m - 1`` at share 1.0 (:attr:`_Route.rpp_block`).

    ``rpp_from_rack @ rack_w.T`` (scipy's CSR product) adds ``1.0 * x`` of each rack of an
    RPP, in rack order, into zeros: here the same adds as ``m`` column adds of the
    (T, P, m) view into zeros (``1.0 * x`` is ``x``), returned in the product's layout
    (the transpose of a C-ordered (P, T), i.e. Fortran order), since the sums and the
    matrix product downstream read it in that order (issue 19, speed only)."""
    t = rack_w.shape[0]
    x3 = rack_w.reshape(t, -1, m)
    acc = np.zeros(x3.shape[:2])
    # a few samples at a time (~512 kB of racks): the m strided passes then read the block
    # from cache, not the whole window from memory m times (each sum's order is unchanged)
    rows = max(1, _RPP_BLOCK_VALUES // max(rack_w.shape[1], 1))
    for a in range(0, t, rows):
        blk, xb = acc[a:a + rows], x3[a:a + rows]
        for j in range(m):
            blk += xb[:, :, j]
    out = np.empty(acc.shape[::-1]).T
    out[...] = acc
    return out


#: rack values summed into RPPs at a time by :func:`_rpp_sum_blocks` (float64: ~512 kB)
_RPP_BLOCK_VALUES = 1 << 16
#: (T, R) rack power through the RPPs as column adds where the racks of each RPP are an equal
#: block (:func:`_rpp_sum_blocks`); False: scipy's CSR product, the reference (issue 19)
RPP_BLOCK_SUMS = True


def evaluate_power_tree(tree: PowerTree, rack_it_w, feed_up=None, *, copy: bool = True) -> PowerFlow:
    """Push rack IT power through the tree [W] and return every stage's flow and loss.

    Parameters
    ----------
    tree : PowerTree
    rack_it_w : (R,) or (T, R) float
        Power each rack draws at its PDU inputs [W] (sum of node wall power plus rack
        switches).
    feed_up : (F,) or (T, F) bool, optional
        Which utility feeds are live; default all; (T, F) with a ``(T, R)`` series: the live
        feeds of each sample (a sample with a feed down is routed as that pattern, so its
        survivors carry everything). The survivors carry everything their RPPs and racks can
        move onto them; ``PowerFlow.holds`` says whether they hold.
    copy : bool
        False: a float64 ``rack_it_w`` may become the flow's ``rack_w`` itself (the caller
        hands it over: no copy of a (T, R) window); True copies it.

    Equations: cord share ``w_rs = share_rs u_rs / sum_s share_rs u_rs`` (u = cord's RPP
    live); ``P_rpp = sum_r P_r w_rs``; RPP input ``P_rpp + f_r P_rpp^2 / P_rating``;
    feed share of RPP ``v_pf = share_pf up_f / sum_f share_pf up_f``; UPS output
    ``sum_p P_rpp,in v_pf``; UPS input = output + UPS loss; feed power = UPS input +
    transformer loss.
    """
    x = np.asarray(rack_it_w, dtype=float)
    n_f = tree.n_feeds
    if feed_up is not None and np.ndim(feed_up) == 2:
        return _evaluate_by_pattern(tree, rack_it_w, np.asarray(feed_up, dtype=bool), copy)
    key = (True,) * n_f if feed_up is None else tuple(
        bool(u) for u in np.asarray(feed_up, dtype=bool).reshape(n_f))
    route = tree._route(key)
    up, vshare, dropped = route.up, route.rpp_feed, route.dropped
    # a conversion made x ours: no second copy (a float64 caller's array is copied)
    rack_w = np.where(dropped, 0.0, x) if route.any_dropped else (x if not copy or (x is not rack_it_w
                                                                                  and x.base is None) else x.copy())
    if x.ndim == 1:
        rpp_w = np.bincount(tree.rack_rpp.ravel(), weights=(rack_w[:, None] * route.cord_w).ravel(),
                            minlength=tree.n_rpps)
    elif RPP_BLOCK_SUMS and route.rpp_block:
        rpp_w = _rpp_sum_blocks(rack_w, route.rpp_block)
    else:
        rpp_w = (route.rpp_from_rack @ rack_w.T).T
    rpp_loss = resistive_loss_w(rpp_w, tree.rpp_rating_w, tree.rpp_loss_fraction)
    ups_out = (rpp_w + rpp_loss) @ vshare
    ups = _ups_and_feed(tree, ups_out, up)
    ups_loss, feed_loss, feed_w = ups["ups_loss_w"], ups["feed_loss_w"], ups["feed_w"]
    feed_lf, ups_lf, feed_ok, ups_ok = (ups["feed_load_fraction"], ups["ups_load_fraction"], ups["feed_ok"],
                                        ups["ups_ok"])

    it_w = rack_w.sum(axis=-1)
    utility_w = ups["utility_w"]
    rpp_lf = rpp_w / tree.rpp_limit_w
    rpp_ok = np.all(rpp_lf <= 1.0, axis=-1)
    if route.any_dropped:
        load_lost = np.any((x != 0.0) & dropped, axis=-1)
    else:
        load_lost = np.zeros(np.shape(it_w), dtype=bool)
    holds = rpp_ok & feed_ok & ups_ok & ~load_lost
    return PowerFlow(
        rack_w=rack_w, rack_dropped=dropped, rpp_w=rpp_w, rpp_load_fraction=rpp_lf,
        rpp_rating_fraction=rpp_w / tree.rpp_rating_w, rpp_loss_w=rpp_loss,
        ups_output_w=ups_out, ups_load_fraction=ups_lf, ups_loss_w=ups_loss, feed_w=feed_w,
        feed_load_fraction=feed_lf, feed_loss_w=feed_loss, it_w=it_w, utility_w=utility_w,
        loss_w=utility_w - it_w, rpp_ok=rpp_ok, feed_ok=feed_ok, ups_ok=ups_ok, holds=holds,
    )


def _ups_and_feed(tree: PowerTree, ups_out, up) -> dict[str, np.ndarray]:
    """The UPS and feed stages of :func:`evaluate_power_tree` from the load on each UPS
    ``ups_out`` [W (..., F)] (or through its bypass) and the live feeds ``up`` (F,) or
    (..., F): UPS loss and input, transformer loss, feed power, their load fractions and
    checks, and the utility power [W]."""
    ups_loss = ups_loss_w(ups_out, tree.ups_capacity_w, tree.ups_mode,
                          loss_coeffs=tree._rpp_ups_loss_coeffs) * up
    ups_in = ups_out + ups_loss
    feed_loss = transformer_loss_w(
        ups_in, tree.feed_capacity_w, no_load_loss_fraction=tree.feed_no_load_loss_fraction,
        load_loss_fraction=tree.feed_load_loss_fraction) * up
    feed_w = ups_in + feed_loss
    feed_lf = feed_w / tree.feed_capacity_w
    ups_lf = ups_out / tree.ups_capacity_w
    feed_ok = np.all(feed_lf <= 1.0, axis=-1)
    ups_ok = np.all(ups_lf <= 1.0, axis=-1) if tree.ups_mode != "bypass" else np.ones_like(feed_ok)
    return {"ups_loss_w": ups_loss, "ups_load_fraction": ups_lf, "feed_loss_w": feed_loss, "feed_w": feed_w,
            "feed_load_fraction": feed_lf, "utility_w": feed_w.sum(axis=-1), "feed_ok": feed_ok, "ups_ok": ups_ok}


def evaluate_ups_stage(tree: PowerTree, flow: PowerFlow, feed_up=None, rows=None) -> PowerFlow:
    """``flow`` with its UPS and feed stages evaluated again through ``tree``'s UPS (its
    mode and curve), at the samples ``rows`` (a (T,) bool mask or indices; default all).

    The load on each UPS (``flow.ups_output_w``) is what the RPPs pass up whatever the UPS
    does, so a run whose UPS changes mode part-way (the chain's dated stages) routes its
    racks once and re-evaluates only what lies above the RPPs at the samples of each other
    mode: UPS loss and load fraction, transformer loss, feed power and load fraction,
    utility power, total loss and the checks (same equations as :func:`evaluate_power_tree`).
    ``feed_up`` (F,) or (T, F): the live feeds of the samples (default all). ``holds`` keeps
    the flow's lost load where its RPP, feed and UPS checks all passed (``~holds`` there is
    a dropped rack) and takes none elsewhere (the flow does not keep which racks dropped).
    """
    ups_out = np.asarray(flow.ups_output_w, float)
    up = np.ones(ups_out.shape[-1], bool) if feed_up is None else np.asarray(feed_up, bool)
    sel = np.ones(ups_out.shape[:-1], bool) if rows is None else np.zeros(ups_out.shape[:-1], bool)
    if rows is not None:
        sel[rows] = True
    if not sel.any():
        return flow
    new = _ups_and_feed(tree, ups_out[sel], up[sel] if up.ndim == 2 else up)
    out: dict[str, np.ndarray] = {}
    for name, part in new.items():
        a = np.array(getattr(flow, name), copy=True)
        a[sel] = part
        out[name] = a
    it_w = np.asarray(flow.it_w)
    out["loss_w"] = out["utility_w"] - it_w
    lost = ~np.asarray(flow.holds) & np.asarray(flow.rpp_ok) & np.asarray(flow.feed_ok) & np.asarray(flow.ups_ok)
    out["holds"] = np.where(sel, np.asarray(flow.rpp_ok) & out["feed_ok"] & out["ups_ok"] & ~lost,
                            np.asarray(flow.holds))
    return replace(flow, **out)


_FLOW_TIME_FIELDS = ("rack_w", "rpp_w", "rpp_load_fraction", "rpp_rating_fraction", "rpp_loss_w",
                     "ups_output_w", "ups_load_fraction", "ups_loss_w", "feed_w", "feed_load_fraction",
                     "feed_loss_w", "it_w", "utility_w", "loss_w", "rpp_ok", "feed_ok", "ups_ok", "holds")


def _evaluate_by_pattern(tree: PowerTree, rack_it_w, feed_up: np.ndarray, copy: bool) -> PowerFlow:
    """:func:`evaluate_power_tree` of a (T, R) series with the live feeds of each sample,
    ``feed_up`` (T, F): every sample evaluated with all feeds up, then the samples of each
    other pattern re-evaluated with it and written over theirs. ``rack_dropped`` is then the
    racks dropped at any sample."""
    x = np.asarray(rack_it_w, dtype=float)
    if x.ndim != 2 or feed_up.shape != (x.shape[0], tree.n_feeds):
        raise ValueError(f"feed_up must be (T, F) = ({x.shape[0]}, {tree.n_feeds}) with a (T, R) rack series")
    down = ~feed_up.all(axis=1)
    if not down.any():
        return evaluate_power_tree(tree, rack_it_w, copy=copy)
    # the rows of the other patterns, taken before the all-up flow may reuse x as its rack_w
    rows = np.flatnonzero(down)
    pats, which = np.unique(feed_up[rows], axis=0, return_inverse=True)
    parts = [(rows[which.ravel() == k], evaluate_power_tree(tree, x[rows[which.ravel() == k]], pat))
             for k, pat in enumerate(pats)]
    base = evaluate_power_tree(tree, rack_it_w, copy=copy)
    out = {}
    for name in _FLOW_TIME_FIELDS:
        a = np.array(getattr(base, name), copy=True) if name != "rack_w" else np.asarray(base.rack_w)
        for r, flow in parts:
            a[r] = getattr(flow, name)
        out[name] = a
    dropped = np.array(base.rack_dropped, copy=True)
    for _, flow in parts:
        dropped |= flow.rack_dropped
    return PowerFlow(rack_dropped=dropped, **out)


def chain_it_capacity_w(feed_capacity_w, ups_capacity_w, ups_mode: str, redundancy: str = "2N") -> float:
    """IT power the feed paths can carry under a redundancy policy [W] (losses ignored).

    Each feed path carries at most ``c_f = min(feed_f, UPS_f)`` (``feed_f`` alone in
    bypass: the UPS limit is lifted). ``"2N"``: every feed must carry the whole load
    alone, capacity ``min_f c_f``; ``"none"``: the paths add, ``sum_f c_f``. Bypassing the
    UPS and the 2N redundancy is how Blue Vela gained about 70 % (reference README,
    arXiv 2407.05467). feed_capacity_w (F,) [W]; ups_capacity_w scalar or (F,) per path [W].
    """
    path = np.asarray(feed_capacity_w, dtype=float).copy()
    if ups_mode != "bypass":
        path = np.minimum(path, np.broadcast_to(np.asarray(ups_capacity_w, dtype=float), path.shape))
    if redundancy == "2N":
        return float(path.min())
    if redundancy == "none":
        return float(path.sum())
    raise ValueError("redundancy must be '2N' or 'none'")


def facility_it_capacity_w(tree: PowerTree, redundancy: str = "2N") -> float:
    """IT power the chain can carry under a redundancy policy [W] (upper bound, losses ignored):
    :func:`chain_it_capacity_w` of the tree's feeds and UPSs, and no more than the RPPs'
    continuous limits in total."""
    cap = chain_it_capacity_w(tree.feed_capacity_w, tree.ups_capacity_w, tree.ups_mode, redundancy)
    return float(min(cap, tree.rpp_limit_w.sum()))


def racks_admitted(
    worst_case_rack_w,
    available_it_w: float,
    rack_rpp,
    rpp_limit_w,
    *,
    candidate=None,
    powered=None,
    rack_share=None,
    rpp_redundant: bool = False,
    policy: str = "stop",
) -> np.ndarray:
    """Which racks may be powered on so that no limit can be exceeded [bool (R,)].

    Racks are considered in index order (the ramp's order). A rack is admitted when the
    worst-case draws [W] of it and of every earlier candidate fit both the facility's
    ``available_it_w`` [W] and every RPP's continuous limit ``rpp_limit_w`` [W] (P,).
    With ``rpp_redundant`` (A/B cords, 2N), each cord's RPP must carry the whole rack
    (its partner may fail); otherwise a cord carries ``rack_share`` of it.

    ``policy="stop"``: the first rack that does not fit ends the admission (strict
    prefix; exact greedy). ``policy="skip"``: a rack that does not fit is skipped and later
    racks may still be admitted; the running sums still count skipped racks, which keeps
    the result feasible (conservative; exact when all racks draw the same).

    ``candidate`` (R,) bool: racks that may be powered on (delivered, not tripped);
    default all. ``powered`` (R,) bool: racks already on; their worst case is committed
    first (to the total and to their RPPs), they stay admitted, and the candidates fill
    what is left. A stage whose limit falls below the powered racks' commitment is the
    caller's to shed (nothing new is admitted then).

    Guarantee (tested): with the admitted racks all at their worst case, the facility sum
    is <= ``available_it_w`` and every RPP <= its limit, so a plan that admits racks with
    this function never overloads a breaker.
    """
    wc = np.broadcast_to(np.asarray(worst_case_rack_w, dtype=float), np.shape(rack_rpp)[:1])
    rr = _as_2d_int(rack_rpp, "rack_rpp")
    n_r, n_s = rr.shape
    lim = np.asarray(rpp_limit_w, dtype=float)
    on = np.zeros(n_r, dtype=bool) if powered is None else np.asarray(powered, dtype=bool)
    cand = np.ones(n_r, dtype=bool) if candidate is None else np.asarray(candidate, dtype=bool)
    cand = cand & ~on
    if rpp_redundant:
        sh = np.ones((n_r, n_s))
    else:
        sh = np.full((n_r, n_s), 1.0 / n_s) if rack_share is None else np.asarray(rack_share, float)
    base_cord = np.where(on, wc, 0.0)[:, None] * sh
    base_rpp = np.bincount(rr.ravel(), weights=base_cord.ravel(), minlength=lim.shape[0])
    base_total = float(np.where(on, wc, 0.0).sum())
    load = np.where(cand, wc, 0.0)
    cord = load[:, None] * sh
    # cumulative load of each RPP seen by each rack, in order: one-hot (R*S, P) cumsum is
    # O(R P); a sort by RPP keeps it O(R S log R)
    flat_p = rr.ravel()
    flat_w = cord.ravel()
    order = np.argsort(flat_p, kind="stable")  # stable: keeps rack order within an RPP
    w_sorted = flat_w[order]
    cs = np.cumsum(w_sorted)
    p_sorted = flat_p[order]
    start = np.searchsorted(p_sorted, p_sorted, side="left")
    before = np.concatenate(([0.0], cs))[start]
    cum_rpp = np.empty_like(cs)
    cum_rpp[order] = cs - before
    cum_rpp += base_rpp[flat_p]
    over = (cum_rpp > lim[flat_p] * (1 + 1e-12)).reshape(n_r, n_s).astype(float)
    fits_rpp = (over @ np.ones(n_s)) == 0.0
    fits_total = base_total + np.cumsum(load) <= available_it_w * (1 + 1e-12)
    ok = cand & fits_rpp & fits_total
    if policy == "stop":
        return on | (cand & np.logical_and.accumulate(ok | ~cand))
    if policy == "skip":
        return on | ok
    raise ValueError("policy must be 'stop' or 'skip'")


def staged_admission(
    stage_it_w,
    rack_available_stage,
    worst_case_rack_w,
    rack_rpp,
    rpp_limit_w,
    *,
    rpp_redundant: bool = False,
    rack_share=None,
    policy: str = "skip",
) -> np.ndarray:
    """Racks powered at each stage of a staged facility power plan [bool (S, R)].

    ``stage_it_w`` (S,) is the IT power available from each stage on [W];
    ``rack_available_stage`` (R,) int is the first stage at which a rack is delivered and
    burnt-in-ready to power (``S`` or more: never). At each stage the racks already on
    stay on while their worst-case commitment fits; if the stage's limit fell below it,
    racks are shed from the end of the index order; then new racks are admitted with
    :func:`racks_admitted`. Every stage's result obeys the facility and RPP limits at the
    racks' worst case.
    """
    lim_s = np.asarray(stage_it_w, dtype=float)
    avail = np.asarray(rack_available_stage)
    n_r = avail.shape[0]
    wc = np.broadcast_to(np.asarray(worst_case_rack_w, dtype=float), (n_r,))
    out = np.zeros((lim_s.shape[0], n_r), dtype=bool)
    on = np.zeros(n_r, dtype=bool)
    kw = dict(rack_share=rack_share, rpp_redundant=rpp_redundant)
    for k, limit in enumerate(lim_s):
        # keep the longest index-order prefix of the racks already on that still fits
        on = racks_admitted(wc, limit, rack_rpp, rpp_limit_w, candidate=on, policy="stop", **kw)
        on = racks_admitted(wc, limit, rack_rpp, rpp_limit_w, candidate=avail <= k,
                            powered=on, policy=policy, **kw)
        out[k] = on
    return out
