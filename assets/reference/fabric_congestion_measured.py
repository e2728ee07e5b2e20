"""The twin's fabric congestion model against a measured static-against-adaptive routing
comparison on a Clos (issue 16): Geoffray and Hoefler, HOTI'08, doi:10.1109/HOTI.2008.21.

    .venv/bin/python assets/reference/fabric_congestion_measured.py [--sensitivity]

Reads ``fabric_congestion_measured.csv`` (sources, reading and assumptions:
``fabric_congestion_measured_sources.md``) and computes each row's figure with the fabric
model as it is in the tree; nothing is fitted.  ``tests/fabric/test_congestion_measured.py``
pins what this prints.

The measurement: 512 nodes of Myri-10G on a non-blocking Clos of 32-port crossbars (diameter
3), random bisection patterns (every node exchanges 1 MB with one random partner, MPI_Sendrecv,
both directions at once), the effective bisection bandwidth

    EBB = mean over patterns of ( mean over pairs of pair bandwidth / point-to-point bandwidth )

38 % with static routing, 77 % with the authors' best adaptive routing, 100 % with adaptive
routing on fewer nodes.

The twin's setup, from what the source states (nothing chosen by looking at the result):

- fabric: ``build_fabric("fat_tree", 512, rails=1, switch_ports=32, link_gbps=10)``; 32-port
  switches, non-blocking, two tiers: 32 leaves of 16 nodes, 16 up cables each, 16 spines with
  one cable to every leaf (the only non-blocking Clos of 32-port crossbars with 3 crossbar
  hops for 512 hosts); one 10 Gb/s port per node;
- a pattern: a uniform random perfect matching of the nodes (a random bisection with a random
  pairing across it is one), each pair a two-node job whose ring is the two directions of
  the exchange, each node offering its line rate;
- static routing: ``routing="ecmp", qps=1``: one flow per direction, hashed onto one of the 16
  spines (one static route per source-destination pair, chosen at random: the assumption,
  against routes chosen by destination in the sensitivity);  adaptive: ``routing="adaptive"``;
- sharing: ``policy="max_min"``, the model's default;  a pair's figure is its rate fraction
  (alone on the fabric every pair runs at 1);
- ``PATTERNS`` patterns from ``PATTERN_SEED`` (the measurement took 5000; the twin's spread
  over patterns, and every figure of the sensitivity over 100 patterns, are printed with
  ``--sensitivity``).
"""

from __future__ import annotations

import argparse
import csv
from functools import lru_cache
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from twin.fabric import build_fabric, fair_share_bandwidths_gbps, max_min_fractions

HERE = Path(__file__).resolve().parent
CSV = HERE / "fabric_congestion_measured.csv"

#: random bisection patterns per twin figure (the static figure's spread over patterns is
#: 0.014, so its standard error is 0.002, under the source's rounding of 0.005)
PATTERNS = 50
#: patterns per figure of the sensitivity table
SENSITIVITY_PATTERNS = 2 * PATTERNS
#: seed of the patterns (and, offset by the pattern index, of the ECMP hash draws)
PATTERN_SEED = 2008
#: the twin's node count for the row "adaptive, smaller node counts" (the source gives none)
SMALLER_NODES = 256


def rows() -> list[dict]:
    """The CSV's data rows (dicts of str)."""
    with open(CSV) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


@lru_cache(maxsize=1)
def myrinet_clos() -> nx.Graph:
    """The measured fabric: 512 nodes, 32-port switches, non-blocking two-tier Clos,
    one 10 Gb/s port per node."""
    return build_fabric("fat_tree", 512, rails=1, switch_ports=32, link_gbps=10.0,
                        gpus_per_node=1)


def bisection_patterns(nodes: np.ndarray, count: int, seed: int = PATTERN_SEED) -> list[np.ndarray]:
    """``count`` uniform random perfect matchings of ``nodes``, each as (n/2, 2) node pairs."""
    rng = np.random.default_rng(seed)
    nodes = np.asarray(nodes)
    return [rng.permutation(nodes).reshape(-1, 2) for _ in range(count)]


def pattern_ebb(pairs: np.ndarray, *, routing: str, qps: int = 1, policy: str = "max_min",
                seed: int = 0, graph: nx.Graph | None = None) -> float:
    """Mean rate fraction [-] of the pairs of one pattern, every pair a two-node job sharing
    the fabric (``twin.fabric.fair_share_bandwidths_gbps``)."""
    g = myrinet_clos() if graph is None else graph
    r = fair_share_bandwidths_gbps(g, list(pairs), routing=routing, qps=qps, seed=seed,
                                   policy=policy)
    return float(np.mean(r["fraction"]))


