"""The snapshot object format: deterministic keys, chunk and root objects, and streaming readers.

A snapshot of the sheet at Snapshot entry ``(log, segment, entry)`` is the fold of every entry before that entry
(DESIGN §6 I3). In the bucket (DESIGN §2) it is:

* chunks ``snapshots/{log}/{segment}/{entry}/{chunk id}``: msgpack, each a band of consecutive non-empty rows
  in row order, ``(row, [(col, value), ...])`` with columns ascending. A chunk closes once it holds at least
  ``chunk_cells`` cells, so a single very wide row may exceed that. The chunk id is UUIDv5 of
  ``"{log}/{segment}/{entry}/{index}"``: a repeated build writes exactly the same keys, leaving no orphans (I6).
* the root ``snapshots/{log}/{segment}/{entry}/root``, written last: format version, what it is a snapshot of,
  the sheet's dimensions and cell count, and the chunk references in row order.

:data:`~seglog_core.schema.EMPTY_SNAPSHOT_ROOT` (``"empty"``) in place of a root key means the empty sheet, with
no object at all (a new log's first snapshot).

Readers stream a chunk at a time (:func:`iter_rows`); :func:`read_sheet` materializes the sheet for loads.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import msgspec

from seglog_core.ports import BlobStore
from seglog_core.schema import EMPTY_SNAPSHOT_ROOT, CellValue
from seglog_core.sheet.model import SHEET_FORMAT_VERSION, Sheet
from seglog_core.snapshot.errors import SnapshotFormatError, SnapshotVersionError

#: Version of the root and chunk layout this code writes and reads; readers refuse a newer one.
SNAPSHOT_FORMAT_VERSION: Final = 1

#: Namespace of the chunk ids (UUIDv5). Fixed forever: changing it changes every key a rebuild writes.
CHUNK_NAMESPACE: Final = uuid.UUID("6f1c2a4e-3b7d-5e08-9a41-c2d5e7f80b13")

#: Cells per chunk: about 0.2-0.5 MB of msgpack for typical values, a few MB decoded.
DEFAULT_CHUNK_CELLS: Final = 20_000

#: The cells of one row: ``(col, value)`` pairs, columns ascending, values never ``None``.
RowCells = list[tuple[int, CellValue]]


# --------------------------------------------------------------------------------------------- keys


def snapshot_prefix(log_id: uuid.UUID, segment: int, entry: int) -> str:
    """``snapshots/{log}/{segment}/{entry}``: every object of this snapshot lives under it (plus ``/``)."""
    return f"snapshots/{log_id}/{segment}/{entry}"


def chunk_id(log_id: uuid.UUID, segment: int, entry: int, index: int) -> uuid.UUID:
    """The id of chunk ``index`` of a snapshot: UUIDv5, so the same chunk always gets the same key."""
    return uuid.uuid5(CHUNK_NAMESPACE, f"{log_id}/{segment}/{entry}/{index}")


def chunk_key(log_id: uuid.UUID, segment: int, entry: int, index: int) -> str:
    """The object key of chunk ``index``: ``snapshots/{log}/{segment}/{entry}/{chunk id}``."""
    return f"{snapshot_prefix(log_id, segment, entry)}/{chunk_id(log_id, segment, entry, index)}"


def root_key(log_id: uuid.UUID, segment: int, entry: int) -> str:
    """The object key of the root: ``snapshots/{log}/{segment}/{entry}/root``."""
    return f"{snapshot_prefix(log_id, segment, entry)}/root"


# --------------------------------------------------------------------------------------------- objects


class ChunkRow(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """One non-empty row of a chunk: its number and its cells, ``(col, value)`` with columns ascending."""

    row: int
    cells: RowCells


class SnapshotChunk(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A chunk object: a band of consecutive non-empty rows, in row order."""

    rows: list[ChunkRow]


