"""The one visual language of report.html and the live console (issue 21): a symbol and a colour for every fault
kind and marker, a colour and a fill pattern for every span outcome. Both pages draw from these tables (the
console's server hands them to its page), and ``report.json`` carries them as ``legend``.

Rules:

1. **Shape carries the meaning, colour repeats it.** Every marker kind has a symbol no other kind has; its colour
   is its family's (DynamoDB, S3, delivery, process death, restarts, the client, time and versions), so a reader
   who cannot tell the colours apart still tells every kind apart, and one who can sees the family at a glance.
2. **Colour-blind safe.** The colours are Okabe and Ito's eight (Color Universal Design, 2002: distinguishable
   under protanopia, deuteranopia and tritanopia), plus a grey.
3. **Stable.** A kind's style is looked up by its name in a table, never assigned in order of appearance, so a
   fault keeps its look between two runs, two screenshots and the two pages. The fault kinds come from the one
   catalogue (:class:`seglog_awsmodel.faults.FaultKind`); a test fails when a kind is added there without a style.
4. **Spans**: an outcome is a fill colour and a pattern (bars have no symbol); no two outcomes share both.
"""

from __future__ import annotations

from typing import Final

import msgspec

from seglog_awsmodel.faults import FaultKind

# Okabe-Ito.
BLACK: Final = "#000000"
ORANGE: Final = "#E69F00"
SKY: Final = "#56B4E9"
GREEN: Final = "#009E73"
YELLOW: Final = "#F0E442"
BLUE: Final = "#0072B2"
VERMILLION: Final = "#D55E00"
PURPLE: Final = "#CC79A7"
GREY: Final = "#999999"

#: What each colour of a marker means (the legend's key to the families).
FAMILIES: Final[dict[str, str]] = {
    BLUE: "DynamoDB", GREEN: "S3", ORANGE: "delivery (SQS, Lambda's mappings)", VERMILLION: "a process dies",
    PURPLE: "a process restarts", SKY: "the client", BLACK: "time and versions",
}

#: The marker kinds that are not faults: a worker's crash point firing, the supervisor's own events.
CRASH_POINT: Final = "crash_point"
CHILD_RESTART: Final = "child restart"
EMULATOR_STARTED: Final = "emulator started"
EMULATOR_STOPPED: Final = "emulator stopped"


class MarkerStyle(msgspec.Struct, frozen=True):
    """A marker kind's look: a Plotly marker symbol and a colour."""

    symbol: str
    color: str


class SpanStyle(msgspec.Struct, frozen=True):
    """A span outcome's look: a fill colour and a Plotly bar pattern ("" for solid)."""

    color: str
    pattern: str = ""


