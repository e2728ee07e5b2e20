"""docs/validation.md's step-time, MLPerf, MoE and FSDP tables are the model's: every block
assets/reference/docs_tables.py prints stands in the docs verbatim, where its anchor and header
say it stands (re-print with ``docs_tables.py --write``)."""

from pathlib import Path

import pytest
from reference_scripts import reference_script

ROOT = Path(__file__).resolve().parents[2]
tables = reference_script("docs_tables")


@pytest.fixture(scope="module")
def printed() -> dict[str, list[str]]:
    return tables.printed()


def _docs() -> list[str]:
    return (ROOT / "docs/validation.md").read_text().splitlines()


def test_every_table_in_the_docs_is_the_models(printed):
    # each block, whole and in order, at its place: a row missing, added or moved shows
    doc = _docs()
    sizes = {"step summary": 4, "step H100 rows": 70, "step A100 rows": 18,
             "A100 summary line": 1, "MLPerf summary": 7, "MLPerf rows": 21,
             "MLPerf per-release what-if": 5, "Megatron-core Mixtral": 6,
             "dropless before / after": 5, "llm-foundry summary": 9, "llm-foundry 57 rows": 57,
             "Grok-1 and MaxText": 24}
    assert {k: len(v) for k, v in printed.items()} == sizes
    stale = {}
    for block in tables.BLOCKS:
        start, end = tables.locate(doc, block)
        got, want = doc[start:end], printed[block.name]
        if got != want:
            stale[block.name] = [line for line in want if line not in got]
    assert not stale, ("docs/validation.md differs from the model; re-print with "
                       "assets/reference/docs_tables.py --write:\n" + repr(stale))


def test_the_check_sees_a_row_moved_by_a_tenth_of_a_percent(printed):
    # one H100 row's step and one llm-foundry row's step 0.1 % longer print lines the docs do
    # not hold
    docs = set(_docs())
    r, t, e = tables.step_tables.h100_rows()[0]
    moved = tables.step_tables.h100_lines([(r, t * 1.001, e + 0.001)])[0]
    assert moved not in docs
    rows = tables._fsdp_rows()
    r, t, e = rows[0]
    moved = tables.fsdp_row_lines([(r, t * 1.001, (1 + e) * 1.001 - 1)] + rows[1:])[0]
    assert moved != printed["llm-foundry 57 rows"][0] and moved not in docs


def test_write_restores_a_stale_table(tmp_path, printed):
    # --write puts every block back where it stands and touches nothing else
    doc = _docs()
    start, _ = tables.locate(doc, tables.BLOCKS[7])  # the Megatron-core Mixtral table
    stale = list(doc)
    stale[start] = stale[start].replace(" |", " | 0.001", 1)
    del stale[start + 1]
    path = tmp_path / "validation.md"
    path.write_text("\n".join(stale) + "\n")
    assert tables.write(path) > 0
    assert path.read_text().splitlines() == doc
    assert tables.write(path) == 0
