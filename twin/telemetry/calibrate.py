"""Fit the parameters that measurements pin down, each with its uncertainty.

Every fit is a least-squares (or Poisson) estimate against the run of the original scenario
over the measured window; the covariance is ``s^2 (J^T J)^-1`` with ``s^2`` the residual
variance (samples are treated as independent, so with autocorrelated residuals the stated
1-sigma is a lower bound).

* **Node power per state** (``fit_node_state_power_w``): facility IT power
  ``P_IT(t) = P_busy N_busy(t) + P_idle N_idle(t) + P_other N_other(t) + P_net R_on(t)``
  with node counts from the measured ``gpus_busy``/``gpus_healthy``/``gpus_powered`` (the
  run's when not measured) and the scenario's ``network_power_per_rack_w`` as ``P_net``.
  A state whose count never varies independently, or only together with another's (a
  condition index of the column-scaled design above 30), or whose fitted power is not
  positive, is reported as not identified; the prior printed is the node model's own power in
  the TRAINING, IDLE and BURN_IN phases.
  The scenario has no node-power field yet, so the scenario written carries the per-rack
  residual ``mean((P_meas - P_sim) / R_on)`` in ``hardware.network_power_per_rack_w`` (the
  one per-rack power term it has) and the node powers as comments.
* **Cooling plant** (``fit_cooling``): ``chiller_cop_at_25c`` and ``fan_pump_fraction`` of
  ``twin.power.cooling_power_w`` from measured cooling power, the heat (measured IT power +
  the run's UPS and RPP losses) and the outdoor temperature (measured, else the run's).
* **UPS loss scale**: measured UPS loss / the twin's UPS loss law at the measured output.
* **Fan law** (``fit_fan_law``): node DC power against fan speed per node,
  ``P = c_node + P_fan,max s^n``; and the **PSU loss scale** (``fit_psu_loss_scale``) from
  PSU input and output power (Redfish ``PowerSupplies``), from measured-only node series.
* **Per-rack recirculation correction** (``fit_recirculation``): the measured minus
  simulated inlet of rack ``i`` as ``a_i + c_i Q(t)`` with ``Q`` the IT heat of the hall;
  ``c_i`` [K/W] is the row sum of the correction to ``D`` (``inlet = supply + D @ heat``),
  ``a_i`` a sensor or supply offset.
* **Failure-rate scale** (``fit_failure_scale``): measured failures / the mean of runs of
  the original scenario over the same window (Poisson; 1-sigma from both counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.telemetry.series import TelemetryError


@dataclass
class Fit:
    """One fitted parameter. ``path``: its scenario field (None: not expressible yet)."""

    name: str
    value: float
    sigma: float
    unit: str
    prior: float | None = None
    path: str | None = None
    n: int = 0
    rmse_before: float | None = None
    rmse_after: float | None = None
    note: str = ""
    identified: bool = True


@dataclass
class Calibration:
    fits: list[Fit] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    recirculation_k_at_peak: dict[str, float] = field(default_factory=dict)   # c_i x peak hall heat [K]

    def overrides(self) -> dict[str, float]:
        return {f.path: f.value for f in self.fits if f.path and f.identified}

    def fitted_anything(self) -> bool:
        """True when at least one parameter was identified (written to the scenario or as a
        comment); False when the measurements let nothing be fitted."""
        return any(f.identified for f in self.fits)

    def as_dict(self) -> dict:
        return {"fits": [f.__dict__ for f in self.fits], "skipped": list(self.skipped)}


# --------------------------------------------------------------------------- generic fits
#: Largest condition index of the column-scaled design matrix at which a column still counts as
#: identified. Belsley, Kuh & Welsch, "Regression Diagnostics" (Wiley, 1980), ch. 3: condition
#: indices of 30 and more mark near-dependencies strong enough to degrade the estimates; the
#: columns a dependency involves are those with more than half of their variance on it.
MAX_CONDITION_INDEX = 30.0


def collinear_columns(x: np.ndarray, max_condition_index: float = MAX_CONDITION_INDEX) -> tuple[np.ndarray, float]:
    """Columns of ``x`` caught in a near-linear dependency: ``(mask, condition number)``.

    Each column is scaled to unit length (not centred: the dependency on a constant counts);
    for each singular value ``s_k`` with condition index ``s_max / s_k`` above
    ``max_condition_index``, column ``j`` is collinear when its variance-decomposition
    proportion ``(v_jk / s_k)^2 / sum_l (v_jl / s_l)^2`` exceeds 0.5 (Belsley et al. 1980).
    Zero columns are left to the rank test of :func:`linear_fit`.
    """
    x = np.asarray(x, float)
    k = x.shape[1]
    mask = np.zeros(k, bool)
    norms = np.linalg.norm(x, axis=0)
    live = np.flatnonzero(norms > 0)
    if live.size < 2:
        return mask, 1.0
    _, s, vt = np.linalg.svd(x[:, live] / norms[live], full_matrices=False)
    if s[-1] <= 0:
        return mask, float("inf")
    index = s[0] / s
    phi = (vt.T / s) ** 2                      # (columns, singular values)
    prop = phi / phi.sum(axis=1, keepdims=True)
    for m in np.flatnonzero(index > max_condition_index):
        mask[live[prop[:, m] > 0.5]] = True
    return mask, float(index[-1])


def linear_fit(x: np.ndarray, y: np.ndarray, *, max_condition_index: float | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Least squares ``y = x @ b``: ``(b, sigma_b, identified, rmse)``.

    Columns that are zero, or linearly dependent on earlier columns, are not identified
    (their ``b`` is NaN); the rest are fitted with the covariance ``s^2 (X^T X)^-1``.
    With ``max_condition_index``, columns that are independent but caught in a near-dependency
    (:func:`collinear_columns`) are fitted and returned with ``identified`` False: the data fix
    only a combination of them.
    """
    n, k = x.shape
    keep: list[int] = []
    for j in range(k):
        cand = keep + [j]
        if np.linalg.matrix_rank(x[:, cand], tol=1e-9 * max(1.0, float(np.abs(x).max()))) == len(cand):
            keep = cand
    b = np.full(k, np.nan)
    sig = np.full(k, np.nan)
    ident = np.zeros(k, bool)
    if not keep:
        return b, sig, ident, float(np.sqrt(np.mean(y * y)))
    xs = x[:, keep]
    coef, *_ = np.linalg.lstsq(xs, y, rcond=None)
    resid = y - xs @ coef
    dof = max(n - len(keep), 1)
    s2 = float(resid @ resid) / dof
    cov = s2 * np.linalg.inv(xs.T @ xs)
    b[keep] = coef
    sig[keep] = np.sqrt(np.diag(cov))
    ident[keep] = True
    if max_condition_index is not None:
        ident[np.asarray(keep)[collinear_columns(xs, max_condition_index)[0]]] = False
    return b, sig, ident, float(np.sqrt(np.mean(resid * resid)))


