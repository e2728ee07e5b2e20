"""Output safety for run results: what a save may replace, crash-safe swaps, stale temporaries.

Rules (issue 18, "Output safety"):

- ``out`` may be replaced only when it is missing, an empty folder, or a folder holding a
  previous twin result and nothing else: the twin writes a marker file
  (:data:`MARKER`) that lists the files of the result. Any other folder, or a file, is
  refused (:class:`twin.errors.OutputError`) unless ``force=True``.
- Every file name is formed by the twin; names from a scenario (a hall) must be safe
  identifiers (:func:`is_safe_name`) and the resolved path must stay inside the folder.
- A save writes a temporary sibling folder and swaps it in with one atomic
  ``renameat2(RENAME_EXCHANGE)`` (Linux); where that call is missing the swap is two
  renames, and a save or load that finds the folder missing but its ``.old`` sibling
  present puts the old result back first (:func:`recover`). Either way a killed save
  leaves the old result or the new one at the path, never neither.
- Temporary folders of dead processes (``.<name>.twin-tmp-<pid>-*``) are removed at the
  next save into the same parent.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from twin.errors import OutputError

#: marker file of a twin result folder (JSON: kind, twin version, files)
MARKER = ".twin-result.json"
#: files a run result may hold besides the marker (older versions wrote no marker)
_RESULT_FILE = re.compile(r"^(results\.nc|events\.csv|kpis\.json|field_[A-Za-z0-9][A-Za-z0-9_.-]*\.nc)$")
#: a name from a scenario that may appear in a file name: letters, digits, _ . - ; no path parts
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_TMP_TAG = ".twin-tmp-"
_OLD_TAG = ".twin-old"


def is_safe_name(name: object) -> bool:
    """True if ``name`` can be part of a file name on its own: 1-128 characters of letters,
    digits, ``_``, ``.`` and ``-``, starting with a letter or digit (so never ``..``, never
    a separator, never hidden)."""
    return isinstance(name, str) and bool(_SAFE_NAME.fullmatch(name))


def inside(folder: Path, name: str) -> Path:
    """``folder / name``, refused unless it resolves to a direct child of ``folder``."""
    if not is_safe_name(name.removesuffix(".nc").removesuffix(".csv").removesuffix(".json")):
        raise OutputError(f"{name!r}: not a safe file name (letters, digits, _ . - only)")
    path = folder / name
    if path.resolve().parent != folder.resolve():
        raise OutputError(f"{name!r}: would be written outside {folder}")
    return path


def _old_path(out: Path) -> Path:
    return out.with_name(f".{out.name}{_OLD_TAG}")


def recover(out: str | Path) -> bool:
    """Put back a result left in the ``.old`` sibling by a save killed between its two
    renames (fallback path); also the ``.<name>.old`` of twin versions before the marker.
    Returns True if something was restored."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        return False
    for old in (_old_path(out), out.with_name(f".{out.name}.old")):
        if old.is_dir() and not old.is_symlink():
            os.replace(old, out)
            return True
    return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temporaries(out: str | Path) -> list[Path]:
    """Remove ``.<name>.twin-tmp-<pid>-*`` folders next to ``out`` whose process is gone,
    and ``.<name>.XXXXXXXX`` folders of older versions that hold only twin result files.
    Returns the removed paths."""
    out = Path(out)
    parent = out.parent
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    prefix = f".{out.name}{_TMP_TAG}"
    legacy = re.compile(rf"^\.{re.escape(out.name)}\.[A-Za-z0-9_]{{8}}$")
    for p in parent.iterdir():
        if p.is_symlink() or not p.is_dir():
            continue
        if p.name.startswith(prefix):
            pid_text = p.name[len(prefix):].split("-", 1)[0]
            if pid_text.isdigit() and (int(pid_text) == os.getpid() or _pid_alive(int(pid_text))):
                continue
        elif not (legacy.fullmatch(p.name) and all(_RESULT_FILE.fullmatch(c.name) for c in p.iterdir())):
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def foreign_entries(out: Path) -> list[str]:
    """Entries of a folder that are not part of a twin result: everything but the files its
    marker lists (or, for results written before the marker, the twin's file names)."""
    entries = {p.name for p in out.iterdir()}
    if MARKER in entries:
        try:
            files = set(json.loads((out / MARKER).read_text())["files"])
        except (OSError, ValueError, KeyError, TypeError):
            return sorted(entries)
        return sorted(entries - {MARKER} - files)
    return sorted(n for n in entries if not _RESULT_FILE.fullmatch(n))


def is_twin_result(out: str | Path) -> bool:
    """A folder holding a twin result and nothing else."""
    out = Path(out)
    if out.is_symlink() or not out.is_dir() or not any(out.iterdir()):
        return False
    return not foreign_entries(out)


