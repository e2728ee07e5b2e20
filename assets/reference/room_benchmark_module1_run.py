"""A measured room with partial hot-aisle containment for the cooling benchmark (issue 12): the
twin on RISE SICS ICE Module 1 as Wibron, Ljung & Lundstrom measured and simulated it.

Source: Wibron, Ljung & Lundstrom, "Computational Fluid Dynamics Modeling and Validating
Experiments of Airflow in a Data Center", Energies 11 (2018) 644, doi:10.3390/en11030644 (open
access, CC BY 4.0): tables 1-2 (each CRAC unit's face velocity and supply temperature, each
rack's face velocity and heat), the text (room, racks, door, instruments) and figure 6 (the
rack-front and rack-back temperatures at the sensors, 1.09 m above the rack doors' lower edge,
measured and from the authors' CFD), the last as digitised from the PDF's vector paths by
another project (Certonomous; see the CSV's header). Transcription:
``room_benchmark_module1_wibron2018.csv``; the room on the twin's grid and every assumption:
``room_benchmark_module1_layout.yaml`` (fixed before the first comparison).

What is compared, twin against measurement (nothing fitted, the shipped model defaults):
- rack fronts: the twin's air in front of the rack in the layer holding 1.09 m, and the rack's
  mean inlet (airflow mean over its layers), against the eight racks with a measured front;
- rack backs: the twin's rack exhaust, mean inlet + Q / (rho cp V) (what the authors' CFD
  applies on the rack's back face, its eq. 9), and the twin's air behind the rack in the
  sensor's layer, against the seven racks with a measured back;
- the same errors of the authors' CFD (RSM), a baseline of what a dedicated CFD reaches.
Then the twin alone with the door removed and with the hot aisle sealed, the five vertical
mixing laws (``--mixing LAW``) and the layout variants of the yaml.

Run (prints the tables of he_validation.md; ``--figure`` also writes
``room_benchmark_module1_fronts.png`` beside this file; ``--mixing LAW`` runs the main table
with that law; ``--sensitivity`` adds the layout variants):

    .venv/bin/python assets/reference/room_benchmark_module1_run.py [--figure] [--mixing LAW] [--sensitivity]
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from room_figure import save_figure

from twin.thermal.buoyancy import MIXING_LAW, PLUME_COEFFICIENT, buoyant_flow
from twin.thermal.geometry import HallGeometry
from twin.thermal.mixing import MIXING_LAWS
from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K

HERE = Path(__file__).resolve().parent
CSV = HERE / "room_benchmark_module1_wibron2018.csv"
LAYOUT = HERE / "room_benchmark_module1_layout.yaml"
N_RACKS = 10
CONFIGS = ("door", "open", "sealed")  # measured; door removed (twin only); hot aisle sealed (twin only)
RHO_1BAR_20C_KG_M3 = 1.204  # dry air at 20 C and 101.325 kPa, for the CFD's own mass flow (check only)


def reference() -> list[dict]:
    """The transcribed rows of the paper (comment lines dropped)."""
    with open(CSV) as f:
        return list(csv.DictReader(r for r in f if not r.startswith("#")))


def values(quantity: str, rows: list[dict] | None = None) -> dict[str, float]:
    """{item: value} of one quantity of the transcription (items R1-R10, C1-C4 or '')."""
    rows = reference() if rows is None else rows
    return {r["item"]: float(r["value"]) for r in rows if r["quantity"] == quantity}


def per_rack(quantity: str, rows: list[dict] | None = None) -> np.ndarray:
    """(10,) a rack quantity in rack order, NaN where the paper gives none."""
    v = values(quantity, rows)
    return np.array([v.get(f"R{i}", np.nan) for i in range(1, N_RACKS + 1)])


def per_unit(quantity: str, rows: list[dict] | None = None) -> np.ndarray:
    v = values(quantity, rows)
    return np.array([v[f"C{i}"] for i in range(1, 5)])


def layout(variant: str | None = None) -> dict:
    """The layout of the yaml with one named variant's replacements applied."""
    with open(LAYOUT) as f:
        lay = yaml.safe_load(f)
    if variant is None:
        return lay
    v = lay["variants"][variant]
    rk = lay["racks"]
    if "rows_from_wall_m" in v:  # the door moves with the rows' end
        shift = v["rows_from_wall_m"] - rk["rows_from_wall_m"]
        rk["rows_from_wall_m"] = v["rows_from_wall_m"]
        lay["door"]["xyxy_m"][1] += shift
        lay["door"]["xyxy_m"][3] += shift
    if "rows_x" in v:
        for row, (x0, x1) in zip(rk["rows"], v["rows_x"], strict=True):
            row["x_from_m"], row["x_to_m"] = x0, x1
        door = lay["door"]["xyxy_m"]
        door[0], door[2] = rk["rows"][1]["x_to_m"], rk["rows"][0]["x_from_m"]
    if "rack_depth_m" in v:
        rk["depth_m"] = v["rack_depth_m"]
    if "cooler_y" in v:  # [near-end unit's y range, near-wall unit's y range] on both walls
        (e0, e1), (w0, w1) = v["cooler_y"]
        for u in lay["coolers"]:
            u["y_from_m"], u["y_to_m"] = (e0, e1) if u["unit"] in (1, 3) else (w0, w1)
    if v.get("swap_unit_walls"):
        for u in lay["coolers"]:
            u["x_from_m"], u["x_to_m"] = ((0.0, 0.51) if u["unit"] in (1, 2)
                                          else (lay["room"]["width_m"] - 0.51, lay["room"]["width_m"]))
    if "face_R5_m2" in v:
        rk["face_m2"]["R5"] = v["face_R5_m2"]
    if "obstacles" in v:
        lay["obstacles"] = v["obstacles"]
    if "cell_m" in v:
        lay["twin_grid"]["cell_m"] = v["cell_m"]
    lay["unit_face_m2"] = v.get("unit_face_m2")
    lay["uniform_supply"] = bool(v.get("uniform_supply", False))
    return lay


