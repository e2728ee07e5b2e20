"""Recirculation matrices that follow the rack airflow of the servers' fans.

The recirculation matrix D of :func:`twin.thermal.inlet_model` holds for one set of rack
airflows. Server fans slow down at light load and speed up with hot inlets, so the
airflow of a hall moves by a factor of two or more over a day (0.30 of full speed idle,
0.62 training, for the XE9680 model of :mod:`twin.power.node`). Deriving D costs one
sparse factorisation and R solves; doing so at every sample is too slow for a long run.

:class:`RecirculationFamily` derives D at a few airflow scales s_k of a nominal airflow
V_0 (V = s V_0, all racks alike) once, and gives the model at any airflow by
interpolating between the two bracketing scales. The interpolated quantities are the
ones that vary smoothly with s: the supply mix S and the return mix R0 (dimensionless
fractions) and the heat maps scaled by the airflow, s D and s R_k (fractions of a rack's
exhaust rise, Q / (rho cp V), that reach an inlet or a return). For a well-mixed hall these
are exactly constant in s; in a real layout they change slowly. The model it returns
carries the airflow it was asked for (``rack_airflow_m3_s``), so the heat balance of each
rack (exhaust = inlet + Q / (rho cp V)) and the recirculation use the same airflow.
:func:`airflow_changed` says when the airflow has moved enough to ask again.

Limitation (measured, helper HBZ): the knots spread the airflow evenly over the racks, so a
hall whose busy racks draw more than their share of the supply while the others idle is
not seen starving. With supply to spare (the shipped halls) the interpolated model agrees
with the buoyant field at the racks' own airflows within 0.01 K; in Blue Vela's hall with
8 m3/s CRAHs during ramp-up (32 racks busy, 96 idle) it reads the busy racks' inlets 2.1 K
low with enclosures and 3.2 K low without (worst 2.2 / 3.4 K;
tests/sim/test_buoyant_heat_scaling.py). Deriving at every airflow state instead would
cost about 1,400 derivations in Blue Vela's nine months.

Racks that draw no air (their servers off: V = 0, :func:`twin.thermal.fans.
rack_airflow_from_fans_m3_s`, helper HOF) count 0 in the hall's scale s = sum V / sum V_0:
the supply the running racks do not take goes to the returns (more bypass, less
recirculation, as the knots at lower s hold). Below the lowest knot (0.30, the fans'
minimum speed, reached only with racks stopped) the lowest knot is used as it is: its
per-watt maps are those of every rack at 0.30, so a running rack's rise per watt is read
for 0.30 of its airflow (hotter than its own, on the safe side) and no map is divided by
the small or zero mean. A derivation at a hall's own airflows (a unit down,
:func:`flow_field_airflow_m3_s`) keeps air through every rack, as the field solver needs:
there a stopped rack passes the running racks' scale, its share of the supply going through
it rather than around it (it gives off no heat either way). The model carries V = 0 for a
stopped rack, and nothing divides by it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .geometry import HallGeometry
from .inlet import InletModel, inlet_model
from .properties import AIR_VOLUMETRIC_HEAT_J_M3_K

__all__ = ["RecirculationFamily", "airflow_change_threshold_m3_s", "airflow_changed", "drawing_scale",
           "flow_field_airflow_m3_s"]


def airflow_change_threshold_m3_s(old_m3_s, rel_tol: float = 0.05) -> np.ndarray:
    """The move of each rack's airflow beyond which it has changed [m3/s]:
    rel_tol x max(|V_old|, 1e-12)."""
    return rel_tol * np.maximum(np.abs(np.asarray(old_m3_s, float)), 1e-12)


def airflow_changed(old_m3_s, new_m3_s, rel_tol: float = 0.05, *, threshold_m3_s=None) -> bool:
    """True when any rack's airflow moved by more than ``rel_tol`` (relative) [-]:
    |V_new - V_old| > rel_tol max(|V_old|, 1e-12) for some rack. ``threshold_m3_s``: the
    right-hand side when the caller keeps it for ``old_m3_s``
    (:func:`airflow_change_threshold_m3_s` of the same airflow and tolerance)."""
    old = np.asarray(old_m3_s, float)
    thr = airflow_change_threshold_m3_s(old, rel_tol) if threshold_m3_s is None else threshold_m3_s
    return bool((np.abs(np.asarray(new_m3_s, float) - old) > thr).any())


def drawing_scale(rack_airflow_m3_s, nominal_m3_s, default: float) -> float:
    """Mean airflow scale of the racks that draw air [-]: sum_on V / sum_on V_0 over the
    racks with V > 0; ``default`` when none does (a hall with every rack off holds no heat)."""
    v = np.asarray(rack_airflow_m3_s, float)
    v0 = np.broadcast_to(np.asarray(nominal_m3_s, float), v.shape)
    on = v > 0.0
    if on.all():
        return float(v.sum() / v0.sum())
    return float(v[on].sum() / v0[on].sum()) if on.any() else float(default)


def flow_field_airflow_m3_s(rack_airflow_m3_s, nominal_m3_s, default_scale: float = 0.3) -> np.ndarray:
    """Rack airflows [m3/s (R,)] a flow-field derivation can take: a rack that draws no air
    (V = 0, its servers off) passes the others' mean scale of its nominal airflow V_0
    (:func:`drawing_scale`; ``default_scale`` when no rack draws), the others their own. The
    field solver needs air through every rack (:func:`twin.thermal.solver.build_problem`);
    a stopped rack gives off no heat, so only where its share of the supply goes changes
    (through it rather than around it). The same array when every rack draws."""
    v = np.asarray(rack_airflow_m3_s, float)
    off = v <= 0.0
    if not off.any():
        return v
    v0 = np.broadcast_to(np.asarray(nominal_m3_s, float), v.shape)
    return np.where(off, drawing_scale(v, v0, default_scale) * v0, v)


@dataclass(eq=False)
class RecirculationFamily:
    """Inlet models of one layout at several uniform scales of a nominal rack airflow.

    geometry, nominal_rack_airflow_m3_s (R,) [m3/s] (typically the full-speed airflow),
    scales: airflow scales at which D is derived exactly (default eight from 0.3 to 1.0,
    spanning minimum to full fan speed); cooling_active (C,) bool. ``model(V)`` returns the
    interpolated model for rack airflows V, at the mean scale of V over V_0 (clipped to the
    range of scales). ``derive(V)``: how a knot's exact model is derived (default
    :func:`inlet_model` of the geometry; :func:`twin.thermal.buoyancy.buoyant_inlet_model`
    on a layered grid gives the buoyant field's D at each knot).
    """

    geometry: HallGeometry
    nominal_rack_airflow_m3_s: np.ndarray
    scales: tuple = tuple(np.round(np.linspace(0.3, 1.0, 8), 3))
    cooling_active: np.ndarray | None = None
    derive: Callable[[np.ndarray], InletModel] | None = None
    _models: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        self.nominal_rack_airflow_m3_s = np.broadcast_to(
            np.asarray(self.nominal_rack_airflow_m3_s, float), (self.geometry.n_racks,)).copy()
        self.scales = tuple(sorted(float(s) for s in self.scales))
        if not self._models:
            self._models = [None] * len(self.scales)
        self._nominal_sum = self.nominal_rack_airflow_m3_s.sum()    # scale_of's denominator, once
        self._unit_vol: dict[int, np.ndarray] = {}    # per knot: rho cp V of its running units
        self._flat: dict[int, tuple] = {}             # per knot model: its maps flattened (_stacked)

    def _stacked(self, m: InletModel) -> tuple[np.ndarray, np.ndarray]:
        """A knot's (D then R_k, S then R0), each pair flattened into one array, so that
        :meth:`model` interpolates both maps of a pair in one pass of each operation (the
        same elementwise operations on the same numbers; the maps it returns are views of
        the result). Kept while the model holds the same map arrays (the knots' models are
        the family's own, never written)."""
        hit = self._flat.get(id(m))
        if hit is None or not (hit[0] is m.recirculation_k_per_w and hit[1] is m.return_k_per_w
                               and hit[2] is m.supply_mix and hit[3] is m.return_mix):
            hit = self._flat[id(m)] = (
                m.recirculation_k_per_w, m.return_k_per_w, m.supply_mix, m.return_mix,
                np.concatenate([np.ravel(m.recirculation_k_per_w), np.ravel(m.return_k_per_w)]).astype(float, copy=False),
                np.concatenate([np.ravel(m.supply_mix), np.ravel(m.return_mix)]).astype(float, copy=False))
        return hit[4], hit[5]

    def exact(self, k: int) -> InletModel:
        """The model derived exactly at scale ``scales[k]`` (derived on first use, then kept:
        a run visits only the few airflow states its loads produce)."""
        if self._models[k] is None:
            v = self.scales[k] * self.nominal_rack_airflow_m3_s
            self._models[k] = (self.derive(v) if self.derive is not None
                               else inlet_model(self.geometry, v, self.cooling_active))
        return self._models[k]

    @property
    def derived(self) -> int:
        """How many scales have been derived so far."""
        return sum(m is not None for m in self._models)

    def scale_of(self, rack_airflow_m3_s) -> float:
        """Mean airflow scale of V over the nominal airflow [-] (a stopped rack counts 0)."""
        return float(self._airflow(rack_airflow_m3_s).sum() / self._nominal_sum)

    def _airflow(self, rack_airflow_m3_s) -> np.ndarray:
        """V as a float array of the racks' shape, a copy (np.broadcast_to's dispatch only
        for a scalar or another shape: this runs at every airflow change of a run)."""
        v = np.array(rack_airflow_m3_s, float)
        if v.shape != self.nominal_rack_airflow_m3_s.shape:
            v = np.broadcast_to(v, self.nominal_rack_airflow_m3_s.shape).copy()
        return v

    def model(self, rack_airflow_m3_s) -> InletModel:
        """Inlet model at rack airflows V (R,) [m3/s], interpolated between precomputed scales.

        With scales s_a <= s <= s_b and w = (s - s_a) / (s_b - s_a):
        X(s) = (1 - w) X_a + w X_b for X in (S, R0, s D, s R_k), then divided by s.
        Exact at the precomputed scales; outside their range the nearest one is used as it
        is (s clipped to the range, so its maps are not divided by an s they were not
        derived at: below the lowest knot, which only racks that draw no air reach, dividing
        by s would inflate the rise per watt and break the heat balance, and s = 0 with every
        rack stopped). s is the hall's total draw, sum V / sum V_0, a stopped rack at 0; the
        model carries V itself.
        """
        v = self._airflow(rack_airflow_m3_s)
        s = float(v.sum() / self._nominal_sum)    # scale_of(v)
        sc = self.scales                 # sorted floats: clip and search without array round trips
        s_c = min(max(s, sc[0]), sc[-1])
        k = min(max(bisect.bisect_left(sc, s_c) - 1, 0), max(len(sc) - 2, 0))
        if len(sc) == 1:
            a = b = self.exact(0)
            ka, w, sa, sb = 0, 0.0, sc[0], sc[0]
        else:
            sa, sb = sc[k], sc[k + 1]
            w = (s_c - sa) / (sb - sa)
            # at a derived scale the other end is not needed (its weight is zero)
            ka = k + 1 if w >= 1.0 else k
            if w <= 0.0 or w >= 1.0:
                a = b = self.exact(ka)
            else:
                a, b = self.exact(k), self.exact(k + 1)

        (scaled_a, mixed_a), (scaled_b, mixed_b) = self._stacked(a), self._stacked(b)
        # s D and s R_k: ((1 - w) sa xa + w sb xb) / s_c, in place (the same operations, no
        # temporaries). s_c = (1 - w) sa + w sb, so the unit heat shares vol R_k still sum to
        # 1 over the units (every watt ends in a coil); within the knots s_c is s itself
        scaled = np.multiply(scaled_a, (1 - w) * sa)
        scaled += np.multiply(scaled_b, w * sb)
        scaled /= s_c
        # S and R0: (1 - w) xa + w xb
        mixed = np.multiply(mixed_a, 1 - w)
        mixed += np.multiply(mixed_b, w)
        n_d, n_s = a.recirculation_k_per_w.size, a.supply_mix.size
        d = scaled[:n_d].reshape(a.recirculation_k_per_w.shape)
        rk = scaled[n_d:].reshape(a.return_k_per_w.shape)
        s_mix = mixed[:n_s].reshape(a.supply_mix.shape)
        r0 = mixed[n_s:].reshape(a.return_mix.shape)
        vol = self._unit_vol.get(ka)
        if vol is None:
            vol = self._unit_vol[ka] = AIR_VOLUMETRIC_HEAT_J_M3_K * np.where(a.cooling_active, a.cooling_airflow_m3_s,
                                                                             0.0)
        t_sup = a.cooling_supply_temp_c
        return _replaced(
            a,
            base_inlet_c=s_mix @ t_sup,
            recirculation_k_per_w=d,
            supply_mix=s_mix,
            return_mix=r0,
            return_k_per_w=rk,
            cooling_base_w=np.where(a.cooling_active, vol * (r0 @ t_sup - t_sup), 0.0),
            cooling_heat_share=vol[:, None] * rk,
            rack_airflow_m3_s=v,
            recirculation_csr=None,
            truncation_k_per_w=0.0,
        )


def _replaced(model: InletModel, **changes) -> InletModel:
    """``dataclasses.replace(model, **changes)`` without re-running the frozen dataclass's
    ``__init__`` field by field (InletModel has no ``__post_init__``; the same attributes,
    the same objects): one interpolated model per airflow change of a run."""
    out = object.__new__(type(model))
    out.__dict__.update(model.__dict__)
    out.__dict__.update(changes)
    return out
