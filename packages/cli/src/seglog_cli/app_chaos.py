"""``seglog chaos --workload drive.py --check check.py`` (or ``--differential``): chaos for any SAM app — the
options' reading, the campaign's text and its report page (issue 37). The runs are :mod:`seglog_emulator.appchaos`'s;
the page is drawn as seglog's chaos runs are (:mod:`seglog_plugin.chaos.timeline`: invocations, the faults that hit
them and the violations, linked cause to effect)."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from seglog_core.violations import Violation
from seglog_emulator.appchaos.kinds import app_plan, template_kinds
from seglog_emulator.appchaos.runner import AppCampaign, AppChaos, AppRun, run_campaign
from seglog_emulator.appchaos.scripts import load_function
from seglog_emulator.appchaos.session import Target
from seglog_emulator.faults.runtime import LOG_FILE
from seglog_plugin.chaos import timeline
from seglog_report.model import Report, RunData


def run_app_chaos(*, stack: Callable[[], tuple[dict[str, str], str, str]], template: Path, workload: Path,
                  check: Path | None, differential: bool, ignore: tuple[str, ...], parameters: dict[str, Any],
                  seed: int, runs: int, faults: str, rate: float | None, state_root: Path, iam: bool,
                  fail_fast: bool, as_json: bool, artifact: Path | None,
                  schedule_scale: float = 1.0) -> tuple[AppCampaign, str]:
    """Check the options and the files, then bring the local stack up (``stack()``: its endpoints, profile and
    region), run the campaign and print it. Returns the campaign and its text."""
    if (check is None) == (not differential):
        raise click.UsageError("with --workload, give --check check.py (your own verdict) or --differential (the "
                               "fault-free run's final state is the verdict), not both and not neither")
    if ignore and not differential:
        raise click.UsageError("--ignore names fields the differential comparison leaves out: add --differential")
    drive = load_function(workload, "workload")
    verdict = load_function(check, "check") if check is not None else None
    app_plan(seed, faults, rate, *template_kinds(template))  # a bad --faults fails here, before the stack starts
    endpoints, profile, region = stack()
    chaos = AppChaos(Target(template=template.resolve(), endpoints=endpoints, profile=profile, region=region,
                            parameters=parameters, iam=iam, artifact=artifact, schedule_scale=schedule_scale),
                     state_root=state_root)

    def progress(run: AppRun) -> None:
        if as_json:
            return
        what = "fault-free" if not run.faulted else f"{sum(run.faults.values())} faults"
        mark = "ok  " if run.ok else "FAIL"
        click.echo(f"{mark} run {run.run + 1}/{runs} seed {run.seed} ({what}): {len(run.violations)} violations"
                   + (f", {len(run.differences)} resources differ" if run.differences else "")
                   + f", {run.seconds:.1f}s", err=True)

    campaign = run_campaign(chaos, seed=seed, runs=runs, faults=faults, rate=rate, workload=drive, check=verdict,
                            differential=differential, ignore=ignore, fail_fast=fail_fast, on_run=progress)
    replay = _replay(template, workload, check, differential, ignore, parameters, faults, rate,
                     iam=iam, schedule_scale=schedule_scale)
    text = "\n".join(render(campaign, replay))
    if as_json:
        click.echo(json.dumps({**campaign.to_dict(), "kinds": sorted(map(str, chaos.kinds)),
                               "replay": [f"{replay} --seed {r.seed} --runs 1" for r in campaign.runs if not r.ok]},
                              indent=2, default=str))
    else:
        click.echo(text)
    return campaign, text


def render(campaign: AppCampaign, replay: str) -> list[str]:
    """The campaign for people: each failing run with what differed, the faults and invocations behind it and its
    replay command; then the verdict and the coverage."""
    lines: list[str] = []
    for run in [*campaign.baselines, *campaign.runs]:
        if run.ok:
            continue
        label = "fault-free run" if not run.faulted else "run"
        lines.append(f"\n{label} {run.run + 1}, seed {run.seed} (stack {run.stack}; logs {run.directory}):")
        lines += [f"  violation: {violation}" for violation in run.violations]
        lines += [f"  {line}" for difference in run.differences for line in difference.lines()]
        if run.faulted:
            fired = ", ".join(f"{k} x{v}" for k, v in sorted(run.faults.items())) or "none"
            lines.append(f"  faults that fired: {fired}")
            lines += [f"    {f.get('kind')} at {f.get('key')} ({f.get('process')})" for f in run.injected[:10]]
            lines += [f"  invocation {call.get('request_id')} of {call.get('function')}: {call.get('outcome')}, "
                      f"attempt {call.get('attempt', 1)}" for call in run.troubled[:10]]
        lines.append(f"  replay: {replay} --seed {run.seed} --runs 1")
    lines.append(f"\n{sum(r.ok for r in campaign.runs)}/{len(campaign.runs)} runs ok")
    lines += campaign.coverage.lines()
    return lines


def app_report(campaign: AppCampaign, text: str, command: str) -> Report:
    """The campaign as the report page draws it: a timeline per run (each invocation, the faults that hit it, the
    violations), the fault-free runs of a differential campaign included."""
    runs = [_run_data(run) for run in [*campaign.baselines, *campaign.runs]]
    return Report(kind="chaos", title=f"chaos of {Path(campaign.template).parent.name}", command=command,
                  created_at=time.time(), runs=[r for r in runs if r is not None], text=text)


def _run_data(run: AppRun) -> RunData | None:
    directory = Path(run.directory)
    violations = [Violation(invariant="CHECK", message=v) for v in run.violations]
    violations += [Violation(invariant="DIFFERENTIAL", message="\n".join(d.lines())) for d in run.differences]
    try:
        data = timeline.run_data(run=run.run, seed=run.seed, started_at=run.started_at, seconds=run.seconds,
                                 records=timeline.log_records(Path(run.log_file)),
                                 fault_log=directory / "faults" / LOG_FILE if run.faulted else None, tries=[],
                                 lives=[], violations=violations, quiescence=run.quiet_seconds)
    except Exception as exc:  # a run that cannot be drawn keeps its verdict; the page goes without it
        click.echo(f"run {run.run + 1} (seed {run.seed}) could not be drawn: {exc}", err=True)
        return None
    data.title = f"{'fault-free ' if not run.faulted else ''}run {run.run + 1}"
    return data


def _replay(template: Path, workload: Path, check: Path | None, differential: bool, ignore: tuple[str, ...],
            parameters: dict[str, Any], faults: str, rate: float | None, *, iam: bool = True,
            schedule_scale: float = 1.0) -> str:
    parts = ["seglog", "chaos", "--template", str(template), "--workload", str(workload)]
    parts += ["--check", str(check)] if check is not None else ["--differential"]
    for name in ignore:
        parts += ["--ignore", name]
    for key, value in parameters.items():
        parts += ["--parameter", f"{key}={value}"]
    parts += ["--faults", faults] + (["--rate", str(rate)] if rate is not None else [])
    parts += [] if iam else ["--no-iam"]
    parts += ["--schedule-scale", f"{schedule_scale:g}"] if schedule_scale != 1 else []
    return shlex.join(parts)
