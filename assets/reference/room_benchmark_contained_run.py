"""The contained-aisle room of the cooling benchmark (issue 12, point b): the twin on RISE SICS
ICE Module 2 as Wibron, Ljung & Lundstrom simulated it, hard and raised floor, open aisle and
aisle covers, at the measured supply and at half of it.

Source: Wibron, Ljung & Lundstrom, "Comparing Performance Metrics of Partial Aisle
Containments in Hard Floor and Raised Floor Data Centers Using CFD", Energies 12 (2019) 1473,
doi:10.3390/en12081473 (open access, CC BY 4.0); transcribed in
``room_benchmark_contained_wibron2019.csv`` (tables 1-6 and the text's RTI / RCI); layout and
its assumptions in ``room_benchmark_contained_layout.yaml``.

What the paper reports as numbers, and so what is compared: the **capture index** of every
rack (CI: the share of a rack's intake air that comes from the cooling units or tiles
without having passed a rack, VanGilder & Shrivastava, ASHRAE Trans. 113 (2007) 126), open
and with a side or top cover, at 100 % and 50 % supply; RTI and RCI_HI from the text. The
rack intake temperatures are contour pictures (its figures 7, 8, 10, 11), not numbers, so no
inlet-temperature error can be computed on this room.

The twin's capture index from its own linear heat operator (nothing fitted): with the flow
fixed, rack inlets rise above supply as theta_in = D Q. If F[i, j] is the share of rack i's
intake air that last left rack j's exhaust, theta_in = F (theta_in + dT) with dT = Q / (rho cp
V), so M = D diag(rho cp V) = (I - F)^-1 F, hence F = I - (I + M)^-1 and
CI = 1 - F.sum(1) = (I + M)^-1 . 1 (a rack's intake air comes either from a unit / tile or
from some rack's exhaust: the field with supply 1 and every exhaust 1 is 1 everywhere).
D is taken column by column from the converged buoyant problem (one solve per rack).

Run (prints the tables of docs/validation.md, "A contained room: SICS ICE Module 2"; with
``--figure`` also writes ``room_benchmark_contained_ci.png`` beside this file; with
``--mixing munk_anderson`` the buoyant field uses that opt-in mixing law, :mod:`twin.thermal.mixing`
(``munk_anderson_jets``, ``chen_xu``, ... likewise), and no figure is written):

    .venv/bin/python assets/reference/room_benchmark_contained_run.py [--figure] [--mixing LAW]
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from room_figure import save_figure

from twin.studies.room_benchmark import pod2_geometry
from twin.thermal.buoyancy import MIXING_LAW, buoyant_flow
from twin.thermal.geometry import HallGeometry
from twin.thermal.properties import AIR_DENSITY_KG_M3, AIR_VOLUMETRIC_HEAT_J_M3_K

HERE = Path(__file__).resolve().parent
CSV = HERE / "room_benchmark_contained_wibron2019.csv"
LAYOUT = HERE / "room_benchmark_contained_layout.yaml"
FLOORS = ("hard", "raised")
COVERS = ("open", "side", "full")  # "full": the twin's sealed containment (the paper has none)
N_RACKS = 10
RCI_RECOMMENDED_C, RCI_ALLOWABLE_C = 27.0, 32.0  # ASHRAE A1 (Herrlin 2005)


def reference() -> list[dict]:
    """The transcribed rows of the paper (comment lines dropped)."""
    with open(CSV) as f:
        return list(csv.DictReader(r for r in f if not r.startswith("#")))


def _values(rows, quantity, floor, cover="", supply_pct="") -> np.ndarray:
    sel = [r for r in rows if r["quantity"] == quantity and r["floor"] == floor
           and r["cover"] == cover and r["supply_pct"] == str(supply_pct)]
    sel.sort(key=lambda r: int(r["item"][1:]))
    return np.array([float(r["value"]) for r in sel])


def layout() -> dict:
    with open(LAYOUT) as f:
        return yaml.safe_load(f)


@dataclass(frozen=True)
class Case:
    """One configuration of the paper: floor, cover, share of the measured supply."""

    floor: str
    cover: str
    supply_share: float
    rack_heat_w: np.ndarray
    rack_airflow_m3_s: np.ndarray
    unit_airflow_m3_s: np.ndarray
    supply_c: float
    ci_paper_pct: np.ndarray | None  # (10,) or None (cover "full": not in the paper)

    @property
    def unit_discharge_c(self) -> np.ndarray:
        """(4,) every unit supplies at the measured 18.3 C (the POD 2 encoding's input)."""
        return np.full(self.unit_airflow_m3_s.size, self.supply_c)


def cases(face_m2: float | None = None) -> list[Case]:
    """Every floor x cover x supply (1.0, 0.5). Rack air: the paper's mass flow over the twin's
    air density (so each rack's rise Q / (m cp) is the paper's); cooling air: raised floor, the
    14 tiles' measured velocity x 0.36 m2, shared evenly by the four units (the plenum feeds
    the tiles); hard floor, each unit's measured face velocity x ``face_m2`` (default the
    outlet of the layout, 1.0 x 1.775 m)."""
    rows, lay = reference(), layout()
    supply = float(next(r["value"] for r in rows if r["quantity"] == "supply_temp"))
    out = []
    for floor in FLOORS:
        heat = _values(rows, "rack_heat", floor)
        air = _values(rows, "rack_mass_flow", floor) / AIR_DENSITY_KG_M3
        if floor == "raised":
            tiles = _values(rows, "tile_velocity", "raised", "", 100) * lay["tiles"]["side_m"] ** 2
            units = np.full(4, tiles.sum() / 4)
        else:
            o = lay["cooler_outlet"]
            face = o["width_m"] * (o["z_to_m"] - o["z_from_m"]) if face_m2 is None else face_m2
            units = _values(rows, "crah_face_velocity", "hard", "", 100) * face
        for cover in COVERS:
            for share, pct in ((1.0, 100), (0.5, 50)):
                ci = _values(rows, "capture_index", floor, cover, pct) if cover != "full" else None
                out.append(Case(floor, cover, share, heat, air, share * units, supply, ci))
    return out


def geometry(case: Case, cell_m: float | None = None, **overrides) -> HallGeometry:
    """Module 2 on the twin's layered grid (room_benchmark_contained_layout.yaml), built by the
    POD 2 encoding (:func:`twin.studies.room_benchmark.pod2_geometry`). Hard floor: the coolers
    blow wall jets from their outlets (twin.thermal.jets, as on POD 2); raised floor: the
    coolers feed the plenum, which feeds the 14 tiles (1 % floor leakage, the least the twin
    takes; the paper gives all the air to the tiles). Cover "side": an obstacle across the
    central aisle's open end; "full": the twin's sealed containment of that aisle (hot aisle on
    the hard floor, cold aisle on the raised floor), no leakage. ``overrides`` replace
    HallGeometry fields (for sensitivity studies only)."""
    lay = layout()
    rk = lay["racks"]
    pod = dict(room=lay["room"], coolers=lay["coolers"], cooler_outlet=lay["cooler_outlet"],
               twin_grid=lay["twin_grid"], racks=dict(rk, rows=rk[f"{case.floor}_floor_rows"]))
    if case.cover == "side":
        pod["obstacles"] = [lay["side_cover"][f"{case.floor}_floor"]]
    kw = {} if cell_m is None else {"cell_m": cell_m}
    if case.floor == "raised":
        t = lay["tiles"]
        kw["tile_xy_m"] = np.array([(x, y) for y in t["y_centres_m"] for x in t["x_centres_m"]])
    if case.cover == "full":
        kw.update(containment="hot_aisle" if case.floor == "hard" else "cold_aisle", containment_leakage_fraction=0.0)
    kw.update(overrides)
    return pod2_geometry(case, "wall_jet" if case.floor == "hard" else "floor", layout=pod, **kw)


def capture_index(recirculation_k_per_w: np.ndarray, rack_airflow_m3_s: np.ndarray) -> np.ndarray:
    """Cold-aisle capture index of each rack [-] from the recirculation matrix D [K/W]:
    CI = (I + D diag(rho cp V))^-1 . 1 (module docstring)."""
    m = np.asarray(recirculation_k_per_w, float) * (AIR_VOLUMETRIC_HEAT_J_M3_K * np.asarray(rack_airflow_m3_s, float))
    return np.linalg.solve(np.eye(m.shape[0]) + m, np.ones(m.shape[0]))


def rci_hi_pct(inlet_c: np.ndarray) -> float:
    """Rack Cooling Index, high side [%] (Herrlin, ASHRAE Trans. 111 (2005) 725)."""
    over = np.clip(np.asarray(inlet_c, float) - RCI_RECOMMENDED_C, 0, None).sum()
    return 100.0 * (1.0 - over / (inlet_c.size * (RCI_ALLOWABLE_C - RCI_RECOMMENDED_C)))


@dataclass(frozen=True)
class Result:
    case: Case
    inlet_c: np.ndarray  # (10,) rack inlet (airflow mean over its layers)
    ci: np.ndarray  # (10,) twin's capture index [-]
    rti_pct: float  # (T_return - T_supply) / dT_equip, airflow-weighted
    rci_hi_pct: float
    tile_flow_m3_s: np.ndarray | None  # raised floor: each tile's delivery

    @property
    def ci_error_points(self) -> np.ndarray:
        """(10,) twin - paper capture index [percentage points]."""
        return 100.0 * self.ci - self.case.ci_paper_pct

    @property
    def implied_inlet_error_k(self) -> np.ndarray:
        """(10,) what the CI gap is worth at the rack inlet [K], an estimate: the twin's inlet
        rise minus the rise the rack would have with the paper's CI and the twin's own
        recirculated air, (1 - CI_paper) theta / (1 - CI_twin), theta = inlet - supply (0 where
        the twin recirculates under 0.1 %: its rise is then that small too)."""
        theta = self.inlet_c - self.case.supply_c
        recirc = 1.0 - self.ci
        hot = np.where(recirc > 1e-3, theta / np.maximum(recirc, 1e-3), 0.0)
        return theta - (1.0 - self.case.ci_paper_pct / 100.0) * hot


def run(case: Case, cell_m: float | None = None, mixing: str = MIXING_LAW, **overrides) -> Result:
    """The twin on one case; ``mixing``: the buoyant field's vertical mixing law
    (:func:`twin.thermal.buoyancy.buoyant_flow`, default the shipped one)."""
    g = geometry(case, cell_m, **overrides)
    bf = buoyant_flow(g, case.rack_heat_w, case.rack_airflow_m3_s, mixing=mixing)
    p = bf.problem
    inlet = p.inlet_temp_c(bf.temp_c, case.rack_heat_w)
    base = p.inlet_temp_c(p.solve(np.zeros(N_RACKS)), np.zeros(N_RACKS))
    unit_w = 1000.0
    d = np.stack([(p.inlet_temp_c(p.solve(unit_w * e), unit_w * e) - base) / unit_w for e in np.eye(N_RACKS)], axis=1)
    ci = capture_index(d, case.rack_airflow_m3_s)
    ret = p.M @ bf.temp_c
    v_c, v_r = case.unit_airflow_m3_s, case.rack_airflow_m3_s
    rise = case.rack_heat_w / (AIR_VOLUMETRIC_HEAT_J_M3_K * v_r)
    rti = 100.0 * ((v_c * ret).sum() / v_c.sum() - case.supply_c) / ((v_r * rise).sum() / v_r.sum())
    tiles = None
    if case.floor == "raised":
        tiles = np.array([p.floor_flow_m3_s[c].sum() for c in p.grid.tile_cells])
    return Result(case, inlet, ci, float(rti), rci_hi_pct(inlet), tiles)


def run_all(face_m2: float | None = None, cell_m: float | None = None, mixing: str = MIXING_LAW,
            **overrides) -> tuple[list[Result], float]:
    """Every case of :func:`cases`; returns the results and the CPU time [s] they took."""
    t0 = time.process_time()
    res = [run(c, cell_m, mixing, **overrides) for c in cases(face_m2)]
    return res, time.process_time() - t0


def figure(res: list[Result], out: Path = HERE / "room_benchmark_contained_ci.png") -> Path:
    """Per-rack capture index, paper (CFD) against twin, open aisle and side cover, and the
    twin's sealed aisle (not in the paper): one panel per floor and supply."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(r.case.floor, r.case.cover, r.case.supply_share): r for r in res}
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4), sharex=True, sharey=True)
    racks = np.arange(1, N_RACKS + 1)
    for ax, (floor, share) in zip(axes.ravel(), [(f, s) for f in FLOORS for s in (1.0, 0.5)], strict=True):
        for cover, colour in (("open", "tab:red"), ("side", "tab:blue")):
            r = by[(floor, cover, share)]
            ax.plot(racks, r.case.ci_paper_pct, "o", color=colour, mfc="none", label=f"paper (CFD), {cover}")
            ax.plot(racks, 100 * r.ci, "s-", color=colour, ms=4, lw=1, label=f"twin, {cover}")
        sealed = by[(floor, "full", share)]  # the twin's sealed aisle (not in the paper)
        ax.plot(racks, 100 * sealed.ci, "^--", color="tab:green", ms=4, lw=1,
                label="twin, sealed " + ("hot" if floor == "hard" else "cold") + " aisle")
        ax.set_title(f"{floor} floor, {100 * share:.0f} % of the measured supply", fontsize=10)
        ax.set_ylim(35, 101)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("rack")
        ax.set_xticks(racks)
    for ax in axes[:, 0]:
        ax.set_ylabel("capture index [%]")
    axes[0, 0].legend(fontsize=8, loc="lower right")
    axes[1, 0].legend(handles=axes[1, 0].get_lines()[-1:], fontsize=8, loc="lower right")
    return save_figure(fig, "SICS ICE Module 2 (Wibron et al., Energies 12 (2019) 1473, tables "
                       "5-6): share of each rack's intake air from the cooling units", out)


def _main() -> None:
    import sys
    mixing = sys.argv[sys.argv.index("--mixing") + 1] if "--mixing" in sys.argv else MIXING_LAW
    res, cpu = run_all(mixing=mixing)
    if "--figure" in sys.argv and mixing == MIXING_LAW:
        print("wrote", figure(res))
    print(f"{len(res)} solves (buoyant field + 10 unit-heat solves each, mixing {mixing}): {cpu:.1f} s CPU")
    print("| floor | cover | supply | CI paper, mean / min [%] | CI twin, mean / min [%] | CI error, MAE / bias [points] | "
          "implied inlet error, MAE / max [K] | rack inlet twin, mean / max [C] | RTI twin [%] | RCI_HI twin [%] |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in res:
        c = r.case
        ci = 100 * r.ci
        if c.ci_paper_pct is not None:
            e, k = r.ci_error_points, np.abs(r.implied_inlet_error_k)
            pp = f"{c.ci_paper_pct.mean():.1f} / {c.ci_paper_pct.min():.1f}"
            err = f"{np.abs(e).mean():.1f} / {e.mean():+.1f} | {k.mean():.2f} / {k.max():.2f}"
        else:
            pp, err = "-", "- | -"
        print(f"| {c.floor} | {c.cover} | {100 * c.supply_share:.0f} % | {pp} | {ci.mean():.1f} / {ci.min():.1f} | {err} | "
              f"{r.inlet_c.mean():.2f} / {r.inlet_c.max():.2f} | {r.rti_pct:.0f} | {r.rci_hi_pct:.0f} |")
    print("\nper rack, CI [%] twin / paper")
    for r in res:
        c = r.case
        if c.ci_paper_pct is None:
            continue
        print(c.floor, c.cover, int(100 * c.supply_share), " ".join(
            f"R{i + 1} {100 * r.ci[i]:.1f}/{c.ci_paper_pct[i]:.1f}" for i in range(N_RACKS)))
    for r in res:
        if r.tile_flow_m3_s is not None and r.case.cover == "open":
            rows = reference()
            meas = _values(rows, "tile_velocity", "raised", "", 100) * 0.36 * r.case.supply_share
            print(f"tiles {100 * r.case.supply_share:.0f} %: twin {r.tile_flow_m3_s.min():.3f}-{r.tile_flow_m3_s.max():.3f} "
                  f"m3/s (sum {r.tile_flow_m3_s.sum():.2f}); measured {meas.min():.3f}-{meas.max():.3f} (sum {meas.sum():.2f})")


if __name__ == "__main__":
    _main()