def rack_face_m2(lay: dict) -> np.ndarray:
    """(10,) each rack's servers' face [m2] (layout ``face_m2``)."""
    f = lay["racks"]["face_m2"]
    return np.array([f.get(f"R{i}", f["full"]) for i in range(1, N_RACKS + 1)])


def implied_rack_face_m2(rho_kg_m3: float = RHO_1BAR_20C_KG_M3) -> np.ndarray:
    """(10,) the face [m2] the authors' CFD implies for each rack: it sets T_back = T_front +
    q / (m cp) (eq. 9) with m = rho v A, so A = q / (rho cp v (T_back - T_front)) from table 2
    and the digitised CFD bars of figure 6 (NaN for R5, which carries no heat)."""
    rows = reference()
    q, v = per_rack("rack_heat", rows), per_rack("rack_face_velocity", rows)
    rise = per_rack("back_cfd", rows) - per_rack("front_cfd", rows)
    cp = values("cp_used", rows)[""]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(q > 0, q / (rho_kg_m3 * cp * v * rise), np.nan)


@dataclass(frozen=True)
class Case:
    """Module 1 in one configuration: the door as measured, no door, or a sealed hot aisle."""

    config: str
    rack_heat_w: np.ndarray  # (10,)
    rack_airflow_m3_s: np.ndarray  # (10,) table 2 velocity x servers' face
    unit_airflow_m3_s: np.ndarray  # (4,) table 1 velocity x front face
    unit_supply_c: np.ndarray  # (4,) table 1


def case(config: str = "door", lay: dict | None = None) -> Case:
    """The measured inputs (tables 1-2) on the layout ``lay`` (default: the yaml's)."""
    lay = layout() if lay is None else lay
    rows = reference()
    o = lay["cooler_outlet"]
    face = lay.get("unit_face_m2") or o["width_m"] * (o["z_to_m"] - o["z_from_m"])
    supply = per_unit("crac_supply_temp", rows)
    if lay.get("uniform_supply"):
        supply = np.full(4, supply.mean())
    return Case(config, per_rack("rack_heat", rows), per_rack("rack_face_velocity", rows) * rack_face_m2(lay),
                per_unit("crac_face_velocity", rows) * face, supply)


