"""The core never imports the optional viz part (nor pyvista / matplotlib)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_core_run_imports_no_viz():
    code = (
        "import sys, twin\n"
        "s = twin.load_scenario('scenarios/lenovo_small.yaml', ['simulation.duration_days=0.5'])\n"
        "r = twin.simulate(s)\n"
        "import twin.cli, twin.results\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyvista', 'vtk', 'vtkmodules', 'matplotlib')\n"
        "             or m.startswith('twin.viz'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_plots_do_not_need_pyvista():
    code = ("import sys\nimport twin.viz.plots, twin.viz.snapshot\n"
            "sys.exit(1 if any(m.split('.')[0] in ('pyvista', 'vtkmodules') for m in sys.modules) else 0)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_png_path_imports_no_pyvista_or_vtk():
    # the command's process builds the description; only the render child loads VTK
    code = ("import sys\nimport twin.cli.render, twin.viz.render, twin.viz.drawlist, twin.viz.geometry\n"
            "sys.exit(1 if any(m.split('.')[0] in ('pyvista', 'vtkmodules', 'vtk') for m in sys.modules) else 0)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
