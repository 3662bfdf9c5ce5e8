"""The console feed: selected structured log events, sent as JSON datagrams to the live console (issue 12).

When :data:`ENV_VAR` names an address (``127.0.0.1:47123``), every emulator process — the supervisor, its
children, the worker processes running handlers, and the command that started them — forwards the events named
in :data:`FORWARDED` to it, one UDP datagram each. Processes inherit the variable (the sandbox passes it to
workers as a wrapper variable, removed before the handler is imported). The console is an observer: a datagram
is sent without waiting, never raises, and is dropped when it cannot be sent at once; a console that is down,
slow or missing changes nothing in a run.

Protocol, one JSON object per datagram (at most :data:`MAX_DATAGRAM` bytes; long strings are cut)::

    {"event": "invocation", "ts": 1700000000.25, "lane": "queue:SnapshotWorkerFunction.Jobs", "sender": 4242,
     ...the log line's own keys (function, request_id, pid, outcome, duration_ms, usage, ...)}

``ts`` is the Unix time the line was logged; ``lane`` names the sending process (a worker process is
``"<Function> pid <pid>"``, a child its role, e.g. ``"gateway:HttpApi"``); ``sender`` is its pid. Besides log
lines, :func:`send` sends events made for the console alone: ``"invocation started"`` and ``"client try"``.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, Final

import structlog

#: The console's feed address, ``host:port``; unset (the default), nothing is sent.
ENV_VAR: Final = "SEGLOG_CONSOLE_FEED"
#: Log events the console is sent (the invoker's, the snapshot worker's, the router's, faults, restarts, the
#: pollers' usage, the API's request lines, a supervisor's start and stop). "invocation started" and "client
#: try" are not log lines: :func:`send` sends them.
FORWARDED: Final = frozenset({
    "invocation", "snapshot job", "fault injected", "crash point reached: killing this process", "routed",
    "child exited: restarting", "poller usage", "request", "emulator started", "emulator stopped",
})
#: Largest datagram sent: far under the loopback MTU, so one event is one datagram.
MAX_DATAGRAM: Final = 8192
#: A string value longer than this is cut when a datagram would be too large.
MAX_FIELD: Final = 300
#: Keys kept when an event is still too large after cutting its strings.
ESSENTIAL: Final = ("event", "ts", "lane", "sender", "function", "request_id", "pid", "outcome", "duration_ms",
                    "source", "attempt", "fault", "crash_point", "poller", "service", "requests", "status",
                    "client", "start", "end", "child", "log_id", "segment", "entry", "memory_mb")

_LEVELS: Final = {"debug": logging.DEBUG, "info": logging.INFO, "msg": logging.INFO, "warning": logging.WARNING,
                  "warn": logging.WARNING, "error": logging.ERROR, "exception": logging.ERROR,
                  "critical": logging.CRITICAL, "fatal": logging.CRITICAL}

_lock = threading.Lock()
_socket: socket.socket | None = None
_address: tuple[str, tuple[str, int] | None] = ("", None)
#: Datagrams that could not be sent (the console is not reading fast enough, or is gone).
dropped = 0


def address() -> tuple[str, int] | None:
    """Where the feed goes, from :data:`ENV_VAR` (None: unset or not ``host:port``)."""
    global _address
    raw = os.environ.get(ENV_VAR, "")
    cached_raw, parsed = _address
    if raw == cached_raw:
        return parsed
    host, sep, port = raw.rpartition(":")
    parsed = (host, int(port)) if sep and host and port.isdigit() and 0 < int(port) < 65536 else None
    _address = (raw, parsed)
    return parsed


def send(event: Mapping[str, Any], *, lane: str | None = None, target: tuple[str, int] | None = None) -> None:
    """Send one event to the console at ``target`` (by default :func:`address`), if one listens: fire and
    forget, never raises, never blocks."""
    global dropped
    target = target or address()
    if target is None:
        return
    try:
        message = {"ts": time.time(), "sender": os.getpid(), **event}
        if lane is not None:
            message["lane"] = lane
        data = encode(message)
        if data is not None:
            _udp().sendto(data, target)
    except Exception:  # a full socket buffer, a console gone, an event that is not JSON: drop it
        dropped += 1


def encode(message: Mapping[str, Any]) -> bytes | None:
    """The datagram for ``message``: strings cut, then only :data:`ESSENTIAL` keys, if it would be too large;
    None when even that does not fit."""
    data = json.dumps(message, default=str, separators=(",", ":")).encode()
    if len(data) <= MAX_DATAGRAM:
        return data
    cut = {key: _cut(value) for key, value in message.items() if key not in ("exception", "stack_trace")}
    data = json.dumps(cut, default=str, separators=(",", ":")).encode()
    if len(data) <= MAX_DATAGRAM:
        return data
    data = json.dumps({k: cut[k] for k in ESSENTIAL if k in cut}, default=str, separators=(",", ":")).encode()
    return data if len(data) <= MAX_DATAGRAM else None


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_FIELD:
        return value[:MAX_FIELD] + "…"
    if isinstance(value, list) and len(value) > 20:
        return [_cut(v) for v in value[:20]] + [f"… {len(value) - 20} more"]
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in list(value.items())[:50]}
    return value


def _udp() -> socket.socket:
    global _socket
    if _socket is None:
        with _lock:
            if _socket is None:
                made = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                made.setblocking(False)  # a full buffer drops the datagram (BlockingIOError) instead of waiting
                atexit.register(made.close)  # the process's one socket, closed at exit (no ResourceWarning then)
                _socket = made
    return _socket


class Tap:
    """A structlog processor that sees every line from info up (:func:`install_tap` has the logger let them
    through), then passes it on — or drops it when its level is under ``level``, the threshold the process's own
    log keeps, which the tap puts back. The console feed's :class:`Forwarder` is one, the metrics' recorder
    (:mod:`seglog_emulator.metrics`) another."""

    def __init__(self, level: int) -> None:
        self.level = level

    def see(self, event: MutableMapping[str, Any]) -> None:
        raise NotImplementedError

    def __call__(self, _logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        self.see(event)
        if _LEVELS.get(method, logging.INFO) < self.level:
            raise structlog.DropEvent
        return event


def install_tap(make: Callable[[int], Tap], *, first: bool = False, level: int | None = None) -> None:
    """Add the tap ``make(level)`` (replacing one of its class), at the front with ``first`` (before anything can
    drop a line) or else just before the renderer (after the context variables, level and time stamp are added);
    ``level`` defaults to the threshold the process's log keeps now."""
    config = structlog.get_config()
    level = threshold(config) if level is None else level
    tap = make(level)
    processors = [p for p in config["processors"] if type(p) is not type(tap)]
    processors.insert(0 if first else max(0, len(processors) - 1), tap)
    structlog.configure(processors=processors,
                        wrapper_class=structlog.make_filtering_bound_logger(min(level, logging.INFO)))


