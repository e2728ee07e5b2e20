"""Workloads that fill a cluster: job streams fitted to published traces, scheduler-trace
parsers, an engine-independent LSF-like scheduler with a standalone replay, and pure
queue/utilisation KPIs (issue 14)."""

from twin.workload.stream import (
    JobClassParams,
    StreamParams,
    default_stream_params,
    fit_stream_params,
    generate_jobs,
    jobs_per_hour_for_load,
    restrict_to_cluster,
    stream_moments,
)
from twin.workload.traces import Trace, TraceError, read_trace

__all__ = [
    "JobClassParams", "StreamParams", "Trace", "TraceError", "default_stream_params",
    "fit_stream_params", "generate_jobs", "jobs_per_hour_for_load", "read_trace",
    "restrict_to_cluster", "stream_moments",
]
