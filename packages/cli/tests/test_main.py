"""The seglog group loads each command when it is used: every name it lists resolves to the command of that name,
and a command's use imports neither the other commands' heavy dependencies nor the simulator."""

from __future__ import annotations

import subprocess
import sys

import click

from seglog_cli.main import COMMANDS, cli


def test_every_listed_command_resolves_to_a_command_of_that_name() -> None:
    """A wrong module or attribute in COMMANDS would fail only when that command is run: each is checked here."""
    ctx = click.Context(cli)
    assert sorted(COMMANDS) == cli.list_commands(ctx)
    assert {name: name for name in COMMANDS} == {name: command.name for name in COMMANDS
                                                 if (command := cli.get_command(ctx, name)) is not None}
    assert cli.get_command(ctx, "no-such-command") is None


def test_a_sheet_command_imports_neither_the_simulator_nor_plotly() -> None:
    """`seglog sheet ...` runs once per edit in scripts (and 80 times in tests/test_cli.py): loading every command
    made each process import the emulator, the simulator and plotly first (about 0.7 s of CPU each)."""
    probe = ("import sys; from seglog_cli.main import cli; import click; "
             "cli.get_command(click.Context(cli), 'sheet'); "
             "print(sorted(m for m in ('seglog_sim', 'seglog_emulator', 'plotly') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            stdin=subprocess.DEVNULL).stdout.strip()
    assert "[]" == loaded
