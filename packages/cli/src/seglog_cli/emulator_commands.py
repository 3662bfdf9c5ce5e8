"""seglog emulate: run the template's functions locally, as AWS runs them, optionally under seeded faults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from seglog_awsmodel.config import AWS_IAM
from seglog_awsmodel.template import default_template_path
from seglog_cli.blocked import BlockedSnapshots
from seglog_cli.build_commands import (
    artifact_option,
    emulated_artifact,
    parameter_option,
    parse_parameters,
    stack_name_option,
    template_option,
)
from seglog_cli.console import DEFAULT_CONSOLE_PORT, start_console, stop_console
from seglog_cli.context import reports_errors, settings
from seglog_cli.reports import command_line, interruptible, report_directory, report_option
from seglog_emulator.faults.plan import FaultPlan
from seglog_emulator.faults.runtime import FaultRuntime
from seglog_emulator.settings import EmulatorSettings
from seglog_emulator.status import read_status
from seglog_emulator.supervisor import Supervisor
from seglog_plugin.chaos.runner import RunReport
from seglog_plugin.resources import backend_of, seglog_resources
from seglog_report.html import publish
from seglog_stack import local
from seglog_stack.info import ENDPOINT_ENV


def fault_plan(faults: str | None, plan_file: Path | None, rate: float, seed: int) -> FaultPlan | None:
    if plan_file is not None:
        return FaultPlan.from_file(plan_file)
    if faults:
        return FaultPlan.from_flags(faults, rate=rate, seed=seed)
    return None


def external_endpoints(url: str) -> dict[str, str]:
    """Endpoints of a stack someone else runs (Docker): ``url`` for every service, unless the SDK's own
    per-service variable (AWS_ENDPOINT_URL_DYNAMODB, ...) names another, as the AWS SDKs resolve them."""
    return {service: os.environ.get(variable) or url for service, variable in ENDPOINT_ENV.items()}


@click.group(invoke_without_command=True)
@click.option("--port", type=int, default=4599, show_default=True, envvar="SEGLOG_EMULATOR_PORT",
              help="The HTTP gateway's port (0: any free).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address the gateway listens on (0.0.0.0 in a container).")
@click.option("--endpoint-url", envvar="AWS_ENDPOINT_URL",
              help="Use the stack already running there (e.g. LocalStack in Docker) instead of starting one.")
@parameter_option
@click.option("--faults", help="Fault kinds to inject, comma-separated (kind or kind=rate; 'all' for every kind).")
@click.option("--fault-plan", "fault_plan_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A fault plan file (TOML or JSON) instead of --faults.")
@click.option("--rate", type=float, default=0.05, show_default=True, help="Rate of kinds given without one.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fault schedule.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Checkpoints and markers (default: emulator/ in the stack's run directory).")
@click.option("--schedule-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              envvar="SEGLOG_SCHEDULE_SCALE",
              help="Run scheduled rules' clocks this many times faster (60: an hour of schedule per real minute).")
@click.option("--alarm-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Real seconds per second of the alarms' periods (0.1: a 60 s period passes in 6 s), for the "
                   "template's alarms the emulator evaluates (`seglog emulate status` shows them).")
@click.option("--iam/--no-iam", default=True, show_default=True,
              help="Evaluate every AWS call a function makes against its policies in the template, and deny what "
                   "AWS would deny (AccessDenied); --no-iam lets every call through.")
@click.option("--console-port", type=int, default=DEFAULT_CONSOLE_PORT, show_default=True,
              envvar="SEGLOG_CONSOLE_PORT", help="The live console's port (0: any free).")
@click.option("--console/--no-console", "console_on", default=True, show_default=True,
              help="Serve the live console: the timeline, queues, iterator ages, in flight, pending snapshots, "
                   "faults and cost so far, pushed as they happen.")
@template_option
@stack_name_option
@artifact_option
@click.pass_context
@reports_errors
def emulate(ctx: click.Context, port: int, host: str, endpoint_url: str | None, parameters: tuple[str, ...],
            faults: str | None, fault_plan_file: Path | None, rate: float, seed: int,
            state_dir: Path | None, schedule_scale: float, alarm_scale: float, iam: bool, console_port: int,
            console_on: bool, template: Path | None, stack_name: str, artifact: Path | None) -> None:
    """Run the functions of template.yaml against the local stack, the way AWS runs them.

    Starts an HTTP gateway for the API (payload format 2.0), a poller per event source mapping and a scheduler
    per Schedule event, each in its own process, with the handlers in worker processes that import from the
    built artifact (this machine's twin, built on first use). Ctrl-C drains and stops.
    `seglog emulate status` shows what a running emulator is doing.
    """
    if ctx.invoked_subcommand is not None:
        return
    config = settings(ctx).stack_config()
    overrides = parse_parameters(parameters)
    template = template or default_template_path()
    code = emulated_artifact(artifact, template)
    if endpoint_url:
        deployment = local.provision(external_endpoints(endpoint_url), profile=str(config.profile),
                                     region=config.region, parameters=overrides, template=template,
                                     stack_name=stack_name)
    else:
        deployment = local.up(config, parameters=overrides, template=template, stack_name=stack_name)
    plan = fault_plan(faults, fault_plan_file, rate, seed)
    state = state_dir or emulator_state_dir(config.run_dir, stack_name)
    runtime = FaultRuntime(plan, state / "faults") if plan else None
    if runtime is not None:
        runtime.start()
    supervisor = Supervisor(EmulatorSettings(deployment=deployment, template=template,
                                             stack=stack_name, state_dir=state, parameters=overrides,
                                             host=host, port=port, schedule_scale=schedule_scale, iam=iam,
                                             alarm_scale=alarm_scale,
                                             artifact=code),
                            faults=runtime)
    click.echo(f"seglog emulator: API at {supervisor.api_url}  (Ctrl-C to stop; IAM {'on' if iam else 'off'})",
               err=True)
    key = supervisor.settings.api_credentials[0]
    signed = [f"{r.Method} {r.Path}" for r in supervisor.config.http_routes if r.Authorizer == AWS_IAM]
    if signed:
        seglog_clients = ("seglog_client and `seglog sheet --api-url` sign with `eval \"$(seglog env)\"`'s; "
                          if seglog_resources(deployment) else "")
        click.echo(f"  requests to {len(signed)} route(s) must be SigV4-signed (IAM authorization, as on AWS) with "
                   f"key {key.access_key_id}: {seglog_clients}curl with --aws-sigv4 "
                   f"aws:amz:{deployment.region}:execute-api --user {key.access_key_id}:<secret>", err=True)
    for name in supervisor.children:
        click.echo(f"  {name}", err=True)
    # The console's probe reads seglog's queues and pending table; for another app it shows the invocations only.
    seglog_app = seglog_resources(deployment) is not None
    console = start_console(console_port, lane="supervisor", deployment=deployment if seglog_app else None,
                            host=host) if console_on else None
    try:
        raise SystemExit(supervisor.run())
    finally:
        stop_console(console)


def emulator_state_dir(run_dir: Path, stack_name: str) -> Path:
    """Where an emulator of ``stack_name`` keeps its state by default: ``emulator/`` for seglog's stack, else
    ``emulator-<stack>/``, so two apps' checkpoints, faults and alarms never mix."""
    return run_dir / ("emulator" if stack_name == local.DEFAULT_STACK_NAME else f"emulator-{stack_name}")


@emulate.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
              help="The emulator's state directory (default: emulator/ in the stack's run directory, "
                   "emulator-<stack>/ for another stack name).")
