"""Checks a document body before it is appended, so that every body in a log folds (DESIGN §2).

The fold refuses what these checks refuse, but by then the entry is in the log and its snapshot is stuck;
the append path calls :func:`validate_body` first and the user gets the error instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from seglog_core.errors import (
    BatchTooLargeError,
    InvalidCellRefError,
    InvalidInputError,
    UnknownEntryTypeError,
    ValueTooLargeError,
)
from seglog_core.schema import (
    EDIT_TYPES,
    MAX_EDITS,
    MAX_EDITS_BYTES,
    Body,
    CellValue,
    DeleteRow,
    Edits,
    EndSegment,
    Import,
    InsertRow,
    SetCell,
    SetRange,
    SnapshotMarker,
    encode_body,
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
        case Edits():
            _validate_edits(body)
        case SnapshotMarker() | EndSegment():
            pass
        case _:
            raise UnknownEntryTypeError(str(getattr(body, "TYPE", type(body).__name__)))


#: How a refused batch tells what to do: nothing of it was written.
_RESEND = "the whole batch was refused (nothing of it was written): fix or drop that edit and send the batch again"


def _validate_edits(body: Edits) -> None:
    """A batch is checked as a whole: a bad edit refuses all of it, saying which edit (0-based) and what to send;
    past :data:`MAX_EDITS` edits or :data:`MAX_EDITS_BYTES` encoded, :class:`BatchTooLargeError` (split it)."""
    if not 1 <= len(body.edits) <= MAX_EDITS:
        raise BatchTooLargeError(len(body.edits), MAX_EDITS, unit="edits") if body.edits else InvalidInputError(
            "an edits entry holds 1 edit or more: send at least one")
    for index, edit in enumerate(body.edits):
        if not isinstance(edit, EDIT_TYPES):
            raise InvalidInputError(f"edit {index} of the batch is a {type(edit).__name__}: a batch holds cell and "
                                    f"row edits only (set, setrng, insrow, delrow); {_RESEND}").at_edit(index)
        try:
            validate_body(edit)
        except InvalidCellRefError as exc:
            raise InvalidCellRefError(exc.ref, f"{exc.why} (edit {index} of the batch; {_RESEND})").at_edit(index) \
                from exc
        except ValueTooLargeError as exc:
            raise ValueTooLargeError(f"{exc.what} (edit {index} of the batch; {_RESEND})", exc.size, exc.limit,
                                     unit=exc.unit).at_edit(index) from exc
        except InvalidInputError as exc:
            raise InvalidInputError(f"edit {index} of the batch: {exc}; {_RESEND}").at_edit(index) from exc
    size = len(encode_body(body))
    if size > MAX_EDITS_BYTES:
        raise BatchTooLargeError(size, MAX_EDITS_BYTES, unit="bytes")


def check_foldable(body: Body) -> None:
    """Raise what the fold raises on ``body``, without touching a sheet: the bounds checks of
    :meth:`seglog_core.sheet.Sheet.apply`. The snapshot build runs it on every body so that a build never succeeds
    where the fold fails (DESIGN §2), and the fold on every edit of a batch before it applies any (atomic).

    Raises:
        InvalidCellRefError: a cell or row outside the worksheet.
        UnknownEntryTypeError: a body type the document model does not know (the snapshot is deferred), or one a
            batch cannot hold.
        TypeError: not an entry body at all.
    """
    if isinstance(body, SetCell):
        if not (0 < body.row <= MAX_ROW and 0 < body.col <= MAX_COL):
            raise out_of_range(body, body.row, body.col)
    elif isinstance(body, SetRange):
        top, left = body.row, body.col
        if not (0 < top <= MAX_ROW and 0 < left <= MAX_COL):
            raise out_of_range(body, top, left)
        if top + len(body.values) - 1 > MAX_ROW:
            raise out_of_range(body, top + len(body.values) - 1, left)
        for offset, values in enumerate(body.values):
            if left + len(values) - 1 > MAX_COL:
                raise out_of_range(body, top + offset, left + len(values) - 1)
    elif isinstance(body, InsertRow):
        if not 0 <= body.after < MAX_ROW:
            raise out_of_range(body, body.after + 1)
        if len(body.values) > MAX_COL:
            raise out_of_range(body, body.after + 1, len(body.values))
    elif isinstance(body, DeleteRow):
        if not 0 < body.row <= MAX_ROW:
            raise out_of_range(body, body.row)
    elif isinstance(body, Import):
        if len(body.rows) > MAX_ROW:
            raise out_of_range(body, len(body.rows))
        for number, values in enumerate(body.rows, 1):
            if len(values) > MAX_COL:
                raise out_of_range(body, number, len(values))
    elif isinstance(body, Edits):
        for edit in body.edits:
            if not isinstance(edit, EDIT_TYPES):
                raise UnknownEntryTypeError(f"{getattr(edit, 'TYPE', type(edit).__name__)} inside an edits entry")
            check_foldable(edit)
    elif isinstance(body, SnapshotMarker | EndSegment):
        pass
    elif isinstance(body, Body):
        raise UnknownEntryTypeError(str(getattr(body, "TYPE", type(body).__name__)))
    else:
        raise TypeError(f"cannot fold a {type(body).__name__}: pass entry bodies of seglog_core.schema")
