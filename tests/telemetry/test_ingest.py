"""Each measured format parsed from a realistic fixture the test writes, values and times exact."""

from __future__ import annotations

import json

import numpy as np
import pytest

from twin.telemetry.ingest import read_measured
from twin.telemetry.series import NS, check_series, convert

T0 = 1736121600          # 2025-01-06T00:00:00Z
HOSTS = ["gpu-node-001", "gpu-node-002"]


def _dcgm_labels(host: str, gpu: int) -> dict:
    # the label set dcgm-exporter 3.x attaches to every DCGM_FI_* metric
    return {"gpu": str(gpu), "UUID": f"GPU-{gpu:08x}-aaaa-bbbb-cccc-{host[-3:]}0000000{gpu}",
            "device": f"nvidia{gpu}", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": host,
            "DCGM_FI_DRIVER_VERSION": "550.54.15"}


def _gpu_power_w(host_i: int, gpu: int, k: np.ndarray) -> np.ndarray:
    return 650.0 + 10 * gpu + 3 * host_i + 5 * np.sin(k / 7)


def test_prometheus_query_range_json_with_dcgm_names(tmp_path):
    k = np.arange(40)
    result = []
    for h, host in enumerate(HOSTS):
        for g in range(8):
            result.append({"metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", "instance": f"{host}:9400",
                                      "job": "dcgm", **_dcgm_labels(host, g)},
                           "values": [[int(T0 + 15 * i), repr(float(v))] for i, v in zip(k, _gpu_power_w(h, g, k),
                                                                                  strict=True)]})
    f = tmp_path / "dcgm_power.json"
    f.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    series = read_measured(f)
    assert len(series) == 16
    s = next(x for x in series if x.labels["Hostname"] == "gpu-node-002" and x.labels["gpu"] == "3")
    assert s.name == "DCGM_FI_DEV_POWER_USAGE"
    np.testing.assert_array_equal(s.values, _gpu_power_w(1, 3, k))
    np.testing.assert_array_equal(s.t_ns, (T0 + 15 * k) * NS)


def test_prometheus_api_error_is_reported(tmp_path):
    f = tmp_path / "e.json"
    f.write_text(json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error at char 4"}))
    with pytest.raises(ValueError, match="e.json.*parse error"):
        read_measured(f)


def test_prometheus_text_exposition_ms_timestamps_dcgm_exporter(tmp_path):
    """dcgm-exporter metrics as Prometheus text with millisecond timestamps (e.g. federated)."""
    lines = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
             "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).", "# TYPE DCGM_FI_DEV_SM_CLOCK gauge",
             "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).",
             "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"]
    for i in range(20):
        for g in range(2):
            lab = ",".join(f'{a}="{b}"' for a, b in _dcgm_labels("gpu-node-001", g).items())
            ms = (T0 + 5 * i) * 1000
            lines.append(f"DCGM_FI_DEV_GPU_TEMP{{{lab}}} {60 + g + i % 3} {ms}")
            lines.append(f"DCGM_FI_DEV_SM_CLOCK{{{lab}}} {1980 - 15 * g} {ms}")
            lines.append(f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{lab}}} {1_000_000_000 + 700_000 * 5 * i} {ms}")
    f = tmp_path / "dcgm.prom"
    f.write_text("\n".join(lines) + "\n")
    series = {(s.name, s.labels["gpu"]): s for s in read_measured(f)}
    temp = series[("DCGM_FI_DEV_GPU_TEMP", "1")]
    assert temp.labels["modelName"] == "NVIDIA H100 80GB HBM3"
    np.testing.assert_array_equal(temp.values, [61 + i % 3 for i in range(20)])
    np.testing.assert_array_equal(temp.t_ns, (T0 + 5 * np.arange(20)) * NS)
    clock = series[("DCGM_FI_DEV_SM_CLOCK", "1")]
    assert np.all(clock.values == 1965)
    energy = check_series(series[("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0")])
    assert energy.kind == "counter"
    from twin.telemetry.series import counter_rate
    energy.unit = "mJ"
    power = counter_rate(energy)   # 700 J/s in mJ steps -> 700 W
    assert power.unit == "W"
    np.testing.assert_allclose(power.values, 700.0)


