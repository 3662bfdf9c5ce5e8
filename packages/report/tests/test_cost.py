"""The cost ledger against hand calculations from literal prices (the us-east-1 row of prices.json, written out
here so a changed table fails these tests instead of silently changing what they check)."""

from __future__ import annotations

import json

import msgspec
import pytest

from seglog_report.cost import Ledger, compare, ledger
from seglog_report.errors import UnknownArchitectureError, UnknownRegionError
from seglog_report.model import FunctionUse, Meter

# us-east-1, dollars per unit, as the AWS pages list them (per million, per thousand, per 100,000, per GB-second).
WRU = 0.625 / 1_000_000
RRU = 0.125 / 1_000_000
S3_PUT = 0.005 / 1000
S3_GET = 0.0004 / 1000
SQS = 0.40 / 1_000_000
LAMBDA_REQUEST = 0.20 / 1_000_000
ARM64_GB_SECOND = 0.0000133334
X86_GB_SECOND = 0.0000166667
HTTP_API = 1.00 / 1_000_000
STREAM_READ = 0.02 / 100_000

RUN = Meter(dynamodb_read_units=1500.5, dynamodb_write_units=2100, dynamodb_requests=3000, stream_read_requests=400,
            s3_write_requests=30, s3_read_requests=90, sqs_requests=120, api_requests=1000,
            functions={"StreamRouter": FunctionUse(memory_mb=512, invocations=400, billed_ms=12345.0),
                       "SnapshotWorker": FunctionUse(memory_mb=1024, invocations=30, billed_ms=9000.0)},
            appends=1000)


def _line(one: Ledger, what: str) -> tuple[float, float]:
    [found] = [line for line in one.lines if line.what == what]
    return found.quantity, found.dollars


def test_a_million_write_units_cost_exactly_the_us_east_1_price() -> None:
    """$0.625 per million WRU after the November 2024 cut: a million units is that many dollars, not about it."""
    one = ledger(Meter(dynamodb_write_units=1_000_000))
    assert (1_000_000, 0.625) == _line(one, "write request units")
    assert 0.625 == one.total


def test_the_ledger_of_a_run_is_the_hand_calculation_from_its_units() -> None:
    """Every billed unit times its list price, summed; GB-seconds are memory_mb / 1024 x billed_ms / 1000."""
    gb_seconds = 1024 / 1024 * 9000 / 1000 + 512 / 1024 * 12345 / 1000
    by_hand = (2100 * WRU + 1500.5 * RRU + 30 * S3_PUT + 90 * S3_GET + 120 * SQS + 1000 * HTTP_API
               + (400 + 30) * LAMBDA_REQUEST + gb_seconds * ARM64_GB_SECOND)
    one = ledger(RUN, "us-east-1")
    assert by_hand == pytest.approx(one.total, rel=1e-12)
    assert by_hand / 1000 * 1_000_000 == pytest.approx(one.per_million_appends, rel=1e-12)
    assert 0.003022 == round(one.total, 6)


def test_gb_seconds_are_memory_in_gb_times_billed_seconds() -> None:
    quantity, dollars = _line(ledger(RUN), "StreamRouter duration, arm64")
    assert 0.5 * 12.345 == pytest.approx(quantity, rel=1e-12)
    assert 0.5 * 12.345 * ARM64_GB_SECOND == pytest.approx(dollars, rel=1e-12)


def test_x86_64_duration_is_priced_at_the_x86_64_rate() -> None:
    _, dollars = _line(ledger(RUN, architecture="x86_64"), "SnapshotWorker duration, x86_64")
    assert 9.0 * X86_GB_SECOND == pytest.approx(dollars, rel=1e-12)


def test_stream_reads_by_the_lambda_trigger_are_free_and_say_their_list_price() -> None:
    """GetRecords calls a Lambda trigger makes are not charged (DynamoDB pricing page): the line is $0, and its
    note shows what the same calls would cost at the list price."""
    with_reads, without = ledger(RUN), ledger(msgspec.structs.replace(RUN, stream_read_requests=0))
    [line] = [line for line in with_reads.lines if line.item == "dynamodb_stream_read"]
    assert (400, 0.0) == (line.quantity, line.dollars)
    assert f"${400 * STREAM_READ:.5f}" in line.note
    assert without.total == with_reads.total