def effective_bisection(nodes: int = 512, *, routing: str, qps: int = 1, policy: str = "max_min",
                        patterns: int = PATTERNS, seed: int = PATTERN_SEED) -> np.ndarray:
    """The twin's figure of each of ``patterns`` random bisection patterns on the first
    ``nodes`` nodes [-]; their mean is the effective bisection bandwidth."""
    pats = bisection_patterns(np.arange(nodes), patterns, seed)
    return np.array([pattern_ebb(p, routing=routing, qps=qps, policy=policy, seed=seed + i)
                     for i, p in enumerate(pats)])


def destination_routed_ebb(patterns: int = PATTERNS, seed: int = PATTERN_SEED) -> np.ndarray:
    """Sensitivity to the route model: static routes chosen by destination (spine = the
    destination's port on its leaf, ``d mod 16``, as InfiniBand's and many source-routed
    fabrics' tables do) instead of hashed at random, shared max-min by the twin's solver
    (``twin.fabric.max_min_fractions``) on the same patterns [-] per pattern.

    In a permutation each spine then reaches each leaf for one destination only, so the
    down cables never collide; the up cables of a leaf collide as balls in bins.
    """
    leaf_nodes, spines, leaves = 16, 16, 32
    up0, down0 = 0, leaves * spines  # link ids: up (leaf, spine), down (spine, leaf)
    out = []
    for pairs in bisection_patterns(np.arange(512), patterns, seed):
        D = np.zeros((len(pairs), 2 * leaves * spines))
        for j, (a, b) in enumerate(pairs):
            if a // leaf_nodes == b // leaf_nodes:
                continue  # one leaf: no fabric link
            for s, d in ((a, b), (b, a)):
                sp = d % spines
                D[j, up0 + (s // leaf_nodes) * spines + sp] += 1.0
                D[j, down0 + (d // leaf_nodes) * spines + sp] += 1.0
        out.append(float(np.mean(max_min_fractions(D, np.ones(D.shape[1])))))
    return np.array(out)


def twin_figure(row: dict, patterns: int = PATTERNS) -> float:
    """The twin's effective bisection bandwidth [-] for one CSV row."""
    nodes = 512 if row["nodes"] == "512" else SMALLER_NODES
    routing = "ecmp" if row["routing"] == "static" else "adaptive"
    qps = int(row["flows_per_pair_direction"])
    return float(np.mean(effective_bisection(nodes, routing=routing, qps=qps,
                                             patterns=patterns)))


def errors(patterns: int = PATTERNS) -> list[dict]:
    """Each row with the twin's figure and the relative error (twin / measured - 1)."""
    out = []
    for r in rows():
        twin = twin_figure(r, patterns)
        measured = float(r["measured"])
        out.append({**r, "twin": twin, "error": twin / measured - 1.0})
    return out


def sensitivity(patterns: int = SENSITIVITY_PATTERNS) -> list[dict]:
    """The static 512-node figure under other readings of the setup [-]: mean, spread over
    patterns, smallest pattern, and the relative error against the measured 0.38."""
    measured = next(float(r["measured"]) for r in rows() if r["id"] == "GH08_STATIC_512")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("as set up: ECMP 1 flow per direction, max-min", dict(routing="ecmp", qps=1)),
        ("proportional sharing instead of max-min", dict(routing="ecmp", qps=1,
                                                         policy="proportional")),
        ("2 flows per direction", dict(routing="ecmp", qps=2)),
        ("4 flows per direction (the engine's fixed default)", dict(routing="ecmp", qps=4)),
    ]
    out = []
    for name, kw in cases:
        v = effective_bisection(512, patterns=patterns, **kw)
        out.append({"case": name, "mean": float(v.mean()), "std": float(v.std()),
                    "min": float(v.min()), "error": float(v.mean()) / measured - 1.0})
    v = destination_routed_ebb(patterns)
    out.append({"case": "static routes by destination (d mod 16), max-min", "mean": float(v.mean()),
                "std": float(v.std()), "min": float(v.min()),
                "error": float(v.mean()) / measured - 1.0})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sensitivity", action="store_true",
                    help="also the static figure under other readings of the setup (~1 min)")
    args = ap.parse_args()
    print(f"{'row':<22} {'nodes':>6} {'routing':>9} {'measured':>9} {'twin':>7} {'error':>8}")
    for e in errors():
        print(f"{e['id']:<22} {e['nodes'].split()[0]:>6} {e['routing']:>9} "
              f"{float(e['measured']):>9.2f} {e['twin']:>7.4f} {e['error']:>+8.1%}")
    if args.sensitivity:
        print("\nstatic, 512 nodes, other readings "
              f"({SENSITIVITY_PATTERNS} patterns; measured 0.38 over 5000):")
        print(f"{'case':<54} {'mean':>7} {'std':>7} {'min':>7} {'error':>8}")
        for s in sensitivity(SENSITIVITY_PATTERNS):
            print(f"{s['case']:<54} {s['mean']:>7.4f} {s['std']:>7.4f} {s['min']:>7.4f} "
                  f"{s['error']:>+8.1%}")


if __name__ == "__main__":
    main()
