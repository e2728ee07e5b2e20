"""The halls' per-sample identity checks (models in force, running units) mapped in C
(issue 19, speed pass): the same answer as the generator over every hall, a length mismatch
included, and the stacked record and the model groups still renewed when one hall's array
is replaced by an equal copy (identity, not equality, is what they key on)."""

from __future__ import annotations

import numpy as np

from twin.sim.hall_thermal import _same_objects


def _reference(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def test_same_objects_equals_the_generator():
    arrays = [np.ones(3) for _ in range(6)]
    copies = [a.copy() for a in arrays]
    cases = [(arrays, list(arrays)), (arrays, copies), (arrays, arrays[:5]), ([], []),
             (arrays, [*arrays[:3], copies[3], *arrays[4:]]), ([None] * 4, [None] * 4)]
    for a, b in cases:
        assert _same_objects(a, b) == _reference(a, b)


def test_an_equal_copy_is_not_the_same_object():
    arrays = [np.zeros(2) for _ in range(3)]
    other = list(arrays)
    other[1] = arrays[1].copy()
    assert not _same_objects(arrays, other)
