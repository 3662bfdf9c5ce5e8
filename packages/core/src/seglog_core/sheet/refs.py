"""A1 cell references and typed cell values, as a user types them (``seglog sheet set B2=42``).

Columns run A..XFD (1..16384) and rows 1..1048576, the limits of an XLSX worksheet, so anything a user can
import they can also address. Input is case-insensitive; surrounding spaces are ignored.

Typing rules (shared by the CLI and the CSV importer, so a value means the same wherever it comes from):

* ``42``, ``-7``, ``+3`` → int (64-bit range; ``007`` and ``007.5`` stay text, so codes keep their zeros);
* ``1.5``, ``.5``, ``1e3`` → float (finite only: ``inf``/``nan`` stay text);
* ``true``/``false`` in any case → bool;
* nothing at all → ``None`` (an empty cell);
* a leading ``'`` forces text (``'42`` → ``"42"``), as in spreadsheet programs;
* anything else → the text as typed.
"""

from __future__ import annotations

import math
import re
from typing import Final

from seglog_core.errors import InvalidCellRefError, InvalidInputError, ValueTooLargeError
from seglog_core.schema import CellValue, SetCell

MAX_ROW: Final = 1_048_576
MAX_COL: Final = 16_384
#: Largest text cell, in bytes of UTF-8 (32 KiB, the XLSX cell limit is 32,767 characters).
MAX_CELL_BYTES: Final = 32 * 1024
#: Integers are stored as msgpack int64; larger ones would not round-trip, so they stay text when parsed.
MIN_INT: Final = -(2**63)
MAX_INT: Final = 2**63 - 1

_REF: Final = re.compile(r"([A-Za-z]+)([0-9]+)", re.ASCII)
_INT: Final = re.compile(r"[+-]?(?:0|[1-9][0-9]*)", re.ASCII)
_FLOAT: Final = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
# Digit strings longer than this are never ints (int64 has 19 digits); saves int() on hostile input.
_MAX_NUMBER_CHARS: Final = 400


