"""Richardson-damped vertical mixing on the measured room, RISE POD 2 (issue 12, point d):
what it does to the rack-front error and to the growth of the mixing excess with load,
asserted as measured (docs/validation.md, cooling; assets/reference/room_benchmark_pod2_mixing.py).
Wall-jet supply; October 2019 with fan-curve rack air (phi fitted on day 1 before this
study, not refitted), January 2018 held out with strip-balance air; the laws' constants
are their sources'."""

import sys
from pathlib import Path

import numpy as np
import pytest

from twin.studies.room_benchmark import pod2_2018_comparison, pod2_cases, pod2_comparison

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "assets" / "reference"))
from room_benchmark_pod2_mixing import mixing_excess_k  # noqa: E402


@pytest.fixture(scope="module")
def runs():
    return {m: (pod2_comparison("fan_curve", supply="wall_jet", mixing=m), pod2_2018_comparison(supply="wall_jet", mixing=m))
            for m in ("constant", "munk_anderson", "munk_anderson_jets", "chen_xu")}


def test_damped_mixing_lowers_the_october_error_and_its_bias(runs):
    const, damped = runs["constant"][0], runs["munk_anderson"][0]
    assert const.strip_mae_k() == pytest.approx(1.83, abs=0.02)  # the shipped figure
    assert damped.strip_mae_k() == pytest.approx(1.24, abs=0.03)  # measured, 30 Nov 2026
    assert damped.strip_mae_k() <= 2.0
    assert abs(damped.strip_error_k.mean()) < 0.3 < const.strip_error_k.mean()  # +1.33 -> +0.10 K
    # day 2, not used to fit phi: 1.94 -> 1.20 K
    assert np.abs(damped.strip_error_k[5:]).mean() < np.abs(const.strip_error_k[5:]).mean() - 0.5


def test_damped_mixing_moves_the_excess_growth_toward_the_pod(runs):
    cases = pod2_cases("fan_curve")
    kw = np.array([c.rack_heat_w.sum() for c in cases])
    lo, hi = int(np.argmin(kw)), int(np.argmax(kw))
    _, t_const, pod = mixing_excess_k(runs["constant"][0], cases)
    _, t_damp, _ = mixing_excess_k(runs["munk_anderson"][0], cases)
    g_pod, g_const, g_damp = (x[hi] - x[lo] for x in (pod, t_const, t_damp))
    assert g_pod == pytest.approx(1.72, abs=0.05) and g_const == pytest.approx(4.70, abs=0.1)
    assert g_pod < g_damp < g_const  # 4.70 -> 3.58 K against the pod's 1.72 K: toward it, not there
    assert g_damp == pytest.approx(3.58, abs=0.1)


def test_damped_mixing_loses_the_held_out_pod(runs):
    # January 2018 (over-supplied, the twin already reads cold): less mixing reads colder still,
    # 1.46 -> 2.58 K, above the 2 K goal. Why the damping is not the shipped default.
    const, damped = runs["constant"][1], runs["munk_anderson"][1]
    assert const.strip_mae_k() == pytest.approx(1.46, abs=0.02)
    assert damped.strip_mae_k() == pytest.approx(2.58, abs=0.05)
    assert damped.strip_error_k.mean() < const.strip_error_k.mean() < 0


def test_jet_and_ceiling_shear_keep_both_pods_within_the_goal(runs):
    # the shear at the top edge of the coolers' jets and under the exhaust plumes' ceiling jets
    # (Brown & Roshko's mixing-layer growth, ASHRAE jet laws, Rouse et al.'s line plume; nothing
    # fitted) added to the layer-mean shear: January 2.58 -> 1.89 K, October 1.24 -> 1.42 K
    # (the constant's 1.83 / 1.46): both sets within the 2 K goal
    const, damped, jets = runs["constant"], runs["munk_anderson"], runs["munk_anderson_jets"]
    assert jets[0].strip_mae_k() == pytest.approx(1.42, abs=0.03)  # measured, 1 Dec 2026
    assert damped[0].strip_mae_k() < jets[0].strip_mae_k() < const[0].strip_mae_k()
    assert jets[1].strip_mae_k() == pytest.approx(1.89, abs=0.03)
    assert const[1].strip_mae_k() < jets[1].strip_mae_k() <= 2.0 < damped[1].strip_mae_k()
    assert damped[1].strip_error_k.mean() < jets[1].strip_error_k.mean() < const[1].strip_error_k.mean()
    # excess growth from 27 to 104 kW: 4.00 K (constant 4.70, damped 3.58, the pod 1.72)
    cases = pod2_cases("fan_curve")
    kw = np.array([c.rack_heat_w.sum() for c in cases])
    lo, hi = int(np.argmin(kw)), int(np.argmax(kw))
    _, t_jets, pod = mixing_excess_k(jets[0], cases)
    _, t_const, _ = mixing_excess_k(const[0], cases)
    g_jets = t_jets[hi] - t_jets[lo]
    assert g_jets == pytest.approx(4.00, abs=0.1) and pod[hi] - pod[lo] < g_jets < t_const[hi] - t_const[lo]


