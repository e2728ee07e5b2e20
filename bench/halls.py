"""Data halls of the scale benchmarks, built as plain scenario dicts (one builder for
``gigawatt.py``, ``bench_scale.py`` and ``bench_mixed_racks.py``).

A hall holds rows of up to :data:`RACKS_PER_ROW` four-node racks, filled in order, with hot
and cold aisles (rows alternately take air from the north and the south, 2.4 m and 3.6 m
apart, each in an enclosure), and cooling units on its two long walls: at least four, one per
row beyond that, blowing 1.3x the racks' airflow at full load (0.6 m3/s per XE9680 node)
and sized at ``kw_per_rack`` of capacity per rack.
"""

from __future__ import annotations

from collections.abc import Callable

RACKS_PER_ROW = 32
NODES_PER_RACK = 4
#: cooling air per node at full load [m3/s] (XE9680) and the margin the units blow above it
NODE_AIRFLOW_M3_S, AIRFLOW_MARGIN = 0.6, 1.3


def data_hall(name: str, n_racks: int, rows_per_hall: int, kw_per_rack: float, *,
              row_extra: Callable[[int], dict] | None = None, round_unit_y: bool = False,
              nodes_per_rack: int = NODES_PER_RACK) -> dict:
    """One hall of ``n_racks`` racks in up to ``rows_per_hall`` rows of 32 (a scenario
    ``site.halls`` entry). ``row_extra(k)`` adds fields to row ``k`` (a node model, say);
    ``round_unit_y`` rounds the units' positions to the centimetre."""
    rows, y, left = [], 3.0, n_racks
    for r in range(rows_per_hall):
        k = min(RACKS_PER_ROW, left)
        if k <= 0:
            break
        rows.append({"name": f"r{r}", "x_m": 3.3, "y_m": y, "racks": k, **(row_extra(r) if row_extra else {}),
                     "intake": "north" if r % 2 == 0 else "south", "enclosure": True})
        left -= k
        y += 2.4 if r % 2 == 0 else 3.6
    width, depth = 3.3 + RACKS_PER_ROW * 0.6 + 3.0, y + 2.0
    n_units = max(4, len(rows))
    racks = sum(r["racks"] for r in rows)
    airflow = AIRFLOW_MARGIN * racks * nodes_per_rack * NODE_AIRFLOW_M3_S / n_units
    units = []
    for i in range(n_units):
        uy = 2.0 + (depth - 4.0) * (i // 2) / max(n_units // 2 - 1, 1)
        units.append({"name": f"c{i}", "x_m": 1.0 if i % 2 == 0 else width - 1.0,
                      "y_m": round(uy, 2) if round_unit_y else uy, "airflow_m3_s": round(airflow, 1),
                      "capacity_kw": round(racks * kw_per_rack / n_units), "supply_temp_c": 18})
    return {"name": name, "width_m": round(width, 1), "depth_m": round(depth, 1), "height_m": 4.0,
            "cell_m": 0.6, "rows": rows, "cooling_units": units}


def data_halls(n_racks: int, racks_per_hall: int, rows_per_hall: int, kw_per_rack: float,
               name: Callable[[int], str] = lambda i: f"hall{i}", **kw) -> list[dict]:
    """Halls of up to ``racks_per_hall`` racks each until ``n_racks`` are placed (the last
    one takes the rest); ``kw`` as :func:`data_hall`."""
    halls, left = [], n_racks
    while left > 0:
        k = min(racks_per_hall, left)
        halls.append(data_hall(name(len(halls)), k, rows_per_hall, kw_per_rack, **kw))
        left -= k
    return halls