class ChunkRef(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """The root's reference to a chunk: its key, the first and last row it holds, its cell count."""

    key: str
    first_row: int
    last_row: int
    cells: int


class SnapshotRoot(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """The root object. ``rows``/``cols`` are the last row and column holding a value (0 when empty).

    Array-encoded with ``version`` first, so any version can read the version; fields are only ever appended.
    """

    version: int
    log: uuid.UUID
    segment: int
    entry: int
    rows: int
    cols: int
    cells: int
    chunks: list[ChunkRef]

    @property
    def key(self) -> str:
        """This root's own object key."""
        return root_key(self.log, self.segment, self.entry)


class _RootHead(msgspec.Struct, array_like=True):
    """The first field of any root version: read alone, it decides whether this code may read the rest."""

    version: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """One output chunk of a build: write ``data`` under ``key``; ``index`` counts from 0 in row order.

    Unpacks as ``index, key, data``.
    """

    index: int
    key: str
    data: bytes

    def __iter__(self) -> Iterator[int | str | bytes]:
        return iter((self.index, self.key, self.data))


_ENCODER: Final = msgspec.msgpack.Encoder()
_CHUNK_DECODER: Final = msgspec.msgpack.Decoder(SnapshotChunk)
_ROOT_DECODER: Final = msgspec.msgpack.Decoder(SnapshotRoot)
_HEAD_DECODER: Final = msgspec.msgpack.Decoder(_RootHead)


def encode_chunk(rows: list[ChunkRow]) -> bytes:
    """The bytes of a chunk object holding ``rows``."""
    return _ENCODER.encode(SnapshotChunk(rows=rows))


def decode_chunk(data: bytes, key: str = "<chunk>") -> SnapshotChunk:
    """Read a chunk object.

    Raises:
        SnapshotFormatError: the bytes are not a chunk.
    """
    try:
        return _CHUNK_DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise SnapshotFormatError(key, f"not a snapshot chunk ({exc})") from exc


def encode_root(root: SnapshotRoot) -> bytes:
    """The bytes of a root object."""
    return _ENCODER.encode(root)


def decode_root(data: bytes, key: str = "<root>") -> SnapshotRoot:
    """Read a root object, refusing a format version newer than :data:`SNAPSHOT_FORMAT_VERSION`.

    Raises:
        SnapshotVersionError: written by newer code.
        SnapshotFormatError: the bytes are not a snapshot root.
    """
    try:
        version = _HEAD_DECODER.decode(data).version
    except msgspec.DecodeError as exc:
        raise SnapshotFormatError(key, f"not a snapshot root ({exc})") from exc
    if version > SNAPSHOT_FORMAT_VERSION:
        raise SnapshotVersionError(key, version, SNAPSHOT_FORMAT_VERSION)
    try:
        return _ROOT_DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise SnapshotFormatError(key, f"not a snapshot root of version {version} ({exc})") from exc


# --------------------------------------------------------------------------------------------- reading


def load_root(blobs: BlobStore, root: str) -> SnapshotRoot | None:
    """The root object under key ``root``; ``None`` for :data:`~seglog_core.schema.EMPTY_SNAPSHOT_ROOT`.

    Raises:
        BlobNotFoundError: no object under that key.
        SnapshotFormatError: the object is not a readable root (SnapshotVersionError: newer format).
    """
    if root == EMPTY_SNAPSHOT_ROOT:
        return None
    return decode_root(blobs.get(root), root)


def _resolve(blobs: BlobStore, root: str | SnapshotRoot) -> SnapshotRoot | None:
    return root if isinstance(root, SnapshotRoot) else load_root(blobs, root)


def iter_row_cells(blobs: BlobStore, root: str | SnapshotRoot) -> Iterator[tuple[int, RowCells]]:
    """Yield ``(row, cells)`` of every non-empty row in row order, reading one chunk at a time.

    ``cells`` is the decoded ``(col, value)`` list, columns ascending; callers must not modify it. Each chunk is
    checked against its reference in the root, so a mixed-up or truncated chunk fails loudly.

    Raises:
        BlobNotFoundError: a chunk is missing.
        SnapshotFormatError: a chunk does not match its reference (or the root is unreadable).
    """
    resolved = _resolve(blobs, root)
    if resolved is None:
        return
    last = 0
    for ref in resolved.chunks:
        rows = decode_chunk(blobs.get(ref.key), ref.key).rows
        cells = 0
        for chunk_row in rows:
            if chunk_row.row <= last:
                raise SnapshotFormatError(ref.key, f"row {chunk_row.row} comes after row {last}")
            last = chunk_row.row
            cells += len(chunk_row.cells)
        if not rows or rows[0].row != ref.first_row or last != ref.last_row or cells != ref.cells:
            raise SnapshotFormatError(
                ref.key,
                f"the chunk does not match its reference (rows {ref.first_row}..{ref.last_row}, {ref.cells} cells)",
            )
        for chunk_row in rows:
            yield chunk_row.row, chunk_row.cells


def iter_rows(blobs: BlobStore, root: str | SnapshotRoot) -> Iterator[tuple[int, dict[int, CellValue]]]:
    """Yield ``(row, {col: value})`` of every non-empty row in row order, holding one chunk at a time.

    ``root`` is a root key (or :data:`~seglog_core.schema.EMPTY_SNAPSHOT_ROOT`) or a loaded root.

    Raises:
        BlobNotFoundError: the root or a chunk is missing.
        SnapshotFormatError: an object is unreadable; SnapshotVersionError if of a newer format.
    """
    for row, cells in iter_row_cells(blobs, root):
        yield row, dict(cells)


def read_sheet(blobs: BlobStore, root: str | SnapshotRoot) -> Sheet:
    """The whole sheet of a snapshot (for loads, which hold the document anyway).

    Raises:
        BlobNotFoundError: the root or a chunk is missing.
        SnapshotFormatError: an object is unreadable; SnapshotVersionError if of a newer format.
    """
    rows = {row: dict(cells) for row, cells in iter_row_cells(blobs, root)}
    # Sheet.from_bytes is the model's public constructor from sparse rows (its versioned wire format).
    return Sheet.from_bytes(_ENCODER.encode((SHEET_FORMAT_VERSION, rows)))


def snapshot_keys(blobs: BlobStore, root: str | SnapshotRoot) -> set[str]:
    """Every object key of a snapshot: its chunks and its root (empty for the empty snapshot).

    Raises:
        BlobNotFoundError: no root object.
        SnapshotFormatError: the root is unreadable.
    """
    resolved = _resolve(blobs, root)
    if resolved is None:
        return set()
    return {resolved.key, *(ref.key for ref in resolved.chunks)}


def stray_keys(blobs: BlobStore, root: str | SnapshotRoot) -> list[str]:
    """Objects under a completed snapshot's prefix that its root does not reference.

    A build repeated with the same inputs writes the same keys, so there are none; they appear only when a
    resumed build ran with a different ``chunk_cells`` (fewer chunks than before). Delete them after
    completing the snapshot to keep DESIGN §6 I6.
    """
    resolved = _resolve(blobs, root)
    if resolved is None:
        return []
    keep = snapshot_keys(blobs, resolved)
    prefix = snapshot_prefix(resolved.log, resolved.segment, resolved.entry) + "/"
    return [key for key in blobs.keys(prefix) if key not in keep]
