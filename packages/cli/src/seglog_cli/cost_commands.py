"""seglog cost: the cost ledger of a past run (its report.json), or two runs' ledgers side by side."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence, Set
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from seglog_cli.reports import unreadable
from seglog_report.cost import NUMBERS, Ledger, comparison, ledger, money, times
from seglog_report.errors import ReportError, ReportFileError
from seglog_report.files import REPORT_FILE, read_report
from seglog_report.model import Report, RunData

_WHAT_TO_PASS = f"pass a {REPORT_FILE} a run wrote (seglog chaos, demo, simulate), or the output directory holding one"


def _read(path: Path) -> Report:
    try:
        return read_report(path)
    except ReportFileError as exc:
        raise unreadable(exc, _WHAT_TO_PASS, "PATH") from None


def _run(report: Report, path: Path, number: int) -> RunData:
    for run in report.runs:
        if run.run == number:
            return run
    known = ", ".join(str(run.run) for run in report.runs) or "none"
    raise click.BadParameter(f"{path} has no run {number}; its runs: {known}", param_hint="--run")


def _price(report: Report, run: RunData | None, region: str | None) -> Ledger:
    try:
        return ledger(report.meter() if run is None else run.meter, region or report.region)
    except ReportError as exc:
        raise click.BadParameter(str(exc), param_hint="--region") from None


def _labels(paths: Sequence[Path]) -> list[str]:
    """Short names for the runs in a comparison: their output directories' names, or the whole paths if those
    are not told apart."""
    short = [p.name if p.is_dir() else p.resolve().parent.name if p.name == REPORT_FILE else p.stem for p in paths]
    return short if all(short) and len(set(short)) == len(short) else [str(p) for p in paths]


def _table(rows: list[list[str]], right: Set[int], title: str | None = None) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for i, name in enumerate(rows[0]):
        table.add_column(name, justify="right" if i in right else "left", overflow="fold")
    for row in rows[1:]:
        table.add_row(*(Text(cell) for cell in row))  # Text: a cell is never read as rich markup
    return table


@click.command()
@click.argument("paths", metavar="PATH [PATH2]", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--region", help="Price in this region of the price table (default: the one the report names).")
@click.option("--run", "run_number", type=int, help="Only this run of the report (its number, as the report shows).")
@click.option("--json", "as_json", is_flag=True, help="Print the ledger(s) as JSON.")
def cost(paths: tuple[Path, ...], region: str | None, run_number: int | None, as_json: bool) -> None:
    """What a past run would cost on AWS, at on-demand list prices: its metered units priced line by line, the
    total, and dollars per million appends next to seed 000's floor. PATH is a report.json or the run's output
    directory; with PATH2, the two runs side by side and their difference (two SnapshotEvery values, say)."""
    if len(paths) > 2:
        raise click.UsageError(f"got {len(paths)} paths: pass one report to see its ledger, or two to compare them")
    reports = [_read(path) for path in paths]
    runs = [None if run_number is None else _run(report, path, run_number)
            for report, path in zip(reports, paths, strict=True)]
    ledgers = [_price(report, run, region) for report, run in zip(reports, runs, strict=True)]
    # Piped or redirected output gets a width the ledger's lines fit in, not rich's 80-column default.
    console = Console() if sys.stdout.isatty() else Console(width=200)
    if len(paths) == 2:
        labels = _labels(paths)
        if as_json:
            click.echo(json.dumps({"ledgers": [{"label": label, "path": str(path), "ledger": one.to_dict()}
                                               for label, path, one in zip(labels, paths, ledgers, strict=True)]},
                                  indent=2))
            return
        rows = comparison(list(zip(labels, ledgers, strict=True)))
        console.print(_table(rows, set(range(2, len(rows[0]))),
                             title="cost side by side, and each run's difference from the first"))
        return
    report, whole = reports[0], ledgers[0]
    per_run = [(run, _price(report, run, region)) for run in report.runs] if run_number is None else []
    if as_json:
        click.echo(json.dumps({"path": str(paths[0]), "title": report.title, "command": report.command,
                               "run": run_number, "ledger": whole.to_dict(),
                               "runs": [{"run": run.run, "title": run.title, "seed": run.seed, "ledger": one.to_dict()}
                                        for run, one in per_run] if len(per_run) > 1 else []}, indent=2))
        return
    scope = f"run {run_number}" if run_number is not None else (f"{len(report.runs)} runs summed"
                                                                 if len(report.runs) > 1 else "the run")
    console.print(Text(f"{report.title} ({report.command}), {scope}"))
    console.print(_table(whole.rows(), NUMBERS, title=whole.title()))
    for line in whole.summary():
        console.print(Text(line))
    if len(per_run) > 1:
        rows = [["run", "title", "seed", "appends", "dollars", "per million appends", "times the floor"],
                *([str(run.run), run.title, str(run.seed), f"{one.appends:,}", money(one.total),
                   "-" if one.per_million_appends is None else money(one.per_million_appends),
                   "-" if one.floor.times is None else times(one.floor.times)] for run, one in per_run)]
        console.print(_table(rows, {0, 2, 3, 4, 5, 6}, title="per run (seglog cost PATH --run N for one run's lines)"))
