"""Room benchmarks of the buoyant air model (issue 12).

**A measured room** (:func:`pod2_comparison`): RISE SICS ICE "POD 2", twelve racks and four
wall coolers, measured in ten steady configurations of 27-104 kW (layout
``scenarios/validation/rise_pod2.yaml``; window means ``assets/reference/room_benchmark_pod2_*.csv``,
from the time series published with the Rafsine lattice-Boltzmann simulator). The twin runs
on it with its shipped parameters (nothing fitted) and reports its inlet temperatures where
the pod was measured: the front sensor strips (three heights at four racks) and the
servers' own inlet sensors (every rack), with the coolers' air entering at the floor
(``supply="floor"``) or as wall jets from their measured outlets (``"wall_jet"``,
:mod:`twin.thermal.jets`). **Held out** (:func:`pod2_2018_comparison`): the same pod in
January 2018 (ten racks, strips on every rack; ``scenarios/validation/rise_pod2_2018.yaml``).
docs/validation.md gives the errors.

**What a benchmark can tell the plume coefficient** (:func:`plume_coefficient_sensitivity`):
how far rack inlets move when c_b of :mod:`twin.thermal.buoyancy` (0.3, from plume theory)
spans its plausible range, against how far they move with the things a benchmark
reports (cooling air against rack air), in an open and a cold-aisle-contained hall.

The hall there is :func:`twin.thermal.row_hall` (rows face to face across cold aisles, perimeter
CRAHs feeding a raised floor, layered room), each rack carrying ``rack_heat_w`` at a
``rack_delta_t_k`` air temperature rise, V = Q / (rho cp dT)
(:func:`twin.thermal.rack_airflow_m3_s`). Inlets are the buoyant field's
(:func:`twin.thermal.buoyancy.buoyant_flow`), reported as the rise above the supply
temperature [K].
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from twin.thermal import rack_airflow_m3_s, row_hall
from twin.thermal.buoyancy import MIXING_LAW, PLUME_COEFFICIENT, buoyant_flow
from twin.thermal.geometry import HallGeometry
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K

__all__ = ["CoefficientSensitivity", "Pod2Case", "Pod2Comparison", "cooler_airflow_m3_s", "plume_coefficient_sensitivity",
           "pod2_2018_cases", "pod2_2018_comparison", "pod2_2018_layout", "pod2_cases", "pod2_comparison",
           "pod2_geometry", "pod2_layout", "pod2_rack_airflow_check", "pod2_system_flow_fraction", "rack_heat_w", "strip_balance_airflow_m3_s"]

LAYOUTS = ("open", "cold_aisle")


@dataclass(frozen=True)
class CoefficientSensitivity:
    """Inlet rise above supply [K] of a row hall, by layout, airflow ratio and c_b.

    ``hottest_inlet_rise_k`` and ``mean_inlet_rise_k`` have shape
    (len(layouts), len(airflow_ratios), len(coefficients)).
    """

    layouts: tuple[str, ...]
    airflow_ratios: np.ndarray  # cooling-unit air / rack air [-]
    coefficients: np.ndarray  # plume coefficient c_b [-]
    hottest_inlet_rise_k: np.ndarray
    mean_inlet_rise_k: np.ndarray

    def span_k(self, which: str = "mean") -> np.ndarray:
        """Largest minus smallest inlet rise over the coefficients [K], (layout, ratio)."""
        a = self.mean_inlet_rise_k if which == "mean" else self.hottest_inlet_rise_k
        return a.max(axis=-1) - a.min(axis=-1)


def plume_coefficient_sensitivity(airflow_ratios=(0.8, 0.9, 1.1, 1.3),
                                  coefficients=(0.0, 0.15, 0.3, 0.6), *,
                                  n_rows: int = 4, racks_per_row: int = 10,
                                  cooling_per_wall: int = 2, rack_heat_w: float = 10e3,
                                  rack_delta_t_k: float = 15.0, n_layers: int = 4,
                                  containment_leakage_fraction: float = 0.05,
                                  supply_temp_c: float = 18.0,
                                  layouts=LAYOUTS) -> CoefficientSensitivity:
    """Hottest and mean rack-inlet rise above supply [K] over airflow ratio x c_b.

    For each ratio r the ``2 * cooling_per_wall`` units share r times the racks' total
    airflow, V_unit = r sum(V_rack) / n_units [m3/s]; ``layouts`` are ``"open"`` (no
    containment) and ``"cold_aisle"`` (contained cold aisles with a
    ``containment_leakage_fraction`` leak). ``coefficients`` are passed to
    :func:`twin.thermal.buoyancy.buoyant_flow` (0 = potential flow).
    """
    ratios = np.asarray(airflow_ratios, float)
    coefs = np.asarray(coefficients, float)
    n = n_rows * racks_per_row
    heat = np.full(n, float(rack_heat_w))
    airflow = rack_airflow_m3_s(heat, rack_delta_t_k)
    n_units = 2 * cooling_per_wall
    hot = np.empty((len(layouts), ratios.size, coefs.size))
    mean = np.empty_like(hot)
    for j, r in enumerate(ratios):
        base = row_hall(n_rows, racks_per_row, cooling_per_wall=cooling_per_wall,
                        cooling_airflow_m3_s=r * float(airflow.sum()) / n_units,
                        cooling_supply_temp_c=supply_temp_c, n_layers=n_layers,
                        containment_leakage_fraction=containment_leakage_fraction)
        for i, layout in enumerate(layouts):
            g = base if layout == "open" else replace(base, containment=layout)
            for k, c in enumerate(coefs):
                bf = buoyant_flow(g, heat, airflow, coefficient=float(c))
                rise = bf.problem.inlet_temp_c(bf.temp_c, heat) - supply_temp_c
                hot[i, j, k] = rise.max()
                mean[i, j, k] = rise.mean()
    return CoefficientSensitivity(tuple(layouts), ratios, coefs, hot, mean)


# --------------------------------------------------------------------------------------
# The measured room: RISE SICS ICE POD 2 (scenarios/validation/rise_pod2.yaml)
# --------------------------------------------------------------------------------------

_ROOT = Path(__file__).resolve().parents[2]
POD2_LAYOUT = _ROOT / "scenarios" / "validation" / "rise_pod2.yaml"
POD2_DATA = _ROOT / "assets" / "reference"
RACK_AIRFLOWS = ("fan_law", "strip_balance", "fan_curve")
CFM_M3_S = 0.3048**3 / 60.0  # one cubic foot per minute [m3/s]


def rack_heat_w(server_power_w, it_power_w):
    """Heat of each rack [W]: its servers' measured power plus an even share of the rest of
    the measured IT power (network, PSU losses: 6.5-7.5 kW in POD 2 whatever the load),
    Q_r = P_servers,r + (P_IT - sum P_servers) / R, so that sum Q_r = P_IT (all IT power
    ends as heat in the room)."""
    p = np.asarray(server_power_w, float)
    return p + (float(it_power_w) - p.sum()) / p.size


def cooler_airflow_m3_s(cooler_heat_w, return_temp_c, discharge_temp_c, fan_signal_pct):
    """Airflow of each cooling unit [m3/s] from the coolers' measured heat removal:
    V_total = Q / (rho cp mean(T_return - T_discharge)) (sensible heat, ASHRAE Handbook -
    Fundamentals), shared in proportion to each unit's fan signal (fan law, V ~ speed)."""
    dt = np.asarray(return_temp_c, float) - np.asarray(discharge_temp_c, float)
    total = float(cooler_heat_w) / (AIR_VOLUMETRIC_HEAT_J_M3_K * dt.mean())
    sig = np.asarray(fan_signal_pct, float)
    return total * sig / sig.sum()


