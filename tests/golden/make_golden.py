"""Write ``golden.json``: the KPIs and per-variable checksums of every shipped scenario.

Run it only when a change of the numbers is intended and explained in the commit:

    python tests/golden/make_golden.py

The test ``tests/test_golden.py`` compares a fresh run against this file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import twin  # noqa: E402

#: every shipped scenario that `twin run` takes (sweep files live in scenarios/studies)
SCENARIOS = ["blue_vela.yaml", "vela.yaml", "lenovo_small.yaml", "lenovo_medium.yaml",
             "lenovo_large.yaml", "sites/colo_hydro_hall.yaml", "sites/existing_hall.yaml",
             "sites/new_build_hall.yaml", "sites/mixed_hall.yaml"]


def fingerprint(results) -> dict:
    """KPIs, the sum of every numeric output variable and the event count of one run."""
    ds = results.dataset
    sums = {}
    for name, var in ds.data_vars.items():
        v = np.asarray(var.values)
        if v.dtype.kind in "biuf":
            sums[name] = float(np.nansum(v.astype(float)))
    kpis = {k: (float(v) if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) else v)
            for k, v in results.kpis.items()}
    return {"kpis": kpis, "sums": sums, "n_events": int(len(results.events))}


def main() -> None:
    out = {}
    for rel in SCENARIOS:
        out[rel] = fingerprint(twin.simulate(twin.load_scenario(ROOT / "scenarios" / rel)))
    path = Path(__file__).with_name("golden.json")
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
