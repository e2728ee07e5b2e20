"""Telemetry benchmark: `twin compare`'s pipeline over nine months of 15-s data for 256 nodes.

Run: .venv/bin/python bench/bench_telemetry.py
Target (issue 15): compare over nine months of 15 s data for 256 nodes in 10 s or less.

The run is Blue Vela (256 XE9680 nodes in 128 racks, 274 days, hourly samples). The measured
side is one node-power series per node at 15 s (1.58 M readings each, 404 M in all, float32
values as a meter would report), node -> rack through a mapping, summed per rack. Timed: the
checks (order, duplicates, NaN, gaps), the mapping (units, rack lookup), the alignment on the
run's grid, the per-rack sums and the statistics -- everything after the readings are in
memory. Reading text is timed separately on one day of the same data (exposition format),
because 404 M readings of text (~25 GB) is not how nine months are fetched: Prometheus
answers ``avg_over_time(...[1h])`` at the run's step instead.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine  # noqa: E402

import twin  # noqa: E402
from twin.telemetry.compare import compare_mapped  # noqa: E402
from twin.telemetry.mapping import Mapping, Rule, apply_mapping  # noqa: E402
from twin.telemetry.series import NS, Series, check_series  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STEP_S = 15


def measured_series(ds, rng) -> tuple[list[Series], dict[str, str]]:
    """Per-node 15-s readings: the run's rack power split over its nodes, with 2 % noise."""
    t_run = ds.time.values.astype("datetime64[ns]").astype(np.int64)
    t = np.arange(t_run[0] - 1800 * NS, t_run[-1] + 1800 * NS, STEP_S * NS, dtype=np.int64)
    k = np.clip(np.searchsorted(t_run, t - 1800 * NS, side="left"), 0, t_run.size - 1)  # hold per hour
    npr = 2
    out, nodes = [], {}
    for rack in [str(r) for r in ds.rack.values]:
        rack_w = ds.rack_power_w.sel(rack=rack).values.astype(np.float32)[k]
        for n in range(npr):
            host = f"{rack}-n{n}"
            nodes[host] = rack
            v = rack_w / npr * (1 + 0.02 * rng.standard_normal(t.size, dtype=np.float32))
            out.append(Series("bench", "node_power_watts", {"host": host}, t, v, "W"))
    return out, nodes


def main() -> None:
    print(machine())
    s = twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml", [])
    t0 = time.perf_counter()
    ds = twin.simulate(s).dataset
    print(f"run: {ds.sizes['time']} samples x {ds.sizes['rack']} racks in {time.perf_counter() - t0:.1f} s")
    rng = np.random.default_rng(15)
    series, nodes = measured_series(ds, rng)
    n_read = sum(x.values.size for x in series)
    print(f"measured: {len(series)} node series x {series[0].values.size:,} readings = {n_read:,} readings")
    mapping = Mapping(nodes=nodes, series=[Rule(match={"name": "node_power_watts"}, variable="rack_power_w",
                                                rack="host", aggregate="sum")])
    walls, cpus = [], []
    for _ in range(3):
        w0, c0 = time.perf_counter(), time.process_time()
        checked = [check_series(x) for x in series]
        groups, _ = apply_mapping(checked, mapping, ds)
        stats = compare_mapped(ds, groups).stats()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    st = stats["rack_power_w"]
    print(f"compare (check + map + align + sum + stats): best {min(walls):.2f} s wall, "
          f"{min(cpus):.2f} s CPU (of 3); n = {st['n']:,} rack-hours, bias {st['bias_fraction']:+.4%}, "
          f"MAPE {st['mape']:.3%}")
    print(f"target <= 10 s: {'met' if min(walls) <= 10 else 'NOT met'}")

    # reading text: one day of the same data as OpenMetrics
    from twin.telemetry.ingest import parse_exposition
    day = 86400 // STEP_S
    lines = []
    for x in series:
        lab = f'{{host="{x.labels["host"]}"}}'
        lines.extend(f"node_power_watts{lab} {v!r} {t / NS:.0f}" for t, v in
                     zip(x.t_ns[:day].tolist(), x.values[:day].astype(float).tolist(), strict=True))
    text = "# TYPE node_power_watts gauge\n" + "\n".join(lines) + "\n# EOF\n"
    w0 = time.perf_counter()
    parsed = parse_exposition(text, "bench.om")
    w = time.perf_counter() - w0
    n = sum(p.values.size for p in parsed)
    print(f"read OpenMetrics text: {n:,} readings ({len(text) / 1e6:.0f} MB) in {w:.2f} s = "
          f"{n / w / 1e6:.2f} M readings/s")


if __name__ == "__main__":
    main()
