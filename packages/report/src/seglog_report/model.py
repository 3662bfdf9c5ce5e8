"""One run as the report shows it: lanes of spans and markers, its violations, latencies and metered usage.

The chaos runner and the demo (wall-clock time, from the run's log, fault log and clients) and the simulator
(simulated time, from its history) all produce a :class:`RunData`; a command writes a :class:`Report` of its runs
as ``report.json`` next to ``report.html``. Times are seconds from the run's start (``started_at``, Unix time for
wall-clock runs, 0 for simulated ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from seglog_core.violations import Violation
from seglog_report.legend import Legend, legend

#: Lane groups, top to bottom in the timeline.
GROUPS: Final = ("client", "function", "snapshot", "operator")

Ids = dict[str, str | int]
"""Correlation ids shown on hover: request_id, message_id, attempt, log_id, segment, entry, shard, pid."""


class Span(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Something that took time on one lane: an invocation, a client's try, a snapshot's life."""

    lane: str
    group: str
    start: float
    end: float
    outcome: str
    label: str = ""
    ids: Ids = {}
    #: One of the events that led to a violation.
    highlight: bool = False
    #: Unique in its run ("s12"): what :class:`Link` names (given by :func:`seglog_report.causes.connect`).
    id: str = ""
    #: The Snapshot entries this span acted on, by what it did (:data:`seglog_report.causes.ACTS`): keys
    #: ``"appended"``, ``"routed"``, ``"worked"``, ``"completed"``; values ``"<log_id>/<segment>/<entry>"``.
    acts: dict[str, list[str]] = {}


