"""twin: a digital twin of an AI-training data center.

Python API (mirrors the CLI)::

    import twin
    scenario = twin.load_scenario("scenarios/blue_vela.yaml", ["simulation.duration_days=30"])
    results = twin.simulate(scenario)
    results.dataset, results.events, results.kpis
    results.save("runs/bv"); twin.Results.load("runs/bv")
"""

from __future__ import annotations

from twin._version import __version__

__all__ = ["Results", "ScenarioError", "__version__", "load_scenario", "simulate"]


def __getattr__(name):
    # lazy imports keep `import twin` cheap and free of import cycles
    if name == "load_scenario":
        from twin.scenario.loader import load_scenario
        return load_scenario
    if name == "Results":
        from twin.results import Results
        return Results
    if name == "ScenarioError":
        from twin.errors import ScenarioError
        return ScenarioError
    raise AttributeError(name)


def simulate(scenario, progress=None):
    """Run a scenario (a :class:`twin.scenario.Scenario`) and return :class:`twin.results.Results`.

    ``progress``: optional callable taking the completed fraction (0..1); the core never prints.
    """
    from twin.sim.engine import Engine
    return Engine(scenario, progress=progress).run()
