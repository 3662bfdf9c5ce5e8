"""Building a snapshot from the previous one and the entries in between, in memory bounded by chunk size.

The snapshot at Snapshot entry E is the fold of every entry before E (DESIGN §6 I3). The worker has the
previous completed snapshot P and the document bodies between P and E (bounded in number; DESIGN §5 step 5),
and must not hold the whole sheet. A build therefore works in two passes:

1. Plan (in memory, O(bodies)): walk the bodies backwards composing the row operations into a
   :class:`~seglog_core.snapshot.rowmap.RowMap`. At each cell edit the map composed so far is exactly "where
   this row ends up", so every edit is filed under its final row (an edit of a row deleted later vanishes),
   and the first edit seen for a cell going backwards is the last one in log order: it wins. The last Import
   replaces everything before it, so the plan starts there and its rows, not P, are the base.
2. Stream (O(one input chunk + one output chunk)): read the base row by row in order, move each row through
   the composed map (monotonic, so rows stay in order), merge in the edited rows, and cut the result into
   chunks with :class:`~seglog_core.snapshot.writer.ChunkWriter`.

The output is a pure function of the inputs, so it is resumable from a count alone: "chunks ``0..k-1`` are
written". A resumed stream recomputes the rows but skips building and encoding the chunks before ``k``, and
the root it ends with is byte for byte the root of an uninterrupted build.

Timing of a worker that checkpoints (DESIGN §5 step 5)::

    worker                              bucket                    pending item S
    for chunk in build.chunks(k):
        blobs.put(chunk.key, chunk.data) -> chunk written
        checkpoint(chunk.index + 1) ------------------------------> S = index + 1   (if X still ours)
    key, data = build.root()
    blobs.put(key, data)                -> root written last
    complete: R = key on the entry, S on the segment, ...

A crash between the put and the checkpoint rewrites that chunk on resume: same key, same bytes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence

from seglog_core.ports import BlobStore
from seglog_core.schema import (
    EMPTY_SNAPSHOT_ROOT,
    Body,
    CellValue,
    DeleteRow,
    Import,
    InsertRow,
    SetCell,
    SetRange,
    edits_of,
)
from seglog_core.sheet.validate import check_foldable
from seglog_core.snapshot.format import DEFAULT_CHUNK_CELLS, Chunk, RowCells, iter_row_cells, root_key
from seglog_core.snapshot.rowmap import RowMap
from seglog_core.snapshot.writer import ChunkWriter

#: Edits of one final row, ``col -> value``; a ``None`` value clears the cell.
_Edits = dict[int, CellValue]

def _file_values(edits: _Edits, values: Sequence[CellValue], first_col: int) -> None:
    """File a row's values as edits; cells already filed were written later in the log and win."""
    for col, value in enumerate(values, first_col):
        if col not in edits:
            edits[col] = value


def _import_rows(body: Import) -> Iterator[tuple[int, RowCells]]:
    for row, values in enumerate(body.rows, 1):
        cells: RowCells = [(col, value) for col, value in enumerate(values, 1) if value is not None]
        if cells:
            yield row, cells


def _edited(cells: RowCells, edits: _Edits) -> RowCells:
    """``cells`` with ``edits`` applied (``None`` clears), columns ascending."""
    merged = dict(cells)
    merged.update(edits)
    return [(col, value) for col in sorted(merged) if (value := merged[col]) is not None]


