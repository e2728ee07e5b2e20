"""The checkpoint study trains its job over the study's horizon (audit finding 11).

scenarios/studies/checkpoint.yaml varies granite_34b's checkpoint interval at 3x failure
rates over 120 days. The job needs 132 nodes (128 + 4 hot spares); blue_vela_fixed delivers
them with the 2024-04-01 wave, so a study started on the scenario's 2024-01-01 trained the
job only from 2024-04-04, 26 of its 120 days. Started 2024-04-04, the racks delivered by
then are powered at t = 0 and burn in for 3 days: the job starts on day 3 (117 of 120 days).
"""

from pathlib import Path

import numpy as np
import yaml

import twin

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "scenarios" / "studies" / "checkpoint.yaml"


def _study():
    spec = yaml.safe_load(STUDY.read_text())
    return spec, (STUDY.parent / spec["scenario"]).resolve()


def test_the_study_sets_a_horizon_of_120_days_from_the_jobs_nodes():
    spec, _ = _study()
    assert "simulation.duration_days=120" in spec["set"]
    assert "simulation.start=2024-04-04" in spec["set"]


def test_the_studied_job_starts_on_day_3_of_the_study():
    spec, scenario = _study()
    s = twin.load_scenario(scenario, [*spec["set"], "simulation.duration_days=5"])
    assert s.workload.jobs[0].name == "granite_34b"
    res = twin.simulate(s)
    ev = res.events
    starts = ev[(ev.kind == "job_start") & (ev.target == "granite_34b")].time_s.to_numpy()
    assert len(starts) >= 1
    # burn-in of the racks powered at t = 0 is 3 days: the job's first start is at 259,200 s
    np.testing.assert_allclose(starts[0], 3 * 86400.0)
    # so over the 120-day horizon the job can train 117 days (the old start gave 26)
    assert (120 * 86400.0 - starts[0]) / 86400.0 == 117.0
