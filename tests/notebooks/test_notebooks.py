"""The what-if notebooks run top to bottom without an error (nbclient, static 3-D views),
and are committed without outputs."""

import os
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("pyvista")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def test_the_four_notebooks_exist():
    assert [n[:2] for n in NAMES] == ["01", "02", "03", "04"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_without_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{name}: strip outputs before commit"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name, monkeypatch, tmp_path):
    monkeypatch.setenv("TWIN_JUPYTER_BACKEND", "static")   # no trame server in the test kernel
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    t0 = time.perf_counter()
    client.execute()   # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    # every 3-D view produced an image (static backend) or a widget
    shows = [c for c in nb.cells if c.cell_type == "code" and "render.show(" in c.source]
    for c in shows:
        assert any(o.get("data", {}).keys() & {"image/png", "text/html", "application/vnd.jupyter.widget-view+json"}
                   for o in c.outputs), f"{name}: a 3-D view showed nothing"
    # and every plot cell an image
    for c in nb.cells:
        if c.cell_type == "code" and c.source.strip().splitlines()[-1].startswith("plots."):
            assert any("image/png" in o.get("data", {}) for o in c.outputs), f"{name}: a plot showed no image"
    if os.environ.get("TWIN_NOTEBOOK_TIMES"):
        print(f"{name}: {time.perf_counter() - t0:.1f} s")
