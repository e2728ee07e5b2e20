"""The engine's repair draw with its law looked up once (``lognormal_duration_s``, issue 19)
gives the numbers ``sample_repair_duration_s`` gives, and leaves the stream where it does."""

from __future__ import annotations

import numpy as np
import pytest

from twin.reliability.classes import REPAIRS
from twin.reliability.repair import (
    lognormal_duration_s,
    repair_lognormal_params,
    sample_repair_duration_s,
)


@pytest.mark.parametrize("kind", REPAIRS)
def test_lognormal_draw_equals_sample_repair_duration(kind):
    law = repair_lognormal_params(kind)
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    for _ in range(2000):
        got, ref = lognormal_duration_s(a, *law), sample_repair_duration_s(b, kind)
        assert type(got) is float and got == ref
    assert a.random() == b.random()


def test_lognormal_draw_with_given_law():
    a, b = np.random.default_rng(2), np.random.default_rng(2)
    for m, s in ((0.0, 1.0), (3600.0, 0.0), (1.5, 2.25), (1e9, 0.1)):
        assert lognormal_duration_s(a, m, s) == sample_repair_duration_s(b, "hardware", median_s=m, log_sigma=s)
    assert a.random() == b.random()
