"""Batched edits (issue 35): one ``edits`` entry holds several edits, applied in order and atomically.

A batch means exactly what its edits mean one after the other: the fold and the snapshot build agree with the fold
of the same edits unbatched, whatever the grouping; a batch the document model refuses changes nothing.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_core.errors import (
    BatchTooLargeError,
    BodyVersionError,
    InvalidCellRefError,
    InvalidInputError,
    UnknownEntryTypeError,
    ValueTooLargeError,
)
from seglog_core.memory import InMemoryBlobStore
from seglog_core.schema import (
    EMPTY_SNAPSHOT_ROOT,
    MAX_EDITS,
    MAX_EDITS_BYTES,
    Body,
    CellValue,
    DeleteRow,
    Edits,
    EntryType,
    Import,
    InsertRow,
    SetCell,
    SetRange,
    SnapshotMarker,
    decode_body,
    edits_of,
    encode_body,
)
from seglog_core.sheet import MAX_CELL_BYTES, MAX_ROW, Sheet, fold, validate_body
from seglog_core.snapshot import build, read_sheet

LOG = uuid.UUID("5b1e2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e")

VALUES: list[CellValue] = [None, 0, 1, -2, 2.5, True, "", "text"]
values = st.sampled_from(VALUES)
rows = st.integers(1, 10)
cols = st.integers(1, 4)
edit = st.one_of(
    st.builds(SetCell, row=rows, col=cols, value=values),
    st.builds(SetRange, row=rows, col=cols, values=st.lists(st.lists(values, max_size=3), max_size=3)),
    st.builds(InsertRow, after=st.integers(0, 10), values=st.lists(values, max_size=3)),
    st.builds(DeleteRow, row=rows),
)


def grouped(edits: list[Body], sizes: list[int]) -> list[Body]:
    """``edits`` cut into batches of the given sizes (a size of 1 leaves the edit single), in order."""
    out: list[Body] = []
    at = 0
    for size in sizes:
        if at >= len(edits):
            break
        part = edits[at:at + size]
        out.append(part[0] if len(part) == 1 else Edits(edits=part))  # type: ignore[arg-type]
        at += size
    out += edits[at:]
    return out


# ------------------------------------------------------------------------------------------ the encoding


def test_a_batch_reads_back_as_the_same_edits_in_the_same_order() -> None:
    batch = Edits(edits=[SetCell(row=1, col=1, value="a"), InsertRow(after=0, values=[1, None, 2.5]),
                         SetRange(row=2, col=2, values=[[True], [None, "x"]]), DeleteRow(row=3)])
    assert batch == decode_body(EntryType.EDITS, 1, encode_body(batch))


def test_a_single_edit_is_encoded_as_before_batches_existed() -> None:
    # Old entries must read unchanged: SetCell is still the plain msgpack array [row, col, value].
    assert b"\x93\x01\x02\xa1x" == encode_body(SetCell(row=1, col=2, value="x"))


def test_an_edit_of_a_newer_version_inside_a_batch_is_refused_not_guessed() -> None:
    data = encode_body(Edits(edits=[SetCell(row=1, col=1, value=1)]))
    newer = data.replace(b"\xa3set\x01", b"\xa3set\x02")
    assert data != newer
    with pytest.raises(BodyVersionError):
        decode_body(EntryType.EDITS, 1, newer)


def test_an_import_smuggled_into_a_stored_batch_is_refused_on_read() -> None:
    data = encode_body(Edits(edits=[SetCell(row=1, col=1, value=1)])).replace(b"\xa3set", b"\xa3imp")
    with pytest.raises(UnknownEntryTypeError, match="edit 0"):
        decode_body(EntryType.EDITS, 1, data)


def test_edits_of_flattens_batches_in_place() -> None:
    a, b, c = SetCell(row=1, col=1, value=1), DeleteRow(row=2), SetCell(row=3, col=1, value=3)
    assert [a, b, SnapshotMarker(), c] == list(edits_of([Edits(edits=[a, b]), SnapshotMarker(), c]))


# ------------------------------------------------------------------------------------------ validation


def test_a_bad_edit_refuses_the_whole_batch_naming_the_edit() -> None:
    batch = Edits(edits=[SetCell(row=1, col=1, value=1), SetCell(row=MAX_ROW + 1, col=1, value=2)])
    with pytest.raises(InvalidCellRefError, match="edit 1 of the batch") as caught:
        validate_body(batch)
    assert 1 == caught.value.edit
    assert "send the batch again" in str(caught.value)


def test_an_oversized_value_in_a_batch_is_refused_naming_the_edit() -> None:
    batch = Edits(edits=[SetCell(row=1, col=1, value="é" * MAX_CELL_BYTES)])
    with pytest.raises(ValueTooLargeError, match="edit 0 of the batch") as caught:
        validate_body(batch)
    assert (0, MAX_CELL_BYTES) == (caught.value.edit, caught.value.limit)


@pytest.mark.parametrize("inner", [Import(source="k", format="csv", rows=[]), SnapshotMarker(),
                                   Edits(edits=[SetCell(row=1, col=1, value=1)])])
def test_a_batch_holds_cell_and_row_edits_only(inner: Body) -> None:
    batch = Edits(edits=[SetCell(row=1, col=1, value=1), inner])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="edit 1 of the batch") as caught:
        validate_body(batch)
    assert 1 == caught.value.edit


def test_an_empty_batch_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="at least one"):
        validate_body(Edits(edits=[]))


def test_a_batch_past_the_edit_limit_is_refused_as_too_large() -> None:
    batch = Edits(edits=[SetCell(row=1, col=1, value=None)] * (MAX_EDITS + 1))
    with pytest.raises(BatchTooLargeError) as caught:
        validate_body(batch)
    assert (MAX_EDITS + 1, MAX_EDITS, "edits") == (caught.value.size, caught.value.limit, caught.value.unit)


def test_a_batch_is_refused_past_the_byte_limit_and_accepted_at_it() -> None:
    def batch(text: int) -> Edits:
        return Edits(edits=[SetCell(row=1, col=1, value="x" * 100)] * 5 + [SetCell(row=1, col=2, value="y" * text)])

    fits = max(n for n in range(400) if len(encode_body(batch(n))) <= MAX_EDITS_BYTES)
    validate_body(batch(fits))
    with pytest.raises(BatchTooLargeError) as caught:
        validate_body(batch(fits + 1))
    assert (MAX_EDITS_BYTES + 1, MAX_EDITS_BYTES) == (caught.value.size, caught.value.limit)


# ------------------------------------------------------------------------------------------ the fold


def test_a_batch_the_fold_refuses_leaves_the_sheet_as_it_was() -> None:
    sheet = Sheet([["keep"]])
    batch = Edits(edits=[SetCell(row=1, col=1, value="changed"), DeleteRow(row=MAX_ROW + 1)])
    with pytest.raises(InvalidCellRefError):
        sheet.apply(batch)
    assert [["keep"]] == sheet.rows()


def test_edits_apply_in_their_order() -> None:
    batch = Edits(edits=[SetCell(row=1, col=1, value="a"), InsertRow(after=0, values=["b"]),
                         SetCell(row=1, col=2, value="c")])
    assert [["b", "c"], ["a"]] == fold([batch]).rows()


@settings(max_examples=200, deadline=None)
@given(edits=st.lists(edit, max_size=30), sizes=st.lists(st.integers(1, 6), max_size=12),
       cut=st.integers(0, 12), chunk_cells=st.integers(1, 6))
def test_batched_edits_fold_and_snapshot_as_the_same_edits_one_by_one(
    edits: list[Body], sizes: list[int], cut: int, chunk_cells: int
) -> None:
    bodies = grouped(edits, sizes)
    expected = fold(edits)
    assert expected == fold(bodies)
    # Two snapshots in a row, the first cut between two entries, each built from the previous one.
    blobs = InMemoryBlobStore()
    cut = min(cut, len(bodies))
    first = build(blobs, LOG, 0, cut + 1, EMPTY_SNAPSHOT_ROOT, bodies[:cut], chunk_cells=chunk_cells)
    assert fold(bodies[:cut]) == read_sheet(blobs, first)
    second = build(blobs, LOG, 0, len(bodies) + 2, first, bodies[cut:], chunk_cells=chunk_cells)
    assert expected == read_sheet(blobs, second)


def test_a_build_refuses_a_batch_the_fold_refuses() -> None:
    batch = Edits(edits=[SetCell(row=1, col=1, value=1), DeleteRow(row=0)])
    with pytest.raises(InvalidCellRefError):
        build(InMemoryBlobStore(), LOG, 0, 2, EMPTY_SNAPSHOT_ROOT, [batch])
