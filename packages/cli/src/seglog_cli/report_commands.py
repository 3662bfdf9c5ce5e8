"""seglog report: draw report.html for a run directory after the fact, with the code of now.

A directory with a ``report.json`` (what every run command writes next to its page) is drawn again from it; a
directory without one but with ``run.json`` files (a chaos or demo campaign's state directory, each run's saved
the moment it ended: a campaign stopped by kill -9 leaves them) is gathered into a new report first.
"""

from __future__ import annotations

from pathlib import Path

import click
import structlog

from seglog_cli.reports import unreadable
from seglog_report.errors import ReportFileError
from seglog_report.files import REPORT_FILE, RUN_FILE, gather, read_report
from seglog_report.html import publish

log = structlog.get_logger("seglog.cli.report")

_WHAT_TO_PASS = (f"pass the report directory a run command printed (it holds {REPORT_FILE}), or a seglog chaos or "
                 f"demo state directory whose run directories hold {RUN_FILE} (chaos/ or demo/ in the stack's run "
                 "directory)")


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
def report(directory: Path) -> None:
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
    page, _ = publish(found, directory)
    log.info("report drawn", page=str(page), runs=len(found.runs))
    click.echo(f"report: {page}")

