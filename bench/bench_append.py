"""DynamoDB calls and consumed capacity per append (DESIGN §3), from the store's meter (ReturnConsumedCapacity).

Run: uv run --no-sync python -m bench.bench_append [--profile dynamodb-local|localstack|both] [--quick]

Three ways to append a ~1 KB entry (the item just under the 1 KB write unit):

    cold      a fresh EventLog per append, as a new process: Query segments + Query latest + PutItem
    cached    one EventLog appending repeatedly with cache_tail=True: target one PutItem, 1.0 WRU, no read
    conflict  two cached EventLogs taking turns on one log, so every append finds its cached tail stale:
              a failed PutItem (ALL_OLD), a backoff, Query latest, PutItem (context for the contention bench)

and the HTTP API's retry protocol (seglog_core.idempotence, every request carries entry_id and since):

    protocol        since = the client's previous answer: one consistent Query from since (it returns that entry)
                    + one PutItem; target 1 RRU + 1 WRU
    protocol retry  the identical request again after the first landed (a lost answer): the Query finds the
                    entry id, nothing is written
    16 behind       since 16 entries back (other writers appended meanwhile): the Query reads them all
    expected        ``expected`` = the next position, as routes.append_entry turns it into a strict append after
                    ``expected - 1`` (routes.retry_position): it costs what ``since`` costs, a consistent Query +
                    one PutItem, not one PutItem alone (the server must check that the position exists and
                    that no earlier try of the entry id landed; only a library client that knows the tail skips
                    the read, as "cached" shows)
    uniqueness item the alternative weighed against it: a transaction that puts the entry and a guard item keyed
                    by the entry id, each conditional (seed 000: a transaction costs twice per item)
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from bench.support import Headline, entry_item, item_size, sized_body, standalone
from seglog_aws.backend import Backend
from seglog_core.idempotence import Position, append_after
from seglog_core.log import Appended
from seglog_core.schema import SetCell
from seglog_services.api.routes import retry_position
from seglog_services.api.schemas import PositionIn

OPERATIONS = ("PutItem", "Query", "GetItem", "TransactWriteItems")


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What ``appends`` appends cost, in total."""

    name: str
    appends: int
    calls: Counter[str]
    rcu: float
    wcu: float
    attempts: int

    @property
    def failed_puts(self) -> int:
        """PutItem calls that did not store this append (each append stores exactly one item)."""
        return self.calls["PutItem"] - self.appends

    def per(self, value: float) -> float:
        return value / self.appends


def measure(backend: Backend, name: str, appends: int, append: Callable[[], Appended]) -> Cost:
    backend.meter.reset()
    attempts = sum(append().attempts for _ in range(appends))
    snap = backend.meter.snapshot()
    return Cost(name=name, appends=appends, calls=Counter({op: int(v["calls"]) for op, v in snap.items()}),
                rcu=sum(v["rcu"] for v in snap.values()), wcu=sum(v["wcu"] for v in snap.values()),
                attempts=attempts)


def cold(backend: Backend, body: SetCell, n: int) -> Cost:
    log_id = backend.event_log().create()
    return measure(backend, "cold (new EventLog each)", n, lambda: backend.event_log().append(log_id, body))


def cached(backend: Backend, body: SetCell, n: int) -> Cost:
    writer = backend.event_log(cache_tail=True, retry_horizon=math.inf)
    log_id = writer.create()
    writer.append(log_id, body)  # the tail is known from create already; one more to be sure it is warm
    return measure(backend, "cached tail", n, lambda: writer.append(log_id, body))


def conflict(backend: Backend, body: SetCell, n: int) -> Cost:
    a, b = (backend.event_log(cache_tail=True, retry_horizon=math.inf),
            backend.event_log(cache_tail=True, retry_horizon=math.inf))
    log_id = a.create()
    b.append(log_id, body)
    turn = iter(range(n))

    def next_writer() -> Appended:
        return (a if next(turn) % 2 == 0 else b).append(log_id, body)

    return measure(backend, "cached tail, other writer between", n, next_writer)


