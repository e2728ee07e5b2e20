"""docs/validation.md's step-time tables are the model's: every line the table script prints
stands in the docs verbatim (assets/reference/step_tables.py)."""

from pathlib import Path

from reference_scripts import reference_script

ROOT = Path(__file__).resolve().parents[2]
tables = reference_script("step_tables")


def _docs_lines() -> set[str]:
    return set((ROOT / "docs/validation.md").read_text().splitlines())


def test_step_time_tables_in_the_docs_are_the_models():
    h100 = tables.h100_rows()
    a100 = tables.ROWS._a100_rows()
    docs = _docs_lines()
    printed = (tables.summary_lines(h100, a100) + tables.h100_lines(h100)
               + tables.a100_lines(a100))
    assert len(printed) == 4 + 70 + 18
    stale = [line for line in printed if line not in docs]
    assert not stale, "docs/validation.md differs from the model; re-print with " \
        "assets/reference/step_tables.py:\n" + "\n".join(stale)


def test_the_check_sees_a_moved_figure():
    # one H100 row's step 0.1 % longer prints a line the docs do not hold
    r, t, e = tables.h100_rows()[0]
    moved = tables.h100_lines([(r, t * 1.001, e + 0.001)])[0]
    assert moved not in _docs_lines()
