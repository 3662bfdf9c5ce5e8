"""seglog's section of ``seglog emulate status`` (:class:`seglog_emulator.status.AppSection`): the snapshots its
worker cannot build with this code. An entry only newer code reads (DESIGN §2) leaves its snapshot waiting, with
the reason on the pending item; only the pending table knows them, so the status reads it, and when the table does
not answer (the stack is down) says so, leaving the rest of the status as it is."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final

from seglog_core.errors import SeglogError
from seglog_core.ports import PendingStore

#: Blocked snapshots listed one by one in the text form.
SHOWN: Final = 5


@dataclass(frozen=True, kw_only=True)
class BlockedSnapshot:
    """A snapshot deferred because an entry before it needs newer code (its pending item's ``blocked``)."""

    log_id: str
    segment: int
    entry: int
    reason: str


@dataclass(frozen=True, kw_only=True)
class BlockedSnapshots:
    """The blocked snapshots, or why the pending table could not be read."""

    blocked: list[BlockedSnapshot] | None = field(default=None)
    pending_error: str | None = None

    @classmethod
    def read(cls, pending: PendingStore) -> BlockedSnapshots:
        try:
            blocked = [BlockedSnapshot(log_id=str(p.log_id), segment=p.segment, entry=p.entry, reason=p.blocked)
                       for p in pending.scan() if p.blocked is not None]
        except SeglogError as exc:
            return cls(pending_error=str(exc))
        return cls(blocked=sorted(blocked, key=lambda b: (b.log_id, b.segment, b.entry)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        if self.pending_error is not None:
            return [f"  snapshots blocked: unknown (the pending table did not answer: {self.pending_error})"]
        if not self.blocked:
            return []
        lines = [f"  snapshots blocked: {len(self.blocked)} (deploy newer code of the snapshot worker)"]
        lines += [f"    {b.log_id} {b.segment}/{b.entry}: {b.reason}" for b in self.blocked[:SHOWN]]
        if len(self.blocked) > SHOWN:
            lines.append(f"    ... and {len(self.blocked) - SHOWN} more (--json lists them all)")
        return lines