def protocol(backend: Backend, body: SetCell, n: int) -> list[Cost]:
    """The HTTP API's appends: since = the previous answer; the retry of a landed one; since 16 entries back."""
    writer = backend.event_log(cache_tail=False)
    log_id = writer.create()
    since = Position(segment=0, num=0)
    sent: list[tuple[uuid.UUID, Position]] = []

    def fresh() -> Appended:
        nonlocal since
        entry_id = uuid.uuid4()
        sent.append((entry_id, since))
        done = append_after(writer, log_id, body, entry_id=entry_id, since=since)
        since = Position.of(done.entry)
        return done

    normal = measure(backend, "protocol (since = last answer)", n, fresh)
    again = iter(list(sent))

    def retry() -> Appended:
        entry_id, first_since = next(again)
        done = append_after(writer, log_id, body, entry_id=entry_id, since=first_since)
        assert done.deduplicated
        return done

    retried = measure(backend, "protocol retry (first try landed)", n, retry)

    def behind() -> Appended:
        for _ in range(15):
            writer.append(log_id, body)
        backend.meter.reset()
        return append_after(writer, log_id, body, entry_id=uuid.uuid4(), since=since)

    lagging = [measure(backend, "", 1, behind) for _ in range(max(2, n // 10))]
    far = Cost(name="protocol, since 16 entries back", appends=len(lagging),
               calls=sum((c.calls for c in lagging), Counter()), rcu=sum(c.rcu for c in lagging),
               wcu=sum(c.wcu for c in lagging), attempts=sum(c.attempts for c in lagging))
    return [normal, retried, far]


def expected(backend: Backend, body: SetCell, n: int) -> Cost:
    """The API's ``expected`` append: the request's fields through the route's own translation, then append_after."""
    writer = backend.event_log(cache_tail=False)
    log_id = writer.create()
    at = Position(segment=0, num=0)

    def next_position() -> Appended:
        nonlocal at
        entry_id, since, strict = retry_position(uuid.uuid4(), None, PositionIn(segment=at.segment, num=at.num + 1))
        done = append_after(writer, log_id, body, entry_id=entry_id, since=since, strict=strict)
        at = Position.of(done.entry)
        return done

    return measure(backend, "protocol, expected = next position", n, next_position)


def uniqueness_item(backend: Backend, body: SetCell, n: int) -> Cost:
    """The weighed alternative: entry and a guard item keyed by the entry id, in one conditional transaction."""
    ddb, table_name = backend.store._ddb, backend.store.entries_table
    log_id = uuid.uuid4()
    rcu = wcu = 0.0
    for num in range(1, n + 1):
        entry = entry_item(log_id, num, body)
        guard = {"G": {"B": b"K" + entry["K"]["B"]}, "N": {"N": "0"}}
        answer = ddb.transact_write_items(ReturnConsumedCapacity="TOTAL", TransactItems=[
            {"Put": {"TableName": table_name, "Item": entry, "ConditionExpression": "attribute_not_exists(N)"}},
            {"Put": {"TableName": table_name, "Item": guard, "ConditionExpression": "attribute_not_exists(N)"}},
        ])
        for used in answer.get("ConsumedCapacity", []):
            wcu += used.get("WriteCapacityUnits", used.get("CapacityUnits", 0.0))
            rcu += used.get("ReadCapacityUnits", 0.0)
    return Cost(name="uniqueness item (transaction)", appends=n, calls=Counter({"TransactWriteItems": n}),
                rcu=rcu, wcu=wcu, attempts=n)


def table(costs: list[Cost]) -> str:
    ops = [op for op in OPERATIONS if any(c.calls[op] for c in costs)]
    ops += sorted({op for c in costs for op in c.calls} - set(ops))
    head = f"{'scenario':<36}{'appends':>8}" + "".join(f"{op:>10}" for op in ops)
    head += f"{'failed Put':>11}{'RCU':>8}{'WCU':>8}{'attempts':>10}"
    rows = [head, "-" * len(head)]
    for c in costs:
        row = f"{c.name:<36}{c.appends:>8}" + "".join(f"{c.per(c.calls[op]):>10.2f}" for op in ops)
        row += f"{c.per(c.failed_puts):>11.2f}{c.per(c.rcu):>8.2f}{c.per(c.wcu):>8.2f}{c.per(c.attempts):>10.2f}"
        rows.append(row)
    note = "(calls, RCU and WCU per append, as the meter saw them. A failed conditional PutItem returns no\n" \
           " ConsumedCapacity; the meter counts the 1 WRU DynamoDB bills for it on this item)"
    return "\n".join(rows) + "\n" + note


def _calls(c: Cost) -> str:
    return " + ".join(f"{c.per(c.calls[op]):g} {op}" for op in OPERATIONS if c.calls[op]) or "no calls"


def run(backend: Backend, quick: bool) -> list[Headline]:
    n = 20 if quick else 200
    body = sized_body()
    size = item_size(entry_item(uuid.uuid4(), 1000, body))
    print(f"\n## append cost per call ({backend.store.entries_table}; entry item {size} B)")
    costs = [cold(backend, body, n), cached(backend, body, n), conflict(backend, body, n)]
    costs += [*protocol(backend, body, n), expected(backend, body, n), uniqueness_item(backend, body, n)]
    print(table(costs))
    c_cold, c_cached, c_conflict, c_protocol, c_retry, _, c_expected, c_unique = costs
    cached_met = (
        c_cached.calls == Counter({"PutItem": n}) and c_cached.wcu == n * 1.0 and c_cached.rcu == 0
        and c_cached.attempts == n
    )
    cold_met = c_cold.calls == Counter({"Query": 2 * n, "PutItem": n}) and c_cold.wcu == n * 1.0
    return [
        Headline(name="cold append", figure=f"{_calls(c_cold)}, {c_cold.per(c_cold.rcu):g} RCU, "
                 f"{c_cold.per(c_cold.wcu):g} WCU", target="2 Query (segments, latest) + 1 PutItem, 1.0 WRU",
                 met=cold_met),
        Headline(name="cached-tail append", figure=f"{_calls(c_cached)}, {c_cached.per(c_cached.rcu):g} RCU, "
                 f"{c_cached.per(c_cached.wcu):g} WCU", target="exactly 1 PutItem, 1.0 WRU, 0 reads",
                 met=cached_met),
        Headline(name="cached-tail append, other writer between", figure=f"{_calls(c_conflict)}, "
                 f"{c_conflict.per(c_conflict.rcu):g} RCU, {c_conflict.per(c_conflict.wcu):g} WCU metered "
                 f"(+{c_conflict.per(c_conflict.failed_puts):g} failed PutItem, metered at the 1 WRU it is billed), "
                 f"{c_conflict.per(c_conflict.attempts):g} attempts", target="none, context", met=None),
        Headline(name="API append (retry protocol)", figure=f"{_calls(c_protocol)}, "
                 f"{c_protocol.per(c_protocol.rcu):g} RRU + {c_protocol.per(c_protocol.wcu):g} WRU; a retry "
                 f"{c_retry.per(c_retry.rcu):g} RRU + {c_retry.per(c_retry.wcu):g} WRU; a uniqueness-item "
                 f"transaction {c_unique.per(c_unique.wcu):g} WRU metered (AWS bills 2 per item: 4)",
                 target="1 Query + 1 PutItem, <= 1 RRU + 1 WRU",
                 met=c_protocol.calls == Counter({"Query": n, "PutItem": n}) and c_protocol.per(c_protocol.rcu) <= 1.0
                 and c_protocol.per(c_protocol.wcu) == 1.0),
        Headline(name="API append with expected", figure=f"{_calls(c_expected)}, "
                 f"{c_expected.per(c_expected.rcu):g} RRU + {c_expected.per(c_expected.wcu):g} WRU",
                 target="what README and OpenAPI say: 1 consistent Query + 1 PutItem, <= 1 RRU + 1 WRU",
                 met=c_expected.calls == Counter({"Query": n, "PutItem": n}) and c_expected.per(c_expected.rcu) <= 1.0
                 and c_expected.per(c_expected.wcu) == 1.0),
    ]


if __name__ == "__main__":
    standalone(__doc__.splitlines()[0], run)
