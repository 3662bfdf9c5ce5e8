"""Aggregator: what the console knows, from the events it is fed — bounded however long the run.

Detail (bars and markers) lives in a :class:`~.window.Window`; everything also goes into running totals that
never grow with time: invocations per function and outcome, faults by kind, crash points, job outcomes,
client tries, the :class:`~.metering.Metering`, the pollers' figures. Invocations in flight are kept until they
end, their process is known dead, or :data:`IN_FLIGHT_SECONDS` pass (Lambda's longest timeout); at most
:data:`MAX_IN_FLIGHT`. Every keyed table is capped, so bad input (made-up names) cannot grow it either.

Times in the state are seconds since the console started (``started_at``, Unix time), as in the report's model.
An event that makes no sense is counted as malformed and otherwise ignored: :meth:`Aggregator.ingest` never
raises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec
import structlog

from seglog_report import events
from seglog_report.console.window import MAX_AGE_SECONDS, MAX_ITEMS, Item, Window
from seglog_report.legend import CHILD_RESTART, CRASH_POINT, EMULATOR_STARTED, EMULATOR_STOPPED
from seglog_report.metering import Metering, number
from seglog_report.model import Marker, Span

log = structlog.get_logger("seglog.console")

#: An invocation still in flight after this long ended without word (15 minutes: Lambda's longest timeout).
IN_FLIGHT_SECONDS: Final = 900.0
MAX_IN_FLIGHT: Final = 2000
#: Keys per counted table (functions, fault kinds, outcomes, shards, pollers); the rest count as "(other)".
MAX_KEYS: Final = 64
OTHER: Final = "(other)"
#: A shard or poller not heard of for this long is no longer shown.
STALE_SECONDS: Final = 60.0
#: A stream shard whose iterator age is past this and grew in each of its last STALLED_PERIODS reports is shown
#: stalled. A healthy shard under faults waits for a few failed tries at most: each costs at most the router's
#: timeout (30 s in the template) and a retry pause (at most 2 s, seglog_awsmodel.stream_batches), and two in a
#: row are rare at the demo's rates. Past a minute and still growing, the poller is not getting through: it
#: stopped trying, or fails the same way each time (issue 19: one restart fired in every new poller process).
#: This is a warning, so it comes early: the simulator fails a seed only past seglog_sim.liveness.stream_bound
#: (162.75 s: five such tries in a row, which no seed of 1-5,300 came near).
STALLED_AGE_MS: Final = 60_000.0
#: Reports in a row (every 5 s, seglog_emulator.pollers.usage) whose age grew: "keeps growing", not one slow batch.
STALLED_PERIODS: Final = 2


def stalled(age_ms: float, growing: int) -> bool:
    """Whether a shard whose iterator age is ``age_ms`` and grew in ``growing`` reports in a row is stalled."""
    return age_ms >= STALLED_AGE_MS and growing >= STALLED_PERIODS


class Counter(dict[str, int]):
    """Counts by key, at most :data:`MAX_KEYS` keys (the last one :data:`OTHER`, for the rest)."""

    def add(self, key: str, n: int = 1) -> None:
        if key not in self and len(self) >= MAX_KEYS - 1:
            key = OTHER
        self[key] = self.get(key, 0) + n


def capped_set(table: dict[str, Any], key: str, value: Any) -> None:
    """``table[key] = value``, dropping the entry set longest ago when the table is full."""
    table.pop(key, None)
    if len(table) >= MAX_KEYS:
        table.pop(next(iter(table)))
    table[key] = value


class Aggregator:
    """Thread-safe: the feed's receiver calls :meth:`ingest`, the stack probe :meth:`stack`, the SSE pump
    :meth:`since` and each new page :meth:`state`.

    Args:
        clock: Unix time (a seam: the benchmark feeds an hour in seconds).
        region: prices the cost in this region's table.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time, max_items: int = MAX_ITEMS,
                 max_age: float = MAX_AGE_SECONDS, region: str = "us-east-1") -> None:
        self.clock = clock
        self.started_at = clock()
        self.window = Window(max_items=max_items, max_age=max_age)
        self.metering = Metering(region)
        self.in_flight: dict[str, dict[str, Any]] = {}
        self.invocations: dict[str, Counter] = {}
        self.faults, self.crash_points, self.jobs, self.clients = Counter(), Counter(), Counter(), Counter()
        self.routed = self.restarts = self.received = self.malformed = 0
        self.pollers: dict[str, dict[str, Any]] = {}
        self.shards: dict[str, dict[str, Any]] = {}
        self.stack_reading: dict[str, Any] = {}
        #: Bumped by every change; a page at the same version shows the same state.
        self.version = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ input

    def ingest(self, event: Any) -> None:
        """Take one fed event; never raises."""
        with self._lock:
            self.received += 1
            self.version += 1
            try:
                if not isinstance(event, Mapping) or not isinstance(event.get("event"), str):
                    raise ValueError("not an event")
                handler = _HANDLERS.get(event["event"])
                if handler is not None:
                    handler(self, event)
            except Exception as exc:  # bad input is counted, never a crash
                self.malformed += 1
                log.debug("console event not understood", error=f"{type(exc).__name__}: {exc}")

    def stack(self, reading: dict[str, Any]) -> None:
        """The stack probe's latest figures (queue depths, pending snapshots per log)."""
        with self._lock:
            if reading != self.stack_reading:
                self.stack_reading = reading
                self.version += 1

    def tick(self) -> None:
        """Drop what is past the window's age and invocations in flight for too long."""
        with self._lock:
            now = self._rel(self.clock())
            changed = self.window.expire(now)
            for request_id, flight in list(self.in_flight.items()):
                if now - flight["start"] > IN_FLIGHT_SECONDS:
                    self._abandon(request_id, now, "no end heard")
                    changed = True
            if changed:
                self.version += 1

    # ------------------------------------------------------------------------------------------ output

    def state(self, upto: int | None = None) -> dict[str, Any]:
        """Everything the page draws: the window's items (numbered up to ``upto``; all by default), in flight,
        the panels."""
        with self._lock:
            last = self.window.last if upto is None else min(upto, self.window.last)
            return {"v": self.version, "started_at": self.started_at, "low": self.window.low, "last": last,
                    "items": self.window.upto(last), **self._live()}

    def since(self, n: int) -> dict[str, Any]:
        """A delta: the items after ``n``, the window's ``low`` and ``last``, in flight and the panels."""
        with self._lock:
            return {"v": self.version, "low": self.window.low, "last": self.window.last,
                    "items": self.window.after(n), **self._live()}

    def _live(self) -> dict[str, Any]:
        now = self._rel(self.clock())
        for table in (self.pollers, self.shards):
            for key in [k for k, v in table.items() if now - v["at"] > STALE_SECONDS]:
                del table[key]
        in_flight = Counter()
        for flight in self.in_flight.values():
            in_flight.add(flight["function"])
        return {
            "now": round(now, 3),
            "in_flight": sorted(self.in_flight.values(), key=lambda f: f["start"])[:200],
            "panels": {
                "in_flight": dict(in_flight), "invocations": {f: dict(c) for f, c in self.invocations.items()},
                "faults": dict(self.faults), "crash_points": dict(self.crash_points), "jobs": dict(self.jobs),
                "clients": dict(self.clients), "routed": self.routed, "restarts": self.restarts,
                "pollers": self.pollers, "iterator_age": self.shards, "stack": self.stack_reading,
                "stalled_shards": sorted(k for k, v in self.shards.items() if v["stalled"]),
                "cost": self.metering.cost(),
                "feed": {"received": self.received, "malformed": self.malformed, "retained": len(self.window),
                         "evicted": self.window.evicted},
            },
        }

    # ------------------------------------------------------------------------------------------ helpers

    def _rel(self, ts: Any) -> float:
        """Unix time ``ts`` as seconds since the console started (now when ``ts`` is not a time)."""
        value = number(ts) or self.clock()
        return round(value - self.started_at, 3)

    def _outcomes(self, function: str) -> Counter:
        """The outcome counts of ``function`` (at most :data:`MAX_KEYS` functions, the rest as one)."""
        if function not in self.invocations and len(self.invocations) >= MAX_KEYS - 1:
            function = OTHER
        return self.invocations.setdefault(function, Counter())

    def _add(self, thing: Span | Marker, now: float) -> None:
        item: Item = msgspec.to_builtins(thing)
        item["type"] = "span" if isinstance(thing, Span) else "marker"
        self.window.add(item, now)

    def _mark(self, event: Mapping[str, Any], kind: str, label: str, lane: str | None = None,
              ids: dict[str, str | int] | None = None) -> None:
        lane = lane or events.text(event.get("lane"), "emulator")
        at = self._rel(event.get("ts"))
        self._add(Marker(lane=lane, group=events.group(lane), at=at, kind=kind, label=label, ids=ids or {}), at)

    def _abandon(self, request_id: str, now: float, why: str) -> None:
        """An invocation in flight that will never report its end: drawn up to ``now`` as incomplete."""
        flight = self.in_flight.pop(request_id)
        self._outcomes(flight["function"]).add("incomplete")
        self._add(Span(lane=flight["lane"], group="function", start=flight["start"], end=max(now, flight["start"]),
                       outcome="incomplete", label=f"{flight['function']}: {why}",
                       ids={"request_id": request_id, "pid": flight["pid"]}), now)

    def _abandon_all(self, now: float, why: str, sender: int | None = None) -> None:
        for request_id in [r for r, f in self.in_flight.items() if sender is None or f["sender"] == sender]:
            self._abandon(request_id, now, why)

    # ------------------------------------------------------------------------------------------ events

    def _started(self, event: Mapping[str, Any]) -> None:
        request_id = events.text(event.get("request_id"), "")
        if not request_id:
            raise ValueError("invocation started without a request_id")
        function, pid = events.text(event.get("function"), "?"), int(number(event.get("pid")))
        now = self._rel(event.get("ts"))
        if request_id not in self.in_flight and len(self.in_flight) >= MAX_IN_FLIGHT:
            self._abandon(next(iter(self.in_flight)), now, "too many in flight to follow")
        self.in_flight[request_id] = {
            "request_id": request_id, "function": function, "pid": pid, "lane": events.function_lane(function, pid),
            "start": now, "source": events.text(event.get("source"), ""), "sender": int(number(event.get("sender")))}

    def _invocation(self, event: Mapping[str, Any]) -> None:
        function, pid = events.text(event.get("function"), "?"), int(number(event.get("pid")))
        outcome = events.text(event.get("outcome"), "?")
        end = self._rel(event.get("ts"))
        duration = number(event.get("duration_ms"))
        request_id = events.text(event.get("request_id"), "")
        flight = self.in_flight.pop(request_id, None) or {}
        ids = events.ids(event, flight.get("job"))
        self._outcomes(function).add(outcome)
        self.metering.invocation(event)
        job = flight.get("job") or {}
        label = f"{function}: {outcome}, {duration:.0f} ms" + (f", job {job['outcome']}" if job else "")
        # As the report draws it: a successful invocation that ran a snapshot job shows the job's outcome.
        shown = job["outcome"] if outcome == "success" and job else outcome
        self._add(Span(lane=events.function_lane(function, pid), group="function",
                       start=round(end - duration / 1000, 3), end=end, outcome=shown, label=label, ids=ids), end)

    def _job(self, event: Mapping[str, Any]) -> None:
        outcome = events.text(event.get("outcome"), "?")
        self.jobs.add(outcome)
        flight = self.in_flight.get(events.text(event.get("request_id"), ""))
        if flight is not None:
            flight["job"] = {"outcome": outcome, **{k: event[k] for k in ("log_id", "segment", "entry")
                                                    if isinstance(event.get(k), str | int)}}

    def _fault(self, event: Mapping[str, Any]) -> None:
        kind = events.text(event.get("fault"), "?")
        self.faults.add(kind)
        self._mark(event, kind, f"fault: {kind}", ids=events.ids(event))
        if kind == "supervisor_restart":  # every emulator process dies: nothing in flight will report
            self._abandon_all(self._rel(event.get("ts")), "the supervisor was killed")

    def _crash(self, event: Mapping[str, Any]) -> None:
        point = events.text(event.get("crash_point"), "?")
        self.crash_points.add(point)
        # One kind for every point (one symbol in the legend, as in the report); the label names the point.
        self._mark(event, CRASH_POINT, f"{point}: the worker kills itself here", ids=events.ids(event))

    def _restart(self, event: Mapping[str, Any]) -> None:
        self.restarts += 1
        child = events.text(event.get("child"), "?")
        self._mark(event, CHILD_RESTART, f"{child} exited ({event.get('status')}): restarted", lane="supervisor")
        pid = int(number(event.get("pid")))
        if pid:  # what that child was invoking will never report its end
            self._abandon_all(self._rel(event.get("ts")), f"{child} died", sender=pid)

    def _emulator(self, event: Mapping[str, Any]) -> None:
        kind = EMULATOR_STARTED if event["event"] == "emulator started" else EMULATOR_STOPPED
        if kind == EMULATOR_STARTED:  # a new supervisor: whatever the last one had in flight is gone with it
            self._abandon_all(self._rel(event.get("ts")), "the emulator restarted")
        self._mark(event, kind, event["event"], lane="supervisor")

    def _routed(self, _event: Mapping[str, Any]) -> None:
        self.routed += 1

    def _poller(self, event: Mapping[str, Any]) -> None:
        name = events.text(event.get("poller"), "?")
        at = self._rel(event.get("ts"))
        before = self.pollers.get(name, {})
        figures = {"service": events.text(event.get("service"), "?"), "at": at,
                   "requests": int(before.get("requests", 0) + number(event.get("requests"))),
                   "oldest_age_ms": number(event.get("oldest_age_ms"))}
        capped_set(self.pollers, name, figures)
        self.metering.poller(event)
        shards = event.get("shards")
        if isinstance(shards, Mapping):
            for shard, age in list(shards.items())[:MAX_KEYS]:
                key, age_ms = str(shard)[:80], number(age)
                last = self.shards.get(key, {})
                growing = last.get("growing", 0) + 1 if age_ms > last.get("age_ms", age_ms) else 0
                capped_set(self.shards, key, {"poller": name, "age_ms": age_ms, "at": at, "growing": growing,
                                              "stalled": stalled(age_ms, growing)})

    def _request(self, event: Mapping[str, Any]) -> None:
        self.metering.request(event)

    def _client(self, event: Mapping[str, Any]) -> None:
        client = events.text(event.get("client"), "?")
        status = events.text(event.get("status"), "?")
        start, end = self._rel(event.get("start")), self._rel(event.get("end"))
        self.clients.add(status)
        lane = events.client_lane(client)
        ids: dict[str, str | int] = {"attempt": int(number(event.get("attempt")))}
        if isinstance(event.get("log_id"), str):
            ids["log_id"] = event["log_id"][:80]
        self._add(Span(lane=lane, group="client", start=min(start, end), end=end, outcome=events.try_outcome(status),
                       label=f"{client}: {events.text(event.get('method'), '')} {status}".replace("  ", " "),
                       ids=ids), end)


_HANDLERS: Final[dict[str, Callable[[Aggregator, Mapping[str, Any]], None]]] = {
    "invocation started": Aggregator._started,
    "invocation": Aggregator._invocation,
    "snapshot job": Aggregator._job,
    "fault injected": Aggregator._fault,
    "crash point reached: killing this process": Aggregator._crash,
    "child exited: restarting": Aggregator._restart,
    "emulator started": Aggregator._emulator,
    "emulator stopped": Aggregator._emulator,
    "routed": Aggregator._routed,
    "poller usage": Aggregator._poller,
    "request": Aggregator._request,
    "client try": Aggregator._client,
}
