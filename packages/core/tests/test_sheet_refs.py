"""A1 references and typed values: what a user types becomes the cell they meant, or a clear error."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog_core.errors import InvalidCellRefError, InvalidInputError, ValueTooLargeError
from seglog_core.schema import CellValue, SetCell
from seglog_core.sheet import (
    MAX_CELL_BYTES,
    MAX_COL,
    MAX_INT,
    MAX_ROW,
    MIN_INT,
    check_value,
    column_letters,
    column_number,
    format_ref,
    parse_assignment,
    parse_ref,
    parse_value,
)


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("A1", (1, 1)),
        ("B2", (2, 2)),
        ("b2", (2, 2)),
        ("  c10 ", (10, 3)),
        ("Z1", (1, 26)),
        ("AA7", (7, 27)),
        ("xfd1048576", (MAX_ROW, MAX_COL)),
    ],
)
def test_parse_ref_reads_column_letters_then_row_number(ref: str, expected: tuple[int, int]) -> None:
    assert expected == parse_ref(ref)


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("A", "no row number"),
        ("12", "no column letters"),
        ("1A", "column letters come first"),
        ("A0", "rows start at 1"),
        ("A01", "leading zeros"),
        ("XFE1", "XFD"),
        ("AAAA1", "XFD"),
        ("A1048577", "1048576"),
        ("A99999999999", "1048576"),
        ("A-1", "'-'"),
        ("A 1", "' '"),
        ("A1B", "mixed"),
        ("É1", "'É'"),
        ("A\uff11", "'\uff11'"),  # a full-width digit one is not a row number
    ],
)
def test_parse_ref_refuses_bad_references_with_the_reason(ref: str, reason: str) -> None:
    with pytest.raises(InvalidCellRefError, match=reason) as caught:
        parse_ref(ref)
    assert ref == caught.value.ref
    assert "like A1" in str(caught.value)


@pytest.mark.parametrize(
    ("col", "letters"),
    [(1, "A"), (26, "Z"), (27, "AA"), (52, "AZ"), (53, "BA"), (702, "ZZ"), (703, "AAA"), (16384, "XFD")],
)
def test_column_letters_are_bijective_base_26(col: int, letters: str) -> None:
    assert letters == column_letters(col)
    assert col == column_number(letters)
    assert col == column_number(letters.lower())


@pytest.mark.parametrize("col", [0, -1, MAX_COL + 1])
def test_column_letters_refuses_columns_outside_a_to_xfd(col: int) -> None:
    with pytest.raises(InvalidCellRefError, match=r"columns are 1\.\.16384"):
        column_letters(col)


def test_every_column_number_round_trips_through_its_letters() -> None:
    assert list(range(1, MAX_COL + 1)) == [column_number(column_letters(c)) for c in range(1, MAX_COL + 1)]


@pytest.mark.parametrize(("row", "col"), [(0, 1), (MAX_ROW + 1, 1), (1, 0), (1, MAX_COL + 1)])
def test_format_ref_refuses_cells_outside_the_sheet(row: int, col: int) -> None:
    with pytest.raises(InvalidCellRefError):
        format_ref(row, col)


@given(st.integers(1, MAX_ROW), st.integers(1, MAX_COL), st.booleans())
def test_format_then_parse_is_the_identity(row: int, col: int, lower: bool) -> None:
    ref = format_ref(row, col)
    assert (row, col) == parse_ref(ref.lower() if lower else ref)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("0", 0),
        (" 12 ", 12),
        ("1.5", 1.5),
        (".5", 0.5),
        ("2.", 2.0),
        ("1e3", 1000.0),
        ("-1.5E-2", -0.015),
        ("true", True),
        ("TRUE", True),
        ("False", False),
        ("", None),
        ("'42", "42"),
        ("'true", "true"),
        ("'", ""),
        ("hello world", "hello world"),
        ("007", "007"),  # leading zeros are kept: codes, not numbers
        ("1_000", "1_000"),
        ("١٢", "١٢"),  # Arabic-Indic digits stay text
        ("inf", "inf"),
        ("nan", "nan"),
        ("1e999", "1e999"),  # overflows to infinity: kept as typed
        (str(MAX_INT), MAX_INT),
        (str(MIN_INT), MIN_INT),
        (str(MAX_INT + 1), str(MAX_INT + 1)),  # past 64 bits: text, never a rounded number
        ("=SUM(A1)", "=SUM(A1)"),
        ("  spaced  ", "  spaced  "),
    ],
)
def test_parse_value_types_what_the_user_typed(text: str, expected: CellValue) -> None:
    actual = parse_value(text)
    assert type(expected) is type(actual)
    assert expected == actual


def test_parse_value_keeps_a_leading_quote_as_data_when_asked() -> None:
    assert parse_value("'42", quote_prefix=False) == "'42"


@given(st.integers(MIN_INT, MAX_INT))
def test_integers_parse_back_to_themselves(n: int) -> None:
    value = parse_value(str(n))
    assert type(value) is int
    assert n == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_parse_back_to_themselves(x: float) -> None:
    value = parse_value(repr(x))
    assert isinstance(value, float)
    assert x == value
    assert math.copysign(1, x) == math.copysign(1, value)


@given(st.text(max_size=50))
def test_a_leading_quote_always_gives_the_text_after_it(text: str) -> None:
    assert SetCell(row=1, col=1, value=text) == parse_assignment("A1='" + text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A1=42", SetCell(row=1, col=1, value=42)),
        ("b2=hello world", SetCell(row=2, col=2, value="hello world")),
        (" C3 =1.5", SetCell(row=3, col=3, value=1.5)),
        ("C3=", SetCell(row=3, col=3, value=None)),
        ("D4='42", SetCell(row=4, col=4, value="42")),
        ("E5=false", SetCell(row=5, col=5, value=False)),
        ("F6==SUM(A1)", SetCell(row=6, col=6, value="=SUM(A1)")),
        ("G7=a=b", SetCell(row=7, col=7, value="a=b")),
    ],
)
def test_parse_assignment_builds_the_set_cell_body(text: str, expected: SetCell) -> None:
    actual = parse_assignment(text)
    assert expected == actual
    assert type(expected.value) is type(actual.value)


def test_parse_assignment_without_equals_says_how_to_write_one() -> None:
    with pytest.raises(InvalidInputError, match=r"not an assignment.*A1=42"):
        parse_assignment("A1 42")


def test_parse_assignment_with_a_bad_reference_names_the_reference() -> None:
    with pytest.raises(InvalidCellRefError, match="'A0'"):
        parse_assignment("A0=1")


def test_parse_assignment_accepts_a_value_of_exactly_the_limit() -> None:
    assert len(str(parse_assignment("A1=" + "x" * MAX_CELL_BYTES).value)) == MAX_CELL_BYTES


def test_parse_assignment_refuses_a_value_over_the_limit_in_utf8_bytes() -> None:
    text = "é" * (MAX_CELL_BYTES // 2 + 1)  # fewer characters than the limit, more bytes
    with pytest.raises(ValueTooLargeError) as caught:
        parse_assignment("B3=" + text)
    assert caught.value.size == MAX_CELL_BYTES + 2
    assert caught.value.limit == MAX_CELL_BYTES
    assert "B3" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (float("nan"), InvalidInputError),
        (float("-inf"), InvalidInputError),
        (MAX_INT + 1, ValueTooLargeError),
        (MIN_INT - 1, ValueTooLargeError),
        ([1, 2], InvalidInputError),
        (b"bytes", InvalidInputError),
    ],
)
def test_check_value_refuses_what_a_cell_cannot_hold(value: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_value(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, True, False, 0, MAX_INT, MIN_INT, -0.0, 1e308, "", "x" * 100])
def test_check_value_accepts_every_cell_value(value: CellValue) -> None:
    check_value(value)
