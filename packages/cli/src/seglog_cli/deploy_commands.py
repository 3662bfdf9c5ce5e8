"""seglog deploy / destroy / smoke: the template and the built artifacts on AWS (or the local deploy target).

The target is the AWS SDK's: credentials and region from ``--profile``/``--region`` or the usual
configuration (AWS_PROFILE, AWS_REGION, ~/.aws); ``AWS_ENDPOINT_URL`` (or ``--endpoint-url``) sends every call
to a local stack started with ``seglog --profile deploy up`` instead.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from seglog_aws.backend import Backend
from seglog_aws.resources import Resources
from seglog_cli.build_commands import progress_line, template_option
from seglog_cli.context import echo_json, reports_errors
from seglog_cli.emulator_commands import parse_parameters
from seglog_deploy import deploy as deploying
from seglog_deploy.events import StackEvent
from seglog_deploy.leftovers import Leftover
from seglog_deploy.manifest import Manifest
from seglog_deploy.record import StackRecord
from seglog_deploy.smoke import run_smoke
from seglog_deploy.target import Target


def _echo_event(event: StackEvent) -> None:
    click.echo(event.line())


def _echo_leftovers(title: str, leftovers: list[Leftover], *, err: bool = False) -> None:
    click.echo(title, err=err)
    for item in leftovers:
        click.echo(f"  {item.logical_id} ({item.resource_type}) {item.physical_id}\n    {item.removal}", err=err)


_region_option = click.option("--region", help="AWS region (default: AWS_REGION or your profile's).")
_aws_profile_option = click.option("--profile", "aws_profile", metavar="NAME",
                                   help="AWS credentials profile (default: AWS_PROFILE or the default profile).")
_endpoint_option = click.option(
    "--endpoint-url", envvar="AWS_ENDPOINT_URL", metavar="URL",
    help="Send every AWS call there: the local deploy target (`seglog --profile deploy up`), not AWS.")


@click.command()
@click.option("--stack-name", required=True, help="The CloudFormation stack to create or update.")
@_region_option
@click.option("--parameter", "parameters", multiple=True, metavar="KEY=VALUE",
              help="Override a template parameter (repeatable); others keep their value on an existing stack.")
@_aws_profile_option
@template_option
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Deploy the artifacts of this earlier `seglog build` (its manifest.json) instead of building: "
                   "the very bytes that were tested.")
@click.option("--artifacts-bucket", metavar="NAME",
              help="Upload artifacts there (default: seglog-artifacts-<account>-<region>, created on first use).")
@click.option("--replace-failed-stack", is_flag=True,
              help="If the stack's first create failed (ROLLBACK_COMPLETE), delete it and create it anew; what "
                   "that create retained stays, and is listed.")
@_endpoint_option
@click.option("--json", "as_json", is_flag=True, help="Print the stack record (outputs, parameters) as JSON.")
@reports_errors
def deploy(stack_name: str, region: str | None, parameters: tuple[str, ...], aws_profile: str | None,
           template: Path | None, manifest: Path | None, artifacts_bucket: str | None, replace_failed_stack: bool,
           endpoint_url: str | None, as_json: bool) -> None:
    """Build the functions' artifacts and create or update the stack through a CloudFormation change set.

    Prints the stack's events as they arrive and then its outputs, which are saved in
    .seglog/stacks/<name>.json for `seglog env --stack` and `seglog smoke --stack`. A rollback prints the
    failing resources and their reasons and exits 1. A deploy of an unchanged tree says "no changes". A stack
    whose first create failed is refused, with what that create kept, unless --replace-failed-stack.
    """
    target = Target.resolve(region=region, profile=aws_profile, endpoint_url=endpoint_url)
    if manifest is not None:
        build = Manifest.read(manifest)
        artifacts = deploying.artifacts_of(build)
        template = template or Path(build.template)
    else:
        artifacts = deploying.built_artifacts(template, progress=progress_line)
    where = f"{target.endpoint_url} ({target.region})" if target.is_local else f"region {target.region}"
    click.echo(f"deploying stack {stack_name} to {where}", err=as_json)
    state, record = deploying.deploy(
        target, stack_name=stack_name, template_path=template, artifacts=artifacts,
        parameters={k: str(v) for k, v in parse_parameters(parameters).items()}, artifacts_bucket=artifacts_bucket,
        on_event=(lambda e: click.echo(e.line(), err=True)) if as_json else _echo_event,
        replace_failed_stack=replace_failed_stack, on_replaced=lambda kept: _echo_leftovers(
            f"deleted the failed create of stack {stack_name}; what it retained stays (delete it, or import it "
            "into the new stack, by hand):", kept, err=as_json))
    if as_json:
        echo_json({"status": state.status, "changed": state.changed, **dataclasses.asdict(record)})
        return
    click.echo(f"stack {stack_name}: {state.status}" + ("" if state.changed else " (no changes)"))
    for key, value in sorted(state.outputs.items()):
        click.echo(f"  {key:<28} {value}")
    click.echo(f'use it from a shell: eval "$(seglog env --stack {stack_name})"; check it: '
               f"seglog smoke --stack {stack_name}")


@click.command()
@click.option("--stack-name", required=True, help="The CloudFormation stack to delete.")
@_region_option
@_aws_profile_option
@_endpoint_option
@reports_errors
def destroy(stack_name: str, region: str | None, aws_profile: str | None, endpoint_url: str | None) -> None:
    """Delete the stack, and say which retained resources are left and how to remove them."""
    target = Target.resolve(region=region, profile=aws_profile, endpoint_url=endpoint_url)
    leftovers = deploying.destroy(target, stack_name=stack_name, on_event=_echo_event)
    click.echo(f"stack {stack_name} deleted")
    if leftovers:
        _echo_leftovers("left on purpose (DeletionPolicy Retain, or made by Lambda outside the stack); to remove "
                        "them:", leftovers)
    click.echo("the artifacts bucket stays for other stacks of this account and region (aws s3 rb to remove it)")


@click.command()
@click.option("--stack", "stack_name", help="A stack deployed from this clone (its .seglog/stacks record).")
@click.option("--api-url", envvar="SEGLOG_API_URL", metavar="URL",
              help="Or any deployment's API, with SEGLOG_* resource variables naming its tables and bucket.")
@click.option("--edits", type=click.IntRange(1, 5000), default=None,
              help="Edits per client (default: enough to pass the stack's SnapshotEvery once, else 10).")
@click.option("--clients", type=click.IntRange(1, 5), default=3, show_default=True, help="Concurrent clients.")
@click.option("--timeout", type=float, default=180.0, show_default=True,
              help="Seconds to wait for the pipeline to finish the sheet's snapshots.")
@_aws_profile_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
@reports_errors
def smoke(ctx: click.Context, stack_name: str | None, api_url: str | None, edits: int | None, clients: int,
          timeout: float, aws_profile: str | None, as_json: bool) -> None:
    """Edit a new sheet through the API of a deployment, then check I1-I6 in its tables and bucket; exit 1 on a
    violation. Works against any deployment: AWS, or the emulator (`--api-url http://127.0.0.1:4599`)."""
    if stack_name:
        record = StackRecord.load(stack_name)
        target = Target.resolve(region=record.region, profile=aws_profile, endpoint_url=record.endpoint_url)
        backend = Backend.connect(record.resources(), session=target.session,
                                  endpoints=dict.fromkeys(("dynamodb", "s3", "sqs"), record.endpoint_url)
                                  if record.endpoint_url else None)
        url = api_url or record.api_url
        if "://unknown." in url:  # LocalStack's stand-in for an HTTP API it does not run (free tier)
            raise click.UsageError(f"stack {stack_name} has no HTTP API behind {url}: pass --api-url")
        every = int(record.parameters.get("SnapshotEvery", "0") or 0)
    elif api_url:
        backend, url, every = Backend.connect(Resources.from_env()), api_url, 0
    else:
        raise click.UsageError("say which deployment: --stack NAME, or --api-url URL (with SEGLOG_* variables)")
    if edits is None:
        edits = -(-every // clients) + 1 if 0 < every <= 1500 else 10
    report = run_smoke(url, backend, edits=edits, clients=clients, timeout=timeout)
    if as_json:
        echo_json(report.to_dict())
    else:
        verdict = "PASS" if report.ok else "FAIL"
        checked = report.verify
        click.echo(f"{verdict}: sheet {report.log_id}, {report.appends} appends in {report.seconds:.1f} s"
                   + (f"; {checked.entries} entries, {checked.completed}/{checked.snapshots} snapshots complete, "
                      f"{checked.objects} snapshot objects" if checked else ""))
        for problem in report.problems:
            click.echo(f"  problem: {problem}")
        for v in checked.violations if checked else ():
            click.echo(f"  {v}")
        for note in report.notes:
            click.echo(f"  note: {note}")
    if not report.ok:
        ctx.exit(1)
