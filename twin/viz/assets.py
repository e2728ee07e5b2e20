"""Regenerate the README images: ``python -m twin.viz.assets [OUT_DIR]`` (``make assets``).

Runs the Blue Vela scenario once and writes ``OUT_DIR/hall.png`` (the hall in 3-D on
the first day of the last power stage, racks coloured by inlet temperature, room-air
slice and streamlines), ``OUT_DIR/ramp.png`` (GPUs and tokens over the nine-month ramp)
and, when headless Chromium is installed, ``OUT_DIR/report_summary.png`` (the top of the
run report: the answer, the KPIs and the inputs) and ``OUT_DIR/hall_page.png`` (the
offline interactive page of ``twin render --out hall.html``, as a browser draws it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = ROOT / "scenarios" / "blue_vela.yaml"


def make_assets(out_dir: str | Path, scenario_path: str | Path = DEFAULT_SCENARIO,
                run_dir: str | Path | None = None, hall_time: str | None = None) -> list[Path]:
    """Write hall.png and ramp.png into ``out_dir``; returns their paths."""
    import twin
    from twin.results import Results

    from . import plots, render
    from .snapshot import snapshot_from_results

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if run_dir is not None:
        results = Results.load(run_dir)
    else:
        results = twin.simulate(twin.load_scenario(scenario_path, []))
    scenario = render.scenario_of(results)
    if hall_time is None:  # first sample of the last power stage: the hall at its final layout
        hall_time = scenario.site.power.plan[-1].date.isoformat()
    i = render.parse_time(hall_time, results.dataset["time"].values)
    snap = snapshot_from_results(results, "inlet_temp", i, field=True, scenario=scenario)
    hall = out / "hall.png"
    render.render_snapshot(snap, hall, window_size=(1280, 800))
    fig = plots.ramp(results)
    ramp = out / "ramp.png"
    fig.savefig(ramp, dpi=110)
    paths = [hall, ramp]
    from twin.report import chromium, chromium_executable, run_report_html
    if chromium_executable() is not None:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="twin-assets-") as tmp:
            page = Path(tmp) / "report.html"
            page.write_text(run_report_html(results), encoding="utf-8")
            shot = out / "report_summary.png"
            chromium(["--hide-scrollbars", "--window-size=1100,900", f"--screenshot={shot}", page.as_uri()])
            if shot.exists():
                paths.append(shot)
            health = snapshot_from_results(results, "health", i, field=True, scenario=scenario)
            html_page = render.export_page(health, Path(tmp) / "hall.html")
            shot = out / "hall_page.png"
            chromium(["--hide-scrollbars", "--window-size=1100,700", "--virtual-time-budget=8000",
                      f"--screenshot={shot}", html_page.as_uri()])
            if shot.exists():
                paths.append(shot)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m twin.viz.assets", description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default="assets")
    ap.add_argument("--scenario", default=str(DEFAULT_SCENARIO))
    ap.add_argument("--run", help="use this run folder instead of simulating the scenario")
    ap.add_argument("--time", help="sample of the hall image (default: start of the last power stage)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    paths = make_assets(args.out_dir, args.scenario, args.run, args.time)
    print(f"wrote {', '.join(map(str, paths))} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
