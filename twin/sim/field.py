"""Steady thermal fields of a run's halls, for the 3-D viewer (not needed by the engine)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from twin import thermal


def peak_sample_fields(engine, results) -> dict[str, xr.Dataset]:
    """The steady temperature and velocity field of every hall at the sample of peak IT power.

    One full sparse solve per hall (``thermal.steady_field``) with that sample's rack heat.
    The Dataset carries ``time`` of the sample in its attrs.
    """
    ds = results.dataset
    i = int(np.argmax(ds.facility_it_power_w.values))
    # below outputs.rack_series: full the recorder kept the racks' power at that sample
    heat = (ds.rack_power_w.values[i] if "rack_power_w" in ds else ds.rack_power_at_peak_w.values).astype(float)
    out = {}
    for h, hall in enumerate(engine.s.site.halls):
        model = engine.thermal.halls[h]
        f = thermal.steady_field(model.geom, heat[model.idx], engine.thermal.rack_airflow_m3_s[model.idx])
        f.attrs["time"] = str(ds.time.values[i])
        f.attrs["hall"] = hall.name
        out[hall.name] = f
    return out
