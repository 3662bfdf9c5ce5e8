"""Simulated clients of a chaos run (or the demo): they edit sheets through the HTTP API, and retry safely.

Every id is derived from the run's seed — sheet ids and entry ids are UUIDv5 names — so the same seed sends the
same requests, and the fault decisions keyed on request content (a lost answer at the gateway) repeat.

A client that gets no answer, or a 5xx, sends the *same* request again, and the entry id makes that safe:
the retry names the latest num the client had seen (``since``), and the API looks for the entry id after it
before writing (it answers ``deduplicated`` if the first try had landed). When the request had been sent and
no answer came, the first try may still be running — a retry that checks before it writes would not see it,
and both would be written (the first chaos runs with supervisor restarts caught exactly that) — so the client
waits out the API function's timeout first. Each entry id a client was told was appended is recorded, for
the I2 check ("every acknowledged append is in the log, exactly once").
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import structlog

log = structlog.get_logger("seglog.chaos.client")

#: Namespace of the UUIDv5 names of a run's sheets and entries.
NAMESPACE: Final = uuid.UUID("6d1f4b8e-2f35-5c8a-9d0e-5e67c4a3b201")
#: A request is tried this many times before the client gives up (and reports it, never silently).
MAX_TRIES: Final = 25
PRODUCTS: Final = ("Nails", "Screws", "Bolts", "Washers", "Hinges", "Brackets", "Rivets", "Dowels")


class ApiClientError(Exception):
    """The API refused a request (4xx): a client bug or a bad edit, not a fault to retry."""


@dataclass
class ClientStats:
    """What the clients of a run did."""

    appends: int = 0
    requests: int = 0
    retries: int = 0
    deduplicated: int = 0
    failures: list[str] = field(default_factory=list)
    acknowledged: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def acknowledge(self, log_id: uuid.UUID, entry_id: uuid.UUID, deduplicated: bool) -> None:
        with self._lock:
            self.appends += 1
            self.deduplicated += int(deduplicated)
            self.acknowledged.setdefault(log_id, []).append(entry_id)

    def count(self, status: str, retried: bool) -> None:
        with self._lock:
            self.requests += 1
            self.retries += int(retried)
            self.statuses[status] += 1


class ApiClient:
    """A small JSON client of the seglog HTTP API (stdlib only), retrying lost answers and 5xx."""

    def __init__(self, base_url: str, stats: ClientStats, *, timeout: float = 30.0, in_flight_grace: float = 0.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.stats = stats
        self.timeout = timeout
        self.in_flight_grace = in_flight_grace
        self._sleep = sleep

    def request(self, method: str, path: str, body: Any = None, *, retry_body: Any = None) -> tuple[int, Any]:
        """Send until answered below 500 (lost answers and 5xx are retried with backoff); retries send
        ``retry_body`` when given (an append's retry adds ``since``, so the API looks for the first try).

        Raises:
            ApiClientError: a 4xx answer.
            RuntimeError: no good answer after MAX_TRIES.
        """
        data = json.dumps(body).encode() if body is not None else None
        last = ""
        for attempt in range(1, MAX_TRIES + 1):
            if attempt == 2 and retry_body is not None:
                data = json.dumps(retry_body).encode()
            connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            in_flight = False
            try:
                connection.connect()
                in_flight = True
                connection.request(method, path, body=data, headers={"content-type": "application/json"})
                response = connection.getresponse()
                status, raw = response.status, response.read()
            except (OSError, http.client.HTTPException) as exc:  # the answer was lost: maybe it happened
                status, raw, last = 0, b"", f"{type(exc).__name__}: {exc}"
            finally:
                connection.close()
            if status == 0 and in_flight:
                # Sent, and no answer: the first try may still be running. A retry now could be written
                # beside it (neither sees the other's entry id); after the function's timeout it cannot.
                self._sleep(self.in_flight_grace)
            self.stats.count("lost" if status == 0 else str(status), retried=attempt > 1)
            if 0 < status < 500:
                payload = json.loads(raw) if raw else None
                if status >= 400:
                    raise ApiClientError(f"{method} {path} -> {status}: {payload}")
                return status, payload
            last = last if status == 0 else f"HTTP {status}: {raw[:200]!r}"
            self._sleep(min(2.0, 0.05 * 2 ** attempt) * random.random())
        raise RuntimeError(f"{method} {path}: no answer after {MAX_TRIES} tries (last: {last})")


def sheet_id(seed: int, run: int, index: int) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"sheet:{seed}:{run}:{index}")


def entry_id(log_id: uuid.UUID, client: int, n: int) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"entry:{log_id}:{client}:{n}")


def edit(rng: random.Random, client: int, n: int) -> dict[str, Any]:
    """One simulated user edit, as the API takes it: mostly single cells, sometimes a row or a block."""
    roll = rng.random()
    row = rng.randint(2, 20)
    if roll < 0.06:
        return {"type": "insrow", "after": rng.randint(1, 20), "values": [rng.choice(PRODUCTS), rng.randint(1, 9)]}
    if roll < 0.12:
        return {"type": "setrng", "ref": f"E{row}", "values": [[f"c{client}", n], [rng.randint(1, 99), None]]}
    col = rng.randint(1, 4)
    value: Any = rng.choice(PRODUCTS) if col == 1 else rng.randint(1, 500)
    return {"type": "set", "ref": f"{'ABCD'[col - 1]}{row}", "value": value}


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
            client.request("POST", "/sheets", {"log_id": str(log_id)})
            if self.large_rows:
                rows = [[PRODUCTS[i % len(PRODUCTS)], i, i * 2, f"row {i} " + "x" * 40] for i in range(self.large_rows)]
                eid = entry_id(log_id, -1, 0)
                body = {"entry": {"type": "setrng", "ref": "A30", "values": rows}, "entry_id": str(eid),
                        "since": {"segment": 0, "num": 0}}
                _, answer = client.request("POST", f"/sheets/{log_id}/entries", body)
                client.stats.acknowledge(log_id, eid, bool(answer.get("deduplicated")))
        return ids

    def run(self, base_url: str, log_ids: list[uuid.UUID], seed: int, stats: ClientStats,
            on_append: Callable[[], None] | None = None, *, in_flight_grace: float = 0.0) -> None:
        """Every client of every sheet edits concurrently, one thread each; returns when all are done."""
        def one(log_id: uuid.UUID, index: int) -> None:
            client = ApiClient(base_url, stats, in_flight_grace=in_flight_grace)
            rng = random.Random(f"{seed}:{log_id}:{index}")
            seen = {"segment": 0, "num": 0}  # the latest position this client knows: its next entry lands after it
            for n in range(self.edits):
                eid = entry_id(log_id, index, n)
                body = {"entry": edit(rng, index, n), "entry_id": str(eid), "since": seen}
                try:
                    _, answer = client.request("POST", f"/sheets/{log_id}/entries", body)
                except Exception as exc:  # recorded, and the run fails on it: nothing is lost silently
                    stats.failures.append(f"{log_id} client {index} edit {n}: {exc}")
                    log.error("append failed", log_id=str(log_id), client=index, edit=n, error=str(exc))
                    continue
                seen = max(seen, answer["position"], key=lambda p: (p["segment"], p["num"]))
                stats.acknowledge(log_id, eid, bool(answer.get("deduplicated")))
                if on_append is not None:
                    on_append()

        threads = [threading.Thread(target=one, args=(log_id, i), daemon=True)
                   for log_id in log_ids for i in range(self.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