@stack_name_option
@click.pass_context
@reports_errors
def emulate_status(ctx: click.Context, as_json: bool, state_dir: Path | None, stack_name: str) -> None:
    """Whether the emulator runs, its children, invocations in flight, stream checkpoints and faults so far,
    snapshots blocked until newer code is deployed (read from the pending table when the stack answers), and the
    template's alarms as CloudWatch would evaluate them on the emulator's metrics (each one in ALARM with why).

    Exit status 0 when it runs with every child reporting, 1 otherwise.
    """
    config = settings(ctx).stack_config()
    deployment = local.current(config)
    found = read_status(state_dir or emulator_state_dir(config.run_dir, stack_name),
                        app=BlockedSnapshots.read(backend_of(deployment).pending)
                        if deployment and seglog_resources(deployment) else None)
    click.echo(json.dumps(found.to_dict(), indent=2) if as_json else found.render())
    raise SystemExit(0 if found.healthy else 1)


@click.command()
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the first run; run i uses seed+i.")
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True, help="How many runs.")
@click.option("--faults", default="all", show_default=True,
              help="Fault kinds, comma-separated (kind or kind=rate); 'all' for every kind, 'none' for a clean run.")
@click.option("--rate", type=float, help="One rate for every kind given without one (default: per-kind rates).")
@click.option("--fault-plan", "fault_plan_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A fault plan file (TOML or JSON) instead of --faults; its seed is replaced by --seed.")
@click.option("--coverage/--no-coverage", "cover", default=True, show_default=True,
              help="Each run arms the crash points and fault kinds no earlier run of the campaign reached.")
