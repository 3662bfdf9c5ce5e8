"""The clients: who appends and reads what, and what they were told (the acknowledgements I2 checks).

Three kinds of client, each following its documented protocol:

* an HTTP API client is a :class:`seglog_client.SeglogClient` whose tries go through the world's
  :class:`~seglog_sim.gateway.Gateway` (``InProcess`` transport) to the API handler: the library's own code
  encodes and signs each request, sends every try of an entry with the same ``entry_id`` and ``since``, waits
  ``client_timeout`` for an answer (the earlier try may still be running: overlapping retries), retries no answer,
  5xx and 429 with its backoff, and raises a 4xx. Only an answer it received counts as acknowledged. Some clients
  behave as clients really do (the scenario's shares): vanish between tries, reuse an acknowledged entry id with
  another body, keep a ``since`` across retention and do what a 409 says.
* a library client calls :meth:`EventLog.append` in its own process with an entry id; the log retries inside,
  reading forward after a lost answer.
* a reader loads the sheet (paged: small pages, so a load spans other tasks' writes and workers' completion
  steps) and syncs from where it is, through the same client library; what each load and sync answered is
  kept for the checks (:func:`seglog_sim.checks.check_reads`).

The logs are created through the API too, with the client's own log id, so a create whose answer was lost is
retried as the library retries it.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec

from seglog_client import SeglogClient
from seglog_client import entries as client_entries
from seglog_client.errors import ApiError, OutcomeUnknownError, ProtocolError, RetriesExhaustedError
from seglog_client.hooks import Counters
from seglog_client.models import START
from seglog_client.models import Position as ClientPosition
from seglog_client.retry import Backoff
from seglog_client.transport import InProcess
from seglog_core import errors
from seglog_core.log import EventLog
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Body, DeleteRow, InsertRow, SetCell, SetRange
from seglog_core.sheet.refs import format_ref
from seglog_core.turns import Turns
from seglog_sim.faults import Faults
from seglog_sim.gateway import BASE_URL, CREDENTIALS, Gateway
from seglog_sim.lambdas import Lambdas
from seglog_sim.scenario import Scenario
from seglog_sim.world import TaskLock, World

#: Tries of one request before a client gives up on it (an append never acknowledged: nothing is owed).
MAX_TRIES = 40
#: An impatient client's tries and patience (seconds) (Scenario.impatient_client).
IMPATIENT_TRIES = 3
IMPATIENT_PATIENCE = 20.0
#: Version conflicts in a row after which a strict client gives its edit up.
STRICT_REBASES = 4
#: An API client's acknowledged entry: its id, its body, the position its first try sent, where it was stored.
_Acked = tuple[uuid.UUID, Body, ClientPosition, tuple[int, int]]
#: Refusals a client that misbehaves on purpose expects (issue 18): the reuse of an entry id with another body,
#: and a ``since`` whose segment retention retired.
EXPECTED_REFUSALS = frozenset({"entry_id_reused", "since_retired"})


def new_id(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def body_of(rng: random.Random, scenario: Scenario) -> Body:
    """A document body: mostly cells, some rows inserted and deleted, some large enough for S3."""
    if rng.random() < scenario.large_share:
        return SetCell(row=rng.randint(1, 6), col=rng.randint(1, 4), value="x" * (scenario.large_threshold + 20))
    pick = rng.random()
    if pick < 0.6:
        return SetCell(row=rng.randint(1, 6), col=rng.randint(1, 4), value=rng.randint(0, 999))
    if pick < 0.75:
        return InsertRow(after=rng.randint(0, 5), values=[rng.randint(0, 9) for _ in range(rng.randint(0, 3))])
    if pick < 0.85:
        return DeleteRow(row=rng.randint(1, 6))
    return SetRange(row=rng.randint(1, 5), col=rng.randint(1, 3), values=[[rng.randint(0, 9)] * 2] * 2)


def client_entry(body: Body) -> client_entries.EntryBody:
    """The body as a client sends it (cells by A1 reference)."""
    match body:
        case SetCell(row=row, col=col, value=value):
            return client_entries.set_cell(format_ref(row, col), value)
        case SetRange(row=row, col=col, values=values):
            return client_entries.set_range(format_ref(row, col), values)
        case InsertRow(after=after, values=values):
            return client_entries.insert_row(after, values)
        case DeleteRow(row=row):
            return client_entries.delete_row(row)
    raise AssertionError(f"no client form for {body!r}")


@dataclass(frozen=True, kw_only=True)
class Load:
    """What one load answered: the position it read to and the rows (every page joined)."""

    client: str
    at: float
    log_id: uuid.UUID
    position: tuple[int, int]
    rows: list[list[Any]]
    pages: int


@dataclass(frozen=True, kw_only=True)
class Synced:
    """What one sync answered: the entries after ``since`` up to ``position`` (ids of document entries)."""

    client: str
    at: float
    log_id: uuid.UUID
    since: tuple[int, int]
    position: tuple[int, int]
    entries: list[tuple[int, int, str | None]]


@dataclass(kw_only=True)
class Ledger:
    """What clients were told: acknowledged entry ids (and bodies) per log, what readers read, and anything a
    correct client should never see."""

    acknowledged: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    #: The body each acknowledged entry was sent with, by entry id: an acknowledged entry's body never changes.
    bodies: dict[uuid.UUID, Body] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    #: Requests answered as stored that should have been refused (an entry id reused with another body): log, id,
    #: where the acknowledged entry was stored, what the client was told. Judged by the checks: a reuse whose first
    #: entry retention deleted cannot be seen by the server (README "Appending exactly once").
    accepted_wrongly: list[tuple[uuid.UUID, uuid.UUID, tuple[int, int], str]] = field(default_factory=list)
    #: Every reuse tried, whatever its client heard (answered, refused, or never: it vanished or gave up with the
    #: copy perhaps stored): log, id, where the acknowledged entry was stored.
    reuses: list[tuple[uuid.UUID, uuid.UUID, tuple[int, int]]] = field(default_factory=list)
    #: Refusals a misbehaving client expects, by code.
    expected_refusals: dict[str, int] = field(default_factory=dict)
    loads: list[Load] = field(default_factory=list)
    syncs: list[Synced] = field(default_factory=list)
    #: Reads that failed where no fault excuses it (a 4xx or a final 5xx, a load whose pages do not fit).
    failed_reads: list[str] = field(default_factory=list)
    gave_up: int = 0
    vanished: int = 0
    #: Pauses pausing clients took between two tries, and appends seglog_client left unresent past the retry
    #: horizon (OutcomeUnknownError: not acknowledged, nothing owed).
    pauses: int = 0
    outcome_unknown: int = 0
    #: API clients that came back later to send old entry ids again (Scenario.return_share).
    returns: int = 0
    #: Batching clients (issue 35): log, client, each acknowledged batch's entry id and its edits' markers, in the
    #: order the edits were added (seglog_sim.checks.edits_in_order: each in the log once, in that order).
    batched: list[tuple[uuid.UUID, str, list[tuple[uuid.UUID, list[int]]]]] = field(default_factory=list)
    #: Every try of every API request (seglog_client's own tally).
    counters: Counters = field(default_factory=Counters)
    tries: int = 0

    def ack(self, log_id: uuid.UUID, entry_id: uuid.UUID, body: Body) -> None:
        self.acknowledged.setdefault(log_id, []).append(entry_id)
        self.bodies[entry_id] = body

    def expect(self, code: str) -> None:
        self.expected_refusals[code] = self.expected_refusals.get(code, 0) + 1

    @property
    def appends(self) -> int:
        return sum(len(v) for v in self.acknowledged.values())

    @property
    def lost_answers(self) -> int:
        return self.counters.statuses["lost"]


class Vanished(Exception):
    """The client's process ended between two tries (it never learns what became of its request)."""


