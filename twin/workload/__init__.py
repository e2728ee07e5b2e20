"""Workloads that fill a cluster (issue 14): job streams fitted to published traces
(:mod:`twin.workload.stream`), scheduler-trace parsers (:mod:`twin.workload.traces`), an
engine-independent LSF-like scheduler (:mod:`twin.workload.scheduler`) with a standalone
replay (:mod:`twin.workload.replay`), pure queue and utilisation KPIs
(:mod:`twin.workload.kpis`), and the engine's view of them (:mod:`twin.workload.engine_jobs`,
:mod:`twin.workload.run_kpis`).

Submodules are imported on use (this package is imported by :mod:`twin.outputs`, which
should stay light)."""
