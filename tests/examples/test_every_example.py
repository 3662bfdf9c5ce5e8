"""Every folder of examples/ is an example in full (issue 36, point 5): a template, a README whose first sh block is
its two commands (parsed by seglog's CLI, for its own template), a test here that runs it through the emulator,
and a row in the README's table of examples. No stack: the runs are the tests named here."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.support import EXAMPLES, readme_commands

README = Path(__file__).resolve().parents[2] / "README.md"
NAMES = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and not p.name.startswith("."))


def test_there_are_the_examples_the_issue_asks_for() -> None:
    assert len(NAMES) >= 5, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_an_example_has_its_commands_its_test_and_its_row(name: str) -> None:
    up, _emulate = readme_commands(name)
    assert up["stack_name"] != "seglog", "an example runs under a stack name of its own"
    assert (Path(__file__).parent / f"test_{name.replace('-', '_')}.py").is_file()
    assert f"| `examples/{name}` |" in README.read_text()