@dataclass(frozen=True)
class Pod2Case:
    """One measured steady configuration of POD 2 (window means; racks 1-12, units 1-4)."""

    name: str
    it_power_w: float
    cooler_heat_w: float
    rack_heat_w: np.ndarray  # (12,)
    rack_airflow_m3_s: np.ndarray  # (12,)
    fan_law_airflow_m3_s: np.ndarray  # (12,) server fans' speed law (whatever rack_airflow says)
    server_inlet_c: np.ndarray  # (12,) mean of each rack's 30 server inlet sensors
    unit_airflow_m3_s: np.ndarray  # (4,)
    unit_signal_airflow_m3_s: np.ndarray  # (4,) 2.2 m3/s x fan signal (Rafsine's input), a check
    unit_discharge_c: np.ndarray  # (4,)
    strip_rack: np.ndarray  # (4,) rack number of each sensor strip
    strip_front_c: np.ndarray  # (4, 3) bottom / middle / top at the rack front
    strip_rear_c: np.ndarray  # (4, 3)


def _read_csv(name: str, data_set: str = "pod2") -> list[dict]:
    import csv
    with open(POD2_DATA / f"room_benchmark_{data_set}_{name}.csv") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _by_config(data_set: str = "pod2"):
    """Per configuration of ``room_benchmark_{data_set}_*.csv``: (its configs row, its rack rows
    by rack number, its unit rows by unit number)."""
    racks, units = _read_csv("racks", data_set), _read_csv("units", data_set)
    for c in _read_csv("configs", data_set):
        yield (c, sorted((r for r in racks if r["config"] == c["config"]), key=lambda r: int(r["rack"])),
               sorted((u for u in units if u["config"] == c["config"]), key=lambda u: int(u["unit"])))


