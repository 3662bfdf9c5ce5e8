"""Inject AWS error responses into a boto3 client through botocore's event hooks.

Two places, as real failures happen:

* before the request is sent (``before-call``): the service never saw it (a throttle, a 5xx at the front door);
* after the response came back (``after-call``): the service did the work, the caller sees an error anyway
  (a lost response, DESIGN §7 "lost responses on client appends").

The tests of every DynamoDB error code use it; the emulator's fault schedule drives the same hooks.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError


@dataclass
class _Rule:
    operation: str
    code: str
    status: int
    times: int
    after_send: bool
    extra: dict[str, Any]


class BotocoreFaults:
    """Error injection for one client. ``fail(...)`` arms a rule for the next ``times`` calls."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self.injected: list[tuple[str, str, bool]] = []
        events = client.meta.events
        events.register("before-call.*.*", self._before_call)
        events.register("after-call.*.*", self._after_call)

    def fail(self, operation: str, code: str, *, status: int = 400, times: int = 1, after_send: bool = False,
             **extra: Any) -> None:
        """Make the next ``times`` calls of ``operation`` fail with ``code`` (and extra response members,
        e.g. ``CancellationReasons``)."""
        with self._lock:
            self._rules.append(_Rule(operation, code, status, times, after_send, extra))

    def _take(self, operation: str, after_send: bool) -> _Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.operation == operation and rule.after_send == after_send and rule.times > 0:
                    rule.times -= 1
                    self.injected.append((operation, rule.code, after_send))
                    return rule
        return None

    @staticmethod
    def _response(rule: _Rule) -> dict[str, Any]:
        return {"Error": {"Code": rule.code, "Message": f"injected {rule.code}"},
                "ResponseMetadata": {"HTTPStatusCode": rule.status}, **rule.extra}

    def _before_call(self, model: Any, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        rule = self._take(model.name, after_send=False)
        if rule is None:
            return None
        return SimpleNamespace(status_code=rule.status, headers={}), self._response(rule)

    def _after_call(self, model: Any, **_: Any) -> None:
        rule = self._take(model.name, after_send=True)
        if rule is not None:
            raise ClientError(self._response(rule), model.name)  # type: ignore[arg-type]
