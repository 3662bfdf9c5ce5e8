"""Entry bodies on their way into the log: the size limits, where a large body lives, and a body prepared for a
write (DESIGN §3, large entries).

A large body is written before the entry id is looked up, so its object must never be one a landed entry references
(an entry id names one entry; a reuse with another body is refused): its key holds the body's digest
(``entries/{log}/{entry id}/{sha256}``) and it is written with a conditional put (S3 If-None-Match). Two tries of
one id with different bodies write different objects; a try with the same body finds the object
there and changes nothing, not even its tag::

    try A (body a)                      bucket                         try B (same id, body b)
      put_if_absent .../K/h(a) ----->  K/h(a) discardable
                                       K/h(b) discardable  <--------  put_if_absent .../K/h(b)
      put #7 K E=.../K/h(a)  -------> log #7          (router untags K/h(a))
                                                                       read: #7 holds K, E is not K/h(b)
                                                                       -> EntryIdReusedError(#7); K/h(b) expires
      a late retry of A: put_if_absent .../K/h(a) -> exists: nothing written, the kept tag stays off
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from seglog_core import errors
from seglog_core.ports import BlobStore
from seglog_core.retry import RetryPolicy, call_with_retries
from seglog_core.schema import LOG_LEVEL_TYPES, Body, Entry, encode_body

#: Bodies above this size go to S3 (seed 000: the read-cost break-even point).
DEFAULT_LARGE_THRESHOLD = 16 * 1024
#: DynamoDB's item limit is 400 KB; an inline body must leave room for the other attributes.
MAX_INLINE_BODY = 350 * 1024
#: The largest body accepted at all (it goes to S3).
MAX_BODY = 64 * 1024 * 1024


def external_body_key(log_id: uuid.UUID, entry_id: uuid.UUID, data: bytes) -> str:
    """Where a large body lives in the bucket: ``entries/{log}/{entry id}/{sha256 of the body}`` (DESIGN §2 as
    amended by issue 18). The digest makes the key name the bytes: a try of the entry id with another body can
    never write over the object a landed entry references, and "same key" means "same body"."""
    return f"entries/{log_id}/{entry_id}/{hashlib.sha256(data).hexdigest()}"


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """A document body checked, encoded and, when large, already in the bucket: ready to be written at a num."""

    log_id: uuid.UUID
    entry_id: uuid.UUID
    body: Body
    data: bytes
    external: str | None

    def same_as(self, stored: Entry, blobs: BlobStore) -> bool:
        """Whether ``stored`` (the entry that holds this entry id) is this entry: same type, body version and body
        bytes, wherever either body lives. A content-addressed key is compared without a read; a key of another
        layout (an entry stored before issue 18) costs one GetObject."""
        if (stored.type, stored.version) != (self.body.TYPE, self.body.VERSION):
            return False
        if stored.body is not None or stored.external is None:
            return stored.body == self.data
        if stored.external == external_body_key(self.log_id, self.entry_id, self.data):
            return True
        if stored.external.startswith(f"entries/{self.log_id}/{self.entry_id}/"):
            return False  # a content-addressed key of other bytes
        return blobs.get(stored.external) == self.data

    def at(self, segment: int, num: int, created: int) -> Entry:
        return Entry(log_id=self.log_id, segment=segment, num=num, created=created, type=self.body.TYPE,
                     version=self.body.VERSION, body=None if self.external else self.data, external=self.external,
                     entry_id=self.entry_id)


def prepare(log_id: uuid.UUID, body: Body, entry_id: uuid.UUID, *, blobs: BlobStore, retry: RetryPolicy,
            validate: Callable[[Body], None], large_threshold: int = DEFAULT_LARGE_THRESHOLD) -> Prepared:
    """Check a document body, encode it, and put it in the bucket first when it is large.

    Raises:
        InvalidInputError: a log-level body, or one the document model refuses; ValueTooLargeError.
    """
    if body.TYPE in LOG_LEVEL_TYPES:
        raise errors.InvalidInputError(f"{body.TYPE} entries are written by the log itself, not appended")
    validate(body)
    data = encode_body(body)
    external = store_large_body(log_id, entry_id, data, blobs=blobs, retry=retry, large_threshold=large_threshold)
    return Prepared(log_id=log_id, entry_id=entry_id, body=body, data=data, external=external)


def store_large_body(log_id: uuid.UUID, entry_id: uuid.UUID, data: bytes, *, blobs: BlobStore, retry: RetryPolicy,
                     large_threshold: int = DEFAULT_LARGE_THRESHOLD) -> str | None:
    """Put a body over the threshold in the bucket first (tagged discardable); its key, or None if inline."""
    if len(data) > MAX_BODY:
        raise errors.ValueTooLargeError("the entry body", len(data), MAX_BODY)
    if len(data) <= min(large_threshold, MAX_INLINE_BODY):
        return None
    key = external_body_key(log_id, entry_id, data)
    # Written before the entry and tagged discardable: if the append never lands, the lifecycle rule
    # expires the object; once it lands, the stream router removes the tag (DESIGN §3, §4). The write is
    # conditional (created, never replaced), so nothing ever changes an object once written:
    # - a try with another body for this entry id has another key (the digest): the landed body stays;
    # - a retry of an append that already landed and was routed finds its object kept and leaves it so
    #   (a plain put would tag it discardable again, with no new stream record to remove the tag, and the
    #   body would expire under its entry): no repair after a deduplicated append is needed;
    # - a retry while the first try is still running finds the object discardable and leaves it so: the
    #   entry's INSERT, whichever try writes it, is what the router untags it for.
    call_with_retries(retry,
                      lambda: blobs.put_if_absent(key, data, discardable=True),
                      what="put large body", retry_unknown=True)  # conditional: a repeat is refused
    return key
