"""The console's server: datagrams in, a page, /events and /state out; slow pages and bad datagrams handled; the
stack probe's readings (queue depths, pending snapshots per log)."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Generator, Iterator
from typing import Any

import msgspec
import pytest

from seglog_report.console import Console, StackProbe
from seglog_report.console.stream import QUEUE_LIMIT
from seglog_report.legend import BLUE, legend
from seglog_report.model import GROUPS


@pytest.fixture
def console() -> Iterator[Console]:
    with Console() as running:
        yield running


def feed(console: Console, *events: Any) -> None:
    host, port = console.feed_address.rsplit(":", 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
        for event in events:
            out.sendto(event if isinstance(event, bytes) else json.dumps(event).encode(), (host, int(port)))


def get(console: Console, path: str) -> bytes:
    with urllib.request.urlopen(console.url + path.lstrip("/"), timeout=10) as answer:
        body: bytes = answer.read()
        return body


def state(console: Console) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(get(console, "/state"))
    return found


def wait_for(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def events(console: Console) -> Generator[tuple[str, dict[str, Any]]]:
    """The /events stream as (name, data), as an EventSource reads it."""
    host, port = console.server.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=10)
    connection.request("GET", "/events")
    answer = connection.getresponse()
    assert "text/event-stream" == answer.headers["Content-Type"]
    name, data = "message", []
    try:
        while line := answer.fp.readline():
            text = line.decode().rstrip("\n")
            if text.startswith("event: "):
                name = text[len("event: "):]
            elif text.startswith("data: "):
                data.append(text[len("data: "):])
            elif not text and data:
                yield name, json.loads("\n".join(data))
                name, data = "message", []
    finally:
        connection.close()


def test_fed_invocations_reach_a_page_as_a_state_then_deltas_and_state_agrees(console: Console) -> None:
    stream = events(console)
    name, first = next(stream)
    assert ("state", []) == (name, first["items"])
    now = time.time()
    feed(console, {"event": "invocation started", "ts": now, "function": "F", "pid": 9, "request_id": "r1"},
         {"event": "invocation", "ts": now + 0.5, "function": "F", "pid": 9, "request_id": "r1",
          "outcome": "error", "duration_ms": 500})
    seen: list[dict[str, Any]] = []
    for name, delta in stream:
        assert "delta" == name
        seen += delta["items"]
        if seen:
            break
    stream.close()

    [span] = seen
    assert ("F pid 9", "error", "r1") == (span["lane"], span["outcome"], span["ids"]["request_id"])
    assert [span] == state(console)["items"]


def test_a_page_that_stops_reading_costs_the_console_one_bounded_queue() -> None:
    with Console(push_seconds=0.01) as console:
        slow_page(console)


def slow_page(console: Console) -> None:
    host, port = console.server.server_address[:2]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as slow:
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect((str(host), int(port)))
        slow.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads
        wait_for(lambda: console.broadcaster.subscribers())
        for burst in range(200):  # pushes of ~50 markers: the page's socket buffers fill, then its queue
            feed(console, *({"event": "fault injected", "ts": time.time(), "fault": "reorder", "lane": "q" * 80,
                             "key": f"{burst}-{i}-" + "x" * 80} for i in range(50)))
            time.sleep(0.01)
            [subscriber] = console.broadcaster.subscribers()
            assert len(subscriber) <= QUEUE_LIMIT
        wait_for(lambda: console.broadcaster.subscribers()[0].resyncs > 0)
        assert state(console)["panels"]["feed"]["received"] > 0  # the console still answers


def test_datagrams_that_are_not_events_are_counted_and_the_rest_still_count(console: Console) -> None:
    feed(console, b"\xff\xfe not json", b"[1, 2]", {"event": "routed", "ts": time.time()})
    wait_for(lambda: state(console)["panels"]["feed"]["received"] == 3)

    panels = state(console)["panels"]
    assert (2, 1) == (panels["feed"]["malformed"], panels["routed"])


def test_the_page_embeds_the_legend_and_loads_plotly_from_the_console(console: Console) -> None:
    """The page draws in the report's visual language: the server embeds seglog_report.legend's tables whole."""
    page = get(console, "/").decode()
    assert "__SEGLOG_CONFIG__" not in page
    embedded = page.split('<script id="seglog-config" type="application/json">', 1)[1].split("</script>", 1)[0]
    config = json.loads(embedded)
    assert msgspec.to_builtins(legend()) == config["legend"] and list(GROUPS) == config["groups"]
    assert {"symbol": "cross", "color": BLUE} == config["legend"]["faults"]["ddb_5xx"]
    assert '<script src="plotly.min.js">' in page and "https://" not in page
    assert b"Plotly" in get(console, "/plotly.min.js")[:5000]
    with pytest.raises(urllib.error.HTTPError) as missing:
        get(console, "/nothing")
    assert 404 == missing.value.code
    missing.value.close()


def test_a_busy_port_fails_at_once_and_leaves_no_feed_socket_behind(console: Console) -> None:
    port = console.server.server_address[1]
    with pytest.raises(OSError):
        Console(port=port)


class FakeSqs:
    def __init__(self, depths: dict[str, tuple[int, int]]) -> None:
        self.depths = depths

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
        visible, hidden = self.depths[QueueUrl]
        return {"Attributes": {"ApproximateNumberOfMessages": str(visible),
                               "ApproximateNumberOfMessagesNotVisible": str(hidden)}}


class Item:
    def __init__(self, log_id: str) -> None:
        self.log_id = log_id


def test_the_probe_reads_queue_depths_and_pending_snapshots_per_log() -> None:
    probe = StackProbe(FakeSqs({"q": (3, 2), "d": (1, 0)}), {"queue": "q", "dlq": "d", "none": ""},
                       lambda: [Item("L1"), Item("L2"), Item("L1")])

    assert {"queues": {"queue": {"visible": 3, "in_flight": 2}, "dlq": {"visible": 1, "in_flight": 0}},
            "pending": {"L1": 2, "L2": 1}, "pending_total": 3} == probe.read()


def test_a_probe_whose_stack_is_down_says_so_and_keeps_what_it_could_read() -> None:
    def down() -> list[Item]:
        raise ConnectionError("connection refused")

    reading = StackProbe(FakeSqs({"q": (0, 0)}), {"queue": "q", "dlq": "gone"}, down).read()

    assert {"queue": {"visible": 0, "in_flight": 0}} == reading["queues"]
    assert ["dlq: KeyError: 'gone'", "pending: ConnectionError: connection refused"] == reading["errors"]