def fit_node_state_power_w(it_w, n_busy, n_idle, n_other, racks_on, network_w_per_rack):
    """Node wall power per state [W] from facility IT power [W] and node counts.

    Model (module docstring): ``P_IT - P_net R_on = P_busy N_busy + P_idle N_idle +
    P_other N_other``. Returns ``(values, sigmas, identified, rmse)`` for
    ``(busy, idle, other)``.
    A state whose count moves only together with another's (:func:`collinear_columns`,
    condition index above :data:`MAX_CONDITION_INDEX`), or whose fitted power is not positive,
    is fitted but not identified.
    """
    y = np.asarray(it_w, float) - network_w_per_rack * np.asarray(racks_on, float)
    x = np.column_stack([n_busy, n_idle, n_other]).astype(float)
    b, sig, ident, rmse = linear_fit(x, y, max_condition_index=MAX_CONDITION_INDEX)
    ident &= ~(b <= 0)   # a node draws power in every powered state: <= 0 is no fit of one
    return b, sig, ident, rmse


def fit_cooling(cooling_w, heat_w, outdoor_c, prior_cop: float, prior_fan_pump: float):
    """``(cop25, fan_pump, sigmas, rmse_before, rmse_after, why)`` for ``twin.power.cooling_power_w``.

    Nonlinear least squares (scipy ``least_squares``) of the twin's own law, started at the
    scenario's values; the economiser and COP ceiling stay as the twin models them. The
    covariance ``s^2 (J^T J)^-1`` is taken over the parameters the data move: ``why[i]`` is
    "" for a parameter with a 1-sigma, else why it has none (NaN sigma) and is not
    identified: it has no effect on the modelled cooling power on any sample (its Jacobian
    column is zero, e.g. the chiller COP when the economiser carries all the heat), or it
    ends at a bound of the search range (the curvature there is not a symmetric interval).
    """
    from scipy.optimize import least_squares

    from twin import power
    from twin.power.facility import economizer_fraction
    y = np.asarray(cooling_w, float)

    def model(p):
        return np.asarray(power.cooling_power_w(heat_w, outdoor_c, chiller_cop_at_25c=p[0],
                                                fan_pump_fraction=p[1]), float)

    lo, hi = [0.5, 0.0], [20.0, 1.0]
    scale = max(float(np.abs(y).mean()), 1.0)
    res = least_squares(lambda p: (model(p) - y) / scale, x0=[prior_cop, prior_fan_pump],
                        bounds=(lo, hi), x_scale=[1.0, 0.01])
    before = float(np.sqrt(np.mean((model([prior_cop, prior_fan_pump]) - y) ** 2)))
    after = float(np.sqrt(np.mean((model(res.x) - y) ** 2)))
    j = res.jac * scale
    why = ["", ""]
    norms = np.linalg.norm(j, axis=0)
    for i in np.flatnonzero(norms <= 1e-12 * max(float(norms.max()), 1e-300)):
        why[i] = "it has no effect on the modelled cooling power on any sample"
        if i == 0 and bool(np.all(economizer_fraction(outdoor_c) >= 1.0)):
            why[i] = (f"the economiser carried all the heat on every sample (outdoor {np.min(outdoor_c):.1f} "
                      f"to {np.max(outdoor_c):.1f} C), so the chiller never ran and its COP has no effect "
                      "on the cooling power; measure a window with warmer weather")
    for i in np.flatnonzero(res.active_mask != 0):
        if not why[i]:
            bound = lo[i] if res.active_mask[i] < 0 else hi[i]
            why[i] = (f"the fit ends at the bound {bound:g} of its search range [{lo[i]:g}, {hi[i]:g}], "
                      "where a 1-sigma is not a symmetric interval")
    live = [i for i in range(2) if not why[i]]
    sig = np.full(2, np.nan)
    if live:
        dof = max(y.size - len(live), 1)
        s2 = float(np.sum((model(res.x) - y) ** 2)) / dof
        jl = j[:, live]
        try:
            cov = s2 * np.linalg.inv(jl.T @ jl)
            sig[live] = np.sqrt(np.clip(np.diag(cov), 0, None))
        except np.linalg.LinAlgError:
            for p in live:
                why[p] = "the two parameters move the cooling power the same way (singular Jacobian)"
    return float(res.x[0]), float(res.x[1]), sig, before, after, why


