"""In-memory implementations of the ports, for fast unit tests.

They pass the same contract suites as the DynamoDB and S3 adapters (tests/contract/), so a test that passes
here exercises the same behaviour. They are strongly consistent; tests inject staleness with wrappers.
"""

from __future__ import annotations

import bisect
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from seglog_core import errors
from seglog_core.ports import QueueMessage
from seglog_core.schema import SNAPSHOT_JOB_ENCODER, Entry, EntryType, PendingSnapshot, Segment, SnapshotJob


class InMemoryLogStore:
    """The Segments and Entries tables in dictionaries, guarded by one lock (transactions are atomic)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._segments: dict[uuid.UUID, dict[int, Segment]] = {}
        self._entries: dict[tuple[uuid.UUID, int], dict[int, Entry]] = {}
        #: Sorted nums per segment, for ordered range reads.
        self._nums: dict[tuple[uuid.UUID, int], list[int]] = {}
        #: Segments due for a retention look (DynamoDBLogStore's sparse index Due: its ``U``).
        self._due: set[tuple[uuid.UUID, int]] = set()

    # --------------------------------------------------------------------------------- helpers

    def _entry_exists(self, entry: Entry) -> Entry | None:
        return self._entries.get((entry.log_id, entry.segment), {}).get(entry.num)

    def _insert(self, entry: Entry) -> None:
        key = (entry.log_id, entry.segment)
        self._entries.setdefault(key, {})[entry.num] = entry
        bisect.insort(self._nums.setdefault(key, []), entry.num)

    def _transact(self, segment: Segment, entries: list[tuple[int, Entry]], order: int) -> None:
        """Write a segment and entries atomically, each conditional on absence; ``order`` is where the segment
        sits among the transaction's items (for the per-item cancellation reasons)."""
        with self._lock:
            reasons: list[str | None] = [None] * (len(entries) + 1)
            if segment.num in self._segments.get(segment.log_id, {}):
                reasons[order] = "ConditionalCheckFailed"
            for index, entry in entries:
                if self._entry_exists(entry) is not None:
                    reasons[index] = "ConditionalCheckFailed"
            if any(reasons):
                raise errors.TransactionCancelledError(reasons)
            self._segments.setdefault(segment.log_id, {})[segment.num] = segment
            for _, entry in entries:
                self._insert(entry)

    # --------------------------------------------------------------------------------- LogStore

    def create_log(self, segment: Segment, first: Entry) -> None:
        self._transact(segment, [(1, first)], order=0)

    def latest_segments(self, log_id: uuid.UUID, limit: int = 2, *, consistent: bool = False) -> list[Segment]:
        with self._lock:
            segs = self._segments.get(log_id, {})
            return [segs[n] for n in sorted(segs, reverse=True)[:limit]]

    def segments(self, log_id: uuid.UUID) -> Iterator[Segment]:
        with self._lock:
            segs = self._segments.get(log_id, {})
            items = [segs[n] for n in sorted(segs)]
        yield from items

    def log_ids(self) -> Iterator[uuid.UUID]:
        with self._lock:
            ids = [log_id for log_id, segs in self._segments.items() if segs]
        yield from ids

    def latest_entry(self, log_id: uuid.UUID, segment: int) -> Entry | None:
        with self._lock:
            nums = self._nums.get((log_id, segment))
            return self._entries[(log_id, segment)][nums[-1]] if nums else None

    def put_entry(self, entry: Entry) -> None:
        with self._lock:
            existing = self._entry_exists(entry)
            if existing is not None:
                raise errors.ItemExistsError(f"entry {entry.segment}/{entry.num}", existing)
            self._insert(entry)

    def get_entry(self, log_id: uuid.UUID, segment: int, num: int) -> Entry | None:
        with self._lock:
            return self._entries.get((log_id, segment), {}).get(num)

    def entries(
        self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *, page_size: int = 500,
        consistent: bool = True,
    ) -> Iterator[Entry]:
        # Every read is current here, consistent or not: an eventually consistent read may answer less, so this is
        # one of its answers (tests make reads lag with a wrapper, tests/test_reads.py).
        key = (log_id, segment)
        while True:
            with self._lock:
                nums = self._nums.get(key, [])
                lo = bisect.bisect_left(nums, start)
                hi = len(nums) if end is None else bisect.bisect_right(nums, end)
                page = [self._entries[key][n] for n in nums[lo : min(hi, lo + page_size)]]
            yield from page
            if len(page) < page_size:
                return
            start = page[-1].num + 1

    def new_segment(self, end: Entry, segment: Segment, first: Entry) -> None:
        with self._lock:
            self._transact(segment, [(0, end), (2, first)], order=1)
            self._due.add((segment.log_id, segment.num))

    def due_segments(self, closed_before: int) -> Iterator[tuple[uuid.UUID, int]]:
        with self._lock:
            due = sorted((self._segments[log_id][num].created, log_id.bytes, num, log_id)
                         for log_id, num in self._due if num in self._segments.get(log_id, {}))
        yield from ((log_id, num) for created, _, num, log_id in due if created <= closed_before)

    def clear_due(self, log_id: uuid.UUID, segment: int) -> None:
        with self._lock:
            seg = self._segments.get(log_id, {}).get(segment)
            if seg is None or not seg.retiring:  # a claimed segment stays due (DynamoDBLogStore's condition)
                self._due.discard((log_id, segment))

    def complete_snapshot(self, log_id: uuid.UUID, segment: int, num: int, root: str) -> None:
        self.set_snapshot_root(log_id, segment, num, root)
        self.advance_snapshot(log_id, segment, num)

    def set_snapshot_root(self, log_id: uuid.UUID, segment: int, num: int, root: str) -> None:
        with self._lock:
            entry = self.get_entry(log_id, segment, num)
            if entry is None or entry.type is not EntryType.SNAPSHOT:
                raise errors.InvalidInputError(f"entry {segment}/{num} of log {log_id} is not a Snapshot entry")
            self._entries[(log_id, segment)][num] = msgspec.structs.replace(entry, snapshot_root=root)

    def advance_snapshot(self, log_id: uuid.UUID, segment: int, num: int) -> None:
        with self._lock:
            seg = self._segments.get(log_id, {}).get(segment)
            if seg is not None and (seg.last_snapshot is None or seg.last_snapshot < num):
                self._segments[log_id][segment] = msgspec.structs.replace(seg, last_snapshot=num)

    def delete_segment(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                       retired: int | None = None) -> int:
        key = (log_id, segment)
        count = 0
        # A page at a time, as the DynamoDB adapter deletes (a reader between two pages sees a part gone).
        for entry in list(self.entries(log_id, segment)):
            if entry.type is EntryType.END_SEGMENT:
                continue
            with self._lock:
                self._entries[key].pop(entry.num)
                self._nums[key].remove(entry.num)
            count += 1
        with self._lock:
            segs = self._segments.get(log_id, {})
            if segment in segs:
                mark = {"archive": archive} if archive is not None else {
                    "retired": int(time.time()) if retired is None else retired}
                segs[segment] = msgspec.structs.replace(segs[segment], **mark, retiring=False)
            return count

    def mark_retiring(self, log_id: uuid.UUID, segment: int, archive: str | None = None, *,
                      retired: int | None = None) -> bool:
        with self._lock:
            seg = self._segments.get(log_id, {}).get(segment)
            if seg is None or (seg.retired if archive is not None else seg.archive) is not None:
                return False  # gone, or claimed by the other form (DynamoDBLogStore's condition)
            mark = {"archive": archive} if archive is not None else {
                "retired": int(time.time()) if retired is None else retired}
            self._segments[log_id][segment] = msgspec.structs.replace(seg, **mark, retiring=True)
            self._due.add((log_id, segment))  # the claim marks its segment due (DynamoDBLogStore.mark_retiring)
            return True


