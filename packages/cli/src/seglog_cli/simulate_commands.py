"""seglog simulate: seeded worlds in one process (DESIGN §11) — campaigns, one seed's replay, the mutants."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import click

from seglog_awsmodel.faults import SIMULATED, FaultKind
from seglog_cli.context import settings
from seglog_cli.reports import command_line, report_directory, report_option
from seglog_report.cost import Ledger
from seglog_report.html import publish
from seglog_report.model import Report
from seglog_sim import quiet_logs
from seglog_sim.campaign import Campaign, run_campaign
from seglog_sim.history import around, lines
from seglog_sim.mutants.catalogue import BASELINE, MUTANTS, by_name
from seglog_sim.mutants.runner import MutantResult, run_mutants
from seglog_sim.run import SeedResult
from seglog_sim.scenario import Scenario
from seglog_sim.shrink import shrink
from seglog_sim.timeline import run_data, seeds_report
from seglog_sim.waste import render as render_waste

#: Seeds a campaign's report draws: its first failing ones (each run again), or its first seed when all pass.
MAX_DRAWN = 5


def scenario_of(fault_kinds: str | None) -> Scenario:
    """The scenario a campaign ran with ``--faults fault_kinds`` (None: every kind)."""
    return Scenario(faults=_kinds(fault_kinds))


def _kinds(text: str | None) -> tuple[FaultKind, ...]:
    if text is None:
        return SIMULATED
    if text.strip() in ("", "none"):
        return ()
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in {f.value for f in SIMULATED}]
    if unknown:
        raise click.BadParameter(f"unknown fault kinds {', '.join(unknown)}; known: "
                                 f"{', '.join(f.value for f in SIMULATED)}", param_hint="--faults")
    return tuple(FaultKind(n) for n in names)


def _replay(seed: int, faults: str | None, only: Iterable[str] | None = None) -> str:
    command = f"seglog simulate --seed {seed}"
    if faults is not None:
        command += f" --faults {faults}"
    if only is not None:
        command += f" --only-faults {','.join(only) or 'none'}"
    return command


@click.command()
@click.option("--seeds", type=click.IntRange(min=1), help="Run this many seeds (from --seed, default 1).")
@click.option("--seed", type=int, help="The first seed; alone, replay this one seed and print its history.")
@click.option("--faults", "fault_kinds", metavar="KIND,...",
              help=f"Only these fault kinds (default all; 'none' for none): {', '.join(f.value for f in SIMULATED)}.")
@click.option("--only-faults", metavar="ID,...", help="Replay with only these fault ids (a shrunk schedule).")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes to split a campaign over.")
@click.option("--mutants", "mutants", is_flag=True, help="Run every mutant and report which seed killed it.")
@click.option("--mutant", "mutant_names", multiple=True, help="With --mutants: only this one (repeatable).")
@click.option("--skip-explained", is_flag=True,
              help="With --mutants: skip the mutants the catalogue explains as surviving (CI: the rest must die).")
@click.option("--no-shrink", is_flag=True, help="Do not shrink a failing seed's fault schedule.")
@click.option("--history", "full_history", is_flag=True, help="With one seed: print its whole history.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@report_option
@click.pass_context
def simulate(ctx: click.Context, seeds: int | None, seed: int | None, fault_kinds: str | None,
             only_faults: str | None, jobs: int, mutants: bool, mutant_names: tuple[str, ...], skip_explained: bool,
             no_shrink: bool, full_history: bool, as_json: bool, report_dir: Path | None) -> None:
    """Run seeded simulated worlds: the real log, router and worker code against simulated DynamoDB, streams,
    SQS and S3 in simulated time, every fault from the seed; check I1-I6, liveness and exactly-once."""
    quiet_logs()
    scenario = scenario_of(fault_kinds)
    if mutants:
        directory = report_directory(report_dir, settings(ctx).stack_config().run_dir, "mutants")
        _mutants(mutant_names, seeds or 1000, seed or 1, jobs, as_json, skip_explained, directory)
        return
    if seeds is None and seed is not None:
        only = None if only_faults is None else frozenset(t for t in only_faults.split(",") if t and t != "none")
        shrunk = None if only is None else sorted(only)
        result, data = run_data(seed, scenario, only=only, replay=_replay(seed, fault_kinds, shrunk))
        report = Report(kind="simulate", title=f"seglog simulate: seed {seed}", command=command_line(ctx),
                        created_at=time.time(), runs=[data])
        page, priced = _publish(ctx, report, report_dir)
        _one(result, scenario, fault_kinds, only, full_history, no_shrink, as_json, priced)
        click.echo(f"report: {page}", err=as_json)
        if not result.ok:
            sys.exit(1)
        return
    start = seed if seed is not None else 1

    def progress(c: Campaign) -> None:
        if not as_json:
            click.echo(f"[simulate] {c.seeds} seeds, {len(c.failing_seeds)} failing, "
                       f"{c.seeds_per_minute:.0f} seeds/min", err=True)

    campaign = run_campaign(range(start, start + (seeds or 100)), scenario, jobs=jobs, progress=progress)
    drawn = campaign.failing_seeds[:MAX_DRAWN] or [start]
    report = seeds_report(drawn, scenario, command=command_line(ctx),
                          title=f"seglog simulate: {campaign.seeds} seeds from {start}",
                          replay=lambda s: _replay(s, fault_kinds), total=campaign.meter, rows=campaign.rows)
    report.options = {} if fault_kinds is None else {"faults": fault_kinds}
    page, priced = _publish(ctx, report, report_dir)
    if as_json:
        click.echo(json.dumps({**campaign.to_dict(), "ledger": priced.to_dict(), "report": str(page)}, indent=2))
    else:
        _print_campaign(campaign)
        click.echo(priced.render())
    if not campaign.ok:
        first = campaign.failures[0]
        if not as_json:
            _print_failure(first, scenario, fault_kinds, no_shrink)
    click.echo(f"report: {page}", err=as_json)
    if not campaign.ok:
        sys.exit(1)


def _publish(ctx: click.Context, report: Report, report_dir: Path | None) -> tuple[Path, Ledger]:
    """Write report.html and report.json (each campaign's failing seeds, or its first, run again and drawn)."""
    return publish(report, report_directory(report_dir, settings(ctx).stack_config().run_dir, "simulate"))


def _one(result: SeedResult, scenario: Scenario, fault_kinds: str | None, only: frozenset[str] | None,
         full_history: bool, no_shrink: bool, as_json: bool, priced: Ledger) -> None:
    seed = result.seed
    if as_json:
        data = result.summary()
        data["fired"] = result.fired
        data["history"] = lines(result.history) if full_history else []
        data["ledger"] = priced.to_dict()
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(f"seed {seed}: {'ok' if result.ok else 'FAILED'} — {result.acknowledged} acknowledged appends, "
                   f"{result.snapshots} snapshots, {result.retired} segments retired, {len(result.fired)} faults "
                   f"({', '.join(result.kinds) or 'none'}), {result.sim_seconds:.0f} s simulated, "
                   f"{len(result.history)} storage calls")
        click.echo("  scenario: " + ", ".join(f"{k} {v}" for k, v in result.scenario.items()))
        click.echo(f"  waste: {render_waste(result.waste)}")
        if full_history:
            click.echo("\n".join(lines(result.history)))
        click.echo(priced.render())
        if not result.ok:
            _print_failure(result, scenario, fault_kinds, no_shrink or only is not None)


def _print_campaign(c: Campaign) -> None:
    click.echo(f"simulate: {c.seeds} seeds in {c.elapsed:.1f} s = {c.seeds_per_minute:.0f} seeds/min "
               f"({c.jobs} process{'es' if c.jobs > 1 else ''}); {len(c.failing_seeds)} failing"
               + (f": {', '.join(map(str, c.failing_seeds[:20]))}" if c.failing_seeds else ""))
    click.echo(f"  {c.acknowledged} acknowledged appends, {c.snapshots} snapshots, "
               f"{c.sim_seconds / 3600:.0f} simulated hours; {c.retired_share:.0%} of seeds retired a segment")
    click.echo(f"  waste: {render_waste(c.waste)}")
    kinds = {str(f) for f in SIMULATED}
    fired = {k: v for k, v in c.faults.items() if "@" not in k}
    missing = sorted(kinds - set(fired))
    click.echo("  faults fired: " + ", ".join(f"{k} {v}" for k, v in sorted(fired.items()))
               + (f"  (never fired: {', '.join(missing)})" if missing else "  (every kind fired)"))
    click.echo(f"  storage call sites reached ({len(c.sites)} caller:site pairs):")
    for site, count in sorted(c.sites.items()):
        click.echo(f"    {site:<60} {count}")
    click.echo("  invocation outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(c.invocations.items())))
    click.echo("  deliveries: " + ", ".join(f"{k} {v}" for k, v in sorted(c.stats.items())))


def _print_failure(result: SeedResult, scenario: Scenario, fault_kinds: str | None, no_shrink: bool) -> None:
    click.echo(f"\nseed {result.seed} FAILED:")
    for violation in result.violations[:10]:
        click.echo(f"  {violation}")
    click.echo(f"replay: {_replay(result.seed, fault_kinds)}")
    first = result.violations[0]
    click.echo(f"history around the violation ({first.invariant}, log {first.log_id}), simulated seconds:")
    for line in around(result.history, first):
        click.echo(f"  {line}")
    click.echo(f"{len(result.fired)} faults fired: {', '.join(result.fired[:40])}"
               + (" ..." if len(result.fired) > 40 else ""))
    if no_shrink:
        return
    click.echo("shrinking the fault schedule ...", err=True)
    shrunk = shrink(result.seed, scenario, result)
    click.echo(f"shrunk to {len(shrunk.faults)} faults in {shrunk.replays} replays: {', '.join(shrunk.faults)}")
    click.echo(f"replay the shrunk schedule: {_replay(result.seed, fault_kinds, shrunk.faults)}")


def _mutants(names: tuple[str, ...], seeds: int, start: int, jobs: int, as_json: bool, skip_explained: bool,
             report_dir: Path) -> None:
    chosen = [by_name(n) for n in names] if names else list(MUTANTS)
    if skip_explained:
        chosen = [m for m in chosen if m.survives is None]

    def progress(r: MutantResult) -> None:
        if not as_json and r.mutant is BASELINE:
            verdict = "passed" if r.passed else r.error or f"FAILED seed {r.seed}"
            click.echo(f"[mutants] unmutated code: {verdict} ({r.seeds_run} seeds, {r.seconds:.1f} s)", err=True)
        elif not as_json:
            verdict = f"killed by seed {r.seed}" if r.killed else ("survived (explained)" if r.explained
                                                                    else r.error or "SURVIVED")
            click.echo(f"[mutants] {r.mutant.name}: {verdict} ({r.seeds_run} seeds, {r.seconds:.1f} s)", err=True)

    # The explained survivors' waste figures are shown next to the unmutated code's, over the same seeds.
    explained = any(m.survives is not None for m in chosen)
    results = run_mutants([*chosen, BASELINE] if explained else chosen, seeds=seeds, start=start,
                          jobs=max(jobs, 2), progress=progress, report_dir=report_dir)
    baseline = next((r for r in results if r.mutant is BASELINE), None)
    results = [r for r in results if r.mutant is not BASELINE]
    if baseline is not None and not baseline.passed:
        results.append(baseline)  # the unmutated code failed a seed (or its process): never a pass
    if as_json:
        click.echo(json.dumps({"ok": all(r.ok for r in results), "mutants": [r.to_dict() for r in results],
                               "baseline": None if baseline is None else baseline.to_dict()}, indent=2))
    else:
        width = max(len(r.mutant.name) for r in results)
        for r in results:
            verdict = (f"killed by seed {r.seed:<5} ({r.seeds_run} seeds) {r.violations[0] if r.violations else ''}"
                       if r.killed else
                       f"survived {r.seeds_run} seeds: {r.mutant.survives or r.error or 'UNEXPLAINED'}")
            click.echo(f"{r.mutant.name:<{width}}  {verdict}")
        killed = sum(r.killed for r in results)
        click.echo(f"mutation score: {killed}/{len(results)} killed")
        if baseline is not None:
            click.echo(f"waste over {baseline.seeds_run} seeds (what each explained guard saves):")
            click.echo(f"  {'unmutated':<{width}}  {render_waste(baseline.waste)}")
            for r in results:
                if r.explained:
                    click.echo(f"  {r.mutant.name:<{width}}  {render_waste(r.waste)}")
        for r in results:
            if r.killed and r.seed is not None:
                click.echo(f"  replay: seglog simulate --mutants --mutant {r.mutant.name} --seed {r.seed} --seeds 1"
                           + (f"   report: {r.report}" if r.report else ""))
    if not all(r.ok for r in results):
        sys.exit(1)
