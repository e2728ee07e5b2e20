"""``twin replay SCENARIO MEASURED... --out RUN_DIR [--map FILE] [--step S] [--set ...]``.

Measured rack power (and, when measured, the outdoor temperature and which cooling units
run: ``cooling_unit_running{cooling_unit="hall/unit"}`` 1/0) drive the scenario's power
chain, cooling plant and hall recirculation model in place of its workload; the twin
predicts losses, utility power, cooling power, PUE and inlet temperatures and writes them as
a run folder, which ``twin compare RUN_DIR MEASURED...`` then scores against the rest of the
measurements. See ``twin.telemetry.replay``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from twin.errors import EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="twin replay", description=__doc__.splitlines()[0])
    ap.add_argument("scenario", help="scenario YAML of the facility")
    ap.add_argument("measured", nargs="+", help="measured files (rack power per rack; outdoor temperature)")
    ap.add_argument("--out", required=True, help="run folder to write (results.nc)")
    ap.add_argument("--map", dest="mapping", help="mapping file (YAML), as for twin compare")
    ap.add_argument("--step", type=float, help="sample step [s] (default: the scenario's sample_interval_s)")
    ap.add_argument("--set", action="append", metavar="dotted.path=value", help="override a field")
    ap.add_argument("--allow-gaps", action="store_true", help="leave gaps' samples out instead of failing")
    return ap


def run_replay_cli(argv: list[str]) -> int:
    import numpy as np

    import twin
    from twin.errors import ScenarioError
    from twin.sim.engine import Engine
    from twin.telemetry.compare import compare_mapped
    from twin.telemetry.ingest import read_measured
    from twin.telemetry.mapping import apply_mapping, load_mapping
    from twin.telemetry.replay import DRIVERS, measured_grid, replay_dataset, replay_template
    from twin.telemetry.series import TelemetryError, check_series

    args = build_parser().parse_args(argv)
    try:
        scenario = twin.load_scenario(args.scenario, list(args.set or []))
    except ScenarioError as err:
        from twin.cli.main import _report_problems
        return _report_problems(err)
    step = float(args.step or scenario.simulation.sample_interval_s)
    try:
        engine = Engine(scenario)
        mapping = load_mapping(args.mapping)
        series = [check_series(s, max_gap_s=mapping.max_gap_s, allow_gaps=args.allow_gaps)
                  for f in args.measured for s in read_measured(f, timezone=mapping.timezone)]
        probe = replay_template(engine, np.zeros(1, np.int64), step)
        groups, _ = apply_mapping(series, mapping, probe)
        groups = [g for g in groups if g.variable in DRIVERS]
        grid = measured_grid(groups, step)
        template = replay_template(engine, grid, step)
        cmp = compare_mapped(template, groups)
        racks = list(template.rack.values)
        rack_w = np.full((grid.size, len(racks)), np.nan)
        units = [str(u) for u in template.cooling_unit.values]
        running = None
        outdoor = None
        for p in cmp.pairs:
            if p.mapped.variable == "rack_power_w":
                rack_w[:, racks.index(str(p.mapped.coord))] = p.meas
            elif p.mapped.variable == "cooling_unit_running":
                running = np.full((grid.size, len(units)), np.nan) if running is None else running
                running[:, units.index(str(p.mapped.coord))] = p.meas
            else:
                outdoor = p.meas
        missing = [r for j, r in enumerate(racks) if np.isnan(rack_w[:, j]).all()]
        if missing:
            raise TelemetryError(", ".join(args.measured), "rack_power_w",
                                 f"{len(missing)} racks have no measured power ({', '.join(missing[:6])}"
                                 f"{', ...' if len(missing) > 6 else ''}); a rack that is off reads 0 W")
        ds = replay_dataset(engine, rack_w, grid, step, outdoor, running)
    except TelemetryError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".results.nc.tmp"
    ds.to_netcdf(tmp, engine="h5netcdf")
    tmp.replace(out / "results.nc")
    it = ds.facility_it_power_w.values
    tot = ds.facility_total_power_w.values
    ok = np.isfinite(it) & np.isfinite(tot)
    pue = float(tot[ok].sum() / it[ok].sum()) if ok.any() else float("nan")
    print(f"replayed {ok.sum()} of {grid.size} samples ({step:g} s) of {len(racks)} racks: "
          f"IT energy {it[ok].sum() * step / 3.6e9:.3f} MWh, PUE {pue:.3f}; "
          f"{'measured' if outdoor is not None else 'modelled'} outdoor temperature; results in {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(run_replay_cli(sys.argv[1:]))
