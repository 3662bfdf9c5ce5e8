"""Entry point of the ``seglog`` command."""

from __future__ import annotations

import logging

import click

from seglog_cli.build_commands import build
from seglog_cli.context import Settings
from seglog_cli.cost_commands import cost
from seglog_cli.demo import demo
from seglog_cli.deploy_commands import deploy, destroy, smoke
from seglog_cli.emulator_commands import chaos, emulate
from seglog_cli.log_commands import log_group
from seglog_cli.pipeline_commands import rebuild, redrive, reprocess
from seglog_cli.sheet_commands import sheet
from seglog_cli.simulate_commands import simulate
from seglog_cli.stack_commands import down, env, status, up
from seglog_core import logs
from seglog_stack import Profile


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


for command in (up, down, status, env, sheet, log_group, demo, reprocess, rebuild, redrive, emulate, chaos, build,
                deploy, destroy, smoke, simulate, cost):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="seglog")