def _col(rows: list[dict], key: str) -> np.ndarray:
    return np.array([float(r[key]) for r in rows])


def pod2_layout() -> dict:
    """The pod's layout and grid encoding (scenarios/validation/rise_pod2.yaml)."""
    import yaml
    with open(POD2_LAYOUT) as f:
        return yaml.safe_load(f)


def pod2_cases(rack_airflow: str = "fan_law") -> list[Pod2Case]:
    """The ten measured configurations of POD 2 (five of 2019-10-01: idle, then 6 of the
    12 racks at ~9 kW in four arrangements; five load steps of 2019-10-02, 27-104 kW).

    ``rack_airflow``: ``"fan_law"`` (default) gives each rack 30 servers x 7.78e-6 m3/s per
    fan rpm (the fans' datasheet point, flow ~ speed; independent of every temperature);
    ``"strip_balance"`` scales the fan law per configuration so that the four instrumented
    racks carry their heat at the measured front-to-back air rise of their sensor strips
    (bottom and middle sensors), V = Q / (rho cp (T_rear - T_front));
    ``"fan_curve"`` gives each rack phi x its fans' free delivery at the measured speed
    (:func:`twin.thermal.fans.fan_system_airflow_m3_s`), with one phi for all
    configurations fitted on the first day (:func:`pod2_system_flow_fraction`).
    """
    if rack_airflow not in RACK_AIRFLOWS:
        raise ValueError(f"rack_airflow must be one of {RACK_AIRFLOWS}, got {rack_airflow!r}")
    lay = pod2_layout()
    per_rpm = float(lay["server_fans"]["airflow_m3_s_per_rpm"]) * int(lay["server_fans"]["servers_per_rack"])
    strips = np.asarray(lay["sensor_strips"]["racks"], int)
    phi = pod2_system_flow_fraction() if rack_airflow == "fan_curve" else None
    cases = []
    col = _col
    for c, rk, un in _by_config():
        name = c["config"]
        heat = rack_heat_w(col(rk, "server_power_w"), float(c["it_power_w"]))
        fan = col(rk, "fan_rpm") * per_rpm
        by_rack = {int(r["rack"]): r for r in rk}
        front = np.array([[float(by_rack[s][f"front_{h}_c"]) for h in ("bottom", "middle", "top")] for s in strips])
        rear = np.array([[float(by_rack[s][f"rear_{h}_c"]) for h in ("bottom", "middle", "top")] for s in strips])
        airflow = fan
        if rack_airflow == "strip_balance":
            i = strips - 1
            v_meas = heat[i] / (AIR_VOLUMETRIC_HEAT_J_M3_K * (rear[:, :2].mean(1) - front[:, :2].mean(1)))
            airflow = fan * float(np.mean(v_meas / fan[i]))
        elif rack_airflow == "fan_curve":
            airflow = _free_delivery_m3_s(col(rk, "fan_rpm"), lay) * phi
        sig = col(un, "fan_signal_pct")
        cases.append(Pod2Case(
            name=name, it_power_w=float(c["it_power_w"]), cooler_heat_w=float(c["cooler_heat_w"]),
            rack_heat_w=heat, rack_airflow_m3_s=airflow, fan_law_airflow_m3_s=fan,
            server_inlet_c=col(rk, "server_inlet_c"),
            unit_airflow_m3_s=cooler_airflow_m3_s(float(c["cooler_heat_w"]), col(un, "return_c"),
                                                  col(un, "discharge_c"), sig),
            unit_signal_airflow_m3_s=2.2 * sig / 100.0, unit_discharge_c=col(un, "discharge_c"),
            strip_rack=strips, strip_front_c=front, strip_rear_c=rear))
    return cases