@click.option("--target", "target", default="", metavar="NAME,...",
              help="Crash points and fault kinds the first run arms (every run with --no-coverage); a run's "
                   "report names its own, to replay it.")
@click.option("--require-coverage", is_flag=True,
              help="Exit 1 also when a crash point or fault kind the plans could reach was reached by no run.")
@click.option("--sheets", type=click.IntRange(min=1), default=2, show_default=True, help="Sheets per run.")
@click.option("--clients", type=click.IntRange(min=1), default=3, show_default=True, help="Clients per sheet.")
@click.option("--edits", type=click.IntRange(min=1), default=15, show_default=True, help="Edits per client.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first run with a violation.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Run logs and state (default: chaos/ in the stack's run directory).")
@click.option("--console-port", type=int, help="Serve the live console on this port (0: any free), following "
                                                "every run of the campaign (default: no console).")
@click.option("--workload", "workload", type=click.Path(dir_okay=False, path_type=Path),
              help="Your app's chaos: a Python file defining workload(app), which drives the app of --template "
                   "(app.api_url(), app.resource(logical_id), app.client(service)) while faults fire.")
@click.option("--check", "check", type=click.Path(dir_okay=False, path_type=Path),
              help="With --workload: a Python file defining check(app) -> list of violations (empty: fine), run "
                   "once the app is quiet after the faults stopped.")
@click.option("--differential", is_flag=True,
              help="With --workload, instead of --check: run each seed once without faults and once under them, "
                   "and fail on any difference between the two runs' tables, buckets and queues.")
@click.option("--ignore", "ignore", multiple=True, metavar="FIELD",
              help="With --differential: a field (an attribute, a JSON key, at any depth) left out of the "
                   "comparison, e.g. a time stamp or a generated id. Repeatable.")
@click.option("--no-iam", "no_iam", is_flag=True, help="With --workload: do not enforce the functions' policies.")
@click.option("--schedule-scale", "schedule_scale", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="With --workload: run the template's schedules this many times faster than "
                                      "real time (60: a rate(1 minute) fires every second).")
