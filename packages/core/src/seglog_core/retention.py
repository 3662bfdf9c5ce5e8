"""Retention: delete or archive segments older than a policy allows, never the two latest (DESIGN §3).

An archive is the segment's entries as one msgpack object at ``archive/{log}/{segment}``; the segment item
stays, with ``A`` pointing at it, so history remains readable and verify knows the segment was not lost.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
import structlog

from seglog_core.ports import BlobStore, LogStore
from seglog_core.schema import Entry

log = structlog.get_logger("seglog.retention")

_ARCHIVE_ENCODER = msgspec.msgpack.Encoder()
_ARCHIVE_DECODER = msgspec.msgpack.Decoder(list[Entry])

#: Load reads the two latest segments; they are never removed.
MIN_KEEP = 2


def archive_key(log_id: uuid.UUID, segment: int) -> str:
    return f"archive/{log_id}/{segment}"


def read_archive(blobs: BlobStore, key: str) -> list[Entry]:
    """The entries of an archived segment."""
    return _ARCHIVE_DECODER.decode(blobs.get(key))


@dataclass(frozen=True, kw_only=True)
class RetentionPolicy:
    """Keep the ``keep`` latest segments and any younger than ``min_age`` seconds; archive or delete the rest."""

    keep: int = 3
    min_age: float = 0.0
    archive: bool = True


def apply_retention(store: LogStore, blobs: BlobStore, log_id: uuid.UUID, policy: RetentionPolicy,
                    *, clock: Callable[[], float] = time.time) -> list[int]:
    """Apply a policy to one log; returns the segment nums archived or deleted. Safe to run again."""
    segments = list(store.segments(log_id))
    keep = max(policy.keep, MIN_KEEP)
    done: list[int] = []
    for segment in segments[: max(0, len(segments) - keep)]:
        if segment.archive is not None or clock() - segment.created < policy.min_age:
            continue
        key = None
        if policy.archive:
            key = archive_key(log_id, segment.num)
            # The archive is written (and can be read back) before any entry is deleted: nothing is lost
            # if we crash in between; a second run rewrites the same object.
            blobs.put(key, _ARCHIVE_ENCODER.encode(list(store.entries(log_id, segment.num))))
        count = store.delete_segment(log_id, segment.num, archive=key)
        log.info("segment retired", log_id=str(log_id), segment=segment.num, entries=count, archive=key)
        done.append(segment.num)
    return done