def fit_recirculation(delta_inlet_c: np.ndarray, hall_heat_w: np.ndarray):
    """Per rack ``delta_i(t) = a_i + c_i Q(t)``: ``(a, c, sigma_a, sigma_c, n)`` arrays.

    ``delta_inlet_c``: (T, R) measured minus simulated inlet [K]; ``hall_heat_w``: (T,) [W].
    NaN entries (rack off or unmeasured) are left out rack by rack.
    """
    t_n, r_n = delta_inlet_c.shape
    a, c, sa, sc, n = (np.full(r_n, np.nan) for _ in range(5))
    for i in range(r_n):
        ok = np.isfinite(delta_inlet_c[:, i]) & np.isfinite(hall_heat_w)
        if ok.sum() < 3:
            continue
        x = np.column_stack([np.ones(ok.sum()), hall_heat_w[ok]])
        b, s, ident, _ = linear_fit(x, delta_inlet_c[ok, i])
        a[i], c[i], sa[i], sc[i], n[i] = b[0], b[1], s[0], s[1], ok.sum()
    return a, c, sa, sc, n


def fit_failure_scale(n_measured: int, n_simulated: np.ndarray, prior_scale: float):
    """Failure-rate scale ``prior * n_meas / mean(n_sim)`` and its 1-sigma.

    Both counts are Poisson: ``sigma/scale = sqrt(1/n_meas + 1/sum(n_sim))``.
    """
    n_sim = np.asarray(n_simulated, float)
    mean_sim = float(n_sim.mean())
    if mean_sim <= 0:
        raise ValueError("the original scenario produces no failures in the measured window")
    scale = prior_scale * n_measured / mean_sim
    rel = np.sqrt(1.0 / max(n_measured, 1) + 1.0 / max(n_sim.sum(), 1.0))
    return scale, scale * rel


#: Measured-only variables (per node) the node-level fits read: name -> unit.
NODE_VARIABLES = {"node_dc_power_w": "W", "node_fan_speed_fraction": "1",
                  "psu_input_w": "W", "psu_output_w": "W"}