def geometry(c: Case, lay: dict | None = None, **overrides) -> HallGeometry:
    """Module 1 on the twin's layered grid: racks in rack-number order, each unit drawing its
    return at its footprint (top layer) and blowing a wall jet from its front face across
    its cold aisle (twin.thermal.jets, as POD 2 and Module 2); the door a plan-view obstacle
    ("door"), none ("open"), or the twin's sealed hot-aisle containment with no leak
    ("sealed"). ``overrides`` replace HallGeometry fields (sensitivity only)."""
    lay = layout() if lay is None else lay
    rk, room, grid = lay["racks"], lay["room"], lay["twin_grid"]
    y0 = float(rk.get("rows_from_wall_m", 0.0))
    centre, intake = {}, {}
    for row in rk["rows"]:
        x = 0.5 * (row["x_from_m"] + row["x_to_m"])
        d = 1.0 if row["intake"] == "+x" else -1.0
        for k, r in enumerate(row["racks"]):
            centre[r], intake[r] = (x, y0 + (k + 0.5) * rk["width_m"]), (d, 0.0)
    units, outlets, throw = [], [], []
    for u in sorted(lay["coolers"], key=lambda u: u["unit"]):
        x, y = 0.5 * (u["x_from_m"] + u["x_to_m"]), 0.5 * (u["y_from_m"] + u["y_to_m"])
        units.append((x, y))
        outlets += [(x, y - 0.3), (x, y + 0.3)]
        throw.append((1.0 if x < 0.5 * room["width_m"] else -1.0, 0.0))
    out = lay["cooler_outlet"]
    obstacles = [list(o) for o in lay.get("obstacles", [])]
    if c.config == "door":
        obstacles.append(list(lay["door"]["xyxy_m"]))
    kw = dict(width_m=room["width_m"], depth_m=room["depth_m"], height_m=room["height_m"],
              rack_center_xy_m=np.array([centre[r] for r in range(1, N_RACKS + 1)]),
              rack_intake_dir=np.array([intake[r] for r in range(1, N_RACKS + 1)]),
              rack_width_m=rk["width_m"], rack_depth_m=rk["depth_m"], rack_height_m=rk["height_m"],
              cooling_xy_m=np.array(units), cooling_airflow_m3_s=c.unit_airflow_m3_s,
              cooling_supply_temp_c=c.unit_supply_c, cooling_capacity_w=np.full(len(units), 1e9),
              tile_xy_m=np.array(outlets), cell_m=grid["cell_m"], n_layers=grid["n_layers"],
              plenum_spread_m=grid["plenum_spread_m"], floor_leakage_fraction=grid["floor_leakage_fraction"],
              cooling_outlet_z_m=np.tile([out["z_from_m"], out["z_to_m"]], (len(units), 1)),
              cooling_outlet_width_m=np.full(len(units), float(out["width_m"])),
              cooling_throw_dir=np.array(throw))
    if obstacles:
        kw["obstacles_xyxy_m"] = np.array(obstacles, float)
    if c.config == "sealed":
        kw.update(containment="hot_aisle", containment_leakage_fraction=0.0)
    kw.update(overrides)
    return HallGeometry(**kw)


@dataclass(frozen=True)
class Result:
    """The twin on one case [C]; ``unit_heat_w`` each unit's heat removal [W]."""

    case: Case
    front_c: np.ndarray  # (10,) air in front of the rack, sensor layer
    inlet_c: np.ndarray  # (10,) rack mean inlet (over its layers)
    exhaust_c: np.ndarray  # (10,) inlet + Q / (rho cp V): the rack's outlet
    back_air_c: np.ndarray  # (10,) air behind the rack, sensor layer
    unit_heat_w: np.ndarray  # (4,)
    passes: int
    cpu_s: float


