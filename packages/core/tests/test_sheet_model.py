"""The sheet fold: each body type's meaning, equality, serialization, and agreement with a naive model."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog_core.errors import InvalidCellRefError, InvalidInputError, UnknownEntryTypeError
from seglog_core.schema import (
    Body,
    CellValue,
    DeleteRow,
    EndSegment,
    Import,
    InsertRow,
    SetCell,
    SetRange,
    SnapshotMarker,
    decode_body,
    encode_body,
)
from seglog_core.sheet import MAX_COL, MAX_ROW, Sheet, fold
from seglog_core.sheet.model import SHEET_FORMAT_VERSION

# ------------------------------------------------------------------------------------------ each body type


def test_set_cell_sets_and_none_clears() -> None:
    sheet = fold([SetCell(row=2, col=3, value="x"), SetCell(row=1, col=1, value=1)])
    assert sheet.get(2, 3) == "x"
    assert sheet.rows() == [[1], [None, None, "x"]]
    sheet.apply(SetCell(row=2, col=3, value=None))
    assert sheet.rows() == [[1]]
    assert None is sheet.get(2, 3)
    assert None is sheet.get(500, 500)


def test_clearing_a_cell_that_was_never_set_changes_nothing() -> None:
    assert Sheet() == fold([SetCell(row=9, col=9, value=None)])
    assert fold([SetCell(row=9, col=9, value=None)]).rows() == []


@pytest.mark.parametrize(("row", "col"), [(0, 1), (-1, 1), (1, 0), (MAX_ROW + 1, 1), (1, MAX_COL + 1)])
def test_set_cell_outside_the_sheet_raises_and_writes_nothing(row: int, col: int) -> None:
    sheet = Sheet([[1, 2], [3, 4]])
    with pytest.raises(InvalidCellRefError):
        sheet.apply(SetCell(row=row, col=col, value="x"))
    assert sheet.rows() == [[1, 2], [3, 4]]  # row 0 must not wrap around to the last row


def test_set_range_writes_a_rectangle_from_its_corner_and_none_clears() -> None:
    sheet = Sheet([["a", "b", "c"], ["d", "e", "f"]])
    sheet.apply(SetRange(row=2, col=2, values=[[1, None], [2, 3], [], [None, 4]]))
    assert sheet.rows() == [["a", "b", "c"], ["d", 1], [None, 2, 3], [], [None, None, 4]]


def test_set_range_running_past_the_last_column_raises_and_writes_nothing() -> None:
    sheet = Sheet([[1]])
    with pytest.raises(InvalidCellRefError):
        sheet.apply(SetRange(row=1, col=MAX_COL, values=[["fits"], ["fits", "does not"]]))
    assert sheet.rows() == [[1]]


def test_insert_row_at_the_top_shifts_every_row_down() -> None:
    sheet = Sheet([[1], [2]])
    sheet.apply(InsertRow(after=0, values=["new", None, "x"]))
    assert sheet.rows() == [["new", None, "x"], [1], [2]]


def test_insert_row_in_the_middle_shifts_only_later_rows() -> None:
    sheet = Sheet([[1], [2], [3]])
    sheet.apply(InsertRow(after=2))
    assert sheet.rows() == [[1], [2], [], [3]]


def test_insert_row_below_the_last_row_places_its_values_there() -> None:
    sheet = Sheet([[1]])
    sheet.apply(InsertRow(after=3, values=[5]))
    assert sheet.rows() == [[1], [], [], [5]]
    sheet.apply(InsertRow(after=10))  # an empty row below everything: nothing to see
    assert sheet.rows() == [[1], [], [], [5]]


def test_insert_row_pushes_the_last_worksheet_row_off_the_end() -> None:
    sheet = fold([SetCell(row=MAX_ROW, col=1, value="bottom"), SetCell(row=1, col=1, value="top")])
    sheet.apply(InsertRow(after=0, values=["new"]))
    assert sheet.dimensions == (2, 1)
    assert sheet.rows() == [["new"], ["top"]]


def test_delete_row_shifts_later_rows_up() -> None:
    sheet = Sheet([[1], [2], [3]])
    sheet.apply(DeleteRow(row=2))
    assert sheet.rows() == [[1], [3]]


def test_delete_row_beyond_the_last_row_is_a_no_op() -> None:
    sheet = Sheet([[1], [2]])
    sheet.apply(DeleteRow(row=50))
    assert sheet.rows() == [[1], [2]]


def test_import_replaces_the_whole_sheet() -> None:
    sheet = Sheet([[1, 2, 3], [4, 5, 6], [7]])
    sheet.apply(Import(source="s3key", format="csv", rows=[["a"], [], [None, "b"]]))
    assert sheet.rows() == [["a"], [], [None, "b"]]


def test_log_level_bodies_change_nothing() -> None:
    sheet = fold([SetCell(row=1, col=1, value=1), SnapshotMarker(), EndSegment(next_segment=3)])
    assert sheet.rows() == [[1]]


class _Mystery(Body, frozen=True):
    """A body type the fold has never heard of (as if written by newer code)."""

    x: int = 0


def test_an_unknown_body_type_stops_the_fold() -> None:
    with pytest.raises(UnknownEntryTypeError):
        fold([SetCell(row=1, col=1, value=1), _Mystery()])


def test_a_non_body_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="entry bodies"):
        Sheet().apply("A1=1")  # type: ignore[arg-type]


def test_fold_leaves_its_start_untouched() -> None:
    start = Sheet([[1]])
    result = fold([SetCell(row=1, col=1, value=2), InsertRow(after=0, values=["x"])], start)
    assert start.rows() == [[1]]
    assert result.rows() == [["x"], [2]]


def test_fold_of_decoded_bodies_equals_fold_of_the_originals() -> None:
    bodies: list[Body] = [
        Import(source="k", format="csv", rows=[[1, 2.0, True, "1"]]),
        SetRange(row=2, col=2, values=[["a", None]]),
        InsertRow(after=1, values=[None, 7]),
        DeleteRow(row=3),
        SetCell(row=4, col=1, value=-0.5),
    ]
    decoded = [decode_body(b.TYPE, b.VERSION, encode_body(b)) for b in bodies]
    assert fold(bodies) == fold(decoded)


# ------------------------------------------------------------------------------------------ reading


def test_dimensions_cell_count_and_cells_describe_the_non_empty_cells() -> None:
    sheet = fold(
        [SetCell(row=3, col=2, value="b"), SetCell(row=1, col=4, value=4), SetCell(row=3, col=1, value=0)]
    )
    assert sheet.dimensions == (3, 4)
    assert sheet.cell_count == 3
    assert list(sheet.cells()) == [(1, 4, 4), (3, 1, 0), (3, 2, "b")]
    assert Sheet().dimensions == (0, 0)
    assert fold([SetCell(row=5, col=5, value=1), DeleteRow(row=5)]).dimensions == (0, 0)


def test_get_refuses_cells_outside_the_sheet() -> None:
    with pytest.raises(InvalidCellRefError):
        Sheet().get(0, 1)


def test_equality_tells_value_types_apart() -> None:
    values: list[CellValue] = [1, 1.0, True, "1"]
    for a in values:
        for b in values:
            assert (Sheet([[a]]) == Sheet([[b]])) is (type(a) is type(b))


def test_equality_ignores_how_the_state_was_reached() -> None:
    edited = fold([SetCell(row=5, col=5, value=1), SetCell(row=1, col=1, value="a"), DeleteRow(row=5)])
    cleared = fold(
        [SetCell(row=1, col=1, value="a"), SetCell(row=1, col=9, value=2), SetCell(row=1, col=9, value=None)]
    )
    assert Sheet([["a"]]) == edited
    assert edited == cleared
    assert Sheet([["a"]]) != Sheet([["a", "b"]])
    assert Sheet() != [[]]


# ------------------------------------------------------------------------------------------ serialization

cell_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
small_rows = st.lists(st.lists(cell_values, max_size=6), max_size=8)


@given(small_rows)
def test_to_bytes_round_trips_exactly(rows: list[list[CellValue]]) -> None:
    sheet = Sheet(rows)
    data = sheet.to_bytes()
    back = Sheet.from_bytes(data)
    assert sheet == back
    assert [[(type(v), v) for v in row] for row in sheet.rows()] == [
        [(type(v), v) for v in row] for row in back.rows()
    ]
    assert data == back.to_bytes()


def test_to_bytes_is_the_same_for_equal_sheets() -> None:
    a = fold(
        [SetCell(row=1, col=3, value="c"), SetCell(row=1, col=1, value="a"), SetCell(row=2, col=1, value=1)]
    )
    b = Sheet([["a", None, "c"], [1]])
    assert a.to_bytes() == b.to_bytes()


def test_from_bytes_refuses_what_is_not_a_sheet() -> None:
    with pytest.raises(InvalidInputError, match="not a serialized sheet"):
        Sheet.from_bytes(b"\x93garbage")
    newer = msgspec.msgpack.encode([SHEET_FORMAT_VERSION + 1, {}])
    with pytest.raises(InvalidInputError, match="upgrade seglog"):
        Sheet.from_bytes(newer)
    outside = msgspec.msgpack.encode([SHEET_FORMAT_VERSION, {0: {1: "x"}}])
    with pytest.raises(InvalidInputError, match="corrupt"):
        Sheet.from_bytes(outside)


# ------------------------------------------------------------------------------------------ properties

ROWS, COLS = 12, 6


def _bodies() -> st.SearchStrategy[Body]:
    row = st.integers(1, ROWS)
    col = st.integers(1, COLS)
    values = st.lists(cell_values, max_size=COLS)
    return st.one_of(
        st.builds(SetCell, row=row, col=col, value=cell_values),
        st.builds(SetCell, row=row, col=col, value=st.none()),
        st.builds(SetRange, row=row, col=col, values=st.lists(st.lists(cell_values, max_size=3), max_size=3)),
        st.builds(InsertRow, after=st.integers(0, ROWS + 2), values=values),
        st.builds(DeleteRow, row=st.integers(1, ROWS + 2)),
        st.builds(Import, source=st.just("k"), format=st.just("csv"), rows=st.lists(values, max_size=4)),
        st.just(SnapshotMarker()),
    )


def _reference_fold(bodies: Iterable[Body]) -> dict[tuple[int, int], CellValue]:
    """A deliberately naive model: a dict of (row, col) -> value, rows renumbered on every insert/delete."""
    cells: dict[tuple[int, int], CellValue] = {}

    def put(r: int, c: int, v: CellValue) -> None:
        if v is None:
            cells.pop((r, c), None)
        else:
            cells[(r, c)] = v

    for body in bodies:
        if isinstance(body, SetCell):
            put(body.row, body.col, body.value)
        elif isinstance(body, SetRange):
            for i, values in enumerate(body.values):
                for j, v in enumerate(values):
                    put(body.row + i, body.col + j, v)
        elif isinstance(body, InsertRow):
            cells = {((r + 1 if r > body.after else r), c): v for (r, c), v in cells.items()}
            for j, v in enumerate(body.values):
                put(body.after + 1, j + 1, v)
        elif isinstance(body, DeleteRow):
            cells = {((r - 1 if r > body.row else r), c): v for (r, c), v in cells.items() if r != body.row}
        elif isinstance(body, Import):
            cells = {}
            for i, values in enumerate(body.rows):
                for j, v in enumerate(values):
                    put(i + 1, j + 1, v)
    return cells


def _typed(cells: Iterable[tuple[int, int, CellValue]]) -> list[tuple[int, int, type, CellValue]]:
    return sorted(((r, c, type(v), v) for r, c, v in cells), key=lambda t: (t[0], t[1]))


@given(st.lists(_bodies(), max_size=40))
def test_fold_agrees_with_a_naive_reference_model(bodies: list[Body]) -> None:
    expected = _reference_fold(bodies)
    sheet = fold(bodies)
    assert _typed((r, c, v) for (r, c), v in expected.items()) == _typed(sheet.cells())
    assert len(expected) == sheet.cell_count
    n_rows = max((r for r, _ in expected), default=0)
    n_cols = max((c for _, c in expected), default=0)
    assert (n_rows, n_cols) == sheet.dimensions
    assert sheet == Sheet.from_bytes(sheet.to_bytes())


@given(st.lists(_bodies(), max_size=20), st.integers(0, ROWS + 2), st.lists(cell_values, max_size=COLS))
def test_insert_then_delete_of_the_same_row_restores_the_sheet(
    bodies: list[Body], after: int, values: list[CellValue]
) -> None:
    sheet = fold(bodies)
    before = sheet.rows()
    restored = fold([InsertRow(after=after, values=values), DeleteRow(row=after + 1)], sheet)
    assert before == restored.rows()
    assert sheet == restored


@given(st.lists(_bodies(), max_size=30), st.integers(0, 30))
def test_folding_in_two_parts_equals_folding_at_once(bodies: list[Body], split: int) -> None:
    assert fold(bodies) == fold(bodies[split:], fold(bodies[:split]))
