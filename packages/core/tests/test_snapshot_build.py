"""Snapshot builds: the result equals the fold, whatever the chunking, resume point or interval split.

The fold (seglog_core.sheet.fold) is the reference: every snapshot, built from the previous snapshot and the
bodies in between, must read back as the fold of every body before it (DESIGN §6 I3).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_core.errors import InvalidCellRefError, UnknownEntryTypeError
from seglog_core.memory import InMemoryBlobStore
from seglog_core.schema import (
    EMPTY_SNAPSHOT_ROOT,
    Body,
    CellValue,
    DeleteRow,
    EndSegment,
    EntryType,
    Import,
    InsertRow,
    SetCell,
    SetRange,
    SnapshotMarker,
)
from seglog_core.sheet import MAX_COL, MAX_ROW, Sheet, fold
from seglog_core.snapshot import (
    Chunk,
    RowMap,
    SnapshotBuild,
    build,
    chunk_key,
    read_sheet,
    snapshot_keys,
    write_rows,
)

LOG = uuid.UUID("2d0c1f8e-6b5a-4c3d-8e9f-0a1b2c3d4e5f")


def built(bodies: Sequence[Body], *, previous: str = EMPTY_SNAPSHOT_ROOT, chunk_cells: int = 3,
          blobs: InMemoryBlobStore | None = None, entry: int = 1) -> Sheet:
    """Build a snapshot and read it back."""
    blobs = blobs or InMemoryBlobStore()
    root = build(blobs, LOG, 0, entry, previous, bodies, chunk_cells=chunk_cells)
    return read_sheet(blobs, root)


# ------------------------------------------------------------------------------------------ each body type


def test_a_set_cell_moves_with_a_later_insert_above_it() -> None:
    bodies = [SetCell(row=5, col=1, value="x"), InsertRow(after=2)]
    sheet = built(bodies)
    assert "x" == sheet.get(6, 1)
    assert fold(bodies) == sheet


def test_a_set_cell_on_a_row_deleted_later_disappears() -> None:
    bodies = [SetCell(row=5, col=1, value="x"), SetCell(row=6, col=1, value="y"), DeleteRow(row=5)]
    sheet = built(bodies)
    assert [[], [], [], [], ["y"]] == sheet.rows()
    assert fold(bodies) == sheet


def test_an_inserted_row_holds_its_values_and_later_edits_only() -> None:
    bodies = [
        SetRange(row=1, col=1, values=[["a", "b"], ["c", "d"]]),
        InsertRow(after=1, values=[None, "new"]),
        SetCell(row=2, col=1, value="later"),
        SetCell(row=3, col=2, value=None),
    ]
    sheet = built(bodies)
    assert [["a", "b"], ["later", "new"], ["c"]] == sheet.rows()
    assert fold(bodies) == sheet


def test_the_last_import_replaces_the_previous_snapshot_and_everything_before_it() -> None:
    blobs = InMemoryBlobStore()
    previous = build(blobs, LOG, 0, 1, EMPTY_SNAPSHOT_ROOT, [SetCell(row=9, col=9, value="old")])
    bodies: list[Body] = [
        SetCell(row=1, col=1, value="gone"),
        Import(source="s3://a.csv", format="csv", rows=[["h1", "h2"], [], [None, 3]]),
        InsertRow(after=0, values=["top"]),
        Import(source="s3://b.csv", format="csv", rows=[["x"], [], [1, None, 2]]),
        DeleteRow(row=2),
    ]
    sheet = built(bodies, previous=previous, blobs=blobs, entry=7)
    assert [["x"], [1, None, 2]] == sheet.rows()
    assert fold(bodies) == sheet


def test_an_import_does_not_read_the_previous_snapshot() -> None:
    bodies = [Import(source="k", format="csv", rows=[["a"]])]
    assert fold(bodies) == built(bodies, previous="snapshots/never/written/root")


def test_rows_pushed_past_the_last_row_fall_off_as_in_the_fold() -> None:
    bodies: list[Body] = [
        SetCell(row=MAX_ROW, col=1, value="last"),
        SetCell(row=MAX_ROW - 1, col=1, value="before"),
        InsertRow(after=0, values=["top"]),
        DeleteRow(row=1),
    ]
    sheet = built(bodies)
    assert None is sheet.get(MAX_ROW, 1)
    assert "before" == sheet.get(MAX_ROW - 1, 1)
    assert fold(bodies) == sheet


def test_log_level_bodies_change_nothing() -> None:
    bodies: list[Body] = [SetCell(row=1, col=1, value=1), SnapshotMarker(), EndSegment(next_segment=1)]
    assert fold(bodies) == built(bodies)


def test_a_body_the_fold_refuses_is_refused_before_anything_is_written() -> None:
    blobs = InMemoryBlobStore()
    bad: list[Body] = [SetCell(row=1, col=1, value=1), SetCell(row=MAX_ROW + 1, col=1, value=1),
                       Import(source="k", format="csv", rows=[])]
    with pytest.raises(InvalidCellRefError):
        fold(bad)
    with pytest.raises(InvalidCellRefError):
        build(blobs, LOG, 0, 1, EMPTY_SNAPSHOT_ROOT, bad)
    assert [] == list(blobs.keys(""))


@pytest.mark.parametrize(
    "body",
    [
        SetCell(row=1, col=MAX_COL + 1, value=1),
        SetRange(row=MAX_ROW, col=1, values=[[1], [2]]),
        SetRange(row=1, col=MAX_COL, values=[[1, 2]]),
        InsertRow(after=MAX_ROW),
        InsertRow(after=-1),
        DeleteRow(row=0),
    ],
)
def test_every_out_of_range_body_fails_as_in_the_fold(body: Body) -> None:
    with pytest.raises(InvalidCellRefError):
        fold([body])
    with pytest.raises(InvalidCellRefError):
        SnapshotBuild(InMemoryBlobStore(), LOG, 0, 1, EMPTY_SNAPSHOT_ROOT, [body])


class Future(SetCell, frozen=True):
    """A body type from newer code: not registered with the model."""

    TYPE = EntryType.SET_CELL


def test_an_unknown_body_type_stops_the_build() -> None:
    class Unknown(Body, frozen=True):
        pass

    with pytest.raises(UnknownEntryTypeError):
        fold([Unknown()])
    with pytest.raises(UnknownEntryTypeError):
        SnapshotBuild(InMemoryBlobStore(), LOG, 0, 1, EMPTY_SNAPSHOT_ROOT, [Unknown()])
    with pytest.raises(TypeError):
        SnapshotBuild(InMemoryBlobStore(), LOG, 0, 1, EMPTY_SNAPSHOT_ROOT, ["not a body"])  # type: ignore[list-item]


def test_a_subclass_of_a_known_body_folds_as_its_base() -> None:
    bodies = [Future(row=2, col=2, value="f")]
    assert fold(bodies) == built(bodies)


# ------------------------------------------------------------------------------------------ row maps


def naive(ops: Sequence[tuple[str, int]], row: int) -> int | None:
    """Push one row through the operations one by one, as the fold moves it."""
    current: int | None = row
    for kind, at in ops:
        if current is None:
            return None
        if kind == "ins":
            current = current if current <= at else (None if current >= MAX_ROW else current + 1)
        else:
            current = current if current < at else (None if current == at else current - 1)
    return current


row_ops = st.lists(
    st.one_of(
        st.tuples(st.just("ins"), st.one_of(st.integers(0, 20), st.integers(MAX_ROW - 3, MAX_ROW - 1))),
        st.tuples(st.just("del"), st.one_of(st.integers(1, 20), st.integers(MAX_ROW - 3, MAX_ROW))),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(ops=row_ops, split=st.integers(0, 25))
def test_composed_row_maps_move_rows_as_the_operations_do_one_by_one(ops: list[tuple[str, int]], split: int) -> None:
    def compose(part: Sequence[tuple[str, int]]) -> RowMap:
        mapping = RowMap.identity()
        for kind, at in part:
            mapping = mapping.then(RowMap.insert(at) if kind == "ins" else RowMap.delete(at))
        return mapping

    forward = compose(ops)
    backward = RowMap.identity()
    for kind, at in reversed(ops):
        backward = (RowMap.insert(at) if kind == "ins" else RowMap.delete(at)).then(backward)
    assert forward == backward
    assert forward == compose(ops[:split]).then(compose(ops[split:]))
    assert len(forward) <= 2 * len(ops) + 2
    for row in [*range(1, 50), *range(MAX_ROW - 30, MAX_ROW + 1)]:
        assert naive(ops, row) == forward(row), row


# ------------------------------------------------------------------------------------------ the property

VALUES: list[CellValue] = [None, None, 0, 1, -2, 1.0, 2.5, True, False, "", "1", "text"]
values = st.sampled_from(VALUES)
cols = st.integers(1, 5)
small_rows = st.integers(1, 12)
bottom_rows = st.integers(MAX_ROW - 2, MAX_ROW)


def log_bodies(rows: st.SearchStrategy[int], afters: st.SearchStrategy[int]) -> st.SearchStrategy[list[Body]]:
    """Random document bodies over a small grid (so rows collide and move), Snapshot markers in between."""

    @st.composite
    def set_ranges(draw: st.DrawFn) -> SetRange:
        grid = draw(st.lists(st.lists(values, max_size=4), max_size=4))
        top = min(draw(rows), MAX_ROW - len(grid) + 1)
        return SetRange(row=top, col=draw(cols), values=grid)

    return st.lists(
        st.one_of(
            st.builds(SetCell, row=rows, col=cols, value=values),
            set_ranges(),
            st.builds(InsertRow, after=afters, values=st.lists(values, max_size=4)),
            st.builds(DeleteRow, row=rows),
            st.builds(Import, source=st.just("k"), format=st.just("csv"),
                      rows=st.lists(st.lists(values, max_size=4), max_size=6)),
            st.just(SnapshotMarker()),
        ),
        max_size=40,
    )


def check_snapshot_chain(bodies: list[Body], data: st.DataObject) -> None:
    """Split the log at random points into snapshot intervals; build each snapshot from the previous one, with
    small chunks and a resume at a random chunk, and compare each with the fold of every body before it."""
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(bodies)), max_size=5), label="cuts")) | {len(bodies)})
    chunk_cells = data.draw(st.integers(1, 10), label="chunk_cells")
    blobs = InMemoryBlobStore()
    previous, done, reference = EMPTY_SNAPSHOT_ROOT, 0, Sheet()
    for cut in cuts:
        interval = bodies[done:cut]
        snapshot = SnapshotBuild(blobs, LOG, 0, cut + 1, previous, interval, chunk_cells=chunk_cells)
        chunks = list(snapshot.chunks())
        start = data.draw(st.integers(0, len(chunks)), label="resume at")
        assert chunks[start:] == list(snapshot.chunks(start))
        previous = snapshot.run()
        reference = fold(interval, reference)
        assert reference == read_sheet(blobs, previous)
        done = cut
    assert fold(bodies) == reference  # the chained reference is the fold of the whole log


@settings(max_examples=300, deadline=None)
@given(bodies=log_bodies(small_rows, st.integers(0, 12)), data=st.data())
def test_snapshot_after_snapshot_reads_back_as_the_fold_of_every_body_before_it(
    bodies: list[Body], data: st.DataObject
) -> None:
    check_snapshot_chain(bodies, data)


@settings(max_examples=40, deadline=None)  # the model holds a million-slot list here: fewer, slower examples
@given(
    bodies=log_bodies(
        st.one_of(small_rows, bottom_rows),
        st.one_of(st.integers(0, 12), st.integers(MAX_ROW - 3, MAX_ROW - 1)),
    ),
    data=st.data(),
)
def test_snapshots_agree_with_the_fold_where_inserts_push_rows_off_the_bottom(
    bodies: list[Body], data: st.DataObject
) -> None:
    check_snapshot_chain(bodies, data)


# ------------------------------------------------------------------------------------------ resume, repeat


def a_build(blobs: InMemoryBlobStore, *, entry: int = 20, chunk_cells: int = 3) -> SnapshotBuild:
    """A previous snapshot of 40 rows, then edits, inserts and deletes across it."""
    previous = write_rows(blobs, LOG, 0, 10, [(r, [(1, r), (2, f"r{r}")]) for r in range(1, 41)], chunk_cells=4)
    bodies: list[Body] = [
        SetCell(row=3, col=3, value="c"),
        InsertRow(after=10, values=["ins", None, 1.5]),
        DeleteRow(row=20),
        SetRange(row=30, col=1, values=[[None, None], ["a"], [], [True]]),
        SetCell(row=45, col=1, value="tail"),
        DeleteRow(row=1),
    ]
    return SnapshotBuild(blobs, LOG, 0, entry, previous, bodies, chunk_cells=chunk_cells)


def test_a_resumed_build_yields_the_same_chunks_and_root_from_every_start() -> None:
    snapshot = a_build(InMemoryBlobStore())
    full = list(snapshot.chunks())
    root = snapshot.root()
    assert [c.index for c in full] == list(range(len(full)))
    assert len(full) > 10
    for start in range(len(full) + 2):
        resumed = a_build(InMemoryBlobStore())
        assert full[start:] == list(resumed.chunks(start))
        assert root == resumed.root()


def test_a_build_interrupted_and_resumed_from_its_checkpoint_completes_the_same_snapshot() -> None:
    blobs = InMemoryBlobStore()
    checkpoint = 0

    def crash_after_four(chunk: Chunk) -> None:
        nonlocal checkpoint
        checkpoint = chunk.index + 1
        if checkpoint == 4:
            raise KeyboardInterrupt  # the worker dies right after checkpointing chunk 3

    with pytest.raises(KeyboardInterrupt):
        a_build(blobs).run(on_chunk=crash_after_four)
    assert 4 == checkpoint
    root = a_build(blobs).run(start=checkpoint)
    reference = InMemoryBlobStore()
    assert root == a_build(reference).run()
    assert {k: reference.get(k) for k in reference.keys("")} == {k: blobs.get(k) for k in blobs.keys("")}


def test_a_repeated_build_writes_the_same_keys_and_bytes_and_leaves_no_orphans() -> None:
    blobs = InMemoryBlobStore()
    root = a_build(blobs).run()
    first = {k: blobs.get(k) for k in blobs.keys("snapshots/")}
    assert root == a_build(blobs).run()
    assert first == {k: blobs.get(k) for k in blobs.keys("snapshots/")}
    prefix = f"snapshots/{LOG}/0/20/"
    assert set(blobs.keys(prefix)) == snapshot_keys(blobs, root)


def test_chunks_unpack_as_index_key_data() -> None:
    index, key, data = next(iter(a_build(InMemoryBlobStore()).chunks()))
    assert (0, chunk_key(LOG, 0, 20, 0)) == (index, key)
    assert isinstance(data, bytes)


def test_the_root_is_known_only_after_the_stream_is_exhausted() -> None:
    snapshot = a_build(InMemoryBlobStore())
    assert f"snapshots/{LOG}/0/20/root" == snapshot.root_key
    stream = snapshot.chunks()
    next(stream)
    with pytest.raises(RuntimeError, match="exhausted"):
        snapshot.root()
    list(stream)
    assert snapshot.root_key == snapshot.root()[0]


# ------------------------------------------------------------------------------------------ bounded memory


class CountingBlobStore(InMemoryBlobStore):
    """Counts the chunk reads, to see when the builder reads its input."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def get(self, key: str) -> bytes:
        self.reads.append(key)
        return super().get(key)


def test_the_build_streams_reading_the_previous_snapshot_one_chunk_at_a_time() -> None:
    blobs = CountingBlobStore()
    previous = write_rows(blobs, LOG, 0, 1, ((r, [(1, r)]) for r in range(1, 1001)), chunk_cells=10)  # 100 chunks
    snapshot = SnapshotBuild(blobs, LOG, 0, 2, previous, [InsertRow(after=500, values=["x"])], chunk_cells=10)
    stream: Iterator[Chunk] = snapshot.chunks()
    next(stream)
    assert 2 == len(blobs.reads)  # the root and the first chunk: nothing more is read to emit the first chunk
    rest = list(stream)
    assert 101 == len(blobs.reads)
    assert 100 == len(rest)  # 1001 cells in chunks of 10
    assert fold([InsertRow(after=500, values=["x"])], read_sheet(blobs, previous)) == read_sheet(
        blobs, snapshot.run()
    )


def test_a_missing_previous_root_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="root key"):
        SnapshotBuild(InMemoryBlobStore(), LOG, 0, 1, "", [])
