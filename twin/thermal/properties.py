"""Point physics of air, GPUs and the ASHRAE envelope: pure, vectorised functions.

Air properties and the ASHRAE TC 9.9 envelope follow ``reference/calibration.yaml``
(section ``thermal``): rho = 1.2 kg/m3 and cp = 1005 J/(kg K) are the values for dry air
near 20 C at sea level (ASHRAE Handbook - Fundamentals, psychrometrics chapter).
"""

from __future__ import annotations

import numpy as np

AIR_DENSITY_KG_M3 = 1.2
"""Density of air [kg/m3] near 20 C, 101.325 kPa (calibration.yaml thermal.air_density_kg_m3)."""

AIR_CP_J_KG_K = 1005.0
"""Isobaric specific heat of air [J/(kg K)] (calibration.yaml thermal.air_cp_j_kg_k)."""

AIR_VOLUMETRIC_HEAT_J_M3_K = AIR_DENSITY_KG_M3 * AIR_CP_J_KG_K
"""rho * cp [J/(m3 K)]: heat carried by one cubic metre of air per kelvin."""

BOLTZMANN_EV_K = 8.617333262e-5
"""Boltzmann constant [eV/K] (CODATA 2018, exact in the 2019 SI)."""

GPU_ACTIVATION_ENERGY_EV = 0.7
"""Apparent activation energy [eV] for temperature-accelerated failures of GPU-class silicon.

0.7 eV is the composite value the industry assumes for integrated circuits when the
dominant mechanism is not known: AMD/Xilinx UG116 "Device Reliability Report" uses
0.7 eV in all its FIT calculations (JESD85 method); mechanism-specific values in
JEDEC JEP122 ("Failure Mechanisms and Models for Semiconductor Devices") range from
about 0.3 eV (some corrosion, gate-oxide) to 1.1 eV (electromigration variants).
Jensen (1985, Qual. Reliab. Eng. Int. 1:13) warns against extrapolating it far.
"""

# ASHRAE TC 9.9 Thermal Guidelines for Data Processing Environments, 5th ed. (2021),
# inlet dry-bulb envelopes [C], as copied in reference/calibration.yaml.
ASHRAE_RECOMMENDED_C = (18.0, 27.0)
#: the recommended envelope's bounds [degC], for code that needs one of them
ASHRAE_RECOMMENDED_MIN_C, ASHRAE_RECOMMENDED_MAX_C = ASHRAE_RECOMMENDED_C
ASHRAE_ALLOWABLE_C = {
    "A1": (15.0, 32.0),
    "A2": (10.0, 35.0),
    "A3": (5.0, 40.0),
    "A4": (5.0, 45.0),
}
ASHRAE_H1_RECOMMENDED_C = (18.0, 22.0)
ASHRAE_H1_ALLOWABLE_C = (5.0, 25.0)

ASHRAE_CLASS_NAMES = ("recommended", "A1", "A2", "A3", "A4", "beyond_A4")
"""Names of the codes returned by :func:`ashrae_class` (index = code)."""

ASHRAE_H1_CLASS_NAMES = ("recommended", "allowable", "beyond_H1")
"""Names of the codes returned by :func:`ashrae_h1_class` (index = code)."""

# NVIDIA GPU thermal thresholds [C] (H100 PCIe product brief; calibration.yaml
# thermal.gpu_thermal_thresholds_c). SXM parts are not published the same way.
GPU_SLOWDOWN_C = 87.0
GPU_HW_SLOWDOWN_C = 89.0
GPU_SHUTDOWN_C = 92.0

SERVER_INLET_SHUTDOWN_C = 43.0
"""Inlet temperature at which a server's own protection shuts it down [C].

Dell's enclosure fan-controller firmware reads the air inlet every 5 s and shuts the system
down at 43 C (PowerEdge C8000 Owner's Manual, Table 5-6, "Enclosure Air Inlet Temperature
Threshold Settings": 38 C warning, 41 C upper critical, 43 C shutdown); PowerEdge iDRAC
sensors warn at 42 C and are critical at 47 C (fresh-air limits 40/45 C plus 2 K of sensor
margin). 43 C lies below the ASHRAE A4 allowable ceiling of 45 C that
:data:`twin.invariants.INLET_CEILING_C` checks, so protected racks stop before it."""

