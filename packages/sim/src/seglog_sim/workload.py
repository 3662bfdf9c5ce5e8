"""The clients: who appends what, and what they were told (the acknowledgements I2 checks).

Two kinds of client, each following its documented protocol:

* an HTTP API client sends every try of an entry with the same ``entry_id`` and ``since`` (the position of its
  previous answer), and tries again when no answer comes within its timeout, when the answer is lost, or on a
  5xx — while the earlier try may still be running (overlapping retries). Only an answer it received counts as
  acknowledged. It backs off as :class:`seglog_client.retry.Backoff` says.
* a library client calls :meth:`EventLog.append` in its own process with an entry id; the log retries inside,
  reading forward after a lost answer.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from seglog_client.retry import Backoff
from seglog_core import errors
from seglog_core.idempotence import Position
from seglog_core.log import EventLog
from seglog_core.retry import RetryPolicy
from seglog_core.schema import Body, DeleteRow, InsertRow, SetCell, SetRange
from seglog_sim.faults import Fault, Faults
from seglog_sim.lambdas import Lambdas
from seglog_sim.scenario import Scenario
from seglog_sim.world import World

#: Errors the API answers with a 4xx: the client must not send the same request again.
REFUSALS = (errors.InvalidInputError, errors.UnknownPositionError, errors.VersionConflictError,
            errors.LogNotFoundError)
#: Tries of one entry before a client gives up on it (it was never acknowledged, so nothing is owed).
MAX_TRIES = 40


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


@dataclass(kw_only=True)
class Ledger:
    """What clients were told: acknowledged entry ids per log, and anything a correct client should never see."""

    acknowledged: dict[uuid.UUID, list[uuid.UUID]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    gave_up: int = 0
    tries: int = 0
    lost_answers: int = 0

    def ack(self, log_id: uuid.UUID, entry_id: uuid.UUID) -> None:
        self.acknowledged.setdefault(log_id, []).append(entry_id)

    @property
    def appends(self) -> int:
        return sum(len(v) for v in self.acknowledged.values())


@dataclass(kw_only=True)
class Clients:
    world: World
    faults: Faults
    lambdas: Lambdas
    scenario: Scenario
    ledger: Ledger = field(default_factory=Ledger)

    def api_client(self, log_id: uuid.UUID, count: int) -> None:
        world, faults, scenario = self.world, self.faults, self.scenario
        me = world.current
        rng = faults.rng(me)
        backoff = Backoff(rng=rng)
        since = Position(segment=0, num=0)  # the answer of the log's creation
        for _ in range(count):
            world.sleep(rng.uniform(*scenario.think))
            body, entry_id = body_of(rng, scenario), new_id(rng)
            for tries in range(1, MAX_TRIES + 1):
                self.ledger.tries += 1
                me.calls += 1  # one decision point per try (fault ids stay apart)
                attempt = self.lambdas.append(log_id, body, entry_id=entry_id, since=since)
                attempt.tags.update(client=me.name, attempt=tries, asked=world.now)
                answered = world.join(attempt, timeout=scenario.client_timeout)
                attempt.tags.update(answered=world.now, client_outcome="retried")
                if answered and attempt.killed is None and attempt.error is None:
                    if not faults.decide(me, Fault.LOST_RESPONSE):
                        self.ledger.ack(log_id, entry_id)
                        since = Position.of(attempt.result.entry)
                        attempt.tags["client_outcome"] = "acknowledged"
                        break
                    self.ledger.lost_answers += 1
                    attempt.tags["client_outcome"] = "lost"
                elif answered and isinstance(attempt.error, REFUSALS):
                    self.ledger.refused.append(f"{me.name}: {type(attempt.error).__name__}: {attempt.error}")
                    attempt.tags["client_outcome"] = "error"
                    break
                world.sleep(backoff.delay(tries))
            else:
                self.ledger.gave_up += 1

    def library_client(self, log_id: uuid.UUID, count: int) -> None:
        world, faults, scenario = self.world, self.faults, self.scenario
        me = world.current
        rng = faults.rng(me)
        backend = self.lambdas.backend
        event_log = EventLog(store=backend.append_store, blobs=backend.append_blobs,
                             retry=RetryPolicy(rng=rng, sleep=world.sleep), clock=world.clock,
                             id_factory=lambda: new_id(rng), snapshot_every=scenario.snapshot_every,
                             segment_entries=scenario.segment_entries, large_threshold=scenario.large_threshold)
        for _ in range(count):
            world.sleep(rng.uniform(*scenario.think))
            body, entry_id = body_of(rng, scenario), new_id(rng)
            self.ledger.tries += 1
            try:
                event_log.append(log_id, body, entry_id=entry_id)
            except errors.SeglogError:
                self.ledger.gave_up += 1  # not acknowledged: the library said so
                event_log.forget(log_id)
                continue
            self.ledger.ack(log_id, entry_id)