def test_openmetrics_seconds_units_counters_and_escapes(tmp_path):
    text = "\n".join([
        "# TYPE facility_energy_joules counter",
        "# UNIT facility_energy_joules joules",
        "# HELP facility_energy_joules Utility meter energy.",
        *[f'facility_energy_joules_total{{meter="utility",site="a \\"b\\""}} {1e12 + 2.5e6 * 60 * i} {T0 + 60 * i}.0'
          for i in range(10)],
        'facility_energy_joules_created{meter="utility",site="a \\"b\\""} 1.7e9',
        "# TYPE rack_inlet_celsius gauge",
        "# UNIT rack_inlet_celsius celsius",
        *[f'rack_inlet_celsius{{rack="r1-01"}} {21.5 + 0.1 * i} {T0 + 60 * i}.5' for i in range(10)],
        "# EOF"])
    f = tmp_path / "site.om"
    f.write_text(text + "\n")
    series = {s.name: s for s in read_measured(f)}
    e = series["facility_energy_joules_total"]
    assert e.kind == "counter" and e.unit == "joules"
    assert e.labels == {"meter": "utility", "site": 'a "b"'}
    t = series["rack_inlet_celsius"]
    np.testing.assert_array_equal(t.t_ns, (T0 + 60 * np.arange(10)) * NS + NS // 2)
    assert t.unit == "celsius"
    np.testing.assert_allclose(convert(t.values, t.unit, "degC"), 21.5 + 0.1 * np.arange(10))


def _ipmi_block(when: str, watts: int) -> str:
    return (f"\n    Instantaneous power reading:                  {watts} Watts\n"
            f"    Minimum during sampling period:                {watts - 400} Watts\n"
            f"    Maximum during sampling period:               {watts + 300} Watts\n"
            f"    Average power reading over sample period:     {watts - 20} Watts\n"
            f"    IPMI timestamp:                           {when}\n"
            "    Sampling period:                          00000001 Seconds.\n"
            "    Power reading state is:                   activated\n\n")


def test_ipmi_dcmi_power_reading_log_in_local_time(tmp_path):
    import datetime as dt
    start = dt.datetime(2025, 1, 6, 1, 0, 0)   # 01:00 in Zurich = 00:00 UTC
    blocks = [_ipmi_block((start + dt.timedelta(seconds=60 * i)).strftime("%a %b %d %H:%M:%S %Y"), 7800 + i)
              for i in range(12)]
    f = tmp_path / "gpu-node-001.ipmi.log"
    f.write_text("".join(blocks))
    (s,) = read_measured(f, timezone="Europe/Zurich")
    assert s.name == "ipmi_dcmi_power_reading" and s.labels == {"host": "gpu-node-001"}
    assert s.unit == "Watts"
    np.testing.assert_array_equal(s.values, 7800 + np.arange(12))
    np.testing.assert_array_equal(s.t_ns, (T0 + 60 * np.arange(12)) * NS)


def test_redfish_metric_reports_json_lines(tmp_path):
    reports = []
    for i in range(6):
        ts = f"2025-01-06T0{i}:00:00+00:00"
        reports.append({
            "@odata.id": "/redfish/v1/TelemetryService/MetricReports/PowerMetrics",
            "@odata.type": "#MetricReport.v1_4_2.MetricReport", "Id": "PowerMetrics",
            "MetricValues": [
                {"MetricId": "SystemPowerConsumption", "MetricValue": str(8000 + 10 * i), "Timestamp": ts,
                 "MetricProperty": "/redfish/v1/Chassis/System.Embedded.1/Power#/PowerControl/0/PowerConsumedWatts"},
                {"MetricId": "InletTemp", "MetricValue": str(22 + i), "Timestamp": ts,
                 "MetricProperty": "/redfish/v1/Chassis/System.Embedded.1/Sensors/InletTemp#/ReadingCelsius"}]})
    f = tmp_path / "gpu-node-002.redfish.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in reports) + "\n")
    series = {s.name: s for s in read_measured(f)}
    p = series["SystemPowerConsumption"]
    assert p.unit == "W" and p.labels["host"] == "gpu-node-002" and p.labels["chassis"] == "System.Embedded.1"
    np.testing.assert_array_equal(p.values, 8000 + 10 * np.arange(6))
    np.testing.assert_array_equal(p.t_ns, (T0 + 3600 * np.arange(6)) * NS)
    assert series["InletTemp"].unit == "degC"


def test_meter_csv_units_in_brackets_suffixes_offsets_and_labels(tmp_path):
    rows = ["timestamp,feed,feed_power [kW],outdoor_temp_c"]
    for i in range(8):
        # the meter writes local time with its offset; a DST-free winter day in Zurich
        rows.append(f"2025-01-06T{1 + i:02d}:00:00+01:00,A,{800 + i},{-2 + 0.5 * i}")
        rows.append(f"2025-01-06T{1 + i:02d}:00:00+01:00,B,{790 + i},{-2 + 0.5 * i}")
    f = tmp_path / "meter.csv"
    f.write_text("\n".join(rows) + "\n")
    series = {(s.name, s.labels["feed"]): s for s in read_measured(f)}
    a = series[("feed_power", "A")]
    assert a.unit == "kW"
    np.testing.assert_array_equal(a.t_ns, (T0 + 3600 * np.arange(8)) * NS)
    np.testing.assert_array_equal(convert(a.values, a.unit, "W"), (800 + np.arange(8)) * 1e3)
    assert series[("outdoor_temp_c", "B")].unit == "degC"


def test_meter_csv_naive_local_time_and_epoch_seconds(tmp_path):
    f = tmp_path / "naive.csv"
    f.write_text("timestamp,facility_total_power_w\n2025-07-01 02:00:00,1.5e6\n2025-07-01 02:15:00,1.6e6\n"
                 "2025-07-01 02:30:00,1.7e6\n")
    (s,) = read_measured(f, timezone="America/New_York")   # EDT = UTC-4
    assert str(np.datetime64(int(s.t_ns[0]), "ns")) .startswith("2025-07-01T06:00:00")
    g = tmp_path / "epoch.csv"
    g.write_text("timestamp,facility_total_power_w\n1736121600,1\n1736121615,2\n1736121630,3\n")
    (e,) = read_measured(g)
    np.testing.assert_array_equal(e.t_ns, (T0 + 15 * np.arange(3)) * NS)


def test_units_convert_exactly_and_mismatch_is_an_error():
    assert convert(np.array([1.5]), "kW", "W")[0] == 1500.0
    assert convert(np.array([300.15]), "K", "degC")[0] == pytest.approx(27.0)
    assert convert(np.array([80.6]), "degF", "degC")[0] == pytest.approx(27.0)
    assert convert(np.array([45.0]), "percent", "1")[0] == pytest.approx(0.45)
    assert convert(np.array([1.0]), "mW", "W")[0] == 1e-3
    assert convert(np.array([1.0]), "MW", "W")[0] == 1e6
    with pytest.raises(ValueError, match="mismatch"):
        convert(np.array([1.0]), "W", "degC")
    with pytest.raises(ValueError, match="unknown unit"):
        convert(np.array([1.0]), "furlongs", "W")


def test_fast_and_line_by_line_exposition_readers_agree(tmp_path):
    """The vectorised reader and the line reader (taken when a label value holds a space)
    return the same series; a sample without a timestamp is an error naming its line."""
    from twin.telemetry.ingest import _parse_exposition_fast, parse_exposition
    body = "".join(f'node_power_watts{{host="n{h}",room="hall 1"}} {7000.5 + h + i} {T0 + 15 * i}.0\n'
                   for h in range(3) for i in range(50)) + "# EOF\n"
    slow = parse_exposition(body, "a.om")
    assert _parse_exposition_fast(body, "a.om", NS) is None          # the space sends it to the line reader
    fast = _parse_exposition_fast(body.replace("hall 1", "hall_1"), "b.om", NS)
    assert len(slow) == len(fast) == 3
    for s, f in zip(sorted(slow, key=lambda x: x.labels["host"]), sorted(fast, key=lambda x: x.labels["host"]),
                    strict=True):
        np.testing.assert_array_equal(s.values, f.values)
        np.testing.assert_array_equal(s.t_ns, f.t_ns)
        assert s.labels["room"] == "hall 1" and f.labels["room"] == "hall_1"
    with pytest.raises(ValueError, match=r"c\.prom: series node_power_watts: line 2: sample without a timestamp"):
        parse_exposition('node_power_watts{host="n1"} 1 1736121600000\nnode_power_watts{host="n1"} 2\n', "c.prom")
