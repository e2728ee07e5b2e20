"""A measured room with partial hot-aisle containment (issue 12): RISE SICS ICE Module 1.

Wibron, Ljung & Lundstrom, Energies 11 (2018) 644 (doi:10.3390/en11030644) measured the
CRAC units' face velocity and supply temperature, each rack's face velocity and heat, and the
air at the front and back of every rack 1.09 m above the door's lower edge (figure 6, as
digitised from the PDF's vector paths by another project). Transcription:
assets/reference/room_benchmark_module1_wibron2018.csv; layout, fixed before the comparison,
and its assumptions: room_benchmark_module1_layout.yaml; runner: room_benchmark_module1_run.py.
Nothing is fitted. The tests pin the twin's errors as measured (not targets), so a model change
that moves them fails here and the Module 1 section of docs/validation.md must follow.
"""

import numpy as np
import pytest
from reference_scripts import reference_script

from twin.thermal.properties import AIR_VOLUMETRIC_HEAT_J_M3_K

bench = reference_script("room_benchmark_module1_run")


@pytest.fixture(scope="module")
def results():
    return bench.run_configs()


def test_transcription_counts_and_spot_values():
    """Row counts and values checked against the paper (tables 1-2, p. 5-6) by hand."""
    rows = bench.reference()
    assert len(rows) == 80
    count = {q: sum(r["quantity"] == q for r in rows) for q in
             ("crac_face_velocity", "crac_supply_temp", "rack_face_velocity", "rack_heat",
              "front_measured", "back_measured", "front_cfd", "back_cfd")}
    assert count == {"crac_face_velocity": 4, "crac_supply_temp": 4, "rack_face_velocity": 10, "rack_heat": 10,
                     "front_measured": 8, "back_measured": 7, "front_cfd": 10, "back_cfd": 10}
    heat = bench.per_rack("rack_heat", rows)
    assert heat.sum() == 43433  # 5180 + 5194 + 5161 + 5152 + 0 + 1762 + 5194 + 5266 + 5326 + 5198
    assert heat[4] == 0 and heat[5] == 1762 and heat[8] == 5326
    np.testing.assert_allclose(bench.per_unit("crac_face_velocity", rows), [0.61, 0.62, 0.59, 0.62])
    np.testing.assert_allclose(bench.per_unit("crac_supply_temp", rows), [19.7, 20.0, 19.8, 19.9])
    assert bench.per_rack("rack_face_velocity", rows)[4] == 0.26
    v = bench.values
    assert (v("room_width", rows)[""], v("room_depth", rows)[""], v("room_height", rows)[""]) == (5.084, 6.484, 3.150)
    assert v("sensor_accuracy", rows)[""] == 1.0 and v("sensor_height", rows)[""] == 1.09
    front, back = bench.measured()
    assert np.isnan(front[[4, 5]]).all() and np.isnan(back[[0, 4, 5]]).all()  # no bar plotted


def test_digitised_figure_honours_the_papers_sentences():
    """p. 10: "All the values predicted by the CFD model are within the experimental error
    bars" (front, +-1 K) and, at the back, "all values except for two are within" (R2, R3)."""
    mf, mb = bench.measured()
    cf, cb = bench.cfd()
    ok = ~np.isnan(mf)
    assert np.all(np.abs(cf - mf)[ok] < 1.0)
    outside = np.flatnonzero(np.abs(cb - mb) > 1.0) + 1
    assert outside.tolist() == [2, 3]


def test_rack_face_is_what_the_cfd_used():
    """The layout gives a full rack the servers' face, 18 x 2U x 0.45 m = 0.720 m2, and R6 six
    servers' (0.240 m2). The CFD's eq. 9 on its own fig. 6 bars implies 0.720 m2 on all eight
    full racks (rho 1.204 kg/m3, cp 1004.4); R6 0.253 m2 (5 % above six servers')."""
    implied = bench.implied_rack_face_m2()
    full = [0, 1, 2, 3, 6, 7, 8, 9]
    np.testing.assert_allclose(implied[full], 0.720, atol=0.003)
    assert implied[5] == pytest.approx(0.253, abs=0.002)
    face = bench.rack_face_m2(bench.layout())
    np.testing.assert_allclose(face[full], 18 * 2 * 0.04445 * 0.45, atol=1e-3)


