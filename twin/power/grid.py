"""Grid disturbances: what reaches the PSUs, who rides through, and a stochastic event model.

Seconds, per-unit voltages (1 = nominal), rates per year.
"""

from __future__ import annotations

import numpy as np

from twin.power.electrical import UPS_MODES, ups_autonomy_s

__all__ = [
    "GRID_SAG",
    "GRID_OUTAGE",
    "SECONDS_PER_YEAR",
    "psu_sag_tolerance_s",
    "ride_through_outcome",
    "power_restored_after_s",
    "sample_grid_events",
]

GRID_SAG = 0
GRID_OUTAGE = 1
SECONDS_PER_YEAR = 365.25 * 86400.0

#: Transfer time of an eco-mode UPS from static bypass to inverter [s]
#: (IEC 62040-3 classifies <= 10 ms; modern units 2-4 ms).
ECO_TRANSFER_S = 0.004


def psu_sag_tolerance_s(residual_voltage_pu, psu_holdup_s) -> np.ndarray:
    """How long a server PSU rides through a sag to ``residual_voltage_pu`` [s].

    ITIC (CBEMA) curve, Information Technology Industry Council 2000, no-interruption
    region: below 70 % of nominal only the hold-up time of the bulk capacitor
    (``psu_holdup_s``; the ITIC curve assumes 20 ms, ATX-class supplies >= 16 ms, large
    server PSUs ~10-12 ms); 70-80 %: 0.5 s; 80-90 %: 10 s; >= 90 %: indefinitely.
    """
    v = np.asarray(residual_voltage_pu, dtype=float)
    return np.select(
        [v >= 0.9, v >= 0.8, v >= 0.7],
        [np.inf, 10.0, 0.5],
        default=float(psu_holdup_s),
    ) * np.ones_like(v)


def ride_through_outcome(
    disturbance_duration_s,
    ups_mode: str,
    *,
    psu_holdup_s,
    ups_ride_through_s,
    generator_start_s=None,
    residual_voltage_pu=0.0,
    ups_load_fraction=None,
    eco_transfer_s=ECO_TRANSFER_S,
) -> np.ndarray:
    """Do the nodes behind this UPS drop in a grid disturbance? [bool, True = drop]

    * ``"bypass"``: the disturbance reaches the PSUs: drop when it lasts longer than the
      PSU tolerates at its residual voltage (:func:`psu_sag_tolerance_s`). A generator
      does not help: it starts after the PSUs have already dropped.
    * ``"double_conversion"``: the inverter carries the load from the battery; drop only
      when the disturbance outlasts the battery autonomy (``ups_ride_through_s`` at full
      load, Peukert-scaled by ``ups_load_fraction`` if given) and no generator started
      within that autonomy (``generator_start_s <= autonomy`` -> covered indefinitely).
    * ``"eco"``: as double conversion, except that the PSUs must bridge the transfer to
      the inverter (drop if ``eco_transfer_s`` exceeds their tolerance).

    A sag with residual voltage >= 0.9 pu never drops anything (ITIC steady-state band).
    Arguments broadcast; ``None`` for ``generator_start_s`` means no generator.
    """
    if ups_mode not in UPS_MODES:
        raise ValueError(f"ups_mode must be one of {UPS_MODES}, got {ups_mode!r}")
    d = np.asarray(disturbance_duration_s, dtype=float)
    tol = psu_sag_tolerance_s(residual_voltage_pu, psu_holdup_s)
    psu_drop = d > tol
    if ups_mode == "bypass":
        return psu_drop
    if ups_load_fraction is None:
        autonomy = np.asarray(ups_ride_through_s, dtype=float)
    else:
        autonomy = ups_autonomy_s(ups_load_fraction, ups_ride_through_s)
    if generator_start_s is None:
        covered = autonomy
    else:
        covered = np.where(np.asarray(generator_start_s, float) <= autonomy, np.inf, autonomy)
    # the UPS only matters for disturbances the PSUs would not have ridden through
    drop = psu_drop & (d > covered)
    if ups_mode == "eco":
        drop = drop | (psu_drop & (eco_transfer_s > tol))
    return drop


def power_restored_after_s(
    disturbance_duration_s, *, generator_start_s=None
) -> np.ndarray:
    """Time after the disturbance starts until dropped nodes have power again [s].

    With a generator that starts within the disturbance, ``generator_start_s``;
    otherwise when the utility returns (the disturbance's duration). Nodes then boot
    (the engine adds node boot and job restart times).
    """
    d = np.asarray(disturbance_duration_s, dtype=float)
    if generator_start_s is None:
        return d
    return np.minimum(d, float(generator_start_s))


#: Lognormal shape (sigma of ln duration) for sags: EPRI DPQ durations span ~1 cycle to
#: seconds around a median of a few cycles (EPRI Distribution Power Quality study, 1995-2000).
SAG_DURATION_SIGMA = 1.0
#: Lognormal shape for outages: momentary (< 5 min) to hours (IEEE 1366 reliability indices).
OUTAGE_DURATION_SIGMA = 1.5


def _lognormal(rng, mean, sigma, size):
    mu = np.log(mean) - 0.5 * sigma * sigma  # E[X] = exp(mu + sigma^2 / 2) = mean
    return rng.lognormal(mu, sigma, size)


def sample_grid_events(
    rng: np.random.Generator,
    duration_s: float,
    *,
    sag_rate_per_year: float,
    outage_rate_per_year: float,
    sag_mean_duration_s: float = 0.2,
    outage_mean_duration_s: float = 1800.0,
    sag_duration_sigma: float = SAG_DURATION_SIGMA,
    outage_duration_sigma: float = OUTAGE_DURATION_SIGMA,
    sag_residual_pu_range: tuple[float, float] = (0.0, 0.7),
) -> dict[str, np.ndarray]:
    """Sample utility sags and outages over ``[0, duration_s)`` as homogeneous Poisson processes.

    Counts ~ Poisson(rate * duration / year), start times uniform (the Poisson process
    conditioned on its count), durations lognormal with the given means [s] and shapes,
    sag residual voltage uniform over ``sag_residual_pu_range`` [pu] (default below the
    ITIC 70 % line: "sags deep enough to matter"); outages have residual 0.

    Returns arrays sorted by start time: ``start_s``, ``duration_s``, ``kind``
    (:data:`GRID_SAG` / :data:`GRID_OUTAGE`, int8), ``residual_voltage_pu``.
    Draw order is fixed, so a seeded ``rng`` gives identical events.
    """
    years = float(duration_s) / SECONDS_PER_YEAR
    n_sag = rng.poisson(sag_rate_per_year * years)
    n_out = rng.poisson(outage_rate_per_year * years)
    t_sag = rng.uniform(0.0, duration_s, n_sag)
    d_sag = _lognormal(rng, sag_mean_duration_s, sag_duration_sigma, n_sag)
    v_sag = rng.uniform(sag_residual_pu_range[0], sag_residual_pu_range[1], n_sag)
    t_out = rng.uniform(0.0, duration_s, n_out)
    d_out = _lognormal(rng, outage_mean_duration_s, outage_duration_sigma, n_out)
    start = np.concatenate([t_sag, t_out])
    order = np.argsort(start, kind="stable")
    return {
        "start_s": start[order],
        "duration_s": np.concatenate([d_sag, d_out])[order],
        "kind": np.concatenate([np.full(n_sag, GRID_SAG, np.int8),
                                np.full(n_out, GRID_OUTAGE, np.int8)])[order],
        "residual_voltage_pu": np.concatenate([v_sag, np.zeros(n_out)])[order],
    }