def test_without_appends_there_is_no_per_million_figure() -> None:
    """Nothing to divide by: None, and the text says so instead of raising ZeroDivisionError or showing inf."""
    one = ledger(Meter(dynamodb_read_units=10.0))
    assert (None, None) == (one.per_million_appends, one.floor.times)
    assert "no appends" in one.render()


def test_the_floor_is_seed_000s_figures_and_the_same_write_and_read_at_todays_price() -> None:
    one = ledger(RUN, "us-east-1")
    assert (1.25, 0.125) == (one.floor.seed_write, one.floor.seed_read)
    assert 0.625 == pytest.approx(one.floor.write, rel=1e-12)
    assert 0.0625 == pytest.approx(one.floor.read, rel=1e-12)
    assert one.per_million_appends is not None
    assert one.per_million_appends / 0.625 == pytest.approx(one.floor.times, rel=1e-12)
    assert 0.7625 == pytest.approx(ledger(RUN, "eu-central-1").floor.write, rel=1e-12)


def test_a_region_is_priced_at_its_own_prices() -> None:
    assert 0.7625 == pytest.approx(ledger(Meter(dynamodb_write_units=1_000_000), "eu-central-1").total, rel=1e-12)


def test_an_unknown_region_names_the_regions_there_are() -> None:
    with pytest.raises(UnknownRegionError) as caught:
        ledger(RUN, "mars-north-1")
    assert "mars-north-1" == caught.value.name
    assert {"us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1"} <= set(caught.value.known)
    assert "us-east-1" in str(caught.value) and "eu-central-1" in str(caught.value)


def test_an_unknown_architecture_names_the_ones_priced() -> None:
    with pytest.raises(UnknownArchitectureError, match="arm64, x86_64"):
        ledger(RUN, architecture="riscv64")


def test_the_text_shows_the_lines_the_total_and_the_floor() -> None:
    text = ledger(RUN, "us-east-1").render()
    assert "us-east-1" in text and "as of 2026-11-23" in text
    assert "$0.003022" in text
    assert "$3.022 per million appends" in text
    assert "seed 000: $1.25" in text and "seed 000: $0.125" in text
    assert "unverified" not in text  # every us-east-1 price names the page it was checked against
    assert "* unverified" in ledger(RUN, "eu-central-1").render()


def test_the_json_form_carries_every_line_and_the_floor() -> None:
    one = ledger(RUN)
    data = json.loads(json.dumps(one.to_dict()))
    assert one.total == data["total"]
    assert 1.25 == data["floor"]["seed_write"]
    assert len(one.lines) == len(data["lines"])
    assert {"service", "what", "quantity", "unit", "unit_price", "dollars", "note"} <= set(data["lines"][0])


def test_compare_puts_both_runs_side_by_side_with_the_difference() -> None:
    every_100 = ledger(Meter(dynamodb_write_units=1_000_000, s3_write_requests=20, appends=1_000_000))
    every_10 = ledger(Meter(dynamodb_write_units=2_000_000, s3_write_requests=200, appends=1_000_000))
    text = compare([("SnapshotEvery=100", every_100), ("SnapshotEvery=10", every_10)])
    header, *rows = text.splitlines()
    assert "SnapshotEvery=100" in header and "SnapshotEvery=10 - SnapshotEvery=100" in header
    [writes] = [row for row in rows if "write request units" in row]
    assert ["$0.625", "$1.25", "+$0.625"] == writes.split()[-3:]
    [puts] = [row for row in rows if "PUT" in row]
    assert ["$0.0001", "$0.001", "+$0.0009"] == puts.split()[-3:]
    [per_million] = [row for row in rows if row.startswith("per million appends")]
    assert per_million.split()[-1] == "+$0.6259"


def test_compare_needs_two_ledgers() -> None:
    with pytest.raises(ValueError, match="two ledgers"):
        compare([("only", ledger(RUN))])
