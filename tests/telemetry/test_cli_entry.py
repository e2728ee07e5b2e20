"""The telemetry commands are reachable through `twin` and fail cleanly on bad input."""

from __future__ import annotations

from twin.cli.main import main


def test_twin_export_compare_replay_calibrate_through_the_main_command(small_run, tmp_path, capsys):
    run_dir, _ = small_run
    om = tmp_path / "run.om"
    assert main(["export", str(run_dir), "--format", "openmetrics", "--out", str(om)]) == 0
    assert om.read_text().rstrip().endswith("# EOF")
    assert main(["compare", str(run_dir), str(om), "--allow-gaps"]) == 0
    out = capsys.readouterr().out
    assert "facility_total_power_w" in out and "+0.00%" in out
    # bad input: exit 2, one line, nothing written
    bad = tmp_path / "bad.csv"
    bad.write_text("when,power\n1,2\n")
    report = tmp_path / "r.html"
    assert main(["compare", str(run_dir), str(bad), "--out", str(report)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.csv" in err and "timestamp" in err and not report.exists()
    assert main(["calibrate", str(tmp_path / "missing.yaml"), str(om), "--out", str(tmp_path / "c.yaml")]) == 2
    assert not (tmp_path / "c.yaml").exists()
    assert main(["replay", str(tmp_path / "missing.yaml"), str(om), "--out", str(tmp_path / "rp")]) == 2
    assert not (tmp_path / "rp").exists()
