"""Parameter sweeps: a grid of scenario fields (and named cases) x seeds, run in parallel on
the local cores (one forked process per run) or on a Dask cluster, resumable, self-healing,
with Monte Carlo summaries over seeds and paired differences across grid points.

Layout of a sweep folder ``DIR``::

    DIR/sweep.json        the resolved sweep (axes, seeds, series) as written by the last run
    DIR/runs/<key>.json   one finished run: status, KPIs, error, checksums (key = hash of the
    DIR/runs/<key>.npz    resolved scenario incl. its seed) and its selected time series
    DIR/runs/.tmp/        temporaries of runs being written (outside the runs/*.json glob)
    DIR/sweep.nc          one xarray Dataset: every KPI with dims (axis..., seed), series with
                          (axis..., seed, day), ``status`` and ``error`` per run
    DIR/summary.csv       mean and 5-95 % band over seeds of every KPI, per grid point

Python::

    from twin.sweep import SweepSpec, Axis, run_sweep
    spec = SweepSpec.from_file("scenarios/studies/ups_mode.yaml")
    outcome = run_sweep(spec, "runs/ups", workers=2)
    outcome.dataset.tokens_total.mean("seed").sel({"site.power.ups.mode": "bypass"})

Modules: :mod:`~twin.sweep.spec` (definition, files, ``--grid``), :mod:`~twin.sweep.store`
(the verified run store), :mod:`~twin.sweep.executors` (where runs execute, failure rules),
:mod:`~twin.sweep.run` (:func:`run_sweep`), :mod:`~twin.sweep.assembly` (``sweep.nc``,
summaries, paired differences), :mod:`~twin.sweep.cli` (``twin sweep``).

A run's key is the SHA-256 of its resolved scenario (the seed is ``simulation.seed``), so a
re-run of a killed sweep, or a different sweep sharing runs with it, does only what is
missing. The core never prints: progress goes to a callback; the CLI draws the bar.
"""

from twin.sweep.assembly import (
    assemble,
    format_summary,
    kpi_names,
    load_sweep,
    paired_differences,
    summarize,
    summary_table,
    write_dataset,
)
from twin.sweep.cli import SweepProgress, build_parser, run_sweep_cli
from twin.sweep.executors import RunTask, SweepInvalid, execute_run, resolve_tasks
from twin.sweep.run import SweepOutcome, run_sweep
from twin.sweep.spec import (
    DEFAULT_SERIES,
    DERIVED_SERIES,
    MAX_RUNS,
    MAX_SEEDS,
    Axis,
    SweepError,
    SweepSpec,
    is_sweep_file,
    parse_grid,
    parse_seeds,
    spec_from_mapping,
)
from twin.sweep.store import RunStore, code_fingerprint

__all__ = [
    "DEFAULT_SERIES", "DERIVED_SERIES", "MAX_RUNS", "MAX_SEEDS", "Axis", "RunStore", "RunTask", "SweepError",
    "SweepInvalid", "SweepOutcome", "SweepProgress", "SweepSpec", "assemble", "build_parser",
    "code_fingerprint", "execute_run", "format_summary", "is_sweep_file", "kpi_names", "load_sweep",
    "paired_differences", "parse_grid", "parse_seeds", "resolve_tasks", "run_sweep", "run_sweep_cli",
    "spec_from_mapping", "summarize", "summary_table", "write_dataset",
]
