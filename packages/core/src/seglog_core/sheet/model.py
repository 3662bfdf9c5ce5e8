"""The spreadsheet document: its state (:class:`Sheet`) and the pure fold of entry bodies over it.

The fold is the one definition of what a log means: the snapshot worker builds snapshots with it, clients
load with it and the chaos runner checks snapshots against it (DESIGN §6 I3), so it must be deterministic,
total on every body :func:`~seglog_core.sheet.validate.validate_body` accepts, and loud on anything else.

Representation: a list with one slot per row, holding a dict ``col -> value`` of the row's non-empty cells
(or ``None`` for a row that never had one). Setting a cell is a list index and a dict store; inserting or
deleting a row is one ``list.insert``/``del`` (a memmove of pointers), whatever the number of cells.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

import msgspec

from seglog_core.errors import InvalidInputError, UnknownEntryTypeError
from seglog_core.schema import (
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
)
from seglog_core.sheet.refs import MAX_COL, MAX_ROW, format_ref
from seglog_core.sheet.validate import check_foldable, out_of_range

Row = dict[int, CellValue]

#: Version of the :meth:`Sheet.to_bytes` layout; bump it (and keep reading the old one) if it changes.
SHEET_FORMAT_VERSION: Final = 1


class _SheetData(msgspec.Struct, array_like=True, frozen=True):
    """Wire form of a sheet: format version, then ``{row: {col: value}}`` of the non-empty cells, sorted."""

    version: int
    rows: dict[int, dict[int, CellValue]]


_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODER: Final = msgspec.msgpack.Decoder(_SheetData)


def _row_from_values(values: Sequence[CellValue], first_col: int = 1) -> Row | None:
    """The dict of a row whose cells from ``first_col`` on are ``values``; ``None`` if all are empty."""
    row: Row = {col: v for col, v in enumerate(values, first_col) if v is not None}
    return row or None


class Sheet:
    """A spreadsheet: a sparse grid of :data:`~seglog_core.schema.CellValue`, rows and columns 1-based.

    Two sheets are equal when they hold the same values of the same types in the same cells (``1``, ``1.0``,
    ``True`` and ``"1"`` are four different cells, unlike Python's ``==``).
    """

    __slots__ = ("_rows",)
    __hash__ = None  # type: ignore[assignment]  # mutable

    def __init__(self, rows: Iterable[Sequence[CellValue]] = ()) -> None:
        """Build a sheet from dense rows (row 1 first, each from column 1), as :meth:`rows` returns them."""
        self._rows: list[Row | None] = [_row_from_values(values) for values in rows]

    # ------------------------------------------------------------------------------------------ the fold

    def apply(self, body: Body) -> None:
        """Apply one entry body to this sheet, in place.

        Log-level bodies (Snapshot, EndSegment) change nothing. See the body types in
        :mod:`seglog_core.schema` for each one's meaning; rows pushed past row 1048576 by an insert fall off.

        Raises:
            UnknownEntryTypeError: a body type this fold does not know (never skipped: a snapshot built
                without it would be wrong).
            InvalidCellRefError: a body addressing a cell outside the sheet (validation should refuse these).
        """
        # SetCell is most of every log: handle it before any dispatch.
        if type(body) is SetCell:
            row, col, value = body.row, body.col, body.value
            if not (0 < row <= MAX_ROW and 0 < col <= MAX_COL):
                raise out_of_range(body, row, col)
            rows = self._rows
            if value is None:
                if row <= len(rows):
                    cells = rows[row - 1]
                    if cells:
                        cells.pop(col, None)
                return
            if row > len(rows):
                rows.extend([None] * (row - len(rows)))
            cells = rows[row - 1]
            if cells is None:
                rows[row - 1] = {col: value}
            else:
                cells[col] = value
            return
        handler = _HANDLERS.get(type(body)) or _handler_of_subclass(body)
        handler(self, body)

    def _set_cell(self, body: SetCell) -> None:
        # Subclasses of SetCell land here; exact SetCell takes the fast path in apply.
        self.apply(SetCell(row=body.row, col=body.col, value=body.value))

    def _set_range(self, body: SetRange) -> None:
        check_foldable(body)  # the bounds, checked where the snapshot build checks them
        top, left = body.row, body.col
        rows = self._rows
        for row, values in enumerate(body.values, top):
            if not values:
                continue
            if row > len(rows):
                if all(v is None for v in values):
                    continue
                rows.extend([None] * (row - len(rows)))
            cells = rows[row - 1]
            if cells is None:
                cells = rows[row - 1] = {}
            for col, value in enumerate(values, left):
                if value is None:
                    cells.pop(col, None)
                else:
                    cells[col] = value

    def _insert_row(self, body: InsertRow) -> None:
        after = body.after
        if not 0 <= after < MAX_ROW:
            raise out_of_range(body, after + 1)
        if len(body.values) > MAX_COL:
            raise out_of_range(body, after + 1, len(body.values))
        rows = self._rows
        new = _row_from_values(body.values)
        if after >= len(rows):
            if new is None:
                return  # an empty row below the last one changes nothing
            rows.extend([None] * (after - len(rows)))
        rows.insert(after, new)
        if len(rows) > MAX_ROW:
            del rows[MAX_ROW:]  # the worksheet ends at row 1048576: what is pushed past it falls off

    def _delete_row(self, body: DeleteRow) -> None:
        if not 0 < body.row <= MAX_ROW:
            raise out_of_range(body, body.row)
        if body.row <= len(self._rows):
            del self._rows[body.row - 1]

    def _import(self, body: Import) -> None:
        if len(body.rows) > MAX_ROW:
            raise out_of_range(body, len(body.rows))
        for number, values in enumerate(body.rows, 1):
            if len(values) > MAX_COL:
                raise out_of_range(body, number, len(values))
        self._rows = [_row_from_values(values) for values in body.rows]

    def _edits(self, body: Edits) -> None:
        # Atomic: every edit is checked before any applies, so a batch the fold refuses leaves the sheet as it was.
        check_foldable(body)
        apply = self.apply
        for edit in body.edits:
            apply(edit)

    def _ignore(self, body: Body) -> None:
        """Log-level bodies mark the log, not the document."""

    # ------------------------------------------------------------------------------------------ reading

    def get(self, row: int, col: int) -> CellValue:
        """The value at 1-based ``(row, col)``; ``None`` for an empty cell.

        Raises:
            InvalidCellRefError: row or column out of range.
        """
        if not (0 < row <= MAX_ROW and 0 < col <= MAX_COL):
            format_ref(row, col)  # raises with the reason
        if row > len(self._rows):
            return None
        cells = self._rows[row - 1]
        return cells.get(col) if cells else None

    def _last_row(self) -> int:
        """Number of the last row holding a value (0 for an empty sheet)."""
        rows = self._rows
        n = len(rows)
        while n and not rows[n - 1]:
            n -= 1
        return n

    def rows(self) -> list[list[CellValue]]:
        """The canonical dense form: a list of rows from row 1, each a list of values from column 1.

        Trailing empty cells of each row and trailing empty rows are trimmed: equal sheets give equal lists.
        """
        out: list[list[CellValue]] = []
        for cells in self._rows[: self._last_row()]:
            if not cells:
                out.append([])
                continue
            dense: list[CellValue] = [None] * max(cells)
            for col, value in cells.items():
                dense[col - 1] = value
            out.append(dense)
        return out

    def cells(self) -> Iterator[tuple[int, int, CellValue]]:
        """Yield ``(row, col, value)`` for every non-empty cell, row by row, left to right."""
        for row, cells in enumerate(self._rows, 1):
            if cells:
                for col in sorted(cells):
                    yield row, col, cells[col]

    @property
    def dimensions(self) -> tuple[int, int]:
        """``(n_rows, n_cols)``: the last row and the last column that hold a value (``(0, 0)`` if empty)."""
        n_cols = max((max(cells) for cells in self._rows if cells), default=0)
        return self._last_row(), n_cols

    @property
    def cell_count(self) -> int:
        """Number of non-empty cells."""
        return sum(len(cells) for cells in self._rows if cells)

    def copy(self) -> Sheet:
        """An independent copy (cell values are immutable, so copying the row dicts suffices)."""
        clone = Sheet()
        clone._rows = [dict(cells) if cells else None for cells in self._rows]
        return clone

    # ------------------------------------------------------------------------------------------ equality

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sheet):
            return NotImplemented
        mine, theirs = list(self.cells()), list(other.cells())
        if len(mine) != len(theirs):
            return False
        return all(
            a[:2] == b[:2] and type(a[2]) is type(b[2]) and a[2] == b[2]
            for a, b in zip(mine, theirs, strict=True)
        )

    def __repr__(self) -> str:
        n_rows, n_cols = self.dimensions
        return f"<Sheet {n_rows}x{n_cols}, {self.cell_count} cells>"

    # ------------------------------------------------------------------------------------------ bytes

    def to_bytes(self) -> bytes:
        """Serialize to compact msgpack; :meth:`from_bytes` gives back an equal sheet, value types included.

        The bytes depend only on the content (rows and columns in order), so equal sheets give equal bytes.
        """
        data = {
            row: {col: cells[col] for col in sorted(cells)}
            for row, cells in enumerate(self._rows, 1)
            if cells
        }
        return _ENCODER.encode(_SheetData(version=SHEET_FORMAT_VERSION, rows=data))

    @classmethod
    def from_bytes(cls, data: bytes) -> Sheet:
        """Read a sheet written by :meth:`to_bytes`.

        Raises:
            InvalidInputError: the bytes are not a sheet, or of a newer format than this code knows.
        """
        try:
            decoded = _DECODER.decode(data)
        except msgspec.DecodeError as exc:
            raise InvalidInputError(
                f"these bytes are not a serialized sheet ({exc}); they may be corrupt or of another type"
            ) from exc
        if decoded.version > SHEET_FORMAT_VERSION:
            raise InvalidInputError(
                f"sheet format {decoded.version} is newer than this code knows ({SHEET_FORMAT_VERSION}): "
                "upgrade seglog"
            )
        n_rows = max(decoded.rows, default=0)
        if n_rows > MAX_ROW or any(
            row < 1 or not cells or min(cells) < 1 or max(cells) > MAX_COL or None in cells.values()
            for row, cells in decoded.rows.items()
        ):
            raise InvalidInputError(
                "the serialized sheet has cells outside A1..XFD1048576 or empty entries: it is corrupt"
            )
        rows: list[Row | None] = [None] * n_rows
        for row, cells in decoded.rows.items():
            rows[row - 1] = cells
        sheet = cls()
        sheet._rows = rows
        return sheet


_HANDLERS: Final[dict[type[Body], Callable[[Sheet, Any], None]]] = {
    SetCell: Sheet._set_cell,
    SetRange: Sheet._set_range,
    InsertRow: Sheet._insert_row,
    DeleteRow: Sheet._delete_row,
    Import: Sheet._import,
    Edits: Sheet._edits,
    SnapshotMarker: Sheet._ignore,
    EndSegment: Sheet._ignore,
}


def _handler_of_subclass(body: Body) -> Callable[[Sheet, Any], None]:
    """The handler for a subclass of a known body type; unknown types raise, they are never skipped."""
    for known, handler in _HANDLERS.items():
        if isinstance(body, known):
            return handler
    if isinstance(body, Body):
        raise UnknownEntryTypeError(str(getattr(body, "TYPE", type(body).__name__)))
    raise TypeError(f"cannot fold a {type(body).__name__}: pass entry bodies of seglog_core.schema")


def fold(bodies: Iterable[Body], start: Sheet | None = None) -> Sheet:
    """Fold entry bodies, in log order, over ``start`` (a copy of it: ``start`` is left untouched).

    Raises:
        UnknownEntryTypeError: a body type the fold does not know; the fold stops rather than skip it.
        InvalidCellRefError: a body outside the sheet's bounds.
    """
    sheet = Sheet() if start is None else start.copy()
    apply = sheet.apply
    for body in bodies:
        apply(body)
    return sheet
