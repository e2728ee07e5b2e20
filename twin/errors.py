"""Errors the CLI turns into exit code 2 with one clear line per problem."""

from __future__ import annotations

from dataclasses import dataclass

#: exit code of every twin command for bad input (a scenario, a file, an argument)
EXIT_BAD_INPUT = 2


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario: where it is, what it is, what was expected."""

    file: str
    path: str
    value: object
    expected: str

    def __str__(self) -> str:
        value = repr(self.value)
        if len(value) > 80:
            value = value[:77] + "..."
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: got {value}; expected {self.expected}"


class ScenarioError(Exception):
    """A scenario that cannot be loaded; carries every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class OutputError(Exception):
    """An output path the twin refuses to write (it would replace a user's data, or lies
    outside the output folder). The CLI turns it into exit code 2 and one line."""