def test_jet_and_ceiling_shear_grid_convergence(runs):
    # halved cells, same layers (issue 12's check against a refined solve, within 1 K): October
    # 0.31 -> 0.155 m moves the strips by 0.42 K on average (1.64 K at the worst sensor), MAE
    # 1.42 -> 1.23 K; January 0.4 -> 0.2 m by 0.12 K (0.79 K), MAE 1.89 -> 1.85 K. Measured (+-0.1 K)
    law = "munk_anderson_jets"
    oct_fine = pod2_comparison("fan_curve", supply="wall_jet", mixing=law, cell_m=0.155)
    jan_fine = pod2_2018_comparison(supply="wall_jet", mixing=law, cell_m=0.2)
    for coarse, fine, moved in ((runs[law][0], oct_fine, 0.42), (runs[law][1], jan_fine, 0.12)):
        d = np.abs(fine.twin_strip_c - coarse.twin_strip_c)
        assert d.mean() == pytest.approx(moved, abs=0.1) and d.mean() < 1.0
        assert abs(fine.strip_mae_k() - coarse.strip_mae_k()) < 0.3


def _growth_k(comparison):
    cases = pod2_cases("fan_curve")
    kw = np.array([c.rack_heat_w.sum() for c in cases])
    lo, hi = int(np.argmin(kw)), int(np.argmax(kw))
    _, twin, pod = mixing_excess_k(comparison, cases)
    return twin[hi] - twin[lo], pod[hi] - pod[lo]


def test_chen_xu_mixing_on_both_pods(runs):
    # Chen & Xu's flow-dependent eddy diffusivity (nu_t = 0.03874 |V| l / Pr_t, Energy Build. 28
    # (1998) 137; Munk & Anderson damping on vertical faces; H5, 1 Dec 2026) in place of the
    # constant 0.1 m2/s. Three conditions were set before it was run for making it the default:
    # (1) both POD 2 sets within 2 K, (2) Module 2 at half supply better than the constant in
    # every case (test_contained_room.py: holds), (3) the excess growth closer to the pod's.
    cx, const = runs["chen_xu"], runs["constant"]
    # October: 1.83 / +1.33 -> 1.62 / -1.14 K (it now reads cold)
    assert cx[0].strip_mae_k() == pytest.approx(1.62, abs=0.03)
    assert cx[0].strip_error_k.mean() == pytest.approx(-1.14, abs=0.05)
    # held-out January: 1.46 -> 2.47 K, above the 2 K goal (top sensors 2.95 -> 4.52 K): (1) fails,
    # so the law stays opt-in
    assert cx[1].strip_mae_k() == pytest.approx(2.47, abs=0.03)
    assert cx[1].strip_mae_k() > 2.0 > const[1].strip_mae_k()
    # (3) holds: the excess over the two-zone bound grows 3.04 K from 27 to 104 kW (constant 4.70,
    # pod 1.72)
    g_cx, g_pod = _growth_k(cx[0])
    g_const, _ = _growth_k(const[0])
    assert g_cx == pytest.approx(3.04, abs=0.1)
    assert abs(g_cx - g_pod) < abs(g_const - g_pod)


def test_chen_xu_grid_convergence(runs):
    # halved cells, same layers (issue 12's check against a refined solve, within 1 K): October
    # 0.31 -> 0.155 m moves the strips by 0.92 K on average (3.8 K at the worst sensor; MAE
    # 1.62 -> 2.13 K), January 0.4 -> 0.2 m by 0.28 K (MAE 2.47 -> 2.49 K). Measured; the
    # diffusivity follows the wall distance and the resolved speed, which both sharpen on the
    # finer grid, so this law converges more slowly than the constant (0.48 / 0.14 K)
    oct_fine = pod2_comparison("fan_curve", supply="wall_jet", mixing="chen_xu", cell_m=0.155)
    jan_fine = pod2_2018_comparison(supply="wall_jet", mixing="chen_xu", cell_m=0.2)
    for coarse, fine, moved in ((runs["chen_xu"][0], oct_fine, 0.92), (runs["chen_xu"][1], jan_fine, 0.28)):
        d = np.abs(fine.twin_strip_c - coarse.twin_strip_c)
        assert d.mean() == pytest.approx(moved, abs=0.05) and d.mean() < 1.0
