"""The sweep plots draw the t-interval the reports print (twin.studies.labels.interval_text):
cut at the quantity's physical bounds, and none below three seeds (audit HCS; c6c00f7 did it
for the reports only)."""

from __future__ import annotations

import matplotlib.collections as mcoll
import numpy as np
import pytest
import xarray as xr
from scipy import stats

from twin.viz import plots


def _bands(ax):
    return [c for c in ax.collections if isinstance(c, mcoll.PolyCollection)]


def _finite_band_points(ax) -> int:
    """Finite points of the bands (fill_between) and interval bars (vlines/hlines) drawn."""
    n = 0
    for c in ax.collections:
        if isinstance(c, mcoll.LineCollection):
            n += sum(int(np.isfinite(s).all(axis=-1).sum()) for s in c.get_segments() if len(s))
        elif isinstance(c, mcoll.PolyCollection):
            n += sum(int(np.isfinite(p.vertices).all(axis=-1).sum()) for p in c.get_paths())
    return n


def _ds(n_seeds: int, values=None):
    """goodput_fraction near 1 over ``n_seeds`` seeds at two grid points, and a GPU count near 0."""
    good = values if values is not None else np.array([[0.99, 0.93, 1.0, 0.97][:n_seeds],
                                                       [0.90, 0.85, 0.88, 0.86][:n_seeds]])
    gpus = np.array([[[0.0, 2.0, 0.0]] * n_seeds, [[1.0, 0.0, 3.0]] * n_seeds], float)
    gpus[:, 0] = 0.0   # one seed with no failed GPU: the t-interval reaches below 0
    return xr.Dataset({"goodput_fraction": (("rate", "seed"), good, {"units": "1"}),
                       "gpus_failed": (("rate", "seed", "day"), gpus, {"units": "GPU"})},
                      coords={"rate": [1.0, 4.0], "seed": np.arange(n_seeds), "day": [0.0, 0.5, 1.0]})


def test_sweep_interval_is_cut_at_the_physical_bound():
    ds = _ds(3)
    v = ds.goodput_fraction.values[0]
    half = stats.t.ppf(0.95, 2) * v.std(ddof=1) / np.sqrt(3)
    assert v.mean() + half > 1.0                         # the raw t-interval passes 100 %
    ax = plots.sweep(ds, "goodput_fraction").axes[0]
    ys = _bands(ax)[0].get_paths()[0].vertices[:, 1]
    assert ys.max() == pytest.approx(1.0)                 # a share stops at 1
    assert ys.min() == pytest.approx(float(ds.goodput_fraction.values[1].mean()
                                           - stats.t.ppf(0.95, 2) * ds.goodput_fraction.values[1].std(ddof=1)
                                           / np.sqrt(3)))
    assert "cut at the physical bound" in ax.get_title()
    # a count stops at 0 (time series band)
    ax2 = plots.sweep_series(ds, "gpus_failed", band="ci").axes[0]
    lows = np.concatenate([b.get_paths()[0].vertices[:, 1] for b in _bands(ax2)])
    assert lows.min() == pytest.approx(0.0) and "cut at the physical bound" in ax2.get_title()


def test_no_interval_is_drawn_below_three_seeds():
    ds = _ds(2)
    ax = plots.sweep(ds, "goodput_fraction").axes[0]
    assert _finite_band_points(ax) == 0
    assert "means only" in ax.get_title() and "t-interval" not in ax.get_title()
    assert ax.get_lines()[0].get_ydata() == pytest.approx(ds.goodput_fraction.mean("seed").values)
    # categories: no interval bars either
    cat = ds.assign_coords(rate=["low", "high"])
    ax2 = plots.sweep(cat, "goodput_fraction").axes[0]
    assert _finite_band_points(ax2) == 0
    ax3 = plots.sweep(cat.isel(seed=[0, 1, 0]).assign_coords(seed=[0, 1, 2]), "goodput_fraction").axes[0]
    assert _finite_band_points(ax3) > 0                   # with three values the bars are drawn
