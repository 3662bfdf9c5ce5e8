"""Cutting a stream of rows into snapshot chunks, and the root that references them.

:class:`ChunkWriter` is the output half of a build: it takes rows in order and closes a chunk whenever it holds
``chunk_cells`` cells. Chunk boundaries depend only on the rows and ``chunk_cells``, so a build resumed at
chunk ``start`` skips encoding the chunks before it yet still records their references: the root comes out
byte for byte the same as in an uninterrupted build.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from seglog_core.ports import BlobStore
from seglog_core.snapshot.format import (
    DEFAULT_CHUNK_CELLS,
    SNAPSHOT_FORMAT_VERSION,
    Chunk,
    ChunkRef,
    ChunkRow,
    RowCells,
    SnapshotRoot,
    chunk_key,
    encode_chunk,
    encode_root,
    root_key,
)


class ChunkWriter:
    """Cuts rows into chunks for one snapshot; holds at most one chunk's rows.

    Args:
        log_id, segment, entry: the Snapshot entry this is a snapshot of.
        chunk_cells: a chunk closes once it holds at least this many cells.
        start: chunks with a smaller index are counted (for the root) but neither built nor encoded.
    """

    def __init__(
        self,
        log_id: uuid.UUID,
        segment: int,
        entry: int,
        *,
        chunk_cells: int = DEFAULT_CHUNK_CELLS,
        start: int = 0,
    ) -> None:
        if chunk_cells < 1:
            raise ValueError(f"chunk_cells must be at least 1, got {chunk_cells}")
        if start < 0:
            raise ValueError(f"start must be a chunk index (>= 0), got {start}")
        self.log_id, self.segment, self.entry = log_id, segment, entry
        self.chunk_cells = chunk_cells
        self.start = start
        self._refs: list[ChunkRef] = []
        self._rows: list[ChunkRow] = []
        self._first = 0
        self._last = 0
        self._cells = 0
        self._total_cells = 0
        self._cols = 0
        self._finished = False

    def add(self, row: int, cells: RowCells) -> Chunk | None:
        """Add a non-empty row (rows strictly ascending; ``cells`` by ascending column, no ``None`` values).

        Returns the chunk this row closed, unless its index is before ``start``.
        """
        if self._finished:
            raise RuntimeError("this ChunkWriter is finished: start a new one")
        if row <= self._last:
            raise ValueError(f"rows must ascend: row {row} after row {self._last}")
        if not cells:
            raise ValueError(f"row {row} has no cells: only non-empty rows go into a snapshot")
        if not self._cells:
            self._first = row
        self._last = row
        self._cells += len(cells)
        self._cols = max(self._cols, cells[-1][0])
        if len(self._refs) >= self.start:
            self._rows.append(ChunkRow(row=row, cells=cells))
        if self._cells >= self.chunk_cells:
            return self._close()
        return None

    def finish(self) -> Chunk | None:
        """Close the last, partly filled chunk (if any); after this only :meth:`root` may be called."""
        if self._finished:
            return None
        self._finished = True
        return self._close() if self._cells else None

    def _close(self) -> Chunk | None:
        index = len(self._refs)
        key = chunk_key(self.log_id, self.segment, self.entry, index)
        self._refs.append(ChunkRef(key=key, first_row=self._first, last_row=self._last, cells=self._cells))
        self._total_cells += self._cells
        self._cells = 0
        rows, self._rows = self._rows, []
        if index < self.start:
            return None
        return Chunk(index=index, key=key, data=encode_chunk(rows))

    @property
    def chunk_count(self) -> int:
        """Chunks closed so far (skipped ones included)."""
        return len(self._refs)

    def root(self) -> tuple[str, bytes]:
        """The root's key and bytes. Only after :meth:`finish`."""
        if not self._finished:
            raise RuntimeError("the root is known only once every row is written: call finish() first")
        root = SnapshotRoot(
            version=SNAPSHOT_FORMAT_VERSION,
            log=self.log_id,
            segment=self.segment,
            entry=self.entry,
            rows=self._last,
            cols=self._cols,
            cells=self._total_cells,
            chunks=list(self._refs),
        )
        return root_key(self.log_id, self.segment, self.entry), encode_root(root)


def write_rows(
    blobs: BlobStore,
    log_id: uuid.UUID,
    segment: int,
    entry: int,
    rows: Iterable[tuple[int, RowCells]],
    *,
    chunk_cells: int = DEFAULT_CHUNK_CELLS,
) -> str:
    """Write a snapshot holding ``rows`` (ascending, non-empty, as :class:`ChunkWriter` takes them).

    For rebuild tools and tests that have the rows already; the snapshot worker uses
    :class:`~seglog_core.snapshot.build.SnapshotBuild`. Chunks first, the root last. Returns the root key.
    """
    writer = ChunkWriter(log_id, segment, entry, chunk_cells=chunk_cells)
    for row, cells in rows:
        chunk = writer.add(row, cells)
        if chunk is not None:
            blobs.put(chunk.key, chunk.data)
    chunk = writer.finish()
    if chunk is not None:
        blobs.put(chunk.key, chunk.data)
    key, data = writer.root()
    blobs.put(key, data)
    return key
