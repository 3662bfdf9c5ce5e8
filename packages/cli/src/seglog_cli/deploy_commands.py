"""seglog deploy / destroy / smoke: the template and the built artifacts on AWS (or the local deploy target).

The target is the AWS SDK's: credentials and region from ``--profile``/``--region`` or the usual
configuration (AWS_PROFILE, AWS_REGION, ~/.aws); ``AWS_ENDPOINT_URL`` (or ``--endpoint-url``) sends every call
to a local stack started with ``seglog --profile deploy up`` instead.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

import click

from seglog_aws.backend import Backend
from seglog_aws.resources import Resources
from seglog_awsmodel.parameters import check_parameters
from seglog_awsmodel.template import load_template
from seglog_cli.build_commands import parse_parameters, progress_line, template_option
from seglog_cli.context import echo_json, reports_errors
from seglog_deploy import deploy as deploying
from seglog_deploy.artifacts import bucket_name
from seglog_deploy.changeset import ChangeSetPlan
from seglog_deploy.deployer_policy import SAFE_STACK_NAME_LENGTH, check_stack_name, deployer_policy
from seglog_deploy.errors import ChangeSetDeclinedError
from seglog_deploy.events import StackEvent
from seglog_deploy.leftovers import Leftover, artifacts_bucket
from seglog_deploy.manifest import Manifest
from seglog_deploy.record import StackRecord
from seglog_deploy.target import Target
from seglog_plugin.resources import record_resources
from seglog_plugin.smoke import MAX_EDITS, MAX_SEARCH_APPENDS, has_api, next_steps, no_api_advice, run_smoke


def _echo_event(event: StackEvent) -> None:
    click.echo(event.line())


def _echo_leftovers(title: str, leftovers: list[Leftover], *, err: bool = False) -> None:
    click.echo(title, err=err)
    for item in leftovers:
        click.echo(f"  {item.logical_id} ({item.resource_type}) {item.physical_id}\n    {item.removal}", err=err)


#: The order a change set is listed in: what is new, then what changes in place, then what is replaced or goes.
_KIND_ORDER = {"add": 0, "modify": 1, "import": 2, "dynamic": 3, "replace": 4, "remove": 5}


def _echo_plan(plan: ChangeSetPlan, *, err: bool) -> None:
    """The change set: one line per resource, then, loudly, what it does to resources that hold data."""
    click.echo(f"change set for stack {plan.stack_name} ({'create' if plan.creating else 'update'}): "
               f"{plan.summary()}", err=err)
    for change in sorted(plan.changes, key=lambda c: (_KIND_ORDER.get(c.kind, 9), c.logical_id)):
        click.echo(change.line(), err=err)
    if plan.endangered:
        click.secho(f"WARNING: {len(plan.endangered)} resource(s) holding data (tables, buckets, queues, log groups) "
                    "will be replaced or removed:", fg="red", bold=True, err=err)
        for change in plan.endangered:
            click.secho(f"  {change.danger()}", fg="red", err=err)


def _stdin_is_terminal() -> bool:
    """Whether a person can answer on standard input (a seam for tests)."""
    return sys.stdin.isatty()


def _confirmer(*, yes: bool, err: bool) -> Callable[[ChangeSetPlan], bool]:
    """Show the change set; then yes with --yes, the answer to "execute? [y/N]" on a terminal, and a refusal
    (never a silent yes, never a wait for input that cannot come) without one."""

    def confirm(plan: ChangeSetPlan) -> bool:
        _echo_plan(plan, err=err)
        if yes:
            return True
        if not _stdin_is_terminal():
            raise ChangeSetDeclinedError(plan.stack_name, "standard input is not a terminal to ask on: pass --yes to "
                                         "execute it without asking")
        return click.confirm("execute?", default=False, err=err)

    return confirm


def _print_policy(target: Target, *, stack_name: str, template: Path | None, bucket: str | None) -> None:
    account = target.account_id()
    policy = deployer_policy(load_template(template), stack_name=stack_name, region=target.region, account=account,
                             artifacts_bucket=bucket or bucket_name(account, target.region))
    if len(stack_name) > SAFE_STACK_NAME_LENGTH:
        click.echo(f"note: CloudFormation may cut a stack name of over {SAFE_STACK_NAME_LENGTH} characters from the "
                   f"names it gives resources, and then this policy's {stack_name}-* patterns miss them", err=True)
    click.echo(json.dumps(policy, indent=2))


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
@click.option("--yes", "-y", is_flag=True,
              help="Execute the change set without asking (CI). Without it, deploy asks on a terminal and refuses "
                   "when standard input is not one.")
@click.option("--print-policy", is_flag=True,
              help="Print the IAM policy (JSON) that lets a person or CI role deploy this template to this stack, "
                   "and nothing else; builds and deploys nothing.")
@_endpoint_option
@click.option("--json", "as_json", is_flag=True, help="Print the stack record (outputs, parameters) as JSON.")
@reports_errors
def deploy(stack_name: str, region: str | None, parameters: tuple[str, ...], aws_profile: str | None,
           template: Path | None, manifest: Path | None, artifacts_bucket: str | None, replace_failed_stack: bool,
           yes: bool, print_policy: bool, endpoint_url: str | None, as_json: bool) -> None:
    """Build the functions' artifacts and create or update the stack through a CloudFormation change set.

    Shows the change set (resources added, modified, replaced, removed; loudly, any table, bucket, queue or log
    group replaced or removed) and asks "execute? [y/N]"; --yes executes without asking, and without a terminal
    to ask on the deploy stops unless --yes. Then prints the stack's events as they arrive and its outputs,
    which are saved in .seglog/stacks/<name>.json for `seglog env --stack` and `seglog smoke --stack`. A
    rollback prints the failing resources and their reasons and exits 1. A deploy of an unchanged tree says "no
    changes". A stack whose first create failed is refused, with what that create kept, unless
    --replace-failed-stack.
    """
    target = Target.resolve(region=region, profile=aws_profile, endpoint_url=endpoint_url)
    if target.region_note:
        click.echo(target.region_note, err=True)
    if print_policy:
        _print_policy(target, stack_name=stack_name, template=template, bucket=artifacts_bucket)
        return
    values = {k: str(v) for k, v in parse_parameters(parameters).items()}
    if manifest is not None:
        build = Manifest.read(manifest)
        template = template or Path(build.template)
    check_parameters(load_template(template).body, values)  # before the build: a refusal should not wait for it
    check_stack_name(stack_name)
    if manifest is not None:
        artifacts = deploying.artifacts_of(build)
    else:
        artifacts = deploying.built_artifacts(template, progress=progress_line)
    where = f"{target.endpoint_url} ({target.region})" if target.is_local else f"region {target.region}"
    click.echo(f"deploying stack {stack_name} to {where}", err=as_json)
    state, record = deploying.deploy(
        target, stack_name=stack_name, template_path=template, artifacts=artifacts,
        parameters=values, artifacts_bucket=artifacts_bucket,
        on_event=(lambda e: click.echo(e.line(), err=True)) if as_json else _echo_event,
        replace_failed_stack=replace_failed_stack, on_replaced=lambda kept: _echo_leftovers(
            f"deleted the failed create of stack {stack_name}; what it retained stays (delete it, or import it "
            "into the new stack, by hand):", kept, err=as_json),
        confirm=_confirmer(yes=yes, err=as_json))
    if as_json:
        echo_json({"status": state.status, "changed": state.changed, **dataclasses.asdict(record)})
        return
    click.echo(f"stack {stack_name}: {state.status}" + ("" if state.changed else " (no changes)"))
    for key, value in sorted(state.outputs.items()):
        click.echo(f"  {key:<28} {value}")
    click.echo(next_steps(record, profile=aws_profile))


@click.command()
@click.option("--stack-name", required=True, help="The CloudFormation stack to delete.")
@_region_option
@_aws_profile_option
@_endpoint_option
@reports_errors
def destroy(stack_name: str, region: str | None, aws_profile: str | None, endpoint_url: str | None) -> None:
    """Delete the stack, and say which retained resources are left and how to remove them.

    Every removal command printed reaches the same target as the destroy (its region, --endpoint-url and
    --profile), so pasted it removes what it names there and nowhere else."""
    target = Target.resolve(region=region, profile=aws_profile, endpoint_url=endpoint_url)
    if target.region_note:
        click.echo(target.region_note, err=True)
    leftovers = deploying.destroy(target, stack_name=stack_name, on_event=_echo_event)
    click.echo(f"stack {stack_name} deleted")
    if leftovers:
        _echo_leftovers("left on purpose (DeletionPolicy Retain, or made by Lambda outside the stack); to remove "
                        "them:", leftovers)
    bucket = artifacts_bucket(target)
    if bucket is not None:
        _echo_leftovers("the artifacts bucket stays for the other stacks of this account and region (a deploy "
                        "with --artifacts-bucket used that bucket instead); once none needs it:", [bucket])


@click.command()
@click.option("--stack", "stack_name", help="A stack deployed from this clone (its .seglog/stacks record).")
@click.option("--api-url", envvar="SEGLOG_API_URL", metavar="URL",
              help="Or any deployment's API, with SEGLOG_* resource variables naming its tables and bucket.")
@click.option("--edits", type=click.IntRange(1, MAX_EDITS), default=None,
              help="Edits per client (default: enough to pass the stack's SnapshotEvery once; without a stack, "
                   f"edits until the API appends a Snapshot entry, at most {MAX_SEARCH_APPENDS} appends).")
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
    violation. Works against any deployment: AWS, or the emulator (`--api-url http://127.0.0.1:4599`). By
    default it makes enough edits for a snapshot and waits for the pipeline to complete it (progress on stderr)."""
    every: int | None = None
    if stack_name:
        record = StackRecord.load(stack_name)
        target = Target.resolve(region=record.region, profile=aws_profile, endpoint_url=record.endpoint_url)
        backend = Backend.connect(record_resources(record), session=target.session,
                                  endpoints=dict.fromkeys(("dynamodb", "s3", "sqs"), record.endpoint_url)
                                  if record.endpoint_url else None)
        if not api_url and not has_api(record):
            raise click.UsageError(no_api_advice(record))
        url = api_url or record.api_url
        every = int(record.parameters.get("SnapshotEvery", "0") or 0) or None
    elif api_url:
        backend, url = Backend.connect(Resources.from_env()), api_url
    else:
        raise click.UsageError("say which deployment: --stack NAME, or --api-url URL (with SEGLOG_* variables)")
    report = run_smoke(url, backend, edits=edits, clients=clients, timeout=timeout, snapshot_every=every,
                       progress=lambda line: click.echo(f"smoke: {line}", err=True))
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
