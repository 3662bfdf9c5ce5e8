"""Server-sent events: the framing, bounded per-page queues (drop and resync), and a page that applies a state and
its deltas ending with what the console holds (WHATWG HTML, "Server-sent events")."""

from __future__ import annotations

import json
from typing import Any

from seglog_report.console.aggregator import Aggregator
from seglog_report.console.stream import RESYNC, Broadcaster, Subscriber, frame


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def parse(message: bytes) -> tuple[str, dict[str, Any]]:
    """One event as an EventSource reads it: its name and its data lines joined by newlines."""
    name, data = "message", []
    for line in message.decode().split("\n"):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data.append(line[len("data: "):])
    return name, json.loads("\n".join(data))


def test_a_frame_is_named_numbered_and_ends_with_a_blank_line() -> None:
    message = frame("delta", {"seq": 3, "label": "two\nlines"}, event_id=3)

    assert message.startswith(b"event: delta\nid: 3\ndata: ")
    assert message.endswith(b"\n\n") and message.count(b"\n\n") == 1
    assert ("delta", {"seq": 3, "label": "two\nlines"}) == parse(message)


def test_a_page_that_does_not_read_never_holds_more_than_its_queue_then_gets_a_resync() -> None:
    subscriber = Subscriber(limit=8)
    for n in range(10_000):
        subscriber.offer(frame("delta", {"seq": n}))
        assert len(subscriber) <= 8

    assert RESYNC == subscriber.take(0.1)
    assert subscriber.take(0.05) is None  # nothing queued after the resync until the next push
    subscriber.offer(b"next")
    assert b"next" == subscriber.take(0.1)
    assert subscriber.resyncs >= 1 and subscriber.dropped >= 10_000 - 8


def test_a_closed_subscriber_wakes_its_reader() -> None:
    subscriber = Subscriber()
    subscriber.close()
    assert subscriber.take(5.0) is None


def test_state_then_deltas_applied_as_the_page_does_equal_what_the_console_holds() -> None:
    clock = Clock()
    aggregator = Aggregator(clock=clock, max_items=50)
    broadcaster = Broadcaster(aggregator)
    for i in range(30):  # before the page connects
        aggregator.ingest({"event": "invocation", "ts": clock.now, "function": "F", "pid": 1, "request_id": f"a{i}",
                           "outcome": "success", "duration_ms": 5})
    broadcaster.pump()
    subscribed = broadcaster.subscribe()
    assert subscribed is not None
    subscriber, first = subscribed
    name, page = parse(first)
    assert "state" == name and 30 == len(page["items"])

    for burst in range(5):  # 100 more: the window (50) rolls over while the page follows
        for i in range(20):
            clock.now += 0.1
            aggregator.ingest({"event": "fault injected", "ts": clock.now, "fault": "reorder", "lane": "q",
                               "n": f"{burst}.{i}"})
        assert broadcaster.pump()
        assert not broadcaster.pump()  # nothing new: no push
        name, delta = parse(subscriber.take(1.0) or b"")
        assert "delta" == name and page["seq"] + 1 == delta["seq"]
        page = {**page, **delta, "items": [i for i in page["items"] + delta["items"] if i["n"] >= delta["low"]]}

    held = broadcaster.state()
    assert held["seq"] == page["seq"]
    assert [i["n"] for i in held["items"]] == [i["n"] for i in page["items"]]
    assert 50 == len(page["items"]) and 130 == held["panels"]["feed"]["received"]


def test_too_many_pages_are_refused() -> None:
    broadcaster = Broadcaster(Aggregator(clock=Clock()), max_subscribers=2)
    assert broadcaster.subscribe() is not None and broadcaster.subscribe() is not None
    assert broadcaster.subscribe() is None
