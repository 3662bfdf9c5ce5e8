"""The emulator's errors: each says what went wrong and what to do (STYLE "Errors")."""

from __future__ import annotations

from seglog_core.errors import SeglogError


class EmulatorError(SeglogError):
    """The emulator cannot run as asked (a child that never got ready, a stack that is not up, ...)."""
