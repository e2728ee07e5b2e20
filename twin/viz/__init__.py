"""Pictures of the twin: a 3-D pyvista view of the hall and matplotlib plots of runs and
sweeps (optional extra ``viz``; the core never imports this package).

- :mod:`twin.viz.plots` figures of a run or sweep (matplotlib only);
- :mod:`twin.viz.render` hall images, VTK export, animations, the Jupyter view (pyvista);
- :mod:`twin.cli.render` the ``twin render`` command; :mod:`twin.viz.assets` README images.
"""
