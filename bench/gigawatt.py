"""Scenarios of the gigawatt-scale benchmarks (issue 19), built as plain dicts.

:func:`site_scenario` lays out a site of XE9680 racks (4 nodes, 32 GPUs, about 45 kW per
rack at full load, as in a liquid-assisted SuperPOD row): buildings of data halls of up to
``racks_per_hall`` racks, each hall with its own cooling units (sized at 1.3x the racks'
airflow) and recirculation matrix; every rack delivered on day 0 and the power plan admits
them all; the default Llama 3 failure mix; training jobs of ``job_nodes`` nodes on 7/8 of
the nodes (the rest absorbs failed nodes in repair). It does not read the shipped scenarios,
so it does not move when they change.

``python bench/gigawatt.py`` writes ``scenarios/scale/million_gpu.yaml`` (1,048,576 GPUs,
365 days, hourly samples; per-rack series off, run aggregates kept).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from halls import NODES_PER_RACK, RACKS_PER_ROW, data_halls  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RACK_KW_WORST = 45.0            # 4 XE9680 at full load and a warm inlet + network share [kW]
#: Llama 3 405B shape (Dubey et al. 2024, arXiv 2407.21783, Table 3); 128 layers so pp 16 divides
LLAMA3_405B = {"layers": 128, "hidden": 16384, "ffn_hidden": 53248, "heads": 128, "kv_heads": 8,
               "vocab": 128256}


def site_scenario(n_nodes: int, days: float, sample_interval_s: float = 3600.0, *, job_nodes: int = 2048,
                  racks_per_hall: int = 256, halls_per_building: int = 16, rack_series: str | None = None,
                  seed: int = 19, name: str | None = None, fabric: dict | None = None) -> dict:
    """A site of ``n_nodes`` XE9680 nodes as a scenario dict (see the module docstring).

    ``rack_series``: ``outputs.rack_series`` of the scenario (None: the schema's default);
    ``fabric``: the fabric section (default: rail-optimised NDR, 64-port QM9700 switches).
    """
    n_racks = math.ceil(n_nodes / NODES_PER_RACK)
    # cooling capacity 40 kW per rack; hall i is hall i % per_building of building i // per_building
    halls = data_halls(n_racks, racks_per_hall, max(2, math.ceil(racks_per_hall / RACKS_PER_ROW)), 40.0,
                       name=lambda i: "b{}_h{}".format(*divmod(i, halls_per_building)), round_unit_y=True)
    it_kw = n_racks * RACK_KW_WORST
    racks_per_rpp = 8
    job_nodes = min(job_nodes, 16 * max(1, int(n_nodes * 7 / 8 / 16)))
    n_jobs = max(1, int(n_nodes * 7 / 8) // job_nodes)
    gpus = job_nodes * 8
    jobs = [{"name": f"train{j:03d}", "nodes": job_nodes, "model": dict(LLAMA3_405B),
             "seq_len": 8192, "global_batch": max(gpus // 16, 8), "tp": 8, "pp": 16, "vpp": 1,
             "checkpoint_interval_s": 3600, "priority": 1} for j in range(n_jobs)]
    s = {
        "name": name or f"site_{n_nodes * 8}_gpus",
        "description": f"{n_nodes * 8:,} H100 GPUs in {len(halls)} halls (bench/gigawatt.py)",
        "simulation": {"start": "2026-01-01", "duration_days": days, "sample_interval_s": sample_interval_s,
                       "seed": seed},
        "site": {
            "halls": halls,
            "power": {
                "feeds": [{"name": "A", "capacity_kw": it_kw}, {"name": "B", "capacity_kw": it_kw}],
                "ups": {"mode": "bypass", "capacity_kw": it_kw, "ride_through_s": 300},
                "redundancy": "none",
                # 8 racks x 45 kW = 360 kW under an 800 A, 415 V feeder at the NEC 80 % rule (437 kW)
                "rpp": {"count": math.ceil(n_racks / racks_per_rpp), "racks_per_rpp": racks_per_rpp,
                        "breaker_a": 800, "voltage_v": 415, "phases": 3},
                "plan": [{"date": "2026-01-01", "it_power_kw": it_kw}],
                "grid": {"sag_rate_per_year": 6, "outage_rate_per_year": 0.5},
                "cooling": {"outdoor_temp_c": 14, "outdoor_temp_swing_c": 12, "chiller_cop_at_25c": 4.5,
                            "fan_pump_fraction": 0.05},
            },
        },
        "hardware": {"node_model": "xe9680_h100", "nodes_per_rack": NODES_PER_RACK,
                     "network_power_per_rack_w": 1800},
        "fabric": fabric or {"kind": "rail_optimized", "su_nodes": 32, "rails": 8, "link_gbps": 400,
                             "switch_model": "qm9700", "switch_ports": 64},
        "workload": {"jobs": jobs},
        "failures": {"enabled": True, "rate_scale": 1.0, "health_check_interval_s": 300,
                     "technicians": max(4, n_nodes // 128), "spares": max(16, n_nodes // 32),
                     "restock_days": 7},
        "ramp": {"burn_in_days": 0, "waves": [{"date": "2026-01-01", "racks": n_racks}]},
    }
    if rack_series is not None:
        s["outputs"] = {"rack_series": rack_series}
    return s


def million_gpu_scenario(days: float = 365.0) -> dict:
    """1,048,576 GPUs (131,072 nodes, 32,768 racks in 128 halls of 8 buildings), hourly."""
    # 64-port switches top out at 65,536 nodes in three tiers: 144-port XDR (Quantum-X800,
    # 800 Gb/s) holds 331,776 nodes per rail plane in three tiers
    xdr = {"kind": "rail_optimized", "su_nodes": 32, "rails": 8, "link_gbps": 800, "switch_model": "q3400",
           "switch_ports": 144}
    return site_scenario(131072, days, 3600.0, job_nodes=2048, racks_per_hall=256, halls_per_building=16,
                         rack_series="none", name="million_gpu", fabric=xdr)


HEADER = """\
# One million H100 GPUs on one site, for a year at hourly samples (issue 19, gigawatt scale).
# Generated by bench/gigawatt.py (python bench/gigawatt.py); edit the generator, not this file.
# 131,072 Dell XE9680 nodes (8x H100 SXM), 4 per rack (~45 kW, liquid-assisted SuperPOD rows),
# 32,768 racks in 128 data halls of 256 racks (8 buildings of 16 halls), each hall with its own
# CRAH units and recirculation matrix; ~1.5 GW of IT. Every rack is delivered on day 0.
# Assumptions: 56 training jobs of 2,048 nodes (16,384 GPUs, Llama 3 405B-like, tp 8, pp 16)
# on 7/8 of the nodes, the rest absorbing nodes in repair; the Llama 3 failure mix per node
# (arXiv 2407.21783); one rail-optimised XDR InfiniBand fabric (Quantum-X800, 144 ports of
# 800 Gb/s; three tiers hold 331,776 nodes per rail plane). Per-rack series are not kept (outputs.rack_series: none): results.nc holds the
# facility, feed and job series plus per-rack run aggregates, so memory stays bounded.
"""


def main() -> None:
    import yaml

    out = ROOT / "scenarios" / "scale" / "million_gpu.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(million_gpu_scenario(), sort_keys=False, default_flow_style=None, width=120)
    out.write_text(HEADER + text)
    print(f"wrote {out} ({len(text) / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
