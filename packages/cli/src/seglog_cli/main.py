"""Entry point of the ``seglog`` command."""

from __future__ import annotations

import importlib
import logging

import click

from seglog_cli.context import Settings
from seglog_core import logs
from seglog_stack import Profile

#: Each command by name: its module and attribute, imported when it runs or --help lists it. `seglog sheet set`
#: then loads the sheet commands alone, not the emulator, the simulator and plotly (1.9 s -> 1.2 s a process).
COMMANDS = {
    "up": "stack_commands:up", "down": "stack_commands:down", "status": "stack_commands:status",
    "env": "stack_commands:env", "sheet": "sheet_commands:sheet", "log": "log_commands:log_group",
    "demo": "demo:demo", "reprocess": "pipeline_commands:reprocess", "rebuild": "pipeline_commands:rebuild",
    "redrive": "pipeline_commands:redrive", "emulate": "emulator_commands:emulate",
    "chaos": "emulator_commands:chaos", "build": "build_commands:build", "deploy": "deploy_commands:deploy",
    "destroy": "deploy_commands:destroy", "smoke": "deploy_commands:smoke", "simulate": "simulate_commands:simulate",
    "cost": "cost_commands:cost", "report": "report_commands:report",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's documented lazy-loading pattern); a command
    added with ``add_command`` still works."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, attribute = COMMANDS[cmd_name].split(":")
        command: click.Command = getattr(importlib.import_module(f"seglog_cli.{module}"), attribute)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profile", envvar="SEGLOG_PROFILE", type=click.Choice([p.value for p in Profile]),
              help="Local stack profile (default dynamodb-local; deploy: a target for `seglog deploy`).")
@click.option("--localstack-port", type=int, envvar="SEGLOG_LOCALSTACK_PORT", help="Default 4566.")
@click.option("--dynamodb-port", type=int, envvar="SEGLOG_DYNAMODB_PORT", help="Default 8000.")
@click.option("-v", "--verbose", count=True, help="More log lines on stderr (-v info, -vv debug).")
@click.option("--json-logs", is_flag=True, help="Log lines as JSON.")
@click.pass_context
def cli(ctx: click.Context, profile: str | None, localstack_port: int | None, dynamodb_port: int | None,
        verbose: int, json_logs: bool) -> None:
    """seglog: an append-only, gap-free, segmented event log on DynamoDB and S3, and its local stack."""
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logs.configure(json=json_logs or None, level=level)
    ctx.obj = Settings(profile=profile, localstack_port=localstack_port, dynamodb_port=dynamodb_port)


def main() -> None:
    cli(prog_name="seglog")
