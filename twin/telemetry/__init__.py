"""Measured data in, predictions out: read telemetry, compare it with a run, calibrate a
scenario to it, and export a run's series as OpenMetrics for Prometheus and Grafana."""

from twin.telemetry.series import Series, TelemetryError

__all__ = ["Series", "TelemetryError"]
