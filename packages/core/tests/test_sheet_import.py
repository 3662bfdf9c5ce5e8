"""Importing CSV and XLSX files: typed values out, and only seglog's own errors for bad input."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import zipfile

import openpyxl  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog_core.errors import ImportFileError, InvalidInputError, ValueTooLargeError
from seglog_core.sheet import MAX_CELL_BYTES, ImportLimits, parse_value, read_import


def _xlsx(*sheets: dict[str, object]) -> bytes:
    """An XLSX file with one worksheet per dict of ``{ref: value}``, in order."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for i, cells in enumerate(sheets):
        sheet = workbook.create_sheet(f"S{i}")
        for ref, value in cells.items():
            sheet[ref] = value
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


# ------------------------------------------------------------------------------------------ CSV


def test_csv_values_are_typed_like_the_cli_types_them() -> None:
    data = b"name,count,price,ok\npears,42,1.5,TRUE\n,007,-3,false\n"
    assert read_import("fruit.csv", data) == (
        "csv",
        [["name", "count", "price", "ok"], ["pears", 42, 1.5, True], [None, "007", -3, False]],
    )


def test_csv_with_a_byte_order_mark_and_crlf_lines_reads_the_same() -> None:
    assert read_import("a.csv", b"a,1\nb,2\n") == read_import("a.csv", b"\xef\xbb\xbfa,1\r\nb,2\r\n")


def test_csv_quoted_fields_keep_commas_newlines_and_quotes() -> None:
    _, rows = read_import("q.csv", b'"a, b","line1\r\nline2","say ""hi""",\'42\n')
    assert rows == [["a, b", "line1\r\nline2", 'say "hi"', "'42"]]


def test_csv_trailing_empty_cells_and_rows_are_dropped_inner_ones_kept() -> None:
    _, rows = read_import("t.csv", b"a,,\n\n,,\n,b\n,,\n\n")
    assert rows == [["a"], [], [], [None, "b"]]


def test_an_empty_csv_is_an_empty_sheet() -> None:
    assert read_import("empty.csv", b"") == ("csv", [])


def test_csv_that_is_not_utf8_says_how_to_save_it() -> None:
    with pytest.raises(ImportFileError, match=r"not UTF-8.*offset 3.*CSV UTF-8") as caught:
        read_import("latin.csv", "café,1\n".encode("latin-1"))
    assert caught.value.path == "latin.csv"


def test_a_csv_cell_over_the_cell_limit_is_too_large() -> None:
    with pytest.raises(ValueTooLargeError, match="B2"):
        read_import("big.csv", b"a,b\nc," + b"x" * (MAX_CELL_BYTES + 1))
    with pytest.raises(ValueTooLargeError, match="line 1"):
        read_import("huge.csv", b"x" * 200_000)  # past the csv module's own field cap


_fields = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)  # Cs: surrogates are not UTF-8


@given(st.lists(st.lists(_fields, min_size=1, max_size=4)))
def test_csv_written_by_the_csv_module_reads_back_field_by_field(table: list[list[str]]) -> None:
    out = io.StringIO(newline="")
    csv.writer(out).writerows(table)
    _, rows = read_import("w.csv", out.getvalue().encode())
    expected = [[parse_value(f, quote_prefix=False) for f in row] for row in table]
    for row in expected:
        while row and row[-1] is None:
            row.pop()
    while expected and not expected[-1]:
        expected.pop()
    # csv.writer writes a lone empty field as "" and a row [""] reads back as one empty cell.
    assert [[(type(v), v) for v in row] for row in expected] == [[(type(v), v) for v in row] for row in rows]


# ------------------------------------------------------------------------------------------ limits


@pytest.mark.parametrize(
    ("limits", "unit"),
    [
        (ImportLimits(max_rows=2), "rows"),
        (ImportLimits(max_cols=2), "columns"),
        (ImportLimits(max_cells=5), "cells"),
        (ImportLimits(max_bytes=10), "bytes"),
    ],
)
def test_imports_over_a_limit_are_refused_with_the_limit(limits: ImportLimits, unit: str) -> None:
    data = b"1,2,3\n4,5,6\n7,8,9\n"
    with pytest.raises(ValueTooLargeError, match=unit):
        read_import("lim.csv", data, limits=limits)
    assert len(read_import("lim.csv", data)[1]) == 3


