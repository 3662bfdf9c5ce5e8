"""Where a command's report goes: ``report.html`` (the timeline, latencies and the cost ledger, one offline file)
and ``report.json`` (what ``seglog cost`` reads) in a directory of their own, printed at the end of the run."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

report_option = click.option(
    "--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
    help="Directory for report.html and report.json (default: reports/<command>-<time> in the stack's run "
         "directory).")


def report_directory(chosen: Path | None, run_dir: Path, kind: str) -> Path:
    return chosen or run_dir / "reports" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def command_line(ctx: click.Context) -> str:
    """The command as typed (for the report's header)."""
    return " ".join(["seglog", *sys.argv[1:]]) if sys.argv else ctx.command_path
