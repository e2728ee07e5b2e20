"""pue_peak against pue_peak_at_load (issue 12: "pue_peak, the highest hourly PUE, the
design-day reading"). An audit found the highest sampled PUE of a ramp in its low-load hours
(Blue Vela in January: 2.06 at 150 kW of IT, 1.30 at peak IT), so the design-load reading is
its own KPI: the highest PUE over the samples at >= 90 % of the run's peak IT power."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.outputs import KPIS, PUE_AT_LOAD_FRACTION, pue_peak


def test_by_hand():
    it = [0.0, 100.0, 1000.0, 950.0, 500.0]          # W
    total = [50.0, 300.0, 1250.0, 1200.0, 700.0]     # W
    # every sample with IT > 0: 300/100 = 3.0 at the low-load hour
    assert pue_peak(it, total) == pytest.approx(3.0, rel=1e-15)
    # at load (IT >= 0.9 x 1000 W): 1250/1000 = 1.25 and 1200/950 = 1.263158
    assert pue_peak(it, total, PUE_AT_LOAD_FRACTION) == pytest.approx(1200.0 / 950.0, rel=1e-15)
    assert PUE_AT_LOAD_FRACTION == 0.9
    assert math.isnan(pue_peak([0.0, 0.0], [10.0, 10.0]))
    assert math.isnan(pue_peak([], []))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1e7), st.floats(1.0, 3.0)), min_size=1, max_size=50))
def test_at_load_never_above_the_any_load_peak(rows):
    it = np.array([r[0] for r in rows])
    total = it * np.array([r[1] for r in rows])
    a, b = pue_peak(it, total), pue_peak(it, total, PUE_AT_LOAD_FRACTION)
    if np.any(it > 0):
        assert b <= a
        # the peak-IT sample is always at load, so the at-load reading is at least its PUE
        k = int(np.argmax(it))
        assert b >= total[k] / it[k]
    else:
        assert math.isnan(a) and math.isnan(b)


def test_kpis_are_registered_with_units():
    names = {k.name: k for k in KPIS}
    assert names["pue_peak_at_load"].units == "1" and names["pue_peak"].units == "1"
    assert "design load" in names["pue_peak_at_load"].long_name
