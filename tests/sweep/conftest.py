from pathlib import Path

import pytest

from twin.sweep import Axis, SweepSpec

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

# one simulated day of the 4-node Lenovo room, hourly samples: ~0.3 s a run once imported
SMALL = ("simulation.duration_days=1", "simulation.sample_interval_s=3600")


@pytest.fixture
def small_spec() -> SweepSpec:
    """UPS mode x 2 seeds on lenovo_small: 4 runs."""
    return SweepSpec(scenario=str(SCENARIOS / "lenovo_small.yaml"), overrides=SMALL,
                     axes=(Axis.grid("site.power.ups.mode", ["double_conversion", "bypass"]),),
                     seeds=(0, 1), name="small")
