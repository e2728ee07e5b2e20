"""``twin estimate step --json`` run in process, for the tests that compare the engine with it."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from pathlib import Path

from twin.cli.estimate import run_estimate_cli


def estimate_step_json(path: Path, sets: list[str], extra: Sequence[str] = ()) -> dict:
    """The JSON object ``twin estimate step PATH --json --set S ... EXTRA`` prints; the command
    must exit 0."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = run_estimate_cli(["step", str(path), "--json"]
                              + [a for o in sets for a in ("--set", o)] + list(extra))
    assert rc == 0
    return json.loads(buf.getvalue())
