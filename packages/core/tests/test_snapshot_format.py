"""The snapshot object format: deterministic keys, chunking, round trips, and refusing what it cannot read."""

from __future__ import annotations

import uuid

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_core.errors import BlobNotFoundError
from seglog_core.memory import InMemoryBlobStore
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, CellValue, SetCell
from seglog_core.sheet import MAX_COL, MAX_ROW, Sheet, fold
from seglog_core.snapshot import (
    CHUNK_NAMESPACE,
    SNAPSHOT_FORMAT_VERSION,
    ChunkRef,
    ChunkRow,
    ChunkWriter,
    RowCells,
    SnapshotFormatError,
    SnapshotRoot,
    SnapshotVersionError,
    chunk_id,
    chunk_key,
    decode_chunk,
    decode_root,
    encode_chunk,
    encode_root,
    iter_rows,
    load_root,
    read_sheet,
    root_key,
    snapshot_keys,
    snapshot_prefix,
    stray_keys,
    write_rows,
)

LOG = uuid.UUID("0b5f6f0e-8a3c-4f7e-9d2b-1c4a5e6f7081")


def sheet_rows(sheet: Sheet) -> list[tuple[int, RowCells]]:
    """The rows of a model sheet as a snapshot holds them."""
    rows: dict[int, RowCells] = {}
    for row, col, value in sheet.cells():
        rows.setdefault(row, []).append((col, value))
    return sorted(rows.items())


def sheet_of(cells: dict[tuple[int, int], CellValue]) -> Sheet:
    return fold(SetCell(row=r, col=c, value=v) for (r, c), v in cells.items())


# ------------------------------------------------------------------------------------------ keys


def test_chunk_id_is_uuid5_of_log_segment_entry_and_index() -> None:
    expected = uuid.uuid5(CHUNK_NAMESPACE, f"{LOG}/2/17/3")
    assert expected == chunk_id(LOG, 2, 17, 3)
    assert 5 == chunk_id(LOG, 2, 17, 3).version


def test_chunk_ids_differ_in_every_coordinate_and_repeat_exactly() -> None:
    ids = {chunk_id(LOG, s, e, i) for s in range(3) for e in range(3) for i in range(3)}
    assert 27 == len(ids)
    assert chunk_id(LOG, 1, 2, 3) == chunk_id(uuid.UUID(str(LOG)), 1, 2, 3)
    assert chunk_id(LOG, 0, 0, 0) != chunk_id(uuid.uuid4(), 0, 0, 0)


def test_keys_live_under_the_snapshot_prefix() -> None:
    assert f"snapshots/{LOG}/1/42" == snapshot_prefix(LOG, 1, 42)
    assert f"snapshots/{LOG}/1/42/{chunk_id(LOG, 1, 42, 0)}" == chunk_key(LOG, 1, 42, 0)
    assert f"snapshots/{LOG}/1/42/root" == root_key(LOG, 1, 42)


# ------------------------------------------------------------------------------------------ round trips


def test_rows_round_trip_through_iter_rows_and_read_sheet() -> None:
    sheet = sheet_of({(1, 1): "a", (1, 3): 1, (2, 2): 1.0, (5, 1): True, (5, 2): "1", (9, MAX_COL): -7})
    blobs = InMemoryBlobStore()
    root = write_rows(blobs, LOG, 0, 3, sheet_rows(sheet), chunk_cells=2)
    assert [(1, {1: "a", 3: 1}), (2, {2: 1.0}), (5, {1: True, 2: "1"}), (9, {MAX_COL: -7})] == list(
        iter_rows(blobs, root)
    )
    assert sheet == read_sheet(blobs, root)


def test_value_types_survive_the_round_trip() -> None:
    blobs = InMemoryBlobStore()
    root = write_rows(blobs, LOG, 0, 1, [(1, [(1, 1), (2, 1.0), (3, True), (4, "1")])])
    back = read_sheet(blobs, root)
    assert [int, float, bool, str] == [type(back.get(1, c)) for c in range(1, 5)]