@dataclass(kw_only=True)
class Clients:
    world: World
    faults: Faults
    lambdas: Lambdas
    scenario: Scenario
    gateway: Gateway
    ledger: Ledger = field(default_factory=Ledger)

    def client(self, *, max_tries: int = MAX_TRIES, vanish: float = 0.0, pauses: bool = False,
               patience: float | None = None, sign: bool | None = None) -> SeglogClient:
        """The running task's SeglogClient: its tries go to the world's gateway, its waits and its timing of a
        first try are simulated, its jitter is the task's; with ``vanish``, the chance that it vanishes instead
        of waiting to retry; with ``pauses``, a client that sometimes stops for a while between two tries; with
        ``patience``, the seconds after which it stops retrying a request; ``sign``: whether it signs its requests
        (by default as Scenario.sign_requests says)."""
        world, scenario, ledger = self.world, self.scenario, self.ledger
        me = world.current
        rng = self.faults.rng(me)

        def wait(seconds: float) -> None:
            if vanish and rng.random() < vanish:
                raise Vanished
            if pauses and rng.random() < scenario.pause_chance:
                ledger.pauses += 1
                seconds += rng.uniform(*scenario.pause)
            world.sleep(seconds)

        return SeglogClient(BASE_URL, timeout=scenario.client_timeout, max_tries=max_tries, patience=patience,
                            sleep=wait,
                            backoff=Backoff(rng=rng), hooks=ledger.counters, credentials=CREDENTIALS,
                            sign=scenario.sign_requests if sign is None else sign,
                            horizon_margin=scenario.horizon_margin,
                            clock=lambda: datetime.fromtimestamp(world.now, UTC), monotonic=lambda: world.now,
                            transport=InProcess(self.gateway.serve))

    def create(self, log_id: uuid.UUID) -> None:
        """Create a log with the client's own id (a retried create is answered 200, not created twice)."""
        self.client(max_tries=1000).create(log_id)

    def api_client(self, log_id: uuid.UUID, count: int, index: int = 0) -> None:
        """The ``index``-th API client (Scenario.strict_client, fresh_client and impatient_client say which
        behave so)."""
        world, faults, scenario, ledger = self.world, self.faults, self.scenario, self.ledger
        me = world.current
        rng = faults.rng(me)
        if scenario.strict_client and index == 0:
            self.strict_client(log_id, count)
            return
        stale = rng.random() < scenario.stale_since_share
        impatient = scenario.impatient_client and index == 1
        # A plain client knows the sheet's id alone (its first append looks the position up: GET /snapshots) and
        # sends no since; it signs, as on AWS.
        plain = scenario.fresh_client and index == scenario.api_clients - 1
        client = self.client(vanish=scenario.vanish_share, pauses=rng.random() < scenario.pause_share,
                             max_tries=IMPATIENT_TRIES if impatient else MAX_TRIES,
                             patience=IMPATIENT_PATIENCE if impatient else None, sign=True if plain else None)
        if not plain:
            client.note_position(log_id, START)  # the answer of the log's creation
        # Acknowledged entries with the position sent on their first try: a reuse of an id resends that position
        # with another body, as a client whose retry changed its entry would. The API finds an id by reading forward
        # from since (no index of entry ids: README "Appending exactly once"), so a reuse from a later position is
        # outside what it promises.
        mine: list[_Acked] = []
        for _ in range(count):
            world.sleep(rng.uniform(*scenario.think))
            if not self._api_entry(client, log_id, rng, mine, stale=stale, reuse=False, plain=plain):
                return
        # Some come back much later, write again, and send old entry ids again with another body (an offline edit
        # replayed, a queue restored from a backup): by then retention may have archived or deleted the segment of
        # the since it sends, or of the entry it reuses, and the log grows on past the gap. Clients that reused
        # only within their own few seconds left the lookups after a deleted since all but unread (the mutant
        # deleted_since_judged was first killed by seed 1031, past a mutant run's 1,000 seeds).
        if mine and rng.random() < scenario.return_share:
            ledger.returns += 1
            world.sleep(rng.uniform(*scenario.return_after))
            for _ in range(rng.randint(*scenario.returns)):
                if not self._api_entry(client, log_id, rng, mine, stale=stale,
                                       reuse=rng.random() < scenario.return_reuse_share, plain=plain):
                    return
                world.sleep(rng.uniform(*scenario.think))

    def strict_client(self, log_id: uuid.UUID, count: int) -> None:
        """An API client appending with ``expected`` (its latest position + 1): an optimistic editor. A 409
        version_conflict (another entry took the position; nothing of this entry can land) sends it to sync to the
        sheet's end and try again, up to STRICT_REBASES times; then it gives the edit up (nothing is owed)."""
        world, scenario, ledger = self.world, self.scenario, self.ledger
        me = world.current
        rng = self.faults.rng(me)
        client = self.client(vanish=scenario.vanish_share)
        client.note_position(log_id, START)
        for _ in range(count):
            world.sleep(rng.uniform(*scenario.think))
            body, entry_id = body_of(rng, scenario), new_id(rng)
            me.tags.update(log_id=str(log_id), entry_id=str(entry_id))
            try:
                for _ in range(STRICT_REBASES):
                    held = client.position(log_id) or START
                    try:
                        client.append(log_id, client_entry(body), entry_id=entry_id,
                                      expected=ClientPosition(segment=held.segment, num=held.num + 1))
                    except ApiError as exc:
                        if exc.code != "version_conflict":
                            raise
                        ledger.expect(exc.code)
                        synced = client.sync(log_id, held)
                        if synced.reload:
                            client.load(log_id)
                        continue
                    ledger.ack(log_id, entry_id, body)
                    break
                else:
                    ledger.gave_up += 1  # conflicts at every try: the edit is given up, nothing is owed
            except Vanished:
                ledger.vanished += 1
                return
            except RetriesExhaustedError:
                ledger.gave_up += 1
            except ApiError as exc:
                ledger.refused.append(f"{me.name}: {exc}")

    def busy_client(self, log_id: uuid.UUID) -> None:
        """An API client appending all through the fault window, an edit every ``busy_think`` seconds: a busy sheet
        (Scenario.busy_share), whose snapshots fall due one after another while faults fire."""
        world, scenario = self.world, self.scenario
        rng = self.faults.rng(world.current)
        client = self.client()
        client.note_position(log_id, START)
        mine: list[_Acked] = []
        while world.now - world.start < scenario.fault_window:
            world.sleep(rng.uniform(*scenario.busy_think))
            self._api_entry(client, log_id, rng, mine, stale=False, reuse=False)

    def _api_entry(self, client: SeglogClient, log_id: uuid.UUID, rng: random.Random, mine: list[_Acked], *,
                   stale: bool, reuse: bool, plain: bool = False) -> bool:
        """One entry of an API client: a new one, or (by chance, or when ``reuse``) an acknowledged entry's id
        with another body from the position its first try sent. False when the client vanished. A ``plain``
        client names the sheet by its id's text and sends no since (seglog_client's default)."""
        me, scenario, ledger = self.world.current, self.scenario, self.ledger
        body, entry_id = body_of(rng, scenario), new_id(rng)
        reused = bool(mine) and (reuse or rng.random() < scenario.reuse_share)
        since = START if stale else None if plain else client.position(log_id)
        if reused:
            entry_id, before, since, stored = mine[rng.randrange(len(mine))]
            if body == before:
                return True
            ledger.reuses.append((log_id, entry_id, stored))
        me.tags.update(log_id=str(log_id), entry_id=str(entry_id))
        try:
            answer = self._append(client, str(log_id) if plain else log_id, body, entry_id, since, upload=plain)
        except Vanished:
            ledger.vanished += 1
            return False
        except RetriesExhaustedError:
            ledger.gave_up += 1  # never acknowledged: nothing is owed
            return True
        except OutcomeUnknownError as exc:
            # since was retired and the first try is past the retry horizon: seglog_client did not resend (an
            # earlier try may have landed in the deleted history). Not acknowledged, so nothing is owed; a
            # copy stored twice would still show (the history check: an entry id inserted once at most).
            ledger.outcome_unknown += 1
            me.tags["outcome_unknown"] = f"age {exc.age:.1f} s, horizon {exc.horizon} s"
            return True
        except ApiError as exc:
            if exc.code in EXPECTED_REFUSALS and (reused or stale):
                ledger.expect(exc.code)
            else:
                ledger.refused.append(f"{me.name}: {exc}")
            return True
        if reused:
            ledger.accepted_wrongly.append((log_id, entry_id, stored, (
                f"{me.name}: entry id {entry_id} reused with another body was answered as stored at "
                f"{answer.segment}/{answer.num} (deduplicated={answer.deduplicated}), not refused")))
            return True
        ledger.ack(log_id, entry_id, body)
        if since is not None:
            mine.append((entry_id, body, since, (answer.segment, answer.num)))
        return True

    def _append(self, client: SeglogClient, log_id: uuid.UUID | str, body: Body, entry_id: uuid.UUID,
                since: ClientPosition | None, *, upload: bool = False) -> Any:
        """Append as the client does (``upload``: a range as an upload, DESIGN §3 large entries: a presigned PUT of
        its JSON, then the completion); a client holding an old ``since`` does what a 409 unknown_position says:
        load again and send the entry again (with the same entry id) from the position the load answered (None:
        the client's default, which is that position)."""
        def send(at: ClientPosition | None) -> Any:
            if upload and isinstance(body, SetRange):
                data = msgspec.json.encode({"ref": format_ref(body.row, body.col), "values": body.values})
                return client.upload(log_id, data, "application/json", "setrng", entry_id=entry_id, since=at)
            return client.append(log_id, client_entry(body), entry_id=entry_id, since=at)

        try:
            return send(since)
        except ApiError as exc:
            if exc.code != "unknown_position":
                raise
        self.ledger.expect("unknown_position")  # what main answers once since's segment is retired
        client.load(log_id)
        return send(None if since is None else client.position(log_id))

    def reader(self, log_id: uuid.UUID, count: int) -> None:
        """Load (paged) and sync while others write; what each answered is checked after the run."""
        world, faults, scenario, ledger = self.world, self.faults, self.scenario, self.ledger
        me = world.current
        rng = faults.rng(me)
        client = self.client()
        held: ClientPosition | None = None
        for _ in range(count):
            world.sleep(rng.uniform(*scenario.think) * 4)
            me.tags["log_id"] = str(log_id)
            try:
                if held is None or rng.random() < 0.5:
                    sheet = client.load(log_id)
                    held = sheet.position
                    ledger.loads.append(Load(client=me.name, at=world.now, log_id=log_id,
                                             position=(held.segment, held.num), rows=sheet.rows, pages=sheet.pages))
                    continue
                synced = client.sync(log_id, held, limit=rng.randint(1, 4))
                if synced.reload:
                    held = None
                    continue
                ledger.syncs.append(Synced(client=me.name, at=world.now, log_id=log_id,
                                           since=(held.segment, held.num),
                                           position=(synced.position.segment, synced.position.num),
                                           entries=[(e.segment, e.num, None if e.entry_id is None else
                                                     str(e.entry_id)) for e in synced.entries]))
                held = synced.position
            except RetriesExhaustedError:
                held = None  # faults: every try failed; nothing was read
            except (ApiError, ProtocolError) as exc:
                ledger.failed_reads.append(f"{me.name} at {world.now - world.start:.3f} s: {exc}")
                held = None

    def library_client(self, log_id: uuid.UUID, count: int) -> None:
        """A process using the library: one writer, or (Scenario.library_writers) several, each with its EventLog on
        the process's store, taking turns on the log (seglog_core.turns: a lock its tasks wait on)."""
        world = self.world
        me = world.current
        turns = Turns(lock=lambda: TaskLock(world))  # a simulated process's own
        others = [world.spawn(f"{me.name}-writer-{k}", "client", self._library_writer, log_id, count, turns)
                  for k in range(1, self.scenario.library_writers)]
        self._library_writer(log_id, count, turns)
        for other in others:
            world.join(other)

    def _library_writer(self, log_id: uuid.UUID, count: int, turns: Turns) -> None:
        world, faults, scenario = self.world, self.faults, self.scenario
        me = world.current
        rng = faults.rng(me)
        backend = self.lambdas.backend
        # The library's cached tail is trusted for the retry horizon at most (EventLog._fresh; seed 904).
        horizon = float(self.lambdas.topology.retention.Environment.get("SEGLOG_RETENTION_MIN_AGE_SECONDS", "0"))
        event_log = EventLog(store=backend.append_store, blobs=backend.append_blobs, tail_ttl=horizon,
                             retry=RetryPolicy(rng=rng, sleep=world.sleep), clock=world.clock,
                             id_factory=lambda: new_id(rng), snapshot_every=scenario.snapshot_every,
                             segment_entries=scenario.segment_entries, large_threshold=scenario.large_threshold,
                             turns=turns)
        # An optimistic writer expects the num after its last append's. It may be wrong: another writer took it, or
        # this writer's own snapshot policy (or another writer) started a segment since. EventLog refuses what would
        # leave a gap or land after an EndSegment (seeds 6 and 728 before the fix: mutants expected_past_tail and
        # expected_end_unfollowed); the writer then appends where the log is now.
        last: int | None = None  # the num of this writer's last append
        for _ in range(count):
            world.sleep(rng.uniform(*scenario.think))
            body, entry_id = body_of(rng, scenario), new_id(rng)
            self.ledger.tries += 1
            try:
                try:
                    expected = last + 1 if scenario.optimistic_library and last is not None else None
                    appended = event_log.append(log_id, body, entry_id=entry_id, expected=expected)
                except errors.VersionConflictError:  # another entry took it, or the segment moved on
                    appended = event_log.append(log_id, body, entry_id=entry_id)
            except errors.SeglogError:
                self.ledger.gave_up += 1  # not acknowledged: the library said so
                event_log.forget(log_id)
                last = None
                continue
            last = appended.entry.num
            self.ledger.ack(log_id, entry_id, body)

