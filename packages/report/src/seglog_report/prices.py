"""The price table: AWS on-demand list prices by region, dated, each price with the page it comes from.

One table, ``prices.json`` next to this module, so every ledger, report and test prices from the same figures.
Each item says what one price buys (``per`` units of ``unit``) and the AWS page that lists it; each region gives
every item a price that says either where it was ``checked`` or why it is ``unverified`` (published knowledge).
"""

from __future__ import annotations

import datetime
import functools
from importlib import resources
from pathlib import Path
from typing import Final

import msgspec
import structlog

from seglog_report.errors import PriceTableError, UnknownRegionError

log = structlog.get_logger("seglog.report")

#: The items the ledger prices; a table without one of them cannot price a run.
ITEMS: Final = ("dynamodb_write", "dynamodb_read", "dynamodb_stream_read", "s3_write", "s3_read", "sqs_request",
                "lambda_request", "lambda_duration_arm64", "lambda_duration_x86_64", "api_request")

DEFAULT_TABLE: Final = "prices.json"


class Item(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one price is for: ``per`` units of ``unit`` of ``what`` on ``service``, as AWS lists it at ``source``."""

    service: str
    what: str
    unit: str
    per: int
    source: str
    #: What a reader needs to count the units the same way AWS does.
    note: str = ""


class Price(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Dollars for an item's ``per`` units in one region, and how far the figure was checked."""

    price: float
    #: Where the figure was compared with a page that states it.
    checked: str = ""
    #: Why it could not be: the figure is from published knowledge.
    unverified: str = ""


class Region(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    prices: dict[str, Price]


class PriceTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole table: its date, its notes (what is ignored, and why), its items and its regions."""

    as_of: datetime.date
    currency: str
    notes: list[str]
    items: dict[str, Item]
    regions: dict[str, Region]

    def region(self, name: str) -> Region:
        """The prices of one region.

        Raises:
            UnknownRegionError: the table has no such region (the error lists the ones it has).
        """
        try:
            return self.regions[name]
        except KeyError:
            raise UnknownRegionError(name, sorted(self.regions)) from None

    def unit_price(self, region: str, item: str) -> float:
        """Dollars for one unit of ``item`` in ``region`` (the listed price over its ``per``)."""
        return self.region(region).prices[item].price / self.items[item].per


def parse(data: bytes | str, path: str = "<price table>") -> PriceTable:
    """A price table from its JSON text, checked against the rules the ledger relies on.

    Raises:
        PriceTableError: bad JSON, a missing or mistyped field, a missing item or price, or a price that says
            neither where it was checked nor why it was not.
    """
    try:
        table = msgspec.json.decode(data, type=PriceTable)
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError, and names the bad field
        raise PriceTableError(path, str(exc)) from exc
    if missing := [item for item in ITEMS if item not in table.items]:
        raise PriceTableError(path, f"items lacks {', '.join(missing)}")
    if not table.regions:
        raise PriceTableError(path, "it has no regions")
    # Checked here rather than with msgspec.Meta: msgspec's path elides dict keys ($.regions[...]), these name them.
    if bad := [name for name, item in table.items.items() if item.per <= 0]:
        raise PriceTableError(path, f"items {', '.join(bad)} must each buy a positive number of units ('per')")
    for code, region in table.regions.items():
        if missing := [item for item in table.items if item not in region.prices]:
            raise PriceTableError(path, f"region {code} has no price for {', '.join(missing)}")
        if extra := [item for item in region.prices if item not in table.items]:
            raise PriceTableError(path, f"region {code} prices {', '.join(extra)}, which items does not describe")
        for item, price in region.prices.items():
            if price.price < 0:
                raise PriceTableError(path, f"{code}.{item} has a negative price, {price.price}")
            if bool(price.checked) == bool(price.unverified):
                raise PriceTableError(path, f"{code}.{item} must say either where it was 'checked' or why it is "
                                            f"'unverified' (exactly one of the two)")
    return table


def load(path: Path | None = None) -> PriceTable:
    """The price table at ``path``, or the one that ships with this package (read once).

    Raises:
        PriceTableError: the file is missing or malformed.
    """
    if path is None:
        return _packaged()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PriceTableError(str(path), f"it cannot be read ({exc.strerror or exc})") from exc
    return _logged(parse(data, str(path)), str(path))


@functools.cache
def _packaged() -> PriceTable:
    source = resources.files("seglog_report").joinpath(DEFAULT_TABLE)
    return _logged(parse(source.read_bytes(), str(source)), str(source))


def _logged(table: PriceTable, path: str) -> PriceTable:
    log.debug("price_table_loaded", path=path, as_of=table.as_of.isoformat(), regions=sorted(table.regions))
    return table