HW_SLOWDOWN_CLOCK_FRACTION = 0.5
"""Clock fraction while NVIDIA's hardware slowdown is asserted.

NVML documents ``HW Slowdown`` as "reducing the core clocks by a factor of 2 or more"
(NVML API reference, clocks event reasons); we take the factor 2 (the mildest case).
"""


def rack_airflow_m3_s(rack_heat_w, delta_t_k):
    """Airflow a rack needs to carry its heat at a given air temperature rise.

    V = Q / (rho * cp * dT)   [m3/s] from Q [W] and dT [K]; rho = 1.2 kg/m3,
    cp = 1005 J/(kg K) (calibration.yaml; sensible-heat equation, ASHRAE Handbook -
    Fundamentals). Example: 10.2 kW (DGX H100 maximum) at 15 K -> 0.564 m3/s.
    """
    heat = np.asarray(rack_heat_w, dtype=float)
    dt = np.asarray(delta_t_k, dtype=float)
    if np.any(dt <= 0):
        raise ValueError("delta_t_k must be positive")
    return heat / (AIR_VOLUMETRIC_HEAT_J_M3_K * dt)


def exhaust_temp_c(inlet_temp_c, rack_heat_w, rack_airflow_m3_s):
    """Rack exhaust temperature [C]: T_out = T_in + Q / (rho * cp * V)."""
    return np.asarray(inlet_temp_c, float) + np.asarray(rack_heat_w, float) / (
        AIR_VOLUMETRIC_HEAT_J_M3_K * np.asarray(rack_airflow_m3_s, float)
    )


def gpu_temp_c(inlet_temp_c, gpu_power_w, thermal_resistance_k_per_w):
    """GPU die temperature [C] from the server inlet temperature and GPU power.

    T_gpu = T_inlet + R_th * P_gpu, with R_th [K/W] the inlet-to-die thermal resistance
    of the node's cooling path (heat sink, fans, upstream preheat by other parts), a
    per-node catalog figure. Steady state; the die time constant (seconds) is far below
    the sampling interval of the simulation.
    """
    return np.asarray(inlet_temp_c, float) + gpu_temp_rise_k(gpu_power_w, thermal_resistance_k_per_w)


def gpu_temp_rise_k(gpu_power_w, thermal_resistance_k_per_w):
    """The GPU die's rise over its inlet [K], R_th * P_gpu (:func:`gpu_temp_c`)."""
    return np.asarray(thermal_resistance_k_per_w, float) * np.asarray(gpu_power_w, float)


def gpu_clock_fraction(
    gpu_temp_c,
    slowdown_c=GPU_SLOWDOWN_C,
    hw_slowdown_c=GPU_HW_SLOWDOWN_C,
    shutdown_c=GPU_SHUTDOWN_C,
):
    """Fraction of the full GPU clock that remains at a die temperature [-].

    Piecewise law (a model, thresholds from the NVIDIA H100 product brief via
    calibration.yaml: software slowdown 87 C, hardware slowdown 89 C, shutdown 92 C):

    - T < slowdown_c: 1.0 (no thermal throttling);
    - slowdown_c <= T < hw_slowdown_c: the driver's software thermal slowdown steps the
      clocks down; modelled as a linear ramp from 1.0 to 0.5;
    - hw_slowdown_c <= T < shutdown_c: hardware slowdown, clocks cut by a factor of 2
      (NVML: "reducing the core clocks by a factor of 2 or more") -> 0.5;
    - T >= shutdown_c: thermal shutdown, 0.0 (the node drops).

    The law is continuous up to the shutdown step and non-increasing in T.
    """
    t = np.asarray(gpu_temp_c, dtype=float)
    lo = HW_SLOWDOWN_CLOCK_FRACTION
    span = max(hw_slowdown_c - slowdown_c, 1e-9)
    ramp = 1.0 - (1.0 - lo) * (t - slowdown_c) / span
    frac = np.where(t < slowdown_c, 1.0, np.where(t < hw_slowdown_c, ramp, lo))
    return np.where(t >= shutdown_c, 0.0, frac)


