"""The failure component's per-sample counts (issue 19: the delivered mask kept between
deliveries, counted with count_nonzero) equal the reference expression at every sample,
through failures, repairs and delivery waves."""

from __future__ import annotations

from pathlib import Path

import twin
from twin.sim.failures import Failures

BV = Path(__file__).resolve().parents[2] / "scenarios" / "blue_vela.yaml"


def test_record_counts_equal_the_reference_through_waves(monkeypatch):
    record = Failures.record
    seen = {"samples": 0, "failed": set(), "delivered": set()}

    def checked(self, i, rec):
        record(self, i, rec)
        st, p = self.state, self.plant
        failed = ((~st.node_healthy | st.node_repairing) & st.rack_delivered[p.node_rack]).sum()
        assert rec["nodes_failed"][i] == failed
        assert rec["nodes_in_repair"][i] == st.node_repairing.sum()
        seen["samples"] += 1
        seen["failed"].add(int(failed))
        seen["delivered"].add(int(st.rack_delivered.sum()))

    monkeypatch.setattr(Failures, "record", checked)
    twin.simulate(twin.load_scenario(BV, ["simulation.duration_days=30", "failures.rate_scale=20"]))
    assert seen["samples"] > 500
    assert len(seen["failed"]) > 5 and len(seen["delivered"]) > 1


def test_detection_delays_equal_the_draws_and_leave_the_stream():
    """``Failures.detection_delay_s`` (an immediate class answers 0 without the call) gives
    what ``sample_detection_delay_s`` gives, class by class, with the stream in step."""
    import numpy as np

    from twin import reliability
    from twin.sim.engine import Engine

    eng = Engine(twin.load_scenario(BV.parent / "lenovo_small.yaml", ["simulation.duration_days=1"]))
    f, fs = eng.failures, eng.s.failures
    ref = np.random.default_rng(0)
    eng.rng["detect"] = np.random.default_rng(0)
    kinds = set()
    for _ in range(20):
        for c in f.classes:
            kinds.add(c.detection)
            want = float(reliability.sample_detection_delay_s(
                ref, c.detection, health_check_interval_s=fs.health_check_interval_s,
                watchdog_timeout_s=fs.watchdog_timeout_s, sdc_mean_s=fs.sdc_detection_mean_s))
            assert f.detection_delay_s(c) == want
    assert eng.rng["detect"].random() == ref.random()
    assert {"immediate", "health_check", "silent"} <= kinds
