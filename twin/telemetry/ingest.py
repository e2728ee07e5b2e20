"""Readers of measured telemetry. Each returns a list of :class:`~twin.telemetry.series.Series`.

Formats:

* Prometheus HTTP API ``query_range`` response (JSON, ``resultType: matrix``);
* Prometheus text exposition (0.0.4) and OpenMetrics 1.0 text, with timestamps on every
  sample (ms in Prometheus text, s in OpenMetrics); dcgm-exporter metrics
  (``DCGM_FI_DEV_POWER_USAGE``, ``DCGM_FI_DEV_GPU_TEMP``, ...) come in either form;
* IPMI DCMI power readings: a log of ``ipmitool dcmi power reading`` outputs, one file
  per host (the host is the file name up to its first dot);
* Redfish ``MetricReport`` resources (JSON, or one report per line), the Redfish
  telemetry service's way of publishing timed readings (``MetricValues[].Timestamp``);
* plain meter CSV: a ``timestamp`` column (ISO 8601, with or without an offset, or epoch
  seconds), one column per variable in SI units (``facility_total_power_w``) or with the unit
  in brackets (``facility_total_power [kW]``, which ``twin compare`` matches to
  ``facility_total_power_w`` in W), and optional text columns as labels (``rack``, ``feed``).

Times are UTC: naive timestamps are read in ``timezone`` (an IANA name, default UTC).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from twin.telemetry.series import NS, Series, TelemetryError

FORMATS = ("prometheus-json", "exposition", "ipmi", "redfish", "csv")


# --------------------------------------------------------------------------- dispatch
def sniff_format(path: Path, head: str) -> str:
    """The format of a measured file from its name and first characters."""
    suffix = path.suffix.lower()
    text = head.lstrip()
    if suffix == ".csv":
        return "csv"
    if text.startswith("{") or text.startswith("["):
        if '"MetricValues"' in head or "MetricReport" in head:
            return "redfish"
        return "prometheus-json"
    if "Instantaneous power reading" in head:
        return "ipmi"
    return "exposition"


def read_measured(path: str | Path, *, timezone: str = "UTC", fmt: str | None = None) -> list[Series]:
    """Read one measured file of any supported format (sniffed unless ``fmt`` is given)."""
    p = Path(path)
    if not p.is_file():
        raise TelemetryError(str(p), "", "no such file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TelemetryError(str(p), "", f"not UTF-8 text ({exc.reason})") from None
    kind = fmt or sniff_format(p, text[:4096])
    if kind not in FORMATS:
        raise TelemetryError(str(p), "", f"unknown format {kind!r}; one of {', '.join(FORMATS)}")
    if kind == "ipmi":
        series = parse_ipmi_dcmi(text, str(p), timezone=timezone)
    elif kind == "csv":
        series = parse_meter_csv(text, str(p), timezone=timezone)
    elif kind == "prometheus-json":
        series = parse_prometheus_json(text, str(p))
    elif kind == "redfish":
        series = parse_redfish_metric_reports(text, str(p))
    else:
        series = parse_exposition(text, str(p))
    if not series:
        raise TelemetryError(str(p), "", f"no series found (read as {kind})")
    return series


def _to_ns(times, source: str, series: str, timezone: str = "UTC") -> np.ndarray:
    """Timestamps (strings with or without offsets, or datetimes) -> epoch ns UTC."""
    try:
        idx = pd.DatetimeIndex(pd.to_datetime(pd.Series(times), format="ISO8601", utc=False))
    except (ValueError, TypeError):
        try:
            idx = pd.DatetimeIndex(pd.to_datetime(pd.Series(times), utc=True, format="mixed"))
        except (ValueError, TypeError) as exc:
            raise TelemetryError(source, series, f"unreadable timestamp ({exc})") from None
    if idx.tz is None:
        try:
            idx = idx.tz_localize(timezone, ambiguous="raise", nonexistent="raise")
        except Exception as exc:   # pytz/zoneinfo errors differ by version
            raise TelemetryError(source, series, f"local time not valid in {timezone} ({exc}); "
                                                 "write timestamps with a UTC offset") from None
    return idx.tz_convert("UTC").as_unit("ns").asi8.astype(np.int64)


# --------------------------------------------------------------------------- Prometheus JSON
def parse_prometheus_json(text: str, source: str) -> list[Series]:
    """A Prometheus ``/api/v1/query_range`` response: one series per ``result`` entry.

    Values are strings (``"NaN"`` included, which the checks then reject); times are
    float seconds.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TelemetryError(source, "", f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(doc, dict) and doc.get("status") == "error":
        raise TelemetryError(source, "", f"Prometheus reported an error: {doc.get('errorType', '')} "
                                         f"{doc.get('error', '')}")
    if not isinstance(doc, dict) or "data" not in doc:
        raise TelemetryError(source, "", "not a Prometheus API response (no 'data')")
    data = doc["data"]
    if data.get("resultType") != "matrix":
        raise TelemetryError(source, "", f"resultType {data.get('resultType')!r}; a query_range "
                                         "response (matrix) is needed")
    out = []
    for r in data.get("result", []):
        labels = {str(k): str(v) for k, v in r.get("metric", {}).items()}
        name = labels.pop("__name__", "") or "(expression)"
        vals = r.get("values", [])
        t = np.array([float(x[0]) for x in vals], dtype=float)
        v = np.array([float(x[1]) for x in vals], dtype=float)
        out.append(Series(source, name, labels, np.round(t * NS).astype(np.int64), v))
    return out


# --------------------------------------------------------------------------- exposition text
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _labels(body: str, source: str, lineno: int) -> dict[str, str]:
    inner = body[1:-1]
    out, pos = {}, 0
    while pos < len(inner):
        m = _LABEL.match(inner, pos)
        if not m:
            raise TelemetryError(source, "", f"line {lineno}: bad label set {body!r}")
        out[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pos = m.end()
    return out


def parse_exposition(text: str, source: str) -> list[Series]:
    """Prometheus text (0.0.4) or OpenMetrics 1.0 with a timestamp on every sample.

    OpenMetrics is recognised by its ``# EOF`` line: its timestamps are seconds; plain
    Prometheus text has integer milliseconds. ``# TYPE`` sets gauge/counter, ``# UNIT``
    the unit; ``_created`` samples of counters are skipped.
    """
    lines = text.splitlines()
    om = any(ln.strip() == "# EOF" for ln in lines[-3:])
    ts_scale = NS if om else 1_000_000
    fast = _parse_exposition_fast(text, source, ts_scale)
    if fast is not None:
        return fast
    types: dict[str, str] = {}
    units: dict[str, str] = {}
    acc: dict[tuple[str, str], tuple[list, list]] = {}
    labels_of: dict[tuple[str, str], dict[str, str]] = {}
    for no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line == "# EOF":
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3].strip()
            elif len(parts) >= 4 and parts[1] == "UNIT":
                units[parts[2]] = parts[3].strip()
            continue
        brace = line.find("{")
        close = line.rfind("}")
        if brace > 0 and close > brace:
            name, body, rest = line[:brace], line[brace:close + 1], line[close + 1:].split()
        else:
            name, *rest = line.split()
            body = ""
        rest = [x for x in rest[:2] if not x.startswith("#")] if rest and not rest[0].startswith("#") else []
        if not rest or not _NAME.match(name):
            raise TelemetryError(source, "", f"line {no}: not a sample line: {line[:80]!r}")
        value, ts = rest[0], (rest[1] if len(rest) > 1 else None)
        if name.endswith("_created") and types.get(name[:-8]) == "counter":
            continue
        if ts is None:
            raise TelemetryError(source, name, f"line {no}: sample without a timestamp; a scrape "
                                               "needs its time (export with timestamps or query_range)")
        key = (name, body)
        if key not in acc:
            acc[key] = ([], [])
            labels_of[key] = _labels(body, source, no) if body else {}
        t_list, v_list = acc[key]
        try:
            t_list.append(float(ts))
            v_list.append(float(value))
        except ValueError:
            raise TelemetryError(source, name, f"line {no}: bad number in {line[:80]!r}") from None
    out = []
    for (name, body), (t, v) in acc.items():
        family = name[:-6] if name.endswith("_total") and name[:-6] in types else name
        kind = "counter" if types.get(family) == "counter" else "gauge"
        t_ns = np.round(np.asarray(t) * ts_scale).astype(np.int64)
        out.append(Series(source, name, labels_of[(name, body)], t_ns, np.asarray(v, float),
                          units.get(family), kind))
    return out


def _parse_exposition_fast(text: str, source: str, ts_scale: int) -> list[Series] | None:
    """Vectorised reading of well-formed exposition text (every sample ``head value ts``, no
    spaces inside label values, no exemplars) with pandas' C parser; None when anything is
    irregular, so that the line-by-line reader names the line."""
    import csv
    from io import StringIO
    try:
        df = pd.read_csv(StringIO(text), sep=" ", header=None, names=["h", "v", "t"], comment="#",
                         quoting=csv.QUOTE_NONE, dtype={"h": str, "v": str}, engine="c",
                         skip_blank_lines=True, skipinitialspace=True)
    except (pd.errors.ParserError, ValueError):
        return None
    if df.empty:
        return None
    ts = pd.to_numeric(df["t"], errors="coerce").to_numpy(float)
    val = pd.to_numeric(df["v"], errors="coerce").to_numpy(float)
    if np.isnan(ts).any():
        return None
    nan = np.isnan(val)
    if nan.any() and (nan & ~df["v"].str.lower().isin(["nan", "+nan", "-nan"]).to_numpy()).any():
        return None
    head = df["h"]
    types: dict[str, str] = {}
    units: dict[str, str] = {}
    for line in (ln for ln in text.splitlines() if ln.startswith("#")):
        p = line.split(None, 3)
        if len(p) >= 4 and p[1] in ("TYPE", "UNIT"):
            (types if p[1] == "TYPE" else units)[p[2]] = p[3].strip()
    codes, uniques = pd.factorize(head, sort=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    t_ns = np.round(ts * ts_scale).astype(np.int64)
    out = []
    for k, h in enumerate(uniques):
        brace = h.find("{")
        name, body = (h[:brace], h[brace:]) if brace > 0 else (h, "")
        if not _NAME.match(name):
            return None
        if name.endswith("_created") and types.get(name[:-8]) == "counter":
            continue
        idx = order[bounds[k]:bounds[k + 1]]
        family = name[:-6] if name.endswith("_total") and name[:-6] in types else name
        kind = "counter" if types.get(family) == "counter" else "gauge"
        out.append(Series(source, name, _labels(body, source, 0) if body else {}, t_ns[idx], val[idx],
                          units.get(family), kind))
    return out


# --------------------------------------------------------------------------- IPMI
_IPMI_POWER = re.compile(r"Instantaneous power reading:\s*([-+0-9.eE]+)\s*(\w+)")
_IPMI_TIME = re.compile(r"IPMI timestamp:\s*(.+?)\s*$", re.M)


def parse_ipmi_dcmi(text: str, source: str, *, timezone: str = "UTC") -> list[Series]:
    """A log of ``ipmitool dcmi power reading`` outputs (one block per reading).

    Each block gives ``Instantaneous power reading: N Watts`` and the BMC's
    ``IPMI timestamp`` (``Thu Feb 10 15:10:47 2022``, read in ``timezone``). The series is
    ``ipmi_dcmi_power_reading`` with the label ``host`` (the file name up to its first dot).
    """
    host = Path(source).name.split(".")[0]
    blocks = re.split(r"\n\s*\n", text.strip())
    t_str, vals, unit = [], [], None
    for b in blocks:
        pm, tm = _IPMI_POWER.search(b), _IPMI_TIME.search(b)
        if not pm:
            continue
        if not tm:
            raise TelemetryError(source, "ipmi_dcmi_power_reading", f"reading {pm.group(0)!r} without an IPMI timestamp")
        vals.append(float(pm.group(1)))
        u = pm.group(2)
        if unit is not None and u != unit:
            raise TelemetryError(source, "ipmi_dcmi_power_reading", f"mixed units {unit!r} and {u!r}")
        unit = u
        t_str.append(tm.group(1))
    if not vals:
        return []
    try:
        times = pd.to_datetime(pd.Series(t_str), format="%a %b %d %H:%M:%S %Y")
    except ValueError as exc:
        raise TelemetryError(source, "ipmi_dcmi_power_reading", f"unreadable IPMI timestamp ({exc})") from None
    t_ns = _to_ns(times, source, "ipmi_dcmi_power_reading", timezone)
    return [Series(source, "ipmi_dcmi_power_reading", {"host": host}, t_ns, np.asarray(vals, float), unit)]


# --------------------------------------------------------------------------- Redfish
def _redfish_unit(prop: str) -> str | None:
    if "Watts" in prop or prop.endswith("/Power") or "PowerWatts" in prop:
        return "W"
    if "Celsius" in prop or "Temperature" in prop:
        return "degC"
    if "Percent" in prop:
        return "percent"
    if "RPM" in prop:
        return None
    return None


def parse_redfish_metric_reports(text: str, source: str) -> list[Series]:
    """Redfish ``MetricReport`` resources: a JSON report, a JSON list, or one per line.

    Every ``MetricValues`` entry (``MetricId``, ``MetricValue``, ``Timestamp``,
    ``MetricProperty``) is a sample of the series ``MetricId`` with labels ``host`` (the
    file name up to its first dot), ``chassis`` (from the property's URI) and ``property``.
    The unit comes from the property (``PowerConsumedWatts``, ``ReadingCelsius``).
    """
    stripped = text.strip()
    try:
        if stripped.startswith("["):
            reports = json.loads(stripped)
        elif "\n{" in stripped:
            reports = [json.loads(ln) for ln in stripped.splitlines() if ln.strip()]
        else:
            reports = [json.loads(stripped)]
    except json.JSONDecodeError as exc:
        raise TelemetryError(source, "", f"not JSON ({exc.msg} at line {exc.lineno})") from None
    host = Path(source).name.split(".")[0]
    acc: dict[tuple, tuple[list, list]] = {}
    for rep in reports:
        if "MetricValues" not in rep:
            raise TelemetryError(source, "", f"a Redfish MetricReport needs MetricValues "
                                             f"(got keys {sorted(rep)[:6]})")
        for mv in rep["MetricValues"]:
            prop = mv.get("MetricProperty", "")
            chassis = re.search(r"/Chassis/([^/]+)", prop)
            labels = {"host": host, "property": prop.split("#")[-1]}
            if chassis:
                labels["chassis"] = chassis.group(1)
            key = (mv.get("MetricId", "redfish"), tuple(sorted(labels.items())), _redfish_unit(prop))
            t_list, v_list = acc.setdefault(key, ([], []))
            if "Timestamp" not in mv:
                raise TelemetryError(source, key[0], "MetricValue without a Timestamp")
            t_list.append(mv["Timestamp"])
            try:
                v_list.append(float(mv.get("MetricValue")))
            except (TypeError, ValueError):
                raise TelemetryError(source, key[0], f"MetricValue {mv.get('MetricValue')!r} "
                                                     f"at {mv['Timestamp']} is not a number") from None
    out = []
    for (name, items, unit), (t, v) in acc.items():
        out.append(Series(source, name, dict(items), _to_ns(t, source, name), np.asarray(v, float), unit))
    return out


# --------------------------------------------------------------------------- meter CSV
_BRACKET = re.compile(r"^\s*(.*?)\s*\[(.+)\]\s*$")


def parse_meter_csv(text: str, source: str, *, timezone: str = "UTC") -> list[Series]:
    """A meter CSV: ``timestamp`` and one numeric column per variable.

    The unit is in brackets (``feed_power [kW]``: the series ``feed_power`` in kW, which the
    default mapping gives to the run's ``feed_power_w``, :func:`twin.telemetry.mapping.apply_mapping`)
    or in the SI suffix of the name (``_w``, ``_c``); text columns are labels (one series per
    distinct label set). Empty
    cells are NaN (rejected by the checks; a meter that skipped a reading leaves no row).
    """
    from io import StringIO

    from twin.telemetry.series import unit_of_name
    try:
        df = pd.read_csv(StringIO(text), skipinitialspace=True, comment="#")
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TelemetryError(source, "", f"not a CSV ({exc})") from None
    tcol = next((c for c in df.columns if str(c).strip().lower() in ("timestamp", "time", "datetime")), None)
    if tcol is None:
        raise TelemetryError(source, "", f"no 'timestamp' column (columns: {list(df.columns)})")
    if pd.api.types.is_numeric_dtype(df[tcol]):
        t_all = np.round(df[tcol].to_numpy(float) * NS).astype(np.int64)
    else:
        t_all = _to_ns(df[tcol].astype(str), source, str(tcol), timezone)
    label_cols = [c for c in df.columns if c != tcol and not pd.api.types.is_numeric_dtype(df[c])
                  and pd.to_numeric(df[c], errors="coerce").isna().all()]
    value_cols = [c for c in df.columns if c != tcol and c not in label_cols]
    groups = df.groupby(label_cols, sort=False).indices if label_cols else {(): np.arange(len(df))}
    out = []
    for gkey, rows in groups.items():
        gkey = gkey if isinstance(gkey, tuple) else (gkey,)
        labels = {str(c): str(v) for c, v in zip(label_cols, gkey, strict=True)}
        for col in value_cols:
            m = _BRACKET.match(str(col))
            name, unit = (m.group(1), m.group(2)) if m else (str(col).strip(), unit_of_name(str(col).strip()))
            vals = pd.to_numeric(df[col].iloc[rows], errors="coerce").to_numpy(float)
            out.append(Series(source, name, labels, t_all[rows], vals, unit))
    return out