def arrhenius_acceleration(temp_c, ref_temp_c, activation_energy_ev=GPU_ACTIVATION_ENERGY_EV):
    """Arrhenius acceleration factor of a failure rate at temp_c relative to ref_temp_c.

    AF = exp( Ea / k_B * (1/T_ref - 1/T) ),  T in kelvin, Ea [eV], k_B [eV/K].
    AF > 1 when hotter than the reference. Multiply a hazard rate measured at ref_temp_c
    by AF. Default Ea = 0.7 eV (see ``GPU_ACTIVATION_ENERGY_EV``: AMD/Xilinx UG116,
    JEDEC JESD85 / JEP122). Example: 0.7 eV, 60 -> 70 C gives AF = 2.04.
    """
    return arrhenius_from_factors(temp_c, *arrhenius_factors(ref_temp_c, activation_energy_ev))


def arrhenius_factors(ref_temp_c, activation_energy_ev=GPU_ACTIVATION_ENERGY_EV):
    """The temperature-independent parts of :func:`arrhenius_acceleration`: ``(Ea / k_B [K],
    1 / T_ref [1/K])``, so that a caller evaluating many temperatures against the same
    reference converts its figures once."""
    return (np.asarray(activation_energy_ev, float) / BOLTZMANN_EV_K,
            1.0 / (np.asarray(ref_temp_c, dtype=float) + 273.15))


def arrhenius_from_factors(temp_c, ea_over_k, inv_ref_k):
    """:func:`arrhenius_acceleration` of ``temp_c`` [C] from :func:`arrhenius_factors`:
    exp(Ea / k_B * (1 / T_ref - 1 / T)), T in kelvin."""
    t_k = np.asarray(temp_c, dtype=float) + 273.15
    return np.exp(ea_over_k * (inv_ref_k - 1.0 / t_k))


def ashrae_class(inlet_temp_c):
    """ASHRAE TC 9.9 (2021) air-cooled class of each inlet temperature (int8 codes).

    0 recommended [18, 27] C; 1 A1 allowable [15, 32]; 2 A2 [10, 35]; 3 A3 [5, 40];
    4 A4 [5, 45]; 5 beyond A4 (outside every envelope). The code is the tightest
    envelope that contains the temperature; bounds are inclusive (27.0 C is still
    recommended, 32.0 C still A1). Names in ``ASHRAE_CLASS_NAMES``. Source: ASHRAE TC 9.9
    Thermal Guidelines for Data Processing Environments, 5th ed. (2021), dry bulb.
    """
    t = np.asarray(inlet_temp_c, dtype=float)
    code = np.full(t.shape, 5, dtype=np.int8)
    envelopes = [ASHRAE_RECOMMENDED_C] + [ASHRAE_ALLOWABLE_C[k] for k in ("A1", "A2", "A3", "A4")]
    for c in range(len(envelopes) - 1, -1, -1):
        lo, hi = envelopes[c]
        code = np.where((t >= lo) & (t <= hi), np.int8(c), code)
    return code


def ashrae_h1_class(inlet_temp_c):
    """ASHRAE TC 9.9 (2021) class H1 (high-density) code: 0 recommended [18, 22] C,
    1 allowable [5, 25] C, 2 beyond H1. Bounds inclusive."""
    t = np.asarray(inlet_temp_c, dtype=float)
    code = np.full(t.shape, 2, dtype=np.int8)
    lo, hi = ASHRAE_H1_ALLOWABLE_C
    code = np.where((t >= lo) & (t <= hi), np.int8(1), code)
    lo, hi = ASHRAE_H1_RECOMMENDED_C
    return np.where((t >= lo) & (t <= hi), np.int8(0), code)


def ashrae_class_hours(inlet_temp_c, sample_interval_s):
    """Hours each rack spends in each ASHRAE class over a sampled series.

    inlet_temp_c (T, R) [C] sampled every ``sample_interval_s`` [s] (each sample stands
    for one interval). Returns (R, 6) [h], columns as ``ASHRAE_CLASS_NAMES``; hours
    outside the recommended envelope are ``hours[:, 1:].sum(axis=1)``.
    """
    codes = ashrae_class(np.atleast_2d(np.asarray(inlet_temp_c, float)))
    n_cls = len(ASHRAE_CLASS_NAMES)
    counts = np.stack([(codes == c).sum(axis=0) for c in range(n_cls)], axis=1)
    return counts * (float(sample_interval_s) / 3600.0)


