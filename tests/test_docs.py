"""The README stays true to the code."""

from pathlib import Path

from twin.results import KPI_UNITS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
KPI_SECTION = README.split("## KPIs", 1)[1].split("\n## ", 1)[0]


def test_every_kpi_is_documented_with_its_unit():
    for name, (unit, _) in KPI_UNITS.items():
        row = [line for line in KPI_SECTION.splitlines() if line.startswith(f"| `{name}` |")]
        assert row, f"KPI {name} missing from the README table"
        assert unit.replace("degC", "°C") in row[0], (name, unit)


def test_quick_start_is_the_two_make_commands():
    assert "make run" in README and "make test" in README


def test_reference_copy_matches_the_shared_calibration_when_present():
    root = Path(__file__).resolve().parents[1]
    shared = root.parent / "shared" / "reference" / "calibration.yaml"
    copy = root / "assets" / "reference" / "calibration.yaml"
    assert copy.exists()
    if shared.exists():
        assert copy.read_text() == shared.read_text()
