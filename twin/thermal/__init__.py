"""Airflow and heat of the data hall: field solver, recirculation matrix, transients,
GPU temperature and throttling, ASHRAE classes, failure acceleration, rack placement."""

from .geometry import HallGeometry
from .inlet import InletModel, inlet_model, inlet_temp_c
from .layouts import row_hall
from .placement import CapacityResult, PlacementResult, racks_that_fit, suggest_placement
from .properties import (
    AIR_CP_J_KG_K,
    AIR_DENSITY_KG_M3,
    ASHRAE_CLASS_NAMES,
    ASHRAE_H1_CLASS_NAMES,
    ASHRAE_RECOMMENDED_MAX_C,
    ASHRAE_RECOMMENDED_MIN_C,
    GPU_ACTIVATION_ENERGY_EV,
    SERVER_INLET_SHUTDOWN_C,
    arrhenius_acceleration,
    ashrae_class,
    ashrae_class_hours,
    ashrae_h1_class,
    exhaust_temp_c,
    gpu_clock_fraction,
    gpu_temp_c,
    rack_airflow_m3_s,
    rack_cooling_index_hi,
    rack_cooling_index_lo,
    return_temperature_index,
    supply_heat_index,
)
from .solver import NoSteadyStateError, steady_field
from .transient import FaultTransient, fault_transient, hall_air_volume_m3, minutes_to_inlet_limit

__all__ = [
    "AIR_CP_J_KG_K",
    "AIR_DENSITY_KG_M3",
    "ASHRAE_CLASS_NAMES",
    "ASHRAE_H1_CLASS_NAMES",
    "ASHRAE_RECOMMENDED_MAX_C",
    "ASHRAE_RECOMMENDED_MIN_C",
    "CapacityResult",
    "FaultTransient",
    "GPU_ACTIVATION_ENERGY_EV",
    "HallGeometry",
    "InletModel",
    "NoSteadyStateError",
    "PlacementResult",
    "SERVER_INLET_SHUTDOWN_C",
    "arrhenius_acceleration",
    "ashrae_class",
    "ashrae_class_hours",
    "ashrae_h1_class",
    "exhaust_temp_c",
    "fault_transient",
    "gpu_clock_fraction",
    "gpu_temp_c",
    "hall_air_volume_m3",
    "inlet_model",
    "inlet_temp_c",
    "minutes_to_inlet_limit",
    "rack_airflow_m3_s",
    "rack_cooling_index_hi",
    "rack_cooling_index_lo",
    "racks_that_fit",
    "return_temperature_index",
    "row_hall",
    "steady_field",
    "suggest_placement",
    "supply_heat_index",
]