class SnapshotBuild:
    """One snapshot build: the previous snapshot plus the bodies in between, streamed out as chunks.

    Constructing it checks every body (raising what the fold would) and plans the row mapping and the cell
    edits; nothing is read from or written to the bucket until :meth:`chunks` runs.

    Args:
        blobs: the bucket; the previous snapshot is read from it.
        log_id, segment, entry: the Snapshot entry being built.
        previous: the root key of the previous completed snapshot, or ``EMPTY_SNAPSHOT_ROOT``.
        bodies: the decoded bodies of every entry strictly between the previous Snapshot entry and this one,
            in log order (across an EndSegment if the two are in different segments). Log-level bodies
            (Snapshot, EndSegment) may be included; they change nothing.
        chunk_cells: a chunk closes at this many cells. A resumed build must use the same value as the run
            that wrote the chunks it skips (keep it fixed, or record it beside the checkpoint).

    Raises:
        InvalidCellRefError, UnknownEntryTypeError: a body the fold refuses (the snapshot must be deferred).
    """

    def __init__(
        self,
        blobs: BlobStore,
        log_id: uuid.UUID,
        segment: int,
        entry: int,
        previous: str,
        bodies: Sequence[Body],
        *,
        chunk_cells: int = DEFAULT_CHUNK_CELLS,
    ) -> None:
        if chunk_cells < 1:
            raise ValueError(f"chunk_cells must be at least 1, got {chunk_cells}")
        if not previous:
            raise ValueError(f"previous must be a root key or {EMPTY_SNAPSHOT_ROOT!r}, got {previous!r}")
        for body in bodies:
            check_foldable(body)
        # A batch's edits are planned as the single edits they are, in order (all checked above, so all apply).
        bodies = list(edits_of(bodies))
        self.blobs = blobs
        self.log_id, self.segment, self.entry = log_id, segment, entry
        self.previous = previous
        self.chunk_cells = chunk_cells
        self._base_import: Import | None = None
        self._map, self._edits = self._plan(bodies)
        self._root: tuple[str, bytes] | None = None

    @property
    def root_key(self) -> str:
        """The key the root will be written under (known before the build runs)."""
        return root_key(self.log_id, self.segment, self.entry)

    # ------------------------------------------------------------------------------------------ plan

    def _plan(self, bodies: Sequence[Body]) -> tuple[RowMap, dict[int, _Edits]]:
        """Compose the row operations after the last Import, filing each edit under its final row."""
        first = 0
        for index in range(len(bodies) - 1, -1, -1):
            body = bodies[index]
            if isinstance(body, Import):
                self._base_import = body
                first = index + 1
                break
        later = RowMap.identity()  # where a row at the current point of the backward walk ends up
        edits: dict[int, _Edits] = {}
        for index in range(len(bodies) - 1, first - 1, -1):
            body = bodies[index]
            if isinstance(body, SetCell):
                final = later(body.row)
                if final is not None:
                    row_edits = edits.setdefault(final, {})
                    if body.col not in row_edits:
                        row_edits[body.col] = body.value
            elif isinstance(body, SetRange):
                for row, values in enumerate(body.values, body.row):
                    if values and (final := later(row)) is not None:
                        _file_values(edits.setdefault(final, {}), values, body.col)
            elif isinstance(body, InsertRow):
                # The inserted row is new: no base row maps onto it, so its values are its whole content.
                if (final := later(body.after + 1)) is not None:
                    _file_values(edits.setdefault(final, {}), body.values, 1)
                later = RowMap.insert(body.after).then(later)
            elif isinstance(body, DeleteRow):
                later = RowMap.delete(body.row).then(later)
        return later, edits

    # ------------------------------------------------------------------------------------------ stream

    def _base_rows(self) -> Iterator[tuple[int, RowCells]]:
        if self._base_import is not None:
            return _import_rows(self._base_import)
        return iter_row_cells(self.blobs, self.previous)

    def rows(self) -> Iterator[tuple[int, RowCells]]:
        """The snapshot's non-empty rows in order, ``(row, [(col, value), ...])``, streamed from the base.

        Holds one chunk of the previous snapshot at a time. Rows passed through unedited share the decoded
        cell lists: do not modify them.
        """
        edits = self._edits
        edited_rows = sorted(edits)
        n_edited = len(edited_rows)
        next_edit = 0
        move = self._map
        for row, cells in self._base_rows():
            final = move(row)
            if final is None:
                continue
            while next_edit < n_edited and edited_rows[next_edit] < final:
                only = edited_rows[next_edit]
                next_edit += 1
                new = _edited([], edits[only])
                if new:
                    yield only, new
            if next_edit < n_edited and edited_rows[next_edit] == final:
                next_edit += 1
                cells = _edited(cells, edits[final])
                if not cells:
                    continue
            yield final, cells
        for only in edited_rows[next_edit:]:
            new = _edited([], edits[only])
            if new:
                yield only, new

    def chunks(self, start: int = 0) -> Iterator[Chunk]:
        """Yield the output chunks from index ``start`` on, in order; write each, then checkpoint its index + 1.

        Chunks before ``start`` are recomputed (their rows still flow) but neither built nor encoded nor
        yielded. Once the iterator is exhausted, :meth:`root` returns the root. Each call starts afresh and
        yields the same chunks.

        Raises:
            BlobNotFoundError: the previous snapshot (or one of its chunks) is missing.
            SnapshotFormatError: the previous snapshot is unreadable (SnapshotVersionError: newer format).
        """
        writer = ChunkWriter(self.log_id, self.segment, self.entry, chunk_cells=self.chunk_cells, start=start)
        add = writer.add
        for row, cells in self.rows():
            chunk = add(row, cells)
            if chunk is not None:
                yield chunk
        chunk = writer.finish()
        if chunk is not None:
            yield chunk
        self._root = writer.root()

    def root(self) -> tuple[str, bytes]:
        """The root object's ``(key, data)``; write it after every chunk. Only once :meth:`chunks` is exhausted."""
        if self._root is None:
            raise RuntimeError("the root is known once the chunk stream is exhausted: iterate chunks() first")
        return self._root

    def run(self, *, start: int = 0, on_chunk: Callable[[Chunk], None] | None = None) -> str:
        """Write chunks ``start..`` then the root; call ``on_chunk`` after each chunk is written. Returns the
        root key. An exception from ``on_chunk`` (say, a lost claim) stops the build before the next chunk."""
        for chunk in self.chunks(start):
            self.blobs.put(chunk.key, chunk.data)
            if on_chunk is not None:
                on_chunk(chunk)
        key, data = self.root()
        self.blobs.put(key, data)
        return key


def build(
    blobs: BlobStore,
    log_id: uuid.UUID,
    segment: int,
    entry: int,
    previous: str,
    bodies: Sequence[Body],
    *,
    chunk_cells: int = DEFAULT_CHUNK_CELLS,
    start: int = 0,
    on_chunk: Callable[[Chunk], None] | None = None,
) -> str:
    """Build and write the snapshot at ``(log_id, segment, entry)``; see :class:`SnapshotBuild`. Returns the
    root key (to record as ``R`` on the Snapshot entry)."""
    snapshot = SnapshotBuild(blobs, log_id, segment, entry, previous, bodies, chunk_cells=chunk_cells)
    return snapshot.run(start=start, on_chunk=on_chunk)