def fit_fan_law(speed: np.ndarray, dc_w: np.ndarray, node: np.ndarray, prior_max_w: float):
    """Fan law ``P_dc = c_node + P_fan,max s^n`` from node DC power [W] and fan speed [fraction].

    Each node keeps its own non-fan load ``c_node`` (held constant: fit over a window of
    steady load); ``P_fan,max`` [W] and ``n`` are shared. Returns ``(p_max, n, sigma_p,
    sigma_n, rmse_prior, rmse_fit)``; ``rmse_prior`` is the fit with ``(prior_max_w, 3)``
    and the node offsets free. References: the fan affinity laws (power ~ speed^3), e.g.
    ASHRAE Handbook - HVAC Systems and Equipment, ch. 21 (2020).
    """
    from scipy.optimize import least_squares
    nodes, idx = np.unique(node, return_inverse=True)
    k = len(nodes)

    def offsets(p_max, n):
        r = dc_w - p_max * speed ** n
        return np.bincount(idx, weights=r, minlength=k) / np.bincount(idx, minlength=k)

    def resid(x):
        return dc_w - offsets(x[0], x[1])[idx] - x[0] * speed ** x[1]

    res = least_squares(resid, x0=[prior_max_w, 3.0], bounds=([0.0, 0.5], [20 * prior_max_w, 6.0]),
                        x_scale=[prior_max_w, 1.0])
    dof = max(dc_w.size - 2 - k, 1)
    s2 = float(res.fun @ res.fun) / dof
    try:
        cov = s2 * np.linalg.inv(res.jac.T @ res.jac)
        sig = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    except np.linalg.LinAlgError:
        sig = np.full(2, np.nan)
    prior = resid([prior_max_w, 3.0])
    return (float(res.x[0]), float(res.x[1]), float(sig[0]), float(sig[1]),
            float(np.sqrt(np.mean(prior ** 2))), float(np.sqrt(np.mean(res.fun ** 2))))


def fit_psu_loss_scale(input_w: np.ndarray, output_w: np.ndarray, capacity_w: float):
    """Measured PSU loss over the twin's PSU law: ``in - out = k out (1/eta(out/C) - 1)``.

    ``twin.power.node.psu_efficiency`` (80 PLUS Titanium points) at the load fraction of the
    node's PSU capacity ``C`` [W]. Returns ``(k, sigma_k, rmse_prior, rmse_fit)`` [W].
    """
    from twin.power.node import psu_efficiency
    out = np.asarray(output_w, float)
    eta = psu_efficiency(out / capacity_w)
    model = np.where(eta > 0, out * (1.0 / np.where(eta > 0, eta, 1.0) - 1.0), 0.0)
    loss = np.asarray(input_w, float) - out
    b, sig, ident, rmse = linear_fit(model[:, None], loss)
    return float(b[0]), float(sig[0]), float(np.sqrt(np.mean((loss - model) ** 2))), rmse


def _node_matrix(groups, var: str, grid_ns: np.ndarray, dt_s: float):
    """Per node, a measured-only variable on a common fine grid: ``{node: (T,)}``."""
    from twin.telemetry.compare import Binning, aggregate
    out = {}
    for g in groups:
        if g.variable != var:
            continue
        rows = [Binning(s.t_ns, grid_ns, dt_s).values(s.values, s.gaps) for s in g.members]
        out[g.coord] = aggregate(np.vstack(rows), g.aggregate)
    return out


def node_level_fits(groups, node) -> tuple[list[Fit], list[str]]:
    """Fan law and PSU loss scale from measured node-level series (``NODE_VARIABLES``)."""
    from twin.telemetry.series import typical_step_ns
    fits: list[Fit] = []
    skipped: list[str] = []
    mine = [g for g in groups if g.variable in NODE_VARIABLES]
    if not mine:
        return fits, ["fan law and PSU efficiency: no node-level series (map node_dc_power_w, "
                      "node_fan_speed_fraction, psu_input_w, psu_output_w per node)"]
    t0 = min(int(s.t_ns[0]) for g in mine for s in g.members)
    t1 = max(int(s.t_ns[-1]) for g in mine for s in g.members)
    step_ns = max(typical_step_ns(s.t_ns) for g in mine for s in g.members)
    grid = np.arange(t0, t1 + 1, int(step_ns), dtype=np.int64)
    dt_s = step_ns / 1e9
    speed = _node_matrix(mine, "node_fan_speed_fraction", grid, dt_s)
    dc = _node_matrix(mine, "node_dc_power_w", grid, dt_s) or _node_matrix(mine, "psu_output_w", grid, dt_s)
    both = sorted(set(speed) & set(dc))
    if both:
        sp = np.concatenate([speed[n] for n in both])
        pw = np.concatenate([dc[n] for n in both])
        nd = np.repeat(np.arange(len(both)), grid.size)
        ok = np.isfinite(sp) & np.isfinite(pw)
        p_max, n, sp_, sn, before, after = fit_fan_law(sp[ok], pw[ok], nd[ok], node.fan_max_w)
        fits.append(Fit("fan power at full speed", p_max, sp_, "W", node.fan_max_w, None, int(ok.sum()),
                        before, after, note="catalog fan_max_w; no scenario field"))
        fits.append(Fit("fan law exponent", n, sn, "1", 3.0, None, int(ok.sum()), before, after,
                        note="affinity law: 3"))
    else:
        skipped.append("fan law: needs node_fan_speed_fraction and node DC power of the same nodes")
    p_in = _node_matrix(mine, "psu_input_w", grid, dt_s)
    p_out = _node_matrix(mine, "psu_output_w", grid, dt_s)
    both = sorted(set(p_in) & set(p_out))
    if both:
        a = np.concatenate([p_in[n] for n in both])
        b = np.concatenate([p_out[n] for n in both])
        ok = np.isfinite(a) & np.isfinite(b) & (b > 0)
        k, sk, before, after = fit_psu_loss_scale(a[ok], b[ok], node.psu_count * node.psu_rating_w)
        fits.append(Fit("PSU loss / the twin's PSU law", k, sk, "1", 1.0, None, int(ok.sum()), before, after,
                        note="80 PLUS Titanium curve in twin.power.node.psu_efficiency; no scenario field"))
    else:
        skipped.append("PSU efficiency: needs psu_input_w and psu_output_w of the same nodes")
    return fits, skipped


