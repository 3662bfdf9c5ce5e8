"""Bounded responses: a load or a sync is cut into pages so that no answer passes Lambda's 6 MB limit.

Lambda counts the invocation's response payload, in which the HTTP body is a JSON *string*: every quote and
backslash of the body is escaped once more (AWS Lambda Developer Guide, "Lambda quotas": invocation payload 6 MB
for synchronous invocations; API Gateway passes the same). Pages are therefore measured as escaped bytes and cut
well under the limit, leaving room for headers and the envelope.

A load's pages all come from the same state: the first page names the snapshot it started from and the position it
read up to, and the cursor of every next page carries both, so a sheet edited between pages still pages
consistently. A row too large for a page on its own (16,384 columns of 32 KB text would be) is cut between
columns: the next page's ``col`` says where its first row goes on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final

import msgspec

from seglog_core.schema import MAX_NUM, CellValue
from seglog_core.sheet.refs import MAX_COL, MAX_ROW
from seglog_services.api.errors import ApiError
from seglog_services.api.patterns import number_at_most

#: The most a page's body may take once escaped into the invocation payload.
MAX_PAGE_BYTES: Final = 4 * 1024 * 1024

_ENCODER: Final = msgspec.json.Encoder()
#: What a cursor looks like (also the OpenAPI document's pattern): snapshot and position nums, then row and column.
CURSOR_PATTERN: Final = "^" + "\\.".join(
    [f"({number_at_most(MAX_NUM)})"] * 4 + [f"({number_at_most(MAX_ROW, minimum=1)})",
                                           f"({number_at_most(MAX_COL, minimum=1)})"]) + "$"
_CURSOR: Final = re.compile(CURSOR_PATTERN)


def escaped_size(value: Any) -> int:
    """Bytes ``value`` takes as JSON inside the JSON string of the invocation payload."""
    raw = _ENCODER.encode(value)
    return len(raw) + raw.count(b'"') + raw.count(b"\\")


@dataclass(frozen=True, kw_only=True)
class LoadCursor:
    """Where the next page of a load starts: the load's snapshot, the position it read to, and a cell."""

    snapshot: tuple[int, int]
    upto: tuple[int, int]
    row: int = 1
    col: int = 1

    def __str__(self) -> str:
        return f"{self.snapshot[0]}.{self.snapshot[1]}.{self.upto[0]}.{self.upto[1]}.{self.row}.{self.col}"

    @classmethod
    def parse(cls, text: str) -> LoadCursor:
        match = _CURSOR.fullmatch(text)
        if match is None:
            raise ApiError(HTTPStatus.BAD_REQUEST, "invalid_cursor",
                           f"cursor {text!r} is not one this API gave: pass the `next` of the previous page as is")
        a, b, c, d, row, col = (int(g) for g in match.groups())
        return cls(snapshot=(a, b), upto=(c, d), row=row, col=col)


@dataclass(frozen=True, kw_only=True)
class RowPage:
    """Rows from ``row`` (its first row from column ``col``) and, when the sheet goes on, where it does."""

    rows: list[list[CellValue]]
    next_row: int | None
    next_col: int = 1


def page_rows(rows: list[list[CellValue]], row: int, col: int, budget: int = MAX_PAGE_BYTES) -> RowPage:
    """The rows that fit ``budget`` escaped bytes, from 1-based ``row`` (that row from 1-based ``col``)."""
    out: list[list[CellValue]] = []
    used = 2
    for index in range(row - 1, len(rows)):
        values = rows[index][col - 1:] if index == row - 1 else rows[index]
        size = escaped_size(values) + 1
        if used + size <= budget:
            out.append(values)
            used += size
            continue
        if out:
            return RowPage(rows=out, next_row=index + 1)
        # One row larger than a page: cut it between columns (at least one cell, which is at most 32 KB).
        first = col if index == row - 1 else 1
        taken = list(_fitting(values, budget - used))
        out.append(taken)
        return RowPage(rows=out, next_row=index + 1, next_col=first + len(taken))
    return RowPage(rows=out, next_row=None)


def _fitting(values: list[CellValue], budget: int) -> Iterator[CellValue]:
    used = 2
    for n, value in enumerate(values):
        used += escaped_size(value) + 1
        if n and used > budget:
            return
        yield value
