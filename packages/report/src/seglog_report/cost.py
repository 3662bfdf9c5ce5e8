"""The cost ledger: what a run's metered units would cost on AWS, priced from the one price table.

A :class:`Ledger` has a line per thing AWS bills (DynamoDB request units, S3 and SQS requests, each function's
invocations and GB-seconds, API requests), the run's total, and the total per million acknowledged appends, shown
next to seed 000's floor. The floor is what an append cannot cost less than: one write of at most 1 KB, one write
request unit. The ledger shows it three ways:

- seed 000's own figure, $1.25 per million appends (written when a write request unit cost $1.25 per million);
- the same single write at the table's price for the ledger's region today (us-east-1: $0.625 per million);
- how many times that floor the run cost (``Floor.times``).

Next to it, seed 000's read figure, $0.125 per million entries read eventually consistent (half a read request unit
each, at $0.25 per million), and the same half unit at the table's price today. Appends are never divided by zero:
a run without appends has no per-million figure (None) and says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence, Set
from typing import Any, Final

import msgspec

from seglog_report.errors import UnknownArchitectureError
from seglog_report.model import Meter
from seglog_report.prices import PriceTable, load

#: Seed 000 ("Cloud Economics"): a million entries of at most 1 KB cost $1.25 to write ...
SEED_000_WRITE_PER_MILLION: Final = 1.25
#: ... and $0.125 to read eventually consistent (its table's 1 KB row).
SEED_000_READ_PER_MILLION: Final = 0.125
#: What the functions run on: template.yaml's Globals give every function Architectures [arm64].
ARCHITECTURE: Final = "arm64"
MILLION: Final = 1_000_000
#: The columns of :meth:`Ledger.rows` that hold numbers (aligned right).
NUMBERS: Final = frozenset({2, 4, 5})
_DURATION = "lambda_duration_"


class Line(msgspec.Struct, frozen=True, kw_only=True):
    """One thing billed: ``quantity`` units at ``unit_price`` each (the table's ``price`` per ``per`` units)."""

    service: str
    what: str
    quantity: float
    unit: str
    price: float
    per: int
    unit_price: float
    dollars: float
    note: str = ""
    #: The price table's item ("" for a line shown only to explain others).
    item: str = ""
    #: The price is from published knowledge, not checked against a page (prices.json says why).
    unverified: bool = False


class Floor(msgspec.Struct, frozen=True, kw_only=True):
    """Seed 000's floor, in dollars per million, then and at the table's price (see the module's docstring)."""

    seed_write: float = SEED_000_WRITE_PER_MILLION
    seed_read: float = SEED_000_READ_PER_MILLION
    #: One write request unit per append, at the region's price.
    write: float
    #: Half a read request unit per entry read (eventually consistent, at most 4 KB), at the region's price.
    read: float
    #: The run's dollars per million appends over ``write``; None without appends.
    times: float | None


class Ledger(msgspec.Struct, frozen=True, kw_only=True):
    """A run's bill at list prices: its lines, total, per-million-appends figure and the floor beside it."""

    region: str
    region_name: str
    as_of: str
    currency: str
    architecture: str
    lines: list[Line]
    total: float
    appends: int
    #: None when the run acknowledged no appends (nothing to divide by).
    per_million_appends: float | None
    floor: Floor

    def to_dict(self) -> dict[str, Any]:
        """The ledger as JSON-ready builtins (the JSON report's ``cost``)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    def rows(self) -> list[list[str]]:
        """The ledger's table as text cells, its header first (the text report and ``seglog cost`` both show it)."""
        body = [[line.service, line.what, quantity(line.quantity), line.unit,
                 rate(line.price, line.per) + ("*" if line.unverified else ""), money(line.dollars), line.note]
                for line in self.lines]
        return [["service", "what", "quantity", "unit", "unit price", "dollars", "note"], *body,
                ["total", "", "", "", "", money(self.total), ""]]

    def summary(self) -> list[str]:
        """The sentences under the table: per million appends, the floor, which prices are unverified."""
        floor = self.floor
        if self.per_million_appends is None:
            run = "no appends: no figure per million appends (nothing to divide by)"
        else:
            run = f"{self.appends:,} appends: {money(self.per_million_appends)} per million appends"
            if floor.times is not None:
                run += f", {floor.times:,.2f}x the floor"
        lines = [run,
                 f"floor, one write of at most 1 KB per append: {money(floor.write)} per million at {self.region}'s "
                 f"price today (seed 000: {money(floor.seed_write)})",
                 f"reading an entry back eventually consistent: {money(floor.read)} per million "
                 f"(seed 000: {money(floor.seed_read)})"]
        if any(line.unverified for line in self.lines):
            lines.append("* unverified: from published knowledge, not checked against a page (prices.json says why)")
        return lines

    def title(self) -> str:
        return (f"cost ledger: {self.region} ({self.region_name}), AWS on-demand list prices as of {self.as_of}, "
                f"{self.currency}, free tiers ignored")

    def render(self) -> str:
        """The compact text form: :meth:`title`, the table, then :meth:`summary`."""
        return "\n".join([self.title(), table(self.rows(), right=NUMBERS), *self.summary()])


def ledger(meter: Meter, region: str = "us-east-1", *, prices: PriceTable | None = None,
           architecture: str = ARCHITECTURE) -> Ledger:
    """Price a run's metered units.

    Args:
        meter: what the run used.
        region: the price table's region to price in.
        prices: the table (default: the one this package ships).
        architecture: the functions' Lambda architecture (default: template.yaml's).

    Raises:
        UnknownRegionError: the table has no such region.
        UnknownArchitectureError: the table has no duration price for ``architecture``.
    """
    table = prices or load()
    where = table.region(region)
    duration = _DURATION + architecture
    if duration not in table.items:
        raise UnknownArchitectureError(architecture, [k.removeprefix(_DURATION) for k in table.items
                                                      if k.startswith(_DURATION)])

    def priced(item: str, amount: float, what: str = "", note: str = "") -> Line:
        described, price = table.items[item], where.prices[item]
        return Line(service=described.service, what=what or described.what, quantity=amount, unit=described.unit,
                    price=price.price, per=described.per, unit_price=price.price / described.per,
                    dollars=amount / described.per * price.price, note=note, item=item,
                    unverified=bool(price.unverified))

    lines = [priced("dynamodb_write", meter.dynamodb_write_units),
             priced("dynamodb_read", meter.dynamodb_read_units)]
    if meter.dynamodb_requests:
        lines.append(Line(service="DynamoDB", what="requests", quantity=meter.dynamodb_requests, unit="call",
                          price=0.0, per=1, unit_price=0.0, dollars=0.0,
                          note="not billed themselves: the request units above are what is billed"))
    if meter.stream_read_requests:
        at_list = priced("dynamodb_stream_read", meter.stream_read_requests).dollars
        lines.append(Line(service="DynamoDB Streams", what="GetRecords by the Lambda trigger",
                          quantity=meter.stream_read_requests, unit="call", price=0.0,
                          per=table.items["dynamodb_stream_read"].per, unit_price=0.0, dollars=0.0,
                          note=f"free for Lambda triggers (list price: {money(at_list)})",
                          item="dynamodb_stream_read"))
    lines += [priced(item, amount) for item, amount in (("s3_write", meter.s3_write_requests),
                                                          ("s3_read", meter.s3_read_requests),
                                                          ("sqs_request", meter.sqs_requests),
                                                          ("api_request", meter.api_requests)) if amount]
    for name, use in sorted(meter.functions.items()):
        lines.append(priced("lambda_request", use.invocations, what=f"{name} invocations"))
        lines.append(priced(duration, use.gb_seconds, what=f"{name} duration, {architecture}",
                            note=f"{use.memory_mb} MB x {use.billed_ms / 1000:,.3f} s billed"))
    total = math.fsum(line.dollars for line in lines)
    per_million = total / meter.appends * MILLION if meter.appends else None
    write_floor = table.unit_price(region, "dynamodb_write") * MILLION
    floor = Floor(write=write_floor, read=table.unit_price(region, "dynamodb_read") / 2 * MILLION,
                  times=None if per_million is None or not write_floor else per_million / write_floor)
    return Ledger(region=region, region_name=where.name, as_of=table.as_of.isoformat(), currency=table.currency,
                  architecture=architecture, lines=lines, total=total, appends=meter.appends,
                  per_million_appends=per_million, floor=floor)


def comparison(ledgers: Sequence[tuple[str, Ledger]]) -> list[list[str]]:
    """Ledgers side by side as text cells, header first: dollars per line (lines that cost nothing in every ledger
    left out), then each one's difference from the first (``B - A``), then the totals, appends, dollars per million
    appends and times the floor.

    Raises:
        ValueError: fewer than two ledgers.
    """
    if len(ledgers) < 2:
        raise ValueError(f"a comparison needs two ledgers or more, got {len(ledgers)}")
    labels = [label for label, _ in ledgers]
    first = labels[0]
    header = ["service", "what", *labels, *(f"{label} - {first}" for label in labels[1:])]
    keys = list(dict.fromkeys((line.service, line.what) for _, one in ledgers for line in one.lines))

    def row(service: str, what: str, values: Sequence[float | None], show: Callable[..., str] = money) -> list[str]:
        cells = ["-" if v is None else show(v) for v in values]
        diffs = ["n/a" if v is None or values[0] is None else show(v - values[0], signed=True) for v in values[1:]]
        return [service, what, *cells, *diffs]

    lines = [[_dollars(one, service, what) for _, one in ledgers] for service, what in keys]
    body = [row(service, what, values) for (service, what), values in zip(keys, lines, strict=True) if any(values)]
    body += [row("total", "", [one.total for _, one in ledgers]),
             row("appends", "", [float(one.appends) for _, one in ledgers], show=count),
             row("per million appends", "", [one.per_million_appends for _, one in ledgers]),
             row("times the floor", "", [one.floor.times for _, one in ledgers], show=times)]
    regions = ["region", "", *(f"{one.region} ({one.as_of})" for _, one in ledgers), *[""] * (len(ledgers) - 1)]
    return [header, regions, *body]


def _dollars(one: Ledger, service: str, what: str) -> float:
    """A ledger's dollars for one kind of line; $0 when it has none (nothing used: a function that did not run)."""
    return math.fsum(line.dollars for line in one.lines if (line.service, line.what) == (service, what))


def compare(ledgers: Sequence[tuple[str, Ledger]]) -> str:
    """:func:`comparison` as a text table (for two runs: two SnapshotEvery values, two large-body thresholds)."""
    rows = comparison(ledgers)
    return table(rows, right=set(range(2, len(rows[0]))))


def table(rows: Sequence[Sequence[str]], right: Set[int]) -> str:
    """Rows as aligned columns, two spaces apart; the columns in ``right`` aligned right (the numbers)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                     for row in rows)


def money(dollars: float, signed: bool = False) -> str:
    """Dollars to four significant figures (a small run's lines are fractions of a cent), trailing zeros dropped
    down to two decimals."""
    if dollars == 0:
        return "$0"
    sign = "-" if dollars < 0 else "+" if signed else ""
    decimals = max(2, 3 - math.floor(math.log10(abs(dollars))))
    whole, _, fraction = f"{abs(dollars):,.{decimals}f}".partition(".")
    return f"{sign}${whole}.{fraction.rstrip('0').ljust(2, '0')}"


def rate(price: float, per: int) -> str:
    """A listed price and what it buys: ``$0.625/1M``, ``$0.005/1K``, ``$0.0000133334 each``; ``free`` for a
    price of 0 (a "$0/1" told nothing)."""
    if not price:
        return "free"
    listed = f"{price:,.10f}".rstrip("0").rstrip(".")
    if per == 1:
        return f"${listed} each"
    label = {1000: "1K", 100_000: "100K", MILLION: "1M"}.get(per, f"{per:,}")
    return f"${listed}/{label}"


def quantity(amount: float) -> str:
    """A count with thousands separators; fractions (GB-seconds, half read units) to three decimals."""
    return f"{amount:,.3f}".rstrip("0").rstrip(".")


def count(amount: float, signed: bool = False) -> str:
    return ("+" if signed and amount > 0 else "") + f"{amount:,.0f}"


def times(ratio: float, signed: bool = False) -> str:
    return ("+" if signed and ratio > 0 else "") + f"{ratio:,.2f}x"