def _free_delivery_m3_s(fan_rpm, lay: dict) -> np.ndarray:
    """Each rack's server fans' free-delivery airflow at their measured speed [m3/s]."""
    from twin.thermal.fans import fan_free_delivery_airflow_m3_s
    f = lay["server_fans"]
    return fan_free_delivery_airflow_m3_s(
        fan_rpm, rated_airflow_m3_s=float(f["fan_rated_airflow_cfm"]) * CFM_M3_S, rated_rpm=float(f["fan_rated_rpm"]),
        fans=int(f["fans_per_server"]) * int(f["servers_per_rack"]))


def pod2_rack_airflow_check() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Per configuration: (name, the instrumented racks' strip-balance airflow, their free
    delivery) [m3/s], (4,) each: what :func:`pod2_system_flow_fraction` fits on and what
    the second day validates."""
    lay = pod2_layout()
    strips = np.asarray(lay["sensor_strips"]["racks"], int)
    out = []
    for c, rk, _ in _by_config():
        i = strips - 1
        heat = rack_heat_w(_col(rk, "server_power_w"), float(c["it_power_w"]))[i]
        front = np.array([[float(rk[s - 1][f"front_{h}_c"]) for h in ("bottom", "middle", "top")] for s in strips])
        rear = np.array([[float(rk[s - 1][f"rear_{h}_c"]) for h in ("bottom", "middle", "top")] for s in strips])
        out.append((c["config"], strip_balance_airflow_m3_s(heat, front, rear),
                    _free_delivery_m3_s(_col(rk, "fan_rpm"), lay)[i]))
    return out


def pod2_system_flow_fraction(fit_on=None) -> float:
    """phi, the share of free delivery POD 2's server fans move through their servers [-],
    fitted once: sum of the strip-balance airflow of the instrumented racks over the sum of
    their free delivery, over the configurations ``fit_on`` (default: rise_pod2.yaml's
    ``system_flow_fraction_fit_on``, the first day's five)."""
    from twin.thermal.fans import system_flow_fraction
    names = pod2_layout()["server_fans"]["system_flow_fraction_fit_on"] if fit_on is None else fit_on
    rows = [(v, f) for n, v, f in pod2_rack_airflow_check() if n in names]
    return system_flow_fraction(np.concatenate([v for v, _ in rows]), np.concatenate([f for _, f in rows]))


SUPPLIES = ("floor", "wall_jet")


def pod2_geometry(case: Pod2Case, supply: str = "floor", *, layout: dict | None = None, **overrides) -> HallGeometry:
    """POD 2 on the twin's layered grid (the encoding of rise_pod2.yaml, ``twin_grid``).

    Racks in rack-number order; each cooling unit draws its return at its footprint (top
    layer) and blows its airflow at its discharge temperature into the bottom layer
    through two 0.6 m outlets over its footprint (``supply="floor"``), or blows a wall jet from
    its measured outlet (``"wall_jet"``: 1.0 m wide, 0.10-1.875 m high, away from its wall;
    :mod:`twin.thermal.jets`). ``overrides`` replace HallGeometry fields
    (for sensitivity studies); everything not named keeps its shipped default. ``layout``:
    the pod's layout dict (default rise_pod2.yaml; :func:`pod2_2018_layout` for January 2018).
    """
    lay = pod2_layout() if layout is None else layout
    rk, room, grid = lay["racks"], lay["room"], lay["twin_grid"]
    centre, intake = {}, {}
    for row in rk["rows"]:
        x = 0.5 * (row["x_from_m"] + row["x_to_m"])
        d = 1.0 if row["intake"] == "+x" else -1.0
        for k, r in enumerate(row["racks"]):
            centre[r], intake[r] = (x, (k + 0.5) * rk["width_m"]), (d, 0.0)
    ids = sorted(centre)
    units, outlets = [], []
    for u in lay["coolers"]:
        x, y = 0.5 * (u["x_from_m"] + u["x_to_m"]), 0.5 * (u["y_from_m"] + u["y_to_m"])
        units.append((x, y))
        outlets += [(x, y - 0.3), (x, y + 0.3)]
    kw = dict(width_m=room["width_m"], depth_m=room["depth_m"], height_m=room["height_m"],
              rack_center_xy_m=np.array([centre[r] for r in ids]), rack_intake_dir=np.array([intake[r] for r in ids]),
              rack_width_m=rk["width_m"], rack_depth_m=rk["depth_m"], rack_height_m=rk["height_m"],
              cooling_xy_m=np.array(units), cooling_airflow_m3_s=case.unit_airflow_m3_s,
              cooling_supply_temp_c=case.unit_discharge_c, cooling_capacity_w=np.full(len(units), 1e9),
              tile_xy_m=np.array(outlets), cell_m=grid["cell_m"], n_layers=grid["n_layers"],
              plenum_spread_m=grid["plenum_spread_m"], floor_leakage_fraction=grid["floor_leakage_fraction"])
    if lay.get("obstacles"):
        kw["obstacles_xyxy_m"] = np.array(lay["obstacles"], float)
    if supply not in SUPPLIES:
        raise ValueError(f"supply must be one of {SUPPLIES}, got {supply!r}")
    if supply == "wall_jet":
        out = lay["cooler_outlet"]
        kw.update(cooling_outlet_z_m=np.tile([out["z_from_m"], out["z_to_m"]], (len(units), 1)),
                  cooling_outlet_width_m=np.full(len(units), float(out["width_m"])),
                  cooling_throw_dir=np.array([[1.0 if x < 0.5 * room["width_m"] else -1.0, 0.0] for x, _ in units]))
    kw.update(overrides)
    return HallGeometry(**kw)


@dataclass(frozen=True)
class Pod2Comparison:
    """Twin against measurement for every configuration (c configurations, 12 racks,
    4 strips x 3 heights); temperatures [C], errors twin - measured [K]."""

    names: tuple[str, ...]
    twin_inlet_c: np.ndarray  # (c, 12) rack inlet (mean over the rack's layers)
    server_inlet_c: np.ndarray  # (c, 12) measured, servers' own sensors
    twin_strip_c: np.ndarray  # (c, 4, 3) twin at the strip positions (rack front, strip height's layer)
    strip_front_c: np.ndarray  # (c, 4, 3) measured
    airflow_ratio: np.ndarray  # (c,) cooling air / rack air
    cpu_s: float  # CPU time of all the twin's solves

    @property
    def strip_error_k(self) -> np.ndarray:
        return self.twin_strip_c - self.strip_front_c

    @property
    def server_error_k(self) -> np.ndarray:
        return self.twin_inlet_c - self.server_inlet_c

    def strip_mae_k(self, height: int | None = None) -> float:
        """Mean absolute error at the strips [K], all heights or one (0 bottom, 1 middle, 2 top)."""
        e = self.strip_error_k if height is None else self.strip_error_k[..., height]
        return float(np.abs(e).mean())

    def server_mae_k(self) -> float:
        """Mean absolute rack-inlet error against the servers' inlet sensors [K]."""
        return float(np.abs(self.server_error_k).mean())


def pod2_comparison(rack_airflow: str = "fan_law", *, supply: str = "floor", coefficient: float = PLUME_COEFFICIENT,
                    names=None, mixing: str = MIXING_LAW, **overrides) -> Pod2Comparison:
    """Run the twin's buoyant layered field on every POD 2 configuration (no parameter
    fitted: the layout encoding of rise_pod2.yaml and the shipped model defaults) and
    collect what it predicts where the pod was measured. ``mixing``: the vertical mixing
    law of the buoyant passes (:func:`twin.thermal.buoyancy.buoyant_flow`)."""
    cases = [c for c in pod2_cases(rack_airflow) if names is None or c.name in names]
    return _compare(cases, pod2_layout(), supply, coefficient, overrides, mixing)


def _compare(cases, lay: dict, supply: str, coefficient: float, overrides: dict,
             mixing: str = MIXING_LAW) -> Pod2Comparison:
    import time
    heights = np.asarray(lay["sensor_strips"]["heights_m"], float)
    tin, tstrip, ratio = [], [], []
    t0 = time.process_time()
    for case in cases:
        g = pod2_geometry(case, supply, layout=lay, **overrides)
        bf = buoyant_flow(g, case.rack_heat_w, case.rack_airflow_m3_s, coefficient=coefficient, mixing=mixing)
        p = bf.problem
        tin.append(p.inlet_temp_c(bf.temp_c, case.rack_heat_w))
        n = p.grid.nx * p.grid.ny
        z = (np.arange(g.n_layers) + 0.5) * g.height_m / g.n_layers
        layers = [int(np.argmin(np.abs(z - h))) for h in heights]
        tstrip.append([[bf.temp_c[p.room_id[k * n + p.grid.intake_cells[r - 1]]].mean() for k in layers]
                       for r in case.strip_rack])
        ratio.append(case.unit_airflow_m3_s.sum() / case.rack_airflow_m3_s.sum())
    cpu = time.process_time() - t0
    return Pod2Comparison(tuple(c.name for c in cases), np.array(tin), np.array([c.server_inlet_c for c in cases]),
                          np.array(tstrip), np.array([c.strip_front_c for c in cases]), np.array(ratio), cpu)


# --------------------------------------------------------------------------------------
# Held out: the same pod in January 2018 (scenarios/validation/rise_pod2_2018.yaml)
# --------------------------------------------------------------------------------------

POD2_2018_LAYOUT = _ROOT / "scenarios" / "validation" / "rise_pod2_2018.yaml"


def pod2_2018_layout() -> dict:
    """The January 2018 layout of POD 2 (ten racks, closed hot-aisle end; rise_pod2_2018.yaml)."""
    import yaml
    with open(POD2_2018_LAYOUT) as f:
        return yaml.safe_load(f)


def strip_balance_airflow_m3_s(rack_heat_w, front_c, rear_c):
    """Rack airflow from its sensor strips' energy balance [m3/s]: V = Q / (rho cp (T_rear -
    T_front)), the rise taken over the bottom and middle sensors (the top ones sit above the
    servers); ``front_c``, ``rear_c`` shape (R, 3)."""
    rise = np.asarray(rear_c, float)[:, :2].mean(1) - np.asarray(front_c, float)[:, :2].mean(1)
    return np.asarray(rack_heat_w, float) / (AIR_VOLUMETRIC_HEAT_J_M3_K * rise)


def pod2_2018_cases() -> list[Pod2Case]:
    """The six quasi-steady load steps of January 2018 (last hour of each, 56.6-33.9 kW).

    Rack heat: each rack's measured three-phase power. Rack airflow: each rack's strip
    balance (:func:`strip_balance_airflow_m3_s`; three racks have no fan data, so no fan law
    for all). Cooler airflow: the coolers' measured air mass flow over rho = 1.2 kg/m3;
    supply temperature: their measured discharge. Servers' inlet sensors were not published
    (NaN)."""
    from twin.thermal.properties import AIR_DENSITY_KG_M3
    strips = np.asarray(pod2_2018_layout()["sensor_strips"]["racks"], int)
    cases = []
    col = _col
    for c, rk, un in _by_config("pod2_2018"):
        name = c["config"]
        heat = col(rk, "power_w")
        front = np.stack([col(rk, f"front_{h}_c") for h in ("bottom", "middle", "top")], axis=1)
        rear = np.stack([col(rk, f"rear_{h}_c") for h in ("bottom", "middle", "top")], axis=1)
        airflow = strip_balance_airflow_m3_s(heat, front, rear)
        nan_r, nan_u = np.full(heat.size, np.nan), np.full(len(un), np.nan)
        cases.append(Pod2Case(
            name=name, it_power_w=float(c["it_power_w"]), cooler_heat_w=float(c["cooler_heat_w"]),
            rack_heat_w=heat, rack_airflow_m3_s=airflow, fan_law_airflow_m3_s=nan_r, server_inlet_c=nan_r,
            unit_airflow_m3_s=col(un, "mass_flow_kg_s") / AIR_DENSITY_KG_M3, unit_signal_airflow_m3_s=nan_u,
            unit_discharge_c=col(un, "discharge_c"), strip_rack=strips,
            strip_front_c=front[strips - 1], strip_rear_c=rear[strips - 1]))
    return cases


def pod2_2018_comparison(*, supply: str = "wall_jet", coefficient: float = PLUME_COEFFICIENT,
                         mixing: str = MIXING_LAW, **overrides) -> Pod2Comparison:
    """The twin on the held-out January 2018 pod (every model setting as on October 2019)."""
    return _compare(pod2_2018_cases(), pod2_2018_layout(), supply, coefficient, overrides, mixing)
