"""Reading export files: JSON (a list, an API page with ``results``, or a bundle keyed
by table) and CSV (header row), with errors that name the file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from twin.inventory.model import InventoryError


def read_records(path: Path) -> list[dict]:
    """Records of one export file (.json or .csv)."""
    if path.suffix.lower() == ".csv":
        try:
            with path.open(newline="", encoding="utf-8-sig") as f:
                return [dict(r) for r in csv.DictReader(f)]
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise InventoryError(f"{path}: cannot read CSV ({exc})") from None
    data = read_json(path)
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return data["results"]
    if isinstance(data, list):
        return data
    raise InventoryError(f"{path}: expected a list of records or an API page with 'results'")


def read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InventoryError(f"{path}: not valid JSON ({exc})") from None


def tables(path: str | Path, names: dict[str, tuple[str, ...]]) -> dict[str, list[dict]]:
    """The tables of an export: ``path`` is a folder of per-table files (any of the file
    stems listed in ``names[table]``, .json or .csv) or one JSON bundle whose keys are
    table names (or their aliases). Missing tables are empty lists."""
    p = Path(path)
    out: dict[str, list[dict]] = {k: [] for k in names}
    if p.is_dir():
        for table, stems in names.items():
            for stem in stems:
                for suffix in (".json", ".csv"):
                    f = p / f"{stem}{suffix}"
                    if f.exists():
                        out[table] = read_records(f)
                        break
                if out[table]:
                    break
        return out
    if not p.exists():
        raise InventoryError(f"{p}: no such file or folder")
    data = read_json(p)
    if not isinstance(data, dict):
        raise InventoryError(f"{p}: expected a JSON object with tables ({', '.join(names)}) or a folder of files")
    for table, stems in names.items():
        for key in (table, *stems):
            if key in data:
                v = data[key]
                v = v.get("results", v) if isinstance(v, dict) else v
                if not isinstance(v, list):
                    raise InventoryError(f"{p}: {key}: expected a list of records")
                out[table] = v
                break
    return out


def nested(v, *keys, default=""):
    """``v[k1][k2]...`` through NetBox's nested objects ({"name": ..., "display": ...});
    a plain value is returned as is."""
    for k in keys:
        if isinstance(v, dict):
            v = v.get(k)
        else:
            break
    if isinstance(v, dict):
        v = v.get("name", v.get("display", v.get("value", default)))
    return default if v is None else v


def number(v, default=None):
    if v is None or v == "":
        return default
    try:
        return float(v)
    except (TypeError, ValueError):
        return default