def rack_cooling_index_hi(inlet_temp_c, max_recommended_c=ASHRAE_RECOMMENDED_C[1],
                          max_allowable_c=ASHRAE_ALLOWABLE_C["A1"][1]):
    """Rack Cooling Index, high side [%] (Herrlin, ASHRAE Trans. 111(2), 2005).

    RCI_HI = (1 - sum over T > T_rec of (T - T_rec) / (n (T_all - T_rec))) * 100, with
    T_rec the recommended and T_all the allowable maximum (defaults 27 and 32 C, ASHRAE
    TC 9.9 2021, class A1). 100 % = no inlet above the recommended range; Herrlin rates
    >= 96 % good, < 90 % poor. Can go below 0 when inlets exceed the allowable limit.

    References
    ----------
    .. [1] M. K. Herrlin, "Rack cooling effectiveness in data centers and telecom central
       offices: the Rack Cooling Index (RCI)", ASHRAE Transactions 111(2), 725-731 (2005).
    """
    t = np.asarray(inlet_temp_c, float).ravel()
    over = np.clip(t - max_recommended_c, 0.0, None).sum()
    return 100.0 * (1.0 - over / (t.size * (max_allowable_c - max_recommended_c)))


def rack_cooling_index_lo(inlet_temp_c, min_recommended_c=ASHRAE_RECOMMENDED_C[0],
                          min_allowable_c=ASHRAE_ALLOWABLE_C["A1"][0]):
    """Rack Cooling Index, low side [%] (Herrlin 2005): over-cooling below the
    recommended minimum (defaults 18 and 15 C, ASHRAE TC 9.9 2021, class A1)."""
    t = np.asarray(inlet_temp_c, float).ravel()
    under = np.clip(min_recommended_c - t, 0.0, None).sum()
    return 100.0 * (1.0 - under / (t.size * (min_recommended_c - min_allowable_c)))


def supply_heat_index(inlet_temp_c, exhaust_temp_c, supply_temp_c):
    """Supply Heat Index [-] (Sharma, Bash & Patel, AIAA 2002-3091).

    SHI = sum (T_in - T_s) / sum (T_out - T_s) over racks: the share of the air's
    enthalpy rise at the rack exhausts that it had already picked up, by mixing with hot
    air, before it entered the racks. 0 = no recirculation; the Return Heat Index is
    RHI = 1 - SHI. supply_temp_c: the supply temperature (scalar, or one per rack).

    References
    ----------
    .. [1] R. K. Sharma, C. E. Bash and C. D. Patel, "Dimensionless parameters for
       evaluation of thermal design and performance of large-scale data centers",
       8th AIAA/ASME Joint Thermophysics and Heat Transfer Conference, AIAA 2002-3091
       (2002). doi:10.2514/6.2002-3091
    """
    t_in = np.asarray(inlet_temp_c, float)
    t_out = np.asarray(exhaust_temp_c, float)
    t_s = np.asarray(supply_temp_c, float)
    return float(np.sum(t_in - t_s) / np.sum(t_out - t_s))


def return_temperature_index(return_temp_c, supply_temp_c, cooling_airflow_m3_s,
                             rack_inlet_temp_c, rack_exhaust_temp_c, rack_airflow_m3_s):
    """Return Temperature Index [%] (Herrlin, ASHRAE Trans. 114(2), 2008).

    RTI = (T_return - T_supply) / (T_exhaust - T_inlet) * 100, each an airflow-weighted
    mean (units for return and supply, racks for exhaust and inlet). 100 % = balanced
    airflow; above 100 % the racks recirculate hot air, below it cold air bypasses them.
    """
    vc = np.asarray(cooling_airflow_m3_s, float)
    vr = np.asarray(rack_airflow_m3_s, float)
    on = vc > 0
    rise_units = np.sum(vc[on] * (np.asarray(return_temp_c, float)[on] - np.asarray(supply_temp_c, float)[on])) / vc[on].sum()
    rise_racks = np.sum(vr * (np.asarray(rack_exhaust_temp_c, float) - np.asarray(rack_inlet_temp_c, float))) / vr.sum()
    return float(100.0 * rise_units / rise_racks)