def column_letters(col: int) -> str:
    """The letters of a 1-based column number: 1 → ``A``, 27 → ``AA``, 16384 → ``XFD``.

    Raises:
        InvalidCellRefError: ``col`` is outside 1..16384.
    """
    if not 1 <= col <= MAX_COL:
        raise InvalidCellRefError(f"column {col}", f"columns are 1..{MAX_COL} (A..XFD)")
    letters = ""
    while col:
        col, rem = divmod(col - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


def column_number(letters: str) -> int:
    """The 1-based number of column letters (``A`` → 1, ``xfd`` → 16384).

    Raises:
        InvalidCellRefError: not ASCII letters, or beyond XFD.
    """
    return _column_number(letters, letters)


def _column_number(letters: str, ref: str) -> int:
    """:func:`column_number`, reporting errors against the whole reference ``ref``."""
    text = letters.strip()
    if not text or not (text.isascii() and text.isalpha()):
        raise InvalidCellRefError(ref, "a column is one to three letters A..XFD")
    col = 0
    for ch in text.upper():
        col = col * 26 + ord(ch) - 64
        if col > MAX_COL:
            raise InvalidCellRefError(ref, f"columns end at XFD ({MAX_COL})")
    return col


def parse_ref(ref: str) -> tuple[int, int]:
    """Parse an A1 reference into ``(row, col)``, both 1-based: ``parse_ref("B2") == (2, 2)``.

    Raises:
        InvalidCellRefError: with the reason (missing letters or digits, row 0, beyond XFD1048576, ...).
    """
    text = ref.strip()
    if not text:
        raise InvalidCellRefError(ref, "it is empty")
    match = _REF.fullmatch(text)
    if match is None:
        raise InvalidCellRefError(ref, _why_not_a_ref(text))
    letters, digits = match.groups()
    col = _column_number(letters, ref)
    if digits[0] == "0":
        raise InvalidCellRefError(ref, "rows start at 1 and have no leading zeros")
    if len(digits) > len(str(MAX_ROW)) or int(digits) > MAX_ROW:
        raise InvalidCellRefError(ref, f"rows end at {MAX_ROW}")
    return int(digits), col


def _why_not_a_ref(text: str) -> str:
    """Explain a reference that does not match letters-then-digits."""
    if text.isascii() and text.isdigit():
        return "it has no column letters"
    if text.isascii() and text.isalpha():
        return "it has no row number"
    if text[0].isdigit() and text.isascii() and text.isalnum():
        return "the column letters come first"
    bad = next((ch for ch in text if not (ch.isascii() and ch.isalnum())), None)
    if bad is not None:
        return f"it contains {bad!r}"
    return "letters and digits are mixed"


def format_ref(row: int, col: int) -> str:
    """The A1 reference of 1-based ``(row, col)``: ``format_ref(2, 2) == "B2"``.

    Raises:
        InvalidCellRefError: row or column out of range.
    """
    if not 1 <= row <= MAX_ROW:
        raise InvalidCellRefError(f"row {row}", f"rows are 1..{MAX_ROW}")
    return f"{column_letters(col)}{row}"


def parse_value(text: str, *, quote_prefix: bool = True) -> CellValue:
    """Type a value as the module docstring describes.

    Args:
        text: the value as typed; surrounding spaces are ignored when looking for a number or a bool but kept
            in text.
        quote_prefix: whether a leading ``'`` forces text (the CLI: yes; CSV files: no, a quote is data).
    """
    if text == "":
        return None
    if quote_prefix and text[0] == "'":
        return text[1:]
    word = text.strip()
    if len(word) <= _MAX_NUMBER_CHARS:
        if _INT.fullmatch(word):
            number = int(word)
            if MIN_INT <= number <= MAX_INT:
                return number
            return text
        if _FLOAT.fullmatch(word):
            real = float(word)
            return real if math.isfinite(real) else text
    lowered = word.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    return text


def check_value(value: CellValue, where: str = "a cell value") -> None:
    """Refuse values a cell cannot hold: text over :data:`MAX_CELL_BYTES`, huge ints, non-finite floats.

    Raises:
        ValueTooLargeError: text too long, or an integer outside 64 bits.
        InvalidInputError: a non-finite float, or a value of a type cells do not hold.
    """
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        # UTF-8 takes at most 4 bytes per character: most values skip the encode.
        if len(value) * 4 > MAX_CELL_BYTES:
            size = len(value.encode("utf-8", "surrogatepass"))
            if size > MAX_CELL_BYTES:
                raise ValueTooLargeError(where, size, MAX_CELL_BYTES)
    elif isinstance(value, int):
        if not MIN_INT <= value <= MAX_INT:
            raise ValueTooLargeError(f"{where} (an integer)", (value.bit_length() + 7) // 8, 8)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(
                f"{where} is {value!r}: cells hold finite numbers only; store it as text ('{value})"
            )
    else:
        raise InvalidInputError(
            f"{where} is a {type(value).__name__}: cells hold text, numbers, true/false or nothing"
        )


def parse_assignment(text: str) -> SetCell:
    """Parse ``REF=VALUE`` (the CLI's ``set`` argument) into a :class:`SetCell`.

    The reference ends at the first ``=``; everything after it is the value, typed by :func:`parse_value`
    (``A1=`` clears A1, ``A1='42`` stores the text ``42``, ``A1==SUM(B1)`` stores the text ``=SUM(B1)``).

    Raises:
        InvalidInputError: no ``=`` (the text is not an assignment).
        InvalidCellRefError: a bad reference before the ``=``.
        ValueTooLargeError: the value is over :data:`MAX_CELL_BYTES` of UTF-8.
    """
    ref, sep, raw = text.partition("=")
    if not sep:
        raise InvalidInputError(
            f"{text!r} is not an assignment: write the cell, '=' and the value, like A1=42 (A1= clears A1)"
        )
    row, col = parse_ref(ref)
    value = parse_value(raw)
    check_value(value, f"the value for {format_ref(row, col)}")
    return SetCell(row=row, col=col, value=value)
