"""The legacy cooling model under a total loss of cooling (issue 12): twelve units tripping at
one instant start from the hall's last steady state (not from the steady state of the units
left, which compounds), and racks that shut down stop heating the room inside the transient."""

from pathlib import Path

import numpy as np
import pytest

import twin
from twin.plant import build_plant
from twin.scenario import load_scenario
from twin.thermal import AIR_CP_J_KG_K, AIR_DENSITY_KG_M3

ROOT = Path(__file__).resolve().parents[2]
UNITS = ("crah_w1", "crah_w2", "crah_w3", "crah_w4", "crah_e1", "crah_e2", "crah_e3", "crah_e4",
         "crah_n1", "crah_n2", "crah_s1", "crah_s2")


@pytest.mark.slow
def test_total_loss_stays_within_what_the_racks_produced_before_they_shut_down():
    ev = ",".join(f'{{time: "2024-09-01T10:10:00", unit: "{u}", duration_s: 7200}}' for u in UNITS)
    s = load_scenario(ROOT / "scenarios" / "blue_vela.yaml", [
        "simulation.duration_days=1", "simulation.start=2024-09-01", "site.cooling_system.model=legacy",
        f"site.cooling_faults.events=[{ev}]"])
    r = twin.simulate(s)
    shut_c = s.site.cooling_system.server_inlet_shutdown_c
    # the racks reach their inlet protection and shut down (before the fix: 523 C recorded)
    assert r.kpis["max_rack_inlet_peak_c"] > shut_c
    assert "rack_thermal_shutdown" in set(r.events["kind"])
    # bound: a rack shuts when its inlet reaches the limit; the room is then at most one rack
    # temperature rise ahead of the inlets (Q / (rho cp V_rack), the hottest rack, full-speed
    # airflow of the catalog: the legacy model's fixed airflow), and no heat is produced after
    p = build_plant(s)
    v = float(np.min(p.model_param("airflow_m3_s_at_max")[p.rack_model] * p.rack_nodes))
    rise_k = float(r.dataset.rack_power_w.max()) / (AIR_DENSITY_KG_M3 * AIR_CP_J_KG_K * v)
    assert r.kpis["max_rack_inlet_peak_c"] <= shut_c + rise_k
