"""Shared hardware figures for the power tests (the values recommended for the catalog)."""

import pytest

#: Dell PowerEdge XE9680, 8x H100 SXM 80 GB. GPU TDP 700 W (calibration.yaml:
#: power.h100_sxm_tdp_w); PSUs 6 x 2800 W (power.xe9680_psus); node maximum 10.2 kW as
#: the DGX H100 with the same HGX baseboard (power.dgx_h100_max_w). Host and fan figures
#: are component estimates (see twin/power/node.py and the report).
XE9680_H100 = dict(
    gpu_count=8,
    gpu_tdp_w=700.0,
    gpu_idle_w=70.0,
    host_idle_w=1100.0,
    host_active_w=1900.0,
    fan_max_w=1600.0,
    node_max_w=10200.0,
)
XE9680_PSU_CAPACITY_W = 6 * 2800.0


@pytest.fixture
def xe9680():
    return dict(XE9680_H100)
