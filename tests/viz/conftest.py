"""Shared fixtures of the viz tests: a short lenovo_small run saved to disk (once per session)."""

from pathlib import Path

import pytest

pytest.importorskip("pyvista")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "scenarios" / "lenovo_small.yaml"
SMALL_OVERRIDES = ["simulation.duration_days=2", "simulation.sample_interval_s=3600"]


@pytest.fixture(scope="session")
def small_scenario():
    import twin

    return twin.load_scenario(SMALL, SMALL_OVERRIDES)


@pytest.fixture(scope="session")
def small_run_dir(tmp_path_factory, small_scenario):
    import twin

    out = tmp_path_factory.mktemp("viz_run") / "lenovo_small"
    twin.simulate(small_scenario).save(out)
    return out


@pytest.fixture(scope="session")
def small_results(small_run_dir):
    from twin.results import Results

    return Results.load(small_run_dir)


@pytest.fixture(scope="session")
def fixed_scenario(small_scenario):
    """A 10 m x 8 m hall with one row of four racks (see hall_fixtures.make_fixed_scenario)."""
    from .hall_fixtures import make_fixed_scenario

    return make_fixed_scenario(small_scenario)
