"""Errors of the report package, under one root. Each message says what happened and what to do next; the data
travels as attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar


class ReportError(Exception):
    """Root of what seglog_report raises on purpose."""


class PriceTableError(ReportError, ValueError):
    """The price table cannot be read or breaks its own rules: no ledger can be priced from it.

    Attributes:
        path: the table's file.
        problem: what is wrong with it.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"the price table {path} is malformed: {problem}. Fix the file: it needs as_of (a date), "
                         f"items, and for each region a price for every item, each saying where it was 'checked' "
                         f"or why it is 'unverified'")
        self.path = path
        self.problem = problem


class NotPricedError(ReportError, LookupError):
    """Something the price table has no prices for (a region, a Lambda architecture).

    Attributes:
        name: what was asked for.
        known: what the table has.
    """

    what: ClassVar[str] = "item"
    hint: ClassVar[str] = "Pass one of those"

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"no prices for {self.what} {name!r}: the price table has {', '.join(known)}. {self.hint}")
        self.name = name
        self.known = tuple(known)


class UnknownRegionError(NotPricedError):
    """A region the price table has no prices for."""

    what = "region"
    hint = "Pass one of those, or add the region to seglog_report/prices.json with each price's source"


class UnknownArchitectureError(NotPricedError):
    """A Lambda architecture the price table has no duration price for."""

    what = "Lambda architecture"
    hint = "template.yaml's Architectures name the one the functions run on"


class ReportFileError(ReportError, ValueError):
    """A ``report.json`` or ``run.json`` that cannot be read.

    Attributes:
        path: the file.
        problem: what is wrong with it.
        advice: what to do about it, when this error knows ("" leaves it to the caller, which knows what it
            asked for).
        schema: the report's schema when it names another than this seglog writes (None otherwise).
    """

    def __init__(self, path: str, problem: str, *, advice: str = "", schema: int | None = None) -> None:
        super().__init__(f"{path} {problem}" + (f": {advice}" if advice else ""))
        self.path = path
        self.problem = problem
        self.advice = advice
        self.schema = schema
