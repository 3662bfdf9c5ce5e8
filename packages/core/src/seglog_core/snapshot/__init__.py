"""Snapshots: the object format in the bucket and the bounded-memory, resumable builder (DESIGN §2, §5 step 5).

* :mod:`~seglog_core.snapshot.format` — deterministic keys, chunk and root objects, streaming readers.
* :mod:`~seglog_core.snapshot.build` — :class:`SnapshotBuild`: previous snapshot + bodies -> chunks + root.
* :mod:`~seglog_core.snapshot.writer` — :class:`ChunkWriter`: rows in order -> chunks + root.
* :mod:`~seglog_core.snapshot.rowmap` — :class:`RowMap`: row inserts and deletes composed into one shift map.
"""

from __future__ import annotations

from seglog_core.sheet.validate import check_foldable
from seglog_core.snapshot.build import SnapshotBuild, build
from seglog_core.snapshot.errors import SnapshotFormatError, SnapshotVersionError
from seglog_core.snapshot.format import (
    CHUNK_NAMESPACE,
    DEFAULT_CHUNK_CELLS,
    SNAPSHOT_FORMAT_VERSION,
    Chunk,
    ChunkRef,
    ChunkRow,
    RowCells,
    SnapshotChunk,
    SnapshotRoot,
    chunk_id,
    chunk_key,
    decode_chunk,
    decode_root,
    encode_chunk,
    encode_root,
    iter_row_cells,
    iter_rows,
    load_root,
    read_sheet,
    root_key,
    snapshot_keys,
    snapshot_prefix,
    stray_keys,
)
from seglog_core.snapshot.rowmap import RowMap
from seglog_core.snapshot.writer import ChunkWriter, write_rows

__all__ = [
    "CHUNK_NAMESPACE",
    "DEFAULT_CHUNK_CELLS",
    "SNAPSHOT_FORMAT_VERSION",
    "Chunk",
    "ChunkRef",
    "ChunkRow",
    "ChunkWriter",
    "RowCells",
    "RowMap",
    "SnapshotBuild",
    "SnapshotChunk",
    "SnapshotFormatError",
    "SnapshotRoot",
    "SnapshotVersionError",
    "build",
    "check_foldable",
    "chunk_id",
    "chunk_key",
    "decode_chunk",
    "decode_root",
    "encode_chunk",
    "encode_root",
    "iter_row_cells",
    "iter_rows",
    "load_root",
    "read_sheet",
    "root_key",
    "snapshot_keys",
    "snapshot_prefix",
    "stray_keys",
    "write_rows",
]
