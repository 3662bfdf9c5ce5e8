"""Response pages of the API (no stack needed): rows cut to a byte budget, long rows cut between columns."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_services.api.errors import ApiError
from seglog_services.api.pages import LoadCursor, escaped_size, page_rows


def _all_pages(rows: list[list[Any]], budget: int) -> tuple[list[list[Any]], int]:
    out: list[list[Any]] = []
    row, col, pages = 1, 1, 0
    while True:
        page = page_rows(rows, row, col, budget)
        pages += 1
        assert page.rows or not rows, "a page of a non-empty sheet holds at least one cell"
        assert escaped_size(page.rows) <= budget or len(page.rows) == 1
        if col > 1:
            out[-1].extend(page.rows[0])
            out.extend(page.rows[1:])
        else:
            out.extend(page.rows)
        if page.next_row is None:
            return out, pages
        row, col = page.next_row, page.next_col


cells = st.one_of(st.none(), st.integers(-1000, 1000), st.text(max_size=30))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(cells, max_size=12), max_size=25), budget=st.integers(min_value=64, max_value=400))
def test_pages_join_back_into_the_rows_whatever_the_budget(rows: list[list[Any]], budget: int) -> None:
    joined, _ = _all_pages(rows, budget)
    assert rows == joined


def test_a_row_larger_than_a_page_is_cut_between_columns() -> None:
    rows = [["a"], ["x" * 20] * 40, ["z"]]
    joined, pages = _all_pages(rows, budget=200)
    assert rows == joined
    assert pages >= 5


def test_the_escaped_size_counts_what_json_string_escaping_adds() -> None:
    value = ['say "hi"', "back\\slash"]
    assert len(json.dumps(json.dumps(value, separators=(",", ":")))) - 2 == escaped_size(value)


def test_a_cursor_reads_back_and_a_forged_one_is_refused() -> None:
    cursor = LoadCursor(snapshot=(1, 2000), upto=(2, 17), row=30001, col=5)
    assert cursor == LoadCursor.parse(str(cursor))
    for bad in ("", "1.2.3", "1.2.3.4.0.1", "a.b.c.d.e.f", "1.2.3.4.5.6.7"):
        with pytest.raises(ApiError) as refused:
            LoadCursor.parse(bad)
        assert "invalid_cursor" == refused.value.code