# --------------------------------------------------------------------------- orchestration
def node_state_prior_w(scenario, inlet_c: float) -> tuple[np.ndarray, str]:
    """The node model's own wall power [W] for ``(busy, idle, burn-in or failed)``: the
    ``hardware.node_model`` in the TRAINING, IDLE and BURN_IN phases at the GPU power cap and
    ``inlet_c`` [degC] (``twin.power.chain.phase_node_power_w``), and a note saying so."""
    from twin.phases import Phase
    from twin.power.chain import phase_node_power_w
    w = phase_node_power_w(scenario, inlet_c=inlet_c)["node_w"]
    vals = np.array([w[int(Phase.TRAINING)], w[int(Phase.IDLE)], w[int(Phase.BURN_IN)]], float)
    return vals, (f"the node model {scenario.hardware.node_model} (TRAINING, IDLE, BURN_IN phases at "
                  f"{inlet_c:.1f} C inlet)")


def _series(cmp, var: str, ds):
    """Measured (T,) of a facility-level variable on the grid, or None."""
    ps = [p for p in cmp.pairs if p.mapped.variable == var and p.mapped.dim is None]
    return ps[0].meas if ps else None


def _per_rack(cmp, var: str, ds) -> np.ndarray | None:
    ps = {p.mapped.coord: p.meas for p in cmp.pairs if p.mapped.variable == var and p.mapped.dim == "rack"}
    if not ps:
        return None
    racks = [str(r) for r in ds["rack"].values]
    out = np.full((ds.sizes["time"], len(racks)), np.nan)
    for j, r in enumerate(racks):
        if r in ps:
            out[:, j] = ps[r]
    return out


