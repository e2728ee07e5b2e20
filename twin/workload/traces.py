"""Scheduler-trace parsers: Acme/Helios CSV, Slurm ``sacct --parsable2``, LSF ``bacct -l``.

Every parser returns a :class:`Trace`: a job table with the canonical columns
:data:`TRACE_COLUMNS` (times in seconds from the trace's epoch, the first submit unless
told otherwise) and a report of the rows that could not be used (counted per reason,
never silently dropped). Bad input raises :class:`TraceError` (a
:class:`twin.errors.ScenarioError`, so the CLI exits 2) listing every problem with the
file, line and column: unparseable dates, negative durations, more GPUs than the cluster
has, unknown states, missing columns.

Canonical states: ``completed``, ``failed`` (including timeouts, node failures, out of
memory), ``cancelled``, ``preempted``.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from twin.errors import Problem, ScenarioError

TRACE_COLUMNS = ("job_id", "user", "project", "queue", "job_class", "nodes", "gpus", "state",
                 "submit_s", "start_s", "end_s", "duration_s")
FORMATS = ("acme", "helios", "slurm_sacct", "lsf_bacct")
MAX_PROBLEMS = 20

# Acme/Helios/Slurm states -> canonical. Slurm prints "CANCELLED by <uid>".
STATE_MAP = {
    "COMPLETED": "completed", "DONE": "completed",
    "FAILED": "failed", "TIMEOUT": "failed", "NODE_FAIL": "failed", "OUT_OF_MEMORY": "failed",
    "BOOT_FAIL": "failed", "DEADLINE": "failed", "EXIT": "failed",
    "CANCELLED": "cancelled",
    "PREEMPTED": "preempted",
}
UNFINISHED_STATES = {"RUNNING", "PENDING", "REQUEUED", "RESIZING", "SUSPENDED", "REQUEUE_HOLD",
                     "REQUEUE_FED", "REVOKED", "SIGNALING", "STAGE_OUT", "STOPPED"}


class TraceError(ScenarioError):
    """A trace that cannot be read; carries every problem (file, line and column)."""


@dataclass
class Trace:
    """A parsed trace: ``jobs`` (columns :data:`TRACE_COLUMNS`), its ``epoch`` (UTC time of
    ``t = 0``), the rows read and the rows skipped per reason."""

    jobs: pd.DataFrame
    epoch: pd.Timestamp
    path: str
    format: str
    rows_read: int
    skipped: dict[str, int] = field(default_factory=dict)

    def report(self) -> str:
        """One line: rows read, jobs kept, rows skipped per reason."""
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()) if n) or "none"
        return (f"{self.path}: {self.rows_read} rows read, {len(self.jobs)} jobs kept; "
                f"skipped: {skipped}")


class _Problems:
    def __init__(self, path: str):
        self.path = path
        self.items: list[Problem] = []
        self.total = 0

    def add(self, line: int | None, column: int | None, name: str, value: object, expected: str) -> None:
        self.total += 1
        if len(self.items) < MAX_PROBLEMS:
            where = f"line {line}" if line is not None else ""
            if column is not None:
                where += f", column {column}"
            where += f" ({name})" if name else ""
            self.items.append(Problem(self.path, where.strip(", "), value, expected))

    def raise_if_any(self) -> None:
        if self.items:
            if self.total > len(self.items):
                self.items.append(Problem(self.path, "", f"{self.total - len(self.items)} more",
                                          "no further problems (only the first 20 are listed)"))
            raise TraceError(self.items)


# --------------------------------------------------------------------------- shared checks
def _canonical_state(raw: pd.Series) -> pd.Series:
    base = raw.astype(str).str.strip().str.upper().str.split(" ", n=1).str[0]
    return base


def _finish(frame: pd.DataFrame, *, problems: _Problems, lines: np.ndarray, cols: dict[str, int],
            raw_state: pd.Series, cluster_gpus: int | None, cpu_jobs: str, epoch: pd.Timestamp | None,
            path: str, fmt: str, rows_read: int, skipped: dict[str, int],
            field_lines: dict[str, np.ndarray] | None = None) -> Trace:
    """Validate the common columns (times as UTC timestamps, gpus, nodes), then build the
    canonical table. ``lines``: the file line of each row (``field_lines``: of a field, when
    a record spans lines); ``cols``: column numbers."""
    field_lines = field_lines or {}
    at = lambda name, i: int(field_lines.get(name, lines)[i])  # noqa: E731
    state_key = _canonical_state(raw_state)
    unfinished = state_key.isin(UNFINISHED_STATES).to_numpy()
    known = state_key.isin(list(STATE_MAP)).to_numpy()
    for i in np.flatnonzero(~known & ~unfinished):
        problems.add(at("state", i), cols.get("state"), "state", raw_state.iloc[i],
                     f"one of {sorted(STATE_MAP)} (or a state of an unfinished job)")
    submit, start, end = frame["submit"], frame["start"], frame["end"]
    never_started = (start.isna() & ~frame["start_bad"]).to_numpy()
    for name in ("submit", "start", "end"):
        for i in np.flatnonzero(frame[f"{name}_bad"].to_numpy()):
            problems.add(at(name, i), cols.get(name), name, frame[f"{name}_raw"].iloc[i],
                         "a date and time (ISO 8601, e.g. 2023-03-01T08:00:00+08:00)")
    gpus = frame["gpus"].to_numpy()
    nodes = frame["nodes"].to_numpy()
    for name, arr in (("gpus", gpus), ("nodes", nodes)):
        for i in np.flatnonzero(~np.isfinite(arr) | (arr < 0) | (arr != np.round(arr))):
            problems.add(at(name, i), cols.get(name), name, frame[f"{name}_raw"].iloc[i],
                         "a whole number >= 0")
    if cluster_gpus is not None:
        for i in np.flatnonzero(gpus > cluster_gpus):
            problems.add(at("gpus", i), cols.get("gpus"), "gpus", int(gpus[i]),
                         f"at most the cluster's {cluster_gpus} GPUs")
    dur = (end - start).dt.total_seconds().to_numpy()
    for i in np.flatnonzero(dur < 0):
        problems.add(at("end", i), cols.get("end"), "end", frame["end_raw"].iloc[i],
                     f"an end not before the start ({frame['start_raw'].iloc[i]}): negative duration")
    if "duration" in frame:
        d = frame["duration"].to_numpy()
        for i in np.flatnonzero(d < 0):
            problems.add(at("duration", i), cols.get("duration"), "duration", frame["duration_raw"].iloc[i],
                         "a duration >= 0 s")
    wait = (start - submit).dt.total_seconds().to_numpy()
    for i in np.flatnonzero(wait < 0):
        problems.add(at("start", i), cols.get("start"), "start", frame["start_raw"].iloc[i],
                     f"a start not before the submit ({frame['submit_raw'].iloc[i]}): negative queue wait")
    cpu_only = (gpus == 0)
    if cpu_jobs == "error":
        for i in np.flatnonzero(cpu_only & ~unfinished & ~never_started):
            problems.add(at("gpus", i), cols.get("gpus"), "gpus", 0, "a GPU job (cpu_jobs: error)")
    problems.raise_if_any()

    no_end = end.isna().to_numpy() & ~never_started
    drop = {
        "unfinished (still running or pending)": unfinished | (no_end & ~unfinished),
        "never started (cancelled in the queue)": never_started & ~unfinished,
        "CPU-only (zero GPUs)": cpu_only,
    }
    keep = np.ones(len(frame), bool)
    for why, mask in drop.items():
        m = mask & keep
        skipped[why] = skipped.get(why, 0) + int(m.sum())
        keep &= ~m
    f = frame.loc[keep]
    if epoch is None:
        epoch = submit[keep].min() if keep.any() else pd.Timestamp(0, tz="UTC")
    sec = lambda s: (s[keep] - epoch).dt.total_seconds().to_numpy()  # noqa: E731
    st, en = sec(start), sec(end)
    jobs = pd.DataFrame({
        "job_id": f["job_id"].astype(str).to_numpy(),
        "user": f["user"].astype(str).to_numpy() if "user" in f else "",
        "project": f["project"].astype(str).to_numpy() if "project" in f else "",
        "queue": f["queue"].astype(str).to_numpy() if "queue" in f else "",
        "job_class": f["job_class"].astype(str).to_numpy() if "job_class" in f else "",
        "nodes": nodes[keep].astype(np.int64),
        "gpus": gpus[keep].astype(np.int64),
        "state": state_key[keep].map(STATE_MAP).to_numpy(),
        "submit_s": sec(submit), "start_s": st, "end_s": en, "duration_s": en - st,
    })
    jobs = jobs.sort_values(["submit_s", "job_id"], kind="stable").reset_index(drop=True)
    return Trace(jobs, epoch, path, fmt, rows_read, skipped)


def _dates(raw: pd.Series, tz: str, missing: tuple[str, ...] = ("", "Unknown", "None")) -> tuple[pd.Series, pd.Series]:
    """Parse ISO dates (with or without offset; without: in ``tz``) to UTC.
    Returns (timestamps with NaT for missing, mask of unparseable)."""
    s = raw.fillna("").astype(str).str.strip()
    empty = s.isin(missing)
    has_offset = s.str.contains(r"(?:[+-]\d\d:?\d\d|Z)$", regex=True)
    out = pd.Series(pd.NaT, index=s.index, dtype="datetime64[ns, UTC]")
    for mask, kw in ((has_offset & ~empty, {}), (~has_offset & ~empty, {"tz": tz})):
        if mask.any():
            parsed = pd.to_datetime(s[mask], errors="coerce", format="ISO8601", utc=not kw)
            if kw:
                parsed = parsed.dt.tz_localize(kw["tz"], ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC")
            out[mask] = parsed
    bad = out.isna() & ~empty
    return out, bad


def _numbers(raw: pd.Series) -> pd.Series:
    return pd.to_numeric(raw.fillna("").astype(str).str.strip(), errors="coerce")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError([Problem(str(path), "", str(path), "an existing trace file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError([Problem(str(path), "", str(path), f"a readable UTF-8 file ({exc})")]) from None


def _missing_columns(problems: _Problems, header: list[str], needed: dict[str, tuple[str, ...]]) -> None:
    for name, options in needed.items():
        if not any(o in header for o in options):
            problems.add(1, None, "header", header, f"a column {' or '.join(options)} ({name})")
    problems.raise_if_any()


# --------------------------------------------------------------------------- Acme / Helios CSV
ACME_REQUIRED = ("job_id", "user", "node_num", "gpu_num", "state", "submit_time", "start_time",
                 "end_time", "duration")


def read_acme_csv(path: str | Path, *, cluster_gpus: int | None = None, cpu_jobs: str = "skip",
                  tz: str = "UTC", epoch: pd.Timestamp | None = None, fmt: str = "acme") -> Trace:
    """Read an Acme (Hu et al., NSDI '24) or Helios (Hu et al., SC '21) job trace CSV.

    Required columns :data:`ACME_REQUIRED`; ``type`` (the LLM-development stage) becomes
    ``job_class``, ``queue`` is kept. Dates are ISO 8601; without an offset they are read
    in ``tz``. ``cpu_jobs``: ``skip`` (count zero-GPU rows as skipped) or ``error``.
    """
    path = Path(path)
    shown = str(path)
    problems = _Problems(shown)
    text = _read_text(path)
    try:
        raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TraceError([Problem(shown, "", str(exc).splitlines()[0] if str(exc) else "empty", "a CSV file")]) from None
    header = list(raw.columns)
    _missing_columns(problems, header, {c: (c,) for c in ACME_REQUIRED})
    raw = raw[~(raw == "").all(axis=1)] if len(raw) else raw
    lines = raw.index.to_numpy() + 2
    cols = {k: header.index(c) + 1 for k, c in (
        ("submit", "submit_time"), ("start", "start_time"), ("end", "end_time"), ("gpus", "gpu_num"),
        ("nodes", "node_num"), ("state", "state"), ("duration", "duration"))}
    frame = pd.DataFrame({"job_id": raw["job_id"], "user": raw["user"]})
    for k, c in (("submit", "submit_time"), ("start", "start_time"), ("end", "end_time")):
        frame[k], frame[f"{k}_bad"] = _dates(raw[c], tz)
        frame[f"{k}_raw"] = raw[c]
    for k, c in (("gpus", "gpu_num"), ("nodes", "node_num"), ("duration", "duration")):
        frame[k], frame[f"{k}_raw"] = _numbers(raw[c]), raw[c]
    frame["duration"] = frame["duration"].fillna(0.0)
    if "type" in raw:
        frame["job_class"] = raw["type"]
    if "queue" in raw and not _numbers(raw["queue"]).notna().all():
        frame["queue"] = raw["queue"]            # Acme's `queue` is the wait in seconds; Helios' a name
    return _finish(frame, problems=problems, lines=lines, cols=cols, raw_state=raw["state"],
                   cluster_gpus=cluster_gpus, cpu_jobs=cpu_jobs, epoch=epoch, path=shown, fmt=fmt,
                   rows_read=len(raw), skipped={})


# --------------------------------------------------------------------------- Slurm sacct --parsable2
SACCT_REQUIRED = {"job id": ("JobID", "JobIDRaw"), "user": ("User",), "state": ("State",),
                  "submit": ("Submit",), "start": ("Start",), "end": ("End",),
                  "nodes": ("NNodes", "AllocNodes"), "GPUs": ("AllocTRES", "AllocGRES", "ReqTRES", "ReqGRES")}
_TRES_GPU = re.compile(r"gres/gpu=(\d+)")
_TRES_GPU_TYPED = re.compile(r"gres/gpu:[^=,]+=(\d+)")
_GRES_GPU = re.compile(r"gpu(?::[^:,()]+)?:(\d+)")


def _gpus_from_tres(s: pd.Series, gres: bool) -> tuple[pd.Series, pd.Series]:
    s = s.fillna("").astype(str)
    if gres:
        n = s.str.extractall(_GRES_GPU)[0].astype(float).groupby(level=0).sum()
    else:
        n = s.str.extract(_TRES_GPU)[0].astype(float)
        typed = s.str.extractall(_TRES_GPU_TYPED)[0].astype(float).groupby(level=0).sum()
        n = n.fillna(typed.reindex(s.index))
    return n.reindex(s.index).fillna(0.0), s


def read_sacct(path: str | Path, *, cluster_gpus: int | None = None, cpu_jobs: str = "skip",
               tz: str = "UTC", epoch: pd.Timestamp | None = None) -> Trace:
    """Read ``sacct --parsable2`` output (``|``-separated with a header line), e.g. from
    ``sacct -a -X --parsable2 --format=JobID,User,Account,Partition,NNodes,AllocTRES,State,
    Submit,Start,End``. GPUs come from ``AllocTRES`` (``gres/gpu=N``; typed entries summed
    when there is no generic one) or ``AllocGRES`` (``gpu:N``). Job-step rows (``123.batch``,
    ``123.0``) are counted and skipped; ``Account`` becomes the project, ``Partition`` the
    queue. Slurm prints local times without an offset: they are read in ``tz``.
    """
    path = Path(path)
    shown = str(path)
    problems = _Problems(shown)
    text = _read_text(path)
    all_lines = text.splitlines()
    if not all_lines:
        raise TraceError([Problem(shown, "line 1", "", "a header line of sacct --parsable2 field names")])
    header = all_lines[0].rstrip("|").split("|")
    _missing_columns(problems, header, SACCT_REQUIRED)
    rows, lines = [], []
    for lineno, line in enumerate(all_lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) == len(header) + 1 and parts[-1] == "":
            parts = parts[:-1]                  # --parsable (trailing |)
        if len(parts) != len(header):
            problems.add(lineno, None, "row", line[:60], f"{len(header)} |-separated fields, got {len(parts)}")
            continue
        rows.append(parts)
        lines.append(lineno)
    problems.raise_if_any()
    raw = pd.DataFrame(rows, columns=header, dtype=str)
    lines_arr = np.array(lines, np.int64)
    pick = lambda opts: next(o for o in opts if o in header)  # noqa: E731
    idc = pick(SACCT_REQUIRED["job id"])
    step = raw[idc].str.contains(".", regex=False).to_numpy()
    skipped = {"job steps (sacct rows of steps, not jobs)": int(step.sum())}
    raw, lines_arr = raw.loc[~step].reset_index(drop=True), lines_arr[~step]
    col = lambda c: header.index(c) + 1  # noqa: E731
    nodes_c, gpu_c = pick(SACCT_REQUIRED["nodes"]), pick(SACCT_REQUIRED["GPUs"])
    cols = {"submit": col("Submit"), "start": col("Start"), "end": col("End"), "state": col("State"),
            "nodes": col(nodes_c), "gpus": col(gpu_c)}
    frame = pd.DataFrame({"job_id": raw[idc], "user": raw["User"]})
    if "Account" in raw:
        frame["project"] = raw["Account"]
    if "Partition" in raw:
        frame["queue"] = raw["Partition"]
    for k, c in (("submit", "Submit"), ("start", "Start"), ("end", "End")):
        frame[k], frame[f"{k}_bad"] = _dates(raw[c], tz)
        frame[f"{k}_raw"] = raw[c]
    frame["nodes"], frame["nodes_raw"] = _numbers(raw[nodes_c]), raw[nodes_c]
    frame["gpus"], frame["gpus_raw"] = _gpus_from_tres(raw[gpu_c], gres="GRES" in gpu_c)
    return _finish(frame, problems=problems, lines=lines_arr, cols=cols, raw_state=raw["State"],
                   cluster_gpus=cluster_gpus, cpu_jobs=cpu_jobs, epoch=epoch, path=shown,
                   fmt="slurm_sacct", rows_read=len(rows), skipped=skipped)


# --------------------------------------------------------------------------- LSF bacct -l
_BACCT_DATE = re.compile(r"^(?P<date>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) +[A-Z][a-z]{2} +\d{1,2} +"
                         r"\d\d:\d\d:\d\d(?: +\d{4})?): +(?P<what>.*)$")
_FIELD = re.compile(r"(\w[\w ]*?) <([^>]*)>")
_GPU_REQ = re.compile(r"Requested GPU <([^>]*)>")
_HOSTS = re.compile(r"Host\(s\) ((?:<[^>]+> *)+)")


def _bacct_records(text: str) -> list[tuple[int, list[tuple[int, str]]]]:
    """Split bacct -l text into job records: (first line, [(line number, joined line)]).
    LSF wraps long lines, continuing them on lines indented by 21 spaces; those are joined."""
    records: list[tuple[int, list[tuple[int, str]]]] = []
    cur: list[tuple[int, str]] | None = None
    for k, line in enumerate(text.splitlines(), start=1):
        if line.startswith("Job <"):
            cur = [(k, line.rstrip("\n"))]
            records.append((k, cur))
        elif cur is None:
            continue
        elif line.startswith("-----") or line.startswith("SUMMARY:"):
            cur = None
        elif line.startswith(" " * 21) and cur and not line.strip().startswith(("CPU_T", "Accounting")):
            ln, prev = cur[-1]
            cur[-1] = (ln, prev + line[21:].rstrip("\n"))
        elif line.strip():
            cur.append((k, line.rstrip("\n")))
    return records


def read_bacct(path: str | Path, *, year: int | None = None, cluster_gpus: int | None = None,
               cpu_jobs: str = "skip", tz: str = "UTC", epoch: pd.Timestamp | None = None) -> Trace:
    """Read LSF ``bacct -l`` (long accounting) output.

    Per job record: ``Job <id>, User <u>, Project <p>, Status <DONE|EXIT>, Queue <q>, ...``,
    then dated events (``Submitted``, ``Dispatched ... on Host(s) <8*hostA> ...``,
    ``Completed <done>`` or ``Completed <exit>; TERM_...``). GPUs = the ``num`` of
    ``Requested GPU <num=N...>`` (per host, as LSF's ``-gpu`` option) x the hosts the job was
    dispatched to. LSF prints dates without a year unless ``LSB_DISPLAY_YEAR=Y``: pass
    ``year`` (the year of the first record; a date more than half a year before the previous
    one rolls the year over). EXIT with ``TERM_OWNER``/``TERM_ADMIN`` is a cancellation,
    ``TERM_PREEMPT`` a preemption, any other EXIT a failure.
    """
    path = Path(path)
    shown = str(path)
    problems = _Problems(shown)
    recs = _bacct_records(_read_text(path))
    out: dict[str, list[Any]] = {k: [] for k in ("job_id", "user", "project", "queue", "state", "line", "submit_raw",
                           "start_raw", "end_raw", "submit_line", "start_line", "end_line", "gpus",
                           "hosts", "state_line")}
    for first, lines in recs:
        head = lines[0][1]
        fields = dict((k.strip().split(", ")[-1], v) for k, v in _FIELD.findall(head))
        for need in ("Job", "User", "Status"):
            if need not in fields:
                problems.add(first, None, need, head[:60], f"a `{need} <...>` field in the job header")
        status = fields.get("Status", "")
        ev = {}
        gpus_per_host, hosts = 0, 0
        term = ""
        for ln, line in lines[1:]:
            if (g := _GPU_REQ.search(line)):
                m = re.search(r"num=(\d+)", g.group(1))
                gpus_per_host = int(m.group(1)) if m else 1
            mm = _BACCT_DATE.match(line)
            if not mm:
                continue
            what = mm.group("what")
            if what.startswith("Submitted"):
                ev["submit"] = (ln, mm.group("date"))
            elif what.startswith(("Dispatched", "Started")):
                ev.setdefault("start", (ln, mm.group("date")))
                if (h := _HOSTS.search(what)):
                    hosts = len({t.split("*")[-1] for t in re.findall(r"<([^>]+)>", h.group(1))})
            elif what.startswith(("Completed", "Exited", "Done successfully")):
                ev["end"] = (ln, mm.group("date"))
                if (t := re.search(r"(TERM_\w+)", what)):
                    term = t.group(1)
        state = {"DONE": "COMPLETED", "EXIT": "FAILED"}.get(status, status)
        if status == "EXIT" and term in ("TERM_OWNER", "TERM_ADMIN", "TERM_FORCE_OWNER", "TERM_FORCE_ADMIN"):
            state = "CANCELLED"
        elif status == "EXIT" and term == "TERM_PREEMPT":
            state = "PREEMPTED"
        elif status in ("RUN", "PEND", "PSUSP", "USUSP", "SSUSP"):
            state = "RUNNING"
        out["job_id"].append(fields.get("Job", ""))
        out["user"].append(fields.get("User", ""))
        out["project"].append(fields.get("Project", ""))
        out["queue"].append(fields.get("Queue", ""))
        out["state"].append(state)
        out["line"].append(first)
        out["gpus"].append(gpus_per_host * max(hosts, 1) if gpus_per_host else 0)
        out["hosts"].append(hosts)
        for k in ("submit", "start", "end"):
            ln, d = ev.get(k, (first, ""))
            out[f"{k}_raw"].append(d)
            out[f"{k}_line"].append(ln)
    problems.raise_if_any()
    n = len(out["job_id"])
    frame = pd.DataFrame({"job_id": out["job_id"], "user": out["user"], "project": out["project"],
                          "queue": out["queue"]})
    # dates: "Mon Apr  1 10:00:00[ 2024]"
    cur_year = year
    prev: pd.Timestamp | None = None
    parsed: dict[str, list[Any]] = {k: [] for k in ("submit", "start", "end")}
    bad = {k: np.zeros(n, bool) for k in parsed}
    for i in range(n):
        for k in ("submit", "start", "end"):
            d = out[f"{k}_raw"][i]
            if not d:
                parsed[k].append(pd.NaT)
                continue
            parts = d.split()
            has_year = len(parts) == 5
            if not has_year and cur_year is None:
                problems.add(out[f"{k}_line"][i], 1, k, d, "a date with a year: pass the trace's `year` "
                             "(bacct prints none unless LSB_DISPLAY_YEAR=Y)")
                parsed[k].append(pd.NaT)
                continue
            text = " ".join(parts[1:4]) + " " + (parts[4] if has_year else str(cur_year))
            try:
                ts = pd.Timestamp(pd.to_datetime(text, format="%b %d %H:%M:%S %Y")).tz_localize(tz).tz_convert("UTC")
            except (ValueError, TypeError):
                problems.add(out[f"{k}_line"][i], 1, k, d, "a date like `Mon Apr  1 10:00:00`")
                bad[k][i] = True
                parsed[k].append(pd.NaT)
                continue
            if not has_year and prev is not None and (prev - ts).days > 182:
                assert cur_year is not None          # a yearless date without a year was refused above
                cur_year += 1
                ts = ts + pd.DateOffset(years=1)
            if k == "submit":
                prev = ts
            parsed[k].append(ts)
    for k in parsed:
        frame[k] = pd.Series(parsed[k], dtype="datetime64[ns, UTC]")
        frame[f"{k}_bad"] = bad[k]
        frame[f"{k}_raw"] = out[f"{k}_raw"]
    frame["gpus"] = np.array(out["gpus"], float)
    frame["gpus_raw"] = out["gpus"]
    frame["nodes"] = np.maximum(np.array(out["hosts"], float), 1.0)
    frame["nodes_raw"] = out["hosts"]
    # the line of each row: its header; end/start problems point at their event lines
    lines_arr = np.array(out["line"], np.int64)
    problems.raise_if_any()
    state_raw = pd.Series(out["state"])
    trace = _finish(frame, problems=problems, lines=lines_arr, cols={"start": 1, "end": 1, "submit": 1},
                    raw_state=state_raw, cluster_gpus=cluster_gpus, cpu_jobs=cpu_jobs, epoch=epoch,
                    path=shown, fmt="lsf_bacct", rows_read=n, skipped={},
                    field_lines={k: np.array(out[f"{k}_line"], np.int64) for k in ("submit", "start", "end")})
    return trace


def read_trace(path: str | Path, fmt: str, **kw) -> Trace:
    """Read a trace in one of :data:`FORMATS`."""
    if fmt in ("acme", "helios"):
        kw.pop("year", None)
        return read_acme_csv(path, fmt=fmt, **kw)
    if fmt == "slurm_sacct":
        kw.pop("year", None)
        return read_sacct(path, **kw)
    if fmt == "lsf_bacct":
        return read_bacct(path, **kw)
    raise ValueError(f"unknown trace format {fmt!r}; expected one of {FORMATS}")
