"""The batching client in the world (issue 35): its edits reach the log as edits entries through the API handler,
and the check that each acknowledged edit is there once, in its client's order, can fail."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from test_sim_clients import world

from seglog_aws.dynamodb_log_store import DynamoDBLogStore
from seglog_aws.s3_blob_store import S3BlobStore
from seglog_core.memory import InMemoryBlobStore
from seglog_core.schema import Edits, Entry, EntryType, SetCell, encode_body
from seglog_sim import quiet_logs
from seglog_sim.aws.dynamodb import SimDynamoDBClient
from seglog_sim.aws.s3 import SimS3Client
from seglog_sim.batching import batch_client
from seglog_sim.checks import _history_of, bodies_unchanged, edits_in_order
from seglog_sim.phases import Run
from seglog_sim.scenario import Scenario

__all__ = ["world"]  # the fixture, used by name

quiet_logs()
LOG = uuid.UUID(int=9, version=4)


def test_a_batching_clients_edits_land_as_batches_once_each_in_its_order(world: Any) -> None:
    def body(run: Run) -> None:
        run.clients.create(LOG)
        batch_client(run.clients, LOG, 40)

    run, _ = world(body, dataclasses.replace(Scenario(faults=()), vanish_share=0.0, pause_share=0.0))
    ledger = run.clients.ledger
    store = DynamoDBLogStore(SimDynamoDBClient.of(run.ddb), segments_table=run.topology.segments_table,
                             entries_table=run.topology.entries_table)
    blobs = S3BlobStore(SimS3Client.of(run.s3), bucket=run.topology.bucket)
    history = _history_of(store, blobs, LOG)
    [(_, _, acked)] = ledger.batched
    sizes = [len(b.edits) if isinstance(b, Edits) else 1 for b in (ledger.bodies[i] for i, _ in acked)]
    assert 40 == sum(sizes)  # no faults: every edit acknowledged, each in one batch
    assert len(acked) < 40 and max(sizes) > 1  # they did share requests
    assert [] == edits_in_order(LOG, history, blobs, ledger.batched)
    assert [] == bodies_unchanged(history, blobs, ledger)
    stored = [e.entry_id for entries in history for e in entries or () if e.type is not EntryType.SNAPSHOT]
    assert [i for i, _ in acked] == [i for i in stored if i in {i for i, _ in acked}]
    # Edits carry their markers, so the check follows each one (delete-row edits have none).
    marked = [k for _, ks in acked for k in ks]
    assert marked == sorted(marked) and 30 < len(marked)


def _entry(num: int, entry_id: uuid.UUID, *ks: int) -> Entry:
    body = Edits(edits=[SetCell(row=1, col=1, value=f"c#{k}") for k in ks])
    return Entry(log_id=LOG, segment=0, num=num, created=0, type=EntryType.EDITS, body=encode_body(body),
                 entry_id=entry_id)


def test_an_edit_stored_twice_missing_or_out_of_its_clients_order_is_a_violation() -> None:
    a, b, c = (uuid.UUID(int=n, version=4) for n in (1, 2, 3))
    batched: list[Any] = [(LOG, "c", [(a, [0, 1]), (b, [2])])]
    blobs = InMemoryBlobStore()

    def check(*entries: list[Entry] | None) -> list[str]:
        return [v.invariant for v in edits_in_order(LOG, list(entries), blobs, batched)]

    assert [] == check([_entry(1, a, 0, 1), _entry(2, b, 2)])
    assert ["I2"] == check([_entry(1, b, 2), _entry(2, a, 0, 1)])  # out of order
    assert ["I2"] == check([_entry(1, a, 0, 1), _entry(2, c, 0, 1), _entry(3, b, 2)])  # resent under a new id
    assert ["I2"] == check([_entry(1, a, 0), _entry(2, b, 2)])  # an acknowledged edit missing
    # A deleted segment hides what it held: only the batches the log still shows are expected.
    assert [] == check(None, [_entry(2, b, 2)])
