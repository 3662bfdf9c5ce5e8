"""Checks a document body before it is appended, so that every body in a log folds (DESIGN §2).

The fold refuses what these checks refuse, but by then the entry is in the log and its snapshot is stuck;
the append path calls :func:`validate_body` first and the user gets the error instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from seglog_core.errors import InvalidCellRefError, UnknownEntryTypeError
from seglog_core.schema import (
    Body,
    CellValue,
    DeleteRow,
    EndSegment,
    Import,
    InsertRow,
    SetCell,
    SetRange,
    SnapshotMarker,
)
from seglog_core.sheet.refs import MAX_COL, MAX_ROW, check_value, column_letters, format_ref


def out_of_range(body: Body, row: int, col: int = 1) -> InvalidCellRefError:
    """The error the fold raises for a body addressing a cell outside the worksheet (shared by the model's
    fold and the snapshot builder, which must refuse exactly what the fold refuses)."""
    return InvalidCellRefError(
        f"row {row}, column {col}",
        f"{type(body).__name__} addresses a cell outside A1..XFD{MAX_ROW}; the append path should have "
        "refused it (validate_body)",
    )


def _check_cell(row: int, col: int) -> None:
    if not 1 <= row <= MAX_ROW:
        raise InvalidCellRefError(f"row {row}", f"rows are 1..{MAX_ROW}")
    if not 1 <= col <= MAX_COL:
        raise InvalidCellRefError(f"column {col}", f"columns are 1..{MAX_COL} (A..XFD)")


def _check_row_values(row: int, first_col: int, values: Sequence[CellValue]) -> None:
    if first_col + len(values) - 1 > MAX_COL:
        raise InvalidCellRefError(
            f"row {row}",
            f"{len(values)} values from column {column_letters(first_col)} run past column XFD",
        )
    for col, value in enumerate(values, first_col):
        if value is not None:
            check_value(value, f"the value for {format_ref(row, col)}")


def validate_body(body: Body) -> None:
    """Refuse a body the fold could not apply: cells outside A1..XFD1048576, bad or oversized values.

    Raises:
        InvalidCellRefError: a row or column out of range, or values running past the last row or column.
        ValueTooLargeError: a value over the cell limit.
        InvalidInputError: a value of a type cells do not hold, or a non-finite float.
        UnknownEntryTypeError: a body type the document model does not know.
    """
    match body:
        case SetCell(row=row, col=col, value=value):
            _check_cell(row, col)
            check_value(value, f"the value for {format_ref(row, col)}")
        case SetRange(row=row, col=col, values=values):
            _check_cell(row, col)
            if row + len(values) - 1 > MAX_ROW:
                raise InvalidCellRefError(
                    format_ref(row, col), f"{len(values)} rows from row {row} run past row {MAX_ROW}"
                )
            for r, row_values in enumerate(values, row):
                _check_row_values(r, col, row_values)
        case InsertRow(after=after, values=values):
            if not 0 <= after < MAX_ROW:
                raise InvalidCellRefError(f"after row {after}", f"rows are inserted after 0..{MAX_ROW - 1}")
            _check_row_values(after + 1, 1, values)
        case DeleteRow(row=row):
            _check_cell(row, 1)
        case Import(rows=rows):
            if len(rows) > MAX_ROW:
                raise InvalidCellRefError(f"row {len(rows)}", f"an import holds at most {MAX_ROW} rows")
            for r, row_values in enumerate(rows, 1):
                _check_row_values(r, 1, row_values)
        case SnapshotMarker() | EndSegment():
            pass
        case _:
            raise UnknownEntryTypeError(str(getattr(body, "TYPE", type(body).__name__)))
