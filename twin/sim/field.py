"""Steady thermal fields of a run's halls, for the 3-D viewer (not needed by the engine)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from twin import thermal
from twin.thermal.airflow import flow_field_airflow_m3_s

#: ``attrs["rack_airflow"]`` of a field file: where its racks' airflow comes from
AIRFLOW_OF_RUN = "the run's rack airflow at this sample (servers' fan law, the engine's airflow state)"
AIRFLOW_DESIGN = "every rack at its nodes' full-speed design airflow"


def peak_sample_fields(engine, results) -> dict[str, xr.Dataset]:
    """The steady temperature and velocity field of every hall at the sample of peak IT power.

    One full sparse solve per hall with that sample's rack heat, at the state the run held
    then: the racks' airflow of the engine at that sample (``rack_airflow: fan_model``: the
    servers' fan law, :attr:`twin.sim.hall_thermal.HallThermal.peak_airflow`; else, or under
    the legacy model, every rack's full-speed design airflow) and the run's recirculation
    model (``recirculation: buoyant``: the converged layered Boussinesq flow on the buoyant
    grid, :func:`twin.thermal.buoyancy.buoyant_field`; else the plan view,
    :func:`twin.thermal.steady_field`). Every cooling unit runs. The Dataset carries ``time``
    of the sample, ``hall``, ``model``, ``rack_airflow`` (what the racks blow) and
    ``run_inlet_max_diff_k`` (largest |field - run| rack inlet at the sample [K]: the run's
    inlets are its recirculation matrix's, linear in the heat; with every unit running a
    buoyant matrix is interpolated between knots derived at a uniform airflow over the racks
    and at each knot's fan-law heat. The heat costs at most 0.3 K; the uniform airflow
    costs nothing measurable in the shipped halls (0.01 K) but 2-3.5 K in an under-supplied
    hall whose busy racks draw more than their share of the supply; helper HBZ, 2 Dec 2026,
    tests/sim/test_buoyant_heat_scaling.py) in its attrs.
    """
    ds = results.dataset
    i = int(np.argmax(ds.facility_it_power_w.values))
    th = engine.thermal
    peak = getattr(th, "peak_airflow", None)
    if "rack_power_w" in ds and peak is not None and th.cs.rack_airflow == "fan_model":
        # the sample of most rack heat, whose airflow the engine kept (the peak IT sample up
        # to round-off: several samples of a plateau may tie)
        i = int(peak[0])
    # below outputs.rack_series: full the recorder kept the racks' power at that sample
    heat = (ds.rack_power_w.values[i] if "rack_power_w" in ds else ds.rack_power_at_peak_w.values).astype(float)
    run_airflow = (th.physical and th.cs.rack_airflow == "fan_model" and peak is not None
                   and bool(np.isclose(peak[1], heat.sum(), rtol=1e-6, atol=1.0)))
    buoyant = th.physical and th.cs.recirculation == "buoyant"
    out = {}
    for h, hall in enumerate(engine.s.site.halls):
        model = th.halls[h]
        airflow = peak[2][h] if run_airflow and peak is not None else th.rack_airflow_m3_s[model.idx]
        # racks off at that sample draw no air; the field solver needs air through every rack,
        # so a stopped one passes the running racks' scale (it gives off no heat)
        airflow = flow_field_airflow_m3_s(airflow, th.rack_airflow_m3_s[model.idx])
        if buoyant:
            from twin.thermal.buoyancy import buoyant_field
            f = buoyant_field(th.buoyant_geometry(model.geom), heat[model.idx], airflow)
        else:
            f = thermal.steady_field(model.geom, heat[model.idx], airflow)
        f.attrs["time"] = str(ds.time.values[i])
        f.attrs["hall"] = hall.name
        f.attrs["rack_airflow"] = AIRFLOW_OF_RUN if run_airflow else AIRFLOW_DESIGN
        if "rack_inlet_c" in ds:
            # the run's inlets come from its recirculation matrix (linear in the heat; under
            # recirculation: buoyant derived at each airflow knot's uniform airflow and heat),
            # this field from a full solve at the sample's heat and airflow: say by how much
            # they differ
            run_c = np.asarray(ds.rack_inlet_c.values[i][model.idx], float)
            d = np.abs(f["rack_inlet_temp"].values - run_c)
            f.attrs["run_inlet_max_diff_k"] = float(np.nanmax(d)) if np.isfinite(d).any() else float("nan")
        out[hall.name] = f
    return out
