"""The run store of a sweep folder: one JSON (+ NPZ of series) per run key, written
atomically, verified on reuse.

``DIR/runs/<key>.json`` holds the status, KPIs, error and bookkeeping of one finished run,
with a SHA-256 of its KPIs and of its ``<key>.npz`` (the selected time series). A stored
run is reused only if it verifies (:meth:`RunStore.verify`): the JSON parses, an ``ok`` run
has its KPIs and they match their checksum, and the NPZ is there and matches its checksum.
Anything else is *corrupt* (a truncated NPZ, a deleted or edited KPI, an empty JSON left by
a kill): it is run again and reported. Temporary files live in ``DIR/runs/.tmp/``, outside
the ``runs/*.json`` glob, and are removed when a sweep starts.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

_CODE_FINGERPRINT: str | None = None


def code_fingerprint() -> str:
    """SHA-256 (first 16 hex) of the twin package's code and catalog data: runs stored by a
    different fingerprint were made by other code and may differ (see ``rerun_stale``)."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for f in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml", ".csv") and p.is_file()):
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
        _CODE_FINGERPRINT = h.hexdigest()[:16]
    return _CODE_FINGERPRINT


def _jsonable(v):
    from twin.sweep.spec import _jsonable as j
    return j(v)


def kpis_digest(kpis: dict) -> str:
    """SHA-256 of the canonical JSON of a run's KPIs (NaN stored as null)."""
    clean = {k: (None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v)
             for k, v in kpis.items()}
    return hashlib.sha256(json.dumps(clean, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class RunStore:
    """Finished runs on disk, one JSON (+ NPZ of series) per run key, written atomically."""

    #: KPIs every ok run has (a record without them is partial)
    REQUIRED_KPIS = ("tokens_total", "energy_facility_mwh")

    def __init__(self, root: str | Path, create: bool = True):
        """``create=False``: nothing is written yet (stored runs can be read and verified);
        :meth:`create` makes the folders before the first save."""
        self.dir = Path(root) / "runs"
        self.tmp = self.dir / ".tmp"
        if create:
            self.create()

    def create(self) -> None:
        self.tmp.mkdir(parents=True, exist_ok=True)

    def clean_temporaries(self) -> int:
        """Remove temporaries of earlier, killed sweeps (call once, before any run)."""
        n = 0
        for p in self.tmp.iterdir():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            n += 1
        return n

    def _json(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def _npz(self, key: str) -> Path:
        return self.dir / f"{key}.npz"

    def has(self, key: str) -> bool:
        return self._json(key).exists()

    def meta(self, key: str) -> dict | None:
        """The stored JSON of a run (status, KPIs, error, code), or None if not stored or
        unreadable."""
        try:
            rec = json.loads(self._json(key).read_text())
        except (OSError, ValueError):
            return None
        return rec if isinstance(rec, dict) else None

    def verify(self, key: str) -> tuple[dict | None, str | None]:
        """(record, None) for a stored run that verifies; (None, None) when nothing is stored;
        (None, why) for a corrupt or partial one."""
        path = self._json(key)
        if not path.exists():
            return None, None
        rec = self.meta(key)
        if rec is None:
            return None, "its JSON does not parse"
        if rec.get("status") not in ("ok", "failed"):
            return None, f"status {rec.get('status')!r}"
        kpis = rec.get("kpis")
        if not isinstance(kpis, dict):
            return None, "no KPIs"
        if rec.get("kpis_sha256") != kpis_digest(kpis):
            return None, "its KPIs do not match their checksum (edited or cut short)"
        if rec["status"] == "ok":
            missing = [k for k in self.REQUIRED_KPIS if k not in kpis]
            if missing:
                return None, f"KPIs missing: {missing}"
            want = rec.get("series_sha256")
            npz = self._npz(key)
            if want is not None:
                if not npz.exists():
                    return None, "its series file is missing"
                if file_digest(npz) != want:
                    return None, "its series file does not match its checksum (truncated or edited)"
        return rec, None

    def discard(self, key: str) -> None:
        for p in (self._json(key), self._npz(key)):
            p.unlink(missing_ok=True)

    def load(self, key: str) -> dict | None:
        """A stored run with its series (``day``, ``series``), or None if absent or corrupt."""
        rec, _ = self.verify(key)
        if rec is None:
            return None
        rec["series"], rec["day"] = {}, None
        if rec.get("status") == "ok" and rec.get("series_sha256") is not None:
            try:
                with np.load(self._npz(key)) as z:
                    rec["day"] = z["__day__"]
                    rec["series"] = {k: z[k] for k in z.files if k != "__day__"}
            except (OSError, ValueError, KeyError):
                return None
        return rec

    def save(self, key: str, record: dict, extra: dict) -> None:
        """Write the series first and the JSON last: the JSON's presence means 'done'. Both
        carry checksums the JSON records."""
        meta = {k: v for k, v in record.items() if k not in ("series", "day")}
        meta.update(extra)
        meta["kpis"] = dict(meta.get("kpis") or {})
        meta["kpis_sha256"] = kpis_digest(meta["kpis"])
        meta["series_sha256"] = None
        if record.get("status") == "ok" and record.get("day") is not None:
            fd, tmp = tempfile.mkstemp(prefix=f"{key}.", suffix=".npz", dir=self.tmp)
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, __day__=record["day"], **record["series"])
            meta["series_sha256"] = file_digest(Path(tmp))
            os.replace(tmp, self._npz(key))
        fd, tmp = tempfile.mkstemp(prefix=f"{key}.", suffix=".json", dir=self.tmp)
        with os.fdopen(fd, "w") as fh:
            json.dump(meta, fh, indent=1, sort_keys=True, default=_jsonable)
        os.replace(tmp, self._json(key))
