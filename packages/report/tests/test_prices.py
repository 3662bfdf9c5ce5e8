"""The price table's rules: every region prices every item, every price says where it was checked or why not,
and a broken table or an unknown region is refused with a message that says what to do."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from seglog_report.errors import PriceTableError
from seglog_report.prices import ITEMS, load, parse

REGIONS = {"us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1"}


def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parents[1] / "src/seglog_report/prices.json").read_text())
    return data


def test_the_shipped_table_is_dated_and_prices_every_item_in_five_regions() -> None:
    table = load()
    assert table.as_of >= datetime.date(2024, 11, 1)  # after the DynamoDB on-demand price cut
    assert REGIONS <= set(table.regions)
    for region in table.regions.values():
        assert set(ITEMS) == set(region.prices)


def test_every_item_cites_an_aws_page() -> None:
    for name, item in load().items.items():
        assert item.source.startswith("https://aws.amazon.com/"), name


def test_us_east_1_dynamodb_is_priced_after_the_november_2024_cut_and_checked() -> None:
    us_east_1 = load().regions["us-east-1"].prices
    assert (0.625, 0.125) == (us_east_1["dynamodb_write"].price, us_east_1["dynamodb_read"].price)
    assert all(price.checked and not price.unverified for price in us_east_1.values())


def test_a_price_that_says_neither_checked_nor_unverified_is_refused() -> None:
    data = _table()
    data["regions"]["us-west-2"]["prices"]["s3_read"] = {"price": 0.0004}
    with pytest.raises(PriceTableError, match=r"us-west-2\.s3_read must say either"):
        parse(json.dumps(data), "test.json")


def test_a_region_missing_an_item_is_refused() -> None:
    data = _table()
    del data["regions"]["eu-west-1"]["prices"]["sqs_request"]
    with pytest.raises(PriceTableError, match="region eu-west-1 has no price for sqs_request"):
        parse(json.dumps(data), "test.json")


def test_a_negative_price_is_refused_naming_the_field() -> None:
    data = _table()
    data["regions"]["us-east-1"]["prices"]["dynamodb_write"]["price"] = -1
    with pytest.raises(PriceTableError, match=r"us-east-1\.dynamodb_write has a negative price, -1"):
        parse(json.dumps(data), "test.json")


def test_bad_json_and_a_missing_file_are_refused_with_the_path(tmp_path: Path) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text("{not json")
    with pytest.raises(PriceTableError, match=r"prices\.json is malformed"):
        load(bad)
    with pytest.raises(PriceTableError, match="cannot be read"):
        load(tmp_path / "absent.json")