@settings(max_examples=80, deadline=None)
@given(
    cells=st.dictionaries(
        st.tuples(st.integers(1, 40), st.integers(1, 8)),
        st.one_of(st.integers(-5, 5), st.booleans(), st.text(max_size=3), st.floats(allow_nan=False)),
        max_size=60,
    ),
    chunk_cells=st.integers(1, 12),
)
def test_any_sheet_round_trips_at_any_chunk_size(cells: dict[tuple[int, int], CellValue], chunk_cells: int) -> None:
    sheet = sheet_of(cells)
    blobs = InMemoryBlobStore()
    root = write_rows(blobs, LOG, 0, 1, sheet_rows(sheet), chunk_cells=chunk_cells)
    assert sheet == read_sheet(blobs, root)
    loaded = load_root(blobs, root)
    assert loaded is not None
    assert (sheet.dimensions, sheet.cell_count) == ((loaded.rows, loaded.cols), loaded.cells)


def test_a_chunk_closes_at_chunk_cells_and_a_wide_row_may_exceed_it() -> None:
    writer = ChunkWriter(LOG, 0, 1, chunk_cells=4)
    assert None is writer.add(1, [(1, "a"), (2, "b")])
    closed = writer.add(2, [(c, c) for c in range(1, 10)])  # 11 cells: over the limit, one row stays whole
    assert closed is not None
    assert (0, chunk_key(LOG, 0, 1, 0)) == (closed.index, closed.key)
    assert [1, 2] == [r.row for r in decode_chunk(closed.data).rows]
    assert None is writer.add(7, [(1, "x")])
    last = writer.finish()
    assert last is not None
    assert 1 == last.index
    root = decode_root(writer.root()[1])
    assert [(1, 2, 11), (7, 7, 1)] == [(r.first_row, r.last_row, r.cells) for r in root.chunks]
    assert (7, 9, 12) == (root.rows, root.cols, root.cells)


def test_the_writer_refuses_rows_out_of_order_or_empty() -> None:
    writer = ChunkWriter(LOG, 0, 1)
    writer.add(3, [(1, 1)])
    with pytest.raises(ValueError, match="ascend"):
        writer.add(3, [(1, 1)])
    with pytest.raises(ValueError, match="no cells"):
        writer.add(4, [])
    with pytest.raises(RuntimeError, match="finish"):
        writer.root()


def test_the_empty_root_means_the_empty_sheet_without_any_object() -> None:
    blobs = InMemoryBlobStore()
    assert Sheet() == read_sheet(blobs, EMPTY_SNAPSHOT_ROOT)
    assert [] == list(iter_rows(blobs, EMPTY_SNAPSHOT_ROOT))
    assert set() == snapshot_keys(blobs, EMPTY_SNAPSHOT_ROOT)
    assert None is load_root(blobs, EMPTY_SNAPSHOT_ROOT)


def test_an_empty_sheet_written_as_a_snapshot_has_a_root_and_no_chunks() -> None:
    blobs = InMemoryBlobStore()
    root = write_rows(blobs, LOG, 0, 1, [])
    assert {root} == set(blobs.keys("snapshots/"))
    assert Sheet() == read_sheet(blobs, root)


def test_snapshot_keys_are_exactly_the_objects_written() -> None:
    blobs = InMemoryBlobStore()
    root = write_rows(blobs, LOG, 1, 5, [(r, [(1, r)]) for r in range(1, 11)], chunk_cells=3)
    keys = snapshot_keys(blobs, root)
    assert set(blobs.keys("snapshots/")) == keys
    assert 5 == len(keys)  # 4 chunks (3+3+3+1 cells) and the root
    assert root in keys


def test_stray_keys_are_objects_under_the_prefix_the_root_does_not_reference() -> None:
    blobs = InMemoryBlobStore()
    write_rows(blobs, LOG, 0, 2, [(r, [(1, r)]) for r in range(1, 11)], chunk_cells=2)  # 5 chunks
    root = write_rows(blobs, LOG, 0, 2, [(r, [(1, r)]) for r in range(1, 11)], chunk_cells=5)  # 2 chunks
    assert sorted(chunk_key(LOG, 0, 2, i) for i in (2, 3, 4)) == sorted(stray_keys(blobs, root))
    assert [] == stray_keys(blobs, EMPTY_SNAPSHOT_ROOT)