@parameter_option
@report_option
@template_option
@artifact_option
@click.pass_context
@reports_errors
def chaos(ctx: click.Context, seed: int, runs: int, faults: str, rate: float | None, fault_plan_file: Path | None,
          cover: bool, target: str, require_coverage: bool, sheets: int, clients: int, edits: int, as_json: bool,
          fail_fast: bool, state_dir: Path | None, console_port: int | None, workload: Path | None,
          check: Path | None, differential: bool, ignore: tuple[str, ...], no_iam: bool, schedule_scale: float,
          parameters: tuple[str, ...], report_dir: Path | None, template: Path | None,
          artifact: Path | None) -> None:
    """Run client workloads through the API against the emulator under seeded faults, then verify I1-I6.

    Each run: start the emulator with the run's fault plan, edit sheets concurrently (retrying with entry ids),
    stop the faults, wait for quiescence, verify every sheet. Exit status 1 on any violation; a failing run
    prints the command that replays its seed. With --require-coverage, also exit 1 when a crash point or fault
    kind the plans could reach was reached by no run. Ctrl-C (or SIGTERM) stops the run under way, and the page is
    still written, with the runs finished and the interrupted one drawn from its log (exit status 130, or 143).

    Any SAM app: --template app/template.yaml --workload drive.py and --check check.py or --differential. Each run
    provisions the template under a stack of its own, runs the functions under the seed's faults while
    workload(app) drives them, stops the faults, waits until nothing is in flight and every queue feeding a
    function is empty, then judges; exit status 1 on any violation or difference, with the command that replays
    the seed.
    """
    from seglog_plugin.chaos import Campaign, Workload
    from seglog_plugin.chaos.coverage import Coverage, parse_targets
    from seglog_stack import StackManager

    if workload is not None or check is not None or differential:
        if workload is None:
            raise click.UsageError("--check and --differential judge a workload: give --workload drive.py too")
        from seglog_cli.app_chaos import app_report, run_app_chaos

        config = settings(ctx).stack_config()
        app_template = template or default_template_path()

        def stack() -> tuple[dict[str, str], str, str]:
            info = StackManager(config).up()
            return dict(info.endpoints), str(config.profile), config.region

        found, text = run_app_chaos(
            stack=stack, template=app_template,
            workload=workload, check=check, differential=differential, ignore=ignore,
            parameters=parse_parameters(parameters), seed=seed, runs=runs,
            faults=faults, rate=rate, state_root=state_dir or config.run_dir / "chaos-app", iam=not no_iam,
            fail_fast=fail_fast, as_json=as_json, artifact=artifact, schedule_scale=schedule_scale)
        page, _priced = publish(app_report(found, text, command_line(ctx)),
                                report_directory(report_dir, config.run_dir, "chaos"))
        if not as_json:
            click.echo(f"report: {page}")
        missed = found.coverage.missed()
        if require_coverage and missed:
            click.echo(f"--require-coverage: no run reached {', '.join(missed)}", err=True)
        raise SystemExit(0 if found.ok and not (require_coverage and missed) else 1)

    base = FaultPlan.from_file(fault_plan_file) if fault_plan_file else None
    targets = parse_targets(target)
    Campaign.armed_plan(seed, faults, rate, base, Coverage(targets=targets))  # a bad --target fails here, not later
    config = settings(ctx).stack_config()
    template = template or default_template_path()
    code = emulated_artifact(artifact, template)
    info = StackManager(config).up()
    campaign = Campaign(dict(info.endpoints), profile=str(config.profile), region=config.region,
                        state_root=state_dir or config.run_dir / "chaos", template=template, artifact=code,
                        workload=Workload(sheets=sheets, clients=clients, edits=edits))

    def progress(report: RunReport) -> None:
        if not as_json:
            mark = "ok  " if report.ok else "FAIL"
            armed = ", ".join(name for t in report.targets for name in t.missed)
            click.echo(f"{mark} run {report.run + 1}/{runs} seed {report.seed}: {sum(report.faults.values())} "
                       f"faults, {report.snapshots} snapshots, {len(report.violations)} violations, "
                       f"{report.seconds:.1f}s" + (f", armed for {armed}" if armed else ""),
                       err=True)

    replay_args = " ".join(
        [f"--fault-plan {fault_plan_file}" if fault_plan_file else f"--faults {faults}"]
        + ([f"--rate {rate}"] if rate is not None and not fault_plan_file else [])
        + [f"--sheets {sheets} --clients {clients} --edits {edits}"])
    console = start_console(console_port, lane="chaos", deployment=campaign.deployment) \
        if console_port is not None else None
    with interruptible() as stopped:
        try:
            result = campaign.run(seed, runs, faults=faults, rate=rate, base=base,
                                  label=str(fault_plan_file) if fault_plan_file else faults, on_run=progress,
                                  fail_fast=fail_fast, cover=cover, targets=targets, replay_args=replay_args)
        finally:
            stop_console(console)
    campaign.close(keep=not result.ok)
    page, priced = publish(result.to_report(command_line(ctx)), report_directory(report_dir, config.run_dir, "chaos"))
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "ledger": priced.to_dict(), "report": str(page)}, indent=2,
                              default=str))
    else:
        click.echo(result.render())
        click.echo(priced.render())
        if not result.ok:
            click.echo(f"kept for inspection: stack {campaign.stack} on the local stack")
        click.echo(f"logs: {campaign.state_dir}")
        click.echo(f"report: {page}")
    if result.interrupted:
        click.echo(f"interrupted after {len(result.runs)} run(s): the page holds them, the last drawn from what its "
                   f"log held: {page}", err=True)
        raise SystemExit(stopped.status)
    if require_coverage and result.missed and not as_json:
        click.echo(f"--require-coverage: no run reached {', '.join(result.missed)}", err=True)
    raise SystemExit(0 if result.ok and not (require_coverage and result.missed) else 1)
