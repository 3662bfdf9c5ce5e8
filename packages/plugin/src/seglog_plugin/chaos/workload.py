"""Simulated clients of a chaos run (or the demo): they edit sheets through the HTTP API with
:mod:`seglog_client`, which retries safely.

Every id is derived from the run's seed — sheet ids and entry ids are UUIDv5 names — and the client encodes
requests with sorted keys, so the same seed sends the same requests, and the fault decisions keyed on request
content (a lost answer at the gateway) repeat.

A client that gets no answer, or a 5xx, sends the identical request again after its backoff: the entry id and
``since`` (the latest position the client had seen) let the API find a first try before it writes, with
consistent reads and a conditional put, so the retry is stored once even while the first try may still be
running — no waiting out the function's timeout. Each entry id a client was told was appended is recorded, for
the I2 check ("every acknowledged append is in the log, exactly once").
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import structlog

from seglog_client import (
    START,
    Appended,
    Attempt,
    Backoff,
    Counters,
    Credentials,
    EntryBody,
    SeglogClient,
    insert_row,
    set_cell,
    set_range,
)
from seglog_emulator import logfeed
from seglog_emulator.supervisor import API_RECOVERY_SECONDS
from seglog_report import events

log = structlog.get_logger("seglog.chaos.client")

#: Namespace of the UUIDv5 names of a run's sheets and entries.
NAMESPACE: Final = uuid.UUID("6d1f4b8e-2f35-5c8a-9d0e-5e67c4a3b201")
#: How long a client retries a request before it gives up (and reports it, never silently): two restarts of the
#: emulator back to back, each within the bound the API comes back in, and the request's own time. It was 25 tries
#: (about 20 s of backoff): clients gave up on a gateway that a slow machine kept away 24 s (issue 34).
PATIENCE_SECONDS: Final = 3 * API_RECOVERY_SECONDS
PRODUCTS: Final = ("Nails", "Screws", "Bolts", "Washers", "Hinges", "Brackets", "Rivets", "Dowels")


_LOG_IN_PATH: Final = re.compile(r"/sheets/([0-9a-f-]{36})")


@dataclass(frozen=True, kw_only=True)
class ClientTry:
    """One try of one request, on the wall clock, for the report's timeline (its lane: the client's thread)."""

    client: str
    start: float
    end: float
    method: str
    path: str
    number: int
    status: int | None
    error: str | None
    log_id: str | None
    #: The gateway's request id of the answer (its ``apigw-requestid``): the API invocation that served this try
    #: logs the same as ``api_request_id``. None for a lost answer.
    api_request_id: str | None = None

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and self.method == "POST" \
            and self.path.endswith("/entries")

    @property
    def outcome(self) -> str:
        return events.try_outcome(self.status)

    def feed(self) -> dict[str, Any]:
        """The try as the live console is sent it (its client lanes)."""
        return {"event": "client try", "client": self.client, "start": self.start, "end": self.end,
                "status": "lost" if self.status is None else str(self.status), "attempt": self.number,
                "method": self.method, "path": self.path, "log_id": self.log_id,
                "api_request_id": self.api_request_id}


@dataclass
class ClientStats(Counters):
    """What the clients of a run did: the library's counters, the clients that gave up, and every entry id
    acknowledged per sheet."""

    failures: list[str] = field(default_factory=list)
    acknowledged: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    #: Every try, for the report's timeline.
    tries: list[ClientTry] = field(default_factory=list)

    def tried(self, attempt: Attempt) -> None:
        super().tried(attempt)
        end = time.time()
        found = _LOG_IN_PATH.search(attempt.path)
        done = ClientTry(client=threading.current_thread().name, start=end - attempt.seconds, end=end,
                         method=attempt.method, path=attempt.path, number=attempt.number, status=attempt.status,
                         error=attempt.error, log_id=found.group(1) if found else None,
                         api_request_id=attempt.request_id)
        with self._lock:
            self.tries.append(done)
        logfeed.send(done.feed())  # the live console's client lanes

    def appended(self, log_id: uuid.UUID, answer: Appended) -> None:
        super().appended(log_id, answer)
        with self._lock:
            self.acknowledged.setdefault(log_id, []).append(answer.entry_id)


class ApiClient(SeglogClient):
    """A simulated client: the library's client reporting to the run's stats, patient enough for heavy faults,
    signing every try with ``credentials`` (a key pair the emulator accepts)."""

    def __init__(self, base_url: str, stats: ClientStats, credentials: Credentials, **options: Any) -> None:
        options.setdefault("patience", PATIENCE_SECONDS)
        options.setdefault("max_tries", 1_000)
        options.setdefault("backoff", Backoff(base=0.1, cap=2.0))
        super().__init__(base_url, hooks=stats, credentials=credentials, **options)
        self.stats = stats


def sheet_id(seed: int, run: int, index: int) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"sheet:{seed}:{run}:{index}")


def entry_id(log_id: uuid.UUID, client: int, n: int) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"entry:{log_id}:{client}:{n}")


def edit(rng: random.Random, client: int, n: int) -> EntryBody:
    """One simulated user edit: mostly single cells, sometimes a row or a block."""
    roll = rng.random()
    row = rng.randint(2, 20)
    if roll < 0.06:
        return insert_row(rng.randint(1, 20), [rng.choice(PRODUCTS), rng.randint(1, 9)])
    if roll < 0.12:
        return set_range(f"E{row}", [[f"c{client}", n], [rng.randint(1, 99), None]])
    col = rng.randint(1, 4)
    value: str | int = rng.choice(PRODUCTS) if col == 1 else rng.randint(1, 500)
    return set_cell(f"{'ABCD'[col - 1]}{row}", value)


@dataclass(frozen=True, kw_only=True)
class Workload:
    """``sheets`` sheets, each edited by ``clients`` clients sending ``edits`` edits each."""

    sheets: int = 2
    clients: int = 3
    edits: int = 15
    #: Rows of a block each sheet gets first: past 16 KB its body goes to S3 (and the router keeps it).
    large_rows: int = 0

    @property
    def planned_edits(self) -> int:
        return self.sheets * (self.clients * self.edits + (1 if self.large_rows else 0))

    def create(self, client: ApiClient, seed: int, run: int) -> list[uuid.UUID]:
        """Create the run's sheets (idempotently: each has the client's own id), and append the large block."""
        ids = [sheet_id(seed, run, i) for i in range(self.sheets)]
        for log_id in ids:
            client.create(log_id)
            if self.large_rows:
                rows = [[PRODUCTS[i % len(PRODUCTS)], i, i * 2, f"row {i} " + "x" * 40] for i in range(self.large_rows)]
                # since: the create's answer (0/0); acknowledged through the client's stats
                client.append(log_id, set_range("A30", rows), entry_id=entry_id(log_id, -1, 0))
        return ids

    def run(self, base_url: str, log_ids: list[uuid.UUID], seed: int, stats: ClientStats, credentials: Credentials,
            on_append: Callable[[], None] | None = None, stop: threading.Event | None = None) -> None:
        """Every client of every sheet edits concurrently, one thread each, signing with ``credentials``; returns
        when all are done. Once ``stop`` is set (the run was interrupted) a client sends no further edit."""
        def one(log_id: uuid.UUID, index: int) -> None:
            client = ApiClient(base_url, stats, credentials)
            # Every client knows the sheet's start; then the client keeps the latest position it is answered
            # (its next entry's since), without asking, so a seed's requests do not depend on an extra read.
            client.note_position(log_id, START)
            rng = random.Random(f"{seed}:{log_id}:{index}")
            for n in range(self.edits):
                if stop is not None and stop.is_set():
                    return
                try:
                    client.append(log_id, edit(rng, index, n), entry_id=entry_id(log_id, index, n))
                except Exception as exc:  # recorded, and the run fails on it: nothing is lost silently
                    stats.failures.append(f"{log_id} client {index} edit {n}: {exc}")
                    log.error("append failed", log_id=str(log_id), client=index, edit=n, error=str(exc))
                    continue
                if on_append is not None:
                    on_append()

        threads = [threading.Thread(target=one, args=(log_id, i), daemon=True, name=f"client {i} {str(log_id)[:8]}")
                   for log_id in log_ids for i in range(self.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