def test_encoding_inputs_and_energy_balance(results):
    """Unit air = table 1 velocity x 1.775 m2 (4.331 m3/s), rack air = table 2 velocity x face
    (2.557 m3/s): 1.69 times the racks' air. In every configuration the units remove the
    racks' heat, sum rho cp V_u (T_return,u - T_supply,u) = 43,433 W, to 1e-6."""
    c = results["door"].case
    assert c.unit_airflow_m3_s.sum() == pytest.approx((0.61 + 0.62 + 0.59 + 0.62) * 1.775, rel=1e-12)
    assert c.rack_airflow_m3_s.sum() == pytest.approx(3.40 * 0.72 + 0.41 * 0.24 + 0.26 * 0.04, rel=1e-12)
    for r in results.values():
        assert r.unit_heat_w.sum() == pytest.approx(43433.0, rel=1e-6)
        rise = r.exhaust_c - r.inlet_c
        np.testing.assert_allclose(rise * AIR_VOLUMETRIC_HEAT_J_M3_K * c.rack_airflow_m3_s, c.rack_heat_w, rtol=1e-9)


# configuration: front at 1.09 m MAE, bias; rack mean inlet against the front sensor MAE;
# back (the twin's exhaust) MAE, bias [K]; measured (shipped defaults), not targets
PINNED = {
    "door": (0.095, 0.043, 0.507, 0.774, -0.004),
    "open": (0.329, 0.329, 0.803, 0.892, 0.215),
    "sealed": (0.273, -0.273, 0.275, 0.892, -0.801),
}


@pytest.mark.parametrize("config", list(PINNED))
def test_errors_are_pinned(results, config):
    front_mae, front_bias, inlet_mae, back_mae, back_bias = PINNED[config]
    mf, mb = bench.measured()
    r = results[config]
    f, i, b = bench.errors(r.front_c, mf), bench.errors(r.inlet_c, mf), bench.errors(r.exhaust_c, mb)
    assert f.mae_k == pytest.approx(front_mae, abs=0.01)
    assert f.bias_k == pytest.approx(front_bias, abs=0.01)
    assert i.mae_k == pytest.approx(inlet_mae, abs=0.01)
    assert b.mae_k == pytest.approx(back_mae, abs=0.01)
    assert b.bias_k == pytest.approx(back_bias, abs=0.01)


def test_the_goal_holds_and_what_the_measurement_can_tell():
    """The measured fronts stand 0.29 K above the mean supply (0.22-0.40 K), under the +-1 K
    sensors: the 2 K goal holds for any model whose fronts stay within about 2.3 K of supply,
    so it cannot tell the twin from the CFD. The CFD's own errors (the baseline): front
    0.31 / -0.31 K, back 1.03 / -0.92 K (worst R3, -2.68 K)."""
    d = bench.discrimination()
    assert d["front_rise_k"] == pytest.approx(0.29, abs=1e-9)
    assert d["u_independent_k"] == pytest.approx(np.hypot(1 / np.sqrt(8), 0.004 * 19.85 + 0.3), abs=1e-9)
    assert d["u_shared_k"] == pytest.approx(1.3794, abs=1e-9)
    assert d["front_range_k"] == pytest.approx(0.18, abs=1e-9) and d["rise_that_fails_2k_k"] == pytest.approx(2.29, abs=1e-9)
    mf, mb = bench.measured()
    cf, cb = bench.cfd()
    f, b = bench.errors(cf, mf), bench.errors(cb, mb)
    assert (f.mae_k, f.bias_k) == (pytest.approx(0.305, abs=1e-9), pytest.approx(-0.305, abs=1e-9))
    assert (b.mae_k, b.worst) == (pytest.approx(1.0257, abs=1e-4), (3, pytest.approx(-2.68, abs=1e-9)))


def test_containment_value_in_the_twin(results):
    """The door keeps exhaust from the door-end racks' fronts (R1, R10: 0.70 / 0.79 K cooler
    with it); sealing the hot aisle leaves every inlet within 0.13 K of supply; the rack mean
    inlet rise above the 19.85 C mean supply orders sealed < door < open (0.03 / 0.99 / 1.20 K)."""
    door, open_, sealed = results["door"], results["open"], results["sealed"]
    np.testing.assert_allclose((open_.front_c - door.front_c)[[0, 9]], [0.70, 0.79], atol=0.02)
    rise = [r.inlet_c.mean() - 19.85 for r in (sealed, door, open_)]
    np.testing.assert_allclose(rise, [0.027, 0.991, 1.196], atol=0.01)
    assert np.all(sealed.inlet_c - 19.85 < 0.13)


def test_damped_mixing_puts_the_jets_supply_on_the_fronts():
    """With the Richardson-damped vertical mixing (opt-in) the 1.09 m layer in front of the
    racks holds the jets' supply air: the fronts read as in the twin's sealed aisle (MAE 0.27 K,
    bias -0.27 K: the measured 0.29 K rise is missed, inside the sensors' +-1 K)."""
    mf, _ = bench.measured()
    r = bench.run(bench.case("door"), mixing="munk_anderson")
    e = bench.errors(r.front_c, mf)
    assert (e.mae_k, e.bias_k) == (pytest.approx(0.27, abs=0.01), pytest.approx(-0.27, abs=0.01))
