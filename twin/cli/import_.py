"""``twin import netbox|opendcim EXPORT --out scenario.yaml``: a scenario from a DCIM export.

    twin import netbox netbox_export/ --out hall.yaml [--name N] [--start 2025-01-06]
    twin import opendcim opendcim.json --out hall.yaml [--m-per-px 0.05]

Writes the scenario only if it validates; prints what was mapped, what was assumed and
what could not be mapped (also written as the file's header comment). Bad input exits 2
with one line naming the file and the record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from twin.errors import EXIT_BAD_INPUT


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="twin import", description=(
        "Write a scenario from a DCIM export (racks, power panels, power feeds, devices); report what "
        "could not be mapped."))
    ap.add_argument("tool", choices=("netbox", "opendcim"), help="which tool made the export")
    ap.add_argument("export", help="export folder (one file per table, .json or .csv) or one JSON bundle")
    ap.add_argument("--out", required=True, help="scenario YAML to write")
    ap.add_argument("--name", help="scenario name (default: the output file's stem)")
    ap.add_argument("--start", help="first simulated day and delivery date (default: today)")
    ap.add_argument("--days", type=float, default=30.0, help="simulated days (default 30)")
    ap.add_argument("--node-model", help="catalog node model for every GPU device type (twin/catalog/nodes.yaml)")
    ap.add_argument("--m-per-px", type=float, help="openDCIM: metres per pixel of the floor drawing (cabinet "
                                                   "MapX/MapY); without it rows are laid out")
    return ap


def run_import_cli(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from twin.errors import ScenarioError
    from twin.inventory import (
        InventoryError,
        build_scenario,
        read_netbox,
        read_opendcim,
        scenario_yaml,
    )
    from twin.scenario.loader import load_scenario

    out = Path(args.out)
    if out.suffix.lower() not in (".yaml", ".yml"):
        print(f"error: --out {args.out}: a scenario is written as .yaml", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        start = dt.date.fromisoformat(args.start) if args.start else None
    except ValueError:
        print(f"error: --start {args.start!r}: expected an ISO date, e.g. 2025-01-06", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        inv = read_netbox(args.export) if args.tool == "netbox" else read_opendcim(args.export, args.m_per_px)
        scenario, report = build_scenario(inv, args.name or out.stem, start, args.node_model, args.days)
    except (InventoryError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    text = scenario_yaml(scenario, report)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        s = load_scenario(tmp)
    except ScenarioError as err:
        tmp.unlink(missing_ok=True)
        print(f"error: the imported scenario does not validate ({len(err.problems)} problems); nothing written:",
              file=sys.stderr)
        for p in err.problems:
            print(f"  {p}", file=sys.stderr)
        print(report.text(), file=sys.stderr)
        return EXIT_BAD_INPUT
    tmp.replace(out)
    from collections import Counter

    from twin.plant import scenario_racks
    models, counts = scenario_racks(s)
    kinds = Counter(zip(models, counts.tolist(), strict=True))
    racks = ", ".join(f"{n} racks of {c} {m} nodes" for (m, c), n in kinds.most_common())
    print(f"wrote {out}: scenario {s.name!r}, {racks} in {len(s.site.halls)} hall(s); it validates")
    print(report.text())
    return 0


if __name__ == "__main__":
    sys.exit(run_import_cli(sys.argv[1:]))
