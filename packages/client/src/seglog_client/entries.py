"""Entry bodies as the API takes them, and helpers that make them: ``set_cell("B2", 5)``.

Cells are addressed the way users write them (``"B2"``); the server checks references and values and answers
400 (``invalid_request``, ``invalid_cell_ref``, ...) or 422 (``does_not_fit``: a range past the sheet's edge, a
text over 32 KB of UTF-8) with what to fix, so nothing is checked twice here.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from seglog_client.models import CellValue


class SetCell(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="set"):
    ref: str
    value: CellValue


class SetRange(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="setrng"):
    ref: str
    values: list[list[CellValue]]


class InsertRow(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="insrow"):
    after: int
    values: list[CellValue] = []


class DeleteRow(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="delrow"):
    row: int


Edit = SetCell | SetRange | InsertRow | DeleteRow


class Edits(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="edits"):
    """Several edits as one entry: applied in order, all or none, under one entry id (issue 35). The API refuses a
    batch of over 100 edits or 900 bytes stored (422 ``batch_too_large``); :class:`~seglog_client.batcher.Batcher`
    cuts batches within both."""

    edits: list[Edit]


EntryBody = SetCell | SetRange | InsertRow | DeleteRow | Edits


def set_cell(ref: str, value: CellValue) -> SetCell:
    """Set one cell (``None`` clears it)."""
    return SetCell(ref=ref, value=value)


def set_range(ref: str, values: Sequence[Sequence[CellValue]]) -> SetRange:
    """Set a block whose top-left cell is ``ref``, a list of rows (past about 1 MB, use ``upload``)."""
    return SetRange(ref=ref, values=[list(row) for row in values])


def insert_row(after: int, values: Sequence[CellValue] = ()) -> InsertRow:
    """Insert a row after row ``after`` (0: at the top), with the given values from column A."""
    return InsertRow(after=after, values=list(values))


def delete_row(row: int) -> DeleteRow:
    """Delete row ``row`` (1-based); the rows below move up."""
    return DeleteRow(row=row)


def edits(*items: Edit) -> Edits:
    """Several edits as one entry, applied in order and atomically: ``edits(set_cell("A1", 1), delete_row(3))``."""
    return Edits(edits=list(items))