def check_output(out: str | Path, force: bool = False) -> Path:
    """Raise :class:`OutputError` unless ``out`` may be replaced by a new result: missing,
    an empty folder, or a previous twin result. ``force`` allows any folder or file."""
    out = Path(out)
    recover(out)
    if force or not (out.exists() or out.is_symlink()):
        return out
    if out.is_symlink():
        raise OutputError(f"--out {out}: is a symbolic link; give the folder itself "
                          f"(or --force to replace the link)")
    if not out.is_dir():
        raise OutputError(f"--out {out}: is a file, not a twin result folder; "
                          f"choose another --out or give --force to replace it")
    foreign = foreign_entries(out)
    if not foreign:
        return out
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    raise OutputError(f"--out {out}: the folder holds files that are not a twin result "
                      f"({foreign[0]!r}{more}); choose another --out or give --force to replace it")


def make_temporary(out: Path) -> Path:
    """A fresh temporary folder next to ``out`` named after this process."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}{_TMP_TAG}{os.getpid()}-", dir=out.parent))
    umask = os.umask(0o022)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)        # mkdtemp's 0700 would hide the result from the group
    return tmp


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2(RENAME_EXCHANGE)``); False if the
    system or file system has no such call."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def swap_in(tmp: Path, out: Path) -> None:
    """Make the finished folder ``tmp`` the result at ``out``; whatever was at ``out`` is
    removed afterwards. At every instant ``out`` holds the old or the new result (or, on a
    system without an atomic exchange, the old result waits in ``.<name>.twin-old`` for
    :func:`recover`)."""
    if not (out.exists() or out.is_symlink()):
        os.replace(tmp, out)
        return
    if _exchange(tmp, out):
        _remove(tmp)            # tmp now holds the previous result
        return
    old = _old_path(out)
    _remove(old)
    os.replace(out, old)
    os.replace(tmp, out)
    _remove(old)


def write_marker(folder: Path, files: list[str], kind: str = "run") -> None:
    from twin._version import __version__
    (folder / MARKER).write_text(json.dumps({"kind": kind, "twin_version": __version__,
                                             "files": sorted(files)}, indent=1))


def required_bytes_estimate(results) -> int:
    """Bytes a save writes, about: the Dataset and fields in memory plus the event table."""
    n = int(results.dataset.nbytes) + sum(int(f.nbytes) for f in results.fields.values())
    return n + 200 * len(results.events) + 65536


def check_free_space(folder: Path, need_bytes: int) -> None:
    """Refuse up front (OSError ENOSPC) when the file system has less room than a save
    needs: a full disk in the middle of an HDF5 write gives pages of library errors."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < need_bytes:
        raise OSError(errno.ENOSPC, f"no space left on the device: the result needs about "
                                    f"{need_bytes / 1e6:.1f} MB, {free / 1e6:.1f} MB free", str(folder))


def netcdf_write_engine() -> str:
    """The engine :func:`write_netcdf` writes with: ``"netcdf4"`` (the netCDF-C library)
    when the netCDF4 package is installed, else ``"h5netcdf"``.

    Both write netCDF-4 (HDF5) files that read back to the same Dataset: the same variables,
    values, dtypes and attributes (``tests/test_cli_netcdf_engine.py``). netCDF-C creates a
    variable in C where h5netcdf spends ~3 ms of Python on each variable's dimension scales:
    Blue Vela's results.nc (63 variables, 220 MB) 0.32-0.68 -> 0.10-0.50 s of CPU (issue 19).
    """
    import importlib.util

    return "netcdf4" if importlib.util.find_spec("netCDF4") is not None else "h5netcdf"


def write_netcdf(ds, path: str | Path, engine: str | None = None) -> None:
    """Write ``ds`` to ``path`` as netCDF-4, the same file as ``ds.to_netcdf(path,
    engine=engine)``; ``engine`` ``"netcdf4"`` or ``"h5netcdf"``, by default
    :func:`netcdf_write_engine`.

    For a Dataset of in-memory (numpy) variables this goes to xarray's store directly:
    ``to_netcdf`` asks dask which scheduler is active (to decide whether to close the
    file after each chunk, and which write lock to take), and with dask installed that
    question imports ``distributed``, about 0.3 s of CPU per process that a run of numpy arrays never
    uses (issue 19). A Dataset holding chunked (dask) variables, or declaring unlimited
    dimensions, takes ``to_netcdf`` itself.
    """
    engine = engine or netcdf_write_engine()
    if engine not in ("netcdf4", "h5netcdf"):
        raise ValueError(f"engine {engine!r}: netcdf4 or h5netcdf")
    if ds.encoding.get("unlimited_dims") or any(v.chunks is not None for v in ds.variables.values()):
        ds.to_netcdf(path, engine=engine)
        return
    # lock given: left to itself the store asks dask for a per-file write lock (the same
    # scheduler query); one thread writes here, so the library-wide lock suffices
    if engine == "netcdf4":
        from xarray.backends import NetCDF4DataStore
        from xarray.backends.locks import HDF5_LOCK, NETCDFC_LOCK, combine_locks

        store = NetCDF4DataStore.open(os.fspath(path), mode="w", format="NETCDF4",
                                      lock=combine_locks([NETCDFC_LOCK, HDF5_LOCK]))
    else:
        from xarray.backends import H5NetCDFStore
        from xarray.backends.locks import HDF5_LOCK

        store = H5NetCDFStore.open(os.fspath(path), mode="w", lock=HDF5_LOCK)
    try:
        ds.dump_to_store(store)
    finally:
        store.close()


