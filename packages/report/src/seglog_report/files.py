"""Where a command's report lives on disk, and reading it back: ``report.json`` (a :class:`Report`, next to its
``report.html``) and ``run.json`` (one run's :class:`RunData`, in that run's directory).

A chaos or demo run writes its ``run.json`` the moment it ends, before the command goes on to the next run or
publishes the page, so a campaign stopped on the way (Ctrl-C, kill -9, a machine that went away) still has every
finished run on disk; ``seglog report DIR`` gathers them into a page after the fact (:func:`gather`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Final

import msgspec
import structlog

from seglog_report.errors import ReportFileError
from seglog_report.model import SCHEMA, Report, RunData, decode

log = structlog.get_logger("seglog.report.files")

REPORT_FILE: Final = "report.json"
RUN_FILE: Final = "run.json"

_RUN_DECODER: Final = msgspec.json.Decoder(RunData)
_RUN_ENCODER: Final = msgspec.json.Encoder()


def read_report(path: Path) -> Report:
    """The report in ``path`` (a ``report.json``, or a directory holding one).

    Raises:
        ReportFileError: no such file, not a report, or a report of another schema that this seglog cannot read
            (its ``schema`` set, and advice to re-run the command that wrote it, or to update seglog).
    """
    file = path / REPORT_FILE if path.is_dir() else path
    data = _read(file)
    try:
        return decode(data)
    except msgspec.DecodeError as exc:  # bad JSON, or JSON that is not a report (the message names the field)
        schema, command = _written_as(data)
        if schema is not None and schema < SCHEMA:
            raise ReportFileError(
                str(file), f"is a report of schema {schema}, older than the schema {SCHEMA} this seglog reads, and "
                f"does not fit it ({exc})", schema=schema,
                advice=f"run the command that wrote it again{f' ({command})' if command else ''} to get a "
                       "current report.json") from None
        if schema is not None and schema > SCHEMA:
            raise ReportFileError(
                str(file), f"is a report of schema {schema}, newer than the schema {SCHEMA} this seglog reads "
                f"({exc})", schema=schema, advice="update seglog to the version that wrote it") from None
        raise ReportFileError(str(file), f"is not a report ({exc})") from None


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except FileNotFoundError:
        raise ReportFileError(str(file), "does not exist (no such file)") from None
    except OSError as exc:
        raise ReportFileError(str(file), f"cannot be read ({exc.strerror})") from None


def _written_as(data: bytes) -> tuple[int | None, str]:
    """The schema and command a JSON document that looks like a report names (a report before schemas were
    numbered has none: schema 1); (None, "") for anything else."""
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None, ""
    if not isinstance(raw, dict) or not {"kind", "runs"} <= raw.keys():
        return None, ""
    schema = raw.get("schema", 1)
    command = raw.get("command")
    return (schema if isinstance(schema, int) else None), (command if isinstance(command, str) else "")


def save_run(run: RunData, directory: Path) -> Path:
    """Write ``run`` as ``run.json`` in ``directory``, whole or not at all (a temporary file renamed over it, so
    a process killed while writing leaves the previous file or none, never half of one)."""
    path = directory / RUN_FILE
    partial = path.with_name(f".{RUN_FILE}.{os.getpid()}")
    partial.write_bytes(_RUN_ENCODER.encode(run))
    partial.replace(path)
    return path


def load_run(path: Path) -> RunData:
    """One ``run.json``.

    Raises:
        ReportFileError: it cannot be read, or is not a run this seglog can read.
    """
    try:
        return _RUN_DECODER.decode(_read(path))
    except msgspec.DecodeError as exc:
        raise ReportFileError(str(path), f"is not a run this seglog can read ({exc})",
                              advice="delete it, or run that seed again (its report's replay command)") from None


def run_files(directory: Path) -> list[Path]:
    """Every ``run.json`` under ``directory`` (a campaign's state directory holds one per run directory)."""
    return sorted(directory.rglob(RUN_FILE))


def gather(directory: Path, *, command: str) -> Report | None:
    """A report of the runs whose ``run.json`` files are under ``directory``, in run order; None if there are
    none. ``command`` is what gathered them (the page's header).

    Raises:
        ReportFileError: a ``run.json`` that cannot be read (the message names it).
    """
    files = run_files(directory)
    if not files:
        return None
    runs = sorted((load_run(path) for path in files), key=lambda run: (run.run, run.seed))
    kinds = {run.kind for run in runs}
    kind = kinds.pop() if len(kinds) == 1 else "chaos"
    log.info("runs gathered", directory=str(directory), runs=len(runs))
    return Report(kind=kind, title=f"seglog {kind}: {len(runs)} run(s) gathered after the fact from {RUN_FILE} "
                                   f"files in {directory}",
                  command=command, created_at=time.time(), runs=runs)
