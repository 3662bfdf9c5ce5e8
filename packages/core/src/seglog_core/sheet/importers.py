"""Read CSV and XLSX files into rows of cell values, for an ``Import`` entry (DESIGN §2).

Everything a user can upload passes through here, so bad input of any kind ends as an
:class:`~seglog_core.errors.ImportFileError` (what is wrong and what to do) or a
:class:`~seglog_core.errors.ValueTooLargeError` (which limit, by how much), never as a raw exception.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import warnings
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from seglog_core.errors import ImportFileError, InvalidInputError, ValueTooLargeError
from seglog_core.schema import CellValue
from seglog_core.sheet.refs import MAX_CELL_BYTES, MAX_COL, MAX_ROW, check_value, format_ref, parse_value

FORMATS: Final = ("csv", "xlsx")


@dataclass(frozen=True, kw_only=True)
class ImportLimits:
    """How big an import may be. Cells count every slot up to each row's last value (empty ones too)."""

    max_bytes: int = 64 * 1024 * 1024
    max_rows: int = MAX_ROW
    max_cols: int = MAX_COL
    max_cells: int = 1_000_000
    #: XLSX files are zip archives: refuse ones that inflate beyond this (zip bombs) before parsing.
    max_unzipped_bytes: int = 512 * 1024 * 1024


DEFAULT_LIMITS: Final = ImportLimits()


def read_import(
    name: str, data: bytes, *, limits: ImportLimits = DEFAULT_LIMITS
) -> tuple[str, list[list[CellValue]]]:
    """Parse an uploaded file into ``(format, rows)``: row 1 is ``rows[0]``, each row from column 1.

    The format comes from the extension of ``name`` (``.csv`` or ``.xlsx``, any case). Trailing empty cells of
    each row and trailing empty rows are dropped.

    * CSV: UTF-8 with or without a byte order mark, comma-separated; numbers and ``true``/``false`` are typed
      as :func:`~seglog_core.sheet.refs.parse_value` does (a leading ``'`` is data here), empty fields are
      empty cells.
    * XLSX: the values of the first worksheet as last computed by the program that saved it (formulas
      never computed read as empty); dates and times become ISO 8601 text.

    Raises:
        ImportFileError: no name, an unknown extension, or content that cannot be read as that format.
        ValueTooLargeError: over a limit of ``limits`` or a cell over the cell limit.
    """
    label = name.strip() or "(unnamed file)"
    fmt = _format_of(name, label)
    if len(data) > limits.max_bytes:
        raise ValueTooLargeError(f"import file {label}", len(data), limits.max_bytes)
    try:
        raw_rows = _csv_rows(data, label) if fmt == "csv" else _xlsx_rows(data, label, limits)
        return fmt, _collect(raw_rows, label, limits)
    except InvalidInputError:
        raise
    except Exception as exc:  # a parser failing in a way we did not foresee is still the file's fault
        raise ImportFileError(
            label, f"it could not be read as {fmt.upper()} ({type(exc).__name__}: {exc}); check the file"
        ) from exc


def _format_of(name: str, label: str) -> str:
    if not name.strip():
        raise ImportFileError(label, "the file has no name; give its name with a .csv or .xlsx extension")
    suffix = PurePosixPath(name.strip().replace("\\", "/")).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".xlsx", ".xlsm"):
        return "xlsx"
    if suffix == ".xls":
        raise ImportFileError(label, "it is an old Excel (.xls) workbook; save it as .xlsx (Excel Workbook)")
    shown = f"the extension {suffix!r}" if suffix else "a name without extension"
    raise ImportFileError(label, f"{shown} is not a format seglog reads; save it as .csv (UTF-8) or .xlsx")


# ------------------------------------------------------------------------------------------------ CSV


def _csv_rows(data: bytes, label: str) -> Iterable[Sequence[CellValue]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFileError(
            label, f"it is not UTF-8 text (bad byte at offset {exc.start}); save it as 'CSV UTF-8' and retry"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for fields in reader:
            yield [parse_value(field, quote_prefix=False) for field in fields]
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            # The csv module's own cap (128 Ki characters) is above the cell limit: it is a too-large cell.
            where = f"a cell on line {reader.line_num} of {label}"
            raise ValueTooLargeError(where, csv.field_size_limit(), MAX_CELL_BYTES) from None
        raise ImportFileError(
            label, f"line {reader.line_num} is not valid CSV ({exc}); fix or re-export it"
        ) from None


# ------------------------------------------------------------------------------------------------ XLSX


def _xlsx_rows(data: bytes, label: str, limits: ImportLimits) -> Iterable[Sequence[CellValue]]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unzipped = sum(info.file_size for info in archive.infolist())
    except zipfile.BadZipFile:
        raise ImportFileError(
            label, "it is not an XLSX workbook (not a zip archive); open it in a spreadsheet, save as .xlsx"
        ) from None
    if unzipped > limits.max_unzipped_bytes:
        raise ValueTooLargeError(f"import file {label} unzipped", unzipped, limits.max_unzipped_bytes)
    with warnings.catch_warnings():
        # openpyxl warns about styles, data validation and the like it does not read: irrelevant to values.
        warnings.simplefilter("ignore")
        try:
            import openpyxl  # imported here: it costs ~0.2 s at start-up, and only imports need it

            workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
            raise ImportFileError(
                label, f"it is not a readable XLSX workbook ({exc}); open it in a spreadsheet, save it again"
            ) from None
        try:
            if not workbook.worksheets:
                raise ImportFileError(label, "the workbook has no worksheet; add one with the data to import")
            sheet = workbook.worksheets[0]
            sheet.reset_dimensions()  # some writers store a wrong size: read the cells that are there
            for values in sheet.iter_rows(values_only=True):
                yield [_xlsx_value(v) for v in values]
        finally:
            workbook.close()


def _xlsx_value(value: object) -> CellValue:
    """A cell value as openpyxl gives it, as a :data:`CellValue`."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dt.datetime):
        # Dates are stored as numbers: a date-only cell reads back as midnight, shown as the date.
        if value.time() == dt.time() and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    return str(value)


# ------------------------------------------------------------------------------------------------ limits


def _too_many(what: str, count: int, limit: int, unit: str) -> ValueTooLargeError:
    """A ValueTooLargeError counting ``unit`` rather than bytes."""
    return ValueTooLargeError(what, count, limit, unit=unit)


def _collect(
    raw_rows: Iterable[Sequence[CellValue]], label: str, limits: ImportLimits
) -> list[list[CellValue]]:
    """Trim, check and gather rows, stopping at the first limit passed (before reading the rest)."""
    rows: list[list[CellValue]] = []
    cells = 0
    pending_empty = 0  # empty rows are kept only when a row with values follows
    for number, raw in enumerate(raw_rows, 1):
        values = list(raw)
        while values and values[-1] is None:
            values.pop()
        if not values:
            pending_empty += 1
            continue
        if number > limits.max_rows:
            raise _too_many(f"import file {label}", number, limits.max_rows, "rows (at least)")
        if len(values) > limits.max_cols:
            raise _too_many(f"row {number} of {label}", len(values), limits.max_cols, "columns")
        cells += len(values)
        if cells > limits.max_cells:
            raise _too_many(f"import file {label}", cells, limits.max_cells, "cells (at least)")
        for col, value in enumerate(values, 1):
            if value is not None:
                check_value(value, f"cell {format_ref(number, col)} of {label}")
        rows.extend([] for _ in range(pending_empty))
        pending_empty = 0
        rows.append(values)
    return rows
