"""The ``twin`` command line: :mod:`twin.cli.main` dispatches to the sub-commands.

Physics packages hold no CLI; each sub-command's parser lives in this package
(``estimate``, ``render``) or with its tool (``sweep``, ``report``).
"""

from twin.cli.main import ProgressBar, main

__all__ = ["ProgressBar", "main"]
