"""One --set parser for scenarios and estimate files (issue 11: the estimate-file copy
could not index lists)."""

import pytest

from twin.compute.estimate_file import EstimateFileError, apply_overrides


def test_estimate_overrides_index_lists_like_scenario_overrides():
    data = {"job": {"model": {"layers": 80}}, "points": [{"tp": 1}, {"tp": 2}]}
    out = apply_overrides(data, ["points.1.tp=8", "job.model.layers=126"])
    assert out["points"][1]["tp"] == 8 and out["job"]["model"]["layers"] == 126
    assert data["points"][1]["tp"] == 2                     # a copy, the input is untouched


@pytest.mark.parametrize("bad, says", [("points.7.tp=8", "list index 0..1"), ("nodots", "dotted.path=value")])
def test_bad_estimate_overrides_say_what_was_expected(bad, says):
    with pytest.raises(EstimateFileError, match=says):
        apply_overrides({"points": [{"tp": 1}, {"tp": 2}]}, [bad])
