"""Load time does not grow with log length: a 100k-entry log vs a 1k-entry log, snapshots every 1000 entries.

Target: load(100k) / load(1k) <= 1.3. Both sheets edit the same 100 x 20 region, so the document is the same
size and only the log's length differs. The logs are written straight into the Entries table with
BatchWriteItem (gap-free, a Snapshot entry every 1000 nums), their snapshots built with the same code the
worker runs (seglog_core.pipeline.fallback.rebuild), then loaded with SheetDocument.load, best of several.
"""

from __future__ import annotations

import random
import time
import uuid

from bench.support import Headline, median, standalone
from seglog_aws.backend import Backend
from seglog_aws.items import entry_to_item
from seglog_core.pipeline.fallback import rebuild
from seglog_core.schema import Entry, EntryType, SetCell, SnapshotMarker, encode_body

TARGET = 1.3
EVERY = 1000


def _write_log(backend: Backend, entries: int, rng: random.Random) -> uuid.UUID:
    log_id = backend.event_log().create()
    items = []
    for num in range(1, entries + 1):
        if num % EVERY == 0:
            entry = Entry(log_id=log_id, segment=0, num=num, created=int(time.time()), type=EntryType.SNAPSHOT,
                          body=encode_body(SnapshotMarker()))
        else:
            body = SetCell(row=rng.randint(1, 100), col=rng.randint(1, 20), value=rng.randint(0, 10**6))
            entry = Entry(log_id=log_id, segment=0, num=num, created=int(time.time()), type=EntryType.SET_CELL,
                          body=encode_body(body), entry_id=uuid.uuid4())
        items.append({"PutRequest": {"Item": entry_to_item(entry)}})
    ddb, table = backend.store._ddb, backend.store.entries_table
    for i in range(0, len(items), 25):
        batch = items[i : i + 25]
        while batch:
            batch = ddb.batch_write_item(RequestItems={table: batch}).get("UnprocessedItems", {}).get(table, [])
    return log_id


def _load_seconds(backend: Backend, log_id: uuid.UUID, repeat: int) -> list[float]:
    document = backend.document()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        document.load(log_id)
        times.append(time.perf_counter() - started)
    return times


def run(backend: Backend, quick: bool) -> list[Headline]:
    rng = random.Random(7)
    small_n, large_n = (1_000, 10_000) if quick else (1_000, 100_000)
    results = {}
    for n in (small_n, large_n):
        started = time.monotonic()
        log_id = _write_log(backend, n + EVERY // 2, rng)  # half a snapshot interval after the last snapshot
        written = time.monotonic() - started
        started = time.monotonic()
        report = rebuild(backend.store, backend.blobs, backend.pending, log_id, body_of=backend.document().body)
        built = time.monotonic() - started
        times = _load_seconds(backend, log_id, 5 if quick else 9)
        results[n] = min(times)
        print(f"{n + EVERY // 2:>7} entries: written in {written:.1f}s, {report.snapshots} snapshots built in "
              f"{built:.1f}s, load best {min(times) * 1000:.1f} ms, median {median(times) * 1000:.1f} ms",
              flush=True)
    ratio = results[large_n] / results[small_n]
    return [Headline(name=f"load time {large_n // 1000}k-entry log / {small_n // 1000}k-entry log",
                     figure=f"{ratio:.2f} ({results[large_n] * 1000:.1f} ms vs {results[small_n] * 1000:.1f} ms)",
                     target=f"<= {TARGET}", met=ratio <= TARGET)]


if __name__ == "__main__":
    standalone(__doc__.splitlines()[0], run)
