"""Where a command's report goes: ``report.html`` (the timeline, latencies and the cost ledger, one offline file)
and ``report.json`` (what ``seglog cost`` reads) in a directory of their own, printed at the end of the run."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import click

from seglog_report.errors import ReportFileError

report_option = click.option(
    "--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
    help="Directory for report.html and report.json (default: reports/<command>-<time> in the stack's run "
         "directory).")


def report_directory(chosen: Path | None, run_dir: Path, kind: str) -> Path:
    return chosen or run_dir / "reports" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def command_line(ctx: click.Context) -> str:
    """The command as typed (for the report's header)."""
    return " ".join(["seglog", *sys.argv[1:]]) if sys.argv else ctx.command_path


@dataclass
class Interruption:
    """How a command that :func:`interruptible` guards was stopped: Ctrl-C (SIGINT) unless SIGTERM came."""

    signum: int = signal.SIGINT

    @property
    def status(self) -> int:
        """The shell's exit status for a process ended by the signal: 128 + its number (130 for Ctrl-C)."""
        return 128 + self.signum


@contextmanager
def interruptible() -> Iterator[Interruption]:
    """SIGTERM stops what runs inside as Ctrl-C does (a KeyboardInterrupt in the main thread), so a campaign ended
    by ``kill`` or a CI job's timeout still stops its emulator and writes its page; the signal that came is kept
    for the exit status. The previous handler is put back on the way out."""
    stopped = Interruption()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stopped.signum = signum
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield stopped
    finally:
        signal.signal(signal.SIGTERM, previous)


def unreadable(exc: ReportFileError, what_to_pass: str, param_hint: str) -> click.BadParameter:
    """The usage error for a report file that cannot be read: with the error's own advice, or else what the
    command takes."""
    return click.BadParameter(str(exc) if exc.advice else f"{exc}; {what_to_pass}", param_hint=param_hint)
