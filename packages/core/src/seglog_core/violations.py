"""One broken invariant, as every checker reports it and every report shows it (DESIGN §6, §12).

``seglog verify`` (:mod:`seglog_core.verify`), the simulator's history checks and the chaos runner all build this
one type, and the reports (``seglog_report.model``) carry it unchanged: no checker turns a violation into a
string for another to parse back. It lives in ``core``, not in the AWS model, because ``core``'s own verifier
builds it and ``core`` depends on nothing else of ours.

``invariant`` is DESIGN §6's name (``I1`` … ``I6``), or one of the checkers' own: ``LOAD`` (a read failed),
``SYNC`` (a client's sync was no slice of the history), ``RUN`` (the run could not complete), ``SIM`` (the
simulated world could not be set up or an operator command failed).
"""

from __future__ import annotations

import msgspec


class Violation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One broken invariant: which, what, and where (log, segment, entry) and when (``at``, seconds into the
    run) when known. ``at`` is filled by the report, from the events that led to it, when the checker did not."""

    invariant: str
    message: str
    log_id: str | None = None
    segment: int | None = None
    entry: int | None = None
    at: float | None = None

    @property
    def text(self) -> str:
        """One line: ``I5 <log> at 3/4: <message>`` (each part only when known)."""
        where = "" if self.segment is None else f" at {self.segment}" + ("" if self.entry is None else
                                                                         f"/{self.entry}")
        log = f" {self.log_id}" if self.log_id else ""
        return f"{self.invariant}{log}{where}: {self.message}"

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, object]:
        """The JSON form ``seglog verify --json`` and ``seglog simulate --json`` print (every field, ``null``
        when unknown)."""
        return {f: getattr(self, f) for f in self.__struct_fields__}
