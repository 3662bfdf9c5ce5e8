"""Errors of the snapshot format: an object that is not a snapshot, or one written by newer code.

They live here rather than in :mod:`seglog_core.errors` so the format owns them; both derive from the core's
root :class:`~seglog_core.errors.SeglogError`, so ``except SeglogError`` still catches them.
"""

from __future__ import annotations

from seglog_core.errors import SeglogError


class SnapshotFormatError(SeglogError):
    """A snapshot object (root or chunk) that cannot be read: corrupt, truncated, or not a snapshot at all."""

    def __init__(self, key: str, why: str, *, advice: str | None = None) -> None:
        self.key = key
        self.why = why
        advice = advice or "it is corrupt: rebuild the snapshot from the log (the worker's rebuild command)"
        super().__init__(f"snapshot object {key!r} cannot be read: {why}; {advice}")


class SnapshotVersionError(SnapshotFormatError):
    """A snapshot root of a format version newer than this code knows: refuse it rather than misread it."""

    def __init__(self, key: str, version: int, known: int) -> None:
        self.version = version
        self.known = known
        super().__init__(
            key,
            f"format version {version} is newer than this code knows ({known})",
            advice="it was written by newer code: upgrade seglog to read it",
        )
