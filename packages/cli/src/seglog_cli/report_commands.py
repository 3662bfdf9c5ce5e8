"""seglog report: draw report.html for a run directory after the fact, with the code of now.

A directory with a ``report.json`` (what every run command writes next to its page) is drawn again from it; a
directory without one but with ``run.json`` files (a chaos or demo campaign's state directory, each run's saved
the moment it ended: a campaign stopped by kill -9 leaves them) is gathered into a new report first. ``--seed N``
adds the timeline of seed N of a simulate campaign to its page: the seed is run again, bit for bit, with the
faults the campaign ran with.
"""

from __future__ import annotations

from pathlib import Path

import click
import structlog

from seglog_cli.reports import unreadable
from seglog_report import causes
from seglog_report.errors import ReportFileError
from seglog_report.files import REPORT_FILE, RUN_FILE, gather, read_report
from seglog_report.html import publish
from seglog_report.model import Report

log = structlog.get_logger("seglog.cli.report")

_WHAT_TO_PASS = (f"pass the report directory a run command printed (it holds {REPORT_FILE}), or a seglog chaos or "
                 f"demo state directory whose run directories hold {RUN_FILE} (chaos/ or demo/ in the stack's run "
                 "directory)")


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", "seeds", type=int, multiple=True,
              help="A simulate campaign's report: draw this seed's timeline too (repeatable).")
def report(directory: Path, seeds: tuple[int, ...]) -> None:
    """Draw DIR/report.html again, with this seglog's page: from DIR/report.json (the report directory any run
    command printed), or else from the run.json files under DIR (a `seglog chaos` or `seglog demo` state
    directory, e.g. after the campaign was stopped), gathered into DIR/report.json first. Prints the page's
    path."""
    if not directory.is_dir():
        raise click.BadParameter(f"{directory} is not a directory; {_WHAT_TO_PASS}", param_hint="DIR")
    command = f"seglog report {directory}"
    try:
        found = read_report(directory) if (directory / REPORT_FILE).is_file() else gather(directory, command=command)
    except ReportFileError as exc:
        raise unreadable(exc, _WHAT_TO_PASS, "DIR") from None
    if found is None:
        raise click.BadParameter(f"{directory} holds neither a {REPORT_FILE} nor any {RUN_FILE}; {_WHAT_TO_PASS}",
                                 param_hint="DIR")
    if seeds:
        _draw_seeds(found, seeds)
    for run in found.runs:  # cause and effect as this seglog finds it, from what each span did
        causes.connect(run)
    page, _ = publish(found, directory)
    log.info("report drawn", page=str(page), runs=len(found.runs))
    click.echo(f"report: {page}")



def _draw_seeds(found: Report, seeds: tuple[int, ...]) -> None:
    """Run each chosen seed of a simulate campaign again and draw it into ``found`` (in place of a drawing of it
    the report already has)."""
    if found.kind != "simulate" or not found.seeds:
        raise click.BadParameter("only a simulate campaign's report holds seeds to draw; this one is a "
                                 f"{found.kind} report", param_hint="--seed")
    rows = {row.seed: row for row in found.seeds}
    unknown = [seed for seed in seeds if seed not in rows]
    if unknown:
        raise click.BadParameter(f"the campaign ran seeds {min(rows)} to {max(rows)}, not {unknown}: pick one it "
                                 "ran (the page's seed picker lists them)", param_hint="--seed")
    # Imported here: the simulator is needed only to draw seeds.
    from seglog_cli.simulate_commands import scenario_of
    from seglog_sim.timeline import run_data

    scenario = scenario_of(found.options.get("faults"))
    for seed in dict.fromkeys(seeds):
        click.echo(f"[report] running seed {seed} again to draw it", err=True)
        _, data = run_data(seed, scenario, replay=rows[seed].replay)
        found.runs = [run for run in found.runs if run.seed != seed] + [data]