def test_an_xlsx_that_inflates_past_the_limit_is_refused_before_parsing() -> None:
    data = _xlsx({"A1": "x" * 10_000})
    with pytest.raises(ValueTooLargeError, match="unzipped"):
        read_import("bomb.xlsx", data, limits=ImportLimits(max_unzipped_bytes=5_000))


# ------------------------------------------------------------------------------------------ XLSX


def test_xlsx_reads_the_values_of_the_first_worksheet() -> None:
    data = _xlsx(
        {"A1": "name", "B1": 42, "C1": 1.5, "D1": True, "B3": "after a gap", "A4": "=1+1"},
        {"A1": "second sheet: ignored"},
    )
    fmt, rows = read_import("book.XLSX", data)
    assert fmt == "xlsx"
    assert rows == [["name", 42, 1.5, True], [], [None, "after a gap"]]
    assert [int, float, bool] == [type(v) for v in rows[0][1:]]


def test_xlsx_dates_and_times_become_iso_text() -> None:
    data = _xlsx({"A1": dt.datetime(2024, 5, 6, 7, 8, 9), "B1": dt.date(2024, 5, 6), "C1": dt.time(13, 30)})
    _, rows = read_import("dates.xlsx", data)
    assert rows == [["2024-05-06T07:08:09", "2024-05-06", "13:30:00"]]


def test_xlsx_data_starting_below_row_one_keeps_its_rows() -> None:
    _, rows = read_import("low.xlsx", _xlsx({"C3": "x"}))
    assert rows == [[], [], [None, None, "x"]]


def test_an_xlsx_cell_over_the_cell_limit_is_too_large() -> None:
    with pytest.raises(ValueTooLargeError, match="A2"):
        # XLSX caps cells at 32,767 characters; two-byte ones still pass the byte limit.
        read_import("big.xlsx", _xlsx({"A1": "ok", "A2": "é" * (MAX_CELL_BYTES // 2 + 1)}))


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "not a zip"),
        (b"name,count\n", "not a zip"),
        (b"PK\x03\x04 truncated", "not a zip"),
    ],
)
def test_a_file_that_is_not_a_workbook_is_an_import_error(data: bytes, why: str) -> None:
    with pytest.raises(ImportFileError, match=why):
        read_import("bad.xlsx", data)


def test_a_zip_that_is_not_a_workbook_is_an_import_error() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "not a workbook")
    with pytest.raises(ImportFileError, match=r"save it again|could not be read"):
        read_import("zip.xlsx", out.getvalue())


def test_a_truncated_workbook_is_an_import_error() -> None:
    data = _xlsx({"A1": 1})
    with pytest.raises(ImportFileError):
        read_import("cut.xlsx", data[: len(data) // 2])


@given(st.binary(max_size=300), st.sampled_from(["f.csv", "f.xlsx"]))
def test_arbitrary_bytes_never_escape_as_a_raw_exception(data: bytes, name: str) -> None:
    with contextlib.suppress(InvalidInputError):
        read_import(name, data)


# ------------------------------------------------------------------------------------------ names


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("a.csv", "csv"), ("DATA.CSV", "csv"), ("dir/sub/x.csv", "csv"), ("C:\\x\\y.xlsx", "xlsx")],
)
def test_the_format_comes_from_the_extension_in_any_case(name: str, fmt: str) -> None:
    data = b"1\n" if fmt == "csv" else _xlsx({"A1": 1})
    assert (fmt, [[1]]) == read_import(name, data)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "no name"),
        ("   ", "no name"),
        ("notes.txt", "'.txt' is not a format"),
        ("old.xls", "save it as .xlsx"),
        ("README", "without extension"),
    ],
)
def test_names_seglog_cannot_import_say_what_to_do(name: str, why: str) -> None:
    with pytest.raises(ImportFileError, match=why) as caught:
        read_import(name, b"a,b\n")
    assert ".csv" in str(caught.value) or ".xlsx" in str(caught.value)