# ------------------------------------------------------------------------------------------ refusals


def _root(version: int) -> SnapshotRoot:
    return SnapshotRoot(version=version, log=LOG, segment=0, entry=1, rows=0, cols=0, cells=0, chunks=[])


def test_a_root_of_a_newer_format_version_is_refused_clearly() -> None:
    blobs = InMemoryBlobStore()
    key = root_key(LOG, 0, 1)
    # A future root may have a different layout after the version: only the version must be readable.
    blobs.put(key, msgspec.msgpack.encode([SNAPSHOT_FORMAT_VERSION + 1, "something", {"new": "layout"}]))
    with pytest.raises(SnapshotVersionError, match="upgrade seglog") as info:
        read_sheet(blobs, key)
    assert (SNAPSHOT_FORMAT_VERSION + 1, SNAPSHOT_FORMAT_VERSION, key) == (
        info.value.version,
        info.value.known,
        info.value.key,
    )
    with pytest.raises(SnapshotVersionError):
        snapshot_keys(blobs, key)


def test_a_root_of_the_current_version_reads() -> None:
    assert _root(SNAPSHOT_FORMAT_VERSION) == decode_root(encode_root(_root(SNAPSHOT_FORMAT_VERSION)))


@pytest.mark.parametrize("data", [b"", b"\xc1", msgspec.msgpack.encode({"a": 1}), msgspec.msgpack.encode([1, 2])])
def test_bytes_that_are_not_a_root_are_a_format_error(data: bytes) -> None:
    blobs = InMemoryBlobStore()
    blobs.put("snapshots/x/root", data)
    with pytest.raises(SnapshotFormatError, match="cannot be read"):
        read_sheet(blobs, "snapshots/x/root")


def test_a_missing_root_or_chunk_is_blob_not_found() -> None:
    blobs = InMemoryBlobStore()
    with pytest.raises(BlobNotFoundError):
        read_sheet(blobs, root_key(LOG, 0, 1))
    root = write_rows(blobs, LOG, 0, 1, [(1, [(1, 1)]), (2, [(1, 2)])], chunk_cells=1)
    blobs.delete(chunk_key(LOG, 0, 1, 1))
    with pytest.raises(BlobNotFoundError):
        read_sheet(blobs, root)


def test_a_chunk_that_does_not_match_its_reference_is_refused() -> None:
    blobs = InMemoryBlobStore()
    root = write_rows(blobs, LOG, 0, 1, [(1, [(1, 1)]), (2, [(1, 2)])], chunk_cells=1)
    blobs.put(chunk_key(LOG, 0, 1, 1), encode_chunk([ChunkRow(row=2, cells=[(1, 2), (2, 3)])]))
    with pytest.raises(SnapshotFormatError, match="does not match"):
        read_sheet(blobs, root)
    blobs.put(chunk_key(LOG, 0, 1, 1), b"garbage")
    with pytest.raises(SnapshotFormatError, match="not a snapshot chunk"):
        read_sheet(blobs, root)


def test_chunks_out_of_row_order_are_refused() -> None:
    blobs = InMemoryBlobStore()
    key = root_key(LOG, 0, 1)
    refs = [ChunkRef(key="c0", first_row=5, last_row=5, cells=1), ChunkRef(key="c1", first_row=2, last_row=2, cells=1)]
    blobs.put("c0", encode_chunk([ChunkRow(row=5, cells=[(1, 1)])]))
    blobs.put("c1", encode_chunk([ChunkRow(row=2, cells=[(1, 1)])]))
    blobs.put(key, encode_root(SnapshotRoot(version=1, log=LOG, segment=0, entry=1, rows=5, cols=1, cells=2,
                                            chunks=refs)))
    with pytest.raises(SnapshotFormatError, match="comes after"):
        read_sheet(blobs, key)


def test_the_model_limits_hold_for_a_read_sheet() -> None:
    blobs = InMemoryBlobStore()
    root = write_rows(blobs, LOG, 0, 1, [(MAX_ROW, [(MAX_COL, "corner")])])
    assert "corner" == read_sheet(blobs, root).get(MAX_ROW, MAX_COL)