class InMemoryBlobStore:
    """The bucket in a dictionary, with the discardable tag kept beside each object."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, tuple[bytes, bool]] = {}

    def put(self, key: str, data: bytes, *, discardable: bool = False, content_type: str | None = None) -> None:
        with self._lock:
            self._objects[key] = (bytes(data), discardable)

    def put_if_absent(self, key: str, data: bytes, *, discardable: bool = False) -> bool:
        with self._lock:
            if key in self._objects:
                return False
            self._objects[key] = (bytes(data), discardable)
            return True

    def get(self, key: str) -> bytes:
        with self._lock:
            if key not in self._objects:
                raise errors.BlobNotFoundError(key)
            return self._objects[key][0]

    def is_discardable(self, key: str) -> bool:
        with self._lock:
            if key not in self._objects:
                raise errors.BlobNotFoundError(key)
            return self._objects[key][1]

    def keep(self, key: str) -> None:
        with self._lock:
            if key not in self._objects:
                raise errors.BlobNotFoundError(key)
            self._objects[key] = (self._objects[key][0], False)

    def delete(self, key: str) -> None:
        with self._lock:
            self._objects.pop(key, None)

    def keys(self, prefix: str) -> Iterator[str]:
        with self._lock:
            found = sorted(k for k in self._objects if k.startswith(prefix))
        yield from found


class InMemoryPendingStore:
    """The PendingSnapshots table in a dictionary; each conditional write is atomic under one lock.

    With ``log_store``, :meth:`create` refuses an item whose Snapshot entry is complete, as the DynamoDB adapter's
    transaction does (checked under this store's lock, not the log store's: enough for tests)."""

    def __init__(self, log_store: InMemoryLogStore | None = None) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[uuid.UUID, int, int], PendingSnapshot] = {}
        self._log_store = log_store

    def _key(self, log_id: uuid.UUID, segment: int, entry: int) -> tuple[uuid.UUID, int, int]:
        return (log_id, segment, entry)

    def _must(self, key: tuple[uuid.UUID, int, int]) -> PendingSnapshot:
        item = self._items.get(key)
        if item is None:
            raise errors.ItemExistsError(f"pending snapshot {key[1]}/{key[2]} (gone)")
        return item

    def get(self, log_id: uuid.UUID, segment: int, entry: int) -> PendingSnapshot | None:
        with self._lock:
            return self._items.get(self._key(log_id, segment, entry))

    def create(self, item: PendingSnapshot) -> None:
        key = self._key(item.log_id, item.segment, item.entry)
        with self._lock:
            if key in self._items:
                raise errors.ItemExistsError(f"pending snapshot {item.segment}/{item.entry}")
            if self._log_store is not None:
                entry = self._log_store.get_entry(item.log_id, item.segment, item.entry)
                if entry is not None and entry.snapshot_root is not None:
                    raise errors.SnapshotCompleteError(f"snapshot {item.segment}/{item.entry} (complete)")
            self._items[key] = item

    def set_claimer(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, increment: int,
                    now: int) -> None:
        key = self._key(log_id, segment, entry)
        with self._lock:
            item = self._must(key)
            if item.claimer is not None or item.increment != increment:
                raise errors.ItemExistsError(f"pending snapshot {segment}/{entry} claimer")
            self._items[key] = msgspec.structs.replace(item, claimer=claimer, modified=now)

    def defer(self, log_id: uuid.UUID, segment: int, entry: int, *, now: int, blocked: str | None = None) -> int:
        key = self._key(log_id, segment, entry)
        with self._lock:
            item = self._must(key)
            self._items[key] = item = msgspec.structs.replace(item, retries=item.retries + 1, modified=now,
                                                              blocked=blocked)
            return item.retries

    def take_over(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, previous: str,
                  increment: int, now: int, takeover_after: int) -> bool:
        key = self._key(log_id, segment, entry)
        with self._lock:
            item = self._items.get(key)
            if (item is None or item.claimer != previous or item.increment != increment
                    or not item.modified < now - takeover_after):
                return False
            self._items[key] = msgspec.structs.replace(item, claimer=claimer, active=False, modified=now)
            return True

    def seize(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, previous: str, increment: int,
              now: int, takeover_after: int, initial_state: bytes | None = None) -> int | None:
        key = self._key(log_id, segment, entry)
        with self._lock:
            item = self._items.get(key)
            if (item is None or item.claimer != previous or item.increment != increment
                    or (item.active and not item.modified < now - takeover_after)):
                return None
            self._items[key] = item = msgspec.structs.replace(
                item, claimer=claimer, active=True, increment=item.increment + 1, modified=now,
                checkpoint=item.checkpoint if item.checkpoint is not None else initial_state)
            return item.increment

    def claim(self, log_id: uuid.UUID, segment: int, entry: int, claimer: str, *, now: int,
              takeover_after: int, initial_state: bytes | None = None) -> int | None:
        key = self._key(log_id, segment, entry)
        with self._lock:
            item = self._items.get(key)
            if item is None or item.claimer != claimer:
                return None
            if item.active and not item.modified < now - takeover_after:  # DynamoDB's "M < :stale"
                return None
            self._items[key] = item = msgspec.structs.replace(
                item, active=True, increment=item.increment + 1, modified=now,
                checkpoint=item.checkpoint if item.checkpoint is not None else initial_state)
            return item.increment

    def checkpoint(self, log_id: uuid.UUID, segment: int, entry: int, *, increment: int, state: bytes,
                   now: int) -> bool:
        key = self._key(log_id, segment, entry)
        with self._lock:
            item = self._items.get(key)
            if item is None or item.increment != increment:
                return False
            self._items[key] = msgspec.structs.replace(item, checkpoint=state, modified=now)
            return True

    def release(self, log_id: uuid.UUID, segment: int, entry: int, *, increment: int, now: int) -> bool:
        key = self._key(log_id, segment, entry)
        with self._lock:
            item = self._items.get(key)
            if item is None or item.increment != increment:
                return False
            self._items[key] = msgspec.structs.replace(item, active=False, modified=now)
            return True

    def delete(self, log_id: uuid.UUID, segment: int, entry: int) -> None:
        with self._lock:
            self._items.pop(self._key(log_id, segment, entry), None)

    def for_log(self, log_id: uuid.UUID, *, before: tuple[int, int] | None = None) -> list[PendingSnapshot]:
        with self._lock:
            return [self._items[k] for k in sorted(k for k in self._items
                                                   if k[0] == log_id and (before is None or k[1:] < before))]

    def scan(self) -> Iterator[PendingSnapshot]:
        with self._lock:
            items = list(self._items.values())
        yield from items


class InMemoryJobQueue:
    """A queue with SQS's visibility semantics, driven by an injected clock (for unit tests).

    receive() hides messages for the visibility timeout and counts receives; delete() needs the latest
    receipt handle, as SQS does (AWS SQS Developer Guide, "Amazon SQS visibility timeout").
    """

    def __init__(self, *, visibility_timeout: int = 30, clock: Callable[[], float] | None = None) -> None:
        self._lock = threading.Lock()
        self.visibility_timeout = visibility_timeout
        self.clock = clock or time.time
        #: message id -> [body, visible_at, receive_count, receipt handle]
        self._messages: dict[str, list[Any]] = {}

    def send(self, job: SnapshotJob) -> str:
        message_id = str(uuid.uuid4())
        with self._lock:
            self._messages[message_id] = [SNAPSHOT_JOB_ENCODER.encode(job).decode(), 0.0, 0, None]
        return message_id

    def receive(self, max_messages: int = 1) -> list[QueueMessage]:
        now = self.clock()
        out: list[QueueMessage] = []
        with self._lock:
            for message_id, slot in self._messages.items():
                if len(out) == max_messages:
                    break
                if slot[1] <= now:
                    slot[1] = now + self.visibility_timeout
                    slot[2] += 1
                    slot[3] = str(uuid.uuid4())
                    out.append(QueueMessage(message_id=message_id, receipt_handle=slot[3], body=slot[0],
                                            receive_count=slot[2]))
        return out

    def delete(self, message: QueueMessage) -> None:
        with self._lock:
            slot = self._messages.get(message.message_id)
            if slot is not None and slot[3] == message.receipt_handle:
                del self._messages[message.message_id]

    def change_visibility(self, message: QueueMessage, seconds: int) -> None:
        with self._lock:
            slot = self._messages.get(message.message_id)
            if slot is not None and slot[3] == message.receipt_handle:
                slot[1] = self.clock() + seconds

    def depth(self) -> int:
        with self._lock:
            return len(self._messages)