def write_events_csv(events, path: str | Path) -> None:
    """Write an event table to ``path``: the same bytes as ``events.to_csv(path, index=False)``.

    pandas sends every row through the csv module (0.11 s of CPU for Blue Vela's 50,127
    events); here the rows are joined directly (issue 19). The bytes are pandas': floats in
    their shortest round-trip form (``repr``, which is what numpy's ``astype(str)`` that
    pandas uses gives), missing values empty, a field quoted (inner quotes doubled) when it
    holds a comma or a quote, one ``\n`` per row. A table with other column types, a line
    break or carriage return in a field, or a single column goes through ``to_csv``
    itself. ``tests/test_cli_events_csv.py`` compares the bytes with pandas' on random tables.
    """
    import numpy as np
    import pandas as pd

    names = [str(c) for c in events.columns]
    columns: list[list[str]] = []
    for name in events.columns:
        col = events[name]
        if col.dtype == np.float64:
            values = col.to_numpy()
            text = [repr(x) for x in values.tolist()]
            for i in np.flatnonzero(np.isnan(values)).tolist():
                text[i] = ""
        elif pd.api.types.is_string_dtype(col.dtype) and col.dtype != object:
            text = col.to_numpy(dtype=object, na_value="").tolist()
        else:                                     # object columns may hold anything
            break
        columns.append(text)
    if len(names) < 2 or len(columns) != len(names):
        events.to_csv(path, index=False)
        return
    cells = []
    for text in [names, *columns]:
        joined = "\0".join(text)
        if "\n" in joined or "\r" in joined:
            events.to_csv(path, index=False)
            return
        if "," in joined or '"' in joined:
            text = [('"' + f.replace('"', '""') + '"') if ("," in f or '"' in f) else f for f in text]
        cells.append(text)
    lines = [",".join(cells[0])]
    lines += map(",".join, zip(*cells[1:], strict=True))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
        fh.write("\n")


def save_results(results, out_dir: str | Path, force: bool = False, warnings: list | None = None) -> Path:
    """Write ``results`` into ``out_dir`` (results.nc, events.csv, kpis.json, field_<hall>.nc
    and the marker) crash-safely; see the module docstring for the rules. ``warnings``:
    the run-time invariant warnings of ``results`` when the caller has them already
    (``twin.invariants.check_results(results)``; computed here otherwise)."""
    import math

    out = Path(out_dir)
    check_output(out, force)
    clean_stale_temporaries(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    check_free_space(out.parent, required_bytes_estimate(results))
    from twin.invariants import check_results

    names = ["results.nc", "events.csv", "kpis.json"] + [f"field_{hall}.nc" for hall in results.fields]
    if warnings is None:
        warnings = check_results(results)
    tmp = make_temporary(out)
    try:
        paths = {n: inside(tmp, n) for n in names}
        ds = results.dataset.copy()
        ds.attrs = {k: (json.dumps(v) if isinstance(v, (dict, list, bool)) else v) for k, v in ds.attrs.items()}
        ds.attrs["invariant_warnings"] = json.dumps(warnings)
        write_netcdf(ds, paths["results.nc"])
        write_events_csv(results.events, paths["events.csv"])
        for hall, fds in results.fields.items():
            write_netcdf(fds, paths[f"field_{hall}.nc"])
        finite: dict = {k: (v if not isinstance(v, float) or math.isfinite(v) else None)
                        for k, v in results.kpis.items()}    # strict JSON has no NaN/Infinity
        finite["warnings"] = warnings                  # run-time invariants (twin.invariants)
        paths["kpis.json"].write_text(json.dumps(finite, indent=2, sort_keys=True, allow_nan=False))
        write_marker(tmp, names)
        _fsync_tree(tmp)
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _fsync_tree(folder: Path) -> None:
    """Flush the files and the folder itself, so a power loss after the swap cannot
    leave a renamed folder of empty files."""
    for p in folder.iterdir():
        with open(p, "rb") as fh:
            os.fsync(fh.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_results(cls, out_dir: str | Path):
    """Read a result folder written by :func:`save_results` (or by an older twin)."""
    import pandas as pd
    import xarray as xr

    out = Path(out_dir)
    recover(out)
    with xr.open_dataset(out / "results.nc", engine="h5netcdf") as ds:
        dataset = ds.load()
    events = pd.read_csv(out / "events.csv", keep_default_na=False)
    kpis = json.loads((out / "kpis.json").read_text())
    warnings = kpis.pop("warnings", None)          # kept in the Dataset attrs, not among the KPIs
    if warnings is not None:
        dataset.attrs["invariant_warnings"] = json.dumps(warnings)
    fields = {}
    for path in sorted(out.glob("field_*.nc")):
        with xr.open_dataset(path, engine="h5netcdf") as fds:
            fields[path.stem.removeprefix("field_")] = fds.load()
    return cls(dataset, events, kpis, fields)
