"""seglog up / down / status / env: the local stack, started and provisioned by the project itself."""

from __future__ import annotations

from pathlib import Path

import click

from seglog_cli.build_commands import parameter_option, parse_parameters, stack_name_option, template_option
from seglog_cli.context import echo_json, reports_errors, settings
from seglog_deploy.record import StackRecord
from seglog_plugin.resources import local_env, record_env, seglog_resources
from seglog_stack import Profile, StackConfig, StackManager, local
from seglog_stack.errors import StackError


def _stack_errors(exc: StackError) -> click.ClickException:
    return click.ClickException(str(exc))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the deployment as JSON.")
@template_option
@stack_name_option
@parameter_option
@click.pass_context
@reports_errors
def up(ctx: click.Context, as_json: bool, template: Path | None, stack_name: str, parameters: tuple[str, ...]) -> None:
    """Start the local stack (installing it on first use) and provision template.yaml onto it: any template's
    tables, queues and buckets, under the names it gives them or NAME-LogicalId."""
    config = settings(ctx).stack_config()
    if config.profile is Profile.DEPLOY:
        _up_deploy_target(config, as_json)
        return
    try:
        deployment = local.up(config, template=template, stack_name=stack_name,
                              parameters=parse_parameters(parameters))
    except StackError as exc:
        raise _stack_errors(exc) from exc
    if as_json:
        echo_json(deployment.to_dict())
        return
    click.echo(f"local stack up (profile {deployment.profile})")
    for service, url in sorted(deployment.endpoints.items()):
        click.echo(f"  {service:<16} {url}")
    click.echo(f"stack {stack_name}: " + (", ".join(f"{logical} {name}" for logical, name in
                                                   sorted(deployment.names.items())) or "nothing to provision"))
    click.echo('use it from a shell: eval "$(seglog env)"')


def _up_deploy_target(config: StackConfig, as_json: bool) -> None:
    """The deploy profile: LocalStack with CloudFormation and Lambda, nothing provisioned (`seglog deploy` does)."""
    try:
        info = StackManager(config).up()
    except StackError as exc:
        raise _stack_errors(exc) from exc
    if as_json:
        echo_json(info.to_dict())
        return
    url = config.url(config.localstack_port)
    click.echo(f"local deploy target up: LocalStack with CloudFormation and Lambda on {url}")
    click.echo(f"deploy to it: seglog deploy --stack-name NAME --endpoint-url {url}")


@click.command()
@click.pass_context
@reports_errors
def down(ctx: click.Context) -> None:
    """Stop the local stack's processes."""
    config = settings(ctx).stack_config()
    try:
        StackManager(config).down()
    except StackError as exc:
        raise _stack_errors(exc) from exc
    local.forget(config)
    click.echo("local stack down")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print endpoints, processes and resource names as JSON.")
@click.pass_context
@reports_errors
def status(ctx: click.Context, as_json: bool) -> None:
    """Whether the local stack is up, its endpoints and the physical names of every resource."""
    config = settings(ctx).stack_config()
    state = StackManager(config).status()
    deployment = local.current(config)
    data = state.to_dict()
    # seglog's resources by role for seglog's template; any other template's by logical id.
    seglog = seglog_resources(deployment) if deployment else None
    data["resources"] = None if deployment is None else seglog.to_dict() if seglog else deployment.names
    if as_json:
        echo_json(data)
    else:
        click.echo(f"profile {data.get('profile')}: {'up' if state.healthy else 'down'}")
        for service, url in sorted(data.get("endpoints", {}).items()):
            click.echo(f"  {service:<16} {url}")
        for name, value in sorted((data["resources"] or {}).items()):
            click.echo(f"  {name:<20} {value}")
    if not state.healthy:
        ctx.exit(1)


@click.command()
@click.option("--stack", "stack_name", metavar="NAME",
              help="A stack deployed with `seglog deploy` from this clone, instead of the local stack.")
@click.pass_context
@reports_errors
def env(ctx: click.Context, stack_name: str | None) -> None:
    """Print `export` lines for eval: SDK endpoints, region, dummy credentials and resource names.

    With --stack: the deployed stack's API URL, resource names and region (and `unset` lines for the local
    stack's endpoint variables), so the CLI and the client library talk to that deployment.
    """
    if stack_name:
        record = StackRecord.load(stack_name)
        for line in record.shell_lines(record_env(record)):
            click.echo(line)
        return
    config = settings(ctx).stack_config()
    if config.profile is Profile.DEPLOY:
        raise click.ClickException("the deploy profile provisions nothing itself: `seglog env --stack NAME` prints the "
                                   "variables of a stack you deployed to it")
    deployment = local.current(config)
    if deployment is None:
        raise click.ClickException("the local stack is not up: run `seglog up` first")
    for key, value in local_env(deployment).items():
        click.echo(f"export {key}={value}")
