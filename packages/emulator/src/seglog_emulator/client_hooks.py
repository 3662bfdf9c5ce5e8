"""Attach the emulator's instruments (the IAM guard, fault injection, request counting) to every botocore client a
handler builds in a worker process, however it builds it.

Hooked on ``botocore.session.Session.create_client``: ``boto3.client(...)``, ``boto3.Session().client(...)`` and any
helper of the application's end there, so a plain handler is instrumented as fully as seglog's own (issue 36: the
emulator no longer asks the application's client factory to call it back). Instruments attach in the order they are
installed: the IAM guard first (a denied call is neither faulted nor sent), then counting, then faults.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


def attach_to_every_client(attach: Callable[[Any], object]) -> None:
    """Call ``attach(client)`` on every client any botocore session makes in this process from now on, after the
    instruments installed before it."""
    from botocore.session import Session

    original = Session.create_client

    @functools.wraps(original)
    def create_client(self: Session, *args: Any, **kwargs: Any) -> Any:
        made = original(self, *args, **kwargs)
        attach(made)
        return made

    Session.create_client = create_client  # type: ignore[method-assign]
