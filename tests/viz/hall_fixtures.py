"""A hall drawn from fixed numbers (shared by the render tests): its scenario, a synthetic
steady field and snapshots of it."""

import numpy as np

from twin.viz import snapshot as S


def make_fixed_scenario(small_scenario):
    """A hall drawn from fixed numbers only, so the reference images do not move when the
    shipped scenarios or the physics change: 10 m x 8 m, one row of four racks breathing
    from the south (enclosed), two cooling units, a column and a low cable tray."""
    data = small_scenario.model_dump()
    cu = dict(airflow_m3_s=3.0, capacity_kw=45.0, supply_temp_c=20.0)
    data["site"]["halls"] = [dict(
        name="room", width_m=10.0, depth_m=8.0, height_m=3.0, containment="none", cell_m=0.4,
        rows=[dict(name="r1", x_m=3.5, y_m=3.4, racks=4, along="x", pitch_m=0.6, intake="south", enclosure=True)],
        cooling_units=[dict(cu, name="c1", x_m=1.0, y_m=1.0), dict(cu, name="c2", x_m=9.0, y_m=1.0)],
        obstacles=[dict(name="col", kind="column", x0_m=8.0, y0_m=6.0, x1_m=8.4, y1_m=6.4),
                   dict(name="tray", kind="cable_tray", x0_m=1.0, y0_m=6.8, x1_m=6.0, y1_m=7.2)])]
    return type(small_scenario).model_validate(data)


def synthetic_field(hall, rack_xy, width_m=0.6, depth_m=1.2):
    """A field in steady_field's format from a formula: a warm plume behind the racks and
    a clockwise swirl around the hall centre."""
    import xarray as xr

    h = hall.cell_m
    nx, ny = round(hall.width_m / h), round(hall.depth_m / h)
    x = (np.arange(nx) + 0.5) * h
    y = (np.arange(ny) + 0.5) * h
    X, Y = np.meshgrid(x, y)
    solid = np.zeros((ny, nx), bool)
    for cx, cy in rack_xy:
        solid |= (np.abs(X - cx) < width_m / 2) & (np.abs(Y - cy) < depth_m / 2)
    t = 20.0 + 12.0 * np.exp(-((X - 4.4) ** 2 + (Y - 5.0) ** 2) / 4.0)
    u = (Y - 4.0) * 0.1
    v = -(X - 5.0) * 0.1
    t[solid], u[solid], v[solid] = np.nan, np.nan, np.nan
    return xr.Dataset(
        {"temperature": (("y_m", "x_m"), t), "velocity": (("component", "y_m", "x_m"), np.stack([u, v])),
         "solid": (("y_m", "x_m"), solid)},
        coords={"x_m": x, "y_m": y, "component": ["x", "y"]}, attrs={"cell_m": h, "height_m": hall.height_m})


def fixed_snapshot(scenario, quantity, values, states, field=False):
    from twin.plant import build_plant

    p = build_plant(scenario)
    values = np.asarray(values, float)
    scale = (S.color_scale(quantity, np.array([18.0, 30.0])) if quantity == "inlet_temp"
             else S.color_scale(quantity, values))
    fields = [synthetic_field(scenario.site.halls[0], p.rack_xy_m)] if field else []
    return S.Snapshot(scenario=scenario, rack_xy_m=p.rack_xy_m, rack_intake=p.rack_intake,
                      rack_enclosed=p.rack_enclosed, rack_hall=p.rack_hall, rack_state=np.asarray(states),
                      rack_value=values, rack_heat_w=np.full(len(values), 10e3), scale=scale,
                      cooling_active=[np.array([True, False])], label="fixed", caption="a fixed caption",
                      fields=fields)
