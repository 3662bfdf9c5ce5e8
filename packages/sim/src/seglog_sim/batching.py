"""The batching client (issue 35): an API client whose edits go through seglog_client's Batcher.

It edits in bursts (several edits within ``batch_window`` of each other, so they share a request), thinks between
bursts, and now and then queues a burst offline and sends the backlog at once (each batch up to the API's limits).
Its Batcher runs on the world's clock without a timer (``poll`` after each edit keeps the window, a ``flush`` ends
a burst). Faults lose answers; the batcher sends the same batch (entry id, since and body) again on its next flush,
and only batches whose answer arrived count as acknowledged. Each edit carries a marker of its own (``client#k``, in
its value: delete-row edits have none), so :func:`seglog_sim.checks.edits_in_order` can follow edits whatever entry
holds them: every acknowledged edit is in the log once, and the client's edits are there in the order it added them
(a batch resent under another entry id would show twice), and the body checks find each batch as sent.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any, cast

import msgspec

from seglog_client import Batcher, Ticket
from seglog_client.entries import Edit as ClientEdit
from seglog_client.errors import ApiError, OutcomeUnknownError, RetriesExhaustedError
from seglog_client.models import START
from seglog_core.schema import MAX_EDITS, Body, Edit, Edits, InsertRow, SetCell, SetRange, edits_of
from seglog_sim.workload import (
    IMPATIENT_PATIENCE,
    IMPATIENT_TRIES,
    MAX_TRIES,
    Clients,
    Ledger,
    Vanished,
    body_of,
    client_entry,
    new_id,
)

#: Flushes a batching client tries at its end before it gives its backlog up (never acknowledged: nothing owed).
FINAL_FLUSHES = 8


class _Acks:
    """The batching client's tickets in the order it added their edits; the acknowledged batches go to the ledger
    once each, in that order."""

    def __init__(self, ledger: Ledger, log_id: uuid.UUID, name: str) -> None:
        self.ledger, self.log_id, self.name = ledger, log_id, name
        self.waiting: list[tuple[Ticket, Body, int]] = []
        self.acked: list[tuple[uuid.UUID, list[int]]] = []
        ledger.batched.append((log_id, name, self.acked))

    def settle(self) -> None:
        while self.waiting and self.waiting[0][0].done:
            head = self.waiting[0][0]
            group = [(body, k) for ticket, body, k in self.waiting if ticket.entry_id == head.entry_id]
            del self.waiting[:len(group)]
            if head.error is not None or head.entry_id is None:
                continue  # refused, or its outcome unknown: counted where it was raised
            # A batch of one edit is sent as the plain entry it is.
            bodies = [body for body, _ in group]
            body = bodies[0] if len(bodies) == 1 else Edits(edits=cast(list[Edit], bodies))
            self.ledger.ack(self.log_id, head.entry_id, body)
            self.acked.append((head.entry_id, [k for body, k in group if markers(body, self.name)]))


def marked(body: Body, marker: str) -> Body:
    """``body`` carrying ``marker`` in its values (a delete-row edit has none and stays as it is)."""
    match body:
        case SetCell(value=value):
            return msgspec.structs.replace(body, value=marker + (value if isinstance(value, str) else ""))
        case InsertRow(values=values):
            return msgspec.structs.replace(body, values=[marker, *values])
        case SetRange(values=values):
            return msgspec.structs.replace(body, values=[[marker], *values])
    return body


def markers(body: Body, client: str) -> list[int]:
    """The indexes of ``client``'s markers in ``body``'s values, in order (an edits entry's, edit by edit)."""
    found: list[int] = []
    for edit in edits_of([body]):
        match edit:
            case SetCell(value=str(text)):
                values: list[object] = [text]
            case InsertRow(values=row):
                values = list(row[:1])
            case SetRange(values=rows):
                values = list(rows[0][:1]) if rows else []
            case _:
                values = []
        for value in values:
            name, _, k = str(value).partition("#")
            if name == client and k[:1].isdigit():
                found.append(int("".join(itertools.takewhile(str.isdigit, k))))
    return found


def batch_client(clients: Clients, log_id: uuid.UUID, count: int) -> None:
    """Make ``count`` edits to the sheet in bursts through a Batcher; record what was acknowledged."""
    world, scenario, ledger = clients.world, clients.scenario, clients.ledger
    me = world.current
    rng = clients.faults.rng(me)
    # Half are impatient (a few tries, then the batch waits in the queue for the next flush): a lost answer then
    # often ends a flush, and the batch is sent again later, whole, with its entry id and since.
    impatient = rng.random() < 0.5
    client = clients.client(vanish=scenario.vanish_share, pauses=rng.random() < scenario.pause_share,
                            max_tries=IMPATIENT_TRIES if impatient else MAX_TRIES,
                            patience=IMPATIENT_PATIENCE if impatient else None)
    client.note_position(log_id, START)
    # Small batches now and then, so a backlog is several batches and a lost one has others queued behind it.
    batcher = Batcher(client, log_id, window=scenario.batch_window, timer=None, monotonic=lambda: world.now,
                      max_edits=rng.choice((2, 5, MAX_EDITS)), ids=lambda: new_id(rng))
    acks = _Acks(ledger, log_id, me.name)
    me.tags.update(log_id=str(log_id), batching=True)

    def sent(step: Callable[[], Any]) -> bool:
        """Run a flush or a poll and count what it raised; False when the client vanished."""
        try:
            step()
        except Vanished:
            ledger.vanished += 1
            return False
        except RetriesExhaustedError:
            pass  # the batch stays queued, sent again (the same) by the next flush
        except OutcomeUnknownError:
            ledger.outcome_unknown += 1
        except ApiError as exc:
            ledger.refused.append(f"{me.name}: {exc}")
        finally:
            acks.settle()
        return True

    made = 0
    while made < count:
        offline = rng.random() < scenario.offline_share
        burst = min(count - made, rng.randint(15, 60) if offline else rng.randint(2, 12))
        for _ in range(burst):
            body = marked(body_of(rng, scenario), f"{me.name}#{made}")
            acks.waiting.append((batcher.add(cast(ClientEdit, client_entry(body))), body, made))
            made += 1
            if not offline:
                world.sleep(rng.uniform(0.0, scenario.batch_window / 2))
                if not sent(batcher.poll):
                    return
        if not sent(batcher.flush):
            return
        world.sleep(rng.uniform(*scenario.think))
    for _ in range(FINAL_FLUSHES):
        if not batcher.pending:
            return
        if not sent(batcher.flush):
            return
        world.sleep(rng.uniform(*scenario.think))
    if batcher.pending:
        ledger.gave_up += 1  # the backlog was never acknowledged: nothing is owed
