"""The console feed: selected log events as JSON datagrams, sent without waiting, never raising, never too large."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator

import pytest
import structlog

from seglog_core import logs
from seglog_emulator import logfeed


@pytest.fixture
def console(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A UDP socket standing in for the console, its address in the feed variable."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(2.0)
    monkeypatch.setenv(logfeed.ENV_VAR, f"127.0.0.1:{receiver.getsockname()[1]}")
    yield receiver
    receiver.close()


def received(receiver: socket.socket) -> dict[str, object]:
    data, _ = receiver.recvfrom(65536)
    message: dict[str, object] = json.loads(data)
    return message


def test_forwarded_events_reach_the_console_with_their_lane_and_the_rest_are_not_sent(
        console: socket.socket, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(json=True, level=logging.INFO)
    assert logfeed.install("queue:F.E")
    log = structlog.get_logger("t")
    log.info("not forwarded", x=1)
    log.info("invocation", function="F", request_id="r1", outcome="success", duration_ms=3.5)

    message = received(console)
    assert ("invocation", "queue:F.E", "r1") == (message["event"], message["lane"], message["request_id"])
    assert isinstance(message["ts"], float) and isinstance(message["sender"], int)
    console.settimeout(0.2)
    with pytest.raises(TimeoutError):  # the other line was logged, not sent
        received(console)
    assert "not forwarded" in capsys.readouterr().err


def test_a_warning_process_still_forwards_info_events_but_keeps_its_log_at_warning(
        console: socket.socket, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI logs at WARNING by default; faults it decides (info lines) must still reach the console."""
    logs.configure(json=True, level=logging.WARNING)
    assert logfeed.install("chaos")
    structlog.get_logger("t").info("fault injected", fault="supervisor_restart")

    assert "supervisor_restart" == received(console)["fault"]
    assert "fault injected" not in capsys.readouterr().err


def test_without_the_variable_nothing_is_installed_or_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(logfeed.ENV_VAR, raising=False)
    logs.configure(json=True, level=logging.INFO)

    assert not logfeed.install("supervisor")
    assert not any(isinstance(p, logfeed.Forwarder) for p in structlog.get_config()["processors"])
    logfeed.send({"event": "invocation started"})  # a no-op, not an error


@pytest.mark.parametrize("value", ["nonsense", "127.0.0.1:", "127.0.0.1:99999", ":80"])
def test_a_malformed_address_turns_the_feed_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(logfeed.ENV_VAR, value)
    assert logfeed.address() is None


def test_send_never_raises_when_the_console_is_gone_or_the_event_is_odd(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv(logfeed.ENV_VAR, f"127.0.0.1:{port}")  # nobody listens there now
    for _ in range(3):
        logfeed.send({"event": "invocation", "odd": object(), "bytes": b"\xff"})


def test_a_large_event_is_cut_to_one_datagram_keeping_its_ids() -> None:
    message = {"event": "invocation", "request_id": "r", "outcome": "error", "error_message": "x" * 50_000,
               "exception": "trace " * 10_000}
    data = logfeed.encode(message)

    assert data is not None and len(data) <= logfeed.MAX_DATAGRAM
    decoded = json.loads(data)
    assert ("r", "error") == (decoded["request_id"], decoded["outcome"])
    assert "exception" not in decoded and len(decoded["error_message"]) <= logfeed.MAX_FIELD + 1


def test_an_event_too_large_even_cut_keeps_only_its_essential_keys() -> None:
    message = {"event": "snapshot job", "request_id": "r", **{f"k{i}": "y" * 290 for i in range(100)}}
    data = logfeed.encode(message)

    assert data is not None
    assert {"event": "snapshot job", "request_id": "r"} == json.loads(data)


def test_a_worker_keeps_forwarding_after_the_variable_leaves_its_environment(
        console: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker wrapper removes its variables before the handler is imported (a handler never sees them)."""
    logs.configure(json=True, level=logging.INFO)
    logfeed.install("ApiFunction 42")
    monkeypatch.delenv(logfeed.ENV_VAR)
    structlog.get_logger("t").info("request", method="POST", status=200)

    message = received(console)
    assert ("request", "ApiFunction 42") == (message["event"], message["lane"])


def test_uninstall_stops_forwarding_and_puts_the_level_back(
        console: socket.socket, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure(json=True, level=logging.WARNING)
    logfeed.install("chaos")
    logfeed.uninstall()
    log = structlog.get_logger("t")
    log.info("fault injected", fault="redrive")
    log.warning("routed")

    console.settimeout(0.2)
    with pytest.raises(TimeoutError):
        received(console)
    err = capsys.readouterr().err
    assert "fault injected" not in err and "routed" in err
