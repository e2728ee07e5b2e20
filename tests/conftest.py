from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"

# The suite runs on shared 2-core machines: hypothesis's wall-clock checks (per-example
# deadline, "input generation is slow") measure the machine's load, not the code, and
# failed under load (tests/sweep/test_sweep.py::test_grid_flag_round_trips_values at a
# load of 10-15). Every property still runs its examples; only the timing checks are off.
settings.register_profile("twin", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("twin")


@pytest.fixture
def scenarios_dir() -> Path:
    return SCENARIOS
