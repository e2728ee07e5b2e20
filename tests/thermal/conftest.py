import numpy as np
import pytest

from twin.thermal import rack_airflow_m3_s, row_hall


@pytest.fixture(scope="module")
def small_hall():
    """4 rows x 10 racks, one 10 m3/s CRAH per end wall: 20 m3/s for 22.6 m3/s of rack
    airflow at 10 kW / 15 K, so air recirculates at the aisle ends."""
    g = row_hall(4, 10, cooling_per_wall=1, cooling_airflow_m3_s=10.0)
    heat = np.full(g.n_racks, 10e3)
    return g, heat, rack_airflow_m3_s(heat, 15.0)
