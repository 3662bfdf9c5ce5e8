"""Why retention pays a delete per retired entry instead of letting DynamoDB's TTL expire it for free (issue 35;
seglog_core.retention, "Why no TTL"). The counterexample runs the real adapter on the simulated DynamoDB with TTL
modelled (seglog_sim.aws.dynamodb_ttl): entries written with a TTL at append time, however far, and an idle sheet.
"""

from __future__ import annotations

from typing import Any

from conftest import sim_tables
from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_core.log import EventLog
from seglog_core.reader import LogReader
from seglog_core.retention import RetentionPolicy, retain_due
from seglog_core.retry import RetryPolicy
from seglog_core.schema import EntryType, SetCell
from seglog_sim.aws.dynamodb import SimDynamoDB, SimDynamoDBClient
from seglog_sim.aws.dynamodb_ttl import MAX_DELAY, TimeToLive
from seglog_sim.aws.s3 import SimS3, SimS3Client

FAST = RetryPolicy(max_attempts=8, base=0.0, cap=0.0)
#: A far horizon: a year, fifty times RetentionMinAgeSeconds' default.
HORIZON = 365 * 86_400
START = 1_700_000_000.0


class TtlAtAppend:
    """The sim's client, writing ``X`` = ``C`` + HORIZON into every Entries item but Snapshot entries and
    EndSegments (they never expire): the "TTL at append time with a far horizon" of issue 35."""

    def __init__(self, client: SimDynamoDBClient) -> None:
        self._client = client

    @staticmethod
    def _stamp(item: dict[str, Any]) -> dict[str, Any]:
        if "G" in item and item.get("T", {}).get("S") not in (EntryType.SNAPSHOT, EntryType.END_SEGMENT):
            return {**item, "X": {"N": str(int(item["C"]["N"]) + HORIZON)}}
        return item

    def put_item(self, **params: Any) -> Any:
        return self._client.put_item(**{**params, "Item": self._stamp(params["Item"])})

    def transact_write_items(self, **params: Any) -> Any:
        items = [{"Put": {**t["Put"], "Item": self._stamp(t["Put"]["Item"])}} if "Put" in t else t
                 for t in params["TransactItems"]]
        return self._client.transact_write_items(**{**params, "TransactItems": items})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def world() -> tuple[DynamoDBLogStore, S3BlobStore, TimeToLive, list[float]]:
    now = [START]
    sim = SimDynamoDB(sim_tables(), clock=lambda: now[0])
    store = DynamoDBLogStore(TtlAtAppend(SimDynamoDBClient.of(sim)), segments_table="Segments",
                             entries_table="Entries")
    s3 = SimS3(clock=lambda: now[0])
    s3.create_bucket("ttl")
    return store, S3BlobStore(SimS3Client.of(s3), bucket="ttl"), TimeToLive(sim, "Entries", "X", seed=7), now


def test_a_ttl_written_at_append_expires_an_idle_sheets_acknowledged_tail_though_retention_runs() -> None:
    """An idle sheet keeps its latest segments, and its entries after the last completed snapshot are its only
    copy. Nothing written at append knows the sheet will go idle, and retention never touches its two latest
    segments: a year on (however far the horizon), TTL deletes the acknowledged edits and a load no longer
    sees them (I2). Only a write to each such entry before it expires could keep it: 1 WRU, a delete's price."""
    store, blobs, ttl, now = world()
    log = EventLog(store=store, blobs=blobs, retry=FAST, clock=lambda: now[0])
    log_id = log.create()
    for value in range(3):
        log.append(log_id, SetCell(row=1, col=1, value=value))  # acknowledged
    assert 3 == len(LogReader(store=store).load(log_id).entries)

    for day in range(0, 365 + 4):  # the sheet stays idle; the scheduled run goes on every day
        now[0] = START + day * 86_400.0
        retain_due(store, blobs, RetentionPolicy(keep=2, min_age=7 * 86_400), stop=lambda: False,
                   clock=lambda: now[0])
        ttl.sweep()

    assert now[0] > START + HORIZON + MAX_DELAY
    assert [] == LogReader(store=store).load(log_id).entries  # the three acknowledged edits are gone
    assert 3 == len(ttl.deleted)


def test_an_expired_item_stays_readable_until_ttl_deletes_it() -> None:
    """Past its expiry an entry is still returned by reads until the background deletion (Developer Guide,
    "Working with expired items"): a reader cannot tell "kept" from "about to vanish" without filtering."""
    store, blobs, ttl, now = world()
    log = EventLog(store=store, blobs=blobs, retry=FAST, clock=lambda: now[0])
    log_id = log.create()
    log.append(log_id, SetCell(row=1, col=1, value=1))
    key = {"G": {"B": log_id.bytes + (0).to_bytes(8, "big")}, "N": {"N": "1"}}
    deletes_at = ttl.deletes_at(key, START + HORIZON)

    now[0] = START + HORIZON + 1
    ttl.sweep()
    expired_but_there = len(LogReader(store=store).load(log_id).entries)
    now[0] = deletes_at + 1
    ttl.sweep()

    assert (1, 0) == (expired_but_there, len(LogReader(store=store).load(log_id).entries))
    assert START + HORIZON < deletes_at <= START + HORIZON + MAX_DELAY
