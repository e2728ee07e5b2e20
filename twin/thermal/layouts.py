"""Builders of common hall layouts (rows of racks in hot/cold aisles, perimeter CRAHs)."""

from __future__ import annotations

import numpy as np

from .geometry import HallGeometry


def row_hall(
    n_rows: int,
    racks_per_row: int,
    *,
    rack_width_m: float = 0.6,
    rack_depth_m: float = 1.2,
    cold_aisle_m: float = 1.2,
    hot_aisle_m: float = 1.2,
    end_margin_m: float = 3.0,
    wall_margin_m: float = 1.2,
    height_m: float = 3.0,
    cooling_per_wall: int = 4,
    cooling_airflow_m3_s: float = 10.0,
    cooling_supply_temp_c: float = 18.0,
    cooling_capacity_w: float = 150e3,
    **geometry_kwargs,
) -> HallGeometry:
    """Hall with ``n_rows`` rows along x, paired face to face across cold aisles.

    Rows 0, 1 share the first cold aisle (row 0 faces +y, row 1 faces -y), rows 1, 2
    share a hot aisle, and so on. ``cooling_per_wall`` CRAH units stand at each end wall
    (x = 1 m and x = width - 1 m), spread evenly in y. Rack centres are returned row by
    row; the hall size follows from the rows and aisles.
    """
    row_len = racks_per_row * rack_width_m
    width = row_len + 2 * end_margin_m
    ys = []
    y = wall_margin_m
    for k in range(n_rows):
        ys.append(y + rack_depth_m / 2)
        y += rack_depth_m
        if k < n_rows - 1:
            y += cold_aisle_m if k % 2 == 0 else hot_aisle_m
    depth = y + wall_margin_m
    xs = end_margin_m + (np.arange(racks_per_row) + 0.5) * rack_width_m
    centres = np.array([(x, yc) for yc in ys for x in xs])
    dirs = np.array([(0.0, 1.0 if k % 2 == 0 else -1.0) for k in range(n_rows) for _ in xs])
    cy = (np.arange(cooling_per_wall) + 0.5) * depth / cooling_per_wall
    cool = np.concatenate([np.column_stack([np.full(cooling_per_wall, 1.0), cy]),
                           np.column_stack([np.full(cooling_per_wall, width - 1.0), cy])])
    n_c = len(cool)
    return HallGeometry(
        width_m=width,
        depth_m=depth,
        height_m=height_m,
        rack_center_xy_m=centres,
        rack_intake_dir=dirs,
        rack_width_m=rack_width_m,
        rack_depth_m=rack_depth_m,
        cooling_xy_m=cool,
        cooling_airflow_m3_s=np.full(n_c, cooling_airflow_m3_s),
        cooling_supply_temp_c=np.full(n_c, cooling_supply_temp_c),
        cooling_capacity_w=np.full(n_c, cooling_capacity_w),
        **geometry_kwargs,
    )
