"""Scenario schema and loading."""

from twin.scenario.loader import load_scenario, scenario_hash, validate_data
from twin.scenario.schema import Scenario

__all__ = ["Scenario", "load_scenario", "scenario_hash", "validate_data"]
