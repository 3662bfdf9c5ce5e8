"""Append-time validation: what validate_body accepts always folds; what it refuses says why."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_core.errors import (
    InvalidCellRefError,
    InvalidInputError,
    UnknownEntryTypeError,
    ValueTooLargeError,
)
from seglog_core.schema import (
    Body,
    DeleteRow,
    EndSegment,
    Import,
    InsertRow,
    SetCell,
    SetRange,
    SnapshotMarker,
)
from seglog_core.sheet import MAX_CELL_BYTES, MAX_COL, MAX_ROW, Sheet, validate_body


@pytest.mark.parametrize(
    "body",
    [
        SetCell(row=1, col=1, value="x"),
        SetCell(row=MAX_ROW, col=MAX_COL, value=None),
        SetRange(row=MAX_ROW - 1, col=MAX_COL - 1, values=[[1, 2], [3, 4]]),
        InsertRow(after=0, values=[1] * MAX_COL),
        InsertRow(after=MAX_ROW - 1),
        DeleteRow(row=MAX_ROW),
        Import(source="k", format="csv", rows=[[1, "a"], [], [None, True]]),
        SnapshotMarker(),
        EndSegment(next_segment=1),
    ],
)
def test_bodies_inside_the_sheet_pass(body: Body) -> None:
    validate_body(body)


@pytest.mark.parametrize(
    ("body", "error", "match"),
    [
        (SetCell(row=0, col=1, value=1), InvalidCellRefError, "rows are"),
        (SetCell(row=1, col=MAX_COL + 1, value=1), InvalidCellRefError, "columns are"),
        (SetCell(row=1, col=1, value="x" * (MAX_CELL_BYTES + 1)), ValueTooLargeError, "A1"),
        (SetCell(row=2, col=2, value=float("nan")), InvalidInputError, "B2"),
        (SetRange(row=MAX_ROW, col=1, values=[[1], [2]]), InvalidCellRefError, "past row"),
        (SetRange(row=1, col=MAX_COL, values=[[1, 2]]), InvalidCellRefError, "past column XFD"),
        (SetRange(row=1, col=1, values=[[None, 2**64]]), ValueTooLargeError, "B1"),
        (InsertRow(after=MAX_ROW), InvalidCellRefError, "inserted after"),
        (InsertRow(after=-1), InvalidCellRefError, "inserted after"),
        (InsertRow(after=0, values=[1] * (MAX_COL + 1)), InvalidCellRefError, "past column XFD"),
        (DeleteRow(row=0), InvalidCellRefError, "rows are"),
        (Import(source="k", format="csv", rows=[[], [1] * (MAX_COL + 1)]), InvalidCellRefError, "row 2"),
    ],
)
def test_bodies_outside_the_sheet_are_refused_with_the_reason(
    body: Body, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        validate_body(body)


class _Future(Body, frozen=True):
    """A body type from newer code."""


def test_an_unknown_body_type_is_refused() -> None:
    with pytest.raises(UnknownEntryTypeError):
        validate_body(_Future())


_edges = st.sampled_from([-1, 0, 1, 2, MAX_ROW - 1, MAX_ROW, MAX_ROW + 1])
_col_edges = st.sampled_from([0, 1, 2, MAX_COL - 1, MAX_COL, MAX_COL + 1])
_values = st.lists(st.one_of(st.none(), st.integers(0, 9)), max_size=3)
_edge_bodies = st.one_of(
    st.builds(SetCell, row=_edges, col=_col_edges, value=st.integers(0, 9)),
    st.builds(SetRange, row=_edges, col=_col_edges, values=st.lists(_values, max_size=3)),
    st.builds(InsertRow, after=_edges, values=_values),
    st.builds(DeleteRow, row=_edges),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_edge_bodies, max_size=6))
def test_whatever_validation_accepts_the_fold_applies(bodies: list[Body]) -> None:
    sheet = Sheet()
    for body in bodies:
        try:
            validate_body(body)
        except InvalidInputError:
            with pytest.raises(InvalidInputError):
                sheet.copy().apply(body)
            continue
        sheet.apply(body)
    n_rows, n_cols = sheet.dimensions
    assert n_rows <= MAX_ROW
    assert n_cols <= MAX_COL