def calibrate(scenario, ds, cmp, *, events_measured=None, events_simulated=None,
              node_groups=None) -> Calibration:
    """Fit what the measurements allow. ``ds``: the run of ``scenario`` over the measured
    window; ``cmp``: its :class:`~twin.telemetry.compare.Comparison` with the measurements;
    ``events_measured``: the measured event table (``kind``, ``time``) or None;
    ``events_simulated``: event tables of runs of the scenario (several seeds);
    ``node_groups``: mapped measured-only node series (``NODE_VARIABLES``) for the fan law
    and the PSU loss."""
    from twin.catalog import node_model
    out = Calibration()
    gpn = node_model(scenario.hardware.node_model).gpu_count
    net = scenario.hardware.network_power_per_rack_w

    def pick(var):
        m = _series(cmp, var, ds)
        return m if m is not None else np.asarray(ds[var].values, float)

    # ---- node power per state -> network_power_per_rack_w residual
    it_meas = _series(cmp, "facility_it_power_w", ds)
    rp_all = _per_rack(cmp, "rack_power_w", ds)
    if it_meas is None and rp_all is not None and not np.isnan(rp_all).all(axis=0).any():
        it_meas = rp_all.sum(axis=1)   # every rack measured; a window any rack lacks stays NaN
    if it_meas is not None:
        busy, healthy, powered = (pick(v) / gpn for v in ("gpus_busy", "gpus_healthy", "gpus_powered"))
        state = _per_rack(cmp, "rack_state", ds)
        state = state if state is not None else np.asarray(ds["rack_state"].values, float)
        r_on = np.sum((state == 1) | (state == 2), axis=1).astype(float)
        ok = np.isfinite(it_meas) & np.isfinite(busy) & np.isfinite(healthy) & np.isfinite(powered)
        b, s, ident, rmse = fit_node_state_power_w(it_meas[ok], busy[ok], (healthy - busy)[ok],
                                                   (powered - healthy)[ok], r_on[ok], net)
        sim_it = np.asarray(ds["facility_it_power_w"].values, float)
        x = np.column_stack([busy, healthy - busy, powered - healthy])[ok]
        y = it_meas[ok] - net * r_on[ok]
        inlets = np.asarray(ds["rack_inlet_c"].values, float) if "rack_inlet_c" in ds else np.zeros(0)
        mean_inlet_c = float(np.nanmean(inlets)) if np.isfinite(inlets).any() else 25.0
        prior, prior_note = node_state_prior_w(scenario, mean_inlet_c)
        rms_prior = float(np.sqrt(np.mean((y - x @ prior) ** 2)))
        kept = np.flatnonzero(np.isfinite(b))   # the columns linear_fit fitted (rank test passed)
        collinear = np.zeros(3, bool)
        sub, cond = collinear_columns(x[:, kept]) if kept.size else (np.zeros(0, bool), 1.0)
        collinear[kept[sub]] = True
        labels = ("busy (training)", "idle", "burn-in or failed, powered")
        short = ("busy", "idle", "burn-in/failed")
        for j, lab in enumerate(labels):
            if not ident[j] and np.isfinite(b[j]) and collinear[j]:
                grp = np.flatnonzero(collinear)
                on = (x[:, grp] > 0).any(axis=1)     # the samples where the dependency acts
                counts = x[on][:, grp].mean(axis=0)
                combo = " + ".join(f"{c:.4g} x P_{short[g]}" for c, g in zip(counts, grp, strict=True))
                note = (f"not identified: the {' and '.join(short[g] for g in grp)} node counts move together "
                        f"(condition index {cond:.3g} > {MAX_CONDITION_INDEX:g} of the column-scaled design, "
                        f"Belsley et al. 1980): only {combo} = {float(counts @ b[grp]) / 1e3:.4g} kW is "
                        f"determined (this state's own fit {b[j]:.4g} +/- {s[j]:.2g} W means nothing)")
            elif not np.isfinite(b[j]):
                note = "not identified: this count never varies on its own"
            elif b[j] <= 0:
                note = (f"not identified: fitted {b[j]:.4g} +/- {s[j]:.2g} W, not a physical node power "
                        "(the counts or the IT power series do not fit a node-power-per-state model)")
            else:
                note = f"no scenario field yet; prior = {prior_note}"
            out.fits.append(Fit(f"node power, {lab}", float(b[j]), float(s[j]), "W",
                                prior=float(prior[j]), n=int(ok.sum()),
                                rmse_before=rms_prior, rmse_after=rmse,
                                identified=bool(ident[j]), note=note))
        use = ok & (r_on > 0)
        if use.sum() >= 2:
            per_rack = (it_meas[use] - sim_it[use]) / r_on[use]
            d = float(per_rack.mean())
            resid_before = it_meas[use] - sim_it[use]
            resid_after = resid_before - d * r_on[use]
            out.fits.append(Fit(
                "per-rack power not in the node model", net + d,
                float(per_rack.std(ddof=1) / np.sqrt(use.sum())), "W", prior=net,
                path="hardware.network_power_per_rack_w", n=int(use.sum()),
                rmse_before=float(np.sqrt(np.mean(resid_before ** 2))),
                rmse_after=float(np.sqrt(np.mean(resid_after ** 2))),
                note="mean (measured - simulated IT power) per powered rack, added to the network "
                     "share until the scenario has node-power fields"))
    else:
        out.skipped.append("node power: no measured facility_it_power_w or complete rack_power_w")

    # ---- cooling plant
    cool = _series(cmp, "cooling_power_w", ds)
    if cool is not None and scenario.site.cooling_system.model == "physical":
        # chiller_cop_at_25c and fan_pump_fraction are the legacy model's plant; the physical
        # model derives its COP from set points and its fan power from the affinity laws
        out.skipped.append("cooling: the plant fit (chiller COP at 25 C, fan + pump fraction) is the "
                           "legacy cooling model's; calibrate with --set site.cooling_system.model=legacy")
    elif cool is not None:
        it = it_meas if it_meas is not None else np.asarray(ds["facility_it_power_w"].values, float)
        heat = it + np.asarray(ds["ups_loss_w"].values, float) + np.asarray(ds["rpp_loss_w"].values, float)
        out_c = pick("outdoor_temp_c")
        ok = np.isfinite(cool) & np.isfinite(heat) & np.isfinite(out_c) & (heat > 0)
        c = scenario.site.power.cooling
        cop, fp, sig, before, after, why = fit_cooling(cool[ok], heat[ok], out_c[ok],
                                                       c.chiller_cop_at_25c, c.fan_pump_fraction)
        for name, val, k, unit, prior, path in (
                ("chiller COP at 25 C", cop, 0, "1", c.chiller_cop_at_25c, "site.power.cooling.chiller_cop_at_25c"),
                ("CRAH fan + pump power per heat", fp, 1, "W/W", c.fan_pump_fraction,
                 "site.power.cooling.fan_pump_fraction")):
            out.fits.append(Fit(name, val, float(sig[k]), unit, prior, path, int(ok.sum()), before, after,
                                note=f"not identified: {why[k]} (the scenario keeps {prior:g})" if why[k] else "",
                                identified=not why[k]))
    else:
        out.skipped.append("cooling: no measured cooling_power_w")

    # ---- UPS loss scale
    loss = _series(cmp, "ups_loss_w", ds)
    if loss is not None:
        sim_loss = np.asarray(ds["ups_loss_w"].values, float)
        ok = np.isfinite(loss) & (sim_loss > 0)
        if ok.sum() >= 2:
            b, s, ident, rmse = linear_fit(sim_loss[ok, None], loss[ok])
            out.fits.append(Fit("UPS loss / the twin's loss law", float(b[0]), float(s[0]), "1", 1.0, None,
                                int(ok.sum()), float(np.sqrt(np.mean((loss[ok] - sim_loss[ok]) ** 2))), rmse,
                                note=f"no scenario field yet (mode {scenario.site.power.ups.mode})"))
        else:
            out.skipped.append("UPS efficiency: fewer than 2 samples with a measured ups_loss_w and a simulated "
                               "UPS loss above zero (a UPS in bypass over the window has no loss to scale)")
    else:
        out.skipped.append("UPS efficiency: no measured ups_loss_w")

    # ---- recirculation per rack
    inlet = _per_rack(cmp, "rack_inlet_c", ds)
    if inlet is not None:
        sim_in = np.asarray(ds["rack_inlet_c"].values, float)
        rp = _per_rack(cmp, "rack_power_w", ds)
        heat_r = np.where(np.isfinite(rp), rp, np.asarray(ds["rack_power_w"].values, float)) if rp is not None \
            else np.asarray(ds["rack_power_w"].values, float)
        halls = np.asarray(ds["rack_hall"].values) if "rack_hall" in ds.coords else np.zeros(ds.sizes["rack"], int)
        racks = [str(r) for r in ds["rack"].values]
        for h in np.unique(halls):
            idx = np.flatnonzero(halls == h)
            q = np.nansum(heat_r[:, idx], axis=1)
            a, cc, sa, sc, n = fit_recirculation(inlet[:, idx] - sim_in[:, idx], q)
            for k, i in enumerate(idx):
                if not np.isfinite(cc[k]):
                    continue
                out.fits.append(Fit(f"recirculation correction {racks[i]}", float(cc[k] * 1e6), float(sc[k] * 1e6),
                                    "K/MW", 0.0, None, int(n[k]),
                                    note=f"offset {a[k]:+.2f} +/- {sa[k]:.2f} K; {cc[k] * np.nanmax(q):+.2f} K "
                                         "at the hall's peak heat; row sum of the correction to D; "
                                         "no scenario field yet"))
                out.recirculation_k_at_peak[racks[i]] = float(cc[k] * np.nanmax(q))
    else:
        out.skipped.append("recirculation: no measured rack_inlet_c")

    # ---- failure-rate scale
    if events_measured is not None and events_simulated:
        t0, t1 = ds["time"].values[0], ds["time"].values[-1]

        def count(ev):
            tt = np.asarray(ev["time"].values, dtype="datetime64[ns]")
            return int(((ev["kind"].values == "failure") & (tt >= t0) & (tt <= t1)).sum())
        n_meas = count(events_measured)
        n_sim = np.array([count(e) for e in events_simulated])
        prior = scenario.failures.rate_scale
        try:
            scale, sig = fit_failure_scale(n_meas, n_sim, prior)
            out.fits.append(Fit("failure-rate scale", scale, sig, "1", prior, "failures.rate_scale", n_meas,
                                note=f"{n_meas} measured failures vs {n_sim.mean():.1f} simulated "
                                     f"(mean of {len(n_sim)} seeds)"))
        except ValueError as exc:
            out.skipped.append(f"failure rate: {exc}")
    else:
        out.skipped.append("failure rate: no measured event log (a CSV with time and kind columns, "
                           "kind 'failure' counted)")
    node_fits, node_skipped = node_level_fits(node_groups or [], node_model(scenario.hardware.node_model))
    out.fits.extend(node_fits)
    out.skipped.extend(node_skipped)
    return out