FAULTS: Final[dict[str, MarkerStyle]] = {
    # DynamoDB
    FaultKind.DDB_THROTTLE: MarkerStyle("triangle-up", BLUE),
    FaultKind.DDB_TRANSACTION_CONFLICT: MarkerStyle("bowtie", BLUE),
    FaultKind.DDB_5XX: MarkerStyle("cross", BLUE),
    FaultKind.STALE_READ: MarkerStyle("octagon", BLUE),
    FaultKind.DDB_LOST_RESPONSE: MarkerStyle("star-diamond", BLUE),
    # S3
    FaultKind.S3_ERROR: MarkerStyle("star-square", GREEN),
    FaultKind.S3_LATENCY: MarkerStyle("diamond-wide", GREEN),
    # delivery
    FaultKind.DUPLICATE_DELIVERY: MarkerStyle("circle-cross", ORANGE),
    FaultKind.VISIBILITY_EXPIRY: MarkerStyle("hourglass", ORANGE),
    FaultKind.REORDER: MarkerStyle("arrow-left", ORANGE),
    FaultKind.DLQ: MarkerStyle("square-x", ORANGE),
    FaultKind.REDRIVE: MarkerStyle("triangle-nw", ORANGE),
    FaultKind.SQS_ERROR: MarkerStyle("triangle-down", ORANGE),
    # any other service a function calls
    FaultKind.AWS_ERROR: MarkerStyle("square-cross", ORANGE),
    # a process dies
    FaultKind.WORKER_CRASH: MarkerStyle("x", VERMILLION),
    FaultKind.FUNCTION_TIMEOUT: MarkerStyle("hexagon", VERMILLION),
    FaultKind.ROUTER_CRASH_AFTER_SEND: MarkerStyle("diamond-x", VERMILLION),
    FaultKind.CRASH_AFTER_CALL: MarkerStyle("x-dot", VERMILLION),
    FaultKind.CRASH: MarkerStyle("circle-x", VERMILLION),
    FaultKind.PAUSE: MarkerStyle("pentagon", VERMILLION),
    CRASH_POINT: MarkerStyle("star", VERMILLION),
    # a process restarts
    FaultKind.POLLER_RESTART: MarkerStyle("triangle-right", PURPLE),
    FaultKind.SUPERVISOR_RESTART: MarkerStyle("triangle-left", PURPLE),
    CHILD_RESTART: MarkerStyle("diamond", PURPLE),
    EMULATOR_STARTED: MarkerStyle("triangle-ne", PURPLE),
    EMULATOR_STOPPED: MarkerStyle("square", PURPLE),
    # the client
    FaultKind.LOST_RESPONSE: MarkerStyle("star-triangle-down", SKY),
    # time and versions
    FaultKind.CLOCK_SKEW: MarkerStyle("hexagram", BLACK),
    FaultKind.MIXED_VERSION: MarkerStyle("star-triangle-up", BLACK),
}
#: A kind this build does not know (a newer emulator's log): drawn, and told apart from every known kind.
UNKNOWN_MARKER: Final = MarkerStyle("asterisk-open", GREY)

OUTCOMES: Final[dict[str, SpanStyle]] = {
    # done
    "success": SpanStyle(GREEN), "completed": SpanStyle(GREEN, "/"), "acknowledged": SpanStyle(GREEN, "."),
    # nothing to do
    "already_done": SpanStyle(SKY), "duplicate": SpanStyle(SKY, "/"), "not_a_snapshot": SpanStyle(SKY, "."),
    # waits, and comes back
    "deferred": SpanStyle(YELLOW), "busy": SpanStyle(ORANGE), "retried": SpanStyle(ORANGE, "/"),
    "handed_off": SpanStyle(BLUE), "taken_over": SpanStyle(PURPLE), "blocked": SpanStyle(PURPLE, "x"),
    # failed
    "error": SpanStyle(VERMILLION), "crashed": SpanStyle(VERMILLION, "x"), "timeout": SpanStyle(VERMILLION, "/"),
    "gave_up": SpanStyle(BLACK),
    # never answered, never ended
    "lost": SpanStyle(GREY), "incomplete": SpanStyle(GREY, "/"),
    # still running (the live console's invocations in flight)
    "in_flight": SpanStyle(GREY, "+"),
}
UNKNOWN_OUTCOME: Final = SpanStyle("#DDDDDD", "-")


def marker(kind: str) -> MarkerStyle:
    """The style of a marker kind (a fault kind, ``crash_point``, a supervisor event)."""
    return FAULTS.get(kind, UNKNOWN_MARKER)


def outcome(name: str) -> SpanStyle:
    return OUTCOMES.get(name, UNKNOWN_OUTCOME)


def outcome_rank(name: str) -> int:
    """Where an outcome comes in a legend: the table's order, unknown ones last."""
    order = list(OUTCOMES)
    return order.index(name) if name in order else len(order)


class Legend(msgspec.Struct, kw_only=True):
    """The tables as ``report.json`` and the console's page carry them."""

    faults: dict[str, MarkerStyle]
    outcomes: dict[str, SpanStyle]
    families: dict[str, str]
    unknown_fault: MarkerStyle = UNKNOWN_MARKER
    unknown_outcome: SpanStyle = UNKNOWN_OUTCOME


def legend() -> Legend:
    return Legend(faults={str(k): v for k, v in FAULTS.items()}, outcomes=dict(OUTCOMES), families=dict(FAMILIES))
