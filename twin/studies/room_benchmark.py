"""What a published room benchmark could tell the buoyant air model (issue 12).

No published table of measured rack-inlet temperatures with its room layout was reachable
(``docs/validation.md``, cooling section), so the plume coefficient c_b of
:mod:`twin.thermal.buoyancy` (0.3, from plume theory) is not fitted. This module answers the
question that decides what such a benchmark must contain: how far do rack inlets move when
c_b spans its plausible range, against how far they move with the things a benchmark
reports (cooling air against rack air), in an open and a cold-aisle-contained hall.

The hall is :func:`twin.thermal.row_hall` (rows face to face across cold aisles, perimeter
CRAHs feeding a raised floor, layered room), each rack carrying ``rack_heat_w`` at a
``rack_delta_t_k`` air temperature rise, V = Q / (rho cp dT)
(:func:`twin.thermal.rack_airflow_m3_s`). Inlets are the buoyant field's
(:func:`twin.thermal.buoyancy.buoyant_flow`), reported as the rise above the supply
temperature [K].
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal.buoyancy import buoyant_flow

__all__ = ["CoefficientSensitivity", "plume_coefficient_sensitivity"]

LAYOUTS = ("open", "cold_aisle")


@dataclass(frozen=True)
class CoefficientSensitivity:
    """Inlet rise above supply [K] of a row hall, by layout, airflow ratio and c_b.

    ``hottest_inlet_rise_k`` and ``mean_inlet_rise_k`` have shape
    (len(layouts), len(airflow_ratios), len(coefficients)).
    """

    layouts: tuple[str, ...]
    airflow_ratios: np.ndarray  # cooling-unit air / rack air [-]
    coefficients: np.ndarray  # plume coefficient c_b [-]
    hottest_inlet_rise_k: np.ndarray
    mean_inlet_rise_k: np.ndarray

    def span_k(self, which: str = "mean") -> np.ndarray:
        """Largest minus smallest inlet rise over the coefficients [K], (layout, ratio)."""
        a = self.mean_inlet_rise_k if which == "mean" else self.hottest_inlet_rise_k
        return a.max(axis=-1) - a.min(axis=-1)


def plume_coefficient_sensitivity(airflow_ratios=(0.8, 0.9, 1.1, 1.3),
                                  coefficients=(0.0, 0.15, 0.3, 0.6), *,
                                  n_rows: int = 4, racks_per_row: int = 10,
                                  cooling_per_wall: int = 2, rack_heat_w: float = 10e3,
                                  rack_delta_t_k: float = 15.0, n_layers: int = 4,
                                  containment_leakage_fraction: float = 0.05,
                                  supply_temp_c: float = 18.0,
                                  layouts=LAYOUTS) -> CoefficientSensitivity:
    """Hottest and mean rack-inlet rise above supply [K] over airflow ratio x c_b.

    For each ratio r the ``2 * cooling_per_wall`` units share r times the racks' total
    airflow, V_unit = r sum(V_rack) / n_units [m3/s]; ``layouts`` are ``"open"`` (no
    containment) and ``"cold_aisle"`` (contained cold aisles with a
    ``containment_leakage_fraction`` leak). ``coefficients`` are passed to
    :func:`twin.thermal.buoyancy.buoyant_flow` (0 = potential flow).
    """
    ratios = np.asarray(airflow_ratios, float)
    coefs = np.asarray(coefficients, float)
    n = n_rows * racks_per_row
    heat = np.full(n, float(rack_heat_w))
    airflow = rack_airflow_m3_s(heat, rack_delta_t_k)
    n_units = 2 * cooling_per_wall
    hot = np.empty((len(layouts), ratios.size, coefs.size))
    mean = np.empty_like(hot)
    for j, r in enumerate(ratios):
        base = row_hall(n_rows, racks_per_row, cooling_per_wall=cooling_per_wall,
                        cooling_airflow_m3_s=r * float(airflow.sum()) / n_units,
                        cooling_supply_temp_c=supply_temp_c, n_layers=n_layers,
                        containment_leakage_fraction=containment_leakage_fraction)
        for i, layout in enumerate(layouts):
            g = base if layout == "open" else replace(base, containment=layout)
            for k, c in enumerate(coefs):
                bf = buoyant_flow(g, heat, airflow, coefficient=float(c))
                rise = bf.problem.inlet_temp_c(bf.temp_c, heat) - supply_temp_c
                hot[i, j, k] = rise.max()
                mean[i, j, k] = rise.mean()
    return CoefficientSensitivity(tuple(layouts), ratios, coefs, hot, mean)
