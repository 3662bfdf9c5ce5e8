"""Rendering a sheet as a terminal grid: headers, alignment, truncation and the note of what was cut."""

from __future__ import annotations

import pytest

from seglog_core.schema import SetCell
from seglog_core.sheet import Sheet, display_value, fold, render
from seglog_core.sheet.render import text_width, truncate


def test_a_small_sheet_renders_with_letters_across_and_numbers_down() -> None:
    sheet = Sheet([["name", "total", True], ["pears", 42, 1.5], [], [None, None, "end"]])
    expected = "\n".join(
        [
            "  │ A     │ B     │ C",
            "──┼───────┼───────┼──────",
            "1 │ name  │ total │ TRUE",
            "2 │ pears │    42 │  1.5",
            "3 │       │       │",
            "4 │       │       │ end",
        ]
    )
    assert expected == render(sheet)


def test_an_empty_sheet_says_so() -> None:
    assert render(Sheet()) == "(empty sheet)"


def test_long_values_are_cut_to_the_column_cap_with_an_ellipsis() -> None:
    out = render(Sheet([["abcdefghijklmnopqrstuvwxyz", "short"]]), max_width=10)
    assert out.splitlines()[2] == "1 │ abcdefghi… │ short"


def test_rows_and_columns_beyond_the_window_are_counted_in_a_note() -> None:
    sheet = fold([SetCell(row=r, col=c, value=r * c) for r in range(1, 124) for c in (1, 5)])
    out = render(sheet, max_rows=3, max_cols=2)
    lines = out.splitlines()
    assert len(lines) == 2 + 3 + 1
    assert lines[0] == "  │ A │ B"
    assert lines[4] == "3 │ 3 │"
    assert lines[-1] == "… 120 more rows, 3 more columns"


def test_the_note_uses_the_singular_for_one() -> None:
    out = render(Sheet([[1, 2], [3]]), max_rows=1, max_cols=1)
    assert out.splitlines()[-1] == "… 1 more row, 1 more column"


def test_a_window_starts_at_top_and_left() -> None:
    sheet = Sheet([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert "\n".join(["  │ B │ C", "──┼───┼───", "2 │ 5 │ 6", "3 │ 8 │ 9"]) == render(sheet, top=2, left=2)
    assert render(sheet, left=4) == "(nothing from D1 on: the sheet is 3 rows by 3 columns)"


def test_the_row_number_gutter_fits_the_largest_number_shown() -> None:
    sheet = fold([SetCell(row=1000, col=1, value="x")])
    assert render(sheet, top=999).splitlines()[-1] == "1000 │ x"


def test_newlines_and_control_characters_never_break_the_grid() -> None:
    out = render(Sheet([["line one\nline two\ttab\x07"]]))
    assert len(out.splitlines()) == 3
    assert out.splitlines()[2] == "1 │ line one↵line two tab·"


def test_wide_characters_take_two_columns_when_aligning() -> None:
    out = render(Sheet([["日本"], ["abcd"]]))
    assert out.splitlines()[2:] == ["1 │ 日本", "2 │ abcd"]
    assert out.splitlines()[0] == "  │ A"
    assert text_width("日本") == 4
    assert truncate("日本語", 4) == "日…"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, ""), (True, "TRUE"), (False, "FALSE"), (42, "42"), (1.0, "1.0"), (0.1, "0.1"), ("1", "1")],
)
def test_display_value_distinguishes_types_where_it_can(value: object, shown: str) -> None:
    assert shown == display_value(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [{"max_rows": 0}, {"max_cols": 0}, {"max_width": 1}, {"top": 0}])
def test_nonsense_window_arguments_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="render needs"):
        render(Sheet([[1]]), **kwargs)
