"""Measure what a load, a sync and a snapshot's fold pay for their reads: read request units (RRU), strongly
consistent (before issue 35) and eventually consistent, read again only when short (seglog_core.reads).

Run: uv run --no-sync python -m bench.bench_reads

The real adapter (DynamoDBLogStore) on the simulator's DynamoDB, with template.yaml's tables: every call asks
ReturnConsumedCapacity=TOTAL and the answer's units are counted by the store's Meter, as on AWS. The simulator
prices a read as DynamoDB does (seglog_sim.aws.dynamodb_requests.read_units: 1 unit per 4 KB a Query reads,
rounded up per page; half that eventually consistent), and nothing lags here, so "after" is the normal path; a read
that lags pays again for the rest of its segment, once at half price and, lagging twice, once at full.

"Before" runs the same readers on a store that makes every read of entries consistent, as every Query of the
Entries table was. The log: one segment, its Snapshot entry 0 (the empty sheet, complete), then 1,000 SetCell
entries of a short text (the small edits a sheet is made of; the item size is printed).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from typing import Any

from bench.support import Headline, item_size, quiet_logs
from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.items import entry_to_item
from seglog_core.log import EventLog
from seglog_core.memory import InMemoryBlobStore, InMemoryPendingStore
from seglog_core.pipeline.order import Order
from seglog_core.reader import LogReader
from seglog_core.schema import Entry, EntryType, SetCell, encode_body
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient, TableSpec
from seglog_sim.topology import load_topology

ENTRIES = 1_000
SYNCED = 10
TARGET = 10.0


class _Strong:
    """The store as it was: every read of entries strongly consistent."""

    def __init__(self, inner: DynamoDBLogStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def entries(self, log_id: uuid.UUID, segment: int, start: int = 0, end: int | None = None, *,
                page_size: int = 500, consistent: bool = True) -> Iterator[Entry]:
        return self.inner.entries(log_id, segment, start, end, page_size=page_size, consistent=True)


def _store() -> DynamoDBLogStore:
    topology = load_topology()
    ticks = itertools.count(1_700_000_000)
    sim = SimDynamoDB([TableSpec.from_properties(name, props) for name, props in topology.tables.items()],
                      clock=lambda: float(next(ticks)))
    return DynamoDBLogStore(SimDynamoDBClient.of(sim), segments_table=topology.segments_table,
                            entries_table=topology.entries_table)


def _entry(log_id: uuid.UUID, num: int) -> Entry:
    body = SetCell(row=num, col=1, value=f"item {num}")
    return Entry(log_id=log_id, segment=0, num=num, created=1_700_000_000, type=body.TYPE, version=body.VERSION,
                 body=encode_body(body), entry_id=uuid.uuid4())


def _append(store: DynamoDBLogStore, log_id: uuid.UUID, first: int, count: int) -> None:
    for num in range(first, first + count):
        store.put_entry(_entry(log_id, num))


def _units(store: DynamoDBLogStore, run: Any) -> float:
    store.meter.reset()
    run()
    return sum(v["rcu"] for v in store.meter.snapshot().values())


def measure() -> dict[str, tuple[float, float]]:
    """RRU (before, after) per load of 1,000 entries, per sync of 10 and of none, per fold of 1,000."""
    store = _store()
    log_id = EventLog(store=store, blobs=InMemoryBlobStore()).create()
    _append(store, log_id, 1, ENTRIES)
    figures: dict[str, tuple[float, float]] = {}
    readers = {"before": LogReader(store=_Strong(store)), "after": LogReader(store=store)}  # type: ignore[arg-type]
    loads = {k: _units(store, lambda r=r: r.load(log_id)) for k, r in readers.items()}
    figures["load"] = (loads["before"], loads["after"])
    views = {k: r.load(log_id) for k, r in readers.items()}
    empty = {k: _units(store, lambda k=k: readers[k].update(views[k])) for k in readers}
    figures["empty sync"] = (empty["before"], empty["after"])
    _append(store, log_id, ENTRIES + 1, SYNCED)
    synced = {k: _units(store, lambda k=k: readers[k].update(views[k])) for k in readers}
    figures["sync"] = (synced["before"], synced["after"])
    ours = ENTRIES + SYNCED + 1
    store.put_entry(Entry(log_id=log_id, segment=0, num=ours, created=1_700_000_000, type=EntryType.SNAPSHOT))
    snapshot = store.get_entry(log_id, 0, ours)
    assert snapshot is not None
    folds = {k: _units(store, lambda s=s: Order(store=s, pending=InMemoryPendingStore(), wait=0.0,  # type: ignore[arg-type]
                                                sleep=lambda _: None).plan(snapshot))
             for k, s in {"before": _Strong(store), "after": store}.items()}
    figures["fold"] = (folds["before"], folds["after"])
    return figures


def headlines(quick: bool = False) -> list[Headline]:
    """The same measure in a quick run: it takes well under a second."""
    figures = measure()
    size = item_size(entry_to_item(_entry(uuid.uuid4(), ENTRIES // 2)))
    print(f"\n## reads at their price (bench_reads: RRU, simulated DynamoDB, {ENTRIES:,} entries of ~{size} bytes)")
    print(f"{'read':<42}{'consistent':>12}{'eventual':>10}")
    for name, label in (("load", f"load of {ENTRIES:,} entries (+ the segments Query)"),
                        ("sync", f"sync of {SYNCED} new entries"), ("empty sync", "sync with nothing new"),
                        ("fold", f"fold plan of {ENTRIES + SYNCED:,} entries")):
        before, after = figures[name]
        print(f"{label:<42}{before:>12.1f}{after:>10.1f}")
    (load_before, load_after), (sync_before, sync_after) = figures["load"], figures["sync"]
    empty_before, empty_after = figures["empty sync"]
    return [
        Headline(name="RRU per 1,000-entry load",
                 figure=f"{load_after:g} RRU (strongly consistent: {load_before:g})",
                 target=f"<= {TARGET:g}", met=load_after <= TARGET),
        Headline(name="RRU per sync",
                 figure=f"{sync_after:g} RRU for {SYNCED} new entries (strongly consistent: {sync_before:g}); "
                        f"{empty_after:g} with nothing new (strongly consistent: {empty_before:g})",
                 target="less than strongly consistent", met=sync_after < sync_before),
    ]


def main() -> None:
    quiet_logs()
    for headline in headlines():
        print(headline.line())


if __name__ == "__main__":
    main()