class Marker(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Something that happened at one moment: an injected fault, a crash point, a restart."""

    lane: str
    group: str
    at: float
    kind: str
    label: str = ""
    ids: Ids = {}
    highlight: bool = False
    #: Unique in its run ("m3").
    id: str = ""


class Link(msgspec.Struct, frozen=True, rename={"source": "from", "target": "to"}):
    """One edge of cause and effect between two spans or markers of a run (their ids), and why it is there."""

    source: str
    target: str
    why: str
    #: The Snapshot entry whose chain the link is part of (:func:`seglog_report.causes.key`); "" for a link
    #: that belongs to no one chain (a client try served, a fault that hit).
    chain: str = ""


class Series(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A quantity sampled over the run, drawn on the timeline's time axis: a stream shard's iterator age, a
    queue's depth. ``points`` are ``[seconds since the run started, value]``."""

    name: str
    unit: str
    points: list[tuple[float, float]] = []
    #: "measured" (read from the run) or "modelled" (the simulator's clock and model).
    basis: str = "measured"


class FunctionUse(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One Lambda function's invocations, their measured time, and the memory the template gives it."""

    memory_mb: int
    invocations: int = 0
    #: Billed duration: each invocation's duration rounded up to the millisecond, summed (Lambda's billing).
    billed_ms: float = 0.0

    @property
    def gb_seconds(self) -> float:
        return self.memory_mb / 1024 * self.billed_ms / 1000


class Meter(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a run used, in the units AWS bills (each field says where it is counted).

    Attributes:
        dynamodb_read_units: read request units (on-demand), from ConsumedCapacity TOTAL of every read.
        dynamodb_write_units: write request units, from ConsumedCapacity of every write and transaction.
        dynamodb_requests: DynamoDB calls (not billed by themselves; shown to explain the units).
        stream_read_requests: DynamoDB Streams GetRecords calls (free when a Lambda trigger makes them).
        s3_write_requests: S3 PUT, COPY, POST and LIST requests.
        s3_read_requests: S3 GET and every other request but DELETE (which is free).
        sqs_requests: SQS requests, each 64 KB chunk of a payload counted as one.
        api_requests: HTTP API requests the gateway answered.
        functions: per function, invocations and billed duration.
        appends: acknowledged appends (the ledger's per-million figure divides by this).
    """

    dynamodb_read_units: float = 0.0
    dynamodb_write_units: float = 0.0
    dynamodb_requests: int = 0
    stream_read_requests: int = 0
    s3_write_requests: int = 0
    s3_read_requests: int = 0
    sqs_requests: int = 0
    api_requests: int = 0
    functions: dict[str, FunctionUse] = {}
    appends: int = 0

    def add(self, other: Meter) -> Meter:
        """The sum of two meters (a campaign's, from its runs')."""
        functions = {name: FunctionUse(memory_mb=use.memory_mb, invocations=use.invocations,
                                       billed_ms=use.billed_ms) for name, use in self.functions.items()}
        for name, use in other.functions.items():
            into = functions.setdefault(name, FunctionUse(memory_mb=use.memory_mb))
            into.invocations += use.invocations
            into.billed_ms += use.billed_ms
        fields = {f: getattr(self, f) + getattr(other, f) for f in self.__struct_fields__ if f != "functions"}
        return Meter(**fields, functions=functions)


class RunData(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One run: its timeline, its verdict, its latencies and what it used."""

    kind: str
    title: str
    run: int
    seed: int
    #: "wall" (seconds of real time) or "simulated" (the simulator's clock).
    clock: str = "wall"
    started_at: float = 0.0
    seconds: float = 0.0
    violations: list[Violation] = []
    spans: list[Span] = []
    markers: list[Marker] = []
    #: Seconds, by name: append, snapshot (entry committed -> complete), stream_hop, quiescence.
    latencies: dict[str, list[float]] = {}
    meter: Meter = msgspec.field(default_factory=Meter)
    #: The run's text report and counters, as the command printed them.
    summary: dict[str, Any] = {}
    replay: str = ""
    #: Cause and effect between the spans and markers (:func:`seglog_report.causes.connect`).
    links: list[Link] = []
    #: Time series drawn under the timeline.
    series: list[Series] = []
    #: Why each Snapshot entry's span took as long as it did, by span id (:func:`seglog_report.causes.waits`).
    waits: dict[str, str] = {}

    @property
    def ok(self) -> bool:
        return not self.violations

    def lanes(self) -> list[str]:
        """Every lane, grouped in :data:`GROUPS` order, then by first appearance."""
        seen: dict[str, tuple[int, int]] = {}
        items: list[Span | Marker] = [*self.spans, *self.markers]
        for n, item in enumerate(items):
            rank = GROUPS.index(item.group) if item.group in GROUPS else len(GROUPS)
            seen.setdefault(item.lane, (rank, n))
        return sorted(seen, key=lambda lane: seen[lane])


def outline(violations: Sequence[Violation], spans: list[Span], markers: list[Marker], *, link: str
            ) -> list[Violation]:
    """Mark the events that led to each violation: the spans on its log (on its entry, when it names one), and
    the markers on it or sharing the ``link`` id (request_id, task) with one of those spans. Returns the
    violations for the report: copies, a violation without a time given the end of the last of them (the
    caller's are left as they were)."""
    found = [msgspec.structs.replace(v) for v in violations]
    for violation in found:
        if violation.log_id is None:
            continue
        linked: set[str | int] = set()
        for span in spans:
            if _touches(span.ids, violation):
                span.highlight = True
                if link in span.ids:
                    linked.add(span.ids[link])
        for marker in markers:
            if marker.ids.get(link, "") in linked or _touches(marker.ids, violation):
                marker.highlight = True
        ends = [span.end for span in spans if span.highlight]
        if violation.at is None and ends:
            violation.at = max(ends)
    return found


def _touches(ids: Ids, violation: Violation) -> bool:
    if str(ids.get("log_id")) != violation.log_id:
        return False
    if violation.entry is None:
        return True
    return ids.get("entry") == violation.entry and violation.segment in (None, ids.get("segment"))


#: The version of ``report.json``'s shape (:class:`Report`); raised whenever a field changes meaning or goes.
SCHEMA: Final = 2


class SeedRow(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One seed of a simulate campaign, drawn or not: its verdict and its own figures."""

    seed: int
    ok: bool
    violations: list[str] = []
    faults: int = 0
    invocations: int = 0
    acknowledged: int = 0
    #: Simulated seconds.
    seconds: float = 0.0
    replay: str = ""


class Report(msgspec.Struct, kw_only=True):
    """What one command wrote: its runs, in the order they ran (``report.json``).

    ``schema`` is :data:`SCHEMA`; ``legend`` is the visual language the page was drawn in (fault kind ->
    {symbol, color}, outcome -> {color, pattern}); each run's ``links`` are ``{from, to, why}`` between the ids of
    its spans and markers."""

    kind: str
    title: str
    command: str
    created_at: float
    runs: list[RunData] = []
    #: The price table's region the ledger was priced in.
    region: str = "us-east-1"
    text: str = ""
    #: What the whole command used, when its runs are not all here (a simulate campaign keeps only the seeds
    #: it draws); None: the sum of the runs' meters.
    total: Meter | None = None
    schema: int = SCHEMA
    legend: Legend = msgspec.field(default_factory=legend)
    #: Every seed of a simulate campaign (the runs hold only the ones drawn), failing first.
    seeds: list[SeedRow] = []
    #: What drawing one more of its runs needs of the command's options (simulate: ``faults``, its --faults).
    options: dict[str, str] = {}

    @property
    def ok(self) -> bool:
        return all(run.ok for run in self.runs)

    def meter(self) -> Meter:
        if self.total is not None:
            return self.total
        total = Meter()
        for run in self.runs:
            total = total.add(run.meter)
        return total


def encode(report: Report) -> bytes:
    return msgspec.json.encode(report)


def decode(data: bytes | str) -> Report:
    """A report from ``report.json``; raises msgspec.ValidationError (with the path to the bad field)."""
    return msgspec.json.decode(data, type=Report)