def read_event_log(path):
    """A measured event table: CSV with ``time`` and ``kind`` (``twin run``'s events.csv or
    a facility log in that shape; ``kind == "failure"`` rows count)."""
    import pandas as pd
    try:
        ev = pd.read_csv(path)
    except Exception as exc:
        raise TelemetryError(str(path), "", f"not a readable CSV ({exc})") from None
    missing = {"time", "kind"} - set(ev.columns)
    if missing:
        raise TelemetryError(str(path), "", f"an event log needs columns time and kind (missing {sorted(missing)})")
    try:
        t = pd.to_datetime(ev["time"], format="ISO8601", utc=True)
    except (ValueError, TypeError) as exc:
        raise TelemetryError(str(path), "time", f"unreadable time ({exc})") from None
    ev["time"] = t.dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ns]")
    return ev


def is_event_log(path) -> bool:
    from pathlib import Path
    p = Path(path)
    if p.suffix.lower() != ".csv":
        return False
    with open(p, encoding="utf-8", errors="replace") as fh:
        head = fh.readline().lower()
    cols = [c.strip() for c in head.split(",")]
    return "kind" in cols and "time" in cols


def scenario_yaml(original_path, cal: Calibration, out_path, sources, overrides=()) -> str:
    """The text of a scenario that ``extends`` the original with the fitted values, commented.

    ``overrides``: the ``--set dotted.path=value`` texts the calibration ran with (for example
    the cooling model); they are written too, since the fit holds only for that scenario."""
    import datetime as dt
    import json
    import os
    from pathlib import Path

    from twin.scenario.loader import apply_override, parse_override
    rel = os.path.relpath(Path(original_path).resolve(), Path(out_path).resolve().parent)
    lines = [f"# Calibrated by `twin calibrate` on {dt.date.today().isoformat()} from:",
             *[f"#   {s}" for s in sources],
             "# Each value: fitted +/- 1 sigma (least squares; independent samples assumed), the prior,",
             "# and the RMS residual before -> after the fit."]
    if cal.skipped:
        # in the header: a reader of the file must see what the calibration did not touch
        # before trusting the rest as measured
        lines.append(f"# Not fitted ({len(cal.skipped)}; these keep the original scenario's values):")
        lines += [f"#   {s}" for s in cal.skipped]
    lines.append(f"extends: {rel}")
    tree: dict = {}
    comments: dict[str, str] = {}
    unwritten = []
    for text in overrides:
        parts, value = parse_override(text)
        if any(p.lstrip("-").isdigit() for p in parts):   # a list item: extends cannot merge it
            unwritten.append(text)
            continue
        apply_override(tree, parts, value)
        comments[".".join(parts)] = "set on the command line of the calibration"
    for f in cal.fits:
        if not (f.path and f.identified):
            continue
        node = tree
        parts = f.path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = f.value
        rm = (f" RMS {f.rmse_before:.4g} -> {f.rmse_after:.4g}" if f.rmse_before is not None else "")
        comments[f.path] = f"{f.name}: +/- {f.sigma:.3g} {f.unit} (1 sigma), was {f.prior:g};{rm}; n={f.n}"

    def emit(node, indent, prefix):
        for k, v in node.items():
            path = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                lines.append(f"{'  ' * indent}{k}:")
                emit(v, indent + 1, path)
            elif isinstance(v, float):
                lines.append(f"{'  ' * indent}{k}: {v:.6g}   # {comments[path]}")
            else:
                lines.append(f"{'  ' * indent}{k}: {json.dumps(v)}   # {comments[path]}")
    emit(tree, 0, "")
    rest = [f for f in cal.fits if not (f.path and f.identified)]
    if rest:
        lines.append("# Fitted but not expressible in a scenario yet (no schema field):")
        for f in rest:
            if f.identified:
                prior = f" (twin {f.prior:.4g})" if f.prior is not None else ""
                rm = (f"; RMS {f.rmse_before:.4g} -> {f.rmse_after:.4g}" if f.rmse_before is not None else "")
                lines.append(f"#   {f.name}: {f.value:.4g} +/- {f.sigma:.2g} {f.unit}{prior}{rm}; {f.note}")
            else:
                lines.append(f"#   {f.name}: {f.note}")
    for text in unwritten:
        lines.append(f"# calibrated with --set {text} (a list item: add it by hand)")
    return "\n".join(lines) + "\n"