def run(c: Case, lay: dict | None = None, mixing: str = MIXING_LAW, coefficient: float = PLUME_COEFFICIENT,
        **overrides) -> Result:
    """The twin's buoyant layered field on one case (shipped defaults: c_b = ``coefficient``
    0.3, eddy diffusivity 0.1 m2/s, ``mixing`` the vertical mixing law)."""
    lay = layout() if lay is None else lay
    t0 = time.process_time()
    g = geometry(c, lay, **overrides)
    bf = buoyant_flow(g, c.rack_heat_w, c.rack_airflow_m3_s, coefficient=coefficient, mixing=mixing)
    p = bf.problem
    inlet = p.inlet_temp_c(bf.temp_c, c.rack_heat_w)
    n = p.grid.nx * p.grid.ny
    k = int(lay["sensor_height_m"] // (g.height_m / g.n_layers))  # the layer holding 1.09 m
    front = np.array([bf.temp_c[p.room_id[k * n + cells]].mean() for cells in p.grid.intake_cells])
    back = np.array([bf.temp_c[p.room_id[k * n + cells]].mean() for cells in p.grid.exhaust_cells])
    with np.errstate(invalid="ignore", divide="ignore"):
        rise = np.where(c.rack_airflow_m3_s > 0, c.rack_heat_w / (AIR_VOLUMETRIC_HEAT_J_M3_K * c.rack_airflow_m3_s), 0.0)
    ret = p.M @ bf.temp_c
    unit_heat = AIR_VOLUMETRIC_HEAT_J_M3_K * c.unit_airflow_m3_s * (ret - c.unit_supply_c)
    return Result(c, front, inlet, inlet + rise, back, unit_heat, bf.iterations, time.process_time() - t0)


@dataclass(frozen=True)
class Errors:
    """Twin (or CFD) minus measured [K] over the racks with a measurement."""

    racks: np.ndarray  # rack numbers compared
    error_k: np.ndarray

    @property
    def mae_k(self) -> float:
        return float(np.abs(self.error_k).mean())

    @property
    def bias_k(self) -> float:
        return float(self.error_k.mean())

    @property
    def worst(self) -> tuple[int, float]:
        i = int(np.argmax(np.abs(self.error_k)))
        return int(self.racks[i]), float(self.error_k[i])


def errors(predicted_c: np.ndarray, measured_c: np.ndarray) -> Errors:
    ok = ~np.isnan(measured_c)
    return Errors(np.flatnonzero(ok) + 1, (predicted_c - measured_c)[ok])


def measured() -> tuple[np.ndarray, np.ndarray]:
    """(front, back) measured [C], (10,) each, NaN where the paper plots no bar."""
    rows = reference()
    return per_rack("front_measured", rows), per_rack("back_measured", rows)


def cfd() -> tuple[np.ndarray, np.ndarray]:
    """(front, back) of the authors' CFD (RSM) [C], (10,) each."""
    rows = reference()
    return per_rack("front_cfd", rows), per_rack("back_cfd", rows)


def discrimination() -> dict[str, float]:
    """What the measurement can tell apart [K]: the measured mean front rise above the mean
    supply, its uncertainty from the stated accuracies (fronts +-1 K each, Raritan; supply
    +-(0.4 % + 0.3 K), Kimo VT100) taken (a) as independent errors, root-sum-square with the
    front mean's 1 / sqrt(n), and (b) as one shared offset, linear sum; the rack-to-rack
    spread of the measured fronts; the smallest mean front rise a model must predict before
    the 2 K goal fails (MAE = rise - measured rise, no rack below the measured)."""
    rows = reference()
    front, _ = measured()
    f = front[~np.isnan(front)]
    sup = per_unit("crac_supply_temp", rows)
    acc = values("sensor_accuracy", rows)[""]
    acc_s = values("supply_temp_accuracy_rel", rows)[""] * sup.mean() + values("supply_temp_accuracy_abs", rows)[""]
    rise = f.mean() - sup.mean()
    return {"supply_mean_c": float(sup.mean()), "front_rise_k": float(rise),
            "front_rise_min_k": float((f - sup.mean()).min()), "front_rise_max_k": float((f - sup.mean()).max()),
            "u_independent_k": float(np.hypot(acc / np.sqrt(f.size), acc_s)), "u_shared_k": float(acc + acc_s),
            "front_spread_sd_k": float(f.std(ddof=1)), "front_range_k": float(f.max() - f.min()),
            "rise_that_fails_2k_k": float(rise + 2.0)}


def run_configs(lay: dict | None = None, mixing: str = MIXING_LAW, **overrides) -> dict[str, Result]:
    lay = layout() if lay is None else lay
    return {cfg: run(case(cfg, lay), lay, mixing, **overrides) for cfg in CONFIGS}


def figure(res: dict[str, Result], out: Path = HERE / "room_benchmark_module1_fronts.png") -> Path:
    """Rack fronts and backs: measured (+-1 K), the authors' CFD and the twin (door, open,
    sealed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mf, mb = measured()
    cf, cb = cfd()
    racks = np.arange(1, N_RACKS + 1)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, m, cc, key, title in ((axes[0], mf, cf, "front_c", "rack front, 1.09 m"),
                                  (axes[1], mb, cb, "exhaust_c", "rack back (twin: exhaust, inlet + Q / rho cp V)")):
        ok = ~np.isnan(m)
        ax.errorbar(racks[ok], m[ok], yerr=1.0, fmt="ks", ms=5, capsize=3, label="measured (+-1 K)")
        ax.plot(racks, cc, "o", mfc="none", color="tab:gray", label="CFD (RSM), paper")
        for cfg, colour in (("door", "tab:red"), ("open", "tab:orange"), ("sealed", "tab:green")):
            ax.plot(racks, getattr(res[cfg], key), ".-", color=colour, lw=1, label=f"twin, {cfg}")
        if key == "front_c":
            ax.axhline(res["door"].case.unit_supply_c.mean(), color="tab:blue", lw=0.8, ls=":", label="mean supply")
        ax.set_title(title, fontsize=10)
        ax.set_xticks(racks)
        ax.set_xlabel("rack")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("temperature [C]")
    axes[0].legend(fontsize=8)
    return save_figure(fig, "SICS ICE Module 1 (Wibron et al., Energies 11 (2018) 644, fig. 6): "
                       "twin against measurement; supply 19.7-20.0 C", out)


def _row(name: str, front: Errors, inlet: Errors | None, back: Errors, extra: str = "") -> str:
    fi = f"{inlet.mae_k:.2f} / {inlet.bias_k:+.2f}" if inlet is not None else "-"
    return (f"| {name} | {front.mae_k:.2f} / {front.bias_k:+.2f} | R{front.worst[0]} {front.worst[1]:+.2f} | {fi} | "
            f"{back.mae_k:.2f} / {back.bias_k:+.2f} | R{back.worst[0]} {back.worst[1]:+.2f} |{extra}")


def _main() -> None:
    import sys
    mixing = sys.argv[sys.argv.index("--mixing") + 1] if "--mixing" in sys.argv else MIXING_LAW
    mf, mb = measured()
    cf, cb = cfd()
    t0 = time.process_time()
    res = run_configs(mixing=mixing)
    cpu = time.process_time() - t0
    if "--figure" in sys.argv and mixing == MIXING_LAW:
        print("wrote", figure(res))
    c = res["door"].case
    print(f"mixing {mixing}: 3 configurations in {cpu:.2f} s CPU ({', '.join(f'{k} {r.passes} passes' for k, r in res.items())})")
    print(f"unit air {c.unit_airflow_m3_s.sum():.3f} m3/s, rack air {c.rack_airflow_m3_s.sum():.3f} m3/s "
          f"(ratio {c.unit_airflow_m3_s.sum() / c.rack_airflow_m3_s.sum():.2f}), heat {c.rack_heat_w.sum():.0f} W")
    print("CFD-implied rack face [m2] (eq. 9 on fig. 6):", " ".join(f"{a:.3f}" for a in implied_rack_face_m2()))
    d = discrimination()
    print("discrimination:", ", ".join(f"{k} {v:.3f}" for k, v in d.items()))
    print("\n| model | front at 1.09 m: MAE / bias [K] | worst front | rack mean inlet vs front: MAE / bias | "
          "back: MAE / bias [K] | worst back | units remove / rack heat |")
    print("|---|---|---|---|---|---|---|")
    print(_row("CFD (RSM), the paper", errors(cf, mf), None, errors(cb, mb), " - |"))
    for cfg, r in res.items():
        print(_row(f"twin, {cfg}", errors(r.front_c, mf), errors(r.inlet_c, mf), errors(r.exhaust_c, mb),
                   f" {r.unit_heat_w.sum() / r.case.rack_heat_w.sum():.6f} |"))
    for cfg, r in res.items():
        print(f"twin {cfg}: back as hot-aisle air at 1.09 m: MAE / bias {errors(r.back_air_c, mb).mae_k:.2f} / "
              f"{errors(r.back_air_c, mb).bias_k:+.2f} K")
    print("\nper rack [C]: measured front / CFD / twin door front, inlet / open / sealed; back measured / CFD / twin door exhaust, air")
    for i in range(N_RACKS):
        print(f"R{i + 1:<2} {mf[i]:6.2f} {cf[i]:6.2f} {res['door'].front_c[i]:6.2f} {res['door'].inlet_c[i]:6.2f} "
              f"{res['open'].front_c[i]:6.2f} {res['sealed'].front_c[i]:6.2f} | {mb[i]:6.2f} {cb[i]:6.2f} "
              f"{res['door'].exhaust_c[i]:6.2f} {res['door'].back_air_c[i]:6.2f}")
    sup = c.unit_supply_c.mean()
    for cfg, r in res.items():
        print(f"twin {cfg}: front rise above mean supply mean {r.front_c.mean() - sup:.3f} K, max {r.front_c.max() - sup:.3f} K; "
              f"inlet rise mean {r.inlet_c.mean() - sup:.3f}, max {r.inlet_c.max() - sup:.3f} K")
    if "--laws" in sys.argv:
        print("\n| mixing law | door: front MAE / bias [K] | door: inlet MAE | back MAE | inlet rise above supply, mean / max: door | open | sealed | CPU [s], 3 solves |")
        print("|---|---|---|---|---|---|---|---|")
        for law in MIXING_LAWS:
            t1 = time.process_time()
            rr = run_configs(mixing=law)
            e = errors(rr["door"].front_c, mf)
            rise = " | ".join(f"{rr[k].inlet_c.mean() - sup:.2f} / {rr[k].inlet_c.max() - sup:.2f}" for k in CONFIGS)
            print(f"| {law} | {e.mae_k:.2f} / {e.bias_k:+.2f} | {errors(rr['door'].inlet_c, mf).mae_k:.2f} | "
                  f"{errors(rr['door'].exhaust_c, mb).mae_k:.2f} | {rise} | {time.process_time() - t1:.2f} |")
    if "--checks" in sys.argv:
        print("\n| model check (door) | front MAE / bias [K] | inlet MAE | back MAE | inlet rise mean / max |")
        print("|---|---|---|---|---|")
        checks: tuple[tuple[str, dict], ...] = (
            ("as shipped", {}), ("6 layers", {"n_layers": 6}), ("8 layers", {"n_layers": 8}),
            ("c_b 0 (potential flow)", {"coefficient": 0.0}), ("c_b 0.6", {"coefficient": 0.6}),
            *((f"eddy diffusivity {d} m2/s", {"eddy_diffusivity_m2_s": d}) for d in (0.05, 0.2, 0.4, 1.0)),
            ("floor supply (no jets)", {"cooling_outlet_z_m": None, "cooling_outlet_width_m": None, "cooling_throw_dir": None}))
        for name, kw in checks:
            r = run(case("door"), None, mixing, **kw)
            e = errors(r.front_c, mf)
            print(f"| {name} | {e.mae_k:.2f} / {e.bias_k:+.2f} | {errors(r.inlet_c, mf).mae_k:.2f} | {errors(r.exhaust_c, mb).mae_k:.2f} | "
                  f"{r.inlet_c.mean() - sup:.2f} / {r.inlet_c.max() - sup:.2f} |")
    if "--sensitivity" in sys.argv:
        print("\n| layout variant | door: front MAE / bias | worst | inlet MAE | back MAE | open: front rise mean | CPU [s] |")
        print("|---|---|---|---|---|---|---|")
        for name in [None, *layout()["variants"]]:
            t1 = time.process_time()
            lay = layout(name)
            rr = {cfg: run(case(cfg, lay), lay, mixing) for cfg in ("door", "open")}
            e = errors(rr["door"].front_c, mf)
            print(f"| {name or 'as fixed'} | {e.mae_k:.2f} / {e.bias_k:+.2f} | R{e.worst[0]} {e.worst[1]:+.2f} | "
                  f"{errors(rr['door'].inlet_c, mf).mae_k:.2f} | {errors(rr['door'].exhaust_c, mb).mae_k:.2f} | "
                  f"{rr['open'].front_c.mean() - sup:.2f} | {time.process_time() - t1:.2f} |")


if __name__ == "__main__":
    _main()
