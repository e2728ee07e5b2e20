"""The mapping file shown in the README is valid and does what it says on a run."""

from __future__ import annotations

import numpy as np

from twin.telemetry.mapping import apply_mapping, load_mapping
from twin.telemetry.series import NS, Series, check_series

from .conftest import ROOT


def test_readme_mapping_example_validates_and_maps(small_run, tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Measured data", 1)[1].split("\n## ", 1)[0]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    ds = small_run[1].dataset
    racks = [str(r) for r in ds.rack.values]
    block = block.replace("r1-01", racks[0])
    f = tmp_path / "map.yaml"
    f.write_text(block)
    mapping = load_mapping(f)
    t = ds.time.values.astype("datetime64[ns]").astype(np.int64)
    gpu = {"gpu": "0", "Hostname": "gpu-node-001"}
    series = [Series("dcgm", "DCGM_FI_DEV_GPU_TEMP", gpu, t, np.full(t.size, 61.0)),
              Series("ipmi", "ipmi_dcmi_power_reading", {"host": "gpu-node-001"}, t, np.full(t.size, 7900.0), "Watts"),
              Series("ipmi", "ipmi_dcmi_power_reading", {"host": "gpu-node-002"}, t, np.full(t.size, 8000.0), "Watts"),
              Series("meter", "site_energy_joules_total", {"meter": "utility"}, t,
                     1e12 + np.cumsum(np.full(t.size, 1.5e6 * 1800.0)), "joules", "counter")]
    groups, unmapped = apply_mapping([check_series(s) for s in series], mapping, ds)
    assert not unmapped
    by_var = {g.variable: g for g in groups}
    assert by_var["rack_gpu_temp_max_c"].coord == racks[0] and by_var["rack_power_w"].coord == racks[0]
    assert len(by_var["rack_power_w"].members) == 2 and by_var["rack_power_w"].aggregate == "sum"
    power = by_var["facility_total_power_w"].members[0]
    np.testing.assert_allclose(power.values, 1.5e6)          # 1.5 MJ/s = 1.5 MW
    assert power.t_ns[0] == t[1] and power.unit == "W"
    assert (power.t_ns[1] - power.t_ns[0]) == 1800 * NS
