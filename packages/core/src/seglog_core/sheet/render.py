"""Render a sheet as a text grid for a terminal: column letters across, row numbers down.

Plain text (no rich in core); the CLI prints it. Column widths fit their content up to a cap, long values are
cut with ``…``, and a window of at most ``max_rows`` by ``max_cols`` is shown with a note of what is cut::

       │ A     │ B
    ───┼───────┼──────
     1 │ name  │ total
     2 │ pears │    42
    … 120 more rows, 3 more columns
"""

from __future__ import annotations

import unicodedata
from typing import Final

from seglog_core.schema import CellValue
from seglog_core.sheet.model import Sheet
from seglog_core.sheet.refs import column_letters, format_ref

ELLIPSIS: Final = "…"
EMPTY_SHEET: Final = "(empty sheet)"
# Control characters would break the grid: show them as visible stand-ins.
_CONTROL: Final = {i: "·" for i in (*range(32), 127)} | {ord("\n"): "↵", ord("\t"): " "}


def display_value(value: CellValue) -> str:
    """How a value reads in a cell: ``TRUE``/``FALSE`` for bools, the shortest round-trip form of floats."""
    if value is None:
        return ""
    if value is True:
        return "TRUE"
    if value is False:
        return "FALSE"
    if isinstance(value, str):
        return value.translate(_CONTROL) if not value.isprintable() else value
    return repr(value)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (wide East Asian characters take two, combining marks none)."""
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


def truncate(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` terminal columns, ending in ``…`` when something was cut."""
    if text_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    for ch in text:
        w = _char_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + ELLIPSIS


def _pad(text: str, width: int, *, right: bool) -> str:
    gap = " " * (width - text_width(text))
    return gap + text if right else text + gap


def render(
    sheet: Sheet,
    *,
    max_rows: int = 40,
    max_cols: int = 10,
    max_width: int = 24,
    top: int = 1,
    left: int = 1,
) -> str:
    """Render the window of ``sheet`` whose top-left cell is (``top``, ``left``) as a text grid.

    Args:
        max_rows, max_cols: the most rows and columns shown; a last line says how many more there are.
        max_width: the widest a column gets (values beyond it are cut with ``…``); at least 2.
        top, left: the first row and column shown (1-based), to page through a large sheet.

    Returns:
        The grid, lines joined by newlines, without a trailing newline; ``(empty sheet)`` for an empty one.
    """
    if max_rows < 1 or max_cols < 1 or max_width < 2 or top < 1 or left < 1:
        raise ValueError("render needs max_rows, max_cols, top, left >= 1 and max_width >= 2")
    n_rows, n_cols = sheet.dimensions
    if n_rows == 0:
        return EMPTY_SHEET
    last_row = min(n_rows, top + max_rows - 1)
    last_col = min(n_cols, left + max_cols - 1)
    row_numbers = range(top, last_row + 1)
    col_numbers = range(left, last_col + 1)
    if not row_numbers or not col_numbers:
        return f"(nothing from {format_ref(top, left)} on: the sheet is {n_rows} rows by {n_cols} columns)"

    grid = [[sheet.get(r, c) for c in col_numbers] for r in row_numbers]
    texts = [[truncate(display_value(v), max_width) for v in values] for values in grid]
    letters = [column_letters(c) for c in col_numbers]
    widths = [max(text_width(h), *(text_width(row[i]) for row in texts)) for i, h in enumerate(letters)]
    gutter = len(str(last_row))

    header = (_pad(h, w, right=False) for h, w in zip(letters, widths, strict=True))
    lines = [
        " " * gutter + " │ " + " │ ".join(header),
        "─" * (gutter + 1) + "┼" + "┼".join("─" * (w + 2) for w in widths),
    ]
    for number, values, row_texts in zip(row_numbers, grid, texts, strict=True):
        cells = (
            _pad(t, w, right=isinstance(v, int | float) and not isinstance(v, bool))
            for v, t, w in zip(values, row_texts, widths, strict=True)
        )
        lines.append(str(number).rjust(gutter) + " │ " + " │ ".join(cells))
    lines = [line.rstrip() for line in lines]

    cut: list[str] = []
    if n_rows > last_row:
        cut.append(_plural(n_rows - last_row, "more row"))
    if n_cols > last_col:
        cut.append(_plural(n_cols - last_col, "more column"))
    if cut:
        lines.append(f"{ELLIPSIS} " + ", ".join(cut))
    return "\n".join(lines)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
