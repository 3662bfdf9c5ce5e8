"""``seglog chaos --workload drive.py --check check.py`` (or ``--differential``): chaos for any SAM app, the
options' reading and the campaign's text (issue 37). The runs are :mod:`seglog_emulator.appchaos`'s."""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from seglog_emulator.appchaos.runner import AppCampaign, AppChaos, AppRun, run_campaign
from seglog_emulator.appchaos.scripts import load_function
from seglog_emulator.appchaos.session import Target


def run_app_chaos(*, stack: Callable[[], tuple[dict[str, str], str, str]], template: Path, workload: Path,
                  check: Path | None, differential: bool, ignore: tuple[str, ...], parameters: dict[str, Any],
                  seed: int, runs: int, faults: str, rate: float | None, state_root: Path, iam: bool,
                  fail_fast: bool, as_json: bool, artifact: Path | None) -> AppCampaign:
    """Check the options and the files, then bring the local stack up (``stack()``: its endpoints, profile and
    region), run the campaign and print it; the caller exits with its verdict."""
    if (check is None) == (not differential):
        raise click.UsageError("with --workload, give --check check.py (your own verdict) or --differential (the "
                               "fault-free run's final state is the verdict), not both and not neither")
    if ignore and not differential:
        raise click.UsageError("--ignore names fields the differential comparison leaves out: add --differential")
    drive = load_function(workload, "workload")
    verdict = load_function(check, "check") if check is not None else None
    probe = Target(template=template.resolve(), endpoints={}, profile="", region="")
    AppChaos(probe, state_root=state_root).plan(seed, faults, rate)  # a bad --faults fails here, before any run
    endpoints, profile, region = stack()
    chaos = AppChaos(dataclasses.replace(probe, endpoints=endpoints, profile=profile, region=region,
                                         parameters=parameters, iam=iam, artifact=artifact), state_root=state_root)

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
    replay = _replay(template, workload, check, differential, ignore, parameters, faults, rate)
    if as_json:
        click.echo(json.dumps({**campaign.to_dict(), "kinds": sorted(map(str, chaos.kinds)),
                               "replay": [f"{replay} --seed {r.seed} --runs 1" for r in campaign.runs if not r.ok]},
                              indent=2, default=str))
        return campaign
    for run in [*campaign.baselines, *campaign.runs]:
        if run.ok:
            continue
        label = "fault-free run" if not run.faulted else "run"
        click.echo(f"\n{label} {run.run + 1}, seed {run.seed} (stack {run.stack}; logs {run.directory}):")
        for violation in run.violations:
            click.echo(f"  violation: {violation}")
        for difference in run.differences:
            for line in difference.lines():
                click.echo(f"  {line}")
        if run.faulted:
            fired = ", ".join(f"{k} x{v}" for k, v in sorted(run.faults.items())) or "none"
            click.echo(f"  faults that fired: {fired}")
            for fault in run.injected[:10]:
                click.echo(f"    {fault.get('kind')} at {fault.get('key')} ({fault.get('process')})")
            for call in run.troubled[:10]:
                click.echo(f"  invocation {call.get('request_id')} of {call.get('function')}: "
                           f"{call.get('outcome')}, attempt {call.get('attempt', 1)}")
        click.echo(f"  replay: {replay} --seed {run.seed} --runs 1")
    reached = ", ".join(sorted(campaign.reached())) or "none"
    unreached = sorted(set(map(str, chaos.plan(seed, faults, rate).specs)) - campaign.reached())
    click.echo(f"\n{sum(r.ok for r in campaign.runs)}/{len(campaign.runs)} runs ok; fault kinds reached: {reached}"
               + (f"; never reached: {', '.join(unreached)}" if unreached else ""))
    return campaign


def _replay(template: Path, workload: Path, check: Path | None, differential: bool, ignore: tuple[str, ...],
            parameters: dict[str, Any], faults: str, rate: float | None) -> str:
    parts = ["seglog", "chaos", "--template", str(template), "--workload", str(workload)]
    parts += ["--check", str(check)] if check is not None else ["--differential"]
    for name in ignore:
        parts += ["--ignore", name]
    for key, value in parameters.items():
        parts += ["--parameter", f"{key}={value}"]
    parts += ["--faults", faults] + (["--rate", str(rate)] if rate is not None else [])
    return shlex.join(parts)