class Forwarder(Tap):
    """Sends :data:`FORWARDED` events to the console."""

    def __init__(self, lane: str, level: int, target: tuple[str, int]) -> None:
        super().__init__(level)
        self.lane = lane
        #: Kept from the start: a worker takes the variable out of its environment before the handler runs.
        self.target = target

    def see(self, event: MutableMapping[str, Any]) -> None:
        if event.get("event") in FORWARDED:
            send(event, lane=self.lane, target=self.target)


def install(lane: str, *, level: int | None = None) -> bool:
    """Forward this process's :data:`FORWARDED` log events as ``lane``, when :data:`ENV_VAR` is set; call it
    after :func:`seglog_core.logs.configure`. Returns whether the feed is on.

    Args:
        lane: names this process on the console (a worker's is ``"<Function> pid <pid>"``).
        level: the lowest level the process's log keeps (by default the level it was configured with).
    """
    target = address()
    if target is None:
        return False
    install_tap(lambda threshold: Forwarder(lane, threshold, target), level=level)
    return True


def uninstall() -> None:
    """Stop forwarding this process's log events, and log at the level it logged at before :func:`install`."""
    config = structlog.get_config()
    level = _installed_level(config["processors"])
    if level is None:
        return
    structlog.configure(processors=[p for p in config["processors"] if not isinstance(p, Forwarder)],
                        wrapper_class=structlog.make_filtering_bound_logger(level))


def _installed_level(processors: Any) -> int | None:
    return next((p.level for p in processors if isinstance(p, Tap)), None)


def threshold(config: Mapping[str, Any]) -> int:
    """The level this process's log keeps: the one an installed :class:`Tap` puts back, or the one the logger
    was configured with."""
    return _installed_level(config["processors"]) or _configured_level(config["wrapper_class"])


def _configured_level(wrapper: Any) -> int:
    """The level a make_filtering_bound_logger class filters at (INFO when it cannot tell)."""
    try:
        return int(wrapper.get_effective_level(None))
    except Exception:
        return logging.INFO
